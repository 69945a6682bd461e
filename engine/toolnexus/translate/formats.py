"""Source formats run: a request in another API's shape in, the answer back in that shape (README "Source formats").

A compiled format (`SourceFormat`, built by `format_rules` from `rules/formats/<name>.yaml`) reads
the format's request into the normal form every provider's rules read (a Chat Completions request
with the round-trip keys of README "Round trips"), writes a `TranslateResult` back in the format's
shape, and (`SourceEvents`) writes the format's stream events from the moments a provider stream
says (what its OpenAI chunks are written from). Paths in errors and notes name the format's request
(`messages[2].content[1]`): each normal-form element keeps where it came from (`Origins`). Kept apart
from the compiling (schema, derivation) so the code every call runs reads on its own.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import compress, repeat
from operator import itemgetter
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from ..errors import Note, ResponseError, RuleError, ToolnexusError, TranslationError
from ..language.jsonsafe import WrittenTexts, checked, standard_loads_each
from ..language.loader import Key, RuleSource
from ..language.paths import MISSING
from ..language.templates import Ctx, Get, ListPath, Node, Obj, Render, unseal
from .result import TranslatedToolCall, TranslateResult, new_tool_call

PLAIN = "openai"  # the normal form itself (formats/openai.yaml, `normal: true`), today's API
DERIVED = "provider"  # the view key holding what the format's provider would have said (derived)
_T = TypeVar("_T")
WHOLE = "/"  # a rename ending so names a value function's read: what lies below it has no counterpart
# The view's fields (`answer_scope`): what an answer template reads, the generated writer each once up front;
# `ids` (LATE) is read where a template reads it, each id made then (`MadeIds`).
VIEW_FIELDS = ("id", "created", "ids", "annotations", "model", "text", "reasoning_content", "tool_calls",
               "finish_reason", "usage", "message_extras", "refusal", DERIVED)  # fmt: skip
LATE = frozenset({"ids"})
# View fields a TranslateResult always holds as a string or an object: never absent, empty where false
FALSY_EMPTY = frozenset({"text", "reasoning_content", "message_extras"})
TEXT_PART = frozenset({"type", "text"})  # the keys of a text part alone (`text_alone`: written as its string)
# What each of the view's `tool_calls` always is: an object of these (and `input` where the format reads it), so
# the generated writer reads a call's fields with no test.
CALL_FIELDS = ("id", "name", "arguments", "extra_content")


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
    known: frozenset[str] | None = None  # `reads` and the kind key: a block with only these keys needs no settling
    renames: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    blocks: tuple[str, ...] = ()
    state: tuple[str, str] | None = None  # (block key, message key or ""): a block whose key holds sealed state sets it
    joins: str | None = None  # a transcript item that joins the last message when it has this role, else starts one
    unsupported: Mapping[str, Unsupported] = field(default_factory=lambda: MappingProxyType({}))  # keys not read
    node: Node | None = None  # the template, parsed (what the generated reader pastes inline)
    # The key paths it reads inside the block's objects (`source.type`, `source.data`) and those objects
    # (`source`): a key below one of them that no path reaches is unmapped, as a block key is.
    paths: frozenset[str] = frozenset()
    inside: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Derived:
    """A normal-form element read backwards from the format's provider rule file: the rule key it comes
    from, and for a `$lookup` of constant rows read backwards, that lookup's node (its rows)."""

    rule: Key
    table: Node | None = None


@dataclass(frozen=True)
class Plan:
    """The format file as the parsed nodes it compiled to, for readers that explain it (`toolnexus diff`):
    never asked by a call. `nodes`: each template by its key in the format file; `derived`: each normal-form
    path read backwards from the provider's rules (a tool's keys as `tools[].function.name`)."""

    source: RuleSource
    nodes: Mapping[Key, Node]
    derived: Mapping[str, Derived]
    blocks_each: tuple[str | None, ...] = ()  # the path each answer block entry walks (None: one block)


@dataclass(frozen=True)
class NormalForm:
    """What a Chat Completions request (the normal form) may hold, compiled from its format file
    (formats/openai.yaml): what the request reader (reader.py) and a rule file's load check ask, so the
    knowledge is said once, as data. The reader asks by name for what its code reads (`part_keys("text")`);
    a file that lacks it is a RuleError naming the file, at import."""

    file: str
    fields: frozenset[str]  # every top-level field (a rule file's request side may name only these)
    roles: tuple[str, ...]
    read_keys: Mapping[str, frozenset[str]]  # role -> the message keys the reader reads
    role_kinds: Mapping[str, frozenset[str] | None]  # role -> the part kinds it takes (None: any; others pass)
    parts: Mapping[str, frozenset[str]]  # part kind -> its keys the reader reads (the kind key included)
    lists: Mapping[tuple[str, str, str], frozenset[str]]  # (role, message key, entry kind) -> the entry's keys
    tool_keys: frozenset[str]  # a tool object's keys the reader reads
    tool_unsupported: Mapping[str, Unsupported]  # a tool's keys with an action (its `type`: the accepted types)
    tool_choices: tuple[str, ...]  # the tool_choice strings

    def part_keys(self, kind: str) -> frozenset[str]:
        return _needed(self.parts.get(kind), f"part kind {kind!r}", self.file)

    def list_keys(self, role: str, key: str, kind: str) -> frozenset[str]:
        return _needed(self.lists.get((role, key, kind)), f"{role} {key} entry kind {kind!r}", self.file)

    def listed_kinds(self, role: str) -> frozenset[str]:
        """The part kinds a role takes, where the reader takes only those (no `others: pass`)."""
        return _needed(self.role_kinds.get(role), f"list of the part kinds a {role} message takes", self.file)

    def tool_types(self) -> tuple[Any, ...]:
        """The tool types translated: the ones the tools' `type` entry accepts."""
        entry = self.tool_unsupported.get("type")
        return _needed(
            None if entry is None else entry.accept, "accepted tool types (tools.unsupported.type)", self.file
        )


@dataclass(frozen=True)
class CallerTools:
    """A source format's tool declarations as the provider's tools function reads them in place, when the format
    writes each normal-form function key from one key of the caller's tool (`SourceFormat.caller_tools`): no Chat
    Completions tool is built to be read again."""

    format: str  # its name (the generated function's label)
    keys: Mapping[str, str]  # a normal-form function key -> the caller's key it is written from
    quiet: Mapping[str, tuple[Any, ...]]  # the caller's listed keys besides: the values that settle silently


def _needed(found: _T | None, what: str, file: str) -> _T:
    """What the request reader asks of the normal form; absent, a RuleError naming the file."""
    if found is None:
        raise RuleError(f"the normal form names no {what}, which the request reader reads", file=file)
    return found


# One stream moment's events written (`stream.open.text`, ...): (its scope, a piece's text or None, the first
# event's sequence number, the context) -> the events, one per template of the moment, numbered from there on.
Moment = Callable[[dict[str, Any], Any, int, Ctx], list[Any]]
# A `once.KIND` writer: (the stream's scope, the piece, the sequence, the Ctx, then the block's names, `ONCE`)
OnceMoment = Callable[..., list[Any]]
# A piece's events written into a list (`out`) from the first event's sequence number: (out, piece, sequence) ->
# the next sequence number. `Bind` makes one for a block's scope (`SourceFormat.straight`, `SourceEvents._straight`).
Said = Callable[[list[Any], Any, int], int]
Bind = Callable[[dict[str, Any]], Said]
# The piece moments whose blocks take their pieces straight while open (`SourceEvents._straight`), each a `Bind`
STRAIGHT = frozenset({("piece", "text"), ("piece", "reasoning")})
Origins = dict[str, tuple[str, Mapping[str, str]]]  # normal-form path -> (the format's path, key renames below it)
NOTHING: Mapping[str, Unsupported] = MappingProxyType({})  # no key listed: the policy decides
# Where one normal-form element of the transcript (or a tool) came from, as the generated reader records it, in
# message order, then the tools (formatted only when asked: `placed`, `named`, which bisects them by their first
# number, so the reader appends them in that order): its path's format (`messages[...`),
# its two numbers (a format of one number gets 0 as the second), the source path's format (`{0}`, `{1}`: the
# numbers it takes), those numbers, the renames below it
Record = tuple[str, int, int, str, int | None, int | None, Mapping[str, str]]
# A `$lookup` table of constant rows read backwards (format_rules `_nearest`): (the request, the notes) -> the field
TableBackwards = Callable[[Any, list[Note]], Any]
# A (format, provider) pair's fused transcript function (`fused_code`): (the format's transcript, its system
# field) -> what the provider's `messages` returns, every path the format's, and the ids it rewrote (sent -> given,
# or None); None: a shape it does not take.
Fused = Callable[[list[Any], Any], Any]
# A (format, provider) pair's fused answer function (`fused_answer_code`): (the provider's answer, the requested
# model, the request's id map, its null tokens as the response function takes them) -> the AnswerBody, or None
# where today's route must run.
FusedAnswer = Callable[[Any, "str | None", "Mapping[str, str] | None", int], "AnswerBody | None"]
# The request's fields read (`SourceFormat.read_fields`): (the format, the request, the notes, unknown_fields) -> the
# normal-form fields and where each came from.
FieldsReader = Callable[["SourceFormat", dict[str, Any], list[Note], str], tuple[dict[str, Any], Origins]]


def fields_as_given(
    fmt: SourceFormat, request: dict[str, Any], notes: list[Note], policy: str
) -> tuple[dict[str, Any], Origins]:
    """The normal form's fields: its request as it is (a shallow copy), from nowhere else (what `read` gives it)."""
    return dict(request), {}


def placed(origins: Origins, records: list[Record]) -> Origins:
    """`origins` with the records added (normal-form path -> the source path, renames): made only when an error
    needs its path named, so a call that needs none formats no path (notes: `named`)."""
    for key, a, b, source, x, y, renames in records:
        origins[key.format(a, b)] = (source.format(x, y), renames)
    records.clear()
    return origins


