"""toolnexus: OpenAI Chat Completions shapes in, one provider call's shapes out.

Provider differences live in YAML rule files (`rules/`); this package compiles
them once and runs them in both directions. See README.md.
"""

from .api import providers, stream_translator, translate_request, translate_response
from .client import Client, LLMEvent, create_client
from .client_stream import TranslateStream
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
    ToolkitError,
    ToolnexusError,
    TranslationError,
)
from .inbound import RequestBody
from .mcp_tools import ToolResult
from .result import TranslatedToolCall, TranslateResult
from .rulebook import Provider, Rulebook, load_rules
from .stream import StreamTranslator
from .toolkit import Tool, Toolkit, create_toolkit, define_tool

__all__ = [
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
