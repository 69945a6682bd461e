"""The HTTP stack under the client: aiohttp's connection pool behind httpx's API (the default), or httpx's own.

httpx's pool (httpcore) spends more per request the more requests are in flight: on two
cores it serves about half as many requests at concurrency 32 as at concurrency 1.
httpx-aiohttp (the aiohttp transport the official openai SDK offers as its faster option)
keeps the httpx client, its API, timeouts and exception types, and moves the connections
to aiohttp's pool. `tools/bench_client.py` measures both stacks; the default is the one that
wins there (several times httpx's pool at concurrency 32, on a par at 1).
"""

from __future__ import annotations

from typing import Any, Literal

import httpx

from ..errors import ConfigError, ProviderError
from .limits import AttemptTimeout

Stack = Literal["httpx", "aiohttp"]
STACKS: tuple[Stack, ...] = ("httpx", "aiohttp")
DEFAULT_STACK: Stack = "aiohttp"  # what transport=None means: chosen by tools/bench_client.py
TransportOption = httpx.AsyncBaseTransport | Stack | None


def async_client(transport: TransportOption, **options: Any) -> httpx.AsyncClient:
    """An httpx.AsyncClient over `transport`: a transport object, or the name of a stack.

    None is DEFAULT_STACK. "httpx" is httpx's default pool. "aiohttp" is httpx-aiohttp's client class
    (a dependency), which also routes the environment's proxies through aiohttp.
    """
    if isinstance(transport, httpx.AsyncBaseTransport):
        return httpx.AsyncClient(transport=transport, **options)
    stack = DEFAULT_STACK if transport is None else transport
    if stack == "httpx":
        return httpx.AsyncClient(**options)
    if stack == "aiohttp":
        try:
            from httpx_aiohttp import HttpxAiohttpClient
        except ImportError:
            raise ConfigError(
                "transport='aiohttp' (the default) needs the httpx-aiohttp package, a dependency of toolnexus: "
                "pip install httpx-aiohttp, or pass transport='httpx'"
            ) from None
        return HttpxAiohttpClient(**options)
    raise ConfigError(f"transport must be an httpx.AsyncBaseTransport, 'httpx' or 'aiohttp', got {transport!r}")


def transport_error(
    exc: httpx.TransportError | AttemptTimeout, provider: str, attempts: int, *,
    status: int | None = None, midway: bool = False,
) -> ProviderError:  # fmt: skip
    """The one map from what the HTTP stack raised to a ProviderError kind, for translate and streams.

    A timeout (an attempt's deadline, or httpx's own), or a connection that failed. An httpx timeout
    caused by an OSError other than a timeout is a failed connection: httpx-aiohttp reports a refused
    connection as ConnectTimeout (its exception map, as noted in openai/openai-python#3594).
    `midway`: the stream had started, so the connection dropped rather than failed.
    """
    where = " mid-stream" if midway else ""
    if isinstance(exc, AttemptTimeout):
        return ProviderError(f"{exc}{where}", provider=provider, kind="timeout", status=status, attempts=attempts)
    cause = exc.__cause__
    if isinstance(exc, httpx.TimeoutException):
        if not isinstance(cause, OSError) or isinstance(cause, TimeoutError):
            return ProviderError(f"timed out{where}: {type(exc).__name__}", provider=provider, kind="timeout",
                                 status=status, attempts=attempts)  # fmt: skip
        name = type(cause).__name__  # misnamed: the cause is the failure
    else:
        name = type(exc).__name__
    what = "the connection dropped mid-stream" if midway else "connection failed"
    return ProviderError(f"{what}: {name}", provider=provider, kind="connection", status=status, attempts=attempts)