TOOL_RECORD = "tools[{}]"  # a tool's record's key (the tools' records follow the transcript's)
_NUMBER = itemgetter(1)  # a record's first number
# What the reader records of a path: an element of a top list (`messages[{}]`, `tools[{}]`), a key of it
# (`messages[{}].tool_calls`) and an element of that (`messages[{}].content[{}]`), nothing deeper.
_RECORDED = re.compile(r"([^\[]*)\[([0-9]+)\](?:\.([^.\[]*)(?:\[([0-9]+)\])?)?")


def named(paths: Iterable[str], origins: Origins, records: list[Record]) -> list[str]:
    """Each normal-form path (a note's) as the format's request names it: what `remap` over `placed` gives, with
    only the one record each path begins with formatted (the deepest recorded prefix, found by its numbers among
    the records, which come in order: `_deepest`), and the rest of the path renamed below it; a path no record
    begins remapped by `origins`. No index of the records is built: a call has a few notes, hundreds of records."""
    tools_at = -1  # where the tools' records begin, found when a path first needs a record
    out = []
    for path in paths:
        found = _RECORDED.match(path) if records else None
        record = None
        if found is not None:
            if tools_at < 0:
                tools_at = bisect_left(records, True, key=_is_tool)
            record, cut = _deepest(path, found, records, tools_at)
        if record is None:
            out.append(remap(path, origins))
        else:
            _, _, _, source, x, y, renames = record
            out.append(_renamed(source.format(x, y), renames, path[cut:]))
    return out


OWN_PATH = "\0"  # what begins a note's path a fused function made at the format's path already (`named_alone`)


def named_alone(notes: list[Note], messages: list[Any], fmt: SourceFormat) -> list[Note] | None:
    """A fused function's notes (`fused_code`, a format of role messages) as today's route names them: a path
    begun by `OWN_PATH` is the format's already; any other a helper made at the normal form's path of the message
    the role message at its index made (`messages[i]...`): at its block where the rule data tells which
    (`_named_by_block`), else by the reader's records of that role message read again alone (its index 0 there).
    None where that is not known: it made more or fewer than one message, or no record begins the path."""
    out, alone = [], f"{fmt.each}[0]"
    reads: dict[int, list[Record] | None] = {}
    for note in notes:
        path = note.path
        if path[:1] == OWN_PATH:
            out.append(Note(note.kind, path[1:], note.message, note.side))
            continue
        found = _RECORDED.match(path)
        if found is None or found[1] != "messages" or fmt.transcript is None:
            return None
        at = int(found[2])
        by_block = _named_by_block(found, path, messages[at], at, fmt)
        if by_block is not None:
            out.append(Note(note.kind, by_block, note.message, note.side))
            continue
        if at not in reads:
            read = fmt.transcript([messages[at]], None, False, None)
            reads[at] = read[1] if read is not None and len(read[0]) == 1 else None
        records = reads[at]
        local = f"messages[0]{path[found.end(2) + 1 :]}"
        found = _RECORDED.match(local)
        record, cut = (None, 0) if records is None or found is None else _deepest(local, found, records, len(records))
        if record is None:
            return None
        _, _, _, source, x, y, renames = record
        named = _renamed(source.format(x, y), renames, local[cut:])
        if not named.startswith(alone) or named[len(alone) : len(alone) + 1] not in ("", ".", "["):
            return None
        out.append(Note(note.kind, f"{fmt.each}[{at}]{named[len(alone) :]}", note.message, note.side))
    return out


def _named_by_block(found: re.Match[str], path: str, message: Any, at: int, fmt: SourceFormat) -> str | None:
    """A helper's note at an element of a list of the one message a role message made (`messages[i].content[n]`,
    `.tool_calls[n]`, below it), named at the block it came from without reading the message again: the `n`th of
    the role message's blocks whose kind joins that list (`SourceFormat.block_lists`), its keys renamed as the
    reader's record of it renames them. None where that is not known so (a block of a kind that makes a message
    of its own or sets state, a path of another shape): `named_alone` reads the message again."""
    _, _, name, inner = found.groups()
    end = found.end(4) + 1 if inner is not None else 0
    if inner is None or not (end == len(path) or path[end] in ".[") or type(message) is not dict:
        return None
    content, role = message.get("content"), message.get("role")
    kinds = fmt.block_lists.get(role) if type(role) is str else None
    if kinds is None or type(content) is not list:
        return None
    n, kind_key, found_at, renames = int(inner), fmt.kind, -1, None
    for j, block in enumerate(content):
        if type(block) is not dict:
            return None  # (the fused function declines it before naming)
        joins = kinds.get(block.get(kind_key, ""))  # (no kind: none of these)
        if joins is None:
            return None  # (a block whose place in the normal form is not one list's next element)
        if found_at < 0 and joins[0] == name:
            if not n:
                found_at, renames = j, joins[1]
            n -= 1
    if renames is None:
        return None
    return _renamed(f"{fmt.each}[{at}].content[{found_at}]", renames, path[end:])


def _is_tool(record: Record) -> bool:
    """Whether a record is a tool's (the bisection key of where the tools' records begin)."""
    return record[0] == TOOL_RECORD


def _deepest(path: str, found: re.Match[str], records: list[Record], tools_at: int) -> tuple[Record | None, int]:
    """The record of the deepest prefix of `path` that ends where `remap` cuts (the end, a `.` or a `[`), and
    where that prefix ends; of records with the same key and numbers the later wins, as in `placed`. The
    transcript's records come in message order, then the tools' in tool order (each part sorted by its first
    number, the reader's order), so the path's are one run, found by bisection."""
    head, number, name, inner = found.groups()
    a, key, size = int(number), head + "[{}]", len(path)
    element = member = None  # the keys of a deeper prefix, where it ends where remap cuts
    element_at = member_at = b = 0
    if inner is not None:
        element_at = found.end(4) + 1
        if element_at == size or path[element_at] in ".[":
            element, b = f"{key}.{name}[{{}}]", int(inner)
    if name is not None:
        member_at = found.end(3)
        if member_at == size or path[member_at] in ".[":
            member = f"{key}.{name}"
    top_at = found.end(2) + 1
    if not (top_at == size or path[top_at] in ".["):
        key = ""  # no record begins it at this depth
    low, high = (tools_at, len(records)) if key == TOOL_RECORD else (0, tools_at)
    at = bisect_left(records, a, low, high, key=_NUMBER)
    chosen: tuple[Record | None, int] = (None, 0)
    depth = 3  # of the chosen: 0 an element of a key, 1 a key, 2 the message or tool itself
    while at < high and records[at][1] == a:
        record = records[at]
        at += 1
        if element is not None and record[0] == element and record[2] == b:
            chosen, depth = (record, element_at), 0
        elif depth >= 1 and record[0] == member and record[2] == 0:
            chosen, depth = (record, member_at), 1
        elif depth >= 2 and record[0] == key and record[2] == 0:
            chosen, depth = (record, top_at), 2
    return chosen


def unread(
    value: dict[str, Any], at: str, paths: frozenset[str], inside: frozenset[str]
) -> Iterator[tuple[str, str, Any]]:
    """The keys below the object at `at` (one some read path goes inside), at any depth, that no path in
    `paths` reaches: (their path, key, value). An object a path reads inside has fixed keys; one read whole
    (its own path in `paths`) does not."""
    for key, inner in value.items():
        path = f"{at}.{key}"
        if path in paths:
            continue
        if path in inside:
            if isinstance(inner, dict):
                yield from unread(inner, path, paths, inside)
            continue
        yield path, key, inner


def quiet(block: dict[str, Any], known: frozenset[str], table: Mapping[str, Unsupported]) -> bool:
    """Whether every key of `block` outside `known` is listed and holds what settles without a word (null, or a
    value it accepts), as `SourceFormat._settle` finds: nothing to note, nothing to refuse."""
    for key, value in block.items():
        if key not in known:
            rule = table.get(key)
            if rule is None or not (value is None or value in rule.accept):
                return False
    return True


def below_key(table: Mapping[str, Unsupported], name: str) -> Mapping[str, Unsupported]:
    """The unsupported entries listed for the keys below `name` (`reasoning.summary`), by key."""
    prefix = name + "."
    return {k.removeprefix(prefix): v for k, v in table.items() if k.startswith(prefix)}


@dataclass
class Transcript:
    """One request's normal-form messages as they are read: where each came from, each with the role its
    blocks were read as (its form is settled at the end, when no later item can join it), and the notes."""

    messages: list[dict[str, Any]]
    origins: Origins
    notes: list[Note]
    policy: str  # unknown_fields
    ctx: Ctx  # the one rendering context of the read's blocks (their templates' notes are not kept)
    made: list[tuple[dict[str, Any], str]] = field(default_factory=list)


