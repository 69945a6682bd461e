"""End to end: the client's cost over a raw POST of the same body through the same HTTP stack.

    python tools/bench_client.py [--stacks httpx,aiohttp] [--concurrency 1,32] [--requests 2000]
                                 [--seconds 2] [--rounds 5] [--provider NAME] [--messages N] [--split]
                                 [--answer demo|calls] [--stream] [--vs-aiohttp]

The README's client rows (10 messages, a 3-tool-call answer, every side, small batches; seven
rounds, since on a shared machine single rounds swing widely):
    python tools/bench_client.py --provider anthropic --messages 10 --answer calls --split --stream \
        --vs-aiohttp --requests 300 --seconds 1 --rounds 7

The provider stub runs in a separate process on 127.0.0.1 (a minimal asyncio HTTP/1.1
server answering canned bytes, so it costs little and takes no time from this process's
GIL). It answers every provider's endpoint path with that provider's first demo reply
(fixtures/demo/<provider>.json: text and a tool call), or with `--answer calls` the bench's
generated thinking + text + three parallel tool calls (tools/bench_inputs.py); its streaming
path with the same answer told as the provider's event stream (tests/support/sse_encoders.py).

For each HTTP stack (`toolnexus.http.transport`: aiohttp, the default, and httpx's own pool),
provider and concurrency level, one process alternates, round after round, between
  client:  `client.translate(messages, tools=...)` on a client built with `transport=STACK`;
  raw:     a POST of the very bytes that client sent (captured by the stub from one
           warm-up translate) on a plain client of that library (`httpx.AsyncClient`,
           `aiohttp.ClientSession`) with the same headers, then the JSON decoded: the least
           any caller of that stack does.
Each batch runs `--concurrency` lanes until `--requests` calls are done or `--seconds` have
passed. The table gives requests per second, p50/p99 latency per call (all rounds), and the
client's overhead: the median over rounds of (client time per call / raw time per call) - 1.

The request is one user turn declaring the demo's `add` tool, or with `--messages N` the
bench's generated N-message agent transcript (tools/bench_inputs.py) and its 20 tools.
`--split` adds a third side, the pure functions around the raw post (translate_request,
toolnexus.http.wire.dumps as the client serializes, the post, translate_response), to tell the
translation's share of the overhead from the client's own machinery (retries, hooks, events).
`--stream` adds `client.translate_stream` (every chunk, then `.result`) and the pure functions
around a raw streamed post on the same stack (translate_request, the post, httpx-sse's decoders
over the body's chunks, the `stream_translator`). `--vs-aiohttp` adds, on the httpx stack, the
pure functions around a post on aiohttp itself (on the aiohttp stack they are its `functions`
side): the yardstick for the default install's client.
A last section, targets, gives each client side over its pure-functions side (time per call,
median over rounds). Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import importlib.util
import json
import os
import platform
import random
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from importlib import metadata
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

import toolnexus
from toolnexus.devtools.conformance import demo_file
from toolnexus.http import wire
from toolnexus.http.transport import DEFAULT_STACK, STACKS

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_inputs import generated_responses, tool_declarations, transcript
from progress import progress
from spawned import spawned
from support.sse_encoders import ENCODERS, canonical  # test material: a response told as its provider's stream

KEY = "bench-key"
USER_TURN = [{"role": "user", "content": "What is 21 + 21? Use the add tool."}]
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}
CAPTURED = "/__captured"  # GET CAPTURED + path: the first body the stub received on that path
EVENT_STREAM = "text/event-stream"
STREAMED = b"SSE "  # replies[STREAMED + path]: the answer to a request that accepts an event stream


# ----------------------------------------------------------------- the stub (its own process)


class StubProtocol(asyncio.Protocol):
    """HTTP/1.1 with keep-alive and Content-Length bodies: all the two HTTP stacks send here."""

    def __init__(self, replies: dict[bytes, bytes], captured: dict[bytes, bytes]) -> None:
        self.replies = replies
        self.captured = captured
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buffer[:end]).lower()
            start = head.find(b"\r\ncontent-length:")
            length = 0
            if start >= 0:
                stop = head.find(b"\r\n", start + 2)
                length = int(head[start + 17 : stop if stop >= 0 else len(head)])
            if len(buffer) < end + 4 + length:
                return
            method, path, _ = bytes(buffer[: buffer.find(b"\r\n")]).split(b" ", 2)
            body = bytes(buffer[end + 4 : end + 4 + length])
            del buffer[: end + 4 + length]
            assert self.transport is not None
            streamed = b"\r\naccept: " + EVENT_STREAM.encode() in head  # the answer as an event stream
            self.transport.write(self.answer(method, STREAMED + path if streamed else path, body))

    def answer(self, method: bytes, path: bytes, body: bytes) -> bytes:
        if method == b"GET" and path.startswith(CAPTURED.encode()):
            return http_response(200, self.captured.get(path[len(CAPTURED) :], b""))
        reply = self.replies.get(path)
        if reply is None:
            return http_response(404, b'{"error": {"message": "no such path", "type": "not_found"}}')
        self.captured.setdefault(path, body)
        return reply


def http_response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\ncontent-type: {content_type}\r\n"
    return head.encode() + f"content-length: {len(body)}\r\n\r\n".encode() + body


def serve(replies: dict[bytes, bytes], pipe: Connection) -> None:
    """The stub process: listen, send the port, serve until the pipe says stop."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        captured: dict[bytes, bytes] = {}
        server = await loop.create_server(lambda: StubProtocol(replies, captured), "127.0.0.1", 0, backlog=1024)
        pipe.send(server.sockets[0].getsockname()[1])
        await loop.run_in_executor(None, pipe.recv)
        server.close()

    asyncio.run(main())


