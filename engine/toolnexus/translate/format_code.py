"""A source format's transcript reader as one generated function (README "Source formats").

The function reads the transcript (the system key, then each message or item) the way
`SourceFormat._message`, `_item`, `_add`, `_standalone` and `_parts` do, with the role and kind
tables folded into code: per block, a test of its common shape (an object of a known kind with only
the keys its template reads) and its template pasted inline (`templates.inline_node`), then the
write and where it came from (`origins`). It decides nothing itself: anything else (a key to settle,
a block of no kind, a value a template refuses) makes it give up (None), and `SourceFormat.read`
reads the whole transcript again the general way, which writes the same messages, notes the same
drops and raises the same located TranslationError. tests/test_source_code.py holds the two to the
same result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import Note
from ..language.codegen import Namespace, indent
from ..language.fold import displayed_afresh
from ..language.jsonsafe import WrittenTexts
from ..language.loader import Key
from ..language.paths import MISSING, scope_fields, simple_steps
from ..language.templates import (
    SEAL,
    Apply,
    Array,
    Const,
    Ctx,
    Get,
    KeySeal,
    Node,
    NoteSink,
    Obj,
    When,
    inline_node,
    is_empty,
    read_lines,
    reads_of,
    sealed,
    unseal,
)
from .formats import (
    CALL_FIELDS,
    DERIVED,
    FALSY_EMPTY,
    IDS_DIGEST_CODE,
    IDS_HASH,
    LATE,
    ONCE,
    STRAIGHT,
    TOOL_RECORD,
    VIEW_FIELDS,
    WHOLE,
    AnswerBody,
    Bind,
    FieldsReader,
    Kind,
    MadeIds,
    Moment,
    Record,
    SourceFormat,
    answer_scope,
    answer_time,
    call_inputs,
    call_scope,
    call_scopes,
    made_id_code,
    new_answer_id,
    once_moments,
    own_notes,
    own_path,
    quiet,
    unread,
)
from .result import TranslateResult
from .stream_rules import NO_READS, AnswerReads

# (the normal-form messages, their records, each message with the role its blocks were read as)
Read = tuple[list[dict[str, Any]], list[Record], list[tuple[dict[str, Any], str]]]
Reader = Callable[[list[Any], Any, bool, WrittenTexts | None], Read | None]  # (`Ctx.written`: the last)
ToolsReader = Callable[[Any, Callable[[Record], None]], list[Any] | None]  # the declarations (records added)
Writer = Callable[[Any, Any, Any, list[Note]], dict[str, Any]]  # (the result, the answer's id and time, the notes)
Answer = Callable[[TranslateResult, Any], AnswerBody]  # (the result, the provider's answer it was read from)
# The usage read backwards (`SourceFormat.usage`): each count's path below `said`, its result count, those subtracted
Usage = tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...]
EMPTY: Mapping[str, str] = MappingProxyType({})
# The last message `cur` joined (its role tested): its index `n`, its string content made a text part for more.
_JOINED = [
    "n = len(out) - 1",
    "if isinstance(cur.get('content'), str): cur['content'] = [{'type': 'text', 'text': cur['content']}]",
]


class ReaderGen(Namespace):
    """Lines of the reader, and the names they use (bound in its namespace)."""

    def __init__(self, fmt: SourceFormat) -> None:
        self.fmt = fmt
        # The roles a later block may join (a string content then made a text part): a message of another role
        # whose content is not a list keeps its form, so it is not in `made` (`SourceFormat.read_recorded`).
        self.joined = fmt.joining_roles | {kind.joins for kind in (fmt.items or {}).values() if kind.joins}
        super().__init__({"MISSING": MISSING, "unseal": unseal, "Ctx": Ctx, "EMPTY": EMPTY, "quiet": quiet,
                          "inside_read": inside_read})  # fmt: skip
        self.key_values: dict[int, str] = {}  # the last pasted template's (`Inline.key_values`)

    def template(self, kind: Kind, target: str, scope: str, ctx: str = "c") -> tuple[list[str], list[str]]:
        """The kind's template pasted over the block at `scope`: its reads of the block, then the block's shape
        test (`shape`); and the lines writing `target` (rendering with the Ctx named `ctx`)."""
        assert kind.node is not None
        pasted = inline_node(kind.node, scope, target, is_dict=True, tag=self.fresh("_"), ctx=ctx)
        self.names.update(pasted.names)
        self.key_values = pasted.key_values
        return [*pasted.head, *self.shape(kind, scope, pasted.firsts)], pasted.body

    # ------------------------------------------------------------------ messages

    def new(self, role: str) -> list[str]:
        """A new normal-form message of `role` as `cur` (`SourceFormat._new`), its index in `out` as `n`."""
        return [
            "n = len(out)",
            f"cur = {{'role': {role!r}, 'content': []}}",
            "R(('messages[{}]', n, 0, WS, i, None, EMPTY))",
            "out.append(cur)",
            f"made.append((cur, {role!r}))",
        ]

    def current(self, role: str) -> list[str]:
        """The last message when it has `role`, else a new one, as `cur` (`SourceFormat._current`), its index `n`."""
        return [f"if out and (cur := out[-1])['role'] == {role!r}:", *indent(_JOINED), "else:", *indent(self.new(role))]

    def opened(self, role: str, join: bool) -> list[str]:
        """`cur` opened when no block has opened it yet."""
        if not join:
            return ["if cur is None:", *indent(self.new(role))]
        return [
            "if cur is None:",
            "    if joining:",
            *indent(self.current(role), 8),
            "    else:",
            *indent(self.new(role), 8),
        ]

    def message(self, role: str, join: bool) -> list[str]:
        """One message's content (`content`) of `role` at `WS` (of `i`), its blocks at `BS` (of `i` and `j`)
        (`_message`)."""
        lines = ["if type(content) is str:"]
        fresh = [
            "R(('messages[{}]', len(out), 0, WS, i, None, EMPTY))",
            f"cur = {{'role': {role!r}, 'content': content}}",
            "out.append(cur)",
            *([f"made.append((cur, {role!r}))"] if role in self.joined else []),
        ]
        if join:
            lines += [
                f"    if out and (cur := out[-1])['role'] == {role!r}:",
                *indent(_JOINED, 8),
                "        parts = cur['content']",
                "        R(('messages[{}].content[{}]', n, len(parts), WS, i, None, EMPTY))",
                "        parts.append({'type': 'text', 'text': content})",
                "    else:",
                *indent(fresh, 8),
            ]
        else:
            lines += indent(fresh)
        lines += ["elif type(content) is list:", "    cur = None"]
        if join:
            lines.append("    joining = True")
        lines += ["    for j, b in enumerate(content):", "        if type(b) is not dict: return None"]
        lines.append(f"        t = b.get({self.fmt.kind!r})")
        branch = "if"
        for name, kind in self.fmt.roles[role].items():
            lines.append(f"        {branch} t == {name!r}:")
            lines += indent(self.block(kind, role, join), 12)
            branch = "elif"
        lines += ["        else: return None" if branch == "elif" else "        return None", "else: return None"]
        return lines

    def shape(self, kind: Kind, scope: str, firsts: Mapping[str, str]) -> list[str]:
        """The fast test of a block's shape: only the keys its kind reads, or listed ones settled silently (else
        the general read settles them). Its keys are those known when as many of them are there as it has: the
        kind's own key is (its value was matched), a key the template reads up front is where its variable (in
        `firsts`) is not MISSING; no view of its keys is made."""
        lines = []
        if kind.inside:
            paths, inside = self.name(kind.paths, "PATHS_"), self.name(kind.inside, "INSIDE_")
            lines.append(f"if not inside_read({scope}, {paths}, {inside}): return None")
        if kind.known is None:
            return lines
        there = ["1"] if self.fmt.kind in kind.known else []
        for key in sorted(kind.known - {self.fmt.kind}):
            there.append(f"({firsts[key]} is not MISSING)" if key in firsts else f"({key!r} in {scope})")
        other = f"len({scope}) != {' + '.join(there)}"  # a key not known
        if not kind.unsupported:
            return [*lines, f"if {other}: return None"]
        known, table = self.name(kind.known, "KNOWN_"), self.name(kind.unsupported, "UNSUPPORTED_")
        return [*lines, f"if {other} and not quiet({scope}, {known}, {table}): return None"]

    def block(self, kind: Kind, role: str, join: bool) -> list[str]:
        """One block `b` (`BS` of `i` and `j`) of a `role` message, into `cur` (`_message`'s loop body)."""
        lines, written = self.template(kind, "w", "b")
        if kind.state is not None:
            lines += [
                *_sealed_state("b", kind.state[0]),
                "if st is not MISSING:",
                *indent(self.opened(role, join)),
                *indent(_set_state(kind.state[1])),
                "    continue",
            ]
        if kind.mode == "message":
            lines += ["cur = None", "joining = False"] if join else ["cur = None"]
            standalone = self.standalone(kind, role, written, "BS, i, j")
            assert standalone is not None  # its role is given
            return lines + standalone
        return lines + written + self.opened(role, join) + self.add(kind, "BS, i, j")

    def add(self, kind: Kind, source: str) -> list[str]:
        """A part or an item `w` added to `cur`, the last message (`_add`); `source`: where it was read from, as
        its record holds it (a path's format and the numbers it takes, formatted only when a path is asked)."""
        renames = self.name(kind.renames, "RENAMES_")
        if kind.mode == "part":
            return [
                "parts = cur['content']",
                f"R(('messages[{{}}].content[{{}}]', n, len(parts), {source}, {renames}))",
                "parts.append(w)",
            ]
        into = kind.into.replace("{", "{{").replace("}", "}}")
        return [  # the message's list made with its first item (no empty list made for every item)
            f"items = cur.get({kind.into!r})",
            "if items is None:",
            f"    items = cur[{kind.into!r}] = [w]",
            f"    R(('messages[{{}}].{into}', n, 0, {source}, EMPTY))",
            f"    R(('messages[{{}}].{into}[{{}}]', n, 0, {source}, {renames}))",
            "else:",
            f"    R(('messages[{{}}].{into}[{{}}]', n, len(items), {source}, {renames}))",
            "    items.append(w)",
        ]

    def standalone(self, kind: Kind, role: str | None, writes: list[str], source: str) -> list[str] | None:
        """A `message` kind (its template's lines `writes`, after its reads) read at `source` (as in `add`): a
        normal-form message of its own, its `blocks` lists read as parts with the kinds of `role` (None: of the
        role it writes) (`_standalone`)."""
        lines = list(writes)
        written = written_role(kind)  # an object template writing a constant role: `w` is an object of that role
        if written is None:
            lines.append("if type(w) is not dict: return None")
        if role is None:
            role = written
            if role is None:
                return None  # the role is known only at run time: never so in the formats given; read generally
        kinds = self.fmt.roles.get(role, MappingProxyType({}))
        for key in kind.blocks:
            own = kind.renames.get(key, key).removesuffix(WHOLE)  # the block's own key for it
            lines += [f"nested = w.get({key!r})", "if type(nested) is list:"]
            lines.append(f"    nsrc = {source.replace(', ', '.format(', 1)}) + {'.' + own + '[{0}]'!r}")
            lines += indent(self.parts(kinds))
            lines.append(f"    w[{key!r}] = ps")
        renames = self.name(kind.renames, "RENAMES_")
        listed = "if type(w.get('content')) is list: "  # (else its form is kept: see `joined`)
        return [
            *lines,
            f"R(('messages[{{}}]', len(out), 0, {source}, {renames}))",
            "out.append(w)",
            f"{'' if role in self.joined else listed}made.append((w, {role!r}))",
        ]

    def parts(self, kinds: Mapping[str, Kind]) -> list[str]:
        """Blocks `nested` inside a block, read as parts into `ps` (`_parts`)."""
        lines = [
            "ps = []",
            "for j2, b2 in enumerate(nested):",
            "    if type(b2) is not dict: return None",
            f"    t2 = b2.get({self.fmt.kind!r})",
        ]
        branch = "if"
        for name, kind in kinds.items():
            if kind.mode != "part":
                continue  # refused nested: the general read says where
            renames = self.name(kind.renames, "RENAMES_")
            lines.append(f"    {branch} t2 == {name!r}:")
            read, written = self.template(kind, "w2", "b2")
            body = [
                *read,
                *written,
                f"R(('messages[{{}}].content[{{}}]', len(out), j2, nsrc, j2, None, {renames}))",
                "ps.append(w2)",
            ]
            lines += indent(body, 8)
            branch = "elif"
        lines.append("    else: return None" if branch == "elif" else "    return None")
        return lines

    # ------------------------------------------------------------------ the tools

    def tools(self) -> list[str] | None:
        """The tool declarations read as `SourceFormat._tools` reads them, the tool's template pasted inline: a
        tool with a key to settle (or one its template refuses) makes it give up (None), and `_tools` reads the
        list again, which notes or refuses it where it is."""
        fmt = self.fmt
        if fmt.tools_each is None or fmt.tool_node is None:
            return None
        reads = self.name(fmt.tool_reads, "TOOL_KEYS_")
        table = self.name(fmt.tool_unsupported, "UNSUPPORTED_")
        renames = self.name(fmt.tool_renames, "RENAMES_")
        source = escaped_path(fmt.tools_each) + "[{}]"
        pasted = inline_node(fmt.tool_node, "t", "w", is_dict=True, tag=self.fresh("_"))
        self.names.update(pasted.names)
        return [
            "def tools(given, R):",
            "    if type(given) is not list: return None",
            f"    c = Ctx({fmt.name!r})",
            "    out = []",
            "    for i, t in enumerate(given):",
            "        if type(t) is not dict: return None",
            f"        if not t.keys() <= {reads} and not quiet(t, {reads}, {table}): return None",
            *indent([*pasted.head, *pasted.body], 8),
            f"        R(({TOOL_RECORD!r}, i, 0, {source!r}, i, None, {renames}))",
            "        out.append({'type': 'function', 'function': w})",
            "    return out",
        ]

    # ------------------------------------------------------------------ the transcript

    def item(self) -> list[str] | None:
        """One typed item `m` of a flat transcript, at `WS` of `i` (`_item`); None: not generated (read generally)."""
        fmt = self.fmt
        assert fmt.items is not None
        lines: list[str] = []
        branch = "if"
        for name, kind in fmt.items.items():
            body, written = self.template(kind, "w", "m")
            if kind.joins is None:
                standalone = self.standalone(kind, None, written, "WS, i, None")
                if standalone is None:
                    return None
                body += standalone
            else:
                if kind.state is not None:
                    body += [
                        *_sealed_state("m", kind.state[0]),
                        "if st is not MISSING:",
                        *indent(self.current(kind.joins)),
                        *indent(_set_state(kind.state[1])),
                        "    continue",
                    ]
                body += [*written, *self.current(kind.joins), *self.add(kind, "WS, i, None")]
            lines += [f"{branch} t == {name!r}:", *indent(body)]
            branch = "elif"
        return [*lines, "else: return None"] if lines else ["return None"]

    def reader(self) -> list[str] | None:
        fmt = self.fmt
        lines = [
            "def transcript(msgs, system, objects=False, written=None):",
            "    out, records, made = [], [], []",
            "    R = records.append",
            f"    c = Ctx({fmt.name!r})",
            "    c.objects, c.written = objects, written",
        ]
        if fmt.system is not None and "system" in fmt.roles:
            held = escaped_path(fmt.system)
            lines += [
                "    if system is not None:",
                f"        content = system; WS, BS, i = {held!r}, {held + '[{1}]'!r}, None",
                *indent(self.message("system", False), 8),
            ]
        each = escaped_path(fmt.each)
        lines += [
            f"    WS, BS = {each + '[{0}]'!r}, {each + '[{0}].content[{1}]'!r}  # formatted when a path is asked",
            "    for i, m in enumerate(msgs):",
            "        if type(m) is not dict: return None",
        ]
        keys: set[str] = {"role", "content"}
        if fmt.items is not None:
            keys.add(fmt.kind)
            items = self.item()
            if items is None:
                return None
            lines += [
                f"        t = m.get({fmt.kind!r}, {fmt.message_kind!r})",
                f"        if t != {fmt.message_kind!r}:",
                *indent(items, 12),
                "            continue",
            ]
        known = self.name(frozenset(keys), "MESSAGE_KEYS_")
        table = self.name(fmt.message_unsupported, "UNSUPPORTED_")
        there = "(role is not MISSING) + (content is not MISSING)" + (
            f" + ({fmt.kind!r} in m)" if fmt.items is not None else ""
        )
        lines += [  # (its keys known when as many of them are there as it has, as in `shape`)
            "        role = m.get('role', MISSING)",
            "        content = m.get('content', MISSING)",
            f"        if len(m) != {there} and not quiet(m, {known}, {table}): return None",
        ]
        branch = "if"
        for role in sorted(fmt.transcript_roles):
            lines.append(f"        {branch} role == {role!r}:")
            lines += indent(self.message(role, role in fmt.joining_roles), 12)
            branch = "elif"
        lines += ["        else: return None", "    return out, records, made"]
        return lines


def generate(fmt: SourceFormat) -> tuple[str, Reader | None, ToolsReader | None]:
    """The format's transcript reader, its tools reader and their source (None: the general read serves)."""
    gen = ReaderGen(fmt)
    lines = gen.reader()
    tools = gen.tools()
    text = "\n".join([*(lines or ()), *(tools or ())]) + "\n" if lines or tools else ""
    namespace = dict(gen.names)
    exec(compile(text, f"<reader {fmt.name}>", "exec"), namespace)
    return text, namespace.get("transcript"), namespace.get("tools")


def generate_fields(fmt: SourceFormat) -> tuple[str, FieldsReader]:
    """The request's top-level fields read into the normal form's as one function, and its source. Its first test
    asks whether any key needs settling: a top-level key the format does not read (unless listed and settled
    silently: `quiet`), or a key below a field read inside that no read reaches (what `unread` finds); only then
    does `SourceFormat.settle_fields` note or refuse each, in the request's order. Then the fields template
    (`request.fields`) inline, with the Ctx a template notes or fails into made where first used (inline_node's `ctx`),
    its notes after the settled ones; each table read backwards (no Ctx: it notes into `notes`); and where each
    field written came from."""
    made = f"(c := c or Ctx({fmt.name!r}))"  # the Ctx made where first used
    pasted = inline_node(fmt.plan.nodes[("request", "fields")], "request", "out", is_dict=True, runs=True, ctx=made)
    names = Namespace({**pasted.names, "Ctx": Ctx, "OWN": own_notes, "quiet": quiet, "ORIGIN": fmt.field_origin})
    read = fmt.field_reads | {name for name in (fmt.each, fmt.system, fmt.tools_each) if name is not None}
    known, table = names.name(frozenset(read), "READ_"), names.name(fmt.unsupported, "UNSUPPORTED_")
    tests = [f"not request.keys() <= {known} and not quiet(request, {known}, {table})"]
    tests += [
        f"isinstance(h0_ := request.get({name!r}), dict) and not ({_reached_only(fmt, names, 'h0_', name, 0)})"
        for name in sorted(fmt.field_reads - fmt.whole_fields)
    ]
    # (the fields are an object: with none written it is an empty one, not absent)
    body = [*pasted.head, *(line for line in pasted.body if line != "if not out: out = MISSING")]
    tables = []  # each table read backwards, its note (a value between two rows) after the template's
    for key, backwards in fmt.field_tables.items():
        table = names.name(backwards, "TABLE_")
        tables += [f"    t_ = {table}(request, notes)", f"    if t_ is not MISSING: out[{key!r}] = t_"]
    lines = [
        "def read_fields(fmt, request, notes, policy):",
        "    if (" + "\n            or ".join(tests) + "):",
        "        fmt.settle_fields(request, notes, policy)",
        "    c = None",
        *indent(body),
        "    if c is not None and c.notes: notes += OWN(c.notes)  # a path below `provider`: the answer's own key",
        *tables,
        "    return out, {name: ORIGIN[name] for name in out if name in ORIGIN}",
    ]
    text = "\n".join(lines) + "\n"
    exec(compile(text, f"<fields {fmt.name}>", "exec"), names.names)
    run: FieldsReader = names.names["read_fields"]
    return text, run


def _reached_only(fmt: SourceFormat, names: Namespace, var: str, at: str, depth: int) -> str:
    """A test that the object in `var`, at the field path `at`, holds only keys some field read reaches, at any
    depth (`unread` would find none): each key a read path or an object read inside, tested in turn."""
    reached = fmt.field_paths | fmt.field_inside
    below = len(at) + 1
    keys = frozenset(p[below:] for p in reached if p.startswith(at + ".") and "." not in p[below:])
    test = f"{var}.keys() <= {names.name(keys, 'KEYS_')}"
    for key in sorted(keys):
        path = f"{at}.{key}"
        if path in fmt.field_inside and path not in fmt.field_paths:
            inner = f"h{depth + 1}_"
            deeper = _reached_only(fmt, names, inner, path, depth + 1)
            test += f" and (not isinstance({inner} := {var}.get({key!r}), dict) or {deeper})"
    return test


def generate_writer(fmt: SourceFormat) -> tuple[str, Writer, bool]:
    """The whole answer's writer (`writer_lines`, over the result `r`), its source, and whether it reads the time."""
    lines, names, reads_time = writer_lines(fmt, RESULT)
    text = "\n".join(["def write(r, answer_id, created, notes):", *lines, "    return out"]) + "\n"
    exec(compile(text, f"<writer {fmt.name}>", "exec"), names)
    run: Writer = names["write"]
    return text, run, reads_time


def writer_lines(fmt: SourceFormat, held: ResultAt) -> tuple[list[str], dict[str, Any], bool]:
    """The whole answer's writer (the `answer` section: its message, then each `blocks` entry's blocks, per
    element of the list it walks) as one function over the result (`r`), the answer's id and time (either None:
    made) and the notes, its source, and whether it reads the time (so the answer function reads the provider's).
    Its first lines derive what the provider would have said (`said_lines`: the notes `SourceFormat.said` gives,
    each count a variable a template's plain read of it reads), so `said` is made only where a template reads it
    otherwise; then settle the answer's id (made, and noted, where it is none), its
    time and the calls' inputs where the lines read them (`_header_lines`). A template's notes at paths known now go
    into `notes` in their place, each one Note made now (`_NotedInPlace`); where a template uses the Ctx otherwise,
    every use of it makes it where first used, its notes added last. Each view field a template reads is read
    once, up front, into a variable every entry reads (`V_text = r.text`; a string's or an object's `empty` test its
    truth: `FALSY_EMPTY`); the made ids (`ids`, each hashed when read) are read where a template
    reads them, inside its branch, so an answer writing no item of a kind makes no id for it, hashed and cut in the
    line (no call) and never absent. Each object a template writes is made at its size: its keys' lines first, then
    one display, two where one key may be absent (`inline_node`'s `ahead`), not grown key by key. The calls are walked
    as the result holds them, each with its `input` (`inputs`), their fields read as attributes with no test and
    no object made per call: a call's block of plain reads of its fields is one Python display (`as_python`, as a
    stream event's), any other its template pasted. The view itself (`formats.answer_scope`) is made only where a
    template reads it whole (a rich path). Its lines (in a function's body, the answer in `out`), their names, and
    whether they read the time; `held` says where the result's fields are (`RESULT`: the result `r`'s)."""
    names: dict[str, Any] = {"MISSING": MISSING, "sealed": sealed, "MadeIds": MadeIds, "IDS": fmt.ids, "Ctx": Ctx}
    names.update(VIEW=answer_scope, CALL=call_scope, CALLS=call_scopes, Note=Note, STOP=dict(fmt.stop_table))
    names.update(NEW_ID=new_answer_id, TIME=answer_time, INPUTS=call_inputs, OWN=own_notes)
    names.update(SAID=fmt.said, IDS_HASH=IDS_HASH)
    field = held.field
    derive, counts = said_lines(fmt, field=field, straight=held.straight)
    derived: dict[tuple[str | int, ...], str] = {("provider", fmt.stop_key): "U_stop", ("provider", "finish"): "U_stop"}
    derived.update({("provider", *path): var for path, var in counts.items()})
    # Each made id (the only read of `ids`: `ids.message`) cut where a template reads it, as `MadeIds` cuts it, from
    # the answer's digest, made at the first id read (`ids_digest`, '' until then), the hash and the cut in the line.
    digest = f"(ids_digest or (ids_digest := {IDS_DIGEST_CODE.format('answer_id')}))"
    made_ids = frozenset(made_id_code(prefix, digest, place) for place, prefix in enumerate(fmt.ids.values()))
    derived.update({("ids", name): made_id_code(prefix, digest, place) for place, (name, prefix)
                    in enumerate(fmt.ids.items())})  # fmt: skip
    nodes = fmt.plan.nodes
    known = {name: f"V_{name}" for name in VIEW_FIELDS}
    shared = _shared_chains(fmt)  # read once up front, each into a variable every entry reads
    derived.update({chain: f"H_{n}" for n, chain in enumerate(shared)})
    reads = {name: field.format(name) for name in VIEW_FIELDS}
    reads.update(id="answer_id", created="created", ids="MadeIds(IDS, answer_id)", provider=SAID)
    reads.update(tool_calls=f"CALLS({field.format('tool_calls')}, inputs)")
    used: dict[str, None] = {}  # the view fields read, in the order first read
    calls = {name: held.call.format(place=place, name=name) for place, name in enumerate(CALL_FIELDS)}
    calls["arguments"] = f"({calls['arguments']} or '{{}}')"
    call_scope_read = "CALL(e)"
    if fmt.reads_input:
        calls["input"], call_scope_read = "i", "CALL(e, i)"

    contextual = False  # whether a template's lines use the Ctx (beyond the notes `note` writes, when given)

    def pasted(
        key: Key, target: str, scope: str, tag: str, held: Mapping[str, str], into: str | None = None
    ) -> list[str]:
        """A template inlined over the view (`held`: its fields, each there: a result's attributes, the answer's id
        and time settled), a call of it (its fields, each there) or an element of another list (none: any value);
        `into`: the list its value is appended to (see `inline_node`)."""
        nonlocal contextual
        present = frozenset(held)
        inline = inline_node(
            nodes[key],
            scope,
            target,
            is_dict=bool(held),
            known=held,
            present=present,
            tag=tag,
            late=LATE,
            chains=derived if held is known else None,
            texts=FALSY_EMPTY if held is known else frozenset(),
            ctx=ctx,
            note=note,
            into=into,
            ahead=True,
            made=made_ids,
        )
        names.update(inline.names)
        contextual |= inline.contextual
        if held is not known:
            return inline.head + inline.body
        used.update(dict.fromkeys(name for name in inline.firsts if name in known))
        if not inline.whole:
            return inline.head + inline.body
        # The view where the lines read it whole: only the fields they read where rich paths alone read it by key,
        # else made whole; read once (in a branch, say: `$seal` of a field), in its place, else bound first.
        bound, rest = inline.head[0].split(" = ")[0], [*inline.head[1:], *inline.body]
        held_as = re.compile(rf"(?<![\w.']){bound}(?![\w'])")
        fields = _keys_read(nodes[key], bound, "\n".join(rest), inline.names)
        scope = VIEW
        if fields is not None:
            used.update(dict.fromkeys(name for name in sorted(fields) if name in known))
            scope = "{" + ", ".join(f"{name!r}: {known[name]}" for name in sorted(fields) if name in known) + "}"
        if len(held_as.findall("\n".join(rest))) != 1:
            return [f"{bound} = {scope}", *rest]
        return [held_as.sub(scope, line) for line in rest]

    def written() -> list[str]:
        """The message's and the blocks' lines, the templates pasted as `ctx` and `note` say."""
        body = [*indent(pasted(("answer", "message"), "out", "view", "_m", known)), "    blocks = []"]
        for i, (each, _) in enumerate(fmt.blocks):
            steps = simple_steps(fmt.plan.blocks_each[i] or "")
            held = known if each is None else calls if steps == ["tool_calls"] else {}
            key = ("answer", "blocks", "from", i, "as")
            shown = as_python(nodes[key], calls, seal="sealed") if held is calls else None
            if shown is not None:  # a call's block of plain reads of its fields: one display, as a stream event's
                block = [f"blocks.append({shown})"]
            else:
                scope = call_scope_read if held is calls else "e" if each else "view"  # (a call: its object, if read)
                block = pasted(key, "w", scope, f"_{i}", held, into="blocks")
            if each is None:
                body += indent(block)
            elif held is calls:  # the result's calls, each at its place in `inputs`
                calls_held = field.format("tool_calls")
                walk = f"e, i in zip({calls_held}, inputs)" if fmt.reads_input else f"e in {calls_held}"
                body += [f"    for {walk}:", *indent(block, 8)]
            else:
                if tuple(steps or ()) in shared:
                    body.append(f"    es = {derived[tuple(steps or ())]}")
                elif steps and all(type(step) is str for step in steps) and steps[0] in known:
                    used[str(steps[0])] = None
                    body += indent(read_lines("es", known[str(steps[0])], tuple(steps[1:])))
                else:
                    names[f"EACH_{i}"] = each
                    body.append(f"    es = EACH_{i}({VIEW})")
                body += ["    if isinstance(es, list):", "        for e in es:", *indent(block, 12)]
        if fmt.blocks_into is not None:
            body.append(f"    out[{fmt.blocks_into!r}] = blocks")
        return body

    # A template's notes at paths known now go into `notes` in their place, at the path the answer names (no Ctx);
    # where a template uses the Ctx otherwise (a closure given it, a failure), the lines are written again with
    # every note into a Ctx made where first used, its notes added last (the same notes in the same order).
    ctx: str = "c"
    noted = _NotedInPlace(names)
    note: NoteSink | None = noted
    body = written()
    tail = []
    if contextual:
        used.clear()
        ctx, note = f"(c := c or Ctx({fmt.name!r}, True))", None
        body = written()
        tail.append("    if c is not None and c.notes: notes += OWN(c.notes)  # a path below `provider`: the answer's")
    if not re.search(r"(?<![\w.'])V_provider(?![\w'])", "\n".join(body)):  # read by its derived values alone
        used.pop("provider", None)
    header, reads_time = _header_lines(fmt, [*(reads[name] for name in used), *body], held, noted)
    head = [*indent(derive), *indent(header)]
    if any("(ids_digest := " in line for line in body):
        head.append("    ids_digest = ''")
    used.update(dict.fromkeys(field for field, _ in shared))
    head += [f"    {known[name]} = {reads[name]}" for name in used]
    for field, key in shared:
        head += indent(read_lines(derived[field, key], known[field], (key,)))
    if contextual:
        head.append("    c = None")
    return [*head, *body, *tail], names, reads_time


def generate_answers(
    writer: Writer, reads_time: bool, providers: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, Answer]]:
    """Each provider's answer function (`generate_answer`) over the format's writer (`reads_time`: whether it reads
    the answer's time, so the provider's is read), and their sources, by provider."""
    made = {
        name: generate_answer(name, writer, NO_READS if p.streaming is None else p.streaming.answer_reads, reads_time)
        for name, p in providers.items()
    }
    return {name: code for name, (code, _) in made.items()}, {name: run for name, (_, run) in made.items()}


