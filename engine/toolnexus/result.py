"""The OpenAI-shaped result of one provider call, as the API page documents it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import Note


@dataclass(frozen=True, slots=True)
class TranslatedToolCall:
    """One tool call the model asked for. `arguments` is the OpenAI JSON string."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(slots=True)
class TranslateResult:
    """One provider answer in OpenAI shape.

    text: assistant text ("" when the model only called tools); tool_calls in
    provider order; finish_reason: an OpenAI finish reason (any tool call makes it
    "tool_calls"); usage: this call's token counts; model: the model that answered;
    raw: the provider's decoded response, unchanged; notes: anything the
    translation could not say in OpenAI terms (unknown stop reasons, unknown blocks).
    """

    text: str
    tool_calls: list[TranslatedToolCall]
    finish_reason: str
    usage: dict[str, Any]
    model: str
    raw: dict[str, Any] | None = field(default=None, repr=False)
    notes: tuple[Note, ...] = ()

    def tool_calls_json(self) -> list[dict[str, Any]]:
        """The tool calls as an OpenAI `tool_calls` array, ready for an assistant message."""
        return [call.to_openai() for call in self.tool_calls]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (without raw), as the CLI prints it."""
        return {
            "text": self.text,
            "tool_calls": self.tool_calls_json(),
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "model": self.model,
            "notes": [{"kind": n.kind, "path": n.path, "message": n.message} for n in self.notes],
        }
