"""The openai-responses rule file's own decisions, each shown on one request or answer (the case tables hold the
cross-provider concerns): statelessness, encrypted reasoning only beside a reasoning_effort, non-strict tools by
default, every content part of a message (whole and streamed), and the Responses error shapes (an error body, a
streamed `error` event, a `response.failed` event)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses import Response as OpenAIResponse

from support.judges import responses_stream_event
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


BASE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "openai-responses.json").read_text())
WHOLE = BASE["replies"][1]  # a whole Response the SDK accepts; its output replaced below


def whole(*output: dict[str, Any]) -> dict[str, Any]:
    response = {**WHOLE, "output": list(output)}
    OpenAIResponse.model_validate(response, strict=True)  # the SDK's own Response, strict
    return response


def cite(start: int, end: int) -> dict[str, Any]:
    return {"type": "url_citation", "url": "https://x.test/", "title": "X", "start_index": start, "end_index": end}


PARTS = [
    {"type": "output_text", "text": "Hello ", "annotations": [cite(0, 5)], "logprobs": []},
    {"type": "output_text", "text": "world.", "annotations": [cite(0, 5)], "logprobs": []},
    {"type": "refusal", "refusal": "Not that."},
]
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": PARTS}


def test_a_message_with_several_parts_reads_them_all() -> None:
    """Output_text parts join in order (as the SDK's Response.output_text joins them), each part's annotations
    move past the parts before it, and a refusal part beside them is kept."""
    response = whole(MESSAGE)
    result = translate_response(P, response)
    assert result.text == "Hello world." == OpenAIResponse.model_validate(response).output_text
    spans = [(a["url_citation"]["start_index"], a["url_citation"]["end_index"]) for a in result.annotations]
    assert spans == [(0, 5), (6, 11)] and result.text[6:11] == "world"
    assert result.refusal == "Not that." and result.notes == ()
    refusal_first = whole({**MESSAGE, "content": [PARTS[2], PARTS[0]]})
    assert (translate_response(P, refusal_first).text, translate_response(P, refusal_first).refusal) == (
        "Hello ",
        "Not that.",
    )
    only_refusal = translate_response(P, whole({**MESSAGE, "content": [PARTS[2]]}))
    assert (only_refusal.text, only_refusal.refusal) == ("", "Not that.")


@pytest.mark.parametrize("first", [{"annotations": []}, {"annotations": None}, {}])
def test_a_parts_annotations_move_past_the_parts_before_it_that_list_none(first: dict[str, Any]) -> None:
    """The parts before an annotated one count with their text, whether they list no annotations or none at all."""
    plain = {key: value for key, value in PARTS[0].items() if key != "annotations"} | first
    third = {"type": "output_text", "text": "Bye.", "annotations": [cite(0, 3)], "logprobs": []}
    result = translate_response(P, {**WHOLE, "output": [{**MESSAGE, "content": [plain, PARTS[1], third]}]})
    spans = [(a["url_citation"]["start_index"], a["url_citation"]["end_index"]) for a in result.annotations]
    assert result.text == "Hello world.Bye." and spans == [(6, 11), (12, 15)]


@pytest.mark.parametrize("text", [{}, 0, None, ["a"]])
def test_an_output_text_part_whose_text_is_not_a_string_is_refused_at_the_item(text: Any) -> None:
    damaged = {**whole(MESSAGE), "output": [{**MESSAGE, "content": [PARTS[0], {**PARTS[1], "text": text}]}]}
    with pytest.raises(ResponseError) as info:
        translate_response(P, damaged)
    assert info.value.path == "output[0]"


def test_a_part_whose_annotations_overrun_its_own_text_is_refused_at_it() -> None:
    bad = {**PARTS[1], "annotations": [cite(0, 9)]}  # "world." has 6 characters
    with pytest.raises(ResponseError) as info:
        translate_response(P, whole({**MESSAGE, "content": [PARTS[0], bad]}))
    assert info.value.path == "output[0].content[1].annotations[0]"


def stream_of(response: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    """The events the Responses API streams for `response`: each item added, its parts added and told in
    `pieces` deltas each, the item done, then the response completed (each judged by the SDK's event union)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}}
    ]
    for i, item in enumerate(response["output"]):
        opened = {**item, "content": []} if item["type"] == "message" else {**item, "summary": []}
        events.append({"type": "response.output_item.added", "output_index": i, "item": opened})
        lists = [("content", "content_index")] if item["type"] == "message" else [("summary", "summary_index")]
        for key, index in lists:
            for k, part in enumerate(item[key]):
                field = "refusal" if part["type"] == "refusal" else "text"
                kind = {"refusal": "response.refusal", "output_text": "response.output_text",
                        "summary_text": "response.reasoning_summary_text"}[part["type"]]  # fmt: skip
                added = "response.reasoning_summary_part.added" if key == "summary" else "response.content_part.added"
                empty = {**part, field: ""} | ({"annotations": []} if "annotations" in part else {})
                where = {"item_id": item["id"], "output_index": i, index: k, "sequence_number": 0}
                events.append({"type": added, **where, "part": empty})
                text, step = part[field], max(1, len(part[field]) // pieces)
                for j in range(0, len(text), step):
                    delta = {"type": f"{kind}.delta", **where, "delta": text[j : j + step]}
                    events.append(delta | ({"logprobs": []} if kind == "response.output_text" else {}))
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append({"type": "response.completed", "response": response})
    for n, event in enumerate(events):
        event.setdefault("sequence_number", n)
        event["sequence_number"] = n
        responses_stream_event(event)
    return events


def streamed(events: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    stream = stream_translator(P)
    chunks = [chunk for event in events for chunk in stream.feed(json.dumps(event))] + stream.finish()
    return stream.result, [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def test_a_message_with_several_parts_streams_as_the_whole_answer_reads_it() -> None:
    response = whole(MESSAGE)
    result, deltas = streamed(stream_of(response))
    assert result.to_dict() == translate_response(P, response).to_dict()
    assert "".join(d.get("content") or "" for d in deltas) == "Hello world."
    assert [d["annotations"] for d in deltas if "annotations" in d] == [result.annotations]
    assert [d["refusal"] for d in deltas if "refusal" in d] == ["Not that."]


def test_every_summary_part_streams_live_into_its_own_part_joined_as_the_whole_answer_joins_them() -> None:
    """Each reasoning delta goes into the part its summary_index names (the item rebuilt so far stays a valid
    reasoning item, part by part) and streams at once; the parts' pieces are joined as the whole answer's."""
    summary = [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two, three."}]
    item = {"id": "rs_1", "type": "reasoning", "summary": summary, "encrypted_content": "e"}
    response = whole(item, {**MESSAGE, "content": PARTS[:1]})
    events = stream_of(response)
    stream = stream_translator(P)
    live = []
    for event in events[: next(n for n, e in enumerate(events) if e["type"] == "response.output_item.done")]:
        live += [c["choices"][0]["delta"].get("reasoning_content") for c in stream.feed(json.dumps(event))]
    assert "".join(piece or "" for piece in live) == "One.\n\nTwo, three."  # before the item is done
    so_far = stream.partial()  # the answer so far: the rebuilt item, typed parts in place, is a valid item
    assert so_far is not None and so_far.message_extras == {"reasoning_items": [{**item, "id": "rs_1"}]}
    result, deltas = streamed(events)
    assert result.notes == () and result.to_dict() == translate_response(P, response).to_dict()
    assert result.reasoning_content == "One.\n\nTwo, three."
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == result.reasoning_content
    assert result.message_extras == {"reasoning_items": [item]}


def test_a_summary_delta_whose_part_was_not_announced_still_makes_a_typed_part_and_a_bad_index_is_refused() -> None:
    summary = [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]
    response = whole({"id": "rs_1", "type": "reasoning", "summary": summary})
    events = [e for e in stream_of(response) if e["type"] != "response.reasoning_summary_part.added"]
    result, deltas = streamed(events)
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == result.reasoning_content == "One.\n\nTwo."
    bad = [e | {"summary_index": -1} if e["type"].endswith("summary_text.delta") else e for e in events]
    with pytest.raises(ResponseError) as info:
        streamed(bad)
    assert info.value.path.endswith(".summary_index") and info.value.path.startswith("events[")


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