def generate_answer(provider: str, writer: Writer, reads: AnswerReads, reads_time: bool) -> tuple[str, Answer]:
    """A provider's result as the format's whole answer (an AnswerBody: the result and its notes, then the writer's),
    in one function over the result and the provider's answer: the answer's id and time read where the provider's
    streaming section reads a chunk's (`reads`; the time only where the writer reads it), a plain chain inline, any
    other path by its getter, none where the answer is no object or names no path. The writer is given them as found:
    it makes an id where none is a non-empty string and takes now where the time is no number."""
    names: dict[str, Any] = {"MISSING": MISSING, "AnswerBody": AnswerBody, "WRITE": writer}
    read, found = answer_reads(reads, reads_time, names, "response")
    lines = ["def answer(r, response):", "    notes = []", *indent(read)]
    lines += [
        f"    body = AnswerBody(WRITE(r, {found['found']}, {found['created']}, notes))",
        "    body.made, body.notes = r, (*r.notes, *notes)",
        "    return body",
    ]
    text = "\n".join(lines) + "\n"
    exec(compile(text, f"<answer {provider}>", "exec"), names)
    run: Answer = names["answer"]
    return text, run


def answer_reads(
    reads: AnswerReads, reads_time: bool, names: dict[str, Any], response: str
) -> tuple[list[str], dict[str, str]]:
    """Lines reading the provider's answer's id and time (`found`, `created`; the time only where the writer reads
    it) from the answer in `response`, a plain chain inline, any other path by its getter (bound in `names`), and
    the expression of each (None where not read)."""
    found = {"found": "None", "created": "None"}
    lines: list[str] = []
    for target, (path, getter) in zip(found, reads, strict=True):
        steps = None if path is None else simple_steps(path)
        if getter is None or (target == "created" and not reads_time):
            continue
        found[target] = target
        if steps and type(steps[0]) is str:  # its first step tests that the answer is an object
            lines += read_lines(target, response, tuple(steps))
        else:
            names[f"READ_{target}"] = getter
            lines.append(f"{target} = READ_{target}({response}) if isinstance({response}, dict) else None")
    return lines, found


