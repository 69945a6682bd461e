"""Streaming translation (issue 8): provider events in, OpenAI chunks out, the non-streaming result at the end.

The same provider content is served twice by a local stub: as one JSON body (`client.translate`)
and as the provider's event stream (`client.translate_stream`), cut at random byte boundaries.
The two TranslateResults must be equal (raw included), every chunk must be a valid
`openai.types.chat.ChatCompletionChunk` (strict), and the chunks must reassemble (as the OpenAI
SDK's own ChatCompletionStreamState does) into exactly that result. Streams are written by
tests/support/sse_encoders.py from each provider's streaming documentation.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
import json
import random
import ssl
import tracemalloc
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import openai.types.chat
import pydantic
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from hypothesis import assume, given
from hypothesis import strategies as st
from mistralai.client import models as mistral_models
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from typing_extensions import TypedDict

import toolnexus
from support.cases import CASES, case_ids
from support.faults import (
    FAST,
    HARD_CAP,
    USER,
    Drive,
    Scenario,
    assert_clean,
    cancel_once,
    canned_replies,
    error_object,
    model,
    noted,
    text_reply,
    tool_call_reply,
)
from support.faults import run as run_fault
from support.judges import (
    ANTHROPIC_SDK_GAPS,
    RICH_REFUSALS,
    RICH_REQUESTS,
    SDK_VALIDATORS,
    as_openrouter,
    as_vertex_anthropic,
    check_responses_api_rules,
    judge,
    judge_bedrock,
    judge_cohere,
    judge_gemini,
    judge_mistral_chunk,
    judge_mistral_model,
    judge_mistral_stream,
    judge_ollama,
    responses_stream_event,
    within_reach,
)
from support.sse_encoders import ENCODERS, canonical, data_of, error_event, events_reply, framing_of
from support.strategies import (
    GENERATORS,
    SETTINGS,
    json_equal,
    mistral_responses,
    responses_answers,
)
from support.variants import with_variants
from toolnexus import Cancelled, ConfigError, ProviderError, ResponseError, RuleError, TranslateResult, TranslationError
from toolnexus.devtools.conformance import Case
from toolnexus.devtools.stub import ProviderStub, StubReply, scripted
from toolnexus.http.framing import FRAMINGS
from toolnexus.http.transport import AiohttpStack
from toolnexus.language.jsonsafe import loads
from toolnexus.translate.stream_code import Streaming
from toolnexus.translate.stream_rules import END, Dispatch, Section

RULES = toolnexus.load_rules()
# Every provider streams, each in its rule file's framing (SSE; Ollama's NDJSON; Bedrock's AWS event stream).
PROVIDERS = [p for p in toolnexus.providers() if RULES.get(p).streaming is not None]
SSL = ssl.create_default_context()  # one TLS context for every client (httpx builds one per client otherwise)


def test_every_provider_streams_and_has_an_encoder_and_a_generator() -> None:
    assert toolnexus.providers() == PROVIDERS, "a provider lost its streaming"
    for provider in PROVIDERS:
        assert provider in ENCODERS, f"tests/support/sse_encoders.py cannot tell a {provider} response as a stream"
        assert provider in GENERATORS, f"no response generator for {provider}"


# ---------------------------------------------------------------- serving the same content both ways


class Served:
    """One stub for a whole test: it answers with whatever `reply` holds at the time."""

    def __init__(self) -> None:
        self.reply: Any = None
        self.stub = ProviderStub(lambda request: self.reply)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    holder = Served()
    with holder.stub:
        yield holder


def client(base_url: str, provider: str, **options: Any) -> toolnexus.Client:
    """A client on the default stack (aiohttp; httpx's streams are replayed by test_faults and
    test_framing_providers), with the suite's one TLS context."""
    transport = AiohttpStack(ssl=SSL)
    return toolnexus.create_client(base_url, provider, model(provider), api_key="test-key", transport=transport,
                                   backoff=FAST, **options)  # fmt: skip


def stream_reply(provider: str, response: dict[str, Any], rng: random.Random, cuts: int = 12) -> StubReply:
    return events_reply(provider, ENCODERS[provider](response, rng), rng, cuts=cuts)


async def both_ways(
    served: Served, provider: str, response: dict[str, Any], rng: random.Random, cuts: int = 12
) -> tuple[TranslateResult, list[dict[str, Any]], TranslateResult]:
    """(translate's result, the chunks, translate_stream's result) for the same content."""
    async with client(served.stub.base_url, provider) as c:
        served.reply = copy.deepcopy(response)
        plain = await c.translate(USER)
        served.reply = stream_reply(provider, response, rng, cuts)
        stream = c.translate_stream(USER)
        chunks = [chunk async for chunk in stream]
        return plain, chunks, stream.result


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, HARD_CAP))


# ---------------------------------------------------------------- what every stream must look like


def counting(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """Count the calls of the method `owner.name` (still run) in the returned list's one item."""
    calls = [0]
    original = getattr(owner, name)

    def counted(self: Any, *args: Any) -> Any:
        calls[0] += 1
        return original(self, *args)

    monkeypatch.setattr(owner, name, counted)
    return calls


def check_chunks(chunks: list[dict[str, Any]], result: TranslateResult) -> None:
    """The chunks follow the OpenAI streaming format and reassemble into `result` exactly."""
    assert chunks, "no chunks"
    for chunk in chunks:
        openai.types.chat.ChatCompletionChunk.model_validate(chunk, strict=True)
        assert chunk["object"] == "chat.completion.chunk"
        assert (chunk["id"], chunk["created"], chunk["model"]) == (chunks[0]["id"], chunks[0]["created"],
                                                                    chunks[0]["model"])  # fmt: skip
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant", "the first delta carries the role"
    with_choices = [c for c in chunks if c["choices"]]
    finishes = [c["choices"][0]["finish_reason"] for c in with_choices]
    assert finishes[-1] == result.finish_reason and not any(finishes[:-1]), "the finish reason is in the last chunk"
    assert with_choices[-1]["choices"][0]["delta"] == {}
    deltas = [c["choices"][0]["delta"] for c in with_choices]
    assert "".join(d.get("content", "") for d in deltas) == result.text
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        for piece in delta.get("tool_calls", []):
            index = piece["index"]
            if index not in calls:
                assert index == len(calls), "tool-call indexes count tool calls, in order"
                assert piece["type"] == "function" and piece["function"]["arguments"] == "" and piece["id"]
                calls[index] = {"id": piece["id"], "name": piece["function"]["name"], "arguments": ""}
            else:
                assert set(piece) == {"index", "function"} and set(piece["function"]) == {"arguments"}
                calls[index]["arguments"] += piece["function"]["arguments"]
    assert [calls[i] for i in range(len(calls))] == [
        {"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls
    ]
    if result.usage:
        assert not chunks[-1]["choices"] and chunks[-1]["usage"] == result.usage, "usage in a last chunk"
    assert [a for d in deltas for a in d.get("annotations", [])] == result.annotations, "annotations, once"
    assert [d["refusal"] for d in deltas if "refusal" in d] == ([result.refusal] if result.refusal else [])
    # the OpenAI SDK's own accumulator agrees
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(openai.types.chat.ChatCompletionChunk.model_validate(chunk))
    message = state.current_completion_snapshot.choices[0].message
    assert (message.content or "") == result.text
    assert [(t.id, t.function.name, t.function.arguments) for t in message.tool_calls or []] == [
        (c.id, c.name, c.arguments) for c in result.tool_calls
    ]


def same_result(plain: TranslateResult, streamed: TranslateResult, *, raw: bool = True) -> None:
    assert streamed.to_dict() == plain.to_dict()
    if raw:
        assert json_equal(streamed.raw, plain.raw), "the assembled response is the non-streaming one"


# ---------------------------------------------------------------- equivalence: generated responses


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(data=st.data())
def test_a_stream_gives_the_result_of_the_same_answer_sent_whole(served: Served, provider: str, data: Any) -> None:
    response = canonical(provider, data.draw(GENERATORS[provider](), label="response"))
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    cuts = data.draw(st.integers(0, 60), label="byte cuts")
    plain, chunks, streamed = run(both_ways(served, provider, response, rng, cuts))
    same_result(plain, streamed)
    check_chunks(chunks, streamed)


# ---------------------------------------------------------------- equivalence: every case table response


RESPONSE_CASES = [
    c for c in CASES if c.provider in PROVIDERS and "response" in c.data and "expect_response_error" not in c.data
]


@pytest.mark.parametrize("column", RESPONSE_CASES, ids=case_ids(RESPONSE_CASES))
def test_every_case_response_streams_to_its_case_result(served: Served, column: Case) -> None:
    """Every provider response of fixtures/cases/, told as a stream: the same result (or, with no end, cut off)."""
    provider, case = column.provider, column.data
    response = canonical(provider, case["response"])
    want = toolnexus.translate_response(provider, response, requested_model=case.get("requested_model"))
    translator = toolnexus.stream_translator(provider, requested_model=case.get("requested_model"))
    chunks: list[dict[str, Any]] = []
    events = ENCODERS[provider](response, random.Random(column.concern))
    try:
        for event in events:
            chunks += translator.feed(data_of(provider, event))
        chunks += translator.finish()
    except ProviderError as exc:  # a stream with no end event and no finish reason was cut off
        assert exc.kind == "connection" and not any(
            present(response)
            for present in RULES.get(provider).streaming.complete  # type: ignore[union-attr]
        ), exc
        return
    assert translator.result is not None
    same_result(want, translator.result, raw=False)  # an off-spec case may lack fields every stream carries
    check_chunks(chunks, translator.result)


def feed_all(provider: str, events: list[bytes]) -> tuple[list[dict[str, Any]], Any]:
    translator = toolnexus.stream_translator(provider)
    chunks = []
    for event in events:
        chunks += translator.feed(data_of(provider, event))
    return chunks, translator


# ---------------------------------------------------------------- the request


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_streamed_call_sends_the_translated_body_with_the_stream_keys_to_the_stream_path(provider: str) -> None:
    streaming = RULES.get(provider).streaming
    assert streaming is not None
    reply = text_reply(provider)
    with ProviderStub(scripted([reply, stream_reply(provider, reply, random.Random(1))])) as stub:

        async def go() -> None:
            async with client(stub.base_url, provider) as c:
                await c.translate(USER, params={"temperature": 0.25})
                async for _ in c.translate_stream(USER, params={"temperature": 0.25}):
                    pass

        run(go())
    plain, streamed = stub.requests
    assert streamed.body == {**plain.body, **streaming.body}
    assert "0.25" in json.dumps(streamed.body)  # params reach the streamed call as they reach translate
    assert streamed.headers["accept"] == FRAMINGS[framing_of(provider)].media_types[0]
    want = (streaming.path or RULES.get(provider).endpoint.path).replace("{model}", model(provider))
    declared = "&" if "?" in want else "?"  # the query parameters a rule file declares follow the path's own
    path = urllib.parse.unquote(streamed.path)  # a model id is one path segment: Bedrock's `:` goes as %3A
    assert path == "/v1" + want or path.startswith("/v1" + want + declared)


@SETTINGS
@given(response=mistral_responses(), seed=st.integers(0, 2**16))
def test_every_mistral_event_is_a_chunk_the_sdk_reads(response: dict[str, Any], seed: int) -> None:
    """The encoder's events (and so the stream tests) are Mistral's chunk shape, judged like the responses."""
    judge_mistral_model(mistral_models.ChatCompletionResponse, response)
    assume(response["choices"][0]["finish_reason"] != "model_length")  # whole answers only: a chunk never says it
    events = ENCODERS["mistral"](response, random.Random(seed))
    for event in events[:-1]:  # the last is [DONE]
        data = event.decode().removeprefix("data: ").strip()
        judge_mistral_chunk(json.loads(data))


def test_the_mistral_stream_fixture_is_chunks_the_sdk_reads() -> None:
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "mistral.sse").read_text()
    data = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    for item in data[:-1]:
        judge_mistral_chunk(json.loads(item))


@SETTINGS
@given(response=responses_answers(), seed=st.integers(0, 2**16))
def test_every_responses_event_is_an_event_the_sdk_reads(response: dict[str, Any], seed: int) -> None:
    """The encoder's answers and events (and so the stream tests) are the openai SDK's Response and
    ResponseStreamEvent shapes, strictly; the stream rebuilds the answer the SDK reads."""
    SDK_VALIDATORS["openai-responses"](copy.deepcopy(response))
    for event in ENCODERS["openai-responses"](response, random.Random(seed)):
        data = next(line for line in event.decode().split("\n") if line.startswith("data: "))  # text may hold U+2028
        responses_stream_event(json.loads(data.removeprefix("data: ")))


def test_the_responses_stream_fixture_is_events_the_sdk_reads() -> None:
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "openai-responses.sse").read_text()
    data = [json.loads(line.removeprefix("data: ")) for line in text.splitlines() if line.startswith("data: ")]
    assert data[0]["type"] == "response.created" and data[-1]["type"] == "response.completed"
    for item in data:
        responses_stream_event(item)


