"""toolnexus: OpenAI Chat Completions shapes in, one provider call's shapes out.

Provider differences live in YAML rule files (`rules/`); this package compiles
them once and runs them in both directions. See README.md.
"""

from .api import providers, translate_request, translate_response
from .compat import (
    finish_reason_for,
    openai_messages_to_anthropic,
    openai_tool_choice_to_anthropic,
    openai_tools_to_anthropic,
)
from .errors import Note, ResponseError, RuleError, ToolnexusError, TranslationError
from .inbound import RequestBody
from .result import TranslatedToolCall, TranslateResult
from .rulebook import Provider, Rulebook, load_rules

__all__ = [
    "Note",
    "Provider",
    "RequestBody",
    "ResponseError",
    "RuleError",
    "Rulebook",
    "ToolnexusError",
    "TranslateResult",
    "TranslatedToolCall",
    "TranslationError",
    "finish_reason_for",
    "load_rules",
    "openai_messages_to_anthropic",
    "openai_tool_choice_to_anthropic",
    "openai_tools_to_anthropic",
    "providers",
    "translate_request",
    "translate_response",
]
