"""Usage over every provider response in the fixtures (case tables, golden inputs, demo replies).

For every result: prompt_tokens includes the cached and cache-write tokens, total_tokens is
prompt_tokens + completion_tokens, and completion_tokens includes the reasoning tokens. The
engine checks them on every result: a response that breaks them keeps its answer and its usage
as given, with an `inconsistent` note at usage.* (never an error: a readable answer is never lost
over accounting). This test restates them independently: every fixture's usage keeps them with
no note, except the cases that expect those notes, and every provider needs fixtures that
exercise cached and reasoning counts, so the check is not vacuous. Then: counts that cannot be
read are left out and noted, never made up, for every provider and in a stream.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from support.cases import CASES
from support.sse_encoders import ENCODERS, data_of
from toolnexus import translate_response
from toolnexus.devtools.conformance import fixtures_dir, golden_files, run_check
from toolnexus.translate.rulebook import load_rules


def responses() -> Iterator[tuple[str, str, dict[str, Any], list[str]]]:
    """(provider, where, response, the usage paths a case expects `inconsistent` notes at) for every fixture
    response that translates."""
    for column in CASES:
        case = column.data
        if "response" in case and "expect_response_error" not in case:
            notes = case.get("expect_result_notes") or []
            expected = [n["path"] for n in notes if n["kind"] == "inconsistent"]
            yield column.provider, column.name, case["response"], expected
    for path in golden_files():
        spec = json.loads(path.read_text())
        for name, response in spec.get("finish_reasons", {}).items():
            yield spec["provider"], f"{path.name}:{name}", response, []
    for path in sorted((Path(fixtures_dir()) / "demo").glob("*.json")):
        for i, reply in enumerate(json.loads(path.read_text())["replies"]):
            yield path.stem, f"demo/{path.name}[{i}]", reply, []


ALL = list(responses())
RULES_DIR = Path(__file__).resolve().parents[1] / "rules"


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
    provider: str, where: str, response: dict[str, Any], expected: list[str]
) -> None:
    result = translate_response(provider, response)
    noted = [n.path for n in result.notes if n.path.startswith("usage") or n.kind == "inconsistent"]
    assert noted == expected, f"{where}: usage notes {noted} in {result.usage}"
    assert bool(holds(result.usage)) == bool(expected), f"{where}: {holds(result.usage)} in {result.usage}"


@pytest.mark.parametrize("provider", toolnexus.providers())
def test_every_provider_has_fixtures_with_cached_and_reasoning_tokens(provider: str) -> None:
    """Each count the provider's usage rules write (a provider that reports no cached or no reasoning tokens
    writes no such detail) is exercised by a fixture."""
    usage_rules = load_rules().get(provider).source.data["response"]["usage"]
    wanted = {key for key in ("prompt_tokens_details", "completion_tokens_details") if key in usage_rules}
    if not wanted:
        pytest.skip(f"the {provider} rules write no cached or reasoning counts")
    cached = reasoning = False
    for name, _, response, expected in ALL:
        if name != provider or expected:
            continue
        usage = translate_response(provider, response).usage
        cached |= bool((usage.get("prompt_tokens_details") or {}).get("cached_tokens"))
        reasoning |= bool((usage.get("completion_tokens_details") or {}).get("reasoning_tokens"))
    exercised = {
        key for key, seen in (("prompt_tokens_details", cached), ("completion_tokens_details", reasoning)) if seen
    }
    assert wanted <= exercised, f"{provider}: the fixtures must exercise {sorted(wanted - exercised)}"


# ---------------------------------------------------------------- unreadable counts: noted, never made up

BAD_COUNTS = ["12", 1.5, True, -1, [3], {"n": 1}]


def _counts_tokens(key: str) -> bool:
    """A key naming tokens (input_tokens, promptTokenCount) or a count of them (Ollama's eval_count)."""
    return "token" in key.lower() or key.endswith("_count")


def _spoil(value: Any, bad: Any) -> Any:
    """The response with every token count (an integer under a key naming tokens) replaced by `bad`."""
    if isinstance(value, dict):
        return {k: bad if type(v) is int and _counts_tokens(k) else _spoil(v, bad) for k, v in value.items()}
    if isinstance(value, list):
        return [_spoil(v, bad) for v in value]
    return value


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def _with_usage(provider: str) -> list[dict[str, Any]]:
    return [response for name, _, response, expected in ALL if name == provider and not expected
            and translate_response(provider, response).usage]  # fmt: skip


@pytest.mark.parametrize("provider", toolnexus.providers())
@pytest.mark.parametrize("bad", BAD_COUNTS, ids=repr)
def test_counts_that_cannot_be_read_are_left_out_and_noted_and_the_answer_is_kept(provider: str, bad: Any) -> None:
    for response in _with_usage(provider)[:8]:
        spoiled = _spoil(response, bad)
        result, clean = translate_response(provider, spoiled), translate_response(provider, response)
        assert (result.text, [(c.name, c.arguments) for c in result.tool_calls], result.finish_reason) == (
            clean.text, [(c.name, c.arguments) for c in clean.tool_calls], clean.finish_reason)  # fmt: skip
        assert set(_leaves(result.usage)) <= {0}, "no count is made from what could not be read (0: an omitted one)"
        # what the spoiled counts add (the answer may carry drops of its own: a citation, grounding metadata)
        dropped = [n for n in result.notes if n.kind == "dropped" and n not in clean.notes]
        # at the usage count left out, or at the response's own count (Ollama's are top-level keys)
        assert dropped and all(n.path.startswith("usage") or _counts_tokens(n.path) for n in dropped), result.notes
        assert len({n.path for n in dropped}) == len(dropped), "each unreadable count is noted once"


@pytest.mark.parametrize("holder", ["not an object", None, "absent", 7])
def test_a_usage_object_that_is_not_an_object_gives_no_counts(holder: Any) -> None:
    """Gemini omits counts that are zero (`empty: 0`), but only inside a usageMetadata that is there."""
    response: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]}, "finishReason": "STOP"}],
    }
    if holder != "absent":
        response["usageMetadata"] = holder
    result = translate_response("gemini", response)
    assert result.text == "Hi." and result.usage == {}
    noted = [(n.kind, n.path) for n in result.notes]
    assert noted == ([("dropped", "usageMetadata")] if isinstance(holder, (str, int)) and holder != "absent" else [])
    present = translate_response("gemini", {**response, "usageMetadata": {"promptTokenCount": 5}})
    assert present.usage == {"prompt_tokens": 5, "completion_tokens": 0}, "omitted counts in the object are zero"