def test_a_mistral_stream_restores_the_ids_its_request_sent_rewritten() -> None:
    """A streamed answer that echoes a rewritten id gives the caller's id, in the chunks and in the result."""
    request = {"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]}  # fmt: skip
    body = toolnexus.translate_request("mistral", request)
    sent = body["messages"][1]["tool_calls"][0]["id"]
    response = {"id": "cmpl-1", "object": "chat.completion", "created": 1, "model": "mistral-large-2411",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "",
                             "tool_calls": [{"id": sent, "type": "function", "index": 0,
                                             "function": {"name": "f", "arguments": "{}"}}]}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
    translator = toolnexus.stream_translator("mistral", id_map=body.id_map)
    chunks = [c for event in ENCODERS["mistral"](response, random.Random(0)) for c in translator.feed(
        event.decode().removeprefix("data: ").strip())]  # fmt: skip
    chunks += translator.finish()
    streamed = [call["id"] for c in chunks for ch in c["choices"] for call in ch["delta"].get("tool_calls", [])
                if "id" in call]  # fmt: skip
    assert streamed == ["call_1"]
    assert translator.result is not None and [c.id for c in translator.result.tool_calls] == ["call_1"]
    unmapped = toolnexus.stream_translator("mistral")
    for event in ENCODERS["mistral"](response, random.Random(0)):
        unmapped.feed(event.decode().removeprefix("data: ").strip())
    unmapped.finish()
    assert unmapped.result is not None and [c.id for c in unmapped.result.tool_calls] == [sent]


def test_the_stream_keys_are_what_each_provider_documents() -> None:
    """The provider-specific facts, pinned once: what asks each API for a stream."""
    assert RULES.get("anthropic").streaming.body == {"stream": True}  # type: ignore[union-attr]
    assert RULES.get("openai").streaming.body == {"stream": True, "stream_options": {"include_usage": True}}  # type: ignore[union-attr]
    assert RULES.get("gemini").streaming.path == "/models/{model}:streamGenerateContent?alt=sse"  # type: ignore[union-attr]
    assert RULES.get("mistral").streaming.body == {"stream": True}  # type: ignore[union-attr]  # usage comes unasked
    assert RULES.get("bedrock").streaming.path == "/model/{model}/converse-stream"  # type: ignore[union-attr]
    framings = {p: RULES.get(p).streaming.framing for p in ("bedrock", "ollama", "anthropic")}  # type: ignore[union-attr]
    assert framings == {"bedrock": "aws-eventstream", "ollama": "ndjson", "anthropic": "sse"}


# Module-level: a lazily validated Iterable needs its adapter alive while it is consumed.
ANTHROPIC_STREAM_REQUEST = pydantic.TypeAdapter(MessageCreateParamsStreaming)


class Streamed(TypedDict):
    stream: Literal[True]


STREAMED = pydantic.TypeAdapter(Streamed)
OPENAI_STREAM_REQUEST = pydantic.TypeAdapter(CompletionCreateParamsStreaming)
RESPONSES_STREAM_REQUEST = pydantic.TypeAdapter(ResponseCreateParamsStreaming)
STREAM_JUDGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "anthropic": lambda body: judge(ANTHROPIC_STREAM_REQUEST, body, unknown_top_level=ANTHROPIC_SDK_GAPS),
    "openai": lambda body: judge(OPENAI_STREAM_REQUEST, body),
    "openai-responses": lambda body: (judge(RESPONSES_STREAM_REQUEST, body), check_responses_api_rules(body)),
    "gemini": judge_gemini,  # the same generateContent body; streaming is the URL
    "bedrock": judge_bedrock,  # ConverseStream's request is Converse's; streaming is the URL
    "mistral": judge_mistral_stream,
    # cohere and ollama: the same body with stream true (the SDKs have no separate streaming request type)
    "cohere": lambda body: (STREAMED.validate_python(body), judge_cohere(body)),
    "ollama": lambda body: (STREAMED.validate_python(body), judge_ollama(body)),
}
STREAM_JUDGES["vertex-anthropic"] = as_vertex_anthropic(STREAM_JUDGES["anthropic"])
STREAM_JUDGES["openrouter"] = as_openrouter(STREAM_JUDGES["openai"])
STREAM_JUDGES = with_variants(STREAM_JUDGES)  # a variant without an entry takes its parent's


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("name", sorted(RICH_REQUESTS))
def test_streamed_bodies_pass_the_sdks_streaming_request_types(provider: str, name: str) -> None:
    streaming = RULES.get(provider).streaming
    assert streaming is not None and provider in STREAM_JUDGES, f"no streaming judge for {provider}"
    if (provider, name) in RICH_REFUSALS:  # refused on purpose (test_sdk_judges checks where)
        return
    body = toolnexus.translate_request(provider, within_reach(provider, RICH_REQUESTS[name]))
    STREAM_JUDGES[provider]({**body, **streaming.body})
    if streaming.body:  # the streaming types require what the stream keys say: without them, refused
        with pytest.raises((pydantic.ValidationError, AssertionError)):
            STREAM_JUDGES[provider](dict(body))


def test_a_provider_without_a_streaming_section_cannot_stream(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[1] / "rules" / "anthropic.yaml").read_text()
    head, _, _ = text.partition("\n# How a streamed answer")
    assert "streaming:" not in head
    (tmp_path / "acme.yaml").write_text(head.replace("provider: anthropic", "provider: acme") + "\n")
    assert toolnexus.load_rules(tmp_path).get("acme").streaming is None
    with pytest.raises(ConfigError):
        toolnexus.stream_translator("acme", rules=tmp_path)
    c = toolnexus.create_client("http://127.0.0.1:9/v1", "acme", "m", api_key="k", rules=tmp_path)
    with pytest.raises(ConfigError):
        c.translate_stream(USER)
    run(c.aclose())


def test_a_translation_error_raises_when_the_stream_is_asked_for() -> None:
    c = client("http://127.0.0.1:9/v1", "anthropic")
    with pytest.raises(TranslationError) as info:
        c.translate_stream([{"role": "wizard", "content": "x"}])
    assert info.value.path == "messages[0].role"
    run(c.aclose())


# ---------------------------------------------------------------- deltas


def test_anthropic_tool_call_indexes_count_tool_calls_only_and_thinking_is_not_content() -> None:
    response = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "c2ln"},
            {"type": "text", "text": "Two calls."},
            {"type": "tool_use", "id": "toolu_a", "name": "a", "input": {"x": 1}},
            {"type": "redacted_thinking", "data": "b3BhcXVl"},
            {"type": "tool_use", "id": "toolu_b", "name": "b", "input": {}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 7},
    }  # fmt: skip
    chunks, translator = feed_all("anthropic", ENCODERS["anthropic"](response, random.Random(2)))
    chunks += translator.finish()
    result = translator.result
    assert result.to_dict() == toolnexus.translate_response("anthropic", response).to_dict()
    assert result.raw == response, "thinking text, signature and redacted blocks are kept as the provider sent them"
    check_chunks(chunks, result)
    starts = [p for c in chunks if c["choices"] for p in c["choices"][0]["delta"].get("tool_calls", []) if "id" in p]
    assert [(p["index"], p["id"]) for p in starts] == [(0, "toolu_a"), (1, "toolu_b")]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "Let me think."
    assert "".join(d.get("content", "") for d in deltas) == "Two calls."


def test_anthropic_citations_arriving_in_deltas_are_kept_on_their_text_block() -> None:
    citation = {"type": "char_location", "cited_text": "Paris", "document_index": 0, "start_char_index": 0,
                "end_char_index": 5, "document_title": None}  # fmt: skip
    events = [
        {"type": "message_start", "message": {"id": "msg_c", "type": "message", "role": "assistant", "model": "m",
                                              "content": [], "stop_reason": None, "stop_sequence": None,
                                              "usage": {"input_tokens": 1, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "", "citations": []}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": citation}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Paris."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]  # fmt: skip
    translator = toolnexus.stream_translator("anthropic")
    for event in events:
        translator.feed(json.dumps(event))
    translator.finish()
    assert translator.result is not None and translator.result.text == "Paris."
    assert translator.response["content"] == [{"type": "text", "text": "Paris.", "citations": [citation]}]


def test_gemini_thoughts_stream_as_reasoning_and_calls_get_the_non_streaming_ids() -> None:
    response = {
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "Thinking it over.", "thought": True},
            {"text": "Calling."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
        ]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4, "totalTokenCount": 7},
        "modelVersion": "gemini-2.5-flash", "responseId": "r1",
    }  # fmt: skip
    chunks, translator = feed_all("gemini", ENCODERS["gemini"](response, random.Random(5), cuts=3))
    chunks += translator.finish()
    want = toolnexus.translate_response("gemini", response)
    assert translator.result.to_dict() == want.to_dict()
    assert [c.id for c in translator.result.tool_calls] == [c.id for c in want.tool_calls]
    check_chunks(chunks, translator.result)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "Thinking it over."
    # The signature rides on the call's first delta, as on the call in tool_calls_json(): a caller
    # who rebuilds the assistant message from the chunks keeps it for the next turn.
    opened = [call for d in deltas for call in d.get("tool_calls", []) if "id" in call]
    assert [call.get("extra_content") for call in opened] == [
        call.get("extra_content") for call in translator.result.tool_calls_json()
    ]
    assert opened[0]["extra_content"] == {"google": {"thought_signature": "c2ln"}}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_chunks_carry_the_provider_id_and_model(provider: str) -> None:
    reply = tool_call_reply(provider)
    chunks, translator = feed_all(provider, ENCODERS[provider](reply, random.Random(0)))
    chunks += translator.finish()
    assert {c["model"] for c in chunks} == {translator.result.model}
    streaming = RULES.get(provider).streaming
    assert streaming is not None
    if streaming.chunk_id is None:  # the provider's stream names no id (Ollama): one made-up id for every chunk
        assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
        return
    assert {c["id"] for c in chunks} == {streaming.chunk_id(translator.response)}


def test_an_unknown_event_type_is_ignored_and_noted() -> None:
    reply = text_reply("anthropic")
    events = ENCODERS["anthropic"](reply, random.Random(0))
    odd = b'event: surprise\ndata: {"type": "surprise", "what": 1}\n\n'
    chunks, translator = feed_all("anthropic", [events[0], odd, odd, *events[1:]])
    chunks += translator.finish()
    assert translator.result.text == toolnexus.translate_response("anthropic", reply).text
    notes = [n for n in translator.result.notes if n.kind == "unknown"]
    assert len(notes) == 1 and notes[0].path == "events[1]", "noted once, where it first came"


# ---------------------------------------------------------------- faults
# Each fault runs on test_faults' harness: a fresh client with a one-connection pool against a stub,
# then the shared promise (a typed error, within its bound, no task left behind, no unclosed socket).


def holds_calls(provider: str) -> bool:
    """Whether the provider's calls can come without ids: then they wait for the end (their ids hash it all)."""
    return any(src.synthesize_ids for src in toolnexus.load_rules().get(provider).outbound.sources)


