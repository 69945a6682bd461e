"""Source formats: an OpenAI Responses request in, any provider out, the answer back as an OpenAI `Response`.

Every Responses input here is first judged by the openai SDK's `ResponseCreateParams` (strict, every key
kept); every answer written back by its `Response` model (strict, every key kept). The flat-transcript
constructs (`items`, `joins`, `text`, the unsupported tables of messages and items, `transcript: false`,
`answer.ids`, nested field keys) are also tested alone, on a made-up format file.
"""

from __future__ import annotations

import copy
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from deepdiff import DeepDiff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses.response_create_params import ResponseCreateParamsBase, ResponseCreateParamsStreaming

from support.answers import GEMINI_ANSWER
from support.cases import CASES
from support.cli import run_cli
from support.responses import judge_response, judge_responses_request
from toolnexus import ResponseError, RuleError, TranslationError, load_rules, translate_request, translate_response
from toolnexus.language.templates import Ctx, sealed_alone
from toolnexus.translate.format_rules import compile_format
from toolnexus.translate.formats import AnswerBody

SOURCE = "openai-responses"

WEATHER = {
    "type": "function",
    "name": "weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}


def conversation() -> dict[str, Any]:
    """A Responses request in the shapes rules/openai-responses.yaml writes (so it comes back equal)."""
    return {
        "model": "gpt-5",
        "instructions": "Be terse.",
        "input": [
            {"type": "message", "role": "user", "content": "Weather in Paris and Lyon?"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Two calls."}],
                "encrypted_content": "gAAAAB-opaque",
            },
            {"type": "message", "role": "assistant", "content": "Checking both."},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call", "call_id": "call_2", "name": "weather", "arguments": '{"city":"Lyon"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {"type": "function_call_output", "call_id": "call_2", "output": "rain"},
            {"type": "message", "role": "user", "content": "And Oslo?"},
        ],
        "tools": [WEATHER],
        "tool_choice": {"type": "function", "name": "weather"},
        "parallel_tool_calls": False,
        "max_output_tokens": 2048,
        "temperature": 0.5,
        "reasoning": {"effort": "medium"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "metadata": {"run": "7"},
        "safety_identifier": "u-1",
        "prompt_cache_key": "weather",
        "text": {
            "format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": True},
            "verbosity": "low",
        },
    }


# ---------------------------------------------------------------- every field of ResponseCreateParams


def test_every_sdk_request_field_is_read_listed_or_refused() -> None:
    """Each key of the SDK's ResponseCreateParams is read by the format (derived or declared) or listed in its
    `unsupported` table with an action: none falls through to "not mapped"."""
    fmt = load_rules().format(SOURCE)
    keys = set(typing.get_type_hints(ResponseCreateParamsBase)) | set(
        typing.get_type_hints(ResponseCreateParamsStreaming)
    )
    covered = set(fmt.field_reads) | {fmt.each, fmt.system, fmt.tools_each} | set(fmt.unsupported)
    assert keys - covered == set(), f"not covered by rules/formats/{SOURCE}.yaml: {sorted(keys - covered)}"


# ---------------------------------------------------------------- request: read into the normal form, any provider out


def test_responses_request_to_the_normal_form() -> None:
    request = conversation()
    judge_responses_request(request)
    before = copy.deepcopy(request)
    body = translate_request("openai", request, source=SOURCE)
    assert request == before  # never mutates the caller's input
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "Be terse."}
    # the reasoning item, the message and both calls: ONE assistant message (the calls join it)
    assistant = messages[2]
    assert assistant["content"] == "Checking both."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert messages[3:5] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert body["max_completion_tokens"] == 2048 and body["reasoning_effort"] == "medium"
    assert body["response_format"]["json_schema"]["name"] == "w" and body["verbosity"] == "low"