@dataclass(frozen=True)
class SourceFormat:
    """One compiled format file."""

    name: str
    file: str
    provider: str
    doc: str
    field_tables: Mapping[str, TableBackwards]  # a normal-form field -> its constant-row table read backwards
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
    tool_node: Node | None  # the tool's template as nodes (what the generated tools reader pastes inline)
    tool_reads: frozenset[str]
    tool_renames: Mapping[str, str]
    tool_unsupported: Mapping[str, Unsupported]
    text_role: str | None  # `messages.text`: a transcript given as a string is one message of this role
    items: Mapping[str, Kind] | None  # `messages.items.kinds`: a flat transcript of typed items, not role messages
    message_kind: str | None  # `messages.items.message`: the item kind that is a role message (also: no kind)
    message_unsupported: Mapping[str, Unsupported]  # `messages.unsupported`: a message's keys not read
    transcript_roles: frozenset[str]  # the roles a transcript message may have (not `transcript: false`)
    joining_roles: frozenset[str]  # roles whose messages join the last message of their role (`joins: true`)
    field_paths: frozenset[str]  # the nested field paths the fields read, at any depth (`text.format.name`)
    whole_fields: frozenset[str]  # top-level fields read whole (or through an expression): no nested check
    field_inside: frozenset[str]  # the objects below a field the field paths read inside (`text.format`)
    answer: Render
    blocks_into: str | None  # None: the answer has no `blocks` (its template writes it whole)
    blocks: tuple[tuple[Any, Render], ...]  # (the list it walks or None, the template of one block)
    stream: Mapping[str, tuple[Render, ...]]  # start, open.KIND, piece.KIND, done.KIND, close: each its events
    stream_end: tuple[Render, ...]
    reasoning_kinds: frozenset[str]  # the answer's block kinds that hold reasoning (the stream closes them last)
    stop_table: Mapping[str, str]
    stop_key: str
    usage: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...]
    plan: Plan  # what the file compiled to, as nodes (for `toolnexus diff`)
    ids: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # `answer.ids`: name -> prefix
    item_ids: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # stream kind -> an `ids` name
    index_within_kind: frozenset[str] = frozenset()  # stream kinds whose `index` counts only their own kind's blocks
    normal: NormalForm | None = None  # the normal form's file: what the request reader takes from it
    # The transcript's generated reader (format_code), and its source for `toolnexus explain --source --code`: the
    # common shape read inline; None from it (or its error) and the general read below reads the transcript again.
    transcript: Callable[[list[Any], Any, bool, Any], Any] | None = None
    # The tools' generated reader (format_code `tools`, in `transcript_code` too): None from it (a key to settle,
    # a refusal) and `_tools` reads them again, where each is.
    tools_reader: Callable[[Any, Callable[[Record], None]], list[Any] | None] | None = None
    transcript_code: str = ""
    # The request's top-level fields read into the normal form's (format_code.generate_fields: a fast test that no
    # key needs settling, else `settle_fields`; the fields template inline) and its source; the normal form's are
    # its request as given.
    read_fields: FieldsReader = fields_as_given
    fields_code: str = ""
    # The whole answer's generated writer (format_code.generate_writer: `answer`'s message and blocks in one
    # function over the result, the answer's id and time and the notes: what the answer adds to the result settled in
    # its first lines) and its source; None only while compiling.
    writer: Callable[[Any, Any, Any, list[Note]], dict[str, Any]] | None = None
    writer_code: str = ""
    # Each provider's result as the whole answer, one generated function per provider (format_code.generate_answer:
    # (the result, the provider's answer) -> the AnswerBody, the answer's id and time read where the provider's
    # streaming section reads a chunk's, then the writer), and their sources, by provider.
    answers: Mapping[str, Callable[[TranslateResult, Any], AnswerBody]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    answers_code: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # `said` as one generated function (format_code.generate_said): the stop reason and the usage read backwards.
    derive_said: Callable[[Any, list[Note]], dict[str, Any]] | None = None
    reads_input: bool = True  # an answer template reads a name `input` (a call's arguments parsed): the view has it
    # The stream's generated writers (format_code.generate_events: one function per moment, by its name; a
    # `once.KIND` one an `OnceMoment`) and their source; empty: each moment's templates walked one by one
    # (`general_moments`, what tests hold them to).
    events: Mapping[str, Moment] = field(default_factory=lambda: MappingProxyType({}))
    # Of those, each `piece.KIND` of `STRAIGHT` whose events are all displays, as a `Bind`: the block's scope read
    # once, then each piece's events appended (format_code.generate_events; empty: `piece.KIND` written as above)
    straight: Mapping[str, Bind] = field(default_factory=lambda: MappingProxyType({}))
    events_code: str = ""
    chunks_code: str = ""  # the normal form's: its stream section's generated chunk writers (format_rules.Chunks)
    # Each provider's fused transcript function, by provider (only the pairs whose rules compose), and their sources.
    fused: Mapping[str, Fused] = field(default_factory=lambda: MappingProxyType({}))
    fused_code: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Each provider's fused answer function, by provider (only the pairs whose rules compose), and their sources.
    fused_answers: Mapping[str, FusedAnswer] = field(default_factory=lambda: MappingProxyType({}))
    fused_answers_code: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def explain(self, *, code: bool = False) -> str:
        """The format's file and provider (and, with `code`, its transcript's generated reader)."""
        lines = [f"{self.name}: {self.doc}".rstrip(": "), f"  file: {self.file}", f"  derives from: {self.provider}"]
        if code:
            line, _ = self.plan.source.where(("request", "messages"))
            lines.append(f"\n  # {self.file}:{line} request.messages: the transcript's (and tools') generated reader")
            lines += [
                f"  {text}"
                for text in (
                    self.transcript_code
                    or (
                        "(none: the request is the normal form as it is)" if self.normal else "(none: the general read)"
                    )
                ).splitlines()
            ]
            if self.fields_code:
                line, _ = self.plan.source.where(("request", "fields"))
                lines.append(f"\n  # {self.file}:{line} request.fields: the request's fields' generated reader")
                lines += [f"  {text}" for text in self.fields_code.splitlines()]
            line, _ = self.plan.source.where(("answer",))
            lines.append(f"\n  # {self.file}:{line} answer: the whole answer's generated writer")
            lines += [f"  {text}" for text in self.writer_code.splitlines()]
            shared: dict[str, list[str]] = {}  # providers whose answers read their id and time alike: one function
            for provider, text in self.answers_code.items():
                shared.setdefault(text, []).append(provider)
            for text, providers in shared.items():
                lines.append(f"\n  # the whole answer from {', '.join(providers)}: its id and time, then the writer")
                lines += [f"  {line}" for line in text.splitlines()]
            fused: dict[str, list[str]] = {}  # providers whose messages are written alike: one function
            for provider, text in self.fused_code.items():
                fused.setdefault(text, []).append(provider)
            for text, providers in fused.items():
                lines.append(f"\n  # the transcript to {', '.join(providers)}: read and written in one loop")
                lines += [f"  {line}" for line in text.splitlines()]
            for provider, text in self.fused_answers_code.items():
                lines.append(f"\n  # the whole answer from {provider}: read and written in one function")
                lines += [f"  {line}" for line in text.splitlines()]
            if self.events_code:
                line, _ = self.plan.source.where(("stream",))
                lines.append(f"\n  # {self.file}:{line} stream: the events' generated writers, one per moment")
                lines += [f"  {text}" for text in self.events_code.splitlines()]
            if self.chunks_code:
                line, _ = self.plan.source.where(("stream",))
                lines.append(f"\n  # {self.file}:{line} stream: the chunk writers every Chat Completions stream runs")
                lines += [f"  {text}" for text in self.chunks_code.splitlines()]
        return "\n".join(lines)

    # ------------------------------------------------------------------ request side

    def read(self, request: Any, unknown_fields: str = "error") -> tuple[dict[str, Any], Origins, list[Note]]:
        """The format's request -> the normal-form request, where each element came from, and what was dropped.
        A key the format neither reads nor lists is refused, or with `unknown_fields="drop"` dropped (noted).
        The normal form's own request is the normal form already: it is given back as it is (a shallow copy);
        the provider's rules settle it, as for `source="openai"`."""
        hub, origins, records, notes = self.read_recorded(request, unknown_fields)
        return hub, placed(origins, records), notes

    def read_recorded(
        self,
        request: Any,
        unknown_fields: str = "error",
        objects: bool = False,
        written: WrittenTexts | None = None,
        tools: bool = True,
    ) -> tuple[dict[str, Any], Origins, list[Record], list[Note]]:
        """`read`, with where the transcript's elements came from partly as records (`placed` adds them).
        `objects`: the provider sends tool-call arguments as objects, so an object the format gives is kept as
        one (`Ctx.objects`) instead of written as JSON text the provider would parse back; `written`: where
        the JSON text written of an object is recorded with the object (`Ctx.written`); `tools`: the declarations
        read too (else the caller reads them: `translate_source`)."""
        if not isinstance(request, dict):
            raise self._fail("", f"the request must be an object, got {type(request).__name__}")
        notes: list[Note] = []
        hub, origins = self.read_fields(self, request, notes, unknown_fields)
        if self.normal is not None:
            return hub, origins, [], notes
        records = self.read_transcript(request, hub, origins, notes, unknown_fields, objects, written, tools)
        return hub, origins, records, notes

    def read_transcript(
        self,
        request: dict[str, Any],
        hub: dict[str, Any],
        origins: Origins,
        notes: list[Note],
        unknown_fields: str,
        objects: bool,
        written: WrittenTexts | None,
        tools: bool,
    ) -> list[Record]:
        """`read_recorded` after the fields (`hub`, `origins`, `notes`: what `read_fields` gave): the transcript
        (and the tools) read into `hub`, and the records of where their elements came from."""
        read = None
        records: list[Record] = []
        transcript = request.get(self.each, MISSING)
        if self.transcript is not None and type(transcript) is list:
            try:
                system = None if self.system is None else request.get(self.system)
                read = self.transcript(transcript, system, objects, written)
            except ToolnexusError:
                read = None  # the general read raises it, where it is
        if read is None:
            into = Transcript([], origins, notes, unknown_fields, Ctx(self.name))
            into.ctx.objects, into.ctx.written = objects, written
            self._transcript(request, into)
            messages, made = into.messages, into.made
        else:
            messages, records, made = read
        plain_text = self.plain_text
        for message, role in made:  # each message's form, now that nothing more joins it
            content = message.get("content")
            if not isinstance(content, list):  # a string (or what a template wrote) is kept as it is
                continue
            if not content:
                if message["role"] != "user":
                    message["content"] = None
            elif len(content) == 1 and role in plain_text:
                part = content[0]
                if isinstance(part, dict) and part.keys() == TEXT_PART and part["type"] == "text":
                    message["content"] = part["text"]
        hub["messages"] = messages
        if tools and self.tools_each is not None and request.get(self.tools_each) is not None:
            hub["tools"] = self._tools(request[self.tools_each], records, notes, unknown_fields)
        return records

    @cached_property
    def block_lists(self) -> Mapping[str, Mapping[str, tuple[str, Mapping[str, str]]]]:
        """By role, each block kind that joins the message its role message makes: the normal-form list it
        joins (`content` for a part, its `into` for an item) and its key renames, as the reader records it
        (`_add`); a kind that is a message of its own or sets sealed state is left out (where its blocks go is
        not one list's next element). What `named_alone` names a helper's note by without reading again."""
        return MappingProxyType(
            {
                role: MappingProxyType(
                    {
                        name: ("content" if kind.mode == "part" else kind.into, kind.renames)
                        for name, kind in kinds.items()
                        if kind.mode in ("part", "item") and kind.state is None
                    }
                )
                for role, kinds in self.roles.items()
            }
        )

    @cached_property
    def caller_tools(self) -> CallerTools | None:
        """The tool declarations as a provider's tools function can read them in place (`Inbound.caller_tools`):
        when the tool's template writes each key from one key of the tool; None otherwise."""
        node = self.tool_node
        if self.tools_each is None or not isinstance(node, Obj):
            return None
        keys: dict[str, str] = {}
        for name, value in node.items:
            steps = value.reads[0].steps if isinstance(value, Get) and value.plain and len(value.reads) == 1 else None
            if steps is None or len(steps) != 1 or type(steps[0]) is not str:
                return None
            keys[name] = steps[0]
        listed = {
            key: (None, *rule.accept) for key, rule in self.tool_unsupported.items() if key not in self.tool_reads
        }
        return CallerTools(self.name, MappingProxyType(keys), MappingProxyType(listed))

    def settle_fields(self, request: dict[str, Any], notes: list[Note], unknown_fields: str) -> None:
        """Each top-level key the format does not read, and each key below a field read inside that no read
        reaches, settled in the request's order (noted or refused, at its path): what `read_fields` runs when
        its fast test finds one."""
        for name, value in request.items():
            if name in self.field_reads or name == self.each or name == self.system or name == self.tools_each:
                if isinstance(value, dict) and name in self.field_reads and name not in self.whole_fields:
                    for path, key, inner in unread(value, name, self.field_paths, self.field_inside):
                        below = below_key(self.unsupported, path.rpartition(".")[0])  # a key no rule reads
                        self._settle(key, inner, path, below, notes, unknown_fields)
                continue
            self._settle(name, value, name, self.unsupported, notes, unknown_fields)

    def _transcript(self, request: dict[str, Any], into: Transcript) -> None:
        """The system key's blocks and the transcript read the general way: each block's kind asked of the
        tables, its keys no rule reads settled (noted or refused, at their paths)."""
        notes, unknown_fields = into.notes, into.policy
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
        message_keys = {"role", "content"} if self.items is None else {"role", "content", self.kind}
        for i, msg in enumerate(transcript):
            where = self.each if whole else f"{self.each}[{i}]"
            if not isinstance(msg, dict):
                raise self._fail(where, f"must be an object, got {type(msg).__name__}")
            if self.items is not None and msg.get(self.kind, self.message_kind) != self.message_kind:
                self._item(msg, where, into)
                continue
            if not msg.keys() <= message_keys:  # a key besides role, content (and the kind): listed or refused
                for key in msg:
                    if key in message_keys:
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

    def request_keys(self) -> tuple[str, str, str]:
        """The format's own names for the transcript, the tools and the output token limit (what a client
        call's `messages`, `tools` and `max_tokens` arguments are sent as)."""
        limit = self.field_origin.get("max_completion_tokens")
        return self.each, self.tools_each or "tools", limit[0] if limit else "max_tokens"

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
        if isinstance(content, str):
            if join and into.messages and into.messages[-1]["role"] == role:
                message = self._current(role, into, where)
                into.origins[f"messages[{len(into.messages) - 1}].content[{len(message['content'])}]"] = (where, {})
                message["content"].append({"type": "text", "text": content})
            else:
                into.origins[f"messages[{len(into.messages)}]"] = (where, {})
                into.messages.append({"role": role, "content": content})
                into.made.append((into.messages[-1], role))
            return
        base = f"{where}.content" if where != self.system else where  # the system key holds its blocks itself
        if not isinstance(content, list):
            raise self._fail(base, "must be a string or a list of blocks")
        for j, block in enumerate(content):
            path = f"{base}[{j}]"
            kind = self._kind(kinds, block, path, into)
            if kind.state is not None:
                state = unseal(block.get(kind.state[0]), into.ctx, part="state")
                if state is not MISSING:
                    if current is None:
                        current = self._current(role, into, where) if join else self._new(role, into, where)
                    self._set_state(current, kind.state[1], state)
                    continue
            if kind.mode == "message":
                current, join = None, False
                self._standalone(kind, kinds, block, path, role, into)
                continue
            if current is None:
                current = self._current(role, into, where) if join else self._new(role, into, where)
            self._add(kind, block, path, current, into)

    @staticmethod
    def _set_state(message: dict[str, Any], key: str, state: Any) -> None:
        """Sealed state set on the message: as `key`, or (no key) each of its keys (a whole message's extras)."""
        if key:
            message[key] = state
        elif isinstance(state, dict):
            message.update(state)

    def _add(self, kind: Kind, block: Any, path: str, message: dict[str, Any], into: Transcript) -> None:
        """A part or an item block added to `message` (the last normal-form message)."""
        ctx = into.ctx
        ctx.path = path
        written = kind.render(block, ctx)
        hub_index = len(into.messages) - 1
        if kind.mode == "part":
            parts = message["content"]
            into.origins[f"messages[{hub_index}].content[{len(parts)}]"] = (path, kind.renames)
            parts.append(written)
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
        ctx = into.ctx
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
            state = unseal(item.get(kind.state[0]), into.ctx, part="state")
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
            ctx = into.ctx
            ctx.path = path
            into.origins[f"{hub}.content[{j}]"] = (path, kind.renames)
            parts.append(kind.render(block, ctx))
        return parts

    def _kind(self, kinds: Mapping[str, Kind], block: Any, path: str, into: Transcript) -> Kind:
        """The kind a block is read as, its keys no rule reads settled (or refused)."""
        name = block.get(self.kind) if type(block) is dict else None
        kind = kinds.get(name) if type(name) is str else None
        if kind is not None and (kind.known is None or block.keys() <= kind.known):  # the common case, settled
            if kind.inside:
                self._settle_inside(kind, block, path, into)
            return kind
        if not isinstance(block, dict):
            raise self._fail(path, f"must be an object, got {type(block).__name__}")
        name = block.get(self.kind)
        kind = kinds.get(name) if isinstance(name, str) else None
        if kind is None:
            raise self._fail(f"{path}.{self.kind}", f"a {name!r} block is not read here; known: {', '.join(kinds)}")
        if kind.known is not None:  # a key no rule reads: listed or refused
            for key in block:
                if key not in kind.known:
                    self._settle(key, block[key], f"{path}.{key}", kind.unsupported, into.notes, into.policy)
        if kind.inside:
            self._settle_inside(kind, block, path, into)
        return kind

    def _settle_inside(self, kind: Kind, block: dict[str, Any], path: str, into: Transcript) -> None:
        """The keys below a block's objects that the kind reads inside (an image's `source`), at any depth,
        that no read reaches: listed (`unsupported: {source.KEY: ...}`) or refused, as a block key is."""
        for name, value in block.items():
            if name in kind.inside and name not in kind.paths and isinstance(value, dict):
                for at, key, inner in unread(value, name, kind.paths, kind.inside):
                    below = below_key(kind.unsupported, at.rpartition(".")[0])
                    self._settle(key, inner, f"{path}.{at}", below, into.notes, into.policy)

    def _tools(self, tools: Any, records: list[Record], notes: list[Note], unknown_fields: str) -> list[Any]:
        """The tool declarations in the normal form's shape; where each came from, as records."""
        if self.tools_reader is not None:
            mark = len(records)
            try:
                read = self.tools_reader(tools, records.append)
            except ToolnexusError:
                read = None  # read again below, which raises it where it is
            if read is not None:
                return read
            del records[mark:]
        if not isinstance(tools, list):
            raise self._fail(self.tools_each or "", f"must be a list, got {type(tools).__name__}")
        assert self.tool is not None
        out = []
        each = self.tools_each or ""
        owner = ListPath(each)
        source = f"{each}[{{}}]"
        reads, renames, render = self.tool_reads, self.tool_renames, self.tool
        ctx = Ctx(self.name)  # one for all: what a template notes here is not kept
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict):
                raise self._fail(owner.element_path(i), f"must be an object, got {type(tool).__name__}")
            if not tool.keys() <= reads and not quiet(tool, reads, self.tool_unsupported):
                for key, value in tool.items():
                    if key not in reads:
                        path = f"{owner.element_path(i)}.{key}"
                        self._settle(key, value, path, self.tool_unsupported, notes, unknown_fields)
            ctx.path = (owner, i)
            records.append((TOOL_RECORD, i, 0, source, i, None, renames))
            out.append({"type": "function", "function": render(tool, ctx)})
        return out

    def _settle(
        self, name: str, value: Any, path: str, table: Mapping[str, Unsupported], notes: list[Note], policy: str
    ) -> None:
        """A key no rule reads: accepted, dropped with a note, or refused. Its value is checked first, as the
        Chat Completions path checks the whole request: the reader's request, checked in its place, never
        holds a dropped value, so a NaN or a lone surrogate dropped here would otherwise pass unseen."""
        if value is not None:
            checked(value, path, self._fail)
        rule = table.get(name)
        if rule is None and policy == "drop":
            notes.append(Note("dropped", path, f"not mapped by the {self.name} format"))
            return
        if rule is None:
            raise self._fail(path, f"is not mapped by the {self.name} format ({self.file})")
        if value is None or value in rule.accept:
            return
        if rule.action == "drop":
            notes.append(Note("dropped", path, rule.doc or f"the {self.name} format has no counterpart"))
            return
        raise self._fail(path, "cannot be translated" + (f": {rule.doc}" if rule.doc else ""))

    def _fail(self, path: str, message: str) -> TranslationError:
        return TranslationError(path, message, provider=self.name)

    # ------------------------------------------------------------------ answer side

    def said(self, result: TranslateResult, notes: list[Note]) -> dict[str, Any]:
        """What the format's provider would have said (`provider`): its stop reason (also as `finish`) and usage,
        read backwards from its rules; what it cannot say noted. Generated from the lines the writer begins with
        (format_code.said_lines), so the two derive it alike."""
        assert self.derive_said is not None
        return self.derive_said(result, notes)

    def made_ids(self, answer_id: str) -> dict[str, str]:
        """The ids `answer.ids` makes from the answer's id (a prefix and a hash: the same answer, the same ids),
        for the whole answer and its stream alike."""
        return made_ids(self.ids, answer_id)

    def write(
        self, result: TranslateResult, answer_id: Any = None, notes: list[Note] | None = None, created: Any = None
    ) -> dict[str, Any]:
        """A result as the format's whole answer (what it could not say noted in `notes`: the stop reason, the
        usage, the id made, a template's own). The generated writer settles the id, time and inputs itself and
        derives the provider's stop reason and usage as `said` does, each count into a variable the templates read
        (no `said` made unless a template reads it otherwise)."""
        assert self.writer is not None
        return self.writer(result, answer_id, created, [] if notes is None else notes)


