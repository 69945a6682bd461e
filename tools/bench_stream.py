"""The cost of `client.translate_stream` per event, against reading the same stream bare (httpx-sse for SSE).

    python tools/bench_stream.py [--events N] [--rounds R] [--clock wall|cpu] [--provider P] [--row ROW]
                                 [--source FORMAT] [--hand | --framings]

For each provider and row (a long text answer; parallel tool calls whose arguments arrive in many
pieces, or whole calls where the provider sends them whole; a long reasoning answer where the
rules stream reasoning), one answer of about N events (tests/support/sse_encoders.py tells it as
the provider's event stream) is served by the embedded ProviderStub in one write, so the stub
costs both sides the same. One process alternates, round after round, between:

  (a) `client.translate_stream(...)`: every OpenAI chunk, then `stream.result`;
  (b) a bare `httpx.AsyncClient.stream` POST of the same body read with
      `httpx_sse.EventSource(response).aiter_sse()`: every event, nothing else (a provider whose rules
      name another framing, Ollama's NDJSON or Bedrock's AWS event stream, is read by that framing's
      reader, http/framing.py, the least its stream takes to cut into events);
  (c) as (b), plus `json.loads` of each event's data: the least any consumer does;
  (d) `stream_translator().feed()` of every event's data, then `finish()` (no HTTP);
  (e) `json.loads` of the same data.

Source-format rows (`text (anthropic out)`, `tools (openai-responses out)`, ...): the same openai and
gemini streams with (a) `client.translate_stream(..., source=FORMAT)`, every Messages or Responses
event then `stream.message`, and (d) `stream_translator(provider, source=FORMAT).feed()`, the format's
events out; (b), (c) and (e) as above. `--source openai` keeps only the Chat Completions rows,
`--source anthropic` / `--source openai-responses` only that format's.

It prints microseconds per event for each side and the medians of the per-round ratios a/c
(target: 1.5x) and d/e (target: 2x). `--baseline CHECKOUT` runs every row under that checkout's engine
(e.g. `git archive main engine rules fixtures` unpacked) and under this one, one after the other, and
prints both ratios. `--clock cpu` times this thread's CPU (the stub answers from its own thread),
steadier on a shared machine. Nothing here asserts a speed.

`--framings` measures the stream framings instead (http/framing.py), each against SSE:

  (f) the framing alone: the same N small JSON events as SSE, NDJSON lines and AWS event-stream
      frames, read from memory in 16 KiB chunks into event data texts (no network, no translation);
  (g) end to end: `client.translate_stream` against the stub for the made-up providers of
      tests/framing_rules (`lines`: NDJSON, `frames`: the AWS event stream), each beside the same
      rule file with `framing: sse` serving the same events as SSE.

`--hand` times, for the rows tools/bench_baseline.py has a hand-written stream translator for (`HAND_STREAMS`),
the least such a translator does for the same rules (read each event, send what it can at once, translate the
answer rebuilt from the events at the end), beside (d) and (e), no HTTP: `feed` over the hand-written one says
what the rules' machinery costs, the hand-written one over `json.loads` what the translation itself must do.
Before anything is timed, its chunks and result (all but `notes`, as tools/bench.py) must equal the engine's.

Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import gc
import json
import platform
import random
import re
import statistics
import sys
import time
import urllib.parse
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource

from toolnexus import create_client, load_rules, providers, stream_translator, translate_response
from toolnexus.devtools.conformance import demo_file
from toolnexus.devtools.stub import ProviderStub, StubReply
from toolnexus.http.framing import framing
from toolnexus.http.limits import MAX_EVENT_BYTES
from toolnexus.http.transport import HttpxReply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_baseline import HAND_STREAMS  # beside this file
from progress import progress
from support.frames import aws_event
from support.sse_encoders import (  # test material: a response told as its provider's stream
    ENCODERS,
    canonical,
    data_of,
    events_reply,
    framing_of,
)

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


def _long_calls(prefix: str, events: int) -> list[dict[str, Any]]:
    """Four OpenAI-shaped tool calls with long arguments (Cohere's calls have the same shape)."""
    return [
        {"id": f"{prefix}{i}", "type": "function",
         "function": {"name": "add", "arguments": json.dumps({"a": 21, "note": _letters(events * 2, i)})}}
        for i in range(4)
    ]  # fmt: skip


# Test material per provider: the demo's first reply (text, then one tool call) made into parallel tool
# calls with long arguments, or into a long reasoning answer. Provider shapes, so they live here, not in
# the engine. Each gives (reply, cuts): the encoders cut every text into `cuts` + 1 pieces.
def tool_reply(provider: str, script: dict[str, Any], events: int) -> tuple[dict[str, Any], int] | None:
    reply = copy.deepcopy(script["replies"][0])
    if provider == "anthropic":
        calls = [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "add", "input": {"a": 21, "note": _letters(events * 2, i)}}
            for i in range(4)
        ]
        reply["content"] = [reply["content"][0], *calls]
        return reply, events // 4
    if provider == "bedrock":
        calls = [
            {
                "toolUse": {
                    "toolUseId": f"tooluse_{i}",
                    "name": "add",
                    "input": {"a": 21, "note": _letters(events * 2, i)},
                }
            }
            for i in range(4)
        ]
        reply["output"]["message"]["content"] = [reply["output"]["message"]["content"][0], *calls]
        return reply, events // 4
    if provider == "ollama":  # every call arrives whole, all in one line: no stream of calls to time
        return None
    if provider == "cohere":  # arguments in pieces, as Anthropic's; no tool plan (its pieces would make a row)
        message = reply["message"]
        message.pop("tool_plan", None)
        message["tool_calls"] = _long_calls("add_", events)
        return reply, events // 4
    if provider == "mistral":  # every call arrives whole, one per event (ids of 9 letters and digits)
        reply["choices"][0]["message"]["tool_calls"] = [
            {"id": f"c{i:08d}", "type": "function", "index": i,
             "function": {"name": "add", "arguments": json.dumps({"a": i, "b": 21})}}
            for i in range(events)
        ]  # fmt: skip
        return reply, 1
    if provider == "openai":
        message = reply["choices"][0]["message"]
        message["tool_calls"] = _long_calls("call_", events)
        return reply, events // 4
    if provider == "openai-responses":  # function_call output items, arguments in pieces
        reply["output"] = [
            {"id": f"fc_{i}", "type": "function_call", "call_id": call["id"], "name": "add",
             "arguments": call["function"]["arguments"], "status": "completed"}
            for i, call in enumerate(_long_calls("call_", events))
        ]  # fmt: skip
        return reply, events // 4
    assert provider == "gemini", f"no tool row for {provider}"
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
    if provider == "bedrock":
        said = {"reasoningText": {"text": _letters(events * 8), "signature": "c2lnbmF0dXJl"}}
        reply["output"]["message"]["content"] = [{"reasoningContent": said}, {"text": "42."}]
        return reply, events
    if provider == "ollama":
        reply["message"]["thinking"] = _letters(events * 8)
        return reply, events
    if provider == "cohere":
        thinking = {"type": "thinking", "thinking": _letters(events * 8)}
        reply["message"]["content"] = [thinking, {"type": "text", "text": "42."}]
        return reply, events
    if provider == "openai-responses":  # a reasoning item's summary text, then the message
        summary = [{"type": "summary_text", "text": _letters(events * 8)}]
        reply["output"] = [{"id": "rs_1", "type": "reasoning", "summary": summary}, *reply["output"]]
        return reply, events
    return None  # no reasoning field in the rules' response section


