"""Questions the parsed template nodes answer for the engine's other readers (the response compiler, the
streaming compiler, `toolnexus diff`): what a template reads, whether it is a plain read, what it writes.

They ask the nodes `templates.parse_template` builds, never the raw YAML, so every reader agrees with
the code generator on what a template means.
"""

from __future__ import annotations

from typing import Any

from .loader import Key, RuleSource
from .templates import Const, Ctx, Env, Get, Merge, Node, Obj, Read, parse_template, reads_of


def _no_content(spec: dict[str, Any], key: Key) -> Any:
    """`$content` seen by a reader that only asks the nodes: its parts table is never run."""

    def never(scope: Any, ctx: Ctx) -> Any:
        raise AssertionError("a node parsed for reading is never rendered")

    return never


def parse(value: Any, key: Key, source: RuleSource) -> Node:
    """The nodes of the template at `key`, for a reader (a `$content` is parsed, its parts are not compiled)."""
    return parse_template(value, key, Env(source, content=_no_content))


def plain_read(node: Node) -> Read | None:
    """The one path of a template that only reads it (`{$get: a.b}`: one path, no default, not required)."""
    if isinstance(node, Get) and len(node.reads) == 1 and node.plain:
        return node.reads[0]
    return None


def read_path(node: Node) -> Read | None:
    """The path a `$get` of one path reads, whatever its default (where an error about the value points)."""
    return node.reads[0] if isinstance(node, Get) and len(node.reads) == 1 else None


def roots(node: Node) -> set[str]:
    """The top-level fields of the scope a template reads."""
    return {read.root for read in reads_of(node) if read.root is not None}


def written(node: Node) -> tuple[tuple[str, Node], ...]:
    """The keys a template writes, with their nodes: an object's items, a merge's `with`, a constant mapping's
    (none for a template whose keys are not known before it runs)."""
    if isinstance(node, Obj):
        return node.items
    if isinstance(node, Merge):
        return node.sets
    if isinstance(node, Const) and isinstance(node.value, dict):
        return tuple((k, Const(value)) for k, value in node.value.items())
    return ()
