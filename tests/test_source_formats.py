"""Source formats: an Anthropic Messages request in, any provider out, the answer and its stream back as Messages.

Every Messages input here is first judged by the anthropic SDK's request params type; every
answer written back by its `Message` model and every stream event by `RawMessageStreamEvent`
(strict; a key the SDK would not keep fails). The format machinery is also tested alone, on a
made-up format file.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from deepdiff import DeepDiff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolnexus
from support.answers import GEMINI_ANSWER
from support.cases import CASES
from support.cli import run_cli
from support.judges import ANTHROPIC_REQUEST, ANTHROPIC_SDK_GAPS, judge
from support.made_up import ACME_FORMAT
from support.messages import accumulate, judge_event, judge_message
from support.sse_encoders import ENCODERS
from toolnexus import (
    ConfigError,
    RuleError,
    TranslationError,
    load_rules,
    stream_translator,
    translate_request,
    translate_response,
)
from toolnexus.language.paths import MISSING, compile_path
from toolnexus.translate.format_rules import compile_format, inverse_table
from toolnexus.translate.formats import AnswerBody, SourceStream, call_inputs
from toolnexus.translate.result import new_tool_call


def judge_request(request: dict[str, Any]) -> None:
    """The input is a real Messages request: the SDK's params type keeps every key of it (the sampling fields
    it drops are the known gaps support/judges.py names)."""
    judge(ANTHROPIC_REQUEST, request, unknown_top_level=ANTHROPIC_SDK_GAPS | {"top_k"})


WEATHER = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def conversation() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 20480,
        "system": [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look it up.", "signature": "c2lnbmVk"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": "And Lyon?", "cache_control": {"type": "ephemeral"}}],
            },
        ],
        "tools": [WEATHER],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "temperature": 0.5,
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-1"},
        "thinking": {"type": "enabled", "budget_tokens": 16384},
    }


# ---------------------------------------------------------------- request: read into the normal form, any provider out


def test_messages_request_to_openai() -> None:
    request = conversation()
    judge_request(request)
    before = copy.deepcopy(request)
    body = translate_request("openai", request, source="anthropic")
    assert request == before  # never mutates the caller's input
    assert body["messages"][0] == {"role": "system", "content": "Be terse."}
    assistant = body["messages"][2]
    assert assistant["tool_calls"] == [
        {"id": "toolu_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
    ]
    assert body["messages"][3]["tool_call_id"] == "toolu_1" and body["messages"][3]["content"] == "sunny"
    assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is False
    assert body["stop"] == ["END"] and body["user"] == "u-1" and body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == 20480
    assert body["tools"][0]["function"]["parameters"] == WEATHER["input_schema"]
    # what the target cannot take is noted at the Messages path
    assert ("dropped", "system[0].cache_control") in {(n.kind, n.path) for n in body.notes}


def test_messages_request_to_gemini() -> None:
    body = translate_request("gemini", conversation(), source="anthropic")
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse."}]}
    assert body["contents"][1]["parts"][1]["functionCall"] == {
        "id": "toolu_1",
        "name": "weather",
        "args": {"city": "Paris"},
    }
    assert body["generationConfig"]["stopSequences"] == ["END"]
    assert body["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
    paths = {(n.kind, n.path) for n in body.notes}
    assert ("dropped", "metadata.user_id") in paths  # the normal form's `user`, named as the caller wrote it
    assert ("dropped", "tool_choice.disable_parallel_tool_use") in paths


def test_tool_use_input_goes_as_an_object_to_a_provider_that_sends_objects() -> None:
    """A `tool_use` input is written as JSON text only for a provider that sends text: for one that sends
    objects it stays the object it is (no text written to be parsed back), with the same body and notes."""
    request = conversation()
    fmt = load_rules().format("anthropic")
    given = request["messages"][1]["content"][2]["input"]
    hub = fmt.read_recorded(request, objects=True)[0]
    assert hub["messages"][2]["tool_calls"][0]["function"]["arguments"] is given
    assert fmt.read_recorded(request)[0]["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"city":"Paris"}'
    plain = translate_request("gemini", fmt.read(request)[0])  # the same conversation in Chat Completions form
    body = translate_request("gemini", request, source="anthropic")
    assert body == plain and body["contents"][1]["parts"][1]["functionCall"]["args"] == given
    sent = translate_request("openai", request, source="anthropic")["messages"][2]["tool_calls"][0]["function"]
    assert sent["arguments"] == '{"city":"Paris"}'  # a provider that sends text gets the text, as ever


def test_image_and_tool_result_blocks() -> None:
    request = {
        "model": "m",
        "max_tokens": 100,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
                ],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "failed"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
                        ],
                    }
                ],
            },
        ],
        "tools": [WEATHER],
    }
    judge_request(request)
    body = translate_request("anthropic", request, source="anthropic")
    assert body["messages"] == request["messages"]
    gemini = translate_request("gemini", request, source="anthropic")
    assert gemini["contents"][0]["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda r: r["messages"][1]["content"][1].update(citations=[]), "messages[1].content[1].citations"),
        (lambda r: r["messages"][1]["content"][2].update(input=[1]), "messages[1].content[2].input"),
        (lambda r: r["messages"][1]["content"].append({"type": "video"}), "messages[1].content[3].type"),
        (lambda r: r["messages"][0].update(role="system"), "messages[0].role"),
        (lambda r: r.update(top_k="x", container="c"), "container"),
        (lambda r: r["messages"][2]["content"][0].update(tool_use_id="nope"), "messages[2].content[0].tool_use_id"),
        (lambda r: r.update(temperature=1.5), "temperature"),
        (lambda r: r.update(tool_choice={"type": "tool"}), "tool_choice.name"),
    ],
)
def test_errors_name_the_messages_path(change: Any, path: str) -> None:
    request = conversation()
    change(request)
    with pytest.raises(TranslationError) as caught:
        translate_request("anthropic", request, source="anthropic")
    assert caught.value.path == path


def test_thinking_budget_between_rows_is_rewritten_and_noted() -> None:
    request = conversation() | {"thinking": {"type": "enabled", "budget_tokens": 10000}}
    body = translate_request("anthropic", request, source="anthropic")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}  # the nearest row at or above
    assert ("rewritten", "thinking.budget_tokens") in {(n.kind, n.path) for n in body.notes}


def test_unknown_format_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="known: openai, anthropic"):
        translate_request("openai", conversation(), source="anthropc")


@pytest.mark.parametrize("name", [None, 5, ["anthropic"]])
def test_a_format_or_provider_name_not_a_string_is_a_typed_error(name: Any) -> None:
    """A name of the wrong type is asked wrongly like an unknown one: the same typed errors, no TypeError."""
    with pytest.raises(ConfigError, match="known: openai, anthropic"):
        translate_request("openai", conversation(), source=name)
    with pytest.raises(ConfigError, match="known: openai, anthropic"):
        toolnexus.stream_translator("openai", source=name)
    with pytest.raises(ConfigError, match="known: openai, anthropic"):
        translate_response("openai", {"choices": [{"message": {"content": "hi"}}]}, source=name)
    with pytest.raises(RuleError, match="no rules for provider"):
        translate_request(name, conversation())
    with pytest.raises(RuleError, match="no rules for provider"):
        toolnexus.stream_translator(name)


# ---------------------------------------------------------------- identity


def test_identity_request() -> None:
    """A Messages request for the anthropic provider comes out as it went in (normalization: none here)."""
    request = conversation()
    body = translate_request("anthropic", request, source="anthropic")
    assert not DeepDiff(request, dict(body)), DeepDiff(request, dict(body)).pretty()


def test_identity_request_is_error_false_left_out() -> None:
    """A documented normalization: `is_error: false` is the default, so it is not sent."""
    request = conversation()
    request["messages"][2]["content"][0]["is_error"] = False
    body = translate_request("anthropic", request, source="anthropic")
    assert "is_error" not in body["messages"][2]["content"][0]


def test_identity_request_splits_tool_results_from_text() -> None:
    """The one documented normalization: a user turn of tool results and text comes out as two user turns."""
    request = conversation()
    request["messages"][2]["content"].append({"type": "text", "text": "thanks"})
    body = translate_request("anthropic", request, source="anthropic")
    assert body["messages"][2:4] == [
        {"role": "user", "content": request["messages"][2]["content"][:1]},
        {"role": "user", "content": "thanks"},  # one text block without cache_control is written as a string
    ]


ANSWER = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"},
        {"type": "redacted_thinking", "data": "ZW5j"},
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Lyon"}},
        {"type": "tool_use", "id": "toolu_3", "name": "weather", "input": {"city": "Oslo"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 40, "output_tokens": 12, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 5},
}


def test_identity_answer() -> None:
    judge_message(ANSWER)
    answer = translate_response("anthropic", ANSWER, source="anthropic")
    assert isinstance(answer, AnswerBody)
    assert not DeepDiff(ANSWER, dict(answer)), DeepDiff(ANSWER, dict(answer)).pretty()
    assert answer.result.finish_reason == "tool_calls"


def test_finish_table_read_backwards() -> None:
    table = load_rules().get("anthropic").source.data["response"]["finish_reason"]["table"]
    back = inverse_table(table)
    assert back["stop"] == "end_turn" and back["length"] == "max_tokens" and back["tool_calls"] == "tool_use"
    for reason in ("end_turn", "max_tokens", "refusal"):
        answer = translate_response("anthropic", ANSWER | {"stop_reason": reason, "content": []}, source="anthropic")
        assert answer["stop_reason"] == reason


def test_gemini_answer_as_message() -> None:
    answer = translate_response("gemini", GEMINI_ANSWER, source="anthropic")
    judge_message(dict(answer))
    assert answer["id"] == "resp-1"
    assert [b["type"] for b in answer["content"]] == ["thinking", "text", "tool_use"]
    call = answer["content"][2]
    assert (call["name"], call["input"]) == ("weather", {"city": "Bern"})
    assert call["id"].startswith("fc1")  # the call's thought signature rides on its id
    assert answer["stop_reason"] == "tool_use"
    # usage read backwards: input_tokens leaves out the cache reads prompt_tokens counts; thoughts are output
    assert answer["usage"] == {"input_tokens": 30, "output_tokens": 10, "cache_read_input_tokens": 20}


def test_openai_answer_as_message() -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "finish_reason": "length",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    }
    answer = translate_response("openai", completion, source="anthropic")
    judge_message(dict(answer))
    assert answer["content"] == [{"type": "text", "text": "Done."}]
    assert answer["stop_reason"] == "max_tokens"


# ---------------------------------------------------------------- streams


def provider_events(provider: str, response: dict[str, Any], seed: int = 7) -> list[str]:
    """The provider's stream for `response`, as the data of each server-sent event."""
    out = []
    for frame in ENCODERS[provider](response, random.Random(seed)):
        for line in frame.decode().splitlines():
            if line.startswith("data: "):
                out.append(line[len("data: ") :])
    return out


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_stream_events_are_messages_events(provider: str) -> None:
    signed_first = ANSWER | {"content": [b for b in ANSWER["content"] if b["type"] != "redacted_thinking"]}
    response = {"anthropic": signed_first, "gemini": GEMINI_ANSWER}.get(provider)
    if response is None:
        response = {
            "id": "chatcmpl-9",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": "Checking.",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "weather", "arguments": '{"city":"Rome"}'},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        }
    stream = stream_translator(provider, source="anthropic")
    assert isinstance(stream, SourceStream)
    events: list[dict[str, Any]] = []
    for data in provider_events(provider, response):
        events += stream.feed(data)
    events += stream.finish()
    for event in events:
        judge_event(event)
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert stream.message is not None
    judge_message(dict(stream.message))
    built = accumulate(events)
    whole = dict(translate_response(provider, response, source="anthropic"))
    assert not DeepDiff(whole, built, ignore_order=False), DeepDiff(whole, built).pretty()
    if provider == "anthropic":
        assert not DeepDiff(signed_first, built), DeepDiff(signed_first, built).pretty()


def test_stream_reasoning_blocks_come_in_the_providers_order() -> None:
    """A signed thinking block then a redacted one: each opens, streams, gets its signature and closes before the
    next block opens, the redacted one whole in its place, so the stream builds the whole answer."""
    stream = stream_translator("anthropic", source="anthropic")
    assert isinstance(stream, SourceStream)
    events: list[dict[str, Any]] = []
    for data in provider_events("anthropic", ANSWER):
        events += stream.feed(data)
    events += stream.finish()
    for event in events:
        judge_event(event)
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert starts[1] == {"type": "redacted_thinking", "data": "ZW5j"}
    bounds = [(e["type"], e["index"]) for e in events if e["type"] in ("content_block_start", "content_block_stop")]
    assert bounds == [(kind, i) for i in range(len(starts)) for kind in ("content_block_start", "content_block_stop")]
    signature = next(i for i, e in enumerate(events) if e.get("delta", {}).get("type") == "signature_delta")
    assert events[signature]["index"] == 0 and events[signature + 1] == {"type": "content_block_stop", "index": 0}
    assert stream.message is not None and accumulate(events) == dict(stream.message)
    assert not DeepDiff(ANSWER, accumulate(events)), DeepDiff(ANSWER, accumulate(events)).pretty()


# ---------------------------------------------------------------- the machinery alone, on a made-up format

MADE_UP = ACME_FORMAT


def made_up(tmp_path: Path, text: str = MADE_UP) -> Any:
    path = tmp_path / "acme.yaml"
    path.write_text(text)
    return compile_format(path, load_rules().providers)


def test_made_up_format_reads_and_writes(tmp_path: Path) -> None:
    fmt = made_up(tmp_path)
    request = {
        "model": "m",
        "max_tokens": 5,
        "mood": "calm",
        "pick": "must",
        "stop_sequences": ["x"],
        "turns": [
            {"role": "user", "content": [{"is": "words", "say": "hi"}]},
            {"role": "assistant", "content": [{"is": "call", "ref": "c1", "fn": "f", "args": {"a": 1}}]},
            {"role": "user", "content": [{"is": "answer", "to": "c1", "body": "ok"}, {"is": "words", "say": "more"}]},
        ],
    }
    hub, origins, notes = fmt.read(request)
    # derived from rules/anthropic.yaml's body: model, max_tokens and stop_sequences read backwards
    assert hub["model"] == "m" and hub["max_completion_tokens"] == 5 and hub["stop"] == ["x"]
    assert hub["tool_choice"] == "required"
    assert hub["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]
    assert [(n.kind, n.path) for n in notes] == [("dropped", "mood")]
    assert origins["messages[1].tool_calls[0]"][0] == "turns[1].content[0]"
    result = translate_response(
        "anthropic",
        ANSWER | {"content": [{"type": "tool_use", "id": "t9", "name": "f", "input": {}}]},
    )
    assert fmt.write(result) == {"said": "", "why": "tool_use", "out": 12, "calls": [{"ref": "t9", "fn": "f"}]}


def test_made_up_format_unmapped_block_key(tmp_path: Path) -> None:
    fmt = made_up(tmp_path)
    request = {"model": "m", "turns": [{"role": "user", "content": [{"is": "words", "say": "hi", "loud": True}]}]}
    with pytest.raises(TranslationError) as caught:
        fmt.read(request)
    assert caught.value.path == "turns[0].content[0].loud"


def test_made_up_format_unmapped_field_names_its_own_file(tmp_path: Path) -> None:
    fmt = made_up(tmp_path)
    with pytest.raises(TranslationError) as caught:
        fmt.read({"model": "m", "loud": True, "turns": []})
    assert caught.value.path == "loud" and str(tmp_path / "acme.yaml") in caught.value.message


def test_made_up_format_schema_error_is_located(tmp_path: Path) -> None:
    broken = MADE_UP.replace(
        "          call:\n            item: tool_calls\n", "          call:\n            itme: tool_calls\n"
    )
    with pytest.raises(RuleError) as caught:
        made_up(tmp_path, broken)
    assert caught.value.file.endswith("acme.yaml") and caught.value.line is not None


# ---------------------------------------------------------------- formats from the user's rules directory


HELLO = {"model": "m", "max_tokens": 5, "turns": [{"role": "user", "content": [{"is": "words", "say": "hi"}]}]}


def user_format(tmp_path: Path, text: str = MADE_UP, name: str = "acme") -> Path:
    (tmp_path / "formats").mkdir()
    (tmp_path / "formats" / f"{name}.yaml").write_text(text)
    return tmp_path


def test_user_rules_directory_format_is_found(tmp_path: Path) -> None:
    rules = user_format(tmp_path)
    body = translate_request("anthropic", HELLO, source="acme", rules=rules)
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert load_rules(rules).formats() == ["openai", "acme", "anthropic", "openai-responses"]
    answer = translate_response("anthropic", ANSWER, source="acme", rules=rules)
    assert answer["why"] == ANSWER["stop_reason"] and answer["out"] == ANSWER["usage"]["output_tokens"]


def test_user_rules_directory_format_comes_before_the_builtin_one(tmp_path: Path) -> None:
    rules = user_format(tmp_path, MADE_UP.replace("format: acme", "format: anthropic"), "anthropic")
    assert translate_request("anthropic", HELLO, source="anthropic", rules=rules)["max_tokens"] == 5


def test_user_rules_directory_broken_format_is_located(tmp_path: Path) -> None:
    broken = MADE_UP.replace("{part: {type: text, text: {$get: say}}}", "{part: {type: text, text: {$gte: say}}}", 1)
    rules = user_format(tmp_path, broken)
    with pytest.raises(RuleError) as caught:
        translate_request("anthropic", {"turns": []}, source="acme", rules=rules)
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if "$gte" in text)
    assert caught.value.file.endswith("formats/acme.yaml") and caught.value.line == line


def test_user_rules_directory_unknown_format_names_the_known_ones(tmp_path: Path) -> None:
    rules = user_format(tmp_path)
    with pytest.raises(ConfigError, match="known: openai, acme, anthropic, openai-responses"):
        translate_request("anthropic", {"turns": []}, source="acm", rules=rules)


def test_cli_source_from_the_rules_directory(tmp_path: Path) -> None:
    rules = user_format(tmp_path)
    done = run_cli(
        "request", "--to", "anthropic", "--rules", str(rules), "--source", "acme", "-", stdin=json.dumps(HELLO)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["max_tokens"] == 5


# ---------------------------------------------------------------- the CLI


def test_cli_source_both_directions() -> None:
    done = run_cli("request", "--to", "gemini", "--source", "anthropic", "-", stdin=json.dumps(conversation()))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["generationConfig"]["stopSequences"] == ["END"]
    done = run_cli("response", "--from", "gemini", "--source", "anthropic", "-", stdin=json.dumps(GEMINI_ANSWER))
    assert done.returncode == 0, done.stderr
    judge_message(json.loads(done.stdout))


# ---------------------------------------------------------------- the case tables' Messages inputs

SOURCE_CASES = [c for c in CASES if (c.data.get("options") or {}).get("source") == "anthropic"]


def test_case_tables_hold_messages_inputs() -> None:
    concerns = {c.concern for c in SOURCE_CASES}
    assert len(concerns) >= 4 and any(c.data.get("expect_error") for c in SOURCE_CASES)


@pytest.mark.parametrize("column", SOURCE_CASES, ids=[c.name for c in SOURCE_CASES])
def test_case_table_messages_inputs_pass_the_sdk_request_judge(column: Any) -> None:
    request = column.data["request"]
    if column.data.get("expect_error"):  # a refused input may be one the SDK types refuse too
        return
    judge_request(request)


def test_unknown_fields_drop_notes_what_the_format_does_not_read() -> None:
    request = conversation() | {"surprise": 1}
    request["messages"][0] = {"role": "user", "content": [{"type": "text", "text": "hi", "loud": True}]}
    with pytest.raises(TranslationError) as caught:
        translate_request("gemini", request, source="anthropic")
    assert caught.value.path == "surprise"
    body = translate_request("gemini", request, source="anthropic", unknown_fields="drop")
    dropped = {n.path for n in body.notes if n.kind == "dropped"}
    assert {"surprise", "messages[0].content[0].loud"} <= dropped


def test_what_the_answer_cannot_say_is_noted() -> None:
    """No id: one is made (synthesized); counts that contradict each other are left out, never clamped."""
    answer = translate_response(
        "gemini", {k: v for k, v in GEMINI_ANSWER.items() if k != "responseId"}, source="anthropic"
    )
    assert isinstance(answer, AnswerBody)
    assert ("synthesized", "id") in {(n.kind, n.path) for n in answer.notes}
    broken = GEMINI_ANSWER | {
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "cachedContentTokenCount": 9}
    }
    answer = translate_response("gemini", broken, source="anthropic")
    assert isinstance(answer, AnswerBody)
    judge_message(dict(answer))
    assert answer["usage"]["input_tokens"] == 0  # Message requires it: the template's default, noted
    kinds = {(n.kind, n.path) for n in answer.notes}
    assert ("inconsistent", "prompt_tokens") in kinds and ("synthesized", "usage.input_tokens") in kinds


def test_made_up_format_template_error_is_located(tmp_path: Path) -> None:
    broken = MADE_UP.replace("{part: {type: text, text: {$get: say}}}", "{part: {type: text, text: {$gte: say}}}", 1)
    with pytest.raises(RuleError) as caught:
        made_up(tmp_path, broken)
    assert (
        caught.value.file.endswith("acme.yaml")
        and caught.value.line
        == MADE_UP.splitlines().index(next(line for line in MADE_UP.splitlines() if "{$get: say}" in line)) + 1
    )


def test_made_up_format_unknown_provider_is_located(tmp_path: Path) -> None:
    with pytest.raises(RuleError) as caught:
        made_up(tmp_path, MADE_UP.replace("provider: anthropic", "provider: acme-cloud"))
    assert caught.value.rule == "provider" and caught.value.line == 4


# ---------------------------------------------------------------- identity, generated

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
IDS = st.from_regex(r"toolu_[a-zA-Z0-9]{1,8}", fullmatch=True)
CACHE = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}])


