"""The HTTP stacks under the call layer: one POST of prepared bytes in; status, headers and body bytes out.

The call layer (call.py) prepares each attempt (URL, body bytes, the headers a signer adds) and a
`Transport` sends it and gives back a `Reply`: the status and headers once they are in, the body
still unread, as raw bytes (the call layer inflates and caps them, limits.py, and cuts events from
them, framing.py). Each stack maps its own exceptions to `TransportFailure` (a timeout or a failed
connection, the library's exception as its cause) here, at one boundary, as a body is sent and as
it is read. Timeouts are the call layer's (one deadline per attempt), retries too.

Stacks, by `transport=`:
- "aiohttp" (the default, `DEFAULT_STACK`): aiohttp's ClientSession and connection pool, used directly.
  `tools/bench_client.py` measured it against httpx's pool and against httpx's API over aiohttp
  (httpx-aiohttp): httpx's pool serves about half as many calls at concurrency 32 as at 1, and
  httpx's request and response objects over aiohttp made the client 1.3x to 2.2x the pure functions
  around a bare aiohttp post of the same bytes (on aiohttp directly it is on a par with them);
- "httpx": httpx's AsyncClient and its own pool (httpcore);
- an httpx transport object (httpx.MockTransport, a configured AsyncHTTPTransport): under an httpx
  AsyncClient, as "httpx" with that transport;
- `AiohttpStack(limit=..., ssl=...)`: aiohttp with a pool of that many connections, or that TLS context.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ..errors import ConfigError

if TYPE_CHECKING:
    import ssl

    import aiohttp

Stack = Literal["httpx", "aiohttp"]
STACKS: tuple[Stack, ...] = ("httpx", "aiohttp")
DEFAULT_STACK: Stack = "aiohttp"  # what transport=None means: chosen by tools/bench_client.py
FailureKind = Literal["timeout", "connection"]


class TransportFailure(Exception):
    """What the HTTP stack raised, said in the call layer's terms: a `timeout` or a failed `connection`.

    `name` is the library's exception type (or, for a failed connection, its OSError's); the
    library's exception is the `__cause__`."""

    def __init__(self, kind: FailureKind, name: str) -> None:
        super().__init__(f"{kind}: {name}")
        self.kind: FailureKind = kind
        self.name = name


@dataclass
class Outgoing:
    """One attempt as it will be sent: a signer (auth.py) reads the URL, content type and body and adds headers."""

    url: str
    content: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)  # besides the client's own (the accept, a signature)


class Reply:
    """A response whose status and headers are in; `body` once read whole, else `chunks()` reads it."""

    status: int
    headers: Mapping[str, str]  # looked up case-insensitively
    body: bytes | None  # the whole body (raw) when a transport has read it, or once `limits.read_body` has

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300

    def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body's raw bytes as they arrive (not inflated); failures as TransportFailure."""
        raise NotImplementedError

    async def read(self) -> bytes:
        """The whole raw body (the caller knows its length is within its cap)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release the connection: back to the pool when the body was read to its end, else dropped."""
        raise NotImplementedError


class Received(Reply):
    """A body in hand (a captured stream replayed through a framing): nothing left to read or release."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    async def aclose(self) -> None:
        return None


class Transport:
    """One client's connection pool on one stack; `send` one attempt, `aclose` the pool."""

    async def send(self, outgoing: Outgoing) -> Reply:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class AiohttpStack:
    """aiohttp's pool, with `limit` connections at most (100, aiohttp's default) and a TLS context
    (None: aiohttp's default verification)."""

    limit: int = 100
    ssl: ssl.SSLContext | None = None

    def connect(self, headers: Mapping[str, str]) -> Transport:
        return _Aiohttp(self, headers)


TransportOption = httpx.AsyncBaseTransport | AiohttpStack | Stack | None


def transport_for(option: TransportOption, headers: Mapping[str, str], timeout: float) -> Transport:
    """The Transport `option` names, sending `headers` with every request. `timeout`: httpx's own
    timeouts (each phase); the call layer's deadline bounds each attempt on every stack."""
    if isinstance(option, AiohttpStack):
        return option.connect(headers)
    if isinstance(option, httpx.AsyncBaseTransport):
        return _Httpx(headers, timeout, option)
    stack = DEFAULT_STACK if option is None else option
    if stack == "httpx":
        return _Httpx(headers, timeout, None)
    if stack == "aiohttp":
        try:
            import aiohttp  # noqa: F401
        except ImportError:
            raise ConfigError(
                "transport='aiohttp' (the default) needs the aiohttp package, a dependency of toolnexus: "
                "pip install aiohttp, or pass transport='httpx'"
            ) from None
        return AiohttpStack().connect(headers)
    raise ConfigError(
        f"transport must be 'httpx' or 'aiohttp', an httpx.AsyncBaseTransport or an AiohttpStack, got {option!r}"
    )


# ----------------------------------------------------------------- httpx


def httpx_failure(exc: httpx.TransportError) -> TransportFailure:
    """httpx's exceptions: a timeout, unless caused by an OSError other than a timeout (httpx-aiohttp
    reported a refused connection as ConnectTimeout, as noted in openai/openai-python#3594); else a
    failed connection."""
    cause = exc.__cause__
    if isinstance(exc, httpx.TimeoutException):
        if not isinstance(cause, OSError) or isinstance(cause, TimeoutError):
            return TransportFailure("timeout", type(exc).__name__)
        return TransportFailure("connection", type(cause).__name__)  # misnamed: the cause is the failure
    return TransportFailure("connection", type(exc).__name__)


