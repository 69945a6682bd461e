"""A built wheel carries the rules and fixtures: install it in a fresh venv outside the repo and check."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_checks_outside_the_repo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    wheel = next(dist.glob("toolnexus-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "toolnexus/rules/anthropic.yaml" in names
    assert "toolnexus/rules/rules.schema.json" in names
    assert "toolnexus/rules/formats/anthropic.yaml" in names  # the source formats ride along
    assert "toolnexus/rules/formats/openai.yaml" in names  # the normal form: the request reader reads it at import
    assert "toolnexus/fixtures/translation-parity-fixture.json" in names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    run = subprocess.run(
        [str(bin_dir / "toolnexus"), "check"], cwd=outside, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout
    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import toolnexus.language.loader as l; print(l.builtin_rules_dir())"],
        cwd=outside, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert str(env_dir) in where.stdout  # the rules came from the wheel, not from this checkout