def cut_before_end(provider: str, events: list[bytes]) -> list[bytes]:
    """The events up to a tool call's first argument piece: a half-received tool call (all but the last
    event where calls wait for their synthesized ids)."""
    if holds_calls(provider):
        return events[:-1]
    for i in range(len(events)):
        chunks, _ = feed_all(provider, events[: i + 1])
        if any(p["function"].get("arguments") and "id" not in p
               for c in chunks for p in c["choices"][0]["delta"].get("tool_calls", [])):  # fmt: skip
            return events[: i + 1]
    raise AssertionError(f"{provider}: no argument piece in the stream")


def streaming(chunks: list[dict[str, Any]], *, cancel_after_first: float | None = None) -> Drive:
    """A harness drive: one translate_stream, every chunk into `chunks` (cancel set after the first one)."""

    async def drive(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
        cancel = asyncio.Event() if cancel_after_first is not None else None
        stream = client.translate_stream(USER, cancel=cancel)
        async for chunk in stream:
            chunks.append(chunk)
            if cancel is not None and cancel_after_first is not None and len(chunks) == 1:
                asyncio.get_running_loop().call_later(cancel_after_first, cancel.set)  # while it waits for bytes
        return stream.result

    return drive


def assert_unfinished(chunks: list[dict[str, Any]]) -> None:
    assert chunks, "the chunks before the failure were yielded"
    assert all(c["choices"] and c["choices"][0]["finish_reason"] is None for c in chunks), "never a finish reason"


BOUND = 10.0  # seconds: far below every stall the stubs below hold


def held_stream(provider: str) -> StubReply:
    """The first events of a stream, then silence (up to a minute) with the connection open."""
    events = ENCODERS[provider](text_reply(provider), random.Random(3), cuts=4)
    return events_reply(provider, [b"".join(events[:2])], hold=60.0)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("how", ["cut", "ended-early"])
def test_a_dropped_stream_is_a_provider_error_after_the_chunks_and_never_completes_a_tool_call(
    provider: str, how: str
) -> None:
    """`cut`: the connection closes mid-body; `ended-early`: the body ends cleanly before the provider's end."""
    events = ENCODERS[provider](tool_call_reply(provider), random.Random(4), cuts=3)
    reply = events_reply(provider, cut_before_end(provider, events), random.Random(1), cuts=5, cut=how == "cut")
    chunks: list[dict[str, Any]] = []
    outcome = run_fault(provider, Scenario(scripted([reply, text_reply(provider)]), BOUND, {"max_retries": 3},
                                           streaming(chunks)))  # fmt: skip
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, ProviderError) and outcome.error.kind == "connection", outcome.error
    assert len(outcome.requests) == 1, "no retry once the stream has started"
    assert_unfinished(chunks)
    started = any("tool_calls" in c["choices"][0]["delta"] for c in chunks)
    assert started != holds_calls(provider), "the tool call had started, unless it waits for its synthesized id"
    assert [e.outcome for e in outcome.events] == ["error"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_connection_lost_after_the_end_event_loses_nothing(provider: str) -> None:
    """Every event, then the connection closes without ending the body: complete if the rules' end had come."""
    reply = tool_call_reply(provider)
    events = ENCODERS[provider](reply, random.Random(4), cuts=3)
    chunks: list[dict[str, Any]] = []
    stub_reply = events_reply(provider, events, random.Random(1), cuts=5, cut=True)
    outcome = run_fault(provider, Scenario(scripted([stub_reply]), BOUND, drive=streaming(chunks)))
    assert_clean(outcome, BOUND)
    streaming_rules = RULES.get(provider).streaming
    assert streaming_rules is not None
    ends = [steps for steps in streaming_rules.events.values() if isinstance(steps, tuple) and END in steps]
    if streaming_rules.done is None and not ends:
        assert isinstance(outcome.error, ProviderError) and outcome.error.kind == "connection"  # no end event
        return
    assert outcome.error is None and outcome.result is not None
    got = outcome.result.to_dict()  # the client's result also holds the request's notes; each says its side
    got["notes"] = [{k: v for k, v in n.items() if k != "side"} for n in got["notes"] if n.get("side") != "request"]
    # the client asked for the demo's model: a response that names none (Cohere's) reports that one
    assert (
        got
        == toolnexus.translate_response(provider, canonical(provider, reply), requested_model=model(provider)).to_dict()
    )
    check_chunks(chunks, outcome.result)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("echo", [False, True])
def test_an_error_event_mid_stream_is_a_provider_error_with_its_type_and_message(provider: str, echo: bool) -> None:
    """With `echo`, the event quotes the credential (a provider echoing the key): it never reaches the caller."""
    key = "sk-stream-secret-0123456789abcdef"
    events = ENCODERS[provider](text_reply(provider), random.Random(3), cuts=3)
    message = "Overloaded, try later" + (f" (key {key})" if echo else "")
    error = error_event(provider, error_object(provider, message, "overloaded_error"))
    bad = [*events[:2], error, *events[2:]]
    chunks: list[dict[str, Any]] = []
    reply = events_reply(provider, bad, random.Random(2), cuts=9)
    outcome = run_fault(provider, Scenario(scripted([reply]), BOUND, drive=streaming(chunks)), api_key=key)
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, ProviderError)
    assert outcome.error.message == "Overloaded, try later" + (" (key ***)" if echo else "")
    if "type" in RULES.get(provider).source.data["endpoint"]["error"] or framing_of(provider) == "aws-eventstream":
        assert outcome.error.error_type == "overloaded_error"
    assert (outcome.error.status, outcome.error.kind) == (200, "http")
    assert key not in repr(outcome.error) + str(outcome.error) + repr(outcome.events)
    assert_unfinished(chunks)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_that_stalls_times_out_after_its_chunks(provider: str) -> None:
    chunks: list[dict[str, Any]] = []
    # a 1 s deadline per wait: a loaded machine's first chunks come well within it, the minute of silence does not
    scenario = Scenario(scripted([held_stream(provider)]), BOUND, {"timeout": 1.0}, streaming(chunks))
    outcome = run_fault(provider, scenario)
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, ProviderError) and outcome.error.kind == "timeout", outcome.error
    assert_unfinished(chunks)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_that_never_starts_hits_the_overall_timeout(provider: str) -> None:
    slow = StubReply(stream=[b""], delay=20.0)
    outcome = run_fault(provider, Scenario(scripted([slow]), BOUND, {"overall_timeout": 0.3}, streaming([])))
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, ProviderError) and outcome.error.kind == "timeout", outcome.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_event_that_is_not_json_is_a_decode_error(provider: str) -> None:
    events = ENCODERS[provider](text_reply(provider), random.Random(3))
    _, translator = feed_all(provider, events[:1])
    with pytest.raises(ProviderError) as info:
        translator.feed('{"half": ')
    assert info.value.kind == "decode"


def test_a_delta_for_a_block_that_never_started_is_a_response_error_at_the_event() -> None:
    events = ENCODERS["anthropic"](text_reply("anthropic"), random.Random(3))
    _, translator = feed_all("anthropic", events[:1])
    with pytest.raises(ResponseError) as info:
        translator.feed(json.dumps({"type": "content_block_delta", "index": 4,
                                    "delta": {"type": "text_delta", "text": "x"}}))  # fmt: skip
    assert info.value.path == "events[1].index"


def test_streamed_tool_input_that_is_not_json_is_a_response_error_at_the_block() -> None:
    reply = tool_call_reply("anthropic")
    events = ENCODERS["anthropic"](reply, random.Random(3), cuts=0)
    broken = [e.replace(b'"partial_json": "{', b'"partial_json": "{{') for e in events]
    assert broken != events
    _, translator = feed_all("anthropic", broken)
    with pytest.raises(ResponseError) as info:
        translator.finish()
    index = next(i for i, b in enumerate(reply["content"]) if b["type"] == "tool_use")
    assert info.value.path == f"content[{index}].input"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_happen_before_the_first_byte_only(provider: str) -> None:
    reply = text_reply(provider)
    busy = StubReply(status=503, body=error_object(provider, "busy", "overloaded_error"))
    scenario = Scenario(scripted([busy, busy, stream_reply(provider, reply, random.Random(1))]), BOUND,
                        {"max_retries": 2}, streaming([]))  # fmt: skip
    outcome = run_fault(provider, scenario)
    assert_clean(outcome, BOUND)
    assert outcome.result is not None and outcome.result.text == toolnexus.translate_response(provider, reply).text
    assert len(outcome.requests) == 3
    assert [(e.outcome, e.attempts) for e in outcome.events] == [("ok", 3)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_http_error_before_the_stream_is_the_providers_error(provider: str) -> None:
    refused = StubReply(status=400, body=error_object(provider, "bad request: max_tokens", "invalid_request_error"))
    outcome = run_fault(provider, Scenario(scripted([refused]), BOUND, drive=streaming([])))
    assert_clean(outcome, BOUND)
    error = outcome.error
    assert isinstance(error, ProviderError)
    assert (error.status, error.kind, error.message) == (400, "http", "bad request: max_tokens")


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("body", ["error", "answer"])
def test_a_json_answer_to_a_stream_request_is_refused_clearly(provider: str, body: str) -> None:
    """A 2xx that is not an event stream: the provider's error shape is its error, anything else a decode error."""
    payload = error_object(provider, "quota exceeded", "rate_limit") if body == "error" else text_reply(provider)
    outcome = run_fault(provider, Scenario(scripted([payload]), BOUND, drive=streaming([])))
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, ProviderError)
    assert outcome.error.kind == ("http" if body == "error" else "decode")


# ---------------------------------------------------------------- hooks and events


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hooks_fire_once_after_llm_with_the_assembled_response(provider: str) -> None:
    reply = canonical(provider, tool_call_reply(provider))
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []

    def before_llm(body: dict[str, Any]) -> dict[str, Any]:
        before.append(copy.deepcopy(body))
        return {**body, "metadata_marker": "from-before-llm"}

    async def after_llm(response: dict[str, Any]) -> None:
        after.append(copy.deepcopy(response))

    options = {"before_llm": before_llm, "after_llm": after_llm}
    outcome = run_fault(provider, Scenario(scripted([stream_reply(provider, reply, random.Random(6))]), BOUND,
                                           options, streaming([])))  # fmt: skip
    assert_clean(outcome, BOUND)
    result = outcome.result
    streaming_rules = RULES.get(provider).streaming
    assert result is not None and streaming_rules is not None
    assert len(before) == 1 and all(before[0][k] == v for k, v in streaming_rules.body.items())
    assert outcome.requests[0].body["metadata_marker"] == "from-before-llm"
    assert len(after) == 1 and json_equal(after[0], reply)
    assert result.raw is not None and json_equal(result.raw, reply)
    assert [(e.outcome, e.usage, e.status) for e in outcome.events] == [("ok", result.usage, 200)]


def test_result_before_the_end_is_a_state_error() -> None:
    """Read before the stream ends, `stream.result` is a StateError; a RuntimeError too, as it was before it."""
    c = client("http://127.0.0.1:9/v1", "openai")
    stream = c.translate_stream(USER)
    with pytest.raises(toolnexus.StateError, match="once the stream is exhausted") as info:
        _ = stream.result
    assert isinstance(info.value, RuntimeError)
    run(c.aclose())


