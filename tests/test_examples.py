"""The API page's three examples, run unchanged as scripts: each exits 0 and prints its `ok:` line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent / "examples"

EXPECTED = {
    "api_example_1.py": "ok: sunny in Chennai",
    "api_example_2.py": 'ok: add {"a": 21, "b": 21}',
    "api_example_3.py": "ok: noted | noted",
}


def test_the_three_examples_are_present() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("api_example_*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_api_example_runs_unchanged_and_prints_its_ok_line(name: str, tmp_path: Path) -> None:
    # Run from an unrelated directory so the example uses the installed package, not a path trick.
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert run.returncode == 0, f"exit {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    ok_lines = [line for line in run.stdout.splitlines() if line.startswith("ok:")]
    assert ok_lines == [EXPECTED[name]], run.stdout
