"""The `streaming` section compiled to Python: one generated function per event type.

Each function reads the event's type (and `by` case) inline, then runs the section's steps for it
(`every` first) as straight-line code: the `from`, `at` and `each` paths read inline, the walk down
the `into` path to where the value goes checked by type tests, and the merge written inline for each
place in the response the step can reach (its `combine` policy, watched item source and the fields
their templates read all known when the code is written; an index a step's `field` reads from the
event, `summary[summary_index]`, is read and tested in range there too). The common event (a text piece
appended in place, an object merged key by key into one that is there, an element added to a list)
runs with no lookup in the rule tables and no path built. Anything else (the first value at a place,
a type the fast test does not expect, an element that is not there yet) goes to the explain step:
the StreamTranslator's general merge (`_place`, `_merge`), which does the same and raises the
located ResponseError. `toolnexus explain --code PROVIDER` prints the generated source.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING as NO_DEFAULT
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from ..language.codegen import Namespace, indent
from ..language.ids import NO_IDS
from ..language.paths import MISSING, Getter, piped_hash, plain_hash, simple_steps
from ..language.templates import is_empty
from .format_rules import HEADER, builtin_chunks
from .stream_rules import (
    APPEND,
    ARGUMENTS,
    BY_POSITION,
    END,
    EXTEND,
    JSON,
    REASONING,
    TEXT,
    Dispatch,
    EventIndex,
    Join,
    Move,
    Node,
    Path,
    Section,
    Steps,
)

try:
    import orjson
except ImportError:  # the `fast` extra is optional: every event then takes the walk (`_Code.repeats`)
    orjson = None  # type: ignore[assignment]

_FIRST_KEY = re.compile(r"keys\((.+)\)\[0\]")  # the first key of an object: a one-key union's name
Pattern = tuple[str | int | None, ...]  # a place in the response: keys, fixed indexes, None for any other index
Run = Callable[[Any, dict[str, Any], int], bool]


class Text:
    """A string arriving in pieces: UTF-8 bytes appended in place (a long stream costs its text, no more).

    `placeholder` is the value a `json` field held before its first piece (kept when no JSON arrives). `said`:
    the watched element its pieces are said for and their role, looked up at the first piece the generated code
    emits and kept (`StreamTranslator._said`), so that each later piece asks nothing of the element table.
    """

    __slots__ = ("buf", "placeholder", "said")

    def __init__(self, first: str = "", placeholder: Any = MISSING) -> None:
        self.buf = bytearray(first.encode("utf-8", "surrogatepass"))
        self.placeholder = placeholder
        self.said: tuple[Any, str | None] | tuple[()] = ()

    def add(self, piece: str) -> None:  # the generated code writes it inline (`appended`)
        try:
            self.buf += piece.encode()  # the common case, without the error handler's lookup
        except UnicodeEncodeError:  # a lone surrogate, kept as it came
            self.buf += piece.encode("utf-8", "surrogatepass")

    def value(self) -> str:
        return self.buf.decode("utf-8", "surrogatepass")

    def __deepcopy__(self, memo: dict[int, Any]) -> Text:
        """The text so far (`StreamTranslator.partial` copies the response): `said` stays this stream's."""
        twin = Text(placeholder=copy.deepcopy(self.placeholder, memo))
        twin.buf += self.buf
        return twin


@dataclass(slots=True)
class Element:
    """What the stream knows about one element of a watched source."""

    roles: Mapping[Path, str]
    call: int | None = None  # its tool-call index, when it is a tool call
    join: str = ""  # between the pieces of two parts of a reasoning path read at any index (`summary[].text`)
    part: Path | None = None  # the part the last reasoning piece went to (a new one is joined first)


WHOLE = Element(MappingProxyType({}))  # a held whole call's element: none of its fields streams


@dataclass(slots=True, kw_only=True)
class Call(Element):
    """A tool call the stream has opened (a held whole call has none: the final translation gives it), which is also
    the element it opened from: one object per call, not two (the collector walks every object a stream keeps, and
    a stream of whole calls keeps thousands)."""

    id: str
    name: str
    sent_arguments: bool
    opened: dict[str, Any] | None = None  # a held call's first delta, its id filled in at the end
    arguments: str | None = None  # the arguments a call of plain reads opened with (`StreamTranslator._given`)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_NUMBERS = frozenset({int, float, bool})
_VALUES = frozenset({str, int, float, bool})  # a merged value of these types replaces the one there
UTF8 = '"utf-8", "surrogatepass"'  # how Text holds its pieces


def appended(text: str, piece: str) -> list[str]:
    """Lines adding a piece to a Text in place, as `Text.add` does."""
    return [
        "try:",
        f"    {text}.buf += {piece}.encode()",
        "except UnicodeEncodeError:",
        f"    {text}.buf += {piece}.encode({UTF8})",
    ]


def plain_merge(parent: Any, key: str | int, value: Any) -> None:
    """Merge a value into parent[key] where no combine policy and no watched source lies at or below:
    objects key by key, null never replaces a value, anything else replaces."""
    current = parent.get(key, MISSING) if type(parent) is dict else parent[key]
    if type(value) is dict and type(current) is dict:
        for k, v in value.items():
            if v is None:
                if k not in current:
                    current[k] = None
            elif type(v) in _SCALARS:
                current[k] = v  # the same value put again changes nothing
            else:
                plain_merge(current, k, v)
    elif value is not None:
        parent[key] = value
    elif current is MISSING:
        parent[key] = None


def joins(last: Any, element: Any, join: Join) -> bool:
    """Whether an arriving element continues the previous one (a text split across events)."""
    if not (isinstance(last, dict) and isinstance(element, dict)):
        return False
    if type(element.get(join.field)) is not str or not isinstance(last.get(join.field), (str, Text)):
        return False
    if any(last.get(k) != element.get(k) for k in join.same):
        return False
    return all(k == join.field or k not in last or last[k] == v for k, v in element.items())


_HEADER = {name: f"s._header[{i}]" for i, name in enumerate(HEADER)}


RECHECK = "s._recheck = True"  # a write that may reach an opened call (`_Code.calls_list`)
_PIECES = {"text": "text", "reasoning": "reasoning", "tool_call": "arguments"}  # the StreamTranslator's `_pieces`


def _built(cls: type, var: str, given: dict[str, str]) -> list[str]:
    """Statements making `var` an instance of the slots dataclass `cls` from the field expressions `given` (the
    others their defaults), as its `__init__` would: by `object.__new__` and a store per slot, without calling the
    class (which re-enters the interpreter for `__init__`). A call that opens in each event builds two of them."""
    stores = []
    for f in fields(cls):
        expr = given.get(f.name)
        if expr is None:  # a constant default, written as its repr (no factory: not a shared mutable)
            assert f.default is not NO_DEFAULT and f.default_factory is NO_DEFAULT, f"{cls.__name__}.{f.name}"
            expr = repr(f.default)
        stores.append(f"{var}.{f.name} = {expr}")
    return [f"{var} = NEW({cls.__name__})", *stores]


