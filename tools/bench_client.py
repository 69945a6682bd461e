"""The client's cost over a raw httpx POST of the same body, against the same local stub.

    python tools/bench_client.py [--requests N] [--concurrency 1,8,32] [--rounds R]

For each provider style and concurrency level, one process alternates, round after
round, between (a) `client.translate(messages, toolkit=...)` and (b) a bare
`httpx.AsyncClient.post` of the body translate would send, followed by `json.loads`
of the answer: the work any hand-rolled caller must do at least. Both hit the same
embedded ProviderStub (a threaded http.server on 127.0.0.1, which is itself a large
share of every request's time on two cores), with the same number of requests in
flight. It prints requests per second for each side and the median of the per-round
ratios. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from toolnexus import create_client, providers
from toolnexus.conformance import fixtures_dir
from toolnexus.demo import add
from toolnexus.stub import ProviderStub, scripted
from toolnexus.toolkit import Toolkit, define_tool

KEY = "bench-key"
MESSAGES = [{"role": "user", "content": "What is 21 + 21? Use the add tool."}]


async def run_batch(worker: Any, requests: int, concurrency: int) -> float:
    """Seconds to complete `requests` calls of `worker()` with `concurrency` in flight."""
    queue = iter(range(requests))

    async def lane() -> None:
        for _ in queue:
            await worker()

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return time.perf_counter() - started


async def bench_style(style: str, script: dict[str, Any], requests: int, levels: list[int], rounds: int) -> None:
    toolkit = Toolkit()
    toolkit.register(define_tool(add))
    reply = script["replies"][-1]
    with ProviderStub(scripted([reply])) as stub:
        limits = httpx.Limits(max_connections=max(levels), max_keepalive_connections=max(levels))
        client = create_client(stub.base_url, style, script["model"], api_key=KEY)
        body = client.build_body(MESSAGES, toolkit=toolkit)
        content = json.dumps(body, separators=(",", ":")).encode()
        url = stub.base_url.rstrip("/") + client._provider.endpoint.path
        headers = {**client._provider.endpoint.auth_headers(KEY), "content-type": "application/json"}
        raw = httpx.AsyncClient(headers=headers, limits=limits)

        async def via_client() -> None:
            await client.translate(MESSAGES, toolkit=toolkit)

        async def via_httpx() -> None:
            response = await raw.post(url, content=content)
            json.loads(response.content)

        await run_batch(via_client, 50, 4)  # warm both pools
        await run_batch(via_httpx, 50, 4)
        for level in levels:
            ratios, client_rps, raw_rps = [], [], []
            for r in range(rounds):
                order = [(via_client, client_rps), (via_httpx, raw_rps)]
                if r % 2:
                    order.reverse()
                times = {}
                for worker, sink in order:
                    seconds = await run_batch(worker, requests, level)
                    sink.append(requests / seconds)
                    times[worker] = seconds
                ratios.append(times[via_client] / times[via_httpx])
            print(
                f"{style:10} concurrency {level:3}   client {statistics.median(client_rps):7.0f} req/s"
                f"   raw httpx {statistics.median(raw_rps):7.0f} req/s"
                f"   time ratio client/raw {statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"
            )
        await raw.aclose()
        await client.aclose()


async def main_async(args: argparse.Namespace) -> None:
    levels = [int(x) for x in args.concurrency.split(",")]
    print(f"toolnexus client vs raw httpx, {args.requests} requests per batch, {args.rounds} rounds, one process")
    print(f"machine: CPython {platform.python_version()}, {platform.machine()}, httpx {httpx.__version__}")
    for style in providers():
        script = json.loads((Path(fixtures_dir()) / "demo" / f"{style}.json").read_text())
        await bench_style(style, script, args.requests, levels, args.rounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main_async(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