def _shared_chains(fmt: SourceFormat) -> list[tuple[str, str]]:
    """The view's keys one level down (`FIELD.KEY` of a view field) that more than one of the writer's entries
    reads as such (a template over the view, the list a `blocks` entry walks), in order: each entry's lines read
    their chains up front anyway, so reading each once, before them all, reads the same."""
    entries = [("answer", "message"), *(("answer", "blocks", "from", i, "as") for i, (each, _) in enumerate(fmt.blocks)
                                        if each is None)]  # fmt: skip
    chains = [{read.steps for read in reads_of(fmt.plan.nodes[key])} for key in entries]
    chains += [{tuple(simple_steps(each) or ())} for each in fmt.plan.blocks_each if each]
    found: dict[tuple[str, str], int] = {}
    for read in chains:
        for steps in read:
            if steps is None or len(steps) != 2 or not all(type(step) is str for step in steps):
                continue
            field, key = str(steps[0]), str(steps[1])
            if field in VIEW_FIELDS and field not in SETTLED:
                found[field, key] = found.get((field, key), 0) + 1
    return [chain for chain, count in found.items() if count > 1]


# The view's fields the writer settles otherwise: what the provider would have said (derived), the ids (made).
SETTLED = frozenset({DERIVED, *LATE})


def _header_lines(fmt: SourceFormat, reads: list[str], held: ResultAt, noted: _NotedInPlace) -> tuple[list[str], bool]:
    """What the answer says beyond the result, settled where `reads` (the writer's lines) read it: its id (made,
    and noted after the stop reason's and the usage's notes, where the provider's answer names none), its time
    (now, where it names none) and each call's `input` (`call_inputs`, where the format reads one); and whether
    the lines read the time at all (the view settles its own, `TIME` in `VIEW`)."""
    made = noted.line(Note("synthesized", "id", "the provider's answer names no id"))
    lines = ["if not isinstance(answer_id, str) or not answer_id:", "    answer_id = NEW_ID()", f"    {made}"]
    used = "\n".join(reads)
    reads_time = VIEW in used
    if re.search(r"(?<![\w.'])created(?![\w'])", used.replace(VIEW, "")):
        lines.append("created = TIME(created)")
        reads_time = True
    if re.search(r"(?<![\w.'])inputs(?![\w'])", used):
        inputs = held.inputs.format(held.field.format("tool_calls"))
        lines.append(f"inputs = {inputs}" if fmt.reads_input else "inputs = None")
    return lines, reads_time


