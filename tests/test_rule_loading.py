"""Loading rule files: broken files fail at load with a located RuleError; user
rule directories change a mapping or add a provider with no Python change.

The broken files are a corpus, `tests/bad_rules/<case>.yaml`: each is a shipped
rule file with one change, and its first line says what loading it must raise:

    # expect: as=anthropic.yaml line=25 column=13 rule=request.body.model.$gett contains="did you mean '$get'"

- `as`: the file name the case is loaded under (the loader requires a file's
  name to equal its `provider:`), copied into an otherwise empty rules directory;
- `line` (and optionally `column`): where the culprit is, counted in the corpus
  file itself (the header lines included);
- `rule`: the dotted rule path of `RuleError.rule` (`""` for errors that have no
  rule, such as YAML syntax);
- `contains`: a short substring of the message, to tell the error's kind apart;
  the location attributes are the point, not the wording.

A new case is a new file; no Python changes.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import toolnexus
from toolnexus import RuleError
from toolnexus.devtools.cli import main as cli_main
from toolnexus.language.loader import MAX_FILE_BYTES, MAX_NODES
from toolnexus.language.paths import MAX_PATH_LENGTH

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "rules"
CORPUS = REPO / "tests" / "bad_rules"
SCHEMA_LINE = "# yaml-language-server: $schema="
HEADER = "# expect: "


# ---------------------------------------------------------------- the corpus


def parse_header(path: Path) -> dict[str, Any]:
    """The `# expect:` line of a corpus file, as typed values."""
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first.startswith(HEADER), f"{path.name}: the first line must start with {HEADER!r}"
    fields = dict(item.split("=", 1) for item in shlex.split(first[len(HEADER) :]))
    unknown = set(fields) - {"as", "line", "column", "rule", "contains"}
    assert not unknown, f"{path.name}: unknown header fields {sorted(unknown)}"
    missing = {"as", "line", "rule", "contains"} - set(fields)
    assert not missing, f"{path.name}: header lacks {sorted(missing)}"
    return {
        "as": fields["as"],
        "line": int(fields["line"]),
        "column": int(fields["column"]) if "column" in fields else None,
        "rule": fields["rule"],
        "contains": fields["contains"],
    }


CASES = sorted(CORPUS.glob("*.yaml"))


def test_the_corpus_has_cases() -> None:
    assert len(CASES) >= 20
    for path in CASES:
        parse_header(path)


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_a_broken_rule_file_fails_at_load_with_its_location(case: Path, tmp_path: Path) -> None:
    expect = parse_header(case)
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    target = rules_dir / expect["as"]
    shutil.copyfile(case, target)

    try:
        toolnexus.load_rules(rules_dir)
    except RuleError as exc:
        err = exc
    except Exception as exc:  # the point of the test: nothing but RuleError escapes the loader
        pytest.fail(f"{case.name}: loading raised {type(exc).__name__}, not RuleError: {exc}")
    else:
        pytest.fail(f"{case.name}: loaded without a RuleError")

    got = {"file": err.file, "line": err.line, "rule": err.rule}
    want = {"file": str(target), "line": expect["line"], "rule": expect["rule"]}
    if expect["column"] is not None:
        got["column"], want["column"] = err.column, expect["column"]
    assert got == want, f"{case.name}: {err}"
    assert expect["contains"] in err.message, f"{case.name}: {err}"
    assert str(err).startswith(err.location_text())


def test_an_unreadable_rule_file_is_a_rule_error(tmp_path: Path) -> None:
    target = tmp_path / "anthropic.yaml"
    target.write_bytes(b"provider: anthropic\ndoc: \xff\xfe not utf-8\n")
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path)
    assert info.value.file == str(target)


def test_absurdly_deep_nesting_is_a_rule_error_not_a_recursion_error(tmp_path: Path) -> None:
    deep = "[" * 3000 + "]" * 3000
    target = copy_rule(
        "anthropic", tmp_path, edits=(("    seed: {action: drop}\n", f"    seed: {{action: drop, accept: {deep}}}\n"),)
    )
    try:
        toolnexus.load_rules(tmp_path)
    except RuleError as exc:
        assert exc.file == str(target) and exc.line is not None
    except Exception as exc:
        pytest.fail(f"loading raised {type(exc).__name__}, not RuleError")
    else:
        pytest.fail("loaded without a RuleError")


def test_a_missing_rules_directory_is_a_rule_error(tmp_path: Path) -> None:
    with pytest.raises(RuleError):
        toolnexus.load_rules(tmp_path / "nowhere")


# ---------------------------------------------------------------- shipped rule files

SHIPPED = sorted(RULES.glob("*.yaml"))


def test_the_schema_is_a_valid_json_schema() -> None:
    schema = json.loads((RULES / "rules.schema.json").read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_a_shipped_rule_file_validates_against_the_schema(path: Path) -> None:
    """A file that `extends:` another is validated once its parent is merged in (the schema describes that)."""
    schema = json.loads((RULES / "rules.schema.json").read_text(encoding="utf-8"))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "extends" in data:
        data = toolnexus.load_rules().get(path.stem).source.data
    validator = jsonschema.validators.validator_for(schema)(schema)
    problems = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]
    assert problems == []
    assert data["provider"] == path.stem


def gets(value: Any) -> Any:
    """Every `$get` operation in rule data, at any depth."""
    if isinstance(value, dict):
        if "$get" in value:
            yield value
        for child in value.values():
            yield from gets(child)
    elif isinstance(value, list):
        for child in value:
            yield from gets(child)


def test_every_get_of_the_shipped_rules_fits_the_schemas_get_and_a_typed_one_is_used() -> None:
    schema = json.loads((RULES / "rules.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema["$defs"]["get"])
    found = [op for path in sorted(RULES.rglob("*.yaml")) for op in gets(yaml.safe_load(path.read_text("utf-8")))]
    assert [e.message for op in found for e in validator.iter_errors(op)] == []
    assert any("type" in op for op in found)
    assert list(validator.iter_errors({"$get": "a", "type": "strng"}))  # what the compiler refuses at load


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_a_shipped_rule_file_names_its_schema_on_the_first_line(path: Path) -> None:
    """Except a variant (`extends:`): alone it is partial, so an editor would flag the keys it inherits."""
    if "extends" in yaml.safe_load(path.read_text(encoding="utf-8")):
        pytest.skip("a variant holds only what differs from its parent")
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    assert first.startswith(SCHEMA_LINE)
    assert (path.parent / first[len(SCHEMA_LINE) :].strip()).is_file()


def test_shipped_rule_files_are_the_built_in_providers() -> None:
    assert toolnexus.providers() == sorted(p.stem for p in SHIPPED)


# ---------------------------------------------------------------- user rule directories

ANTHROPIC_MAX_TOKENS = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "cut off mid"}],
    "stop_reason": "max_tokens",
    "usage": {"input_tokens": 3, "output_tokens": 5},
}


def copy_rule(name: str, into: Path, *, edits: tuple[tuple[str, str], ...] = (), as_name: str | None = None) -> Path:
    """Copy a shipped rule file into `into`, applying exact one-occurrence text edits."""
    text = (RULES / f"{name}.yaml").read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in rules/{name}.yaml"
        text = text.replace(old, new)
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{as_name or name}.yaml"
    target.write_text(text, encoding="utf-8")
    return target


def rewrite(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_a_user_copy_changes_a_mapping_with_no_python_change(tmp_path: Path) -> None:
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS).finish_reason == "length"
    user = tmp_path / "my-rules"
    copy_rule("anthropic", user, edits=(("      max_tokens: length\n", "      max_tokens: stop\n"),))

    result = toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS, rules=user)

    assert result.finish_reason == "stop"
    assert result.text == "cut off mid"
    # the built-in rules are untouched, before and after the user directory was loaded
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS).finish_reason == "length"
    assert "max_tokens: length" in (RULES / "anthropic.yaml").read_text(encoding="utf-8")


def test_a_user_directory_adds_a_provider(tmp_path: Path) -> None:
    user = tmp_path / "my-rules"
    copy_rule("openai", user, edits=(("provider: openai\n", "provider: myproxy\n"),), as_name="myproxy")

    assert toolnexus.providers(rules=user) == sorted([*toolnexus.providers(), "myproxy"])
    assert "myproxy" not in toolnexus.providers()
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}
    body = toolnexus.translate_request("myproxy", request, rules=user)
    assert body == toolnexus.translate_request("openai", request)
    with pytest.raises(RuleError):
        toolnexus.translate_request("myproxy", request)


def test_a_user_directory_is_read_once_and_reread_only_when_asked(tmp_path: Path) -> None:
    user = tmp_path / "my-rules"
    path = copy_rule("anthropic", user)
    book = toolnexus.load_rules(user)
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS, rules=user).finish_reason == "length"

    rewrite(path, "      max_tokens: length\n", "      max_tokens: stop\n")
    assert toolnexus.load_rules(user) is book  # files are not looked at again
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS, rules=user).finish_reason == "length"

    reloaded = toolnexus.load_rules(user, reload=True)
    assert reloaded is not book and toolnexus.load_rules(user) is reloaded
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS, rules=user).finish_reason == "stop"
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS, rules=book).finish_reason == "length"


def test_a_file_added_or_broken_is_seen_on_reload(tmp_path: Path) -> None:
    user = tmp_path / "my-rules"
    path = copy_rule("anthropic", user)
    assert toolnexus.providers(rules=user) == toolnexus.providers()

    copy_rule("openai", user, edits=(("provider: openai\n", "provider: myproxy\n"),), as_name="myproxy")
    assert toolnexus.load_rules(user, reload=True).names() == sorted([*toolnexus.providers(), "myproxy"])

    rewrite(path, "      pause_turn: stop\n", "")
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(user, reload=True)
    assert (info.value.file, info.value.rule) == (str(path), "response.finish_reason.table")
    # a broken user directory does not poison the built-in rules
    assert toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS).finish_reason == "length"


def test_rules_dir_on_every_call_does_not_touch_the_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "my-rules"
    copy_rule("anthropic", user)
    toolnexus.load_rules(user)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the file system was consulted")

    monkeypatch.setattr(os, "stat", refuse)
    monkeypatch.setattr(os, "scandir", refuse)
    monkeypatch.setattr(Path, "stat", refuse)
    result = toolnexus.translate_response("anthropic", ANTHROPIC_MAX_TOKENS, rules=str(user))
    assert result.finish_reason == "length"


def test_the_cache_of_loaded_directories_is_bounded(tmp_path: Path) -> None:
    from toolnexus.translate.rulebook import CACHED_DIRECTORIES

    dirs = [copy_rule("openai", tmp_path / f"rules{i}").parent for i in range(CACHED_DIRECTORIES + 1)]
    first = toolnexus.load_rules(dirs[0])
    assert toolnexus.load_rules(dirs[0]) is first
    for directory in dirs[1:]:
        toolnexus.load_rules(directory)
    assert toolnexus.load_rules(dirs[0]) is not first  # the least recently used one was dropped, then read again
    assert toolnexus.load_rules(dirs[-1]) is toolnexus.load_rules(dirs[-1])


def test_an_empty_directory_or_a_file_is_not_a_rules_directory(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match="no rule files"):
        toolnexus.load_rules(tmp_path)
    target = copy_rule("openai", tmp_path / "rules")
    with pytest.raises(RuleError, match="is a file"):
        toolnexus.load_rules(target)


def test_providers_lists_files_a_user_can_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user = tmp_path / "my-rules"
    copy_rule("openai", user, edits=(("provider: openai\n", "provider: myproxy\n"),), as_name="myproxy")
    for args in (["providers"], ["providers", "--rules", str(user)]):
        assert cli_main(args) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines
        for line in lines:
            assert Path(line.split("\t")[1]).is_file(), line


# ---------------------------------------------------------------- what the user sees (pinned text)


def test_what_the_user_sees_for_a_misspelt_operation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The one pinned message of the RuleError family, from the API and from the CLI."""
    user = tmp_path / "rules"
    good = "    model: {$get: model, required: true}\n"
    path = copy_rule("anthropic", user, edits=((good, "    model: {$gett: model, required: true}\n"),))
    line = (RULES / "anthropic.yaml").read_text(encoding="utf-8").splitlines().index(good.rstrip("\n")) + 1
    expected = f"{path}:{line}:13 request.body.model.$gett: unknown operation '$gett' (did you mean '$get'?)"

    with pytest.raises(RuleError) as info:
        toolnexus.translate_request("anthropic", {"model": "m", "messages": []}, rules=user)
    assert str(info.value) == expected

    assert cli_main(["providers", "--rules", str(user)]) == 2
    assert capsys.readouterr().err == f"toolnexus: error: {expected}\n"


