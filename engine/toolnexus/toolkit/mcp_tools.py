"""MCP tool listings become declarations; MCP call results become tool-message content.

Declared names. Every provider must accept every name, so a declared name follows the
strictest of their published rules: `^[A-Za-z_][A-Za-z0-9_-]{0,62}$` (Anthropic and OpenAI:
`[a-zA-Z0-9_-]{1,64}`; Gemini: starts with a letter or underscore, and one of its references
allows 63 characters). A tool `read` of server `files` is declared as `files__read`: the
server's name, two underscores, the tool's name. When that is not a valid name (a character
outside the set, a leading digit, more than 63 characters), or when two tools would get the
same name, the name is rewritten: characters outside the set become `_`, a leading digit gets
a `_` before it, and `_` plus 8 hex digits of a hash of (server, tool) go at the end, cut to
fit. Every rewrite is a Note. The toolkit keeps the declared name -> (server, tool) map, so
`tk.call(declared_name, ...)` reaches the original tool.

Results. The text blocks, joined with a newline, are the content; with no text block, the
structured content as JSON is. Embedded text resources count as text. Images, audio, blobs and
resource links have no place in an OpenAI tool message: they are left out and noted (they stay
in `raw`). An error result's content starts with `Error: ` and `is_error` is true.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import Note, ToolkitError

NAME_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,62}")
MAX_NAME = 63
SEPARATOR = "__"
ERROR_MARK = "Error: "


@dataclass(frozen=True)
class Declared:
    """One listed MCP tool under the name it is declared with."""

    name: str
    server: str
    original_name: str
    description: str
    input_schema: dict[str, Any]


def declare(listings: dict[str, list[dict[str, Any]]]) -> tuple[list[Declared], list[Note]]:
    """Name every listed tool of every server (in order) by the rule above; raise if names still collide."""
    entries = [(server, i, tool) for server, tools in listings.items() for i, tool in enumerate(tools)]
    plain = [f"{server}{SEPARATOR}{tool['name']}" for server, _, tool in entries]
    counts = Counter(plain)
    out: list[Declared] = []
    notes: list[Note] = []
    for (server, i, tool), name in zip(entries, plain, strict=True):
        original = tool["name"]
        clash = counts[name] > 1
        if clash or not NAME_RULE.fullmatch(name):
            why = "another tool would get the same name" if clash else "it is not a name every provider accepts"
            name = rewritten(server, original)
            message = f"tool {original!r} of MCP server {server!r} is declared as {name!r}: {why}"
            notes.append(Note("rewritten", f"{server}.tools[{i}].name", message))
        description = tool.get("description")
        out.append(Declared(name, server, original, description if isinstance(description, str) else "",
                            tool.get("inputSchema") or {"type": "object", "properties": {}}))  # fmt: skip
    seen: dict[str, Declared] = {}
    for item in out:
        if item.name in seen:
            first = seen[item.name]
            raise ToolkitError(
                f"tools {first.original_name!r} of {first.server!r} and {item.original_name!r} of {item.server!r} "
                f"are both declared as {item.name!r}; rename one on its server",
                server=item.server,
                stage="tools/list",
            )
        seen[item.name] = item
    return out, notes


def rewritten(server: str, tool: str) -> str:
    """The rewritten declared name: valid characters, a hash suffix that keeps distinct tools apart."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}{SEPARATOR}{tool}")
    if not re.match(r"[A-Za-z_]", clean):
        clean = "_" + clean
    suffix = "_" + hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return clean[: MAX_NAME - len(suffix)] + suffix


@dataclass(frozen=True)
class ToolResult:
    """What `tk.call` returns: OpenAI tool-message content, whether the tool failed, and the MCP result as sent."""

    content: str
    is_error: bool
    raw: dict[str, Any] = field(repr=False)
    notes: tuple[Note, ...] = ()

    def to_message(self, tool_call_id: str) -> dict[str, Any]:
        """The OpenAI tool message answering `tool_call_id`."""
        return {"role": "tool", "tool_call_id": tool_call_id, "content": self.content}


def tool_result(raw: dict[str, Any]) -> ToolResult:
    """An MCP CallToolResult (as JSON) -> ToolResult, by the rule in the module docstring."""
    texts: list[str] = []
    notes: list[Note] = []
    for i, block in enumerate(raw.get("content") or []):
        kind = block.get("type")
        resource = block.get("resource") if kind == "resource" else None
        if kind == "text":
            texts.append(block.get("text", ""))
        elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
            texts.append(resource["text"])
        else:
            what = block.get("mimeType") or (resource or {}).get("mimeType") or kind
            notes.append(Note("dropped", f"content[{i}]", f"{what} content has no place in an OpenAI tool message"))
    if texts:
        content = "\n".join(texts)
    elif raw.get("structuredContent") is not None:
        content = json.dumps(raw["structuredContent"], ensure_ascii=False)
    else:
        content = ""
    is_error = bool(raw.get("isError"))
    return ToolResult(ERROR_MARK + content if is_error else content, is_error, raw, tuple(notes))
