"""`toolnexus diff --sources`: how each source format is read and written, side by side, from its compiled form.

A column per format file (`rules/formats/*.yaml`, and a user rules directory's `formats/`), a row per
concept: which request field becomes which normal-form (Chat Completions) field, derived from the
format's provider rule file or declared in the format file; what is dropped or refused; each block kind
of each role and what it becomes; the tools; the answer's fields and blocks, its stop reasons and usage
(read backwards from the provider's response section); the stream events written. Everything is asked of
the compiled `SourceFormat` (its `plan`: the parsed nodes, and what was derived from where), never of the
raw YAML, and no format is named here: a new format file gets its column for free. The report is the
provider report's `Report`, so the same three renderers print it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..language.loader import Key, dotted
from ..language.templates import Const, Lookup, Node, Obj
from ..translate.formats import SourceFormat, Unsupported
from ..translate.rulebook import Rulebook
from .diff import Cell, Report, Row, Section, _Notes, _View

LEGEND = (
    "In a request, A ← B: the format's field B is read into the normal-form (Chat Completions) field A; in "
    "the answer, A ← B: the answer's field A is written from the result's B, and finish_reason R → S: the "
    "result's finish reason R is written as S. derived: read backwards from the format's provider rule file "
    "(the key named); declared: written in the format file. Shapes as in the provider report: a bare name "
    "copies the field of that name, a · row of lookup(p) reads value → result, @ is the whole block."
)


class _FormatView(_View):
    """One compiled format, shown with the provider report's notation (its templates as parsed nodes)."""

    def __init__(self, fmt: SourceFormat, book: Rulebook, notes: _Notes) -> None:
        self.fmt = fmt
        self.book = book
        self.data: Any = {}  # a format is asked through its plan, never as data
        self.notes = notes

    def node(self, *key: str | int) -> Node | None:
        return self.fmt.plan.nodes.get(key)

    def cell(self, lines: Iterable[str], key: Key = ()) -> Cell:
        file, line, _ = self.fmt.plan.source.locate(key)
        return Cell(tuple(lines), f"{file}:{line}" if line else file)

    def derived(self, rule: Key) -> str:
        """Where a derived element comes from: the provider and its rule key."""
        return f"derived: {self.fmt.provider} {dotted(rule)}"

    def note(self, key: Key, text: str) -> str:
        return self.notes.ref(self.fmt.name, key, text) if text else ""

    def table_rows(self, lookup: Lookup, key: Key) -> list[str]:
        """A `$lookup`'s rows, one a line: value → what it writes."""
        lines = [f"· {value} → {self.shape(row, (*key, 'table', value))}" for value, row in lookup.rows]
        lines += [f"· {value} → nothing" for value in lookup.skip]
        if lookup.default is not None:
            lines.append(f"· absent → {self.shape(lookup.default, (*key, 'default'))}")
        return lines


Concept = Callable[[_FormatView], Cell]
RowSpec = tuple[str, Concept]


def _fields_node(v: _FormatView) -> dict[str, Node]:
    node = v.node("request", "fields")
    return dict(node.items) if isinstance(node, Obj) else {}


def _field_names(v: _FormatView) -> list[str]:
    """The normal-form fields the format writes: its fields template's keys, then derived tables."""
    names = list(_fields_node(v))
    return names + [n for n, d in v.fmt.plan.derived.items() if d.table is not None and n not in names]


def _field(name: str) -> Concept:
    def concept(v: _FormatView) -> Cell:
        derived = v.fmt.plan.derived.get(name)
        node = _fields_node(v).get(name)
        key: Key = ("request", "fields", name)
        if derived is not None and isinstance(derived.table, Lookup):
            origin = v.fmt.field_origin.get(name, ("?",))[0]
            lines = [f"{origin}, the table read backwards ({v.derived(derived.rule)}):"]
            lines += [
                f"· {v.constant(row.value)} → {value}" for value, row in derived.table.rows if isinstance(row, Const)
            ]
            lines.append("· between two rows: the nearer row at or above it (noted rewritten)")
            return v.cell(lines, ("request", "derive"))
        if node is None:
            return Cell()
        how = v.derived(derived.rule) if derived is not None else "declared"
        if isinstance(node, Lookup):
            return v.cell([f"lookup({node.path.expr}) ({how}):", *v.table_rows(node, key)], key)
        return v.cell([f"{v.shape(node, key, top=True)} ({how})"], key if derived is None else ("request", "derive"))

    return concept


