"""The long tools' progress: tqdm when installed (the `dev` extra), plain stderr lines without it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import progress as progress_tool


def test_without_tqdm_progress_is_a_line_per_tenth(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if the dev extra were not installed
    bar = progress_tool.progress(20, "soak")
    assert isinstance(bar, progress_tool.PlainProgress)
    for _ in range(20):
        bar.update()
    bar.close()
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 10
    assert lines[0].startswith("soak: 2/20 (10%), ") and lines[-1].startswith("soak: 20/20 (100%), ")


def test_a_stopped_run_still_says_how_far_it_got(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    bar = progress_tool.progress(100, "bench")
    bar.update(5)
    bar.close()
    assert capsys.readouterr().err.startswith("bench: 5/100 (5%), ")


def test_with_tqdm_it_is_a_tqdm_bar_on_stderr() -> None:
    tqdm = pytest.importorskip("tqdm", reason="the dev extra (tqdm) is not installed")
    bar = progress_tool.progress(3, "x")
    try:
        assert isinstance(bar, tqdm.tqdm) and bar.fp is not None
    finally:
        bar.close()
