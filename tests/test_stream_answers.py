"""One stream, one answer: the streaming rules' `starts`, end, `continued` and the chunk header, on a made-up provider.

`starts` names the event types that open an answer (a second opening is another answer spliced in);
nothing may follow the end (`end` or `done`); every chunk's id, created and model come from the first
event that has an id (an opening event with an empty one waits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from anthropic.types import RawMessageStreamEvent
from google.genai import types as genai_types
from pydantic import TypeAdapter

import toolnexus
from support.cases import CASES, case_ids
from support.judges import judge_genai, judge_mistral_chunk, responses_stream_event
from toolnexus import ResponseError, RuleError
from toolnexus.devtools.conformance import lineage, load_concern, parents_of, run_case

SOLO_STREAMING = """
streaming:
  body: {stream: true}
  id: id
  type: kind
  done: "[FIN]"
  {starts}
  events:
    begin: [{{into: "@", from: message}}]
    block: [{{into: content, at: at, from: block}}]
    piece: [{{into: content, at: at, field: text, from: t}}]
    add: [{{into: content, from: blocks}}]
    stop: [{{into: "@", from: "{{stop_reason: why}}"}}, end]
  combine:
    append: ["content[].text"]
    continued:
      content: {{flag: more, pieces: bits, into: input, piece: {{path: at, values: [s, n], is_null: none}}}}
"""


def solo_rules(tmp_path: Path, starts: str = "starts: [begin]") -> Path:
    """A made-up provider: Anthropic's response section, a streaming section of its own."""
    text = (Path(__file__).resolve().parents[1] / "rules" / "anthropic.yaml").read_text()
    head, _, _ = text.partition("\n# How a streamed answer")
    streaming = SOLO_STREAMING.replace("{starts}", starts).replace("{{", "{").replace("}}", "}")
    (tmp_path / "solo.yaml").write_text(head.replace("provider: anthropic", "provider: solo") + streaming)
    return tmp_path


def message(message_id: str = "m1") -> dict[str, Any]:
    return {"id": message_id, "type": "message", "role": "assistant", "model": "solo-1", "content": [],
            "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip


def answer(message_id: str = "m1", text: str = "Hi") -> list[dict[str, Any]]:
    return [
        {"kind": "begin", "message": message(message_id)},
        {"kind": "block", "at": 0, "block": {"type": "text", "text": ""}},
        {"kind": "piece", "at": 0, "t": text},
        {"kind": "stop", "why": "end_turn"},
    ]


def feed(translator: Any, events: list[Any]) -> list[dict[str, Any]]:
    chunks = []
    for event in events:
        chunks += translator.feed(event if isinstance(event, str) else json.dumps(event))
    return chunks


def test_a_second_opening_event_is_refused_where_it_starts(tmp_path: Path) -> None:
    events = answer()
    spliced = [*events[:3], {"kind": "begin", "message": message("m2")}, *events[1:]]
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path))
    with pytest.raises(ResponseError) as caught:
        feed(translator, spliced)
    assert caught.value.path == "events[3]" and caught.value.provider == "solo"


def test_an_exact_repeat_of_the_opening_event_is_ignored(tmp_path: Path) -> None:
    events = answer(text="Hello")
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path))
    feed(translator, [*events[:3], events[0], events[3]])
    translator.finish()
    assert translator.result is not None and translator.result.text == "Hello"


def test_without_starts_a_second_opening_merges_into_the_answer(tmp_path: Path) -> None:
    """What `starts` changes: with no such rule the second `begin` is merged, as any event is."""
    events = answer()
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""))
    feed(translator, [*events[:3], {"kind": "begin", "message": message("m2")}])  # no error


@pytest.mark.parametrize("after", [answer("m2")[0], "[FIN]x", {"kind": "piece", "at": 0, "t": "!"}])
def test_nothing_may_follow_the_end(tmp_path: Path, after: Any) -> None:
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""))
    feed(translator, [*answer(), "", "  "])  # blank events after the end are nothing
    with pytest.raises(ResponseError) as caught:
        feed(translator, [after])
    assert caught.value.path == "events[4]"


def test_nothing_may_follow_the_done_payload_but_the_done_payload(tmp_path: Path) -> None:
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path))
    feed(translator, [*answer()[:3], "[FIN]", "[FIN]"])
    with pytest.raises(ResponseError) as caught:
        feed(translator, [answer("m2")[0]])
    assert caught.value.path == "events[5]"


def test_starts_names_an_event_of_the_section(tmp_path: Path) -> None:
    rules = solo_rules(tmp_path, starts="starts: [bgin]")
    with pytest.raises(RuleError) as caught:
        toolnexus.load_rules(rules, reload=True)
    assert caught.value.rule == "streaming.starts[0]" and caught.value.line is not None
    assert "begin" in caught.value.message  # did you mean


def test_the_chunk_header_comes_from_the_first_event_with_an_id(tmp_path: Path) -> None:
    first = {"kind": "begin", "message": {**message(""), "model": "", "created": 0}}
    events = [first, *answer("m9")]
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""), requested_model="asked")
    chunks = feed(translator, events) + translator.finish()
    assert {(c["id"], c["model"]) for c in chunks} == {("m9", "solo-1")}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"


def test_a_stream_that_never_names_an_id_still_opens_and_closes(tmp_path: Path) -> None:
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""), requested_model="asked")
    empty = {"kind": "begin", "message": {**message(""), "model": ""}}
    chunks = feed(translator, [empty, {"kind": "stop", "why": "end_turn"}]) + translator.finish()
    assert chunks and len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert {c["model"] for c in chunks} == {"asked"}