def _written(kind: str, names: dict[str, str], write: str = "", texts: frozenset[str] = frozenset()) -> str:
    """A statement writing a piece's chunk (or a call's opening, `write` naming its writer): its template's display
    inline once the header is read (the normal form's `stream` section, formats/openai.yaml), else by the
    StreamTranslator's `_pieces` (which hold it to the end of the event; writing a format's events,
    `StreamTranslator.into`, once they stop waiting, the events' own handlers: no chunk is built) or its `_write`."""
    display = builtin_chunks().display(kind, {**_HEADER, **names}, texts)
    scope = "{" + ", ".join(f"{name!r}: {expr}" for name, expr in names.items()) + "}"
    later = f"s._write({write or f'CHUNKS[{kind!r}]'}, {scope})"  # every mode through `_write`
    if display is None:
        return later
    method = _PIECES.get(kind)
    return f"s._out.append({display}) if s._head else " + (
        later if method is None else f"s._pieces.{method}(s._out, {', '.join(names.values())})"
    )


@dataclass(frozen=True, kw_only=True)
class Streaming(Section):
    """A compiled `streaming` section: its tables and the code written from them, whole when built (`compiled`)."""

    code: str  # the generated source, shown by `toolnexus explain --code`
    run: Run  # its entry: one event's steps (what `StreamTranslator.feed` runs)
    walks: int  # the walks to a step's container the code caches (`StreamTranslator._walks`)
    checked: bool  # the assembled response needs no check of its own (`as_checked`)
    # the lists whose calls the final translation may take as the stream opened them (`Watched.taken_calls`): a
    # write there or above, once a call is open, has them compared (`StreamTranslator._given`)
    calls_lists: tuple[Path, ...]


def compiled(section: Section | None) -> Streaming | None:
    """The section with its generated code and entry function."""
    if section is None:
        return None
    code = _Code(section)
    text = code.module()
    exec(compile(text, f"<streaming {section.provider}>", "exec"), code.names)
    lists = tuple(w.steps for w in section.watched if w.taken_calls is not None)
    return Streaming(**vars(section), code=text, run=code.names["run"], walks=code.walks, checked=as_checked(section),
                     calls_lists=lists)  # fmt: skip


def as_checked(section: Section) -> bool:
    """Whether the response a stream of this section assembles is as checked as its events were: it holds only
    values `jsonsafe.loads` returned (each event's parse refuses what the answer's check refuses) and the rules'
    `start`, nested no deeper than in their event, so the final translation need not check it again (on a stream
    of thousands of whole calls that check, one encoding of the whole answer, costs a sixth of the stream). True
    when every step reads its value by plain paths and writes it at a place no deeper than it read it, and no
    `combine` row parses JSON text (`json`) or folds pieces into an object (`continued`); an `extend` row that
    adds an object as one element (a level deeper) says so as it does (`StreamTranslator._wrapped`)."""
    moves = [*section.every]
    for handler in section.events.values():
        cases = handler.cases.values() if isinstance(handler, Dispatch) else (handler,)
        moves += [step for steps in cases for step in steps]
    for step in moves:
        if not isinstance(step, Move):
            continue  # `end`
        each = simple_steps(step.each_path) if step.each is not None else []
        source = simple_steps(step.from_path)
        if each is None or source is None:
            return False
        read = len(each) + (step.each is not None) + len(source)
        if len(step.into) + (step.at is not None) + len(step.field) > read:
            return False
    return _plain_rows(section.combine)


def _plain_rows(node: Node) -> bool:
    """No `json` or `continued` row at or below a `combine` node."""
    if node.policy is JSON or node.continued is not None:
        return False
    return all(_plain_rows(child) for child in node.children.values())


