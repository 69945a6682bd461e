"""Provider response -> OpenAI-shaped TranslateResult, compiled from a rule file's
`response` section.

The response is read through *item sources*: each names a path (`each:` a list,
or `one:` object) and templates that turn an element into any of
`{text: ...}`, `{reasoning: ...}`, `{tool_call: {id, name, arguments, extra_content}}`
and `{message: {...}}`. Texts and reasonings concatenate in provider order, tool
calls keep provider order, `message` pieces merge into the assistant message's
extras (mappings merge, lists concatenate; a second, different value for one key
is noted and the first kept), and elements of a kind the rules do not know are
reported as notes and left in `raw`. Then the finish-reason table (any tool call
wins), usage and model.

A readable answer is never lost over accounting: a count that is not a non-negative integer is
left out and noted (`dropped`), and usage that breaks an invariant (prompt_tokens covers the
cached and cache-write counts, total is prompt + completion, completion covers reasoning) is
kept as given and noted (`inconsistent`). No count is ever made up. `toolnexus check` holds the
rules to the invariants: a case result with such a note fails unless the case expects it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from functools import partial
from operator import countOf
from types import MappingProxyType
from typing import Any, NoReturn, Protocol

from ..errors import Note, ResponseError
from ..language.ask import plain_read, read_path, written
from ..language.codegen import Namespace, indent
from ..language.ids import MARK, NO_IDS, IdRule, compile_id_rule
from ..language.jsonsafe import LONG_TEXT, JsonValueError, answer_nulls, loads_body, settle_nulls, text_encoder
from ..language.loader import Key, RuleSource
from ..language.paths import MISSING, Getter, simple_steps
from ..language.templates import (
    Array,
    Const,
    Ctx,
    Env,
    Get,
    Node,
    Obj,
    Read,
    Render,
    Sum,
    When,
    compile_node,
    compile_template,
    parse_template,
    path_getter,
    read_lines,
)
from .result import TranslatedToolCall, TranslateResult, new_tool_call

FINISH_TOOL_CALLS = "tool_calls"
FINISH_STOP = "stop"


@dataclass(frozen=True)
class Part:
    """One field of an item template: a plain read of the element (`steps`, read inline by the generated
    code), a `$get` of one richer path (`getter`, called inline: no template, no Ctx) or, for anything richer,
    the field's own compiled template (`render`)."""

    steps: tuple[str | int, ...] | None
    render: Render | None
    read: Read | None = None  # the path a `$get` of one path reads, whatever its default (for errors, streams)
    mapping: Obj | None = None  # a mapping of plain reads (and such mappings), built inline by the generated code
    # `{$get: a.b, default: ...}`: the plain path read inline, `render` (the default and its note) only when absent
    defaulted: tuple[str | int, ...] | None = None
    getter: Getter | None = None
    # its value made of objects and lists holding only the element itself and strings (`{x: [{$get: "@"}]}`): all
    # strings where the element's values are (what a fused answer's seal of the message extras is told, `texts`)
    copies_element: bool = False


@dataclass(frozen=True)
class Parts:
    """One kind's item template, field by field, for the generated code (None: the template has no such field)."""

    text: Part | None
    reasoning: Part | None
    message: Part | None
    tool_call: Mapping[str, Part] | None  # id, name, arguments and, when given, extra_content
    annotations: Part | None = None  # the list an `annotations` spec reads (empty or absent: nothing to do)
    annotate: Annotations | None = None  # that spec, which `Outbound.annotate` applies


@dataclass(frozen=True)
class Cites:
    """`cites: {each: PATH, in: PATH}`: an entry names, by index (the list at `each` in the entry), elements
    of another list (at `in`, in the item); without `in`, the list at `each` holds the cited elements
    themselves. One annotation per cited element, rendered from both."""

    each: str
    indexes: Getter
    within: str | None
    listed: Getter | None


@dataclass(frozen=True)
class Annotations:
    """A kind's `annotations`: each element of the list at `each` (in the item) rendered by `template` into one
    OpenAI annotation; an element it renders as nothing is noted by its `kind` (kept in raw).

    `over`: the indexes are into the element's own text (`element`) or the answer's text joined so far
    (`answer`); `unit`: they count characters or UTF-8 bytes (converted to characters)."""

    each: str
    getter: Getter
    kind: Getter | None
    template: Render
    cites: Cites | None = None
    over: str = "element"
    unit: str = "characters"
    parts: tuple[str, Getter, Getter] | None = None  # `parts`: its path, the getters of the list and a part's text


@dataclass(frozen=True)
class ItemSource:
    path: str
    getter: Getter
    each: bool
    optional: bool
    kind: Getter | None
    kinds: Mapping[str, Render]
    template: Render | None
    arguments: str  # object | text | any: the form tool-call arguments must arrive in
    field_paths: Mapping[str, Mapping[str, str]]  # kind ("" without kinds) -> tool_call field -> path in the element
    parts: Mapping[str, Parts]  # kind ("" without kinds) -> its template, field by field
    optional_if: tuple[Getter, ...] = ()  # absent is fine when any of these is present (a blocked answer)
    kind_by_key: bool = False  # the kind is the first `kinds` key present in the element
    synthesize_ids: bool = False  # a tool call without an id gets one: see `synthesized_id`
    kind_path: str = ""  # the `kind` path, as written
    annotations: Mapping[str, Annotations] = field(default_factory=dict)  # kind ("" without kinds) -> its spec
    notes: Mapping[str, str] = field(default_factory=dict)  # kind -> the note each element of it gets (`note:`)

    def element_path(self, index: int) -> str:
        """The response path of one element (built only for errors and notes)."""
        return f"{self.path}[{index}]" if self.each else self.path

    def pick(self, element: Any) -> tuple[Any, Render | None]:
        """The element's kind ("" without kinds) and its template; None for a kind the rules do not know."""
        if self.kind is None and not self.kind_by_key:
            return "", self.template
        if self.kind_by_key:
            kind = _first_key(element, self.kinds)
        else:
            kind = self.kind(element) if isinstance(element, dict) and self.kind else MISSING
        return kind, (self.kinds.get(kind) if isinstance(kind, str) else None)


# a source's tool calls given whole (`Outbound.translate`): the source, its list in the answer, and the calls
Given = tuple[ItemSource, list[Any], list[TranslatedToolCall]]


class Run(Protocol):
    """The generated response function (`respond`)."""

    def __call__(
        self,
        o: Outbound,
        r: dict[str, Any],
        requested_model: str | None,
        id_map: Mapping[str, str] | None,
        tokens: int,
        given: Given | None = None,
    ) -> TranslateResult: ...