def test_reasoning_items_ride_on_the_assistant_message_they_precede() -> None:
    """Read as rules/openai-responses.yaml reads them back: the assistant message key `reasoning_items`."""
    body = translate_request("openai", conversation(), source=SOURCE)
    assert body["messages"][2]["reasoning_items"] == [conversation()["input"][1]]


def test_a_call_after_a_user_item_starts_a_new_assistant_message() -> None:
    request = {
        "model": "m",
        "input": [
            {"role": "user", "content": "a"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call", "call_id": "c2", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "y"},
        ],
    }
    messages = translate_request("openai", request, source=SOURCE)["messages"]
    assert [(m["role"], [c["id"] for c in m.get("tool_calls", [])]) for m in messages] == [
        ("user", []),
        ("assistant", ["c1"]),
        ("tool", []),
        ("assistant", ["c2"]),
        ("tool", []),
    ]


def test_input_as_a_string_is_one_user_message() -> None:
    body = translate_request("gemini", {"model": "m", "input": "hi"}, source=SOURCE)
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_image_file_and_output_parts() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    request = {
        "model": "m",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is it?"},
                    {"type": "input_image", "image_url": png, "detail": "low"},
                ],
            },
            {"type": "function_call", "call_id": "c1", "name": "screenshot", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [{"type": "input_image", "image_url": png, "detail": "auto"}],
            },
        ],
    }
    judge_responses_request(request)
    body = translate_request("openai", request, source=SOURCE)
    assert body["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": png, "detail": "low"}}
    assert body["messages"][2]["content"] == [{"type": "image_url", "image_url": {"url": png, "detail": "auto"}}]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r["input"].append({"type": "item_reference", "id": "msg_1"}), "input[8].type"),
        (lambda r: r["input"].append({"type": "web_search_call", "id": "ws_1"}), "input[8].type"),
        (lambda r: r["tools"].append({"type": "web_search"}), "tools[1].type"),
        (lambda r: r.update(tool_choice={"type": "file_search"}), "tool_choice.type"),
        (lambda r: r.update(tool_choice="any"), "tool_choice"),
        (lambda r: r.update(previous_response_id="resp_1"), "previous_response_id"),
        (lambda r: r.update(conversation="conv_1"), "conversation"),
        (lambda r: r.update(background=True), "background"),
        (lambda r: r["input"][3].update(arguments='{"city":'), "input[3].arguments"),
        (lambda r: r["input"][0].update(role="tool"), "input[0].role"),
        (
            lambda r: r["input"][0].update(content=[{"type": "input_image", "file_id": "f-1"}]),
            "input[0].content[0].file_id",
        ),
        (lambda r: r.update(text={"format": {"type": "text"}, "size": 3}), "text.size"),
        (lambda r: r.update(temperature=3), "temperature"),
    ],
)
def test_errors_name_the_responses_path(change: Any, path: str) -> None:
    request = conversation()
    change(request)
    with pytest.raises(TranslationError) as caught:
        translate_request("openai-responses", request, source=SOURCE)
    assert caught.value.path == path


def test_what_the_format_drops_is_noted_at_its_path() -> None:
    request = conversation() | {"truncation": "auto", "reasoning": {"effort": "low", "summary": "auto"}}
    text = {"type": "output_text", "text": "Checking both.", "annotations": []}
    request["input"][2] = {
        "type": "message",
        "id": "msg_7",
        "role": "assistant",
        "status": "completed",
        "content": [text],
    }
    request["input"][3] = request["input"][3] | {"id": "fc_1", "status": "completed"}
    body = translate_request("openai-responses", request, source=SOURCE)
    dropped = {n.path for n in body.notes if n.kind == "dropped"}
    assert dropped == {"truncation", "reasoning.summary", "input[2].id", "input[3].id"}
    assert body["input"][2] == {"type": "message", "role": "assistant", "content": "Checking both."}


# ---------------------------------------------------------------- identity