def new_answer_id() -> str:
    """An answer's id where the provider's names none."""
    return f"msg_{uuid.uuid4().hex[:24]}"


def answer_time(created: Any) -> Any:
    """The answer's time as the provider's says it (a number), else now."""
    return created if type(created) in (int, float) else int(time.time())


def call_inputs(tool_calls: list[TranslatedToolCall]) -> list[Any]:
    """Each call's arguments as an object: the object the provider sent (`given`: its text is what reading it back
    gives), else the text read, all at once (text that is not JSON is kept as it is: the answer still says it),
    {} for no arguments."""
    texts = [call.arguments for call in tool_calls if call.given is None and call.arguments]
    if len(texts) == len(tool_calls):  # every call's arguments came as text (the OpenAI family's): read in order
        return standard_loads_each(texts)
    if not texts:
        return [{} if call.given is None else call.given for call in tool_calls]
    read = iter(standard_loads_each(texts))
    return [call.given if call.given is not None else next(read) if call.arguments else {} for call in tool_calls]


def call_scope(call: TranslatedToolCall, given_input: Any = MISSING) -> dict[str, Any]:
    """One call as the answer templates read it: an object of CALL_FIELDS, and `input` where the format reads one."""
    fields = {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments or "{}",
        "extra_content": call.extra_content,
    }
    if given_input is not MISSING:
        fields["input"] = given_input
    return fields