# ---------------------------------------------------------------- loading is bounded


def test_too_many_keys_is_a_located_rule_error(tmp_path: Path) -> None:
    rows = "".join(f"          v{i}: {i}\n" for i in range(MAX_NODES // 2 + 1))  # a valid, absurd table
    table = "        table: {none: 4096, minimal: 5120, low: 6144, medium: 12288, high: 20480, xhigh: 28672}\n"
    target = copy_rule("anthropic", tmp_path, edits=((table, "        table:\n" + rows),))
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path)
    assert info.value.file == str(target)
    assert info.value.line is not None and 33 < info.value.line < 33 + MAX_NODES // 2  # inside the table


def test_a_file_past_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    comment = f"# {'x' * MAX_FILE_BYTES}\n"
    target = copy_rule("openai", tmp_path, edits=(("provider: openai\n", "provider: openai\n" + comment),))
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path)
    assert info.value.file == str(target) and info.value.rule == ""


def test_deeply_nested_parentheses_in_a_path_are_a_rule_error(tmp_path: Path) -> None:
    """Short enough for the length limit, deep enough that jmespath's parser runs out of stack."""
    depth = (MAX_PATH_LENGTH - 11) // 2
    deep = "(" * depth + "temperature" + ")" * depth
    target = copy_rule(
        "openai",
        tmp_path,
        edits=(("    temperature: {$get: temperature}\n", f'    temperature: {{$get: "{deep}"}}\n'),),
    )
    try:
        toolnexus.load_rules(tmp_path)
    except RuleError as exc:
        assert (exc.file, exc.rule) == (str(target), "request.body.temperature.$get")
    except Exception as exc:
        pytest.fail(f"loading raised {type(exc).__name__}, not RuleError")


