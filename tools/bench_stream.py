"""The cost of `client.translate_stream` per event, against reading the same SSE stream with httpx-sse alone.

    python tools/bench_stream.py [--events N] [--rounds R] [--clock wall|cpu] [--provider P] [--row ROW]

For each provider and row (a long text answer; parallel tool calls whose arguments arrive in many
pieces, or whole calls where the provider sends them whole; a long reasoning answer where the
rules stream reasoning), one answer of about N events (tests/support/sse_encoders.py tells it as
the provider's event stream) is served by the embedded ProviderStub in one write, so the stub
costs both sides the same. One process alternates, round after round, between:

  (a) `client.translate_stream(...)`: every OpenAI chunk, then `stream.result`;
  (b) a bare `httpx.AsyncClient.stream` POST of the same body read with
      `httpx_sse.EventSource(response).aiter_sse()`: every event, nothing else;
  (c) as (b), plus `json.loads` of each event's data: the least any consumer does;
  (d) `stream_translator().feed()` of every event's data, then `finish()` (no HTTP);
  (e) `json.loads` of the same data.

It prints microseconds per event for each side and the medians of the per-round ratios a/c
(target: 1.5x) and d/e (target: 2x). `--clock cpu` times this thread's CPU (the stub answers from
its own thread), steadier on a shared machine. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource

from toolnexus import create_client, providers, stream_translator, translate_response
from toolnexus.devtools.conformance import fixtures_dir
from toolnexus.devtools.stub import ProviderStub, StubReply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from progress import progress  # beside this file
from support.sse_encoders import ENCODERS, canonical  # test material: a response told as its provider's stream

KEY = "bench-key"
MESSAGES = [{"role": "user", "content": "What is 21 + 21? Use the add tool."}]


def _swap(value: Any, old: Any, new: Any) -> Any:
    if isinstance(value, dict):
        return {k: _swap(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    return new if value == old else value


def _letters(chars: int, seed: int = 0) -> str:
    return "".join(random.Random(seed).choices("abcdefghij ", k=chars))


def long_reply(provider: str, script: dict[str, Any], chars: int) -> dict[str, Any]:
    """The demo's first reply with text, its text made `chars` long."""
    reply = copy.deepcopy(next(r for r in script["replies"] if translate_response(provider, r).text))
    return canonical(provider, _swap(reply, translate_response(provider, reply).text, _letters(chars)))


# Test material per provider: the demo's first reply (text, then one tool call) made into parallel tool
# calls with long arguments, or into a long reasoning answer. Provider shapes, so they live here, not in
# the engine. Each gives (reply, cuts): the encoders cut every text into `cuts` + 1 pieces.
def tool_reply(provider: str, script: dict[str, Any], events: int) -> tuple[dict[str, Any], int]:
    reply = copy.deepcopy(script["replies"][0])
    if provider == "anthropic":
        calls = [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "add", "input": {"a": 21, "note": _letters(events * 2, i)}}
            for i in range(4)
        ]
        reply["content"] = [reply["content"][0], *calls]
        return reply, events // 4
    if provider == "openai":
        message = reply["choices"][0]["message"]
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "add", "arguments": json.dumps({"a": 21, "note": _letters(events * 2, i)})}}
            for i in range(4)
        ]  # fmt: skip
        return reply, events // 4
    parts = reply["candidates"][0]["content"]["parts"]  # gemini: every call arrives whole, one or more per event
    parts[1:] = [{"functionCall": {"name": "add", "args": {"a": i, "b": 21}}} for i in range(events)]
    return reply, 1


def reasoning_reply(provider: str, script: dict[str, Any], events: int) -> tuple[dict[str, Any], int] | None:
    reply = copy.deepcopy(script["replies"][1])
    if provider == "anthropic":
        thinking = {"type": "thinking", "thinking": _letters(events * 8), "signature": "c2lnbmF0dXJl"}
        reply["content"] = [thinking, {"type": "text", "text": "42."}]
        return reply, events
    if provider == "gemini":
        reply["candidates"][0]["content"]["parts"] = [{"text": _letters(events * 8), "thought": True}, {"text": "42."}]
        return reply, events
    return None  # no reasoning field in the rules' response section


def rows(provider: str, script: dict[str, Any], events: int) -> dict[str, tuple[dict[str, Any], int] | None]:
    return {
        "text": (long_reply(provider, script, events * 8), events),
        "tools": tool_reply(provider, script, events),
        "reasoning": reasoning_reply(provider, script, events),
    }


