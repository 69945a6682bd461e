"""The one provider call's policy, which `translate` and `translate_stream` both run through.

A `Caller` owns, for one client: the HTTP stack (transport.py), retries (tenacity) on
connection errors, timeouts and 408/409/429/5xx honouring retry-after, each attempt's
deadline and the read caps (limits.py), the one map from what went wrong to a
ProviderError, the API key scrubbed from whatever a provider echoes (redact.py), the
`before_llm`/`after_llm` hooks and one LLMEvent per call. It knows nothing of
translation: `translate` hands it bytes and a function for the decoded answer; the
stream drives its own reading through the public methods here.
The API key lives only in the HTTP client's default headers: it is never in an error,
a log line, an event, a repr or `raw`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from ..errors import Note, ProviderError, ProviderErrorKind, StateError, ToolnexusError, TranslationError, sided
from ..language import jsonsafe
from ..redact import chain_mentions, guard_logs
from ..translate.endpoint import Endpoint, excerpt
from ..translate.result import TranslateResult
from . import wire
from .auth import Signer, signer_for
from .limits import MAX_RETRY_AFTER, AttemptTimeout, BodyError, deadline, read_body
from .transport import Outgoing, Reply, TransportFailure, TransportOption, transport_for

logger = logging.getLogger("toolnexus")
T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 409, 429})
JSON = "application/json"
# the encodings limits.py inflates (in bounded steps); httpx would also ask for br and zstd when installed
ACCEPT_ENCODING = "gzip, deflate"
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


@dataclass(frozen=True)
class Policy:
    """What a Caller does around each call: the client's timeouts, retries, caps and hooks."""

    timeout: float
    overall_timeout: float
    max_retries: int
    max_response_bytes: int
    max_event_bytes: int
    backoff: tuple[float, float]
    before_llm: BeforeLLM | None = None
    after_llm: AfterLLM | None = None
    on_event: Callable[[LLMEvent], None] | None = None


class RetryableStatus(Exception):
    """A retryable HTTP status; carried through tenacity, mapped to ProviderError if it is the last."""

    def __init__(self, response: Reply) -> None:
        self.response = response


def retryable(exc: BaseException) -> bool:
    """Whether a failed attempt is tried again: a retryable status, a transport failure or a timeout."""
    return isinstance(exc, (RetryableStatus, TransportFailure, AttemptTimeout))