class _Httpx(Transport):
    def __init__(self, headers: Mapping[str, str], timeout: float, transport: httpx.AsyncBaseTransport | None) -> None:
        self._options: dict[str, Any] = {"headers": dict(headers), "timeout": httpx.Timeout(timeout)}
        if transport is not None:
            self._options["transport"] = transport
        self._client = httpx.AsyncClient(**self._options)
        self._loop: asyncio.AbstractEventLoop | None = None

    def _current(self) -> httpx.AsyncClient:
        """The pool of the running loop: a pool used under another loop (an earlier `asyncio.run`) holds
        connections that loop owned, so a client reused across loops gets a fresh pool."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._loop is not None:
                self._client = httpx.AsyncClient(**self._options)
            self._loop = loop
        return self._client

    async def send(self, outgoing: Outgoing) -> Reply:
        client = self._current()
        request = client.build_request("POST", outgoing.url, content=outgoing.content, headers=outgoing.headers)
        try:
            return HttpxReply(await client.send(request, stream=True))
        except httpx.TransportError as exc:
            raise httpx_failure(exc) from exc

    async def aclose(self) -> None:
        await self._client.aclose()


class HttpxReply(Reply):
    """An httpx response as a Reply (the httpx stack's; also what a tool wraps to run a framing on one)."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.headers = response.headers
        try:
            self.body = response.content  # a transport may hand over a body it has read (httpx.MockTransport)
        except httpx.ResponseNotRead:
            self.body = None

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.TransportError as exc:
            raise httpx_failure(exc) from exc

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def aclose(self) -> None:
        await self._response.aclose()


# ----------------------------------------------------------------- aiohttp


def aiohttp_failure(exc: BaseException) -> TransportFailure:
    """aiohttp's exceptions: its timeouts (it runs none of its own here, but a socket may) are a timeout,
    a refused or reset connection is a failed one named by its OSError, the rest a failed connection."""
    import aiohttp

    if isinstance(exc, (aiohttp.ServerTimeoutError, TimeoutError)):
        return TransportFailure("timeout", type(exc).__name__)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return TransportFailure("connection", type(exc.os_error).__name__)
    return TransportFailure("connection", type(exc).__name__)


class _Aiohttp(Transport):
    """aiohttp used directly: no redirects followed, no cookies kept, bodies taken raw (the call layer
    inflates them within its caps), no timeouts of its own (the call layer's deadline). URLs are sent
    as they are given (httpx's form, the form a signature covers), not re-quoted. The environment's
    proxies (HTTP_PROXY, NO_PROXY, ...) are read once per URL, as httpx reads them once per client:
    aiohttp's trust_env reads them (and netrc) in a worker thread on every request, two thread hops
    that cost more than the rest of the call."""

    def __init__(self, stack: AiohttpStack, headers: Mapping[str, str]) -> None:
        import aiohttp
        from yarl import URL

        self._aiohttp = aiohttp
        self._url = URL
        self._stack = stack
        self._headers = dict(headers)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._urls: dict[str, tuple[Any, Any, Any]] = {}  # URL -> (parsed, proxy, proxy auth): a client has one or two
        self._errors = (aiohttp.ClientError, TimeoutError)

    def _current(self) -> aiohttp.ClientSession:
        """The session of the running loop (created there: aiohttp binds a session to its loop)."""
        loop = asyncio.get_running_loop()
        session = self._session
        if session is None or loop is not self._loop:
            if session is not None:  # its loop has ended: its connections cannot be closed from this one
                connector = session.connector
                session.detach()
                if connector is not None:
                    connector._close()  # only marks it closed when its loop is closed; nothing to await
            aiohttp = self._aiohttp
            session = self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._stack.limit, ssl=self._stack.ssl or True),
                headers=self._headers, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=None),
            )  # fmt: skip
            self._loop = loop
        return session

    async def send(self, outgoing: Outgoing) -> Reply:
        session = self._current()
        target = self._urls.get(outgoing.url) or self._target(outgoing.url)
        url, proxy, proxy_auth = target
        try:
            response = await session.post(url, data=outgoing.content, headers=outgoing.headers or None,
                                          allow_redirects=False, proxy=proxy, proxy_auth=proxy_auth)  # fmt: skip
        except self._errors as exc:
            raise aiohttp_failure(exc) from exc
        return _AiohttpReply(response, self._errors)

    def _target(self, text: str) -> tuple[Any, Any, Any]:
        from aiohttp.helpers import get_env_proxy_for_url  # what trust_env runs on every request

        url = self._url(text, encoded=True)
        try:
            proxy, proxy_auth = get_env_proxy_for_url(url)
        except LookupError:  # none set, or NO_PROXY names the host
            proxy, proxy_auth = None, None
        self._urls[text] = target = (url, proxy, proxy_auth)
        return target

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _AiohttpReply(Reply):
    def __init__(self, response: aiohttp.ClientResponse, errors: tuple[type[BaseException], ...]) -> None:
        self._response = response
        self._errors = errors
        self.status = response.status
        self.headers = response.headers
        self.body = None

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        content = self._response.content
        try:
            while chunk := await content.readany():
                yield chunk
        except self._errors as exc:
            raise aiohttp_failure(exc) from exc

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except self._errors as exc:
            raise aiohttp_failure(exc) from exc

    async def aclose(self) -> None:
        response = self._response
        if response.content.at_eof():
            response.release()
        else:
            response.close()  # a body left unread: the connection is dropped, not reused
