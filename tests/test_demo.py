"""The README's main job: `toolnexus demo` runs a two-turn exchange per provider, offline, then with an MCP tool."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
from pathlib import Path

import pytest

from toolnexus import load_rules, providers
from toolnexus.devtools.conformance import fixtures_dir
from toolnexus.devtools.demo import demo_provider, demo_stream, run_demo


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