# ---------------------------------------------------------------- rule-file patterns run in linear time


def _normalize_seconds(rules: Path, call_id: str) -> float:
    """The best of a few timings of one request whose tool call id is checked against the pattern (this
    thread's CPU time: a loaded machine pauses the thread, which the wall clock would count)."""
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "ok"},
        ],
    }
    book = toolnexus.load_rules(rules)
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        toolnexus.translate_request("anthropic", request, rules=book)
        best = min(best, time.thread_time() - start)
    return best


def test_a_backtracking_pattern_matches_in_linear_time(tmp_path: Path) -> None:
    """`^([a-zA-Z0-9_-]+)+$` backtracks exponentially on an id that almost matches (Python's re: 14 s at 27
    characters). Doubling the id must not multiply the time: a generous ratio, plus a floor for timer noise."""
    copy_rule("anthropic", tmp_path, edits=(('  pattern: "^[a-zA-Z0-9_-]+$"\n', '  pattern: "^([a-zA-Z0-9_-]+)+$"\n'),))
    short = _normalize_seconds(tmp_path, "a" * 11 + "!")
    long = _normalize_seconds(tmp_path, "a" * 23 + "!")
    assert long <= 3 * short + 0.005, (short, long)
    assert _normalize_seconds(tmp_path, "a" * 30 + "!") < 1  # the brief's case: a 30-character id


