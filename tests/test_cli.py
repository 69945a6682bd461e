"""The `toolnexus` command as a user runs it: exit codes, one-line errors, JSON out."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.cli import explain_code, run_cli
from toolnexus import ProviderError, RuleError, load_rules, providers, translate_response
from toolnexus.devtools import cli
from toolnexus.devtools.cli import build_parser
from toolnexus.devtools.conformance import demo_file, load_concern
from toolnexus.devtools.demo import STREAM_FILES, run_demo

REPO = Path(__file__).resolve().parents[1]
GOLDEN_INPUT = REPO / "fixtures" / "translation-parity.input.json"


def test_check_passes_on_the_shipped_rules() -> None:
    run = run_cli("check")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout


def test_check_fails_with_a_diff_when_a_rule_changes(tmp_path: Path) -> None:
    text = (REPO / "rules" / "anthropic.yaml").read_text()
    (tmp_path / "anthropic.yaml").write_text(text.replace("max_tokens: length", "max_tokens: stop"))
    run = run_cli("check", "--rules", str(tmp_path))
    assert run.returncode == 1
    assert "FAIL  translation-parity-fixture.json" in run.stdout
    assert "finishStop" in run.stdout


def test_request_prints_the_provider_body_from_a_file_and_stdin() -> None:
    request = json.loads((REPO / "fixtures" / "translation-parity.request.json").read_text())
    from_stdin = run_cli("request", "--to", "anthropic", "-", stdin=json.dumps(request))
    assert from_stdin.returncode == 0, from_stdin.stderr
    body = json.loads(from_stdin.stdout)
    assert body["system"] == "Be terse." and body["tool_choice"] == {"type": "any"}
    assert "note: synthesized: max_tokens" in from_stdin.stderr


def test_response_prints_the_openai_shaped_result(tmp_path: Path) -> None:
    response = json.loads(GOLDEN_INPUT.read_text())["finish_reasons"]["finishTools"]
    path = tmp_path / "resp.json"
    path.write_text(json.dumps(response))
    run = run_cli("response", "--from", "anthropic", str(path))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["finish_reason"] == "tool_calls"
    assert result["tool_calls"] == [
        {"id": "toolu_01", "type": "function", "function": {"name": "alpha", "arguments": '{"n": 3}'}}
    ]


def test_providers_lists_every_rule_file() -> None:
    run = run_cli("providers")
    shipped = sorted(p.stem for p in (REPO / "rules").glob("*.yaml"))
    assert [line.split("\t")[0] for line in run.stdout.splitlines()] == shipped


def test_explain_shows_rules_with_their_lines() -> None:
    run = run_cli("explain", "anthropic")
    assert run.returncode == 0
    assert "rules/anthropic.yaml:" in run.stdout and "response.finish_reason" in run.stdout
    code = explain_code("anthropic")
    assert "def render(s, c):" in code and "'tool_use'" in code


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
    run = run_cli(*args, stdin=stdin)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert expected in run.stderr


def test_a_broken_rules_directory_names_file_and_line(tmp_path: Path) -> None:
    shutil.copy(REPO / "rules" / "openai.yaml", tmp_path / "openai.yaml")
    with (tmp_path / "openai.yaml").open("a") as fh:
        fh.write("respnse: {}\n")
    run = run_cli("providers", "--rules", str(tmp_path))
    assert run.returncode == 2
    assert "openai.yaml:" in run.stderr and "did you mean 'response'" in run.stderr


# ---------------------------------------------------------------- no traceback, ever


def module(*args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    """`python -u -m toolnexus ...` (unbuffered, so a test sees the first line as soon as it is written)."""
    return subprocess.Popen([sys.executable, "-u", "-m", "toolnexus", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **kwargs)  # fmt: skip


def first_line(stream: Any, timeout: float = 30) -> bytes:
    """The next line of a child's pipe, or b"" when none comes within `timeout` (never hangs the suite)."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else b""