class _Code(Namespace):
    """The generated module of one streaming section, written line by line."""

    def __init__(self, rules: Section) -> None:
        self.r = rules
        super().__init__({"MISSING": MISSING, "Text": Text, "joins": joins, "plain": plain_merge, "NO_IDS": NO_IDS,
                          "NUMBERS": _NUMBERS,
                          "VALUES": _VALUES, "Element": Element, "Call": Call, "NEW": object.__new__, "WHOLE": WHOLE,
                          "is_empty": is_empty, "DUMPS": None if orjson is None else orjson.dumps,
                          "CHUNKS": builtin_chunks().pieces, "OPEN": builtin_chunks().open})  # fmt: skip
        self.hashed: list[tuple[str, str, type | None]] | None = None  # the value of known keys of the step
        # being written (`place`, which sets it for each step)
        self.known: dict[tuple[str | int, ...], str] = {}  # event paths read in the function being written
        self.case: tuple[str, str] | None = None  # in a `by` case's branch: the object path whose first key `by`
        # names (`keys(<path>)[0]`), and the case (that key)
        self.first: str | None = None  # the key the step's value is known to start with (`place`, from `case`)
        self.walks = 0  # the walks cached so far (`walk`): the length of `s._walks`

    # ------------------------------------------------------------ places in the response

    def node(self, pattern: Pattern) -> Node | None:
        node: Node | None = self.r.combine
        for step in pattern:
            if node is None:
                return None
            node = node.children.get(None) if step is None else node.child(step)
        return node

    def calls_list(self, pattern: Pattern) -> bool:
        """Whether `pattern` is the list of a watched source whose calls open by plain reads: the final translation
        takes them as opened unless a write reached the list or an element in it since (`StreamTranslator._given`),
        which the code writing there says (`RECHECK`)."""
        return any(w.steps == pattern and w.taken_calls is not None for w in self.r.watched)

    def interesting(self, pattern: Pattern) -> bool:
        """Whether merging here can do more than a plain merge: a combine policy at or below, or a watched
        source (or one of its elements) at or below."""
        if self.node(pattern) is not None:
            return True
        for w in self.r.watched:
            if len(pattern) <= len(w.steps) and all(a == b for a, b in zip(pattern, w.steps, strict=False)):
                return True
            if w.src.each and len(pattern) == len(w.steps) + 1 and pattern[:-1] == w.steps:
                return True
        return False

    def _child_steps(self, pattern: Pattern, kind: type) -> list[Any]:
        """The `kind` steps (str: keys, int: indexes) just below a place: its node's, then the watched paths'."""
        node = self.node(pattern)
        found = [k for k in (node.children if node else {}) if type(k) is kind]
        n = len(pattern)
        found += [
            w.steps[n]
            for w in self.r.watched
            if len(w.steps) > n and w.steps[:n] == pattern and type(w.steps[n]) is kind
        ]
        return found

    def key_children(self, pattern: Pattern) -> list[str]:
        return [k for k in dict.fromkeys(self._child_steps(pattern, str)) if self.interesting((*pattern, k))]

    def fixed_indexes(self, pattern: Pattern) -> list[int]:
        """The indexes of a list place that differ from any other index (a watched path or a combine row names them)."""
        return sorted(set(self._child_steps(pattern, int)))

    def path_expr(self, pattern: Pattern, at: str, start: int = 0) -> str:
        """The concrete path of a place (from its step `start`), as an expression (its indexes from the tuple `at`)."""
        parts, j = [], 0
        for step in pattern:
            if type(step) is str:
                parts.append(repr(step))
            else:
                parts.append(f"{at}[{j}]")
                j += 1
        return "(" + "".join(f"{p}, " for p in parts[start:]) + ")"

    def above_expr(self, pattern: Pattern, at: str) -> str:
        return self.path_expr(pattern[:-1], at) if pattern else "()"

    # ------------------------------------------------------------ merging at a place

    def merge(self, pattern: Pattern, p: str, k: str, v: str, at: str, d: int) -> list[str]:
        """Lines merging `v` into p[k] at `pattern`, written inline (names of depth `d`): a plain merge where
        nothing at or below is combined or watched, else the place's own code."""
        if not self.interesting(pattern):
            return [f"plain({p}, {k}, {v})"]
        lines = [RECHECK] if self.calls_list(pattern) else []  # it may write where calls were opened from
        if not at.isidentifier():
            lines.append(f"at{d} = {at}")
            at = f"at{d}"
        c = f"cur{d}"
        if pattern and type(pattern[-1]) is not str:
            lines.append(f"{c} = {p}[{k}]")  # an element the caller found in range
        else:
            lines.append(f"{c} = {p}.get({k}, MISSING)")
        general = self.general(pattern, p, k, v, at)
        node = self.node(pattern)
        if node is not None and node.continued is not None:  # held elements: the translator's own `_extend`
            return [general]
        policy = node.policy if node is not None else None
        if policy is APPEND or policy is JSON:
            emit = self.fragment(pattern, v, c, at, d)
            lines += [f"if type({v}) is str and type({c}) is Text:", *indent(appended(c, v), 4)]
            lines += [f"    if {v}:", *indent(emit, 8)] if emit else []
        elif policy is EXTEND:
            assert node is not None
            x = f"x{d}"
            lines += [f"if type({c}) is list:", f"    for {x} in ({v} if type({v}) is list else s._wrapped({v})):"]
            if node.join is not None:
                lines += indent(self.joined(pattern, node.join, p, k, c, x, at, d), 8)
            lines += indent([f"{c}.append({x})", *self.placed(pattern, x, f"len({c}) - 1", at, d)], 8)
        elif policy is BY_POSITION:
            i, x = f"i{d}", f"x{d}"
            lines += [f"if type({c}) is list and type({v}) is list:", f"    for {i}, {x} in enumerate({v}):"]
            lines += [
                f"        if {i} < len({c}):",
                *indent(self.element(pattern, c, i, x, f"{at} + ({i},)", d + 1), 12),
            ]
            lines += ["        else:", f"            {c}.append({x})"]
            lines.append(f"            s._placed({self.path_expr(pattern, at)} + ({i},), {x})")
        else:
            lines += [
                f"if type({v}) is dict and type({c}) is dict:",
                *indent(self.dict_merge(pattern, frozenset(), c, v, at, d), 4),
            ]
            lines += [f"elif {v} is None and {c} is not MISSING:", "    pass"]
        return [*lines, "else:", f"    {general}"]

    def general(self, pattern: Pattern, p: str, k: str, v: str, at: str, omit: frozenset[str] = frozenset()) -> str:
        """The explain step: the translator's general merge, which does the same and says what is wrong."""
        node = self.name(self.node(pattern), "node")
        extra = f", {self.name(omit, 'omit')}" if omit else ""
        return f"s._merge({p}, {k}, {v}, {node}, {self.above_expr(pattern, at)}{extra})"

    def element(self, pattern: Pattern, p: str, i: str, x: str, at: str, d: int) -> list[str]:
        """Merge into an element of the list at `pattern`, by its index's place."""
        fixed = self.fixed_indexes(pattern)
        lines = []
        for n, index in enumerate(fixed):
            lines += [
                f"{'if' if n == 0 else 'elif'} {i} == {index}:",
                *indent(self.merge((*pattern, index), p, i, x, at, d), 4),
            ]
        last = self.merge((*pattern, None), p, i, x, at, d)
        return [*lines, "else:", *indent(last, 4)] if fixed else last

    def dict_merge(self, pattern: Pattern, omit: frozenset[str], c: str, v: str, at: str, d: int) -> list[str]:
        """Merge the object `v` into the object `c` key by key, in the event's order: a key the rules name at this
        place (a combine policy or a watched source at or below it; `omit`: left out) by its place's code, found
        by one set test (no chain of comparisons for the provider's other keys); any other key by the merge's
        rules, its type read once: a plain value replaces (the same value put again changes nothing), a null
        never does, an object merges key by key."""
        kk, vv = f"kk{d}", f"vv{d}"
        if d == 0 and self.hashed is not None:  # the step's value, its keys known: straight-line
            return self.hashed_merge(pattern, omit, c, self.hashed, at)
        branches = []
        for key in self.key_children(pattern):
            if key in omit:
                continue
            branches.append((key, self.named(pattern, key, c, kk, vv, at, d)))
        if d == 0 and self.first is not None:  # the key the case says comes first: tested first
            branches.sort(key=lambda branch: branch[0] != self.first)
        return self.key_loop(branches, omit, c, v, d)

    def hashed_merge(
        self, pattern: Pattern, omit: frozenset[str], c: str, hashed: list[tuple[str, str, type | None]], at: str
    ) -> list[str]:
        """Merge the step's object of known keys (`place`) into `c`, one key after the other in its order: a key
        the rules name at this place by its code, a literal by the merge's rules written for its type, any
        other value by the plain merge."""
        named = set(self.key_children(pattern))
        lines: list[str] = []
        for name, value, literal in hashed:
            if name in omit:
                continue
            if name in named:
                lines += self.named(pattern, name, c, repr(name), value, at, 0)
            elif literal is type(None):  # a null never replaces
                lines.append(f"if {name!r} not in {c}: {c}[{name!r}] = None")
            elif literal is not None:
                lines.append(f"{c}[{name!r}] = {value}")
            else:
                lines.append(f"plain({c}, {name!r}, {value})")
        return lines

    def named(self, pattern: Pattern, key: str, c: str, k: str, value: str, at: str, d: int) -> list[str]:
        """Merge a key the rules name at this place (`k`: an expression of it) by its place's code."""
        child = self.merge((*pattern, key), c, k, value, at, d + 1)
        node = self.node((*pattern, key))
        if node is None or node.policy is None:  # a null merges as a plain one does
            child = [f"if {value} is None:", f"    if {k} not in {c}: {c}[{k}] = None", "else:", *indent(child, 4)]
        return child

    def key_loop(
        self, branches: list[tuple[str, list[str]]], omit: frozenset[str], c: str, v: str, d: int
    ) -> list[str]:
        """The key loop of `dict_merge`: named keys by their code (`branches`), omitted ones skipped, others plain."""
        kk, vv, sub, k2, v2 = (f"{name}{d}" for name in ("kk", "vv", "sub", "k", "v"))
        named = sorted({key for key, _ in branches} | omit)
        lines = [f"for {kk}, {vv} in {v}.items():"]
        if named:
            test = f"{kk} == {named[0]!r}" if len(named) == 1 else f"{kk} in {{{', '.join(map(repr, named))}}}"
            inner: list[str] = []
            if len(named) == 1 and branches:  # the one key the test names: its code, with no second test
                inner = branches[0][1]
            for n, (key, child) in enumerate(branches if not inner else ()):
                inner += [f"{'if' if n == 0 else 'elif'} {kk} == {key!r}:", *indent(child, 4)]
            lines += [f"    if {test}:", *indent(inner, 8), "        continue"]
        return [
            *lines,
            f"    if type({vv}) in VALUES:",  # a text, number or boolean: one set test
            f"        {c}[{kk}] = {vv}",
            f"    elif {vv} is None:",
            f"        if {kk} not in {c}: {c}[{kk}] = None",
            # usage counts: their values inline; an object equal to the one there (said again) replaces in one update
            f"    elif type({vv}) is dict and type({sub} := {c}.get({kk})) is dict:",
            f"        if {vv} != {sub}:",
            f"            for {k2}, {v2} in {vv}.items():",
            f"                if type({v2}) in VALUES: {sub}[{k2}] = {v2}",
            f"                elif {v2} is not None or {k2} not in {sub}: plain({sub}, {k2}, {v2})",
            f"        else: {sub}.update({vv})",  # equal: its values still replace (-0.0 == 0.0, written apart)
            "    else:",
            f"        plain({c}, {kk}, {vv})",
        ]

    def joined(self, pattern: Pattern, join: Join, p: str, k: str, c: str, x: str, at: str, d: int) -> list[str]:
        """`join`: an element continuing the last one adds its text in place; the first join (the text not yet
        held in pieces) goes the general way."""
        j, f = self.name(join, "join"), join.field
        last, t, piece, ix, ok, kk, vv = (f"{name}{d}" for name in ("last", "t", "piece", "ix", "ok", "kk", "vv"))
        same = "".join(f" and {last}.get({key!r}) == {x}.get({key!r})" for key in join.same)
        # its keys the field and the `same` ones, those held by both (their values agree): nothing to check or add
        alike = "".join(f" and {key!r} in {x} and {key!r} in {last}" for key in join.same)
        others = f"len({x}) > 1" + (f" and not (len({x}) == {len(join.same) + 1}{alike})" if join.same else "")
        emit = self.fragment((*pattern, None, f), piece, t, ix, d, last=f"len({c}) - 1")
        tuple_used = any(ix in line for line in emit)
        node = self.name(self.node(pattern), "node")
        return [  # only an element with text in the join field can continue the last one
            f"if {c} and type({x}) is dict and type({piece} := {x}.get({f!r})) is str:",
            f"    if type({last} := {c}[-1]) is dict and type({t} := {last}.get({f!r})) is Text{same}:",
            f"        {ok} = True",
            f"        if {others}:  # its other keys agree with the last element's; those only it holds are added",
            f"            for {kk}, {vv} in {x}.items():",
            f"                if {kk} != {f!r} and {kk} in {last} and {last}[{kk}] != {vv}:",
            f"                    {ok} = False",
            "                    break",
            "            else:",
            f"                for {kk}, {vv} in {x}.items():",
            f"                    if {kk} not in {last}: {last}[{kk}] = {vv}",
            f"        if {ok}:",
            *indent(appended(t, piece), 12),
            *(
                [
                    f"            if {piece}:",
                    *([f"                {ix} = {at} + (len({c}) - 1,)"] if tuple_used else []),
                    *indent(emit, 16),
                ]
                if emit
                else []
            ),
            "            continue",
            f"    if joins({c}[-1], {x}, {j}):",
            f"        s._extend({p}, {k}, {c}, [{x}], {node}, {self.above_expr(pattern, at)})",
            "        continue",
        ]

    def placed(self, pattern: Pattern, x: str, index: str, at: str, d: int) -> list[str]:
        """After an element was added to the list at `pattern`: start it if a watched source reads the list."""
        deeper = any(len(w.steps) > len(pattern) and w.steps[: len(pattern)] == pattern for w in self.r.watched)
        if deeper:
            return [f"s._placed({self.path_expr(pattern, at)} + ({index},), {x})"]
        for w_index, w in enumerate(self.r.watched):
            if w.src.each and w.steps == pattern:
                start = f"start{w_index}(s, " if self.starts(w_index) else f"s._start({w_index}, "
                held = [] if index.isidentifier() else [f"ix{d} = {index}"]
                index = index if index.isidentifier() else f"ix{d}"
                return [*held, f"if {index} not in s._elements[{w_index}]: {start}{index}, {x})"]
        return []

    def starts(self, w_index: int) -> bool:
        """Whether a watched source's elements start by a generated function (`start_code`)."""
        return bool(self.plain_start(w_index) or self.held_kinds(w_index))

    def plain_start(self, w_index: int) -> bool:
        """A source of one kind whose elements are tool calls of plain reads (`Watched.plain_calls`)."""
        w = self.r.watched[w_index]
        src = w.src
        one_kind = src.kind is None and not src.kind_by_key and src.template is not None
        return one_kind and "" in w.plain_calls and "" not in w.held_whole

    def held_kinds(self, w_index: int) -> list[str]:
        """The kinds, in the order the element's kind is decided, up to the last one held whole when it has no
        id (`Watched.held_whole`): the source's single kind, or its `kind_by_key` kinds (a kind read at a path
        takes the general way)."""
        w = self.r.watched[w_index]
        src = w.src
        if not w.held_whole:
            return []
        if src.kind is None and not src.kind_by_key:
            return [""] if "" in w.held_whole and src.template is not None else []
        if not src.kind_by_key:
            return []
        kinds = list(src.kinds)
        held = [n for n, kind in enumerate(kinds) if kind in w.held_whole and src.kinds[kind] is not None]
        return kinds[: held[-1] + 1] if held else []

    def start_code(self, w_index: int) -> list[str]:
        if self.plain_start(w_index):
            return self.plain_start_code(w_index)
        return self.held_start_code(w_index)

    def plain_start_code(self, w_index: int) -> list[str]:
        """A source of one kind whose elements are tool calls of plain reads (`Watched.plain_calls`): each starts
        by reading its id, name and arguments inline and opening the call in one delta, as `_start` and
        `_open_call` do without rendering; an element without an id or a name goes to `_start`, which renders it
        and says what is wrong."""
        w = self.r.watched[w_index]
        read_id, read_name, read_arguments = w.plain_calls[""]
        roles = self.name(dict(w.roles.get("", {})), "roles")  # a dict, read at every piece: never written
        restore = []
        ids = self.r.outbound.tool_call_ids
        if ids is not None:  # the caller's own id, as the whole answer restores it (a rewritten one: only from the map)
            given = "if s.id_map: " if ids.rewrite is not None else ""
            restore = [f"        {given}cid = s._ids.restore(cid, s.id_map or NO_IDS)"]
        scope = {"index": "k", "id": "cid", "name": "nm", "extra_content": "None", "piece": "a"}
        # the call, which is its element too (`Call`); `arguments`: what `StreamTranslator._given` compares
        call = {"roles": roles, "call": "k", "id": "cid", "name": "nm", "sent_arguments": "a != ''", "arguments": "a"}
        opened = "{" + ", ".join(f"{name!r}: {expr}" for name, expr in scope.items()) + "}"
        held: dict[tuple[str | int, ...], str] = {}  # a container two reads share (the call's `function`): read once
        (id_tests, cid), (name_tests, nm), (arguments_tests, a) = (
            _chained(path, held) for path in (read_id, read_name, read_arguments)
        )
        test = dict.fromkeys([*id_tests, f"type(cid := {cid}) is str", "cid", *name_tests, f"type(nm := {nm}) is str",
                              "nm"])  # fmt: skip
        more = [t for t in arguments_tests if t not in test]  # read if they pass; else no arguments
        read = f" if {' and '.join(more)} else MISSING" if more else ""
        return [
            f"def start{w_index}(s, i, x):  # {w.src.path}[i]: a tool call of plain reads",
            f"    if {' and '.join(test)}:",
            f"        if type(a := {a}{read}) is not str: a = ''; s._recheck = True  # the answer holds no text read",
            "        s.started += 1",
            "        calls = s._calls",
            "        k = len(calls)",
            *restore,
            *indent(_built(Call, "call", call), 8),
            f"        s._elements[{w_index}][i] = call",
            "        calls.append(call)",
            f"        if s._held: s._held.append((OPEN, {opened}))",
            "        else: " + _written("open", scope, "OPEN", frozenset({"piece"})),  # `a`: a string
            "    else:",
            f"        s._start({w_index}, i, x)",
        ]

    def held_start_code(self, w_index: int) -> list[str]:
        """A source whose calls of a kind are held whole while they have no id (`Watched.held_whole`): such an
        element is held by its kind's key and id read inline (no template picked, nothing rendered: the final
        translation gives it, see `StreamTranslator.finish`); any other goes to `_start`."""
        w = self.r.watched[w_index]
        lines = [f"def start{w_index}(s, i, x):  # {w.src.path}[i]: a call held whole while it has no id"]
        body: list[str] = []
        for n, kind in enumerate(self.held_kinds(w_index)):
            steps = w.held_whole.get(kind, ())
            keyed = kind != "" and steps[:1] == (kind,)  # read from the kind's value, which the test below reads
            held = ["s.started += 1", f"s._elements[{w_index}][i] = WHOLE", "s._held.append(len(s._calls))",
                    "s._calls.append(None)", "return"]  # fmt: skip
            hold = [  # once a call is held every call after it is (its id is not read)
                "if s._held:", *indent(held, 4),
                *(_walk_lines(steps[1:], "v", "cid") if keyed else _walk_lines(steps, "x", "cid")),
                "if cid is MISSING or not cid:", *indent(held, 4),
            ] if kind in w.held_whole else ["pass"]  # fmt: skip
            if kind == "":  # the source's one kind
                body = hold
                break
            test = f"(v := x.get({kind!r})) is not None and v is not False"  # as `kind_by_key` decides
            body += [f"{'if' if n == 0 else 'elif'} {test}:", *indent(hold, 4)]
        lines += ["    if type(x) is dict:", *indent(body, 8), f"    s._start({w_index}, i, x)"]
        return lines

    def fragment(self, pattern: Pattern, piece: str, kept: str, at: str, d: int, last: str | None = None) -> list[str]:
        """Lines emitting a text piece appended at `pattern` to the Text `kept`, by the role the watched element's
        template gives it: the element and role an earlier piece found and `kept` holds (`Text.said`), else looked
        up (`last`: an expression of the last index of `at`, read directly rather than from the tuple)."""
        r = self.r
        for n in r.route_lengths:
            prefix = pattern[:n]
            w_index = r.route.get(prefix, -1) if None not in prefix else -1
            if w_index >= 0:
                break
        else:
            return []
        if r.watched[w_index].src.each:
            if len(pattern) <= n + 1:
                return []
            position = sum(1 for step in pattern[:n] if type(step) is not str)
            indexes = sum(1 for step in pattern if type(step) is not str)
            element = last if last is not None and position == indexes - 1 else f"{at}[{position}]"
            start = n + 1
        else:
            element, start = "0", n
        field = pattern[start:]
        info, role, call = f"info{d}", f"role{d}", f"call{d}"
        if None in field:  # a part at any index (`summary[].text`): its role is the one of `[]` unless one names it
            w = r.watched[w_index]
            if any(_names_a_part(path, field) for roles in w.roles.values() for path in roles):
                return [f"s._fragment({self.path_expr(pattern, at)}, {piece})"]
            part = self.path_expr(pattern, at, start)
            return [  # a reasoning piece of the part the last one went to: inline (no join between)
                f"if ({info} := s._elements[{w_index}].get({element})) is not None and "
                f"({role} := {info}.roles.get({field!r})) is not None:",
                f"    if {role} == {REASONING!r} and {info}.part == {part}:",
                "        " + _written("reasoning", {"piece": piece}),
                "    else:",
                f"        s._emit({info}, {role}, {piece}, {part})",
            ]
        text = f"s._text_sent += len({piece}); " + _written("text", {"piece": piece})
        arguments = [  # as _emit does, inline
            f"s._calls[{call}].sent_arguments = True",
            f"if s._held: s._held.append((CHUNKS['tool_call'], {{'index': {call}, 'piece': {piece}}}))",
            "else: " + _written("tool_call", {"index": call, "piece": piece}),
        ]
        got = f"{info}, {role} = {kept}.said or s._said({kept}, {w_index}, {element}, {field!r})"  # none: None, None
        w = r.watched[w_index]
        if w.src.kind is None and not w.src.kind_by_key and "" not in w.held_whole:  # one kind: its role known here
            known = w.roles.get("", {}).get(field)
            if known == TEXT:
                return [got, f"if {info} is not None: {text}"]
            if known == ARGUMENTS:
                return [got, f"if {info} is not None and ({call} := {info}.call) is not None:", *indent(arguments, 4)]
            return [got, f"if {info} is not None: s._emit({info}, {known!r}, {piece})"] if known else []
        # several kinds: the role the element's kind gives the field, tested only against the roles some kind of
        # the source gives it (decided here: an arguments piece is not first compared with text and reasoning); a
        # reasoning piece of the same part as the last one (the field is the part: no join between) inline
        reasoning = _written("reasoning", {"piece": piece})
        given = {fields[field] for fields in w.roles.values() if field in fields}
        if not given:
            return []
        chain = [
            (TEXT, f"{role} == {TEXT!r}", [text]),
            (REASONING, f"{role} == {REASONING!r} and {info}.part == ()", [reasoning]),
            (ARGUMENTS, f"{role} == {ARGUMENTS!r} and ({call} := {info}.call) is not None", arguments),
        ]
        tests = [(test, body) for kind, test, body in chain if kind in given]
        lines = [got]
        for n, (test, body) in enumerate(tests):
            lines += [f"{'if' if n == 0 else 'elif'} {test}:", *indent(body, 4)]
        return [*lines, f"{'elif' if tests else 'if'} {role} is not None: s._emit({info}, {role}, {piece})"]

    # ------------------------------------------------------------ steps and events

    def read(self, path: str, getter: Getter, target: str, scope: str) -> list[str]:
        """Lines leaving the value at `path` in the event (or MISSING) in `target`: a plain path inline, its
        prefixes read once per function (`self.known`), the name of a one-key union (`keys(<plain path>)[0]`, an
        event's type) as the first key of the object read inline, any other path by its compiled getter."""
        steps = simple_steps(path)
        union = _FIRST_KEY.fullmatch(path) if steps is None else None
        chain = simple_steps(union[1]) if union is not None else None
        if chain is not None:  # anything but an object: as jmespath reads it
            fallback = self.name(getter, "g")
            if not chain and scope == "e":  # the event itself: an object (feed checked it)
                return [f"{target} = next(iter(e)) if e else {fallback}(e)"]
            lines, source = self.read_steps(chain, scope)
            first = f"next(iter({source})) if type({source}) is dict and {source} else {fallback}({scope})"
            return [*lines, f"{target} = {first}"]
        if steps is None:
            return [f"{target} = {self.name(getter, 'g')}({scope})"]
        lines, source = self.read_steps(steps, scope)
        return [*lines, f"{target} = {source}"]

    def read_steps(self, steps: list[str | int], scope: str) -> tuple[list[str], str]:
        """Lines reading the plain chain `steps` below `scope`, and the name that holds its value (or MISSING)."""
        lines: list[str] = []
        source = scope
        for n, step in enumerate(steps):
            prefix = tuple(steps[: n + 1])
            known = self.known.get(prefix) if scope == "e" else None
            if known is None:
                known = self.fresh("r")
                if scope == "e":  # read once in this function; in an element of a list (`each`), each time
                    self.known[prefix] = known
                if isinstance(step, str) and source == "e":  # the event: an object (feed checked it)
                    lines.append(f"{known} = e.get({step!r}, MISSING)")
                elif isinstance(step, str):
                    lines.append(f"{known} = {source}.get({step!r}, MISSING) if type({source}) is dict else MISSING")
                else:  # an index from the end (negative) also bounded below; the first: any element
                    low = f"-len({source}) <= {step} < len({source})" if step < 0 else f"{step} < len({source})"
                    held = f"type({source}) is list and {low if step else source}"
                    lines.append(f"{known} = {source}[{step}] if {held} else MISSING")
            source = known
        return lines, source

    def steps(self, steps: Steps, label: str) -> list[str]:
        lines: list[str] = []
        for i, step in enumerate(steps):
            if step == END:
                lines += [f"# {label}[{i}]: end", "s.ended = True"]
                continue
            assert isinstance(step, Move)
            lines.append(f"# {label}[{i}]")
            lines += self.move(step)
        return lines

    def move(self, step: Move) -> list[str]:
        s = self.name(step, "step")
        if step.each is None:
            return self.place(step, s, "e", "None")
        return [
            *self.read(step.each_path, step.each, "xs", "e"),
            "if type(xs) is list:",
            "    for i, x in enumerate(xs):",
            *indent(self.place(step, s, "x", "i"), 8),
            "elif xs is not MISSING and xs is not None:",
            f"    s._move({s}, e, n)",
        ]

    def place(self, step: Move, s: str, scope: str, i: str) -> list[str]:
        """One step's value merged into the response: the walk down `into` by type tests, else the general way.
        A value that is an object of the event's values under names the rules give (`from: "{text: delta}"`) is
        merged key by key as written (`self.hashed`), its object built only for the general way."""
        hashed = plain_hash(step.from_path) if scope == "e" else None
        piped = piped_hash(step.from_path) if scope == "e" and hashed is None else None
        self.hashed = None
        self.first = self.case[1] if self.case is not None and scope == "e" and step.from_path == self.case[0] else None
        if piped is not None:  # the chain read as the event's other reads are, then each value from it
            lines, chained = self.read_steps(piped[0], scope)
            lines += [f"if {chained} is MISSING or {chained} is None: v = MISSING", "else:"]
            self.hashed = []
            for n, (name, getter) in enumerate(piped[1].items()):
                value = f"hv{n}"
                read = self.name(getter, "g")
                lines += [f"    {value} = {read}({chained})", f"    if {value} is MISSING: {value} = None"]
                self.hashed.append((name, value, None))
            lines.append("    v = {" + ", ".join(f"{name!r}: {value}" for name, value, _ in self.hashed) + "}")
        elif hashed is None:
            lines = self.read(step.from_path, step.source, "v", scope)
        else:
            lines, self.hashed = [], []
            for n, (name, (steps, literal)) in enumerate(hashed.items()):
                value = f"hv{n}"
                if steps is None:
                    lines.append(f"{value} = {literal!r}")
                else:  # jmespath's null for what is not there
                    lines += [*_walk_lines(steps, "e", value), f"if {value} is MISSING: {value} = None"]
                self.hashed.append((name, value, type(literal) if steps is None else None))
            lines.append("v = {" + ", ".join(f"{name!r}: {value}" for name, value, _ in self.hashed) + "}")
        tests: list[str] = []
        into = step.into
        parent = "s._holder"
        key = '""'
        if into:
            tests.append("type(q0 := s._holder['']) is dict")
            parent = _descend(into, [repr(stp) for stp in into], "q", tests)
            key = repr(into[-1])
        fixed_at = tuple(stp for stp in into if type(stp) is int)
        at = "(" + "".join(f"{x}, " for x in fixed_at) + ")"
        body: list[str]
        if step.at is None:
            body = self.leaf(into, parent, key, at, step)
        else:
            lines += self.read(step.at_path, step.at, "ix", scope)
            for k, given in enumerate(step.field):  # an index the event gives: read here, tested in `field`
                if isinstance(given, EventIndex):
                    lines += self.read(given.expr, given.getter, f"ei{k}", scope)
            lst = f"{parent}.get({key}, MISSING)" if key != '""' else "s._holder['']"
            tests += [f"type(lq := {lst}) is list", "type(ix) is int"]
            at = f"({''.join(f'{x}, ' for x in fixed_at)}ix,)"
            body = []
            fixed = self.fixed_indexes(into)
            general = f"s._place({s}, {scope}, n, {i})"
            cases = [(f"ix == {index}", (*into, index)) for index in fixed] + [("", (*into, None))]
            for n, (test, element) in enumerate(cases):
                inner = self.field(step, element, at, general)
                if len(cases) == 1:
                    body = inner
                else:
                    body += [f"{'if' if n == 0 else 'elif'} {test}:" if test else "else:", *indent(inner, 4)]
            if self.calls_list(into):  # into an element a call may have opened from (a new one: `added`)
                body.insert(0, RECHECK)
            body = ["if 0 <= ix < len(lq):", *indent(body, 4), *self.added(step, at), "else:", f"    {general}"]
        if any(self.calls_list(into[:n]) for n in range(len(into))):  # into an element or below it
            body.insert(0, RECHECK)
        if into or step.at is not None:
            walk = self.walk(into, step.at is not None, parent, tests)
            body = [*walk, f"if {' and '.join(tests)}:", *indent(body, 4),
                    "else:", f"    s._place({s}, {scope}, n, {i})"]  # fmt: skip
        if hashed is None and piped is None and simple_steps(step.from_path) == []:
            return [*lines, *body]  # the event or the element itself (`from: "@"`): there
        return [*lines, "if v is not MISSING:", *indent(body, 4)]

    def walk(self, into: Path, listed: bool, parent: str, tests: list[str]) -> list[str]:
        """The walk from the root to the container a step writes in (`listed`: the list at `into`, else the parent
        of its place), cached in `s._walks` when that place is one the generated code never replaces: an
        interesting place (a combine row or a watched source at or below it; so are all above it), which only
        the general merge writes whole, and which forgets every walk when it writes (`StreamTranslator._set`,
        `_keep`, `_merge`; `assemble` too). `tests` becomes the test of what the cache gives; no lines when
        nothing is cached."""
        place = into if listed else into[:-1]
        if not place or not self.interesting(place):
            return []
        var = "lq" if listed else parent
        walked = tests[:-1] if listed else list(tests)  # an `at` step's own test of its index stays
        tests[: len(walked)] = [f"{var} is not None"]
        k = self.walks
        self.walks += 1
        return [f"if ({var} := s._walks[{k}]) is None:", f"    if {' and '.join(walked)}: s._walks[{k}] = {var}",
                f"    else: {var} = None"]  # fmt: skip

    def added(self, step: Move, at: str) -> list[str]:
        """A new object at the end of the list (`at` its length): appended as it came, then started if watched,
        as the general merge does where no combine row lies at or below the element (nothing to fold)."""
        element = self.node((*step.into, None))
        if step.field or self.fixed_indexes(step.into) or (element is not None and (element.policy or _folds(element))):
            return []
        omit = self.name(step.omit, "omit")
        keep = [f"    v = {{kk: vv for kk, vv in v.items() if kk not in {omit}}}"] if step.omit else []
        return ["elif ix == len(lq) and type(v) is dict:", *keep, "    lq.append(v)",
                *indent(self.placed(step.into, "v", "ix", at, 0), 4)]  # fmt: skip

    def field(self, step: Move, element: Pattern, at: str, otherwise: str) -> list[str]:
        """Into the element `ix` of the list, then down `field` (objects there already; an index the event gives,
        `ei<k>`, an int naming an element there, as `_event_index` and `_descend` test), then the merge."""
        field = step.field
        if not field:
            return self.leaf(element, "lq", "ix", at, step)
        refs = [f"ei{d}" if isinstance(stp, EventIndex) else repr(stp) for d, stp in enumerate(field)]
        shape: Pattern = tuple(None if isinstance(stp, EventIndex) else stp for stp in field)
        for d, stp in enumerate(field):
            if d and isinstance(stp, EventIndex) and self.fixed_indexes((*element, *shape[:d])):
                return [otherwise]  # the element's place depends on the index the event gives
        tests = ["type(f0 := lq[ix]) is dict"]
        parent = _descend(field, refs, "f", tests)
        indexes = [refs[d] for d, stp in enumerate(field) if type(stp) is not str]
        at_more = f"{at} + ({''.join(f'{x}, ' for x in indexes)})" if indexes else at
        body = self.leaf((*element, *shape), parent, refs[-1], at_more, step)
        return [f"if {' and '.join(tests)}:", *indent(body, 4), "else:", f"    {otherwise}"]

    def leaf(self, pattern: Pattern, p: str, k: str, at: str, step: Move) -> list[str]:
        """The step's value `v` merged into p[k]; `step.omit`: keys of it left out."""
        node, omit = self.node(pattern), step.omit
        if not omit:
            return self.merge(pattern, p, k, "v", at, 0)
        lines = [f"at0 = {at}"]
        if node is not None and node.policy is not None:
            return [*lines, self.general(pattern, p, k, "v", "at0", omit)]
        lines.append(
            f"cur0 = {p}[{k}]" if pattern and type(pattern[-1]) is not str else f"cur0 = {p}.get({k}, MISSING)"
        )
        merged = self.dict_merge(pattern, omit, "cur0", "v", "at0", 0)
        lines += ["if type(v) is dict and type(cur0) is dict:", *indent(merged, 4)]
        return [*lines, "else:", f"    {self.general(pattern, p, k, 'v', 'at0', omit)}"]

    def event(self, name: str, handler: Steps | Dispatch, fn: str) -> list[str]:
        r = self.r
        self.known = {}
        opens = ["if not s._begin(e, n):  # streaming.starts", "    return False"] if name in r.starts else []
        if isinstance(handler, Dispatch):
            return self.cases(name, handler, fn, opens)
        every = self.steps(r.every, "streaming.every")
        body = [*opens, *every, *self.steps(handler, f"streaming.events.{name}"), f"return {bool(r.every or handler)}"]
        return [f"def {fn}(s, e, n):  # streaming.events.{name}", *indent(body, 4)]

    def cases(self, name: str, handler: Dispatch, fn: str, opens: list[str]) -> list[str]:
        """An event type whose steps depend on `by`: a branch per case, each running `every` then its steps."""
        r = self.r
        body = [*opens, *self.read(handler.by_path, handler.by, "c", "e")]
        read_before = dict(self.known)  # what a branch reads is not known to the next one
        union = _FIRST_KEY.fullmatch(handler.by_path)
        for n, (case, steps) in enumerate(handler.cases.items()):
            self.known = dict(read_before)
            self.case = (union[1], case) if union is not None else None
            label = f"streaming.events.{name}.cases.{case}"
            lines = [
                *self.steps(r.every, "streaming.every"),
                *self.steps(steps, label),
                f"return {bool(r.every or steps)}",
            ]
            body += [f"{'if' if n == 0 else 'elif'} c == {case!r}:", *indent(lines, 4)]
        self.known, self.case = dict(read_before), None
        label = f"{name!r} with {handler.by_path} "
        lines = [f"s._note_unknown({label!r} + repr(c), n)", *self.steps(r.every, "streaming.every")]
        return [
            f"def {fn}(s, e, n):  # streaming.events.{name}",
            *indent([*body, *lines, f"return {bool(r.every)}"], 4),
        ]

    def module(self) -> str:
        r = self.r
        events: list[str] = []
        self.known = {}
        if r.type is None:
            before, after = self.repeat_code()
            run = [
                "def run(s, e, n):  # streaming.every: each event",
                *indent([*before, *self.steps(r.every, "streaming.every"), *after, f"return {bool(r.every)}"], 4),
            ]
        else:
            table: dict[str, str] = {}
            for n, (name, handler) in enumerate(r.events.items()):
                fn = f"event{n}"
                table[name] = fn
                events += [*self.event(name, handler, fn), ""]
            events.append("EVENTS = {" + ", ".join(f"{k!r}: {v}" for k, v in table.items()) + "}")
            self.known = {}
            kind = self.read(r.type_path, r.type, "t", "e")
            run = [
                "def run(s, e, n):  # streaming.type: the event's type picks its function",
                *indent(kind, 4),
                "    f = EVENTS.get(t) if type(t) is str else None",
                "    if f is not None:",
                "        return f(s, e, n)",
                "    s._note_unknown(repr(t), n)",
                *indent([*self.steps(r.every, "streaming.every"), f"return {bool(r.every)}"], 4),
            ]
        starts = [line for w_index in range(len(r.watched)) if self.starts(w_index)
                  for line in [*self.start_code(w_index), ""]]  # fmt: skip
        return "\n".join([*starts, *events, *run]) + "\n"

    def repeats(self) -> Pattern | None:
        """Where a stream's pieces go when its one `every` step merges each event whole at the root: the list of the
        one watched source an `extend` row grows and joins its text pieces in (no `continued` row: the general
        merge's), reached by keys and the first element of `by_position` lists. The rest of an event, its frame,
        is often the last event's (`repeat_code`); orjson writes the frame's bytes."""
        r = self.r
        if orjson is None or len(r.every) != 1 or not isinstance(step := r.every[0], Move):
            return None
        if step.into or step.at is not None or step.each is not None or step.omit or simple_steps(step.from_path):
            return None
        found = []
        for w in r.watched:
            node = self.node(w.steps)
            if not w.src.each or node is None or node.policy is not EXTEND or node.join is None or node.continued:
                continue
            lists = [self.node(w.steps[:n]) for n, stp in enumerate(w.steps) if type(stp) is int]
            if all(stp == 0 for stp in w.steps if type(stp) is int) and all(
                node is not None and node.policy is BY_POSITION for node in lists
            ):
                found.append(w.steps)
        return found[0] if len(found) == 1 else None

    def repeat_code(self) -> tuple[list[str], list[str]]:
        """Lines before and after the step's walk. An event whose frame (the event with its pieces' list set aside)
        is, as orjson writes it, the frame the last event left merged merges to nothing new there (each value
        replaces one of the same type and value, a null or an object said again changes nothing), so only its
        pieces are merged. The frame's bytes and the pieces' parent are kept as a walk (`walk`), forgotten when the
        general merge writes; a frame holding another place the rules name (a key, a second element) is walked."""
        steps = self.repeats()
        if steps is None:
            return [], []
        k = self.walks
        self.walks += 1
        tests, values = [], ["e", *(f"y{d + 1}" for d in range(len(steps)))]  # the event's containers down the path
        for d, stp in enumerate(steps):
            value, got = values[d], values[d + 1]
            if type(stp) is int:  # the first element of a `by_position` list, the list's only one
                tests += [f"len({value}) == 1", f"type({got} := {value}[0]) is dict"]
            else:  # no other key the rules name here
                tests += [f"{key!r} not in {value}" for key in self.key_children(steps[:d]) if key != stp]
                kind = "dict" if d + 1 < len(steps) and type(steps[d + 1]) is str else "list"
                tests.append(f"type({got} := {value}.get({stp!r}, MISSING)) is {kind}")
        parent, value, key = values[-2], values[-1], repr(steps[-1])
        at, held = f"at{len(steps)}", f"cur{len(steps) - 1}"
        indexes = tuple(stp for stp in steps if type(stp) is int)
        before = [
            "fr = None  # the event's frame: its JSON without the pieces",
            f"if {' and '.join(tests)}:",
            f"    {parent}[{key}] = None",
            "    try:",
            "        fr = DUMPS(e)",
            "    except TypeError:  # a value orjson does not write: walked",
            "        pass",
            f"    {parent}[{key}] = {value}",
            f"    if (h := s._walks[{k}]) is not None and h[0] == fr:  # the frame said again: only the pieces",
            f"        {held}, {at} = h[1], {indexes!r}",
            *indent(self.merge(steps, held, key, value, at, len(steps)), 8),
            "        return True",
            f"s._walks[{k}] = None",
        ]
        walked = ["type(q0 := s._holder['']) is dict"]
        container = _descend(steps, [repr(stp) for stp in steps], "q", walked)
        return before, [f"if fr is not None and {' and '.join(walked)}: s._walks[{k}] = (fr, {container})"]


