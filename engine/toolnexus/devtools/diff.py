"""`toolnexus diff`: how each provider handles each concept, side by side, from the rule files alone.

A report is rows of concepts (where the system prompt goes, role names, part
shapes, tool_choice, finish reasons, usage, what is dropped) by columns of
providers. Tables (endpoint, roles, finish reasons, ...) are read from the rule
file's data by its structure; templates are parsed into the nodes the compiler
builds (`language.ask.parse`) and shown from them, never from the raw YAML: no
provider name is ever tested, so a new rule file gets its column for free.
Templates are shown in a compact notation (`_LEGEND`); `doc:` and `source:`
entries become numbered footnotes.
A concept a rule file says nothing about shows as "—".

Three renderers: `render_table` (a terminal; never splits a word or a note
marker), `render_markdown` (a GitHub table with footnotes: the README's "Provider
differences" section is its output) and `render_html` (a standalone page with
contents, anchors, back-linked notes and the rows where providers differ marked;
tests/test_diff.py checks its layout in headless Chromium).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..errors import ConfigError
from ..language.ask import parse, plain_read, roots, written
from ..language.loader import Key, dotted, rule_schema
from ..language.templates import (
    Absent,
    Apply,
    Array,
    Const,
    Content,
    Get,
    ListOf,
    Lookup,
    Merge,
    Node,
    Obj,
    Refuse,
    Sum,
    When,
    walk,
)
from ..translate.rulebook import Provider, Rulebook, lineage, parents_of

NOTHING = "—"
FORMATS = ("table", "markdown", "html")

# Names the request body's scope holds already translated (README "Rule format"): the
# messages, tools and tool_choice sections' output, and the chosen system prompt.
_TRANSLATED = ("messages", "tools", "tool_choice", "system")
DOC_KEYS = ("doc", "source")
_MARK = re.compile("\x1f(\\d+)\x1f")  # a footnote reference; YAML cannot carry this character
_MARKS = re.compile("(?:\x1f\\d+\x1f)+")  # adjacent references, shown as one group

_LEGEND = (
    'Shapes: a bare name copies the field of that name; "key: path" reads a path '
    "(of the OpenAI side in requests, of the provider's answer in responses); "
    '"x" is a constant; a ?? b is the first one present; T if p == v is T only then, '
    "otherwise the key is omitted (or E, with else E); list(p) makes a lone string a one-item list; a + b sums; "
    "lookup(p, table: ...) picks the row named by p's value; "
    "{...p, k: T} is p with k set; content(policy) writes the message's parts through the part rows; "
    '"as given" passes the OpenAI value through; in streaming, into[at].field ← from merges the event\'s value '
    "into the rebuilt response (@ is the whole event or response). "
    f"{NOTHING} means the rule file says nothing about it."
)


@dataclass(frozen=True)
class Footnote:
    number: int
    provider: str
    rule: str  # the dotted rule key carrying the note
    text: str

    def plain(self) -> str:
        return f"{self.provider}, {self.rule}: {self.text}"


@dataclass(frozen=True)
class Cell:
    """One provider's answer for one concept: lines of text (none: the file says nothing)."""

    lines: tuple[str, ...] = ()
    where: str = ""  # file:line of the rule it came from (shown by the html renderer)
    same_as: str = ""  # a variant's answer that is its parent's (the parent is in the report): shown as such

    @property
    def shown(self) -> tuple[str, ...]:
        """What the renderers print: the lines, or for a variant saying what its parent says, `as <parent>`."""
        return (f"as {self.same_as}",) if self.same_as and self.lines else self.lines


@dataclass(frozen=True)
class Row:
    concept: str
    cells: tuple[Cell, ...]

    @property
    def differs(self) -> bool:
        """Whether the providers' answers differ (footnote references aside); one provider never differs."""
        return len({tuple(_MARK.sub("", line) for line in c.lines) for c in self.cells}) > 1


@dataclass(frozen=True)
class Section:
    title: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Report:
    providers: tuple[str, ...]  # the columns (source formats, in `toolnexus diff --sources`)
    sections: tuple[Section, ...]
    footnotes: tuple[Footnote, ...]
    legend: str = _LEGEND
    noun: str = "providers"  # what the columns are


# ---------------------------------------------------------------------------------------
# Reading one rule file


@dataclass
class _Notes:
    """Footnotes, numbered in the order the report first refers to them."""

    by_key: dict[tuple[str, str, str], Footnote] = field(default_factory=dict)

    def ref(self, provider: str, key: Key, text: str) -> str:
        entry = (provider, dotted(key), text)
        if entry not in self.by_key:
            self.by_key[entry] = Footnote(len(self.by_key) + 1, *entry)
        return f"\x1f{self.by_key[entry].number}\x1f"


def _copies(node: Node | None) -> str | None:
    """The path of a template that only reads one path (no default, not required), else None."""
    read = None if node is None else plain_read(node)
    return None if read is None else read.expr


