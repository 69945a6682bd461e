"""Cohere's SSE stream and Ollama's NDJSON lines rebuild the whole answer, and the cohere/ollama judges can fail.

Ollama's lines are fed to `stream_translator` by hand (decoded JSON text, one line each) until its framing is a
rule-file value; Cohere's events go through the same call as any server-sent event's data.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolnexus
from support.judges import RICH_REQUESTS, SDK_VALIDATORS, cohere_stream_event, judge_cohere, judge_ollama, within_reach
from support.sse_encoders import ENCODERS, canonical, data_of
from support.strategies import SETTINGS, cohere_responses, ollama_responses, requests
from toolnexus import TranslationError, translate_request, translate_response


def streamed(provider: str, events: list[dict[str, Any]], requested_model: str | None = None) -> Any:
    translator = toolnexus.stream_translator(provider, requested_model=requested_model)
    chunks = [chunk for event in events for chunk in translator.feed(json.dumps(event))]
    chunks += translator.finish()
    return translator.result, chunks


def cohere_message(tool_plan: str, call_args: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "tool_plan": tool_plan,
        "tool_calls": [
            {"id": "get_weather_k3x9", "type": "function", "function": {"name": "get_weather", "arguments": call_args}}
        ],
    }


COHERE_EVENTS = [
    {"type": "message-start", "id": "7c2f0f4e", "delta": {"message": {"role": "assistant"}}},
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will check "}}},
    {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "the weather."}}},
    {
        "type": "tool-call-start",
        "index": 0,
        "delta": {
            "message": {
                "tool_calls": {
                    "id": "get_weather_k3x9",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            }
        },
    },
    {
        "type": "tool-call-delta",
        "index": 0,
        "delta": {"message": {"tool_calls": {"function": {"arguments": '{"city": '}}}},
    },
    {
        "type": "tool-call-delta",
        "index": 0,
        "delta": {"message": {"tool_calls": {"function": {"arguments": '"Paris"}'}}}},
    },
    {"type": "tool-call-end", "index": 0},
    {
        "type": "message-end",
        "delta": {
            "finish_reason": "TOOL_CALL",
            "usage": {
                "billed_units": {"input_tokens": 12, "output_tokens": 9},
                "tokens": {"input_tokens": 496, "output_tokens": 9},
            },
        },
    },
]

COHERE_TEXT_EVENTS = [
    {"type": "message-start", "id": "8d3a", "delta": {"message": {"role": "assistant"}}},
    {"type": "content-start", "index": 0, "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}}},
    {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"thinking": "Paris, surely."}}}},
    {"type": "content-end", "index": 0},
    {"type": "content-start", "index": 1, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
    {"type": "content-delta", "index": 1, "delta": {"message": {"content": {"text": "The capital "}}}},
    {"type": "content-delta", "index": 1, "delta": {"message": {"content": {"text": "is Paris."}}}},
    {"type": "content-end", "index": 1},
    {
        "type": "message-end",
        "delta": {"finish_reason": "COMPLETE", "usage": {"tokens": {"input_tokens": 20, "output_tokens": 7}}},
    },
]

COHERE_WHOLE = [
    {
        "id": "7c2f0f4e",
        "finish_reason": "TOOL_CALL",
        "message": cohere_message("I will check the weather.", '{"city": "Paris"}'),
        "usage": {
            "billed_units": {"input_tokens": 12, "output_tokens": 9},
            "tokens": {"input_tokens": 496, "output_tokens": 9},
        },
    },
    {
        "id": "8d3a",
        "finish_reason": "COMPLETE",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Paris, surely."},
                {"type": "text", "text": "The capital is Paris."},
            ],
        },
        "usage": {"tokens": {"input_tokens": 20, "output_tokens": 7}},
    },
]


@pytest.mark.parametrize("k", [0, 1])
def test_cohere_stream_equals_whole(k: int) -> None:
    events = [COHERE_EVENTS, COHERE_TEXT_EVENTS][k]
    for event in events:
        cohere_stream_event(event)
    SDK_VALIDATORS["cohere"](COHERE_WHOLE[k])
    result, chunks = streamed("cohere", events, requested_model="command-a-03-2025")
    whole = translate_response("cohere", COHERE_WHOLE[k], requested_model="command-a-03-2025")
    assert result.to_dict() == whole.to_dict()
    assert result.reasoning_content and chunks
    if k == 1:
        assert any("reasoning_content" in c["choices"][0]["delta"] for c in chunks if c["choices"])


OLLAMA_LINES = [
    {
        "model": "qwen3",
        "created_at": "2025-06-03T14:20:30Z",
        "message": {"role": "assistant", "content": "", "thinking": "Weather "},
        "done": False,
    },
    {
        "model": "qwen3",
        "created_at": "2025-06-03T14:20:30Z",
        "message": {"role": "assistant", "content": "", "thinking": "needed."},
        "done": False,
    },
    {
        "model": "qwen3",
        "created_at": "2025-06-03T14:20:31Z",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        "done": False,
    },
    {
        "model": "qwen3",
        "created_at": "2025-06-03T14:20:31Z",
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
        "total_duration": 1,
        "load_duration": 1,
        "prompt_eval_count": 30,
        "prompt_eval_duration": 1,
        "eval_count": 12,
        "eval_duration": 1,
    },
]

OLLAMA_WHOLE = {
    "model": "qwen3",
    "created_at": "2025-06-03T14:20:31Z",
    "message": {
        "role": "assistant",
        "content": "",
        "thinking": "Weather needed.",
        "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
    },
    "done": True,
    "done_reason": "stop",
    "total_duration": 1,
    "load_duration": 1,
    "prompt_eval_count": 30,
    "prompt_eval_duration": 1,
    "eval_count": 12,
    "eval_duration": 1,
}


def test_ollama_lines_equal_whole() -> None:
    for line in [*OLLAMA_LINES, OLLAMA_WHOLE]:
        SDK_VALIDATORS["ollama"](line)
    result, _ = streamed("ollama", OLLAMA_LINES)
    whole = translate_response("ollama", OLLAMA_WHOLE)
    assert result.to_dict() == whole.to_dict()
    assert result.tool_calls_json()[0]["id"] == whole.tool_calls_json()[0]["id"]  # synthesized the same way


def test_the_cohere_and_ollama_judges_refuse_an_unknown_key_and_a_wrong_type() -> None:
    request = {k: v for k, v in RICH_REQUESTS["two-rounds-and-stop-string"].items() if k != "tool_choice"}
    cohere = translate_request("cohere", copy.deepcopy(request))
    ollama = translate_request("ollama", copy.deepcopy(request))
    judge_cohere(cohere)
    judge_ollama(ollama)
    broken_cohere = [copy.deepcopy(cohere) for _ in range(4)]
    broken_cohere[0]["messages"][2]["tool_calls"][0]["function"]["input"] = {}  # unknown key
    broken_cohere[1]["max_tokens"] = "100"  # wrong type
    broken_cohere[2]["tool_choice"] = "ANY"  # an enum value Cohere does not have
    broken_cohere[3]["messages"][3]["content"][0]["document"]["text"] = "x"  # unknown key in a document
    for body in broken_cohere:
        with pytest.raises((AssertionError, ValueError)):
            judge_cohere(body)
    broken_ollama = [copy.deepcopy(ollama) for _ in range(3)]
    broken_ollama[0]["messages"][2]["tool_calls"][0]["id"] = "r1"  # unknown key (the SDK would ignore it)
    broken_ollama[1]["options"] = {"num_predict": "100"}  # wrong type
    broken_ollama[2]["messages"][1]["content"] = [{"type": "text", "text": "x"}]  # content must be a string
    for body in broken_ollama:
        with pytest.raises((AssertionError, ValueError)):
            judge_ollama(body)


@SETTINGS
@given(response=cohere_responses(), seed=st.integers(0, 2**16))
def test_generated_cohere_answers_and_their_events_pass_the_sdk_types(response: dict[str, Any], seed: int) -> None:
    """The generators and the stream encoder the shared suites use tell what Cohere's SDK types accept."""
    SDK_VALIDATORS["cohere"](response)
    for event in ENCODERS["cohere"](canonical("cohere", response), random.Random(seed)):
        cohere_stream_event(json.loads(event.decode().split("data: ", 1)[1]))


