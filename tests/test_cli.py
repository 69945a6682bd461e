"""The `toolnexus` command as a user runs it: exit codes, one-line errors, JSON out."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN_INPUT = REPO / "fixtures" / "translation-parity.input.json"


def toolnexus(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("toolnexus")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "toolnexus"]
    return subprocess.run([*command, *args], input=stdin, capture_output=True, text=True, timeout=60)


def test_check_passes_on_the_shipped_rules() -> None:
    run = toolnexus("check")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout


def test_check_fails_with_a_diff_when_a_rule_changes(tmp_path: Path) -> None:
    text = (REPO / "rules" / "anthropic.yaml").read_text()
    (tmp_path / "anthropic.yaml").write_text(text.replace("max_tokens: length", "max_tokens: stop"))
    run = toolnexus("check", "--rules", str(tmp_path))
    assert run.returncode == 1
    assert "FAIL  translation-parity-fixture.json" in run.stdout
    assert "finishStop" in run.stdout


def test_request_prints_the_provider_body_from_a_file_and_stdin() -> None:
    request = json.loads((REPO / "fixtures" / "translation-parity.request.json").read_text())
    from_stdin = toolnexus("request", "--to", "anthropic", "-", stdin=json.dumps(request))
    assert from_stdin.returncode == 0, from_stdin.stderr
    body = json.loads(from_stdin.stdout)
    assert body["system"] == "Be terse." and body["tool_choice"] == {"type": "any"}
    assert "note: synthesized: max_tokens" in from_stdin.stderr


def test_response_prints_the_openai_shaped_result(tmp_path: Path) -> None:
    response = json.loads(GOLDEN_INPUT.read_text())["finish_reasons"]["finishTools"]
    path = tmp_path / "resp.json"
    path.write_text(json.dumps(response))
    run = toolnexus("response", "--from", "anthropic", str(path))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["finish_reason"] == "tool_calls"
    assert result["tool_calls"] == [
        {"id": "toolu_01", "type": "function", "function": {"name": "alpha", "arguments": '{"n": 3}'}}
    ]


def test_providers_lists_every_rule_file() -> None:
    run = toolnexus("providers")
    shipped = sorted(p.stem for p in (REPO / "rules").glob("*.yaml"))
    assert [line.split("\t")[0] for line in run.stdout.splitlines()] == shipped


def test_explain_shows_rules_with_their_lines() -> None:
    run = toolnexus("explain", "anthropic")
    assert run.returncode == 0
    assert "rules/anthropic.yaml:" in run.stdout and "response.finish_reason" in run.stdout
    code = toolnexus("explain", "anthropic", "--code")
    assert "def render(s, c):" in code.stdout and "'tool_use'" in code.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "expected"),
    [
        (("request", "--to", "anthropic"), '{"model": "m", "messages": [{"role": "robot"}]}', "messages[0].role"),
        (("request", "--to", "anthropic"), "{not json", "not JSON"),
        (("request", "--to", "anthropc"), '{"model": "m", "messages": []}', "did you mean 'anthropic'"),
        (("response", "--from", "anthropic"), '{"model": "m"}', "content: is missing"),
        (("request", "--to", "anthropic", "/nonexistent.json"), None, "/nonexistent.json"),
    ],
)
def test_errors_are_one_line_and_exit_2(args: tuple[str, ...], stdin: str | None, expected: str) -> None:
    run = toolnexus(*args, stdin=stdin)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert expected in run.stderr


def test_a_broken_rules_directory_names_file_and_line(tmp_path: Path) -> None:
    shutil.copy(REPO / "rules" / "openai.yaml", tmp_path / "openai.yaml")
    with (tmp_path / "openai.yaml").open("a") as fh:
        fh.write("respnse: {}\n")
    run = toolnexus("providers", "--rules", str(tmp_path))
    assert run.returncode == 2
    assert "openai.yaml:" in run.stderr and "did you mean 'response'" in run.stderr
