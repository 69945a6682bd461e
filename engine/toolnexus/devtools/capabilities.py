"""`toolnexus diff --summary`: what each provider supports, one row per provider, from its rule file alone.

Each capability is a question asked of the parsed template nodes (`language.ask`) and the rule file's
tables, never a hand-kept list and never a provider name: "images" is whether the `parts` table writes
the image kinds (or the user turn is sent as given), "reasoning" whether a request template reads
`reasoning_effort` and whether the answer's items write `reasoning`, "caching" whether a template
writes `cache_control` and the usage reports cached tokens, "structured output" whether a body
template reads `response_format`. A provider the rules say nothing about for a capability gets "—".
"""

from __future__ import annotations

import html
import shutil
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..language.ask import plain_read, roots, written
from ..language.templates import Absent, Get, Lookup, Merge, Node, Refuse, When, walk
from ..translate.rulebook import Rulebook, parents_of
from .diff import DOC_KEYS, NOTHING, RuleFile, chosen_providers, markdown_escape

IMAGE_KINDS = (("image_base64", "base64"), ("image_url", "URL"))
FORMAT_TYPE = "response_format.type"
BREAKPOINT = "cache_control"  # the request's cache breakpoint field, on a part, a message or a tool


@dataclass(frozen=True)
class Summary:
    """Rows of providers (each family together) by columns of capabilities."""

    capabilities: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # provider, one answer per capability


class _Rules(RuleFile):
    """One provider's rule data and its templates as parsed nodes, asked capability by capability."""

    def nodes(self, *key: str) -> Iterator[Node]:
        """The templates of the table at `key` (body fields, part kinds, ...)."""
        return (node for name, node, _ in self.templates(*key) if name not in DOC_KEYS)

    def request_nodes(self) -> Iterator[Node]:
        """Every request-side template: body fields, tool choices, the tool declaration."""
        yield from self.nodes("request", "body")
        yield from self.nodes("tool_choice")
        declaration = self.template("tools", "declaration")
        yield from [declaration] if declaration is not None else []

    def item_nodes(self) -> Iterator[Node]:
        """The response's item templates (`as:` and each of `kinds:`)."""
        for _, _, keys in self.item_keys():
            yield from (node for node in (self.template(*key) for key in keys) if node is not None)

    def unsupported(self, name: str) -> str | None:
        entry = self.table("request", "unsupported").get(name)
        return entry.get("action") if isinstance(entry, dict) else None

    def user_turn_as_given(self) -> bool:
        """Whether the user turn is sent as the caller wrote it (an OpenAI-shaped provider): its parts go as given."""
        node = self.template("messages", "roles", "user", "message")
        read = None if node is None else plain_read(node)
        merged = isinstance(node, Merge) and node.path.expr == "source" and "content" not in dict(node.sets)
        return merged or (read is not None and read.expr == "source")


def _reads(nodes: Iterator[Node], field: str) -> bool:
    return any(field in roots(node) for node in nodes)


def _writes(nodes: Iterator[Node], key: str) -> bool:
    return any(key in dict(written(n)) for node in nodes for n in walk(node))


def _refused(node: Node | None) -> bool:
    return isinstance(node, Refuse)


# The capabilities: one function per column, each asking one rule file.

Capability = Callable[[_Rules], str]


def tools(r: _Rules) -> str:
    """Whether a body template writes the declared tools (reads them, not only tests them to refuse)."""
    gets = (n for node in r.nodes("request", "body") for n in walk(node) if isinstance(n, Get))
    return "yes" if any(read.root == "tools" for get in gets for read in get.reads) else NOTHING


def tool_choice(r: _Rules) -> str:
    """The OpenAI tool_choice kinds the rules write (a `$refuse` row is no counterpart)."""
    kinds = [kind for kind in r.table("tool_choice") if kind not in DOC_KEYS]
    return ", ".join(k for k in kinds if not _refused(r.template("tool_choice", k))) or NOTHING


def parallel_calls(r: _Rules) -> str:
    """Whether the caller can turn parallel tool calls off: a template reads `parallel_tool_calls`."""
    if _reads(r.request_nodes(), "parallel_tool_calls"):
        return "switch"
    action = r.unsupported("parallel_tool_calls")
    return {"drop": "no switch (dropped)", "error": "no switch (refused)"}.get(action or "", NOTHING)


