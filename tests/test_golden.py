"""The golden fixture: the output six earlier implementations agreed on, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deepdiff import DeepDiff

from toolnexus.devtools.conformance import build_golden, check_golden, golden_files, golden_text

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "fixtures" / "translation-parity-fixture.json"


def test_there_is_a_golden_fixture() -> None:
    names = [p.name for p in golden_files()]
    assert names == ["translation-parity-gemini.input.json", "translation-parity.input.json"]


@pytest.mark.parametrize("path", golden_files(), ids=lambda p: p.name)
def test_golden_output_is_identical(path: Path) -> None:
    spec = json.loads(path.read_text())
    expected_text = path.with_name(spec["expected"]).read_text()
    actual = build_golden(spec, path.parent)
    diff = DeepDiff(json.loads(expected_text), actual)
    assert not diff, diff.pretty()
    assert golden_text(actual) == expected_text
    assert check_golden(path).ok


@pytest.mark.skipif(not SHARED.exists(), reason="the shared folder is not beside this checkout")
def test_fixture_is_a_byte_identical_copy_of_the_agreed_one() -> None:
    assert (REPO / "fixtures" / "translation-parity-fixture.json").read_bytes() == SHARED.read_bytes()


def test_a_changed_expectation_is_reported_with_a_diff(tmp_path: Path) -> None:
    source = next(p for p in golden_files() if p.name == "translation-parity.input.json")
    spec = json.loads(source.read_text())
    expected = json.loads(source.with_name(spec["expected"]).read_text())
    expected["finishStop"] = "stop"
    (tmp_path / spec["expected"]).write_text(golden_text(expected))
    (tmp_path / source.name).write_text(json.dumps(spec))
    (tmp_path / spec["request"]).write_text(source.with_name(spec["request"]).read_text())
    outcome = check_golden(tmp_path / source.name)
    assert not outcome.ok
    assert "finishStop" in outcome.problems[0]
