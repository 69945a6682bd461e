"""The client's HTTP stack option: transport="aiohttp" (the default) | "httpx" | an httpx transport.

The faults, the key scrubbing and cancel are replayed on the aiohttp stack by test_faults.py and
test_secrets.py (their STACK_TARGETS); here: that the option selects what it names, and that a
missing extra or an unknown name is a ConfigError before any request.
"""

from __future__ import annotations

import asyncio
import re
import sys
from typing import Any

import httpx
import pytest

import toolnexus
from support.faults import text_reply
from toolnexus import ConfigError
from toolnexus.devtools.stub import ProviderStub, StubRequest
from toolnexus.http.transport import transport_error

PROVIDER = "openai"
USER = [{"role": "user", "content": "hi"}]


def translate_once(base_url: str, transport: Any) -> str:
    """The text of one translate on a client built with `transport`."""

    async def main() -> str:
        async with toolnexus.create_client(base_url, PROVIDER, "m", api_key="k", transport=transport) as client:
            return (await client.translate(USER)).text

    return asyncio.run(main())


def counting(monkeypatch: pytest.MonkeyPatch, cls: type[httpx.AsyncBaseTransport]) -> list[httpx.Request]:
    """Record every request that passes through `cls.handle_async_request`."""
    seen: list[httpx.Request] = []
    original = cls.handle_async_request

    async def handle(self: httpx.AsyncBaseTransport, request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return await original(self, request)

    monkeypatch.setattr(cls, "handle_async_request", handle)
    return seen


def test_httpx_uses_httpx_own_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = counting(monkeypatch, httpx.AsyncHTTPTransport)
    with ProviderStub(lambda request: text_reply(PROVIDER)) as stub:
        text = translate_once(stub.base_url, "httpx")
    assert text == toolnexus.translate_response(PROVIDER, text_reply(PROVIDER)).text
    assert [r.url.path for r in seen] == ["/v1/chat/completions"]


@pytest.mark.parametrize("transport", [None, "aiohttp"])
def test_the_default_and_aiohttp_send_through_the_aiohttp_transport(
    transport: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from httpx_aiohttp import AiohttpTransport

    through_aiohttp = counting(monkeypatch, AiohttpTransport)
    through_httpx = counting(monkeypatch, httpx.AsyncHTTPTransport)
    received: list[StubRequest] = []

    def respond(request: StubRequest) -> Any:
        received.append(request)
        return text_reply(PROVIDER)

    with ProviderStub(respond) as stub:
        text = translate_once(stub.base_url, transport)
    assert text == toolnexus.translate_response(PROVIDER, text_reply(PROVIDER)).text
    assert len(through_aiohttp) == 1 and through_httpx == []
    [request] = received
    assert request.headers["authorization"] == "Bearer k"  # the client's headers go through aiohttp unchanged
    assert request.body == toolnexus.translate_request(PROVIDER, {"model": "m", "messages": USER})


@pytest.mark.parametrize("transport", [None, "aiohttp"])
def test_aiohttp_missing_is_a_config_error_naming_it(transport: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx_aiohttp", None)  # what a broken environment sees
    with pytest.raises(ConfigError, match=re.escape("pip install httpx-aiohttp")):
        toolnexus.create_client("http://127.0.0.1:9/v1", PROVIDER, "m", api_key="k", transport=transport)


def test_an_unknown_transport_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'httpx' or 'aiohttp'"):
        toolnexus.create_client("http://127.0.0.1:9/v1", PROVIDER, "m", api_key="k", transport="curl")  # type: ignore[arg-type]


def raised_from(exc: BaseException, cause: BaseException | None) -> BaseException:
    try:
        raise exc from cause
    except BaseException as raised:
        return raised


@pytest.mark.parametrize(
    ("exc", "cause", "kind", "named"),
    [
        # httpx's own pool: its exception types say what happened
        (httpx.ConnectTimeout("t"), None, "timeout", "ConnectTimeout"),
        (httpx.ReadTimeout("t"), None, "timeout", "ReadTimeout"),
        (httpx.ConnectError("c"), ConnectionRefusedError(111, "refused"), "connection", "ConnectError"),
        (httpx.ReadError("r"), None, "connection", "ReadError"),
        # httpx-aiohttp: a refused connection arrives as ConnectTimeout caused by an OSError
        (httpx.ConnectTimeout("c"), ConnectionRefusedError(111, "refused"), "connection", "ConnectionRefusedError"),
        (httpx.ConnectTimeout("t"), TimeoutError("connect timed out"), "timeout", "ConnectTimeout"),
    ],
)
def test_a_timeout_caused_by_a_failed_connection_is_a_connection_error(
    exc: httpx.TransportError, cause: BaseException | None, kind: str, named: str
) -> None:
    error = transport_error(raised_from(exc, cause), PROVIDER, 2)  # type: ignore[arg-type]
    assert (error.kind, error.attempts) == (kind, 2)
    assert named in error.message
