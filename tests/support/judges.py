"""Judges: the official SDKs' types decide whether a body or result is a valid wire shape."""

from __future__ import annotations

import base64
import copy
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anthropic.types
import openai.types.chat
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from deepdiff import DeepDiff
from google.genai import types as genai_types
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import BaseModel, TypeAdapter

from .variants import with_variants

REPO = Path(__file__).resolve().parents[1]


FIXTURES = REPO / "fixtures"


ANTHROPIC_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)


OPENAI_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)


def materialize(value: Any) -> Any:
    """Consume every lazy iterator the validator returned; plain dicts and lists out."""
    if isinstance(value, Mapping):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, Iterator)):
        return [materialize(v) for v in value]
    return value


ANTHROPIC_SDK_GAPS = frozenset({"temperature", "top_p"})


def judge(adapter: TypeAdapter[Any], body: Any, *, unknown_top_level: frozenset[str] = frozenset()) -> None:
    """Validate strictly, materialise, and require the SDK's value to equal the body exactly."""
    plain = json.loads(json.dumps(body))
    validated = materialize(adapter.validate_python(copy.deepcopy(plain), strict=True))
    for key in unknown_top_level & plain.keys():
        assert key not in validated, f"{key} is known to the SDK after all: remove it from the gaps"
        validated[key] = plain[key]
    diff = DeepDiff(plain, validated)
    assert not diff, f"the SDK type dropped or changed part of the body:\n{diff.pretty()}"