def tool_call_ids(r: _Rules) -> str:
    rule = r.table("tool_call_ids")
    items = r.at("response", "items")
    synthesized = any(isinstance(i, dict) and i.get("synthesize_ids") for i in items or [])
    if "pattern" not in rule:
        shown = "any"
    elif isinstance(rule.get("rewrite"), dict):
        rewrite = rule["rewrite"]
        shown = f"{rule['pattern']}, else hashed ({rewrite.get('length')} of {rewrite.get('alphabet')})"
    else:
        shown = f"{rule['pattern']}, else tn_ + base64url"
    return shown + ("; synthesized when absent" if synthesized else "")


def images(r: _Rules) -> str:
    parts = r.table("messages", "parts")
    kinds = [
        label for kind, label in IMAGE_KINDS if kind in parts and not _refused(r.template("messages", "parts", kind))
    ]
    if not kinds and r.user_turn_as_given():
        return "as given"
    return ", ".join(kinds) or NOTHING


def streaming(r: _Rules) -> str:
    section = r.table("streaming")
    return str(section.get("framing", "sse")) if section else NOTHING


def reasoning(r: _Rules) -> str:
    """`effort`: a request template reads reasoning_effort; `returned`: the answer's items write reasoning."""
    found = ["effort"] if _reads(r.request_nodes(), "reasoning_effort") else []
    if _writes(r.item_nodes(), "reasoning") or r.table("streaming", "reasoning"):
        found.append("returned")
    return ", ".join(found) or NOTHING


def caching(r: _Rules) -> str:
    """`breakpoints`: a part, tool or body template reads cache_control; `hits reported`: usage has cached tokens."""
    templates = [*r.nodes("messages", "parts"), *r.request_nodes()]
    found = []
    if _reads(iter(templates), BREAKPOINT):
        found.append("breakpoints")
    elif BREAKPOINT in r.table("messages", "carry") and r.user_turn_as_given():
        found.append("breakpoints as given")
    details = r.template("response", "usage", "prompt_tokens_details")
    if details is not None and (plain_read(details) is not None or "cached_tokens" in dict(written(details))):
        found.append("hits reported")
    return ", ".join(found) or NOTHING


def structured_output(r: _Rules) -> str:
    """The response_format types a body template writes something for (`as given` when it passes the field on)."""
    kinds: set[str] = set()
    for node in r.nodes("request", "body"):
        for n in walk(node):
            read = plain_read(n)
            if read is not None and read.expr == "response_format":
                return "as given"
            if isinstance(n, Lookup) and n.path.expr == FORMAT_TYPE:
                kinds.update(k for k, row in n.rows if not isinstance(row, Refuse | Absent))
            elif isinstance(n, When) and n.path.expr == FORMAT_TYPE and n.test == "is":
                kinds.update(str(v) for v in n.expected)
            elif isinstance(n, Get) and any(read.expr.startswith("response_format.json_schema") for read in n.reads):
                kinds.add("json_schema")
    return ", ".join(k for k in ("json_object", "json_schema") if k in kinds) or NOTHING


def citations(r: _Rules) -> str:
    """The annotation types the answer's items write (`as given` when a provider's own annotations pass on)."""
    found: list[str] = []
    items = r.at("response", "items")
    for item in items if isinstance(items, list) else []:
        templates = [item.get("as")] if "as" in item else list((item.get("kinds") or {}).values())
        for template in templates:
            spec = template.get("annotations") if isinstance(template, dict) else None
            if not isinstance(spec, dict):
                continue
            kinds = ["as given"] if spec.get("as") == {"$get": "@"} else _types_written(spec.get("as"))
            found += [kind for kind in kinds if kind not in found]
    return ", ".join(found) or NOTHING


def _types_written(template: Any) -> list[str]:
    """The constant `type` values anywhere in a template (an annotation names its own kind there)."""
    if isinstance(template, list):
        return [t for value in template for t in _types_written(value)]
    if not isinstance(template, dict):
        return []
    own = [template["type"]] if isinstance(template.get("type"), str) else []
    return own + [t for key, value in template.items() if key != "type" for t in _types_written(value)]


