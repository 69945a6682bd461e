"""Bounds on what the client reads from the network: body size, event size, attempt deadline.

HTTP stacks bound none of them: reading a response keeps the whole body, their decoders
inflate each network read whole (a 64 KiB read of a gzip bomb becomes 64 MiB), an SSE line
without a newline is buffered until the server closes, and a read timeout restarts with
every byte, so a server sending one byte a second is never too slow. Here the client reads
the raw bytes (transport.py hands them over undecoded), inflates them in steps of at most
`STEP` bytes, stops at a cap (closing the connection), and runs each attempt under one deadline.

Defaults, from what providers send: a non-streamed answer is text and tool calls (128k
output tokens are about 0.5 MB) plus, at most, inline images or audio as base64 (a few MB
each); `MAX_RESPONSE_BYTES` (64 MiB) leaves room for several of those and still bounds
memory. One streamed event is one delta, or at most one inline image: `MAX_EVENT_BYTES`
(16 MiB) bounds one SSE event (all its lines; so one line too) and one NDJSON line.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Iterator
from contextlib import aclosing
from typing import Any, TypeVar

from ..errors import ConfigError, ProviderErrorKind
from .transport import Reply

T = TypeVar("T")
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_EVENT_BYTES = 16 * 1024 * 1024
MAX_RETRY_AFTER = 60.0  # seconds: a longer retry-after is not honoured (the backoff applies)
STEP = 64 * 1024  # inflate at most this many bytes at a time
# A blank line (an event's end) is two line ends in a row, CRLF counting as one: each such pair holds one of these.
_BLANK_LINE = re.compile(rb"\n\n|\r\r|\n\r")


class BodyError(Exception):
    """The client stopped reading a body: `too_large` (over a cap) or `decode` (an encoding it cannot inflate).

    Carries the response, so the client can report its status and request id."""

    def __init__(self, kind: ProviderErrorKind, message: str, response: Reply) -> None:
        super().__init__(message)
        self.kind: ProviderErrorKind = kind
        self.message = message
        self.response = response


class AttemptTimeout(Exception):
    """One attempt ran past its deadline (retried like a transport timeout)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within the timeout of {seconds} s")
        self.seconds = seconds