def test_a_case_column_may_tell_a_stream_and_name_the_providers_error_type(tmp_path: Path) -> None:
    concern = tmp_path / "streamed.yaml"
    stream = [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    for error_type, ok in (("overloaded_error", True), ("api_error", False)):
        column = {"stream": stream, "expect_response_error": {"kind": "ProviderError", "type": error_type}}
        concern.write_text(json.dumps({"doc": "x", "providers": {"anthropic": column}}))
        assert run_case(load_concern(concern, {})["anthropic"]).ok is ok
    concern.write_text(json.dumps({"doc": "x", "providers": {"anthropic": {"expect_chunk_header": {"id": "x"}}}}))
    with pytest.raises(RuleError):
        load_concern(concern, {})


def call_in_pieces(*bits: list[dict[str, Any]], last: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"kind": "begin", "message": message()},
        {"kind": "add", "blocks": [{"type": "tool_use", "id": "t1", "name": "weather", "more": True}]},
    ]
    events += [{"kind": "add", "blocks": [{"bits": b, "more": True}]} for b in bits]
    return [*events, {"kind": "add", "blocks": [last or {}]}, {"kind": "stop", "why": "tool_use"}]


def test_continued_elements_fold_into_the_one_they_continue(tmp_path: Path) -> None:
    events = call_in_pieces(
        [{"at": "$.city", "s": "Pa"}],
        [{"at": "$.city", "s": "ris"}, {"at": "$.days", "n": 3}],
        [{"at": "$['spots'][1]", "s": "Louvre"}, {"at": "$.spots[0]", "none": True}],
    )
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""))
    chunks = feed(translator, events) + translator.finish()
    assert translator.result is not None
    assert [(c.id, c.name, json.loads(c.arguments)) for c in translator.result.tool_calls] == [
        ("t1", "weather", {"city": "Paris", "days": 3, "spots": [None, "Louvre"]})
    ]
    assert translator.result.raw["content"] == [
        {
            "type": "tool_use",
            "id": "t1",
            "name": "weather",
            "input": {"city": "Paris", "days": 3, "spots": [None, "Louvre"]},
        }
    ]  # the flag and pieces are gone: the element the whole answer has
    sent = [d for c in chunks for ch in c["choices"] for d in ch["delta"].get("tool_calls", ())]
    assert json.loads("".join(d["function"]["arguments"] for d in sent)) == json.loads(
        translator.result.tool_calls[0].arguments
    )


@pytest.mark.parametrize(
    ("bits", "path"),
    [
        ([{"at": "city", "s": "x"}], "content[].bits[0].at"),
        ([{"at": "$.city"}], "content[].bits[0]"),
        ([{"at": "$.city", "s": "x"}, {"at": "$.city[0]", "s": "y"}], "content[].bits[1].at"),
    ],
)
def test_a_piece_that_cannot_be_placed_is_named(tmp_path: Path, bits: list[dict[str, Any]], path: str) -> None:
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""))
    with pytest.raises(ResponseError) as caught:
        feed(translator, call_in_pieces(bits))
    assert caught.value.path == path


def test_a_stream_ending_inside_a_continued_element_is_refused(tmp_path: Path) -> None:
    translator = toolnexus.stream_translator("solo", rules=solo_rules(tmp_path, starts=""))
    events = call_in_pieces([{"at": "$.city", "s": "Pa"}])
    feed(translator, [*events[:-2], events[-1]])  # never closed
    with pytest.raises(ResponseError) as caught:
        translator.finish()
    assert caught.value.path == "content"


def test_continued_is_refused_on_a_path_combined_otherwise(tmp_path: Path) -> None:
    rules = solo_rules(tmp_path, starts="")
    text = (rules / "solo.yaml").read_text().replace("      content: {flag", '      "content[].text": {flag')
    (rules / "solo.yaml").write_text(text)
    with pytest.raises(RuleError) as caught:
        toolnexus.load_rules(rules, reload=True)
    assert caught.value.rule.startswith("streaming.combine.continued") and caught.value.line is not None


# ---------------------------------------------------------------- the case tables' streams are real


def _openai_chunk(event: dict[str, Any]) -> None:
    if event.get("object") == "" and "prompt_filter_results" in event:
        event = {**event, "object": "chat.completion.chunk"}  # Azure's opening filter chunk: its documented shape
    openai.types.chat.ChatCompletionChunk.model_validate(event)


CHUNK_JUDGES = {
    "anthropic": lambda event: TypeAdapter(RawMessageStreamEvent).validate_python(event),
    "openai": _openai_chunk,
    "gemini": lambda event: judge_genai(genai_types.GenerateContentResponse, event, "event"),
    "mistral": judge_mistral_chunk,
    "openai-responses": responses_stream_event,
}
STREAMED = [c for c in CASES if "stream" in c.data]


def _judge_of(provider: str) -> Any:
    parents = parents_of(toolnexus.load_rules())
    return next((CHUNK_JUDGES[name] for name in lineage(provider, parents) if name in CHUNK_JUDGES), None)


@pytest.mark.parametrize("column", STREAMED, ids=case_ids(STREAMED))
def test_every_case_stream_event_is_one_the_providers_sdk_reads(column: Any) -> None:
    judge = _judge_of(column.provider)
    if judge is None:
        pytest.skip(f"no SDK stream event judge for {column.provider}")
    endpoint = toolnexus.load_rules().get(column.provider).endpoint
    for event in column.data["stream"]:
        if isinstance(event, dict) and endpoint.error_in(event) is None:  # an error event: the error body's shape
            judge(event)