# each source family (variants stream as their parent)
ROWS = ("anthropic", "bedrock", "cohere", "gemini", "mistral", "ollama", "openai", "openai-responses")
PLAIN = "openai"  # the Chat Completions chunks, the rows above
# per source format, the providers whose streams are written out in it, and the rows timed
SOURCE_ROWS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "anthropic": (("gemini", "openai"), ("text", "tools", "reasoning")),
    "openai-responses": (("gemini", "openai"), ("text", "tools", "reasoning")),
}


def rows(provider: str, script: dict[str, Any], events: int) -> dict[str, tuple[dict[str, Any], int] | None]:
    return {
        "text": (long_reply(provider, script, events * 8), events),
        "tools": tool_reply(provider, script, events),
        "reasoning": reasoning_reply(provider, script, events),
    }


async def bench(
    provider: str,
    row: str,
    reply: dict[str, Any],
    cuts: int,
    model: str,
    args: argparse.Namespace,
    source: str = PLAIN,
) -> None:
    events = ENCODERS[provider](reply, random.Random(1), cuts=cuts)
    datas = [data_of(provider, event) for event in events]
    want = translate_response(provider, canonical(provider, reply))
    clock: Callable[[], float] = time.thread_time if args.clock == "cpu" else time.perf_counter
    framed = events_reply(provider, [b"".join(events)])
    framing_name = framing_of(provider)
    with ProviderStub(lambda request: framed) as stub:
        client = create_client(stub.base_url, provider, model, api_key=KEY)
        streaming = client._provider.streaming
        assert streaming is not None
        body = {**client.build_body(MESSAGES), **streaming.body}
        path = streaming.path or client._provider.endpoint.path
        url = stub.base_url.rstrip("/") + path.replace("{model}", urllib.parse.quote(model, safe=""))
        headers = {**client._provider.endpoint.auth_headers(KEY), "content-type": "application/json"}
        raw = httpx.AsyncClient(headers=headers)
        content = json.dumps(body, separators=(",", ":")).encode()
        counted = {"events": 0, "chunks": 0}

        async def via_client() -> None:
            stream = client.translate_stream(MESSAGES, source=source)
            chunks = 0
            async for _ in stream:
                chunks += 1
            assert stream.result.text == want.text and len(stream.result.tool_calls) == len(want.tool_calls)
            if source != PLAIN:  # the whole answer written in the format, as a caller of the stream reads it
                assert stream.message is not None
            counted["chunks"] = chunks

        async def via_sse(decode: bool) -> None:
            media = framing(framing_name).media_types[0]
            async with raw.stream("POST", url, content=content, headers={"accept": media}) as response:
                n = 0
                if framing_name == "sse":
                    async for event in EventSource(response).aiter_sse():
                        n += 1
                        if decode and event.data != "[DONE]":
                            json.loads(event.data)
                else:  # the framing's own reader: the bytes cut into event data texts
                    frames = framing(framing_name).read(
                        HttpxReply(response), MAX_EVENT_BYTES, client._provider.endpoint
                    )
                    async for data in frames:
                        n += 1
                        if decode:
                            json.loads(data)
                counted["events"] = n

        async def sse_only() -> None:
            await via_sse(False)

        async def sse_json() -> None:
            await via_sse(True)

        async def feed_only() -> None:
            translator = stream_translator(provider, source=source)
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
        label = row if source == PLAIN else f"{row} ({source} out)"
        bar = progress(args.rounds * len(sides), f"{provider} {label}", unit="stream")
        for r in range(args.rounds):
            order = list(sides.items())
            if r % 2:
                order.reverse()
            for name, side in order:
                gc.collect()  # the garbage of the side before is collected now, not charged to this one
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
        f"| {provider} | {label} | {n} | {per['translate_stream']:.1f} | {per['httpx-sse']:.1f}"
        f" | {per['httpx-sse+json']:.1f}"
        f" | {ratio('translate_stream', 'httpx-sse+json'):.2f}x | {per['feed']:.1f} | {per['json.loads']:.1f}"
        f" | {ratio('feed', 'json.loads'):.2f}x |",
        flush=True,
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
    frames = framing(framing_name).read(HttpxReply(response), MAX_EVENT_BYTES, endpoint)
    n = 0
    async for _ in frames:
        n += 1
    await frames.aclose()
    return n


