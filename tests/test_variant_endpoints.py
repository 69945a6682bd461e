"""Each shipped variant's endpoint, as the client builds it from the rule file alone: the URL with its
placeholders and query, the auth and attribution headers, and the body (Vertex's Claude body has no
model key and carries anthropic_version); no network, an httpx MockTransport records the request. Then
the reasoning the OpenAI-compatible variants hand back: read, streamed in pieces, and sent back."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from toolnexus import (
    ConfigError,
    ProviderError,
    create_client,
    load_rules,
    stream_translator,
    translate_request,
    translate_response,
)

USER = [{"role": "user", "content": "hi"}]

# provider -> (model, endpoint_options, the URL called, {header: value}, body keys present, body keys absent)
VARIANTS: dict[str, tuple[str, dict[str, str], str, dict[str, str], set[str], set[str]]] = {
    "azure-openai": (
        "my-gpt-4o",
        {"resource": "acme"},
        "https://acme.openai.azure.com/openai/deployments/my-gpt-4o/chat/completions?api-version=2024-10-21",
        {"api-key": "k-1"},
        {"model", "messages"},
        set(),
    ),
    "openrouter": (
        "anthropic/claude-sonnet-4.5",
        {"http_referer": "https://app.example", "x_title": "My App"},
        "https://openrouter.ai/api/v1/chat/completions",
        {"authorization": "Bearer k-1", "http-referer": "https://app.example", "x-title": "My App"},
        {"model", "messages"},
        set(),
    ),
    "deepseek": ("deepseek-chat", {}, "https://api.deepseek.com/chat/completions", {"authorization": "Bearer k-1"},
                 {"model"}, set()),
    "groq": ("llama-3.3-70b-versatile", {}, "https://api.groq.com/openai/v1/chat/completions",
             {"authorization": "Bearer k-1"}, {"model"}, set()),
    "xai": ("grok-4", {}, "https://api.x.ai/v1/chat/completions", {"authorization": "Bearer k-1"}, {"model"}, set()),
    "vertex-gemini": (
        "gemini-2.5-flash",
        {"project": "proj-1", "location": "europe-west4"},
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-1/locations/europe-west4"
        "/publishers/google/models/gemini-2.5-flash:generateContent",
        {"authorization": "Bearer k-1"},
        {"contents"},
        {"model"},
    ),
    "vertex-anthropic": (
        "claude-sonnet-4-5@20250929",
        {"project": "proj-1"},
        "https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-east5"
        "/publishers/anthropic/models/claude-sonnet-4-5%4020250929:rawPredict",
        {"authorization": "Bearer k-1"},
        {"anthropic_version", "messages", "max_tokens"},
        {"model"},
    ),
}  # fmt: skip


def _call(provider: str, model: str, options: dict[str, str], **extra: Any) -> httpx.Request:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(400, json={"error": {"message": "offline", "type": "x", "status": "x"}})

    async def main() -> None:
        async with create_client(style=provider, model=model, api_key="k-1", max_retries=0, endpoint_options=options,
                                 transport=httpx.MockTransport(handler), **extra) as client:  # fmt: skip
            with pytest.raises(ProviderError):
                await client.translate(USER, max_tokens=64)

    asyncio.run(main())
    [request] = seen
    return request


def test_every_shipped_variant_is_tested_here() -> None:
    book = load_rules()
    assert set(VARIANTS) == {n for n in book.names() if "extends" in book.get(n).source.data}


@pytest.mark.parametrize("provider", sorted(VARIANTS))
def test_the_variant_calls_its_documented_url_with_its_headers_and_body(provider: str) -> None:
    model, options, url, headers, present, absent = VARIANTS[provider]
    request = _call(provider, model, options)
    assert str(request.url) == url
    for name, value in headers.items():
        assert request.headers.get(name) == value, name
    body = json.loads(request.content)
    assert present <= set(body) and not absent & set(body)
    if provider == "vertex-anthropic":
        assert body["anthropic_version"] == "vertex-2023-10-16" and "anthropic-version" not in request.headers


def test_optional_attribution_headers_are_left_out_when_not_given() -> None:
    request = _call("openrouter", "openai/gpt-4o", {})
    assert "http-referer" not in request.headers and "x-title" not in request.headers


@pytest.mark.parametrize("provider", ["azure-openai", "vertex-gemini", "vertex-anthropic"])
def test_a_required_option_is_a_config_error_without_a_base_url_and_unneeded_with_one(provider: str) -> None:
    with pytest.raises(ConfigError, match=r"endpoint\.options"):
        create_client(style=provider, model="m", api_key="k-1")
    request = _call(provider, "m", {}, base_url="http://127.0.0.1:9/base")  # a given base URL is used as is
    assert str(request.url).startswith("http://127.0.0.1:9/base/")


# Reasoning the OpenAI-compatible variants hand back: read, streamed in pieces, and sent back.

REASONING_KEY = {"deepseek": "reasoning_content", "xai": "reasoning_content", "openrouter": "reasoning"}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]})


@pytest.mark.parametrize("provider", sorted(REASONING_KEY))
def test_streamed_reasoning_pieces_join_as_the_whole_answer_reads_them(provider: str) -> None:
    key = REASONING_KEY[provider]
    translator = stream_translator(provider)
    for data in (
        _chunk({"role": "assistant", key: "Let me "}),
        _chunk({key: "think."}),
        _chunk({"content": "Hi"}, "stop"),
    ):
        translator.feed(data)
    translator.feed("[DONE]")
    translator.finish()
    whole = {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi", key: "Let me think."},
                     "finish_reason": "stop"}],
    }  # fmt: skip
    assert translator.result.reasoning_content == translate_response(provider, whole).reasoning_content
    assert translator.result.reasoning_content == "Let me think."


def test_deepseek_reasoning_goes_back_inside_the_tool_calling_turn() -> None:
    """DeepSeek answers 400 when a tool-calling turn's reasoning_content is not sent back."""
    answer = {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "deepseek-reasoner",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "", "reasoning_content": "Need the weather.",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
        }}],
    }  # fmt: skip
    message = translate_response("deepseek", answer).assistant_message()
    request = {
        "model": "deepseek-reasoner",
        "messages": [
            {"role": "user", "content": "Weather?"},
            message,
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
    }
    body = translate_request("deepseek", request)
    assert body["messages"][1]["reasoning_content"] == "Need the weather."
    assert body["messages"][1]["tool_calls"][0]["id"] == "call_1"


def test_openrouter_reasoning_details_ride_on_the_message_and_go_back() -> None:
    details = [{"type": "reasoning.encrypted", "data": "ZW5j"}]
    answer = {
        "id": "c1", "object": "chat.completion", "created": 1, "model": "openai/o3",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Hi", "reasoning": "thought", "reasoning_details": details}}],
    }  # fmt: skip
    result = translate_response("openrouter", answer)
    assert result.reasoning_content == "thought" and result.message_extras["reasoning_details"] == details
    request = {"model": "openai/o3", "messages": [{"role": "user", "content": "x"}, result.assistant_message()]}
    assert translate_request("openrouter", request)["messages"][1]["reasoning_details"] == details


def test_groq_gets_no_message_name_in_any_turn_and_each_is_noted() -> None:
    chat = [
        {"role": "user", "name": "alice", "content": "hi"},
        {"role": "assistant", "name": "bot", "content": "hello"},
        {"role": "user", "content": "and now?"},
    ]
    body = translate_request("groq", {"model": "llama-3.3-70b-versatile", "messages": chat})
    assert all("name" not in message for message in body["messages"])
    assert body["messages"][1] == {"role": "assistant", "content": "hello"}
    dropped = sorted(note.path for note in body.notes if note.kind == "dropped")
    assert dropped == ["messages[0].name", "messages[1].name"]
