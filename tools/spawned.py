"""A helper process for the tools: a local stub server that must not share this process's GIL."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def spawned(target: Callable[..., None], *args: Any) -> Iterator[Any]:
    """Run `target(*args, pipe)` in a spawned process and yield the first thing it sends on the pipe.

    On exit the pipe says "stop" and the process gets five seconds to end before it is killed.
    """
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=target, args=(*args, theirs), daemon=True)
    process.start()
    try:
        if not ours.poll(30):
            raise SystemExit(f"{getattr(target, '__name__', 'the helper')} did not start within 30 s")
        yield ours.recv()
    finally:
        ours.send("stop")
        process.join(5)
        if process.is_alive():
            process.kill()
