"""The fast lane (lane.py) against the general path it shortcuts.

The general path is the reference. For every case file, for generated valid
requests and for generated broken ones, translating with the lane and with the
lane switched off must give the same body (same key order), the same notes, or
the same error at the same path. A lane that always fell back would pass those,
so the clean inputs the benchmark uses must actually take it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

import toolnexus
from support.cases import CASES, case_ids
from support.strategies import SETTINGS, broken_requests, requests
from toolnexus import TranslationError
from toolnexus.devtools.conformance import Case
from toolnexus.language.templates import Ctx
from toolnexus.translate.inbound import Inbound
from toolnexus.translate.lane import Fallback, Lane
from toolnexus.translate.rulebook import load_rules

ROOT = Path(__file__).resolve().parent.parent
PROVIDERS = toolnexus.providers()
REQUEST_CASES = [case for case in CASES if "request" in case.data]


def _always_fallback(_data: Any, _ctx: Ctx) -> Any:
    raise Fallback


def engines(provider: str) -> tuple[Inbound, Inbound]:
    """(the inbound translator as built, the same one with its lane switched off)."""
    inbound = load_rules().get(provider).inbound
    return inbound, dataclasses.replace(inbound, lane=Lane(_always_fallback, _always_fallback))


def outcome(inbound: Inbound, request: Any, options: dict[str, Any]) -> tuple[Any, ...]:
    try:
        body = inbound.translate(request, **options)
    except TranslationError as exc:
        return ("error", type(exc).__name__, exc.path, str(exc))
    return ("body", json.dumps(body, ensure_ascii=False, default=repr), body.notes)


def assert_same(provider: str, request: Any, options: dict[str, Any] | None = None) -> None:
    fast, general = engines(provider)
    assert outcome(fast, request, options or {}) == outcome(general, request, options or {})


@pytest.mark.parametrize("case", REQUEST_CASES, ids=case_ids(REQUEST_CASES))
def test_every_case_translates_the_same_with_and_without_the_lane(case: Case) -> None:
    assert_same(case.provider, case.data["request"], case.data.get("options"))


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(request=requests())
def test_generated_requests_translate_the_same(provider: str, request: dict[str, Any]) -> None:
    assert_same(provider, request)


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(request=requests(api_valid=True, names=True))
def test_generated_valid_requests_translate_the_same(provider: str, request: dict[str, Any]) -> None:
    assert_same(provider, request)


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(case=broken_requests())
def test_broken_requests_fail_the_same(provider: str, case: tuple[dict[str, Any], str, str]) -> None:
    assert_same(provider, case[0])


def _benchmark_inputs() -> list[tuple[str, dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import bench
    finally:
        sys.path.remove(str(ROOT / "tools"))
    parity = json.loads((ROOT / "fixtures" / "translation-parity.request.json").read_text(encoding="utf-8"))
    tools = bench.tool_declarations()
    return [("parity fixture", parity), *((f"transcript {n}", bench.transcript(n, tools)) for n in (10, 100))]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_clean_requests_take_the_lane(provider: str) -> None:
    """The realistic inputs tools/bench.py times never fall back to the general path."""
    lane = load_rules().get(provider).inbound.lane
    for name, request in _benchmark_inputs():
        assert lane.messages(request["messages"], Ctx(provider)) is not None, f"{name}: messages fell back"
        assert lane.tools(request["tools"], Ctx(provider)) is not None, f"{name}: tools fell back"
        assert_same(provider, request)


@pytest.mark.parametrize(
    ("name", "request_"),
    [
        ("late system prompt", [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]),
        ("unknown message key", [{"role": "user", "content": "hi", "x-extra": 1}]),
        ("empty assistant turn", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]),
        (
            "image detail",
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}],
                }
            ],
        ),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_what_needs_a_note_falls_back(provider: str, name: str, request_: list[dict[str, Any]]) -> None:
    """Where the general path writes a note, the lane must leave the messages to it, leaving no trace."""
    request = {"model": "m", "messages": request_}
    _, general = engines(provider)
    noted = bool(general.translate(request, unknown_fields="drop").notes)
    ctx = Ctx(provider)
    taken = load_rules().get(provider).inbound.lane.messages(request_, ctx) is not None
    if noted:
        assert not taken, f"{name}: the lane translated what the general path reports"
    if not taken:
        assert ctx.notes == [] and ctx.path == ""
    assert_same(provider, request, {"unknown_fields": "drop"})


def test_explain_shows_the_generated_lane() -> None:
    for provider in PROVIDERS:
        code = load_rules().get(provider).explain(code=True)
        assert "def lane_messages(messages, c):" in code and "def lane_tools(tools, c):" in code