@st.composite
def messages_requests(draw: st.DrawFn) -> dict[str, Any]:
    """Messages requests of the shapes that translate for anthropic without a normalization (README
    "Source formats" lists those): user text as a string, or blocks one of which is cached;
    assistant thinking, text and tool_use; each tool turn answered by a user turn of tool_results only."""
    messages: list[dict[str, Any]] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        blocks = [{"type": "text", "text": t} | draw(CACHE) for t in draw(st.lists(TEXT, min_size=1, max_size=3))]
        blocks[-1]["cache_control"] = {"type": "ephemeral"}  # all plain text blocks would come back joined
        messages.append({"role": "user", "content": draw(st.sampled_from([draw(TEXT), blocks]))})
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            content.append({"type": "thinking", "thinking": draw(TEXT), "signature": draw(IDS)})
        content.append({"type": "text", "text": draw(TEXT)})
        ids = [i for i in draw(st.lists(IDS, max_size=2, unique=True)) if i not in used]
        used |= set(ids)
        content += [{"type": "tool_use", "id": i, "name": "weather", "input": {"city": draw(TEXT)}} for i in ids]
        messages.append({"role": "assistant", "content": content})
        if ids:
            results = [
                {"type": "tool_result", "tool_use_id": i, "content": draw(TEXT)} | draw(CACHE)
                | draw(st.sampled_from([{}, {"is_error": True}]))
                for i in ids
            ]  # fmt: skip
            messages.append({"role": "user", "content": results})
    messages.append({"role": "user", "content": draw(TEXT)})
    request: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": draw(st.integers(1, 8192))}
    request["messages"] = messages
    request["tools"] = [WEATHER | draw(CACHE)]
    choice = draw(st.sampled_from([None, {"type": "any"}, {"type": "tool", "name": "weather"}, {"type": "none"}]))
    if choice is not None:
        request["tool_choice"] = choice
    if draw(st.booleans()):
        request["temperature"] = draw(st.sampled_from([0.0, 0.5, 1.0]))
    if draw(st.booleans()):
        request["stop_sequences"] = draw(st.lists(TEXT, min_size=1, max_size=2))
    return request


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=messages_requests())
def test_generated_messages_requests_come_out_as_they_went_in(request: dict[str, Any]) -> None:
    judge_request(request)
    body = translate_request("anthropic", request, source="anthropic")
    assert not DeepDiff(request, dict(body)), DeepDiff(request, dict(body)).pretty()