def one_error_line(run: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert run.returncode == code, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
    return run.stderr


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("\ufeff".encode() + b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}', None),
        ('{"model": "m", "messages": []}'.encode("utf-16"), "UTF-16"),
        (b'{"model": "caf\xe9"}', "byte 0xe9 at offset 14"),
        (b"\x00\x01\x02\xff" * 64, "not UTF-8"),
        (("[" * 100_000 + "]" * 100_000).encode(), "nested deeper than 256 levels"),
        (('{"model": "m", "messages": [{"role": "user", "content": "' + "[" * 100_000 + '"}]}').encode(), None),
    ],
    ids=["utf8-bom", "utf16", "latin1", "binary", "deep", "deep-string"],
)
def test_unreadable_input_is_one_line_naming_the_file(tmp_path: Path, content: bytes, expected: str | None) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content)
    run = run_cli("request", "--to", "openai", str(path))
    if expected is None:
        assert run.returncode == 0, run.stderr
        return
    assert str(path) in one_error_line(run) and expected in run.stderr


def test_an_endless_input_is_bounded() -> None:
    run = run_cli("request", "--to", "openai", "/dev/zero")
    assert "/dev/zero: larger than the input limit of 64 MiB" in one_error_line(run)


def test_a_lone_surrogate_is_refused_not_printed() -> None:
    stdin = '{"model": "m", "messages": [{"role": "user", "content": "a\\ud800b"}]}'
    run = run_cli("request", "--to", "openai", stdin=stdin)
    assert "<stdin>" in one_error_line(run) and run.stdout == ""


@pytest.mark.parametrize("command", [("demo",), ("providers",), ("check", "-v")])
def test_a_closed_pipe_ends_quietly_with_141(command: tuple[str, ...]) -> None:
    """`toolnexus demo | head -3`: the reader has gone; nothing on stderr, as `ls | head` does."""
    proc = module(*command)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    assert proc.stderr.read() == b""


@pytest.mark.parametrize("command", [("demo",), ("check", "-v")])
def test_ctrl_c_is_exit_130_with_one_line(command: tuple[str, ...]) -> None:
    proc = module(*command)
    assert proc.stdout is not None and proc.stderr is not None
    assert first_line(proc.stdout)  # it has started
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr.read().decode() == "toolnexus: interrupted\n"


def test_request_on_a_terminal_says_it_reads_stdin_and_ctrl_c_ends_it() -> None:
    leader, follower = pty.openpty()
    proc = module("request", "--to", "openai", stdin=follower)
    assert proc.stderr is not None
    try:
        assert b"reading standard input" in first_line(proc.stderr)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        assert proc.stderr.read() == b"toolnexus: interrupted\n"
    finally:
        if proc.poll() is None:  # it never said it reads stdin: do not leave it waiting
            proc.kill()
            proc.wait()
        os.close(leader)
        os.close(follower)


# ---------------------------------------------------------------- errors worded for the command line


def test_a_provider_error_body_is_reported_as_the_providers_error(tmp_path: Path) -> None:
    path = tmp_path / "reply.json"
    path.write_text(json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    run = run_cli("response", "--from", "anthropic", str(path))
    line = one_error_line(run)
    assert f"{path}: " in line and "anthropic's error" in line and "overloaded_error: Overloaded" in line
    with pytest.raises(ProviderError) as caught:
        translate_response("gemini", {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}})
    assert (caught.value.provider, caught.value.error_type, caught.value.message) == (
        "gemini",
        "RESOURCE_EXHAUSTED",
        "Quota",
    )


def test_errors_name_the_file_and_suggest_cli_flags(tmp_path: Path) -> None:
    path = tmp_path / "req.json"
    path.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temprature": 1}))
    line = one_error_line(run_cli("request", "--to", "anthropic", str(path)))
    assert line.startswith(f"toolnexus: error: {path}: temprature: ")
    assert "--drop-unknown" in line and "unknown_fields" not in line
    assert run_cli("request", "--to", "anthropic", "--drop-unknown", str(path)).returncode == 0


