"""Stream framings and auth schemes as rule-file values, each alone, on made-up providers.

`tests/framing_rules/` holds two rule files written for these tests, not shipped providers:
`lines` streams newline-delimited JSON and needs no key (like a local chat server), `frames`
streams AWS event-stream frames whose events look like a Converse stream and signs with SigV4.
A third, `tokens`, is `lines` authenticated with Google OAuth (written per test). The embedded
stub serves each framing and checks each scheme (devtools/stub.py).
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import json
import logging
import random
import ssl
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import google.auth.credentials
import httpx
import pytest
from botocore.credentials import Credentials
from botocore.eventstream import EventStreamBuffer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolnexus
from support.credentials import StubGoogleCredentials, isolate_aws
from support.faults import FaultStub, framed_reply
from support.frames import (
    AWS_EVENTSTREAM,
    NDJSON,
    aws_event,
    aws_exception,
    aws_frame,
    bearer_of,
    ndjson_lines,
    sigv4_verified,
)
from toolnexus import Cancelled, ConfigError, ProviderError, RuleError, TranslateResult
from toolnexus.devtools.stub import StubReply, StubRequest, scripted, sse_pieces

RULES = Path(__file__).resolve().parent / "framing_rules"
USER = [{"role": "user", "content": "hi"}]
FAST = (0.01, 0.05)
SSL = ssl.create_default_context()
HARD_CAP = 20.0
KEY = "frames-key-0123456789"
ACCESS, SECRET_KEY, TOKEN = "AKIDMADEUP0001", "madeup-secret-access-key-0123456789", "madeup-session-token-abcdef"


@pytest.fixture(autouse=True)
def no_aws_surroundings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The AWS chain reads only what a test sets: no profile files, no instance metadata (no network)."""
    isolate_aws(monkeypatch, str(tmp_path / "none"))


# ---------------------------------------------------------------- answers, whole and streamed


def lines_answer(text: str = "Hello there, friend.", calls: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "thinking": "let me see"}
    if calls:
        message["tool_calls"] = [{"id": "c1", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]
    return {"model": "m", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": True,
            "done_reason": "stop", "prompt_eval_count": 7, "eval_count": 5}  # fmt: skip


def lines_stream(answer: dict[str, Any], pieces: int = 4) -> list[dict[str, Any]]:
    """The answer as the lines a chat server streams: text and thinking in pieces, calls whole, then done."""
    message = answer["message"]
    out = []
    for field in ("thinking", "content"):
        text = message[field]
        step = max(1, len(text) // pieces)
        for i in range(0, len(text), step):
            piece = {"role": "assistant", "content": "", field: text[i : i + step]}
            out.append({"model": answer["model"], "created_at": answer["created_at"], "message": piece, "done": False})
    if "tool_calls" in message:
        call = {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}
        out.append({"model": answer["model"], "created_at": answer["created_at"], "message": call, "done": False})
    last = {k: v for k, v in answer.items() if k != "message"}
    out.append({**last, "message": {"role": "assistant", "content": ""}})
    return out


def frames_answer(calls: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"text": "Sure, adding now."}]
    if calls:
        content.append({"toolUse": {"toolUseId": "tooluse_1", "name": "add", "input": {"a": 1, "b": 2}}})
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if calls else "end_turn",
            "usage": {"inputTokens": 9, "outputTokens": 4, "totalTokens": 13}, "metrics": {"latencyMs": 3}}  # fmt: skip