def stub_process(replies: dict[bytes, bytes]) -> AbstractContextManager[int]:
    """The stub in a separate process; its port."""
    return spawned(serve, replies)


def demo(provider: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(demo_file(provider).read_text("utf-8"))
    return data


def answer_for(provider: str, answer: str) -> dict[str, Any]:
    """The provider's answer: its first demo reply, or (`calls`) thinking + text + three tool calls."""
    if answer == "calls":
        reply: dict[str, Any] = generated_responses(tool_declarations())[provider]["3 tool calls"]
        return reply
    first: dict[str, Any] = demo(provider)["replies"][0]
    return first


def stub_replies(base_path: str, providers: Sequence[str], answer: str = "demo") -> dict[bytes, bytes]:
    """Each provider's endpoint path (under `base_path`) -> its answer as HTTP bytes; STREAMED + its
    streaming path -> the same answer as the provider's event stream."""
    replies = {}
    for provider in providers:
        model, reply = demo(provider)["model"], answer_for(provider, answer)
        rules = toolnexus.load_rules().get(provider)
        base = "http://stub" + base_path
        replies[rules.endpoint.url(base, model).raw_path] = http_response(200, json.dumps(reply).encode())
        streaming = rules.streaming
        if streaming is not None:
            events = b"".join(ENCODERS[provider](canonical(provider, reply), random.Random(1)))
            path = rules.endpoint.url(base, model, streaming.path).raw_path
            replies[STREAMED + path] = http_response(200, events, EVENT_STREAM)
    return replies


# ----------------------------------------------------------------- driving


@dataclass
class Side:
    name: str  # client | raw
    call: Callable[[], Awaitable[Any]]
    rates: list[float] = field(default_factory=list)  # requests per second, per round
    per_call: list[float] = field(default_factory=list)  # seconds per call, per round
    cpu_per_call: list[float] = field(default_factory=list)  # this process's CPU seconds per call, per round
    latencies: list[float] = field(default_factory=list)  # every call of every round


async def batch(
    call: Callable[[], Awaitable[Any]], requests: int, seconds: float, lanes: int
) -> tuple[float, list[float]]:
    """(elapsed, CPU seconds of this process, latencies) of up to `requests` calls with `lanes` in flight,
    stopping after `seconds`."""
    todo = iter(range(requests))
    latencies: list[float] = []
    started, cpu_started = time.perf_counter(), time.process_time()
    deadline = started + seconds

    async def lane() -> None:
        for _ in todo:
            if time.perf_counter() >= deadline:
                return
            begun = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - begun)

    await asyncio.gather(*(lane() for _ in range(lanes)))
    return time.perf_counter() - started, time.process_time() - cpu_started, latencies


