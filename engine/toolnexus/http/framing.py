"""Stream framings: how a streamed answer's bytes become the events a rule file's `streaming` section reads.

`streaming.framing` names one; each turns the response body into event data texts, the JSON
objects `StreamTranslator.feed` dispatches on (the `events` table, the rebuild of the whole
response and the OpenAI chunks do not depend on the framing):

- `sse` (the default): server-sent events, parsed by httpx-sse; an event's `data`;
- `ndjson`: one JSON object a line (`\\n`, a trailing `\\r` is dropped; a last line without one counts);
- `aws-eventstream`: the AWS binary event stream (Bedrock's ConverseStream), decoded by botocore's
  `EventStreamBuffer` (the `bedrock` extra). An `event` frame becomes `{<its :event-type>: <its JSON
  payload>}`, the shape AWS SDKs give for a stream's events, so a rule file reads the type with
  `type: keys(@)[0]` and the payload under it. An `exception` frame (`:exception-type`, a JSON
  payload the `endpoint.error` paths read) or an `error` frame (`:error-code`, `:error-message`)
  raises ProviderError with that type and message; another message type is a decode error.

Every framing holds at most `max_event_bytes` of one event (SSE: its lines; NDJSON: its line; the event
stream: one frame), beyond which the stream ends with kind too_large, as the client's caps promise.
"""

from __future__ import annotations

import codecs
import json
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from httpx_sse._decoders import SSEDecoder, SSELineDecoder  # the decoders EventSource.aiter_sse runs, per line

from ..errors import ConfigError, ProviderError
from ..language.jsonsafe import loads
from ..translate.endpoint import Endpoint, excerpt
from .limits import BodyError, EventBytes, inflated
from .transport import Reply, TransportFailure

PRELUDE = 12  # bytes: an event-stream frame's prelude (total length, headers length, CRC)


class Frames:
    """An open stream's events: `await anext(frames, None)` gives each event's data text; `aclose()` ends it.
    `ready` holds events a framing already decoded from the same read, which a reader may take without
    awaiting (`anext` takes from it first)."""

    ready: deque[str]  # each stream's own (empty for a framing that does not decode ahead)

    def __aiter__(self) -> Frames:
        return self

    async def __anext__(self) -> str:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Framing:
    """One framing: the media types a stream of it comes as (the first is asked for) and its reader."""

    name: str
    media_types: tuple[str, ...]
    read: Callable[[Reply, int, Endpoint], Frames]
    needs: Callable[[], object] | None = None  # raises ConfigError naming the extra it needs, when missing

    def matches(self, content_type: str) -> bool:
        """Whether an answer's content type is a stream of this framing."""
        return any(media in content_type for media in self.media_types)


class _Sse(Frames):
    """Server-sent events, a read of bytes at a time: every event a read completes is decoded at once
    (httpx-sse's line and event decoders, as `aiter_sse` runs them) into `ready`, so a read bringing many
    events costs one await, not one per line or per event."""

    def __init__(self, response: Reply, cap: int, endpoint: Endpoint) -> None:
        self._body = EventBytes(response, cap)
        self.ready = deque()
        self._text = codecs.getincrementaldecoder(charset(response))(errors="replace")
        self._lines = SSELineDecoder()
        self._sse = SSEDecoder()
        self._ended = False

    async def __anext__(self) -> str:
        ready = self.ready
        while not ready and not self._ended:
            chunk = await anext(self._body, None)
            if chunk is None:  # as aiter_sse ends a body: a last event without its blank line is not one
                self._ended = True
                tail = self._text.decode(b"", final=True)
                lines = [*(self._lines.decode(tail) if tail else ()), *self._lines.flush()]
            else:
                text = self._text.decode(chunk)
                lines = self._lines.decode(text) if text else []
            decode = self._sse.decode
            for line in lines:
                event = decode(line)
                if event is not None:
                    ready.append(event.data)
        if not ready:
            raise StopAsyncIteration
        return ready.popleft()

    async def aclose(self) -> None:
        with suppress(TransportFailure, RuntimeError):  # the connection is closed either way
            await self._body.aclose()