def check_cap(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive number of bytes, got {value!r}")
    return value


def overall_default(timeout: float, max_retries: int) -> float:
    """Every attempt's full timeout plus the longest retry-after honoured between them."""
    return (max_retries + 1) * timeout + max_retries * MAX_RETRY_AFTER


class deadline:  # lower case: used as a function, `async with deadline(seconds):`
    """One deadline for everything inside (connect, headers, every byte of the body); AttemptTimeout after it.

    A class rather than an @asynccontextmanager: it runs once per attempt, and a generator costs more."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._scope = asyncio.timeout(seconds)

    async def __aenter__(self) -> None:
        await self._scope.__aenter__()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            await self._scope.__aexit__(kind, exc, tb)
        except TimeoutError:
            raise AttemptTimeout(self.seconds) from None


class WaitDeadline:
    """A deadline for each of many waits in a row (a stream's wait for its next event), on one timer.

    asyncio.timeout around every wait costs more than reading a small event; this timer is armed
    once and, when it fires during a wait that has time left, re-armed for that wait's end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[Any] | None = None  # the task waiting now, if any
        self._since = 0.0
        self._cancelling = 0
        self._expired = False

    async def wait(self, call: Awaitable[T]) -> T:
        """`await call`, or AttemptTimeout once it has waited `seconds`."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task, self._since, self._cancelling = task, loop.time(), task.cancelling()
        if self._timer is None:
            self._timer = loop.call_at(self._since + self.seconds, self._fire)
        try:
            return await call
        except asyncio.CancelledError:
            if self._expired:  # as asyncio.timeout: our cancel becomes a timeout, anyone else's stays a cancel
                self._expired = False
                if task.uncancel() <= self._cancelling:
                    raise AttemptTimeout(self.seconds) from None
            raise
        finally:
            self._task = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        if self._task is None:  # between waits: the next wait arms it again
            return
        due = self._since + self.seconds
        loop = asyncio.get_running_loop()
        if loop.time() >= due:
            self._expired = True
            self._task.cancel()
        else:
            self._timer = loop.call_at(due, self._fire)


async def read_body(response: Reply, cap: int) -> Reply:
    """`response` with its body read whole and inflated (`body`); more than `cap` bytes is a BodyError.

    The response is closed either way (unread, its connection is dropped, not reused)."""
    if response.body is not None:  # a transport may hand over a body it has read (httpx.MockTransport)
        if len(response.body) > cap:
            raise _too_large(response, cap)
        return response
    headers = response.headers
    length = headers.get("content-length", "")
    if "content-encoding" not in headers and length.isdigit() and int(length) <= cap:
        try:  # as it is, and no more than it says: HTTP stacks hold a body to its length
            response.body = await response.read()
        finally:
            await response.aclose()
        return response
    body = bytearray()
    try:
        async with aclosing(inflated(response)) as chunks:
            async for chunk in chunks:
                if len(body) + len(chunk) > cap:
                    raise _too_large(response, cap)
                body += chunk
    finally:
        await response.aclose()
    response.body = bytes(body)
    return response


class EventBytes:
    """`response`'s body inflated, chunk by chunk; an event (bytes since the last blank line) over `cap`
    is a BodyError, so neither one line nor one event is buffered beyond it.

    An iterator, not an async generator: closing it closes everything under it at once (nothing is
    left for the event loop to finalize later)."""

    def __init__(self, response: Reply, cap: int) -> None:
        self._response = response
        self._cap = cap
        self._chunks = inflated(response)
        self._since = 0  # bytes since the last event's end
        self._tail = b""  # the last bytes seen: a blank line may span two chunks

    def __aiter__(self) -> EventBytes:
        return self

    async def __anext__(self) -> bytes:
        chunk = await anext(self._chunks)
        text = self._tail + chunk  # the tail was counted already: a blank line may span two chunks
        counted, since = len(self._tail), self._since
        if since + len(chunk) <= self._cap:  # no event ending in this chunk can be over the cap (each is within
            # the open one and this chunk, as the tail was counted): only where the last one ends, found in C
            if last := deque(_BLANK_LINE.finditer(text), maxlen=1):
                counted, since = last[0].end(), 0
        else:
            for blank in _BLANK_LINE.finditer(text):  # every event that ends in this chunk
                self._check(since + blank.start() - counted)
                counted, since = blank.end(), 0
        self._since = since + len(text) - counted  # the event still open
        self._check(self._since)
        self._tail = text[-3:]
        return chunk

    def _check(self, size: int) -> None:
        if size > self._cap:
            message = f"one event is larger than max_event_bytes ({self._cap} bytes)"
            raise BodyError("too_large", message, self._response)

    async def aclose(self) -> None:
        try:
            await self._chunks.aclose()
        finally:
            await self._response.aclose()


async def inflated(response: Reply) -> AsyncGenerator[bytes, None]:
    """The body's bytes, inflated from its content-encoding at most STEP bytes at a time."""
    if response.body is not None:  # a transport may hand over a body it read and inflated (httpx.MockTransport)
        yield response.body
        return
    # as httpx does: the encodings the client asks for are undone, any other is taken as identity
    codecs = [name for name in response.headers.get("content-encoding", "").lower().replace(" ", "").split(",")
              if name in ("gzip", "x-gzip", "deflate")]  # fmt: skip
    if len(codecs) > 1:
        raise BodyError("decode", f"the answer is encoded {len(codecs)} times over: {', '.join(codecs)}", response)
    inflater = _Inflater(codecs[0], response) if codecs else None
    async with aclosing(response.chunks()) as raws:
        async for raw in raws:
            if inflater is None:
                yield raw
                continue
            for out in inflater.steps(raw):
                yield out
    if inflater is not None:
        for out in inflater.steps(b"", final=True):
            yield out


class _Inflater:
    """gzip or deflate (what httpx asks for), inflated in bounded steps: httpx's decoders inflate a read whole."""

    def __init__(self, encoding: str, response: Reply) -> None:
        self._encoding = encoding
        self._response = response
        self._zlib: Any = zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or zlib header, detected
        self._started = False

    def steps(self, data: bytes, *, final: bool = False) -> Iterator[bytes]:
        try:
            while data:
                out = self._step(data)
                data = self._zlib.unconsumed_tail
                if out:
                    yield out
            rest = self._zlib.flush() if final else b""  # what the last step held back: at most one window
            if rest:
                yield rest
        except zlib.error as exc:
            message = f"the answer's {self._encoding} encoding is broken ({exc})"
            raise BodyError("decode", message, self._response) from None

    def _step(self, data: bytes) -> bytes:
        try:
            out: bytes = self._zlib.decompress(data, STEP)
        except zlib.error:
            if self._started or self._encoding != "deflate":
                raise
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate sent without its zlib header
            out = self._zlib.decompress(data, STEP)
        self._started = True
        return out


def _too_large(response: Reply, cap: int) -> BodyError:
    return BodyError("too_large", f"the answer is larger than max_response_bytes ({cap} bytes)", response)
