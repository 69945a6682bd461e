"""The `toolnexus` command run as a user runs it: in a fresh process, its output as text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, stdin: str | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`toolnexus ARGS` from the repository root: the installed script when there is one, else `python -m toolnexus`."""
    exe = Path(sys.executable).with_name("toolnexus")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "toolnexus"]
    kwargs.setdefault("timeout", 300)
    kwargs.setdefault("cwd", REPO)
    return subprocess.run([*command, *args], input=stdin, capture_output=True, text=True, check=False, **kwargs)


def explain_code(*target: str) -> str:
    """What `toolnexus explain TARGET --code` prints; the command must succeed."""
    run = run_cli("explain", *target, "--code")
    assert run.returncode == 0, run.stderr
    return run.stdout