def call_scopes(tool_calls: list[TranslatedToolCall], inputs: list[Any] | None) -> list[dict[str, Any]]:
    """The view's `tool_calls`: each call's `call_scope`, with its input where `inputs` holds them."""
    if inputs is None:
        return [call_scope(call) for call in tool_calls]
    return [call_scope(call, given_input) for call, given_input in zip(tool_calls, inputs, strict=True)]


def answer_scope(
    ids: Mapping[str, str],
    result: TranslateResult,
    said: dict[str, Any],
    answer_id: str,
    created: Any,
    inputs: list[Any] | None,
) -> dict[str, Any]:
    """The result as a template that reads the answer's scope whole reads it (a rich path, a stream's `end`): an
    object of VIEW_FIELDS, `ids` each made when read (`MadeIds`), `provider` what the provider would have said."""
    return {
        "id": answer_id,
        "created": created,
        "ids": MadeIds(ids, answer_id),
        "annotations": result.annotations,
        "model": result.model,
        "text": result.text,
        "reasoning_content": result.reasoning_content,
        "tool_calls": call_scopes(result.tool_calls, inputs),
        "finish_reason": result.finish_reason,
        "usage": result.usage,
        "message_extras": result.message_extras,
        "refusal": result.refusal,
        DERIVED: said,
    }


def own_notes(notes: list[Note]) -> list[Note]:
    """Template notes with a path below the view's `provider` named by the answer's own key (`usage...`), each
    built afresh (a NamedTuple's `_replace` costs several times a new one)."""
    return [Note(n.kind, own_path(n.path), n.message, n.side) for n in notes]


def own_path(path: str) -> str:
    """A note's path as the answer names it: one below the view's `provider` by the answer's own key."""
    return path.removeprefix(DERIVED + ".")


IDS_PER_DIGEST = 4  # an answer's made ids are cut from one BLAKE2b digest: 128 hex digits, 32 an id
ID_DIGITS = 32
IDS_HASH = hashlib.blake2b  # (CPython's own, cheaper per call than OpenSSL's SHA-256)
# `ids_digest` as a generated writer writes it, over the answer id's expression, the hash named `IDS_HASH` there: its
# made ids cut in its own lines (`made_id_code`) with no Python call (two calls cost about 1% of a Response).
IDS_DIGEST_CODE = "IDS_HASH({}.encode()).hexdigest()"


def ids_digest(answer_id: str) -> str:
    """The hex digest an answer's made ids are cut from (`made_id`): one hash per answer however many ids it makes,
    BLAKE2b (`IDS_HASH`; `IDS_DIGEST_CODE` the same in a generated writer's lines)."""
    return IDS_HASH(answer_id.encode()).hexdigest()


def made_id(prefix: str, digest: str, place: int) -> str:
    """The id `answer.ids` makes at `place` (its name's place in `answer.ids`): the prefix and that place's 32 hex
    digits of the answer's `ids_digest` (the same answer, the same ids; each name its own)."""
    return prefix + digest[ID_DIGITS * place : ID_DIGITS * (place + 1)]


def made_id_code(prefix: str, digest: str, place: int) -> str:
    """`made_id` as a Python expression over the digest's expression (`digest`), for a generated writer's lines."""
    return f"{prefix!r} + {digest}[{ID_DIGITS * place}:{ID_DIGITS * (place + 1)}]"


def made_ids(prefixes: Mapping[str, str], answer_id: str) -> dict[str, str]:
    """Every id `answer.ids` (`prefixes`) makes from an answer's id, each cut from its one digest."""
    digest = ids_digest(answer_id)
    return {name: made_id(prefix, digest, place) for place, (name, prefix) in enumerate(prefixes.items())}


class MadeIds(dict[str, str]):
    """The view's `ids` (`SourceFormat.made_ids`), made when a template first reads one by name (`ids.message`:
    the format's compiling refuses any other read of them), so an answer writing no item of a kind that has one
    (a Response of tool calls alone: no message, no reasoning) hashes nothing."""

    __slots__ = ("_answer_id", "_prefixes")

    def __init__(self, prefixes: Mapping[str, str], answer_id: str) -> None:
        super().__init__()
        self._prefixes, self._answer_id = prefixes, answer_id

    def __missing__(self, name: str) -> str:
        if name not in self._prefixes:
            raise KeyError(name)
        self.update(made_ids(self._prefixes, self._answer_id))  # one digest makes them all
        return self[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._prefixes else default


def remap(path: str, origins: Origins) -> str:
    """A normal-form path as the format's request names it: the longest known prefix replaced, the keys
    below it renamed back (`messages[3].tool_calls[0].function.arguments` -> `messages[2].content[1].input`)."""
    cut = len(path)
    while cut > 0:
        head = path[:cut]
        if head in origins:
            source, renames = origins[head]
            return _renamed(source, renames, path[cut:])
        cut = max(path.rfind(".", 0, cut), path.rfind("[", 0, cut))
    return path


def _renamed(source: str, renames: Mapping[str, str], rest: str) -> str:
    """`rest` (what follows a known prefix, from its `.` or `[` on) below `source`, the keys renamed back."""
    rest = rest.lstrip(".")
    for hub, own in renames.items():
        if rest.startswith(hub) and (len(rest) == len(hub) or rest[len(hub)] in ".["):
            rest = own[: -len(WHOLE)] if own.endswith(WHOLE) else own + rest[len(hub) :]
            break
    return f"{source}.{rest}" if rest and not rest.startswith("[") else source + rest


def remap_error(exc: TranslationError, origins: Origins) -> TranslationError:
    cls = type(exc)
    if cls is ResponseError:
        return exc
    return cls(remap(exc.path, origins), exc.message, provider=exc.provider)


class AnswerBody(dict[str, Any]):
    """An answer in a source format's shape (a dict: its JSON is what the format's API returns), with the
    `result` it was written from and its `notes` (the result's).

    A fused answer (`fused_answer_code`) writes the body with no TranslateResult between: it keeps the result's
    fields as it read them (`made_of`, in `TranslateResult`'s order, each call as `new_tool_call`'s arguments: the
    values today's result holds, the raw answer and a call's given object the caller's own as there), and the result
    is made of them on first read, so an answer whose result is never read builds none."""

    __slots__ = ("made", "made_of", "notes")  # (no instance dict made per answer for them)
    notes: tuple[Note, ...]
    made: TranslateResult | None  # the result, once set or made
    made_of: tuple[Any, ...]  # what a fused answer makes it of

    @property
    def result(self) -> TranslateResult:
        made = self.made
        if made is None:
            text, calls, *rest = self.made_of
            made = self.made = TranslateResult(text, [new_tool_call(*call) for call in calls], *rest)
        return made

    @result.setter
    def result(self, value: TranslateResult) -> None:
        self.made = value


def general_moments(fmt: SourceFormat) -> dict[str, Moment]:
    """Each stream moment as its templates walked one by one over a copy of the scope (its `piece` and each
    event's `sequence` set in it): the general code the generated writers (`SourceFormat.events`) are held to."""

    def walk(renders: tuple[Render, ...]) -> Moment:
        def write(scope: dict[str, Any], piece: Any, sequence: int, ctx: Ctx) -> list[Any]:
            s = {**scope} if piece is None else {**scope, "piece": piece}
            out = []
            for render in renders:
                s["sequence"] = sequence
                event = render(s, ctx)
                if event is not MISSING:  # a template that writes nothing sends no event
                    out.append(event)
                    sequence += 1
            return out

        return write

    moments = {**{name: walk(renders) for name, renders in fmt.stream.items()}, "end": walk(fmt.stream_end)}
    said = {name for name, renders in fmt.stream.items() if renders}
    for name, parts in once_moments(said).items():
        moments[name] = once(name.partition(".")[2], *(moments.get(part) for part in parts))
    return moments


# The kinds whose block may be said in one piece (a tool call held to the end of the stream is released whole), each
# with the names of its block's scope a `once.KIND` writer takes as arguments, in order, after the stream's scope
# (`answer_id`, `created`, `model`), the piece, the sequence and the Ctx: no scope is made per block said so
ONCE: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"tool_call": ("index", "item_id", "id", "name", "extra_content")}
)


