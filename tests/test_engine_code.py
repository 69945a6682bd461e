"""What the engine's own source may contain: no provider knowledge in code (names, provider-specific
field names), and the readers of rule templates ask the parsed nodes, never the raw YAML."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from toolnexus.language.templates import _OPTIONS

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "engine" / "toolnexus"
HUB = "openai"  # the one input format: the engine names it throughout, as sqlglot names its middle form

# The public named views may say a provider's name: compat.py's seed helpers, their re-export in
# __init__, and a toolkit's `to_<provider>` shorthands.
VIEWS = {ENGINE / "compat.py", ENGINE / "__init__.py"}
VIEW_FUNCTIONS = {"to_anthropic", "to_gemini"}

# Field names only one provider's wire format has: a rule file's business, never the engine's. (The
# hub's own fields, `extra_content` among them, are the middle form's vocabulary.)
PROVIDER_FIELDS = ("cache_control", "thought_signature", "cache_write", "thinking", "google", "claude")


# Modules adapting a vendor's library for a general construct may say the vendor's words: http/auth.py
# (the google-oauth scheme runs google-auth; the `bedrock` and `vertex` extras install the libraries the
# chained schemes need) and http/framing.py (the aws-eventstream framing needs the `bedrock` extra).
# And `toolnexus diff --summary`'s caching question names the request's cache breakpoint field: it asks
# which rule files write it, the one place a field is named to be looked for rather than handled.
ADAPTER_WORDS = {
    ENGINE / "http" / "auth.py": frozenset({"google", "bedrock", "vertex"}),
    ENGINE / "http" / "framing.py": frozenset({"bedrock"}),
    ENGINE / "devtools" / "capabilities.py": frozenset({"cache_control"}),
}


def provider_names() -> set[str]:
    names = set()
    for path in (REPO / "rules").glob("*.yaml"):
        names.add(str(yaml.safe_load(path.read_text())["provider"]).lower())
    return names - {HUB}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants (the first string of a module, class or function body)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def code_words(path: Path) -> Iterator[tuple[int, str]]:
    """Every name and every string of a module's code (not its docstrings or comments), with its line."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in VIEW_FUNCTIONS:
            skipped |= {id(inner) for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.lineno, node.name
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg


def names_provider(text: str, names: set[str]) -> bool:
    """Whether `text` holds a provider name as a word of its own (`xai`, `xai_client`, `XaiClient`), not
    inside another word (`HttpxAiohttpClient`): short names such as `xai` hide inside longer ones."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()
    return any(re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", spaced) for name in names)


def test_the_engine_code_names_no_provider_and_no_provider_specific_field() -> None:
    names = provider_names()
    hits = [
        f"{path.relative_to(REPO)}:{line}: {text!r}"
        for path in sorted(ENGINE.rglob("*.py"))
        if path not in VIEWS
        for line, text in code_words(path)
        if names_provider(text, names - ADAPTER_WORDS.get(path, frozenset()))
        or any(word in text.lower() for word in PROVIDER_FIELDS if word not in ADAPTER_WORDS.get(path, ()))
    ]
    assert not hits, "provider knowledge in engine code (it belongs in rules/*.yaml):\n" + "\n".join(hits)


def test_a_provider_name_is_found_as_a_word_not_inside_another() -> None:
    names = {"xai", "anthropic"}
    assert names_provider("xai", names) and names_provider("to_xai", names) and names_provider("XaiClient", names)
    assert names_provider("use-anthropic-rules", names)
    assert not names_provider("HttpxAiohttpClient", names) and not names_provider("taxaid", names)


def test_the_word_scan_sees_code_and_skips_prose() -> None:
    """The scan above can fail: it finds a name in a string or an identifier, not in a docstring or comment."""
    sample = ENGINE.parent / "_scan_sample.py"
    source = '"""Talks about anthropic."""\n# gemini here\nx = "cache_control"\ndef thinking(): pass\n'
    sample.write_text(source)
    try:
        found = {text for _, text in code_words(sample)}
    finally:
        sample.unlink()
    assert {"cache_control", "thinking"} <= found and not any("anthropic" in t or "gemini" in t for t in found)


# The readers that once walked the raw YAML their own way: they ask the template nodes now.
NODE_READERS = ("devtools/diff.py", "translate/stream_rules.py", "translate/outbound.py")


@pytest.mark.parametrize("module", NODE_READERS)
def test_template_readers_never_look_at_raw_template_operations(module: str) -> None:
    """No string naming a template operation (`$get`, `$when`, ...) in code: what a template reads,
    writes and copies is asked of `language.templates`' nodes (via `language.ask`)."""
    operations = set(_OPTIONS)
    hits = [(line, text) for line, text in code_words(ENGINE / module) if text in operations]
    assert not hits, f"{module} inspects raw template operations: {hits}"


def test_the_node_questions_answer_from_the_parsed_template() -> None:
    """language.ask: what a template reads, copies and writes, asked of its nodes."""
    from toolnexus.language.ask import parse, plain_read, read_path, roots, written
    from toolnexus.language.loader import RuleSource

    source = RuleSource("inline.yaml", {})
    template = {
        "id": {"$get": "call.id"},
        "args": {"$get": "call.args", "default": {}},
        "parts": {"$content": "blocks"},
        "kind": "tool",
    }
    node = parse(template, ("t",), source)
    items = dict(written(node))
    assert list(items) == ["id", "args", "parts", "kind"]
    assert plain_read(items["id"]) is not None and plain_read(items["id"]).steps == ("call", "id")  # type: ignore[union-attr]
    assert plain_read(items["args"]) is None and read_path(items["args"]).expr == "call.args"  # type: ignore[union-attr]
    assert roots(node) == {"call", "parts"}
    assert written(parse({"$get": "x"}, ("u",), source)) == ()