# ---------------------------------------------------------------- cancel and early close


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_during_a_read_ends_the_stream_and_closes_the_connection(provider: str) -> None:
    reply = held_stream(provider)
    chunks: list[dict[str, Any]] = []
    outcome = run_fault(provider, Scenario(scripted([reply]), BOUND, drive=streaming(chunks, cancel_after_first=0.05)))
    assert_clean(outcome, BOUND)  # within BOUND: far less than the stub's minute of silence
    assert isinstance(outcome.error, Cancelled)
    assert reply.client_closed.wait(10), "the connection was closed"
    assert_unfinished(chunks)
    assert [e.outcome for e in outcome.events] == ["cancelled"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_while_waiting_for_the_stream_to_start(provider: str) -> None:
    slow, received = noted(scripted([StubReply(stream=[b""], delay=20.0)]))

    async def drive(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
        # once the stub holds the request, not after a fixed delay: a loaded machine may not have sent it by then
        cancel = asyncio.Event()
        setter = cancel_once(received.is_set, cancel, "the request at the stub")
        stream = client.translate_stream(USER, cancel=cancel)
        try:
            await anext(stream)
        finally:
            await setter
        return stream.result

    outcome = run_fault(provider, Scenario(slow, BOUND, drive=drive))
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, Cancelled)
    assert [e.outcome for e in outcome.events] == ["cancelled"]


def test_cancel_set_before_the_first_chunk_sends_nothing() -> None:
    async def drive(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
        cancel = asyncio.Event()
        cancel.set()
        stream = client.translate_stream(USER, cancel=cancel)
        await anext(stream)
        return stream.result

    outcome = run_fault("openai", Scenario(scripted([held_stream("openai")]), BOUND, drive=drive))
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, Cancelled)
    assert outcome.requests == [] and outcome.events == []


def test_cancel_between_chunks_stops_at_the_next_one() -> None:
    reply = text_reply("anthropic")
    got: list[dict[str, Any]] = []

    async def drive(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
        cancel = asyncio.Event()
        stream = client.translate_stream(USER, cancel=cancel)
        async for chunk in stream:
            got.append(chunk)
            cancel.set()
        return stream.result

    outcome = run_fault("anthropic", Scenario(scripted([stream_reply("anthropic", reply, random.Random(1))]), BOUND,
                                              drive=drive))  # fmt: skip
    assert_clean(outcome, BOUND)
    assert isinstance(outcome.error, Cancelled)
    assert len(got) == 1, "nothing more after the cancel, not even chunks already translated"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_closing_a_stream_early_closes_the_connection(provider: str) -> None:
    reply = held_stream(provider)
    after_close: list[BaseException] = []

    async def drive(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
        async with client.translate_stream(USER) as stream:
            await anext(stream)
        try:
            await anext(stream)
        except StopAsyncIteration as exc:
            after_close.append(exc)
        return await client.translate(USER)  # the one pooled connection is free again

    outcome = run_fault(provider, Scenario(scripted([reply, text_reply(provider)]), BOUND, drive=drive))
    assert_clean(outcome, BOUND)
    assert outcome.result is not None and after_close
    assert reply.client_closed.wait(10)
    assert [e.outcome for e in outcome.events] == ["cancelled", "ok"]


# ---------------------------------------------------------------- memory


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_memory_grows_with_the_content_not_with_the_number_of_events(provider: str) -> None:
    """The same 100 kB answer in 500 and in 20,000 events: the peak of the second is not larger."""
    reply = copy.deepcopy(text_reply(provider))
    text = "".join(random.Random(0).choices("abcdefghij ", k=100_000))
    original = toolnexus.translate_response(provider, reply).text
    set_text(reply, original, text)

    def peak(cuts: int) -> int:
        events = [data_of(provider, e) for e in ENCODERS[provider](reply, random.Random(1), cuts=cuts)]
        translator = toolnexus.stream_translator(provider)
        tracemalloc.start()
        try:
            for data in events:
                translator.feed(data)
            translator.finish()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            assert translator.result is not None and translator.result.text == text

    few, many = peak(500), peak(20_000)
    assert many < few * 1.25 + 64 * 1024, (few, many)


# How many closing events of a provider's stream carry the whole answer again (Responses: content_part.done,
# output_item.done and response.completed, as the encoder writes them).
ANSWER_REPEATED_AT_END = {"openai-responses": 3}


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_memory_is_bounded_by_the_answer_not_by_100_000_events(provider: str) -> None:
    """Over 100,000 one-character events the stream keeps the answer's text and nothing per event: the peak
    while feeding stays within twice the answer's size, and through `finish()` within what translating the
    whole answer takes plus that (8 bytes kept per event would be 1.2 MB over either bound)."""
    size = 150_000
    reply = copy.deepcopy(text_reply(provider))
    text = "".join(random.Random(0).choices("abcdefghij ", k=size))
    set_text(reply, toolnexus.translate_response(provider, reply).text, text)
    events = [data_of(provider, e) for e in ENCODERS[provider](reply, random.Random(1), cuts=size - 1)]
    assert len(events) >= 100_000
    # Responses' closing events tell the whole answer again (the finished part, the finished item, the completed
    # response): they are fed with the finish, whose bound adds what decoding the largest of them takes.
    repeated = ANSWER_REPEATED_AT_END.get(provider, 0)
    events, closing = events[: len(events) - repeated], events[len(events) - repeated :]
    whole = canonical(provider, reply)
    warm = toolnexus.stream_translator(provider)  # one-time costs (caches filled by a first stream) are not per event
    for data in events[:100]:
        warm.feed(data)
    translator = toolnexus.stream_translator(provider)
    tracemalloc.start()
    try:
        if closing:
            loads(max(closing, key=len))
        decoding = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        toolnexus.translate_response(provider, whole)
        translating = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        for data in events:
            translator.feed(data)  # the chunks are dropped as a proxy sends them on
        feeding = tracemalloc.get_traced_memory()[1]
        for data in closing:
            translator.feed(data)
        translator.finish()
        finishing = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert translator.result is not None and translator.result.text == text
    assert feeding < 2 * size + 128 * 1024, (feeding, len(events))
    limit = translating + (decoding if closing else 0) + 2 * size + 256 * 1024
    assert finishing < limit, (finishing, translating, decoding, len(events))


def set_text(value: Any, old: str, new: str) -> None:
    """Replace the one string equal to `old` inside a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if item == old:
                value[key] = new
            else:
                set_text(item, old, new)
    elif isinstance(value, list):
        for item in value:
            set_text(item, old, new)


# ---------------------------------------------------------------- the demo replies stream too


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_demo_reply_streams_to_its_translation(served: Served, provider: str) -> None:
    for i, reply in enumerate(canned_replies(provider)):
        plain, chunks, streamed = run(both_ways(served, provider, canonical(provider, reply), random.Random(i)))
        same_result(plain, streamed)
        check_chunks(chunks, streamed)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_streaming_section_compiles_to_one_function_per_event_type_shown_by_explain(provider: str) -> None:
    """The generated source runs every event (`run`), has one function per event type, and is what
    `explain(code=True)` prints under the section's line."""
    compiled = RULES.get(provider)
    streaming = compiled.streaming
    assert streaming is not None and callable(streaming.run)
    assert "def run(s, e, n):" in streaming.code
    assert streaming.code.count("\ndef event") + streaming.code.startswith("def event") == len(streaming.events)
    shown = compiled.explain(code=True)
    assert "streaming: one function per event type" in shown and "def run(s, e, n):" in shown


def test_a_streaming_section_is_built_whole_with_its_code() -> None:
    """The section's tables (`Section`) are compiled first and its code written from them, so a `Streaming` gets
    its code and entry function when it is built: no placeholder a later step fills in."""
    required = {f.name for f in dataclasses.fields(Streaming) if f.default is dataclasses.MISSING}
    assert {"code", "run"} <= required
    assert not {"code", "run"} & {f.name for f in dataclasses.fields(Section)}
    assert Streaming.__dataclass_params__.frozen  # type: ignore[attr-defined]


ACME_STREAMING = """
streaming:
  body: {stream: true}
  type: kind
  events:
    begin: [{into: "@", from: message}]
    block: [{into: content, at: at, from: block}]
    pieces: [{into: content, each: pieces, at: i, field: text, from: "t || alt"}]
    stop: [{into: "@", from: "{stop_reason: why}"}, end]
  combine:
    append: ["content[].text"]
"""


def acme_rules(tmp_path: Path) -> Path:
    """A made-up provider: Anthropic's response section, a streaming section of its own that reads with
    paths that are not plain chains (`||`, a multiselect) and places list elements (`each`)."""
    text = (Path(__file__).resolve().parents[1] / "rules" / "anthropic.yaml").read_text()
    head, _, _ = text.partition("\n# How a streamed answer")
    (tmp_path / "acme.yaml").write_text(head.replace("provider: anthropic", "provider: acme") + ACME_STREAMING)
    return tmp_path


def acme_streaming(tmp_path: Path, streaming: str) -> Path:
    """The made-up provider with another streaming section in place of its own."""
    rules = acme_rules(tmp_path)
    path = rules / "acme.yaml"
    path.write_text(path.read_text().split("\nstreaming:")[0] + streaming)
    return rules


def acme_message() -> dict[str, Any]:
    """The made-up provider's opening message (a fresh one each time: the stream may keep it)."""
    return {"id": "m1", "type": "message", "role": "assistant", "model": "acme-1", "content": [],
            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip


def test_a_made_up_streaming_section_runs_its_generated_steps(tmp_path: Path) -> None:
    rules = acme_rules(tmp_path)
    message = {"id": "m1", "type": "message", "role": "assistant", "model": "acme-1", "content": [],
               "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip
    events = [
        {"kind": "begin", "message": message},
        {"kind": "block", "at": 0, "block": {"type": "text", "text": ""}},
        {"kind": "pieces", "pieces": [{"i": 0, "t": "Hel"}, {"i": 0, "alt": "lo"}]},
        {"kind": "pieces", "pieces": [{"i": 0, "t": ", you"}]},
        {"kind": "stop", "why": "end_turn"},
    ]
    translator = toolnexus.stream_translator("acme", rules=rules)
    chunks = [c for e in events for c in translator.feed(json.dumps(e))]
    chunks += translator.finish()
    assert [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]][1:4] == ["Hel", "lo", ", you"]
    assert translator.result is not None and translator.result.text == "Hello, you"
    assert translator.result.finish_reason == "stop"
    assert "def run(s, e, n):" in toolnexus.load_rules(rules).get("acme").explain(code=True)


GATHERED_STREAMING = """
streaming:
  type: kind
  events:
    begin: [{into: "@", from: message}]
    block: [{into: content, at: at, from: block}]
    piece: [{into: content, at: at, field: gathered, from: t}]
    whole: [{into: "@", from: message}, end]
  combine:
    append: ["content[].gathered"]
  text: {text: gathered}
"""


def test_streaming_text_names_the_field_a_kinds_text_pieces_gather_in(tmp_path: Path) -> None:
    """`streaming.text`: a kind's pieces gather in a field of their own (its parts arrive whole at the end), and
    that field, not the one its text template reads, streams as delta.content."""
    rules = acme_streaming(tmp_path, GATHERED_STREAMING)
    message = acme_message()
    events = [
        {"kind": "begin", "message": message},
        {"kind": "block", "at": 0, "block": {"type": "text"}},
        {"kind": "piece", "at": 0, "t": "Hel"},
        {"kind": "piece", "at": 0, "t": "lo"},
        {"kind": "whole", "message": {**message, "content": [{"type": "text", "text": "Hello"}]}},
    ]
    translator = toolnexus.stream_translator("acme", rules=rules)
    chunks = [c for e in events for c in translator.feed(json.dumps(e))] + translator.finish()
    assert [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]][1:3] == ["Hel", "lo"]
    assert translator.result is not None and translator.result.text == "Hello"
    path = rules / "acme.yaml"
    path.write_text(path.read_text().replace("text: {text: gathered}", "text: {txet: gathered}"))
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(rules, reload=True)
    assert info.value.rule == "streaming.text.txet" and info.value.line is not None


@pytest.mark.parametrize(
    ("event", "path"),
    [
        ({"kind": "pieces", "pieces": {"i": 0, "t": "x"}}, "events[2].pieces"),
        ({"kind": "pieces", "pieces": [{"i": 0, "t": "x"}, {"i": 3, "t": "y"}]}, "events[2].pieces[1].i"),
    ],
)
def test_a_made_up_streaming_section_names_the_event_it_cannot_place(tmp_path: Path, event: Any, path: str) -> None:
    translator = toolnexus.stream_translator("acme", rules=acme_rules(tmp_path))
    translator.feed(json.dumps({"kind": "begin", "message": {"id": "m1", "content": []}}))
    translator.feed(json.dumps({"kind": "block", "at": 0, "block": {"type": "text", "text": ""}}))
    with pytest.raises(ResponseError) as caught:
        translator.feed(json.dumps(event))
    assert caught.value.path == path


def gemini_whole_calls(count: int, seed: int) -> tuple[dict[str, Any], list[str]]:
    """A Gemini answer of `count` whole calls without ids (each synthesized from the whole answer), and its
    stream events, one call per event."""
    reply = copy.deepcopy(tool_call_reply("gemini"))
    reply["candidates"][0]["content"]["parts"] = [
        {"functionCall": {"name": "add", "args": {"a": i, "b": 21}}} for i in range(count)
    ]
    encoded = ENCODERS["gemini"](canonical("gemini", reply), random.Random(seed), cuts=1)
    return reply, [data_of("gemini", e) for e in encoded]


def test_a_whole_call_whose_id_is_synthesized_is_rendered_once_by_the_final_translation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gemini sends every call whole and without an id (it is synthesized from the whole answer): the stream
    holds the call's place and takes its deltas from the final translation, rather than rendering and
    encoding each call on arrival too; the chunks still carry each call, in order, with the answer's ids."""
    from toolnexus.translate.outbound import Outbound

    reply, events = gemini_whole_calls(5, seed=3)
    translator = toolnexus.stream_translator("gemini")
    rendered = counting(monkeypatch, Outbound, "tool_call")
    chunks = [chunk for data in events for chunk in translator.feed(data)]
    assert rendered == [0]
    chunks += translator.finish()
    want = toolnexus.translate_response("gemini", canonical("gemini", reply))
    deltas = [choice["delta"] for chunk in chunks for choice in chunk["choices"]]
    opened = [c for d in deltas for c in d.get("tool_calls", []) if "id" in c]
    assert [(c["index"], c["id"], c["function"]["name"]) for c in opened] == [
        (i, call.id, call.name) for i, call in enumerate(want.tool_calls)
    ]
    assert translator.result.tool_calls == want.tool_calls


def test_held_whole_calls_are_not_rendered_on_arrival_and_come_out_as_one_delta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream of many whole calls with synthesized ids (Gemini's): no element template is rendered while they
    arrive (the final translation renders each once), and at the end their deltas come out together, each call
    opening with empty arguments then its arguments, in one chunk rather than two per call."""
    from toolnexus.translate.outbound import ItemSource

    reply, events = gemini_whole_calls(6, seed=4)
    translator = toolnexus.stream_translator("gemini")
    rendered = 0
    original = ItemSource.pick

    def counted(self: ItemSource, element: Any) -> Any:
        kind, template = original(self, element)

        def render(*args: Any) -> Any:
            nonlocal rendered
            rendered += 1
            return template(*args)  # type: ignore[misc]

        return kind, (render if template is not None else None)

    monkeypatch.setattr(ItemSource, "pick", counted)
    chunks = [chunk for data in events for chunk in translator.feed(data)]
    assert rendered == 0, "a held whole call is rendered by the final translation only"
    closing = translator.finish()
    with_calls = [c for c in [*chunks, *closing] if c["choices"] and "tool_calls" in c["choices"][0]["delta"]]
    assert len(with_calls) == 1
    entries = with_calls[0]["choices"][0]["delta"]["tool_calls"]
    want = toolnexus.translate_response("gemini", canonical("gemini", reply))
    assert [(e["index"], e.get("id"), e["function"]["arguments"]) for e in entries] == [
        entry for i, call in enumerate(want.tool_calls) for entry in ((i, call.id, ""), (i, None, call.arguments))
    ]
    check_chunks([*chunks, *closing], translator.result)


def test_calls_released_together_keep_the_order_they_were_held_in() -> None:
    """The calls held to the end come out as one chunk's entries in the order they were held: a whole call (its
    index) from its translation, a held opening or arguments piece as it was held, each where it was."""
    from toolnexus.translate import stream
    from toolnexus.translate.result import new_tool_call

    header = ("chatcmpl-1", 1, "m")
    calls = [new_tool_call("c0", "add", '{"a": 1}', None), None, new_tool_call("c2", "add", "{}", {"k": 1})]
    held = [0, (stream._ARGUMENTS, {"index": 1, "piece": "xy"}), 2]
    out: list[Any] = []
    stream.CHUNKS.released(header, out, held, calls, functools.partial(stream._moment, stream._Entries(header)))
    assert out == [
        {"index": 0, "id": "c0", "type": "function", "function": {"name": "add", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"a": 1}'}},
        {"index": 1, "function": {"arguments": "xy"}},
        {"index": 2, "id": "c2", "type": "function", "function": {"name": "add", "arguments": ""},
         "extra_content": {"k": 1}},
        {"index": 2, "function": {"arguments": "{}"}},
    ]  # fmt: skip


def test_a_call_of_plain_reads_opens_without_rendering_its_template(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call whose template reads its id, name and arguments plainly (Mistral's, one whole call per event) opens
    from those reads: no element template is rendered while the stream runs, and the deltas are the same."""
    from toolnexus.translate.outbound import ItemSource

    reply = copy.deepcopy(tool_call_reply("mistral"))
    reply["choices"][0]["message"]["tool_calls"] = [
        {
            "id": f"c{i:08d}",
            "type": "function",
            "index": i,
            "function": {"name": "add", "arguments": json.dumps({"a": i})},
        }
        for i in range(4)
    ]
    events = [data_of("mistral", e) for e in ENCODERS["mistral"](reply, random.Random(2), cuts=1)]
    rendered = 0
    original = ItemSource.pick

    def counted(self: ItemSource, element: Any) -> Any:
        kind, template = original(self, element)
        if template is not None and "function" in element:

            def render(*args: Any) -> Any:
                nonlocal rendered
                rendered += 1
                return template(*args)  # type: ignore[misc]

            return kind, render
        return kind, template

    monkeypatch.setattr(ItemSource, "pick", counted)
    translator = toolnexus.stream_translator("mistral")
    chunks = [chunk for data in events for chunk in translator.feed(data)]
    assert rendered == 0
    chunks += translator.finish()
    assert translator.result.to_dict() == toolnexus.translate_response("mistral", reply).to_dict()
    check_chunks(chunks, translator.result)


def test_a_joined_text_finds_its_element_and_role_once_not_at_every_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pieces a part's text gathers (Gemini's thought summary, then its text) are said by the role their element
    gives them, looked up at the part's first emitted piece and kept on its text (`Text.said`): one look-up per
    part, however many pieces follow, and the same chunks."""
    from toolnexus.translate.stream import StreamTranslator

    def event(parts: list[dict[str, Any]], **more: Any) -> str:
        return json.dumps({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **more}],
                           "modelVersion": "gemini-demo-001", "responseId": "r1"})  # fmt: skip

    thoughts, texts = [f"think {i} " for i in range(6)], [f"say {i} " for i in range(6)]
    events = [event([{"text": piece, "thought": True}]) for piece in thoughts]
    events += [event([{"text": piece}]) for piece in texts] + [event([], finishReason="STOP")]
    looked = counting(monkeypatch, StreamTranslator, "_said")
    translator = toolnexus.stream_translator("gemini")
    chunks = [chunk for data in events for chunk in translator.feed(data)] + translator.finish()
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]
    assert [d["reasoning_content"] for d in deltas if "reasoning_content" in d] == thoughts
    assert [d["content"] for d in deltas if d.get("content")] == texts
    assert looked == [2]  # once per part (its first two pieces go the general way: the part, then its joined text)
    check_chunks(chunks, translator.result)


def test_a_whole_call_of_plain_reads_starts_by_a_generated_function_in_one_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mistral's whole calls (one kind, plain reads) start by the section's own generated function, not the
    translator's general `_start`, each in one chunk (its opening entry, then its arguments); a call without a
    name still goes the general way and is refused as the whole answer is."""
    from toolnexus.translate.stream import StreamTranslator

    streaming = RULES.get("mistral").streaming
    assert streaming is not None and "def start" in streaming.code
    general: list[Any] = []
    start = StreamTranslator._start
    monkeypatch.setattr(StreamTranslator, "_start", lambda s, *a: general.append(a) or start(s, *a))
    reply = copy.deepcopy(tool_call_reply("mistral"))
    calls = [{"id": f"c{i:08d}", "type": "function", "index": i, "function": {"name": "add", "arguments": "{}"}}
             for i in range(3)]  # fmt: skip
    reply["choices"][0]["message"]["tool_calls"] = calls
    events = [data_of("mistral", e) for e in ENCODERS["mistral"](reply, random.Random(2), cuts=1)]
    translator = toolnexus.stream_translator("mistral")
    chunks = [chunk for data in events for chunk in translator.feed(data)] + translator.finish()
    check_chunks(chunks, translator.result)
    assert [c.id for c in translator.result.tool_calls] == ["c00000000", "c00000001", "c00000002"]
    deltas = [c["choices"][0]["delta"]["tool_calls"] for c in chunks if c["choices"] and "tool_calls" in
              c["choices"][0]["delta"]]  # fmt: skip
    assert [[e["function"]["arguments"] for e in entries] for entries in deltas] == [["", "{}"]] * 3  # one chunk each
    # the first call arrives with the list that holds it, placed the general way; every later one by start0
    assert [a[1] for a in general if a[0] == 0] == [0]
    del calls[1]["function"]["name"]
    with pytest.raises(ResponseError) as whole:
        toolnexus.translate_response("mistral", reply)
    events = [data_of("mistral", e) for e in ENCODERS["mistral"](reply, random.Random(2), cuts=1)]
    translator = toolnexus.stream_translator("mistral")
    with pytest.raises(ResponseError) as streamed:
        for data in events:
            translator.feed(data)
        translator.finish()
    assert streamed.value.path == whole.value.path and [a[1] for a in general if a[0] == 0] == [0, 0, 1]


def _plain_calls_stream(n: int, id_map: dict[str, str] | None = None) -> tuple[Any, dict[str, Any]]:
    """A Mistral answer of `n` whole calls (one kind, plain reads) streamed to its end (not finished), and it."""
    reply = copy.deepcopy(tool_call_reply("mistral"))
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": f"c{i:08d}", "type": "function", "index": i, "function": {"name": "add", "arguments": f'{{"a": {i}}}'}}
        for i in range(n)
    ]  # fmt: skip
    translator = toolnexus.stream_translator("mistral", id_map=id_map)
    for event in ENCODERS["mistral"](reply, random.Random(3), cuts=1):
        translator.feed(data_of("mistral", event))
    return translator, reply


@pytest.mark.parametrize("provider", ["mistral", "openai"])
def test_a_stream_keeps_one_object_per_opened_call_which_is_also_its_element(provider: str) -> None:
    """A call the stream opens is its element too (`Call` extends `Element`): one kept object per call, not two, for
    the collector to walk in a stream of thousands; opened by the generated start (Mistral's later calls) and the
    general `_start` (Mistral's first call, OpenAI's calls, whose arguments then arrive in pieces)."""
    reply = copy.deepcopy(tool_call_reply(provider))
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": f"c{i:08d}", "type": "function", "index": i, "function": {"name": "add", "arguments": f'{{"a": {i}}}'}}
        for i in range(4)
    ]  # fmt: skip
    translator = toolnexus.stream_translator(provider)
    for event in ENCODERS[provider](reply, random.Random(3), cuts=3):
        translator.feed(data_of(provider, event))
    elements = [e for watched in translator._elements for e in watched.values() if e.call is not None]  # calls'
    assert len(translator._calls) == 4 and len({*map(id, elements), *map(id, translator._calls)}) == 4
    translator.finish()
    assert translator.result is not None
    assert translator.result.to_dict() == toolnexus.translate_response(provider, reply).to_dict()


