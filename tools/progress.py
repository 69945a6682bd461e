"""Progress on stderr for the long tools (soak, benchmarks), so minutes of work are never silent.

A tqdm bar when tqdm is installed (it comes with the `dev` extra); without it, plain lines at
every tenth of the work, so the tools run with nothing but toolnexus installed. stdout keeps
only the results.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol


class Progress(Protocol):
    def update(self, n: int = 1) -> object: ...

    def close(self) -> None: ...


class PlainProgress:
    """The fallback: `desc: 30/100 (30%), 4.2s` each time another tenth is done, and at the end."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.done = max(total, 1), desc, 0
        self.started = time.perf_counter()
        self._next_tenth = 1

    def update(self, n: int = 1) -> None:
        self.done += n
        tenth = self.done * 10 // self.total
        if tenth >= self._next_tenth:
            self._next_tenth = tenth + 1
            self._line()

    def close(self) -> None:
        if self.done < self.total:
            self._line()

    def _line(self) -> None:
        seconds = time.perf_counter() - self.started
        percent = min(100, self.done * 100 // self.total)
        print(f"{self.desc}: {self.done}/{self.total} ({percent}%), {seconds:.1f}s", file=sys.stderr, flush=True)


def progress(total: int, desc: str, *, unit: str = "it") -> Progress:
    """A progress counter over `total` steps of `unit`; call update() per step and close() at the end."""
    try:
        from tqdm import tqdm
    except ImportError:
        return PlainProgress(total, desc)
    bar: Progress = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)
    return bar
