"""The OpenAI-shaped result of one provider call, as the API page documents it."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from ..errors import Note
from ..language.templates import fresh_copy


@dataclass(frozen=True, slots=True)
class TranslatedToolCall:
    """One tool call the model asked for. `arguments` is the OpenAI JSON string.

    `extra_content`: what must ride on the call into the next request (a signature the
    provider wants back, in the shape the rule file writes it), or None.
    `given`: the object the provider sent as the arguments (`arguments` is its JSON text), or None where
    they came as text: a format that writes them as an object (a Messages `tool_use.input`) takes it as
    it is, no JSON text read back. Not compared: it says what `arguments` says.
    """

    id: str
    name: str
    arguments: str
    extra_content: dict[str, Any] | None = field(default=None, hash=False)  # a mapping: not hashable
    given: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False, hash=False)

    def to_openai(self) -> dict[str, Any]:
        call: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        if self.extra_content is not None:
            call["extra_content"] = fresh_copy(self.extra_content)
        return call


_new = object.__new__
_SET_ID, _SET_NAME, _SET_ARGUMENTS, _SET_EXTRA, _SET_GIVEN = (
    TranslatedToolCall.__dict__[name].__set__ for name in ("id", "name", "arguments", "extra_content", "given")
)


def new_tool_call(
    id: str, name: str, arguments: str, extra_content: dict[str, Any] | None, given: dict[str, Any] | None = None
) -> TranslatedToolCall:
    """`TranslatedToolCall(id, name, arguments, extra_content)` with its `given` set, built by its slots: a frozen
    dataclass's `__init__` sets each field through `object.__setattr__`, which makes it cost half as much again
    as this. The generated response functions build one per tool call (24 in a large answer)."""
    call = _new(TranslatedToolCall)
    _SET_ID(call, id)
    _SET_NAME(call, name)
    _SET_ARGUMENTS(call, arguments)
    _SET_EXTRA(call, extra_content)
    _SET_GIVEN(call, given)
    return call


def tool_calls(ids: list[str], names: list[str], arguments: list[str]) -> list[TranslatedToolCall]:
    """`new_tool_call(id, name, arguments, None)` of each (arguments that came as text: no `given`), built column by
    column: each slot stored by a loop in C (`map`), so the thousands of calls a stream opened whole become the
    result's with no Python run per call."""
    calls = list(map(_new, repeat(TranslatedToolCall, len(ids))))
    nothing = repeat(None)
    for store, column in (
        (_SET_ID, ids), (_SET_NAME, names), (_SET_ARGUMENTS, arguments), (_SET_EXTRA, nothing), (_SET_GIVEN, nothing)
    ):  # fmt: skip
        deque(map(store, calls, column), 0)
    return calls


@dataclass(slots=True)
class TranslateResult:
    """One provider answer in OpenAI shape.

    text: assistant text ("" when the model only called tools); tool_calls in
    provider order; finish_reason: an OpenAI finish reason (any tool call makes it
    "tool_calls"); usage: this call's token counts; model: the model that answered;
    raw: the provider's decoded response, unchanged; notes: anything the
    translation could not say in OpenAI terms (unknown stop reasons, unknown blocks,
    inconsistent usage); from a client, the request's notes too, each with its `side`;
    reasoning_content: the readable reasoning ("" when none); message_extras: what the
    next request needs back on the assistant message (signed reasoning blocks, server-side
    tool blocks, say), as the rules collect it; annotations: OpenAI message annotations
    (`url_citation`s with indexes into `text`); refusal: the provider's explanation of a
    refusal, or None.
    """

    text: str
    tool_calls: list[TranslatedToolCall]
    finish_reason: str
    usage: dict[str, Any]
    model: str
    raw: dict[str, Any] | None = field(default=None, repr=False)
    notes: tuple[Note, ...] = ()
    reasoning_content: str = ""
    message_extras: dict[str, Any] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    refusal: str | None = None

    def tool_calls_json(self) -> list[dict[str, Any]]:
        """The tool calls as an OpenAI `tool_calls` array, ready for an assistant message."""
        return [call.to_openai() for call in self.tool_calls]

    def assistant_message(self) -> dict[str, Any]:
        """The OpenAI assistant message to append to the history, carrying what the next turn needs.

        `{"role": "assistant", "content": text or None, "tool_calls": [...]}` (tool_calls only
        when there are some), plus `reasoning_content` when there is reasoning, `refusal` when
        the provider explained one, and the `message_extras`. Annotations are for reading
        (`to_dict()`, `annotations`): no provider takes them back, so they are not on it. Sent
        back in a later request, the rules put each piece where the provider wants it (signed
        reasoning blocks first, signatures on their parts).
        """
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls_json()
        if self.reasoning_content:
            message["reasoning_content"] = self.reasoning_content
        if self.refusal is not None:
            message["refusal"] = self.refusal
        for key, value in self.message_extras.items():
            message[key] = fresh_copy(value)
        return message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (without raw), as the CLI prints it; reasoning and extras only when present."""
        view: dict[str, Any] = {"text": self.text}
        if self.reasoning_content:
            view["reasoning_content"] = self.reasoning_content
        view |= {
            "tool_calls": self.tool_calls_json(),
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "model": self.model,
        }
        if self.annotations:
            view["annotations"] = fresh_copy(self.annotations)
        if self.refusal is not None:
            view["refusal"] = self.refusal
        if self.message_extras:
            view["message_extras"] = fresh_copy(self.message_extras)
        view["notes"] = [
            {"kind": n.kind, "path": n.path, "message": n.message} | ({"side": n.side} if n.side else {})
            for n in self.notes
        ]
        return view