class Caller:
    """One client's provider calls: safe to share across tasks (nothing per call is kept here)."""

    def __init__(
        self,
        provider: str,
        model: str,
        endpoint: Endpoint,
        key: str,
        policy: Policy,
        *,
        headers: dict[str, str],
        transport: TransportOption = None,
        credentials: Any = None,
        secrets: list[str] | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.policy = policy
        self._endpoint = endpoint
        self._key = key  # only to scrub a provider that echoes the key back in an error body
        # an aws-sigv4 or google-oauth scheme without a key signs each attempt (auth.py)
        self._signer: Signer | None = signer_for(endpoint.auth, key, provider, credentials)
        self._fixed_secrets = tuple(s for s in (key, *(secrets or ())) if s)  # the key, and secret endpoint options
        guard_logs(self, list(self._fixed_secrets))  # ... or in a response header, which httpcore logs at DEBUG
        sent = {**endpoint.auth_headers(key), **headers, "content-type": JSON, "accept-encoding": ACCEPT_ENCODING}
        self._transport = transport_for(transport, sent, policy.timeout)
        self._closed = False

    @property
    def endpoint(self) -> Endpoint:
        """The rule file's endpoint (a stream's framing reads its error shape)."""
        return self._endpoint

    async def aclose(self) -> None:
        """Release the connection pool, for good: no later call opens one again, on this loop or another."""
        self._closed = True
        await self._transport.aclose()

    def check_open(self) -> None:
        """A call on a closed client is a StateError before anything runs (no hook, no request, no event)."""
        if self._closed:
            raise StateError("a client makes no call once it is closed (aclose); create a new one")

    # ------------------------------------------------------------ hooks

    async def before(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body `before_llm` returns (or the one given, when it returns None or there is no hook)."""
        hook = self.policy.before_llm
        if hook is not None:
            replaced = await maybe_await(hook(body))
            if replaced is not None:
                return replaced  # type: ignore[no-any-return]
        return body

    async def after(self, data: dict[str, Any]) -> None:
        """`after_llm` with the decoded (or, for a stream, assembled) provider answer."""
        hook = self.policy.after_llm
        if hook is not None:
            await maybe_await(hook(data))

    # ------------------------------------------------------------ the non-streamed call

    async def call(
        self, url: str, content: bytes, answer: Callable[[dict[str, Any]], TranslateResult],
        notes: tuple[Note, ...] = (),
    ) -> TranslateResult:  # fmt: skip
        """POST `content` (retried as the policy says), decode the answer and `answer(data)` it; one event."""
        policy = self.policy
        started = time.perf_counter()
        attempts = 1
        status: int | None = None
        failure: BaseException | None = None
        cause: BaseException | None = None

        def counted(number: int) -> None:
            nonlocal attempts
            attempts = number

        try:
            if policy.timeout <= policy.overall_timeout:  # each attempt's deadline ends it first: one timer
                response = await self.attempts(lambda: self.post(url, content), counted, started=started)
            else:
                async with asyncio.timeout(policy.overall_timeout):
                    response = await self.attempts(lambda: self.post(url, content), counted)
            status = response.status
            data = self.decode(response, attempts)
            await self.after(data)
            result = with_request_notes(answer(data), notes)
        except asyncio.CancelledError:
            self.emit(attempts, started, status, {}, "cancelled", None)
            raise
        except (TimeoutError, RetryableStatus, TransportFailure, AttemptTimeout, BodyError, ToolnexusError) as exc:
            failure = self.failure(exc, attempts, status=status)
            self.emit(attempts, started, status_of(exc, status), {}, "error", failure)
            if failure is exc:
                raise
            cause = self.cause(exc)
        if failure is not None:  # raised outside the handler: a cause that may quote the key is not even its context
            raise failure from cause
        self.emit(attempts, started, status, result.usage, "ok", None, model=result.model, notes=result.notes)
        return result

    async def post(self, url: str, content: bytes) -> Reply:
        """One attempt under one deadline; the body read whole (inflated, capped) before it ends."""
        async with deadline(self.policy.timeout):
            outgoing = Outgoing(url, content, JSON)
            sent = await (self._transport.send(outgoing) if self._signer is None else self._signed(outgoing))
            response = await read_body(sent, self.policy.max_response_bytes)
        if response.status in RETRY_STATUSES or response.status >= 500:
            raise RetryableStatus(response)
        return response

    # ------------------------------------------------------------ attempts (both calls), a stream's parts

    async def attempts(
        self, attempt: Callable[[], Awaitable[T]], counted: Callable[[int], None], *, started: float | None = None
    ) -> T:
        """`attempt()`, tried again as the policy says; `counted(n)` as attempt n starts (after the first).

        The first attempt runs bare: tenacity's per-call bookkeeping (~0.1 ms) is paid only when there
        is something to retry, and tenacity then sees that failure as attempt 1. `started`: the retries
        run under the overall timeout counted from then (the caller bounds the first attempt)."""
        try:
            return await attempt()
        except Exception as exc:
            if not (self.policy.max_retries and retryable(exc)):
                raise
            failed = exc
        left = None if started is None else self.policy.overall_timeout - (time.perf_counter() - started)
        async with asyncio.timeout(left):
            async for state in self._retrying():
                with state:
                    number = state.retry_state.attempt_number
                    counted(number)
                    if number == 1:
                        raise failed
                    result = await attempt()
        return result

    def _retrying(self) -> AsyncRetrying:
        """The retry loop of one call: connection errors, timeouts and retryable statuses, with backoff."""
        return AsyncRetrying(
            stop=stop_after_attempt(self.policy.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(retryable),
            reraise=True,
        )

    async def open(self, url: str, content: bytes, accept: str) -> Reply:
        """One attempt to start a streamed answer: the response once its headers are in, body unread.

        A retryable status is RetryableStatus (its body read, capped), for `attempts()` to try again."""
        outgoing = Outgoing(url, content, JSON, {"accept": accept})
        async with deadline(self.policy.timeout):
            response = await (self._transport.send(outgoing) if self._signer is None else self._signed(outgoing))
            if response.status in RETRY_STATUSES or response.status >= 500:
                raise RetryableStatus(await read_body(response, self.policy.max_response_bytes))
        return response

    async def _signed(self, outgoing: Outgoing) -> Reply:
        """`outgoing` signed anew (each attempt, so a retry too) and sent; after a 401 the signer renews its
        credentials (a token refreshed) and the request is signed and sent once more."""
        signer = self._signer
        assert signer is not None
        try:
            await signer.sign(outgoing)
            response = await self._transport.send(outgoing)
            if response.status == 401 and await signer.renew():
                await response.aclose()
                await signer.sign(outgoing)
                response = await self._transport.send(outgoing)
        finally:
            guard_logs(self, [self._key, *signer.secrets()])
        return response

    async def read(self, response: Reply) -> Reply:
        """A body read whole as `post` reads one (inflated, capped, under the attempt's deadline)."""
        async with deadline(self.policy.timeout):
            return await read_body(response, self.policy.max_response_bytes)

    # ------------------------------------------------------------ answers and errors

    def decode(self, response: Reply, attempts: int) -> dict[str, Any]:
        """The answer's JSON object; an error status, a body that is not JSON or the provider's error shape
        is a ProviderError."""
        if not response.is_success:
            raise self.http_error(response, attempts)
        content = response.body or b""
        refused = ""  # why the body is not JSON toolnexus reads (set in the block; raised outside it, unchained)
        try:
            data = jsonsafe.loads(content)
        except jsonsafe.JsonValueError as exc:
            refused = f"JSON toolnexus refuses ({exc})"
        except ValueError:
            refused = "not JSON"
        if refused or not isinstance(data, dict):
            what = refused or "not a JSON object"
            message = f"the answer is {what}: {self.scrub(excerpt(self._scrub_bytes(content)))}"
            raise self._error(message, "decode", response, attempts)
        if self._endpoint.carries_error(data):  # a 2xx whose body is the provider's error shape
            raise self.http_error(response, attempts)
        return data

    def not_a_stream(self, response: Reply, attempts: int, expected: str) -> ProviderError:
        """A 2xx answer that is not the event stream asked for (and not the provider's error shape)."""
        content_type = response.headers.get("content-type", "") or "no content type"
        return self._error(f"expected an event stream ({expected}), got {content_type}", "decode", response, attempts)

    def http_error(self, response: Reply, attempts: int) -> ProviderError:
        """An error status: the provider's own error type and message (scrubbed)."""
        error_type, message = self._endpoint.describe_error(self._scrub_bytes(response.body or b""))
        return self._error(self.scrub(message), "http", response, attempts, error_type)

    def _error(
        self, message: str, kind: ProviderErrorKind, response: Reply, attempts: int, error_type: str | None = None
    ) -> ProviderError:
        """A ProviderError about `response`: its status and its request id (scrubbed)."""
        request_id = self.request_id(response)
        return ProviderError(message, provider=self.provider, kind=kind, status=response.status,
                             error_type=error_type, request_id=request_id, attempts=attempts)  # fmt: skip

    def failure(
        self, exc: BaseException, attempts: int, *, status: int | None = None,
        response: Reply | None = None, stream: bool = False, midway: bool = False,
    ) -> BaseException:  # fmt: skip
        """The one map from what went wrong in a call to what the caller sees (anything else as it is).

        `status`, `response`: what the call has in hand; `stream`: a streamed call, whose ProviderErrors
        (a mid-stream error event) are restated scrubbed and located; `midway`: its stream had started."""
        attempts = max(attempts, 1)
        if isinstance(exc, RetryableStatus):
            return self.http_error(exc.response, attempts)
        if isinstance(exc, BodyError):
            return self._error(exc.message, exc.kind, exc.response, attempts)
        if isinstance(exc, (TransportFailure, AttemptTimeout)):
            return transport_error(exc, self.provider, attempts, status=status, midway=midway)
        if isinstance(exc, TimeoutError):
            what = "the stream did not start" if stream else "no answer"
            return ProviderError(f"{what} within the overall timeout of {self.policy.overall_timeout} s",
                                 provider=self.provider, kind="timeout", attempts=attempts)  # fmt: skip
        if isinstance(exc, ProviderError) and stream:
            return ProviderError(
                self.scrub(exc.message), provider=self.provider, kind=exc.kind,
                status=exc.status if exc.status is not None else status, error_type=exc.error_type,
                request_id=exc.request_id or (self.request_id(response) if response is not None else None),
                attempts=attempts,
            )  # fmt: skip
        return exc

    def cause(self, exc: BaseException) -> BaseException | None:
        """What a ProviderError made of `exc` is raised from: the HTTP library's exception behind a transport
        failure (for debugging), unless anything in its chain shows a secret (a proxy quoting the headers)."""
        if not isinstance(exc, (TransportFailure, AttemptTimeout)) or chain_mentions(exc, self._secrets()):
            return None
        return exc.__cause__ if isinstance(exc, TransportFailure) else exc

    def _secrets(self) -> list[str]:
        """The key, secret endpoint options, and a signer's credentials, tokens and recent signatures."""
        secrets = list(self._fixed_secrets)
        return secrets if self._signer is None else [*secrets, *self._signer.secrets()]

    def scrub(self, text: str) -> str:
        """The API key (and a signer's secrets) never leave in an error, even when the provider quotes them,
        whole or cut short."""
        for key in self._secrets():
            text = text.replace(key, "***")
            for size in range(len(key) - 1, MIN_KEY_PREFIX - 1, -1):  # a key cut off where a body ends
                prefix = key[:size]
                if prefix in text:
                    text = text.replace(prefix, "***")
        return text

    def _scrub_bytes(self, content: bytes) -> bytes:
        """The body with the secrets blanked before any excerpt is cut from it (a cut could halve one)."""
        for key in self._secrets():
            content = content.replace(key.encode(), b"***")
        return content

    def request_id(self, response: Reply) -> str | None:
        """The provider's request id, scrubbed: a provider may echo anything in a header."""
        header = self._endpoint.request_id_header
        value = response.headers.get(header) if header else None
        return self.scrub(value) if value is not None else None

    def _wait(self, state: RetryCallState) -> float:
        """Backoff before the next attempt: the server's retry-after if it gave one, else exponential + jitter."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableStatus):
            after = retry_after(exc.response.headers)
            if after is not None:
                return after
        initial, ceiling = self.policy.backoff
        delay: float = min(initial * 2 ** (state.attempt_number - 1), ceiling)
        return delay * (1 - 0.25 * random.random())

    # ------------------------------------------------------------ events

    def emit(
        self,
        attempts: int,
        started: float,
        status: int | None,
        usage: dict[str, Any],
        outcome: str,
        error: BaseException | None,
        *,
        model: str | None = None,
        notes: tuple[Note, ...] = (),
    ) -> None:
        """One LLMEvent for one call, to the debug log and `on_event`."""
        on_event = self.policy.on_event
        debug = logger.isEnabledFor(logging.DEBUG)
        if on_event is None and not debug:  # nobody listens: the event is not even built
            return
        event = LLMEvent(
            provider=self.provider,
            model=model or self.model,
            attempts=attempts,
            latency_s=round(time.perf_counter() - started, 6),
            status=status,
            usage=usage,
            outcome=outcome,
            error=type(error).__name__ if error is not None else None,
            notes=notes,
        )
        if debug:  # asdict + dumps cost more than a fast provider's answer
            logger.debug("llm %s", json.dumps(asdict(event)))
        if on_event is not None:
            on_event(event)


def status_of(exc: BaseException, status: int | None) -> int | None:
    """The status an event reports for a failure: the failing response's, none for a transport failure."""
    if isinstance(exc, (RetryableStatus, BodyError)):
        return exc.response.status
    if isinstance(exc, (TransportFailure, AttemptTimeout)):
        return None
    return status


def request_notes(body: dict[str, Any]) -> tuple[Note, ...]:
    """The notes of a translated request body, marked as the request's."""
    return sided(getattr(body, "notes", ()), "request")


def with_request_notes(result: TranslateResult, notes: tuple[Note, ...]) -> TranslateResult:
    """The result carrying both sides' notes: the request's first, then the response's (marked so)."""
    result.notes = (*notes, *sided(result.notes, "response"))
    return result


def encode_body(body: dict[str, Any]) -> bytes:
    """The body as compact UTF-8 JSON; a value JSON cannot carry is a TranslationError before any call."""
    try:
        return wire.dumps(body)
    except (TypeError, ValueError, RecursionError, MemoryError) as exc:
        found = jsonsafe.locate(body)  # translate refuses such input, so this is a hook's or a rule's doing
        where, what = found or ("", f"is not representable as JSON ({type(exc).__name__})")
        raise TranslationError(jsonsafe.where_in("body", where), f"the provider body {what}") from None


async def maybe_await(value: Any) -> Any:
    """`value`, awaited when a hook returned an awaitable."""
    return await value if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future) else value


def transport_error(
    exc: TransportFailure | AttemptTimeout, provider: str, attempts: int, *,
    status: int | None = None, midway: bool = False,
) -> ProviderError:  # fmt: skip
    """The one map from a transport failure or an attempt's deadline to a ProviderError kind, for translate
    and streams. `midway`: the stream had started, so the connection dropped rather than failed."""
    where = " mid-stream" if midway else ""
    if isinstance(exc, AttemptTimeout):
        return ProviderError(f"{exc}{where}", provider=provider, kind="timeout", status=status, attempts=attempts)
    if exc.kind == "timeout":
        return ProviderError(f"timed out{where}: {exc.name}", provider=provider, kind="timeout",
                             status=status, attempts=attempts)  # fmt: skip
    what = "the connection dropped mid-stream" if midway else "connection failed"
    return ProviderError(f"{what}: {exc.name}", provider=provider, kind="connection", status=status, attempts=attempts)


def retry_after(headers: Mapping[str, str]) -> float | None:
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
