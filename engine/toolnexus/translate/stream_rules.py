"""The `streaming` section of a rule file, compiled once: what each event does to the response being rebuilt.

A section names (see README "Streaming rules"): the endpoint and body keys that ask for a
stream; per event type (or for every event) the *steps* that merge a part of the event
into the provider's non-streaming response (`into`, `from`, `at`, `field`, `each`,
`omit`, or `end`); the `combine` policies by response path (`append`, `json`,
`extend`, `by_position`, `join`, `continued`); how a stream without an end event is known complete;
the chunk id and created paths; which event types open an answer (`starts`); and which item kinds
stream as reasoning. The response
section's item sources are *watched*: for each source and kind, which field the
template reads as text, as tool-call arguments, or (by `reasoning`) as reasoning.
`stream.StreamTranslator` runs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from ..language.loader import Key, RuleSource, did_you_mean
from ..language.paths import Getter, first_field, simple_steps
from ..language.templates import Ctx, Env, Render, compile_template, path_getter
from .endpoint import Endpoint
from .outbound import ItemSource, Outbound, Parts


@dataclass(frozen=True)
class EventIndex:
    """A write-path index the event gives (`summary[summary_index]` in a step's `field`): read from the event
    (or the `each` element) at merge time, an integer from 0; the element it names is started when it is next."""

    expr: str
    getter: Getter


Step = str | int | None  # a write-path step: a key, an index, or None for "any element" (`[]`)
Path = tuple[Step, ...]
FieldPath = tuple[Step | EventIndex, ...]  # a step's `field`: its indexes may be read from the event

APPEND, JSON, EXTEND, BY_POSITION = "append", "json", "extend", "by_position"  # combine policies
TEXT, ARGUMENTS, REASONING = "text", "arguments", "reasoning"  # what a watched field is read as
_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[[A-Za-z0-9_.]*\])*)")
_EVENT_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class Join:
    """`join`: an arriving element holding the text `field` continues the previous one (equal `same`, no clash)."""

    field: str
    same: tuple[str, ...]


@dataclass(frozen=True)
class Continued:
    """`continued`: an element whose `flag` is true is held; the next ones fold into it (their `pieces` set into
    its `into` object by JSON path) until one arrives without the flag. `label` is the combine path."""

    label: str
    flag: Path
    pieces: Path
    into: Path
    path: str  # a piece's field holding its JSON path
    values: tuple[str, ...]  # a piece's fields that may hold its value, tried in order
    null: str | None  # a piece's field saying its value is null


@dataclass(frozen=True)
class Node:
    """One level of the `combine` table, walked alongside the response while merging."""

    policy: str | None = None
    join: Join | None = None
    continued: Continued | None = None
    children: Mapping[Step, Node] = field(default_factory=lambda: MappingProxyType({}))

    def child(self, step: str | int) -> Node | None:
        found = self.children.get(step)
        if found is None and type(step) is int:
            found = self.children.get(None)
        return found

    def find(self, path: Path) -> Node | None:
        """The node of a concrete path (indexes match `[]`), if the table has one."""
        node: Node | None = self
        for step in path:
            if node is None:
                return None
            assert step is not None
            node = node.child(step)
        return node


@dataclass(frozen=True)
class Move:
    """One step: merge the event's value at `source` into the response at `into` (`at` an index, then `field`)."""

    into: Path
    source: Getter
    from_path: str = "@"
    at: Getter | None = None
    at_path: str = ""
    field: FieldPath = ()
    each: Getter | None = None
    each_path: str = ""
    omit: frozenset[str] = frozenset()


END = "end"
Steps = tuple[Move | str, ...]
# The answer's id and time where the streaming section reads a chunk's: each path (None: not given) and its getter.
AnswerReads = tuple[tuple[str | None, Getter | None], tuple[str | None, Getter | None]]
NO_READS: AnswerReads = ((None, None), (None, None))


@dataclass(frozen=True)
class Dispatch:
    """An event type whose steps depend on a second path (`by`), e.g. the kind of a delta."""

    by: Getter
    by_path: str
    cases: Mapping[str, Steps]


@dataclass(frozen=True)
class Watched:
    """An item source of the response section, seen from the stream: where its elements live and what
    each kind's fields mean (field path -> text | arguments | reasoning)."""

    src: ItemSource
    steps: Path
    roles: Mapping[str, Mapping[Path, str]]  # kind ("" without kinds) -> field -> role
    streamed_arguments: frozenset[str]  # kinds whose arguments arrive in pieces (an append/json policy)
    # kinds that render a tool call with a synthesized id and nothing else, each with the element path its id
    # reads: an element with no id there is held whole and rendered only by the final translation
    held_whole: Mapping[str, tuple[str | int, ...]] = field(default_factory=lambda: MappingProxyType({}))
    # kinds whose arguments arrive in pieces and that render a tool call of plain reads (id, name, arguments)
    # and nothing else the stream sends: their paths, read at the element's start without rendering it
    plain_calls: Mapping[str, tuple[tuple[str | int, ...], ...]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def taken_calls(self) -> tuple[tuple[str | int, ...], ...] | None:
        """The id, name and arguments paths of a source whose calls the final translation may take as the stream
        opened them (`StreamTranslator._given`): a list of one kind, each element's values read by keys, its
        arguments as text; else None."""
        src, paths = self.src, self.plain_calls.get("")
        if (paths is None or not src.each or src.kind is not None or src.kind_by_key or src.arguments == "object"
                or not all(type(step) is str for path in paths for step in path)):  # fmt: skip
            return None
        return paths


@dataclass(frozen=True)
class Section:
    """A rule file's `streaming` section compiled to its tables (never changed once built); stream_code.py writes
    its code from them into the `Streaming` the translator runs.

    `below` and `route` are the watched sources' paths compiled into lookups, so an event touches
    only the sources its paths reach: `below` maps every prefix of a source's path to the sources
    at or under it (longest path first), `route` a source's path to the source, tried at the
    `route_lengths` (longest first)."""

    provider: str
    path: str | None
    body: dict[str, Any]
    framing: str  # how the bytes become events: sse | ndjson | aws-eventstream (http/framing.py)
    type: Getter | None
    events: Mapping[str, Steps | Dispatch]
    every: Steps
    done: str | None
    starts: frozenset[str]  # event types that open an answer (a second opening is refused)
    complete: tuple[Getter, ...]
    start: dict[str, Any]
    chunk_id: Getter | None
    created: Getter | None
    combine: Node
    reasoning: Mapping[str, Path]
    reasoning_joins: Mapping[str, str]  # kind -> the text between two parts' pieces of a `[]` reasoning path
    watched: tuple[Watched, ...]  # longest path first: the most specific source owns a path
    outbound: Outbound
    endpoint: Endpoint
    below: Mapping[Path, tuple[int, ...]]
    route: Mapping[Path, int]
    route_lengths: tuple[int, ...]
    type_path: str = ""
    request: Render | None = None  # the stream-only request overlay (scope: {body, options})
    error_key: str | None = None  # the top-level key the error message path reads: an event without it is no error
    # The answer's id and time where `id` and `created` say (each path and its getter): what a source format's whole
    # answer says they are, read in its generated answer function (`format_code.generate_answer`).
    answer_reads: AnswerReads = NO_READS

    def request_body(self, body: Mapping[str, Any], options: Mapping[str, str]) -> dict[str, Any]:
        """The body a streamed call sends: the translated body with `body` set, then the `request` overlay
        (rendered from the body and the endpoint option values) merged in: mappings merge, others replace."""
        sent = {**body, **self.body}
        if self.request is None:
            return sent
        overlay = self.request({"body": sent, "options": dict(options)}, Ctx(self.provider))
        if isinstance(overlay, dict):
            sent = deep_merge(sent, overlay)
        return sent


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `overlay` merged in (a new mapping at every level it touches; `base` is not changed)."""
    merged = dict(base)
    for key, value in overlay.items():
        have = merged.get(key)
        merged[key] = deep_merge(have, value) if isinstance(have, dict) and isinstance(value, dict) else value
    return merged


# ---------------------------------------------------------------- compiling


def write_path(expr: Any, key: Key, env: Env, *, any_index: bool = False) -> Path:
    """A path into the response being built: `a.b[0].c` (or `a[].b` for every element); `@` is the root."""
    return cast(Path, _write_path(expr, key, env, any_index, event_index=False))  # no EventIndex without it


def _write_path(expr: Any, key: Key, env: Env, any_index: bool, event_index: bool) -> FieldPath:
    """A write path; with `event_index`, an index may be `[name]`: the one the event holds at `name`."""
    if not isinstance(expr, str):
        raise env.error(key, f"expected a path (a string), got {type(expr).__name__}")
    if expr == "@":
        return ()
    steps: list[Step | EventIndex] = []
    for segment in expr.split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise env.error(key, f"bad path '{expr}': write paths are names and [N] indexes joined by dots")
        steps.append(match[1])
        for index in re.findall(r"\[([^\]]*)\]", match[2]):
            if index == "" and not any_index:
                raise env.error(key, f"bad path '{expr}': `[]` (any element) is only for `combine` paths")
            if index.isdigit() or not index:
                steps.append(int(index) if index else None)
            elif not event_index:
                raise env.error(
                    key, f"bad path '{expr}': an index read from the event ([{index}]) is only for a step's `field`"
                )
            elif _EVENT_PATH.fullmatch(index):
                steps.append(EventIndex(index, path_getter(index, key, env)))
            else:
                raise env.error(key, f"bad path '{expr}': [{index}] is neither an index nor a plain path of the event")
    return tuple(steps)


def compile_streaming(source: RuleSource, outbound: Outbound, endpoint: Endpoint) -> Section | None:
    """The `streaming` section, or None when the rule file has none."""
    spec = source.data.get("streaming")
    if spec is None:
        return None
    key: Key = ("streaming",)
    env = Env(source)
    if "events" in spec and "type" not in spec:
        raise source.error(key, "`events` needs `type`: the path in an event naming its type")
    for i, name in enumerate(spec.get("starts", [])):
        if name not in spec.get("events", {}):
            raise source.error((*key, "starts", i), f"no event '{name}' in streaming.events"
                               f"{did_you_mean(name, spec.get('events', {}))}")  # fmt: skip
    combine = _compile_combine(spec.get("combine", {}), (*key, "combine"), env)
    read_id = path_getter(spec["id"], (*key, "id"), env) if "id" in spec else None
    read_created = path_getter(spec["created"], (*key, "created"), env) if "created" in spec else None
    events: dict[str, Steps | Dispatch] = {}
    for name, handler in spec.get("events", {}).items():
        at = (*key, "events", name)
        if isinstance(handler, dict):
            by = path_getter(handler["by"], (*at, "by"), env)
            cases = {case: _steps(s, (*at, "cases", case), env) for case, s in handler["cases"].items()}
            events[name] = Dispatch(by, handler["by"], MappingProxyType(cases))
        else:
            events[name] = _steps(handler, at, env)
    reasoning: dict[str, Path] = {}
    joins: dict[str, str] = {}  # kind -> what joins the pieces of two elements of a `[]` reasoning path
    for kind, given in spec.get("reasoning", {}).items():
        at = (*key, "reasoning", kind)
        path = given["path"] if isinstance(given, dict) else given
        reasoning[kind] = write_path(path, (*at, "path") if isinstance(given, dict) else at, env, any_index=True)
        if isinstance(given, dict):
            joins[kind] = given.get("join", "")
    text = {kind: write_path(p, (*key, "text", kind), env) for kind, p in spec.get("text", {}).items()}
    watched = tuple(sorted(_watch(source, outbound, combine, reasoning, key, text), key=lambda w: -len(w.steps)))
    below: dict[Path, list[int]] = {}
    route: dict[Path, int] = {}
    for index, w in enumerate(watched):
        for n in range(len(w.steps) + 1):
            below.setdefault(w.steps[:n], []).append(index)
        route.setdefault(w.steps, index)
    error = source.data.get("endpoint", {}).get("error", {})
    return Section(
        error_key=first_field(error["message"]) if isinstance(error.get("message"), str) else None,
        provider=source.data["provider"],
        path=spec.get("path"),
        body=dict(spec.get("body", {})),
        request=compile_template(spec["request"], (*key, "request"), env) if "request" in spec else None,
        framing=spec.get("framing", "sse"),
        type=path_getter(spec["type"], (*key, "type"), env) if "type" in spec else None,
        type_path=spec.get("type", ""),
        events=MappingProxyType(events),
        every=_steps(spec.get("every", []), (*key, "every"), env),
        done=spec.get("done"),
        starts=frozenset(spec.get("starts", ())),
        complete=tuple(path_getter(p, (*key, "complete", i), env) for i, p in enumerate(spec.get("complete", []))),
        start=dict(spec.get("start", {})),
        chunk_id=read_id,
        created=read_created,
        answer_reads=((spec.get("id"), read_id), (spec.get("created"), read_created)),
        combine=combine,
        reasoning=MappingProxyType(reasoning),
        reasoning_joins=MappingProxyType(joins),
        watched=watched,
        outbound=outbound,
        endpoint=endpoint,
        below=MappingProxyType({path: tuple(indexes) for path, indexes in below.items()}),
        route=MappingProxyType(route),
        route_lengths=tuple(sorted({len(w.steps) for w in watched}, reverse=True)),
    )


def _steps(spec: list[Any], key: Key, env: Env) -> Steps:
    out: list[Move | str] = []
    for i, step in enumerate(spec):
        at = (*key, i)
        if step == END:
            out.append(END)
            continue
        each = step.get("each")
        out.append(
            Move(
                into=write_path(step["into"], (*at, "into"), env),
                source=path_getter(step["from"], (*at, "from"), env),
                from_path=step["from"],
                at=path_getter(step["at"], (*at, "at"), env) if "at" in step else None,
                at_path=step.get("at", ""),
                field=_write_path(step["field"], (*at, "field"), env, False, event_index=True)
                if "field" in step
                else (),
                each=path_getter(each, (*at, "each"), env) if each is not None else None,
                each_path=each or "",
                omit=frozenset(step.get("omit", ())),
            )
        )
        if "field" in step and "at" not in step:
            raise env.error(at, "`field` names a field of the element `at` points to; give `at` too")
    return tuple(out)


@dataclass
class _Draft:
    """A `combine` level while the table is read; frozen into a Node once complete."""

    policy: str | None = None
    join: Join | None = None
    continued: Continued | None = None
    children: dict[Step, _Draft] = field(default_factory=dict)

    def freeze(self) -> Node:
        children = {step: child.freeze() for step, child in self.children.items()}
        return Node(self.policy, self.join, self.continued, MappingProxyType(children))


def _compile_combine(spec: dict[str, Any], key: Key, env: Env) -> Node:
    root = _Draft()
    for policy in (APPEND, JSON, EXTEND, BY_POSITION):
        for i, expr in enumerate(spec.get(policy, [])):
            at = (*key, policy, i)
            _leaf(root, write_path(expr, at, env, any_index=True), at, env).policy = policy
    for expr, join in spec.get("join", {}).items():
        node = _leaf(root, write_path(expr, (*key, "join", expr), env, any_index=True), (*key, "join", expr), env)
        node.policy, node.join = EXTEND, Join(join["field"], tuple(join.get("same", ())))
    for expr, spec_of in spec.get("continued", {}).items():
        at = (*key, "continued", expr)
        node = root
        for step in write_path(expr, at, env, any_index=True):
            node = node.children.setdefault(step, _Draft())
        if node.policy not in (None, EXTEND):
            raise env.error(at, f"a continued list is extended; this path is combined by {node.policy}")
        piece = spec_of["piece"]
        node.policy = EXTEND
        flag, pieces, into = (write_path(spec_of[name], (*at, name), env) for name in ("flag", "pieces", "into"))
        values = tuple(piece["values"])
        node.continued = Continued(expr, flag, pieces, into, piece["path"], values, piece.get("is_null"))
    return root.freeze()


def _leaf(root: _Draft, path: Path, key: Key, env: Env) -> _Draft:
    node = root
    for step in path:
        node = node.children.setdefault(step, _Draft())
    if node.policy is not None:
        raise env.error(key, "this path already has a combine policy")
    return node


def _watch(
    source: RuleSource, outbound: Outbound, combine: Node, reasoning: dict[str, Path], key: Key, text: dict[str, Path]
) -> list[Watched]:
    """Every item source of the response section, with the role of each field its templates read (asked
    of the compiled sources' parts: a text field that is a plain read, the path tool-call arguments read;
    a kind in `text` streams the field named there instead)."""
    known = {kind for src in outbound.sources for kind in src.kinds}
    for section, kinds in (("reasoning", reasoning), ("text", text)):
        for kind in kinds:
            if kind not in known:
                raise source.error((*key, section, kind), f"no item kind '{kind}' in response.items")
    watched = []
    for i, src in enumerate(outbound.sources):
        steps = simple_steps(src.path)
        if steps is None:
            raise source.error(("response", "items", i), f"a streamed item path must be plain, got '{src.path}'")
        element_steps: Path = (*steps, 0) if src.each else tuple(steps)
        roles: dict[str, dict[Path, str]] = {}
        streamed: set[str] = set()
        for kind, parts in src.parts.items():
            fields: dict[Path, str] = {}
            if kind in text:
                fields[text[kind]] = TEXT
            elif parts.text is not None and parts.text.steps is not None:
                fields[parts.text.steps] = TEXT
            arguments = (parts.tool_call or {}).get("arguments")
            if arguments is not None and arguments.read is not None and arguments.read.steps is not None:
                fields[arguments.read.steps] = ARGUMENTS
                policy = combine.find((*element_steps, *arguments.read.steps))
                if policy is not None and policy.policy in (APPEND, JSON):
                    streamed.add(kind)
            if kind in reasoning:
                fields[reasoning[kind]] = REASONING
            roles[kind] = fields
        if src.synthesize_ids and streamed:
            message = f"calls in '{src.path}' get synthesized ids; their arguments cannot arrive in pieces"
            raise source.error((*key, "combine"), message)
        frozen_roles = MappingProxyType({kind: MappingProxyType(fields) for kind, fields in roles.items()})
        held_whole = {kind: _held_whole(src, parts, kind, reasoning) for kind, parts in src.parts.items()}
        plain_calls = {kind: _plain_call(parts, kind, streamed, reasoning) for kind, parts in src.parts.items()}
        watched.append(Watched(src, tuple(steps), frozen_roles, frozenset(streamed), _some(held_whole),
                               _some(plain_calls)))  # fmt: skip
    return watched


def _streams_nothing_else(parts: Parts, kind: str, reasoning: Mapping[str, Path]) -> bool:
    """Whether a kind's template gives the stream nothing but its tool call (no text, no reasoning)."""
    return parts.text is None and parts.reasoning is None and kind not in reasoning


def _held_whole(src: ItemSource, parts: Parts, kind: str, reasoning: Mapping[str, Path]) -> tuple[str | int, ...]:
    """The path a whole call's id reads, where the call is held when it has none (see `Watched.held_whole`)."""
    call_id = (parts.tool_call or {}).get("id")
    if not src.synthesize_ids or call_id is None or call_id.steps is None:
        return ()
    return call_id.steps if _streams_nothing_else(parts, kind, reasoning) else ()


def _plain_call(
    parts: Parts, kind: str, streamed: set[str], reasoning: Mapping[str, Path]
) -> tuple[tuple[str | int, ...], ...]:
    """The paths of a call's id, name and arguments when they are all it renders (see `Watched.plain_calls`)."""
    call = parts.tool_call
    if kind not in streamed or call is None or set(call) != {"id", "name", "arguments"}:
        return ()
    read = tuple(found for name in ("id", "name", "arguments") if (found := call[name].steps) is not None)
    return read if len(read) == 3 and _streams_nothing_else(parts, kind, reasoning) else ()


def _some(table: dict[str, Any]) -> Mapping[str, Any]:
    """The entries that hold something (an empty read: the kind takes the general way)."""
    return MappingProxyType({kind: read for kind, read in table.items() if read})