def test_the_calls_a_stream_opened_by_plain_reads_are_the_results_without_a_second_translation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whole calls of plain reads, each opened as it arrived, are the result's calls as they were opened (the final
    translation takes them, `Outbound.translate`'s `given`), and the result is the whole answer's translation;
    a value the answer holds no longer as it was opened (an `after_llm` hook's edit, arguments that grew) is read
    again, as the whole translation reads it."""
    from toolnexus.translate.stream import StreamTranslator

    gave: list[Any] = []
    given_by = StreamTranslator._given
    monkeypatch.setattr(StreamTranslator, "_given", lambda s, answer: gave.append(given_by(s, answer)) or gave[-1])
    translator, reply = _plain_calls_stream(4)
    answer = translator.assemble()
    translator.finish()
    whole = toolnexus.translate_response("mistral", reply)
    assert translator.result is not None and translator.result.to_dict() == whole.to_dict()
    [given] = gave
    assert given is not None and given[1] is answer["choices"][0]["message"]["tool_calls"]
    assert all(taken is opened for taken, opened in zip(translator.result.tool_calls, given[2], strict=True))
    for edit in ("arguments", "name"):
        translator, reply = _plain_calls_stream(4)
        answer = translator.assemble()
        function = answer["choices"][0]["message"]["tool_calls"][2]["function"]
        function[edit] = '{"edited": true}' if edit == "arguments" else "subtract"
        assert translator._given(answer) is None
        if edit == "name":  # the streamed opening said another name: the stream and the answer disagree
            with pytest.raises(ResponseError, match="streamed deltas differ"):
                translator.finish()
            continue
        translator.finish()
        assert translator.result is not None
        assert translator.result.to_dict() == RULES.get("mistral").outbound.translate(answer).to_dict()
        assert translator.result.tool_calls[2].arguments == '{"edited": true}'


_CALLS_AT = ("choices", 0, "message", "tool_calls")
_NEW_CALLS = [{"id": f"c{i:08d}", "type": "function", "function": {"name": "add", "arguments": "{}"}} for i in range(3)]
_LATER_WRITES: dict[str, Callable[[Any], object]] = {  # after the calls opened, a write into one of them: an event
    # the generated merge writes (a name), one that goes the general way (arguments grown), the calls' list put whole
    # by an event (a choice's `message`); the general merge into an element, the general put of the list
    "renamed": lambda t: t.feed(json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 1, "function": {"name": "subtract"}}]}}]})),
    "grown": lambda t: t.feed(json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 1, "function": {"arguments": ', "b": 2}'}}]}}]})),
    "list": lambda t: t.feed(json.dumps({"choices": [{"index": 0, "message": {"tool_calls": _NEW_CALLS}}]})),
    "merged": lambda t: t._merge(t.response["choices"][0]["message"]["tool_calls"][1], "function",
                                 {"name": "subtract"}, None, (*_CALLS_AT, 1)),
    "put": lambda t: t._set(t.response["choices"][0]["message"], "tool_calls", copy.deepcopy(_NEW_CALLS),
                            _CALLS_AT[:-1]),
}  # fmt: skip


@pytest.mark.parametrize("write", [None, *_LATER_WRITES])
def test_opened_calls_are_taken_without_comparing_them_unless_a_later_write_reached_one(
    monkeypatch: pytest.MonkeyPatch, write: str | None
) -> None:
    """Calls opened by plain reads that no later write reached are taken as opened, their values not compared with
    the answer's (`_recheck`); a later write into an opened call, or of the calls' list whole, has them compared,
    so the result is the assembled answer's translation (a name the stream opened otherwise: the stream and the
    answer disagree, an error, never a silent difference)."""
    from toolnexus.translate.stream import StreamTranslator

    compared: list[int] = []
    compare = StreamTranslator._compared
    monkeypatch.setattr(StreamTranslator, "_compared", lambda s, *a: compared.append(1) or compare(s, *a))
    reply = copy.deepcopy(tool_call_reply("mistral"))
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": f"c{i:08d}", "type": "function", "index": i, "function": {"name": "add", "arguments": f'{{"a": {i}'}}
        for i in range(3)
    ]  # fmt: skip
    events = [data_of("mistral", event) for event in ENCODERS["mistral"](reply, random.Random(3), cuts=1)]
    translator = toolnexus.stream_translator("mistral")
    for data in events[:-2]:
        translator.feed(data)
    if write is not None:
        _LATER_WRITES[write](translator)
    for data in events[-2:]:
        translator.feed(data)
    if write in ("renamed", "merged"):
        with pytest.raises(ResponseError, match="streamed deltas differ"):
            translator.finish()
        return
    translator.finish()
    assert translator.result is not None and compared == ([] if write is None else [1])
    whole = RULES.get("mistral").outbound.translate(translator.response)
    assert translator.result.to_dict() == whole.to_dict()
    arguments = [call.arguments for call in translator.result.tool_calls]
    grown = ['{"a": 0', '{"a": 1, "b": 2}', '{"a": 2']
    assert arguments == {None: ['{"a": 0', '{"a": 1', '{"a": 2'], "grown": grown}.get(write, ["{}"] * 3)


def test_a_stream_s_rewritten_ids_come_back_with_their_notes_as_the_whole_answer_gives_them() -> None:
    """A call whose id the opening restored through the request's map is not taken as opened: the final translation
    gives every call, with the `rewritten` note of each restored id, in order, exactly as the whole answer's."""
    translator, _ = _plain_calls_stream(3, id_map={"c00000001": "call_one"})
    answer = translator.assemble()
    assert translator._given(answer) is None
    translator.finish()
    whole = RULES.get("mistral").outbound.translate(answer, id_map={"c00000001": "call_one"})
    assert translator.result is not None and translator.result.to_dict() == whole.to_dict()
    assert [c.id for c in translator.result.tool_calls] == ["c00000000", "call_one", "c00000002"]
    assert [(n.kind, n.path) for n in translator.result.notes] == [(n.kind, n.path) for n in whole.notes]
    assert [n.kind for n in whole.notes] == ["rewritten"]
    # an id the answer holds as the opening restored it, which the final translation restores again: read again
    id_map = {"c00000001": "call_one", "call_one": "call_two"}
    translator, _ = _plain_calls_stream(3, id_map=id_map)
    answer = translator.assemble()
    answer["choices"][0]["message"]["tool_calls"][1]["id"] = translator._calls[1].id  # as an after_llm hook may
    assert translator._given(answer) is None
    assert [c.id for c in RULES.get("mistral").outbound.translate(answer, id_map=id_map).tool_calls] == [
        "c00000000", "call_two", "c00000002"]  # fmt: skip
    with pytest.raises(ResponseError, match="streamed deltas differ"):  # the stream said call_one
        translator.finish()


