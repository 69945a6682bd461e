"""What real providers send beside text and tool calls: citations as annotations, server-side tool blocks
carried for the next turn, a refusal's explanation. The constructs alone on a made-up provider (`eta`,
written here: `annotations`, `note`, `refusal`, a `lead` of several paths), then the shipped rules against
the official SDK types (anthropic's BetaMessage for beta blocks, the openai SDK for what we give back)."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import anthropic
import openai
import pydantic
import pytest
import yaml

import toolnexus
from support.judges import SDK_VALIDATORS, cohere_stream_event, judge_anthropic
from support.made_up import made_up_provider
from support.sse_encoders import ENCODERS
from toolnexus import ResponseError, RuleError, load_rules, translate_request, translate_response

ETA = made_up_provider(
    "eta",
    ("say: {$content: blocks}}}\n    tool", "say: {$content: blocks, lead: [source.first, source.second]}}}\n    tool"),
    response="""\
response:
  items:
    - each: out
      kind: kind
      kinds:
        say:
          text: {$get: text}
          annotations:
            each: refs
            kind: sort
            as: {$when: sort, is: link, then: {type: url_citation, url_citation: {url: {$get: href}}}}
        span:
          text: {$get: text}
          annotations:
            each: refs
            as:
              type: url_citation
              url_citation: {url: {$get: href}, start_index: {$get: from}, end_index: {$get: to}}
        multi:                         # a text of parts, each part's indexes into its own text
          text: {$get: "join('', parts[].t)"}
          annotations:
            parts: {each: parts, text: t}
            each: refs
            as:
              type: url_citation
              url_citation: {url: {$get: href}, start_index: {$get: from}, end_index: {$get: to}}
        ran: {message: {ran: [{$get: "@"}]}, note: "a tool eta ran itself; carried in message_extras.ran"}
        seen: {note: "eta's own log line; kept in raw"}
        quote:                         # sources given inline, several to a span
          text: {$get: text}
          annotations:
            each: spans
            cites: {each: by}
            kind: cited.sort
            as:
              $when: cited.href
              present: true
              then: {type: url_citation, url_citation: {url: {$get: cited.href}, start_index: {$get: entry.from}}}
    - one: meta                      # sources cited by index, byte offsets into the whole answer
      optional: true
      as:
        annotations:
          each: supports
          cites: {each: refs, in: sources}
          over: answer
          unit: utf8-bytes
          as:
            $when: cited.link
            present: true
            then:
              type: url_citation
              url_citation: {url: {$get: cited.link}, start_index: {$get: entry.from}, end_index: {$get: entry.to}}
  refusal: {$get: why.text}
  finish_reason: {from: stop, documented: [done, nay], table: {done: stop, nay: content_filter}, unknown: stop}
  usage: {prompt_tokens: {$get: usage.in}}
