"""README first contact: its two commands exist, and .ci/run runs exactly the test one."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> dict[str, str]:
    """The commands of the README's ```sh blocks, by their leading comment's first word."""
    text = (REPO / "README.md").read_text()
    out = {}
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        lines = block.strip().splitlines()
        label = lines[0].lstrip("# ").split(":")[0]
        out[label] = "\n".join(lines[1:]).strip()
    return out


def test_readme_has_exactly_a_main_job_and_a_test_command() -> None:
    commands = readme_commands()
    assert set(commands) == {"main job", "tests"}
    assert all("\n" not in c for c in commands.values())


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci_lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert readme_commands()["tests"] in ci_lines
    assert "set -euo pipefail" in ci_lines  # a pytest exit 5 (no tests ran) fails CI
