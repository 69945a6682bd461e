"""The package's layers, read from its import statements (ast), and what pure translation loads.

Layers, lowest first; a module imports only from its own layer or lower ones:
base (errors, redact) < language (the rule language) < translate (pure) < api (the public functions)
< toolkit < http (the client) < devtools (CLI, check, diff, demo, stub) < the package's own entry points.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import toolnexus

PACKAGE = Path(toolnexus.__file__).resolve().parent
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("toolnexus.errors", "toolnexus.redact")),
    ("language", ("toolnexus.language",)),
    ("translate", ("toolnexus.translate",)),
    ("api", ("toolnexus.api", "toolnexus.compat")),
    ("toolkit", ("toolnexus.toolkit",)),
    ("http", ("toolnexus.http",)),
    ("devtools", ("toolnexus.devtools",)),
    ("package", ("toolnexus", "toolnexus.__main__")),
]
PURE = ("language", "translate")
HTTP_STACK = ("aiohttp", "httpx", "tenacity", "httpx_sse")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    at_import: bool  # runs when the module is imported: not in a function, not under TYPE_CHECKING
    in_function: bool  # runs when a function is called: unseen by the import cycle test


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


MODULES = module_names()


def layer_of(module: str) -> str:
    for name, members in LAYERS:
        if any(module == m or module.startswith(m + ".") for m in members if m != "toolnexus") or module in members:
            return name
    raise AssertionError(f"{module} belongs to no layer: place it in one of {[n for n, _ in LAYERS]}")


RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def imports(module: str, path: Path) -> list[Edge]:
    """Every import of a toolnexus module in `module`, resolved to the module it loads."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges: list[Edge] = []

    def visit(node: ast.AST, at_import: bool, in_function: bool = False) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            at_import, in_function = False, True
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                visit(child, False, in_function)
            for child in node.orelse:
                visit(child, at_import, in_function)
            return
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                targets.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        for target in targets:
            if target.split(".")[0] == "toolnexus":
                edges.append(Edge(module, target, getattr(node, "lineno", 0), at_import, in_function))
        for child in ast.iter_child_nodes(node):
            visit(child, at_import, in_function)

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return edges


EDGES = [edge for module, path in sorted(MODULES.items()) for edge in imports(module, path)]


def test_the_import_parser_sees_the_imports_it_must_judge() -> None:
    """The checks below are only as good as this reading: known edges of each kind are found."""
    found = {(e.source, e.target, e.at_import) for e in EDGES}
    assert ("toolnexus.translate.rulebook", "toolnexus.translate.inbound", True) in found
    assert ("toolnexus.translate.inbound", "toolnexus.errors", True) in found  # `from ..errors import`
    assert ("toolnexus", "toolnexus.http.client", False) in found  # lazy: TYPE_CHECKING and __getattr__
    assert ("toolnexus.devtools.cli", "toolnexus.devtools.diff", False) in found  # inside a function
    in_function = {(e.source, e.target) for e in EDGES if e.in_function}
    assert ("toolnexus.devtools.cli", "toolnexus.devtools.diff") in in_function
    assert ("toolnexus.translate.direct_code", "toolnexus.translate.inbound") not in in_function  # TYPE_CHECKING
    assert all(target in MODULES for _, target, _ in found)


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)  # raises, naming the module


def test_imports_go_down_the_layers_only() -> None:
    upward = [
        f"{e.source}:{e.line} ({layer_of(e.source)}) imports {e.target} ({layer_of(e.target)})"
        for e in EDGES
        if RANK[layer_of(e.target)] > RANK[layer_of(e.source)]
    ]
    assert upward == []


def test_pure_translation_never_imports_the_http_layer_the_toolkits_or_the_devtools() -> None:
    pure = [e for e in EDGES if layer_of(e.source) in PURE]
    assert pure, "no imports read from the pure layers"
    assert [e for e in pure if layer_of(e.target) not in (*PURE, "base")] == []


def test_the_layers_form_no_cycle() -> None:
    graph: dict[str, set[str]] = {name: set() for name, _ in LAYERS}
    for e in EDGES:
        if layer_of(e.source) != layer_of(e.target):
            graph[layer_of(e.source)].add(layer_of(e.target))
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as cycle:  # pragma: no cover - the failure message
        pytest.fail(f"layer cycle: {cycle.args[1]}")


def test_no_module_level_import_cycle() -> None:
    """The imports that run when a module loads form no cycle, so every module loads on its own, in any order."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for e in EDGES:
        if e.at_import and e.target != e.source:
            graph[e.source].add(e.target)
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as cycle:  # pragma: no cover - the failure message
        pytest.fail(f"module cycle: {cycle.args[1]}")


def test_the_pure_layers_hide_no_import_in_a_function() -> None:
    """An import inside a function is unseen by the cycle test above, so in the pure layers every import runs at
    load (or only for type checking): a cycle between two of their modules, such as a streaming section's tables
    (stream_rules) and the code written from them (stream_code), cannot hide behind one."""
    hidden = [f"{e.source}:{e.line} imports {e.target}" for e in EDGES if e.in_function and layer_of(e.source) in PURE]
    assert hidden == []


def test_pure_modules_do_not_import_the_http_stack_at_load() -> None:
    for module, path in MODULES.items():
        if module == "toolnexus" or layer_of(module) in (*PURE, "base", "api"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            loaded = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
            loaded |= {(n.module or "").split(".")[0] for n in tree.body if isinstance(n, ast.ImportFrom)}
            assert not loaded & set(HTTP_STACK), module


PURE_RUN = f"""
import json, sys
from toolnexus import translate_request, translate_response, stream_translator, providers, load_rules
loaded_at_import = [m for m in {HTTP_STACK!r} if m in sys.modules]
for provider in providers():
    translate_request(provider, {{"model": "m", "messages": [{{"role": "user", "content": "hi"}}]}})
    if load_rules().get(provider).streaming is not None:
        stream_translator(provider)
translate_response("openai", {{"choices": [{{"message": {{"role": "assistant", "content": "hi"}},
                                              "finish_reason": "stop"}}]}})
print(json.dumps([loaded_at_import, [m for m in {HTTP_STACK!r} if m in sys.modules],
                  sorted(m for m in sys.modules if m.startswith(("toolnexus.http", "toolnexus.toolkit",
                                                                 "toolnexus.devtools")))]))
"""


def test_pure_translation_in_a_fresh_process_never_loads_the_http_stack() -> None:
    run = subprocess.run([sys.executable, "-c", PURE_RUN], capture_output=True, text=True, check=True, timeout=120)
    at_import, after_use, layers = json.loads(run.stdout)
    assert at_import == []
    assert after_use == []  # loading the rule files (endpoint sections too) and translating
    assert layers == []


def test_the_client_names_load_on_first_use() -> None:
    code = "import sys, toolnexus; was = 'httpx' in sys.modules; toolnexus.Client; print(was, 'httpx' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert run.stdout.split() == ["False", "True"]
    assert set(toolnexus.__all__) <= set(dir(toolnexus))
    assert toolnexus.create_client is toolnexus.http.client.create_client
    with pytest.raises(AttributeError):
        toolnexus.no_such_name  # noqa: B018