class _NotedInPlace:
    """A writer's note whose kind, path and message are known now (a template's default at a path it names, the id
    the writer makes), added to `notes` in its place as one Note made here, at generation, and bound in the writer's
    namespace (`names`): a Note is an immutable value, and making one per answer cost about 2.7K instructions (its
    NamedTuple `__new__` a Python call). A template's path is the one the answer names (`own_path`: the writer's
    Ctx would sit at the answer's root)."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.names = names
        self.bound: dict[Note, str] = {}  # each note made, by value: the name it is bound to

    def __call__(self, kind: str, path: str, message: str) -> str:
        """The line adding the template's note at `path` (as the template names it)."""
        return self.line(Note(kind, own_path(path), message))  # type: ignore[arg-type]

    def line(self, note: Note) -> str:
        """The line adding `note`, bound once (`NOTED_<n>`)."""
        name = self.bound.get(note)
        if name is None:
            name = self.bound[note] = f"NOTED_{len(self.bound)}"
            self.names[name] = note
        return f"notes.append({name})"


def _keys_read(node: Node, held: str, lines: str, names: Mapping[str, Any]) -> frozenset[str] | None:
    """The keys a template's lines read of the scope they hold in `held`, when every use of it is a rich path's
    getter given it alone and each path reads it by key (`paths.scope_fields`); else None."""
    uses = re.findall(rf"(?<![\w.']){held}(?![\w'])", lines)
    given = re.findall(rf"(?<![\w.'])(\w+)\({held}\)", lines)
    if len(given) != len(uses):
        return None
    paths = {id(read.getter): read.expr for read in reads_of(node) if read.steps is None}
    fields: frozenset[str] = frozenset()
    for name in given:
        expr = paths.get(id(names.get(name)))
        read = None if expr is None else scope_fields(expr)
        if read is None:
            return None
        fields |= read
    return fields


