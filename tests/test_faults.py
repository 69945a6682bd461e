"""Misbehaving providers (issue 5): one test per fault, for every provider the rules define.

Each fault runs the real client (real httpx, real sockets) against a `ProviderStub` on
127.0.0.1 that misbehaves in one way. Replies come from `fixtures/demo/<provider>.json` and
error bodies from the rule file's `endpoint.error` paths, so nothing here knows a provider's
shape. Every run must end in a result or a typed `ToolnexusError` (never a raw httpx or json
exception), within its time bound, leaving no task behind and no unclosed socket or transport
(ResourceWarning after `gc.collect()`).

`FAULTS` and `run` are reused by test_secrets.py, which replays every fault with a
recognisable key.
"""

from __future__ import annotations

import asyncio
import binascii
import copy
import json
import struct
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import toolnexus
from support.faults import (
    FAULTS,
    HANG_GUARD,
    HTML_502,
    PROVIDERS,
    RETRY_AFTER_S,
    SLOW_ANSWER_S,
    STACK_TARGETS,
    TOOL_NAME,
    USER,
    WRONG_SHAPES,
    Outcome,
    Scenario,
    assert_clean,
    big_text,
    fault_40_mb,
    fault_429_then_ok,
    fault_500_forever,
    fault_500_thrice_then_ok,
    fault_cancel_mid_flight,
    fault_error_in_200,
    fault_html_502,
    fault_refused,
    fault_reset_mid_body,
    fault_truncated_json,
    fault_wrong_shape,
    get_at,
    run,
    text_reply,
    tool_call_reply,
    tool_call_site,
    truncated_json,
)
from support.sse_encoders import framing_of
from toolnexus import Cancelled, ProviderError, ResponseError, TranslateResult
from toolnexus.devtools.stub import ProviderStub, Responder, StubReply, StubRequest, scripted
from toolnexus.http.framing import FRAMINGS
from toolnexus.http.limits import AttemptTimeout, WaitDeadline

# one TLS context for every client: httpx builds one per client otherwise (~85 ms each)


# ----------------------------------------------------------------- provider-neutral material


# ----------------------------------------------------------------- a stub that can stall mid-body


# ----------------------------------------------------------------- one run of one fault


def run_clean(provider: str, scenario: Scenario, stack: str = "aiohttp") -> Outcome:
    outcome = run(provider, scenario, stack=stack)
    assert_clean(outcome, scenario.bound)
    return outcome


# ----------------------------------------------------------------- the faults
# Each builder takes the provider and `echo`: when true, every error body the stub sends also
# quotes the credential the request carried (a provider that echoes the key; test_secrets).


def provider_error(outcome: Outcome) -> ProviderError:
    assert type(outcome.error) is ProviderError, repr(outcome.error)
    return outcome.error


# ----------------------------------------------------------------- one test per fault

# Every provider on the default transport (aiohttp); httpx's pool on one provider of each framing.
parametrize_targets = pytest.mark.parametrize(("provider", "stack"), STACK_TARGETS)


def error_type(provider: str) -> str | None:
    """The type an injected error body reports: none where the rule file reads no type from the body (Bedrock's
    is in a response header)."""
    return "fault_injected" if "type" in toolnexus.load_rules().get(provider).source.data["endpoint"]["error"] else None


def streams(provider: str) -> bool:
    """Whether the rules stream this provider (every shipped one does, each in its framing)."""
    return toolnexus.load_rules().get(provider).streaming is not None


@parametrize_targets
def test_connection_refused(provider: str, stack: str) -> None:
    scenario = fault_refused(provider)
    outcome = run_clean(provider, scenario, stack)
    error = provider_error(outcome)
    assert (error.kind, error.status, error.attempts) == ("connection", None, 3)
    assert [(e.outcome, e.attempts) for e in outcome.events] == [("error", 3)]


@parametrize_targets
def test_connection_reset_mid_body(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_reset_mid_body(provider), stack)
    error = provider_error(outcome)
    assert error.kind == "connection"
    assert error.attempts == 2 == len(outcome.requests)


@parametrize_targets
@pytest.mark.parametrize("fault", ["never-finishes", "stalls-mid-body"])
def test_a_response_that_never_finishes_times_out(provider: str, stack: str, fault: str) -> None:
    scenario = FAULTS[fault](provider, False)
    outcome = run_clean(provider, scenario, stack)
    error = provider_error(outcome)
    assert error.kind == "timeout"
    assert error.attempts == 2 == len(outcome.requests)
    assert outcome.elapsed >= 2 * scenario.options["timeout"]  # each attempt waited its timeout