def test_stream_true_says_how_to_stream_from_the_command_line() -> None:
    stdin = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    line = one_error_line(run_cli("request", "--to", "anthropic", stdin=stdin))
    assert "--stream" in line and "client.translate_stream" not in line
    streamed = run_cli("request", "--to", "anthropic", "--stream", stdin=stdin)
    assert streamed.returncode == 0, streamed.stderr
    assert json.loads(streamed.stdout)["stream"] is True
    gemini = run_cli("request", "--to", "gemini", "--stream", stdin=stdin)
    assert "stream" not in json.loads(gemini.stdout), "gemini streams by URL, not by a body field"


STREAMING = [p for p in providers() if load_rules().get(p).streaming is not None]


@pytest.mark.parametrize("provider", STREAMING)
def test_response_stream_translates_a_captured_event_stream(provider: str) -> None:
    """Each chunk one JSON line; together they make exactly the whole answer's result."""
    framing = load_rules().get(provider).streaming.framing  # type: ignore[union-attr]
    events = demo_file(provider, STREAM_FILES[framing][0])  # the capture in the provider's own framing
    run = run_cli("response", "--from", provider, "--stream", str(events))
    assert run.returncode == 0, run.stderr
    chunks = [json.loads(line) for line in run.stdout.splitlines()]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finish == ["tool_calls"]
    whole = json.loads(demo_file(provider).read_text())["replies"][0]
    assert [c for c in chunks if not c["choices"]][-1]["usage"] == translate_response(provider, whole).usage
    empty = one_error_line(run_cli("response", "--from", provider, "--stream", stdin=""))
    assert "<stdin>: no " in empty and " in it" in empty


# ---------------------------------------------------------------- check with a user's rules and cases


def test_check_with_a_changed_mapping_can_be_made_green(tmp_path: Path) -> None:
    text = (REPO / "rules" / "openai.yaml").read_text()
    (tmp_path / "openai.yaml").write_text(text.replace("content_filter: content_filter", "content_filter: stop"))
    red = run_cli("check", "--rules", str(tmp_path))
    assert red.returncode == 1
    builtin = REPO / "fixtures" / "cases" / "response-finish-content-filter.yaml"
    assert f"FAIL  openai/response-finish-content-filter  {builtin.relative_to(REPO)}\n" in red.stdout
    mine = tmp_path / "fixtures" / "cases" / builtin.name
    mine.parent.mkdir(parents=True)
    concern = yaml.safe_load(builtin.read_text())  # the user's concern replaces the shipped one whole
    concern["providers"] = {"openai": concern["providers"]["openai"]}
    concern["providers"]["openai"]["expect_result"]["finish_reason"] = "stop"
    mine.write_text(yaml.safe_dump(concern))
    green = run_cli("check", "--rules", str(tmp_path), "-v")
    assert green.returncode == 0, green.stdout
    assert f"ok    openai/response-finish-content-filter  {mine}" in green.stdout
    assert all("  " in line.removeprefix("ok    ") for line in green.stdout.splitlines()[:-1]), (
        "every case shows its file"
    )


def test_a_users_concern_names_known_providers_and_the_case_layout(tmp_path: Path) -> None:
    """A column for a provider with no rule file, and a case file in the old per-provider layout, fail located."""
    (tmp_path / "openai.yaml").write_text((REPO / "rules" / "openai.yaml").read_text())
    cases = tmp_path / "fixtures" / "cases"
    cases.mkdir(parents=True)
    (cases / "mine.yaml").write_text("doc: x\nrequest: {model: m, messages: []}\nproviders:\n  opnai: {skip: none}\n")
    (tmp_path / "fixtures" / "openai").mkdir()
    (tmp_path / "fixtures" / "openai" / "old.yaml").write_text("doc: x\n")
    red = run_cli("check", "--rules", str(tmp_path))
    assert red.returncode == 1
    assert f"FAIL  opnai/mine  {cases / 'mine.yaml'}\n" in red.stdout and "did you mean 'openai'" in red.stdout
    assert f"FAIL  old  {tmp_path / 'fixtures' / 'openai' / 'old.yaml'}\n" in red.stdout


