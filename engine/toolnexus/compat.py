"""The seed API's named helpers, as thin views over the Anthropic rule file.

They exist so code written against the earlier library keeps working; each is
one call into the same rules `translate_request` uses.
"""

from __future__ import annotations

from typing import Any

from .api import translate_request
from .language.paths import MISSING
from .translate.rulebook import RulesArg, load_rules

_SEED_PROVIDER = "anthropic"
_PLACEHOLDER_MODEL = "toolnexus-helper"


def openai_messages_to_anthropic(messages: list[Any], *, rules: RulesArg = None) -> tuple[list[Any], str | None]:
    """OpenAI messages -> (Anthropic messages, hoisted system prompt or None)."""
    body = translate_request(_SEED_PROVIDER, {"model": _PLACEHOLDER_MODEL, "messages": messages}, rules=rules)
    return body["messages"], body.get("system")


def openai_tools_to_anthropic(tools: list[Any], *, rules: RulesArg = None) -> list[Any]:
    """OpenAI tool declarations -> Anthropic tool declarations."""
    return load_rules(rules).get(_SEED_PROVIDER).inbound.write_tools(tools)


def openai_tool_choice_to_anthropic(choice: Any, *, rules: RulesArg = None) -> dict[str, Any] | None:
    """An OpenAI tool_choice -> the Anthropic tool_choice, or None when it is omitted ("auto")."""
    # One user turn, since an empty transcript is refused; only the tool_choice is read back.
    request: dict[str, Any] = {"model": _PLACEHOLDER_MODEL, "messages": [{"role": "user", "content": "-"}]}
    if choice is not None and choice is not MISSING:
        request["tool_choice"] = choice
    body = translate_request(_SEED_PROVIDER, request, rules=rules)
    return body.get("tool_choice")


def finish_reason_for(
    has_tool_calls: bool, provider_stop: str | None, *, provider: str = _SEED_PROVIDER, rules: RulesArg = None
) -> str:
    """The OpenAI finish reason for a provider stop reason; any tool call wins."""
    return load_rules(rules).get(provider).outbound.finish_reason_for(has_tool_calls, provider_stop)