""",
)


@pytest.fixture(scope="module")
def eta(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("eta")
    (directory / "eta.yaml").write_text(ETA)
    return directory


def _eta(eta: Path, out: list[Any], **more: Any) -> toolnexus.TranslateResult:
    return translate_response("eta", {"out": out, "stop": "done", **more}, rules=eta)


def test_annotations_span_their_items_text_in_the_joined_text(eta: Path) -> None:
    result = _eta(eta, [{"kind": "say", "text": "Hi. "}, {"kind": "say", "text": "Paris", "refs": [
        {"sort": "link", "href": "https://a.example"}]}])  # fmt: skip
    assert result.text == "Hi. Paris"
    assert result.annotations == [
        {"type": "url_citation", "url_citation": {"url": "https://a.example", "start_index": 4, "end_index": 9}}
    ]
    assert result.to_dict()["annotations"] == result.annotations and result.notes == ()
    assert "annotations" not in result.assistant_message()  # for reading; no provider takes them back


def test_indexes_an_annotation_gives_move_with_its_item(eta: Path) -> None:
    result = _eta(eta, [{"kind": "say", "text": "ab"}, {"kind": "span", "text": "cdef", "refs": [
        {"href": "u", "from": 1, "to": 3}]}])  # fmt: skip
    assert result.annotations[0]["url_citation"] | {} == {"url": "u", "start_index": 3, "end_index": 5}


def test_an_annotation_outside_its_text_is_a_response_error_at_the_entry(eta: Path) -> None:
    with pytest.raises(ResponseError) as info:
        _eta(eta, [{"kind": "span", "text": "ab", "refs": [{"href": "u", "from": 0, "to": 9}]}])
    assert info.value.path == "out[0].refs[0]"


def test_annotations_of_parts_index_into_each_parts_own_text(eta: Path) -> None:
    """`annotations.parts`: the item's text is its parts' texts joined; a part's indexes move past the item's
    place in the answer and the parts before it (a part with no text adds nothing)."""
    parts = [{"t": "cd", "refs": [{"href": "u", "from": 0, "to": 2}]}, {"other": 1},
             {"t": "efg", "refs": [{"href": "v", "from": 1, "to": 3}]}]  # fmt: skip
    result = _eta(eta, [{"kind": "say", "text": "ab"}, {"kind": "multi", "parts": parts}])
    assert result.text == "abcdefg"
    spans = [(a["url_citation"]["url"], a["url_citation"]["start_index"], a["url_citation"]["end_index"])
             for a in result.annotations]  # fmt: skip
    assert spans == [("u", 2, 4), ("v", 5, 7)] and result.text[5:7] == "fg"
    with pytest.raises(ResponseError) as info:  # "efg" has 3 characters, whatever comes before it
        _eta(eta, [{"kind": "multi", "parts": [parts[0], {"t": "efg", "refs": [{"href": "v", "from": 1, "to": 4}]}]}])
    assert info.value.path == "out[0].parts[1].refs[0]"


@pytest.mark.parametrize(
    "edit",
    [
        "parts: {each: parts}",  # no `text`: the schema's
        "parts: {each: parts, text: t}\n            over: answer",  # a part's indexes are into its own text
    ],
)
def test_a_bad_parts_spec_is_a_located_rule_error(tmp_path: Path, edit: str) -> None:
    (tmp_path / "eta.yaml").write_text(ETA.replace("parts: {each: parts, text: t}", edit))
    with pytest.raises(RuleError) as info:
        load_rules(tmp_path, reload=True)
    assert info.value.rule.startswith("response.items[0].kinds.multi.annotations") and info.value.line is not None


def test_an_entry_with_no_annotation_is_noted_by_its_kind_never_dropped_silently(eta: Path) -> None:
    result = _eta(eta, [{"kind": "say", "text": "x", "refs": [{"sort": "page", "page": 3}]}])
    assert result.annotations == []
    assert [(n.kind, n.path) for n in result.notes] == [("dropped", "out[0].refs[0]")]
    assert "'page'" in result.notes[0].message


def _met(eta: Path, supports: list[Any], sources: list[Any] | None = None) -> toolnexus.TranslateResult:
    said = [{"kind": "say", "text": "é "}, {"kind": "say", "text": "ü!"}]  # 6 bytes, 4 characters
    meta = {"supports": supports, "sources": sources or [{"link": "https://a.example"}, {"link": "https://b.example"}]}
    return _eta(eta, said, meta=meta)


def test_cited_sources_by_index_become_annotations_with_byte_offsets_into_the_whole_answer(eta: Path) -> None:
    result = _met(eta, [{"from": 3, "to": 5, "refs": [1, 0]}, {"to": 6, "refs": [0]}])
    assert result.text == "é ü!"
    assert [(a["url_citation"]["url"], a["url_citation"]["start_index"], a["url_citation"]["end_index"])
            for a in result.annotations] == [("https://b.example", 2, 3), ("https://a.example", 2, 3),
                                             ("https://a.example", 0, 4)]  # fmt: skip
    assert result.notes == ()


def test_a_cited_source_with_no_annotation_is_noted_at_the_index_naming_the_source(eta: Path) -> None:
    result = _met(eta, [{"from": 0, "to": 2, "refs": [0, 1]}], [{"link": "u"}, {"file": "gs://b/doc.pdf"}])
    assert [a["url_citation"]["url"] for a in result.annotations] == ["u"]
    assert [(n.kind, n.path) for n in result.notes] == [("dropped", "meta.supports[0].refs[1]")]
    assert "sources[1]" in result.notes[0].message


def test_sources_cited_inline_give_one_annotation_each_and_the_rest_are_noted_by_kind(eta: Path) -> None:
    spans = [{"from": 1, "by": [{"href": "u1"}, {"sort": "book"}, {"href": "u2"}]}]
    result = _eta(eta, [{"kind": "say", "text": "> "}, {"kind": "quote", "text": "abcd", "spans": spans}])
    assert [(a["url_citation"]["url"], a["url_citation"]["start_index"], a["url_citation"]["end_index"])
            for a in result.annotations] == [("u1", 3, 6), ("u2", 3, 6)]  # fmt: skip
    assert [(n.kind, n.path) for n in result.notes] == [("dropped", "out[1].spans[0].by[1]")]
    assert "'book'" in result.notes[0].message


@pytest.mark.parametrize(
    ("support", "where"),
    [
        ({"from": 1, "to": 2, "refs": [0]}, "meta.supports[0].refs[0]"),  # byte 1 is inside the é
        ({"from": 0, "to": 7, "refs": [0]}, "meta.supports[0].refs[0]"),  # past the 6 bytes
        ({"from": 0, "to": 2, "refs": [0, 2]}, "meta.supports[0].refs[1]"),  # no source 2
        ({"from": 0, "to": 2, "refs": [True]}, "meta.supports[0].refs[0]"),
        ({"from": 0, "to": 2, "refs": "0"}, "meta.supports[0].refs"),
    ],
)
def test_a_bad_offset_or_index_is_a_response_error_where_it_is(eta: Path, support: Any, where: str) -> None:
    with pytest.raises(ResponseError) as info:
        _met(eta, [support])
    assert info.value.path == where


def test_a_noted_kind_is_carried_and_noted_rewritten_or_kept_in_raw_and_noted_dropped(eta: Path) -> None:
    ran = {"kind": "ran", "code": "1+1"}
    result = _eta(eta, [ran, {"kind": "seen", "line": "ok"}, {"kind": "say", "text": "2"}])
    assert result.message_extras == {"ran": [ran]} and result.tool_calls == []
    assert [(n.kind, n.path) for n in result.notes] == [("rewritten", "out[0]"), ("dropped", "out[1]")]
    assert all("unknown" not in n.message for n in result.notes)


def test_refusal_is_the_templates_string_on_the_result_and_the_assistant_message(eta: Path) -> None:
    result = translate_response("eta", {"out": [], "stop": "nay", "why": {"text": "not allowed"}}, rules=eta)
    assert (result.refusal, result.finish_reason) == ("not allowed", "content_filter")
    assert result.assistant_message()["refusal"] == "not allowed" and result.to_dict()["refusal"] == "not allowed"
    assert _eta(eta, [], why={"text": ""}).refusal is None  # an empty explanation is none


def test_lead_of_several_paths_writes_each_list_first_in_order(eta: Path) -> None:
    message = {"role": "assistant", "content": "done", "first": [{"a": 1}], "second": [{"b": 2}, {"c": 3}]}
    body = translate_request("eta", {"model": "m", "messages": [{"role": "user", "content": "go"}, message]},
                             rules=eta)  # fmt: skip
    assert body["turns"][1]["say"] == [{"a": 1}, {"b": 2}, {"c": 3}, {"t": "done"}]


@pytest.mark.parametrize(
    ("replace", "where"),
    [
        ("annotations:\n            each: refs\n            kind: sort\n", "annotations:\n            kind: sort\n"),
        ('note: "a tool eta ran itself; carried in message_extras.ran"', "note: 3"),
        ("over: answer", "over: everywhere"),
        ("unit: utf8-bytes", "unit: utf16"),
        ("cites: {each: refs, in: sources}", "cites: {in: sources}"),
    ],
)
def test_a_malformed_spec_is_a_rule_error_at_its_line(tmp_path: Path, replace: str, where: str) -> None:
    assert replace in ETA
    (tmp_path / "eta.yaml").write_text(ETA.replace(replace, where))
    with pytest.raises(RuleError) as info:
        load_rules(tmp_path, reload=True)
    assert info.value.file is not None and info.value.file.endswith("eta.yaml") and info.value.line


# ---------------------------------------------------------------- the shipped rules, judged by the SDKs

CASES = Path(__file__).parent.parent / "fixtures" / "cases"


def column(concern: str, provider: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CASES / f"{concern}.yaml").read_text(encoding="utf-8"))
    return data["providers"][provider]


def judge_completion(result: toolnexus.TranslateResult) -> None:
    """Our result as the openai SDK's ChatCompletion (annotations and refusal on the message), strictly."""
    message = {"role": "assistant", "content": result.text or None, "refusal": result.refusal}
    if result.annotations:
        message["annotations"] = result.annotations
    completion = {"id": "chatcmpl-j", "object": "chat.completion", "created": 0, "model": result.model,
                  "choices": [{"index": 0, "message": message, "finish_reason": result.finish_reason}]}  # fmt: skip
    parsed = openai.types.chat.ChatCompletion.model_validate(completion, strict=True)
    assert parsed.model_dump(mode="json", exclude_unset=True)["choices"][0]["message"] == message


