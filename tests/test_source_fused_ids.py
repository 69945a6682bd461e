"""The fused transcript of a provider that rewrites tool-call ids by a table (fused_code's `transcript_ids`: every id
of the format's items scanned first, then the one loop), for both source formats: Mistral's own rules, and Mistral's
with a tiny id alphabet, where rewrites collide and are rehashed in the order the ids are first met. Each request's
outcome (body, notes, id map, or error) is today's route's, the fused function takes the requests it should, and an
id the provider echoes comes back as the caller's through the body's id map."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.fused import counted, outcome, without_fused
from support.strategies import SETTINGS
from toolnexus import load_rules, translate_request, translate_response
from toolnexus.translate.fused_code import id_keys, transcript_ids
from toolnexus.translate.rulebook import Rulebook

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bench_inputs import messages_transcript, responses_transcript, tool_declarations  # noqa: E402

SOURCES = ["openai-responses", "anthropic"]
NINE = re.compile(r"[a-zA-Z0-9]{9}")


def bench_request(source: str, size: int) -> dict[str, Any]:
    """The bench's request of `size` messages in the source format (its calls' ids `call_...`: all rewritten)."""
    made = responses_transcript if source == "openai-responses" else messages_transcript
    return made(size, tool_declarations())


def sent_calls(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the ids Mistral's body sends its calls with, those its tool results answer)."""
    calls = [call["id"] for m in body["messages"] for call in m.get("tool_calls") or ()]
    return calls, [m["tool_call_id"] for m in body["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("size", [10, 100])
def test_the_bench_requests_take_mistrals_fused_transcript_with_ids_rewritten(source: str, size: int) -> None:
    fmt, hits = load_rules().format(source), []
    request = bench_request(source, size)
    got = outcome(counted(fmt, "mistral", hits), "mistral", request)
    assert got == outcome(without_fused(fmt), "mistral", request)
    assert hits == [True]
    _, body, notes, id_map = got
    calls, results = sent_calls(body)
    assert calls and all(NINE.fullmatch(i) for i in calls) and set(results) <= set(calls)
    assert set(id_map) == set(calls) and all(given.startswith("call") for given in id_map.values())
    rewritten = [path for kind, path, message, *_ in notes if kind == "rewritten" and "tool-call id" in message]
    assert len(rewritten) == len(calls) + len(results)  # each at its path in the format's request
    assert all(path.endswith(("call_id", "].id", "tool_use_id")) for path in rewritten)


@pytest.mark.parametrize("source", SOURCES)
def test_an_id_mistral_echoes_comes_back_as_the_callers(source: str) -> None:
    request = bench_request(source, 10)
    body = translate_request("mistral", request, source=source)
    calls, _ = sent_calls(dict(body))
    answer = {
        "model": "mistral-large",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": calls[-1], "function": {"name": "f", "arguments": "{}"}}],
                },
            }
        ],
    }
    result = translate_response("mistral", answer, id_map=body.id_map)
    assert result.tool_calls[0].id == body.id_map[calls[-1]] and result.tool_calls[0].id.startswith("call")


# ---------------------------------------------------------------- a tiny alphabet: rewrites collide


TINY = 'tool_call_ids:\n  pattern: "^[ab]{2}$"\n  rewrite: {alphabet: ab, length: 2, collisions: %s}\n'


def tiny_rules(directory: Path, collisions: str) -> Path:
    """Mistral's rules with ids of two letters a and b: four ids in all, so rewrites collide (or, with `error`,
    are refused) and a fifth id has none."""
    text = (ROOT / "rules" / "mistral.yaml").read_text(encoding="utf-8")
    section = re.compile(r"^tool_call_ids:\n(?:  .*\n)+", re.MULTILINE)
    assert section.search(text) is not None
    (directory / "mistral.yaml").write_text(section.sub(TINY % collisions, text), encoding="utf-8")
    return directory


@pytest.fixture(scope="module", params=["rehash", "error"])
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Rulebook:
    return load_rules(tiny_rules(tmp_path_factory.mktemp(request.param), request.param))


def conversation(source: str, calls: list[str], answered: list[str]) -> dict[str, Any]:
    """One user turn, an assistant turn calling each of `calls`, then a result for each of `answered`."""
    if source == "openai-responses":
        items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        items += [{"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"} for i in calls]
        items += [{"type": "function_call_output", "call_id": i, "output": "ok"} for i in answered]
        return {"model": "m", "input": items}
    said = [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in calls]
    results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in answered]
    turns = [{"role": "user", "content": "go"}, {"role": "assistant", "content": said}]
    if results:
        turns.append({"role": "user", "content": results})
    return {"model": "m", "max_tokens": 9, "messages": turns}


IDS = st.lists(st.sampled_from(["aa", "ab", "ba", "bb", "x", "y", "z", "call_1"]), min_size=1, max_size=5, unique=True)


@SETTINGS
@given(source=st.sampled_from(SOURCES), calls=IDS, data=st.data())
def test_colliding_rewrites_are_todays_in_the_order_the_ids_are_first_met(
    tiny: Rulebook, source: str, calls: list[str], data: st.DataObject
) -> None:
    """Ids that fit taken first, the others rehashed past them in order of first appearance: the same ids as today's
    route, or its error where no id is free or a rewrite collides (the fused function raises: today's route runs)."""
    answered = data.draw(st.permutations(calls))[: data.draw(st.integers(0, len(calls)))]
    fmt, hits = tiny.format(source), []
    request = conversation(source, calls, answered)
    got = outcome(counted(fmt, "mistral", hits), "mistral", request, rules=tiny)
    assert got == outcome(without_fused(fmt), "mistral", request, rules=tiny)
    assert hits == ([True] if got[0] == "body" else [])


@pytest.mark.parametrize("source", SOURCES)
def test_the_scan_finds_the_ids_where_the_formats_templates_read_them(source: str) -> None:
    fmt = load_rules().format(source)
    keys = id_keys(fmt)
    assert keys is not None
    request = conversation(source, ["c1", "c2"], ["c2", "c1"])
    items = request["input" if source == "openai-responses" else "messages"]
    assert list(transcript_ids(items, keys)) == ["c1", "c2"]
