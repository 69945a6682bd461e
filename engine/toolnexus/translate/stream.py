"""Streaming translation: a provider's server-sent events in, OpenAI `chat.completion.chunk` dicts out.

Runs a rule file's compiled `streaming` section (stream_rules.py: its tables; stream_code.py: the
generated function per event type, which calls the general merge here only as its explain step).
The section says only how each event builds the provider's own *non-streaming* response (steps that merge a part
of the event into a path of the response, and `combine` policies for the paths
where pieces join: text appended, JSON text appended then parsed, list elements
added). Everything OpenAI-facing comes from the `response` section the
non-streaming path already uses:

- an element arriving in a list an item source reads (`each:`/`one:`) is rendered
  by that source's template, exactly as the non-streaming path renders it: text
  becomes a `delta.content`, a tool call a `delta.tool_calls` start (indexed by
  tool calls only), a `reasoning` kind's field a `delta.reasoning_content`;
- a piece appended to a field that template reads as text, as tool-call
  arguments, or as reasoning is emitted as it arrives;
- at the end, the assembled response goes through the non-streaming outbound
  translation: `result` is exactly what `translate_response` gives for it, and the
  last chunk's finish reason and usage come from that result. Calls opened by plain
  reads whose values the answer still holds are not translated a second time: that
  translation takes them as opened (`StreamTranslator._given`).

How each chunk is written (its envelope, which delta says what) is the normal form's `stream` section
(rules/formats/openai.yaml), compiled by `format_rules.compile_chunks` into one function per moment; the
provider stream's generated code writes a piece's chunk inline from the same template. Writing a source
format's events instead (`into`), no chunk is built: each moment a chunk is written from goes to the format's
`SourceEvents` (formats.py), a piece straight from the generated code to its handler.

A tool call whose id is synthesized (`synthesize_ids`) is held back: its id hashes the whole
response, known only at the end, so its deltas (and every tool-call delta after it, to keep the
indexes in order) are sent with the closing chunks, carrying the ids the whole answer gets.

Text is kept as UTF-8 bytes appended in place and nothing per event is kept, so
memory grows with the answer's content, not with the number of events. No
provider name appears here: only the rule file knows event names.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from itertools import repeat
from operator import attrgetter, is_, itemgetter
from typing import Any, Protocol

from ..errors import Note, ProviderError, ResponseError, StateError, ToolnexusError
from ..language.ids import NO_IDS
from ..language.jsonsafe import JsonValueError, loads, where_in
from ..language.paths import MISSING
from ..language.templates import Ctx, fresh_copy
from .endpoint import excerpt
from .format_rules import JOINED, Write, builtin_chunks
from .formats import PLAIN, SourceEvents, SourceFormat
from .outbound import ItemSource
from .result import TranslatedToolCall, TranslateResult, tool_calls
from .stream_code import WHOLE as _WHOLE
from .stream_code import Call as _Call
from .stream_code import Element as _Element
from .stream_code import Streaming, Text, joins
from .stream_rules import (
    APPEND,
    ARGUMENTS,
    EXTEND,
    JSON,
    REASONING,
    TEXT,
    Continued,
    EventIndex,
    Move,
    Node,
    Path,
    Step,
)

CHUNKS = builtin_chunks()  # how chunks are written: the normal form's `stream` section (formats/openai.yaml)
_START, _OPEN = CHUNKS.start, CHUNKS.open
_TEXT, _REASONING, _ARGUMENTS = (CHUNKS.pieces[k] for k in ("text", "reasoning", "tool_call"))
_HELD = "call_held"  # stands in for a synthesized id until the whole response is known
_SCALARS = frozenset({str, int, float, bool, type(None)})
_NONE: frozenset[str] = frozenset()
_ID, _NAME, _OPENED_WITH = attrgetter("id"), attrgetter("name"), attrgetter("arguments")  # of a `Call`


class StreamTranslator:
    """One stream: `feed(data)` per event gives chunks; `assemble()` then `finish()` give the rest and `result`.

    Pure (no I/O), so a proxy with its own HTTP can drive it; `Client.translate_stream` does.
    Errors: an event with the provider's error shape is a ProviderError (kind http); an event that is
    not a JSON object is a ProviderError (kind decode); a stream that ends before the rules' end is a
    ProviderError (kind connection); an event the rules cannot place, an event after the end, or a
    second opening event (`starts`) is a ResponseError at `events[n]...`.
    """

    def __init__(
        self, rules: Streaming, *, requested_model: str | None = None, id_map: Mapping[str, str] | None = None
    ) -> None:
        self.rules = rules
        self.requested_model = requested_model
        self.id_map = id_map  # the request's sent tool-call id -> caller's id (`RequestBody.id_map`)
        self.response: dict[str, Any] = fresh_copy(rules.start)
        self.result: TranslateResult | None = None
        self.ended = False
        self.notes: list[Note] = []
        self._holder: dict[str, Any] = {"": self.response}
        self._texts: list[tuple[Any, str | int, Text, Path]] = []  # every string arriving in pieces
        self._assembled = False
        self._elements: list[dict[int, _Element]] = [{} for _ in rules.watched]
        self._calls: list[_Call | None] = []  # None: a held whole call, given whole by the final translation
        self._recheck = False  # whether the calls opened may no longer be what the answer holds (`_given` compares)
        self._out: list[dict[str, Any]] = []  # the chunks this event wrote
        self._pending: list[tuple[Write, dict[str, Any]]] = []  # chunks to write once the header is read
        self._holding: _Held | _Waiting = _Held(self._pending)  # where moments wait for the end of their event
        self._pieces: Pieces = self._holding  # the generated code's pieces: held, or the format's own handlers
        self._waiting: list[tuple[Callable[..., None], tuple[Any, ...]]] = []  # the moments `_Waiting` holds
        self._held: list[tuple[Write, dict[str, Any]] | int] = []  # tool-call chunks waiting for a synthesized id
        # (see the top); an index: a whole call, written at the end from the whole answer's translation (`finish`)
        self._text_sent = 0
        self._deeper = False  # whether a value was placed deeper than its event held it (`_wrapped`)
        self._events = 0
        self._known = False  # whether the header is read
        self._head = False  # whether chunks are written as they come (the header is read, and no format's events)
        self._writer: SourceEvents | None = None  # the source format written instead of chunks (`into`)
        self._header: tuple[str, int, str] = ("", 0, "")  # every chunk's id, created and model, once read
        # read once per event: the rule tables' entries a stream uses at every event
        self._run = rules.run
        self._done = rules.done
        self._error_message = rules.endpoint.error_message
        self._ids = rules.outbound.tool_call_ids
        self._error_key = rules.error_key  # None: the message path is asked of every event
        self._created = int(time.time())
        self._unknown: set[str] = set()
        self._opening: tuple[int, dict[str, Any]] | None = None  # the event that opened the answer (`starts`)
        self._continued: dict[int, Any] = {}  # `continued` lists: the element held while more of it follows
        self._walks: list[Any] = [None] * rules.walks  # the generated code's walks to the containers it writes in
        self._no_walks = (None,) * rules.walks  # (stream_code `_Code.walk`), forgotten when a container may move
        self.started = 0  # watched elements started so far: a consumer's cue that a block may have ended (`partial`)

    # ------------------------------------------------------------ events in

    def feed(self, data: str) -> list[dict[str, Any]]:
        """One event's data (the SSE `data:` text) -> the chunks it produces (often one, sometimes none)."""
        if not data or data.isspace():
            return []
        n = self._events
        self._events = n + 1
        rules = self.rules
        if self.ended:
            if data == rules.done:  # the end said again
                return []
            raise ResponseError(f"events[{n}]", "an event after the end of the answer: a stream holds one answer",
                                provider=rules.provider)  # fmt: skip
        if data == self._done:
            self.ended = True
            return []
        refused = ""
        try:
            event = loads(data)
        except JsonValueError as exc:
            event, refused = MISSING, f"JSON toolnexus refuses ({exc})"
        except ValueError:
            event = MISSING
        if type(event) is not dict:
            what = refused or ("not JSON" if event is MISSING else "not a JSON object")
            shown = excerpt(data.encode("utf-8", "replace"))
            raise ProviderError(f"stream event {n} is {what}: {shown}", provider=rules.provider, kind="decode")
        if (
            (message_of := self._error_message) is not None
            and ((key := self._error_key) is None or key in event)
            and type(message_of(event)) is str
        ):
            error_type, message = rules.endpoint.describe_error(data.encode())
            raise ProviderError(message, provider=rules.provider, kind="http", error_type=error_type)
        if self._run(self, event, n):  # the generated steps of its event type (stream_code.py)
            out = self._out
            if out:  # the usual event: its chunks, written as its pieces came (the header known)
                self._out = []
                return out
            if self._head or self._pieces is self._writer:  # chunks or the format's events written as they come:
                return []  # nothing held to the end of the event
            return self._chunks() if self._writer is None else self._moments()
        return []

    def _begin(self, event: dict[str, Any], n: int) -> bool:
        """An event that opens an answer (`starts`): the first opens it, an exact repeat of it is ignored
        (False), any other is a second answer spliced in, refused."""
        opening = self._opening
        if opening is None:
            self._opening = (n, event)
            return True
        if event == opening[1]:
            return False
        raise ResponseError(f"events[{n}]", f"a second answer starts here (the answer opened at events[{opening[0]}]);"
                            " a stream holds one answer", provider=self.rules.provider)  # fmt: skip

    def _note_unknown(self, label: str, n: int) -> None:
        """An event (or case) the rules do not know: ignored, and noted once per kind (a long stream does not
        grow its notes)."""
        if label not in self._unknown:
            self._unknown.add(label)
            self.notes.append(Note("unknown", f"events[{n}]", f"unknown stream event {label}; ignored"))

    def _move(self, step: Move, event: dict[str, Any], n: int) -> None:
        if step.each is None:
            self._place(step, event, n, None)
            return
        items = step.each(event)
        if items is MISSING or items is None:
            return
        if not isinstance(items, list):
            raise ResponseError(f"events[{n}].{step.each_path}", "must be a list", provider=self.rules.provider)
        for i, item in enumerate(items):
            self._place(step, item, n, i)

    def _place(self, step: Move, scope: Any, n: int, i: int | None) -> None:
        """Merge one step's value into the response at its `into` (`at`, `field`) path."""
        value = step.source(scope)
        if value is MISSING:
            return
        parent: Any = self._holder
        key: str | int = ""
        node: Node | None = self.rules.combine
        into = step.into
        for k, s in enumerate(into):
            parent, key, node = self._descend(parent, key, s, node, into[:k])
        above = into[:-1]  # the path of `parent`
        if step.at is not None:
            index = step.at(scope)
            target = parent.get(key, MISSING) if type(parent) is dict else _get(parent, key)
            if target is MISSING or target is None:
                target = []
                self._set(parent, key, target, above)
            if (
                type(index) is not int
                or index < 0
                or type(target) is not list
                or index > len(target)
                or (step.field and index == len(target))
            ):
                raise self._misplaced(step, n, i, index, target, into)
            parent, key, node, above = target, index, node.child(index) if node else None, into
            for given in step.field:  # an index the event gives: the element it names, or the next one
                s = self._event_index(given, scope, step, n, i) if isinstance(given, EventIndex) else given
                path = (*above, key)
                parent, key, node = self._descend(parent, key, s, node, path)
                above = path
        self._merge(parent, key, value, node, above, step.omit)

    def _event_index(self, step: EventIndex, scope: Any, move: Move, n: int, i: int | None) -> int:
        """The index an event gives for a step's `field` (`summary[summary_index]`): an integer from 0."""
        index = step.getter(scope)
        if type(index) is not int or index < 0:
            where = f"events[{n}]" + (f".{move.each_path}[{i}]" if i is not None else "") + f".{step.expr}"
            raise ResponseError(where, "must be an index (an integer from 0)", provider=self.rules.provider)
        return index

    def _misplaced(self, step: Move, n: int, i: int | None, index: Any, target: Any, path: Path) -> ResponseError:
        provider = self.rules.provider
        if not isinstance(target, list):
            return ResponseError(_text_path(path), "must be a list", provider=provider)
        where = f"events[{n}]" + (f".{step.each_path}[{i}]" if i is not None else "") + f".{step.at_path}"
        if type(index) is not int or index < 0:
            return ResponseError(where, "must be an index (an integer from 0)", provider=provider)
        return ResponseError(where, f"no element {index} has started at {_text_path(path)}", provider=provider)

    def _descend(
        self, parent: Any, key: str | int, step: Step, node: Node | None, path: Path
    ) -> tuple[Any, str | int, Node | None]:
        """One step down a write path (`path` is where parent[key] sits), creating what is not there yet."""
        container = parent.get(key, MISSING) if type(parent) is dict else _get(parent, key)
        if type(container) is dict and type(step) is str:  # the usual cases: the object or element is there
            return container, step, node.children.get(step) if node is not None else None
        if type(container) is list and type(step) is int and step < len(container):
            return container, step, node.child(step) if node is not None else None
        if container is MISSING or container is None:
            container = [] if type(step) is int else {}
            self._set(parent, key, container, path[:-1])
        if type(step) is int:
            if not isinstance(container, list) or step > len(container):
                raise ResponseError(_text_path(path), f"has no element {step}", provider=self.rules.provider)
            if step == len(container):
                container.append({})
                self._placed((*path, step), container[step])
        elif not isinstance(container, dict):
            raise ResponseError(_text_path(path), "must be an object", provider=self.rules.provider)
        assert step is not None
        return container, step, node.child(step) if node else None

    # ------------------------------------------------------------ merging into the response
    # `above` is the path of `parent`; a value's own path, (*above, key), is built only when needed.

    def _merge(
        self, parent: Any, key: str | int, value: Any, node: Node | None, above: Path, omit: frozenset[str] = _NONE
    ) -> None:
        """Combine an arriving value with what is at parent[key]: by the `combine` policy of its path, else
        objects merge key by key, null never replaces a value, anything else replaces. `omit`: keys of the
        value left out."""
        self._walks[:] = self._no_walks  # it may replace a container below (its scalars written in place)
        if self._calls and self.rules.calls_lists:
            self._reaching(self._path(parent, key, above), False)
        current = parent.get(key, MISSING) if type(parent) is dict else _get(parent, key)
        if omit and type(value) is dict and type(current) is not dict:
            value = {k: v for k, v in value.items() if k not in omit}
        policy = node.policy if node is not None else None
        if policy is not None:
            assert node is not None
            if policy is APPEND or policy is JSON:
                self._append(parent, key, current, value, policy, above)
                return
            if policy is EXTEND:
                self._extend(parent, key, current, value, node, above)
                return
            if type(current) is list and type(value) is list:  # by_position
                path = self._path(parent, key, above)
                for i, v in enumerate(value):
                    if i < len(current):
                        self._merge(current, i, v, node.child(i), path)
                    else:
                        current.append(v)
                        self._placed((*path, i), v)
                return
        if type(value) is dict and type(current) is dict:
            path = (*above, key) if parent is not self._holder else ()
            children = node.children if node is not None else None
            for k, v in value.items():
                if k in omit:
                    continue
                child = children.get(k) if children else None
                if child is None and type(v) in _SCALARS:  # inline: a plain value (most of every event)
                    if v is not None:
                        current[k] = v  # said again, it replaces too: -0.0 == 0.0, written apart
                    elif k not in current:
                        current[k] = None
                else:
                    self._merge(current, k, v, child, path)
        elif value is None:
            if current is MISSING:
                self._set(parent, key, None, above)
        elif node is None or type(value) is float or type(value) is not type(current) or value != current:
            self._set(parent, key, value, above, node)  # a plain place replaces, as `plain_merge`; -0.0 too

    def _reaching(self, path: Path, whole: bool) -> None:
        """A write at `path` by the general merge, with calls open: in a list whose calls the final translation may
        take as opened (at it or below), or a value put `whole` at a place holding one, it may change a call, so
        `_given` compares them (`_recheck`). A merge above one reaches it only through these."""
        if any(path[: len(at)] == at or (whole and at[: len(path)] == path) for at in self.rules.calls_lists):
            self._recheck = True

    def _path(self, parent: Any, key: str | int, above: Path) -> Path:
        return (*above, key) if parent is not self._holder else ()

    def _set(self, parent: Any, key: str | int, value: Any, above: Path, node: Node | None = None) -> None:
        """Put a new value in place; an object or list arriving whole is first combined within itself."""
        self._walks[:] = self._no_walks  # the container that was here may be on a cached walk
        if self._calls and self.rules.calls_lists:
            self._reaching(self._path(parent, key, above), True)
        if isinstance(value, (dict, list)) and node is not None and (node.children or node.continued):
            value = _combined(value, node, self._continue)
        if type(parent) is list and key == len(parent):
            parent.append(value)
        else:
            parent[key] = value
        if isinstance(value, (dict, list)):
            self._placed(self._path(parent, key, above), value)

    def _append(self, parent: Any, key: str | int, current: Any, piece: Any, policy: str, above: Path) -> None:
        if piece is None:
            if current is MISSING:
                self._set(parent, key, None, above)
            return
        if type(piece) is not str:
            raise ResponseError(_text_path((*above, key)), f"expected text to append, got {type(piece).__name__}",
                                provider=self.rules.provider)  # fmt: skip
        if type(current) is Text:
            current.add(piece)
        elif policy is APPEND and (current is MISSING or current is None):
            self._set(parent, key, piece, above)
        elif policy is APPEND and type(current) is str:
            self._keep(parent, key, Text(current + piece), above)
        elif policy is JSON:
            self._keep(parent, key, Text(piece, placeholder=current), above)
        else:
            raise ResponseError(_text_path((*above, key)), f"cannot append text to a {type(current).__name__}",
                                provider=self.rules.provider)  # fmt: skip
        if piece:
            self._fragment((*above, key), piece)

    def _keep(self, parent: Any, key: str | int, text: Text, above: Path) -> None:
        self._walks[:] = self._no_walks  # a `json` field's text may replace the object it started as
        parent[key] = text
        self._texts.append((parent, key, text, (*above, key)))

    def _extend(self, parent: Any, key: str | int, current: Any, value: Any, node: Node, above: Path) -> None:
        if self._calls and self.rules.calls_lists:
            self._reaching(self._path(parent, key, above), False)
        if current is MISSING or current is None:
            current = []
            self._set(parent, key, current, above)
        path = self._path(parent, key, above)
        if not isinstance(current, list):
            raise ResponseError(_text_path(path), "must be a list", provider=self.rules.provider)
        join = node.join
        for element in value if isinstance(value, list) else self._wrapped(value):
            if node.continued is not None and (element := self._continue(node, element)) is MISSING:
                continue
            if join is not None and current and joins(current[-1], element, join):
                last, at = current[-1], len(current) - 1
                for k, v in element.items():
                    if k == join.field:
                        self._append(last, k, last[k], v, APPEND, (*path, at))
                    elif k not in last:
                        last[k] = v
                continue
            current.append(element)
            self._placed((*path, len(current) - 1), element)

    def _wrapped(self, value: Any) -> tuple[Any]:
        """A value an `extend` row adds as one element: an object is then a level deeper than its event held it,
        so the assembled response is checked whole (`Streaming.checked`)."""
        if type(value) is dict:
            self._deeper = True
        return (value,)

    def _continue(self, node: Node, element: Any) -> Any:
        """`continued`: fold an arriving element into the one held for this list, or hold it; MISSING while
        held, else the element to add (a held one complete, without its flag and pieces)."""
        rule = node.continued
        assert rule is not None
        held = self._continued.pop(id(node), None)
        if held is None:
            if type(element) is not dict or _walk(element, rule.flag) is not True:
                return element
            held = element
        elif type(element) is dict:
            for k, v in element.items():
                if k not in held:
                    held[k] = v
        pieces = _walk(element, rule.pieces)
        if pieces is not MISSING:
            _fold(held, rule, pieces, self.rules.provider)
        if _walk(element, rule.flag) is True:
            self._continued[id(node)] = held
            return MISSING
        for path in (rule.flag, rule.pieces):
            parent = _walk(held, path[:-1])
            if type(parent) is dict:
                parent.pop(path[-1], None)
        return held

    # ------------------------------------------------------------ deltas out

    def _placed(self, path: Path, value: Any) -> None:
        """A new object or list sits at `path`: start every watched element it is or holds (the sources at or
        under `path`, then an element of the source whose list `path` is in)."""
        rules = self.rules
        depth = len(path)
        for w_index in rules.below.get(path, ()):
            w = rules.watched[w_index]
            container = _walk(value, w.steps[depth:])
            if w.src.each:
                if isinstance(container, list):
                    for i in range(len(self._elements[w_index]), len(container)):
                        self._start(w_index, i, container[i])
            elif container is not MISSING and 0 not in self._elements[w_index]:
                self._start(w_index, 0, container)
        if depth:
            w_index = rules.route.get(path[:-1], -1)
            index = path[-1]
            each = w_index >= 0 and rules.watched[w_index].src.each
            if each and type(index) is int and index not in self._elements[w_index]:
                self._start(w_index, index, value)

    def _start(self, w_index: int, i: int, element: Any) -> None:
        """An element arrived: emit what the response template makes of it, as the non-streaming path would."""
        self.started += 1
        w = self.rules.watched[w_index]
        src = w.src
        kind, template = src.pick(element)
        id_steps = w.held_whole.get(kind) if w.held_whole and template is not None else None
        if id_steps is not None and (self._held or (found := _walk(element, id_steps)) is MISSING or not found):
            self._elements[w_index][i] = _WHOLE  # a whole call held (see finish): not rendered twice
            self._recheck = True  # a call not opened by plain reads (`_given`)
            self._held.append(len(self._calls))
            self._calls.append(None)
            return
        roles = w.roles.get(kind, {}) if isinstance(kind, str) else {}
        info = _Element(dict(roles), join=self.rules.reasoning_joins.get(kind, "") if isinstance(kind, str) else "")
        self._elements[w_index][i] = info
        if template is None:
            return  # a kind the rules do not know: the final translation notes it
        plain = w.plain_calls.get(kind) if w.plain_calls else None
        if plain is not None:  # read, not rendered: its id and name given (else the template says what is wrong)
            call_id, name = _walk(element, plain[0]), _walk(element, plain[1])
            if type(call_id) is str and call_id and type(name) is str and name:
                arguments = _walk(element, plain[2])
                first = arguments if type(arguments) is str else ""
                self._recheck = self._recheck or first is not arguments  # the answer holds no text it read
                self._open_call(w_index, i, info, call_id, name, first, None, False)
                return
        ctx = Ctx(self.rules.provider, outbound=True, ids=self.id_map)
        ctx.path = (src, i)
        item = template(element, ctx)
        if item is MISSING:
            return
        text = item.get("text")
        if type(text) is str and text:
            self._emit_text(text)
        for field_path, role in info.roles.items():
            if role == REASONING:
                for part, value in _walk_each(element, field_path):
                    if type(value) is str and value:
                        self._emit(info, role, value, part)
        call = item.get("tool_call")
        if call is None:
            return
        self._recheck = True  # a call rendered, not opened by plain reads (`_given`)
        held = src.synthesize_ids and not call.get("id")
        if held and kind not in w.streamed_arguments:  # a whole call: the final translation gives it (see finish)
            self._held.append(len(self._calls))
            self._calls.append(None)
            return
        if held:
            call = {**call, "id": _HELD}  # the real one hashes the whole response: given at the end
        fields = src.field_paths.get(kind, {}) if isinstance(kind, str) else {}
        outbound = self.rules.outbound
        extra = None
        if kind in w.streamed_arguments:
            call_id, name = call.get("id"), call.get("name")
            if not (type(call_id) is str and call_id and type(name) is str and name):
                outbound.bad_tool_call(call, src.element_path(i), fields, src.arguments)
            arguments = call.get("arguments")
            first = arguments if type(arguments) is str else ""  # JSON arriving in pieces starts from nothing
            given = call.get("extra_content")
            extra = given if isinstance(given, dict) else None  # a signature the call opened with rides on it now
            self._open_call(w_index, i, info, call_id, name, first, extra, held)
        else:
            done = outbound.tool_call(call, src, i, fields, ctx)
            self._open_call(
                w_index, i, info, done.id, done.name, done.arguments, done.extra_content, held, restore=False
            )

    def _open_call(
        self,
        w_index: int,
        i: int,
        info: _Element,
        call_id: str,
        name: str,
        first: str,
        extra: Any,
        held: bool,
        restore: bool = True,
    ) -> None:
        """A tool call starts: its opening entry (empty arguments), then in the same delta any arguments it
        arrived with (one chunk per whole call, as the OpenAI SDK accumulates entries in order). The call takes
        the place of its element `info` (`Call`)."""
        ids = self._ids
        if restore and ids is not None:  # the caller's own id, as the whole answer restores it
            call_id = ids.restore(call_id, self.id_map or NO_IDS)
        index = len(self._calls)
        # `extra_content`: a signature rides on the call, as in tool_calls_json(); `piece`: the arguments it
        # arrived with, written in the same chunk (as held calls are sent)
        opened = {"index": index, "id": call_id, "name": name, "extra_content": extra, "piece": first}
        read = first if restore else None  # what a plain read gave (`_given`)
        call = _Call(info.roles, index, info.join, info.part, id=str(call_id), name=str(name),
                     sent_arguments=bool(first), opened=opened if held else None, arguments=read)  # fmt: skip
        self._elements[w_index][i] = call
        self._calls.append(call)
        self._tool_chunk(_OPEN, opened, held)

    def _tool_chunk(self, write: Write, scope: dict[str, Any], hold: bool = False) -> None:
        """A tool call's chunk: written now, or held while any call before it waits for its synthesized id."""
        if hold or self._held:
            self._held.append((write, scope))
        else:
            self._write(write, scope)

    def _fragment(self, path: Path, piece: str) -> None:
        """A piece of text was appended at `path`: emit it if a watched element's template reads it."""
        rules = self.rules
        for n in rules.route_lengths:
            w_index = rules.route.get(path[:n], -1)
            if w_index >= 0:
                break
        else:
            return
        if rules.watched[w_index].src.each:
            if len(path) <= n + 1:
                return
            info = self._elements[w_index].get(path[n])  # type: ignore[arg-type]
            field_path = path[n + 1 :]
        else:
            info = self._elements[w_index].get(0)
            field_path = path[n:]
        if info is None:
            return
        role = info.roles.get(field_path)
        if role is None and info.roles and any(type(step) is int for step in field_path):
            role = info.roles.get(tuple(None if type(step) is int else step for step in field_path))  # `[]`
        if role is not None:
            self._emit(info, role, piece, field_path)

    def _said(self, text: Text, w_index: int, element: int, field: Path) -> tuple[_Element | None, str | None]:
        """The watched element a Text's pieces are said for and their role (`Text.said`): kept on the Text once
        the element is known (an element's info is set once, when it starts, and a Text stays at its place)."""
        info = self._elements[w_index].get(element)
        if info is None:
            return None, None  # no element (yet): asked again at the next piece
        said = text.said = (info, info.roles.get(field))
        return said

    def _emit(self, info: _Element, role: str, piece: str, part: Path = ()) -> None:
        """A piece of a watched element's field: a delta by the role its template gives the field. A reasoning
        piece of another part than the last (`part`, a `summary[].text` path) comes after the join."""
        if role == TEXT:
            self._emit_text(piece)
        elif role == REASONING:
            if info.part is not None and part != info.part and info.join:
                self._write(_REASONING, {"piece": info.join})
            info.part = part
            self._write(_REASONING, {"piece": piece})
        elif role == ARGUMENTS and info.call is not None and (call := self._calls[info.call]) is not None:
            call.sent_arguments = True
            self._tool_chunk(_ARGUMENTS, {"index": info.call, "piece": piece})

    def _emit_text(self, text: str) -> None:
        self._text_sent += len(text)
        self._write(_TEXT, {"piece": text})

    def _write(self, write: Write, scope: dict[str, Any]) -> None:
        """A chunk of this event: written now, or once the header is read (`_chunks`); writing a format's events
        (`into`), the moment it is written from goes to them, now or at the end of the event (`_moments`)."""
        if self._head:
            self._out.append(write(self._header, scope))
        elif self._pieces is self._writer:
            _moment(self._writer, self._out, write, scope)
        else:
            self._holding.hold(write, scope)

    def into(self, fmt: SourceFormat) -> SourceEvents:
        """Write the format's events instead of OpenAI chunks, from now on (before the first event): each moment
        a chunk is written from (the start, a piece, a call's opening) goes to the format's `SourceEvents`, and
        no chunk is built. `feed` and `finish` then return the format's events; their `end` closes them.
        Asked after the first event, a StateError (a call made out of order)."""
        if self._events:
            raise StateError(
                f"a stream translator writes a format's events only from its first event (it has read {self._events})"
            )
        self._writer = SourceEvents(fmt, self)
        self._holding = self._pieces = self._writer.waiting = _Waiting(self._writer, self._waiting)
        return self._writer

    def _moments(self, last: bool = False) -> list[dict[str, Any]]:
        """Writing a format's events: the moments held to the end of the event given to them. They wait for the
        header (the start moment), and while the events wait for what the event as a whole says
        (`SourceEvents.opening`: a chunk, too, is read after its event); after that, moments go to them as they
        come, the generated code's pieces straight to their handlers (`_pieces`)."""
        writer, held = self._writer, self._waiting
        assert writer is not None
        out, self._out = self._out, []
        if not self._known:
            if not (held or last or self._identified()):
                return out
            self._known = True
            self._header = self._identity()
            writer.start(out, self._header)
        for handler, args in held:  # in order: the event's pieces and openings, each to its handler
            handler(out, *args)
        held.clear()
        if not writer.opening:
            self._pieces = writer
        return out

    def _chunks(self, last: bool = False) -> list[dict[str, Any]]:
        """The event's chunks; the first chunk (`start`) opens with the assistant role.

        The header (id, created, model) is read at the first event that has an id or something to
        send: an opening event with neither (an empty id, nothing said yet) waits for the next."""
        if not self._head:
            pending = self._pending
            if not (pending or last or self._identified()):
                return []
            self._head = self._known = True
            header = self._header = self._identity()
            out = [_START(header, {}), *(write(header, scope) for write, scope in pending)]
            pending.clear()
            return out
        out = self._out
        self._out = []
        return out

    def _identified(self) -> bool:
        """Whether the response rebuilt so far has a chunk id (or the rules read none)."""
        read = self.rules.chunk_id
        if read is None:
            return True
        found = read(self.response)
        return type(found) is str and found != ""

    def _identity(self) -> tuple[str, int, str]:
        """id, created and model of every chunk, read once; an empty id or model and a created of 0 count as none."""
        rules, response = self.rules, self.response
        chunk_id = rules.chunk_id(response) if rules.chunk_id else MISSING
        created = rules.created(response) if rules.created else MISSING
        model = rules.outbound.model(response, Ctx(rules.provider, outbound=True)) if rules.outbound.model else MISSING
        return (
            chunk_id if type(chunk_id) is str and chunk_id else f"chatcmpl-{uuid.uuid4().hex}",
            created if type(created) is int and created > 0 else self._created,
            model if type(model) is str and model else (self.requested_model or ""),
        )

    def partial(self) -> TranslateResult | None:
        """The answer so far, translated as if the stream ended here, or None when the rules cannot read it yet.

        For a consumer that needs, mid-stream, what only the whole answer says (a source format's reasoning
        blocks with their signatures): the response built so far is copied, its texts made whole (JSON still
        arriving keeps its placeholder) and translated; the stream itself is untouched."""
        memo: dict[int, Any] = {}
        response = copy.deepcopy(self.response, memo)
        for parent, key, text, path in self._texts:
            twin = memo.get(id(parent))
            if twin is None:
                continue
            found = self.rules.combine.find(path)
            if found is None or found.policy is not JSON:
                twin[key] = text.value()
            else:
                twin[key] = None if text.placeholder is MISSING else text.placeholder
        try:
            return self.rules.outbound.translate(response, requested_model=self.requested_model, id_map=self.id_map)
        except ToolnexusError:
            return None

    # ------------------------------------------------------------ the end

    def assemble(self) -> dict[str, Any]:
        """The provider response the events built, as its non-streaming endpoint would have sent it.

        Raises ProviderError (kind connection) when the stream stopped before the rules' end. Handed out, it may
        change before `finish` (an `after_llm` hook may edit it): the calls opened are then compared with it.
        """
        self._recheck = True
        return self._assemble()

    def _assemble(self) -> dict[str, Any]:
        rules = self.rules
        if self._assembled:
            return self.response
        if not self.ended and not any(present(self.response) not in (MISSING, None) for present in rules.complete):
            raise ProviderError("the stream ended before the provider finished its answer",
                                provider=rules.provider, kind="connection")  # fmt: skip
        for held in self._continued:
            label = next(n.continued.label for n in _nodes(rules.combine) if id(n) == held and n.continued)
            raise ResponseError(label, "the stream ended while an element said more of it follows",
                                provider=rules.provider)  # fmt: skip
        self._walks[:] = self._no_walks  # a `json` field's text becomes what it parses to: maybe an object
        for parent, key, text, path in self._texts:
            value = text.value()
            if (found := rules.combine.find(path)) is None or found.policy is not JSON:
                parent[key] = value
            elif not value.strip() and text.placeholder is not MISSING:
                parent[key] = text.placeholder  # no JSON arrived: the value the element started with stays
            else:
                try:
                    parent[key] = loads(value)
                except JsonValueError as exc:
                    raise ResponseError(where_in(_text_path(path), exc.where), f"the streamed JSON {exc.message}",
                                        provider=rules.provider) from None  # fmt: skip
                except ValueError:
                    raise ResponseError(_text_path(path), f"the streamed JSON does not parse: "
                                        f"{excerpt(value.encode('utf-8', 'replace'))}",
                                        provider=rules.provider) from None  # fmt: skip
        self._texts.clear()
        self._assembled = True
        return self.response

    def finish(self) -> list[dict[str, Any]]:
        """The closing chunks (any argument not yet sent, the finish reason, usage); sets `result`.

        `result` is the non-streaming translation of the assembled response (plus a note per
        unknown event type); the streamed tool calls and text are checked against it.
        """
        rules = self.rules
        response = self._assemble()
        given = self._given(response)
        result = rules.outbound.translate(response, requested_model=self.requested_model, id_map=self.id_map,
                                          given=given, checked=rules.checked and not self._deeper)  # fmt: skip
        if self.notes:
            result.notes = (*result.notes, *self.notes)
        calls = result.tool_calls  # compared in place, in one pass: held whole calls (None) have nothing to compare
        same, unsent = len(self._calls) == len(calls) and self._text_sent == len(result.text), []
        # else every call held whole, or every call the stream's own, given whole and taken (`_given`): nothing to
        # compare (a pass over thousands)
        opened = any(self._calls) and not (given is not None and len(calls) == len(given[2])
                                           and all(map(is_, calls, given[2])))  # fmt: skip
        for index, (call, done) in enumerate(zip(self._calls, calls, strict=False) if opened else ()):
            if call is not None:
                if call.opened is not None:  # a held call: the id the whole answer synthesized
                    call.id = call.opened["id"] = done.id
                if call.id != done.id or call.name != done.name:
                    same = False
                if not call.sent_arguments and done.arguments:
                    unsent.append(index)
        if not same:
            raise ResponseError("", "the streamed deltas differ from the assembled response; the streaming "
                                "rules do not match the response rules", provider=rules.provider)  # fmt: skip
        self.result = result
        writer = self._writer
        out = self._chunks(last=True) if writer is None else self._moments(last=True)
        if writer is not None:  # writing a format's events: the held calls' moments given to them (`into`)
            self._release(out, writer, calls)
            for index in unsent:
                writer.arguments(out, index, calls[index].arguments)
            writer.look(out)  # the closing chunks: nothing the events are written from (`end` reads the
            return out  # result), but looked at as any chunk is
        header = self._header
        if self._held:  # the held calls, in order, released together as one chunk holding their entries (see the top)
            entries: list[Any] = []
            CHUNKS.released(header, entries, self._held, calls, partial(_moment, _Entries(header)))
            self._held.clear()
            out.append(_joined(header, entries))
        for index in unsent:
            out.append(_ARGUMENTS(header, {"index": index, "piece": calls[index].arguments}))
        scope = {"answer_id": header[0], "created": header[1], "model": header[2], "refusal": result.refusal,
                 "annotations": fresh_copy(result.annotations) if result.annotations else result.annotations,
                 "finish_reason": result.finish_reason, "usage": result.usage}  # fmt: skip
        ctx = Ctx(PLAIN, outbound=True)
        for render in CHUNKS.end:  # a refusal, the annotations, the finish reason, the usage: as the file says
            chunk = render(scope, ctx)
            if chunk is not MISSING:
                out.append(chunk)
        return out

    def _given(self, response: dict[str, Any]) -> tuple[ItemSource, list[Any], list[TranslatedToolCall]] | None:
        """The whole answer's tool calls, when each is one the stream opened by plain reads (`Watched.plain_calls`)
        and the answer still holds what it opened from: the final translation reads an element's id, name and
        arguments and nothing else, so the same values give the same call, unless its id is one the final
        translation restores (it gives those calls, with their notes). The final translation then takes them
        (`Outbound.translate`'s `given`) rather than translating every call a second time. When nothing can have
        changed them since (`_recheck`: no write reached the calls' list or an element in it once a call was open,
        each call opened by plain reads of the text its element holds, the answer not handed out), the calls are
        taken as opened; else their values are compared with the answer's (the very objects: `is`), column by
        column, with no Python run per call (a stream of thousands of whole calls, one per event). None when
        anything differs."""
        calls = self._calls
        if not calls:
            return None
        for w_index, w in enumerate(self.rules.watched):
            paths = w.taken_calls
            if paths is None:
                continue
            found = _walk(response, w.steps)
            if type(found) is not list or len(found) != len(calls):
                return None
            rule = self._ids
            restores = rule is not None and (self.id_map or rule.rewrite is None)  # an id the final translation gives
            try:
                if self._recheck or restores:
                    columns = self._compared(found, paths)
                elif len(self._elements[w_index]) == len(calls):  # every call this source's, each element a call
                    columns = [list(map(get, calls)) for get in (_ID, _NAME, _OPENED_WITH)]
                else:
                    return None
            except (AttributeError, LookupError, TypeError):  # a held whole call (None) has none
                return None
            if columns is None:
                return None
            ids, names, arguments = columns
            if restores and rule is not None and list(map(rule.restore, ids, repeat(self.id_map or NO_IDS))) != ids:
                return None
            return w.src, found, tool_calls(ids, names, arguments)
        return None

    def _compared(self, found: list[Any], paths: tuple[Path, ...]) -> list[list[Any]] | None:
        """The id, name and arguments columns of the answer's list `found`, when each value is the very object its
        call was opened from, else None; an AttributeError where a call is held whole (None), a LookupError or
        TypeError where the answer holds no such value."""
        calls = self._calls
        opened = list(map(_OPENED_WITH, calls))  # a call rendered whole, None; a plain one, the text it read
        columns: dict[Path, list[Any]] = {(): found}
        ids, names, arguments = (_column(columns, path) for path in paths)
        if None in opened or not (all(map(is_, arguments, opened)) and all(map(is_, ids, map(_ID, calls)))
                                  and all(map(is_, names, map(_NAME, calls)))):  # fmt: skip
            return None
        return [ids, names, arguments]

    def _release(self, out: list[Any], sink: SourceEvents, calls: list[Any]) -> list[Any]:
        """The held calls, in order, as the format's events (`CHUNKS.released` writes them as a chunk's entries): a
        whole call (its index) opened from its translation in the whole answer (which validated it and gave its
        id), not rendered twice; a held opening or arguments piece as it was held."""
        sink.released(out, self._held, calls, _moment)
        self._held.clear()
        return out