# ---------------------------------------------------------------- hostile input (found by test_source_hostile.py)


def bedrock_reasoning(reasoning_text: dict[str, Any]) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": reasoning_text}},
                                                                {"text": "42."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7},
    }  # fmt: skip


def test_an_unsigned_reasoning_block_is_a_thinking_block_with_an_empty_signature() -> None:
    """Bedrock's ReasoningTextBlock signature is optional; a Messages thinking block needs one (it was left out)."""
    answer = translate_response("bedrock", bedrock_reasoning({"text": "Think."}), source="anthropic")
    judge_message(dict(answer))
    assert answer["content"][0] == {"type": "thinking", "thinking": "Think.", "signature": ""}
    assert ("synthesized", "signature") in {(n.kind, n.path) for n in answer.notes}
    signed = bedrock_reasoning({"text": "Think.", "signature": "c2ln"})
    signed = translate_response("bedrock", signed, source="anthropic")
    assert signed["content"][0] == {"type": "thinking", "thinking": "Think.", "signature": "c2ln"}


def test_a_reasoning_block_signed_without_its_text_is_a_thinking_block_of_no_text() -> None:
    """It came out as a thinking block holding no `thinking` key, which the SDK refuses; the signature is what
    the next turn needs, so the block is read with empty text (as rules/bedrock.yaml sends it back)."""
    answer = translate_response("bedrock", bedrock_reasoning({"signature": "c2ln"}), source="anthropic")
    judge_message(dict(answer))
    assert answer["content"][0] == {"type": "thinking", "thinking": "", "signature": "c2ln"}