def _descend(steps: tuple[Any, ...], refs: list[str], var: str, tests: list[str]) -> str:
    """Adds to `tests` the walk from `<var>0` down `steps` but the last (each step read by its `refs` expression;
    an index the event gives must be an int naming an element there); gives the variable holding the last one's
    container."""
    parent = f"{var}0"
    for d, stp in enumerate(steps[:-1]):
        nxt, child = steps[d + 1], f"{var}{d + 1}"
        got = f"{parent}.get({refs[d]}, MISSING)" if type(stp) is str else f"{parent}[{refs[d]}]"
        tests.append(f"type({child} := {got}) is {'dict' if type(nxt) is str else 'list'}")
        if type(nxt) is int:
            tests.append(f"{nxt} < len({child})")
        elif isinstance(nxt, EventIndex):
            tests.append(f"type({refs[d + 1]}) is int and 0 <= {refs[d + 1]} < len({child})")
        parent = child
    return parent


def _walk_lines(steps: tuple[str | int, ...], source: str, target: str) -> list[str]:
    """Lines leaving the value at `steps` below `source` (or MISSING) in `target`, as `stream._walk` reads (the
    first step read from `source` itself)."""
    if not steps:
        return [f"{target} = {source}"]
    lines = []
    for step in steps:
        if type(step) is int:
            held = f"type({source}) is list and {step} < len({source})"
            lines.append(f"{target} = {source}[{step}] if {held} else MISSING")
        else:
            lines.append(f"{target} = {source}.get({step!r}, MISSING) if type({source}) is dict else MISSING")
        source = target
    return lines