def blocks_of(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def check_anthropic_api_rules(body: dict[str, Any]) -> None:
    """What the Messages API enforces beyond its types."""
    system = body.get("system")
    if isinstance(system, list):
        assert all(b["text"] for b in system if b["type"] == "text"), "empty system text block"
    messages = body["messages"]
    assert messages, "at least one message"
    for k, msg in enumerate(messages):
        assert msg["role"] in ("user", "assistant"), f"messages[{k}]: role {msg['role']!r} in messages"
        blocks = blocks_of(msg["content"])
        assert blocks, f"messages[{k}]: empty content"
        for j, block in enumerate(blocks):
            if block["type"] == "text":
                assert block["text"], f"messages[{k}].content[{j}]: empty text block"
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if uses:
            assert msg["role"] == "assistant", f"messages[{k}]: tool_use outside an assistant turn"
            assert k + 1 < len(messages), f"messages[{k}]: tool_use never answered"
            reply = blocks_of(messages[k + 1]["content"])
            assert messages[k + 1]["role"] == "user", f"messages[{k + 1}]: tool_use must be answered by a user turn"
            lead = [b["tool_use_id"] for b in reply[: len(uses)] if b["type"] == "tool_result"]
            assert sorted(lead) == sorted(uses), (
                f"messages[{k + 1}]: must open with one tool_result per tool_use of messages[{k}] ({uses}), got {lead}"
            )
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results:
            assert k > 0 and msg["role"] == "user", f"messages[{k}]: tool_result outside a user turn"
            asked = {b["id"] for b in blocks_of(messages[k - 1]["content"]) if b["type"] == "tool_use"}
            assert all(b["type"] == "tool_result" for b in blocks[: len(results)]), f"messages[{k}]: tool_result first"
            assert {b["tool_use_id"] for b in results} <= asked, (
                f"messages[{k}]: tool_result answers no call of messages[{k - 1}]"
            )


def check_openai_api_rules(body: dict[str, Any]) -> None:
    """Every assistant tool call is answered by the tool messages right after it."""
    messages = body["messages"]
    for k, msg in enumerate(messages):
        ids = [c["id"] for c in msg.get("tool_calls") or []]
        if msg["role"] == "assistant" and ids:
            follow = []
            for m in messages[k + 1 :]:
                if m["role"] != "tool":
                    break
                follow.append(m["tool_call_id"])
            assert sorted(follow) == sorted(ids), f"messages[{k}]: tool calls {ids} answered by {follow}"
        for call in msg.get("tool_calls") or []:
            assert isinstance(call["function"]["arguments"], str)
            assert isinstance(json.loads(call["function"]["arguments"] or "{}"), dict)


CALL_EXTENSIONS = frozenset({"extra_content"})  # Google's OpenAI-compatible layer's convention


def without(value: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in keys}


def judge_extensions(message: dict[str, Any]) -> None:
    """The round-trip keys have their documented shapes."""
    for call in message.get("tool_calls") or []:
        if "extra_content" in call:
            assert isinstance(call["extra_content"]["google"]["thought_signature"], str)
    if "extra_content" in message:
        assert isinstance(message["extra_content"]["google"]["thought_signature"], str)
    if "reasoning_content" in message:
        assert isinstance(message["reasoning_content"], str) and message["reasoning_content"]
    for block in message.get("thinking_blocks") or []:
        anthropic.types.Message.model_validate(
            {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [block],
             "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        )  # fmt: skip


def judge_anthropic(body: dict[str, Any], *, api_rules: bool = True) -> None:
    judge(ANTHROPIC_REQUEST, body, unknown_top_level=ANTHROPIC_SDK_GAPS)
    if api_rules:
        check_anthropic_api_rules(body)
    else:
        assert all(m["role"] in ("user", "assistant") for m in body["messages"])


def judge_openai(body: dict[str, Any], *, api_rules: bool = True) -> None:
    """extra_content on a tool call is only ever sent back to the OpenAI-compatible layer that handed it out."""
    plain = dict(body)
    plain["messages"] = [
        {**m, "tool_calls": [without(c, CALL_EXTENSIONS) for c in m["tool_calls"]]} if m.get("tool_calls") else m
        for m in body["messages"]
    ]
    for message in body["messages"]:
        judge_extensions(message)
    judge(OPENAI_REQUEST, plain)
    if api_rules:
        check_openai_api_rules(body)


GEMINI_BODY: dict[str, Any] = {
    "contents": [genai_types.Content],
    "systemInstruction": genai_types.Content,
    "tools": [genai_types.Tool],
    "toolConfig": genai_types.ToolConfig,
    "generationConfig": genai_types.GenerationConfig,
}


GEMINI_DATA_KEYS = frozenset({"args", "response", "parametersJsonSchema", "responseJsonSchema"})


GEMINI_BYTES_KEYS = frozenset({"data", "thoughtSignature"})  # proto bytes: base64 text in JSON


CAMEL_CASE = re.compile(r"[a-z][A-Za-z0-9]*\Z")


def gemini_bytes(value: Any) -> Any:
    """base64 fields as the bytes they spell: pydantic writes URL-safe base64, the API also takes the standard one."""
    if isinstance(value, Mapping):
        return {
            k: base64.b64decode(v.translate(str.maketrans("-_", "+/")) + "=" * (-len(v) % 4), validate=True)
            if k in GEMINI_BYTES_KEYS and isinstance(v, str)
            else v
            if k in GEMINI_DATA_KEYS
            else gemini_bytes(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [gemini_bytes(v) for v in value]
    return value


def camel_case_problems(value: Any, path: str = "") -> list[str]:
    """Keys that are not REST camelCase, outside the caller's own data."""
    problems = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not CAMEL_CASE.match(key):
                problems.append(f"{path}.{key}".lstrip("."))
            if key not in GEMINI_DATA_KEYS:
                problems += camel_case_problems(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            problems += camel_case_problems(item, f"{path}[{i}]")
    return problems


def judge_genai(model: type[BaseModel], value: Any, where: str) -> None:
    """One REST value through a google-genai type: warnings are errors, and the SDK's dump must give it back."""
    plain = json.loads(json.dumps(value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown enum value (e.g. a tool-config mode) only warns
        parsed = model.model_validate_json(json.dumps(plain))
    back = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    diff = DeepDiff(gemini_bytes(plain), gemini_bytes(back), ignore_numeric_type_changes=True)
    assert not diff, f"{where}: the SDK type dropped or changed part of the body:\n{diff.pretty()}"


def check_gemini_api_rules(body: dict[str, Any]) -> None:
    """What generateContent refuses (400 INVALID_ARGUMENT) beyond its types."""
    system = body.get("systemInstruction")
    if system is not None:
        assert system["parts"], "systemInstruction: parts must not be empty"
        assert all(p.get("text") for p in system["parts"]), "systemInstruction: empty text part"
    contents = body["contents"]
    assert contents, "contents must not be empty"
    for k, turn in enumerate(contents):
        assert turn["role"] in ("user", "model"), f"contents[{k}]: role {turn['role']!r}"
        parts = turn["parts"]
        assert parts, f"contents[{k}]: contents.parts must not be empty"
        for j, part in enumerate(parts):
            # proto3 reads "" as unset: "required oneof field 'data' must have one initialized field"
            if "text" in part:
                assert part["text"], f"contents[{k}].parts[{j}]: empty text part"
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if calls:
            assert turn["role"] == "model", f"contents[{k}]: functionCall outside a model turn"
            assert k > 0 and contents[k - 1]["role"] == "user", (
                f"contents[{k}]: a function call turn must come right after a user turn or a function response turn"
            )
            assert k + 1 < len(contents), f"contents[{k}]: function calls never answered"
            reply = contents[k + 1]["parts"]
            got = [p["functionResponse"] for p in reply if "functionResponse" in p]
            assert len(got) == len(reply) == len(calls), (
                f"contents[{k + 1}]: the number of function response parts must equal the function call parts"
            )
            asked = sorted((c.get("id"), c["name"]) for c in calls)
            assert sorted((r.get("id"), r["name"]) for r in got) == asked, f"contents[{k + 1}]: answers {got}"
        if answers:
            assert turn["role"] == "user", f"contents[{k}]: functionResponse outside a user turn"
            assert k > 0 and any("functionCall" in p for p in contents[k - 1]["parts"]), (
                f"contents[{k}]: a function response turn must come immediately after a function call turn"
            )
        for answer in answers:
            assert isinstance(answer["response"], dict), f"contents[{k}]: a functionResponse.response is an object"
        for call in calls:
            assert isinstance(call["args"], dict), f"contents[{k}]: functionCall.args is an object"


def judge_gemini(body: dict[str, Any], *, api_rules: bool = True) -> None:
    unknown = sorted(set(body) - set(GEMINI_BODY))
    assert not unknown, f"keys generateContent does not take (model goes in the URL): {unknown}"
    snake = camel_case_problems(body)
    assert not snake, f"keys that are not REST camelCase: {snake}"
    for key, model in GEMINI_BODY.items():
        if key not in body:
            continue
        if isinstance(model, list):
            assert isinstance(body[key], list) and body[key], f"{key}: a non-empty list"
            for i, item in enumerate(body[key]):
                judge_genai(model[0], item, f"{key}[{i}]")
        else:
            judge_genai(model, body[key], key)
    if api_rules:
        check_gemini_api_rules(body)
    else:
        assert all(c["role"] in ("user", "model") for c in body["contents"])


VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
OPENROUTER_EFFORTS = (None, "none", "minimal", "low", "medium", "high", "xhigh")


def as_vertex_anthropic(parent: Callable[..., None]) -> Callable[..., None]:
    """Claude on Vertex: the model is in the URL, never in the body, and anthropic_version is in the body
    (https://docs.anthropic.com/en/api/claude-on-vertex-ai). The rest is Anthropic's body, judged by the
    anthropic SDK's params with the model put back, as its Vertex client takes it before moving it to the URL."""

    def judge_vertex(body: dict[str, Any], **options: Any) -> None:
        assert "model" not in body, "Vertex takes the model in the URL, not in the body"
        assert body.get("anthropic_version") == VERTEX_ANTHROPIC_VERSION, body.get("anthropic_version")
        parent({"model": "claude-in-the-url", **without(body, frozenset({"anthropic_version"}))}, **options)

    return judge_vertex


def as_openrouter(parent: Callable[..., None]) -> Callable[..., None]:
    """OpenRouter's body is OpenAI's plus its `reasoning` object, checked against its documented keys and efforts
    (https://openrouter.ai/docs/use-cases/reasoning-tokens); the rest by the openai SDK's types."""

    def judge_openrouter(body: dict[str, Any], **options: Any) -> None:
        reasoning = body.get("reasoning", {})
        assert isinstance(reasoning, dict) and set(reasoning) <= {"effort", "max_tokens", "exclude", "enabled"}
        assert reasoning.get("effort") in OPENROUTER_EFFORTS, reasoning
        parent(without(body, frozenset({"reasoning"})), **options)

    return judge_openrouter


JUDGES = {
    "anthropic": judge_anthropic,
    "gemini": judge_gemini,
    "openai": judge_openai,
    "vertex-anthropic": as_vertex_anthropic(judge_anthropic),
    "openrouter": as_openrouter(judge_openai),
}
JUDGES = with_variants(JUDGES)  # a variant without an entry takes its parent's


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


SEARCH = {
    "type": "function",
    "function": {
        "name": "search_docs",
        "description": "Full-text search.",
        "parameters": {
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "filters": {"type": "object", "properties": {"lang": {"type": "string"}}},
            },
        },
    },
}


CLOCK = {"type": "function", "function": {"name": "now"}}  # no description, no parameters


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


RICH_REQUESTS: dict[str, dict[str, Any]] = {
    "multimodal-parallel-calls": {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {
                "role": "developer",
                "content": [{"type": "text", "text": "Answer in French. "}, {"type": "text", "text": "Be brief."}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Où est-ce ? "},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/eiffel.jpg"}},
                    {"type": "text", "text": "Et quel temps y fait-il ?"},
                ],
            },
            {
                "role": "assistant",
                "content": "C'est Paris. Je vérifie la météo et les guides.",
                "tool_calls": [
                    call("call_w1", "get_weather", '{"city": "Paris", "unit": "celsius", "days": 2}'),
                    call(
                        "call_s1",
                        "search_docs",
                        {"q": "tour Eiffel 🗼", "filters": {"lang": "fr", "nested": [1, {"deep": None}]}},
                    ),
                ],
            },
            {"role": "tool", "tool_call_id": "call_w1", "content": "18°C, nuageux"},
            {
                "role": "tool",
                "tool_call_id": "call_s1",
                "content": [{"type": "text", "text": "3 résultats: "}, {"type": "text", "text": "…"}],
            },
            {"role": "user", "content": "Merci ! Et à Tokyo ?"},
        ],
        "tools": [WEATHER, SEARCH, CLOCK],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": False,
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["\n\nHuman:", "END"],
        "user": "user-1234",
        "max_tokens": 2048,
    },
    "tool-only-turn-and-empty-arguments": {
        "model": "claude-haiku-4-5",
        "messages": [
            {"role": "user", "content": "What time is it, and the weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("c_now", "now", ""), call("c_oslo", "get_weather", '{"city":"Oslo"}')],
            },
            {"role": "tool", "tool_call_id": "c_oslo", "content": "-3°C, snow"},
            {"role": "tool", "tool_call_id": "c_now", "content": "2025-01-05T10:00:00Z"},
        ],
        "tools": [WEATHER, CLOCK],
        "tool_choice": "required",
        "max_tokens": 0,
    },
    "two-rounds-and-stop-string": {
        "model": "claude-opus-4-1",
        "messages": [
            {"role": "system", "content": "Use tools when useful."},
            {"role": "user", "content": "Search for 'rust async', then summarise."},
            {"role": "assistant", "content": "", "tool_calls": [call("r1", "search_docs", {"q": "rust async"})]},
            {"role": "tool", "tool_call_id": "r1", "content": "tokio, async-std"},
            {
                "role": "assistant",
                "content": "Two runtimes found. Checking one more thing.",
                "tool_calls": [call("r2", "search_docs", '{"q": "tokio vs async-std", "filters": {}}')],
            },
            {"role": "tool", "tool_call_id": "r2", "content": "tokio is more popular"},
            {"role": "assistant", "content": "Tokio is the common choice."},
            {"role": "user", "content": "Thanks. No more tools please."},
        ],
        "tools": [SEARCH],
        "tool_choice": "none",
        "stop": "STOP",
    },
    "unicode-and-long-text": {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "developer", "content": "שלום — 你好 — こんにちは — 🧪"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "x" * 20000},
                    {"type": "text", "text": ' ← long, then \u2028 and "quotes" and \\ backslash'},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Noted: "}, {"type": "text", "text": "ünïcödé ✓"}],
                "tool_calls": [call("u1", "get_weather", {"city": "Zürich", "note": "é\u0000\n\t"})],
            },
            {"role": "tool", "tool_call_id": "u1", "content": "☀️ 25°C"},
        ],
        "tools": [WEATHER],
        "parallel_tool_calls": False,
        "max_completion_tokens": 512,
    },
    "golden-parity-request": json.loads((FIXTURES / "translation-parity.request.json").read_text())
    if (FIXTURES / "translation-parity.request.json").exists()
    else {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
}
RICH_REQUESTS = with_variants(RICH_REQUESTS)  # a variant without an entry takes its parent's


# ---------------------------------------------------------------- canned provider responses


def _anthropic_response(response: dict[str, Any]) -> None:
    anthropic.types.Message.model_validate(response)


def _openai_response(response: dict[str, Any]) -> None:
    openai.types.chat.ChatCompletion.model_validate(response, strict=True)


def _gemini_response(response: dict[str, Any]) -> None:
    """google-genai's pydantic models take the REST camelCase keys; an unknown enum value only warns, so
    warnings are errors; lax validation coerces, so the dump must give the response back."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = genai_types.GenerateContentResponse.model_validate_json(json.dumps(response))
    back = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    diff = DeepDiff(gemini_bytes(response), gemini_bytes(back), ignore_numeric_type_changes=True)
    assert not diff, f"the SDK type changed part of the response:\n{diff.pretty()}"


def _deepseek_response(response: dict[str, Any]) -> None:
    """DeepSeek's finish reasons are OpenAI's plus insufficient_system_resource (its capacity cut the answer off,
    https://api-docs.deepseek.com/api/create-chat-completion); the rest is judged by the openai SDK's types."""
    choices = [
        {**c, "finish_reason": "length"} if c.get("finish_reason") == "insufficient_system_resource" else c
        for c in response.get("choices", [])
    ]
    _openai_response({**response, "choices": choices})


SDK_VALIDATORS = {
    "anthropic": _anthropic_response,
    "gemini": _gemini_response,
    "openai": _openai_response,
    "deepseek": _deepseek_response,
}
SDK_VALIDATORS = with_variants(SDK_VALIDATORS)  # a variant without an entry takes its parent's
