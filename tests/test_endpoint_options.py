"""Per-client endpoint values: `{placeholders}` in the base URL and path, query parameters and
headers filled from the model and from `endpoint_options`, on a made-up provider.

The provider extends the shipped OpenAI rules and declares its endpoint options; the client
fills them (percent-encoded) and the loopback stub shows what was sent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import ConfigError, ProviderError, RuleError, create_client
from toolnexus.devtools.stub import ProviderStub, StubReply

ENDPOINT = """\
endpoint:
  base_url: https://{region}.example.invalid/v1
  path: /deployments/{deployment}/models/{model}/chat
  options:
    deployment: {doc: "required: no default"}
    region: {default: eu}
    api_version: {default: "2024-10-21"}
    referer: {optional: true}
    token: {secret: true, optional: true}
  query:
    api-version: "{api_version}"
    fixed: a b
  headers:
    X-Referer: "{referer}"
    X-Token: "tok {token}"
    X-Const: c
"""
ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}


def _rules(tmp_path: Path, endpoint: str = ENDPOINT) -> Path:
    (tmp_path / "custom.yaml").write_text(f"provider: custom\nextends: openai\n{endpoint}", encoding="utf-8")
    return tmp_path


def _endpoint(tmp_path: Path) -> Any:
    return toolnexus.load_rules(_rules(tmp_path), reload=True).get("custom").endpoint


def test_placeholders_and_query_are_filled_percent_encoded(tmp_path: Path) -> None:
    endpoint = _endpoint(tmp_path)
    values = endpoint.values("a/b?c", {"deployment": "d 1/x"})
    url = endpoint.url(None, "a/b?c", values=values)
    assert str(url) == (
        "https://eu.example.invalid/v1/deployments/d%201%2Fx/models/a%2Fb%3Fc/chat?api-version=2024-10-21&fixed=a%20b"
    )
    given = endpoint.values("m", {"deployment": "d", "region": "us", "api_version": "v&x=1"})
    assert str(endpoint.url(None, "m", values=given)).endswith("?api-version=v%26x%3D1&fixed=a%20b")
    assert str(endpoint.url(None, "m", values=given)).startswith("https://us.example.invalid/")


def test_a_given_base_url_is_used_as_is_and_the_path_still_filled(tmp_path: Path) -> None:
    endpoint = _endpoint(tmp_path)
    url = endpoint.url("http://127.0.0.1:9/base", "m", values=endpoint.values("m", {"deployment": "d"}))
    assert str(url) == "http://127.0.0.1:9/base/deployments/d/models/m/chat?api-version=2024-10-21&fixed=a%20b"


def test_a_missing_required_option_names_the_rule_line(tmp_path: Path) -> None:
    endpoint = _endpoint(tmp_path)
    with pytest.raises(ConfigError) as info:
        endpoint.url(None, "m", values=endpoint.values("m"))
    assert f"{tmp_path / 'custom.yaml'}:7 endpoint.options.deployment" in str(info.value)


def test_an_undeclared_option_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    endpoint = _endpoint(tmp_path)
    with pytest.raises(ConfigError, match="'deployment'"):
        endpoint.values("m", {"deploymnet": "d"})
    with pytest.raises(ConfigError):
        endpoint.values("m", {"deployment": 3})


def test_optional_headers_are_left_out_unless_given(tmp_path: Path) -> None:
    endpoint = _endpoint(tmp_path)
    assert endpoint.headers_for(endpoint.values("m", {"deployment": "d"})) == {}
    given = endpoint.values("m", {"deployment": "d", "referer": "https://me.example", "token": "s3cret"})
    assert endpoint.headers_for(given) == {"X-Referer": "https://me.example", "X-Token": "tok s3cret"}
    assert endpoint.secrets(given) == ["s3cret"]
    with pytest.raises(ConfigError) as info:
        endpoint.headers_for(endpoint.values("m", {"deployment": "d", "token": "bad\nvalue"}))
    assert "bad" not in str(info.value)


@pytest.mark.parametrize(
    ("endpoint", "line", "rule"),
    [
        (ENDPOINT.replace("{referer}", "{refrer}"), 16, "endpoint.headers.X-Referer"),
        (ENDPOINT.replace("fixed: a b", "fixed: '{nope}'"), 14, "endpoint.query.fixed"),
        (ENDPOINT.replace("/deployments/{deployment}", "/deployments/{referer}"), 5, "endpoint.path"),
        (ENDPOINT.replace("token: {secret: true, optional: true}", "token: {secret: true, default: x}"), 11,
         "endpoint.options.token.default"),
        (ENDPOINT.replace("fixed: a b", "fixed: '{token}'"), 14, "endpoint.query.fixed"),
    ],
    ids=["unknown-header-placeholder", "unknown-query-placeholder", "optional-in-path", "secret-default",
         "secret-in-query"],
)  # fmt: skip
def test_a_bad_endpoint_option_use_is_a_located_rule_error(tmp_path: Path, endpoint: str, line: int, rule: str) -> None:
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(_rules(tmp_path, endpoint), reload=True)
    assert (info.value.file, info.value.line, info.value.rule) == (str(tmp_path / "custom.yaml"), line, rule)


def test_the_client_sends_the_filled_url_query_and_headers(tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    options = {"deployment": "dep", "referer": "https://me.example"}

    async def call(base_url: str) -> None:
        async with create_client(
            base_url, "custom", "m", "key", rules=rules, endpoint_options=options, transport="httpx"
        ) as client:
            await client.translate([{"role": "user", "content": "hi"}])

    with ProviderStub(lambda request: dict(ANSWER)) as stub:
        asyncio.run(call(stub.base_url))
    [request] = stub.requests
    assert request.path.endswith("/deployments/dep/models/m/chat?api-version=2024-10-21&fixed=a%20b")
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["x-referer"] == "https://me.example" and headers["x-const"] == "c" and "x-token" not in headers


def test_a_secret_option_is_scrubbed_like_the_key(tmp_path: Path) -> None:
    rules = _rules(tmp_path)
    secret = "sk-option-secret-123456"
    options = {"deployment": "dep", "token": secret}
    body = {"error": {"message": f"bad token tok {secret}", "type": "auth"}}

    async def call(base_url: str) -> None:
        async with create_client(
            base_url, "custom", "m", "key", rules=rules, endpoint_options=options, max_retries=0, transport="httpx"
        ) as client:
            await client.translate([{"role": "user", "content": "hi"}])

    with ProviderStub(lambda request: StubReply(401, body)) as stub, pytest.raises(ProviderError) as info:
        asyncio.run(call(stub.base_url))
    assert {k.lower(): v for k, v in stub.requests[0].headers.items()}["x-token"] == f"tok {secret}"
    assert secret not in str(info.value) and secret[:12] not in repr(info.value.message)


@pytest.mark.parametrize(
    ("message", "root"),
    [("error.message", "error"), ("message", "message"), ("error.message || message", None)],
)
def test_an_error_shape_is_told_by_its_root_field_and_read_only_when_that_is_there(
    message: str, root: str | None
) -> None:
    """A plain message path's first field, absent or null, is no error (one lookup, the path not read); present,
    the path is read as before: a string there is the provider's error, anything else an answer."""
    from toolnexus.language.loader import RuleSource
    from toolnexus.translate.endpoint import compile_endpoint

    data = {"provider": "madeup", "endpoint": {"path": "/x", "auth": "none", "error": {"message": message}}}
    endpoint = compile_endpoint(RuleSource(data=data, file="rules/madeup.yaml"))
    assert endpoint.error_root == root
    assert endpoint.error_in({"choices": []}) is None
    assert endpoint.error_in({"error": None, "message": None}) is None
    assert endpoint.error_in({"error": {"message": {"not": "text"}}, "message": {"role": "assistant"}}) is None
    assert endpoint.error_in({"error": {"message": "bad key"}, "message": "bad key"}) == (None, "bad key")