@pytest.mark.parametrize("provider", [p for p in toolnexus.providers() if toolnexus.load_rules().get(p).streaming])
def test_a_stream_with_inconsistent_usage_ends_with_its_finish_chunk_and_the_note(provider: str) -> None:
    response = next((r for name, _, r, expected in ALL if name == provider and expected), None)
    if response is None:
        pytest.skip(f"no {provider} fixture with inconsistent usage: its counts cannot contradict each other")
    want = translate_response(provider, copy.deepcopy(response))
    translator = toolnexus.stream_translator(provider)
    chunks = [
        c for event in ENCODERS[provider](response, random.Random(2)) for c in translator.feed(data_of(provider, event))
    ]
    chunks += translator.finish()
    assert translator.result is not None and translator.result.text == want.text
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == want.finish_reason
    assert [(n.kind, n.path) for n in translator.result.notes] == [(n.kind, n.path) for n in want.notes]
    assert any(n.kind == "inconsistent" for n in translator.result.notes)


def test_check_fails_when_the_rules_usage_breaks_the_invariants(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[1] / "rules" / "openai.yaml").read_text()
    broken = text.replace("total_tokens: {$get: usage.total_tokens}", "total_tokens: {$get: usage.prompt_tokens}")
    assert broken != text
    (tmp_path / "openai.yaml").write_text(broken)
    problems = [p for outcome in run_check(tmp_path) for p in outcome.problems]
    assert any("breaks the invariants" in p or "inconsistent" in p for p in problems), problems
