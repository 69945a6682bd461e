"""client.translate and toolkits (issue 3), every behaviour against a REAL local HTTP server.

Each test starts a `ProviderStub` (a threaded HTTP/1.1 server on 127.0.0.1 with
scripted replies) and drives the real client (real httpx, real sockets) at it.
Async code runs under `asyncio.run` inside plain test functions.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
import ssl
import threading
import time
import traceback
import urllib.parse
from typing import Any, Literal, Optional

import httpx
import pytest

import toolnexus
from support.faults import STACKS, error_object, one_connection_transport, until
from toolnexus import (
    Cancelled,
    ConfigError,
    LLMEvent,
    ProviderError,
    StateError,
    ToolnexusError,
    create_client,
    create_toolkit,
    define_tool,
    translate_request,
)
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest, scripted
from toolnexus.language import jsonsafe

STYLES = ["anthropic", "openai"]
FAST = (0.01, 0.05)  # backoff for tests
ANSWERED = {"anthropic": "claude-answered-7", "openai": "gpt-answered-7"}
PATH = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}
KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
REQUEST_ID_HEADER = {"anthropic": "request-id", "openai": "x-request-id"}


# ----------------------------------------------------------------- provider shapes


def text_reply(style: str, text: str = "hello there") -> dict[str, Any]:
    if style == "anthropic":
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": ANSWERED[style],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 4},
        }
    return {
        "id": "chatcmpl-01",
        "object": "chat.completion",
        "created": 1700000000,
        "model": ANSWERED[style],
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15},
    }


def tool_reply(style: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if style == "anthropic":
        return {
            "id": "msg_02",
            "type": "message",
            "role": "assistant",
            "model": ANSWERED[style],
            "content": [{"type": "tool_use", "id": "toolu_01", "name": name, "input": args}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 20, "output_tokens": 9},
        }
    return {
        "id": "chatcmpl-02",
        "object": "chat.completion",
        "model": ANSWERED[style],
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_01", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    }


def error_body(style: str, error_type: str, message: str) -> dict[str, Any]:
    if style == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


class Stub(ProviderStub):
    """The shipped ProviderStub, with two test-side tweaks that change no behaviour under test.

    - a listen backlog of 256: the stock socketserver backlog (5) makes the kernel reset
      some of 100 simultaneous connects (see test_the_stock_stub_accepts_100_simultaneous_connections);
    - stop() returns in ~10 ms instead of up to 0.5 s (serve_forever's default poll interval),
      which keeps this suite fast.
    """

    def __init__(self, responder: Any) -> None:
        super().__init__(responder)
        self._server.socket.listen(256)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="toolnexus-stub", daemon=True
        )


def always(reply: Any) -> Any:
    """A responder that answers every request with a fresh copy of `reply`."""
    return lambda request: copy.deepcopy(reply)


# One TLS context for the whole suite: building one costs ~85 ms (loading the CA bundle),
# which httpx does for every new client even for http:// URLs. The transport is otherwise
# httpx's default (fresh pool per client). Tests that pass transport=None use the client's own.
_SHARED_SSL = ssl.create_default_context()


def fresh_transport() -> httpx.AsyncHTTPTransport:
    return httpx.AsyncHTTPTransport(verify=_SHARED_SSL)


def make_client(stub: ProviderStub, style: str, **options: Any) -> toolnexus.Client:
    options.setdefault("api_key", "test-key")
    options.setdefault("backoff", FAST)
    if "transport" not in options:
        options["transport"] = fresh_transport()
    return create_client(base_url=stub.base_url, style=style, model="m", **options)


def translate_once(stub: ProviderStub, style: str, **options: Any) -> toolnexus.TranslateResult:
    """`client.translate(USER)` once, on a fresh `make_client` client."""

    async def main() -> toolnexus.TranslateResult:
        async with make_client(stub, style, **options) as client:
            return await client.translate(USER)

    return asyncio.run(main())


USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every asyncio.sleep delay over 0 during the test, in order (the retry loop's backoff is one): what a
    test waits on, or asserts, instead of timing the call on a machine that may be loaded."""
    real = asyncio.sleep
    seen: list[float] = []

    def spy(delay: float, result: Any = None) -> Any:
        if delay > 0:
            seen.append(delay)
        return real(delay, result)

    monkeypatch.setattr(asyncio, "sleep", spy)
    return seen


# ----------------------------------------------------------------- endpoint and auth


def test_anthropic_endpoint_and_auth_come_from_the_rule_file() -> None:
    with Stub(always(text_reply("anthropic"))) as stub:
        translate_once(stub, "anthropic", api_key="k-anthropic", transport=None)
    [request] = stub.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "k-anthropic"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.headers["content-type"].startswith("application/json")


def test_openai_endpoint_and_auth_come_from_the_rule_file() -> None:
    with Stub(always(text_reply("openai"))) as stub:
        translate_once(stub, "openai", api_key="k-openai", transport=None)
    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k-openai"
    assert "x-api-key" not in request.headers
    assert "anthropic-version" not in request.headers


def auth_value(style: str, request: StubRequest) -> str:
    return request.headers["x-api-key"] if style == "anthropic" else request.headers["authorization"]


def expected_auth(style: str, key: str) -> str:
    return key if style == "anthropic" else f"Bearer {key}"


@pytest.mark.parametrize("style", STYLES)
def test_key_comes_from_the_env_var_the_rules_name(style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_ENV.values():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV[style], f"env-key-{style}")
    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with create_client(base_url=stub.base_url, style=style, model="m") as client:
                await client.translate(USER)

        asyncio.run(main())
    assert auth_value(style, stub.requests[0]) == expected_auth(style, f"env-key-{style}")


@pytest.mark.parametrize("style", STYLES)
def test_an_explicit_api_key_wins_over_the_env_var(style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV[style], "env-key")
    with Stub(always(text_reply(style))) as stub:
        translate_once(stub, style, api_key="explicit-key")
    assert auth_value(style, stub.requests[0]) == expected_auth(style, "explicit-key")


@pytest.mark.parametrize("style", STYLES)
def test_a_missing_key_is_a_config_error_before_any_request(style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_ENV.values():
        monkeypatch.delenv(name, raising=False)
    with Stub(always(text_reply(style))) as stub:
        with pytest.raises(ConfigError) as info:
            create_client(base_url=stub.base_url, style=style, model="m")
        assert KEY_ENV[style] in str(info.value)
        assert stub.requests == []


def test_the_other_providers_env_var_does_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "openai-only")
    with pytest.raises(ConfigError):
        create_client(base_url="http://127.0.0.1:9/v1", style="anthropic", model="m")


def test_an_unknown_style_is_refused_at_create_client() -> None:
    with pytest.raises(ToolnexusError):
        create_client(base_url="http://127.0.0.1:9/v1", style="no-such-provider", model="m", api_key="k")


# ----------------------------------------------------------------- system precedence


def sent_system(style: str, body: dict[str, Any]) -> Any:
    """The system prompt in a provider body; on OpenAI also asserts it is ONE system message at the front."""
    if style == "anthropic":
        return body.get("system")
    messages = body["messages"]
    system_like = [m for m in messages if m.get("role") in ("system", "developer")]
    if not system_like:
        return None
    assert len(system_like) == 1, messages
    assert messages[0] is system_like[0] or messages[0] == system_like[0]
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


PRECEDENCE_CASES = [
    # (id, transcript, per-call system, client system_prompt, expected prompt)
    ("client-default-only", USER, None, "client default", "client default"),
    ("transcript-beats-default", [{"role": "system", "content": "from transcript"}, *USER], None, "client default",
     "from transcript"),
    ("developer-beats-default", [{"role": "developer", "content": "from developer"}, *USER], None, "client default",
     "from developer"),
    ("per-call-beats-transcript", [{"role": "system", "content": "from transcript"}, *USER], "per call",
     "client default", "per call"),
    ("per-call-beats-default", USER, "per call", "client default", "per call"),
    ("per-call-beats-developer", [*USER, {"role": "developer", "content": "late developer"}], "per call", None,
     "per call"),
    ("none-at-all", USER, None, None, None),
]  # fmt: skip


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(
    ("transcript", "system", "default", "expected"),
    [case[1:] for case in PRECEDENCE_CASES],
    ids=[case[0] for case in PRECEDENCE_CASES],
)
def test_system_precedence(style: str, transcript: list[Any], system: str | None, default: str | None,
                           expected: str | None) -> None:  # fmt: skip
    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with make_client(stub, style, system_prompt=default) as client:
                await client.translate(transcript, system=system)

        asyncio.run(main())
    body = stub.requests[0].body
    assert sent_system(style, body) == expected
    # the user turn is still there, and no system/developer message survives elsewhere
    assert {"role": "user", "content": "hi"} in body["messages"]
    if style == "anthropic":
        assert all(m["role"] in ("user", "assistant") for m in body["messages"])


def test_openai_chosen_prompt_is_one_system_message_at_the_front_even_from_mid_transcript() -> None:
    transcript = [
        {"role": "user", "content": "first"},
        {"role": "system", "content": "late system"},
        {"role": "assistant", "content": "ok"},
        {"role": "developer", "content": "late developer"},
        {"role": "user", "content": "second"},
    ]
    with Stub(always(text_reply("openai"))) as stub:

        async def main() -> None:
            async with make_client(stub, "openai", system_prompt="client default") as client:
                await client.translate(transcript)

        asyncio.run(main())
    messages = stub.requests[0].body["messages"]
    assert messages[0] == {"role": "system", "content": "late system\n\nlate developer"}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


# ----------------------------------------------------------------- max_tokens


@pytest.mark.parametrize(
    ("style", "max_tokens", "expected"),
    [("openai", 0, None), ("openai", 50, 50), ("anthropic", 0, 4096), ("anthropic", 50, 50)],
)
def test_max_tokens_is_sent_only_when_positive_except_the_provider_default(
    style: str, max_tokens: int, expected: int | None
) -> None:
    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with make_client(stub, style) as client:
                await client.translate(USER, max_tokens=max_tokens)

        asyncio.run(main())
    body = stub.requests[0].body
    if expected is None:
        assert "max_tokens" not in body and "max_completion_tokens" not in body
    else:
        assert body["max_tokens"] == expected


# ----------------------------------------------------------------- body on the wire / raw / model

RICH_TRANSCRIPT = [
    {"role": "system", "content": "transcript system"},
    {"role": "user", "content": "What is the weather in Chennai and 2+2?"},
    {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Chennai"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "sunny, 31C"},
    {"role": "tool", "tool_call_id": "call_b", "content": "4"},
    {"role": "user", "content": [{"type": "text", "text": "thanks, summarise"}]},
]
RICH_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("per_call_system", [None, "per-call system"])
def test_the_body_on_the_wire_is_exactly_translate_request(style: str, per_call_system: str | None) -> None:
    toolkit = asyncio.run(create_toolkit())
    toolkit.register(define_tool(add))
    reply = text_reply(style, "Chennai is sunny; 2+2 is 4.")
    with Stub(always(reply)) as stub:

        async def main() -> toolnexus.TranslateResult:
            async with make_client(stub, style, system_prompt="client default") as client:
                return await client.translate(
                    RICH_TRANSCRIPT, tools=RICH_TOOLS, toolkit=toolkit, tool_choice="auto", system=per_call_system,
                    max_tokens=300,
                )  # fmt: skip

        result = asyncio.run(main())
    expected = translate_request(
        style,
        {
            "model": "m",
            "messages": RICH_TRANSCRIPT,
            "tools": toolkit.to_openai() + RICH_TOOLS,
            "tool_choice": "auto",
            "max_tokens": 300,
        },
        system=per_call_system,
        default_system="client default",
    )
    expected_wire = json.loads(json.dumps(expected))
    [request] = stub.requests
    assert request.body == expected_wire
    assert list(request.body) == list(expected_wire)  # same keys, same order: nothing added, nothing moved
    # raw is the provider's decoded response, unchanged; model is the one the provider names
    assert result.raw == reply
    assert result.model == ANSWERED[style] != "m"
    assert result.text == "Chennai is sunny; 2+2 is 4."
    assert result.finish_reason == "stop"


@pytest.mark.parametrize("style", STYLES)
def test_a_minimal_body_equals_translate_request_and_raw_is_unchanged(style: str) -> None:
    reply = text_reply(style)
    reply["unexpected_provider_field"] = {"nested": [1, 2, {"x": None}]}
    with Stub(always(reply)) as stub:
        result = translate_once(stub, style)
    assert stub.requests[0].body == json.loads(json.dumps(translate_request(style, {"model": "m", "messages": USER})))
    assert result.raw == reply
    assert result.usage["total_tokens"] == 15


@pytest.mark.parametrize("style", STYLES)
def test_result_model_is_what_the_provider_says(style: str) -> None:
    reply = text_reply(style)
    reply["model"] = "some-other-snapshot-2025"
    with Stub(always(reply)) as stub:
        assert translate_once(stub, style).model == "some-other-snapshot-2025"


@pytest.mark.parametrize("style", STYLES)
def test_nothing_is_remembered_between_calls(style: str) -> None:
    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with make_client(stub, style) as client:
                await client.translate([{"role": "user", "content": "first turn"}])
                await client.translate([{"role": "user", "content": "second turn"}])

        asyncio.run(main())
    _first, second = stub.requests
    assert "first turn" not in json.dumps(second.body)
    assert second.body == json.loads(
        json.dumps(translate_request(style, {"model": "m", "messages": [{"role": "user", "content": "second turn"}]}))
    )


# ----------------------------------------------------------------- request_params and before_llm


@pytest.mark.parametrize("style", STYLES)
def test_request_params_are_shallow_merged_after_translation_and_win(style: str) -> None:
    params = {"temperature": 0.25, "max_tokens": 77, "top_k": 5, "metadata": {"user_id": "u-1"}}
    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with make_client(stub, style, request_params=params) as client:
                await client.translate(USER, max_tokens=300)

        asyncio.run(main())
    translated = json.loads(json.dumps(translate_request(style, {"model": "m", "messages": USER, "max_tokens": 300})))
    assert stub.requests[0].body == {**translated, **params}
    assert stub.requests[0].body["max_tokens"] == 77  # the caller's key wins on collision


@pytest.mark.parametrize("refused", ["messages", "tools", "stream"])
@pytest.mark.parametrize("style", STYLES)
def test_request_params_refuse_messages_tools_stream_at_create_client(style: str, refused: str) -> None:
    with Stub(always(text_reply(style))) as stub:
        with pytest.raises(ConfigError) as info:
            make_client(stub, style, request_params={"temperature": 0.1, refused: []})
        assert refused in str(info.value)
        assert stub.requests == []


@pytest.mark.parametrize("style", STYLES)
def test_order_is_translation_then_request_params_then_before_llm(style: str) -> None:
    seen: list[dict[str, Any]] = []
    replacement = {"model": "replaced-model", "messages": [{"role": "user", "content": "replaced"}], "x_extra": 1}

    def before(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(copy.deepcopy(body))
        return replacement

    with Stub(always(text_reply(style))) as stub:
        translate_once(stub, style, request_params={"temperature": 0.5}, before_llm=before)
    translated = json.loads(json.dumps(translate_request(style, {"model": "m", "messages": USER})))
    assert seen == [{**translated, "temperature": 0.5}]  # before_llm sees the merged body
    assert stub.requests[0].body == replacement  # and its replacement is what goes on the wire


@pytest.mark.parametrize("style", STYLES)
def test_an_async_before_llm_may_replace_and_one_returning_none_keeps_the_body(style: str) -> None:
    async def replace(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {**body, "temperature": 0.9}

    def inspect_only(body: dict[str, Any]) -> None:
        return None

    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with make_client(stub, style, before_llm=replace) as client:
                await client.translate(USER)
            async with make_client(stub, style, before_llm=inspect_only) as client:
                await client.translate(USER)

        asyncio.run(main())
    translated = json.loads(json.dumps(translate_request(style, {"model": "m", "messages": USER})))
    assert stub.requests[0].body == {**translated, "temperature": 0.9}
    assert stub.requests[1].body == translated


# ----------------------------------------------------------------- hooks fire once, retries included


@pytest.mark.parametrize("style", STYLES)
def test_hooks_fire_exactly_once_per_translate_even_with_a_retry(style: str) -> None:
    reply = text_reply(style)
    before_calls: list[dict[str, Any]] = []
    after_calls: list[dict[str, Any]] = []
    events: list[LLMEvent] = []
    responder = scripted([StubReply(status=429, body=error_body(style, "rate_limit_error", "slow down"),
                                    headers={"retry-after-ms": "10"}), reply])  # fmt: skip
    with Stub(responder) as stub:

        async def main() -> None:
            async with make_client(
                stub, style, before_llm=before_calls.append, after_llm=after_calls.append, on_event=events.append
            ) as client:
                await client.translate(USER)

        asyncio.run(main())
    assert len(stub.requests) == 2
    assert len(before_calls) == 1
    assert after_calls == [reply]  # the decoded provider response
    assert [e.attempts for e in events] == [2]


@pytest.mark.parametrize("style", STYLES)
def test_after_llm_does_not_fire_on_a_failed_call_and_before_llm_fires_once(style: str) -> None:
    before_calls: list[Any] = []
    after_calls: list[Any] = []
    with Stub(always(StubReply(status=503, body=error_body(style, "overloaded_error", "busy")))) as stub:

        async def main() -> None:
            async with make_client(
                stub, style, max_retries=2, before_llm=before_calls.append, after_llm=after_calls.append
            ) as client:
                with pytest.raises(ProviderError):
                    await client.translate(USER)

        asyncio.run(main())
    assert len(stub.requests) == 3
    assert len(before_calls) == 1
    assert after_calls == []


@pytest.mark.parametrize("style", STYLES)
def test_an_answer_is_checked_once_in_its_parse(style: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parse refuses what the JSON check refuses, so the decoded answer is not walked a second time."""
    walked: list[Any] = []
    check = jsonsafe.check
    monkeypatch.setattr(jsonsafe, "check", lambda value: walked.append(value) or check(value))
    with Stub(always(tool_reply(style, "add", {"a": 1.5, "b": [None, 2]}))) as stub:
        result = translate_once(stub, style)
    assert json.loads(result.tool_calls[0].arguments) == {"a": 1.5, "b": [None, 2]}
    assert [sorted(value) for value in walked] == [["messages", "model"]]  # the request's check alone


@pytest.mark.parametrize("style", STYLES)
def test_an_answer_after_llm_changed_is_checked_again(style: str) -> None:
    """after_llm may change the decoded answer: what JSON cannot carry is then a ResponseError at its path."""

    def poison(data: dict[str, Any]) -> None:
        data["x"] = {"n": float("nan")}

    with Stub(always(text_reply(style))) as stub, pytest.raises(toolnexus.ResponseError) as info:
        translate_once(stub, style, after_llm=poison)
    assert info.value.path == "x.n"


# ----------------------------------------------------------------- concurrency


def test_the_stock_stub_accepts_100_simultaneous_connections() -> None:
    """The shipped ProviderStub itself (no test tweak), raw httpx, 200 POSTs / 100 connections at once.

    The issue's concurrency test runs against this stub; with socketserver's default
    listen backlog of 5 the kernel resets some of the connects (httpx.ReadError).
    """
    with ProviderStub(always({"ok": True})) as stub:

        async def main() -> list[Any]:
            # httpx's 5 s default timeouts are not what this is about: on a loaded machine the second hundred
            # wait longer than that for a pooled connection (PoolTimeout); a reset connect fails at once anyway
            async with httpx.AsyncClient(timeout=30.0) as http:
                return await asyncio.gather(
                    *(http.post(stub.base_url + "/chat/completions", json={"i": i}) for i in range(200)),
                    return_exceptions=True,
                )

        outcomes = asyncio.run(main())
    failures = [type(o).__name__ for o in outcomes if not isinstance(o, httpx.Response)]
    assert failures == []
    assert len(stub.requests) == 200


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("stack", STACKS)
def test_200_concurrent_translates_on_one_client_each_carry_their_own_messages(style: str, stack: str | None) -> None:
    marker = re.compile(r"<m(\d{3})>")

    def echo(request: StubRequest) -> dict[str, Any]:
        found = sorted(set(marker.findall(json.dumps(request.body))))
        return text_reply(style, "echo " + ",".join(found))

    def transcript(i: int) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": f"system for <m{i:03d}>"},
            {"role": "user", "content": f"question <m{i:03d}>"},
            {"role": "assistant", "content": f"answer <m{i:03d}>"},
            {"role": "user", "content": f"follow-up <m{i:03d}>"},
        ]

    n = 200
    with Stub(echo) as stub:

        async def main() -> list[toolnexus.TranslateResult]:
            async with make_client(stub, style, max_retries=0, transport=stack) as client:
                return await asyncio.gather(*(client.translate(transcript(i)) for i in range(n)))

        results = asyncio.run(main())
    assert [r.text for r in results] == [f"echo {i:03d}" for i in range(n)]
    assert len(stub.requests) == n
    by_marker: dict[str, dict[str, Any]] = {}
    for request in stub.requests:
        found = set(marker.findall(json.dumps(request.body)))
        assert len(found) == 1, found
        by_marker[found.pop()] = request.body
    assert len(by_marker) == n
    for i in range(n):
        expected = json.loads(json.dumps(translate_request(style, {"model": "m", "messages": transcript(i)})))
        assert by_marker[f"{i:03d}"] == expected


# ----------------------------------------------------------------- toolkits


def test_define_tool_infers_the_schema_from_type_hints() -> None:
    def lookup(
        query: str,
        limit: int,
        ratio: float,
        exact: bool,
        ids: list[int],
        filters: dict,  # type: ignore[type-arg]
        note: Optional[str],  # noqa: UP045
        mode: Literal["a", "b"],
        page: int = 1,
        label: str = "x",
    ) -> str:
        """Look things up in the catalogue.

        Longer explanation here.
        """
        raise AssertionError("never called")

    tool = define_tool(lookup)
    assert tool.name == "lookup"
    assert tool.description.startswith("Look things up in the catalogue.")
    schema = tool.input_schema
    assert schema["type"] == "object"
    props = schema["properties"]
    assert props["query"] == {"type": "string"}
    assert props["limit"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number"}
    assert props["exact"] == {"type": "boolean"}
    assert props["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert props["filters"] == {"type": "object"}
    assert props["note"] in (
        {"type": "string"},
        {"type": ["string", "null"]},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
    )
    assert props["mode"]["enum"] == ["a", "b"]
    assert props["mode"].get("type", "string") == "string"
    assert props["page"] == {"type": "integer", "default": 1}
    assert props["label"] == {"type": "string", "default": "x"}
    assert list(props) == ["query", "limit", "ratio", "exact", "ids", "filters", "note", "mode", "page", "label"]
    assert schema["required"] == ["query", "limit", "ratio", "exact", "ids", "filters", "mode"]


def test_define_tool_explicit_name_description_and_schema_win() -> None:
    def f(x: int) -> int:
        """Docstring."""
        return x

    schema = {"type": "object", "properties": {"y": {"type": "string"}}}
    tool = define_tool(f, name="renamed", description="Explicit.", input_schema=schema)
    assert (tool.name, tool.description, tool.input_schema) == ("renamed", "Explicit.", schema)


def test_define_tool_without_a_docstring_has_an_empty_description_and_no_params_schema() -> None:
    def ping() -> None:
        pass

    tool = define_tool(ping)
    assert tool.description == ""
    assert tool.input_schema == {"type": "object", "properties": {}}


class Custom:
    pass


def test_define_tool_refuses_what_it_cannot_infer() -> None:
    def f(x: Custom) -> None: ...

    def g(*args: int) -> None: ...

    with pytest.raises(ConfigError):
        define_tool(f)
    with pytest.raises(ConfigError):
        define_tool(g)
    with pytest.raises(ConfigError):
        define_tool(lambda x: x)


def test_define_tool_with_an_unresolvable_annotation_is_a_config_error_not_a_name_error() -> None:
    """A hint that cannot be resolved (a local class under postponed annotations) is still 'cannot infer'."""

    class Local:
        pass

    def f(x: Local) -> None: ...

    with pytest.raises(ConfigError):
        define_tool(f)
    # and input_schema= is the documented way out
    assert define_tool(f, input_schema={"type": "object"}).input_schema == {"type": "object"}


def test_toolkit_to_openai_and_to_anthropic() -> None:
    async def main() -> None:
        toolkit = await create_toolkit()
        toolkit.register(define_tool(add))
        assert toolkit.to_openai() == [
            {
                "type": "function",
                "function": {
                    "name": "add",
                    "parameters": {
                        "type": "object",
                        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                        "required": ["a", "b"],
                    },
                    "description": "Add two numbers.",
                },
            }
        ]
        assert toolkit.to_anthropic() == [
            {
                "name": "add",
                "description": "Add two numbers.",
                "input_schema": {
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                },
            }
        ]
        # the same rules translate uses
        body = translate_request("anthropic", {"model": "m", "messages": USER, "tools": toolkit.to_openai()})
        assert toolkit.to_anthropic() == body["tools"]
        with pytest.raises(ConfigError):
            toolkit.register(define_tool(add))  # one name, once
        await toolkit.close()
        assert toolkit.to_openai() == []

    asyncio.run(main())


@pytest.mark.parametrize("style", STYLES)
def test_toolkit_tools_are_declared_before_tools_entries(style: str) -> None:
    def alpha(x: str) -> str:
        """Alpha."""
        return x

    def beta(y: int) -> int:
        """Beta."""
        return y

    async def main() -> None:
        toolkit = await create_toolkit()
        toolkit.register(define_tool(alpha))
        toolkit.register(define_tool(beta))
        with Stub(always(text_reply(style))) as stub:
            async with make_client(stub, style) as client:
                await client.translate(USER, toolkit=toolkit, tools=RICH_TOOLS)
        await toolkit.close()
        tools = stub.requests[0].body["tools"]
        names = [t["name"] if style == "anthropic" else t["function"]["name"] for t in tools]
        assert names == ["alpha", "beta", "weather"]

    asyncio.run(main())


@pytest.mark.parametrize("style", STYLES)
def test_a_declared_tool_is_never_executed_even_when_the_model_asks_for_it(style: str) -> None:
    called = threading.Event()

    def launch_missiles(target: str, count: int = 1) -> str:
        """Irreversible. Must never run inside toolnexus."""
        called.set()
        raise AssertionError("translate executed a tool")

    async def main() -> toolnexus.TranslateResult:
        toolkit = await create_toolkit()
        toolkit.register(define_tool(launch_missiles))
        try:
            with Stub(always(tool_reply(style, "launch_missiles", {"target": "moon", "count": 3}))) as stub:
                async with make_client(stub, style) as client:
                    result = await client.translate(USER, toolkit=toolkit)
            declared = stub.requests[0].body["tools"]
            assert [t["name"] if style == "anthropic" else t["function"]["name"] for t in declared] == [
                "launch_missiles"
            ]
            return result
        finally:
            await toolkit.close()

    result = asyncio.run(main())
    assert not called.is_set()
    assert result.finish_reason == "tool_calls"
    [call] = result.tool_calls
    assert call.name == "launch_missiles"
    assert json.loads(call.arguments) == {"target": "moon", "count": 3}


# ----------------------------------------------------------------- retries


@pytest.mark.parametrize("style", STYLES)
def test_429_with_retry_after_ms_is_retried_and_the_header_is_honoured(style: str) -> None:
    events: list[LLMEvent] = []
    responder = scripted([StubReply(status=429, body=error_body(style, "rate_limit_error", "slow down"),
                                    headers={"retry-after-ms": "10"}), text_reply(style)])  # fmt: skip
    with Stub(responder) as stub:

        async def main() -> float:
            # a long backoff: only honouring retry-after-ms (10 ms) keeps this fast
            async with make_client(stub, style, backoff=LONG_BACKOFF, on_event=events.append) as client:
                started = time.perf_counter()
                result = await client.translate(USER)
                assert result.text == "hello there"
                return time.perf_counter() - started

        elapsed = asyncio.run(main())
    assert len(stub.requests) == 2
    assert [e.attempts for e in events] == [2]
    assert events[0].outcome == "ok" and events[0].status == 200
    assert elapsed < PROMPTLY  # not the backoff


@pytest.mark.parametrize("style", STYLES)
def test_retry_after_in_seconds_is_honoured(style: str) -> None:
    responder = scripted([StubReply(status=429, body=error_body(style, "rate_limit_error", "slow down"),
                                    headers={"retry-after": "0"}), text_reply(style)])  # fmt: skip
    with Stub(responder) as stub:

        async def main() -> float:
            async with make_client(stub, style, backoff=LONG_BACKOFF) as client:
                started = time.perf_counter()
                await client.translate(USER)
                return time.perf_counter() - started

        elapsed = asyncio.run(main())
    assert len(stub.requests) == 2
    assert elapsed < PROMPTLY  # not the backoff


@pytest.mark.parametrize("style", STYLES)
def test_without_retry_after_the_exponential_backoff_is_waited(style: str, sleeps: list[float]) -> None:
    responder = scripted([StubReply(status=503, body=error_body(style, "overloaded_error", "busy")),
                          StubReply(status=503, body=error_body(style, "overloaded_error", "busy")),
                          text_reply(style)])  # fmt: skip
    with Stub(responder) as stub:

        async def main() -> float:
            async with make_client(stub, style, backoff=(0.1, 0.15)) as client:
                started = time.perf_counter()
                await client.translate(USER)
                return time.perf_counter() - started

        elapsed = asyncio.run(main())
    assert len(stub.requests) == 3
    # waits of 0.1 s then 0.2 s capped at 0.15 s, each with up to 25% jitter off, and really waited
    [first, second] = sleeps
    assert 0.075 <= first <= 0.1 and 0.1125 <= second <= 0.15, sleeps
    assert elapsed >= first + second


@pytest.mark.parametrize("status", [500, 502, 503, 504, 529, 408, 409])
@pytest.mark.parametrize("style", STYLES)
def test_retryable_statuses_are_retried(style: str, status: int) -> None:
    events: list[LLMEvent] = []
    responder = scripted([StubReply(status=status, body=error_body(style, "api_error", "transient")),
                          text_reply(style)])  # fmt: skip
    with Stub(responder) as stub:
        result = translate_once(stub, style, on_event=events.append)
    assert result.text == "hello there"
    assert len(stub.requests) == 2
    assert [e.attempts for e in events] == [2]


NON_RETRYABLE = [
    (400, "invalid_request_error", "messages: roles must alternate"),
    (401, "authentication_error", "invalid x-api-key"),
    (403, "permission_error", "not allowed"),
    (404, "not_found_error", "model: no such model"),
    (422, "invalid_request_error", "unprocessable"),
]


@pytest.mark.parametrize(("status", "error_type", "message"), NON_RETRYABLE, ids=[str(c[0]) for c in NON_RETRYABLE])
@pytest.mark.parametrize("style", STYLES)
def test_non_retryable_errors_raise_provider_error_parsed_from_the_error_body(
    style: str, status: int, error_type: str, message: str
) -> None:
    events: list[LLMEvent] = []
    reply = StubReply(status=status, body=error_body(style, error_type, message),
                      headers={REQUEST_ID_HEADER[style]: "req_0123abc"})  # fmt: skip
    with Stub(always(reply)) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style, max_retries=3, on_event=events.append) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert len(stub.requests) == 1  # not retried
    assert isinstance(error, ToolnexusError)
    assert error.status == status
    assert error.provider == style
    assert error.kind == "http"
    assert error.error_type == error_type
    assert error.message == message
    assert error.request_id == "req_0123abc"
    assert error.attempts == 1
    assert message in str(error) and str(status) in str(error)
    assert [(e.outcome, e.status, e.attempts) for e in events] == [("error", status, 1)]


@pytest.mark.parametrize("style", STYLES)
def test_request_id_header_of_the_other_provider_is_not_used(style: str) -> None:
    other = REQUEST_ID_HEADER["openai" if style == "anthropic" else "anthropic"]
    reply = StubReply(status=400, body=error_body(style, "invalid_request_error", "bad"), headers={other: "wrong"})
    with Stub(always(reply)) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        assert asyncio.run(main()).request_id is None


@pytest.mark.parametrize("style", STYLES)
def test_max_retries_zero_means_exactly_one_attempt(style: str) -> None:
    events: list[LLMEvent] = []
    with Stub(always(StubReply(status=503, body=error_body(style, "overloaded_error", "busy")))) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style, max_retries=0, on_event=events.append) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert len(stub.requests) == 1
    assert error.attempts == 1 and error.status == 503
    assert [e.attempts for e in events] == [1]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("max_retries", [1, 3])
def test_exhausted_retries_raise_provider_error_with_all_attempts(style: str, max_retries: int) -> None:
    reply = StubReply(status=503, body=error_body(style, "overloaded_error", "Overloaded"),
                      headers={REQUEST_ID_HEADER[style]: "req_last"})  # fmt: skip
    events: list[LLMEvent] = []
    with Stub(always(reply)) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style, max_retries=max_retries, on_event=events.append) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert len(stub.requests) == max_retries + 1
    assert error.attempts == max_retries + 1
    assert (error.status, error.kind, error.error_type) == (503, "http", "overloaded_error")
    assert error.message == "Overloaded"
    assert error.request_id == "req_last"
    assert [e.attempts for e in events] == [max_retries + 1]


def test_negative_max_retries_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        create_client(base_url="http://127.0.0.1:9/v1", style="openai", model="m", api_key="k", max_retries=-1)


@pytest.mark.parametrize("style", STYLES)
def test_connection_refused_is_retried_then_a_connection_provider_error(style: str) -> None:
    with Stub(always(text_reply(style))) as stub:
        base_url = stub.base_url
    # the stub is stopped: nothing listens on that port any more

    async def main() -> ProviderError:
        async with create_client(base_url=base_url, style=style, model="m", api_key="k", max_retries=2,
                                 backoff=FAST) as client:  # fmt: skip
            with pytest.raises(ProviderError) as info:
                await client.translate(USER)
            return info.value

    error = asyncio.run(main())
    assert error.kind == "connection"
    assert error.attempts == 3
    assert error.status is None


# ----------------------------------------------------------------- unreadable bodies

HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
    b"<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n" + b"<!-- padding -->" * 40
)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("max_retries", [0, 1])
def test_an_html_502_page_gives_a_clear_provider_error_with_its_first_bytes(style: str, max_retries: int) -> None:
    with Stub(always(StubReply(status=502, body=HTML_502, headers={"Content-Type": "text/html"}))) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style, max_retries=max_retries) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert type(error) is ProviderError
    assert len(stub.requests) == max_retries + 1
    assert error.status == 502
    assert error.error_type is None
    assert "502 Bad Gateway" in error.message
    assert "<html>" in str(error)
    assert len(str(error)) < 600  # the first bytes, not the whole page


@pytest.mark.parametrize("style", STYLES)
def test_a_200_with_a_non_json_body_is_a_decode_provider_error(style: str) -> None:
    body = b"<html><body>captive portal login</body></html>"
    with Stub(always(StubReply(status=200, body=body, headers={"Content-Type": "text/html"}))) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert type(error) is ProviderError
    assert error.kind == "decode"
    assert error.status == 200
    assert "captive portal" in str(error)
    assert len(stub.requests) == 1


@pytest.mark.parametrize("style", STYLES)
def test_a_200_with_a_json_non_object_is_a_decode_provider_error(style: str) -> None:
    with Stub(always(StubReply(status=200, body=[1, 2, 3]))) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert error.kind == "decode"


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("max_retries", [0, 2])
def test_a_cut_connection_gives_a_provider_error_not_a_raw_exception(style: str, max_retries: int) -> None:
    with Stub(always(StubReply(body=text_reply(style), cut=True))) as stub:

        async def main() -> BaseException:
            async with make_client(stub, style, max_retries=max_retries) as client:
                try:
                    await client.translate(USER)
                except BaseException as exc:  # its type is asserted below
                    return exc
                raise AssertionError("a cut body was accepted")

        error = asyncio.run(main())
    assert type(error) is ProviderError, repr(error)
    assert not isinstance(error, (httpx.HTTPError, json.JSONDecodeError))
    assert error.kind in ("connection", "decode")
    assert error.provider == style
    assert len(stub.requests) == max_retries + 1
    assert error.attempts == max_retries + 1


@pytest.mark.parametrize("style", STYLES)
def test_a_cut_connection_then_success_is_retried(style: str) -> None:
    responder = scripted([StubReply(body=text_reply(style), cut=True), text_reply(style)])
    with Stub(responder) as stub:
        assert translate_once(stub, style).text == "hello there"
    assert len(stub.requests) == 2


# ----------------------------------------------------------------- cancel


def slow_then_fast(style: str, delay: float = 5.0) -> Any:
    """First request: answer after `delay` s; every later one: at once."""
    return scripted([StubReply(body=text_reply(style, "slow"), delay=delay), text_reply(style, "fast")])


async def cancel_once_received(stub: ProviderStub, cancel: asyncio.Event) -> float:
    """Set `cancel` once the stub holds a request, and say when (perf_counter).

    Not after a fixed delay: a loaded machine may not have sent the request by then, and the
    stub's slow first reply would go to the next call instead of the cancelled one.
    """
    await until(lambda: bool(stub.requests), "the cancelled call's request at the stub")
    cancel.set()
    return time.perf_counter()


async def task_cancelled_once_received(stub: ProviderStub, task: asyncio.Task[Any]) -> float:
    """`task.cancel()` once the stub holds a request (see cancel_once_received), and say when."""
    await until(lambda: bool(stub.requests), "the cancelled call's request at the stub")
    task.cancel()
    return time.perf_counter()


# A cancelled call returns well before the slow reply's 5 s: it did not wait for the answer.
PROMPTLY = 2.5

# A backoff that is never waited out in a passing test: at least 7.5 s (25% jitter off), three times PROMPTLY.
LONG_BACKOFF = (10.0, 10.0)


def one_connection(stack: str = "aiohttp") -> Any:
    """A pool of ONE connection: a leaked connection would make the next call wait forever."""
    return one_connection_transport(stack)


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("style", STYLES)
def test_setting_the_cancel_event_aborts_promptly_and_the_client_still_works(style: str, stack: str) -> None:
    events: list[LLMEvent] = []
    with Stub(slow_then_fast(style)) as stub:

        async def main() -> tuple[float, list[str]]:
            async with make_client(stub, style, transport=one_connection(stack), on_event=events.append) as client:
                cancel = asyncio.Event()
                setter = asyncio.create_task(cancel_once_received(stub, cancel))
                with pytest.raises(Cancelled):
                    await client.translate(USER, cancel=cancel)
                elapsed = time.perf_counter() - await setter
                # the same client, same single-connection pool, still works (a leaked connection would hang)
                after = [
                    (await asyncio.wait_for(client.translate(USER), timeout=10.0)).text,
                    (await asyncio.wait_for(client.translate(USER, cancel=asyncio.Event()), timeout=10.0)).text,
                ]
                return elapsed, after

        elapsed, after = asyncio.run(main())
    assert elapsed < PROMPTLY
    assert after == ["fast", "fast"]
    assert isinstance(Cancelled("x"), ToolnexusError)
    assert len(stub.requests) == 3


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("style", STYLES)
def test_cancelling_the_task_works_and_the_client_still_works(style: str, stack: str) -> None:
    with Stub(slow_then_fast(style)) as stub:

        async def main() -> tuple[float, str]:
            async with make_client(stub, style, transport=one_connection(stack)) as client:
                task = asyncio.create_task(client.translate(USER))
                cancelled_at = await task_cancelled_once_received(stub, task)
                with pytest.raises(asyncio.CancelledError):
                    await task
                elapsed = time.perf_counter() - cancelled_at
                result = await asyncio.wait_for(client.translate(USER), timeout=10.0)
                return elapsed, result.text

        elapsed, text = asyncio.run(main())
    assert elapsed < PROMPTLY
    assert text == "fast"


@pytest.mark.parametrize("style", STYLES)
def test_a_cancelled_call_emits_exactly_one_cancelled_event(style: str) -> None:
    events: list[LLMEvent] = []
    with Stub(slow_then_fast(style)) as stub:

        async def main() -> None:
            async with make_client(stub, style, on_event=events.append) as client:
                cancel = asyncio.Event()
                setter = asyncio.create_task(cancel_once_received(stub, cancel))
                with pytest.raises(Cancelled):
                    await client.translate(USER, cancel=cancel)
                await setter

        asyncio.run(main())
    assert [e.outcome for e in events] == ["cancelled"]


@pytest.mark.parametrize("style", STYLES)
def test_cancel_event_during_retry_backoff_aborts_promptly(style: str, sleeps: list[float]) -> None:
    reply = StubReply(status=503, body=error_body(style, "overloaded_error", "busy"))
    with Stub(always(reply)) as stub:

        async def main() -> float:
            async with make_client(stub, style, backoff=LONG_BACKOFF, max_retries=3) as client:
                cancel = asyncio.Event()

                async def cancel_in_backoff() -> float:
                    # once the backoff has begun (not after a fixed delay: a loaded machine may still be
                    # in the first attempt then, and the cancel would not be the one this test is about)
                    await until(lambda: any(delay >= 1 for delay in sleeps), "the retry's backoff")
                    cancel.set()
                    return time.perf_counter()

                setter = asyncio.create_task(cancel_in_backoff())
                with pytest.raises(Cancelled):
                    await client.translate(USER, cancel=cancel)
                return time.perf_counter() - await setter

        assert asyncio.run(main()) < PROMPTLY  # not the rest of the backoff
    assert len(stub.requests) == 1


def test_an_already_set_cancel_event_sends_nothing_or_aborts() -> None:
    with Stub(slow_then_fast("openai")) as stub:

        async def main() -> float:
            async with make_client(stub, "openai") as client:
                cancel = asyncio.Event()
                cancel.set()
                started = time.perf_counter()
                with pytest.raises(Cancelled):
                    await client.translate(USER, cancel=cancel)
                return time.perf_counter() - started

        assert asyncio.run(main()) < PROMPTLY  # not the slow answer


# ----------------------------------------------------------------- timeouts


@pytest.mark.parametrize("style", STYLES)
def test_per_attempt_timeout(style: str) -> None:
    events: list[LLMEvent] = []
    with Stub(always(StubReply(body=text_reply(style), delay=5.0))) as stub:

        async def main() -> tuple[ProviderError, float]:
            async with make_client(stub, style, timeout=0.2, max_retries=0, on_event=events.append) as client:
                started = time.perf_counter()
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value, time.perf_counter() - started

        error, elapsed = asyncio.run(main())
    assert error.kind == "timeout"
    assert error.attempts == 1
    assert len(stub.requests) == 1
    assert elapsed < PROMPTLY  # well under the 5 s answer
    assert [(e.outcome, e.attempts) for e in events] == [("error", 1)]


@pytest.mark.parametrize("style", STYLES)
def test_a_per_attempt_timeout_is_retried(style: str) -> None:
    # a 1 s attempt timeout: the fast answer has time to arrive on a loaded machine, the slow one (5 s) does not
    with Stub(slow_then_fast(style)) as stub:
        assert translate_once(stub, style, timeout=1.0, max_retries=1).text == "fast"
    assert len(stub.requests) == 2


@pytest.mark.parametrize("style", STYLES)
def test_overall_timeout_bounds_all_retries(style: str) -> None:
    events: list[LLMEvent] = []
    reply = StubReply(status=503, body=error_body(style, "overloaded_error", "busy"))
    with Stub(always(reply)) as stub:

        async def main() -> tuple[ProviderError, float]:
            # retries alone would take at least 60 x 0.15 s = 9 s (0.2 s backoffs, up to 25% off); the
            # overall timeout leaves a loaded machine time to send the first request
            async with make_client(
                stub, style, overall_timeout=1.0, max_retries=60, backoff=(0.2, 0.2), on_event=events.append
            ) as client:
                started = time.perf_counter()
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value, time.perf_counter() - started

        error, elapsed = asyncio.run(main())
    assert error.kind == "timeout"
    assert elapsed < 4.5  # half the retries' 9 s
    assert 1 <= len(stub.requests) < 61
    assert len(events) == 1 and events[0].outcome == "error"


@pytest.mark.parametrize("style", STYLES)
def test_overall_timeout_bounds_one_slow_attempt(style: str) -> None:
    with Stub(always(StubReply(body=text_reply(style), delay=5.0))) as stub:

        async def main() -> tuple[ProviderError, float]:
            async with make_client(stub, style, overall_timeout=0.3, timeout=30.0) as client:
                started = time.perf_counter()
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value, time.perf_counter() - started

        error, elapsed = asyncio.run(main())
    assert error.kind == "timeout"
    assert elapsed < PROMPTLY  # well under the 5 s answer


# ----------------------------------------------------------------- observability


@pytest.mark.parametrize("style", STYLES)
def test_exactly_one_event_and_one_debug_record_per_translate(style: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    events: list[LLMEvent] = []
    responder = scripted([
        text_reply(style),
        StubReply(status=429, body=error_body(style, "rate_limit_error", "slow"), headers={"retry-after-ms": "5"}),
        text_reply(style),
        StubReply(status=400, body=error_body(style, "invalid_request_error", "bad")),
    ])  # fmt: skip
    with Stub(responder) as stub:

        async def main() -> list[toolnexus.TranslateResult]:
            async with make_client(stub, style, on_event=events.append) as client:
                first = await client.translate(USER)
                second = await client.translate(USER)
                with pytest.raises(ProviderError):
                    await client.translate(USER)
                return [first, second]

        first, second = asyncio.run(main())
    assert len(stub.requests) == 4
    assert len(events) == 3
    ok1, ok2, failed = events
    for event, result, attempts in ((ok1, first, 1), (ok2, second, 2)):
        assert event.provider == style
        assert event.model == ANSWERED[style] == result.model
        assert event.attempts == attempts
        assert event.status == 200
        assert event.outcome == "ok"
        assert event.usage == result.usage and event.usage["total_tokens"] == 15
        assert isinstance(event.latency_s, float) and 0 < event.latency_s < 5
    assert (failed.provider, failed.status, failed.outcome, failed.attempts) == (style, 400, "error", 1)
    records = [r for r in caplog.records if r.name == "toolnexus"]
    assert len(records) == 3
    assert all(r.levelno == logging.DEBUG for r in records)
    assert all("llm" in r.getMessage() for r in records)
    assert style in records[0].getMessage()


def test_no_event_callback_is_fine_and_the_logger_still_gets_one_record(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    with Stub(always(text_reply("openai"))) as stub:
        translate_once(stub, "openai")
    assert len([r for r in caplog.records if r.name == "toolnexus"]) == 1


# ----------------------------------------------------------------- secrets

SECRET = "sk-test-SECRET-123"


@pytest.mark.parametrize("style", STYLES)
def test_the_api_key_is_never_in_repr_errors_tracebacks_events_logs_or_raw(
    style: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    events: list[LLMEvent] = []
    responder = scripted([
        text_reply(style),
        StubReply(status=401, body=error_body(style, "authentication_error", "invalid api key"),
                  headers={REQUEST_ID_HEADER[style]: "req_secret_test"}),
        StubReply(status=503, body=HTML_502),
        StubReply(body=text_reply(style), cut=True),
    ])  # fmt: skip
    with Stub(responder) as stub:

        async def main() -> tuple[Any, list[ProviderError], str]:
            client = make_client(stub, style, api_key=SECRET, on_event=events.append, max_retries=0)
            try:
                result = await client.translate(USER)
                errors = []
                for _ in range(3):  # 401, an unreadable 503, a cut connection
                    with pytest.raises(ProviderError) as info:
                        await client.translate(USER)
                    errors.append(info.value)
                return result, errors, repr(client)
            finally:
                await client.aclose()

        result, errors, client_repr = asyncio.run(main())
    # the key really was sent (so this test can fail)
    assert SECRET in auth_value(style, stub.requests[0])
    assert len(events) == 4
    haystacks = {
        "repr(client)": client_repr,
        "events": repr(events) + json.dumps([e.__dict__ for e in events]),
        "caplog": caplog.text,
        "raw": json.dumps(result.raw),
        "result": repr(result),
    }
    for i, error in enumerate(errors):
        haystacks[f"str(error {i})"] = str(error)
        haystacks[f"repr(error {i})"] = repr(error)
        haystacks[f"traceback(error {i})"] = "".join(traceback.format_exception(error))
        haystacks[f"vars(error {i})"] = repr(vars(error))
        cause = error.__cause__ or error.__context__
        if cause is not None:
            haystacks[f"cause(error {i})"] = repr(cause) + str(cause) + repr(getattr(cause, "args", ""))
    leaks = [where for where, text in haystacks.items() if SECRET in text]
    assert leaks == []


@pytest.mark.parametrize("style", STYLES)
def test_the_api_key_is_not_in_an_error_even_if_the_provider_echoes_it(style: str) -> None:
    message = f"Incorrect API key provided: {SECRET}. You can find your API key at https://example.invalid"
    reply = StubReply(status=401, body=error_body(style, "invalid_request_error", message))
    with Stub(always(reply)) as stub:

        async def main() -> ProviderError:
            async with make_client(stub, style, api_key=SECRET) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert error.status == 401
    text = str(error) + repr(error) + "".join(traceback.format_exception(error)) + repr(vars(error))
    assert SECRET not in text


# ----------------------------------------------------------------- lifecycle


@pytest.mark.parametrize("style", STYLES)
def test_async_with_and_aclose_release_the_client(style: str) -> None:
    with Stub(always(text_reply(style))) as stub:

        async def main() -> None:
            async with make_client(stub, style) as client:
                assert isinstance(client, toolnexus.Client)
                assert (await client.translate(USER)).text == "hello there"
            # released: a later call is a StateError (a RuntimeError too, as it was before) and sends nothing
            with pytest.raises(StateError, match="once it is closed") as info:
                await client.translate(USER)
            assert isinstance(info.value, ToolnexusError) and isinstance(info.value, RuntimeError)

            other = make_client(stub, style)
            assert (await other.translate(USER)).text == "hello there"
            await other.aclose()
            await other.aclose()  # idempotent
            with pytest.raises(StateError):
                await other.translate(USER)

        asyncio.run(main())
    assert len(stub.requests) == 2


@pytest.mark.parametrize("stack", STACKS)
def test_a_closed_client_is_a_state_error_on_any_loop_before_anything_runs(stack: str) -> None:
    """Closed, a client makes no call: not in its loop, nor under another (where a pool would be opened anew),
    streamed or not, a stream made before the close included. No hook runs, nothing is sent, no event."""
    before: list[dict[str, Any]] = []
    events: list[LLMEvent] = []
    with Stub(always(text_reply("openai"))) as stub:
        client = make_client(stub, "openai", transport=stack, before_llm=before.append, on_event=events.append)

        async def calls() -> list[BaseException]:
            early = client.translate_stream(USER)
            await client.aclose()
            errors: list[BaseException] = []
            for call in (client.translate(USER), early.__anext__(), client.translate_stream(USER).__anext__()):
                try:
                    await call
                except Exception as exc:
                    errors.append(exc)
            return errors

        for errors in (asyncio.run(calls()), asyncio.run(calls())):  # the second under a new loop
            assert [type(e) for e in errors] == [StateError] * 3
        assert stub.requests == [] and before == [] and events == []


def test_repr_names_the_client_without_the_key() -> None:
    client = create_client(base_url="http://127.0.0.1:9/v1", style="anthropic", model="m", api_key=SECRET)
    try:
        text = repr(client)
        assert "anthropic" in text and "'m'" in text and SECRET not in text
    finally:
        asyncio.run(client.aclose())


def test_sequential_calls_reuse_a_one_connection_pool() -> None:
    """Many sequential calls on one client reuse its pool (keep-alive), within one loop."""
    with Stub(always(text_reply("openai"))) as stub:

        async def main() -> list[str]:
            async with make_client(stub, "openai", transport=one_connection()) as client:
                return [(await client.translate(USER)).text for _ in range(20)]

        assert asyncio.run(main()) == ["hello there"] * 20
    assert len(stub.requests) == 20


# ----------------------------------------------------------------- URLs and headers built safely
# Placeholder values (the model name) are percent-encoded as one path segment; a value, key,
# header or base URL that HTTP cannot carry is a ConfigError at create_client, before any request.

PROVIDERS = toolnexus.providers()
MODEL_IN_PATH = [p for p in PROVIDERS if "{model}" in toolnexus.load_rules().get(p).endpoint.path]
TRANSPORT_NAMES = [None, *STACKS]  # None: the default
HOSTILE_MODELS = ["../../../steal/x", "g:generateContent?alt=x#", "a/b", "x y%2F", "modèle", "%2e%2e"]


def refusing(provider: str) -> Any:
    """A responder answering every request with the provider's 400 error body (only the path matters)."""
    body = error_object(provider, "refused", "invalid_request_error")
    return lambda request: StubReply(status=400, body=body)


def option_values(provider: str) -> dict[str, str]:
    """A value for every endpoint option the rules require (no default, not optional): `opt-<name>`."""
    options = toolnexus.load_rules().get(provider).endpoint.options
    return {name: f"opt-{name}" for name, o in options.items() if o.default is None and not o.optional}


def filled(template: str, provider: str, model: str) -> str:
    """`template` with {model} and the endpoint options (given, else their defaults) percent-encoded in."""
    options = toolnexus.load_rules().get(provider).endpoint.options
    values = {**{n: o.default for n, o in options.items() if o.default is not None}, **option_values(provider)}
    values["model"] = model
    return re.sub(r"\{(\w+)\}", lambda m: urllib.parse.quote(values[m.group(1)], safe=""), template)


def expected_path(provider: str, model: str, path: str | None = None) -> str:
    """The path and query the provider receives: the rule file's, with the query parameters it declares."""
    endpoint = toolnexus.load_rules().get(provider).endpoint
    target = filled(path or endpoint.path, provider, model)
    pairs = [(name, urllib.parse.unquote(filled(value, provider, model))) for name, value in endpoint.query]
    if pairs:
        target += ("&" if "?" in target else "?") + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)
    return "/v1" + target


def test_the_providers_with_the_model_in_the_path_are_tested() -> None:
    assert MODEL_IN_PATH, "no rule file puts {model} in its endpoint path: the URL tests below test nothing"


@pytest.mark.parametrize("stack", TRANSPORT_NAMES)
@pytest.mark.parametrize("model", HOSTILE_MODELS)
@pytest.mark.parametrize("provider", MODEL_IN_PATH)
def test_a_model_name_is_one_path_segment_of_the_url_the_provider_receives(
    provider: str, model: str, stack: str | None
) -> None:
    with ProviderStub(refusing(provider)) as stub:

        async def main() -> None:
            async with create_client(stub.base_url, provider, model, api_key="k", max_retries=0,
                                     transport=stack) as client:  # fmt: skip
                with pytest.raises(ProviderError):
                    await client.translate(USER)
                streaming = toolnexus.load_rules().get(provider).streaming
                if streaming is not None:
                    with pytest.raises(ProviderError):
                        async for _ in client.translate_stream(USER):
                            pass

        asyncio.run(main())
    paths = [request.path for request in stub.requests]
    streaming = toolnexus.load_rules().get(provider).streaming
    want = [expected_path(provider, model)]
    if streaming is not None:
        want.append(expected_path(provider, model, streaming.path))
    assert [decoded(path) for path in paths] == [decoded(path) for path in want]


def decoded(path: str) -> tuple[list[str], str]:
    """A request target as (its path segments, each percent-decoded; its query): how the server routes it.
    (aiohttp's URL library writes `:` and `=` in a segment unencoded: the same segment to a server.)"""
    route, _, query = path.partition("?")
    return [urllib.parse.unquote(segment) for segment in route.split("/")], query


@pytest.mark.parametrize("model", [".", "..", "a\r\nb", "a\nb", "a\x00b", "a\x7fb", "\ud800"])
@pytest.mark.parametrize("provider", MODEL_IN_PATH)
def test_a_model_that_cannot_be_a_path_segment_is_a_config_error_before_any_request(provider: str, model: str) -> None:
    with ProviderStub(refusing(provider)) as stub, pytest.raises(ConfigError) as info:
        create_client(stub.base_url, provider, model, api_key="k")
    assert stub.requests == []
    assert "model" in str(info.value)


BAD_HEADERS = [
    {"x-trace": "a\r\nInjected: yes"},
    {"x-trace": "value\n"},
    {"x-trace": "nul\x00"},
    {"x-trace": "café"},
    {"bad name": "v"},
    {"x-bad\r\n": "v"},
    {"": "v"},
]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("headers", BAD_HEADERS, ids=repr)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_header_http_cannot_carry_is_a_config_error_at_create_client(
    provider: str, headers: dict[str, str], stack: str | None
) -> None:
    with pytest.raises(ConfigError) as info:
        create_client("http://127.0.0.1:9/v1", provider, "m", api_key="k", headers=headers, transport=stack)
    (value,) = headers.values()
    assert value not in str(info.value) or value == "v"


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("key", [SECRET + "\n", SECRET + "\r\n", "sk-\rabc-1234567890", SECRET + "\x1b", "sk-é-123456"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_http_cannot_carry_is_a_config_error_not_a_retried_connection_error(
    provider: str, key: str, stack: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for env in toolnexus.load_rules().get(provider).endpoint.api_key_env:
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(ConfigError) as explicit:
        create_client("http://127.0.0.1:9/v1", provider, "m", api_key=key, transport=stack)
    env_name = toolnexus.load_rules().get(provider).endpoint.api_key_env[0]
    monkeypatch.setenv(env_name, key)
    with pytest.raises(ConfigError) as from_env:
        create_client("http://127.0.0.1:9/v1", provider, "m", transport=stack)
    assert env_name in str(from_env.value)  # says where the key came from
    for error in (explicit.value, from_env.value):
        text = "".join(traceback.format_exception(error))
        assert key.strip() not in text and key not in text
        assert error.__cause__ is None


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:9/v1?key=x",
        "http://127.0.0.1:9/v1#frag",
        "ftp://127.0.0.1/v1",
        "/v1",
        "http://h\r\n/v1",
        "",
        "http://127.0.0.1:99999/v1",
        "http://[::1/v1",
        "http://:80/v1",
    ],
)
def test_a_base_url_that_cannot_take_the_endpoint_path_is_a_config_error(base_url: str) -> None:
    with pytest.raises(ConfigError):
        create_client(base_url, "openai", "m", api_key="k")


# ----------------------------------------------------------------- default base URLs


def rule_base_url(provider: str) -> str:
    base = toolnexus.load_rules().get(provider).endpoint.base_url
    local = ("http://localhost:", "http://127.0.0.1:")  # a server on the caller's own machine (Ollama's)
    assert base is not None and base.startswith(("https://", *local)), f"rules/{provider}.yaml names no base URL"
    return base


@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_a_base_url_the_client_calls_the_rule_files_public_base_url(provider: str) -> None:
    """No network: a MockTransport records the request the client built, and answers with an error."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(400, json=error_object(provider, "offline", "invalid_request_error"))

    async def main(**where: str) -> None:
        async with create_client(style=provider, model="m-1", api_key="k", max_retries=0,
                                 transport=httpx.MockTransport(handler), endpoint_options=option_values(provider),
                                 **where) as client:  # fmt: skip
            with pytest.raises(ProviderError):
                await client.translate(USER)

    asyncio.run(main())
    asyncio.run(main(base_url="http://127.0.0.1:9/custom"))  # an explicit base URL wins, as is
    path = expected_path(provider, "m-1").removeprefix("/v1")
    base = filled(rule_base_url(provider), provider, "m-1")
    assert [str(r.url) for r in seen] == [base + path, "http://127.0.0.1:9/custom" + path]


def test_style_and_model_are_still_required() -> None:
    with pytest.raises(ConfigError, match="style="):
        create_client(model="m", api_key="k")
    with pytest.raises(ConfigError, match="model="):
        create_client(style="openai", api_key="k")


# ----------------------------------------------------------------- one client, several event loops


@pytest.mark.parametrize("stack", TRANSPORT_NAMES)
def test_a_client_serves_a_second_event_loop(stack: str | None) -> None:
    """A pool's connections belong to the loop that opened them: a client used again under a second
    `asyncio.run` (a script calling it twice, a test per loop) gets a fresh pool, not 'Event loop is closed'."""
    answer = {"id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
              "content": [{"type": "text", "text": "hi"}],
              "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    with ProviderStub(lambda request: answer) as stub:
        client = create_client(stub.base_url, "anthropic", "m", api_key="k", max_retries=0, transport=stack)

        async def once() -> str | None:
            return (await client.translate(USER)).text

        assert asyncio.run(once()) == "hi"
        assert asyncio.run(once()) == "hi"
    assert len(stub.requests) == 2
