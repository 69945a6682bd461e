"""Source formats run: a request in another API's shape in, the answer back in that shape (README "Source formats").

A compiled format (`SourceFormat`, built by `format_rules` from `rules/formats/<name>.yaml`) reads
the format's request into the normal form every provider's rules read (a Chat Completions request
with the round-trip keys of README "Round trips"), writes a `TranslateResult` back in the format's
shape, and (`SourceEvents`) writes the format's stream events from the chunks a provider stream
yields. Paths in errors and notes name the format's request (`messages[2].content[1]`): each
normal-form element keeps where it came from (`Origins`). Kept apart from the compiling (schema,
derivation) so the code every call runs reads on its own.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import Note, ResponseError, TranslationError
from ..language.paths import MISSING, compile_path
from ..language.templates import Ctx, Render, unseal
from .result import TranslateResult

PLAIN = "openai"  # the normal form itself: no format file, today's API
DERIVED = "provider"  # the view key holding what the format's provider would have said (derived)
WHOLE = "/"  # a rename ending so names a value function's read: what lies below it has no counterpart


@dataclass(frozen=True)
class Unsupported:
    action: str
    accept: tuple[Any, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class Kind:
    """How one block kind of a role is read: a `part` of the message, an `item` of one of its lists, or a
    `message` of its own. `reads`: the block keys it reads (None: the whole block); `renames`: a normal-form
    key path -> the block key it came from (for error paths); `blocks`: keys re-read as blocks."""

    mode: str
    render: Render
    into: str = ""
    reads: frozenset[str] | None = None
    renames: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    blocks: tuple[str, ...] = ()
    state: tuple[str, str] | None = None  # (block key, message key or ""): a block whose key holds sealed state sets it
    joins: str | None = None  # a transcript item that joins the last message when it has this role, else starts one
    unsupported: Mapping[str, Unsupported] = field(default_factory=lambda: MappingProxyType({}))  # keys not read


Origins = dict[str, tuple[str, Mapping[str, str]]]  # normal-form path -> (the format's path, key renames below it)
NOTHING: Mapping[str, Unsupported] = MappingProxyType({})  # no key listed: the policy decides


@dataclass
class Transcript:
    """One request's normal-form messages as they are read: where each came from, each with the role its
    blocks were read as (its form is settled at the end, when no later item can join it), and the notes."""

    messages: list[dict[str, Any]]
    origins: Origins
    notes: list[Note]
    policy: str  # unknown_fields
    made: list[tuple[dict[str, Any], str]] = field(default_factory=list)


@dataclass(frozen=True)
class SourceFormat:
    """One compiled format file."""

    name: str
    file: str
    provider: str
    doc: str
    fields: Render
    field_reads: frozenset[str]
    field_origin: Mapping[str, tuple[str, Mapping[str, str]]]  # a normal-form field -> the format's field, renames
    unsupported: Mapping[str, Unsupported]
    system: str | None
    each: str
    kind: str
    roles: Mapping[str, Mapping[str, Kind]]
    plain_text: frozenset[str]  # roles whose one plain text part is written as a string (`text_alone`)
    tools_each: str | None
    tool: Render | None
    tool_reads: frozenset[str]
    tool_renames: Mapping[str, str]
    tool_unsupported: Mapping[str, Unsupported]
    text_role: str | None  # `messages.text`: a transcript given as a string is one message of this role
    items: Mapping[str, Kind] | None  # `messages.items.kinds`: a flat transcript of typed items, not role messages
    message_kind: str | None  # `messages.items.message`: the item kind that is a role message (also: no kind)
    message_unsupported: Mapping[str, Unsupported]  # `messages.unsupported`: a message's keys not read
    transcript_roles: frozenset[str]  # the roles a transcript message may have (not `transcript: false`)
    joining_roles: frozenset[str]  # roles whose messages join the last message of their role (`joins: true`)
    field_paths: frozenset[str]  # the nested field paths the fields read (`reasoning.effort`)
    whole_fields: frozenset[str]  # top-level fields read whole (or through an expression): no nested check
    answer: Render
    blocks_into: str
    blocks: tuple[tuple[Any, Render], ...]  # (the list it walks or None, the template of one block)
    stream: Mapping[str, Render]  # start, open.KIND, piece.KIND, close
    stream_end: tuple[Render, ...]
    reasoning_kinds: frozenset[str]  # the answer's block kinds that hold reasoning (the stream closes them last)
    stop_table: Mapping[str, str]
    stop_key: str
    usage: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...]
    ids: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # `answer.ids`: name -> prefix

    # ------------------------------------------------------------------ request side

    def read(self, request: Any, unknown_fields: str = "error") -> tuple[dict[str, Any], Origins, list[Note]]:
        """The format's request -> the normal-form request, where each element came from, and what was dropped.
        A key the format neither reads nor lists is refused, or with `unknown_fields="drop"` dropped (noted)."""
        if not isinstance(request, dict):
            raise self._fail("", f"the request must be an object, got {type(request).__name__}")
        notes: list[Note] = []
        for name, value in request.items():
            if name in self.field_reads or name == self.each or name == self.system or name == self.tools_each:
                if isinstance(value, dict) and name in self.field_reads and name not in self.whole_fields:
                    for key, inner in value.items():  # a key below a field no rule reads
                        if f"{name}.{key}" not in self.field_paths:
                            self._settle(key, inner, f"{name}.{key}", self._below(name), notes, unknown_fields)
                continue
            self._settle(name, value, name, self.unsupported, notes, unknown_fields)
        ctx = Ctx(self.name)
        hub: dict[str, Any] = self.fields(request, ctx) or {}
        notes += [n._replace(path=n.path.removeprefix(DERIVED + ".")) for n in ctx.notes]  # the answer's own key
        origins: Origins = {name: origin for name, origin in self.field_origin.items() if name in hub}
        into = Transcript([], origins, notes, unknown_fields)
        if self.system is not None and request.get(self.system) is not None:
            self._message("system", request[self.system], self.system, into)
        transcript = request.get(self.each, MISSING)
        if transcript is MISSING:
            raise self._fail(self.each, "is required")
        whole = isinstance(transcript, str) and self.text_role is not None  # the one message is the string itself
        if whole:
            transcript = [{"role": self.text_role, "content": transcript}]
        elif not isinstance(transcript, list):
            raise self._fail(self.each, f"must be a list, got {type(transcript).__name__}")
        for i, msg in enumerate(transcript):
            where = self.each if whole else f"{self.each}[{i}]"
            if not isinstance(msg, dict):
                raise self._fail(where, f"must be an object, got {type(msg).__name__}")
            if self.items is not None and msg.get(self.kind, self.message_kind) != self.message_kind:
                self._item(msg, where, into)
                continue
            for key in msg:
                if key in ("role", "content") or (self.items is not None and key == self.kind):
                    continue
                if key not in self.message_unsupported:
                    raise self._fail(f"{where}.{key}", f"is not a {self.name} message key")
                self._settle(key, msg[key], f"{where}.{key}", self.message_unsupported, notes, unknown_fields)
            role = msg.get("role")
            if not isinstance(role, str) or role not in self.transcript_roles:
                raise self._fail(f"{where}.role", f"must be one of {', '.join(sorted(self.transcript_roles))}")
            if "content" not in msg:
                raise self._fail(f"{where}.content", "is required")
            self._message(role, msg["content"], where, into, join=role in self.joining_roles)
        for message, role in into.made:  # each message's form, now that nothing more joins it
            content = message.get("content")
            if content == [] and message["role"] != "user":
                message["content"] = None
            elif role in self.plain_text and isinstance(content, list) and len(content) == 1:
                part = content[0]
                if isinstance(part, dict) and part.keys() == {"type", "text"} and part["type"] == "text":
                    message["content"] = part["text"]
        hub["messages"] = into.messages
        if self.tools_each is not None and request.get(self.tools_each) is not None:
            hub["tools"] = self._tools(request[self.tools_each], origins, notes, unknown_fields)
        return hub, origins, notes

    def request_keys(self) -> tuple[str, str, str]:
        """The format's own names for the transcript, the tools and the output token limit (what a client
        call's `messages`, `tools` and `max_tokens` arguments are sent as)."""
        limit = self.field_origin.get("max_completion_tokens")
        return self.each, self.tools_each or "tools", limit[0] if limit else "max_tokens"

    def _below(self, name: str) -> Mapping[str, Unsupported]:
        """The unsupported entries listed for the keys below field `name` (`reasoning.summary`), by key."""
        prefix = name + "."
        return {k.removeprefix(prefix): v for k, v in self.unsupported.items() if k.startswith(prefix)}

    def _new(self, role: str, into: Transcript, where: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": role, "content": []}
        into.origins[f"messages[{len(into.messages)}]"] = (where, {})
        into.messages.append(message)
        into.made.append((message, role))
        return message

    def _current(self, role: str, into: Transcript, where: str) -> dict[str, Any]:
        """The last message when it has `role` (what joins it adds to it), else a new one of that role."""
        out = into.messages
        if not (out and out[-1]["role"] == role):
            return self._new(role, into, where)
        last = out[-1]
        if isinstance(last.get("content"), str):  # a string so far: its one text part, so more can join
            last["content"] = [{"type": "text", "text": last["content"]}]
        return last

    def _message(self, role: str, content: Any, where: str, into: Transcript, join: bool = False) -> None:
        """One message's blocks, in order: parts join the current normal-form message, a `message` kind
        stands alone (closing the current one), an `item` joins one of the current message's lists. With
        `join`, the current message is first the last one when it has this role (a `joins` item opened it)."""
        kinds = self.roles[role]
        current: dict[str, Any] | None = None

        def open_current() -> dict[str, Any]:
            nonlocal current
            if current is None:
                current = self._current(role, into, where) if join else self._new(role, into, where)
            return current

        def base_of(where: str) -> str:
            return f"{where}.content" if where != self.system else where  # the system key holds its blocks itself

        if isinstance(content, str):
            if join and into.messages and into.messages[-1]["role"] == role:
                message = open_current()
                into.origins[f"messages[{len(into.messages) - 1}].content[{len(message['content'])}]"] = (where, {})
                message["content"].append({"type": "text", "text": content})
            else:
                into.origins[f"messages[{len(into.messages)}]"] = (where, {})
                into.messages.append({"role": role, "content": content})
                into.made.append((into.messages[-1], role))
            return
        if not isinstance(content, list):
            raise self._fail(base_of(where), "must be a string or a list of blocks")
        base = base_of(where)
        for j, block in enumerate(content):
            path = f"{base}[{j}]"
            kind = self._kind(kinds, block, path, into)
            if kind.state is not None:
                state = unseal(block.get(kind.state[0]), Ctx(self.name), part="state")
                if state is not MISSING:
                    self._set_state(open_current(), kind.state[1], state)
                    continue
            if kind.mode == "message":
                current, join = None, False
                self._standalone(kind, kinds, block, path, role, into)
                continue
            self._add(kind, block, path, open_current(), into)

    @staticmethod
    def _set_state(message: dict[str, Any], key: str, state: Any) -> None:
        """Sealed state set on the message: as `key`, or (no key) each of its keys (a whole message's extras)."""
        if key:
            message[key] = state
        elif isinstance(state, dict):
            message.update(state)

    def _add(self, kind: Kind, block: Any, path: str, message: dict[str, Any], into: Transcript) -> None:
        """A part or an item block added to `message` (the last normal-form message)."""
        ctx = Ctx(self.name)
        ctx.path = path
        written = kind.render(block, ctx)
        hub_index = len(into.messages) - 1
        if kind.mode == "part":
            into.origins[f"messages[{hub_index}].content[{len(message['content'])}]"] = (path, kind.renames)
            message["content"].append(written)
            return
        items = message.setdefault(kind.into, [])
        if not items:  # the list as a whole: where its first item came from
            into.origins[f"messages[{hub_index}].{kind.into}"] = (path, {})
        into.origins[f"messages[{hub_index}].{kind.into}[{len(items)}]"] = (path, kind.renames)
        items.append(written)

    def _standalone(
        self, kind: Kind, kinds: Mapping[str, Kind] | None, block: Any, path: str, role: str | None, into: Transcript
    ) -> None:
        """A `message` kind: a normal-form message of its own; the lists named by `blocks` are read as parts
        with `kinds` (None: the kinds of the role it writes, for a transcript item)."""
        ctx = Ctx(self.name)
        ctx.path = path
        written = kind.render(block, ctx)
        role = role or str(written.get("role"))
        if kinds is None:
            kinds = self.roles.get(role, MappingProxyType({}))
        hub = f"messages[{len(into.messages)}]"
        for key in kind.blocks:
            if isinstance(written.get(key), list):
                own = kind.renames.get(key, key).removesuffix(WHOLE)  # the block's own key for it (output)
                written[key] = self._parts(kinds, written[key], f"{path}.{own}", hub, into)
        into.origins[hub] = (path, kind.renames)
        into.messages.append(written)
        into.made.append((written, role))

    def _item(self, item: dict[str, Any], where: str, into: Transcript) -> None:
        """One typed item of a flat transcript: a message of its own, or a block that joins the last message
        of its `joins` role (consecutive calls make one assistant message; a call after a user item starts one)."""
        assert self.items is not None
        kind = self._kind(self.items, item, where, into)
        if kind.joins is None:
            self._standalone(kind, None, item, where, None, into)
            return
        if kind.state is not None:
            state = unseal(item.get(kind.state[0]), Ctx(self.name), part="state")
            if state is not MISSING:
                self._set_state(self._current(kind.joins, into, where), kind.state[1], state)
                return
        self._add(kind, item, where, self._current(kind.joins, into, where), into)

    def _parts(self, kinds: Mapping[str, Kind], blocks: list[Any], base: str, hub: str, into: Transcript) -> list[Any]:
        """Blocks inside a block (a tool result's content), read as parts."""
        parts = []
        for j, block in enumerate(blocks):
            path = f"{base}[{j}]"
            kind = self._kind(kinds, block, path, into)
            if kind.mode != "part":
                raise self._fail(f"{path}.{self.kind}", f"a {block.get(self.kind)!r} block cannot be nested here")
            ctx = Ctx(self.name)
            ctx.path = path
            into.origins[f"{hub}.content[{j}]"] = (path, kind.renames)
            parts.append(kind.render(block, ctx))
        return parts

    def _kind(self, kinds: Mapping[str, Kind], block: Any, path: str, into: Transcript) -> Kind:
        if not isinstance(block, dict):
            raise self._fail(path, f"must be an object, got {type(block).__name__}")
        name = block.get(self.kind)
        kind = kinds.get(name) if isinstance(name, str) else None
        if kind is None:
            raise self._fail(f"{path}.{self.kind}", f"a {name!r} block is not read here; known: {', '.join(kinds)}")
        if kind.reads is not None:
            for key in block:
                if key != self.kind and key not in kind.reads:
                    self._settle(key, block[key], f"{path}.{key}", kind.unsupported, into.notes, into.policy)
        return kind

    def _tools(self, tools: Any, origins: Origins, notes: list[Note], unknown_fields: str) -> list[Any]:
        if not isinstance(tools, list):
            raise self._fail(self.tools_each or "", f"must be a list, got {type(tools).__name__}")
        assert self.tool is not None
        out = []
        for i, tool in enumerate(tools):
            path = f"{self.tools_each}[{i}]"
            if not isinstance(tool, dict):
                raise self._fail(path, f"must be an object, got {type(tool).__name__}")
            for key, value in tool.items():
                if key not in self.tool_reads:
                    self._settle(key, value, f"{path}.{key}", self.tool_unsupported, notes, unknown_fields)
            ctx = Ctx(self.name)
            ctx.path = path
            origins[f"tools[{i}]"] = (path, self.tool_renames)
            out.append({"type": "function", "function": self.tool(tool, ctx)})
        return out

    def _settle(
        self, name: str, value: Any, path: str, table: Mapping[str, Unsupported], notes: list[Note], policy: str
    ) -> None:
        rule = table.get(name)
        if rule is None and policy == "drop":
            notes.append(Note("dropped", path, f"not mapped by the {self.name} format"))
            return
        if rule is None:
            raise self._fail(path, f"is not mapped by the {self.name} format ({self.file})")
        if value is None or any(value == ok for ok in rule.accept):
            return
        if rule.action == "drop":
            notes.append(Note("dropped", path, rule.doc or f"the {self.name} format has no counterpart"))
            return
        raise self._fail(path, "cannot be translated" + (f": {rule.doc}" if rule.doc else ""))

    def _fail(self, path: str, message: str) -> TranslationError:
        return TranslationError(path, message, provider=self.name)

    # ------------------------------------------------------------------ answer side

    def view(self, result: TranslateResult, answer_id: Any, notes: list[Note], created: Any = None) -> dict[str, Any]:
        """The result as the answer templates read it, with what the format's provider would have said
        (`provider`: its stop reason, also as `provider.finish`, and usage, derived from its response section
        read backwards). `created`: the answer's time where the provider's rules name it, else now."""
        calls = []
        for call in result.tool_calls:
            try:
                arguments = json.loads(call.arguments) if call.arguments else {}
            except ValueError:
                arguments = call.arguments
            calls.append(
                {
                    "id": call.id,
                    "name": call.name,
                    "input": arguments,
                    "arguments": call.arguments or "{}",
                    "extra_content": call.extra_content,
                }
            )
        said: dict[str, Any] = {}
        stop = self.stop_table.get(result.finish_reason)
        if stop is None and result.finish_reason == "tool_calls":  # a table without the row: the engine made
            stop = self.stop_table.get("stop")  # tool_calls of a stop with calls, so it reads back as that stop
        if stop is None:
            notes.append(Note("dropped", "finish_reason", f"{result.finish_reason!r} has no {self.name} counterpart"))
        else:
            said[self.stop_key] = said["finish"] = stop
        for target, total, others in self.usage:
            value = _dig(result.usage, total)
            if type(value) is not int:
                continue
            for other in others:
                part = _dig(result.usage, other)
                value -= part if type(part) is int else 0
            if value < 0:  # the counts contradict each other: left out, never clamped
                notes.append(
                    Note("inconsistent", ".".join(total), f"less than the counts it includes; no {target[-1]}")
                )
                continue
            _put(said, target, value)
        if not (isinstance(answer_id, str) and answer_id):
            answer_id = f"msg_{uuid.uuid4().hex[:24]}"
            notes.append(Note("synthesized", "id", "the provider's answer names no id"))
        return {
            "id": answer_id,
            "created": created if type(created) in (int, float) else int(time.time()),
            "ids": {
                name: prefix + hashlib.sha256(f"{answer_id}/{name}".encode()).hexdigest()[:32]
                for name, prefix in self.ids.items()
            },
            "annotations": result.annotations,
            "model": result.model,
            "text": result.text,
            "reasoning_content": result.reasoning_content,
            "tool_calls": calls,
            "finish_reason": result.finish_reason,
            "usage": result.usage,
            "message_extras": result.message_extras,
            "refusal": result.refusal,
            DERIVED: said,
        }

    def write(
        self, result: TranslateResult, answer_id: Any = None, notes: list[Note] | None = None, created: Any = None
    ) -> dict[str, Any]:
        """A result as the format's whole answer (what it could not say, noted in `notes`)."""
        notes = [] if notes is None else notes
        return self.write_view(self.view(result, answer_id, notes, created), notes)

    def write_view(self, view: dict[str, Any], notes: list[Note]) -> dict[str, Any]:
        """The answer templates over a view; their notes (a default written) join `notes`."""
        ctx = Ctx(self.name, outbound=True)
        written: dict[str, Any] = self.answer(view, ctx)
        blocks = []
        for each, render in self.blocks:
            elements = [view] if each is None else each(view)
            for element in elements if isinstance(elements, list) else ():
                block = render(element, ctx)
                if block is not MISSING:
                    blocks.append(block)
        written[self.blocks_into] = blocks
        notes += [n._replace(path=n.path.removeprefix(DERIVED + ".")) for n in ctx.notes]  # the answer's own key
        return written

    def event(self, name: str, scope: Any) -> dict[str, Any]:
        """One stream event, written by the `stream.events` template `name`."""
        out: dict[str, Any] = self.stream[name](scope, Ctx(self.name, outbound=True))
        return out


def _dig(value: Any, steps: tuple[str, ...]) -> Any:
    for step in steps:
        value = value.get(step) if isinstance(value, dict) else None
    return value


def _put(out: dict[str, Any], steps: tuple[str, ...], value: Any) -> None:
    for step in steps[:-1]:
        out = out.setdefault(step, {})
    out[steps[-1]] = value


def answer_id(provider: Any, response: Any, key: str = "id", kind: type | tuple[type, ...] = str) -> Any:
    """The answer's id (or with `key="created"` its time) where the provider's stream rules say it is
    (`streaming.id`, `streaming.created`), else absent."""
    streaming = provider.source.data.get("streaming") if isinstance(provider.source.data, dict) else None
    path = streaming.get(key) if isinstance(streaming, dict) else None
    if not isinstance(path, str) or not isinstance(response, dict):
        return None
    value = compile_path(path)(response)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def remap(path: str, origins: Origins) -> str:
    """A normal-form path as the format's request names it: the longest known prefix replaced, the keys
    below it renamed back (`messages[3].tool_calls[0].function.arguments` -> `messages[2].content[1].input`)."""
    cut = len(path)
    while cut > 0:
        head = path[:cut]
        if head in origins:
            source, renames = origins[head]
            rest = path[cut:].lstrip(".")
            for hub, own in renames.items():
                if rest == hub or rest.startswith(hub + ".") or rest.startswith(hub + "["):
                    rest = own[: -len(WHOLE)] if own.endswith(WHOLE) else own + rest[len(hub) :]
                    break
            return f"{source}.{rest}" if rest and not rest.startswith("[") else source + rest
        cut = max(path.rfind(".", 0, cut), path.rfind("[", 0, cut))
    return path


def remap_error(exc: TranslationError, origins: Origins) -> TranslationError:
    cls = type(exc)
    if cls is ResponseError:
        return exc
    return cls(remap(exc.path, origins), exc.message, provider=exc.provider)


class AnswerBody(dict[str, Any]):
    """An answer in a source format's shape (a dict: its JSON is what the format's API returns), with the
    `result` it was written from and its `notes` (the result's)."""

    result: TranslateResult
    notes: tuple[Note, ...] = ()


class SourceEvents:
    """OpenAI chunks -> the source format's stream events (the `stream` section), for one answer.

    `chunk(c)` per OpenAI chunk returns the format's events; `end(result)` the closing ones, and sets
    `message` (the whole answer, as `translate_response` writes it). Blocks are opened, added to and
    closed as the stream section says; reasoning closes last (its signature is known only at the end).
    """

    def __init__(self, fmt: SourceFormat) -> None:
        self.format = fmt
        self.message: AnswerBody | None = None
        self._started = False
        self._id: str = ""
        self._blocks = 0
        self._open: tuple[str, int] | None = None  # the open text or tool_call block: (kind, index)
        self._reasoning: int | None = None  # the open reasoning block's index
        self._calls: dict[int, int] = {}  # the chunk's tool-call index -> its block index

    def chunk(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        fmt = self.format
        if not self._started:
            self._started = True
            self._id = chunk.get("id") or f"msg_{uuid.uuid4().hex[:24]}"
            out.append(fmt.event("start", {"id": self._id, "model": chunk.get("model", "")}))
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            piece = delta.get("reasoning_content")
            if piece:
                if self._reasoning is None:
                    self._reasoning = self._new_block(out, "reasoning", {}, close=False)
                out.append(fmt.event("piece.reasoning", {"index": self._reasoning, "piece": piece}))
            piece = delta.get("content")
            if piece:
                if self._open is None or self._open[0] != "text":
                    self._new_block(out, "text", {})
                assert self._open is not None
                out.append(fmt.event("piece.text", {"index": self._open[1], "piece": piece}))
            for call in delta.get("tool_calls") or ():
                position = call.get("index", 0)
                function = call.get("function") or {}
                if position not in self._calls:
                    scope = {
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "extra_content": call.get("extra_content"),
                    }
                    self._calls[position] = self._new_block(out, "tool_call", scope)
                arguments = function.get("arguments")
                if arguments:
                    out.append(fmt.event("piece.tool_call", {"index": self._calls[position], "piece": arguments}))
        return out

    def _new_block(self, out: list[dict[str, Any]], kind: str, scope: dict[str, Any], close: bool = True) -> int:
        if close and self._open is not None:
            out.append(self.format.event("close", {"index": self._open[1]}))
            self._open = None
        index = self._blocks
        self._blocks += 1
        out.append(self.format.event(f"open.{kind}", {**scope, "index": index}))
        if close:
            self._open = (kind, index)
        return index

    def end(self, result: TranslateResult) -> list[dict[str, Any]]:
        fmt = self.format
        out = [] if self._started else self.chunk({"id": None, "model": result.model, "choices": []})
        if self._open is not None:
            out.append(fmt.event("close", {"index": self._open[1]}))
            self._open = None
        notes: list[Note] = []
        view = fmt.view(result, self._id, notes)
        message = AnswerBody(fmt.write_view(view, notes))
        blocks = [b for b in message.get(fmt.blocks_into, []) if b.get(fmt.kind) in fmt.reasoning_kinds]
        signed = blocks[:1] if self._reasoning is not None else []
        if self._reasoning is not None:
            signature = signed[0].get("signature") if signed else None
            if signature:
                out.append(fmt.event("piece.signature", {"index": self._reasoning, "piece": signature}))
            out.append(fmt.event("close", {"index": self._reasoning}))
        for block in blocks[len(signed) :]:  # reasoning blocks no piece announced (redacted, sealed state)
            index = self._blocks
            self._blocks += 1
            out.append(fmt.event("open.whole", {"index": index, "block": block}))
            out.append(fmt.event("close", {"index": index}))
        ctx = Ctx(fmt.name, outbound=True)
        out += [render(view, ctx) for render in fmt.stream_end]
        message.result = result
        message.notes = (*result.notes, *notes)
        self.message = message
        return out


class SourceStream:
    """A provider stream -> the source format's events, for callers that do their own HTTP.

    `feed(data)` per provider event returns the format's events; `finish()` the closing ones, and sets
    `result` (the TranslateResult) and `message` (the whole answer, as `translate_response` writes it).
    """

    def __init__(self, fmt: SourceFormat, translator: Any) -> None:
        self.translator = translator
        self.events = SourceEvents(fmt)
        self.result: TranslateResult | None = None
        self.message: AnswerBody | None = None

    def feed(self, data: str) -> list[dict[str, Any]]:
        return [event for chunk in self.translator.feed(data) for event in self.events.chunk(chunk)]

    def finish(self) -> list[dict[str, Any]]:
        out = [event for chunk in self.translator.finish() for event in self.events.chunk(chunk)]
        result = self.translator.result
        assert result is not None
        out += self.events.end(result)
        self.result, self.message = result, self.events.message
        return out


def translate_source(
    fmt: SourceFormat,
    inbound: Any,
    request: Any,
    *,
    system: str | None = None,
    default_system: str | None = None,
    unknown_fields: Any = "error",
) -> Any:
    """A request in the format -> the provider's body (`inbound`: the provider's compiled request side),
    its errors and notes naming the format's paths."""
    hub, origins, notes = fmt.read(request, unknown_fields)
    try:
        body = inbound.translate(hub, system=system, default_system=default_system, unknown_fields=unknown_fields)
    except TranslationError as exc:
        raise remap_error(exc, origins) from None
    body.notes = (*notes, *(Note(n.kind, remap(n.path, origins), n.message, n.side) for n in body.notes))
    return body


def write_answer(fmt: SourceFormat, provider: Any, result: TranslateResult) -> AnswerBody:
    """A result as the format's whole answer, with its id where the provider's rules say the answer's is."""
    notes: list[Note] = []
    created = answer_id(provider, result.raw, "created", (int, float))
    answer = AnswerBody(fmt.write(result, answer_id(provider, result.raw), notes, created))
    answer.result, answer.notes = result, (*result.notes, *notes)
    return answer