@dataclass
class Row:
    stack: str
    provider: str
    concurrency: int
    client: Side
    raw: Side
    functions: Side | None = None  # --split: the pure functions around a raw post
    more: dict[str, Side] = field(default_factory=dict)  # --stream, --vs-aiohttp: by name

    def ratio(self, side: Side, over: Side) -> float:
        """Median over rounds of `side`'s time per call over `over`'s."""
        return statistics.median(a / b for a, b in zip(side.per_call, over.per_call, strict=True))

    def overheads(self) -> list[float]:
        return [c / r - 1 for c, r in zip(self.client.per_call, self.raw.per_call, strict=True)]

    def cpu_overheads(self, side: Side | None = None, over: Side | None = None) -> list[float]:
        """Per round: CPU per call of `side` (the client) over `over` (the raw post), minus 1."""
        this, that = side or self.client, over or self.raw
        return [c / r - 1 for c, r in zip(this.cpu_per_call, that.cpu_per_call, strict=True)]


async def bench_provider(
    stack: str, provider: str, base_url: str, levels: Sequence[int], args: argparse.Namespace
) -> list[Row]:
    script = demo(provider)
    model = script["model"]
    if args.messages:
        request = transcript(args.messages, tool_declarations())
        messages, tools = request["messages"], request["tools"]
    else:
        messages, tools = USER_TURN, [ADD_TOOL]
    rules = toolnexus.load_rules().get(provider)
    endpoint = rules.endpoint
    url = endpoint.url(base_url, model)  # parsed once, as the client does
    streaming = rules.streaming
    stream_url = endpoint.url(base_url, model, streaming.path) if streaming and streaming.path else url
    headers = {**endpoint.auth_headers(KEY), "content-type": "application/json"}
    client = toolnexus.create_client(base_url, provider, model, api_key=KEY, transport=stack, max_retries=0)
    raw = RawAiohttp(headers) if stack == "aiohttp" else RawHttpx(headers)
    session = RawAiohttp(headers) if args.vs_aiohttp and stack != "aiohttp" else None
    try:
        await client.translate(messages, tools=tools)  # the stub keeps this body: the raw side posts it
        captured = await raw.get(base_url.rsplit("/v1", 1)[0] + CAPTURED + url.raw_path.decode())
        if not captured:
            raise SystemExit(f"{provider}: the stub captured no body")

        async def via_client() -> None:
            await client.translate(messages, tools=tools)

        url_text, stream_text = str(url), str(stream_url)  # as the client holds them

        async def via_raw() -> None:
            await raw.post(url_text, captured)

        openai_request = {"model": model, "messages": messages, "tools": tools}

        async def via_functions() -> None:  # what the client does, minus its own machinery
            body = toolnexus.translate_request(provider, openai_request)
            data = await raw.post(url_text, wire.dumps(body))
            toolnexus.translate_response(provider, data, requested_model=model)

        async def via_stream() -> None:
            async with client.translate_stream(messages, tools=tools) as stream:
                async for _ in stream:
                    pass
                stream.result  # noqa: B018 -- the assembled result, as a caller reads it

        async def via_stream_functions() -> None:  # the pure functions around a raw streamed post
            body = {**toolnexus.translate_request(provider, openai_request), **(streaming.body if streaming else {})}
            translator = toolnexus.stream_translator(provider, requested_model=model)
            async for data in raw.stream(stream_text, wire.dumps(body)):
                translator.feed(data)
            translator.finish()

        async def via_aiohttp_functions() -> None:  # the pure functions around a post on aiohttp itself
            assert session is not None
            body = toolnexus.translate_request(provider, openai_request)
            data = await session.post(url_text, wire.dumps(body))
            toolnexus.translate_response(provider, data, requested_model=model)

        more = {}
        if args.stream:
            more |= {"stream": via_stream, "stream-functions": via_stream_functions}
        if session is not None:
            more["aiohttp-functions"] = via_aiohttp_functions
        rows = []
        n_sides = 2 + bool(args.split) + len(more)
        bar = progress(len(levels) * n_sides * (args.rounds + 1), f"{stack} {provider}", unit="batch")
        for level in levels:
            sides = [Side("client", via_client), Side("raw", via_raw)]
            if args.split:
                sides.append(Side("functions", via_functions))
            extra = [Side(name, call) for name, call in more.items()]
            sides += extra
            for side in sides:  # warm every pool up to this level
                await batch(side.call, max(50, 4 * level), args.seconds, level)
                bar.update()
            for round_no in range(args.rounds):
                turn = round_no % len(sides)
                for side in sides[turn:] + sides[:turn]:  # who goes first rotates every round
                    elapsed, cpu, latencies = await batch(side.call, args.requests, args.seconds, level)
                    side.cpu_per_call.append(cpu / len(latencies))
                    side.rates.append(len(latencies) / elapsed)
                    side.per_call.append(elapsed / len(latencies))
                    side.latencies += latencies
                    bar.update()
            functions = sides[2] if args.split else None
            rows.append(Row(stack, provider, level, sides[0], sides[1], functions, {s.name: s for s in extra}))
        bar.close()
        return rows
    finally:
        await raw.aclose()
        await client.aclose()
        if session is not None:
            await session.aclose()