class RuleFile:
    """One provider's rule file as the reports ask it: its tables as data, its templates as the parsed
    nodes the compiler builds (what each reads, writes, and its plain path), never as raw YAML."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.data: Any = provider.source.data

    def at(self, *key: str | int) -> Any:
        value = self.data
        for part in key:
            if isinstance(part, int):
                if not isinstance(value, list) or part >= len(value):
                    return None
            elif not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value

    def table(self, *key: str) -> dict[str, Any]:
        value = self.at(*key)
        return value if isinstance(value, dict) else {}

    def template(self, *key: str | int) -> Node | None:
        """The parsed template at `key`, or None when the rule file has none there."""
        value = self.at(*key)
        return None if value is None else parse(value, key, self.provider.source)

    def templates(self, *key: str) -> list[tuple[str, Node, Key]]:
        """The templates of the table at `key` (body fields, roles, ...): name, node, key."""
        found = ((name, self.template(*key, name), (*key, name)) for name in self.table(*key))
        return [(name, node, at) for name, node, at in found if node is not None]

    def item_keys(self) -> Iterable[tuple[int, dict[str, Any], list[Key]]]:
        """Each response item source: its index, its spec and the keys of its templates (`as`, each of `kinds`)."""
        items = self.at("response", "items")
        for i, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict):
                keys: list[Key] = [("response", "items", i, "as")] if "as" in item else []
                yield i, item, keys + [("response", "items", i, "kinds", kind) for kind in item.get("kinds") or {}]


class _View(RuleFile):
    """One provider's rule file, read concept by concept, its templates shown in compact notation."""

    def __init__(self, provider: Provider, notes: _Notes) -> None:
        super().__init__(provider)
        self.notes = notes

    def cell(self, lines: Iterable[str], key: Key = ()) -> Cell:
        where = ""
        if key:
            file, line, _ = self.provider.source.locate(key)  # an inherited rule: its parent's file
            where = f"{file}:{line}" if line else file
        return Cell(tuple(lines), where)

    def marks(self, entry: Any, key: Key) -> str:
        """Footnote references for the `doc:`/`source:` of a rule entry."""
        if not isinstance(entry, dict):
            return ""
        return "".join(
            self.notes.ref(self.provider.name, key, str(entry[k])) for k in DOC_KEYS if isinstance(entry.get(k), str)
        )

    def doc(self, key: Key) -> str:
        """The footnote references of the operation written at `key` (its `doc:`/`source:` annotations)."""
        return self.marks(self.at(*key), key)

    # Templates in compact notation, from their nodes.

    def shape(self, node: Node, key: Key, *, top: bool = False) -> str:
        if isinstance(node, Const):
            return self.constant(node.value)
        if isinstance(node, Obj):
            return "{" + ", ".join(self.item(k, n, (*key, k)) for k, n in node.items) + "}"
        if isinstance(node, Array):
            return "[" + ", ".join(self.shape(n, (*key, i)) for i, n in enumerate(node.items)) + "]"
        return self._op_shape(node, key, top=top) + self.doc(key)

    def constant(self, value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {self.constant(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(map(self.constant, value)) + "]"
        return json.dumps(value, ensure_ascii=False)

    def item(self, name: str, node: Node, key: Key) -> str:
        """`name` when the template copies the field of that name, else `name: shape`."""
        if _copies(node) == name:
            return name + self.doc(key)
        return f"{name}: {self.shape(node, key)}"

    def _op_shape(self, node: Node, key: Key, *, top: bool) -> str:
        if isinstance(node, Get):
            if top and _copies(node) == "source":
                return "as given"
            text = " ?? ".join(read.expr for read in node.reads)
            if node.default is not None:
                text += " ?? " + self.shape(node.default, (*key, "default"))
            text += f" ({node.wanted})" if node.wanted else ""
            return text + (" (required)" if node.required else "")
        if isinstance(node, When):
            expected = node.expected
            test = f"in {self.constant(list(expected))}" if len(expected) > 1 else f"== {self.constant(expected[0])}"
            if node.test != "is":  # present / empty: true or false
                test = ("is " if expected[0] else "is not ") + node.test
            text = f"{self.shape(node.then, (*key, 'then'))} if {node.path.expr} {test}"
            return text + (f" else {self.shape(node.otherwise, (*key, 'else'))}" if node.otherwise else "")
        if isinstance(node, ListOf):
            return f"list({node.path.expr})"
        if isinstance(node, Sum):
            return " + ".join(read.expr for read in node.reads)
        if isinstance(node, Merge):
            items = [self.item(k, n, (*key, "with", k)) for k, n in node.sets]
            if top and node.path.expr == "source":
                return "as given" + (", with " + ", ".join(items) if items else "")
            return "{" + ", ".join([f"...{node.path.expr}", *items]) + "}"
        if isinstance(node, Lookup):
            rows = ", ".join(self.item(k, n, (*key, "table", k)) for k, n in node.rows)
            args = [node.path.expr, f"table: {{{rows}}}"]
            args += [f"skip: {self.constant(list(node.skip))}"] if node.skip else []
            args += [f"default: {self.shape(node.default, (*key, 'default'))}"] if node.default else []
            return f"lookup({', '.join(args)})"
        if isinstance(node, Content):
            args = [node.policy]
            args += [f"kinds: {self.constant(sorted(node.kinds))}"] if node.kinds is not None else []
            args += [f"lead: {self.constant(read.expr)}" for read in node.reads[1:]]
            return f"content({', '.join(args)})"
        if isinstance(node, Refuse):
            return f"refused: {node.message}"
        if isinstance(node, Absent):
            return "absent"
        assert isinstance(node, Apply)  # a value function: its name and options
        function = node.function
        options = getattr(function, "keywords", {})
        shown = {k: v for k, v in options.items() if k != "where" and not callable(v)}  # a getter has no text
        args = [node.path.expr] + [f"{k}: {self.constant(v)}" for k, v in shown.items()]
        return f"{getattr(function, 'func', function).__name__}({', '.join(args)})"

    def unsupported(self, key: Key, action: str) -> list[str]:
        """The entries of an `unsupported` table with this action, with their accepted values."""
        out = []
        for name, entry in self.table(*(str(k) for k in key)).items():
            if not isinstance(entry, dict) or entry.get("action") != action:
                continue
            accept = entry.get("accept")
            text = name
            if isinstance(accept, list) and accept:
                values = " or ".join(map(self.constant, accept))
                text += f" unless {values}" if action == "error" else f" (silent when {values})"
            out.append(text + self.marks(entry, (*key, name)))
        return out


# ---------------------------------------------------------------------------------------
# The concepts: one function per row, reading one rule file


Concept = Callable[[_View], Cell]


def _rule_file(v: _View) -> Cell:
    return v.cell([v.provider.file])


def _extends(v: _View) -> Cell:
    """The parent a variant starts from; its other cells say `as <parent>` where they say what the parent says."""
    parent = v.at("extends")
    return Cell() if parent is None else v.cell([f"{parent} (its values unless written)"], ("extends",))


def _api(v: _View) -> Cell:
    doc = v.at("doc")
    text = (doc if isinstance(doc, str) else "") + v.marks({"source": v.at("source")}, ("source",))
    return v.cell([text] if text else [], ("provider",))


def _endpoint(v: _View) -> Cell:
    ep = v.table("endpoint")
    if "path" not in ep:
        return Cell()
    return v.cell([f"{ep.get('method', 'POST')} {ep['path']}{v.marks(ep, ('endpoint',))}"], ("endpoint", "path"))


def _base_url(v: _View) -> Cell:
    url = v.at("endpoint", "base_url")
    return v.cell([str(url)] if url else [], ("endpoint", "base_url"))


def _auth(v: _View) -> Cell:
    ep = v.table("endpoint")
    if "auth" not in ep:
        if "auth_header" not in ep:
            return Cell()
        scheme = f"{ep['auth_scheme']} " if ep.get("auth_scheme") else ""
        return v.cell([f"{ep['auth_header']}: {scheme}<key>"], ("endpoint", "auth_header"))
    given = ep["auth"]
    auth = {"scheme": given} if isinstance(given, str) else dict(given)
    scheme = auth["scheme"]
    if scheme in ("header", "bearer"):
        name, prefix = (auth.get("header"), auth.get("prefix")) if scheme == "header" else ("Authorization", "Bearer")
        shown = f"{name}: {prefix + ' ' if prefix else ''}<key>"
    else:
        params = ", ".join(f"{k} {', '.join(map(str, w)) if isinstance(w, list) else w}" for k, w in auth.items()
                           if k in ("service", "region", "scopes"))  # fmt: skip
        shown = f"{scheme} ({params})" if params else scheme
    return v.cell([shown], ("endpoint", "auth"))


def _key_env(v: _View) -> Cell:
    names = v.at("endpoint", "api_key_env")
    shown = [", ".join(map(str, names))] if isinstance(names, list) and names else []
    return v.cell(shown, ("endpoint", "api_key_env"))


def _headers(v: _View) -> Cell:
    return v.cell([f"{k}: {h}" for k, h in v.table("endpoint", "headers").items()], ("endpoint", "headers"))


def _request_id(v: _View) -> Cell:
    name = v.at("endpoint", "request_id_header")
    return v.cell([str(name)] if name else [], ("endpoint", "request_id_header"))


def _error_body(v: _View) -> Cell:
    paths = v.table("endpoint", "error")
    return v.cell([", ".join(f"{k}: {p}" for k, p in paths.items())] if paths else [], ("endpoint", "error"))


def _system_target(v: _View) -> Cell:
    system = v.table("messages", "system")
    key: Key = ("messages", "system")
    message = v.template(*key, "message")
    if message is not None:
        lines = [f"a leading message {v.shape(message, (*key, 'message'))}"]
    else:
        lines = []
        for name, node, at in v.templates("request", "body"):
            if "system" in roots(node):
                shown = f": {v.shape(node, at)}" if _copies(node) != "system" else v.doc(at)
                lines.append(f"body field {name}{shown}")
                key = at
    if lines:
        lines[0] += v.marks(system, ("messages", "system"))
    return v.cell(lines, key)


def _hoisted(v: _View) -> Cell:
    system = v.table("messages", "system")
    roles = system.get("roles")
    if not isinstance(roles, list) or not roles:
        return Cell()
    joined = f", joined with {json.dumps(system['join'])}" if "join" in system else ""
    return v.cell([", ".join(map(str, roles)) + joined], ("messages", "system", "roles"))


def _system_blocks(v: _View) -> Cell:
    """`when_cached`: the keys the text part's template writes besides its text keep the prompt in blocks."""
    text = v.template("messages", "parts", "text")
    if v.at("messages", "system", "blocks") != "when_cached" or text is None:
        return Cell()
    keys = ", ".join(sorted(roots(text) - {"text"}))
    return v.cell([f"text blocks, each {keys} where it was given"], ("messages", "system", "blocks"))


def _tool_call_ids(v: _View) -> Cell:
    rule = v.table("tool_call_ids")
    if "pattern" not in rule:
        return Cell()
    rewrite = rule.get("rewrite")
    how = (
        f"a hash in {rewrite.get('length')} of {rewrite.get('alphabet')}, restored from the request's id map"
        if isinstance(rewrite, dict)
        else "tn_ + base64url, restored in results"
    )
    text = f"{rule['pattern']}; others sent as {how}{v.marks(rule, ('tool_call_ids',))}"
    return v.cell([text], ("tool_call_ids", "pattern"))


def _role_name(role: str) -> Concept:
    def concept(v: _View) -> Cell:
        key: Key = ("messages", "roles", role)
        entry = v.at(*key)
        template = v.template(*key, "message")
        if template is None:
            hoisted = v.at("messages", "system", "roles")
            return v.cell(["hoisted into the system prompt"] if isinstance(hoisted, list) and role in hoisted else [])
        name = dict(written(template)).get("role")
        if isinstance(template, Merge) and name is not None:
            text = v.shape(name, (*key, "message", "with", "role"))
        elif name is not None:
            text = name.value if isinstance(name, Const) and isinstance(name.value, str) else v.shape(name, key)
        elif isinstance(template, Merge | Get) and template.paths()[0].expr == "source":
            text = "as given"
        else:
            text = v.shape(template, (*key, "message"), top=True)
        return v.cell([text + v.marks(entry, key)], (*key, "message"))

    return concept


def _message_bodies(v: _View) -> Cell:
    lines = []
    for role in v.table("messages", "roles"):
        key: Key = ("messages", "roles", role, "message")
        template = v.template(*key)
        if template is None:
            continue
        items = written(template)
        name = dict(items).get("role")
        if not isinstance(template, Merge) and isinstance(name, Const) and isinstance(name.value, str):
            template = Obj(tuple((k, n) for k, n in items if k != "role"))  # the role row shows it
        lines.append(f"{role}: {v.shape(template, key, top=True)}")
    return v.cell(lines, ("messages", "roles"))


def _roles_flagged(flag: str) -> Concept:
    def concept(v: _View) -> Cell:
        roles = [r for r, e in v.table("messages", "roles").items() if isinstance(e, dict) and e.get(flag) is True]
        return v.cell([", ".join(roles)] if roles else [], ("messages", "roles"))

    return concept


def _merge_same_role(v: _View) -> Cell:
    """messages.merge_same_role: the written key whose equal values merge consecutive turns."""
    key = v.table("messages").get("merge_same_role")
    return v.cell([f"consecutive turns with the same {key}"] if isinstance(key, str) else [], ("messages",))


def _keys_dropped(*key: str) -> Concept:
    def concept(v: _View) -> Cell:
        lines = []
        for action, label in (("drop", "dropped"), ("error", "refused")):
            entries = v.unsupported(key, action)
            if entries:
                lines.append(f"{label}: {', '.join(entries)}")
        return v.cell(lines, key)

    return concept


def _fields(action: str) -> Concept:
    def concept(v: _View) -> Cell:
        entries = v.unsupported(("request", "unsupported"), action)
        return v.cell([", ".join(entries)] if entries else [], ("request", "unsupported"))

    return concept


def _template(*key: str) -> Concept:
    """A template shown whole, e.g. one part kind, one tool_choice kind, one usage field."""

    def concept(v: _View) -> Cell:
        node = v.template(*key)
        return Cell() if node is None else v.cell([v.shape(node, key, top=True)], key)

    return concept


def _body_sections(v: _View) -> Cell:
    """Where the translated messages, tools and tool_choice go in the body."""
    lines = [
        v.item(name, node, key)
        for name, node, key in v.templates("request", "body")
        if roots(node) & set(_TRANSLATED) and "system" not in roots(node)
    ]
    return v.cell(lines, ("request", "body"))


def _passed(v: _View) -> Cell:
    names = []
    for name, node, key in v.templates("request", "body"):
        if _reads_itself(name, node) and name not in _TRANSLATED:
            names.append(name + (" (required)" if isinstance(node, Get) and node.required else "") + v.doc(key))
    return v.cell([", ".join(names)] if names else [], ("request", "body"))


def _reshaped(v: _View) -> Cell:
    lines = [
        v.item(name, node, key)
        for name, node, key in v.templates("request", "body")
        if not _reads_itself(name, node) and not roots(node) & set(_TRANSLATED)
    ]
    return v.cell(lines, ("request", "body"))


def _defaults(v: _View) -> Cell:
    """Every `$get` with a `default:`, in any template of the file (body fields by their body name), in file order."""
    found: list[tuple[int, str]] = []
    for key in _template_keys(v):
        node = v.template(*key)
        for get in walk(node) if node is not None else ():
            if isinstance(get, Get) and get.default is not None:
                at = _key_of(get)
                shown = dotted(at[2:] if at[:2] == ("request", "body") else at)
                text = f"{shown}: {v.shape(get.default, (*at, 'default'))}{v.doc(at)}"
                found.append((v.provider.source.where(at)[0] or 0, text))
    return v.cell(text for _, text in sorted(found, key=lambda pair: pair[0]))


def _template_keys(v: _View) -> list[Key]:
    """Where the rule file's templates are (README "Rule format"), each named by its key."""
    keys: list[Key] = [("messages", "system", "message"), ("tools", "declaration"), ("response", "model")]
    keys += [("request", "body", name) for name in v.table("request", "body")]
    keys += [("messages", "roles", role, "message") for role in v.table("messages", "roles")]
    keys += [("messages", "parts", kind) for kind in v.table("messages", "parts")]
    keys += [("tool_choice", kind) for kind in v.table("tool_choice") if kind not in DOC_KEYS]
    keys += [("response", "usage", name) for name in v.table("response", "usage")]
    return keys + [key for _, _, item_keys in v.item_keys() for key in item_keys]


def _key_of(get: Get) -> Key:
    """The rule key of a `$get`: where its first path is written, less the operation (and the list index)."""
    key = get.reads[0].key
    return key[:-1] if isinstance(key[-1], str) else key[:-2]


def _reads_itself(name: str, node: Node) -> bool:
    """Whether a body field's template is `{$get: <its own name>}`, required or not (no default)."""
    if not isinstance(node, Get) or node.default is not None or node.wanted is not None:
        return False
    return [read.expr for read in node.reads] == [name]


def _item_sources(v: _View) -> Iterable[tuple[int, dict[str, Any], str]]:
    """Each response item source: its index, its spec and where it reads (`each PATH` or `one PATH`)."""
    for i, item, _ in v.item_keys():
        yield i, item, f"each {item['each']}" if "each" in item else f"one {item.get('one', '?')}"


def _answer_pieces(v: _View) -> Cell:
    lines = []
    for i, item, read in _item_sources(v):
        key: Key = ("response", "items", i)
        where = read + (" (optional)" if item.get("optional") else "")
        if isinstance(item.get("kinds"), dict):
            lines.append(f"{where}, by {item.get('kind', '?')}:{v.marks(item, key)}")
            for kind in item["kinds"]:
                node = v.template(*key, "kinds", kind)
                shown = "ignored" if node is None or node == Const({}) else v.shape(node, (*key, "kinds", kind))
                lines.append(f"· {kind}: {shown}")
        else:
            node = v.template(*key, "as")
            shown = v.shape(node, (*key, "as")) if node is not None else v.constant(None)
            lines.append(f"{where}: {shown}{v.marks(item, key)}")
    return v.cell(lines, ("response", "items"))


def _annotation_sources(v: _View) -> Cell:
    """Each item kind's `annotations`: the list read, what it cites, what its indexes count, and the annotation."""
    lines = []
    for i, item, where in _item_sources(v):
        kinds = [((), "as")] if "as" in item else [((kind,), "kinds") for kind in item.get("kinds") or {}]
        for names, table in kinds:
            key: Key = ("response", "items", i, table, *names)
            spec = v.at(*key, "annotations")
            if not isinstance(spec, dict):
                continue
            read = f"{where}{' ' + names[0] if names else ''}: each {spec.get('each')}"
            cites = spec.get("cites")
            if isinstance(cites, dict):
                read += f", citing {cites.get('each')}" + (f" of {cites['in']}" if "in" in cites else "")
            read += ", indexes into the answer" if spec.get("over") == "answer" else ""
            read += ", in UTF-8 bytes" if spec.get("unit") == "utf8-bytes" else ""
            node = v.template(*key, "annotations", "as")
            shown = v.shape(node, (*key, "annotations", "as")) if node is not None else "?"
            lines.append(f"{read} → {shown}")
    return v.cell(lines, ("response", "items"))


def _arguments_form(v: _View) -> Cell:
    forms: list[str] = []
    for _, item, keys in v.item_keys():
        nodes = [v.template(*key) for key in keys]
        if any(node is not None and "tool_call" in dict(written(node)) for node in nodes):
            form = str(item.get("arguments", "any"))
            forms += [form] if form not in forms else []
    return v.cell([", ".join(forms)] if forms else [], ("response", "items"))


def _finish_from(v: _View) -> Cell:
    finish = v.table("response", "finish_reason")
    if "from" not in finish:
        return Cell()
    return v.cell([str(finish["from"]) + v.marks(finish, ("response", "finish_reason"))], ("response", "finish_reason"))


def _finish_to(reason: str) -> Concept:
    def concept(v: _View) -> Cell:
        values = [k for k, r in v.table("response", "finish_reason", "table").items() if r == reason]
        return v.cell([", ".join(values)] if values else [], ("response", "finish_reason", "table"))

    return concept


def _finish_fallback(which: str) -> Concept:
    def concept(v: _View) -> Cell:
        reason = v.at("response", "finish_reason", which)
        return v.cell([f"{reason} (noted)"] if isinstance(reason, str) else [], ("response", "finish_reason", which))

    return concept


def _stream_endpoint(v: _View) -> Cell:
    streaming = v.table("streaming")
    if not streaming:
        return Cell()
    path = streaming.get("path") or v.table("endpoint").get("path", "?")
    return v.cell([f"POST {path}{v.marks(streaming, ('streaming',))}"], ("streaming",))


def _stream_framing(v: _View) -> Cell:
    streaming = v.table("streaming")
    if not streaming:
        return Cell()
    return v.cell([str(streaming.get("framing", "sse"))], ("streaming", "framing"))


def _stream_body(v: _View) -> Cell:
    body = v.table("streaming", "body")
    lines = [v.constant(body)] if body else []
    overlay = v.template("streaming", "request")
    lines += [f"merged in: {v.shape(overlay, ('streaming', 'request'))}"] if overlay is not None else []
    return v.cell(lines, ("streaming", "body"))


def _step(step: Any) -> str:
    """One stream step as `into[at].field ← from`."""
    if not isinstance(step, dict):
        return str(step)
    target = str(step.get("into", "?")) + (f"[{step['at']}]" if "at" in step else "")
    target += f".{step['field']}" if "field" in step else ""
    text = f"{target} ← {step.get('from', '?')}"
    text += f" without {', '.join(map(str, step['omit']))}" if step.get("omit") else ""
    return f"each {step['each']}: {text}" if "each" in step else text


def _stream_events(v: _View) -> Cell:
    streaming = v.table("streaming")
    lines = []
    if streaming.get("every"):
        lines.append("every event: " + "; ".join(_step(s) for s in streaming["every"]))
    for name, handler in v.table("streaming", "events").items():
        if isinstance(handler, dict):
            for case, steps in handler.get("cases", {}).items():
                lines.append(f"{name} ({handler.get('by')} {case}): " + ("; ".join(map(_step, steps)) or "nothing"))
        elif isinstance(handler, list):
            lines.append(f"{name}: " + ("; ".join(_step(s) for s in handler) or "nothing"))
    return v.cell(lines, ("streaming",))


def _stream_end(v: _View) -> Cell:
    streaming = v.table("streaming")
    ends = [f"event {name}" for name, steps in v.table("streaming", "events").items() if steps == ["end"]]
    ends += [f"data {streaming['done']}"] if "done" in streaming else []
    ends += [f"body end with {' or '.join(streaming['complete'])}"] if streaming.get("complete") else []
    return v.cell(ends, ("streaming",))


def _stream_combine(v: _View) -> Cell:
    lines = []
    for policy, paths in v.table("streaming", "combine").items():
        if policy == "join" and isinstance(paths, dict):
            lines += [f"join: {path} (on {spec.get('field')})" for path, spec in paths.items()]
        elif isinstance(paths, list):
            lines.append(f"{policy}: {', '.join(map(str, paths))}")
    return v.cell(lines, ("streaming", "combine"))


def _stream_fields(section: str) -> Concept:
    """`streaming.reasoning` / `streaming.text`: the item kind's field streamed as such deltas."""

    def concept(v: _View) -> Cell:
        fields = v.table("streaming", section)
        lines = [
            f"{kind}.{field['path']} (parts joined by {field.get('join', '')!r})"
            if isinstance(field, dict)
            else f"{kind}.{field}"
            for kind, field in fields.items()
        ]
        return v.cell(lines, ("streaming", section))

    return concept


# Rows whose set depends on the rule files: one per role, part kind, tool_choice kind, ...


RowSpec = tuple[str, Concept]
Rows = RowSpec | Callable[[Sequence[_View]], list[RowSpec]]


def _union(views: Sequence[_View], *key: str) -> list[str]:
    """The keys of the table at `key` in any file, in the rule format's order (its schema), then as found."""
    schema: Any = rule_schema()
    for name in key:
        schema = schema.get("properties", {}).get(name, {}) if isinstance(schema, dict) else {}
    order = list(schema.get("properties", {})) if isinstance(schema, dict) else []
    seen: list[str] = []
    for v in views:
        seen += [k for k in v.table(*key) if k not in seen and k not in DOC_KEYS]
    return [k for k in order if k in seen] + [k for k in seen if k not in order]


def _per_key(label: str, key: tuple[str, ...], concept: Callable[[str], Concept]) -> Rows:
    """One row per key of the table at `key` in any file (a role, a part kind, ...): `label` names it."""
    return lambda views: [(label.format(name), concept(name)) for name in _union(views, *key)]


def _finish_rows(views: Sequence[_View]) -> list[RowSpec]:
    enum = rule_schema().get("$defs", {}).get("finish_reason", {}).get("enum", [])
    seen: list[str] = []
    for v in views:
        finish = v.table("response", "finish_reason")
        values = [*finish.get("table", {}).values(), finish.get("unknown"), finish.get("missing")]
        seen += [r for r in values if isinstance(r, str) and r not in seen]
    reasons = [*enum, *(r for r in seen if r not in enum)]  # every OpenAI finish reason, mapped or not
    return [
        *((f"finish_reason {reason} from", _finish_to(reason)) for reason in reasons),
        ("finish_reason for an unknown value", _finish_fallback("unknown")),
        ("finish_reason when absent", _finish_fallback("missing")),
    ]


_SECTIONS: tuple[tuple[str, tuple[Rows, ...]], ...] = (
    ("Provider", (("rule file", _rule_file), ("extends", _extends), ("API", _api))),
    (
        "Endpoint",
        (
            ("default base URL", _base_url),
            ("endpoint", _endpoint),
            ("auth header", _auth),
            ("API key env", _key_env),
            ("extra headers", _headers),
            ("request id header", _request_id),
            ("error body", _error_body),
        ),
    ),
    (
        "System prompt",
        (
            ("system prompt goes to", _system_target),
            ("hoisted roles", _hoisted),
            ("system with a cached part", _system_blocks),
        ),
    ),
    (
        "Messages",
        (
            _per_key("{} role becomes", ("messages", "roles"), _role_name),
            ("message shape", _message_bodies),
            ("merged when consecutive", _roles_flagged("merge_consecutive")),
            ("merged by provider role", _merge_same_role),
            ("dropped when empty", _roles_flagged("drop_if_empty")),
            ("message keys dropped / refused", _keys_dropped("messages", "unsupported")),
            _per_key("{} part", ("messages", "parts"), partial(_template, "messages", "parts")),
        ),
    ),
    (
        "Tools",
        (
            ("tool declaration", _template("tools", "declaration")),
            ("tool keys dropped / refused", _keys_dropped("tools", "unsupported")),
            ("tool-call ids accepted", _tool_call_ids),
            _per_key("tool_choice {}", ("tool_choice",), partial(_template, "tool_choice")),
        ),
    ),
    (
        "Request body",
        (
            ("body places messages, tools, tool_choice", _body_sections),
            ("fields passed as is", _passed),
            ("fields reshaped", _reshaped),
            ("defaults", _defaults),
            ("fields dropped", _fields("drop")),
            ("fields refused", _fields("error")),
        ),
    ),
    (
        "Response",
        (
            ("model from", _template("response", "model")),
            ("answer pieces", _answer_pieces),
            ("annotations from", _annotation_sources),
            ("refusal text from", _template("response", "refusal")),
            ("tool-call arguments arrive as", _arguments_form),
            ("finish_reason read from", _finish_from),
            _finish_rows,
            _per_key("usage {}", ("response", "usage"), partial(_template, "response", "usage")),
        ),
    ),
    (
        "Streaming",
        (
            ("stream endpoint", _stream_endpoint),
            ("stream framing", _stream_framing),
            ("asks for a stream with", _stream_body),
            ("events rebuild the response", _stream_events),
            ("the stream is complete at", _stream_end),
            ("pieces combined", _stream_combine),
            ("reasoning deltas from", _stream_fields("reasoning")),
            ("text deltas gathered in", _stream_fields("text")),
        ),
    ),
)


FAMILY = "+variants"  # `openai+variants`: openai and every rule file that extends it, directly or not


def chosen_providers(book: Rulebook, names: Sequence[str]) -> list[str]:
    """The providers `names` pick, in order, once each; `NAME+variants` is NAME's family (README "Provider
    differences"); none picks every provider, each family together. An unknown name fails as `book.get` does."""
    if not names:
        return family_order(book)
    out: list[str] = []
    order, parents = family_order(book), parents_of(book.providers)
    for name in names:
        root = name.removesuffix(FAMILY)
        book.get(root)  # an unknown provider: a located error with a did-you-mean
        family = [n for n in order if root in lineage(n, parents)] if name.endswith(FAMILY) else [root]
        out += [n for n in family if n not in out]
    return out


def family_order(book: Rulebook) -> list[str]:
    """Every provider, each variant (`extends:`) right after its parent, variants of variants after them."""
    children: dict[str | None, list[str]] = {}
    parents = parents_of(book.providers)
    for name in book.names():
        parent = parents.get(name)
        children.setdefault(parent if parent in book.providers else None, []).append(name)
    out: list[str] = []

    def visit(name: str) -> None:
        if name not in out:
            out.append(name)
            for child in children.get(name, []):
                visit(child)

    for root in children.get(None, []):
        visit(root)
    return out + [name for name in book.names() if name not in out]  # a cycle cannot load; kept for safety


def build_report(book: Rulebook, names: Sequence[str] = ()) -> Report:
    """The report for the named providers (all of the rulebook's, each family together, when none; a
    `NAME+variants` for a family), in the order given. A variant's cell that says what its parent's says
    is shown as `as <parent>`."""
    chosen = chosen_providers(book, names)
    notes = _Notes()
    views = {name: _View(book.get(name), notes) for name in chosen}
    parents = parents_of(book.providers)
    order = [name for name in family_order(book) if name in views]  # parents before their variants
    sections = []
    for title, specs in _SECTIONS:
        rows = []
        for spec in specs:
            for label, concept in [spec] if isinstance(spec, tuple) else spec(list(views.values())):
                cells: dict[str, Cell] = {}
                for name in order:  # row-major: footnotes number in order
                    parent = parents.get(name)
                    cells[name] = _variant_cell(concept, views[name], cells.get(parent or ""), parent)
                rows.append(Row(label, tuple(cells[name] for name in chosen)))
        sections.append(Section(title, tuple(rows)))
    return Report(tuple(chosen), tuple(sections), tuple(notes.by_key.values()))


def _variant_cell(concept: Callable[[_View], Cell], view: _View, parent: Cell | None, name: str | None) -> Cell:
    """`concept`'s cell for `view`; for a variant whose answer is its parent's (footnotes aside), the parent's
    cell marked `same_as`, tried with scratch notes so that it numbers none of its own."""
    if parent is None or name is None:
        return concept(view)
    real, view.notes = view.notes, _Notes()
    try:
        trial = concept(view)
    finally:
        view.notes = real
    plain = [tuple(_MARK.sub("", line) for line in cell.lines) for cell in (trial, parent)]
    if plain[0] == plain[1] and parent.lines:
        return Cell(parent.lines, trial.where, same_as=name)
    return concept(view)


# ---------------------------------------------------------------------------------------
# Renderers


def _refs(text: str, ref: Callable[[int], str]) -> str:
    return _MARK.sub(lambda m: ref(int(m.group(1))), text)


def _plain(text: str) -> str:
    return _refs(text, lambda n: f"\u00a0[{n}]")  # a no-break space: wrapping keeps a note with its entry


def render_table(report: Report, width: int | None = None) -> str:
    """Aligned plain-text columns for a terminal; long cells wrap within their column.

    Lines break at spaces, or inside a long token after punctuation such as `.` `_` `/` `:`; never
    inside a word or a note marker, so a column is at least as wide as its longest such piece
    (the table grows past `width` only when those alone do not fit).
    """
    width = width or shutil.get_terminal_size((120, 24)).columns
    rows = [row for section in report.sections for row in section.rows]
    cells = [[[_plain(line) for line in cell.shown] or [NOTHING] for cell in row.cells] for row in rows]
    concepts = [row.concept for row in rows]
    natural = [max(len("concept"), *map(len, concepts))] + [
        max(len(name), *(len(line) for row in cells for line in row[i])) for i, name in enumerate(report.providers)
    ]
    pieces = [[_longest_piece(c) for c in concepts]] + [
        [_longest_piece(line) + 2 for row in cells for line in row[i]] for i in range(len(report.providers))
    ]  # + 2: a continued line is indented
    least = [min(n, max(16, *p)) for n, p in zip(natural, pieces, strict=True)]
    first, *widths = _fit([min(natural[0], 34), *natural[1:]], least, width - 3 * len(report.providers))
    out = [_table_line(["concept", *report.providers], [first, *widths])]
    out.append("-+-".join("-" * w for w in [first, *widths]))
    index = 0
    for section in report.sections:
        out.append(f"{section.title.upper()}")
        for row in section.rows:
            columns = [_wrap([row.concept], first)] + [_wrap(c, w) for c, w in zip(cells[index], widths, strict=True)]
            index += 1
            for i in range(max(map(len, columns))):
                out.append(_table_line([c[i] if i < len(c) else "" for c in columns], [first, *widths]))
    out += ["", *textwrap.wrap(report.legend, width)]
    if report.footnotes:
        out += ["", "Notes:"]
        for n in report.footnotes:
            out += textwrap.wrap(f"[{n.number}] {n.plain()}", width, subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(out) + "\n"


def _fit(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths: as even as `room` allows, each between its least and its natural width."""

    def at(level: int) -> list[int]:
        return [min(n, max(low, level)) for n, low in zip(natural, least, strict=True)]

    level = 0
    while level < max(natural) and sum(at(level + 1)) <= room:
        level += 1
    return at(level)


# A space run, a piece of a long token ending in a break character that a name, a value or an
# opening bracket follows, or the rest of a token. A note marker (a no-break space, then [n]) is
# never split, nor separated from its word.
_PIECE = re.compile('( +|[^ ]*?[._/,:;?=](?=[A-Za-z0-9"{(\\[$@])|[^ ]+)')


class _Wrapper(textwrap.TextWrapper):
    """textwrap, breaking only where `_PIECE` allows."""

    def _split(self, text: str) -> list[str]:
        return _PIECE.findall(text)


def _longest_piece(line: str) -> int:
    return max((len(piece) for piece in _PIECE.findall(line)), default=0)


def _wrap(lines: list[str], width: int) -> list[str]:
    wrapper = _Wrapper(width, subsequent_indent="  ", break_long_words=False)
    out = []
    for line in lines:
        out += wrapper.wrap(line) or [""]
    return out


def _table_line(texts: list[str], widths: list[int]) -> str:
    return " | ".join(t.ljust(w) for t, w in zip(texts, widths, strict=True)).rstrip()


_MD_SPECIAL = re.compile(r"[\\`*$|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def markdown_escape(text: str) -> str:
    """Inline text safe in a GitHub table cell: `|` and markup characters escaped, no raw HTML."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def render_markdown(report: Report) -> str:
    """A GitHub table, section rows in bold, then the legend and the footnotes."""

    def cell(text: str) -> str:
        return _refs(markdown_escape(text), lambda n: f"[^diff-{n}]")

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(values) + " |"

    out = [line(["concept", *map(markdown_escape, report.providers)]), line(["---"] * (len(report.providers) + 1))]
    for section in report.sections:
        out.append(line([f"**{markdown_escape(section.title)}**", *[""] * len(report.providers)]))
        for row in section.rows:
            texts = ["<br>".join(map(cell, c.shown)) or NOTHING for c in row.cells]
            out.append(line([markdown_escape(row.concept), *texts]))
    out += ["", markdown_escape(report.legend)]
    if report.footnotes:
        out.append("")
        out += [f"[^diff-{n.number}]: {markdown_escape(n.plain())}" for n in report.footnotes]
    return "\n".join(out) + "\n"


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1em; color: #1f2328; }
h1 { font-size: 1.6em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1em 0 .3em; }
nav.contents ol { columns: 2 16em; margin: 0; }
p.legend, ol.notes, p.summary { max-width: 70em; }
table { border-collapse: separate; border-spacing: 0; table-layout: fixed; width: 100%; }
col.concept { width: 13em; }
th, td { border: solid #d0d7de; border-width: 0 1px 1px 0; padding: 4px 8px; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
tr > :first-child { border-left-width: 1px; }
thead th { background: #f6f8fa; position: sticky; top: 0; z-index: 2; border-top-width: 1px; }
thead th:first-child { left: 0; z-index: 3; }
tbody th[scope="row"] { position: sticky; left: 0; z-index: 1; background: #fff; }
tr.differs th[scope="row"] { box-shadow: inset 4px 0 #d4a72c; }
span.differs { color: #9a6700; font-weight: bold; }
td { font-family: ui-monospace, monospace; font-size: 13px; white-space: pre-wrap; }
td.nothing { color: #8c959f; }
td.inherited { color: #57606a; font-style: italic; }
tr.section th { background: #eaeef2; }
tr.section span { position: sticky; left: .5em; }
tr.section a, ol.notes a.back { font-weight: normal; font-size: .85em; margin-left: .5em; }
sup.refs { white-space: nowrap; }
:target, tr.section th { scroll-margin-top: 3em; }
:target { outline: 2px solid #0969da; }
#only-differences:checked ~ table tr.same { display: none; }
"""


_LONG_BREAK = re.compile("(?<=[./])(?=[^\x1f])")  # in the page: after a dot or slash, never before a note


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def render_html(report: Report, title: str | None = None) -> str:
    """A standalone page: legend and contents first, one table with an anchored row per section, then the notes.

    The header row and the concept column stay in view while scrolling (CSS sticky); rows where the
    providers differ are marked; each footnote reference has an id the note links back to. No script.
    """
    title = title or f"toolnexus: {report.noun.removesuffix('s')} differences"
    uses: dict[int, list[str]] = {}  # footnote number -> ids of its references, in page order

    def ref(number: int) -> str:
        anchor = f"ref-{number}-{len(uses.setdefault(number, [])) + 1}"
        uses[number].append(anchor)
        return f'<a id="{anchor}" href="#note-{number}">{number}</a>'

    def refs(run: re.Match[str]) -> str:
        links = [ref(int(n)) for n in _MARK.findall(run.group(0))]
        return '<sup class="refs">' + '<span class="sep">, </span>'.join(links) + "</sup>"

    def text(value: str) -> str:
        """Escaped; a long dotted path may break after a `.` or `/` (<wbr>) rather than inside a word."""
        words = [_LONG_BREAK.split(w) if len(w) > 24 else [w] for w in value.split(" ")]
        return _MARKS.sub(refs, " ".join("<wbr>".join(map(html.escape, parts)) for parts in words))

    columns = len(report.providers) + 1
    rows = [row for section in report.sections for row in section.rows]
    differing = sum(row.differs for row in rows)
    contents = []
    for section in report.sections:
        count = sum(row.differs for row in section.rows)
        contents.append(
            f'<li><a href="#{_slug(section.title)}">{html.escape(section.title)}</a> '
            f"({len(section.rows)} rows, {count} differ)</li>"
        )
    notes = '<li><a href="#notes">Notes</a></li>' if report.footnotes else ""
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f'<h1 id="top">{html.escape(title)}</h1>',
        f'<p class="summary">{len(report.providers)} {report.noun} ({html.escape(", ".join(report.providers))}), '
        f"{len(rows)} concepts; the {report.noun} differ in {differing}, marked "
        '<span class="differs">≠</span>.</p>',
        '<nav class="contents" id="contents" aria-label="Contents">',
        "<h2>Contents</h2>",
        '<ol><li><a href="#legend">How to read the cells</a></li>' + "".join(contents) + notes + "</ol>",
        "</nav>",
        '<section id="legend">',
        "<h2>How to read the cells</h2>",
        f'<p class="legend">{html.escape(report.legend)} <span class="differs">≠</span> marks a concept the '
        f"{report.noun} handle differently (footnote numbers aside). "
        "Hover a cell for the rule file line it comes from.</p>",
        "</section>",
        '<input type="checkbox" id="only-differences">',
        f'<label for="only-differences">Show only the concepts where the {report.noun} differ</label>',
        f'<table style="min-width: {13 + 16 * len(report.providers)}em">',  # a column stays readable: scroll instead
        '<colgroup><col class="concept">' + "<col>" * len(report.providers) + "</colgroup>",
        "<thead><tr>"
        + "".join(f'<th scope="col">{html.escape(n)}</th>' for n in ("concept", *report.providers))
        + "</tr></thead>",
    ]
    for section in report.sections:
        out.append("<tbody>")
        title_cell = (
            f'<th colspan="{columns}" scope="colgroup" id="{_slug(section.title)}"><span>{html.escape(section.title)}'
            '<a href="#contents">↑ contents</a></span></th>'
        )
        out.append(f'<tr class="section">{title_cell}</tr>')
        for row in section.rows:
            tds = []
            for c in row.cells:
                where = f' title="{html.escape(c.where)}"' if c.where and c.lines else ""
                if c.same_as and c.lines:  # a variant saying what its parent says
                    tds.append(f'<td class="inherited"{where}>' + text(c.shown[0]) + "</td>")
                elif c.lines:
                    tds.append(f"<td{where}>" + "\n".join(map(text, c.lines)) + "</td>")
                else:
                    tds.append(f'<td class="nothing"{where}>{NOTHING}</td>')
            marked = f' <span class="differs" title="the {report.noun} differ">≠</span>' if row.differs else ""
            concept = f'<th scope="row" id="{_slug(section.title)}--{_slug(row.concept)}">'
            concept += f"{html.escape(row.concept)}{marked}</th>"
            out.append(f'<tr class="{"differs" if row.differs else "same"}">{concept}{"".join(tds)}</tr>')
        out.append("</tbody>")
    out.append("</table>")
    if report.footnotes:
        out += ['<section id="notes">', '<h2>Notes <a href="#contents">↑ contents</a></h2>', '<ol class="notes">']
        for n in report.footnotes:
            body = html.escape(n.text)
            if n.text.startswith(("https://", "http://")):
                body = f'<a href="{html.escape(n.text)}">{body}</a>'
            anchors = uses.get(n.number, [])
            back = "".join(
                f'<a class="back" href="#{anchor}" aria-label="back to reference {i}">↩{i if anchors[1:] else ""}</a>'
                for i, anchor in enumerate(anchors, 1)
            )
            out.append(f'<li id="note-{n.number}">{html.escape(n.provider)}, {html.escape(n.rule)}: {body}{back}</li>')
        out += ["</ol>", "</section>"]
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


def render(report: Report, fmt: str = "table", *, width: int | None = None) -> str:
    """The report in one of `FORMATS`; any other name is a `ConfigError` (the CLI offers only these)."""
    if fmt == "markdown":
        return render_markdown(report)
    if fmt == "html":
        return render_html(report)
    if fmt == "table":
        return render_table(report, width)
    raise ConfigError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