def data_of(stream: bytes) -> list[str]:
    """Each event's data (the encoders write one data line per event)."""
    return [line[6:] for line in stream.decode().splitlines() if line.startswith("data: ")]


async def bench(
    provider: str, row: str, reply: dict[str, Any], cuts: int, model: str, args: argparse.Namespace
) -> None:
    stream = b"".join(ENCODERS[provider](reply, random.Random(1), cuts=cuts))
    datas = data_of(stream)
    want = translate_response(provider, canonical(provider, reply))
    clock: Callable[[], float] = time.thread_time if args.clock == "cpu" else time.perf_counter
    with ProviderStub(lambda request: StubReply(stream=[stream])) as stub:
        client = create_client(stub.base_url, provider, model, api_key=KEY)
        streaming = client._provider.streaming
        assert streaming is not None
        body = {**client.build_body(MESSAGES), **streaming.body}
        path = streaming.path or client._provider.endpoint.path
        url = stub.base_url.rstrip("/") + path.replace("{model}", model)
        headers = {**client._provider.endpoint.auth_headers(KEY), "content-type": "application/json"}
        raw = httpx.AsyncClient(headers=headers)
        content = json.dumps(body, separators=(",", ":")).encode()
        counted = {"events": 0, "chunks": 0}

        async def via_client() -> None:
            stream = client.translate_stream(MESSAGES)
            chunks = 0
            async for _ in stream:
                chunks += 1
            assert stream.result.text == want.text and len(stream.result.tool_calls) == len(want.tool_calls)
            counted["chunks"] = chunks

        async def via_sse(decode: bool) -> None:
            async with raw.stream("POST", url, content=content, headers={"accept": "text/event-stream"}) as response:
                n = 0
                async for event in EventSource(response).aiter_sse():
                    n += 1
                    if decode and event.data != "[DONE]":
                        json.loads(event.data)
                counted["events"] = n

        async def sse_only() -> None:
            await via_sse(False)

        async def sse_json() -> None:
            await via_sse(True)

        async def feed_only() -> None:
            translator = stream_translator(provider)
            for data in datas:
                translator.feed(data)
            translator.finish()

        async def loads_only() -> None:
            for data in datas:
                if data != "[DONE]":
                    json.loads(data)

        sides = {"translate_stream": via_client, "httpx-sse": sse_only, "httpx-sse+json": sse_json,
                 "feed": feed_only, "json.loads": loads_only}  # fmt: skip
        for side in sides.values():  # warm up
            await side()
        times: dict[str, list[float]] = {name: [] for name in sides}
        bar = progress(args.rounds * len(sides), f"{provider} {row}", unit="stream")
        for r in range(args.rounds):
            order = list(sides.items())
            if r % 2:
                order.reverse()
            for name, side in order:
                started = clock()
                await side()
                times[name].append(clock() - started)
                bar.update()
        bar.close()
        await client.aclose()
        await raw.aclose()
    n = counted["events"]
    per = {name: statistics.median(t) / n * 1e6 for name, t in times.items()}

    def ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    print(
        f"| {provider} | {row} | {n} | {per['translate_stream']:.1f} | {per['httpx-sse']:.1f}"
        f" | {per['httpx-sse+json']:.1f}"
        f" | {ratio('translate_stream', 'httpx-sse+json'):.2f}x | {per['feed']:.1f} | {per['json.loads']:.1f}"
        f" | {ratio('feed', 'json.loads'):.2f}x |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="events in each answer (about)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--provider", action="append", help="only these providers (repeatable)")
    parser.add_argument("--row", action="append", choices=("text", "tools", "reasoning"), help="only these rows")
    args = parser.parse_args()
    print(f"Python {platform.python_version()} on {platform.machine()}; median of {args.rounds} alternating rounds,"
          f" {args.clock} clock; us per event")  # fmt: skip
    columns = "translate_stream | httpx-sse | httpx-sse+json | ratio | feed | json.loads | ratio"
    print(f"| provider | row | events | {columns} |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for provider in args.provider or providers():
        script = json.loads((Path(fixtures_dir()) / "demo" / f"{provider}.json").read_text(encoding="utf-8"))
        for row, made in rows(provider, script, args.events).items():
            if args.row and row not in args.row:
                continue
            if made is None:
                print(f"| {provider} | {row} | - | (the rules stream no reasoning) | | | | | | |")
                continue
            asyncio.run(bench(provider, row, made[0], made[1], script["model"], args))


if __name__ == "__main__":
    main()
