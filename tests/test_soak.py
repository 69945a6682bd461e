"""Load (issue 5): a bounded soak of one client at concurrency 100 against one local stub.

N translates (SOAK_N, default 3000) share ONE client. The stub echoes a marker it finds in
each request body into its reply's text (found generically: the string in the canned reply
that equals its translated text), so each result can be matched to its own request: no
cross-talk. tracemalloc's current memory after a warm-up is compared with the end of the run.
The stub runs in its own process: its threads neither contend for this process's GIL nor
show up in its tracemalloc figure.
tools/soak.py runs the same soak at a larger budget and compares latency with raw httpx.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
import tracemalloc
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import toolnexus
from support.faults import PROVIDERS, model, set_at, text_path, text_reply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import soak as soak_tool

MARKER, PLACEHOLDER = soak_tool.MARKER, soak_tool.PLACEHOLDER

SOAK_N = int(os.environ.get("SOAK_N", "3000"))
SOAK_PROVIDER = os.environ.get("SOAK_PROVIDER", PROVIDERS[0])
CONCURRENCY = 100
WARM_UP = 300
GROWTH_LIMIT = 20 * 1024 * 1024  # bytes: generous; a per-call leak of ~7 KB would cross it at N=3000


def echo_template(provider: str) -> str:
    """The canned text reply as JSON, its text set to 'echo <PLACEHOLDER>'."""
    reply = text_reply(provider)
    set_at(reply, text_path(provider, reply), f"echo {PLACEHOLDER}")
    return json.dumps(reply)


@contextmanager
def echo_stub(provider: str) -> Iterator[str]:
    """tools/soak.py's echo stub (in its own process) for this provider's reply shape."""
    with soak_tool.echo_stub(echo_template(provider)) as url:
        yield url


def marked_messages(marker: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"please repeat {marker} back"}]


@dataclass
class Tally:
    done: int = 0
    crossed: list[tuple[str, str]] = field(default_factory=list)  # (marker sent, text received), kept few


async def soak_batch(client: toolnexus.Client, count: int, tally: Tally) -> None:
    """`count` translates, CONCURRENCY in flight; each result checked against its own request."""
    markers = iter([f"soak-{uuid.uuid4().hex}" for _ in range(count)])

    async def lane() -> None:
        for marker in markers:
            result = await client.translate(marked_messages(marker))
            tally.done += 1
            if result.text != f"echo {marker}" and len(tally.crossed) < 10:
                tally.crossed.append((marker, result.text))

    await asyncio.gather(*(lane() for _ in range(CONCURRENCY)))


@pytest.mark.slow
def test_soak_one_client_concurrency_100_no_cross_talk_no_growth() -> None:
    provider = SOAK_PROVIDER
    tally = Tally()

    async def main(base_url: str) -> tuple[int, float, list[str]]:
        async with toolnexus.create_client(base_url, provider, model(provider), api_key="soak-key") as client:
            await soak_batch(client, WARM_UP, tally)
            gc.collect()
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                started = time.perf_counter()
                await soak_batch(client, SOAK_N - WARM_UP, tally)
                elapsed = time.perf_counter() - started
                gc.collect()
                growth = tracemalloc.get_traced_memory()[0] - base
            finally:
                tracemalloc.stop()
        current = asyncio.current_task()
        leftover = [repr(task) for task in asyncio.all_tasks() if task is not current]
        return growth, elapsed, leftover

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with echo_stub(provider) as base_url:
            growth, elapsed, leftover = asyncio.run(main(base_url))
        gc.collect()

    print(
        f"\nsoak {provider}: {SOAK_N} translates at concurrency {CONCURRENCY} on one client;"
        f" {(SOAK_N - WARM_UP) / elapsed:.0f}/s after warm-up (tracemalloc on);"
        f" tracemalloc growth after warm-up {growth / 1024:.1f} KiB"
    )
    assert tally.done == SOAK_N
    assert tally.crossed == [], f"results that did not match their own request: {tally.crossed}"
    assert growth < GROWTH_LIMIT, f"memory grew by {growth / 1024 / 1024:.1f} MiB over the soak"
    assert leftover == []
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
