"""client.translate_stream: one streamed provider call; OpenAI chunks out as the provider's events arrive.

The body is the one `translate` would send, plus the rule file's `streaming.body`
(e.g. `stream: true`), sent to `streaming.path`. Around the call, the client's policy
with the changes a stream needs:

- retries (tenacity, as `translate`) only until the response headers arrive; once the
  stream has started nothing is retried, and a cut connection or a mid-stream error
  event is a ProviderError after the chunks already yielded (a connection lost after
  the provider's end event loses nothing);
- `before_llm` fires once before the call, `after_llm` once with the assembled
  provider response, one LLMEvent per call when the stream ends (ok, error or
  cancelled: a stream closed early counts as cancelled);
- `overall_timeout` bounds the wait for the stream to start (all attempts); the
  per-attempt `timeout` bounds each attempt to start and then every wait for the next
  event (a server dripping bytes that never make an event is not waited for);
- one event (all its lines) larger than `max_event_bytes` ends the stream with
  ProviderError kind too_large; an error body is read as `translate` reads it;
- setting `cancel` ends the stream at once, even mid-read, and closes the connection.

Events are cut from the bytes by the rule file's framing (framing.py: SSE by httpx-sse, NDJSON lines,
the AWS event stream by botocore) and translated by `stream.StreamTranslator`; the call's policy
(retries, deadlines, caps, the error map, scrubbing, hooks, events) is the call layer's (call.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Self, TypeVar

from ..errors import Cancelled, Note, StateError
from ..translate.formats import AnswerBody, SourceFormat
from ..translate.result import TranslateResult
from ..translate.stream import StreamTranslator
from ..translate.stream_code import Streaming
from .call import Caller, encode_body, with_request_notes
from .framing import Frames, framing
from .limits import WaitDeadline
from .transport import Reply, TransportFailure

T = TypeVar("T")
_LIVE = ("new", "open")  # states in which the stream may still call the provider


class TranslateStream:
    """`async for chunk in stream` gives OpenAI `chat.completion.chunk` dicts; then `stream.result`.

    Use it as `async with client.translate_stream(...) as stream:` (or call `aclose()`)
    when you may stop before the end: that closes the connection.
    """

    def __init__(self, caller: Caller, body: dict[str, Any], url: str, streaming: Streaming,
                 cancel: asyncio.Event | None, notes: tuple[Note, ...] = (),
                 id_map: Mapping[str, str] | None = None) -> None:  # fmt: skip
        self._caller = caller
        self._notes = notes  # the request's, carried onto the result
        self._body = body
        self._url = url
        self._translator = StreamTranslator(streaming, requested_model=caller.model, id_map=id_map)
        self._framing = framing(streaming.framing)
        self._cancel = cancel
        self._pending: deque[dict[str, Any]] = deque()
        self._state = "new"  # new -> open -> done | failed | closed
        self._response: Reply | None = None
        self._events: Frames | None = None  # the response's body cut into events (capped)
        self._result: TranslateResult | None = None
        self._scope: asyncio.Timeout | None = None
        self._deadline = WaitDeadline(caller.policy.timeout)  # for each wait for the next event
        self._watcher: asyncio.Future[None] | None = None
        self._started = time.perf_counter()
        self._attempts = 0
        self._sent = False
        self._end: Callable[[TranslateResult], list[dict[str, Any]]] | None = None  # the last events, from the result

    @property
    def result(self) -> TranslateResult:
        """The assembled TranslateResult: exactly what `translate` gives for the same answer (read before the end, a
        StateError)."""
        if self._result is None:
            raise StateError(f"stream.result is available once the stream is exhausted (it is {self._state})")
        return self._result

    @property
    def translator(self) -> StreamTranslator:
        """The stream's translator (a source format's events read what the answer so far says from it)."""
        return self._translator

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> dict[str, Any]:
        pending, cancel = self._pending, self._cancel
        while not pending or (cancel is not None and cancel.is_set() and self._state in _LIVE):
            if self._state not in _LIVE:
                if self._state == "done" and (end := self._end) is not None:  # once the rest is given
                    self._end = None
                    pending.extend(end(self.result))
                    continue
                raise StopAsyncIteration
            try:
                if cancel is not None and cancel.is_set():
                    raise Cancelled("the stream was cancelled by the caller's cancel event")
                events = self._events
                if events is not None and events.ready:  # an event already read: translated with no await
                    pending.extend(self._translator.feed(events.ready.popleft()))
                    continue
                await self._advance()
                continue
            except BaseException as exc:
                failure = await self._fail(exc)
            raise failure from None  # outside the handler: the cause (which may quote a header) is not even its context
        return pending.popleft()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop early: close the connection (an unfinished stream is reported as cancelled)."""
        self._pending.clear()
        if self._state == "open":
            self._state = "closed"
            await self._close()
            self._caller.emit(self._attempts, self._started, self._status(), {}, "cancelled", None)
        elif self._state == "new":
            self._state = "closed"

    # ------------------------------------------------------------ driving

    async def _advance(self) -> None:
        if self._state == "new":
            await self._open()
            return
        events = self._events
        assert events is not None
        if events.ready:  # decoded in the same read as an earlier event: no wait
            self._pending.extend(self._translator.feed(events.ready.popleft()))
            return
        following = anext(events, None)
        try:
            event = await self._deadline.wait(following if self._cancel is None else self._guarded(following, None))
        except TransportFailure:
            if not self._translator.ended:
                raise
            event = None  # the provider's end event had come: a connection lost after it loses nothing
        if event is not None:
            self._pending.extend(self._translator.feed(event))
            return
        if self._caller.policy.after_llm is not None:  # handed out only to a hook (which may change it)
            await self._caller.after(self._translator.assemble())
        self._pending.extend(self._translator.finish())
        assert self._translator.result is not None
        result = with_request_notes(self._translator.result, self._notes)
        self._result, self._state = result, "done"
        await self._close()
        self._caller.emit(self._attempts, self._started, self._status(), result.usage, "ok", None,
                          model=result.model, notes=result.notes)  # fmt: skip

    async def _open(self) -> None:
        caller = self._caller
        caller.check_open()
        content = encode_body(await caller.before(self._body))
        self._sent = True
        self._started = time.perf_counter()
        self._state = "open"
        if self._cancel is not None:
            self._watcher = asyncio.ensure_future(self._watch(self._cancel))
        policy = caller.policy
        if self._cancel is None and policy.timeout <= policy.overall_timeout:  # as translate: one timer
            response = await self._connect(content, started=self._started)  # the attempt's deadline ends it first
        else:
            response = await self._guarded(self._connect(content), policy.overall_timeout)
        self._response = response
        if not response.is_success:
            raise caller.http_error(await caller.read(response), self._attempts)
        if not self._framing.matches(response.headers.get("content-type", "")):
            read = await caller.read(response)
            caller.decode(read, self._attempts)  # the provider's error shape, or not JSON
            raise caller.not_a_stream(read, self._attempts, self._framing.media_types[0])
        self._events = self._framing.read(response, caller.policy.max_event_bytes, caller.endpoint)

    async def _connect(self, content: bytes, started: float | None = None) -> Reply:
        """The attempts to start the stream; `started`: the retries run under the overall timeout from then."""
        self._attempts = 1
        accept = self._framing.media_types[0]
        open_one = lambda: self._caller.open(self._url, content, accept)  # noqa: E731
        return await self._caller.attempts(open_one, self._count, started=started)

    def _count(self, number: int) -> None:
        self._attempts = number

    # ------------------------------------------------------------ cancel

    async def _guarded(self, call: Awaitable[T], timeout: float | None) -> T:
        """Await `call` where the cancel event (and `timeout`) can interrupt it, as asyncio.timeout does."""
        cancel = self._cancel
        if cancel is None and timeout is None:
            return await call
        try:
            async with asyncio.timeout(timeout) as scope:
                self._scope = scope
                try:
                    return await call
                finally:
                    self._scope = None
        except TimeoutError:
            if cancel is not None and cancel.is_set():
                raise Cancelled("the stream was cancelled by the caller's cancel event") from None
            raise

    async def _watch(self, cancel: asyncio.Event) -> None:
        await cancel.wait()
        if self._scope is not None:
            self._scope.reschedule(asyncio.get_running_loop().time())  # expire now: the await in progress ends

    # ------------------------------------------------------------ the end

    async def _fail(self, exc: BaseException) -> BaseException:
        """Close everything, report the call once, and give the error the caller sees."""
        error = self._caller.failure(exc, self._attempts, status=self._status(), response=self._response,
                                     stream=True, midway=self._events is not None)  # fmt: skip
        self._state = "failed"
        await self._close()
        if self._sent:  # a body that could not even be encoded made no call to report
            cancelled = isinstance(error, (Cancelled, asyncio.CancelledError))
            reported = error if isinstance(error, Exception) and not cancelled else None
            self._caller.emit(self._attempts, self._started, self._status(), {},
                               "cancelled" if cancelled else "error", reported)  # fmt: skip
        return error

    def _status(self) -> int | None:
        return self._response.status if self._response is not None else None

    async def _close(self) -> None:
        self._deadline.close()
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None
        events, self._events = self._events, None
        if events is not None:
            await events.aclose()
        if self._response is not None:
            await self._response.aclose()


class SourceEventStream(TranslateStream):
    """`async for event in stream` gives a source format's stream events (Anthropic `message_start` ...
    `message_stop`): a TranslateStream whose translator writes them (`StreamTranslator.into`), the format's
    closing events last (from `stream.result`); then `stream.result` and `stream.message` (the whole answer)."""

    def __init__(self, *args: Any, source: SourceFormat, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._source_events = self._translator.into(source)
        self._end = self._source_events.end

    @property
    def message(self) -> AnswerBody:
        """The whole answer in the format's shape, once the stream is exhausted (before, a StateError)."""
        if self._source_events.message is None:
            raise StateError(f"stream.message is available once the stream is exhausted (it is {self._state})")
        return self._source_events.message