@pytest.mark.parametrize("concern", ["response-citations", "response-server-tool-blocks", "response-refusal-details"])
def test_the_anthropic_answers_are_messages_and_the_results_chat_completions(concern: str) -> None:
    response = column(concern, "anthropic")["response"]
    anthropic.types.Message.model_validate(response)
    judge_completion(translate_response("anthropic", response))


@pytest.mark.parametrize("provider", ["gemini", "bedrock", "cohere"])
def test_citation_answers_are_the_providers_own_and_the_results_chat_completions_streamed_alike(provider: str) -> None:
    """The case column's answer by the provider's SDK type; its result, and its stream's, by the openai SDK's."""
    data = column("response-citations", provider)
    SDK_VALIDATORS[provider](copy.deepcopy(data["response"]))
    if provider == "cohere":
        for event in data["stream"]:
            cohere_stream_event(copy.deepcopy(event))
    whole = translate_response(provider, copy.deepcopy(data["response"]))
    assert whole.annotations and all(a["type"] == "url_citation" for a in whole.annotations)
    judge_completion(whole)
    translator = toolnexus.stream_translator(provider)
    chunks = [c for event in data["stream"] for c in translator.feed(json.dumps(event))] + translator.finish()
    assert translator.result is not None and translator.result.annotations == whole.annotations
    deltas = [choice["delta"] for chunk in chunks for choice in chunk["choices"]]
    assert [d["annotations"] for d in deltas if "annotations" in d] == [whole.annotations]