class RawHttpx:
    """A plain httpx client with the client's headers: a post and its JSON, or a stream's SSE data."""

    def __init__(self, headers: dict[str, str]) -> None:
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(60.0))

    async def get(self, url: str) -> bytes:
        return (await self._client.get(url)).content

    async def post(self, url: str, content: bytes) -> Any:
        return json.loads((await self._client.post(url, content=content)).content)

    async def stream(self, url: str, content: bytes) -> Any:
        accept = {"accept": EVENT_STREAM}
        async with self._client.stream("POST", url, content=content, headers=accept) as response:
            async for data in sse_data(response.aiter_bytes()):
                yield data

    async def aclose(self) -> None:
        await self._client.aclose()


class RawAiohttp:
    """A plain aiohttp session (its defaults) with the client's headers, as RawHttpx."""

    def __init__(self, headers: dict[str, str]) -> None:
        import aiohttp

        self._session = aiohttp.ClientSession(headers=headers)

    async def get(self, url: str) -> bytes:
        async with self._session.get(url) as response:
            return await response.read()

    async def post(self, url: str, content: bytes) -> Any:
        async with self._session.post(url, data=content) as response:
            return json.loads(await response.read())

    async def stream(self, url: str, content: bytes) -> Any:
        async with self._session.post(url, data=content, headers={"accept": EVENT_STREAM}) as response:
            async for data in sse_data(response.content.iter_any()):
                yield data

    async def aclose(self) -> None:
        await self._session.close()


async def sse_data(chunks: Any) -> Any:
    """Each server-sent event's data, by httpx-sse's decoders over the body's chunks (as EventSource does)."""
    text, lines, events = codecs.getincrementaldecoder("utf-8")(), SSELineDecoder(), SSEDecoder()
    async for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            event = events.decode(line)
            if event is not None:
                yield event.data
    for line in lines.flush():
        event = events.decode(line)
        if event is not None:
            yield event.data


# ----------------------------------------------------------------- report


def quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def cells(side: Side) -> str:
    p50, p99 = quantile(side.latencies, 50) * 1000, quantile(side.latencies, 99) * 1000
    cpu = statistics.median(side.cpu_per_call) * 1e6
    return f"{statistics.median(side.rates):>7,.0f} {p50:>7.2f} {p99:>7.2f} {cpu:>6,.0f}"


def report(rows: Sequence[Row], args: argparse.Namespace, machine: str) -> None:
    workload = f"the {args.messages}-message transcript" if args.messages else "one user turn declaring one tool"
    print(f"toolnexus end to end: client.translate vs a raw POST of the same bytes through the same HTTP stack; "
          f"stub in its own process; {args.rounds} alternating rounds of up to {args.requests} calls or "
          f"{args.seconds:g} s; request: {workload}")  # fmt: skip
    print(f"machine: {machine}")
    print("req/s: median over rounds; p50/p99: milliseconds per call over all rounds; cpu: this process's CPU µs "
          "per call (median over rounds; the stub's is not in it)\noverhead: median over rounds of client/raw "
          "time per call - 1 [min, max]; cpu overhead: the same for CPU per call\n")  # fmt: skip
    header = (
        f"{'stack':<8} {'provider':<10} {'conc':>4} | {'client':>7} {'p50':>7} {'p99':>7} {'cpu':>6} | "
        f"{'raw':>7} {'p50':>7} {'p99':>7} {'cpu':>6} | {'overhead':>8} {'[min, max]':<15} {'cpu overhead':>12}"
    )
    print(f"{header}\n{'-' * len(header)}")
    for row in rows:
        overheads = row.overheads()
        spread = f"[{min(overheads):+.0%}, {max(overheads):+.0%}]"
        print(
            f"{row.stack:<8} {row.provider:<10} {row.concurrency:>4} | {cells(row.client)} | {cells(row.raw)} | "
            f"{statistics.median(overheads):>+8.1%} {spread:<15} {statistics.median(row.cpu_overheads()):>+12.1%}"
        )
    if any(row.functions is not None for row in rows):
        print("\nsplit (--split): functions = translate_request + wire.dumps + the raw post + translate_response;")
        print("translation = functions over raw, client machinery = client over functions (CPU per call)")
        for row in rows:
            if row.functions is None:
                continue
            translation = statistics.median(row.cpu_overheads(row.functions, row.raw))
            machinery = statistics.median(row.cpu_overheads(row.client, row.functions))
            print(f"  {row.stack:<8} {row.provider:<10} {row.concurrency:>4}: functions "
                  f"{statistics.median(row.functions.cpu_per_call) * 1e6:>6,.0f} µs cpu; translation "
                  f"{translation:>+6.1%}, client machinery {machinery:>+6.1%}")  # fmt: skip
    if any(row.more for row in rows):
        print("\nmore sides: stream = client.translate_stream; stream-functions = translate_request + raw streamed")
        print("post + httpx-sse + stream_translator; aiohttp-functions = the pure functions around an aiohttp post")
        for row in rows:
            for name, side in row.more.items():
                print(f"  {row.stack:<8} {row.provider:<10} {row.concurrency:>4} {name:<18} {cells(side)}")
    targets(rows)
    others = sorted({row.stack for row in rows} - {"httpx"})
    if others and any(row.stack == "httpx" for row in rows):
        print("\nstacks compared: req/s of each stack over httpx's own pool (median over rounds)")
        by_key = {(row.stack, row.provider, row.concurrency): row for row in rows}
        for (stack, provider, level), row in by_key.items():
            base = by_key.get(("httpx", provider, level))
            if stack == "httpx" or base is None:
                continue
            client = statistics.median(row.client.rates) / statistics.median(base.client.rates)
            raw = statistics.median(row.raw.rates) / statistics.median(base.raw.rates)
            print(f"  {stack} / httpx, {provider:<10} concurrency {level:>3}: client {client:.2f}x, raw {raw:.2f}x")