@SETTINGS
@given(response=ollama_responses(), seed=st.integers(0, 2**16))
def test_generated_ollama_answers_and_their_lines_pass_the_sdk_types(response: dict[str, Any], seed: int) -> None:
    SDK_VALIDATORS["ollama"](response)
    for event in ENCODERS["ollama"](response, random.Random(seed)):
        SDK_VALIDATORS["ollama"](json.loads(data_of("ollama", event)))


@SETTINGS
@given(request=requests(api_valid=True))
def test_generated_cohere_bodies_pass_the_sdk_judge(request: dict[str, Any]) -> None:
    judge_cohere(translate_request("cohere", within_reach("cohere", request)))


@SETTINGS
@given(request=requests(api_valid=True))
def test_generated_ollama_bodies_pass_the_sdk_judge(request: dict[str, Any]) -> None:
    judge_ollama(translate_request("ollama", within_reach("ollama", request)))


def test_cohere_sends_tool_choice_none_without_tools_and_refuses_required() -> None:
    chat = {"model": "command-a-03-2025", "messages": [{"role": "user", "content": "hi"}]}
    assert translate_request("cohere", {**chat, "tool_choice": "none"})["tool_choice"] == "NONE"
    assert "tool_choice" not in translate_request("cohere", {**chat, "tool_choice": "auto"})
    with pytest.raises(TranslationError) as refused:
        translate_request("cohere", {**chat, "tool_choice": "required"})
    assert refused.value.path == "tool_choice" and "rules/cohere.yaml:" in str(refused.value)