def test_a_stream_event_a_path_function_cannot_read_is_noted_not_raised() -> None:
    """`keys(contentBlockDelta.delta)[0]` over a delta that is not an object raised jmespath's own TypeError."""
    stream = stream_translator("bedrock", source="anthropic")
    datas = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": 7}},
        {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}},
    ]
    events = [event for data in datas for event in stream.feed(json.dumps(data))] + stream.finish()
    for event in events:
        judge_event(event)
    assert stream.message is not None and stream.message["content"] == [{"type": "text", "text": "Hi"}]
    assert [(n.kind, n.path) for n in stream.message.notes] == [("unknown", "events[2]")]


def test_a_rich_path_whose_function_refuses_the_type_reads_nothing() -> None:
    assert compile_path("keys(a.b)[0]")({"a": {"b": 7}}) is MISSING
    assert compile_path("length(a)")({"a": 7}) is MISSING
    assert compile_path("keys(a.b)[0]")({"a": {"b": {"k": 1}}}) == "k"


def test_a_key_where_a_block_type_belongs_is_not_quoted() -> None:
    request = conversation()
    request["messages"][0] = {"role": "user", "content": [{"type": "sk-SECRET-toolnexus-1234567890", "text": "x"}]}
    with pytest.raises(TranslationError) as caught:
        translate_request("gemini", request, source="anthropic")
    assert caught.value.path == "messages[0].content[0].type"
    assert "SECRET" not in str(caught.value) and "***" in caught.value.message