def frames_events(answer: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The answer as a Converse-like event stream: (event type, payload)."""
    out: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(answer["output"]["message"]["content"]):
        if "text" in block:
            text = block["text"]
            for i in range(0, len(text), 5):
                out.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text[i : i + 5]}}))
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            out.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            encoded = json.dumps(use["input"])
            for i in range(0, len(encoded), 4):
                delta = {"toolUse": {"input": encoded[i : i + 4]}}
                out.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        out.append(("contentBlockStop", {"contentBlockIndex": index}))
    out.append(("messageStop", {"stopReason": answer["stopReason"]}))
    out.append(("metadata", {"usage": answer["usage"], "metrics": answer["metrics"]}))
    return out


def ndjson_reply(objects: list[dict[str, Any]], **options: Any) -> StubReply:
    return framed_reply("ndjson", ndjson_lines(objects), **options)


def frames_reply(frames: list[bytes], **options: Any) -> StubReply:
    return framed_reply("aws-eventstream", frames, **options)


def frame_bytes(answer: dict[str, Any]) -> list[bytes]:
    return [aws_event(kind, payload) for kind, payload in frames_events(answer)]


# ---------------------------------------------------------------- driving a client against the stub


def client(base_url: str, provider: str, rules: Path = RULES, **options: Any) -> toolnexus.Client:
    options = {"timeout": 5.0, "transport": httpx.AsyncHTTPTransport(verify=SSL), "model": "m", **options}
    return toolnexus.create_client(base_url, provider, rules=rules, backoff=FAST, **options)


def served(replies: list[Any], drive: Callable[[str], Awaitable[Any]]) -> tuple[Any, list[StubRequest]]:
    """Run `drive(base_url)` against a stub answering `replies` in order; (its return, the requests)."""
    with FaultStub(scripted(replies)) as stub:
        got = asyncio.run(asyncio.wait_for(drive(stub.base_url), HARD_CAP))
        return got, list(stub.requests)


async def whole_and_streamed(c: toolnexus.Client) -> tuple[TranslateResult, list[dict[str, Any]], TranslateResult]:
    async with c:
        plain = await c.translate(USER)
        stream = c.translate_stream(USER)
        chunks = [chunk async for chunk in stream]
        return plain, chunks, stream.result


def same(plain: TranslateResult, streamed: TranslateResult) -> None:
    assert streamed.to_dict() == plain.to_dict()


def aws_credentials() -> Credentials:
    return Credentials(ACCESS, SECRET_KEY, TOKEN)


# ---------------------------------------------------------------- the rule language


def test_the_framing_defaults_to_sse_and_is_checked_at_load(tmp_path: Path) -> None:
    assert toolnexus.load_rules().get("openai").streaming.framing == "sse"  # type: ignore[union-attr]
    text = (RULES / "lines.yaml").read_text().replace("framing: ndjson", "framing: jsonlines")
    (tmp_path / "lines.yaml").write_text(text)
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path, reload=True)
    assert info.value.line == text.splitlines().index("  framing: jsonlines") + 1


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        ("{scheme: header}", "header"),  # header needs its header name
        ("{scheme: aws-sigv4}", "service"),
        ("{scheme: google-oauth}", "scopes"),
        ("{scheme: kerberos}", "scheme"),
        ("sigv4", "auth"),
    ],
)
def test_an_auth_scheme_missing_its_parameters_is_a_located_rule_error(tmp_path: Path, auth: str, problem: str) -> None:
    text = (RULES / "lines.yaml").read_text().replace("  auth: none", f"  auth: {auth}")
    (tmp_path / "lines.yaml").write_text(text)
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path, reload=True)
    assert info.value.line == text.splitlines().index(f"  auth: {auth}") + 1


def test_auth_and_the_first_editions_auth_header_are_one_or_the_other(tmp_path: Path) -> None:
    text = (RULES / "lines.yaml").read_text().replace("  auth: none", "  auth: none\n  auth_header: x-key")
    (tmp_path / "lines.yaml").write_text(text)
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path, reload=True)
    assert info.value.rule.startswith("endpoint.auth")


def test_a_scheme_that_sends_a_key_needs_api_key_env(tmp_path: Path) -> None:
    text = (RULES / "lines.yaml").read_text().replace("  auth: none", "  auth: bearer")
    (tmp_path / "lines.yaml").write_text(text)
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path, reload=True)
    assert info.value.rule == "endpoint"


def test_the_shipped_rule_files_send_the_key_as_before() -> None:
    rules = toolnexus.load_rules()
    assert rules.get("openai").endpoint.auth_headers("k")["Authorization"] == "Bearer k"
    assert rules.get("anthropic").endpoint.auth_headers("k")["x-api-key"] == "k"
    assert rules.get("gemini").endpoint.auth_headers("k")["x-goog-api-key"] == "k"


# ---------------------------------------------------------------- NDJSON, no key


@pytest.mark.parametrize("calls", [False, True])
def test_an_ndjson_stream_gives_the_result_of_the_same_answer_sent_whole(calls: bool) -> None:
    answer = lines_answer(calls=calls)
    replies = [answer, ndjson_reply(lines_stream(answer))]
    (plain, chunks, streamed), requests = served(replies, lambda url: whole_and_streamed(client(url, "lines")))
    same(plain, streamed)
    texts = [c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]]
    assert "".join(texts) == answer["message"]["content"]
    assert bool(plain.tool_calls) == calls and plain.usage["total_tokens"] == 12
    assert [r.body.get("stream") for r in requests] == [None, True]
    assert all("authorization" not in r.headers for r in requests)  # auth none: no key, none sent
    assert requests[1].headers["accept"] == NDJSON


def test_a_key_given_to_a_provider_without_auth_is_sent_as_a_bearer_token() -> None:
    _, requests = served([lines_answer()], lambda url: once(client(url, "lines", api_key="local-proxy-key")))
    assert bearer_of(requests[0]) == "local-proxy-key"


def test_ndjson_lines_cut_anywhere_and_crlf_line_ends_read_the_same() -> None:
    answer = lines_answer()
    data = b"".join(ndjson_lines(lines_stream(answer))).replace(b"\n", b"\r\n")
    pieces = sse_pieces([data], random.Random(3), cuts=40)  # cut inside lines and UTF-8 characters alike
    replies = [answer, StubReply(stream=pieces, headers={"Content-Type": NDJSON})]
    (plain, _, streamed), _ = served(replies, lambda url: whole_and_streamed(client(url, "lines")))
    same(plain, streamed)


def test_an_ndjson_error_line_is_a_provider_error_with_its_message() -> None:
    lines = [*lines_stream(lines_answer())[:2], {"error": "model ran out of memory"}]

    async def drive(url: str) -> tuple[list[dict[str, Any]], BaseException]:
        chunks: list[dict[str, Any]] = []
        async with client(url, "lines") as c:
            with pytest.raises(ProviderError) as info:
                async for chunk in c.translate_stream(USER):
                    chunks.append(chunk)
            return chunks, info.value

    (chunks, error), _ = served([ndjson_reply(lines)], drive)
    assert isinstance(error, ProviderError) and error.kind == "http" and error.message == "model ran out of memory"
    assert chunks, "the chunks before the error were given"


def test_an_ndjson_line_over_the_event_cap_is_too_large() -> None:
    lines = lines_stream(lines_answer("x" * 5000))

    async def drive(url: str) -> BaseException:
        async with client(url, "lines", max_event_bytes=1000) as c:
            with pytest.raises(ProviderError) as info:
                async for _ in c.translate_stream(USER):
                    pass
            return info.value

    error, _ = served([ndjson_reply([*lines[:-1], {**lines[-1], "pad": "y" * 2000}])], drive)
    assert error.kind == "too_large"


def test_an_ndjson_stream_cut_before_its_done_line_is_a_connection_error_after_its_chunks() -> None:
    lines = lines_stream(lines_answer())[:-1]
    got, _ = served([ndjson_reply(lines)], lambda url: collect(client(url, "lines")))
    chunks, error = got
    assert chunks and isinstance(error, ProviderError) and error.kind == "connection"


async def collect(c: toolnexus.Client, **options: Any) -> tuple[list[dict[str, Any]], BaseException | None]:
    chunks: list[dict[str, Any]] = []
    async with c:
        try:
            async for chunk in c.translate_stream(USER, **options):
                chunks.append(chunk)
        except toolnexus.ToolnexusError as exc:
            return chunks, exc
    return chunks, None


def test_a_json_answer_to_an_ndjson_stream_request_is_refused_clearly() -> None:
    got, _ = served([lines_answer()], lambda url: collect(client(url, "lines")))
    _, error = got
    assert isinstance(error, ProviderError) and error.kind == "decode"


# ---------------------------------------------------------------- the AWS event stream, SigV4


def test_the_frames_this_stub_writes_are_what_botocore_decodes() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(b"".join(frame_bytes(frames_answer(calls=True))))
    decoded = [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]
    assert decoded == frames_events(frames_answer(calls=True))


@pytest.mark.parametrize("calls", [False, True])
def test_an_event_stream_gives_the_result_of_the_same_answer_sent_whole_signed_by_sigv4(calls: bool) -> None:
    answer = frames_answer(calls)
    replies = [answer, frames_reply(frame_bytes(answer))]
    make = lambda url: whole_and_streamed(client(url, "frames", credentials=aws_credentials()))  # noqa: E731
    (plain, chunks, streamed), requests = served(replies, make)
    same(plain, streamed)
    assert len(chunks) > 2
    assert bool(plain.tool_calls) == calls and plain.finish_reason == ("tool_calls" if calls else "stop")
    assert [r.path for r in requests] == ["/v1/model/m/converse", "/v1/model/m/converse-stream"]
    assert all(sigv4_verified(r, aws_credentials(), "madeup", "eu-north-1") for r in requests)
    assert requests[1].headers["accept"] == AWS_EVENTSTREAM


@pytest.mark.parametrize("stack", ["httpx", "aiohttp"])
def test_a_signature_covers_the_url_as_each_http_stack_sends_it(stack: str) -> None:
    """aiohttp sends `%3A` as `:`; the signature must cover what the server receives."""
    make = lambda url: once(client(url, "frames", credentials=aws_credentials(), transport=stack,  # noqa: E731
                                   model="vendor.model-v1:0/x"))  # fmt: skip
    _, requests = served([frames_answer()], make)
    assert requests[0].path.startswith("/v1/model/vendor.model-v1")
    assert sigv4_verified(requests[0], aws_credentials(), "madeup", "eu-north-1")


def test_a_changed_body_or_a_wrong_secret_fails_the_stubs_signature_check() -> None:
    _, requests = served([frames_answer()], lambda url: once(client(url, "frames", credentials=aws_credentials())))
    [request] = requests
    assert sigv4_verified(request, aws_credentials(), "madeup", "eu-north-1")
    assert not sigv4_verified(request, Credentials(ACCESS, "another-secret", TOKEN), "madeup", "eu-north-1")
    tampered = StubRequest(request.path, request.headers, request.body, request.raw.replace(b"hi", b"ho"))
    assert not sigv4_verified(tampered, aws_credentials(), "madeup", "eu-north-1")


async def once(c: toolnexus.Client) -> TranslateResult:
    async with c:
        return await c.translate(USER)


class Rotating:
    """Refreshable AWS credentials: each use gives the next session token (a retry must be signed anew)."""

    def __init__(self) -> None:
        self.used = 0
        self.refresh_needed = lambda: True

    def get_frozen_credentials(self) -> Credentials:
        self.used += 1
        return Credentials(ACCESS, SECRET_KEY, f"{TOKEN}-{self.used}")


def test_every_attempt_is_signed_anew_a_retry_too() -> None:
    failing = StubReply(status=500, body={"message": "try again"})
    credentials = Rotating()
    _, requests = served([failing, frames_answer()], lambda url: once(client(url, "frames", credentials=credentials)))
    assert len(requests) == 2 and credentials.used == 2
    tokens = [r.headers["x-amz-security-token"] for r in requests]
    assert tokens == [f"{TOKEN}-1", f"{TOKEN}-2"]
    for n, request in enumerate(requests, 1):
        assert sigv4_verified(request, Credentials(ACCESS, SECRET_KEY, f"{TOKEN}-{n}"), "madeup", "eu-north-1")


def test_sigv4_takes_credentials_from_the_aws_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    _, requests = served([frames_answer()], lambda url: once(client(url, "frames")))
    assert sigv4_verified(requests[0], aws_credentials(), "madeup", "eu-north-1")


def test_sigv4_without_credentials_is_a_config_error_before_anything_is_sent() -> None:
    got, requests = served([frames_answer()], lambda url: failed(once(client(url, "frames"))))
    assert isinstance(got, ConfigError) and requests == []


async def failed(call: Awaitable[Any]) -> BaseException | None:
    try:
        await call
    except toolnexus.ToolnexusError as exc:
        return exc
    return None


def test_sigv4_region_comes_from_the_chain_when_the_rules_name_none(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:  # fmt: skip
    text = (RULES / "frames.yaml").read_text().replace(", region: eu-north-1", "")
    (tmp_path / "frames.yaml").write_text(text)
    with pytest.raises(ConfigError):
        client("http://127.0.0.1:9/x", "frames", rules=tmp_path, credentials=aws_credentials())
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-2")
    _, requests = served([frames_answer()], lambda url: once(client(url, "frames", rules=tmp_path,
                                                                     credentials=aws_credentials())))  # fmt: skip
    assert sigv4_verified(requests[0], aws_credentials(), "madeup", "ap-south-2")


@pytest.mark.parametrize("source", ["explicit", "env"])
def test_a_key_given_to_a_chained_scheme_is_a_bearer_token(monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    options: dict[str, Any] = {"api_key": "bearer-key-1"} if source == "explicit" else {}
    if source == "env":
        monkeypatch.setenv("FRAMES_BEARER_TOKEN", "bearer-key-1")
    _, requests = served([frames_answer()], lambda url: once(client(url, "frames", **options)))
    assert bearer_of(requests[0]) == "bearer-key-1" and "x-amz-date" not in requests[0].headers


def test_an_exception_frame_is_a_provider_error_with_its_type_and_message() -> None:
    frames = [*frame_bytes(frames_answer())[:3], aws_exception("throttlingException", {"message": "slow down"})]
    got, _ = served([frames_reply(frames)], lambda url: collect(client(url, "frames", api_key=KEY)))
    chunks, error = got
    assert chunks and isinstance(error, ProviderError)
    assert (error.kind, error.error_type, error.message) == ("http", "throttlingException", "slow down")


def test_an_error_frame_is_a_provider_error_with_its_code_and_message() -> None:
    headers = {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "it broke"}
    got, _ = served([frames_reply([aws_frame(headers, b"")])], lambda url: collect(client(url, "frames", api_key=KEY)))
    _, error = got
    assert isinstance(error, ProviderError) and (error.error_type, error.message) == ("InternalFailure", "it broke")


def test_a_frame_of_an_unknown_event_type_is_noted_and_skipped() -> None:
    frames = frame_bytes(frames_answer())
    frames.insert(2, aws_event("somethingNew", {"x": 1}))
    make = lambda url: whole_and_streamed(client(url, "frames", api_key=KEY))  # noqa: E731
    got, _ = served([frames_answer(), frames_reply(frames)], make)
    plain, _, streamed = got
    assert streamed.text == plain.text
    assert any(n.kind == "unknown" and "somethingNew" in n.message for n in streamed.notes)


def test_a_frame_of_an_unknown_message_type_is_a_decode_error() -> None:
    frames = [*frame_bytes(frames_answer())[:2], aws_frame({":message-type": "telemetry"}, b"{}")]
    got, _ = served([frames_reply(frames)], lambda url: collect(client(url, "frames", api_key=KEY)))
    _, error = got
    assert isinstance(error, ProviderError) and error.kind == "decode"


def test_a_frame_with_a_bad_checksum_is_a_decode_error_after_the_chunks_before_it() -> None:
    frames = frame_bytes(frames_answer())
    broken = bytearray(frames[3])
    broken[-1] ^= 0xFF  # the message CRC
    got, _ = served([frames_reply([*frames[:3], bytes(broken), *frames[4:]])],
                    lambda url: collect(client(url, "frames", api_key=KEY)))  # fmt: skip
    chunks, error = got
    assert chunks and isinstance(error, ProviderError) and error.kind == "decode"


@pytest.mark.parametrize("cut", [True, False])
def test_a_frame_cut_in_half_is_an_error_never_a_result(cut: bool) -> None:
    """Cut: the connection drops mid-frame (connection); ended: the body ends mid-frame (decode)."""
    frames = frame_bytes(frames_answer())
    half = frames[4][: len(frames[4]) // 2]
    got, _ = served([frames_reply([*frames[:4], half], cut=cut)],
                    lambda url: collect(client(url, "frames", api_key=KEY)))  # fmt: skip
    chunks, error = got
    assert chunks and isinstance(error, ProviderError)
    assert error.kind == ("connection" if cut else "decode")


def test_a_frame_over_the_event_cap_is_too_large() -> None:
    big = aws_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * 4000}})
    got, _ = served([frames_reply([*frame_bytes(frames_answer())[:2], big])],
                    lambda url: collect(client(url, "frames", api_key=KEY, max_event_bytes=1000)))  # fmt: skip
    _, error = got
    assert isinstance(error, ProviderError) and error.kind == "too_large"


@pytest.mark.parametrize("provider", ["lines", "frames"])
def test_a_stream_that_stalls_times_out_after_its_chunks(provider: str) -> None:
    reply = stalled(provider)
    # a 1 s deadline per wait: a loaded machine's first chunks come well within it, the 30 s of silence does not
    got, _ = served([reply], lambda url: collect(client(url, provider, api_key=KEY, timeout=1.0)))
    chunks, error = got
    assert chunks and isinstance(error, ProviderError) and error.kind == "timeout"


def stalled(provider: str, hold: float = 30.0) -> StubReply:
    """The first events of a stream, then silence with the connection open."""
    if provider == "lines":
        return ndjson_reply(lines_stream(lines_answer())[:3], hold=hold)
    return frames_reply(frame_bytes(frames_answer())[:3], hold=hold)


@pytest.mark.parametrize("provider", ["lines", "frames"])
def test_cancel_during_a_read_ends_the_stream_and_closes_the_connection(provider: str) -> None:
    reply = stalled(provider)

    async def drive(url: str) -> tuple[list[dict[str, Any]], BaseException | None]:
        # set on the first chunk, not after a fixed delay: a loaded machine may not have read one by then
        cancel = asyncio.Event()
        chunks: list[dict[str, Any]] = []
        async with client(url, provider, api_key=KEY) as c:
            try:
                async for chunk in c.translate_stream(USER, cancel=cancel):
                    chunks.append(chunk)
                    cancel.set()
            except toolnexus.ToolnexusError as exc:
                return chunks, exc
        return chunks, None

    (chunks, error), _ = served([reply], drive)
    assert chunks and isinstance(error, Cancelled)
    assert reply.client_closed.wait(10), "the connection was closed"


def test_a_connection_lost_after_the_end_event_loses_nothing() -> None:
    answer = frames_answer()
    reply = frames_reply(frame_bytes(answer), cut=True)
    got, _ = served([answer, reply], lambda url: whole_and_streamed(client(url, "frames", api_key=KEY)))
    plain, _, streamed = got
    same(plain, streamed)


def test_an_ndjson_stream_has_no_end_event_so_a_lost_connection_is_an_error_even_after_done() -> None:
    """Complete only when the body ends with done_reason present (as SSE streams without an end event)."""
    got, _ = served([ndjson_reply(lines_stream(lines_answer()), cut=True)], lambda url: collect(client(url, "lines")))
    chunks, error = got
    assert chunks and isinstance(error, ProviderError) and error.kind == "connection"


def test_without_the_bedrock_extra_the_event_stream_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)
    monkeypatch.setitem(sys.modules, "botocore.eventstream", None)
    c = client("http://127.0.0.1:9/x", "frames", api_key=KEY)
    with pytest.raises(ConfigError, match=r"toolnexus\[bedrock\]"):
        c.translate_stream(USER)
    monkeypatch.setitem(sys.modules, "botocore.auth", None)
    with pytest.raises(ConfigError, match=r"toolnexus\[bedrock\]"):
        client("http://127.0.0.1:9/x", "frames", credentials=aws_credentials())


# ---------------------------------------------------------------- Google OAuth


@pytest.fixture
def tokens_rules(tmp_path: Path) -> Path:
    text = (RULES / "lines.yaml").read_text().replace("provider: lines", "provider: tokens")
    scopes = "  auth: {scheme: google-oauth, scopes: [https://www.googleapis.com/auth/cloud-platform]}"
    (tmp_path / "tokens.yaml").write_text(text.replace("  auth: none", scopes))
    return tmp_path


def token_call(rules: Path, credentials: Any) -> Callable[[str], Awaitable[Any]]:
    return lambda url: failed(once(client(url, "tokens", rules=rules, credentials=credentials)))


def test_a_google_token_is_sent_as_a_bearer_token_and_reused_while_valid(tokens_rules: Path) -> None:
    credentials = StubGoogleCredentials()

    async def drive(url: str) -> None:
        async with client(url, "tokens", rules=tokens_rules, credentials=credentials) as c:
            await c.translate(USER)
            await c.translate(USER)

    _, requests = served([lines_answer()], drive)
    assert [bearer_of(r) for r in requests] == ["tok-1", "tok-1"] and credentials.refreshes == 1


def test_a_token_about_to_expire_is_refreshed_before_the_call(tokens_rules: Path) -> None:
    credentials = StubGoogleCredentials(lifetime=datetime.timedelta(minutes=1))  # within google-auth's margin

    async def drive(url: str) -> None:
        async with client(url, "tokens", rules=tokens_rules, credentials=credentials) as c:
            await c.translate(USER)
            await c.translate(USER)

    _, requests = served([lines_answer()], drive)
    assert [bearer_of(r) for r in requests] == ["tok-1", "tok-2"]


def test_an_expired_token_refused_with_401_is_refreshed_once(tokens_rules: Path) -> None:
    credentials = StubGoogleCredentials()
    refused = StubReply(status=401, body={"error": "token expired"})
    error, requests = served([refused, lines_answer()], token_call(tokens_rules, credentials))
    assert error is None and [bearer_of(r) for r in requests] == ["tok-1", "tok-2"]


def test_a_second_401_after_the_refresh_is_the_providers_error(tokens_rules: Path) -> None:
    credentials = StubGoogleCredentials()
    refused = StubReply(status=401, body={"error": "no access"})
    error, requests = served([refused], token_call(tokens_rules, credentials))
    assert isinstance(error, ProviderError) and error.status == 401 and len(requests) == 2


def test_google_oauth_takes_application_default_credentials(
    tokens_rules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = StubGoogleCredentials()
    asked: list[Any] = []

    def default(scopes: Any = None, **kwargs: Any) -> tuple[Any, str]:
        asked.append(scopes)
        return credentials, "project"

    monkeypatch.setattr(google.auth, "default", default)
    error, requests = served([lines_answer()], token_call(tokens_rules, None))
    assert error is None and bearer_of(requests[0]) == "tok-1"
    assert asked == [["https://www.googleapis.com/auth/cloud-platform"]]


def test_without_the_vertex_extra_google_oauth_is_a_config_error_naming_it(
    tokens_rules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "google.auth.transport.requests", None)
    with pytest.raises(ConfigError, match=r"toolnexus\[vertex\]"):
        client("http://127.0.0.1:9/x", "tokens", rules=tokens_rules)


def test_botocore_debug_records_of_a_signature_are_blanked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    _, requests = served([frames_answer()], lambda url: once(client(url, "frames", credentials=aws_credentials())))
    signature = requests[0].headers["authorization"].rpartition("Signature=")[2]
    texts = [record.getMessage() for record in caplog.records]
    assert not any(signature in text or TOKEN in text for text in texts)


def test_a_reply_never_shares_state_with_the_next(tokens_rules: Path) -> None:
    answer = lines_answer()
    before = copy.deepcopy(answer)
    served([answer, ndjson_reply(lines_stream(answer))], lambda url: whole_and_streamed(client(url, "lines")))
    assert answer == before


# ---------------------------------------------------------------- stream equals whole, for any text and cuts


@pytest.fixture(scope="module")
def stub_holder() -> Any:
    holder: dict[str, Any] = {}
    with FaultStub(lambda request: holder["replies"].pop(0)) as stub:
        holder["stub"] = stub
        yield holder


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=60), seed=st.integers(0, 1000), calls=st.booleans())
def test_any_answer_streams_to_the_result_of_it_sent_whole(stub_holder: Any, text: str, seed: int, calls: bool) -> None:
    """Both framings, any text (cut anywhere, across UTF-8 characters), with and without a call."""
    rng = random.Random(seed)
    lines = lines_answer(text, calls)
    lines_bytes = sse_pieces([b"".join(ndjson_lines(lines_stream(lines, pieces=rng.randint(1, 6))))], rng, cuts=9)
    frames = frames_answer(calls)
    frames["output"]["message"]["content"][0]["text"] = text
    frames_bytes = sse_pieces([b"".join(frame_bytes(frames))], rng, cuts=9)
    cases = [("lines", lines, lines_bytes, "ndjson"), ("frames", frames, frames_bytes, "aws-eventstream")]
    for provider, whole, pieces, framing_name in cases:
        stub_holder["replies"] = [whole, framed_reply(framing_name, pieces)]
        plain, _, streamed = asyncio.run(
            whole_and_streamed(client(stub_holder["stub"].base_url, provider, api_key=KEY))
        )
        same(plain, streamed)


# ---------------------------------------------------------------- memory


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self._chunks:
            yield chunk


def test_ndjson_lines_of_one_read_are_decoded_together_into_ready() -> None:
    """Every line a read completes is decoded at once into `ready`, which the client takes without awaiting
    (a read of many small lines costs one await, as SSE's); the unfinished line waits for its end."""
    from toolnexus.http.framing import framing
    from toolnexus.http.transport import HttpxReply

    endpoint = toolnexus.load_rules(RULES).get("lines").endpoint
    chunks = [b'{"a": 1}\n{"a": 2}\r\n{"a"', b': 3}\n{"a": 4}']
    request = httpx.Request("POST", "http://127.0.0.1/")
    response = httpx.Response(200, headers={"content-type": "application/x-ndjson"}, stream=_Chunks(chunks),
                              request=request)  # fmt: skip

    async def read() -> list[tuple[str, list[str]]]:
        frames = framing("ndjson").read(HttpxReply(response), 1024, endpoint)
        seen = []
        async for data in frames:
            seen.append((data, list(frames.ready)))
        await frames.aclose()
        return seen

    assert asyncio.run(read()) == [('{"a": 1}', ['{"a": 2}']), ('{"a": 2}', []), ('{"a": 3}', []), ('{"a": 4}', [])]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ndjson", "aws-eventstream"])
def test_a_framing_holds_a_read_and_an_event_never_the_stream(name: str) -> None:
    """A 2 MB stream of 500 or of 20,000 events: the framing's peak memory is the same, and small."""
    import tracemalloc

    from toolnexus.http.framing import framing
    from toolnexus.http.transport import HttpxReply

    endpoint = toolnexus.load_rules(RULES).get("frames").endpoint
    text = "".join(random.Random(0).choices("abcdefghij ", k=2_000_000))

    def peak(events: int) -> int:
        step = len(text) // events
        pieces = [text[i : i + step] for i in range(0, len(text), step)]
        if name == "ndjson":
            data = b"".join(ndjson_lines([{"message": {"content": piece}} for piece in pieces]))
        else:
            data = b"".join(aws_event("contentBlockDelta", {"delta": {"text": piece}}) for piece in pieces)
        chunks = [data[i : i + 16384] for i in range(0, len(data), 16384)]
        request = httpx.Request("POST", "http://127.0.0.1/")
        media = framing(name).media_types[0]
        response = httpx.Response(200, headers={"content-type": media}, stream=_Chunks(chunks), request=request)

        async def read() -> int:
            frames = framing(name).read(HttpxReply(response), 16 * 1024 * 1024, endpoint)
            n = 0
            async for _ in frames:
                n += 1
            await frames.aclose()
            return n

        tracemalloc.start()
        try:
            assert asyncio.run(read()) == len(pieces)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    few, many = peak(500), peak(20_000)
    assert many < few * 1.25 + 64 * 1024, (few, many)
    assert few < 1_000_000, few  # far less than the stream's 2 MB


# ---------------------------------------------------------------- the demo


@pytest.mark.parametrize("provider", ["lines", "frames"])
def test_the_demo_streams_a_provider_in_its_framing(provider: str) -> None:
    import io

    from toolnexus.devtools.demo import demo_stream

    if provider == "lines":
        answer: dict[str, Any] = lines_answer(calls=True)
        events, framing_name = b"".join(ndjson_lines(lines_stream(answer))), "ndjson"
    else:
        answer = frames_answer(calls=True)
        events, framing_name = b"".join(frame_bytes(answer)), "aws-eventstream"
    out = io.StringIO()
    script = {"model": "m", "replies": [answer]}
    problems = asyncio.run(demo_stream(provider, script, events, out, RULES, framing_name))
    assert problems == [], out.getvalue()
    assert "chunk delta" in out.getvalue()


def test_the_differences_report_shows_each_auth_scheme_and_framing() -> None:
    from toolnexus.devtools.diff import build_report, render_markdown

    rows = render_markdown(build_report(toolnexus.load_rules(RULES), ["lines", "frames", "openai"])).splitlines()
    assert (
        "| auth header | none | aws-sigv4 (service madeup, region eu-north-1) | Authorization: Bearer &lt;key&gt; |"
        in rows
    )
    assert "| stream framing | ndjson | aws-eventstream | sse |" in rows


@pytest.mark.parametrize("size", [1, 7, 64, 10_000])
def test_an_sse_event_over_the_cap_is_too_large_however_the_reads_cut_it(size: int) -> None:
    """An event over `max_event_bytes` ends the stream with too_large, even when it ends inside one read that
    brings more events (a read that cannot hold one over the cap is not looked at event by event); events
    within the cap read the same at any cut."""
    from toolnexus.http.framing import framing
    from toolnexus.http.limits import BodyError
    from toolnexus.http.transport import HttpxReply

    endpoint = toolnexus.load_rules(RULES).get("lines").endpoint

    async def read(body: bytes, cap: int) -> list[str]:
        reads = [body[i : i + size] for i in range(0, len(body), size)]
        request = httpx.Request("POST", "http://127.0.0.1/")
        headers = {"content-type": "text/event-stream"}
        response = httpx.Response(200, headers=headers, stream=_Chunks(reads), request=request)
        frames = framing("sse").read(HttpxReply(response), cap, endpoint)
        try:
            return [data async for data in frames]
        finally:
            await frames.aclose()

    small = b"".join(b'data: {"n": %d}\n\n' % i for i in range(20))
    assert asyncio.run(read(small, 40)) == [f'{{"n": {i}}}' for i in range(20)]
    big = small + b"data: " + b"x" * 60 + b"\n\n" + small
    with pytest.raises(BodyError) as info:
        asyncio.run(read(big, 40))
    assert info.value.kind == "too_large"
