"""A client's result keeps the notes of both sides: what translating the request did and what
reading the answer did, each saying its side; so does translate_stream's result and the LLMEvent."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

import toolnexus
from support.sse_encoders import ENCODERS, events_reply
from toolnexus import LLMEvent, Note, TranslateResult
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest

MESSAGES = [{"role": "user", "content": "Hi."}]
# Anthropic has no frequency_penalty (dropped) and needs max_tokens (the rule's default is sent).
REQUEST_NOTES = [("request", "dropped", "frequency_penalty"), ("request", "synthesized", "max_tokens")]
# An answer with a stop reason the rules do not know (reported as the rules' `unknown`, noted).
ANSWER: dict[str, Any] = {
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Hello."}], "stop_reason": "brand_new_reason", "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 2},
}  # fmt: skip
RESPONSE_NOTES = [("response", "unknown", "stop_reason")]


def sides(notes: tuple[Note, ...]) -> list[tuple[str, str, str]]:
    return [(n.side, n.kind, n.path) for n in notes]


def answer(request: StubRequest) -> StubReply | dict[str, Any]:
    if isinstance(request.body, dict) and request.body.get("stream"):
        rng = random.Random(1)
        return events_reply("anthropic", ENCODERS["anthropic"](ANSWER, rng), rng, cuts=4)
    return ANSWER


@pytest.mark.parametrize("streamed", [False, True], ids=["translate", "translate_stream"])
def test_the_result_and_the_event_carry_the_request_and_the_response_notes(streamed: bool) -> None:
    events: list[LLMEvent] = []

    async def call(base_url: str) -> TranslateResult:
        params = {"frequency_penalty": 0.5}
        async with toolnexus.create_client(base_url, "anthropic", "claude-sonnet-4-5", api_key="k", max_retries=0,
                                           on_event=events.append) as client:  # fmt: skip
            if not streamed:
                return await client.translate(MESSAGES, params=params)
            stream = client.translate_stream(MESSAGES, params=params)
            _ = [chunk async for chunk in stream]
            return stream.result

    with ProviderStub(answer) as stub:
        result = asyncio.run(call(stub.base_url))
        assert "frequency_penalty" not in stub.requests[0].body and stub.requests[0].body["max_tokens"]
    assert result.text == "Hello."
    assert sides(result.notes) == REQUEST_NOTES + RESPONSE_NOTES
    assert [event.outcome for event in events] == ["ok"] and events[0].notes == result.notes
    assert [n["side"] for n in result.to_dict()["notes"]] == ["request", "request", "response"]


def test_request_params_merged_into_the_body_keep_the_request_notes() -> None:
    client = toolnexus.create_client("http://127.0.0.1:9", "anthropic", "m", api_key="k", request_params={"x": 1})
    body = client.build_body(MESSAGES, params={"frequency_penalty": 0.5})
    assert body["x"] == 1
    assert [(n.kind, n.path) for n in body.notes] == [(kind, path) for _, kind, path in REQUEST_NOTES]  # type: ignore[attr-defined]
    asyncio.run(client.aclose())


def test_a_note_without_a_side_is_still_built_and_compared_as_before() -> None:
    note = Note("dropped", "frequency_penalty", "anthropic has no counterpart")
    assert note.side == "" and str(note) == "dropped: frequency_penalty: anthropic has no counterpart"
    assert note._replace(side="request") != note
    assert str(note._replace(side="request")).startswith("request dropped: ")
