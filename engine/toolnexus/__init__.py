"""toolnexus: OpenAI Chat Completions shapes in, one provider call's shapes out.

Provider differences live in YAML rule files (`rules/`); this package compiles
them once and runs them in both directions. See README.md.

The client and the toolkits load on first use (module `__getattr__`), so `import toolnexus`
for pure translation never imports the HTTP stack (aiohttp, httpx, tenacity, httpx-sse).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .api import providers, stream_translator, translate_request, translate_response
from .compat import (
    finish_reason_for,
    openai_messages_to_anthropic,
    openai_tool_choice_to_anthropic,
    openai_tools_to_anthropic,
)
from .errors import (
    Cancelled,
    ConfigError,
    Note,
    ProviderError,
    ResponseError,
    RuleError,
    StateError,
    ToolkitError,
    ToolnexusError,
    TranslationError,
)
from .translate.inbound import RequestBody
from .translate.result import TranslatedToolCall, TranslateResult
from .translate.rulebook import Provider, Rulebook, load_rules
from .translate.stream import StreamTranslator

if TYPE_CHECKING:
    from .http.client import Client, LLMEvent, create_client
    from .http.client_stream import TranslateStream
    from .http.transport import AiohttpStack
    from .toolkit.mcp_tools import ToolResult
    from .toolkit.toolkit import Tool, Toolkit, create_toolkit, define_tool

# name -> the module that defines it, imported when the name is first asked for
_LAZY = {
    "AiohttpStack": ".http.transport",
    "Client": ".http.client",
    "LLMEvent": ".http.client",
    "create_client": ".http.client",
    "TranslateStream": ".http.client_stream",
    "ToolResult": ".toolkit.mcp_tools",
    "Tool": ".toolkit.toolkit",
    "Toolkit": ".toolkit.toolkit",
    "create_toolkit": ".toolkit.toolkit",
    "define_tool": ".toolkit.toolkit",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value  # asked once: later lookups find it without this hook
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AiohttpStack",
    "Cancelled",
    "Client",
    "ConfigError",
    "LLMEvent",
    "Note",
    "Provider",
    "ProviderError",
    "RequestBody",
    "ResponseError",
    "RuleError",
    "Rulebook",
    "StateError",
    "StreamTranslator",
    "Tool",
    "ToolResult",
    "Toolkit",
    "ToolkitError",
    "ToolnexusError",
    "TranslateResult",
    "TranslateStream",
    "TranslatedToolCall",
    "TranslationError",
    "create_client",
    "create_toolkit",
    "define_tool",
    "finish_reason_for",
    "load_rules",
    "openai_messages_to_anthropic",
    "openai_tool_choice_to_anthropic",
    "openai_tools_to_anthropic",
    "providers",
    "stream_translator",
    "translate_request",
    "translate_response",
]
