"""The openai-responses rule file's own decisions, each shown on one request or answer (the case tables hold the
cross-provider concerns): statelessness, encrypted reasoning only beside a reasoning_effort, non-strict tools by
default, one content part per message, and the Responses error shapes (an error body, a streamed `error` event,
a `response.failed` event)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolnexus import ProviderError, ResponseError, stream_translator, translate_request, translate_response

P = "openai-responses"
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def body(**request: Any) -> Any:
    return translate_request(P, {"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}], **request})


def test_nothing_is_stored_unless_the_caller_asks() -> None:
    assert body()["store"] is False
    assert body(store=True)["store"] is True
    assert body(store=False)["store"] is False


@pytest.mark.parametrize(
    ("effort", "include"), [(None, None), ("none", None), ("low", ["reasoning.encrypted_content"])]
)
def test_encrypted_reasoning_is_asked_for_only_beside_a_reasoning_effort(effort: str | None, include: Any) -> None:
    sent = body(reasoning_effort=effort) if effort else body()
    assert sent.get("include") == include


def test_a_tool_is_not_strict_unless_it_says_so() -> None:
    strict = {**TOOL, "function": {**TOOL["function"], "name": "g", "strict": True}}
    assert [t["strict"] for t in body(tools=[TOOL, strict])["tools"]] == [False, True]


def test_system_and_developer_messages_become_instructions() -> None:
    messages = [
        {"role": "system", "content": "A."},
        {"role": "developer", "content": "B."},
        {"role": "user", "content": "hi"},
    ]
    sent = translate_request(P, {"model": "gpt-5", "messages": messages})
    assert sent["instructions"] == "A.\n\nB."
    assert sent["input"] == [{"type": "message", "role": "user", "content": "hi"}]


def answer(*content: dict[str, Any]) -> dict[str, Any]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": list(content)}
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5",
            "output": [message], "error": None, "incomplete_details": None}  # fmt: skip


def test_a_message_with_more_than_one_part_is_refused_at_it() -> None:
    text = {"type": "output_text", "text": "a", "annotations": []}
    assert translate_response(P, answer(text)).text == "a"
    with pytest.raises(ResponseError) as info:
        translate_response(P, answer(text, {"type": "refusal", "refusal": "no"}))
    assert info.value.path == "output[0]"


def test_a_failed_response_and_an_error_body_are_the_providers_error() -> None:
    failed = {**answer(), "status": "failed", "error": {"code": "server_error", "message": "boom"}}
    with pytest.raises(ProviderError) as info:
        translate_response(P, failed)
    assert info.value.error_type == "server_error"


ERROR_EVENT = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}
FAILED = {
    "type": "response.failed",
    "response": {**answer(), "status": "failed", "error": {"code": "x", "message": "y"}},
}


@pytest.mark.parametrize(("event", "error_type"), [(ERROR_EVENT, "rate_limit_exceeded"), (FAILED, "x")])
def test_a_streamed_error_is_the_providers_error(event: dict[str, Any], error_type: str) -> None:
    stream = stream_translator(P)
    stream.feed(
        json.dumps({"type": "response.created", "response": {**answer(), "status": "in_progress", "output": []}})
    )
    with pytest.raises(ProviderError) as info:
        stream.feed(json.dumps(event))
    assert info.value.error_type == error_type


def test_allowed_tools_are_flattened_as_responses_names_them() -> None:
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [TOOL]}}
    sent = body(tools=[TOOL], tool_choice=choice)["tool_choice"]
    assert sent == {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "f"}]}


def test_a_later_summary_part_streams_without_a_note_and_arrives_with_the_finished_response() -> None:
    """Reasoning deltas stream from the first summary part; the others come whole with response.completed."""
    summary = [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]
    done = {**answer(), "output": [{"id": "rs_1", "type": "reasoning", "summary": summary, "encrypted_content": "e"}]}
    item = {"id": "rs_1", "type": "reasoning", "summary": []}
    events = [
        {"type": "response.created", "response": {**done, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *[
            event
            for k, part in enumerate(summary)
            for event in (
                {
                    "type": "response.reasoning_summary_part.added",
                    "output_index": 0,
                    "summary_index": k,
                    "part": {**part, "text": ""},
                },
                {
                    "type": "response.reasoning_summary_text.delta",
                    "output_index": 0,
                    "summary_index": k,
                    "delta": part["text"],
                },
            )
        ],
        {"type": "response.output_item.done", "output_index": 0, "item": done["output"][0]},
        {"type": "response.completed", "response": done},
    ]
    stream = stream_translator(P)
    chunks = [chunk for event in events for chunk in stream.feed(json.dumps(event))] + stream.finish()
    assert stream.result is not None and stream.result.notes == ()
    assert stream.result.to_dict() == translate_response(P, done).to_dict()
    assert stream.result.reasoning_content == "One.\n\nTwo."
    streamed = "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks if c["choices"])
    assert streamed == "One."
    assert stream.result.message_extras == {"reasoning_items": done["output"]}
