"""Soak one client at high concurrency against a local echo stub; compare with raw httpx.

    python tools/soak.py [--requests 20000] [--concurrency 100] [--provider NAME] [--rounds 4]

The stub (toolnexus.devtools.stub.ProviderStub, in its own process so it neither contends for this
process's GIL nor shows in its tracemalloc figure) answers every request with the provider's
canned text reply from fixtures/demo/<provider>.json, its text set to a marker it found in
the request body. Three measurements, all on ONE client / ONE httpx.AsyncClient:

1. latency and throughput of `client.translate(messages)` vs a raw `httpx.AsyncClient.post`
   of the same provider bodies (json.dumps, post, response.json()), alternating in rounds
   so drift hits both sides alike; printed as ratios (translate / raw);
2. cross-talk: every translate's text must carry its own request's marker;
3. tracemalloc's current memory after a warm-up vs after --requests more translates
   (a separate pass: tracemalloc slows every allocation, so it stays out of the latencies).

Nothing here asserts; tests/test_soak.py is the bounded, asserting version.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import platform
import re
import statistics
import sys
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from multiprocessing.connection import Connection
from typing import Any

import httpx

import toolnexus
from progress import Progress, progress
from spawned import spawned
from toolnexus.devtools.conformance import fixtures_dir
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest

KEY = "soak-key"
MARKER = re.compile(r"soak-[0-9a-f]{32}")
PLACEHOLDER = "@@soak-marker@@"


# ----------------------------------------------------------------- the echo stub (provider-neutral)


def walk(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, (*path, index))


def echo_template(provider: str) -> tuple[str, str]:
    """(model, the canned text-only reply as JSON with its text set to 'echo PLACEHOLDER')."""
    demo = json.loads((fixtures_dir() / "demo" / f"{provider}.json").read_text("utf-8"))
    for reply in demo["replies"]:
        result = toolnexus.translate_response(provider, reply)
        if result.text and not result.tool_calls:
            [where] = [path for path, value in walk(reply) if value == result.text]
            node = reply
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = f"echo {PLACEHOLDER}"
            return str(demo.get("model", "m")), json.dumps(reply)
    raise SystemExit(f"fixtures/demo/{provider}.json has no text-only reply")


def serve_echo(template: str, pipe: Connection) -> None:
    def respond(request: StubRequest) -> StubReply:
        found = MARKER.search(json.dumps(request.body))
        return StubReply(body=template.replace(PLACEHOLDER, found.group() if found else "no-marker").encode())

    stub = ProviderStub(respond)
    stub.requests = collections.deque(maxlen=1)  # type: ignore[assignment]  # keep no history
    with stub:
        pipe.send(stub.base_url)
        pipe.recv()


def echo_stub(template: str) -> AbstractContextManager[str]:
    """The echo stub in its own process; its base URL."""
    return spawned(serve_echo, template)


# ----------------------------------------------------------------- driving


def messages_for(marker: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"please repeat {marker} back"}]


Call = Callable[[str], Awaitable[bool]]


async def drive(
    call: Call, markers: list[str], concurrency: int, bar: Progress | None = None
) -> tuple[float, list[float], int]:
    """(seconds, per-call latencies, mismatches) for one call per marker, `concurrency` in flight."""
    pending = iter(markers)
    latencies: list[float] = []
    mismatches = 0

    async def lane() -> None:
        nonlocal mismatches
        for marker in pending:
            started = time.perf_counter()
            matched = await call(marker)
            latencies.append(time.perf_counter() - started)
            mismatches += not matched
            if bar is not None:
                bar.update()

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies, mismatches


def new_markers(count: int) -> list[str]:
    return [f"soak-{uuid.uuid4().hex}" for _ in range(count)]


def quantile(latencies: list[float], q: int) -> float:
    return statistics.quantiles(latencies, n=100, method="inclusive")[q - 1]


async def main(args: argparse.Namespace) -> None:
    provider = args.provider
    model, template = echo_template(provider)
    endpoint = toolnexus.load_rules().get(provider).endpoint
    with echo_stub(template) as base_url:
        client = toolnexus.create_client(base_url, provider, model, api_key=KEY)
        raw = httpx.AsyncClient(headers={**endpoint.auth_headers(KEY), "content-type": "application/json"})
        url = endpoint.url(base_url, model)
        bodies: dict[str, dict[str, Any]] = {}

        async def via_translate(marker: str) -> bool:
            result = await client.translate(messages_for(marker))
            return result.text == f"echo {marker}"

        async def via_raw(marker: str) -> bool:
            content = json.dumps(bodies[marker], ensure_ascii=False, separators=(",", ":")).encode()
            response = await raw.post(url, content=content)
            return marker in json.dumps(response.json())

        def prepare(markers: list[str]) -> None:
            bodies.clear()
            bodies.update({marker: client.build_body(messages_for(marker)) for marker in markers})

        per_round = max(1, args.requests // args.rounds)
        bar = progress(2 * args.warm_up + 2 * per_round * args.rounds + args.memory_requests, "soak", unit="req")

        # warm both pools
        for call in (via_translate, via_raw):
            warm = new_markers(args.warm_up)
            prepare(warm)
            await drive(call, warm, args.concurrency, bar)

        # 1 + 2: latency, throughput, cross-talk; the sides alternate round by round
        seconds = {"translate": 0.0, "raw": 0.0}
        latencies: dict[str, list[float]] = {"translate": [], "raw": []}
        mismatches = {"translate": 0, "raw": 0}
        for r in range(args.rounds):
            sides = [("translate", via_translate), ("raw", via_raw)]
            for name, call in sides if r % 2 == 0 else sides[::-1]:
                markers = new_markers(per_round)
                prepare(markers)
                spent, lat, bad = await drive(call, markers, args.concurrency, bar)
                seconds[name] += spent
                latencies[name] += lat
                mismatches[name] += bad

        # 3: memory, in its own pass
        memory_markers = new_markers(args.memory_requests)  # made before tracing: the script's own data
        bodies.clear()
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        spent, traced_latencies, bad = await drive(via_translate, memory_markers, args.concurrency)
        del traced_latencies  # the script's own data, not the client's
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - base
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        mismatches["translate"] += bad
        bar.update(args.memory_requests)  # counted after the traced pass, so the bar is not in its figure
        bar.close()

        await client.aclose()
        await raw.aclose()

    total = per_round * args.rounds
    print(f"soak: provider {provider}, {total} requests per side at concurrency {args.concurrency}, "
          f"{args.rounds} alternating rounds, one client each; stub in its own process")  # fmt: skip
    print(f"python {platform.python_version()}, httpx {httpx.__version__}, {platform.machine()}")
    print(f"{'':18}{'req/s':>9}{'p50 ms':>10}{'p99 ms':>10}")
    figures = {}
    for name in ("translate", "raw"):
        rate = total / seconds[name]
        p50, p99 = quantile(latencies[name], 50) * 1000, quantile(latencies[name], 99) * 1000
        figures[name] = (rate, p50, p99)
        label = "client.translate" if name == "translate" else "raw httpx post"
        print(f"{label:18}{rate:9.0f}{p50:10.1f}{p99:10.1f}")
    (t_rate, t50, t99), (r_rate, r50, r99) = figures["translate"], figures["raw"]
    print(f"ratios translate/raw: throughput {t_rate / r_rate:.2f}x, p50 latency {t50 / r50:.2f}x, "
          f"p99 latency {t99 / r99:.2f}x")  # fmt: skip
    print(f"cross-talk: {mismatches['translate']} of {total + args.memory_requests} translates did not carry "
          f"their own request's marker (raw: {mismatches['raw']} of {total})")  # fmt: skip
    print(f"tracemalloc over {args.memory_requests} more translates after warm-up: current "
          f"{growth / 1024:+.1f} KiB, peak {peak / 1024 / 1024:.1f} MiB ({args.memory_requests / spent:.0f} req/s "
          f"with tracemalloc on)")  # fmt: skip


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20000, help="translates (and raw posts) to time")
    parser.add_argument("--concurrency", type=int, default=100, help="calls in flight")
    parser.add_argument("--provider", default=toolnexus.providers()[0], choices=toolnexus.providers())
    parser.add_argument("--rounds", type=int, default=4, help="alternating translate/raw rounds")
    parser.add_argument("--warm-up", type=int, default=500, help="untimed calls per side first")
    parser.add_argument("--memory-requests", type=int, help="translates in the tracemalloc pass (default: --requests)")
    args = parser.parse_args(argv)
    if args.memory_requests is None:
        args.memory_requests = args.requests
    return args


if __name__ == "__main__":
    asyncio.run(main(parse(sys.argv[1:])))