# A made-up format whose `tool_choice` is read from an object two levels deep (`pick.how.mode`) and whose
# `words` blocks read a picture inside a nested object: those objects have fixed keys at any depth.
DEEP = MADE_UP.replace(
    "    tool_choice: {$lookup: pick, table: {free: auto, must: required}}",
    "    tool_choice: {$lookup: pick.how.mode, table: {free: auto, must: required}}",
).replace(
    "          answer:\n",
    "          picture:\n"
    "            part: {type: image_url, image_url: {url: {$data_url: src}}, cache_control: {$get: keep}}\n"
    "            unsupported: {src.alt: {action: drop, doc: alt text}}\n"
    "          answer:\n",
)
assert DEEP.count("picture:") == 1
PICTURE = {"is": "picture", "src": {"media_type": "image/png", "data": "AAAA"}, "keep": {"free": "form"}}


@pytest.mark.parametrize(
    ("where", "request_part", "place"),
    [
        ("field", {"pick": {"how": {"mode": "must", "loud": 1}}}, "pick.how.loud"),
        ("field", {"pick": {"how": {"mode": "must"}, "loud": 1}}, "pick.loud"),
        ("block", {"turns": [{"role": "user", "content": [PICTURE | {"src": {"data": "A", "x": {}}}]}]}, "src.x"),
    ],
)
def test_made_up_format_refuses_an_unread_key_at_any_depth_of_an_object_it_reads_inside(
    tmp_path: Path, where: str, request_part: dict[str, Any], place: str
) -> None:
    fmt = made_up(tmp_path, DEEP)
    with pytest.raises(TranslationError) as caught:
        fmt.read({"model": "m", "turns": []} | request_part)
    assert caught.value.path == (place if where == "field" else f"turns[0].content[0].{place}")