BETA = {  # MCP connector and context compaction blocks: beta content blocks, in the beta Message type
    "id": "msg_01Mc7Pt8Co9Mp",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [
        {"type": "compaction", "content": "The user asked about the weather in Paris; it was sunny.",
         "encrypted_content": "Eu8BCkYIBBgCKkDx"},
        {"type": "mcp_tool_use", "id": "mcptoolu_01Ab", "name": "echo", "server_name": "example-mcp",
         "input": {"text": "hi"}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01Ab", "is_error": False,
         "content": [{"type": "text", "text": "hi"}]},
        {"type": "text", "text": "The server said hi."},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 50, "output_tokens": 12},
}  # fmt: skip


def test_beta_blocks_are_known_kinds_whole_and_streamed_with_the_same_raw() -> None:
    anthropic.types.beta.BetaMessage.model_validate(BETA)
    whole = translate_response("anthropic", copy.deepcopy(BETA))
    assert [n.kind for n in whole.notes] == ["rewritten"] * 3
    assert "compaction" in whole.notes[0].message and "mcp_tool_use" in whole.notes[1].message
    assert whole.message_extras["server_blocks"] == BETA["content"][:3]
    translator = toolnexus.stream_translator("anthropic")
    for event in ENCODERS["anthropic"](BETA, random.Random(7)):
        translator.feed(event.decode().split("data: ", 1)[1].strip())
    translator.finish()
    assert translator.result is not None and translator.result.to_dict() == whole.to_dict()
    assert translator.response["content"] == BETA["content"]  # compaction_delta rebuilt the block


def test_server_blocks_go_back_after_the_thinking_blocks_in_the_order_received() -> None:
    response = column("response-citations", "anthropic")["response"]
    result = translate_response("anthropic", response)
    message = result.assistant_message()
    message["thinking_blocks"] = [{"type": "redacted_thinking", "data": "EmwKAhgB"}]
    turns = [{"role": "user", "content": "When was Shannon born?"}, message, {"role": "user", "content": "Thanks"}]
    body = translate_request("anthropic", {"model": "claude-sonnet-4-5", "messages": turns})
    content = body["messages"][1]["content"]
    for block, param in zip(content[1:3], (anthropic.types.ServerToolUseBlockParam,
                                           anthropic.types.WebSearchToolResultBlockParam), strict=True):  # fmt: skip
        taken = dict(pydantic.TypeAdapter(param).validate_python(block))
        if not isinstance(taken.get("content", {}), dict):  # an Iterable field: validated as it is consumed
            taken["content"] = [dict(item) for item in taken["content"]]
        assert taken == block  # the request type takes them as they are
    judge_anthropic({**body, "messages": [body["messages"][0], {**body["messages"][1], "content": content[-1:]},
                                          body["messages"][2]]})  # fmt: skip
    assert [b["type"] for b in content] == ["redacted_thinking", "server_tool_use", "web_search_tool_result", "text"]
    assert content[1:3] == response["content"][1:3]


def test_the_anthropic_refusal_streams_as_a_refusal_delta() -> None:
    response = column("response-refusal-details", "anthropic")["response"]
    translator = toolnexus.stream_translator("anthropic")
    chunks = []
    for event in ENCODERS["anthropic"](response, random.Random(3)):
        chunks += translator.feed(event.decode().split("data: ", 1)[1].strip())
    chunks += translator.finish()
    refusals = [
        c["choices"][0]["delta"]["refusal"] for c in chunks if c["choices"] and "refusal" in c["choices"][0]["delta"]
    ]
    assert refusals == [response["stop_details"]["explanation"]]
    for chunk in chunks:
        openai.types.chat.ChatCompletionChunk.model_validate(chunk, strict=True)
    assert json.dumps(translator.result.to_dict()) == json.dumps(translate_response("anthropic", response).to_dict())