def test_the_final_translation_takes_given_calls_only_for_the_very_list_they_were_read_from() -> None:
    """`given` names a source and its list: the calls are taken only when that list is the one the answer holds
    there; any other list (an equal copy too) is read as always."""
    outbound = RULES.get("mistral").outbound
    translator, _ = _plain_calls_stream(2)
    answer = translator.assemble()
    given = translator._given(answer)
    assert given is not None
    marked = [dataclasses.replace(call, arguments="{}") for call in given[2]]  # unlike the answer: seen if taken
    assert outbound.translate(answer, given=(given[0], given[1], marked)).tool_calls == marked
    copied = copy.deepcopy(answer)
    read = outbound.translate(copied, given=(given[0], given[1], marked)).tool_calls
    assert [c.arguments for c in read] == ['{"a": 0}', '{"a": 1}']


def test_the_error_path_is_asked_only_of_events_that_hold_its_first_key() -> None:
    """An event without the key the endpoint's error message path starts with cannot be an error: the path is not
    asked of it (one read less per event); an event with it is still an error with its message."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    streaming = RULES.get("openai").streaming
    assert streaming is not None and streaming.error_key == "error"
    asked: list[Any] = []
    message = streaming.endpoint.error_message
    assert message is not None
    endpoint = replace(streaming.endpoint, error_message=lambda e: asked.append(e) or message(e))
    translator = StreamTranslator(replace(streaming, endpoint=endpoint))
    events = [data_of("openai", e) for e in ENCODERS["openai"](text_reply("openai"), random.Random(1), cuts=3)]
    for data in events[:3]:
        translator.feed(data)
    assert asked == []
    with pytest.raises(ProviderError) as caught:
        translator.feed(json.dumps({"error": {"message": "Overloaded", "type": "overloaded_error"}}))
    assert asked and all("error" in e for e in asked)  # the error event only (read again to describe it)
    assert (caught.value.message, caught.value.kind) == ("Overloaded", "http")


def test_a_new_element_at_the_end_of_a_list_is_added_by_the_generated_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`at` the list's length: the element is appended and started by the event's own function (a stream of
    whole tool calls, one per event, adds one each time), never the general merge; a gap still goes there."""
    from toolnexus.translate.stream import StreamTranslator

    rules = acme_rules(tmp_path)
    general: list[Any] = []
    place = StreamTranslator._place
    monkeypatch.setattr(StreamTranslator, "_place", lambda s, *a: general.append(a) or place(s, *a))
    translator = toolnexus.stream_translator("acme", rules=rules)
    chunks = translator.feed(json.dumps({"kind": "begin", "message": {"id": "m1", "content": []}}))
    blocks = [{"type": "text", "text": f"t{i} "} for i in range(5)]
    blocks += [{"type": "tool_use", "id": f"toolu_{i}", "name": "add", "input": {"a": i}} for i in range(3)]
    chunks += [c for i, block in enumerate(blocks) for c in translator.feed(json.dumps({"kind": "block", "at": i,
               "block": block}))]  # fmt: skip
    assert general == []
    chunks += translator.feed(json.dumps({"kind": "stop", "why": "tool_use"})) + translator.finish()
    check_chunks(chunks, translator.result)
    assert translator.result.text == "t0 t1 t2 t3 t4 " and [c.id for c in translator.result.tool_calls] == [
        "toolu_0", "toolu_1", "toolu_2"]  # fmt: skip
    with pytest.raises(ResponseError) as caught:
        translator = toolnexus.stream_translator("acme", rules=rules)
        translator.feed(json.dumps({"kind": "begin", "message": {"id": "m1", "content": []}}))
        translator.feed(json.dumps({"kind": "block", "at": 1, "block": blocks[0]}))
    assert caught.value.path == "events[1].at" and len(general) == 1


# A made-up provider whose reasoning block has notes, each told by pieces naming the note (`note`): each piece
# goes into the note its event names (`field: "notes[note]"`), and every note streams, joined by " | ".
NOTED_STREAMING = """
streaming:
  type: kind
  events:
    begin: [{into: "@", from: message}]
    block: [{into: content, at: at, from: block}]
    piece: [{into: content, at: at, field: "notes[note]", from: "{kind: 'note', text: t}"}]
    whole: [{into: "@", from: message}, end]
  combine:
    append: ["content[].notes[].text"]
  reasoning: {thinking: {path: "notes[].text", join: " | "}}
"""


def test_a_step_field_index_read_from_the_event_writes_each_piece_into_the_element_it_names(tmp_path: Path) -> None:
    rules = acme_streaming(tmp_path, NOTED_STREAMING)
    message = acme_message()
    events = [
        {"kind": "begin", "message": message},
        {"kind": "block", "at": 0, "block": {"type": "thinking", "notes": []}},
        {"kind": "piece", "at": 0, "note": 0, "t": "Lo"},
        {"kind": "piece", "at": 0, "note": 1, "t": "ok"},  # the next note: started
        {"kind": "piece", "at": 0, "note": 0, "t": "ng"},
        {"kind": "whole", "message": {**message, "content": [{"type": "thinking", "thinking": "Long | ok"}]}},
    ]
    translator = toolnexus.stream_translator("acme", rules=rules)
    chunks = [c for e in events[:5] for c in translator.feed(json.dumps(e))]
    notes = [{"kind": "note", "text": "Long"}, {"kind": "note", "text": "ok"}]
    told = translator.response["content"][0]["notes"]  # texts still arriving are text builders: their value so far
    assert [{k: v if isinstance(v, str) else v.value() for k, v in note.items()} for note in told] == notes
    pieces = [c["choices"][0]["delta"].get("reasoning_content") for c in chunks if c["choices"]]
    assert [p for p in pieces if p] == ["Lo", " | ", "ok", " | ", "ng"]  # each piece as it arrives, joined
    for bad, where in (({"note": "1"}, "events[2].note"), ({"note": 3}, "content[0].notes")):
        translator = toolnexus.stream_translator("acme", rules=rules)
        with pytest.raises(ResponseError) as info:
            for event in [*events[:2], events[2] | bad]:
                translator.feed(json.dumps(event))
        assert info.value.path == where
    path = rules / "acme.yaml"
    path.write_text(path.read_text().replace('at: at, field: "notes[note]"', 'at: at, field: "notes[no te]"'))
    with pytest.raises(RuleError) as refused:
        toolnexus.load_rules(rules, reload=True)
    assert refused.value.rule == "streaming.events.piece[0].field" and refused.value.line is not None