def refusal(r: _Rules) -> str:
    """Whether the answer's refusal text is read: `as given` (OpenAI's own field) or the provider's explanation."""
    node = r.template("response", "refusal")
    if node is None:
        return NOTHING
    read = plain_read(node)
    return "as given" if read is not None and read.expr.endswith(".refusal") else "explanation"


def auth(r: _Rules) -> str:
    """The `endpoint.auth` scheme; a header scheme sending `Authorization: Bearer <key>` is `bearer`, as it is
    (the first edition's `auth_header`/`auth_scheme` read as the header scheme they stand for)."""
    endpoint = r.table("endpoint")
    given = endpoint.get("auth")
    if given is None and "auth_header" in endpoint:
        given = {"scheme": "header", "header": endpoint["auth_header"], "prefix": endpoint.get("auth_scheme")}
    if given is None:
        return NOTHING
    scheme = given if isinstance(given, str) else str(given.get("scheme"))
    if scheme != "header" or not isinstance(given, dict):
        return scheme
    header, prefix = str(given.get("header")), given.get("prefix")
    if header.lower() == "authorization" and isinstance(prefix, str) and prefix.lower() == "bearer":
        return "bearer"
    return f"header {header}" + (f" ({prefix} <key>)" if prefix else "")


CAPABILITIES: tuple[tuple[str, Capability], ...] = (
    ("tools", tools),
    ("tool_choice", tool_choice),
    ("parallel tool calls", parallel_calls),
    ("tool-call ids", tool_call_ids),
    ("images", images),
    ("streaming", streaming),
    ("reasoning", reasoning),
    ("caching", caching),
    ("structured output", structured_output),
    ("citations", citations),
    ("refusal text", refusal),
    ("auth", auth),
)


def build_summary(book: Rulebook, names: Sequence[str] = ()) -> Summary:
    """The summary for the named providers (all, each family together, when none), in that order."""
    chosen = chosen_providers(book, names)
    rows = []
    for name in chosen:
        rules = _Rules(book.get(name))
        rows.append((name, tuple(ask(rules) for _, ask in CAPABILITIES)))
    return Summary(tuple(label for label, _ in CAPABILITIES), tuple(rows))


def _label(parent: str | None, name: str) -> str:
    return f"{name} (extends {parent})" if parent else name


def render_summary(
    summary: Summary, fmt: str = "table", *, book: Rulebook | None = None, width: int | None = None
) -> str:
    """The summary as a markdown table, an HTML page or aligned terminal columns."""
    header = ["provider", *summary.capabilities]
    parents = parents_of(book.providers) if book else {}
    names = [_label(parents.get(n), n) for n, _ in summary.rows]
    rows = [[name, *answers] for name, (_, answers) in zip(names, summary.rows, strict=True)]
    if fmt == "markdown":
        lines = ["| " + " | ".join(map(markdown_escape, row)) + " |" for row in [header, *rows]]
        lines.insert(1, "| " + " | ".join(["---"] * len(header)) + " |")
        return "\n".join(lines) + "\n"
    if fmt == "html":
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>\n" for row in rows)
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>toolnexus: provider capabilities'
            f"</title></head><body><table><thead><tr>{cells}</tr></thead><tbody>\n{body}</tbody></table></body></html>\n"
        )
    return _columns([header, *rows], width or shutil.get_terminal_size((120, 24)).columns)


def _columns(rows: list[list[str]], width: int) -> str:
    """Aligned columns; while the table is wider than `width`, the widest column that can narrows and
    its cells wrap at spaces. A word is never split, so a column keeps its longest word's width."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    least = [max(len(word) for row in rows for word in row[i].split() or [""]) for i in range(len(widths))]
    while sum(widths) + 3 * (len(widths) - 1) > width:
        room = [w if w > low else 0 for w, low in zip(widths, least, strict=True)]
        if not any(room):
            break
        widths[room.index(max(room))] -= 1
    out = []
    for n, row in enumerate(rows):
        cells = [
            textwrap.wrap(c, w, break_long_words=False, break_on_hyphens=False) or [""]
            for c, w in zip(row, widths, strict=True)
        ]
        for i in range(max(map(len, cells))):
            texts = [c[i] if i < len(c) else "" for c in cells]
            out.append(" | ".join(t.ljust(w) for t, w in zip(texts, widths, strict=True)).rstrip())
        if n == 0:
            out.append("-+-".join("-" * w for w in widths))
    return "\n".join(out) + "\n"