def _unsupported(table: Callable[[SourceFormat], Any], at: Key, action: str) -> Concept:
    def concept(v: _FormatView) -> Cell:
        entries = table(v.fmt)
        shown = []
        for name, entry in entries.items():
            if not isinstance(entry, Unsupported) or entry.action != action:
                continue
            accept = f" (accepted: {', '.join(map(v.constant, entry.accept))})" if entry.accept else ""
            shown.append(name + accept + v.note((*at, name), entry.doc))
        return v.cell([", ".join(shown)] if shown else [], at)

    return concept


def _plain(text: Callable[[SourceFormat], str | None], at: Key = ()) -> Concept:
    def concept(v: _FormatView) -> Cell:
        value = text(v.fmt)
        return v.cell([value] if value else [], at)

    return concept


def _kind(role: str, kind: str) -> Concept:
    def concept(v: _FormatView) -> Cell:
        found = v.fmt.roles.get(role, {}).get(kind)
        if found is None:
            return Cell()
        key: Key = ("request", "messages", "roles", role, "kinds", kind, found.mode)
        node = v.node(*key)
        shape = "" if node is None else v.shape(node, key, top=True)
        lines: list[str]
        if isinstance(node, Lookup):
            lines = [f"a {found.mode}, by {node.path.expr}:", *v.table_rows(node, key)]
        elif found.mode == "item":
            lines = [f"an item of {found.into}: {shape}"]
        elif found.mode == "message":
            lines = [f"a message of its own: {shape}"]
        else:
            lines = [f"a part: {shape}"]
        lines += [f"blocks in {b} read with this role's kinds" for b in found.blocks]
        if found.state is not None:
            lines.append(f"a sealed {found.state[0]} sets the message's {found.state[1]}")
        return v.cell(lines, key)

    return concept


def _role_reads(role: str) -> Concept:
    """The normal form's reader for one role: the message keys it reads, its typed lists, whether other part
    kinds pass on (asked of the compiled normal form; another format has no such row)."""

    def concept(v: _FormatView) -> Cell:
        normal = v.fmt.normal
        if normal is None or role not in normal.read_keys:
            return Cell()
        lines = [f"keys: {', '.join(sorted(normal.read_keys[role]))}"]
        for (owner, key, kind), keys in normal.lists.items():
            if owner == role:
                lines.append(f"{key}: entries of {v.fmt.kind} {kind}, keys {', '.join(sorted(keys))}")
        kinds = normal.role_kinds[role]
        lines.append("part kinds: any (others pass on)" if kinds is None else f"part kinds: {', '.join(sorted(kinds))}")
        return v.cell(lines, ("request", "messages", "roles", role))

    return concept


def _tool_declaration(v: _FormatView) -> Cell:
    node = v.node("request", "tools")
    if not isinstance(node, Obj):
        return Cell()
    lines = []
    for name, child in node.items:
        derived = v.fmt.plan.derived.get(f"tools[].{name}")
        how = v.derived(derived.rule) if derived is not None else "declared"
        lines.append(f"{v.item(name, child, ('request', 'tools', name))} ({how})")
    return v.cell(lines, ("request", "tools"))


def _answer_fields(v: _FormatView) -> Cell:
    node = v.node("answer", "message")
    if not isinstance(node, Obj):
        return Cell() if node is None else v.cell([v.shape(node, ("answer", "message"))], ("answer", "message"))
    return v.cell([v.item(k, n, ("answer", "message", k)) for k, n in node.items], ("answer", "message"))


def _answer_blocks(v: _FormatView) -> Cell:
    lines = [f"into {v.fmt.blocks_into}, in this order:"]
    for i, each in enumerate(v.fmt.plan.blocks_each):
        key: Key = ("answer", "blocks", "from", i, "as")
        node = v.node(*key)
        shape = "?" if node is None else v.shape(node, key, top=True)
        lines.append(f"· each {each}: {shape}" if each is not None else f"· {shape}")
    return v.cell(lines if v.fmt.blocks else [], ("answer", "blocks"))


def _stop(reason: str) -> Concept:
    def concept(v: _FormatView) -> Cell:
        value = v.fmt.stop_table.get(reason)
        rule = ("response", "finish_reason", "table")
        shown = f"{v.fmt.stop_key} {value} ({v.derived(rule)})"
        return v.cell([shown] if value is not None else [], ("answer",))

    return concept


def _usage(target: str) -> Concept:
    def concept(v: _FormatView) -> Cell:
        lines = []
        for to, total, others in v.fmt.usage:
            if ".".join(to) == target:
                less = "".join(f" - {'.'.join(o)}" for o in others)
                lines.append(f"{'.'.join(total)}{less} ({v.derived(('response', 'usage'))})")
        return v.cell(lines, ("answer",))

    return concept