def run_generally(s: Any, steps: Any, e: dict[str, Any], n: int) -> bool:
    """An event's steps the general way (each by `_move`): what its generated function must match."""
    for step in steps:
        if step == END:
            s.ended = True
        else:
            s._move(step, e, n)
    return bool(steps)


def test_a_step_field_index_read_from_the_event_is_run_by_the_generated_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piece for a note that is there (`notes[note]`, the index an int in range) is merged by the event's own
    function, never the general `_place`; the next note (created) and a bad index go the general way. Either
    way the chunks, the response and the errors are those of the general path (every step by `_move`)."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    rules = acme_streaming(tmp_path, NOTED_STREAMING)
    streaming = toolnexus.load_rules(rules, reload=True).get("acme").streaming
    assert streaming is not None and streaming.type is not None
    assert "s._fragment(" not in streaming.code  # a piece of a note at any index is emitted inline too

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:  # every step the general way
        return run_generally(s, streaming.events[streaming.type(e)], e, n)

    general: list[Any] = []
    place = StreamTranslator._place
    monkeypatch.setattr(StreamTranslator, "_place", lambda s, *a: general.append(a[2]) or place(s, *a))
    message = acme_message()
    events = [
        {"kind": "begin", "message": message},
        {"kind": "block", "at": 0, "block": {"type": "thinking", "notes": [{"kind": "note", "text": "A"}]}},
        {"kind": "piece", "at": 0, "note": 0, "t": "Lo"},  # 2
        {"kind": "piece", "at": 0, "note": 1, "t": "ok"},  # 3: the next note, created the general way
        {"kind": "piece", "at": 0, "note": 0, "t": "ng", "extra": 1},  # 4
        {"kind": "piece", "at": 0, "note": 1, "t": "!"},  # 5
        {"kind": "whole", "message": {**message, "content": [{"type": "thinking", "thinking": "ALong | ok!"}]}},
    ]
    runs = []
    for translator in (StreamTranslator(streaming), StreamTranslator(replace(streaming, run=general_run))):
        general.clear()
        chunks = [c for e in events[:6] for c in translator.feed(json.dumps(e))]
        notes = [{k: v if isinstance(v, str) else v.value() for k, v in note.items()}
                 for note in translator.response["content"][0]["notes"]]  # fmt: skip
        chunks += translator.feed(json.dumps(events[6])) + translator.finish()
        runs.append((chunks, notes, translator.result, list(general)))
    (chunks, notes, result, placed), (general_chunks, general_notes, general_result, _) = runs
    assert placed == [3]  # the generated code placed every piece but the one creating a note
    assert notes == general_notes == [{"kind": "note", "text": "ALong"}, {"kind": "note", "text": "ok!"}]
    assert [c["choices"] for c in chunks] == [c["choices"] for c in general_chunks]  # (chunk ids are fresh)
    assert result == general_result
    pieces = [c["choices"][0]["delta"].get("reasoning_content") for c in chunks if c["choices"]]
    assert [p for p in pieces if p] == ["A", "Lo", " | ", "ok", " | ", "ng", " | ", "!"]
    bads = ({"note": "0"}, {"note": True}, {"note": -1}, {"note": 2}, {"at": 1}, {"t": 5})
    same_errors(streaming, general_run, events[:3], [events[2] | bad for bad in bads])


def same_errors(streaming: Any, general_run: Any, lead: list[Any], bad_events: list[Any]) -> None:
    """Each of `bad_events`, fed after `lead`, raises the same error by the generated code as by `general_run`."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    for bad in bad_events:
        caught = []
        for translator in (StreamTranslator(streaming), StreamTranslator(replace(streaming, run=general_run))):
            with pytest.raises(ResponseError) as info:
                for event in [*lead, bad]:
                    translator.feed(json.dumps(event))
            caught.append((info.value.path, info.value.message))
        assert caught[0] == caught[1], bad


UNION_STREAMING = """
streaming:
  type: keys(@)[0]
  events:
    begin: [{into: "@", from: begin}]
    block: [{into: content, at: block.at, from: block.block}]
    piece:
      by: keys(piece.delta)[0]
      cases:
        text:
          - into: content
            at: piece.at
            from: "{type: 'text', text: piece.delta.text, seen: piece.seen, gone: `null`}"
    stop: [{into: "@", from: stop}, end]
  combine:
    append: ["content[].text"]
"""


def test_union_events_and_a_value_of_named_event_reads_are_merged_by_the_generated_code(tmp_path: Path) -> None:
    """An event type or case named by an object's first key (`keys(@)[0]`) is read inline, and a step's value
    that is an object of the event's values under names the rules give (`{type: 'text', text: piece.delta.text}`)
    is merged key by key as written, with no object of it built for the merge: the chunks, the response, the
    notes and the errors are those of the general path (every step by `_move`, every read by its getter)."""

    rules = acme_streaming(tmp_path, UNION_STREAMING)
    streaming = toolnexus.load_rules(rules, reload=True).get("acme").streaming
    assert streaming is not None and streaming.type is not None
    assert "next(iter(" in streaming.code and "= {'type': hv0, 'text': hv1, 'seen': hv2, 'gone': hv3}" in streaming.code
    assert "t = next(iter(e)) if e else" in streaming.code  # the event is an object: only its emptiness tested
    assert "cur0['type'] = hv0" in streaming.code  # the literal merged as written, no loop over the object's keys

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:  # every read by its getter, every step by _move
        assert streaming is not None and streaming.type is not None
        kind = streaming.type(e)
        handler = streaming.events.get(kind) if type(kind) is str else None
        if handler is None:
            s._note_unknown(repr(kind), n)
            return False
        if isinstance(handler, Dispatch):
            case = handler.by(e)
            if case not in handler.cases:
                s._note_unknown(f"{kind!r} with {handler.by_path} " + repr(case), n)
                return False
            handler = handler.cases[case]
        return run_generally(s, handler, e, n)

    events: list[Any] = [
        {"begin": acme_message()},
        {},  # no type: noted
        {"block": {"at": 0, "block": {"type": "text", "text": ""}}},
        {"piece": {"at": 0, "delta": {"text": "Hel"}, "seen": 1}},
        {"piece": {"at": 0, "delta": {"text": "lo"}}},  # seen not there: a null, which never replaces the 1
        {"piece": {"at": 0, "delta": {"text": "!"}, "seen": {"n": 2}}},
        {"piece": {"at": 0, "delta": "x"}},  # a case read from what is not an object: noted
        {"piece": {"at": 0, "delta": {"other": "x"}}},
        {"stop": {"stop_reason": "end_turn"}},
    ]
    choices, response, result = generated_as_general(streaming, general_run, events, 3)
    assert [c[0]["delta"].get("content") for c in choices if c][1:4] == ["Hel", "lo", "!"]
    assert response["content"] == [{"type": "text", "text": "Hello!", "seen": {"n": 2}, "gone": None}]
    assert result is not None and result.text == "Hello!"
    assert [note.path for note in result.notes if note.kind == "unknown"] == ["events[1]", "events[6]", "events[7]"]


def generated_as_general(streaming: Any, general_run: Any, events: list[Any], piece: int) -> Any:
    """The chunks' choices, the response and the result of `events` by the generated code, which must be those
    of `general_run`; a bad index or text put in the piece event events[piece] (after the ones before it) must
    raise the same error both ways."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    runs = []
    for translator in (StreamTranslator(streaming), StreamTranslator(replace(streaming, run=general_run))):
        chunks = [c for e in events for c in translator.feed(json.dumps(e))] + translator.finish()
        runs.append(([c["choices"] for c in chunks], translator.response, translator.result))
    assert runs[0] == runs[1]
    bads = ({"at": "0"}, {"at": 3}, {"delta": {"text": 5}})
    same_errors(streaming, general_run, events[:piece], [{"piece": events[piece]["piece"] | bad} for bad in bads])
    return runs[0]


PIPED_PIECE = """    piece:
      - into: content
        at: piece.at
        from: "piece.delta | {text: (hidden && `\\"[hidden]\\"`) || text, seen: seen || `0`, said: {note: note}}"
"""
# the union stream with its piece event's value piped from a chain
PIPED_STREAMING = (
    UNION_STREAMING.split("    piece:\n")[0] + PIPED_PIECE + "    stop:" + UNION_STREAMING.split("    stop:")[1]
)


def test_a_value_piped_from_a_chain_into_an_object_reads_the_chain_once_and_merges_key_by_key(tmp_path: Path) -> None:
    """A step's value that pipes a plain chain into an object (`piece.delta | {text: ..., seen: ...}`) reads the
    chain as the event's other reads do (not the event again) and each value from it, and is merged key by key
    as written: the chunks, the response, the notes and the errors are those of the general path."""

    rules = acme_streaming(tmp_path, PIPED_STREAMING)
    streaming = toolnexus.load_rules(rules, reload=True).get("acme").streaming
    assert streaming is not None
    piece = streaming.code.split("# streaming.events.piece[0]")[1].split("\ndef ")[0]
    assert "v = {'text': hv0, 'seen': hv1, 'said': hv2}" in piece
    assert "(e)" not in piece and "v.items()" not in piece  # no getter of the event, no loop over the keys written

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:  # every read by its getter, every step by _move
        assert streaming is not None and streaming.type is not None
        return run_generally(s, streaming.events[streaming.type(e)], e, n)

    events: list[Any] = [
        {"begin": acme_message()},
        {"block": {"at": 0, "block": {"type": "text", "text": ""}}},
        {"piece": {"at": 0, "delta": {"text": "Hel", "seen": 1}}},
        {"piece": {"at": 0, "delta": "x"}},  # not an object: every field a null, seen 0
        {"piece": {"at": 0, "delta": {"text": "lo", "note": "n", "seen": 2}}},
        {"piece": {"at": 0, "delta": {"text": "?", "hidden": True, "seen": 2}}},
        {"piece": {"at": 0, "delta": None}},  # nothing there: nothing merged (not a seen of 0)
        {"piece": {"at": 0}},
        {"stop": {"stop_reason": "end_turn"}},
    ]
    choices, response, _ = generated_as_general(streaming, general_run, events, 2)
    assert [c[0]["delta"].get("content") for c in choices if c][1:4] == ["Hel", "lo", "[hidden]"]
    assert response["content"] == [{"type": "text", "text": "Hello[hidden]", "seen": 2, "said": {"note": "n"}}]


# the piped stream with an event whose value, merged at the root, puts a new list where the blocks were
REDO_STREAMING = PIPED_STREAMING.replace("    stop:", '    redo: [{into: "@", from: redo}]\n    stop:')


def test_a_cached_walk_is_forgotten_when_the_general_merge_puts_a_new_container_on_it(tmp_path: Path) -> None:
    """The walk from the root to the list a step writes in is cached per stream (`s._walks`); an event that puts a
    new list there (the general merge's `_set`) makes the next piece walk again and land in the new list, as the
    general path does: the chunks, the response and the result are those of every step by `_move`."""
    rules = acme_streaming(tmp_path, REDO_STREAMING)
    streaming = toolnexus.load_rules(rules, reload=True).get("acme").streaming
    assert streaming is not None and streaming.type is not None
    assert streaming.walks and "s._walks[0]" in streaming.code

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:  # every step by _move
        assert streaming is not None and streaming.type is not None
        return run_generally(s, streaming.events[streaming.type(e)], e, n)

    events: list[Any] = [
        {"begin": acme_message()},
        {"block": {"at": 0, "block": {"type": "text", "text": ""}}},
        {"piece": {"at": 0, "delta": {"text": "Hel"}}},  # the walk to `content` cached here
        {"redo": {"content": [{"type": "text", "text": "Hel", "seen": 9}]}},  # a new list in its place
        {"piece": {"at": 0, "delta": {"text": "lo"}}},
        {"stop": {"stop_reason": "end_turn"}},
    ]
    choices, response, result = generated_as_general(streaming, general_run, events, 2)
    assert [c[0]["delta"].get("content") for c in choices if c][1:3] == ["Hel", "lo"]
    assert response["content"] == [{"type": "text", "text": "Hello", "seen": 0, "said": {"note": None}}]
    assert result is not None and result.text == "Hello"