def test_made_up_format_reads_nested_objects_it_reads_whole_as_they_are_and_drops_a_listed_key(
    tmp_path: Path,
) -> None:
    fmt = made_up(tmp_path, DEEP)
    picture = PICTURE | {"src": {**PICTURE["src"], "alt": "a cat"}}
    hub, _, notes = fmt.read({"model": "m", "pick": {"how": {"mode": "free"}}, "turns": [
        {"role": "user", "content": [picture]}]})  # fmt: skip
    assert hub["tool_choice"] == "auto"
    assert hub["messages"][0]["content"][0]["cache_control"] == {"free": "form"}  # read whole: any keys
    assert [(n.kind, n.path) for n in notes] == [("dropped", "turns[0].content[0].src.alt")]


@pytest.mark.parametrize(
    ("request_part", "place"),
    [
        ({"metadata": {"user_id": "u", "tier": {"gold": True}}}, "metadata.tier"),
        ({"tool_choice": {"type": "tool", "name": "f", "extra": 1}}, "tool_choice.extra"),
        (
            {"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA", "x": 1}}]}]},
            "messages[0].content[0].source.x",
        ),
        (
            {"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png", "y": 2}}]}]},
            "messages[0].content[0].source.y",
        ),
    ],
)  # fmt: skip
def test_a_messages_request_key_nested_in_a_fixed_shape_object_is_refused_at_its_place(
    request_part: dict[str, Any], place: str
) -> None:
    request = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]} | request_part
    with pytest.raises(TranslationError) as caught:
        translate_request("openai", request, source="anthropic")
    assert caught.value.path == place
    request["tools"] = [{"name": "f", "input_schema": {"type": "object", "anything": {"goes": True}}}]
    del request[place.split(".")[0].split("[")[0]]  # free-form objects (a tool's schema) take any keys
    if "messages" not in request:
        request["messages"] = [{"role": "user", "content": "hi"}]
    translate_request("openai", request, source="anthropic")