class _Entries:
    """Where released calls go in a chunk: their `open` and arguments entries (at `JOINED`), written by the
    normal form's entries writers over the header, with the moments a format's events take (`SourceEvents`)."""

    __slots__ = ("arguments", "call")

    def __init__(self, header: tuple[str, int, str]) -> None:
        self.call = partial(CHUNKS.call, header)
        self.arguments = partial(CHUNKS.arguments, header)


def _joined(header: tuple[str, int, str], entries: list[Any]) -> dict[str, Any]:
    """One chunk holding the tool-call entries of calls released together (at `JOINED`)."""
    chunk: dict[str, Any] = _ARGUMENTS(header, {"index": 0, "piece": ""})
    *above, last = JOINED
    holder: Any = chunk
    for step in above:
        holder = holder[step]
    holder[last] = entries
    return chunk


class Pieces(Protocol):
    """Where the generated code's pieces go when no chunk is written inline (`stream_code._written`)."""

    def text(self, out: list[dict[str, Any]], piece: str) -> None: ...

    def reasoning(self, out: list[dict[str, Any]], piece: str) -> None: ...

    def arguments(self, out: list[dict[str, Any]], index: int, piece: str) -> None: ...


class _Held:
    """Chunks held until the header is read: each piece as the chunk writer and scope it is written from, in
    the translator's `_pending` (written by `_chunks`)."""

    __slots__ = ("pending",)

    def __init__(self, pending: list[tuple[Write, dict[str, Any]]]) -> None:
        self.pending = pending

    def hold(self, write: Write, scope: dict[str, Any]) -> None:
        self.pending.append((write, scope))

    def text(self, out: list[dict[str, Any]], piece: str) -> None:
        self.pending.append((_TEXT, {"piece": piece}))

    def reasoning(self, out: list[dict[str, Any]], piece: str) -> None:
        self.pending.append((_REASONING, {"piece": piece}))

    def arguments(self, out: list[dict[str, Any]], index: int, piece: str) -> None:
        self.pending.append((_ARGUMENTS, {"index": index, "piece": piece}))


