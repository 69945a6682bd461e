"""client.translate: OpenAI shapes in, exactly one provider call over httpx, OpenAI shapes out.

Nothing executes and nothing is remembered between calls. The body is exactly
what `translate_request` returns (then `request_params`, then `before_llm`);
the result is `translate_response` of the decoded answer. Around the one call:
retries (tenacity) on connection errors, timeouts, 408/409/429/5xx, honouring
retry-after; hooks that fire once; a cancel event; one `llm` event per call.
The API key lives only in the httpx client's default headers: it is never in an
error, a log line, an event, a repr or `raw`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from ..errors import Cancelled, ConfigError, Note, ProviderError, ToolnexusError, TranslationError, sided
from ..language import jsonsafe
from ..redact import chain_mentions, guard_logs
from ..toolkit.toolkit import Toolkit
from ..translate.endpoint import check_headers, excerpt
from ..translate.inbound import RequestBody
from ..translate.result import TranslateResult
from ..translate.rulebook import Provider, RulesArg, load_rules
from . import wire
from .limits import (
    MAX_EVENT_BYTES,
    MAX_RESPONSE_BYTES,
    MAX_RETRY_AFTER,
    AttemptTimeout,
    BodyError,
    check_cap,
    deadline,
    overall_default,
    read_body,
)
from .transport import TransportOption, async_client, transport_error

if TYPE_CHECKING:
    from .client_stream import TranslateStream

logger = logging.getLogger("toolnexus")

RETRY_STATUSES = frozenset({408, 409, 429})
REFUSED_PARAMS = frozenset({"messages", "tools", "stream"})
OWN_ARGUMENTS = frozenset({"model", "messages", "tools", "tool_choice", "max_tokens"})  # translate's own arguments
MIN_KEY_PREFIX = 8  # a key's leading characters this long or longer count as the key

BeforeLLM = Callable[[dict[str, Any]], "dict[str, Any] | Awaitable[dict[str, Any] | None] | None"]
AfterLLM = Callable[[dict[str, Any]], "Awaitable[None] | None"]


@dataclass(frozen=True)
class LLMEvent:
    """What one translate did, for observability. Holds no body, header or key."""

    provider: str
    model: str
    attempts: int
    latency_s: float
    status: int | None
    usage: dict[str, Any]
    outcome: str  # ok | error | cancelled
    error: str | None = None
    notes: tuple[Note, ...] = ()  # the request's notes, then the response's (when it was read), each with its side


def request_notes(body: dict[str, Any]) -> tuple[Note, ...]:
    """The notes of a translated request body, marked as the request's."""
    return sided(getattr(body, "notes", ()), "request")


def with_request_notes(result: TranslateResult, notes: tuple[Note, ...]) -> TranslateResult:
    """The result carrying both sides' notes: the request's first, then the response's (marked so)."""
    result.notes = (*notes, *sided(result.notes, "response"))
    return result