def targets(rows: Sequence[Row]) -> None:
    """Each client side over the pure functions it should be close to (time per call, median over rounds)."""
    lines = []
    for row in rows:
        where = f"  {row.stack:<8} {row.provider:<10} {row.concurrency:>4}"
        if row.functions is not None:
            ratio = row.ratio(row.client, row.functions)
            lines.append(f"{where} translate / functions (same stack)   {ratio:.2f}x  (target <= 1.2x)")
        stream, functions = row.more.get("stream"), row.more.get("stream-functions")
        if stream is not None and functions is not None:
            ratio = row.ratio(stream, functions)
            lines.append(f"{where} translate_stream / stream-functions  {ratio:.2f}x  (target <= 1.2x)")
        yardstick = row.functions if row.stack == "aiohttp" else None  # the pure functions around an aiohttp post
        if yardstick is not None and row.stack == DEFAULT_STACK:
            ratio = row.ratio(row.client, yardstick)
            lines.append(f"{where} default client / aiohttp-functions   {ratio:.2f}x  (target <= 1.25x at 32)")
    if lines:
        print(f"\ntargets (the default stack is {DEFAULT_STACK}):", *lines, sep="\n")


def machine_note() -> str:
    versions = ", ".join(f"{name} {version(name)}" for name in ("httpx", "aiohttp"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load}; {versions}"
    )


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def available_stacks(wanted: Sequence[str]) -> list[str]:
    out = []
    for stack in wanted:
        if stack == "aiohttp" and importlib.util.find_spec("aiohttp") is None:
            print("note: aiohttp is not installed; the aiohttp stack is left out (pip install aiohttp)",
                  file=sys.stderr)  # fmt: skip
            continue
        out.append(stack)
    return out


async def run(args: argparse.Namespace) -> int:
    providers = [args.provider] if args.provider else toolnexus.providers()
    levels = [int(x) for x in args.concurrency.split(",")]
    stacks = available_stacks(args.stacks.split(","))
    machine = machine_note()
    rows: list[Row] = []
    if args.vs_aiohttp and importlib.util.find_spec("aiohttp") is None:
        raise SystemExit("--vs-aiohttp needs aiohttp: pip install aiohttp")
    with stub_process(stub_replies("/v1", providers, args.answer)) as port:
        base_url = f"http://127.0.0.1:{port}/v1"
        for stack in stacks:
            for provider in providers:
                rows += await bench_provider(stack, provider, base_url, levels, args)
    report(rows, args, machine)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--stacks", default=",".join(STACKS), help="HTTP stacks, comma-separated (default: all)")
    parser.add_argument("--concurrency", default="1,32", help="calls in flight, comma-separated (default 1,32)")
    parser.add_argument("--requests", type=int, default=2000, help="most calls per batch (default 2000)")
    parser.add_argument("--seconds", type=float, default=2.0, help="most seconds per batch (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating client/raw rounds (default 5)")
    parser.add_argument("--provider", choices=toolnexus.providers(), help="one provider (default: every one)")
    parser.add_argument("--messages", type=int, default=0, help="send the generated N-message transcript")
    parser.add_argument(
        "--split", action="store_true", help="also time translate_request + wire.dumps + raw post + translate_response"
    )
    parser.add_argument("--answer", choices=("demo", "calls"), default="demo",
                        help="the stub's answer: the demo reply, or thinking + text + three tool calls")  # fmt: skip
    parser.add_argument(
        "--stream", action="store_true", help="also time translate_stream and the pure functions around a raw stream"
    )
    parser.add_argument(
        "--vs-aiohttp", action="store_true", help="also time the pure functions around a post on aiohttp itself"
    )
    args = parser.parse_args(argv)
    for name in args.stacks.split(","):
        if name not in STACKS:
            parser.error(f"unknown stack {name!r}; choose from {', '.join(STACKS)}")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