def test_identity_request() -> None:
    """A Responses request for the openai-responses provider comes out as it went in (normalizations: none
    in these shapes; README "Source formats" lists them)."""
    request = conversation()
    body = translate_request("openai-responses", request, source=SOURCE)
    judge_responses_request(dict(body))
    assert not DeepDiff(request, dict(body), ignore_order=False), DeepDiff(request, dict(body)).pretty()


def test_identity_request_normalizations() -> None:
    """The documented normalizations: message items without `type` get it, text parts alone come back as a
    string, a system message in input joins instructions."""
    request = conversation()
    request["input"][0] = {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Lyon?"}]}
    request["input"].insert(0, {"role": "developer", "content": "Use metric."})
    body = translate_request("openai-responses", request, source=SOURCE)
    assert body["instructions"] == "Be terse.\n\nUse metric."
    assert body["input"][0] == conversation()["input"][0]


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1767225600,
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "model": "gpt-5-2025-08-07",
    "output": [
        {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "Two calls."}],
            "encrypted_content": "gAAAAB-opaque",
        },
        {
            "type": "message",
            "id": "msg_9",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_7", "name": "weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "call_8", "name": "weather", "arguments": '{"city":"Lyon"}'},
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 40,
        "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 0},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 5},
        "total_tokens": 52,
    },
}


def without_item_ids(response: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(response)
    for item in out["output"]:
        if item["type"] == "message":
            item.pop("id")
    return out


def test_identity_answer() -> None:
    """A Responses answer comes back as the same Response, up to the message item's id (made from the answer id:
    the result holds none)."""
    judge_response(RESPONSE)
    answer = translate_response("openai-responses", RESPONSE, source=SOURCE)
    assert isinstance(answer, AnswerBody)
    judge_response(dict(answer))
    assert not DeepDiff(without_item_ids(RESPONSE), without_item_ids(dict(answer)))
    assert answer.result.finish_reason == "tool_calls" and answer.notes == ()
    again = translate_response("openai-responses", RESPONSE, source=SOURCE)
    assert again["output"][1]["id"] == answer["output"][1]["id"]  # the same answer, the same made id


@pytest.mark.parametrize(
    ("status", "details", "finish"),
    [
        ("incomplete", {"reason": "max_output_tokens"}, "length"),
        ("incomplete", {"reason": "content_filter"}, "content_filter"),
        ("completed", None, "stop"),
    ],
)
def test_finish_table_read_backwards(status: str, details: Any, finish: str) -> None:
    """status and incomplete_details: rules/openai-responses.yaml's finish table read backwards."""
    given = RESPONSE | {"status": status, "incomplete_details": details, "output": RESPONSE["output"][:2]}
    answer = translate_response("openai-responses", given, source=SOURCE)
    judge_response(dict(answer))
    assert answer.result.finish_reason == finish
    assert (answer["status"], answer["incomplete_details"]) == (status, details)


def test_refusal_and_annotations() -> None:
    cited = copy.deepcopy(RESPONSE)
    citation = {"type": "url_citation", "url": "https://x.test/", "title": "X", "start_index": 0, "end_index": 3}
    cited["output"] = [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "See x.", "annotations": [citation]}],
        },
    ]
    answer = translate_response("openai-responses", cited, source=SOURCE)
    judge_response(dict(answer))
    assert answer["output"][0]["content"][0]["annotations"] == [citation]
    refused = copy.deepcopy(RESPONSE)
    refused["output"] = [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "I can't help with that."}],
        },
    ]
    answer = translate_response("openai-responses", refused, source=SOURCE)
    judge_response(dict(answer))
    assert answer["output"][0]["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]


def test_gemini_answer_as_a_response_and_its_signature_comes_back() -> None:
    answer = translate_response("gemini", GEMINI_ANSWER, source=SOURCE)
    judge_response(dict(answer))
    assert [item["type"] for item in answer["output"]] == ["reasoning", "message", "function_call"]
    assert answer["output"][0]["summary"] == [{"type": "summary_text", "text": "Thinking about it."}]
    assert answer["usage"]["input_tokens_details"]["cached_tokens"] == 20
    # the call's signature rides on its call_id and is back on the call in the next Gemini request
    call = answer["output"][2]
    request = {
        "model": "gemini-2.5-flash",
        "input": [
            {"role": "user", "content": "Bern?"},
            *answer["output"],
            {"type": "function_call_output", "call_id": call["call_id"], "output": "cold"},
        ],
    }
    judge_responses_request(request)
    body = translate_request("gemini", request, source=SOURCE)
    part = body["contents"][1]["parts"][-1]
    assert part["functionCall"]["id"] == "fc1" and part["thoughtSignature"] == "U0lH"
    assert body["contents"][2]["parts"][0]["functionResponse"]["id"] == "fc1"


ANTHROPIC_ANSWER = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Lyon"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 40, "output_tokens": 12, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5},
}