# A value the format drops is checked as the Chat Completions path checks the whole request: the reader's
# request (the one checked whole) never holds it, so before, a NaN there passed with a "dropped" note.
DROPPED_VALUES = [
    ("anthropic", lambda r: r.update(service_tier=float("nan")), "service_tier"),
    ("anthropic", lambda r: r.update(top_k="\ud800"), "top_k"),
    (
        "anthropic",
        lambda r: r["messages"][0].update(content=[{"type": "text", "text": "Hi.", "hint": {1}}]),
        "messages[0]",
    ),
    ("openai-responses", lambda r: r.update(background_options={"x": float("inf")}), "background_options.x"),
    ("openai-responses", lambda r: r["input"][0].update(status=float("nan"), type="message"), "input[0].status"),
]


@pytest.mark.parametrize(("fmt", "harm", "where"), DROPPED_VALUES, ids=[w for _, _, w in DROPPED_VALUES])
def test_a_value_the_format_drops_is_refused_when_it_is_not_json(fmt: str, harm: Any, where: str) -> None:
    request: dict[str, Any] = {"model": "m", "max_tokens": 5} if fmt == "anthropic" else {"model": "m"}
    request["messages" if fmt == "anthropic" else "input"] = [{"role": "user", "content": "Hi."}]
    harm(request)
    with pytest.raises(TranslationError) as caught:
        translate_request("gemini", request, source=fmt, unknown_fields="drop")
    assert caught.value.path.startswith(where)