@dataclass(frozen=True)
class ResultAt:
    """Where the writer's lines read the result: each field (`field`, a pattern of its name), each call's (`call`, of
    its name and its place in CALL_FIELDS) and the calls' inputs (`inputs`, of the calls), e.g. a fused answer's own
    variables (`fused_answer_code`), and the flag saying the counts were read straight (`straight`: the usage
    derived again only where it is false; `straight_usage_lines` fills the other branch per provider)."""

    field: str = "r.{}"
    call: str = "e.{name}"
    inputs: str = "INPUTS({})"
    straight: str | None = None


RESULT = ResultAt()  # the result `r`, a TranslateResult


# The view and what the provider would have said, in the generated writer (`formats.answer_scope`, `SourceFormat.said`),
# each made only where a template reads it whole (the notes `said` gives, the writer's first lines gave; the view's
# time settled as the writer's is).

SAID = "SAID(r, [])"
VIEW = f"VIEW(IDS, r, {SAID}, answer_id, TIME(created), inputs)"

# What each stream moment's scope always holds (`formats.SourceEvents` sets them, None at worst): an event reads
# them with no test for an absent value. A moment's `sequence` (and a piece's `piece`) are the function's arguments.
_BLOCK = frozenset({"index", "answer_id", "item_id", "created", "model"})
SCOPES = {
    "start": frozenset({"id", "answer_id", "model", "created"}),
    "open": _BLOCK,
    "piece": _BLOCK,
    "done": _BLOCK | {"pieces"},
    "close": _BLOCK | {"pieces"},
    "end": frozenset(),
}
_OWN = {"tool_call": frozenset({"id", "name", "extra_content"}), "whole": frozenset({"block"})}  # a kind's own


