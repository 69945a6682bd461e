"""Cohere's SSE stream and Ollama's NDJSON lines rebuild the whole answer, and the cohere/ollama judges can fail.

Ollama's lines are fed to `stream_translator` by hand (decoded JSON text, one line each) until its framing is a
rule-file value; Cohere's events go through the same call as any server-sent event's data.
"""

from __future__ import annotations

import asyncio
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
from toolnexus import translate_request, translate_response
from toolnexus.devtools.stub import ProviderStub, StubRequest


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


# ---------------------------------------------------------------- ten turns: what each answer hands out comes back

TURNS = 10
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
CITIES = ["Paris", "東京", "Lyon", "Oslo", "Lima"]


def cohere_answer(turn: int) -> dict[str, Any]:
    """Even turns: a plan and two calls; odd turns: the answer (thinking and text)."""
    usage = {
        "billed_units": {"input_tokens": 10, "output_tokens": 5},
        "tokens": {"input_tokens": 100 + turn, "output_tokens": 20},
    }
    if turn % 2 == 0:
        calls = [
            {"id": f"get_weather_{turn}_{k}", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": CITIES[(turn + k) % 5]})}}
            for k in range(2)
        ]  # fmt: skip
        message = {"role": "assistant", "tool_plan": f"Plan {turn}: look both cities up.", "tool_calls": calls}
        return {"id": f"t{turn}", "finish_reason": "TOOL_CALL", "message": message, "usage": usage}
    content = [{"type": "thinking", "thinking": f"Thought {turn}."}, {"type": "text", "text": f"Answer {turn}."}]
    return {
        "id": f"t{turn}",
        "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": content},
        "usage": usage,
    }


def ollama_answer(turn: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "", "thinking": f"Thought {turn}."}
    if turn % 2 == 0:
        message["tool_calls"] = [
            {"function": {"name": "get_weather", "arguments": {"city": CITIES[(turn + k) % 5]}}} for k in range(2)
        ]
    else:
        message["content"] = f"Answer {turn}."
    return {"model": "qwen3", "created_at": f"2026-11-30T09:00:{turn:02d}Z", "message": message, "done": True,
            "done_reason": "stop", "prompt_eval_count": 100 + turn, "eval_count": 20}  # fmt: skip


ANSWERS = {"cohere": cohere_answer, "ollama": ollama_answer}
JUDGE = {"cohere": judge_cohere, "ollama": judge_ollama}


def handed_back(provider: str, answer: dict[str, Any], sent: dict[str, Any]) -> None:
    """The assistant message sent for `answer`: its reasoning and its calls, as the provider handed them out."""
    message = answer["message"]
    if provider == "cohere":
        reasoning = message.get("tool_plan") or "".join(
            b["thinking"] for b in message["content"] if b["type"] == "thinking"
        )
        assert sent["tool_plan"] == reasoning
        assert sent.get("tool_calls", []) == message.get("tool_calls", [])
    else:
        assert sent["thinking"] == message["thinking"]
        assert sent.get("tool_calls", []) == message.get("tool_calls", [])


@pytest.mark.parametrize("provider", sorted(ANSWERS))
def test_ten_turns_hand_back_reasoning_calls_and_results(provider: str) -> None:
    """The OpenAI SDK user's loop: each request carries every earlier turn as the provider handed it out,
    every call answered by its result right after it, and passes the provider's judge."""
    bodies: list[dict[str, Any]] = []

    def respond(request: StubRequest) -> dict[str, Any]:
        bodies.append(request.body)
        return ANSWERS[provider](len(bodies) - 1)

    async def converse(base_url: str) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather, please."}]
        async with toolnexus.create_client(base_url, provider, "m", api_key="k", max_retries=0) as client:
            for turn in range(TURNS):
                result = await client.translate(messages, tools=TOOLS)
                assert result.reasoning_content, turn
                messages.append(result.assistant_message())
                for call in result.tool_calls:
                    city = json.loads(call.arguments)["city"]
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps({"sky": city})})
                if not result.tool_calls:
                    messages.append({"role": "user", "content": f"And now? ({turn})"})

    with ProviderStub(respond) as stub:
        asyncio.run(converse(stub.base_url))
    assert len(bodies) == TURNS
    for turn, body in enumerate(bodies):
        JUDGE[provider](body)
        assistants = [m for m in body["messages"] if m["role"] == "assistant"]
        assert len(assistants) == turn
        for k, sent in enumerate(assistants):
            handed_back(provider, ANSWERS[provider](k), sent)
        results = [m for m in body["messages"] if m["role"] == "tool"]
        assert len(results) == 2 * ((turn + 1) // 2)
        if provider == "cohere":  # each result answers its call by id, as a document
            calls = [c["id"] for m in assistants for c in m.get("tool_calls", [])]
            assert [r["tool_call_id"] for r in results] == calls
            assert all(r["content"][0]["document"]["id"] == r["tool_call_id"] for r in results)


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
