"""The README's main job: `toolnexus demo` runs a two-turn exchange per provider, offline, then with an MCP tool."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import pytest

from support.messages import judge_event, judge_message
from toolnexus import load_rules, providers
from toolnexus.devtools.conformance import fixtures_dir
from toolnexus.devtools.demo import demo_provider, demo_source, demo_stream, run_demo


def test_demo_succeeds_for_every_provider() -> None:
    out = io.StringIO()
    assert asyncio.run(run_demo(out)) == 0, out.getvalue()
    text = out.getvalue()
    for name in providers():
        assert f"{name}: ok" in text
        assert f"{name} · turn 2" in text
        assert f"{name} (MCP): ok" in text
        if load_rules().get(name).streaming is None:  # no stream framing the engine reads yet (Bedrock's)
            continue
        streamed = text.split(f"{name} · turn 1 streamed")[1].split(f"{name}: ok")[0]
        assert '"tool_calls": [{"index": 0, "id": ' in streamed, "the tool call arrives as an indexed delta"
        assert "finish_reason=tool_calls" in streamed and "stream.result is exactly turn 1's result" in streamed
    assert "add as calc__add" in text
    assert text.count("the demo runs calc__add(") == len(providers())
    exchanges = source_exchanges()
    for exchange in exchanges:
        assert f"{exchange['source']} in, {exchange['provider']} out: ok" in text
    # counted like the others: each provider whole (its stream within) and with MCP, and each source exchange
    assert f"demo: {2 * len(providers()) + len(exchanges)} exchanges" in text


def source_exchanges() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((Path(fixtures_dir()) / "demo" / "sources").glob("*.json"))]


def test_a_messages_in_gemini_out_exchange_shows_the_messages_request_and_answer() -> None:
    """fixtures/demo/sources/ holds one: a Messages request in, Gemini's wire body, the Messages answer out."""
    exchange = next(e for e in source_exchanges() if (e["source"], e["provider"]) == ("anthropic", "gemini"))
    script = json.loads((Path(fixtures_dir()) / "demo" / "gemini.json").read_text())
    out = io.StringIO()
    assert asyncio.run(demo_source(exchange, script, out)) == []
    turn1, turn2, streamed = (
        out.getvalue().split("anthropic in, gemini out · turn 1\n")[1].split("anthropic in, gemini out · ")
    )
    request, rest = turn1.split("  gemini body on the wire")
    assert json.loads(request.split(":\n", 1)[1]) == [exchange["ask"]]
    answer = json.loads(rest.split("  anthropic answer out:\n")[1].split("  the demo runs")[0])
    judge_message(answer)  # the anthropic SDK's Message, strict
    assert answer["stop_reason"] == "tool_use" and answer["content"][-1]["type"] == "tool_use"
    history = json.loads(turn2.split("  anthropic request in (messages):\n")[1].split("  gemini body")[0])
    assert history[1] == {"role": "assistant", "content": answer["content"]}  # built from the answer alone
    assert history[2]["content"] == [
        {"type": "tool_result", "tool_use_id": answer["content"][-1]["id"], "content": "42"}
    ]
    wire = json.loads(turn2.split(":generateContent):\n")[1].split("  anthropic answer out")[0])
    assert wire["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "42"}
    final = json.loads(turn2.split("  anthropic answer out:\n")[1])
    judge_message(final)
    assert final["content"] == [{"type": "text", "text": "21 + 21 = 42."}] and final["stop_reason"] == "end_turn"
    events = [
        json.loads(line.removeprefix("  event: ")) for line in streamed.splitlines() if line.startswith("  event: ")
    ]
    for event in events:
        judge_event(event)
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert "stream.message is exactly turn 1's anthropic answer" in streamed


def test_a_source_exchange_fails_when_the_provider_never_asks_for_the_tool() -> None:
    exchange = source_exchanges()[0]
    script = json.loads((Path(fixtures_dir()) / "demo" / f"{exchange['provider']}.json").read_text())
    script["replies"] = [script["replies"][1]]  # answers at once, no tool call
    problems = asyncio.run(demo_source(exchange, script, io.StringIO()))
    assert problems and "turn 1 should ask for a tool" in problems[0]


def test_demo_without_the_mcp_extra_skips_that_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    out = io.StringIO()
    assert asyncio.run(run_demo(out)) == 0, out.getvalue()
    assert "MCP: skipped (pip install 'toolnexus[mcp]'" in out.getvalue()
    assert "(MCP): ok" not in out.getvalue()


def test_demo_fails_when_the_provider_never_asks_for_the_tool() -> None:
    script = json.loads((Path(fixtures_dir()) / "demo" / "anthropic.json").read_text())
    script["replies"] = [script["replies"][1]]  # answers at once, no tool call
    problems = asyncio.run(demo_provider("anthropic", script, io.StringIO()))
    assert problems and "turn 1 should ask for a tool" in problems[0]


def test_the_streamed_demo_fails_when_the_stream_is_not_the_same_answer() -> None:
    """fixtures/demo/<provider>.sse must tell reply 1: a stream of another answer is caught."""
    demo = Path(fixtures_dir()) / "demo"
    script = json.loads((demo / "openai.json").read_text())
    events = (demo / "openai.sse").read_bytes()
    assert events.count(b'"name": "add"') == 1
    problems = asyncio.run(
        demo_stream("openai", script, events.replace(b'"name": "add"', b'"name": "sub"'), io.StringIO())
    )
    assert problems == ["the streamed result differs from the whole answer's"]