def test_a_json_value_the_format_drops_is_still_dropped_with_a_note() -> None:
    request = {"model": "m", "max_tokens": 5, "service_tier": "auto", "messages": [{"role": "user", "content": "Hi."}]}
    body = translate_request("gemini", request, source="anthropic")
    assert ("dropped", "service_tier") in {(n.kind, n.path) for n in body.notes}


def test_call_inputs_read_each_call_by_where_its_arguments_came_from() -> None:
    """A `tool_use.input` per call: the object the provider sent, else its text read (the text itself where it is
    not JSON), {} for none; whether every call brought an object, every call text, or they are mixed."""
    sent = {"q": 1}
    given = new_tool_call("a", "f", json.dumps(sent), None, sent)
    texts = [new_tool_call(str(k), "f", text, None) for k, text in enumerate(['{"n": 12345678901234567890}', "no"])]
    empty = new_tool_call("e", "f", "", None)
    assert call_inputs([given, given]) == [sent, sent] and call_inputs([given])[0] is sent
    assert call_inputs(texts) == [{"n": 12345678901234567890}, "no"]
    assert call_inputs([texts[0], empty, given, texts[1]]) == [{"n": 12345678901234567890}, {}, sent, "no"]
    assert call_inputs([empty, empty]) == [{}, {}] and call_inputs([]) == []