@parametrize_targets
def test_429_with_retry_after_then_success(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_429_then_ok(provider), stack)
    assert outcome.result is not None and outcome.error is None
    assert outcome.result.text == toolnexus.translate_response(provider, text_reply(provider)).text
    assert len(outcome.requests) == 2
    assert outcome.elapsed >= RETRY_AFTER_S * 0.95  # retry-after honoured (backoff alone is 0.01 s)
    assert [(e.outcome, e.attempts, e.status) for e in outcome.events] == [("ok", 2, 200)]


@parametrize_targets
def test_500_three_times_then_success(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_500_thrice_then_ok(provider), stack)
    assert outcome.result is not None and outcome.error is None
    assert len(outcome.requests) == 4
    assert [(e.outcome, e.attempts) for e in outcome.events] == [("ok", 4)]


def injected_type(provider: str) -> str | None:
    """The error type the fault's body carries, where the provider's error body has one (Cohere's and Ollama's
    carry only a message)."""
    return "fault_injected" if "type" in toolnexus.load_rules().get(provider).source.data["endpoint"]["error"] else None


@parametrize_targets
def test_500_forever_gives_up_with_the_last_status(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_500_forever(provider), stack)
    error = provider_error(outcome)
    assert (error.kind, error.status, error.attempts) == ("http", 500, 4)  # max_retries=3
    assert len(outcome.requests) == 4
    assert "internal error" in error.message
    assert error.error_type == error_type(provider)
    assert [(e.outcome, e.attempts, e.status) for e in outcome.events] == [("error", 4, 500)]


@parametrize_targets
def test_an_html_502_page(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_html_502(provider), stack)
    error = provider_error(outcome)
    assert (error.kind, error.status, error.attempts) == ("http", 502, 2)
    assert HTML_502[:60].decode() in error.message  # the page's first bytes
    assert len(str(error)) < 600  # not the whole page


@parametrize_targets
def test_truncated_json(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_truncated_json(provider), stack)
    error = provider_error(outcome)
    assert (error.kind, error.status, error.attempts) == ("decode", 200, 1)
    assert truncated_json(provider)[:40].decode() in error.message
    assert len(outcome.requests) == 1


@parametrize_targets
@pytest.mark.parametrize("case", WRONG_SHAPES)
def test_a_json_body_of_the_wrong_shape(provider: str, stack: str, case: str) -> None:
    outcome = run_clean(provider, fault_wrong_shape(case)(provider, False), stack)
    site = tool_call_site(provider, tool_call_reply(provider))
    error, result = outcome.error, outcome.result
    if case == "empty-object":
        assert isinstance(error, ResponseError), repr(error)
        assert error.path, "a ResponseError must point at the missing field"
    elif case == "unknown-element":
        # said out loud: a note `unknown` at the element, or a ResponseError pointing at it; never silence
        unknown = f"{site.block_list}[{len(get_at(tool_call_reply(provider), site.block_list))}]"
        if error is not None:
            assert isinstance(error, ResponseError) and error.path.startswith(unknown), repr(error)
        else:
            assert result is not None
            notes = [(note.kind, note.path) for note in result.notes]
            assert ("unknown", unknown) in notes, f"{unknown} was dropped without a note: {result.notes}"
            assert [call.name for call in result.tool_calls] == [TOOL_NAME]  # the rest is still there
            assert result.raw is not None and get_at(result.raw, unknown)["type"] == "mystery_block"
    elif case == "tool-input-string" and site.native_text:
        # arguments arrive as JSON text on this provider: the rule passes the text on byte for byte
        assert result is not None, repr(error)
        assert [call.arguments for call in result.tool_calls] == ["a string, not an object"]
    else:  # a string where an object belongs, or the wrong JSON type
        assert isinstance(error, ResponseError), repr(error)
        assert error.path.startswith(site.element), (error.path, site.element)
    if error is not None:
        assert [e.outcome for e in outcome.events] == ["error"]
        assert len(outcome.requests) == 1  # a body that cannot be read is not retried


@parametrize_targets
def test_a_200_carrying_the_providers_error_object(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_error_in_200(provider), stack)
    error = provider_error(outcome)
    assert (error.kind, error.status, error.attempts) == ("http", 200, 1)
    assert error.message == "quota exhausted"
    assert error.error_type == error_type(provider)


