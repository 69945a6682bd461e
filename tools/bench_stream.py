"""The cost of `client.translate_stream` per event, against reading the same SSE stream with httpx-sse alone.

    python tools/bench_stream.py [--events N] [--rounds R]

For each provider, one long answer (the demo's first reply with text, its text cut into
about N pieces; tests/support/sse_encoders.py tells it as the provider's event stream) is served
by the embedded ProviderStub in one write, so the stub costs both sides the same. One
process alternates, round after round, between:

  (a) `client.translate_stream(...)`: every OpenAI chunk, then `stream.result`;
  (b) a bare `httpx.AsyncClient.stream` POST of the same body read with
      `httpx_sse.EventSource(response).aiter_sse()`: every event, nothing else;
  (c) as (b), plus `json.loads` of each event's data: the least any consumer does.

It prints microseconds per event for each side, the overhead per event of (a) over
(b), and the median of the per-round ratios a/b and a/c. Nothing here asserts a speed.
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
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource

from toolnexus import create_client, providers, translate_response
from toolnexus.devtools.conformance import demo_file
from toolnexus.devtools.stub import ProviderStub, StubReply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from progress import progress  # beside this file
from support.sse_encoders import ENCODERS, canonical  # test material: a response told as its provider's stream

KEY = "bench-key"
MESSAGES = [{"role": "user", "content": "What is 21 + 21? Use the add tool."}]


def long_reply(provider: str, script: dict[str, Any], chars: int) -> dict[str, Any]:
    """The demo's first reply with text, its text made `chars` long."""
    reply = copy.deepcopy(next(r for r in script["replies"] if translate_response(provider, r).text))
    old = translate_response(provider, reply).text
    new = "".join(random.Random(0).choices("abcdefghij ", k=chars))

    def swap(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return new if value == old else value

    return canonical(provider, swap(reply))


async def bench(provider: str, events: int, rounds: int) -> None:
    script = json.loads(demo_file(provider).read_text(encoding="utf-8"))
    reply = long_reply(provider, script, events * 8)
    stream = b"".join(ENCODERS[provider](reply, random.Random(1), cuts=events))
    with ProviderStub(lambda request: StubReply(stream=[stream])) as stub:
        client = create_client(stub.base_url, provider, script["model"], api_key=KEY)
        streaming = client._provider.streaming
        assert streaming is not None
        body = {**client.build_body(MESSAGES), **streaming.body}
        path = streaming.path or client._provider.endpoint.path
        url = stub.base_url.rstrip("/") + path.replace("{model}", script["model"])
        headers = {**client._provider.endpoint.auth_headers(KEY), "content-type": "application/json"}
        raw = httpx.AsyncClient(headers=headers)
        content = json.dumps(body, separators=(",", ":")).encode()
        counted = {"events": 0, "chunks": 0}

        async def via_client() -> None:
            stream = client.translate_stream(MESSAGES)
            chunks = 0
            async for _ in stream:
                chunks += 1
            assert stream.result.text == translate_response(provider, reply).text
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

        sides = {"translate_stream": via_client, "httpx-sse": sse_only, "httpx-sse+json": sse_json}
        for side in sides.values():  # warm up
            await side()
        times: dict[str, list[float]] = {name: [] for name in sides}
        bar = progress(rounds * len(sides), provider, unit="stream")
        for r in range(rounds):
            order = list(sides.items())
            if r % 2:
                order.reverse()
            for name, side in order:
                started = time.perf_counter()
                await side()
                times[name].append(time.perf_counter() - started)
                bar.update()
        bar.close()
        await client.aclose()
        await raw.aclose()
    n = counted["events"]
    per = {name: statistics.median(t) / n * 1e6 for name, t in times.items()}
    ratio_raw = statistics.median(a / b for a, b in zip(times["translate_stream"], times["httpx-sse"], strict=True))
    ratio_json = statistics.median(
        a / b for a, b in zip(times["translate_stream"], times["httpx-sse+json"], strict=True)
    )
    ours, sse, sse_json = per["translate_stream"], per["httpx-sse"], per["httpx-sse+json"]
    print(
        f"{provider:10} {n:6} events -> {counted['chunks']:6} chunks | us/event: translate_stream {ours:7.1f}"
        f"  httpx-sse {sse:6.1f}  httpx-sse+json {sse_json:6.1f} | overhead {ours - sse:6.1f} us/event"
        f" | ratio vs httpx-sse {ratio_raw:5.2f}x, vs httpx-sse+json {ratio_json:5.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="text pieces in the answer (about one event each)")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(f"Python {platform.python_version()} on {platform.machine()}; median of {args.rounds} alternating rounds")
    for provider in providers():
        asyncio.run(bench(provider, args.events, args.rounds))


if __name__ == "__main__":
    main()
