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
(b), and the median of the per-round ratios a/b and a/c.

`--framings` measures the stream framings instead (http/framing.py), each against SSE:

  (d) the framing alone: the same N small JSON events as SSE, NDJSON lines and AWS event-stream
      frames, read from memory in 16 KiB chunks into event data texts (no network, no translation);
  (e) end to end: `client.translate_stream` against the stub for the made-up providers of
      tests/framing_rules (`lines`: NDJSON, `frames`: the AWS event stream), each beside the same
      rule file with `framing: sse` serving the same events as SSE.

Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import platform
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource

from toolnexus import create_client, load_rules, providers, translate_response
from toolnexus.devtools.conformance import fixtures_dir
from toolnexus.devtools.stub import ProviderStub, StubReply, aws_event
from toolnexus.http.framing import framing
from toolnexus.http.limits import MAX_EVENT_BYTES

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
    script = json.loads((Path(fixtures_dir()) / "demo" / f"{provider}.json").read_text(encoding="utf-8"))
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


# ---------------------------------------------------------------- framings

FRAMING_RULES = Path(__file__).resolve().parents[1] / "tests" / "framing_rules"
CHUNK = 16 * 1024


class _Memory(httpx.AsyncByteStream):
    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> Any:
        for i in range(0, len(self._data), CHUNK):
            yield self._data[i : i + CHUNK]


def encoded(framing: str, events: list[tuple[str, dict[str, Any]]]) -> bytes:
    """(type, payload) events as one framing's bytes; SSE and NDJSON carry {type: payload} as the event."""
    if framing == "aws-eventstream":
        return b"".join(aws_event(kind, payload) for kind, payload in events)
    texts = [json.dumps({kind: payload}, separators=(",", ":")) for kind, payload in events]
    if framing == "ndjson":
        return "".join(f"{text}\n" for text in texts).encode()
    return "".join(f"data: {text}\n\n" for text in texts).encode()


async def read_alone(framing_name: str, data: bytes, endpoint: Any) -> int:
    headers = {"content-type": framing(framing_name).media_types[0]}
    request = httpx.Request("POST", "http://127.0.0.1/")
    response = httpx.Response(200, headers=headers, stream=_Memory(data), request=request)
    frames = framing(framing_name).read(response, MAX_EVENT_BYTES, endpoint)
    n = 0
    async for _ in frames:
        n += 1
    await frames.aclose()
    return n


def timed_rounds(sides: dict[str, Any], rounds: int, desc: str) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in sides}
    for side in sides.values():  # warm up
        asyncio.run(side())
    bar = progress(rounds * len(sides), desc, unit="run")
    for r in range(rounds):
        for name, side in list(sides.items()) if r % 2 == 0 else list(reversed(sides.items())):
            started = time.perf_counter()
            asyncio.run(side())
            times[name].append(time.perf_counter() - started)
            bar.update()
    bar.close()
    return times


def bench_framings_alone(events: int, rounds: int) -> None:
    endpoint = load_rules(FRAMING_RULES).get("frames").endpoint
    stream = [("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": f"piece {i} "}}) for i in range(events)]
    data = {name: encoded(name, stream) for name in ("sse", "ndjson", "aws-eventstream")}
    for name, content in data.items():  # each framing reads every event, or the comparison means nothing
        assert asyncio.run(read_alone(name, content, endpoint)) == events, name
    sides = {name: (lambda name=name: read_alone(name, data[name], endpoint)) for name in data}
    times = timed_rounds(sides, rounds, "framings alone")
    sse = statistics.median(times["sse"]) / events * 1e6
    for name in data:
        per = statistics.median(times[name]) / events * 1e6
        print(f"framing alone  {name:16} {events:6} events | {per:6.2f} us/event | {per - sse:+6.2f} us/event vs sse")