class _RetryableStatus(Exception):
    """A retryable HTTP status; carried through tenacity, mapped to ProviderError if it is the last."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response


async def _maybe_await(value: Any) -> Any:
    return await value if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future) else value


class Client:
    """Translates one OpenAI-shaped turn through one provider call. Safe to share across tasks.

    base_url: the provider's base URL; None (the default) takes the one its rule file names.
    style: any provider the rules define. api_key: explicit, else the env var the rule
    file names (ANTHROPIC_API_KEY, ...). A model name, key, header or base URL that cannot
    be sent as it is is a ConfigError here, before any request. system_prompt: the client-wide default, used
    only when neither the call nor the transcript gives one. timeout: seconds per attempt,
    a deadline for all of it (connect, headers, every byte); overall_timeout: for all attempts
    together, by default every attempt's timeout plus the longest retry-after honoured between
    them (300 s with the defaults). max_response_bytes: the most a body may hold once inflated;
    max_event_bytes: the most one streamed event (or line) may hold; beyond either the call
    fails with ProviderError kind too_large (see limits.py for the defaults). max_retries: extra attempts on
    connection errors, timeouts, 408/409/429/5xx (0 = exactly one attempt); backoff:
    (first delay, ceiling) in seconds, the provider's retry-after wins. request_params:
    merged into every body after translation (messages, tools and stream are refused).
    before_llm(body) may return a replacement body; after_llm(response) sees the decoded
    answer; on_event receives one LLMEvent per call. transport: an httpx transport, or
    "httpx" (the default pool) or "aiohttp" (httpx-aiohttp's pool, faster under concurrency;
    needs `toolnexus[aiohttp]`).
    """

    def __init__(
        self,
        base_url: str | None = None,
        style: str = "",
        model: str = "",
        api_key: str | None = None,
        *,
        system_prompt: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60.0,
        overall_timeout: float | None = None,
        max_retries: int = 2,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        backoff: tuple[float, float] = (0.5, 8.0),
        rules: RulesArg = None,
        before_llm: BeforeLLM | None = None,
        after_llm: AfterLLM | None = None,
        request_params: dict[str, Any] | None = None,
        on_event: Callable[[LLMEvent], None] | None = None,
        transport: TransportOption = None,
    ) -> None:
        missing = [name + "=" for name, value in (("style", style), ("model", model)) if not value]
        if missing:
            raise ConfigError(f"create_client needs {' and '.join(missing)}")
        if max_retries < 0:
            raise ConfigError("max_retries must be 0 or more")
        refused = REFUSED_PARAMS & set(request_params or {})
        if refused:
            raise ConfigError(f"request_params cannot set {', '.join(sorted(refused))}: translate owns them")
        self._provider: Provider = load_rules(rules).get(style)
        endpoint = self._provider.endpoint
        key = endpoint.resolve_key(api_key)
        check_headers(headers or {})
        self._url = endpoint.url(base_url, model)  # parsed once, not on every post; a bad model raises here
        streaming = self._provider.streaming
        self._stream_url = endpoint.url(base_url, model, streaming.path) if streaming and streaming.path else self._url
        self._redact = key  # only to scrub a provider that echoes the key back in an error body
        guard_logs(self, [key])  # ... or in a response header, which httpcore logs at DEBUG
        self.style = style
        self.model = model
        self.base_url = base_url if base_url is not None else endpoint.base_url
        self.system_prompt = system_prompt
        self.max_retries = max_retries
        self.timeout = timeout
        self.overall_timeout = overall_timeout if overall_timeout is not None else overall_default(timeout, max_retries)
        self.max_response_bytes = check_cap("max_response_bytes", max_response_bytes)
        self.max_event_bytes = check_cap("max_event_bytes", max_event_bytes)
        self._backoff = backoff
        self._before = before_llm
        self._after = after_llm
        self._params = dict(request_params or {})
        self._on_event = on_event
        self._http = async_client(
            transport,
            headers={**endpoint.auth_headers(key), **(headers or {}), "content-type": "application/json"},
            timeout=httpx.Timeout(timeout),
        )

    def __repr__(self) -> str:
        return f"Client(style={self.style!r}, model={self.model!r}, base_url={self.base_url!r}, api_key='***')"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the connection pool."""
        await self._http.aclose()

    # ------------------------------------------------------------ the call

    async def translate(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
    ) -> TranslateResult:
        """Exactly one provider call (retries aside): OpenAI messages in, a TranslateResult out.

        `params`: other OpenAI request fields for this call (reasoning_effort, response_format,
        temperature, ...), translated by the rules like the rest.
        """
        body = self.build_body(messages, tools=tools, toolkit=toolkit, tool_choice=tool_choice, system=system,
                               max_tokens=max_tokens, params=params)  # fmt: skip
        notes = request_notes(body)
        body = await self._before_llm(body)
        if cancel is None:
            return await self._send(body, notes)
        return await self._cancellable(self._send(body, notes), cancel)

    def translate_stream(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
    ) -> TranslateStream:
        """One streamed provider call: `async for chunk in stream` (OpenAI chunk dicts), then `stream.result`.

        Same parameters as `translate`; the body is translated now (a TranslationError raises here),
        the call starts on the first iteration. See client_stream.py for retries, hooks and cancel.
        """
        from .client_stream import TranslateStream

        streaming = self._provider.streaming
        if streaming is None:
            raise ConfigError(f"the {self.style} rules have no streaming section")
        body = self.build_body(messages, tools=tools, toolkit=toolkit, tool_choice=tool_choice, system=system,
                               max_tokens=max_tokens, params=params)  # fmt: skip
        notes = request_notes(body)
        return TranslateStream(self, {**body, **streaming.body}, self._stream_url, streaming, cancel, notes)

    async def _before_llm(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body `before_llm` returns (or the one given, when it returns None or there is no hook)."""
        if self._before is not None:
            replaced = await _maybe_await(self._before(body))
            if replaced is not None:
                return replaced  # type: ignore[no-any-return]
        return body

    def build_body(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        params: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The provider body translate would send (before `before_llm`): the pure translation + request_params."""
        clash = sorted(OWN_ARGUMENTS & set(params or ()))
        if clash:
            raise TranslationError(clash[0], "is an argument of translate, not a params entry", provider=self.style)
        request: dict[str, Any] = {**(params or {}), "model": self.model, "messages": messages}
        declared = (toolkit.to_openai() if toolkit is not None else []) + list(tools or [])
        if declared:
            request["tools"] = declared
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
        if max_tokens:
            request["max_tokens"] = max_tokens
        body = self._provider.inbound.translate(request, system=system, default_system=self.system_prompt)
        if self._params:
            merged = RequestBody({**body, **self._params})
            merged.notes = body.notes
            return merged
        return body

    async def _cancellable(self, call: Awaitable[TranslateResult], cancel: asyncio.Event) -> TranslateResult:
        task = asyncio.ensure_future(call)
        waiter = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            waiter.cancel()
        if task.cancelled():
            raise Cancelled("the call was cancelled by the caller's cancel event")
        return task.result()

    async def _send(self, body: dict[str, Any], notes: tuple[Note, ...] = ()) -> TranslateResult:
        content = encode_body(body)
        started = time.perf_counter()
        attempts = 0
        status: int | None = None
        leaked: ProviderError | None = None
        try:
            async with asyncio.timeout(self.overall_timeout):
                # The first attempt runs bare: tenacity's per-call bookkeeping (~0.1 ms) is paid only
                # when there is something to retry, and tenacity then sees this failure as attempt 1.
                attempts, failed = 1, None
                try:
                    response = await self._post(content)
                except Exception as exc:
                    if not (self.max_retries and _is_retryable(exc)):
                        raise
                    failed = exc
                if failed is not None:
                    async for attempt in self._retrying():
                        with attempt:
                            attempts = attempt.retry_state.attempt_number
                            if attempts == 1:
                                raise failed
                            response = await self._post(content)
            status = response.status_code
            data = self._decode(response, attempts)
            if self._after is not None:
                await _maybe_await(self._after(data))
            result = with_request_notes(self._provider.outbound.translate(data, requested_model=self.model), notes)
        except TimeoutError:
            error = ProviderError(
                f"no answer within the overall timeout of {self.overall_timeout} s",
                provider=self.style, kind="timeout", attempts=max(attempts, 1),
            )  # fmt: skip
            self._emit(attempts, started, status, {}, "error", error)
            raise error from None
        except _RetryableStatus as exc:
            error = self._http_error(exc.response, attempts)
            self._emit(attempts, started, exc.response.status_code, {}, "error", error)
            raise error from None
        except (httpx.TransportError, AttemptTimeout) as exc:
            error = transport_error(exc, self.style, attempts)
            self._emit(attempts, started, None, {}, "error", error)
            if not chain_mentions(exc, [self._redact]):
                raise error from exc
            leaked = error  # raised below, outside this block, so the cause quoting the key is not even its context
        except BodyError as exc:
            error = self.body_error(exc, attempts)
            self._emit(attempts, started, exc.response.status_code, {}, "error", error)
            raise error from None
        except asyncio.CancelledError:
            self._emit(attempts, started, status, {}, "cancelled", None)
            raise
        except ToolnexusError as exc:
            self._emit(attempts, started, status, {}, "error", exc)
            raise
        if leaked is not None:
            raise leaked from None
        self._emit(attempts, started, status, result.usage, "ok", None, model=result.model, notes=result.notes)
        return result

    def _retrying(self) -> AsyncRetrying:
        """The retry loop of one call: connection errors, timeouts and retryable statuses, with backoff."""
        return AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_is_retryable),
            reraise=True,
        )

    async def _post(self, content: bytes) -> httpx.Response:
        """One attempt under one deadline; the body read whole (inflated, capped) before it ends."""
        async with deadline(self.timeout):
            sent = await self._http.send(self._http.build_request("POST", self._url, content=content), stream=True)
            response = await read_body(sent, self.max_response_bytes)
        if response.status_code in RETRY_STATUSES or response.status_code >= 500:
            raise _RetryableStatus(response)
        return response

    def _decode(self, response: httpx.Response, attempts: int) -> dict[str, Any]:
        if not response.is_success:
            raise self._http_error(response, attempts)
        refused = ""  # why the body is not JSON toolnexus reads (set in the block; raised outside it, unchained)
        try:
            data = jsonsafe.loads(response.content)
        except jsonsafe.JsonValueError as exc:
            refused = f"JSON toolnexus refuses ({exc})"
        except ValueError:
            refused = "not JSON"
        if refused or not isinstance(data, dict):
            what = refused or "not a JSON object"
            raise ProviderError(
                f"the answer is {what}: {self._scrub(excerpt(self._scrub_bytes(response.content)))}",
                provider=self.style, kind="decode", status=response.status_code,
                request_id=self._request_id(response), attempts=attempts,
            )  # fmt: skip
        if self._provider.endpoint.carries_error(data):  # a 2xx whose body is the provider's error shape
            raise self._http_error(response, attempts)
        return data

    def body_error(self, exc: BodyError, attempts: int) -> ProviderError:
        """A body the client stopped reading (too large, or an encoding it cannot inflate)."""
        return ProviderError(exc.message, provider=self.style, kind=exc.kind, status=exc.response.status_code,
                             request_id=self._request_id(exc.response), attempts=attempts)  # fmt: skip

    def _http_error(self, response: httpx.Response, attempts: int) -> ProviderError:
        error_type, message = self._provider.endpoint.describe_error(self._scrub_bytes(response.content))
        message = self._scrub(message)
        return ProviderError(
            message, provider=self.style, kind="http", status=response.status_code, error_type=error_type,
            request_id=self._request_id(response), attempts=attempts,
        )  # fmt: skip

    def _scrub_bytes(self, content: bytes) -> bytes:
        """The body with the key blanked before any excerpt is cut from it (a cut could halve the key)."""
        return content.replace(self._redact.encode(), b"***") if self._redact else content

    def _scrub(self, text: str) -> str:
        """The API key never leaves in an error, even when the provider quotes it, whole or cut short."""
        if not self._redact:
            return text
        text = text.replace(self._redact, "***")
        for size in range(len(self._redact) - 1, MIN_KEY_PREFIX - 1, -1):  # a key cut off where a body ends
            prefix = self._redact[:size]
            if prefix in text:
                text = text.replace(prefix, "***")
        return text

    def _request_id(self, response: httpx.Response) -> str | None:
        """The provider's request id, scrubbed: a provider may echo anything in a header."""
        header = self._provider.endpoint.request_id_header
        value = response.headers.get(header) if header else None
        return self._scrub(value) if value is not None else None

    def _wait(self, state: RetryCallState) -> float:
        """Backoff before the next attempt: the server's retry-after if it gave one, else exponential + jitter."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _RetryableStatus):
            after = _retry_after(exc.response.headers)
            if after is not None:
                return after
        initial, ceiling = self._backoff
        delay: float = min(initial * 2 ** (state.attempt_number - 1), ceiling)
        return delay * (1 - 0.25 * random.random())

    def _emit(
        self,
        attempts: int,
        started: float,
        status: int | None,
        usage: dict[str, Any],
        outcome: str,
        error: Exception | None,
        *,
        model: str | None = None,
        notes: tuple[Note, ...] = (),
    ) -> None:
        event = LLMEvent(
            provider=self.style,
            model=model or self.model,
            attempts=attempts,
            latency_s=round(time.perf_counter() - started, 6),
            status=status,
            usage=usage,
            outcome=outcome,
            error=type(error).__name__ if error is not None else None,
            notes=notes,
        )
        if logger.isEnabledFor(logging.DEBUG):  # asdict + dumps cost more than a fast provider's answer
            logger.debug("llm %s", json.dumps(asdict(event)))
        if self._on_event is not None:
            self._on_event(event)


def encode_body(body: dict[str, Any]) -> bytes:
    """The body as compact UTF-8 JSON; a value JSON cannot carry is a TranslationError before any call."""
    try:
        return wire.dumps(body)
    except (TypeError, ValueError, RecursionError, MemoryError) as exc:
        found = jsonsafe.locate(body)  # translate refuses such input, so this is a hook's or a rule's doing
        where, what = found or ("", f"is not representable as JSON ({type(exc).__name__})")
        raise TranslationError(jsonsafe.where_in("body", where), f"the provider body {what}") from None


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, (_RetryableStatus, httpx.TransportError, AttemptTimeout))


def _retry_after(headers: httpx.Headers) -> float | None:
    """retry-after-ms (milliseconds) or retry-after (seconds); an HTTP date is not honoured."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if 0 <= seconds <= MAX_RETRY_AFTER:
            return seconds
    return None


create_client = Client
"""`create_client(base_url, style, model, api_key=None, **options)`: the API page's name for `Client(...)`."""