def generate_events(fmt: SourceFormat) -> tuple[str, dict[str, Moment], dict[str, Bind]]:
    """The `stream` section as one function per moment (`start`, `open.KIND`, `piece.KIND`, `done.KIND`, `close`,
    `end`), and per `once.KIND` (a block said in one piece: `formats.once_moments`) its opening's, piece's and
    closing's events in one, each writing that moment's events straight-line as one list: `(scope, piece, sequence,
    c)` -> the events, numbered from `sequence` on. An event of constants and plain reads of what the moment's scope
    always holds is one Python display; any other is its template pasted inline (`inline_node`), as the answer's
    writer does. A `piece.KIND` of a kind whose pieces go straight to their block (`STRAIGHT`) and of displays only
    is also a `Bind` (`bind_piece_KIND`: its scope read once per block, each piece's events appended as displayed).
    Returns the source (for `toolnexus explain --source F --code`), the functions and the binders by moment name."""
    names: dict[str, Any] = {"MISSING": MISSING, "is_empty": is_empty, "sealed": sealed}
    lines: list[str] = []
    made: dict[str, str] = {}
    bound: list[str] = []
    moments = _moment_keys(fmt)

    def parts(moment: str, own: Mapping[str, str] = EMPTY) -> list[tuple[Node, dict[str, str], str]]:
        """A moment's events as (template, the names its scope always holds as Python, the scope); `own`: of a
        block said in one piece, the names its writer takes as arguments, and its closing's `pieces` that one
        piece (its scope is the stream's with them added, as `once` makes it)."""
        group, _, kind = moment.partition(".")
        always = SCOPES[group] | _OWN.get(kind, frozenset())
        base = {name: own.get(name, f"s[{name!r}]") for name in always}
        if group == "piece":
            base["piece"] = "piece"
        scope = "s"
        if own:
            if "pieces" in always:
                base["pieces"] = "piece"
            added = (f"{name!r}: {base[name]}" for name in base if name in own or name == "pieces")
            scope = "{**s, " + ", ".join(added) + "}"
        return [(fmt.plan.nodes[key], base, scope) for key in moments.get(moment, ())]

    def define(moment: str, events: list[tuple[Node, dict[str, str], str]], own: Mapping[str, str] = EMPTY) -> None:
        function = "write_" + "".join(ch if ch.isalnum() else "_" for ch in moment)
        lines.append(f"def {function}(s, piece, q, c{''.join(f', {arg}' for arg in own.values())}):")
        lines.extend(_written(events, names))
        made[moment] = function

    for moment, keys in moments.items():
        line, _ = fmt.plan.source.where(keys[0][:3] if "." in moment else keys[0][:2])
        lines.append(f"# {fmt.file}:{line} stream.{moment}")
        define(moment, parts(moment))
        if moment.partition(".")[::2] in STRAIGHT and _bind(moment, parts(moment), lines):
            bound.append(moment)
    for moment, (opens, writes, closes) in once_moments(moments).items():
        lines.append(f"# stream.{opens}, stream.{writes}, stream.{closes}: a block said in one piece")
        own = {name: f"a_{name}" for name in ONCE[moment.partition(".")[2]]}  # its arguments: no scope made
        define(moment, parts(opens, own) + parts(writes, own) + parts(closes, own), own)
    text = "\n".join(lines)
    exec(compile(text, f"<stream {fmt.name}>", "exec"), names)
    binders = {moment: names["bind_" + made[moment].removeprefix("write_")] for moment in bound}
    return text, {moment: names[function] for moment, function in made.items()}, binders


def _bind(moment: str, events: list[tuple[Node, dict[str, str], str]], lines: list[str]) -> bool:
    """A piece moment's `Bind` (its events all displays), added to `lines`: the names of the block's scope read
    once into locals, then a writer appending each piece's events and giving the next sequence number. False (no
    lines) when an event is no display."""
    held = {name: f"b_{name}" for name in events[0][1] if name != "piece"} if events else {}
    found = [as_python(node, {**base, **held, "sequence": "q" if k == 0 else f"(q + {k})"}, seal="sealed")
             for k, (node, base, _) in enumerate(events)]  # fmt: skip
    shown = [event for event in found if event is not None]
    if not shown or len(shown) < len(found):
        return False
    function = "bind_" + "".join(ch if ch.isalnum() else "_" for ch in moment)
    lines.append(f"def {function}(s):")
    read = sorted(name for name, local in held.items() if re.search(rf"\b{local}\b", " ".join(shown)))
    lines += [f"    {held[name]} = s[{name!r}]" for name in read]
    lines.append("    def write(out, piece, q):")
    lines += [f"        out.append({event})" for event in shown]
    lines += [f"        return q + {len(shown)}", "    return write", ""]
    return True


def _written(events: list[tuple[Node, dict[str, str], str]], names: dict[str, Any]) -> list[str]:
    """A moment's body: its events, numbered from `q` on, as one list display when each is one display; else each
    written in turn (a template pasted inline when not that plain), one that writes nothing not sent and taking
    no sequence number."""
    shown = [as_python(node, base | {"sequence": "q" if k == 0 else f"(q + {k})"}, seal="sealed")
             for k, (node, base, _) in enumerate(events)]  # fmt: skip
    if all(text is not None for text in shown):  # every event written: one list display
        return ["    return [", *(f"        {event}," for event in shown), "    ]", ""]
    lines = ["    out = []"]  # an event may write nothing (a `$when` without `else`): not sent, no number taken
    for k, (node, base, scope) in enumerate(events):
        known = base | {"sequence": "(q + len(out))"}
        text = as_python(node, known, seal="sealed")
        if text is None:
            pasted = inline_node(node, scope, f"e{k}", is_dict=True, known=known, tag=f"_{k}", into="out")
            names.update(pasted.names)
            lines += indent(pasted.head + pasted.body)
        else:
            lines.append(f"    out.append({text})")
    return [*lines, "    return out", ""]


def _moment_keys(fmt: SourceFormat) -> dict[str, list[Key]]:
    """Each stream moment's event templates, by their rule keys, in order (the moments `SourceEvents` writes)."""
    out: dict[str, list[Key]] = {}
    for key in fmt.plan.nodes:
        if key[:1] != ("stream",) or key[1] not in SCOPES:
            continue
        single = key[1] in ("start", "close", "end")
        moment = str(key[1]) if single else f"{key[1]}.{key[2]}"
        out.setdefault(moment, []).append(key)
    return out