def timed_rounds(sides: dict[str, Any], rounds: int, desc: str) -> dict[str, list[float]]:
    """`alternated` for coroutine functions, each run in its own event loop, with a progress bar."""
    bar = progress(rounds * len(sides), desc, unit="run")
    runs = {name: (lambda side=side: asyncio.run(side())) for name, side in sides.items()}
    times = alternated(runs, rounds, time.perf_counter, bar.update)
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


def compare(args: argparse.Namespace) -> None:
    """Each row timed by this bench under the baseline's engine and under this one, one after the other in
    one run (a child process each, so two versions of the package never share one), as one table."""
    import os
    import subprocess

    engines = {"before": str(Path(args.baseline).resolve() / "engine"),
               "after": str(Path(toolnexus_file()).resolve().parents[1])}  # fmt: skip
    print(
        f"before: {engines['before']}; after: {engines['after']}; median of {args.rounds} alternating rounds, "
        f"{args.clock} clock; translate_stream / (httpx-sse + json.loads) and feed / json.loads per event"
    )
    print("| provider | row | events | before | after | feed before | feed after |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for provider in args.provider or [p for p in providers() if p in ROWS]:
        for source in args.source or (PLAIN, *SOURCE_ROWS):
            for row in args.row or ("text", "tools", "reasoning"):
                if source != PLAIN and (provider not in SOURCE_ROWS[source][0] or row not in SOURCE_ROWS[source][1]):
                    continue
                named = row if source == PLAIN else f"{row} ({source} out)"  # the row's label in the table
                cells: dict[str, list[str]] = {}
                for label, engine in engines.items():
                    command = [sys.executable, __file__, "--events", str(args.events), "--rounds", str(args.rounds),
                               "--clock", args.clock, "--provider", provider, "--row", row,
                               "--source", source]  # fmt: skip
                    env = {**os.environ, "PYTHONPATH": engine}
                    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
                    line = next(line for line in out.splitlines() if line.startswith(f"| {provider} | {row}"))
                    cells[label] = [cell.strip() for cell in line.strip("|").split("|")]
                before, after = cells["before"], cells["after"]
                if after[2] == "-":
                    continue
                print(f"| {provider} | {named} | {after[2]} | {before[6]} | {after[6]} | {before[9]} | {after[9]} |",
                      flush=True)  # fmt: skip


def hand_rows(args: argparse.Namespace) -> None:
    """`--hand`: each row a hand-written stream translator covers, timed beside `feed` and `json.loads`."""
    print(f"Python {platform.python_version()} on {platform.machine()}; median of {args.rounds} alternating rounds,"
          f" {args.clock} clock; us per event; no HTTP")  # fmt: skip
    print("| provider | row | events | feed | hand-written | json.loads | feed / hand-written"
          " | hand-written / json.loads |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for provider, hand in HAND_STREAMS.items():
        if args.provider and provider not in args.provider:
            continue
        script = json.loads(demo_file(provider).read_text(encoding="utf-8"))
        for row, made in rows(provider, script, args.events).items():
            if made is None or (args.row and row not in args.row):
                continue
            datas = [data_of(provider, e) for e in ENCODERS[provider](made[0], random.Random(1), cuts=made[1])]
            if (differs := hand_differs(provider, datas, hand)) is not None:
                print(f"| {provider} | {row} | NOT THE SAME WORK: {differs} | | | | | |", flush=True)
                continue
            sides = {"feed": partial(feed_all, provider, datas), "hand": partial(hand, datas),
                     "json.loads": partial(loads_all, datas)}  # fmt: skip
            times = alternated(sides, args.rounds, time.thread_time if args.clock == "cpu" else time.perf_counter)
            per = {name: statistics.median(t) / len(datas) * 1e6 for name, t in times.items()}
            over = {name: statistics.median(x / y for x, y in zip(times[name], times[under], strict=True))
                    for name, under in (("feed", "hand"), ("hand", "json.loads"))}  # fmt: skip
            print(f"| {provider} | {row} | {len(datas)} | {per['feed']:.1f} | {per['hand']:.1f} | "
                  f"{per['json.loads']:.1f} | {over['feed']:.2f}x | {over['hand']:.2f}x |", flush=True)  # fmt: skip


def feed_all(provider: str, datas: list[str]) -> None:
    translator = stream_translator(provider)
    for data in datas:
        translator.feed(data)
    translator.finish()


def loads_all(datas: list[str]) -> None:
    for data in datas:
        if data != "[DONE]":
            json.loads(data)


def alternated(
    sides: dict[str, Callable[[], Any]], rounds: int, clock: Callable[[], float], done: Callable[[], Any] = lambda: None
) -> dict[str, list[float]]:
    """Each side once to warm up, then `rounds` rounds, every other one in reverse order (`done` after each run)."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for side in sides.values():
        side()
    for r in range(rounds):
        for name, side in list(sides.items()) if r % 2 == 0 else list(reversed(sides.items())):
            gc.collect()  # as in `bench`: each side pays only for the garbage it makes
            started = clock()
            side()
            times[name].append(clock() - started)
            done()
    return times


def hand_differs(provider: str, datas: list[str], hand: Callable[..., Any]) -> str | None:
    """Where the hand-written translator's chunks or result (but its notes) differ from the engine's, or None.
    `created` is the clock's where the provider sends none, so it is not compared."""
    translator = stream_translator(provider)
    chunks = [chunk for data in datas for chunk in translator.feed(data)] + translator.finish()
    their_chunks, their_result = hand(datas)
    if [{**c, "created": 0} for c in chunks] != [{**c, "created": 0} for c in their_chunks]:
        return "the chunks"
    if json.dumps([{**c, "created": 0} for c in chunks]) != json.dumps([{**c, "created": 0} for c in their_chunks]):
        return "the chunks' key order"
    ours = translator.result
    for name in (f.name for f in dataclasses.fields(ours) if f.name != "notes"):
        if getattr(ours, name) != getattr(their_result, name):
            return f"result.{name}"
    return None


def toolnexus_file() -> str:
    import toolnexus

    return str(toolnexus.__file__)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="events in each answer (about)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--framings", action="store_true", help="each stream framing against SSE instead")
    parser.add_argument("--hand", action="store_true", help="feed against a hand-written stream translator instead")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--provider", action="append", help="only these providers (repeatable)")
    parser.add_argument("--row", action="append", choices=("text", "tools", "reasoning"), help="only these rows")
    parser.add_argument(
        "--source", action="append", choices=(PLAIN, *SOURCE_ROWS), help="only these output formats (repeatable)"
    )
    parser.add_argument("--baseline", metavar="CHECKOUT", help="a checkout to compare with, row by row (before/after)")
    args = parser.parse_args(argv)
    if args.baseline:
        compare(args)
        return
    if args.hand:
        hand_rows(args)
        return
    if args.framings:
        print(f"Python {platform.python_version()} on {platform.machine()}; median of {args.rounds} alternating rounds")
        bench_framings_alone(args.events, args.rounds)
        bench_framings_end_to_end(args.events, args.rounds)
        return
    print(f"Python {platform.python_version()} on {platform.machine()}; median of {args.rounds} alternating rounds,"
          f" {args.clock} clock; us per event")  # fmt: skip
    columns = "translate_stream | httpx-sse | httpx-sse+json | ratio | feed | json.loads | ratio"
    print(f"| provider | row | events | {columns} |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for provider in args.provider or [p for p in providers() if p in ROWS]:
        script = json.loads(demo_file(provider).read_text(encoding="utf-8"))
        made_rows = rows(provider, script, args.events)
        for source in args.source or (PLAIN, *SOURCE_ROWS):
            for row, made in made_rows.items():
                if args.row and row not in args.row:
                    continue
                if source != PLAIN and (provider not in SOURCE_ROWS[source][0] or row not in SOURCE_ROWS[source][1]):
                    continue
                if made is None:
                    why = "the rules stream no reasoning" if row == "reasoning" else "every call arrives in one event"
                    print(f"| {provider} | {row} | - | ({why}) | | | | | | |")
                    continue
                asyncio.run(bench(provider, row, made[0], made[1], script["model"], args, source))


if __name__ == "__main__":
    main()