def test_another_providers_round_trip_keys_ride_in_a_reasoning_item() -> None:
    """Anthropic's signed thinking block has no Responses field: it is sealed into a reasoning item's
    encrypted_content, and read back onto the assistant message, so Anthropic gets it back as it gave it."""
    answer = translate_response("anthropic", ANTHROPIC_ANSWER, source=SOURCE)
    judge_response(dict(answer))
    assert answer["usage"]["input_tokens"] == 75  # input_tokens counts the cache reads and writes
    request = {
        "model": "claude-sonnet-4-5",
        "input": [
            {"role": "user", "content": "Lyon?"},
            *answer["output"],
            {"type": "function_call_output", "call_id": "toolu_2", "output": "rain"},
        ],
    }
    judge_responses_request(request)
    body = translate_request("anthropic", request, source=SOURCE)
    assert body["messages"][1]["content"] == ANTHROPIC_ANSWER["content"]


# ---------------------------------------------------------------- the case tables' Responses inputs

SOURCE_CASES = [c for c in CASES if (c.data.get("options") or {}).get("source") == SOURCE]


def test_case_tables_hold_responses_inputs() -> None:
    concerns = {c.concern for c in SOURCE_CASES}
    assert len(concerns) >= 6 and any(c.data.get("expect_error") for c in SOURCE_CASES)


@pytest.mark.parametrize("column", SOURCE_CASES, ids=[c.name for c in SOURCE_CASES])
def test_case_table_responses_inputs_pass_the_sdk_request_judge(column: Any) -> None:
    judge_responses_request(column.data["request"])


# ---------------------------------------------------------------- the flat-transcript constructs, alone

FLAT = """
format: flat
doc: a made-up format whose transcript is a flat list of typed items
provider: openai
request:
  fields:
    model: {$get: model}
    reasoning_effort: {$get: opts.effort}
  unsupported:
    opts.hint: {action: drop, doc: no counterpart}
  messages:
    each: log
    text: user
    kind: what
    unsupported:
      seen: {action: drop, doc: a read marker}
    items:
      message: say
      kinds:
        call:
          joins: assistant
          item: tool_calls
          as: {id: {$get: ref}, type: function, function: {name: {$get: fn}, arguments: {$get: args}}}
          unsupported: {tag: {action: drop}}
        thought: {joins: assistant, item: reasoning_items, as: {$get: note}, state: {from: blob}}
        result:
          message: {role: tool, tool_call_id: {$get: ref}, content: {$get: out}}
          blocks: [content]
    roles:
      user:
        kinds: {words: {part: {type: text, text: {$get: w}}}}
      assistant:
        joins: true
        text_alone: true
        kinds: {words: {part: {type: text, text: {$get: w}}}}
      tool:
        transcript: false
        kinds: {words: {part: {type: text, text: {$get: w}}}}
answer:
  ids: {item: it_}
  message: {ref: {$get: ids.item}, why: {$get: provider.finish}, at: {$get: created}}
"""


def flat(tmp_path: Path, text: str = FLAT) -> Any:
    path = tmp_path / "flat.yaml"
    path.write_text(text)
    return compile_format(path, load_rules().providers)


