"""`streaming.request`: a stream-only request overlay, rendered from the body about to be sent and the
client's endpoint option values, merged into a streamed call's body (never a whole-answer call's). Alone
on a made-up provider (`rho`, a variant of the shipped OpenAI rules), then Vertex AI's opt-in
`streamFunctionCallArguments`."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from support.sse_encoders import ENCODERS, events_reply
from toolnexus import RuleError
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest

RHO = """\
provider: rho
extends: openai
endpoint:
  options:
    pieces: {optional: true}
streaming:
  request:
    stream_options: {chunked: {$get: options.pieces}}    # merged into the parent's stream_options
    tool_config:
      $when: options.pieces
      is: "on"
      then: {$when: body.tools, present: true, then: {stream_pieces: true, for_model: {$get: options.model}}}
"""
ANSWER = {
    "id": "chatcmpl-r1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def rho(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("rho")
    (directory / "rho.yaml").write_text(RHO, encoding="utf-8")
    return directory


def answer(request: StubRequest) -> StubReply | dict[str, Any]:
    if isinstance(request.body, dict) and request.body.get("stream"):
        return events_reply("openai", ENCODERS["openai"](ANSWER, random.Random(1)))
    return ANSWER


def sent(rho: Path, *, streamed: bool, options: dict[str, str], tools: Any = None) -> dict[str, Any]:
    async def call(base_url: str) -> None:
        async with toolnexus.create_client(base_url, "rho", "m", api_key="k", rules=rho, max_retries=0,
                                           endpoint_options=options) as client:  # fmt: skip
            if not streamed:
                await client.translate(MESSAGES, tools=tools)
                return
            async with client.translate_stream(MESSAGES, tools=tools) as stream:
                async for _ in stream:
                    pass

    with ProviderStub(answer) as stub:
        asyncio.run(call(stub.base_url))
    [request] = stub.requests
    assert isinstance(request.body, dict)
    return request.body


def test_the_overlay_merges_into_a_streamed_body_from_the_body_and_the_options(rho: Path) -> None:
    body = sent(rho, streamed=True, options={"pieces": "on"}, tools=TOOLS)
    assert body["stream_options"] == {"include_usage": True, "chunked": "on"}  # mappings merge
    assert body["tool_config"] == {"stream_pieces": True, "for_model": "m"}
    assert body["tools"][0]["function"]["name"] == "f" and body["stream"] is True


def test_what_the_overlay_renders_as_nothing_is_not_sent(rho: Path) -> None:
    assert "tool_config" not in sent(rho, streamed=True, options={"pieces": "on"})  # no tools in the body
    body = sent(rho, streamed=True, options={}, tools=TOOLS)
    assert "tool_config" not in body and body["stream_options"] == {"include_usage": True}


def test_a_whole_answer_call_never_gets_the_overlay(rho: Path) -> None:
    body = sent(rho, streamed=False, options={"pieces": "on"}, tools=TOOLS)
    assert "tool_config" not in body and "stream_options" not in body


def test_the_translated_body_is_not_changed_by_the_overlay(rho: Path) -> None:
    streaming = toolnexus.load_rules(rho, reload=True).get("rho").streaming
    assert streaming is not None
    body = {"model": "m", "tool_config": {"x": 1}, "tools": TOOLS}
    merged = streaming.request_body(body, {"model": "m", "pieces": "on"})
    assert body == {"model": "m", "tool_config": {"x": 1}, "tools": TOOLS}
    assert merged["tool_config"] == {"x": 1, "stream_pieces": True, "for_model": "m"}


def test_an_overlay_that_is_not_a_mapping_is_a_rule_error_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "rho.yaml").write_text(RHO.split("  request:")[0] + "  request: [stream]\n", encoding="utf-8")
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(tmp_path, reload=True)
    assert info.value.file is not None and info.value.file.endswith("rho.yaml") and info.value.line == 7


# ---------------------------------------------------------------- Vertex AI: streamed function-call arguments


def vertex_body(options: dict[str, str], tools: Any = TOOLS) -> dict[str, Any]:
    request: dict[str, Any] = {"model": "gemini-3-pro-preview", "messages": MESSAGES}
    if tools:
        request["tools"] = tools
    streaming = toolnexus.load_rules().get("vertex-gemini").streaming
    assert streaming is not None
    body = toolnexus.translate_request("vertex-gemini", request)
    return streaming.request_body(body, {"model": "gemini-3-pro-preview", **options})


def test_vertex_streams_function_call_arguments_only_when_asked_and_given_tools() -> None:
    asked = {"stream_function_call_arguments": "true"}
    assert vertex_body(asked)["toolConfig"] == {"functionCallingConfig": {"streamFunctionCallArguments": True}}
    assert "toolConfig" not in vertex_body({})  # off unless asked: not every model takes it
    assert "toolConfig" not in vertex_body(asked, tools=None)  # meaningless without tools
    assert "toolConfig" not in toolnexus.load_rules().get("gemini").streaming.request_body(  # type: ignore[union-attr]
        toolnexus.translate_request("gemini", {"model": "g", "messages": MESSAGES, "tools": TOOLS}), asked
    )  # the Gemini API has no such flag


def test_vertex_keeps_the_tool_choice_beside_the_flag() -> None:
    request = {"model": "g", "messages": MESSAGES, "tools": TOOLS, "tool_choice": "required"}
    streaming = toolnexus.load_rules().get("vertex-gemini").streaming
    assert streaming is not None
    body = streaming.request_body(toolnexus.translate_request("vertex-gemini", request),
                                  {"model": "g", "stream_function_call_arguments": "true"})  # fmt: skip
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "streamFunctionCallArguments": True}}
    with pytest.raises(toolnexus.ConfigError):  # an option the rules do not declare
        toolnexus.create_client("https://x.invalid", "gemini", "g", api_key="k",
                                endpoint_options={"stream_function_call_arguments": "true"})  # fmt: skip