# ---------------------------------------------------------------- compiled rules are shared by threads


def run_interleaved(target: Callable[[int], None], count: int = 8) -> None:
    """`target(i)` in `count` threads at once, switching every microsecond (so they interleave inside the engine);
    the switch interval restored after."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)


def test_a_fresh_rulebook_translates_the_same_from_many_threads_at_once() -> None:
    """Compiled rules are complete at load and never change after: the first calls may come from
    many threads at once (a tiny switch interval makes them interleave inside the engine), and each
    gives what the same call gives alone. Only the engine runs in the threads (deepdiff, which the
    conformance check uses, calls ast.parse, which CPython 3.11 cannot run from several threads)."""
    from toolnexus import translate_request, translate_response
    from toolnexus.devtools.conformance import load_cases
    from toolnexus.errors import ToolnexusError
    from toolnexus.language.loader import builtin_rules_dir
    from toolnexus.translate.rulebook import read_rules_dir

    cases = [(case.provider, case.data) for case in load_cases() if case.skip is None]

    def outcome(book: Any, provider: str, case: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        try:
            if "request" in case:
                body = translate_request(provider, case["request"], rules=book, **case.get("options", {}))
                out.append((dict(body), body.notes))
            if "response" in case:
                out.append(translate_response(provider, case["response"], rules=book).to_dict())
        except ToolnexusError as exc:
            out.append((type(exc).__name__, getattr(exc, "path", None)))
        return out

    book = read_rules_dir(builtin_rules_dir())  # compiled now, used first by the threads below
    seen: list[tuple[int, list[Any]]] = []
    problems: list[str] = []

    def run(start: int) -> None:
        for i in range(start, len(cases), 2):
            try:
                seen.append((i, outcome(book, *cases[i])))
            except Exception as exc:  # anything else escaping is the failure this test looks for
                problems.append(f"case {i}: {exc!r}")

    run_interleaved(lambda i: run(i % 2))
    assert not problems, problems[:3]
    alone = read_rules_dir(builtin_rules_dir())
    assert len(seen) == 4 * len(cases)
    assert all(result == outcome(alone, *cases[i]) for i, result in seen)


# ---------------------------------------------------------------- rule authors' mistakes, said plainly

YAML_MISTAKES = {
    "mapping in a value": "a: b: c\n",
    "unclosed list": "a: [1, 2\n",
    "unclosed quote": "a: 'x\n",
    "tab indentation": "a:\n\tb: 1\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "duplicate anchor": "a: &x 1\nb: &x 2\n",
}


@pytest.mark.parametrize("text", YAML_MISTAKES.values(), ids=YAML_MISTAKES.keys())
def test_a_yaml_syntax_error_is_one_located_line(text: str, tmp_path: Path) -> None:
    target = tmp_path / "openai.yaml"
    target.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path)
    err = info.value
    assert (err.file, err.line is not None, err.column is not None) == (str(target), True, True)
    assert "\n" not in str(err) and "<unicode string>" not in str(err)


def test_a_bad_path_error_ends_with_the_path(tmp_path: Path) -> None:
    copy_rule(
        "openai",
        tmp_path,
        edits=(("    temperature: {$get: temperature}\n", '    temperature: {$get: "temperature["}\n'),),
    )
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path)
    assert info.value.rule == "request.body.temperature.$get"
    assert info.value.message.endswith("temperature[") and "\n" not in info.value.message


def test_without_libyaml_the_same_bounds_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML without libyaml: its own parser under the same counting composer."""
    from toolnexus.language import loader

    monkeypatch.setattr(loader, "_Loader", loader._PureLoader)
    for case in ("alias_bomb", "nested_too_deep"):
        path = CORPUS / f"{case}.yaml"
        expect = parse_header(path)
        with pytest.raises(RuleError) as info:
            loader.parse_rule_text(path.read_text(encoding="utf-8"), "x.yaml")
        assert (info.value.line, info.value.column) == (expect["line"], expect["column"])


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_the_compiled_request_side_is_returned_frozen_not_written_into_the_rule_source(
    provider: str, tmp_path: Path
) -> None:
    """The request side's generated code comes back on the frozen Inbound; the loaded rule source holds none."""
    shutil.copy(Path(__file__).resolve().parent.parent / "rules" / f"{provider}.yaml", tmp_path)
    compiled = toolnexus.load_rules(tmp_path).get(provider)
    assert not hasattr(compiled.source, "generated")
    assert {key[0] for key, _ in compiled.inbound.code} >= {"request", "tools", "messages"}
    generated = ("def render(", "def system(", "def messages(", "def tools(")
    assert all(text.startswith(generated) for _, text in compiled.inbound.code)
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.inbound.join = "x"  # type: ignore[misc]


