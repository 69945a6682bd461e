"""Usage invariants over every provider response in the fixtures (case tables, golden inputs, demo replies).

For every result: prompt_tokens includes the cached and cache-write tokens, total_tokens is
prompt_tokens + completion_tokens, and completion_tokens includes the reasoning tokens. The
engine checks them at translation time (a response that breaks them is a ResponseError at
usage.*); this test restates them independently and needs every provider to have fixtures
that exercise cached and reasoning counts, so the check is not vacuous.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import ResponseError, translate_response
from toolnexus.conformance import case_files, fixtures_dir, golden_files, load_case
from toolnexus.outbound import _counts
from toolnexus.templates import Ctx


def responses() -> Iterator[tuple[str, str, dict[str, Any], str | None]]:
    """(provider, where, response, the usage path a case expects an error at) for every fixture response."""
    for provider, paths in case_files().items():
        if provider == "demo":
            continue
        for path in paths:
            case = load_case(path)
            if "response" in case:
                expected = (case.get("expect_response_error") or {}).get("path")
                yield provider, f"{provider}/{path.stem}", case["response"], expected
    for path in golden_files():
        spec = json.loads(path.read_text())
        for name, response in spec.get("finish_reasons", {}).items():
            yield spec["provider"], f"{path.name}:{name}", response, None
    for path in sorted((Path(fixtures_dir()) / "demo").glob("*.json")):
        for i, reply in enumerate(json.loads(path.read_text())["replies"]):
            yield path.stem, f"demo/{path.name}[{i}]", reply, None


ALL = list(responses())


def holds(usage: dict[str, Any]) -> list[str]:
    """The invariants, restated here: what is broken (nothing when they hold)."""
    broken = []
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens", 0) + details.get("cache_write_tokens", 0)
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
    if "total_tokens" in usage and usage["total_tokens"] != (prompt or 0) + (completion or 0):
        broken.append("total_tokens != prompt_tokens + completion_tokens")
    if cached > (prompt or 0):
        broken.append("cached + cache-write tokens exceed prompt_tokens")
    if reasoning > (completion or 0):
        broken.append("reasoning tokens exceed completion_tokens")
    return broken


@pytest.mark.parametrize(("provider", "where", "response", "expected"), ALL, ids=[a[1] for a in ALL])
def test_usage_invariants_hold_for_every_fixture_response(
    provider: str, where: str, response: dict[str, Any], expected: str | None
) -> None:
    try:
        result = translate_response(provider, response)
    except ResponseError as exc:
        if exc.path.startswith("usage."):
            assert exc.path == expected, f"{where}: usage refused at {exc.path} ({exc.message})"
            assert holds(_raw_usage(provider, response)), f"{where}: refused, yet the invariants hold"
        return
    assert not holds(result.usage), f"{where}: {holds(result.usage)} in {result.usage}"
    assert expected is None or not expected.startswith("usage."), f"{where}: expected a usage error at {expected}"


def _raw_usage(provider: str, response: dict[str, Any]) -> dict[str, Any]:
    """The usage the rules compute, without the engine's check (to show a refusal is deserved)."""
    usage = toolnexus.load_rules().get(provider).outbound.usage(response, Ctx(provider, outbound=True))
    return _counts(usage, "usage", provider)


@pytest.mark.parametrize("provider", toolnexus.providers())
def test_every_provider_has_fixtures_with_cached_and_reasoning_tokens(provider: str) -> None:
    cached = reasoning = False
    for name, _, response, expected in ALL:
        if name != provider or expected is not None:
            continue
        usage = translate_response(provider, response).usage
        cached |= bool((usage.get("prompt_tokens_details") or {}).get("cached_tokens"))
        reasoning |= bool((usage.get("completion_tokens_details") or {}).get("reasoning_tokens"))
    assert cached and reasoning, f"{provider}: the fixtures must exercise cached and reasoning tokens"