@pytest.mark.slow
@parametrize_targets
def test_a_40_mb_response_is_translated_in_bounded_time(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_40_mb(provider), stack)
    assert outcome.error is None, repr(outcome.error)
    assert outcome.result is not None
    assert outcome.result.text == big_text()
    assert len(outcome.result.text.encode()) >= 39 * 1024 * 1024


@parametrize_targets
def test_mid_flight_cancel_leaves_the_client_reusable(provider: str, stack: str) -> None:
    outcome = run_clean(provider, fault_cancel_mid_flight(provider), stack)
    [cancelled] = outcome.errors
    assert isinstance(cancelled, Cancelled)
    assert outcome.error is None, repr(outcome.error)
    assert outcome.result is not None
    assert outcome.result.text == toolnexus.translate_response(provider, text_reply(provider)).text
    assert [e.outcome for e in outcome.events] == ["cancelled", "ok"]
    assert outcome.elapsed < SLOW_ANSWER_S / 2  # it did not wait for the slow answer


# ----------------------------------------------------------------- limits on what is read (issue 13)
# Caps are small here (1 MiB) so the runs are fast; the stub makes its huge bodies lazily, so only
# what the client reads is ever in memory. tracemalloc sees the whole process (client and stub).

CAP = 1024 * 1024
PEAK_BOUND = 8 * CAP  # the cap, one inflate step, httpx's and asyncio's own buffers; far below the body
HUGE = 1024**3  # bytes the stub would send: 1 GiB
BLOCK = 64 * 1024