def test_the_compiled_request_tables_are_read_only() -> None:
    inbound = toolnexus.load_rules(None).get("anthropic").inbound
    for table in (inbound.roles, inbound.unsupported, inbound.message_unsupported, inbound.tool_choice, inbound.ranges):
        with pytest.raises(TypeError):
            table["x"] = None  # type: ignore[index]


def test_the_engines_parses_take_turns_across_threads() -> None:
    """CPython 3.11 raises SystemError ("AST constructor recursion depth mismatch") when two threads make AST
    objects at once and a collection runs a finalizer in between: a format compiled on first use from several
    threads did (the folded answer writer parses generated lines). The engine's parses take turns."""
    from toolnexus.language.fold import parsed, parsed_expression

    class Finalized:
        """Garbage whose finalizer runs Python code, so a collection inside a parse lets another thread run."""

        def __init__(self) -> None:
            self.cycle = self

        def __del__(self) -> None:
            sum(range(50))

    source = "\n".join(f"x{i} = (a if b else [c, {{'k': d.get('e')}}]) and f(g, h)" for i in range(300))
    problems: list[BaseException] = []

    def run() -> None:
        for _ in range(25):
            try:
                for _ in range(20):
                    Finalized()
                parsed(source)
                parsed_expression("a if b is None else c")
            except SystemError as exc:
                problems.append(exc)

    thresholds = gc.get_threshold()
    gc.set_threshold(50, 1, 1)
    try:
        run_interleaved(lambda _: run())
    finally:
        gc.set_threshold(*thresholds)
    assert problems == []
