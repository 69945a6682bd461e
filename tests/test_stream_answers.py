"""One stream, one answer: the streaming rules' `starts` and end, and the chunk header, on a made-up provider.

`starts` names the event types that open an answer (a second opening is another answer spliced in);
nothing may follow the end (`end` or `done`); every chunk's id, created and model come from the first
event that has an id (an opening event with an empty one waits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import ResponseError, RuleError
from toolnexus.devtools.conformance import load_concern, run_case

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
    stop: [{{into: "@", from: "{{stop_reason: why}}"}}, end]
  combine:
    append: ["content[].text"]
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