def _stream(key: Key) -> Concept:
    def concept(v: _FormatView) -> Cell:
        node = v.node(*key)
        return Cell() if node is None else v.cell([v.shape(node, key, top=True)], key)

    return concept


def _union(views: Sequence[_FormatView], names: Callable[[_FormatView], Iterable[Any]]) -> list[Any]:
    return list(dict.fromkeys(n for v in views for n in names(v)))


_MOMENTS = ("start", "open", "piece", "close", "end")  # a stream's moments, in the order they come


def _stream_keys(v: _FormatView) -> list[Key]:
    keys = [k for k in v.fmt.plan.nodes if k[0] == "stream"]
    return sorted(keys, key=lambda k: _MOMENTS.index(k[1]) if k[1] in _MOMENTS else len(_MOMENTS))


def _event_label(key: Key) -> str:
    """`("stream", "open", "text")` -> `event: open text`; `("stream", "end", 0)` -> `event: end 1`."""
    rest = [str(p + 1) if isinstance(p, int) else p for p in key[1:]]
    return "event: " + " ".join(rest)


def _sections(views: Sequence[_FormatView]) -> list[tuple[str, list[RowSpec]]]:
    fields = _union(views, _field_names)
    pairs = _union(views, lambda v: ((r, k) for r, kinds in v.fmt.roles.items() for k in kinds))
    reasons = _union(views, lambda v: v.fmt.stop_table)
    usage = _union(views, lambda v: (".".join(to) for to, _, _ in v.fmt.usage))
    events = _union(views, _stream_keys)
    normal_roles = _union(views, lambda v: v.fmt.normal.roles if v.fmt.normal is not None else ())
    return [
        (
            "Format",
            [
                ("format file", _plain(lambda f: f.file)),
                ("derives from the rules of", _plain(lambda f: f.provider, ("provider",))),
                ("API", _plain(lambda f: f.doc, ("doc",))),
            ],
        ),
        (
            "Request fields",
            [
                *((f"{name} ←", _field(name)) for name in fields),
                ("fields dropped", _unsupported(lambda f: f.unsupported, ("request", "unsupported"), "drop")),
                ("fields refused", _unsupported(lambda f: f.unsupported, ("request", "unsupported"), "error")),
            ],
        ),
        (
            "Messages",
            [
                ("system prompt from", _plain(lambda f: f.system, ("request", "messages", "system"))),
                ("messages from", _plain(lambda f: f.each, ("request", "messages", "each"))),
                ("block kind named by", _plain(lambda f: f.kind, ("request", "messages", "kind"))),
                ("one plain text block is a string", _plain(lambda f: ", ".join(sorted(f.plain_text)))),
                *((f"{role} message (reader)", _role_reads(role)) for role in normal_roles),
                *((f"{role} {kind} block", _kind(role, kind)) for role, kind in pairs),
            ],
        ),
        (
            "Tools",
            [
                ("tools from", _plain(lambda f: f.tools_each, ("request", "tools", "each"))),
                ("tool function ←", _tool_declaration),
                ("tool keys dropped", _unsupported(lambda f: f.tool_unsupported, ("request", "tools"), "drop")),
                ("tool keys refused", _unsupported(lambda f: f.tool_unsupported, ("request", "tools"), "error")),
            ],
        ),
        (
            "Answer",
            [
                ("answer fields", _answer_fields),
                ("answer blocks", _answer_blocks),
                *((f"finish_reason {reason} →", _stop(reason)) for reason in reasons),
                *((f"{target} ←", _usage(target)) for target in usage),
            ],
        ),
        (
            "Stream",
            [
                ("reasoning blocks (closed last)", _plain(lambda f: ", ".join(sorted(f.reasoning_kinds)))),
                *((_event_label(key), _stream(key)) for key in events),
            ],
        ),
    ]


def format_names(book: Rulebook) -> list[str]:
    """Every source format (the normal form, `openai`, first)."""
    return book.formats()


def build_format_report(book: Rulebook, names: Sequence[str] = ()) -> Report:
    """The report for the named source formats (every format file when none), in the order given; an unknown
    name is the ConfigError `Rulebook.format` raises, a broken file its located RuleError."""
    chosen = list(dict.fromkeys(names)) or format_names(book)
    notes = _Notes()
    views = [_FormatView(book.format(name), book, notes) for name in chosen]
    sections = []
    for title, specs in _sections(views):
        rows = [Row(label, tuple(concept(v) for v in views)) for label, concept in specs]
        sections.append(Section(title, tuple(rows)))
    return Report(tuple(chosen), tuple(sections), tuple(notes.by_key.values()), legend=LEGEND, noun="formats")