def as_python(
    node: Node, names: Mapping[str, str], texts: frozenset[str] = frozenset(), seal: str | None = None
) -> str | None:
    """The node as a Python expression, each name it reads plainly written as `names` gives it (a name
    always there: `s['index']`), or None when it is not that simple. `texts`: names the caller knows hold a
    string, whose `empty` test is the string's own truth. `seal`: the name the caller binds `templates.sealed`
    to, so that a `$seal` of one such name onto another is written too (None: it is not)."""
    if isinstance(node, Const):
        return repr(node.value) if displayed_afresh(node.value) else None
    if isinstance(node, Get):
        read = node.reads[0]
        plain = len(node.reads) == 1 and node.plain and read.steps is not None
        if plain and len(read.steps or ()) == 1 and read.root is not None and read.root in names:
            return names[read.root]
        return None
    if isinstance(node, When):  # a `$when` with an `else`: either branch
        test, then = _test(node, names, texts), as_python(node.then, names, texts, seal)
        other = as_python(node.otherwise, names, texts, seal) if node.otherwise is not None else None
        if test is None or then is None or other is None:
            return None
        return then if test == "True" else other if test == "False" else f"({then} if {test} else {other})"
    found = [_maybe(child, names, texts, seal) for child in node.children()]  # a `$when` without `else`: maybe left out
    if None in found:
        return None
    labels = [name for name, _ in node.items] if isinstance(node, Obj) else [""] * len(found)
    kept = [(label, m) for label, m in zip(labels, found, strict=True) if m is not None and m[0] != "False"]
    if not kept or all(test is not None for _, (test, _) in kept) or not isinstance(node, (Obj, Array)):
        return None  # nothing sure to be written: the general code decides whether the whole is left out
    maybe = [test for _, (test, _) in kept if test is not None]
    if len(maybe) == 1:  # one child maybe left out (a call's id): two displays, its test choosing (none merged in)
        whole = _display(node, [(label, part) for label, (_, part) in kept])
        return f"({whole} if {maybe[0]} else {_display(node, [(lb, p) for lb, (t, p) in kept if t is None])})"
    if isinstance(node, Obj):
        merged = [(name, part) if test is None else (None, f"**({{{name!r}: {part}}} if {test} else {{}})")
                  for name, (test, part) in kept]  # fmt: skip
        return _display(node, merged)
    return _display(
        node, [(None, part if test is None else f"*(({part},) if {test} else ())") for _, (test, part) in kept]
    )


def _display(node: Obj | Array, parts: Sequence[tuple[str | None, str]]) -> str:
    """An object's or an array's display of its children's expressions, each after its key where it has one (an
    object's part merged in, `**...`, and an array's have none)."""
    shown = ", ".join(part if name is None or isinstance(node, Array) else f"{name!r}: {part}" for name, part in parts)
    return f"[{shown}]" if isinstance(node, Array) else f"{{{shown}}}"


def _maybe(
    node: Node, names: Mapping[str, str], texts: frozenset[str], seal: str | None = None
) -> tuple[str | None, str] | None:
    """A child as (the test that it is written, or None: always; its display), or None when not that plain."""
    if isinstance(node, When) and node.otherwise is None:
        test, then = _test(node, names, texts), as_python(node.then, names, texts, seal)
        return None if test is None or then is None else (None if test == "True" else test, then)
    if isinstance(node, Apply) and isinstance(node.function, KeySeal):
        return None if seal is None else _sealed(node.function, names, seal)
    shown = as_python(node, names, texts, seal)
    return None if shown is None else (None, shown)


def _sealed(function: KeySeal, names: Mapping[str, str], seal: str) -> tuple[str | None, str] | None:
    """A `$seal` of a name always there onto another (a call's `extra_content` onto its `id`), as `KeySeal` writes
    it: with no state (null), the `onto` string as it is; else sealed (`seal`, `templates.sealed`); left out when
    the `onto` string is null."""
    state, onto = names.get(function.state_key), names.get(function.onto_key)
    if state is None or onto is None:
        return None
    if onto == "None":
        return "False", onto
    shown = onto if state == "None" else f"({onto} if {state} is None else {seal}({state}, {onto}))"
    return f"({onto} is not None)", shown


def _test(node: When, names: Mapping[str, str], texts: frozenset[str] = frozenset()) -> str | None:
    """A `$when`'s `present` or `empty` test of a name always there, as a Python expression; of a name written
    as `None` (a value the caller knows to be null), "True" or "False", so that the code leaves the test out; of
    a name known to hold a string (`texts`), its truth (`is_empty` is the string's falsity)."""
    read = node.path
    if read.steps is None or len(read.steps) != 1 or read.root is None or read.root not in names:
        return None
    if node.test not in ("present", "empty"):
        return None
    value = names[read.root]
    if value == "None":  # null: not present, and empty
        return str((node.test == "empty") is (node.expected[0] is True))
    if read.root in texts:
        return str(node.expected[0] is True) if node.test == "present" else (
            f"(not {value})" if node.expected[0] is True else value)  # fmt: skip
    test = f"({value} is not None)" if node.test == "present" else f"is_empty({value})"
    return test if node.expected[0] is True else f"(not {test})"


def generate_said(fmt: SourceFormat) -> Callable[[Any, list[Note]], dict[str, Any]]:
    """What the format's provider would have said of a result (`SourceFormat.said`: its stop reason, also as
    `finish`, and its usage section read backwards) as one function of straight-line reads, from the lines the
    writer begins with (`said_lines`): the same notes, in the table's order, each object of `said` held once made."""
    lines, _ = said_lines(fmt, into_said=True)
    text = "\n".join(["def derive(r, notes):", "    said = {}", *indent(lines), "    return said"]) + "\n"
    names: dict[str, Any] = {"Note": Note, "MISSING": MISSING, "STOP": dict(fmt.stop_table)}
    exec(compile(text, f"<said {fmt.name}>", "exec"), names)
    run: Callable[[Any, list[Note]], dict[str, Any]] = names["derive"]
    return run


def usage_lines(fmt: SourceFormat, *, into_said: bool) -> tuple[list[str], dict[tuple[str, ...], str]]:
    """The usage read backwards (`said_lines`) as lines over the result's usage `u` (an object), its notes
    appended to `notes`; each count set into `said` (`into_said`), else held in a variable of its own: the lines and
    each count's path below `said` -> its variable (MISSING until set), so a writer reads the counts it writes
    with no `said` made. A writer's count of one result count no other reads (`_read_alone`) is read straight into
    its variable, then made MISSING unless a non-negative int; a count with nothing to subtract is tested as read."""
    lines: list[str] = []
    reads: dict[tuple[str, ...], str] = {}
    holders: dict[tuple[str, ...], str] = {}  # an object of `said` (`usage`) -> its variable, None until made
    counts: dict[tuple[str, ...], str] = {}  # (not into `said`) a count's path -> its variable

    def read(steps: tuple[str, ...], into: str | None = None) -> str:
        """A result count's variable (None unless an int; `into`: that variable), its reads written once."""
        if steps not in reads:
            parent = "u"
            for depth in range(1, len(steps)):
                outer = steps[:depth]
                if outer not in reads:
                    reads[outer] = name = f"U_d{len(reads)}"
                    step = steps[depth - 1]
                    lines.append(f"{name} = {got(parent, step)}")
                parent = reads[outer]
            reads[steps] = name = into or f"U_d{len(reads)}"
            lines.append(f"{name} = {got(parent, steps[-1])}")
        return reads[steps]

    def got(parent: str, step: str) -> str:
        """A read of one key (the usage itself is known to be an object)."""
        if parent == "u":
            return f"u.get({step!r})"
        return f"{parent}.get({step!r}) if isinstance({parent}, dict) else None"

    alone = _read_alone(fmt.usage) if not into_said else frozenset()
    for target, total, others in fmt.usage:
        message = f"less than the counts it includes; no {target[-1]}"
        noted = f"notes.append(Note('inconsistent', {'.'.join(total)!r}, {message!r}))"
        if target in alone:
            var = read(total, counts.setdefault(target, f"U_{len(counts)}"))
            lines += [f"if type({var}) is not int: {var} = MISSING", f"elif {var} < 0:", f"    {noted}"]
            lines.append(f"    {var} = MISSING")
            continue
        value = read(total)
        parts = [read(other) for other in others]
        held = "U_v" if parts else value
        lines.append(f"if type({value}) is int:")
        if parts:
            lines.append(f"    U_v = {value}")
        lines += [f"    if type({part}) is int: U_v -= {part}" for part in parts]
        lines.append(f"    if {held} < 0: {noted}")
        if not into_said:
            var = counts.setdefault(target, f"U_{len(counts)}")
            lines.append(f"    else: {var} = {held}")
            continue
        lines.append("    else:")
        holder = "said"
        for depth in range(1, len(target)):
            name = holders.setdefault(target[:depth], f"U_h{len(holders)}")
            lines.append(f"        if {name} is None: {name} = {holder}.setdefault({target[depth - 1]!r}, {{}})")
            holder = name
        lines.append(f"        {holder}[{target[-1]!r}] = {held}")
    if holders:
        lines.insert(0, f"{' = '.join(holders.values())} = None")
    return lines, counts