def huge_json() -> Iterator[bytes]:
    """1 GiB of a JSON body that never ends, made as it is sent."""
    yield b'{"text": "'
    for _ in range(HUGE // BLOCK):
        yield b"a" * BLOCK


def gzip_bomb() -> Iterator[bytes]:
    """About 1 MB of gzip that inflates to 1 GiB of zeros, compressed as it is sent."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(BLOCK * 16)
    for _ in range(HUGE // len(zeros)):
        if packed := packer.compress(zeros):
            yield packed
    yield packer.flush()


def sse_without_newlines() -> Iterator[bytes]:
    yield b"data: "
    for _ in range(HUGE // BLOCK):
        yield b"x" * BLOCK


def sse_event_without_end() -> Iterator[bytes]:
    """Short lines forever, never the blank line that ends an event."""
    for _ in range(HUGE // BLOCK):
        yield b"data: x\n" * (BLOCK // 8)


def ndjson_without_newline() -> Iterator[bytes]:
    yield b'{"x": "'
    for _ in range(HUGE // BLOCK):
        yield b"x" * BLOCK


def aws_frame_over_the_cap() -> Iterator[bytes]:
    """A frame whose (valid) prelude announces 8 MiB (over the cap, within the 16 MiB botocore takes), then
    bytes as they come."""
    prelude = struct.pack("!II", 8 * 2**20, 0)
    yield prelude + struct.pack("!I", binascii.crc32(prelude))
    for _ in range(HUGE // BLOCK):
        yield b"x" * BLOCK


def lazy(pieces: Callable[[], Iterator[bytes]], sent: list[StubReply], **headers: str) -> Responder:
    """A responder sending `pieces()` as they are made; every reply kept in `sent` (to see the client leave)."""

    def respond(request: StubRequest) -> StubReply:
        reply = StubReply(stream=pieces(), headers={"Content-Type": "application/json", **headers})
        sent.append(reply)
        return reply

    return respond


async def _stream_all(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
    async with client.translate_stream(USER) as stream:
        async for _ in stream:
            pass
    return stream.result


def run_measured(provider: str, scenario: Scenario, stack: str) -> tuple[Outcome, int]:
    """run_clean under tracemalloc: the outcome and the peak bytes traced during the run."""
    tracemalloc.start()
    try:
        outcome = run_clean(provider, scenario, stack)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return outcome, peak


def assert_too_large(outcome: Outcome, sent: list[StubReply], peak: int) -> None:
    error = provider_error(outcome)
    assert (error.kind, error.status, error.attempts) == ("too_large", 200, 1)  # not retried
    assert len(outcome.requests) == 1
    assert [e.outcome for e in outcome.events] == ["error"]
    assert sent[0].client_closed.wait(HANG_GUARD), "the client kept the connection open"
    assert peak < PEAK_BOUND, f"peak {peak / 2**20:.1f} MiB for a cap of {CAP / 2**20:.0f} MiB"


@parametrize_targets
@pytest.mark.parametrize("body", ["huge", "gzip-bomb"])
def test_a_body_over_max_response_bytes_is_too_large(provider: str, stack: str, body: str) -> None:
    sent: list[StubReply] = []
    responder = lazy(huge_json, sent) if body == "huge" else lazy(gzip_bomb, sent, **{"Content-Encoding": "gzip"})
    scenario = Scenario(responder, 10.0, {"max_response_bytes": CAP})
    outcome, peak = run_measured(provider, scenario, stack)
    assert_too_large(outcome, sent, peak)


@parametrize_targets
@pytest.mark.parametrize("shape", ["one-line", "one-event"])
def test_a_streamed_event_over_max_event_bytes_is_too_large(provider: str, stack: str, shape: str) -> None:
    """In the provider's framing: an SSE line or event, an NDJSON line, an AWS frame (its prelude says how
    long it is) that never ends within the cap."""
    sent: list[StubReply] = []
    framing = framing_of(provider)
    pieces = {"ndjson": ndjson_without_newline, "aws-eventstream": aws_frame_over_the_cap}.get(
        framing, sse_without_newlines if shape == "one-line" else sse_event_without_end
    )
    media = FRAMINGS[framing].media_types[0]
    scenario = Scenario(lazy(pieces, sent, **{"Content-Type": media}), 10.0, {"max_event_bytes": CAP},
                        drive=_stream_all)  # fmt: skip
    outcome, peak = run_measured(provider, scenario, stack)
    assert_too_large(outcome, sent, peak)


@parametrize_targets
def test_a_body_at_max_response_bytes_is_read(provider: str, stack: str) -> None:
    payload = json.dumps(text_reply(provider)).encode()
    outcome = run_clean(provider, Scenario(lambda request: StubReply(body=payload), 4.0,
                                           {"max_response_bytes": len(payload)}), stack)  # fmt: skip
    assert outcome.result is not None, repr(outcome.error)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "1"])
def test_a_cap_that_is_not_a_positive_size_is_a_config_error(value: Any) -> None:
    for option in ("max_response_bytes", "max_event_bytes"):
        with pytest.raises(toolnexus.ConfigError):
            toolnexus.create_client("http://127.0.0.1:9/v1", PROVIDERS[0], "m", api_key="k", **{option: value})


DRIP_S = 0.2  # the stub sends one byte this often
DRIP_TIMEOUT = 1.0


def drip(body: bytes) -> Iterator[bytes]:
    return (body[i : i + 1] for i in range(len(body)))


@pytest.mark.slow
@parametrize_targets
@pytest.mark.parametrize("call", ["translate", "translate_stream"])
def test_a_slow_drip_is_bounded_by_the_attempt_timeout(provider: str, stack: str, call: str) -> None:
    """One byte every 0.2 s never lets httpx's read timeout fire; the attempt's deadline does."""
    if call == "translate_stream" and not streams(provider):
        pytest.skip(f"the {provider} rules stream no server-sent events")
    if call == "translate":
        body, content_type, drive = json.dumps(text_reply(provider)).encode(), "application/json", None
    else:
        body, content_type, drive = b"data: " + b"x" * 200, "text/event-stream", _stream_all
    responder = lambda request: StubReply(stream=drip(body), pause=DRIP_S, headers={"Content-Type": content_type})  # noqa: E731
    assert len(body) * DRIP_S >= 2 * HANG_GUARD  # a call that read the whole drip takes twice its time bound
    scenario = Scenario(responder, HANG_GUARD, {"timeout": DRIP_TIMEOUT, "max_retries": 0}, drive=drive)
    outcome = run_clean(provider, scenario, stack)
    error = provider_error(outcome)
    assert (error.kind, error.attempts) == ("timeout", 1)
    assert outcome.elapsed >= DRIP_TIMEOUT * 0.9


def test_overall_timeout_has_a_finite_default() -> None:
    client = toolnexus.create_client("http://127.0.0.1:9/v1", PROVIDERS[0], "m", api_key="k", timeout=10.0,
                                     max_retries=2)  # fmt: skip
    # every attempt's timeout, plus the longest retry-after honoured before each retry
    assert client.overall_timeout == 3 * 10.0 + 2 * 60.0
    asyncio.run(client.aclose())


@parametrize_targets
def test_a_refused_connection_is_the_same_error_for_translate_and_translate_stream(provider: str, stack: str) -> None:
    kinds = []
    for drive in (None, _stream_all) if streams(provider) else (None,):
        outcome = run_clean(provider, Scenario(None, 4.0, {"max_retries": 0}, drive=drive), stack)
        kinds.append((provider_error(outcome).kind, provider_error(outcome).attempts))
    assert kinds == [("connection", 1), ("connection", 1)][: len(kinds)]


def test_the_stub_sends_a_replayed_reply_the_same_way() -> None:
    reply = StubReply(status=503, body=b"<html>busy</html>", headers={"Content-Type": "text/html", "X-Id": "1"})
    before = copy.deepcopy(reply.headers)
    with ProviderStub(scripted([reply])) as stub, httpx.Client() as http:
        answers = [http.post(stub.base_url, content=b"{}") for _ in range(2)]
    assert [(a.status_code, a.headers["content-type"], a.text) for a in answers] == [
        (503, "text/html", "<html>busy</html>")
    ] * 2
    assert reply.headers == before


ENCODINGS = {
    "gzip": lambda data: zlib.compress(data, wbits=31),
    "deflate": lambda data: zlib.compress(data),  # zlib-wrapped, as the standard says
    "deflate-raw": lambda data: zlib.compress(data, wbits=-15),  # what some servers send instead
}


@parametrize_targets
@pytest.mark.parametrize("encoding", [*ENCODINGS, "x-unknown", "gzip, gzip"])
def test_a_compressed_answer_is_inflated(provider: str, stack: str, encoding: str) -> None:
    payload = json.dumps(text_reply(provider)).encode()
    packed = ENCODINGS[encoding](payload) if encoding in ENCODINGS else payload
    headers = {"Content-Encoding": encoding.removesuffix("-raw")}
    outcome = run_clean(provider, Scenario(lambda request: StubReply(body=packed, headers=headers), 4.0), stack)
    if encoding == "gzip, gzip":  # never inflated twice over (each pass would multiply the size)
        assert (provider_error(outcome).kind, provider_error(outcome).status) == ("decode", 200)
    else:  # an encoding the client did not ask for is taken as none, as httpx does
        assert outcome.result is not None, repr(outcome.error)
        assert outcome.result.text == toolnexus.translate_response(provider, text_reply(provider)).text


@pytest.mark.parametrize("call", ["translate", "translate_stream"])
@pytest.mark.parametrize("cap", [None, 10])
def test_a_transport_that_hands_over_a_read_body(call: str, cap: int | None) -> None:
    """httpx.MockTransport's responses are read already: they are used as they are, under the same caps."""
    provider = "openai"
    reply = text_reply(provider)
    if call == "translate":
        content, content_type = json.dumps(reply).encode(), "application/json"
    else:
        text = reply["choices"][0]["message"]["content"]
        delta = {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [delta]}
        content, content_type = b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n", "text/event-stream"
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, content=content, headers={"content-type": content_type})
    )
    options = {"max_response_bytes": cap, "max_event_bytes": cap} if cap else {}

    async def main() -> TranslateResult:
        async with toolnexus.create_client("http://127.0.0.1:9/v1", provider, "m", api_key="k", transport=transport,
                                           **options) as client:  # fmt: skip
            if call == "translate":
                return await client.translate(USER)
            return await _stream_all(client, [])

    if cap:
        with pytest.raises(ProviderError) as info:
            asyncio.run(main())
        assert info.value.kind == "too_large"
    else:
        assert asyncio.run(main()).text == toolnexus.translate_response(provider, reply).text


def test_wait_deadline_bounds_each_wait_not_their_sum() -> None:
    """The stream's per-event deadline: many short waits in a row outlast it together, one long wait does not."""

    async def main() -> None:
        # each wait a tenth of the deadline (room for a loaded machine), all of them together longer than it
        waits = WaitDeadline(1.0)
        for _ in range(11):
            assert await waits.wait(asyncio.sleep(0.1, "ok")) == "ok"
        with pytest.raises(AttemptTimeout):
            await waits.wait(asyncio.sleep(5))
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0  # its cancel was taken back
        waiter = asyncio.ensure_future(waits.wait(asyncio.sleep(5)))
        await asyncio.sleep(0.01)
        waiter.cancel()  # someone else's cancel stays a cancel
        with pytest.raises(asyncio.CancelledError):
            await waiter
        waits.close()

    asyncio.run(main())
