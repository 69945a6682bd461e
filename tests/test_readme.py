"""README.md as a reader meets it: the quickstart, the contents, the first-contact commands, and every
Python and shell block, run as written.

Python blocks run in a subprocess of this interpreter. The client examples read
`ANTHROPIC_BASE_URL` (falling back to Anthropic's own URL), so here they talk to a local
`toolnexus.devtools.stub` that answers like Anthropic: a tool call, then text once the tool's result is
in the transcript (as an event stream when the body asks for one). Shell blocks run with bash in
a directory where `.venv` is this interpreter's environment; the few that install or take
minutes are skipped with their reason.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.sse_encoders import anthropic_events
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # of the opening fence

    @property
    def label(self) -> str:
        """A shell block's name: its leading comment's text before the first colon."""
        first = self.code.splitlines()[0] if self.code else ""
        return first.lstrip("# ").split(":")[0] if first.startswith("#") else ""

    @property
    def command(self) -> str:
        return "\n".join(self.code.strip().splitlines()[1:]).strip()


def readme_blocks(*langs: str) -> list[Block]:
    text = README.read_text()
    return [
        Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
        for m in _FENCE.finditer(text)
        if m.group(1) in langs
    ]


def readme_commands() -> dict[str, str]:
    """The commands of the README's ```sh blocks, by their leading comment's first words."""
    return {block.label: block.command for block in readme_blocks("sh")}


# The first screen, the contents and the first-contact commands.


def test_the_first_section_is_a_quickstart_that_fits_the_first_screen() -> None:
    lines = README.read_text().splitlines()
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:2] == ["## Quickstart", "## Contents"]
    install, example = readme_blocks("sh")[0], readme_blocks("python")[0]
    assert install.label == "install" and "[" not in install.command  # translation needs no extra
    assert install.line < example.line < 30 and example.line + example.code.count("\n") < 60


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_contents_link_names_a_heading() -> None:
    text = README.read_text()
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    headings = {github_slug(h) for h in re.findall(r"^#{2,4} (.+)$", text, flags=re.M)}
    assert len(links) >= 10
    assert [link for link in links if link not in headings] == []
    top = {github_slug(h) for h in re.findall(r"^## (.+)$", text, flags=re.M)} - {"quickstart", "contents"}
    assert top <= set(links)  # every section is listed


def test_readme_has_a_main_job_and_a_test_command_on_one_line_each() -> None:
    commands = readme_commands()
    assert {"main job", "tests"} <= set(commands)
    assert len(commands) == len(readme_blocks("sh"))  # every shell block is named
    assert "\n" not in commands["main job"] and "\n" not in commands["tests"]


def test_the_readme_says_how_long_the_test_command_takes() -> None:
    tests = next(block for block in readme_blocks("sh") if block.label == "tests")
    assert re.search(r"\d+ minutes", tests.code.splitlines()[0])


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert readme_commands()["tests"] in ci_lines
    assert "set -euo pipefail" in ci_lines  # a pytest exit 5 (no tests ran) fails CI


def test_nothing_user_facing_names_an_issue() -> None:
    files = [README, *sorted((REPO / "engine").rglob("*.py")), *sorted((REPO / "rules").glob("*.yaml"))]
    found = [f"{f.relative_to(REPO)}:{n}" for f in files for n, line in enumerate(f.read_text().splitlines(), 1)
             if re.search(r"\bissues?\b", line, flags=re.I)]  # fmt: skip
    assert found == []


# Every block runs.

SKIPPED = {
    "main job": "installs into .venv; a fresh clone runs it (check and demo have their own tests)",
    "tests": "the test command runs this suite; .ci/run runs it",
    "install": "installs into .venv; .ci/run installs the same way on a clean clone",
    "benchmark": "takes minutes; tests/test_bench.py runs the benchmark at its smallest",
}
ARGUMENTS = {"weather": {"city": "Paris"}, "calc__add": {"a": 21, "b": 21}}  # what the stub's model asks for


def anthropic_reply(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {"id": "msg_readme", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 8}}  # fmt: skip


def answer(request: StubRequest) -> StubReply | dict[str, Any]:
    """Anthropic's side: call the first declared tool, then answer in text once its result is back."""
    body = request.body
    last = body["messages"][-1]["content"]
    answered = isinstance(last, list) and any(block.get("type") == "tool_result" for block in last)
    if answered or not body.get("tools"):
        reply = anthropic_reply([{"type": "text", "text": "Sunny in Paris."}], "end_turn")
    else:
        name = body["tools"][0]["name"]
        reply = anthropic_reply(
            [{"type": "tool_use", "id": "toolu_1", "name": name, "input": ARGUMENTS[name]}], "tool_use"
        )
    if body.get("stream"):
        return StubReply(stream=anthropic_events(reply, random.Random(0)))
    return reply


@pytest.fixture(scope="module")
def stub() -> Iterator[ProviderStub]:
    with ProviderStub(answer) as server:
        yield server


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's files, with `.venv` the environment running these tests."""
    root = tmp_path_factory.mktemp("readme")
    for entry in REPO.iterdir():
        if entry.name not in (".venv", ".git"):
            (root / entry.name).symlink_to(entry)
    (root / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return root


def block_env(stub: ProviderStub) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_BASE_URL": stub.base_url, "ANTHROPIC_API_KEY": "sk-ant-readme-test"}


@pytest.mark.parametrize("block", readme_blocks("python"), ids=lambda b: f"README.md:{b.line}")
def test_python_block_runs_as_written(block: Block, stub: ProviderStub, workdir: Path) -> None:
    script = workdir / f"block_{block.line}.py"
    script.write_text(block.code)
    before = len(stub.requests)
    run = subprocess.run(
        [sys.executable, script.name], cwd=workdir, env=block_env(stub), capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"README.md:{block.line} failed:\n{run.stderr}"
    assert run.stdout.strip(), "every example shows its result"
    if "ANTHROPIC_BASE_URL" in block.code:
        assert len(stub.requests) > before  # the example reached the provider (here, the stub)


@pytest.mark.parametrize("block", readme_blocks("sh"), ids=lambda b: f"README.md:{b.line}:{b.label}")
def test_shell_block_runs_as_written(block: Block, stub: ProviderStub, workdir: Path) -> None:
    if block.label in SKIPPED:
        pytest.skip(SKIPPED[block.label])
    commands = re.findall(r"\.venv/bin/([\w.-]+)", block.command)
    missing = [c for c in commands if not (workdir / ".venv" / "bin" / c).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed in the environment running the tests ({sys.prefix})")
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.command],
        cwd=workdir,
        env=block_env(stub),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, f"README.md:{block.line} failed:\n{run.stderr}"