def _read_alone(usage: Usage) -> frozenset[tuple[str, ...]]:
    """The counts (their paths below `said`) each the one count read from a result count with nothing subtracted,
    that result count read by no other: its variable may hold the result count as read, then be settled."""
    totals = [total for _, total, _ in usage]
    targets = [target for target, _, _ in usage]
    parts = {other for _, _, others in usage for other in others}
    return frozenset(
        target
        for target, total, others in usage
        if not others and total not in parts and totals.count(total) == 1 and targets.count(target) == 1
    )


def straight_usage_lines(
    fmt: SourceFormat, known: Mapping[tuple[str, ...], tuple[str, str]], wanted: frozenset[str]
) -> list[str] | None:
    """`usage_lines`' counts (no `said`) read from what a provider's straight usage path left (`known`: each
    usage path -> its expression and kind, `ResponseGen.straight_usage`) rather than from the usage it built: a
    `sure` count (an integer from 0) read with no test, a `maybe` one (or MISSING) tested for presence only, an absent
    one not read; only a difference is tested for below 0, with the same note, and a count that can note nothing
    set only where the writer reads its variable (`wanted`). None where the writer reads a path this cannot tell
    (an object read as a count, a path three deep)."""
    _, counts = usage_lines(fmt, into_said=False)
    lines: list[str] = []
    held: dict[tuple[str, ...], tuple[str, str]] = {}  # a path read -> (its variable, its kind)

    def read(steps: tuple[str, ...]) -> tuple[str, str] | None:
        """The count's variable and kind (`sure`, `maybe`, `absent`), its read written once; None: not told."""
        if steps in held:
            return held[steps]
        outer = known.get(steps[:1], ("", "absent"))
        if len(steps) == 1:
            found = None if outer[1] in ("holder", "mapping") else outer
        elif len(steps) == 2 and outer[1] == "holder":
            var = f"U_s{len(held)}"
            lines.append(f"{var} = MISSING if {outer[0]} is MISSING else {outer[0]}.get({steps[1]!r}, MISSING)")
            found = (var, "maybe")
        elif len(steps) == 2:
            found = known.get(steps, ("", "absent")) if outer[1] == "mapping" else ("", "absent")
        else:
            found = None
        if found is not None:
            held[steps] = found
        return found

    alone = _read_alone(fmt.usage)
    for target, total, others in fmt.usage:
        var = counts[target]
        if not others and var not in wanted:  # (clean, it notes nothing: a count the writer never writes)
            continue
        value, parts = read(total), [found for other in others if (found := read(other)) is not None]
        if value is None or len(parts) < len(others):
            return None
        present = [(part, kind) for part, kind in parts if kind != "absent"]
        if value[1] == "absent":
            continue
        if target in alone or not present:  # an integer from 0 or MISSING, as the derivation leaves it
            lines.append(f"{var} = {value[0]}")
            continue
        test = [f"if {value[0]} is not MISSING:"] if value[1] == "maybe" else []
        body = [f"U_v = {value[0]}"]
        body += [f"if {part} is not MISSING: U_v -= {part}" if kind == "maybe" else f"U_v -= {part}"
                 for part, kind in present]  # fmt: skip
        message = f"less than the counts it includes; no {target[-1]}"
        body += [f"if U_v < 0: notes.append(Note('inconsistent', {'.'.join(total)!r}, {message!r}))"]
        body.append(f"else: {var} = U_v")
        lines += [*test, *indent(body, 4 if test else 0)]
    return lines


def said_lines(
    fmt: SourceFormat, *, into_said: bool = False, field: str = RESULT.field, straight: str | None = None
) -> tuple[list[str], dict[tuple[str, ...], str]]:
    """What `SourceFormat.said` derives, as lines over the result's fields (`field`), its notes appended to `notes`
    in its order:
    the stop reason in `U_stop` (MISSING where the provider would not have said it), set into `said` with the
    counts (`into_said`: `generate_said`), else each count in a variable of its own, MISSING until set (a writer's
    first lines: the count's path below `said` -> its variable)."""
    suffix = f" has no {fmt.name} counterpart"
    finish = field.format("finish_reason")
    lines = [
        f"U_stop = STOP.get({finish})",
        "if U_stop is None:",
        f"    if {finish} == 'tool_calls': U_stop = STOP.get('stop')",  # a table without the row: the engine
        "    if U_stop is None:",  # made tool_calls of a stop with calls, so it reads back as that stop
        f"        notes.append(Note('dropped', 'finish_reason', repr({finish}) + {suffix!r}))",
        "        U_stop = MISSING",
    ]
    if into_said:
        lines.append(f"if U_stop is not MISSING: said[{fmt.stop_key!r}] = said['finish'] = U_stop")
    usage, counts = usage_lines(fmt, into_said=into_said)
    if counts:
        lines.append(f"{' = '.join(counts.values())} = MISSING")
    if usage:
        derived = [f"u = {field.format('usage')}", "if isinstance(u, dict):", *indent(usage)]
        lines += [f"if not {straight}:", *indent(derived)] if straight and counts else derived
    return lines, counts


def inside_read(block: dict[str, Any], paths: frozenset[str], inside: frozenset[str]) -> bool:
    """Whether every key below the block's objects read inside (an image's `source`) is one a read reaches, as
    `SourceFormat._settle_inside` finds (else the general read lists or refuses it at its path)."""
    for name, value in block.items():
        unreached = name in inside and name not in paths and isinstance(value, dict)
        if unreached and next(unread(value, name, paths, inside), None) is not None:
            return False
    return True


def escaped_path(path: str) -> str:
    """A path as a format string's literal text."""
    return path.replace("{", "{{").replace("}", "}}")


def _sealed_state(block: str, key: str) -> list[str]:
    """The state sealed onto the block's `key` as `st` (`unseal`'s `part: state`): decoded where a string holds a seal;
    anything else has none (MISSING), told with no call."""
    return [
        f"st = {block}.get({key!r})",
        f"st = unseal(st, c, part='state') if type(st) is str and {SEAL!r} in st else MISSING",
    ]


def _set_state(key: str) -> list[str]:
    """Sealed state `st` set on `cur` (`SourceFormat._set_state`)."""
    if key:
        return [f"cur[{key!r}] = st"]
    return ["if isinstance(st, dict): cur.update(st)"]


def written_role(kind: Kind) -> str | None:
    """The role a `message` kind's template writes, when it is a constant."""
    node = kind.node
    if isinstance(node, Obj):
        for name, child in node.items:
            if name == "role" and isinstance(child, Const) and isinstance(child.value, str):
                return child.value
    return None