def _gemini_event(parts: list[Any], **changed: Any) -> dict[str, Any]:
    """A Gemini event: its pieces in the frame every event of a stream repeats; `changed` top-level keys replaced."""
    frame = {"usageMetadata": {"promptTokenCount": 7}, "modelVersion": "gemini-demo", "responseId": "resp-1"}
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], **frame, **changed}


def test_an_event_whose_frame_repeats_the_last_one_merges_only_its_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini's events repeat their frame (`candidates[0]` with its role and index, usage, model, id) around their
    parts: an event whose frame is, as orjson writes it, the last one's merges only its parts (the frame's values
    stay the objects the last walk put there). A frame that differs, even by values Python finds equal (1 and 1.0,
    0 and -0.0, an object's key order), a null, a key more, a second candidate or a key the rules name, is walked:
    the chunks, the response and the result are those of the section compiled without the repeat, every time."""
    from dataclasses import fields

    from toolnexus.translate import stream_code
    from toolnexus.translate.stream import StreamTranslator
    from toolnexus.translate.stream_rules import Section

    streaming = RULES.get("gemini").streaming
    assert streaming is not None and "fr = DUMPS(e)" in streaming.code
    monkeypatch.setattr(stream_code, "orjson", None)  # no frame's bytes: every event walked
    walked = stream_code.compiled(Section(**{f.name: getattr(streaming, f.name) for f in fields(Section)}))
    assert walked is not None and "DUMPS" not in walked.code
    usage, text = {"promptTokenCount": 7}, lambda piece: [{"text": piece}]
    first = {"content": {"role": "model", "parts": text("D")}, "index": 0}
    second = [first, {"content": {"parts": text("E")}, "index": 1}]
    grounded = [first | {"groundingMetadata": {"webSearchQueries": []}}]
    events: list[tuple[dict[str, Any], bool]] = [  # (event, whether its frame is the last one's)
        (_gemini_event(text("Hel")), False),
        (_gemini_event(text("lo"), modelVersion="gemini-demo"), True),  # equal values, new objects
        (_gemini_event(text(","), usageMetadata={"promptTokenCount": 7.0}), False),
        (_gemini_event(text(" w"), usageMetadata={"promptTokenCount": 7.0}), True),
        (_gemini_event([{"text": "o"}, {"text": "r"}], usageMetadata=usage | {"thoughtsTokenCount": -0.0}), False),
        (_gemini_event(text("l"), usageMetadata=usage | {"thoughtsTokenCount": 0.0}), False),
        (_gemini_event(text("d"), usageMetadata={"thoughtsTokenCount": 0.0} | usage), False),  # another key order
        (_gemini_event(text("!"), modelVersion=None), False),  # a null never replaces
        (_gemini_event(text(" "), modelVersion=None), True),
        (_gemini_event(text("A"), extra=[1]), False),
        (_gemini_event(text("B"), extra=[1.0]), False),
        (_gemini_event(text("C"), candidates=second), False),  # a second candidate: its parts are pieces too
        (_gemini_event(text("F"), candidates=grounded), False),  # a key the rules name (its own merge)
        (_gemini_event([{"thought": True, "text": "H"}, {"functionCall": {"name": "add", "args": {"a": 1}}}]), False),
        (_gemini_event([{"text": "I"}, {"functionCall": {"name": "add", "args": {"a": 2}}}]), True),
        (_gemini_event(text("."), candidates=[{"finishReason": "STOP", "index": 0}]), False),
    ]
    runs = []
    for section in (streaming, walked):
        translator, chunks, kept = StreamTranslator(section), [], []
        for event, _ in events:
            before = translator.response.get("responseId")
            chunks += translator.feed(json.dumps(event))
            kept.append(translator.response["responseId"] is before)
        chunks += translator.finish()
        assert translator.result is not None
        runs.append((json.dumps([c["choices"] for c in chunks]), json.dumps(translator.response), kept))
        runs[-1] += (repr(translator.result), json.dumps(translator.result.usage))  # its values' types shown
    assert runs[0][:2] == runs[1][:2] and runs[0][3:] == runs[1][3:]
    assert runs[0][2] == [repeated for _, repeated in events]  # the repeated frames: not merged again
    assert not any(runs[1][2])  # the walk puts each event's own values


def test_held_whole_calls_start_by_a_generated_function_that_reads_their_kind_and_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A source whose calls are held whole while they have no id (Gemini's) starts them by the section's own
    generated function: the element's kind decided by its first key, as `kind_by_key` decides, and its id read
    inline. A call with its own id, arriving before any is held, takes the general way and streams at once;
    every call after a held one is held (the indexes stay in order); the chunks add up to the whole answer."""
    from toolnexus.translate.stream import StreamTranslator

    streaming = RULES.get("gemini").streaming
    assert streaming is not None and "def start0" in streaming.code
    general: list[int] = []
    start = StreamTranslator._start
    monkeypatch.setattr(StreamTranslator, "_start", lambda s, w, i, x: general.append(i) or start(s, w, i, x))
    reply = copy.deepcopy(tool_call_reply("gemini"))
    reply["candidates"][0]["content"]["parts"] = [
        {"text": "On it."},
        {"functionCall": {"id": "given_1", "name": "add", "args": {"a": 1}}},
        {"thought": True, "text": "Now the rest."},
        {"functionCall": {"name": "add", "args": {"a": 2}}},
        {"functionCall": {"id": "given_2", "name": "add", "args": {"a": 3}}},
        {"thought": True, "text": "And this."},
    ]
    events = [data_of("gemini", e) for e in ENCODERS["gemini"](canonical("gemini", reply), random.Random(5), cuts=1)]
    translator = toolnexus.stream_translator("gemini")
    streamed = [chunk for data in events for chunk in translator.feed(data)]
    chunks = streamed + translator.finish()
    want = toolnexus.translate_response("gemini", canonical("gemini", reply))
    assert translator.result.to_dict() == want.to_dict()
    check_chunks(chunks, translator.result)
    # the first part arrives with the list that holds it (the general way); the call with its own id and the
    # thoughts (another kind) start generally; the call without an id and the call after it are held by start0
    assert general[0] == 0 and general[1:] == [1, 2, 5]
    ids = [e.get("id") for c in streamed for e in c["choices"][0]["delta"].get("tool_calls", []) if c["choices"]]
    assert ids == ["given_1", None], "the call with its own id streams before the end, the held ones do not"


def test_a_piece_is_tested_only_against_the_roles_the_sources_kinds_give_its_field() -> None:
    """Bedrock's content blocks are of several kinds; `toolUse.input` is a tool call's arguments in every kind
    that has it, so its piece is not compared with text or reasoning first (decided when the code is written),
    and `text` only with text. A delta's case (`by: keys(contentBlockDelta.delta)[0]`) is its first key: in the
    case's branch, the delta's keys are tested for it first. The text, the reasoning and the calls still stream
    as the general path says."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    streaming = RULES.get("bedrock").streaming
    assert streaming is not None and streaming.type is not None
    code = streaming.code
    for field, role in ((("toolUse", "input"), "arguments"), (("text",), "text")):
        read = f"{field!r})\n"  # the role read: `s._said(text, w, i, field)` (`Text.said`), or `.roles.get(field)`
        assert read in code
        for after in code.split(read)[1:]:
            tests = [line for line in after.splitlines()[:4] if " == '" in line]
            assert tests and all(f"== {role!r}" in line for line in tests), tests
    for case in ("toolUse", "text"):
        branch = code.split(f"c == {case!r}:\n")[1]
        assert branch.split("kk0 == ")[1].startswith(f"{case!r}:"), f"the {case} key is not tested first"

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:  # every step the general way (each case known)
        assert streaming is not None and streaming.type is not None and not streaming.every
        handler = streaming.events[streaming.type(e)]
        return run_generally(s, handler.cases[handler.by(e)] if isinstance(handler, Dispatch) else handler, e, n)

    reply = copy.deepcopy(tool_call_reply("bedrock"))
    said = {"reasoningText": {"text": "First, add.", "signature": "c2ln"}}
    reply["output"]["message"]["content"] = [{"reasoningContent": said}, *reply["output"]["message"]["content"]]
    events = [data_of("bedrock", e) for e in ENCODERS["bedrock"](canonical("bedrock", reply), random.Random(3), cuts=3)]
    runs = []
    for translator in (StreamTranslator(streaming), StreamTranslator(replace(streaming, run=general_run))):
        chunks = [c for data in events for c in translator.feed(data)] + translator.finish()
        runs.append(([c["choices"] for c in chunks], translator.response, translator.result))  # the answer id: made up
    assert runs[0] == runs[1]
    deltas = [c[0]["delta"] for c in runs[0][0] if c]
    assert any(d.get("tool_calls") for d in deltas) and any(d.get("content") for d in deltas)
    assert any(d.get("reasoning_content") for d in deltas)


def test_a_joined_part_of_the_field_and_its_same_keys_adds_only_its_text_as_the_general_merge_does() -> None:
    """Gemini joins a part to the last one of the same `thought` (`join.same`). A part of the text and that key
    alone adds its text in place; one whose `thought` the last part lacks (null here, absent there) adds the key
    too. The generated code gives the response and the chunks the general merge gives."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    streaming = toolnexus.load_rules().get("gemini").streaming
    assert streaming is not None

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:
        assert streaming is not None
        return run_generally(s, streaming.every, e, n)

    def event(*parts: dict[str, Any], **more: Any) -> str:
        return json.dumps({"candidates": [{"content": {"role": "model", "parts": list(parts)}, **more}],
                           "responseId": "r1", "modelVersion": "gemini-x"})  # fmt: skip

    events = [event({"text": "a"}), event({"text": "b"}), event({"text": "c", "thought": None}),
              event({"text": "d", "thought": None}), event({"text": "e", "thought": True}),
              event({"thought": True, "text": "f"}), event({"text": "g", "thought": True, "thoughtSignature": "c2ln"}),
              event(finishReason="STOP")]  # fmt: skip
    runs = []
    for translator in (StreamTranslator(streaming), StreamTranslator(replace(streaming, run=general_run))):
        chunks = [c for data in events for c in translator.feed(data)] + translator.finish()
        runs.append(([c["choices"] for c in chunks], translator.response["candidates"][0]["content"]["parts"]))
    assert runs[0] == runs[1]
    signed = {"text": "efg", "thought": True, "thoughtSignature": "c2ln"}
    assert runs[0][1] == [{"text": "abcd", "thought": None}, signed]


def test_a_negative_zero_said_after_a_zero_replaces_it_both_ways() -> None:
    """A value said again replaces the one held: `-0.0` after `0.0` (equal, but JSON writes them apart) is kept as
    the last event says it, as the whole answer holds it, by the generated key loop and by the general merge alike
    (a plain key of the chunk, one of its choice, one of a nested object)."""
    from dataclasses import replace

    from toolnexus.translate.stream import StreamTranslator

    streaming = RULES.get("openai").streaming
    assert streaming is not None

    def general_run(s: Any, e: dict[str, Any], n: int) -> bool:
        assert streaming is not None
        return run_generally(s, streaming.every, e, n)

    def chunk(score: float, **delta: Any) -> str:
        return json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "score": score,
                           "extra": {"score": score}, "choices": [{"index": 0, "delta": delta, "score": score,
                                                                   "finish_reason": None}]})  # fmt: skip

    events = [chunk(0.0, role="assistant", content="a"), chunk(-0.0, content="b"), "[DONE]"]
    said = []
    for translator in (StreamTranslator(streaming), StreamTranslator(replace(streaming, run=general_run))):
        for data in events:
            translator.feed(data)
        translator.finish()
        response = translator.response
        said.append(json.dumps([response["score"], response["extra"], response["choices"][0]["score"]]))
    assert said == ['[-0.0, {"score": -0.0}, -0.0]'] * 2
