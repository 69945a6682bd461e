"""The client's HTTP stack option: transport="aiohttp" (the default) | "httpx" | an httpx transport | AiohttpStack.

The faults, the key scrubbing, cancel and concurrency are replayed on every stack by test_faults.py,
test_secrets.py and test_client.py (support.faults.STACKS, STACK_TARGETS); here: that the option
selects what it names (aiohttp with no httpx layer over it), that each stack's exceptions map to the
same failure kinds, and that a missing package or an unknown name is a ConfigError before any request.
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
from toolnexus.http.call import transport_error
from toolnexus.http.transport import AiohttpStack, TransportFailure, aiohttp_failure, httpx_failure

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


@pytest.mark.parametrize("transport", [None, "aiohttp", AiohttpStack(limit=2)])
def test_the_default_and_aiohttp_send_through_aiohttp_with_no_httpx_layer(
    transport: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aiohttp

    through_aiohttp: list[Any] = []
    original = aiohttp.ClientSession._request

    async def request(self: aiohttp.ClientSession, *args: Any, **kwargs: Any) -> Any:
        through_aiohttp.append(args)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "_request", request)
    through_httpx: list[Any] = []

    async def refuse(*args: Any, **kwargs: Any) -> Any:
        through_httpx.append(args)
        raise AssertionError("httpx sent a request")

    monkeypatch.setattr(httpx.AsyncClient, "send", refuse)
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


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_redirect_is_not_followed_on_any_stack(transport: str) -> None:
    """httpx follows no redirect by default; aiohttp would (re-sending the key to wherever it points)."""
    from toolnexus.devtools.stub import StubReply

    def respond(request: StubRequest) -> Any:
        if request.path.endswith("/elsewhere"):
            return text_reply(PROVIDER)
        return StubReply(status=307, body={"error": {"message": "moved"}}, headers={"Location": "/elsewhere"})

    with ProviderStub(respond) as stub, pytest.raises(toolnexus.ProviderError) as info:
        translate_once(stub.base_url, transport)
    assert (info.value.kind, info.value.status) == ("http", 307)
    assert [r.path for r in stub.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize("transport", [None, "aiohttp"])
def test_aiohttp_missing_is_a_config_error_naming_it(transport: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # what a broken environment sees
    with pytest.raises(ConfigError, match=re.escape("pip install aiohttp")):
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
        # an httpx transport over another library may report a refused connection as ConnectTimeout
        (httpx.ConnectTimeout("c"), ConnectionRefusedError(111, "refused"), "connection", "ConnectionRefusedError"),
        (httpx.ConnectTimeout("t"), TimeoutError("connect timed out"), "timeout", "ConnectTimeout"),
    ],
)
def test_httpx_failures_map_to_a_kind(
    exc: httpx.TransportError, cause: BaseException | None, kind: str, named: str
) -> None:
    failure = httpx_failure(raised_from(exc, cause))  # type: ignore[arg-type]
    assert (failure.kind, failure.name) == (kind, named)


def aiohttp_exceptions() -> list[Any]:
    import aiohttp

    return [
        (aiohttp.ServerDisconnectedError(), "connection", "ServerDisconnectedError"),
        (aiohttp.ClientPayloadError("cut"), "connection", "ClientPayloadError"),
        (aiohttp.ClientOSError(104, "reset"), "connection", "ClientOSError"),
        (aiohttp.ServerTimeoutError("t"), "timeout", "ServerTimeoutError"),
        (aiohttp.ConnectionTimeoutError("t"), "timeout", "ConnectionTimeoutError"),
        (TimeoutError(), "timeout", "TimeoutError"),
    ]


@pytest.mark.parametrize(("exc", "kind", "named"), aiohttp_exceptions())
def test_aiohttp_failures_map_to_a_kind(exc: BaseException, kind: str, named: str) -> None:
    failure = aiohttp_failure(exc)
    assert (failure.kind, failure.name) == (kind, named)


@pytest.mark.parametrize(("kind", "midway"), [("timeout", False), ("connection", False), ("connection", True)])
def test_a_transport_failure_is_a_provider_error_of_its_kind(kind: str, midway: bool) -> None:
    error = transport_error(TransportFailure(kind, "SomeError"), PROVIDER, 2, midway=midway)  # type: ignore[arg-type]
    assert (error.kind, error.attempts) == (kind, 2)
    assert "SomeError" in error.message and ("mid-stream" in error.message) == midway


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_the_environments_proxy_is_honoured_on_every_stack(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """HTTP_PROXY sends the call through the proxy (read once per client on aiohttp, as httpx reads it)."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with ProviderStub(lambda request: text_reply(PROVIDER)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))
        text = translate_once("http://provider.invalid/v1", transport)
    assert text == toolnexus.translate_response(PROVIDER, text_reply(PROVIDER)).text
    assert [r.path for r in proxy.requests] == ["http://provider.invalid/v1/chat/completions"]