def test_concern_column_errors_are_located(tmp_path: Path) -> None:
    concern = tmp_path / "c.yaml"
    concern.write_text("doc: x\nrequest: {model: m}\nproviders:\n  openai:\n    expect_reqest: {}\n")
    with pytest.raises(RuleError) as caught:
        load_concern(concern)
    assert (caught.value.line, caught.value.column, caught.value.rule) == (5, 5, "providers.openai.expect_reqest")
    assert "did you mean 'expect_request'" in str(caught.value)
    concern.write_text("doc: x\nrequest: {model: m}\nproviders:\n  openai: {skip: ''}\n")
    with pytest.raises(RuleError) as caught:
        load_concern(concern)
    assert caught.value.rule == "providers.openai.skip"
    concern.write_text("doc: x\nrequest: {model: m}\nproviders:\n  openai: {doc: y}\n")
    with pytest.raises(RuleError) as caught:
        load_concern(concern)
    assert caught.value.rule == "providers.openai"


def test_case_file_errors_are_located(tmp_path: Path) -> None:
    misspelt = tmp_path / "misspelt.yaml"
    misspelt.write_text("doc: x\nreqest: {model: m}\n")
    with pytest.raises(RuleError) as caught:
        load_concern(misspelt)
    assert (caught.value.file, caught.value.line, caught.value.column) == (str(misspelt), 2, 1)
    assert "did you mean 'request'" in str(caught.value)
    broken = tmp_path / "broken.yaml"
    broken.write_text("doc: x\nrequest: [\n")
    with pytest.raises(RuleError) as caught:
        load_concern(broken)
    assert (caught.value.file, caught.value.line) == (str(broken), 3)
    assert "<unicode string>" not in str(caught.value) and "\n" not in str(caught.value)


# ---------------------------------------------------------------- help and summaries


def test_version_and_bare_help() -> None:
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("toolnexus ")
    bare = run_cli()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: toolnexus") and "exit codes:" in bare.stdout


def test_every_option_has_help_and_every_command_an_example() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, command in commands.items():
        for action in command._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
        assert (command.epilog or "").startswith("example:\n  toolnexus "), name
        for action in command._actions:
            if action.metavar == "PROVIDER":
                assert all(p in (action.help or "") for p in providers()), f"{name} {action.dest} lists the providers"


def test_check_and_demo_end_with_one_summary_line() -> None:
    check = run_cli("check")
    assert re.fullmatch(r"rules valid \([a-z, -]+\); \d+ passed, 0 failed in \d+\.\ds\n", check.stdout), check.stdout
    out = io.StringIO()
    assert asyncio.run(run_demo(out)) == 0
    assert re.fullmatch(r"demo: \d+ exchanges \(.*\), 0 failed in \d+\.\ds", out.getvalue().splitlines()[-1])


@pytest.mark.parametrize(
    ("raised", "code", "expected"),
    [
        (MemoryError(), 2, "toolnexus: error: out of memory\n"),
        (RecursionError(), 2, "toolnexus: error: nested too deeply to translate\n"),
        (
            TypeError("boom"),
            3,
            "toolnexus: error: internal error: TypeError: boom (a bug; TOOLNEXUS_DEBUG=1 shows where)\n",
        ),
    ],
)
def test_the_last_resort_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raised: BaseException, code: int, expected: str
) -> None:
    def broken(args: argparse.Namespace, out: Any) -> int:
        raise raised

    monkeypatch.setattr(cli, "cmd_providers", broken)
    monkeypatch.delenv("TOOLNEXUS_DEBUG", raising=False)
    assert cli.main(["providers"]) == code
    assert capsys.readouterr().err == expected
    monkeypatch.setenv("TOOLNEXUS_DEBUG", "1")
    if code == 3:
        with pytest.raises(TypeError):
            cli.main(["providers"])


def test_response_stream_of_a_broken_event_stream_capture_is_one_error_line(tmp_path: Path) -> None:
    capture = demo_file("bedrock", STREAM_FILES["aws-eventstream"][0]).read_bytes()
    (tmp_path / "cut.eventstream").write_bytes(capture[: len(capture) // 2])
    line = one_error_line(run_cli("response", "--from", "bedrock", "--stream", str(tmp_path / "cut.eventstream")))
    assert "cut.eventstream: the event stream ended inside a frame" in line
