"""The HTTP stack under the client: httpx's own connection pool, or aiohttp's behind httpx's API.

httpx's pool (httpcore) spends more per request the more requests are in flight: on two
cores it serves about half as many requests at concurrency 32 as at concurrency 1.
httpx-aiohttp (the aiohttp transport the official openai SDK offers as its faster option)
keeps the httpx client, its API, timeouts and exception types, and moves the connections
to aiohttp's pool. `tools/bench_client.py` measures both stacks.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx

from .errors import ConfigError

Stack = Literal["httpx", "aiohttp"]
STACKS: tuple[Stack, ...] = ("httpx", "aiohttp")
TransportOption = httpx.AsyncBaseTransport | Stack | None


def async_client(transport: TransportOption, **options: Any) -> httpx.AsyncClient:
    """An httpx.AsyncClient over `transport`: a transport object, or the name of a stack.

    None and "httpx" are httpx's default pool. "aiohttp" is httpx-aiohttp's client class
    (the extra `toolnexus[aiohttp]`), which also routes the environment's proxies through aiohttp.
    """
    if transport is None or isinstance(transport, httpx.AsyncBaseTransport):
        return httpx.AsyncClient(transport=transport, **options)
    if transport == "httpx":
        return httpx.AsyncClient(**options)
    if transport == "aiohttp":
        try:
            from httpx_aiohttp import HttpxAiohttpClient
        except ImportError:
            raise ConfigError(
                "transport='aiohttp' needs the httpx-aiohttp package: pip install 'toolnexus[aiohttp]'"
            ) from None
        return HttpxAiohttpClient(**options)
    raise ConfigError(f"transport must be an httpx.AsyncBaseTransport, 'httpx' or 'aiohttp', got {transport!r}")