def call(ref: str) -> dict[str, Any]:
    return {"what": "call", "ref": ref, "fn": "f", "args": "{}"}


def test_made_up_items_join_the_message_of_their_role(tmp_path: Path) -> None:
    fmt = flat(tmp_path)
    hub, origins, notes = fmt.read(
        {
            "model": "m",
            "log": [
                {"what": "say", "role": "user", "content": [{"what": "words", "w": "q"}]},
                {"what": "thought", "note": "n1"},
                {"role": "assistant", "content": [{"what": "words", "w": "a"}]},  # no kind: a message; joins
                call("c1"),
                call("c2"),  # consecutive calls: one message
                {"what": "result", "ref": "c1", "out": [{"what": "words", "w": "ok"}]},
                {"what": "result", "ref": "c2", "out": "ok"},
                call("c3"),  # after a tool message: a new assistant message
            ],
        }
    )
    calls = [{"id": r, "type": "function", "function": {"name": "f", "arguments": "{}"}} for r in ("c1", "c2", "c3")]
    assert hub["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": "a", "reasoning_items": ["n1"], "tool_calls": calls[:2]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": calls[2:]},
    ]
    assert (
        origins["messages[1].tool_calls[1]"][0] == "log[4]" and origins["messages[2].content[0]"][0] == "log[5].out[0]"
    )
    assert notes == []


def test_made_up_string_transcript_and_sealed_state(tmp_path: Path) -> None:
    """A string transcript is one message of the `text` role; an item whose `state.from` key holds sealed state
    (without `set`) sets each of its keys on the message it joins."""
    fmt = flat(tmp_path)
    assert fmt.read({"log": "hi"})[0]["messages"] == [{"role": "user", "content": "hi"}]
    blob = sealed_alone({"extra_content": {"k": 1}, "other": [2]}, Ctx("t"))
    hub = fmt.read({"log": [{"role": "user", "content": "q"}, {"what": "thought", "blob": blob}]})[0]
    assert hub["messages"][1] == {"role": "assistant", "content": None, "extra_content": {"k": 1}, "other": [2]}


@pytest.mark.parametrize(
    ("log", "path"),
    [
        ([{"what": "ref", "id": "x"}], "log[0].what"),  # a kind no entry reads
        ([{"role": "tool", "content": "x"}], "log[0].role"),  # transcript: false
        ([{"role": "user", "content": "x", "loud": 1}], "log[0].loud"),  # a message key not listed
        ([call("c1") | {"loud": 1}], "log[0].loud"),  # an item key not listed
    ],
)
def test_made_up_items_errors_are_located(tmp_path: Path, log: list[Any], path: str) -> None:
    with pytest.raises(TranslationError) as caught:
        flat(tmp_path).read({"log": log})
    assert caught.value.path == path


def test_made_up_unsupported_message_item_and_nested_field_keys(tmp_path: Path) -> None:
    fmt = flat(tmp_path)
    hub, _, notes = fmt.read(
        {
            "opts": {"effort": "low", "hint": 1},
            "log": [{"role": "user", "content": "x", "seen": True}, call("c") | {"tag": 1}],
        }
    )
    assert hub["reasoning_effort"] == "low"
    assert {(n.kind, n.path) for n in notes} == {
        ("dropped", "opts.hint"),
        ("dropped", "log[0].seen"),
        ("dropped", "log[1].tag"),
    }
    with pytest.raises(TranslationError) as caught:
        fmt.read({"opts": {"size": 1}, "log": []})
    assert caught.value.path == "opts.size"


def test_made_up_answer_ids_and_finish(tmp_path: Path) -> None:
    fmt = flat(tmp_path)
    result = translate_response(
        "openai",
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "a"}}],
        },
    )
    one, two = fmt.write(result, "ans-1", created=5), fmt.write(result, "ans-2", created=5)
    assert one["ref"].startswith("it_") and one["ref"] != two["ref"] and fmt.write(result, "ans-1")["ref"] == one["ref"]
    assert one["why"] == "length" and one["at"] == 5