def lines_events(chars: int, events: int) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    text = "".join(random.Random(0).choices("abcdefghij ", k=chars))
    step = max(1, chars // events)
    head = {"model": "m", "created_at": "2026-01-01T00:00:00Z"}
    out = [("", {**head, "message": {"role": "assistant", "content": text[i : i + step]}, "done": False})
           for i in range(0, chars, step)]  # fmt: skip
    last = {**head, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
            "prompt_eval_count": 3, "eval_count": len(out)}  # fmt: skip
    return {**last, "message": {"role": "assistant", "content": text}}, [*out, ("", last)]


def frames_stream(chars: int, events: int) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    text = "".join(random.Random(0).choices("abcdefghij ", k=chars))
    step = max(1, chars // events)
    usage = {"inputTokens": 3, "outputTokens": events, "totalTokens": 3 + events}
    out = [("messageStart", {"role": "assistant"})]
    out += [("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text[i : i + step]}})
            for i in range(0, chars, step)]  # fmt: skip
    out += [("contentBlockStop", {"contentBlockIndex": 0}), ("messageStop", {"stopReason": "end_turn"}),
            ("metadata", {"usage": usage, "metrics": {"latencyMs": 1}})]  # fmt: skip
    whole = {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": "end_turn",
             "usage": usage, "metrics": {"latencyMs": 1}}  # fmt: skip
    return whole, out


def as_sse_twin(provider: str, directory: Path) -> Path:
    """The made-up provider's rule file with `framing: sse` (its events' JSON unchanged)."""
    text = (FRAMING_RULES / f"{provider}.yaml").read_text(encoding="utf-8")
    (directory / f"{provider}.yaml").write_text(re.sub(r"framing: [a-z-]+", "framing: sse", text), encoding="utf-8")
    return directory


def bench_framings_end_to_end(events: int, rounds: int) -> None:
    bench_one_framing("lines", "ndjson", *lines_events(events * 8, events), rounds)
    bench_one_framing("frames", "aws-eventstream", *frames_stream(events * 8, events), rounds)


def bench_one_framing(provider: str, framing_name: str, whole: dict[str, Any],
                      stream: list[tuple[str, dict[str, Any]]], rounds: int) -> None:  # fmt: skip
    """translate_stream of one made-up provider in its framing, beside its SSE twin, from the same stub."""
    import tempfile

    if framing_name == "ndjson":  # NDJSON and its SSE twin carry the objects themselves
        texts = [json.dumps(payload, separators=(",", ":")) for _, payload in stream]
        native = "".join(f"{text}\n" for text in texts).encode()
        sse = "".join(f"data: {text}\n\n" for text in texts).encode()
    else:
        native, sse = encoded(framing_name, stream), encoded("sse", stream)
    current: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as twin_dir, ProviderStub(lambda request: current["reply"]) as stub:
        sides: dict[str, tuple[StubReply, Path]] = {
            framing_name: (reply_of(native, framing_name), FRAMING_RULES),
            "sse": (reply_of(sse, "sse"), as_sse_twin(provider, Path(twin_dir))),
        }

        def side(label: str) -> Any:
            async def run() -> None:
                reply, rules = sides[label]
                current["reply"] = reply
                client = create_client(stub.base_url, provider, "m", api_key=KEY, rules=rules)
                streamed = client.translate_stream(MESSAGES)
                async for _ in streamed:
                    pass
                assert streamed.result.text == translate_response(provider, whole, rules=rules).text
                await client.aclose()

            return run

        times = timed_rounds({label: side(label) for label in sides}, rounds, f"{provider} end to end")
    n = len(stream)
    sse_per = statistics.median(times["sse"]) / n * 1e6
    per = statistics.median(times[framing_name]) / n * 1e6
    print(f"translate_stream {provider:6} {framing_name:16} {n:6} events | {per:6.1f} us/event | the same rules "
          f"over sse {sse_per:6.1f} us/event | {per - sse_per:+6.1f} us/event")  # fmt: skip


def reply_of(data: bytes, framing_name: str) -> StubReply:
    return StubReply(stream=[data], headers={"Content-Type": framing(framing_name).media_types[0]})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="text pieces in the answer (about one event each)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--framings", action="store_true", help="each stream framing against SSE instead")
    args = parser.parse_args(argv)
    print(f"Python {platform.python_version()} on {platform.machine()}; median of {args.rounds} alternating rounds")
    if args.framings:
        bench_framings_alone(args.events, args.rounds)
        bench_framings_end_to_end(args.events, args.rounds)
        return
    for provider in providers():
        asyncio.run(bench(provider, args.events, args.rounds))


if __name__ == "__main__":
    main()