def charset(response: Reply) -> str:
    """The text encoding a content type names (`; charset=...`), UTF-8 when it names none or an unknown one."""
    for part in response.headers.get("content-type", "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset":
            try:
                return codecs.lookup(value.strip().strip('"')).name
            except LookupError:
                break
    return "utf-8"


class _Inflated(Frames):
    """A framing that cuts the inflated body itself (within `cap`), and closes it and the connection."""

    def __init__(self, response: Reply, cap: int) -> None:
        self._response = response
        self._cap = cap
        self._chunks = inflated(response)
        self.ready = deque()

    async def aclose(self) -> None:
        with suppress(TransportFailure, RuntimeError):  # the connection is closed below either way
            await self._chunks.aclose()
        await self._response.aclose()


class _Lines(_Inflated):
    """NDJSON: the body cut at line ends as it arrives, every line a read completes decoded at once into
    `ready` (as `_Sse` does: a read bringing many lines costs one await); a line (or the unfinished one)
    over the cap stops it."""

    def __init__(self, response: Reply, cap: int, endpoint: Endpoint) -> None:
        super().__init__(response, cap)
        self._open = bytearray()  # the line still arriving
        self._ended = False

    async def __anext__(self) -> str:
        ready = self.ready
        while not ready:
            if self._ended:
                raise StopAsyncIteration
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                self._ended = True
                if self._open:
                    ready.append(self._open.rstrip(b"\r").decode("utf-8", "replace"))
                    self._open = bytearray()
                continue
            if b"\n" not in chunk:  # a long line in many reads grows in place, never copied whole per read
                self._open += chunk
                self._check(len(self._open))
                continue
            parts = chunk.split(b"\n")
            parts[0] = bytes(self._open) + parts[0]
            self._open = bytearray(parts.pop())
            for part in parts:
                self._check(len(part))
            self._check(len(self._open))
            ready.extend(part.rstrip(b"\r").decode("utf-8", "replace") for part in parts)
        return ready.popleft()

    def _check(self, size: int) -> None:
        if size > self._cap:
            message = f"one line is larger than max_event_bytes ({self._cap} bytes)"
            raise BodyError("too_large", message, self._response)


class _AwsEvents(_Inflated):
    """The AWS event stream: each frame decoded and checked by botocore as its bytes arrive.

    The buffer is given one frame at a time: first its 12-byte prelude (botocore checks its CRC and
    lengths), then, once the rest has arrived, the rest (botocore checks the message CRC and parses the
    headers). Given a whole network read, botocore's buffer would copy what follows each small frame
    once per frame; a frame larger than the cap is refused from its prelude, before it is read."""

    def __init__(self, response: Reply, cap: int, endpoint: Endpoint) -> None:
        super().__init__(response, cap)
        eventstream = aws_eventstream()
        self._errors: type[Exception] = eventstream.ParserError
        self._buffer = eventstream.EventStreamBuffer()
        self._lengths = eventstream.DecodeUtils.unpack_prelude
        self._endpoint = endpoint
        self._data = bytearray()  # bytes read and not yet given to the buffer, from `_at` on
        self._at = 0

    async def __anext__(self) -> str:
        buffer = self._buffer
        try:
            prelude = await self._take(PRELUDE, inside=False)
            buffer.add_data(prelude)
            next(buffer, None)  # the prelude checked: an incomplete frame gives None, a broken one raises
            (total, _, _), _ = self._lengths(prelude)
            if total > self._cap:
                raise BodyError("too_large", f"one frame is larger than max_event_bytes ({self._cap} bytes)",
                                self._response)  # fmt: skip
            buffer.add_data(await self._take(total - PRELUDE, inside=True))
            message = next(buffer)
        except self._errors as exc:
            raise BodyError("decode", f"the event stream is broken: {type(exc).__name__}", self._response) from None
        return self._event(message.headers, message.payload)

    async def _take(self, size: int, *, inside: bool) -> bytes:
        """The next `size` bytes of the body; StopAsyncIteration at its end between frames."""
        data = self._data
        while len(data) - self._at < size:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                if inside or len(data) > self._at:
                    what = "the event stream ended inside a frame"
                    raise BodyError("decode", what, self._response) from None
                raise
            if self._at:  # once per read: what was taken goes
                del data[: self._at]
                self._at = 0
            data += chunk
        piece = bytes(data[self._at : self._at + size])
        self._at += size
        return piece

    def _event(self, headers: dict[str, Any], payload: bytes) -> str:
        kind = headers.get(":message-type")
        if kind == "event":
            text = payload.decode("utf-8", "replace") if payload else "{}"
            return "{" + json.dumps(str(headers.get(":event-type", ""))) + ":" + text + "}"
        provider = self._endpoint.provider
        if kind == "exception":
            error_type = str(headers.get(":exception-type", "")) or None
            try:
                described = self._endpoint.error_in(loads(payload))
            except ValueError:
                described = None
            message = described[1] if described else f"unreadable exception: {excerpt(payload)}"
            raise ProviderError(message, provider=provider, kind="http", error_type=error_type)
        if kind == "error":
            error_type = str(headers.get(":error-code", "")) or None
            raise ProviderError(str(headers.get(":error-message", "")), provider=provider, kind="http",
                                error_type=error_type)  # fmt: skip
        raise ProviderError(f"an event stream frame of unknown message type {kind!r}", provider=provider,
                            kind="decode")  # fmt: skip


def aws_eventstream() -> Any:
    """botocore's event-stream module (the `bedrock` extra), or a ConfigError naming the extra."""
    try:
        from botocore import eventstream
    except ImportError:
        raise ConfigError(
            "the AWS event stream (streaming.framing: aws-eventstream) needs botocore: pip install 'toolnexus[bedrock]'"
        ) from None
    return eventstream


FRAMINGS: dict[str, Framing] = {
    "sse": Framing("sse", ("text/event-stream",), _Sse),
    "ndjson": Framing("ndjson", ("application/x-ndjson", "application/ndjson", "application/jsonl"), _Lines),
    "aws-eventstream": Framing(
        "aws-eventstream", ("application/vnd.amazon.eventstream",), _AwsEvents, needs=aws_eventstream
    ),
}


def framing(name: str) -> Framing:
    """The framing a rule file names (the loader's schema admits only these); a ConfigError when the
    extra it needs is not installed, before any request."""
    found = FRAMINGS[name]
    if found.needs is not None:
        found.needs()
    return found