def test_made_up_item_kind_that_neither_joins_nor_stands_alone_is_a_located_rule_error(tmp_path: Path) -> None:
    broken = FLAT.replace("        thought: {joins: assistant, item:", "        thought: {item:")
    with pytest.raises(RuleError) as caught:
        flat(tmp_path, broken)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if text.startswith("        thought:"))
    assert caught.value.file.endswith("flat.yaml") and caught.value.line == line


def test_format_answer_json_is_plain() -> None:
    """What translate_response returns is the JSON a Responses API returns (a dict subclass, dumped as is)."""
    answer = translate_response("openai-responses", RESPONSE, source=SOURCE)
    assert json.loads(json.dumps(answer))["id"] == "resp_1"


# ---------------------------------------------------------------- identity, generated

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
IDS = st.from_regex(r"call_[a-zA-Z0-9]{1,8}", fullmatch=True)


@st.composite
def responses_requests(draw: st.DrawFn) -> dict[str, Any]:
    """Responses requests of the shapes that translate for openai-responses without a normalization (README
    "Source formats" lists those): typed message items with string content, reasoning items with encrypted
    content, an assistant message and its calls, each call answered before the next user message."""
    items: list[dict[str, Any]] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        items.append({"type": "message", "role": "user", "content": draw(TEXT)})
        if draw(st.booleans()):
            reasoning = {"type": "reasoning", "id": f"rs_{len(items)}", "summary": [], "encrypted_content": draw(TEXT)}
            reasoning["summary"] = [{"type": "summary_text", "text": t} for t in draw(st.lists(TEXT, max_size=2))]
            items.append(reasoning)
        ids = [i for i in draw(st.lists(IDS, max_size=2, unique=True)) if i not in used]
        used |= set(ids)
        if draw(st.booleans()) or not ids:
            items.append({"type": "message", "role": "assistant", "content": draw(TEXT)})
        for i in ids:
            arguments = json.dumps({"city": draw(TEXT)}, ensure_ascii=False, separators=(",", ":"))
            items.append({"type": "function_call", "call_id": i, "name": "weather", "arguments": arguments})
        items += [{"type": "function_call_output", "call_id": i, "output": draw(TEXT)} for i in ids]
    items.append({"type": "message", "role": "user", "content": draw(TEXT)})
    request: dict[str, Any] = {"model": "gpt-5", "input": items, "tools": [WEATHER], "store": False}
    if draw(st.booleans()):
        request["instructions"] = draw(TEXT)
    choice = draw(st.sampled_from([None, "auto", "none", "required", {"type": "function", "name": "weather"}]))
    if choice is not None:
        request["tool_choice"] = choice
    if draw(st.booleans()):
        request["parallel_tool_calls"] = draw(st.booleans())
    if draw(st.booleans()):
        request["max_output_tokens"] = draw(st.integers(1, 100_000))
    if draw(st.booleans()):
        request["temperature"] = draw(st.sampled_from([0.0, 0.7, 2.0]))
    if draw(st.booleans()):
        request["reasoning"] = {"effort": draw(st.sampled_from(["minimal", "low", "medium", "high"]))}
        request["include"] = ["reasoning.encrypted_content"]
    return request


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=responses_requests())
def test_generated_responses_requests_come_out_as_they_went_in(request: dict[str, Any]) -> None:
    judge_responses_request(request)
    body = translate_request("openai-responses", request, source=SOURCE)
    assert not DeepDiff(request, dict(body)), DeepDiff(request, dict(body)).pretty()


def test_cli_source_both_directions() -> None:
    """`--source openai-responses` on the CLI: a Responses request in, a Response out."""

    done = run_cli("request", "--to", "gemini", "--source", SOURCE, "-", stdin=json.dumps(conversation()))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["generationConfig"]["maxOutputTokens"] == 2048
    done = run_cli("response", "--from", "gemini", "--source", SOURCE, "-", stdin=json.dumps(GEMINI_ANSWER))
    assert done.returncode == 0, done.stderr
    judge_response(json.loads(done.stdout))