def _moment(sink: SourceEvents | _Entries, out: list[dict[str, Any]], write: Write, scope: dict[str, Any]) -> None:
    """The moment a chunk would be written from (`write` over `scope`), given to `sink`: the format's events
    (`StreamTranslator.into`), or the entries of the chunk releasing held calls (only openings and arguments are
    held). A function of the sink alone: what holds it holds no reference back to the translator, so a finished
    stream is freed by reference counting (`SourceEvents.end` lets go of the translator)."""
    if write is _ARGUMENTS:
        sink.arguments(out, scope["index"], scope["piece"])
    elif write is _OPEN:
        sink.call(out, scope["index"], scope["id"], scope["name"], scope["extra_content"], scope["piece"])
    else:  # a piece of text or reasoning: never held for a chunk's entries
        assert isinstance(sink, SourceEvents)
        if write is _TEXT:
            sink.text(out, scope["piece"])
        else:
            assert write is _REASONING
            sink.reasoning(out, scope["piece"])


class _Waiting:
    """Writing a format's events while they wait for the end of each provider event (`SourceEvents.opening`): each
    moment held as the handler it goes to and its arguments (a piece: the events' own handler, no chunk writer
    to tell apart), given to them in order by `StreamTranslator._moments`. A reasoning piece that finds nothing
    of its event held and no element started since the events last looked goes to them straight (the moment
    of nearly every event of the reasoning an answer opens with): the end of its event has nothing for them to
    look at that the piece could come after (`SourceEvents.look`). While a reasoning block is open, its own handler
    for this is set here as `reasoning` (`SourceEvents._straight`: it asks the same, and holds the piece here when
    it must wait). A moment held after such a piece in the same event holds the events it wrote first, so
    the end of the event gives them out in order."""

    # (no __slots__: the events set their reasoning handler on the instance, over the method)

    def __init__(self, writer: SourceEvents, held: list[tuple[Callable[..., None], tuple[Any, ...]]]):
        self.held = held
        self._writer = writer
        self._text, self._reasoning, self._arguments, self._moment = (
            writer.text, writer.reasoning, writer.arguments, partial(_moment, writer))  # fmt: skip

    def _hold(self, out: list[dict[str, Any]], moment: tuple[Callable[..., None], tuple[Any, ...]]) -> None:
        if out:  # events a piece wrote straight in this event: held first, as written
            self.held.append((_given, (out[:],)))
            out.clear()
        self.held.append(moment)

    def hold(self, write: Write, scope: dict[str, Any]) -> None:
        self._hold(self._writer.translator._out, (self._moment, (write, scope)))

    def text(self, out: list[dict[str, Any]], piece: str) -> None:
        self._hold(out, (self._text, (piece,)))

    def reasoning(self, out: list[dict[str, Any]], piece: str) -> None:
        writer = self._writer
        if not self.held and writer._started and writer.translator.started == writer._seen:
            writer.reasoning(out, piece)
        else:
            self.hold_reasoning(out, piece)

    def hold_reasoning(self, out: list[dict[str, Any]], piece: str) -> None:
        self._hold(out, (self._reasoning, (piece,)))

    def arguments(self, out: list[dict[str, Any]], index: int, piece: str) -> None:
        self._hold(out, (self._arguments, (index, piece)))


