"""Synthesized tool-call ids: unique across a long conversation, stable for the same response.

A provider that sends calls without ids (`synthesize_ids` in its rules) gets ids that hash the
whole response plus the call's position. A conversation that polls one tool (the same call, the
same arguments, turn after turn) must keep running: every answer's ids are new, so the next
request never holds a duplicate. Driven through the client against the embedded stub, in both
`translate` and `translate_stream`.
"""

from __future__ import annotations

import asyncio
import copy
import random
from typing import Any

import pytest

import toolnexus
from support.sse_encoders import ENCODERS, events_reply
from support.variants import with_variants
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest

TURNS = 50
TOOLS = [{"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]

# What a provider that synthesizes ids answers to a poll: one get_time({}) call without an id, and
# how two of its answers differ as a real provider's do (the answer's own id).
POLLS: dict[str, Any] = {
    "gemini": lambda turn: {
        "candidates": [{
            "content": {"role": "model", "parts": [{"functionCall": {"name": "get_time", "args": {}}}]},
            "finishReason": "STOP", "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5, "totalTokenCount": 25},
        "modelVersion": "gemini-2.5-flash",
        "responseId": f"poll-{turn}",
    },
    "ollama": lambda turn: {
        "model": "llama3.2", "created_at": f"2026-11-30T09:00:{turn % 60:02d}.{turn:06d}Z",
        "message": {
            "role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_time", "arguments": {}}}],
        },
        "done": True, "done_reason": "stop", "total_duration": 1000 + turn, "prompt_eval_count": 20, "eval_count": 5,
    },
}  # fmt: skip
POLLS = with_variants(POLLS)  # a variant without an entry takes its parent's


def synthesizing() -> list[str]:
    """Every provider whose rules give id-less calls an id."""
    rules = toolnexus.load_rules()
    return [p for p in toolnexus.providers() if any(s.synthesize_ids for s in rules.get(p).outbound.sources)]


def test_every_provider_that_synthesizes_ids_has_a_poll() -> None:
    assert synthesizing() and set(synthesizing()) <= set(POLLS)


@pytest.mark.parametrize("provider", synthesizing())
def test_fifty_turns_polling_one_tool_run_through_translate_and_translate_stream(provider: str) -> None:
    turn = [0]

    def answer(request: StubRequest) -> StubReply | dict[str, Any]:
        reply = POLLS[provider](turn[0])
        if request.path.endswith("alt=sse") or (isinstance(request.body, dict) and request.body.get("stream") is True):
            rng = random.Random(turn[0])
            return events_reply(provider, ENCODERS[provider](reply, rng), rng, cuts=3)
        return reply

    async def converse(base_url: str) -> list[str]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Poll the clock."}]
        ids: list[str] = []
        async with toolnexus.create_client(base_url, provider, "m", api_key="k", max_retries=0) as client:
            for n in range(TURNS):
                turn[0] = n
                if n % 2:  # every other turn streamed: both must synthesize the same kind of ids
                    stream = client.translate_stream(messages, tools=TOOLS)
                    _ = [chunk async for chunk in stream]
                    result = stream.result
                else:
                    result = await client.translate(messages, tools=TOOLS)
                assert [c.name for c in result.tool_calls] == ["get_time"]
                messages.append(result.assistant_message())
                call_id = result.tool_calls[0].id
                messages.append({"role": "tool", "tool_call_id": call_id, "content": f"12:{n:02d}"})
                ids.append(call_id)
            toolnexus.translate_request(provider, {"model": "m", "messages": messages, "tools": TOOLS})
        return ids

    with ProviderStub(answer) as stub:
        ids = asyncio.run(converse(stub.base_url))
        assert len(stub.requests) == TURNS
    assert len(set(ids)) == TURNS, "every answer's call got an id of its own"


@pytest.mark.parametrize("provider", synthesizing())
def test_the_same_response_gives_the_same_ids_and_another_answer_other_ids(provider: str) -> None:
    response = POLLS[provider](1)
    first = toolnexus.translate_response(provider, response)
    again = toolnexus.translate_response(provider, copy.deepcopy(response))
    other = toolnexus.translate_response(provider, POLLS[provider](2))
    assert [c.id for c in first.tool_calls] == [c.id for c in again.tool_calls]
    assert {c.id for c in first.tool_calls}.isdisjoint(c.id for c in other.tool_calls)
    assert [n.kind for n in first.notes] == ["synthesized"]


def test_a_response_too_deep_to_digest_is_a_response_error() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    response = POLLS["gemini"](1) | {"extra": deep}
    with pytest.raises(toolnexus.ResponseError):  # never a RecursionError
        toolnexus.translate_response("gemini", response)