def test_store_false_is_not_a_field_to_drop_and_true_is_kept() -> None:
    """store false (stateless, every provider's way here) reaches no provider; store true does."""
    assert "store" not in translate_request("openai", conversation(), source=SOURCE)
    assert "store" not in {n.path for n in translate_request("anthropic", conversation(), source=SOURCE).notes}
    assert translate_request("openai-responses", conversation() | {"store": True}, source=SOURCE)["store"] is True


# ---------------------------------------------------------------- hostile input (found by test_source_hostile.py)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r.update(tools=[], tool_choice={"type": "function", "name": "get_weather"}), "tool_choice.name"),
        (
            lambda r: r.update(text={"format": {"type": "json_schema", "name": 7, "schema": {"type": "object"}}}),
            "text.format.name",
        ),
        (
            lambda r: r.update(text={"format": {"type": "json_schema", "name": "n", "schema": {"type": "\ud800"}}}),
            "text.format.schema.type",
        ),
    ],
)
def test_an_error_below_a_declared_field_names_the_responses_key(change: Any, path: str) -> None:
    """The provider's rules refuse a value below a field the format declares (`tool_choice`, `response_format`):
    the path is the Responses key it was read from, not the normal form's (`tool_choice.function.name`,
    `text.format.json_schema.name`)."""
    request = conversation()
    change(request)
    with pytest.raises(TranslationError) as caught:
        translate_request("anthropic", request, source=SOURCE)
    assert caught.value.path == path


ANTHROPIC_CITED = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {
            "type": "text",
            "text": "Born in 1916.",
            "citations": [
                {"type": "web_search_result_location", "url": 7, "title": "Shannon", "cited_text": "1916",
                 "encrypted_index": "eyJ"},
            ],
        }
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 4},
}  # fmt: skip


@pytest.mark.parametrize("source", ["openai", "openai-responses"])
def test_an_annotation_whose_url_is_not_text_is_refused_at_the_citation(source: str) -> None:
    """It was written into the Response's url_citation as it came (a url of 7)."""
    with pytest.raises(ResponseError) as caught:
        translate_response("anthropic", ANTHROPIC_CITED, source=source)
    assert caught.value.path == "content[0].citations[0].url"  # the typed read names the key
    fine = copy.deepcopy(ANTHROPIC_CITED)
    fine["content"][0]["citations"][0]["url"] = "https://en.wikipedia.org/wiki/Claude_Shannon"
    judge_response(dict(translate_response("anthropic", fine, source=SOURCE)))


@pytest.mark.parametrize(
    ("request_part", "place"),
    [
        ({"text": {"format": {"type": "json_schema", "name": "w", "schema": {}, "loose": True}}}, "text.format.loose"),
        ({"text": {"format": {"type": "text", "deep": {"er": 1}}}}, "text.format.deep"),
        ({"reasoning": {"effort": "low", "budget": 100}}, "reasoning.budget"),
    ],
)
def test_a_responses_request_key_nested_in_a_fixed_shape_object_is_refused_at_its_place(
    request_part: dict[str, Any], place: str
) -> None:
    request = {"model": "gpt-5", "input": "hi"} | request_part
    with pytest.raises(TranslationError) as caught:
        translate_request("openai", request, source=SOURCE)
    assert caught.value.path == place
    assert translate_request("openai", request, source=SOURCE, unknown_fields="drop")  # or dropped, when asked
    schema = {"type": "object", "properties": {"x": {"type": "string", "anything": 1}}}  # free-form: any keys
    fine = {"model": "gpt-5", "input": "hi", "text": {"format": {"type": "json_schema", "name": "w", "schema": schema}}}
    assert translate_request("openai", fine, source=SOURCE)["response_format"]["json_schema"]["schema"] == schema