def _given(out: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    """Events already written, given out where they were held."""
    out += events


def _column(columns: dict[Path, list[Any]], path: Path) -> list[Any]:
    """The value at `path` (keys) in each object of the list at `columns[()]`, as the final translation reads it
    (each container an object); a LookupError or TypeError where one is not. `columns` keeps each path's column,
    so the paths of one element share what they read first (`function`, for its name and its arguments)."""
    values = columns[()]
    for n in range(len(path)):
        column = columns.get(path[: n + 1])
        if column is None:
            if not all(map(isinstance, values, repeat(dict))):  # as the final translation tests them
                raise TypeError(path[:n])
            column = columns[path[: n + 1]] = list(map(itemgetter(path[n]), values))
        values = column
    return values


def _nodes(node: Node) -> list[Node]:
    """Every node of a combine table."""
    return [node, *(n for child in node.children.values() for n in _nodes(child))]


def _get(parent: Any, key: str | int) -> Any:
    if isinstance(parent, dict):
        return parent.get(key, MISSING)
    return parent[key] if type(key) is int and key < len(parent) else MISSING


def _walk_each(value: Any, path: Path) -> Iterator[tuple[Path, Any]]:
    """The values at `path` in `value` with the concrete path of each: `[]` (None) steps through every
    element of a list (`summary[].text`: each part's text, in order)."""
    if not path:
        yield (), value
        return
    step, rest = path[0], path[1:]
    if step is None:
        if type(value) is list:
            for n, element in enumerate(value):
                yield from (((n, *below), found) for below, found in _walk_each(element, rest))
        return
    found = _walk(value, (step,))
    if found is not MISSING:
        yield from (((step, *below), inner) for below, inner in _walk_each(found, rest))


def _walk(value: Any, steps: Path) -> Any:
    for step in steps:
        if type(step) is int:
            if not isinstance(value, list) or step >= len(value):
                return MISSING
        elif not isinstance(value, dict) or step not in value:
            return MISSING
        value = value[step]
    return value


def _combined(value: Any, node: Node, fold: Any) -> Any:
    """A value arriving whole, with its `join` and `continued` lists folded as if their elements had arrived
    one by one (`fold`: the translator's `_continue`, which holds a continued element across events)."""
    if node.continued is not None and isinstance(value, list):
        value = [x for x in (fold(node, element) for element in value) if x is not MISSING]
    if node.join is not None and isinstance(value, list):
        out: list[Any] = []
        for element in value:
            if out and joins(out[-1], element, node.join):
                last = out[-1]
                out[-1] = {**last, **{k: v for k, v in element.items() if k not in last}}
                out[-1][node.join.field] = last[node.join.field] + element[node.join.field]
            else:
                out.append(element)
        return out
    if not node.children:
        return value
    if isinstance(value, dict):
        return {k: _combined(v, child, fold) if (child := node.child(k)) else v for k, v in value.items()}
    if isinstance(value, list):
        return [_combined(v, child, fold) if (child := node.child(i)) else v for i, v in enumerate(value)]
    return value


_JSON_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


def _json_path(text: Any) -> list[str | int] | None:
    """The steps of a JSON path of names and indexes (`$.a.b[0]`, `$['a']`), or None for any other."""
    if type(text) is not str or not text.startswith("$"):
        return None
    steps: list[str | int] = []
    at = 1
    while at < len(text):
        match = _JSON_PATH_STEP.match(text, at)
        if match is None:
            return None
        name, index, quoted = match.groups()
        steps.append(name if name is not None else int(index) if index is not None else quoted)
        at = match.end()
    return steps


def _fold(held: dict[str, Any], rule: Continued, pieces: Any, provider: str) -> None:
    """Set each piece's value into the held element's `into` object at the piece's JSON path (a string piece
    where a string is continues it)."""
    where = f"{rule.label}[].{_text_path(rule.pieces)}"
    if not isinstance(pieces, list):
        raise ResponseError(where, "must be a list", provider=provider)
    for i, piece in enumerate(pieces):
        at = f"{where}[{i}]"
        steps = _json_path(piece.get(rule.path) if type(piece) is dict else None)
        if not steps:
            raise ResponseError(
                f"{at}.{rule.path}", "must be a JSON path of names and indexes under $", provider=provider
            )
        value = next((piece[name] for name in rule.values if name in piece), MISSING)
        if value is MISSING:
            if rule.null is None or rule.null not in piece:
                raise ResponseError(at, "holds no value", provider=provider)
            value = None
        path: list[Any] = [*rule.into, *steps]
        parent: Any = held
        for n, step in enumerate(path):
            if type(step) is int and type(parent) is list:
                parent.extend(None for _ in range(step + 1 - len(parent)))
            elif type(step) is int or type(parent) is not dict:
                raise ResponseError(f"{at}.{rule.path}", "does not fit the value built so far", provider=provider)
            now = parent[step] if type(parent) is list else parent.get(step)
            if n == len(path) - 1:
                parent[step] = now + value if type(now) is str and type(value) is str else value
            else:
                if now is None:
                    now = parent[step] = [] if type(path[n + 1]) is int else {}
                parent = now


def _text_path(path: Path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if type(step) is int else (f".{step}" if out else str(step))
    return out