@dataclass(frozen=True)
class Outbound:
    """A rule file's compiled `response` section: one generated function (`run`, its source in `code`) and the
    explain steps it calls when its fast test of the response's shape fails."""

    provider: str
    model: Render | None
    sources: tuple[ItemSource, ...]
    stop_path: str
    stop: Getter
    table: Mapping[str, str]
    unknown: str
    missing: str | None
    usage: Render
    within: Mapping[str, tuple[tuple[str, str], ...]]  # a usage total -> the (details, count) pairs it includes
    blocked: tuple[str, Getter, str] | None = None  # (path, getter, finish reason): an answer refused whole
    usage_node: Node | None = field(default=None, compare=False)  # its parsed template, read inline when it can be
    tool_call_ids: IdRule | None = None  # ids encoded on the way in are restored on the way out
    model_read: Read | None = None  # the model template's one plain path, read inline by the generated code
    refusal: Render | None = None  # the `refusal` template: the provider's explanation of a refusal
    refusal_read: Read | None = None  # its one plain path, read inline by the generated code
    refusal_node: Node | None = field(default=None, compare=False)  # its parsed template, read inline when it can be
    templates_code: tuple[tuple[Key, str], ...] = ()  # (rule key, the Python a template compiled to)
    code: str = field(init=False)  # the generated function's source, for `toolnexus explain --code`
    run: Run = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Generates the response function from the section (again for a `dataclasses.replace`)."""
        code, run = generate(self)
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "run", run)

    def translate(
        self,
        response: Any,
        *,
        requested_model: str | None = None,
        id_map: Mapping[str, str] | None = None,
        given: Given | None = None,
        checked: bool = False,
    ) -> TranslateResult:
        """`id_map`: the answered request's `RequestBody.id_map`, so an id it sent rewritten comes back as the
        caller's (needed for a `rewrite`; `tn_` ids decode without it). The generated function checks the answer
        first (`tokens=-1`): it accounts for the null tokens with the Nones it meets, else `settle`s them.
        `given`: a source of tool calls of one kind whose list in the answer (the very list) is already translated,
        the calls exactly what reading it gives (a stream's own, `StreamTranslator._given`): taken as they are.
        `checked`: the answer holds only what the check would pass (a stream's events, `Streaming.checked`): not
        checked again, as `translate_decoded`."""
        return self.run(self, response, requested_model, id_map, 0 if checked else -1, given)

    def translate_decoded(
        self, response: dict[str, Any], *, requested_model: str | None = None, id_map: Mapping[str, str] | None = None
    ) -> TranslateResult:
        """`translate` for an object `jsonsafe.loads` returned untouched: its parse refused what `check` refuses."""
        return self.run(self, response, requested_model, id_map, 0)

    def decode(self, body: bytes | str) -> dict[str, Any]:
        """A response body (JSON text) -> its object (`jsonsafe.loads_body`, whose parse refuses what `translate`'s
        check of a decoded answer refuses, so the object goes to `translate_decoded` with no second check)."""
        response = loads_body(body, partial(ResponseError, provider=self.provider))
        if type(response) is not dict:
            self.not_an_object(response)
        return response

    def not_an_object(self, response: Any) -> NoReturn:
        """The ResponseError for an answer that is not an object."""
        message = f"the response must be an object, got {type(response).__name__}"
        raise ResponseError("", message, provider=self.provider)

    def settle(self, response: dict[str, Any], tokens: int) -> None:
        """The located ResponseError when one of the answer's `tokens` null tokens is a NaN or an Infinity (-1: the
        answer was not checked yet, so it is checked whole first)."""
        try:
            if tokens < 0:
                tokens = answer_nulls(response)
            if tokens:
                settle_nulls(response, tokens)
        except JsonValueError as exc:
            raise ResponseError(exc.where, exc.message, provider=self.provider) from None

    def _read_source(self, src: ItemSource, response: dict[str, Any], ctx: Ctx, found: _Found) -> None:
        """A source the generated code did not find as it expects: absent (fine if optional), or each element."""
        container = src.getter(response)
        if container is MISSING or container is None:
            if src.optional or any(present(response) not in (MISSING, None) for present in src.optional_if):
                return
            raise ResponseError(src.path, "is missing", provider=self.provider)
        if not src.each:
            elements: list[Any] = [container]
        elif isinstance(container, list):
            elements = container
        else:
            raise ResponseError(src.path, f"must be a list, got {type(container).__name__}", provider=self.provider)
        for i, element in enumerate(elements):
            self._read_element(src, i, element, response, ctx, found)

    def _read_element(
        self, src: ItemSource, i: int, element: Any, response: dict[str, Any], ctx: Ctx, found: _Found
    ) -> None:
        """One element, read by its whole template: the explain step the generated code calls when its fast
        test fails (the element's note or its precise error), and the reference the fast code agrees with."""
        kind, template = src.pick(element)
        fields = src.field_paths.get("", {})
        if src.kind is not None or src.kind_by_key:
            if template is None:
                if not isinstance(element, dict):
                    raise ResponseError(
                        src.element_path(i),
                        f"must be an object, got {type(element).__name__}",
                        provider=self.provider,
                    )
                note = f"unknown {self.provider} item kind {kind!r}; kept in raw"
                ctx.notes.append(Note("unknown", src.element_path(i), note))
                return
            assert isinstance(kind, str)
            fields = src.field_paths[kind]
        assert template is not None
        ctx.path = (src, i)
        item = template(element, ctx)
        key = kind if isinstance(kind, str) else ""
        if key in src.notes:  # carried elsewhere (rewritten), or only in raw (dropped)
            said = f"a {key!r} element: {src.notes[key]}" if key else src.notes[key]
            ctx.notes.append(Note("dropped" if item is MISSING or not item else "rewritten", src.element_path(i), said))
        if item is MISSING and key in src.annotations:  # a template of annotations only
            self.annotate(src.annotations[key], element, src, i, "", found, ctx)
            return
        if item is MISSING:  # the rules found nothing they know in it: say so, keep it in raw
            if key not in src.notes:
                message = "nothing the rules read is in it; kept in raw"
                ctx.notes.append(Note("unknown", src.element_path(i), message))
            return
        text = item.get("text")
        if text is not None and type(text) is not str:
            message = f"text must be a string, got {type(text).__name__}"
            raise ResponseError(src.element_path(i), message, provider=self.provider)
        if key in src.annotations:
            self.annotate(src.annotations[key], element, src, i, text or "", found, ctx)
            ctx.path = (src, i)
        if text is not None:
            found.texts.append(text)
        if "reasoning" in item or "message" in item:
            self._read_extras(item, ctx, found)
        call = item.get("tool_call")
        if call is not None:
            if src.synthesize_ids and not call.get("id"):
                if found.digest is None:
                    found.digest = response_digest(response, self.provider)
                call = {**call, "id": synthesized_id(found.digest, len(found.calls))}
                ctx.notes.append(Note("synthesized", src.element_path(i), f"no call id; sent as {call['id']}"))
            found.calls.append(self.tool_call(call, src, i, fields, ctx))

    def annotate(
        self, spec: Annotations, element: Any, src: ItemSource, i: int, text: str, found: _Found, ctx: Ctx
    ) -> None:
        """An item's annotations (the element `i` of `src`), their indexes moved from the item's text into the
        assembled text (an annotation that gives none spans the item's whole text); an element with no
        counterpart is noted. Called before the item's text joins `found.texts` (by the generated code and the
        explain step). Most items list none: then no path is formatted and no part's text is read."""
        listed = (spec.parts[1] if spec.parts is not None else spec.getter)(element)
        if listed is MISSING or listed is None:
            return
        if not isinstance(listed, list):
            message = f"must be a list, got {type(listed).__name__}"
            read = spec.parts[0] if spec.parts is not None else spec.each
            raise ResponseError(f"{src.element_path(i)}.{read}", message, provider=self.provider)
        if spec.parts is None:
            if not listed:
                return
            start, text = self._start(spec, text, found)
            path = ctx.path
            self._annotate(spec, element, src.element_path(i), listed, start, _Span(text, spec.unit), found, ctx)
            ctx.path = path
            return
        # each part's annotations index into its own text, which follows the parts before it
        own_text = spec.parts[2]
        start, counted = -1, 0  # the start of part `counted`'s text (-1: not yet needed)
        for p, part in enumerate(listed):
            entries = spec.getter(part) if isinstance(part, dict) else MISSING
            if entries is MISSING or entries is None:
                continue
            at = f"{src.element_path(i)}.{spec.parts[0]}[{p}]"
            if not isinstance(entries, list):
                message = f"must be a list, got {type(entries).__name__}"
                raise ResponseError(f"{at}.{spec.each}", message, provider=self.provider)
            if not entries:
                continue
            if start < 0:
                start = self._start(spec, text, found)[0]
            for before in listed[counted:p]:
                start += len(_part_text(own_text, before))
            own = _part_text(own_text, part)
            path = ctx.path
            self._annotate(spec, part, at, entries, start, _Span(own, spec.unit), found, ctx)
            ctx.path = path
            start, counted = start + len(own), p + 1

    @staticmethod
    def _start(spec: Annotations, text: str, found: _Found) -> tuple[int, str]:
        """Where the item's text starts in what its indexes count, and the text they index into."""
        if spec.over == "answer":  # indexes into the answer's text so far, not the element's own
            return 0, "".join(found.texts)
        return sum(map(len, found.texts)), text

    def _annotate(
        self,
        spec: Annotations,
        element: Any,
        where: str,
        listed: list[Any],
        start: int,
        span: _Span,
        found: _Found,
        ctx: Ctx,
    ) -> None:
        """One list of annotation entries, their indexes into `span`'s text, which starts at `start`."""
        for j, entry in enumerate(listed):
            at = f"{where}.{spec.each}[{j}]"
            for scope, cited_at, cited in self._cited(spec, element, entry, where, at):
                ctx.path = cited_at
                made = spec.template(scope, ctx)
                if made is MISSING or made is None:
                    named = spec.kind(scope) if spec.kind is not None and isinstance(scope, dict) else MISSING
                    what = f"a {named!r} entry" if isinstance(named, str) else "this entry"
                    what += f" ({cited}, cited here)" if cited is not None else ""
                    ctx.notes.append(Note("dropped", cited_at, f"{what} has no OpenAI annotation; kept in raw"))
                    continue
                own = made.get("type") if isinstance(made, dict) else None
                inner = made.get(own) if isinstance(own, str) else None
                if not isinstance(inner, dict):
                    message = "an annotation must be an object whose `type` names its own object"
                    raise ResponseError(cited_at, message, provider=self.provider)
                for name, value in inner.items():  # what the cited source is named by (a url, a title) is text
                    if name not in _SPAN and not isinstance(value, str):
                        message = f"an annotation's {name} must be a string, got {type(value).__name__}"
                        raise ResponseError(cited_at, message, provider=self.provider)
                first, last = span.chars(inner, cited_at, self.provider)
                inner = {**inner, "start_index": start + first, "end_index": start + last}
                found.annotations.append({**made, str(own): inner})

    def _cited(
        self, spec: Annotations, element: Any, entry: Any, where: str, at: str
    ) -> list[tuple[Any, str, str | None]]:
        """(the `as` scope, its path, the cited element's path) for one entry: the entry itself, or with
        `cites` one `{entry, cited}` per index it lists (an index outside the list is a located error)."""
        cites = spec.cites
        if cites is None:
            return [(entry, at, None)]
        indexes = cites.indexes(entry) if isinstance(entry, dict) else MISSING
        if indexes is MISSING or indexes is None:
            return []
        if not isinstance(indexes, list):
            wanted = "indexes" if cites.listed is not None else "cited elements"
            message = f"must be a list of {wanted}, got {type(indexes).__name__}"
            raise ResponseError(f"{at}.{cites.each}", message, provider=self.provider)
        if cites.listed is None:  # the cited elements themselves
            return [
                ({"entry": entry, "cited": cited}, f"{at}.{cites.each}[{k}]", None) for k, cited in enumerate(indexes)
            ]
        listed = cites.listed(element)
        scopes: list[tuple[Any, str, str | None]] = []
        for k, index in enumerate(indexes):
            here = f"{at}.{cites.each}[{k}]"
            if type(index) is not int or not isinstance(listed, list) or not 0 <= index < len(listed):
                size = len(listed) if isinstance(listed, list) else 0
                message = f"must index {where}.{cites.within} (0 to {size - 1}), got {index!r}"
                raise ResponseError(here, message, provider=self.provider)
            scopes.append(({"entry": entry, "cited": listed[index]}, here, f"{cites.within}[{index}]"))
        return scopes

    def _read_extras(self, item: dict[str, Any], ctx: Ctx, found: _Found) -> None:
        """An item's reasoning text and its pieces of the assistant message (ctx.path is the element)."""
        reasoning = item.get("reasoning")
        if reasoning is not None:
            if type(reasoning) is not str:
                message = f"reasoning must be a string, got {type(reasoning).__name__}"
                raise ResponseError(ctx.where(), message, provider=self.provider)
            found.reasoning.append(reasoning)
        extras = item.get("message")
        if extras is not None:
            if not isinstance(extras, dict):
                message = f"message extras must be a mapping, got {type(extras).__name__}"
                raise ResponseError(ctx.where(), message, provider=self.provider)
            merge_extras(found.extras, extras, "", ctx)

    def tool_call(
        self, call: dict[str, Any], src: ItemSource, i: int, fields: Mapping[str, str], ctx: Ctx
    ) -> TranslatedToolCall:
        """Validate one rendered tool call (here and as a stream starts an element); errors point at the field
        inside the element when the rule reads it plainly."""
        call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments", MISSING)
        extra = call.get("extra_content")
        if extra is not None and not isinstance(extra, dict):
            message = f"a tool call's extra_content must be a mapping, got {type(extra).__name__}"
            raise ResponseError(src.element_path(i), message, provider=self.provider)
        form, sent = src.arguments, None  # sent: the arguments' object, where they came as one
        if type(arguments) is dict and form != "text":
            try:
                sent, arguments = arguments, arguments_json(arguments)
            except (TypeError, ValueError) as exc:
                raise ResponseError(
                    src.element_path(i), f"tool input is not representable as JSON ({exc})", provider=self.provider
                ) from None
        if (
            type(call_id) is str
            and call_id
            and type(name) is str
            and name
            and type(arguments) is str
            and (form != "object" or type(call.get("arguments")) is dict)
        ):
            if self.tool_call_ids is not None:
                given = call_id
                call_id = self.tool_call_ids.restore(call_id, ctx.ids or NO_IDS)
                if call_id != given:
                    ctx.notes.append(Note("rewritten", src.element_path(i), f"id {given!r} restored to {call_id!r}"))
            return new_tool_call(call_id, name, arguments, extra, sent)
        return self.bad_tool_call(call, src.element_path(i), fields, form)

    def bad_tool_call(self, call: dict[str, Any], path: str, fields: Mapping[str, str], form: str) -> NoReturn:
        """The located error for a tool call that is not valid (its id, then its name, then its arguments)."""

        def where(name: str) -> str:
            return f"{path}.{fields[name]}" if name in fields else path

        call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments", MISSING)
        if not isinstance(call_id, str) or not call_id:
            raise ResponseError(where("id"), "a tool call needs a non-empty string id", provider=self.provider)
        if not isinstance(name, str) or not name:
            raise ResponseError(where("name"), "a tool call needs a non-empty string name", provider=self.provider)
        got = "nothing" if arguments is MISSING else type(arguments).__name__
        wanted = "a JSON string" if form == "text" else "a JSON object"
        raise ResponseError(where("arguments"), f"tool input must be {wanted}, got {got}", provider=self.provider)

    def _finish_reason(self, response: dict[str, Any], has_tool_calls: bool, ctx: Ctx) -> str:
        stop = self.stop(response)
        if has_tool_calls:
            return FINISH_TOOL_CALLS
        if self.blocked is not None and self.blocked[1](response) not in (MISSING, None):
            return self.blocked[2]
        if stop is MISSING or stop is None:
            if self.missing is None:
                raise ResponseError(self.stop_path, "is missing", provider=self.provider)
            ctx.notes.append(Note("synthesized", self.stop_path, f"no stop reason given; reported as {self.missing!r}"))
            return self.missing
        mapped = self.table.get(stop) if isinstance(stop, str) else None
        if mapped is None:
            ctx.notes.append(
                Note("unknown", self.stop_path, f"unknown stop reason {stop!r}; reported as {self.unknown!r}")
            )
            return self.unknown
        if mapped == FINISH_TOOL_CALLS:  # "tool_calls" promises tool calls; there are none
            ctx.notes.append(Note("rewritten", self.stop_path, f"{stop!r} came with no tool call; reported as 'stop'"))
            return FINISH_STOP
        return mapped

    def refusal_of(self, response: dict[str, Any], ctx: Ctx) -> str | None:
        """The `refusal` template's reading of the response: the provider's explanation, a non-empty string
        or nothing (a refusal without one is still a content_filter finish)."""
        if self.refusal is None:
            return None
        ctx.path = ""
        found = self.refusal(response, ctx)
        return found if type(found) is str and found else None

    def finish_reason_for(self, has_tool_calls: bool, provider_stop: str | None) -> str:
        """The finish reason alone, without a response (the seed's named helper)."""
        if has_tool_calls:
            return FINISH_TOOL_CALLS
        if provider_stop is None:
            return self.missing or self.unknown
        if self.table.get(provider_stop) == FINISH_TOOL_CALLS:
            return FINISH_STOP
        return self.table.get(provider_stop, self.unknown)


# ---------------------------------------------------------------- compiling


def compile_outbound(source: RuleSource) -> Outbound:
    data = source.data
    compiled: dict[Key, str] = {}  # each template's generated Python, returned on the Outbound

    def env() -> Env:
        return Env(source, generated=compiled)

    rule = data["response"]
    key = ("response",)
    sources = []
    for i, spec in enumerate(rule["items"]):
        at = (*key, "items", i)
        has_each, has_one = "each" in spec, "one" in spec
        if has_each == has_one:
            raise source.error(at, "give exactly one of `each` (a list) or `one` (an object)")
        path = spec["each"] if has_each else spec["one"]
        by_key = bool(spec.get("kind_by_key", False))
        has_kind, has_as = "kind" in spec or by_key, "as" in spec
        if has_kind == has_as or ("kind" in spec and by_key):
            raise source.error(at, "give either `kind` (or `kind_by_key`) with `kinds`, or `as`")
        if has_kind and not isinstance(spec.get("kinds"), dict):
            raise source.error(at, "`kind` needs a `kinds` table")
        given = {"": spec["as"]} if has_as else dict(spec["kinds"])
        annotations = {
            name: _annotations(tmpl["annotations"], (*_item_key(at, has_as, name), "annotations"), env())
            for name, tmpl in given.items()
            if isinstance(tmpl, dict) and "annotations" in tmpl
        }
        notes = {name: tmpl["note"] for name, tmpl in given.items() if isinstance(tmpl, dict) and "note" in tmpl}
        given = {name: _item_template(tmpl) for name, tmpl in given.items()}
        kinds = {
            name: compile_template(tmpl, (*at, "kinds", name), env()) for name, tmpl in given.items() if not has_as
        }
        parts = {
            name: _parts(tmpl, _item_key(at, has_as, name), env(), annotations.get(name))
            for name, tmpl in given.items()
        }
        sources.append(
            ItemSource(
                path=path,
                getter=path_getter(path, (*at, "each" if has_each else "one"), env()),
                each=has_each,
                optional=bool(spec.get("optional", False)),
                kind=path_getter(spec["kind"], (*at, "kind"), env()) if "kind" in spec else None,
                kinds=MappingProxyType(kinds),
                template=compile_template(given[""], (*at, "as"), env()) if has_as else None,
                arguments=spec.get("arguments", "any"),
                field_paths=MappingProxyType({name: _tool_call_paths(p) for name, p in parts.items()}),
                optional_if=tuple(
                    path_getter(p, (*at, "optional_if", j), env()) for j, p in enumerate(spec.get("optional_if", []))
                ),
                kind_by_key=by_key,
                synthesize_ids=bool(spec.get("synthesize_ids", False)),
                kind_path=spec.get("kind", ""),
                parts=MappingProxyType(parts),
                annotations=MappingProxyType(annotations),
                notes=MappingProxyType(notes),
            )
        )

    finish = rule["finish_reason"]
    missing_values = [v for v in finish["documented"] if v not in finish["table"]]
    if missing_values:
        raise source.error(
            (*key, "finish_reason", "table"),
            f"does not cover the documented stop reason(s) {', '.join(missing_values)}",
        )
    usage_env, model_env = env(), env()
    usage = parse_template(rule["usage"], (*key, "usage"), usage_env)  # parsed once: compiled, and asked what it writes
    model = parse_template(rule["model"], (*key, "model"), model_env) if "model" in rule else None
    refusal_env = env()
    refusal = parse_template(rule["refusal"], (*key, "refusal"), refusal_env) if "refusal" in rule else None
    return Outbound(
        provider=data["provider"],
        model=compile_node(model, (*key, "model"), model_env) if model is not None else None,
        model_read=plain_read(model) if model is not None else None,
        sources=tuple(sources),
        stop_path=finish["from"],
        stop=path_getter(finish["from"], (*key, "finish_reason", "from"), env()),
        table=MappingProxyType(dict(finish["table"])),
        unknown=finish["unknown"],
        missing=finish.get("missing"),
        usage=compile_node(usage, (*key, "usage"), usage_env),
        usage_node=usage,
        blocked=(
            (
                finish["blocked"]["from"],
                path_getter(finish["blocked"]["from"], (*key, "finish_reason", "blocked", "from"), env()),
                finish["blocked"]["reason"],
            )
            if "blocked" in finish
            else None
        ),
        tool_call_ids=compile_id_rule(source),
        within=_within(rule, source, usage),
        refusal=compile_node(refusal, (*key, "refusal"), refusal_env) if refusal is not None else None,
        refusal_read=plain_read(refusal) if refusal is not None else None,
        refusal_node=refusal,
        templates_code=tuple(compiled.items()),  # last: every template above is compiled by then
    )


def _item_key(at: Key, has_as: bool, name: str) -> Key:
    return (*at, "as") if has_as else (*at, "kinds", name)


def _item_template(template: Any) -> Any:
    """An item template without the keys read apart from it (`annotations`, `note`)."""
    if not isinstance(template, dict):
        return template
    return {k: v for k, v in template.items() if k not in ("annotations", "note")}


def _annotations(spec: Any, key: Key, env: Env) -> Annotations:
    """`annotations: {each: PATH, kind: PATH, cites: {each, in}, over: element|answer, unit:
    characters|utf8-bytes, as: TEMPLATE}` of one item kind (scope of `as`: one entry, or with `cites`
    `{entry, cited}`)."""
    if not isinstance(spec, dict) or "each" not in spec or "as" not in spec:
        raise env.error(key, "annotations takes {each: PATH, as: TEMPLATE} and optionally kind: PATH")
    cites = spec.get("cites")
    if cites is not None and (not isinstance(cites, dict) or "each" not in cites or not set(cites) <= {"each", "in"}):
        message = "cites takes {each: PATH (in the entry)} and optionally in: PATH (the list it indexes, in the item)"
        raise env.error((*key, "cites"), message)
    for name, allowed in (("over", ANNOTATION_OVER), ("unit", ANNOTATION_UNITS)):
        if spec.get(name, allowed[0]) not in allowed:
            raise env.error((*key, name), f"must be one of {', '.join(allowed)}, got {spec[name]!r}")
    parts = spec.get("parts")
    if parts is not None and (not isinstance(parts, dict) or set(parts) != {"each", "text"}):
        raise env.error((*key, "parts"), "parts takes {each: PATH (the parts, in the element), text: PATH (in a part)}")
    if parts is not None and spec.get("over") == "answer":
        message = "a part's indexes are into its own text: `parts` and `over: answer` exclude each other"
        raise env.error((*key, "parts"), message)
    return Annotations(
        each=spec["each"],
        getter=path_getter(spec["each"], (*key, "each"), env),
        kind=path_getter(spec["kind"], (*key, "kind"), env) if "kind" in spec else None,
        template=compile_template(spec["as"], (*key, "as"), env),
        cites=(
            Cites(
                each=cites["each"],
                indexes=path_getter(cites["each"], (*key, "cites", "each"), env),
                within=cites.get("in"),
                listed=path_getter(cites["in"], (*key, "cites", "in"), env) if "in" in cites else None,
            )
            if cites is not None
            else None
        ),
        over=spec.get("over", ANNOTATION_OVER[0]),
        unit=spec.get("unit", ANNOTATION_UNITS[0]),
        parts=(
            (
                parts["each"],
                path_getter(parts["each"], (*key, "parts", "each"), env),
                path_getter(parts["text"], (*key, "parts", "text"), env),
            )
            if parts is not None
            else None
        ),
    )


ANNOTATION_OVER = ("element", "answer")  # what an annotation's indexes are into (the first: the default)
ANNOTATION_UNITS = ("characters", "utf8-bytes")  # what they count
_SPAN = frozenset({"start_index", "end_index"})  # an annotation's indexes; its other values are text


class _Span:
    """An annotation's indexes in the text they are into, as characters (given as characters or as UTF-8
    bytes, which must fall on a character's boundary); absent ones span the whole text."""

    __slots__ = ("encoded", "text", "unit")

    def __init__(self, text: str, unit: str) -> None:
        self.text, self.unit = text, unit
        self.encoded = text.encode("utf-8") if unit == "utf8-bytes" else b""

    def chars(self, inner: dict[str, Any], at: str, provider: str) -> tuple[int, int]:
        size = len(self.encoded) if self.unit == "utf8-bytes" else len(self.text)
        span = {"start_index": inner.get("start_index", 0), "end_index": inner.get("end_index", size)}
        if not all(type(v) is int for v in span.values()) or not 0 <= span["start_index"] <= span["end_index"] <= size:
            unit = "bytes" if self.unit == "utf8-bytes" else "characters"
            message = f"an annotation's indexes must lie within the text (0 to {size} {unit}), got {span}"
            raise ResponseError(at, message, provider=provider)
        if self.unit != "utf8-bytes":
            return span["start_index"], span["end_index"]
        try:
            first = len(self.encoded[: span["start_index"]].decode("utf-8"))
            last = first + len(self.encoded[span["start_index"] : span["end_index"]].decode("utf-8"))
        except UnicodeDecodeError:
            message = f"an annotation's byte indexes must fall between characters of the text, got {span}"
            raise ResponseError(at, message, provider=provider) from None
        return first, last


def _part_text(own_text: Getter, part: Any) -> str:
    """A part's own text, which its annotations index into ("" when it has none)."""
    own = own_text(part) if isinstance(part, dict) else MISSING
    return own if type(own) is str else ""


def _list_part(spec: Annotations) -> Part:
    """The list an `annotations` spec reads, for the generated code's fast test (empty: nothing to do)."""
    each, getter = (spec.parts[0], spec.parts[1]) if spec.parts is not None else (spec.each, spec.getter)
    steps = simple_steps(each)
    return Part(tuple(steps), None) if steps is not None else Part(None, None, getter=getter)


def _parts(template: dict[str, Any], key: Key, env: Env, annotations: Annotations | None = None) -> Parts:
    """One kind's template split field by field: plain reads stay paths, the rest compile alone."""

    def part(name: str, spec: Any, at: Key) -> Part:
        node = parse_template(spec, (*at, name), env)
        plain = plain_read(node)
        steps = plain.steps if plain is not None else None
        getter = plain.getter if plain is not None and steps is None else None
        render = None if plain is not None else compile_node(node, (*at, name), env)
        read = read_path(node)
        inline = isinstance(node, Get) and not node.required and node.wanted is None  # a default alone: read inline
        defaulted = read.steps if read is not None and inline else None
        mapping = node if isinstance(node, Obj) and _plain_mapping(node) else None
        copies = _copies_element(node)
        return Part(steps, render, read, mapping, defaulted if steps is None else None, getter, copies)

    call = template.get("tool_call")
    return Parts(
        text=part("text", template["text"], key) if "text" in template else None,
        reasoning=part("reasoning", template["reasoning"], key) if "reasoning" in template else None,
        message=part("message", template["message"], key) if "message" in template else None,
        tool_call=(
            MappingProxyType({name: part(name, spec, (*key, "tool_call")) for name, spec in call.items()})
            if isinstance(call, dict)
            else None
        ),
        annotations=_list_part(annotations) if annotations is not None else None,
        annotate=annotations,
    )


def _keys_to_value(node: Obj) -> list[str]:
    """The keys down to a mapping's one value (a mapping of one key, each level)."""
    keys = []
    while True:
        (name, child), *_ = node.items
        keys.append(name)
        if not isinstance(child, Obj):
            return keys
        node = child


def _plain_mapping(node: Node) -> bool:
    """Whether a template is a mapping whose values are plain reads or such mappings (`{extra_content: {$get:
    extra_content}}`): the generated code builds it inline, with the template's semantics (an absent value
    writes no key, an empty mapping is absent)."""
    if not isinstance(node, Obj) or not node.items:
        return False
    for _, child in node.items:
        plain = plain_read(child)
        if (plain is None or plain.steps is None) and not _plain_mapping(child):
            return False
    return True


def _copies_element(node: Node) -> bool:
    """Whether a template's value is made only of objects and lists (each written whole: no `$when`, no default)
    holding the element itself (a plain `$get` of `@`) and string constants."""
    if isinstance(node, Obj | Array):
        return all(_copies_element(child) for child in node.children())
    if isinstance(node, Get):
        return node.plain and len(node.reads) == 1 and node.reads[0].steps == ()
    return isinstance(node, Const) and type(node.value) is str


OPENAI_WITHIN: dict[str, tuple[tuple[str, str], ...]] = {  # what OpenAI's own usage totals include
    "prompt_tokens": (("prompt_tokens_details", "cached_tokens"),),
    "completion_tokens": (("completion_tokens_details", "reasoning_tokens"),),
}


def _within(rule: dict[str, Any], source: RuleSource, usage: Node) -> Mapping[str, tuple[tuple[str, str], ...]]:
    """`usage_within`: the counts the rules write that a total already includes, beside OpenAI's own (what
    the `usage` template writes is asked of its nodes)."""
    details_written = {
        name: dict(written(node))
        for name, node in written(usage)
        if isinstance(node, Obj) or (isinstance(node, Const) and isinstance(node.value, dict))
    }  # a mapping the rules write key by key; an operation's keys are not known before it runs
    within = {total: list(counts) for total, counts in OPENAI_WITHIN.items()}
    for total, paths in rule.get("usage_within", {}).items():
        for i, path in enumerate(paths):
            at = ("response", "usage_within", total, i)
            details, _, count = path.partition(".")
            counts = details_written.get(details)
            if counts is not None and count not in counts:
                raise source.error(at, f"usage.{details} writes no '{count}'")
            if (details, count) in within[total]:
                raise source.error(at, f"{total} already includes {path}")
            within[total].append((details, count))
    return MappingProxyType({total: tuple(counts) for total, counts in within.items()})


def _tool_call_paths(parts: Parts) -> Mapping[str, str]:
    """For error paths: which element field each tool_call field reads, where it reads one path."""
    fields = parts.tool_call or {}
    return MappingProxyType({name: part.read.expr for name, part in fields.items() if part.read is not None})


class _Found:
    """What a response's items add up to. The generated function keeps its texts and tool calls in its own lists
    and builds this (on those lists) only when an element needs more: reasoning, extras, annotations, an id, or
    the explain step."""

    __slots__ = ("annotations", "calls", "digest", "extras", "reasoning", "texts")

    def __init__(self, texts: list[str] | None = None, calls: list[TranslatedToolCall] | None = None) -> None:
        self.texts: list[str] = [] if texts is None else texts
        self.calls: list[TranslatedToolCall] = [] if calls is None else calls
        self.reasoning: list[str] = []
        self.extras: dict[str, Any] = {}
        self.digest: str | None = None  # the response's digest, computed once for its synthesized ids
        self.annotations: list[dict[str, Any]] = []  # OpenAI message annotations, indexes into the joined text


def merge_extras(into: dict[str, Any], extras: dict[str, Any], prefix: str, ctx: Ctx) -> None:
    """Merge one item's assistant-message pieces: mappings merge, lists concatenate, a clash keeps the first.

    A clash is noted at ctx's path (the element being read).
    """
    for key, value in extras.items():
        have = into.get(key, MISSING)
        if have is MISSING:
            if isinstance(value, dict):
                into[key] = {}
                merge_extras(into[key], value, f"{prefix}{key}.", ctx)
            else:
                into[key] = list(value) if isinstance(value, list) else value  # never extend the response's own list
        elif isinstance(have, list) and isinstance(value, list):
            have.extend(value)
        elif isinstance(have, dict) and isinstance(value, dict):
            merge_extras(have, value, f"{prefix}{key}.", ctx)
        elif have != value:
            message = f"a second {prefix}{key} for the assistant message; the first is kept"
            ctx.notes.append(Note("dropped", ctx.where(), message))


def check_usage(usage: dict[str, Any], within: Mapping[str, tuple[tuple[str, str], ...]] = OPENAI_WITHIN) -> list[Note]:
    """The usage invariants every provider's rules must keep: a note for each one broken.

    total_tokens is prompt_tokens + completion_tokens; each total includes the counts `within` names
    for it (OpenAI's: cached tokens in prompt_tokens, reasoning tokens in completion_tokens; a rule
    file's `usage_within` adds its own).
    """
    prompt, completion, total = usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")
    notes = []
    if prompt is not None and completion is not None and total is not None and total != prompt + completion:
        message = f"is {total}, but prompt_tokens + completion_tokens is {prompt + completion}"
        notes.append(Note("inconsistent", "usage.total_tokens", message))
    for name, counts in within.items():
        included = 0
        for details, count in counts:  # a loop, not sum() over a generator: this runs on every answer it notes
            held = usage.get(details)
            if held:
                included += held.get(count, 0)
        have = usage.get(name)
        if included and (have is None or included > have):
            names = ", ".join(f"{details}.{count}" for details, count in counts)
            message = f"is {'absent' if have is None else have}, less than the counts it includes ({names}: {included})"
            notes.append(Note("inconsistent", f"usage.{name}", message))
    return notes


def _counts(usage: dict[str, Any], ctx: Ctx) -> dict[str, Any]:
    """Usage as OpenAI has it, in one pass when every count is clean (integers from 0, non-empty `*_details`
    objects of them, null counts left out); anything else goes to `_explain_counts`, which notes it."""
    out: dict[str, Any] = {}
    for key, value in usage.items():
        if type(value) is int and value >= 0 and not key.endswith("_details"):
            out[key] = value
        elif type(value) is dict and value and key.endswith("_details"):
            for count in value.values():
                if type(count) is not int or count < 0:
                    return _explain_counts(usage, ctx)
            out[key] = dict(value)
        elif value is not None:
            return _explain_counts(usage, ctx)
    return out


def _explain_counts(usage: dict[str, Any], ctx: Ctx, where: tuple[str, ...] = ("usage",)) -> dict[str, Any]:
    """Usage as OpenAI has it: non-negative integers, and `*_details` objects of them; a null count is
    absent, any other value is left out and noted (`where` is the path so far, joined only for a note)."""
    out: dict[str, Any] = {}
    for key, value in usage.items():
        details = len(where) == 1 and key.endswith("_details")  # an object of counts, never a count
        if type(value) is int and value >= 0 and not details:
            out[key] = value
        elif value is None:
            continue
        elif isinstance(value, dict) and details:
            inner = _explain_counts(value, ctx, (*where, key))
            if inner:
                out[key] = inner
        else:
            ctx.bad_count(".".join((*where, key)), value, "an object of counts" if key.endswith("_details") else None)
    return out


def _first_key(element: Any, kinds: Mapping[str, Render]) -> Any:
    """`kind_by_key`: the first `kinds` key the element holds with a value (not null or false)."""
    if not isinstance(element, dict):
        return MISSING
    for name in kinds:
        value = element.get(name)
        if value is not None and value is not False:
            return name
    return next(iter(element), MISSING)  # unknown: named by its first key, for the note


# A tool call's arguments object as the JSON text OpenAI carries: one encoder built once (json.dumps with
# options builds a new one per call, a cost per tool call); the same text as json.dumps.
arguments_json = text_encoder(ensure_ascii=False)
_DIGEST_TEXT = text_encoder(ensure_ascii=True, sort_keys=True, default=repr)


def response_digest(response: Any, provider: str) -> str:
    """A digest of the whole response (its JSON with sorted keys): the part of a synthesized id that
    tells two answers apart. Two answers that differ anywhere (a response id, a token count, the
    call itself) get different digests; the same response always gets the same one."""
    try:
        text = _DIGEST_TEXT(response)
    except (RecursionError, TypeError, ValueError) as exc:  # nested too deep, keys that do not sort, a cycle
        message = f"cannot be read as JSON to give its tool calls ids ({type(exc).__name__})"
        raise ResponseError("", message, provider=provider) from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


# (position, digest) -> a synthesized id, formatted with no Python call (the generated code makes one per call)
_ID_OF = "call_{}_{}".format


def synthesized_id(digest: str, position: int) -> str:
    """`call_<position>_<response digest>`: unique within the result (the position among its tool calls)
    and across answers (the digest), stable for the same response."""
    return _ID_OF(position, digest)


# ---------------------------------------------------------------- the generated response function


RESULT_FIELDS = tuple(spec.name for spec in fields(TranslateResult))
# Each field of the result, as the response function's lines (`ResponseGen.read`) leave it, in RESULT_FIELDS' order.
RESULT_VALUES = [
    '"".join(texts)', "calls", "finish", "u", "mo", "r", "() if c is None else tuple(c.notes)",
    '"" if f is None else "".join(f.reasoning)', "{} if f is None else f.extras",
    "[] if f is None else f.annotations", "refusal",
]  # fmt: skip
# The exact types some of those values are always of, whatever the answer (a join is a string; `ResponseGen.refusal`
# leaves a string or None), so that the writer's tests of them can be folded (`fused_answer_code.unmade_split`).
RESULT_TYPES: dict[str, frozenset[type]] = {
    "text": frozenset({str}), "reasoning_content": frozenset({str}), "refusal": frozenset({str, type(None)}),
}  # fmt: skip


def result_lines(values: list[str]) -> list[str]:
    """Lines returning the TranslateResult of `values` (one expression per field, in order), built by its slots:
    the dataclass's `__init__` (a second frame, its arguments bound again) costs as much again as the stores,
    and the generated function builds one per answer."""
    assert len(values) == len(RESULT_FIELDS), "one value per TranslateResult field"
    stores = [f"res.{name} = {value}" for name, value in zip(RESULT_FIELDS, values, strict=True)]
    return ["res = new_object(TranslateResult)", *stores, "return res"]


def _held_count(where: str | Mapping[str, str], key: str) -> str:
    """The expression of a details count the usage test adds up (0 where absent), on the straight path: read from
    the provider's object of counts copied whole (`where`: its variable, MISSING or a mapping of clean counts), or
    a details mapping's count expressions (`where`: key -> expression). Either is what `u` holds there, without
    looking it up in `u` again."""
    if isinstance(where, str):
        return f"(0 if {where} is MISSING else {where}.get({key!r}, 0))"
    return where.get(key, "0")


class ResponseGen(Namespace):
    """The one function a rule file's `response` section compiles to, built line by line.

    The function reads the common response inline: each source's list, each element's kind, the fields
    its template reads plainly (richer fields call their own compiled template), a fast test of their
    types, then the writes and the notes where they arise. An element or source that fails the test goes
    to the explain step (`Outbound._read_element`, `_read_source`, `_finish_reason`), which renders
    it by its whole template and gives the same result, its note, or the precise ResponseError.
    """

    # How a tool call is held: new_tool_call's arguments given it (a fused answer holds them as a tuple)
    call = "new_tool_call({})"
    # A fused answer's flag each straight usage path sets to its number (from 1, in `straight_usage`'s order; None:
    # not set), and what each path leaves where: each usage path -> its expression and kind (`usage_straight`), so
    # the writer reads the counts with no `u` read again.
    straight_mark: str | None = None
    straight_usage: tuple[Mapping[tuple[str, ...], tuple[str, str]], ...] = ()
    # A fused answer's flag, True until an object merged into the message extras may hold anything but strings (in
    # objects and lists): where its template copies the element (`Part.copies_element`), the element's values are
    # tested there; any other template's clears it. None: not kept.
    texts: str | None = None
    # A fused answer's lines run where each call is read, after it is held (`call`), given the expressions it is
    # held of (`new_tool_call`'s five arguments: its arguments text third, the object it came as last, "None": as
    # text), e.g. its `input` parsed there (`fused_answer_code.at_each_call`).
    at_call: Callable[[tuple[str, ...]], list[str]] | None = None

    def __init__(self, outbound: Outbound) -> None:
        self.o = outbound
        # the call's Ctx, built where first needed (most answers need none: no note, no rendered template)
        self.ctx = f"(c := c or Ctx({outbound.provider!r}, True, id_map))"
        self.built = ""  # "c" where the lines being generated know it built
        self.lazy = ""  # the source's name where the kind being generated renders only absent fields (see `kind`)
        super().__init__({"MISSING": MISSING, "NO_KEYS": MappingProxyType({}), "NO_IDS": NO_IDS, "Ctx": Ctx,
                          "Note": Note, "Found": _Found, "new_tool_call": new_tool_call, "counts": _counts,
                          "TranslateResult": TranslateResult, "new_object": object.__new__,
                          "arguments_json": arguments_json, "countOf": countOf,
                          "merge_extras": merge_extras, "response_digest": response_digest,
                          "id_of": _ID_OF, "check_usage": check_usage,
                          "as_tuple": tuple.__new__, "answer_nulls": answer_nulls,
                          "JsonValueError": JsonValueError, "ResponseError": ResponseError,
                          "LONG_TEXT": LONG_TEXT})  # fmt: skip
        self.prefixes: dict[tuple[str | int, ...], str] = {}  # response paths read so far -> their variables
        self.views: dict[str, str] = {}  # a top-level variable -> the one that holds it as a mapping (see `step`)
        self.counts: dict[str, str] = {}  # a top-level variable read as a count -> the one holding it when clean
        self.sources: dict[tuple[str | int, ...], str] = {}  # an item source's plain path -> list (each) or dict (one)

    def top(self, path: str, getter: Getter) -> tuple[list[str], str]:
        """Lines reading a path of the response at the function's top level, and the variable holding it.

        Plain paths share their prefixes (`choices[0].message` is read once for the text, the tool calls and
        the stop reason); others call their compiled getter."""
        steps = simple_steps(path)
        if steps is None:
            var = self.name(None, "x")
            return [f"{var} = {self.name(getter, 'g')}(r)"], var
        return self.top_steps(tuple(steps))

    def top_steps(self, steps: tuple[str | int, ...]) -> tuple[list[str], str]:
        """`top` of a plain path's steps."""
        lines: list[str] = []
        var = "r"
        for n in range(1, len(steps) + 1):
            prefix = tuple(steps[:n])
            known = self.prefixes.get(prefix)
            if known is None:
                known = self.prefixes[prefix] = f"r{len(self.prefixes)}"
                lines += self.step(known, var, prefix[-1], self.views)
            var = known
        return lines, var

    def step(self, target: str, var: str, step: str | int, views: dict[str, str]) -> list[str]:
        """One step of a plain read. `r` (the response) and `e` (an element the dispatch found to be one) are
        objects; another holder is tested once, into its view (`views`: variable -> view), not once per key."""
        if isinstance(step, int):
            if step < 0:
                return read_lines(target, var, (step,))
            return [f"{target} = {var}[{step}] if isinstance({var}, list) and len({var}) > {step} else MISSING"]
        if var in ("r", "e"):
            return [f"{target} = {var}.get({step!r}, MISSING)"]
        lines = []
        view = views.get(var)
        if view is None:
            view = views[var] = f"{var}d"
            lines.append(f"{view} = {var} if isinstance({var}, dict) else NO_KEYS")
        return [*lines, f"{target} = {view}.get({step!r}, MISSING)"]

    def part(self, target: str, part: Part, read: dict[tuple[str | int, ...], str], views: dict[str, str]) -> list[str]:
        """Lines leaving one template field of the element `e` (known to be an object) in `target`.

        Plain reads share their prefixes (`read`: path -> variable) and views within the element."""
        if part.mapping is not None:
            return self.mapping(target, part.mapping, read, views)
        if part.getter is not None:
            return [f"{target} = {self.name(part.getter, 'g')}(e)"]
        steps = part.steps if part.steps is not None else part.defaulted
        if steps is None:
            return [f"{target} = {self.name(part.render, 'render')}(e, {self.built or self.ctx})"]
        lines: list[str] = []
        var = "e"
        for n in range(1, len(steps) + 1):
            prefix = steps[:n]
            known = read.get(prefix)
            if known is None:
                known = read[prefix] = f"e{len(read)}"
                lines += self.step(known, var, prefix[-1], views)
            var = known
        if part.steps is None:  # absent: the template's default, and its note
            name = self.name(part.render, "render")
            if self.lazy:  # its notes name the element, and go if the explain step reads it (`kind`)
                render = (f"{self.ctx}.path = ({self.lazy}, i); mark = len(c.notes) if mark is None else mark; "
                          f"{target} = {name}(e, c)")  # fmt: skip
            else:
                render = f"{target} = {name}(e, {self.built or self.ctx})"
            return [*lines, f"{target} = {var}", f"if {target} is MISSING: {render}"]
        return [*lines, f"{target} = {var}"]

    def mapping(
        self, target: str, node: Obj, read: dict[tuple[str | int, ...], str], views: dict[str, str]
    ) -> list[str]:
        """A mapping of plain reads built inline in `target`, as its template renders it: a value read as absent
        writes no key, and a mapping left empty is absent (MISSING). Its values are read first: when all are
        absent (most often) nothing is built."""
        lines: list[str] = []
        values: list[str] = []

        def build(mapping: Obj, into: str) -> list[str]:
            """Lines writing the mapping's present values into `into` (a nested mapping only when not empty)."""
            writes = [f"{into} = {{}}"]
            for name, child in mapping.items:
                plain = plain_read(child)
                if plain is not None and plain.steps is not None:
                    value = f"{target}{len(values)}"
                    values.append(value)
                    lines.extend(self.part(value, Part(plain.steps, None), read, views))
                    writes.append(f"if {value} is not MISSING: {into}[{name!r}] = {value}")
                else:
                    assert isinstance(child, Obj)
                    inner = f"{into}m"
                    writes += [*build(child, inner), f"if {inner}: {into}[{name!r}] = {inner}"]
            return writes

        writes = build(node, target)
        absent = " and ".join(f"{value} is MISSING" for value in values)
        if len(values) == 1:  # present, it makes every mapping around it present
            literal = values[0]
            for name in reversed(_keys_to_value(node)):
                literal = f"{{{name!r}: {literal}}}"
            return [*lines, f"{target} = MISSING if {absent} else {literal}"]
        return [*lines, f"if {absent}: {target} = MISSING", "else:", *indent(writes, 4)]

    def function(self) -> str:
        head = "def respond(o, r, requested_model, id_map=None, tokens=0, given=None):\n"
        body = "".join(f"        {line}\n" for line in [*self.read(), *result_lines(RESULT_VALUES)])
        return head + "".join(f"    {line}\n" for line in self.check()) + "    try:\n" + body + self.settled()

    def read(self) -> list[str]:
        """The body's lines up to the result: the answer read (each field of the result in a variable of
        `RESULT_VALUES`), its notes in the Ctx where any, and its check settled."""
        o = self.o
        lines = ["c = None", "texts = []", "calls = []", "f = None"]
        index = 0
        while index < len(o.sources):
            run, under = self.optional_run(index)
            if len(run) > 1:
                lines += self.guarded(index, run, under)
            else:
                lines += self.source(index, o.sources[index])
            index += len(run) or 1
        lines.append('if c is not None: c.path = ""')
        lines += self.finish()
        lines += self.usage_and_model()
        lines += self.refusal()
        return lines + self.nulls()

    @staticmethod
    def apart(src: ItemSource, var: str, part: Part) -> list[str]:
        """The line noting where a text read at a plain place is, when it is long and the answer is still to be
        checked: the check reads the answer without it (`jsonsafe.answer_nulls`)."""
        steps = simple_steps(src.path)
        if steps is None or part.steps is None:
            return []
        place = ", ".join([*map(repr, steps), *(["i"] if src.each else []), *map(repr, part.steps)])
        return [f"if tokens < 0 and type({var}) is str and len({var}) > LONG_TEXT: apart += (({place},),)"]

    @staticmethod
    def check() -> list[str]:
        """The answer check's first step, when the caller passes `tokens=-1` (a decoded answer, not read from a
        body): a ResponseError unless it is an object. Its rest (`checked`) follows the body, so the long texts the
        body read (`apart`) are checked apart. Here rather than in `Outbound.translate`, so `translate_response` of
        a dict runs one frame, not two."""
        return ["if tokens < 0 and not isinstance(r, dict): o.not_an_object(r)", "apart = ()"]

    def checked(self) -> list[str]:
        """The answer check's rest (`tokens=-1`): a ResponseError unless the answer is safe JSON, else its null
        tokens (`jsonsafe.answer_nulls`, the long texts the body read set apart)."""
        where = f"provider={self.o.provider!r}"
        return [
            "if tokens < 0:",
            "    try: tokens = answer_nulls(r, apart)",
            f"    except JsonValueError as exc: raise ResponseError(exc.where, exc.message, {where}) from None",
        ]

    @staticmethod
    def settled() -> str:
        """The body's handler: unchecked (`tokens=-1`), the answer is checked whole first; with null tokens left,
        a NaN or an Infinity is the error (`o.settle`), whichever step the function failed at, as when the whole
        check ran first."""
        return "    except Exception:\n        if tokens: o.settle(r, tokens)\n        raise\n"

    def nulls(self) -> list[str]:
        """The answer check's last step (`jsonsafe.answer_nulls` left `tokens` null tokens, each a None or a NaN):
        the Nones in the objects and lists the function read account for them (the answer itself first, then the
        deepest, where an answer's nulls mostly are), else `o.settle` looks at the whole answer. Each variable is
        one place in the answer (a negative index may name the same element as another, so it is left out), so no
        None is counted twice."""
        paths = self.prefixes
        lines = [*self.checked(), "if tokens:", "    left = tokens - countOf(r.values(), None)"]
        for path in sorted(paths, key=len, reverse=True):
            if any(isinstance(step, int) and step < 0 for step in path):
                continue
            inner = {other[len(path)] for other in paths if len(other) > len(path) and other[: len(path)] == path}
            kind = self.sources.get(path) or ("dict" if any(isinstance(step, str) for step in inner) else "list")
            if not inner and path not in self.sources:  # a count or a text, no container
                continue
            var = paths[path]
            held = f"{var}.values()" if kind == "dict" else var
            lines.append(f"    if left and type({var}) is {kind}: left -= countOf({held}, None)")
        return [*lines, "    if left: o.settle(r, tokens)"]

    def optional_run(self, start: int) -> tuple[list[ItemSource], tuple[str | int, ...]]:
        """The optional sources from `start` on whose plain paths share a prefix (a grounding object and the
        lists inside it, say), and that prefix: when it is absent, none of them is there."""
        run: list[ItemSource] = []
        under: tuple[str | int, ...] = ()
        for src in self.o.sources[start:]:
            steps = simple_steps(src.path)
            if not src.optional or not steps:
                break
            path = tuple(steps)
            if not run:
                under = path
            else:
                common = 0
                while common < min(len(under), len(path)) and under[common] == path[common]:
                    common += 1
                if not common:
                    break
                under = under[:common]
            run.append(src)
        return run, under

    def guarded(self, start: int, run: list[ItemSource], under: tuple[str | int, ...]) -> list[str]:
        """Optional sources that all lie under one path, read only when it holds something; else every variable
        their lines would set is set as absent (later lines, and the count of Nones, read them)."""
        lines, var = self.top_steps(under)
        prefixes, views = set(self.prefixes.values()), set(self.views.values())
        body: list[str] = []
        for offset, src in enumerate(run):
            body += self.source(start + offset, src)
        absent = [f"{new} = MISSING" for new in self.prefixes.values() if new not in prefixes]
        absent += [f"{new} = NO_KEYS" for new in self.views.values() if new not in views]
        return [
            *lines,
            f"if {var} is not MISSING and {var} is not None:",
            *indent(body, 4),
            *(["else:", *indent(absent, 4)] if absent else []),
        ]

    def source(self, index: int, src: ItemSource) -> list[str]:
        s = self.name(src, "source")
        lines = [f"# response.items[{index}]: {'each' if src.each else 'one'} {src.path}"]
        read, x = self.top(src.path, src.getter)
        steps = simple_steps(src.path)
        if steps:
            self.sources[tuple(steps)] = "list" if src.each else "dict"
        lines += [*read, f"x = {x}"]
        explain = f"o._read_element({s}, i, e, r, {self.ctx}, {FOUND})"
        body = self.dispatch(src, s, explain)
        if src.each:
            taken = self.given(src, s)
            lines += [*taken, f"{'elif' if taken else 'if'} isinstance(x, list):", "    for i, e in enumerate(x):",
                      *indent(body, 8)]  # fmt: skip
        else:
            lines += ["if x is not MISSING and x is not None:", "    i = 0", "    e = x", *indent(body, 4)]
        if src.optional:
            lines.append("elif x is MISSING or x is None: pass")
        elif src.optional_if:
            present = ", ".join(f"{self.name(getter, 'g')}(r)" for getter in src.optional_if)
            lines.append(
                f"elif (x is MISSING or x is None) and any(v is not MISSING and v is not None for v in ({present},)):"
                " pass"
            )
        lines += ["else:", f"    o._read_source({s}, r, {self.ctx}, {FOUND})"]
        return lines

    @staticmethod
    def element_path(src: ItemSource) -> str:
        """An expression of the element `i`'s path, as `src.element_path(i)` gives it, with no call made."""
        if not src.each:
            return repr(src.path)
        return "f" + repr(src.path.replace("{", "{{").replace("}", "}}") + "[{i}]")

    @staticmethod
    def given(src: ItemSource, s: str) -> list[str]:
        """A source of tool calls of one kind and nothing else (no extra content) whose calls come given whole
        (`Outbound.translate`): its list taken as translated, when it is the very list given."""
        parts = src.parts.get("")
        if src.kind is not None or src.kind_by_key or parts is None or "" in src.notes:
            return []
        if parts.tool_call is None or set(parts.tool_call) != {"id", "name", "arguments"}:
            return []
        if any(part is not None for part in (parts.text, parts.reasoning, parts.message, parts.annotations)):
            return []
        return [f"if given is not None and given[0] is {s} and x is given[1]: calls += given[2]"]

    def dispatch(self, src: ItemSource, s: str, explain: str) -> list[str]:
        """The element's kind picks its lines; an element that is not an object, or of a kind the rules do not
        know, goes to the explain step."""
        lines = ["if not isinstance(e, dict):", f"    {explain}"]
        if src.kind is None and not src.kind_by_key:
            body = [explain] if "" in src.notes else self.kind(src, s, src.parts[""], explain)
            return [*lines, "else:", *indent(body, 4)]
        if src.kind_by_key:
            first = test = "(v := e.get({!r})) is not None and v is not False"
        else:  # the kind is read in the first test (the element is an object by then)
            assert src.kind is not None
            steps = simple_steps(src.kind_path)
            if steps and len(steps) == 1 and isinstance(steps[0], str):
                first = f"(k := e.get({steps[0]!r}, MISSING)) == {{!r}}"
            else:
                first = f"(k := {self.name(src.kind, 'g')}(e)) == {{!r}}"
            test = "k == {!r}"
        for n, (name, parts) in enumerate(src.parts.items()):
            lines.append(f"elif {(test if n else first).format(name)}:")  # a kind with a note: the explain step
            by_key = name if src.kind_by_key else None
            lines += indent([explain] if name in src.notes else self.kind(src, s, parts, explain, by_key), 4)
        return [*lines, "else:", f"    {explain}"]

    def kind(self, src: ItemSource, s: str, parts: Parts, explain: str, by_key: str | None = None) -> list[str]:
        """One kind: its fields read, the fast test, then the writes; else the explain step (`by_key`: the key
        the kind was known by, its value already in `v`)."""
        o = self.o
        read: dict[tuple[str | int, ...], str] = {(by_key,): "v"} if by_key is not None else {}
        views: dict[str, str] = {}
        rendered = [
            p
            for p in (parts.text, parts.reasoning, parts.message, *(parts.tool_call or {}).values())
            if p is not None and p.render is not None and p.mapping is None and p.getter is None
        ]
        # a field rendered only where it is absent (its default, and its note) builds the Ctx and marks its notes
        # there (`part`): most elements hold it, and need neither
        renders = any(p.defaulted is None for p in rendered)
        self.lazy = s if rendered and not renders else ""  # (the source's name: where the notes are)
        lines = []
        if renders:  # a render's notes name the element (a merge's: set where it merges)
            lines.append(f"{self.ctx}.path = ({s}, i)")
        self.built = "c" if renders else ""  # the renders below find `c` built
        if renders:
            lines.append("mark = len(c.notes)")  # `c` was built by the line before
        elif self.lazy:
            lines.append("mark = None")
        tests: list[str] = []
        writes: list[str] = []
        present: list[str] = []
        for var, part in (("t", parts.text), ("rs", parts.reasoning)):
            if part is not None:
                lines += self.part(var, part, read, views)
                tests.append(f"(type({var}) is str or {var} is None or {var} is MISSING)")
                present.append(var)
                into = "texts" if var == "t" else f"{FOUND}.reasoning"
                writes.append(f"if type({var}) is str: {into}.append({var})")
                writes += self.apart(src, var, part)
        if parts.annotations is not None:  # annotations need the text so far: applied before it grows
            lines += self.part("an", parts.annotations, read, views)
            spec, text = self.name(parts.annotate, "annotate"), "t if type(t) is str else ''" if parts.text else "''"
            annotate = f"o.annotate({spec}, e, {s}, i, {text}, {FOUND}, {self.ctx})"
            listed = "an is not MISSING and an is not None and an != []"  # none: most often
            each = simple_steps(parts.annotate.each) if parts.annotate and parts.annotate.parts else None
            if each is not None and len(each) == 1 and isinstance(each[0], str):  # parts, each with its own list
                some = f"(q := p.get({each[0]!r}, MISSING)) is not MISSING and q is not None and q != []"
                writes[:0] = [  # the parts looked at in a loop of this function (no generator made per item)
                    f"if {listed}:",
                    f"    if type(an) is not list: {annotate}",
                    "    else:",
                    "        for p in an:",
                    f"            if isinstance(p, dict) and {some}: {annotate}; break",
                ]
            else:
                writes.insert(0, f"if {listed}: {annotate}")
        if parts.message is not None:
            lines += self.part("m", parts.message, read, views)
            if parts.message.mapping is None:  # a mapping built inline is one or MISSING (`mapping`)
                tests.append("(type(m) is dict or m is None or m is MISSING)")
            present.append("m")
            at = "" if renders else f"{self.ctx}.path = ({s}, i); "  # a clash is noted at the element
            writes.append(f'if type(m) is dict: {at}merge_extras({FOUND}.extras, m, "", c)')
            if self.texts is not None and parts.message.copies_element:
                writes += [
                    f"if {self.texts} and type(m) is dict:",
                    "    for v in e.values():",
                    f"        if type(v) is not str: {self.texts} = False; break",
                ]
            elif self.texts is not None:
                writes.append(f"if type(m) is dict: {self.texts} = False")
        call = parts.tool_call
        if call is not None:
            for field_name, var in (("id", "ci"), ("name", "cn"), ("arguments", "ca"), ("extra_content", "cx")):
                if field_name in call:
                    lines += self.part(var, call[field_name], read, views)
            tests.append("type(cn) is str and cn != ''")
            if src.synthesize_ids:  # absent first: the id a call lacks is what the ids are synthesized for
                tests.append("(ci is MISSING or type(ci) is str or ci is None)")
            else:
                tests.append("type(ci) is str and ci != ''")
            tests.append(
                {"object": "type(ca) is dict", "text": "type(ca) is str", "any": "type(ca) in (dict, str)"}[
                    src.arguments
                ]
            )
            extra = "None"
            if "extra_content" in call and call["extra_content"].mapping is None:  # (a mapping: as `m`'s)
                tests.append("(type(cx) is dict or cx is None or cx is MISSING)")
            if "extra_content" in call:
                extra = "cx if type(cx) is dict else None"
            present = []  # a name makes the call, so the item, present
            if src.synthesize_ids:
                writes += [
                    "if ci is MISSING or not ci:",  # (MISSING's truth is Python code)
                    f"    if {FOUND}.digest is None: f.digest = response_digest(r, o.provider)",
                    "    ci = id_of(len(calls), f.digest)",
                    # one per call of an answer of thousands: the Note's fields as its tuple (its `__new__` is
                    # Python code), its path formatted here (`element_path`)
                    f"    {self.ctx}.notes.append(as_tuple(Note, ('synthesized', {self.element_path(src)},"
                    " 'no call id; sent as ' + ci, '')))",
                ]
            # the arguments as text, and the object they came as (the call's `given`), None where they came as text
            text, given = "ca", "None"
            if src.arguments == "object":  # (tested a dict above)
                text, given = "arguments_json(ca)", "ca"
            elif src.arguments != "text":
                writes.append("cg = None")
                writes.append("if type(ca) is dict: cg = ca; ca = arguments_json(ca)")
                given = "cg"
            if o.tool_call_ids is not None:
                ids = self.name(o.tool_call_ids, "ids")
                restore = [
                    f"given = ci; ci = {ids}.restore(ci, id_map or NO_IDS)",
                    "if ci != given:",
                    f"    {self.ctx}.notes.append(Note('rewritten', {s}.element_path(i),"
                    " f'id {given!r} restored to {ci!r}'))",
                ]
                # an id comes back changed only through the request's map or, where ids are encoded (no rewrite:
                # a rewrite's hash cannot be decoded), as an encoded one: any other stays as it is, with no call
                # made per call
                back = "id_map" if o.tool_call_ids.rewrite is not None else f"id_map or ci.startswith({MARK!r})"
                writes += [f"if {back}:", *indent(restore, 4)]
            held = ("ci", "cn", text, extra, given)
            writes.append(f"calls.append({self.call.format(', '.join(held))})")
            if self.at_call is not None:
                writes += self.at_call(held)
        if present:  # an element whose every field is absent is noted by the explain step
            tests.append("(" + " or ".join(f"{var} is not MISSING" for var in present) + ")")
        if not tests:  # a kind the rules know and read nothing of, or only its annotations
            return [*lines, *writes] if writes else [*lines, "pass"]
        lines.append("if " + " and ".join(tests) + ":")
        lines += indent(writes or ["pass"], 4)
        lines.append("else:")
        if renders:
            lines.append("    del c.notes[mark:]")
        elif self.lazy:
            lines.append("    if mark is not None: del c.notes[mark:]")
        lines.append(f"    {explain}")
        return lines

    def finish(self) -> list[str]:
        """Any tool call wins; then a blocked answer's reason; then the table. The rest (a stop reason missing,
        unknown, or promising tool calls that are not there) is the explain step's, with its note."""
        o = self.o
        lines, stop = self.top(o.stop_path, o.stop)
        table = self.name(dict(o.table), "table")
        found = f"finish = {table}.get({stop}) if type({stop}) is str else None"
        explain = f"if finish is None or finish == 'tool_calls': finish = o._finish_reason(r, False, {self.ctx})"
        lines.append("if calls: finish = 'tool_calls'")
        if o.blocked is not None:
            read, blocked = self.top(o.blocked[0], o.blocked[1])
            lines = read + lines
            lines.append(f"elif {blocked} is not MISSING and {blocked} is not None: finish = {o.blocked[2]!r}")
        return [*lines, "else:", f"    {found}", f"    {explain}"]

    def usage_test(
        self,
        written: set[str],
        within: str,
        known: Mapping[str, str] | None = None,
        held: Mapping[str, str | Mapping[str, str]] | None = None,
    ) -> list[str]:
        """The fast test of the usage invariants on the usage the inline code built (`written`: the keys it can
        write; a total or a details object it never writes is absent, so its part of the test is left out), and
        `check_usage`, which writes the notes, when it fails. `known`: a total the straight path always writes ->
        the variable holding it (read there, not looked up in `u`, and an int from 0: not tested for None).
        `held`: a details mapping the straight path writes -> where its counts are, read there rather than looked
        up in `u` again (`_held_count`)."""
        known = known or {}
        held = held or {}
        names = {name: known.get(name) or var for name, var in (("prompt_tokens", "pt"), ("completion_tokens", "ct"))}
        totals = {name: var for name, var in names.items() if name in written}
        lines = [f"{var} = u.get({name!r})" for name, var in totals.items() if name not in known]
        broken = []
        if "total_tokens" in written and len(totals) == 2:
            pt, ct = totals["prompt_tokens"], totals["completion_tokens"]
            tt = known.get("total_tokens", "tt")
            if tt == "tt":
                lines.append("tt = u.get('total_tokens')")
            read = [f"{var} is not None" for var in (tt, pt, ct) if var in ("tt", "pt", "ct")]  # known: an int
            broken.append(f"({' and '.join([*read, f'{tt} != {pt} + {ct}'])})")
        details: dict[str, str] = {}
        for (total, var), included in zip(names.items(), ("npt", "nct"), strict=True):
            parts = []
            for holder, count in self.o.within.get(total, ()):
                if holder not in written:
                    continue
                if holder in held:
                    parts.append(_held_count(held[holder], count))
                    continue
                if holder not in details:
                    details[holder] = f"d{len(details)}"
                    lines.append(f"{details[holder]} = u.get({holder!r}) or NO_KEYS")
                parts.append(f"{details[holder]}.get({count!r}, 0)")
            if parts:
                lines.append(f"{included} = {' + '.join(parts)}")
                if total in known:  # an int from 0: more than it, the included counts are not 0
                    broken.append(f"{included} > {var}")
                else:
                    have = f"({var} is None or {included} > {var})" if total in written else "True"
                    broken.append(f"({included} and {have})")
        if not broken:
            return []
        return [*lines, f"if {' or '.join(broken)}:", f"    {self.ctx}.notes.extend(check_usage(u, {within}))"]

    def usage_and_model(self) -> list[str]:
        o = self.o
        within = self.name(o.within, "within")
        # the explain step: the template rendered, its counts looked at one by one, the invariants checked
        generic = [
            f"u = {self.name(o.usage, 'usage')}(r, {self.ctx})",
            "u = {} if u is MISSING else counts(u, c)",
            f"c.notes += check_usage(u, {within})",
        ]
        straight = self.usage_straight(o.usage_node, within)  # first: its reads serve the checked path too
        node = o.usage_node
        sums = isinstance(node, Obj) and any(isinstance(n, Sum) and len(n.reads) > 1 for _, n in node.items)
        relaxed = self.usage_straight(node, within, absent_terms=True) if sums else None
        inline = self.usage_inline(o.usage_node)
        if inline is None:
            lines = generic
        else:
            assert isinstance(o.usage_node, Obj)
            test = self.usage_test({name for name, _ in o.usage_node.items}, within)
            lines = [*inline, "if not ok:", *indent(generic, 4)]
            if test:
                lines += ["else:", *indent(test, 4)]
            if relaxed is not None:  # tried only when the first fails: its reads are the ones not made yet
                reads, clean, body = relaxed
                lines = [*reads, f"if {clean}:", *indent(body, 4), "else:", *indent(lines, 4)]
            if straight is not None:
                reads, clean, body = straight
                lines = [*reads, f"if {clean}:", *indent(body, 4), "else:", *indent(lines, 4)]
        if o.model_read is not None:
            read, model = self.top(o.model_read.expr, o.model_read.getter)
            lines += [*read, f"mo = {model}"]
        elif o.model is None:
            lines.append("mo = MISSING")
        else:
            lines.append(f"mo = {self.name(o.model, 'model')}(r, {self.ctx})")
        lines.append('if not isinstance(mo, str): mo = requested_model or ""')
        return lines

    def usage_inline(self, node: Node | None) -> list[str] | None:
        """Usage as `counts` leaves it, read straight from the response, when the template is a mapping of plain
        reads, sums and `*_details` mappings of plain reads (None otherwise: the template is rendered). Any
        count that is not clean sets `ok` false, and the explain step renders the template and writes the notes."""
        if not isinstance(node, Obj):
            return None
        lines = ["u = {}", "ok = True"]
        for name, child in node.items:
            details = name.endswith("_details")
            read = plain_read(child)
            if read is not None:
                if details:  # the provider's own object of counts: copied when clean
                    lines += self.count_read(read, "uv")
                    lines += self.count_map("uv", name)
                else:
                    read_lines_, clean = self.clean_count(read)
                    lines += [*read_lines_, f"if {clean} is not None: u[{name!r}] = {clean}"]
            elif isinstance(child, Sum) and not details:
                summed = self.count_sum(child)
                if summed is None:
                    return None
                lines += [*summed, f"if us is not MISSING: u[{name!r}] = us"]
            elif isinstance(child, Obj) and details:
                lines.append("ud = {}")
                for inner, count in child.items:
                    read = plain_read(count)
                    if read is None:
                        return None
                    read_lines_, clean = self.clean_count(read)
                    lines += [*read_lines_, f"if {clean} is not None: ud[{inner!r}] = {clean}"]
                lines.append(f"if ud: u[{name!r}] = ud")
            else:
                return None
        return lines

    def usage_straight(
        self, node: Node | None, within: str, absent_terms: bool = False
    ) -> tuple[list[str], str, list[str]] | None:
        """The common usage, all of whose counts are clean, built straight: (the reads, the test that every count is
        clean, the lines building `u` and testing the invariants). A count a total reads must be an integer from 0;
        one only a `*_details` mapping reads may also be absent (no key), as may a provider's object of counts
        copied whole; with `absent_terms`, a `$sum`'s counts after its first too (counted 0, as `count_sum` counts
        them: the second straight path, for an answer without its cache counts). Anything else (a null, a bad
        count) fails the test, and the checked path (`usage_inline`) builds the same usage with its notes. None: the
        template is not of this shape (`empty:` sums, richer templates), and the checked path alone is generated."""
        if not isinstance(node, Obj) or not all(_straight_entry(n, child, absent_terms) for n, child in node.items):
            return None
        reads: list[str] = []
        required: dict[str, None] = {}  # count variables a total reads: clean integers
        optional: dict[str, None] = {}  # count variables only a details mapping reads: clean or absent
        copied: dict[str, None] = {}  # a provider's object of counts, copied: clean, or absent
        # (key, its value's expression or a details mapping's (key, count variable) pairs, the test of presence)
        entries: list[tuple[str, str | list[tuple[str, str]], str | None]] = []
        known: dict[str, str] = {}  # a total always written -> the variable holding it

        def count(read: Read, into: dict[str, None]) -> str:
            lines, var = self.top(read.expr, read.getter)
            reads.extend(lines)
            into[var] = None
            return var

        for name, child in node.items:
            details = name.endswith("_details")
            read = plain_read(child)
            if read is not None and details:
                var = count(read, copied)
                entries.append((name, f"{var}.copy()", f"{var} is not MISSING"))
            elif read is not None:
                entries.append((name, count(read, required), None))
                known[name] = entries[-1][1]  # type: ignore[assignment]
            elif isinstance(child, Sum):  # `absent_terms`: its first count there, any other may be absent (0)
                known[name] = total = self.name(None, "s")
                terms = [
                    count(read, optional if k and absent_terms else required) for k, read in enumerate(child.reads)
                ]
                summed = [var if var in required else f"(0 if {var} is MISSING else {var})" for var in terms]
                entries.append((name, f"({total} := {' + '.join(summed)})", None))
            else:
                assert isinstance(child, Obj)
                inner = [(key, plain_read(value)) for key, value in child.items]
                entries.append((name, [(key, count(found, optional)) for key, found in inner if found], None))
        clean = [f"type({var}) is int and {var} >= 0" for var in required]
        clean += [f"({var} is MISSING or type({var}) is int and {var} >= 0)" for var in optional if var not in required]
        for var in copied:  # a provider's object of counts: its values tested in a loop, before the test
            flag = f"c{var}"
            reads += [
                f"if type({var}) is dict and {var}:",
                f"    {flag} = True",
                f"    for n in {var}.values():",
                "        if type(n) is not int or n < 0:",
                f"            {flag} = False",
                "            break",
                f"else: {flag} = {var} is MISSING",
            ]
            clean.append(flag)
        body: list[str] = []
        literal: list[str] = []  # the leading keys always written, as one mapping literal
        for name, value, present in entries:
            if isinstance(value, list):  # a details mapping: literal, or built key by key when a count may be absent
                always = ", ".join(f"{key!r}: {var}" for key, var in value if var in required)
                maybe = [(key, var) for key, var in value if var not in required]
                if maybe:
                    held = self.name(None, "ud")
                    body += [f"{held} = {{{always}}}"]
                    body += [f"if {var} is not MISSING: {held}[{key!r}] = {var}" for key, var in maybe]
                    value, present = held, held
                else:
                    value = f"{{{always}}}"
            if present is None and not body:
                literal.append(f"{name!r}: {value}")
            elif present is None:
                body.append(f"u[{name!r}] = {value}")
            else:
                body.append(f"if {present}: u[{name!r}] = {value}")
        body.insert(0, "u = {" + ", ".join(literal) + "}")
        straight = _straight_usage(entries, required)
        body += self.usage_test({name for name, _ in node.items}, within, known, _details_held(straight))
        if self.straight_mark is not None:  # (the common path first, then the one without a sum's later counts)
            self.straight_usage += (straight,)
            body.append(f"{self.straight_mark} = {len(self.straight_usage)}")
        return reads, " and ".join(clean) or "True", body

    def count_map(self, var: str, name: str) -> list[str]:
        """A provider's `*_details` object in `var` copied into usage when it is a non-empty object of clean counts
        (absent: nothing; anything else clears `ok`), tested inline: no call per object."""
        return [
            f"if {var} is not MISSING:",
            f"    if type({var}) is dict and {var}:",
            f"        for n in {var}.values():",
            "            if type(n) is not int or n < 0:",
            "                ok = False",
            "                break",
            f"        else: u[{name!r}] = {var}.copy()",
            "    else: ok = False",
        ]

    def count_read(self, read: Read, target: str) -> list[str]:
        """A count's read at the function's top level (its prefixes shared), left in `target`; null is absent."""
        lines, var = self.top(read.expr, read.getter)
        return [*lines, f"{target} = MISSING if {var} is None else {var}"]

    def clean_count(self, read: Read) -> tuple[list[str], str]:
        """A count's read at the function's top level, tested once however many sums read it: the variable
        holding it when clean, else None (absent or null; anything else also clears `ok`)."""
        lines, var = self.top(read.expr, read.getter)
        clean = self.counts.get(var)
        if clean is None:
            clean = self.counts[var] = f"n{var}"
            lines += [
                f"if type({var}) is int and {var} >= 0: {clean} = {var}",
                f"elif {var} is None or {var} is MISSING: {clean} = None",
                f"else: {clean} = None; ok = False",
            ]
        return lines, clean

    def count_sum(self, node: Sum) -> list[str] | None:
        """A `$sum` of clean counts in `us` (any other count clears `ok`); `empty` when its holders are there."""
        if node.empty is not MISSING and not (type(node.empty) is int and node.empty >= 0):
            return None
        lines: list[str] = []
        terms = []
        for read in node.reads:
            read_lines_, clean = self.clean_count(read)
            lines += read_lines_
            terms.append(clean)
        absent = " and ".join(f"{term} is None" for term in terms)
        total = " + ".join(f"({term} or 0)" for term in terms)
        lines.append(f"us = MISSING if {absent} else {total}")
        if node.empty is not MISSING:
            held = []
            for read in node.holders:
                read_lines_, var = self.top(read.expr, read.getter)
                lines += read_lines_
                held.append(var)
            there = " and ".join(f"isinstance({var}, dict)" for var in held) or "True"
            odd = " or ".join(
                f"({var} is not MISSING and {var} is not None and not isinstance({var}, dict))" for var in held
            )
            lines.append(f"if us is MISSING and {there}: us = {node.empty!r}")
            if odd:
                lines.append(f"elif us is MISSING and ({odd}): ok = False")
        return lines

    def refusal(self) -> list[str]:
        """`refusal_of`, inline: a plain path read like the others, a richer template called."""
        o = self.o
        if o.refusal is None:
            return ["refusal = None"]
        if o.refusal_read is not None:
            lines, refusal = self.top(o.refusal_read.expr, o.refusal_read.getter)
        else:
            lines, refusal = self.refusal_render(o.refusal, o.refusal_node), "rf"
        return [*lines, f"refusal = {refusal} if type({refusal}) is str and {refusal} else None"]

    def refusal_render(self, render: Render, node: Node | None) -> list[str]:
        """A richer refusal template in `rf`, its common outcome read inline: the first present of plain paths
        (rendered when more than one is there, for the note), or a `$when` on a plain path testing for text
        values, whose `then` is rendered only when the test holds (absent otherwise)."""
        call = f"{self.name(render, 'render')}(r, {self.ctx})"
        if isinstance(node, Get) and node.plain and all(read.steps is not None for read in node.reads):
            lines: list[str] = []
            found = []
            for read in node.reads:
                read_lines_, var = self.top(read.expr, read.getter)
                lines += read_lines_
                found.append(var)
            first = found[-1]
            for var in reversed(found[:-1]):
                first = f"{var} if {var} is not MISSING else {first}"
            present = " + ".join(f"({var} is not MISSING)" for var in found)
            return [*lines, f"rf = {call} if {present} > 1 else {first}"]
        if (
            isinstance(node, When)
            and node.test == "is"
            and node.otherwise is None
            and node.path.steps is not None
            and all(type(value) is str for value in node.expected)
        ):
            lines, var = self.top(node.path.expr, node.path.getter)
            expected = self.name(frozenset(node.expected), "expected")
            return [*lines, f"rf = {call} if type({var}) is str and {var} in {expected} else MISSING"]
        return [f"rf = {call}"]


def _details_held(straight: Mapping[tuple[str, ...], tuple[str, str]]) -> dict[str, str | Mapping[str, str]]:
    """Where the straight path's details counts are, for its usage test (`_held_count`), from what it leaves where
    (`_straight_usage`): a provider's object of counts -> its variable; a details mapping built of counts -> each
    count's expression, 0 where absent."""
    held: dict[str, str | Mapping[str, str]] = {}
    built: dict[str, dict[str, str]] = {}
    for path, (var, kind) in straight.items():
        if kind == "holder":
            held[path[0]] = var
        elif kind == "mapping":
            held[path[0]] = built[path[0]] = {}
        elif len(path) == 2:
            built[path[0]][path[1]] = var if kind == "sure" else f"(0 if {var} is MISSING else {var})"
    return held


def _straight_usage(
    entries: list[tuple[str, str | list[tuple[str, str]], str | None]], required: Mapping[str, None]
) -> dict[tuple[str, ...], tuple[str, str]]:
    """What the straight usage path leaves where, by usage path: a count always there, an integer from 0 (`sure`:
    its variable), a count clean or absent (`maybe`: its variable, MISSING when absent), or a provider's object of
    counts (`holder`: its variable, a dict of clean counts or MISSING; `mapping`: a details mapping built of the
    counts below it). A path not here is not in that usage."""
    known: dict[tuple[str, ...], tuple[str, str]] = {}
    for name, value, present in entries:
        if isinstance(value, list):
            known[name,] = ("", "mapping")
            known.update({(name, key): (var, "sure" if var in required else "maybe") for key, var in value})
        elif present is not None:  # a copied object of counts: `VAR.copy()`
            known[name,] = (value.removesuffix(".copy()"), "holder")
        else:
            known[name,] = (value.split(" := ")[0].lstrip("("), "sure")  # a sum's `(s := ...)`: its variable
    return known


def _straight_entry(name: str, node: Node, absent_terms: bool = False) -> bool:
    """Whether `ResponseGen.usage_straight` builds this usage entry: a plain read, a `$sum` of plain reads without
    `empty` (not a details mapping), or a details mapping of plain reads. With `absent_terms` a sum's `empty` does
    not matter: its first count is there, so the sum is never empty."""
    details = name.endswith("_details")
    if plain_read(node) is not None:
        return True
    if isinstance(node, Sum):
        return not details and (node.empty is MISSING or absent_terms) and bool(node.reads)
    if isinstance(node, Obj):
        return details and bool(node.items) and all(plain_read(value) is not None for _, value in node.items)
    return False


FOUND = "(f := f or Found(texts, calls))"  # the generated function's `_Found`, built when first needed


def generate(outbound: Outbound) -> tuple[str, Run]:
    """The response section's one function, and its source (returned, never stored in the rule source)."""
    code = ResponseGen(outbound)
    text = code.function()
    exec(compile(text, f"<response {outbound.provider}>", "exec"), code.names)
    run: Run = code.names["respond"]
    return text, run
