"""The suite's own shape: test modules share material through tests/support/, never by importing each other."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


def test_no_test_module_imports_another() -> None:
    offenders = {
        path.name: sorted(m for m in imported_modules(path) if m.split(".")[0].startswith("test_"))
        for path in sorted(TESTS.glob("test_*.py"))
    }
    assert not {k: v for k, v in offenders.items() if v}, "move shared helpers to tests/support/"


def test_the_check_sees_an_import_of_a_test_module(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text("from test_properties import SETTINGS\nimport test_faults as f\n")
    assert {"test_properties", "test_faults"} <= imported_modules(module)
