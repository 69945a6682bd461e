"""The real providers whose streams or credentials are not SSE and an API key, end to end offline:
Bedrock (ConverseStream frames; SigV4 with explicit botocore credentials, or a bearer key), Ollama
(NDJSON, no key) and Vertex (Google OAuth from a stubbed credential, refreshed once after a 401).
`client.translate` and `client.translate_stream` against the stub must give the same result."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.credentials import Credentials
from hypothesis import given
from hypothesis import strategies as st

import toolnexus
from support.credentials import StubGoogleCredentials, isolate_aws
from support.faults import FAST, STACKS, USER, FaultStub, model, one_connection_transport, tool_call_reply
from support.frames import aws_frame, bearer_of, sigv4_verified
from support.judges import SDK_VALIDATORS
from support.sse_encoders import ENCODERS, canonical, data_of, events_reply
from support.strategies import SETTINGS, bedrock_responses
from toolnexus import ProviderError, TranslateResult
from toolnexus.devtools.stub import StubReply, StubRequest, scripted

HARD_CAP = 20.0


STACK = "aiohttp"  # the transport `both` drives: every test here runs on each (the fixture below)


@pytest.fixture(autouse=True, params=STACKS)
def no_aws_surroundings(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_aws(monkeypatch, str(tmp_path / "none"))
    monkeypatch.setattr(sys.modules[__name__], "STACK", request.param)


ACCESS, SECRET_KEY = "AKIDBEDROCK0001", "bedrock-secret-access-key-0123456789"


def both(
    provider: str, replies: list[Any], **options: Any
) -> tuple[TranslateResult, TranslateResult, list[StubRequest]]:
    """translate, then translate_stream, against a stub answering `replies` in order."""
    import asyncio

    async def drive(url: str) -> tuple[TranslateResult, TranslateResult]:
        transport = one_connection_transport(STACK)
        async with toolnexus.create_client(url, provider, model(provider), transport=transport, backoff=FAST,
                                           timeout=5.0, **options) as c:  # fmt: skip
            plain = await c.translate(USER)
            stream = c.translate_stream(USER)
            async for _ in stream:
                pass
            return plain, stream.result

    with FaultStub(scripted(replies)) as stub:
        plain, streamed = asyncio.run(asyncio.wait_for(drive(stub.base_url), HARD_CAP))
        return plain, streamed, list(stub.requests)


def whole_and_stream(provider: str) -> list[Any]:
    reply = canonical(provider, tool_call_reply(provider))
    return [reply, events_reply(provider, ENCODERS[provider](reply, random.Random(7)), random.Random(8), cuts=9)]


def test_bedrock_signs_every_call_with_sigv4_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    credentials = Credentials(ACCESS, SECRET_KEY)
    plain, streamed, requests = both("bedrock", whole_and_stream("bedrock"), credentials=credentials)
    assert streamed.to_dict() == plain.to_dict() and plain.tool_calls
    assert [r.path.rsplit("/", 1)[1] for r in requests] == ["converse", "converse-stream"]
    assert all(sigv4_verified(r, credentials, "bedrock", "us-east-1") for r in requests)
    assert not sigv4_verified(requests[0], Credentials(ACCESS, "another-secret"), "bedrock", "us-east-1")


def test_a_bedrock_api_key_replaces_the_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-0123")
    plain, streamed, requests = both("bedrock", whole_and_stream("bedrock"))
    assert streamed.to_dict() == plain.to_dict()
    assert [bearer_of(r) for r in requests] == ["bedrock-api-key-0123"] * 2
    assert not any("x-amz-date" in r.headers for r in requests)


def test_ollama_needs_no_key_and_streams_ndjson() -> None:
    plain, streamed, requests = both("ollama", whole_and_stream("ollama"))
    assert streamed.to_dict() == plain.to_dict() and plain.tool_calls
    assert all("authorization" not in r.headers for r in requests)
    assert requests[1].headers["accept"] == "application/x-ndjson"


@pytest.mark.parametrize("provider", ["vertex-gemini", "vertex-anthropic"])
def test_vertex_sends_google_tokens_and_refreshes_an_expired_one_once(provider: str) -> None:
    credentials = StubGoogleCredentials()
    expired = StubReply(
        status=401, body={"error": {"code": 401, "message": "token expired", "status": "UNAUTHENTICATED"}}
    )
    replies = whole_and_stream(provider)
    plain, streamed, requests = both(provider, [expired, *replies], credentials=credentials)
    assert streamed.to_dict() == plain.to_dict()
    assert [bearer_of(r) for r in requests] == ["tok-1", "tok-2", "tok-2"] and credentials.refreshes == 2


def test_an_exception_frame_from_bedrock_is_its_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from support.sse_encoders import error_event

    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-0123")
    events = ENCODERS["bedrock"](tool_call_reply("bedrock"), random.Random(1))
    bad = [*events[:2], error_event("bedrock", {"message": "Too many tokens"}, "throttlingException")]
    with pytest.raises(ProviderError) as info:
        both("bedrock", [tool_call_reply("bedrock"), events_reply("bedrock", bad)])
    assert (info.value.error_type, info.value.message, info.value.kind) == (
        "throttlingException",
        "Too many tokens",
        "http",
    )


def broken_bedrock(how: str) -> list[bytes]:
    events = ENCODERS["bedrock"](tool_call_reply("bedrock"), random.Random(1))
    if how == "bad-checksum":
        return [*events[:3], events[3][:-1] + bytes([events[3][-1] ^ 0xFF]), *events[4:]]
    if how == "cut-in-half":
        return [*events[:3], events[3][: len(events[3]) // 2]]
    return [*events[:3], aws_frame({":message-type": "mystery", ":content-type": "application/json"}, b"{}")]


@pytest.mark.parametrize("how", ["bad-checksum", "cut-in-half", "unknown-message-type"])
def test_a_broken_bedrock_frame_is_a_decode_error_never_a_result(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-0123")
    reply = events_reply("bedrock", broken_bedrock(how), random.Random(2), cuts=7)
    with pytest.raises(ProviderError) as info:
        both("bedrock", [tool_call_reply("bedrock"), reply])
    assert info.value.kind == "decode"


def test_an_ollama_stream_cut_mid_line_is_a_connection_error() -> None:
    lines = ENCODERS["ollama"](tool_call_reply("ollama"), random.Random(1))
    reply = events_reply("ollama", [*lines[:-1], lines[-1][:20]], cut=True)
    with pytest.raises(ProviderError) as info:
        both("ollama", [tool_call_reply("ollama"), reply])
    assert info.value.kind in ("connection", "decode")


# ---------------------------------------------------------------- Bedrock's events, judged by botocore's model


def judge_converse_stream_event(event: dict[str, Any]) -> None:
    """One ConverseStream event ({<type>: <payload>}) against botocore's bedrock-runtime output shapes."""
    import botocore.session
    from botocore.validate import ParamValidator

    stream = botocore.session.get_session().get_service_model("bedrock-runtime")
    shapes = stream.operation_model("ConverseStream").output_shape.members["stream"].members
    ((kind, payload),) = event.items()
    assert kind in shapes, f"{kind} is not a ConverseStream event"
    report = ParamValidator().validate(payload, shapes[kind])
    assert not report.has_errors(), report.generate_report()


@SETTINGS
@given(response=bedrock_responses(), seed=st.integers(0, 2**16))
def test_generated_bedrock_answers_and_their_events_pass_botocores_shapes(response: dict[str, Any], seed: int) -> None:
    """The generator and the frame encoder the shared stream suites use tell what the service model holds."""
    SDK_VALIDATORS["bedrock"](response)
    for event in ENCODERS["bedrock"](response, random.Random(seed)):
        judge_converse_stream_event(json.loads(data_of("bedrock", event)))


def test_the_converse_stream_judge_can_fail() -> None:
    judge_converse_stream_event({"contentBlockDelta": {"delta": {"text": "x"}, "contentBlockIndex": 0}})
    for bad in ({"contentBlockDelta": {"delta": {"text": 5}, "contentBlockIndex": 0}},
                {"messageStop": {"stopReason": "end_turn", "usage": {}}}, {"contentBlockBegin": {}}):  # fmt: skip
        with pytest.raises(AssertionError):
            judge_converse_stream_event(bad)