def once_moments(names: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """Of the stream moments `names` (those writing an event), each `once.KIND` (a block said in one piece) as the
    moments it is written from, in order: its opening, its piece, its closing (`done.KIND`, else `close`), as
    `SourceEvents` writes a block opened, given its one piece and closed (`SourceFormat.events` writes it as one
    function)."""
    held = frozenset(names)
    return {
        f"once.{kind}": (f"open.{kind}", f"piece.{kind}", f"done.{kind}" if f"done.{kind}" in held else "close")
        for kind in ONCE
        if {f"open.{kind}", f"piece.{kind}"} & held
    }


def once(kind: str, opens: Moment | None, writes: Moment | None, closes: Moment | None) -> OnceMoment:
    """A block of `kind` said in one piece: its opening's events, its piece's, then its closing's (their scope adds
    the piece as all its `pieces`), numbered on; its scope is the stream's with its own names (`ONCE`) added."""
    names = ONCE[kind]

    def write(stream: dict[str, Any], piece: Any, sequence: int, ctx: Ctx, *own: Any) -> list[Any]:
        scope = {**stream, **dict(zip(names, own, strict=True))}
        out = opens(scope, None, sequence, ctx) if opens is not None else []
        if writes is not None:
            out += writes(scope, piece, sequence + len(out), ctx)
        if closes is not None:
            out += closes({**scope, "pieces": piece}, None, sequence + len(out), ctx)
        return out

    return write


@dataclass(slots=True)
class _Block:
    """One block the stream has opened: its kind, position, scope (a tool call's id and name), pieces, and
    its moments' writers looked up once (`write`: a piece's, `closes`: its closing events)."""

    kind: str
    index: int
    scope: dict[str, Any]
    write: Moment | None
    closes: Moment | None
    pieces: list[str]


@dataclass(slots=True)
class _Kind:
    """What every block of one kind shares, looked up once per stream: its moments' writers (`opens`, `write`: a
    piece's, `closes`), how its blocks are placed (`within`: its index counts only its kind's blocks) and named
    (`first`: its first block's `item_id`), and how many of its blocks have opened (`count`)."""

    opens: Moment | None
    write: Moment | None
    closes: Moment | None
    within: bool
    first: str
    count: int = 0


class Waiting(Protocol):
    """Where a translator writing a format's events (`StreamTranslator.into`) holds each event's moments to its end
    while the events are `opening` (stream.py's `_Waiting`). Its `reasoning` is where the translator's reasoning
    pieces go; while a reasoning block is open, the block's own handler is set over the method (`_straight`)."""

    held: list[Any]  # the moments held in this event

    def reasoning(self, out: list[dict[str, Any]], piece: str) -> None: ...  # to the events, or held

    def hold_reasoning(self, out: list[dict[str, Any]], piece: str) -> None: ...  # held to the end of its event


class SourceEvents:
    """A stream's moments -> the source format's stream events (the `stream` section), for one answer.

    The moments are what an OpenAI chunk is written from (`start`, a `reasoning`, `text` or `arguments` piece,
    a tool `call` opening), each appending its events to `out`: a StreamTranslator writing the format
    (`StreamTranslator.into`) calls them as the provider's events say them and builds no chunk; `chunk(c)`
    reads an OpenAI chunk into them. `end(result)` gives the closing events and sets `message` (the whole
    answer, as `translate_response` writes it). Blocks are opened, added to and closed as the stream section
    says, each event numbered (`sequence`), each moment's events written by the format's generated writer for
    it (`SourceFormat.events`).

    Reasoning blocks come in the order the provider sent them, each closed with what only the answer
    knows (its signature, its finished block): chunks say neither where one reasoning block ends nor its
    signature, so when the provider stream (`translator`: its `started` count and `partial()`) starts a new
    element during the reasoning that opens an answer, or the first other piece comes, the answer so far is
    translated and its reasoning blocks close the open one and send those no piece announced (redacted)
    whole. Reasoning after other blocks (interleaved) closes at the end.
    """

    def __init__(self, fmt: SourceFormat, translator: Any = None) -> None:
        self.format = fmt
        self.translator = translator
        self.message: AnswerBody | None = None
        self._moments: Mapping[str, Moment] = fmt.events or general_moments(fmt)
        self._once: OnceMoment | None = self._moments.get("once.tool_call")  # a call said whole (`released`)
        self._stream: dict[str, Any] = {}  # what every block's scope holds of the answer (its id, time and model)
        self._started = False
        self._id: str = ""
        self._created: Any = None  # the answer's time, as its first event said it
        self._model: Any = None  # the answer's model, as its first event said it
        self._sequence = 0
        self._blocks = 0
        self._open: _Block | None = None  # the open text or tool_call block
        self._reasoning: _Block | None = None  # the open reasoning block
        self._calls: dict[int, _Block] = {}  # the chunk's tool-call index -> its block
        self._sent = 0  # the answer's reasoning blocks sent (closed) so far
        # still in the reasoning an answer opens with: there, what the answer so far says (`look`) is read after
        # the whole provider event, as a chunk is, so a translator writing these events holds an event's moments
        # to its end while this is true (`StreamTranslator._moments`)
        self.opening = True
        self._seen = 0  # the translator's `started` count last looked at
        self._waiting = False  # the answer so far holds reasoning blocks not sent yet
        self._said: list[str] = []  # the reasoning pieces said
        self._covered = ""  # reasoning text a block sent whole already said, its pieces still to come
        self._unfinished: list[_Block] = []  # tool calls whose arguments come whole at the end: still open
        self._known: dict[str, _Kind] = {}  # each kind's writers, ids and count, once a block of it has opened
        self._final: tuple[dict[str, Any], list[Note], AnswerBody] | None = None  # the whole answer, once written
        self._ctx = Ctx(fmt.name, outbound=True)  # the events' (their notes are let go: see `_write`)
        self._notes = self._ctx.notes
        # a translator writing these events (`into`): where it holds each event's moments to its end while they are
        # `opening`; its reasoning pieces go to the open reasoning block's own handler there (`_straight`)
        self.waiting: Waiting | None = None

    def _emit(self, out: list[dict[str, Any]], name: str, scope: dict[str, Any], piece: Any = None) -> None:
        """The events of moment `name` (none when the format has no such moment), numbered."""
        self._write(out, self._moments.get(name), scope, piece)

    def _write(self, out: list[dict[str, Any]], moment: Moment | None, scope: dict[str, Any], piece: Any) -> None:
        """A moment's events written over `scope` (left as it is), numbered. One Ctx serves the stream: what a
        template notes here (a default written) is not an event's, so it is let go."""
        if moment is None:
            return
        written = moment(scope, piece, self._sequence, self._ctx)
        self._sequence += len(written)
        out += written
        if self._notes:
            self._notes.clear()

    def chunk(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        """One OpenAI chunk's events: the moments it says (a start, a reasoning, text or arguments piece, a tool
        call's opening), each given to its handler below. A StreamTranslator writing this format (`into`) gives
        the handlers its moments directly and builds no chunk; this reads chunks from anywhere else."""
        out: list[dict[str, Any]] = []
        if not self._started:
            self.start(out, (chunk.get("id"), chunk.get("created"), chunk.get("model", "")))
        else:
            self.look(out)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            piece = delta.get("reasoning_content")
            if piece:
                self.reasoning(out, piece)
            piece = delta.get("content")
            if piece:
                self.text(out, piece)
            for call in delta.get("tool_calls") or ():
                function = call.get("function") or {}
                self.call(out, call.get("index", 0), call.get("id"), function.get("name"), call.get("extra_content"),
                          function.get("arguments"))  # fmt: skip
        return out

    # ------------------------------------------------------------ the moments, as a stream says them

    def start(self, out: list[dict[str, Any]], header: tuple[Any, Any, Any]) -> None:
        """The stream's first moment: the answer's id, time and model (any of them None: made here)."""
        self._started = True
        self._id = header[0] or new_answer_id()
        self._model = header[2]
        self._created = header[1] or int(time.time())
        self._stream = {"answer_id": self._id, "created": self._created, "model": self._model}
        self._emit(out, "start", {"id": self._id, **self._stream})
        self.look(out)

    def look(self, out: list[dict[str, Any]]) -> None:
        """In the reasoning an answer opens with, once the provider stream has started a new element: the
        boundary between reasoning blocks, read from the answer so far (see the class)."""
        if self.opening and self.translator is not None and self.translator.started != self._seen:
            self._seen = self.translator.started
            known = self._snapshot()
            self._boundary(out, known, last=False)
            if known is not None and known[2] and self._reasoning is None and not self._waiting:
                self.opening = False  # the answer so far says something else and no reasoning is pending

    def reasoning(self, out: list[dict[str, Any]], piece: str) -> None:
        """A reasoning piece (a block sent whole may have said it already). While a reasoning block is open, the
        pieces go to it straight (`_straight`) until it closes."""
        if self.opening and (translator := self.translator) is not None and translator.started != self._seen:
            self.look(out)  # (what `look` asks first, asked here: nearly every piece has nothing new to look at)
        if covered := self._covered:  # (nearly always empty: asked first)
            if covered.startswith(piece):  # said by a block sent whole
                self._covered = covered[len(piece) :]
                self._said.append(piece)
                return
            self._covered = ""
        block = self._reasoning
        if block is None:
            block = self._reasoning = self._new_block(out, "reasoning", {}, close=False)
            self._straight(block)
        self._said.append(piece)
        block.pieces.append(piece)  # (as `_piece`, inline: the moment of nearly every event of a reasoning answer)
        write = block.write
        if write is not None:
            written = write(block.scope, piece, self._sequence, self._ctx)
            self._sequence += len(written)
            out += written
            if self._notes:
                self._notes.clear()

    def text(self, out: list[dict[str, Any]], piece: str) -> None:
        """A text piece: to a new text block, or the open one (nearly every moment of a text answer), whose pieces
        then go to it straight (`_straight`) until it closes."""
        block = self._open
        if self.opening:
            self.look(out)
            self._close_opening(out)
            block = self._open
        if block is None or block.kind != "text":
            block = self._open = self._new_block(out, "text", {})
            self._straight(block)
        self._piece(out, block, piece)

    def _straight(self, block: _Block) -> None:
        """The pieces of an open text or reasoning block (the moment of nearly every event of an answer), written
        to it straight: `text` or `reasoning` is then a handler holding the block's pieces and its writer bound to
        its scope (`SourceFormat.straight`), set on this instance over the method above (which still serves any other
        case: a reasoning piece when the provider stream has started an element since the last `look`) until the
        block closes (`_bent`). Per piece, only the stream's sequence number is asked."""
        bind = self.format.straight.get(f"piece.{block.kind}")
        if bind is None:  # (a piece moment that is not all displays: the method writes it, as it would anyway)
            return
        keep, say = block.pieces.append, bind(block.scope)
        translator, general = self.translator, SourceEvents.reasoning

        def text(out: list[dict[str, Any]], piece: str) -> None:
            keep(piece)
            self._sequence = say(out, piece, self._sequence)

        def reasoning(out: list[dict[str, Any]], piece: str) -> None:
            if self.opening and translator is not None and translator.started != self._seen:
                general(self, out, piece)  # what `look` may close the block on
                return
            self._said.append(piece)
            keep(piece)
            self._sequence = say(out, piece, self._sequence)

        # (set as an attribute, not through `vars`: the instance keeps its values inline, so every attribute read
        # and write on it stays specialized)
        setattr(self, block.kind, text if block.kind == "text" else reasoning)
        if block.kind != "reasoning" or (waiting := self.waiting) is None or translator is None:
            return
        held, hold = waiting.held, waiting.hold_reasoning

        def waited(out: list[dict[str, Any]], piece: str) -> None:
            """`reasoning` as the translator holding its events' moments asks it (`waiting`), with no step between:
            held to the end of the event behind what it holds, or when an element started since the last look."""
            if held or translator.started != self._seen:
                hold(out, piece)
                return
            self._said.append(piece)
            keep(piece)
            self._sequence = say(out, piece, self._sequence)

        waiting.reasoning = waited  # type: ignore[method-assign]  # (over the method: see `Waiting`)

    def _bent(self, kind: str) -> None:
        """The open block of `kind` (`text`, `reasoning`) is closing or no longer the open one: its pieces go
        through the method again (`_straight`)."""
        with suppress(AttributeError):  # (none set)
            delattr(self, kind)
            if kind == "reasoning" and self.waiting is not None:
                delattr(self.waiting, kind)

    def call(self, out: list[dict[str, Any]], index: int, call_id: Any, name: Any, extra: Any, arguments: Any) -> None:
        """A tool call's entry: the call at `index` opens at its first (with its id, name and any signature),
        and its arguments piece, if any, follows."""
        if self.opening:
            self.look(out)
            self._close_opening(out)
        block = self._calls.get(index)
        if block is None:
            scope = {"id": call_id, "name": name, "extra_content": extra}
            block = self._calls[index] = self._open = self._new_block(out, "tool_call", scope)
        if arguments:
            self._piece(out, block, arguments)

    def released(
        self, out: list[dict[str, Any]], held: list[Any], calls: list[Any], moment: Callable[..., None]
    ) -> None:
        """The calls a stream held to its end, in order (`StreamTranslator.finish`): an index is a whole call (its
        translation in `calls`), said whole; any other item a held opening or arguments piece, given to `moment` as
        it was held. A call said whole has its opening, its one piece and its closing written at once (`once.
        tool_call`), no block kept for it, as `call` would write them with the call's block closed as the next
        opens; else (the answer's opening reasoning not over, no arguments, a call still waiting for its arguments:
        it closes at the end, before this one) as `call`. One loop: the moment of every call a stream holds whole."""
        once, place, ctx, notes, stream = self._once, self._place, self._ctx, self._notes, self._stream
        # the writer and kind of a call said whole, while the state it needs (and leaves as it is) holds: asked once
        # per run of such calls
        ready: tuple[OnceMoment, _Kind] | None = None
        for item in held:
            if type(item) is not int:
                moment(self, out, *item)
                ready = None
                continue
            call = calls[item]
            arguments = call.arguments
            if ready is None and once is not None and not self.opening and arguments:
                if self._open is not None:
                    self._close_open(out)
                if not self._unfinished:
                    ready = once, self._known.get("tool_call") or self._kind("tool_call")
            if ready is not None and arguments:  # (as `_write`, inline)
                at, item_id = place(ready[1])
                written = ready[0](stream, arguments, self._sequence, ctx, at, item_id, call.id, call.name,
                                   call.extra_content)  # fmt: skip
                self._sequence += len(written)
                out += written
                if notes:
                    notes.clear()
            else:
                self.call(out, item, call.id, call.name, call.extra_content, arguments)
                ready = None

    def arguments(self, out: list[dict[str, Any]], index: int, piece: str) -> None:
        """An arguments piece of the call at `index`: straight to its open block (the moment of nearly every event
        of a call's arguments), else as `call` says."""
        block = self._calls.get(index)
        if block is None or self.opening:
            self.call(out, index, None, None, None, piece)
        elif piece:
            self._piece(out, block, piece)

    def _piece(self, out: list[dict[str, Any]], block: _Block, piece: str) -> None:
        block.pieces.append(piece)
        write = block.write
        if write is not None:  # as `_write`, inline: the moment of nearly every event
            written = write(block.scope, piece, self._sequence, self._ctx)
            self._sequence += len(written)
            out += written
            if self._notes:
                self._notes.clear()

    def _new_block(self, out: list[dict[str, Any]], kind: str, scope: dict[str, Any], close: bool = True) -> _Block:
        if close:
            self._close_open(out)
        block, opens = self._block(kind, scope)
        self._write(out, opens, block.scope, None)
        return block

    def _close_open(self, out: list[dict[str, Any]]) -> None:
        """The open text or tool_call block closes, as another opens."""
        if self._open is not None:
            if self._open.kind == "tool_call" and not self._open.pieces:
                self._unfinished.append(self._open)  # its arguments come later: it closes at the end
            else:
                self._close(out, self._open)
            self._open = None
            self._bent("text")

    def _kind(self, kind: str) -> _Kind:
        """The writers and ids of a kind's blocks, looked up at its first block. Its first block's `item_id` is the
        id the whole answer gives that kind (`stream.item_ids`: the kind's `answer.ids` name; else the answer's
        id)."""
        moments, fmt = self._moments, self.format
        closes = moments.get(f"done.{kind}")
        named = fmt.item_ids.get(kind)
        known = self._known[kind] = _Kind(
            moments.get(f"open.{kind}"),
            moments.get(f"piece.{kind}"),
            moments.get("close") if closes is None else closes,
            kind in fmt.index_within_kind,
            self._id if not named else fmt.made_ids(self._id)[named],
        )
        return known

    def _block(self, kind: str, scope: dict[str, Any], named: str = "") -> tuple[_Block, Moment | None]:
        """A new block of `kind`, and the writer of its opening events: its scope, with its position and ids
        (`_place`), and its moments' writers."""
        known = self._known.get(kind) or self._kind(kind)
        index, item_id = self._place(known if not named else self._known.get(named) or self._kind(named))
        scope["index"] = index
        scope["answer_id"] = self._id
        scope["item_id"] = item_id
        scope["created"] = self._created
        scope["model"] = self._model
        return _Block(kind, self._blocks - 1, scope, known.write, known.closes, []), known.opens

    def _place(self, ids: _Kind) -> tuple[int, str]:
        """A new block counted: its index and its `item_id` as a block of kind `ids` (its own, or the kind it is
        named as): its kind's `first` for the first block of its kind, `<first>_<index>` for a later one (unique per
        kind, as a format naming its blocks needs)."""
        seen = ids.count
        ids.count = seen + 1
        index = blocks = self._blocks
        self._blocks = blocks + 1
        if ids.within:
            index = seen
        return index, f"{ids.first}_{index}" if seen else ids.first

    def _close(self, out: list[dict[str, Any]], block: _Block, whole: Any = MISSING) -> None:
        """A block's closing events: its signature piece (reasoning), then `done.KIND` (or `close`), whose scope
        adds its pieces joined and, when known, the finished block as the answer writes it."""
        scope = {**block.scope, "pieces": "".join(block.pieces)}
        if isinstance(whole, dict):
            scope["block"] = whole
            signature = whole.get("signature")
            if block.kind == "reasoning" and isinstance(signature, str) and signature:
                self._emit(out, "piece.signature", block.scope, signature)
        self._write(out, block.closes, scope, None)

    def _whole(self, out: list[dict[str, Any]], blocks: list[Any]) -> None:
        """Reasoning blocks no piece announced (redacted, sealed state): each opened and closed whole."""
        for whole in blocks:
            block, opens = self._block("whole", {"block": whole}, named="reasoning")
            self._write(out, opens, block.scope, None)
            self._close(out, block, whole)
            self._sent += 1

    def _snapshot(self) -> tuple[list[Any], str, bool] | None:
        """The reasoning blocks the answer so far opens with, as the format writes them, its reasoning text,
        and whether it holds anything else (None: not readable yet). Written as if text followed, so a block
        the answer puts after its text stays out."""
        if self.translator is not None and self.translator.result is not None:  # the stream has ended
            result = self.translator.result
            return self._reasoning_of(self._written(result)[2], leading=True), result.reasoning_content, True
        result = self.translator.partial() if self.translator is not None else None
        if result is None:
            return None
        try:
            answer = self.format.write(replace(result, text=result.text or " "), self._id, [])
        except ToolnexusError:  # what the answer so far lacks, the whole one will say
            return None
        return (
            self._reasoning_of(answer, leading=True),
            result.reasoning_content,
            bool(result.text or result.tool_calls),
        )

    def _written(self, result: TranslateResult) -> tuple[dict[str, Any], list[Note], AnswerBody]:
        """The whole answer's view, notes and writing, made once."""
        if self._final is None:
            fmt, notes = self.format, list[Note]()
            message = AnswerBody(fmt.write(result, self._id, notes, self._created))
            inputs = call_inputs(result.tool_calls) if fmt.reads_input else None
            view = answer_scope(fmt.ids, result, fmt.said(result, []), self._id, answer_time(self._created), inputs)
            self._final = view, notes, message
        return self._final

    def _reasoning_of(self, answer: dict[str, Any], leading: bool = False) -> list[Any]:
        """The answer's reasoning blocks; `leading`: only those before its first other block."""
        fmt = self.format
        kind, kinds = fmt.kind, fmt.reasoning_kinds
        blocks = answer.get(fmt.blocks_into, []) if fmt.blocks_into is not None else ()
        if not leading:  # every block of the answer looked at, in C (a block that is no object: one by one)
            try:
                return list(compress(blocks, map(kinds.__contains__, map(dict.get, blocks, repeat(kind)))))
            except TypeError:
                return [block for block in blocks if isinstance(block, dict) and block.get(kind) in kinds]
        out = []
        for block in blocks:
            if not (isinstance(block, dict) and block.get(kind) in kinds):
                break
            out.append(block)
        return out

    def _boundary(self, out: list[dict[str, Any]], known: tuple[list[Any], str, bool] | None, last: bool) -> None:
        """The reasoning blocks known so far (the answer's, and its reasoning text): the open one closes once a
        later one exists (or `last`), and those before the newest (all, when `last`) that no piece announced go
        whole. Closing the last, the reasoning text the pieces did not say (a provider streaming only part of
        it) is said first."""
        if known is None:
            return
        blocks, reasoning, _ = known
        done = self._sent
        live = self._reasoning
        if live is not None and (last or len(blocks) > done + 1):
            if last:
                self._catch_up(out, live, reasoning)
            self._close(out, live, blocks[done] if done < len(blocks) else MISSING)
            self._reasoning = None
            self._bent("reasoning")
            self._sent += 1
        if self._reasoning is None:
            self._whole(out, blocks[self._sent : len(blocks) if last else max(len(blocks) - 1, self._sent)])
        self._waiting = len(blocks) > self._sent
        said = "".join(self._said)
        if last and self._reasoning is None and reasoning.startswith(said):
            self._covered = reasoning[len(said) :]  # pieces still to come of what went whole: not said twice

    def _catch_up(self, out: list[dict[str, Any]], block: _Block, reasoning: str) -> None:
        """The rest of the answer's reasoning text, as one last piece, when the pieces said only its start."""
        said = "".join(self._said)
        if len(reasoning) > len(said) and reasoning.startswith(said):
            self._piece(out, block, reasoning[len(said) :])
            self._said = [reasoning]

    def _close_opening(self, out: list[dict[str, Any]]) -> None:
        """Another kind's first piece: the reasoning the answer opened with is over."""
        if not self.opening:
            return
        self.opening = False
        if self._reasoning is not None or self._waiting:
            self._boundary(out, self._snapshot(), last=True)

    def end(self, result: TranslateResult) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not self._started:
            self.start(out, (None, None, result.model))
        view, notes, message = self._written(result)
        blocks = self._reasoning_of(message)
        if self.opening:
            self.opening = False
            self._boundary(out, (self._reasoning_of(message, leading=True), result.reasoning_content, True), last=True)
        if self._open is not None:
            self._unfinished.append(self._open)
            self._open = None
            self._bent("text")
        for block in sorted(self._unfinished, key=lambda b: b.index):
            self._close(out, block)
        self._unfinished.clear()
        if self._reasoning is not None:  # reasoning after other blocks (interleaved): closed last
            self._catch_up(out, self._reasoning, result.reasoning_content)
            self._close(out, self._reasoning, blocks[self._sent] if self._sent < len(blocks) else MISSING)
            self._reasoning = None
            self._bent("reasoning")
            self._sent += 1
        self._whole(out, blocks[self._sent :])
        self._write(out, self._moments.get("end"), {**view, "answer_id": self._id, "answer": dict(message)}, None)
        message.result = result
        message.notes = (*result.notes, *notes)
        self.message = message
        self.translator = self.waiting = None  # nothing more is read from them: no cycle (they hold these events)
        # outlives the answer
        return out


class SourceStream:
    """A provider stream -> the source format's events, for callers that do their own HTTP.

    `feed(data)` per provider event returns the format's events; `finish()` the closing ones, and sets
    `result` (the TranslateResult) and `message` (the whole answer, as `translate_response` writes it).
    """

    def __init__(self, fmt: SourceFormat, translator: Any) -> None:
        self.translator = translator
        self.events: SourceEvents = translator.into(fmt)  # the translator now writes the format's events
        self.result: TranslateResult | None = None
        self.message: AnswerBody | None = None
        self.feed: Callable[[str], list[dict[str, Any]]] = translator.feed  # no call of its own per event

    def finish(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.translator.finish()
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
    its errors and notes naming the format's paths. The fields are read once; the transcript by the pair's fused
    function when it takes it (`_fused_source`), else by the format's reader, then the provider's rules."""
    if not isinstance(request, dict):
        raise fmt._fail("", f"the request must be an object, got {type(request).__name__}")
    notes: list[Note] = []
    hub, origins = fmt.read_fields(fmt, request, notes, unknown_fields)
    caller = fmt.caller_tools
    write_tools = None if caller is None else inbound.caller_tools(caller)
    fused = fmt.fused.get(inbound.provider)
    if fused is not None:
        body = _fused_source(fmt, fused, inbound, request, hub, origins, notes, write_tools, system, default_system,
                             unknown_fields)  # fmt: skip
        if body is not None:
            return body
    objects = not inbound.reads_arguments_json
    # a tool-call input's text, which the provider's read takes as the object it was written of
    written: WrittenTexts | None = None if objects else {}
    records: list[Record] = []
    if fmt.normal is None:
        own_tools = write_tools is None  # the declarations read as Chat Completions ones, with the transcript
        records = fmt.read_transcript(request, hub, origins, notes, unknown_fields, objects, written, own_tools)
    tools = None
    if write_tools is not None and request.get(fmt.tools_each) is not None:  # read here, after the transcript
        given = request[fmt.tools_each]
        tools = _written_tools(write_tools, given, inbound.provider)
        hub["tools"] = given if tools is not None else fmt._tools(given, records, notes, unknown_fields)
    try:
        body = inbound.translate(
            hub,
            system=system,
            default_system=default_system,
            unknown_fields=unknown_fields,
            written=written,
            tools=tools,
        )
    except TranslationError as exc:
        raise remap_error(exc, placed(origins, records)) from None
    if body.notes:
        paths = named([n.path for n in body.notes], origins, records)
        body.notes = (*notes, *(Note(n.kind, p, n.message, n.side) for n, p in zip(body.notes, paths, strict=True)))
    else:
        body.notes = tuple(notes)
    return body


def _fused_source(
    fmt: SourceFormat,
    fused: Fused,
    inbound: Any,
    request: dict[str, Any],
    hub: dict[str, Any],
    origins: Origins,
    notes: list[Note],
    write_tools: Any,
    system: str | None,
    default_system: str | None,
    unknown_fields: Any,
) -> Any:
    """The body with the transcript written by the pair's fused function (its notes named in the format's paths
    already, so only the others are named, by `origins`); None when it declines, when the tools are not written
    as they are, or on any error: then today's route runs from the transcript on, which names every error."""
    items = request.get(fmt.each)
    if type(items) is not list or not items:
        return None
    try:
        written = fused(items, None if fmt.system is None else request.get(fmt.system))
    except Exception:  # (generated code meeting a shape it did not foresee: today's route reads it, or names it)
        return None
    if written is None:
        return None
    transcript, sent_ids = written
    scope = hub.copy()
    scope["messages"] = items  # what the provider's checks of the transcript's presence and JSON read
    tools = None
    given = None if fmt.tools_each is None else request.get(fmt.tools_each)
    if given is not None:
        tools = None if write_tools is None else _written_tools(write_tools, given, inbound.provider)
        if tools is None:
            return None
        scope["tools"] = given
    try:
        body = inbound.translate(scope, system=system, default_system=default_system, unknown_fields=unknown_fields,
                                 tools=tools, transcript=transcript)  # fmt: skip
    except ToolnexusError:
        return None
    if sent_ids:
        body.id_map = sent_ids
    kept = body.notes
    if kept:
        starts, ends = body.transcript_notes.start, body.transcript_notes.stop
        body.notes = (
            *notes,
            *[Note(n.kind, remap(n.path, origins), n.message, n.side) for n in kept[:starts]],
            *kept[starts:ends],
            *[Note(n.kind, remap(n.path, origins), n.message, n.side) for n in kept[ends:]],
        )
    else:
        body.notes = tuple(notes)
    return body


def _written_tools(write: Any, given: Any, provider: str) -> tuple[list[Any], set[str]] | None:
    """The caller's declarations written by the provider's tools function as they are (the hub keeps them, so
    the request's JSON check walks them at their own paths); None when it declines them, raises or notes
    anything: then they are read as Chat Completions tools first, where each note and error is placed."""
    ctx = Ctx(provider)
    try:
        written = write(given, ctx)
    except ToolnexusError:
        return None
    return written if written is not None and not ctx.notes else None