def _chained(steps: tuple[str | int, ...], held: dict[tuple[str | int, ...], str]) -> tuple[list[str], str]:
    """The tests down the plain path `steps` below the element `x` (each container's type, an index in range) and
    the expression of the value there, read as `_walk_lines` reads it but in one condition: a container is named
    once per path in `held` (`p<n>`), so that two reads of one condition share it."""
    tests, source = [], "x"
    for n, step in enumerate(steps):
        kind = "dict" if type(step) is str else "list"
        if n:
            name = held.setdefault(steps[:n], f"p{len(held)}")
            tests.append(f"type({name} := {source}) is {kind}")
            source = name
        else:
            tests.append(f"type(x) is {kind}")
        if type(step) is int:
            tests.append(f"{step} < len({source})")
        source = f"{source}.get({step!r})" if type(step) is str else f"{source}[{step}]"
    return tests, source


def _folds(node: Node) -> bool:
    """Whether a value put whole at this place is first folded within itself (`join`, `continued` below)."""
    return node.join is not None or node.continued is not None or any(_folds(c) for c in node.children.values())


def _names_a_part(path: Path, field: Pattern) -> bool:
    """Whether a role's field path names a part the pattern reaches at any index (`summary[0].text` for
    `summary[].text`): then the concrete path is looked up first, as `_fragment` does."""
    return len(path) == len(field) and all(
        type(p) is int if f is None else p == f for p, f in zip(path, field, strict=True)
    )
