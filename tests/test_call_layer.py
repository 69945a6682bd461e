"""The HTTP layer's shape: one call layer (call.py) under translate and translate_stream, no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import toolnexus

PACKAGE = Path(toolnexus.__file__).parent / "http"


def imported(module: str) -> set[str]:
    """The package modules `module` imports (relative imports, at any depth in the file)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
    return found


def foreign_privates(module: str) -> list[str]:
    """`x._name` reached on anything but `self` (`self._a._b` counts: `_b` is another object's)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))
    return [
        f"{module}.py:{node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    ]


def test_the_stream_and_the_call_layer_do_not_import_the_client() -> None:
    assert "client" not in imported("client_stream")
    assert not {"client", "client_stream"} & imported("call")
    assert {"call", "client_stream"} <= imported("client")


def test_the_stream_uses_only_the_call_layers_public_methods() -> None:
    assert foreign_privates("client_stream") == []
    assert foreign_privates("client") == []
