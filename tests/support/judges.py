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
import botocore.model
import botocore.session
import botocore.validate
import openai.types.chat
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from deepdiff import DeepDiff
from google.genai import types as genai_types
from mistralai.client import models as mistral_models
from mistralai.client import types as mistral_types
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses import Response as OpenAIResponse
from openai.types.responses import ResponseStreamEvent
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import BaseModel, TypeAdapter

import toolnexus

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


RESPONSES_REQUEST = TypeAdapter(ResponseCreateParamsNonStreaming)


def check_responses_api_rules(body: dict[str, Any]) -> None:
    """Every function_call item is answered by a function_call_output before the next user message, an
    assistant message holds text (Responses refuses input_text parts there), and reasoning items are replayed
    with their encrypted content (store is false, so the server holds nothing to look them up by)."""
    pending: list[str] = []
    for k, item in enumerate(body["input"]):
        kind = item.get("type", "message")
        if kind == "function_call":
            pending.append(item["call_id"])
            assert isinstance(json.loads(item["arguments"] or "{}"), dict)
        elif kind == "function_call_output":
            assert item["call_id"] in pending, f"input[{k}]: answers no pending call ({pending})"
            pending.remove(item["call_id"])
        elif kind == "reasoning":
            assert body.get("store") is True or item.get("encrypted_content"), f"input[{k}]: no encrypted_content"
        elif item.get("role") == "user":
            assert not pending, f"input[{k}]: calls {pending} unanswered before a user message"
        if kind == "message" and item.get("role") == "assistant":
            assert isinstance(item["content"], str), f"input[{k}]: an assistant message is sent as its text"
    assert body.get("store") in (False, True)


def judge_responses(body: dict[str, Any], *, api_rules: bool = True) -> None:
    """The openai SDK's ResponseCreateParams, strictly, and the rules the types cannot say."""
    judge(RESPONSES_REQUEST, body)
    if api_rules:
        check_responses_api_rules(body)


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


# ---------------------------------------------------------------- Mistral: mistralai's pydantic models
# They ignore unknown keys (pydantic's default), so the judge walks the body against the validated model: a key
# that is neither a field's name nor its alias fails, and so does a value kept only as an "unrecognized" string
# or an unknown content chunk. Strict validation refuses coercions ("5" for 5).

MISTRAL_ID = re.compile(r"[a-zA-Z0-9]{9}")


CALLERS_DATA = frozenset({"parameters", "data", "json_schema", "arguments", "format"})


def unknown_keys(given: Any, parsed: Any, path: str = "") -> list[str]:
    """Where `given` holds what the validated `parsed` did not take: keys that are neither a field's name nor its
    alias, values kept only as an "unrecognized" string or an unknown union member (mistralai), at any depth. The
    caller's own data (JSON Schema, tool arguments, document data: CALLERS_DATA) is not walked."""
    if isinstance(parsed, mistral_types.UnrecognizedStr):
        return [f"{path}: {parsed!r} is not a value the SDK knows"]
    if isinstance(parsed, BaseModel):
        if type(parsed).__name__.startswith("Unknown"):
            return [f"{path}: an unknown {type(parsed).__name__}"]
        if not isinstance(given, Mapping):
            return [f"{path}: an object was expected"]
        fields = type(parsed).model_fields
        names = {name: name for name in fields} | {f.alias: name for name, f in fields.items() if f.alias}
        problems = []
        for key, value in given.items():
            where = f"{path}.{key}".lstrip(".")
            if key not in names:
                problems.append(f"{where}: a key the SDK does not know")
            elif key not in CALLERS_DATA:
                problems += unknown_keys(value, getattr(parsed, names[key]), where)
        return problems
    if isinstance(parsed, (list, tuple)) and isinstance(given, list):
        return [
            p for i, (g, v) in enumerate(zip(given, parsed, strict=True)) for p in unknown_keys(g, v, f"{path}[{i}]")
        ]
    return []  # a leaf, or the caller's own data


def judge_mistral_model(model: type[BaseModel], value: Any, where: str = "") -> None:
    plain = json.loads(json.dumps(value))
    parsed = model.model_validate(plain, strict=True)
    problems = unknown_keys(plain, parsed, where)
    assert not problems, "the SDK type does not take all of it:\n" + "\n".join(problems)


def check_mistral_api_rules(body: dict[str, Any]) -> None:
    """Tool-call ids are exactly 9 letters and digits, and each call is answered right after its turn."""
    check_openai_api_rules(body)
    messages = body["messages"]
    for k, msg in enumerate(messages):
        assert msg["role"] in ("system", "user", "assistant", "tool"), f"messages[{k}]: role {msg['role']!r}"
        for j, call in enumerate(msg.get("tool_calls") or []):
            assert MISTRAL_ID.fullmatch(call["id"]), f"messages[{k}].tool_calls[{j}].id: not 9 letters and digits"
        if msg["role"] == "tool":
            assert MISTRAL_ID.fullmatch(msg["tool_call_id"]), f"messages[{k}].tool_call_id: not 9 letters and digits"


def judge_mistral(body: dict[str, Any], *, api_rules: bool = True) -> None:
    judge_mistral_model(mistral_models.ChatCompletionRequest, body)
    if api_rules:
        check_mistral_api_rules(body)


def judge_mistral_stream(body: dict[str, Any]) -> None:
    """A streamed call's body: the streaming request model (its `stream` defaults to true, so it must be said)."""
    judge_mistral_model(mistral_models.ChatCompletionStreamRequest, body)
    assert body.get("stream") is True, "a streamed call sends stream: true"
    check_mistral_api_rules(body)


def judge_mistral_chunk(event: dict[str, Any]) -> None:
    """One streamed event's data, as the SDK reads a chunk."""
    judge_mistral_model(mistral_models.CompletionChunk, event)


# botocore (Bedrock): the bedrock-runtime service model is the authority. ParamValidator reports unknown keys,
# missing members, wrong types and a union with more than one member set, but neither enum values nor blobs
# (it takes any str): `boto_params` checks each enum against the model and turns each blob's base64 text
# (what the JSON wire carries) into bytes, refusing text that is not base64.
BEDROCK = botocore.session.get_session().get_service_model("bedrock-runtime")
CONVERSE = BEDROCK.operation_model("Converse")


def boto_params(value: Any, shape: botocore.model.Shape, path: str, problems: list[str]) -> Any:
    """The value as boto3 takes it (blobs as bytes), with every enum value the model does not list reported."""
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict) and not shape.metadata.get("document"):
        members = shape.members
        return {k: boto_params(v, members[k], f"{path}.{k}", problems) if k in members else v for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [boto_params(v, shape.member, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        return {k: boto_params(v, shape.value, f"{path}.{k}", problems) for k, v in value.items()}
    if kind == "blob" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            problems.append(f"{path}: blob is not base64 text")
            return value
    enum = getattr(shape, "enum", None)
    if kind == "string" and enum and value not in enum:
        problems.append(f"{path}: {value!r} is not one of {enum}")
    return value


def boto_problems(value: dict[str, Any], shape: botocore.model.Shape) -> str:
    """What the service model says is wrong with a JSON body or response ('' when nothing)."""
    problems: list[str] = []
    params = boto_params(copy.deepcopy(value), shape, "", problems)
    report = botocore.validate.ParamValidator().validate(params, shape)
    return "\n".join(problems + ([report.generate_report()] if report.has_errors() else []))


def check_bedrock_api_rules(body: dict[str, Any]) -> None:
    """What the model cannot say and Converse enforces: a conversation starts with a user turn, user and
    assistant alternate, text is never empty, and every toolUse is answered by a toolResult in the next turn."""
    messages = body["messages"]
    assert messages and messages[0]["role"] == "user", "the conversation starts with a user turn"
    for k, message in enumerate(messages):
        assert message["role"] in ("user", "assistant"), f"messages[{k}]: role user or assistant"
        if k:
            assert message["role"] != messages[k - 1]["role"], f"messages[{k}]: roles must alternate"
        assert message["content"], f"messages[{k}]: content is not empty"
        for block in message["content"]:
            assert block.get("text", "x") != "", f"messages[{k}]: a text block is not empty"
        calls = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        if calls:
            following = messages[k + 1]["content"] if k + 1 < len(messages) else []
            answered = [b["toolResult"]["toolUseId"] for b in following if "toolResult" in b]
            assert sorted(answered) == sorted(calls), f"messages[{k}]: each toolUse answered in the next turn"
    for block in body.get("system", []):
        assert block.get("text", "x") != "", "a system text block is not empty"


def judge_bedrock(body: dict[str, Any], *, api_rules: bool = True) -> None:
    """The body is the Converse operation's input without modelId (it goes in the URL)."""
    assert "modelId" not in body, "modelId goes in the URL"
    problems = boto_problems({"modelId": "anthropic.claude-sonnet-4-5-20250929-v1:0", **body}, CONVERSE.input_shape)
    assert not problems, f"not a valid Converse request:\n{problems}"
    if api_rules:
        check_bedrock_api_rules(body)


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


REASONING_DETAIL_TYPES = frozenset({"reasoning.summary", "reasoning.encrypted", "reasoning.text"})


def with_round_trip(parent: Callable[..., None], keys: frozenset[str]) -> Callable[..., None]:
    """A provider that takes its own reasoning back on an assistant message (DeepSeek's and xAI's
    reasoning_content, https://api-docs.deepseek.com/guides/thinking_mode; OpenRouter's reasoning_details,
    https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks): those keys are checked
    for their documented shapes, the rest of the body by the parent's types."""

    def judge_round_trip(body: dict[str, Any], **options: Any) -> None:
        for message in body["messages"]:
            for detail in message.get("reasoning_details", []) if "reasoning_details" in keys else []:
                assert detail["type"] in REASONING_DETAIL_TYPES, detail
        plain = [without(m, keys) if m["role"] == "assistant" else m for m in body["messages"]]
        for original, kept in zip(body["messages"], plain, strict=True):
            judge_extensions({k: v for k, v in original.items() if k not in kept or k == "role"})
        parent({**body, "messages": plain}, **options)

    return judge_round_trip


JUDGES = {
    "anthropic": judge_anthropic,
    "bedrock": judge_bedrock,
    "gemini": judge_gemini,
    "mistral": judge_mistral,
    "openai": judge_openai,
    "openai-responses": judge_responses,
    "vertex-anthropic": as_vertex_anthropic(judge_anthropic),
    "openrouter": as_openrouter(with_round_trip(judge_openai, frozenset({"reasoning_content", "reasoning_details"}))),
    "deepseek": with_round_trip(judge_openai, frozenset({"reasoning_content"})),
    "xai": with_round_trip(judge_openai, frozenset({"reasoning_content"})),
}


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


# Rich requests a provider refuses on purpose, with the path of the refusal (Converse takes no image URL and
# has no tool_choice none).
RICH_REFUSALS = {
    ("bedrock", "multimodal-parallel-calls"): "messages[2].content[2]",
    ("bedrock", "two-rounds-and-stop-string"): "tool_choice",
}

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


def _responses_response(response: dict[str, Any]) -> None:
    OpenAIResponse.model_validate(response, strict=True)


def responses_stream_event(event: dict[str, Any]) -> None:
    """One Responses stream event, by the SDK's event union (strict)."""
    TypeAdapter(ResponseStreamEvent).validate_python(event, strict=True)


def _gemini_response(response: dict[str, Any]) -> None:
    """google-genai's pydantic models take the REST camelCase keys; an unknown enum value only warns, so
    warnings are errors; lax validation coerces, so the dump must give the response back."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = genai_types.GenerateContentResponse.model_validate_json(json.dumps(response))
    back = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    diff = DeepDiff(gemini_bytes(response), gemini_bytes(back), ignore_numeric_type_changes=True)
    assert not diff, f"the SDK type changed part of the response:\n{diff.pretty()}"


def _mistral_response(response: dict[str, Any]) -> None:
    judge_mistral_model(mistral_models.ChatCompletionResponse, response)


def _bedrock_response(response: dict[str, Any]) -> None:
    problems = boto_problems(response, CONVERSE.output_shape)
    assert not problems, f"not a valid Converse response:\n{problems}"


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
    "bedrock": _bedrock_response,
    "gemini": _gemini_response,
    "mistral": _mistral_response,
    "openai": _openai_response,
    "openai-responses": _responses_response,
    "deepseek": _deepseek_response,
}


# ---------------------------------------------------------------- cohere and ollama: models that ignore unknown keys

# Both SDKs' pydantic models take unknown keys without a word (cohere's allow and keep them, ollama's ignore them),
# and several of cohere's enums are `Literal[...] | Any`. So a body is validated strictly, then walked against the
# parsed model: every key must be a field (by name or alias) of the model that took it, and enum values are checked
# here. Values that are the caller's own data (JSON Schema, tool arguments, document data) are not walked.

CALLERS_DATA = frozenset({"parameters", "data", "json_schema", "arguments", "format"})


def judge_model(adapter: TypeAdapter[Any], value: Any, where: str) -> None:
    """Strict validation, then no key the model did not take."""
    plain = json.loads(json.dumps(value))
    parsed = adapter.validate_python(plain, strict=True)
    unknown = unknown_keys(plain, parsed, where)
    assert not unknown, f"keys the SDK type does not know: {unknown}"


def _cohere_adapters() -> dict[str, TypeAdapter[Any]]:
    from cohere.types import ChatMessageV2, ResponseFormatV2, Thinking, ToolV2

    return {
        "model": TypeAdapter(str),
        "messages": TypeAdapter(list[ChatMessageV2]),
        "tools": TypeAdapter(list[ToolV2]),
        "tool_choice": TypeAdapter(str),
        "response_format": TypeAdapter(ResponseFormatV2),
        "thinking": TypeAdapter(Thinking),
        "max_tokens": TypeAdapter(int),
        "stop_sequences": TypeAdapter(list[str]),
        "temperature": TypeAdapter(float),
        "seed": TypeAdapter(int),
        "frequency_penalty": TypeAdapter(float),
        "presence_penalty": TypeAdapter(float),
        "k": TypeAdapter(int),
        "p": TypeAdapter(float),
        "stream": TypeAdapter(bool),
    }


COHERE_BODY = _cohere_adapters()


def check_cohere_api_rules(body: dict[str, Any]) -> None:
    """What the v2 chat endpoint enforces beyond the SDK types (its enums are open there)."""
    assert body["messages"], "messages must not be empty"
    assert body.get("tool_choice", "REQUIRED") in ("REQUIRED", "NONE"), f"tool_choice {body['tool_choice']!r}"
    assert body.get("tool_choice") != "REQUIRED" or body.get("tools"), "tool_choice REQUIRED needs tools"
    assert body.get("thinking", {"type": "enabled"})["type"] in ("enabled", "disabled")
    assert len(body.get("stop_sequences", [])) <= 5, "at most 5 stop sequences"
    calls: dict[str, str] = {}
    for k, msg in enumerate(body["messages"]):
        for call in msg.get("tool_calls") or []:
            assert isinstance(json.loads(call["function"]["arguments"] or "{}"), dict)
            calls[call["id"]] = call["function"]["name"]
        if msg["role"] == "tool":
            assert msg["tool_call_id"] in calls, f"messages[{k}]: answers no earlier tool call"
        if msg["role"] == "assistant":
            assert msg.get("content") or msg.get("tool_calls"), f"messages[{k}]: an empty assistant message"


def judge_cohere(body: dict[str, Any], *, api_rules: bool = True) -> None:
    unknown = sorted(set(body) - set(COHERE_BODY))
    assert not unknown, f"keys the v2 chat endpoint does not take: {unknown}"
    for key, value in body.items():
        judge_model(COHERE_BODY[key], value, key)
    if api_rules:
        check_cohere_api_rules(body)


def _ollama_adapters() -> dict[str, TypeAdapter[Any]]:
    from ollama._types import Message, Options, Tool

    return {"message": TypeAdapter(Message), "options": TypeAdapter(Options), "tool": TypeAdapter(Tool)}


OLLAMA = _ollama_adapters()
OLLAMA_BODY = frozenset({"model", "messages", "tools", "format", "options", "stream", "think", "keep_alive"})


def judge_ollama(body: dict[str, Any], *, api_rules: bool = True) -> None:
    """ollama's ChatRequest takes any mapping as a message and any JSON Schema in `format`: each message is judged
    as a Message (images as base64 text, which the SDK reads from files or bytes), tools and options likewise."""
    unknown = sorted(set(body) - OLLAMA_BODY)
    assert not unknown, f"keys /api/chat does not take: {unknown}"
    assert isinstance(body["model"], str) and body["model"]
    assert isinstance(body.get("stream", False), bool)
    assert body.get("format", "json") == "json" or isinstance(body["format"], dict)
    assert body.get("think", True) in (True, False, "low", "medium", "high")
    for i, message in enumerate(body["messages"]):
        images = message.get("images", [])
        for image in images:
            base64.b64decode(image, validate=True)
        judge_model(OLLAMA["message"], without(message, frozenset({"images"})), f"messages[{i}]")
        assert isinstance(message.get("content", ""), str), f"messages[{i}].content: a string"
        for call in message.get("tool_calls") or []:
            assert isinstance(call["function"]["arguments"], dict)
    for i, tool in enumerate(body.get("tools") or []):
        judge_model(
            OLLAMA["tool"], {**tool, "function": without(tool["function"], frozenset({"parameters"}))}, f"tools[{i}]"
        )
    if "options" in body:
        judge_model(OLLAMA["options"], body["options"], "options")
    if api_rules:
        assert all(m["role"] in ("system", "user", "assistant", "tool") for m in body["messages"])


JUDGES.update({"cohere": judge_cohere, "ollama": judge_ollama})
JUDGES = with_variants(JUDGES)  # a variant without an entry takes its parent's


def _cohere_response(response: dict[str, Any]) -> None:
    from cohere.v2.types import V2ChatResponse

    judge_model(TypeAdapter(V2ChatResponse), response, "")
    reason = response["finish_reason"]
    assert reason in ("COMPLETE", "STOP_SEQUENCE", "MAX_TOKENS", "TOOL_CALL", "ERROR", "TIMEOUT"), (
        f"finish_reason {reason!r}"
    )


def _ollama_response(response: dict[str, Any]) -> None:
    from ollama._types import ChatResponse

    judge_model(TypeAdapter(ChatResponse), response, "")


SDK_VALIDATORS.update({"cohere": _cohere_response, "ollama": _ollama_response})
SDK_VALIDATORS = with_variants(SDK_VALIDATORS)  # a variant without an entry takes its parent's


def cohere_stream_event(event: dict[str, Any]) -> None:
    """One decoded stream event, by the SDK's stream event union."""
    from cohere.v2.types import V2ChatStreamResponse

    judge_model(TypeAdapter(V2ChatStreamResponse), event, event.get("type", ""))


def _url(part: dict[str, Any]) -> Any:
    image = part.get("image_url")
    return image.get("url", "") if isinstance(image, dict) else ""


def within_reach(provider: str, request: dict[str, Any]) -> dict[str, Any]:
    """The request less what the provider refuses on purpose (its own cases cover the refusals): values outside its
    documented ranges; Cohere has no named tool_choice, Ollama no tool_choice at all and no image URLs, Responses no
    stop sequences or penalties."""
    request = copy.deepcopy(request)
    for name, bounds in toolnexus.load_rules().get(provider).source.data["request"].get("ranges", {}).items():
        value = request.get(name)
        if isinstance(value, (int, float)) and not bounds.get("minimum", value) <= value <= bounds.get(
            "maximum", value
        ):
            del request[name]  # outside what the provider documents: refused on purpose
    choice = request.get("tool_choice")
    if (provider == "cohere" and isinstance(choice, dict)) or (provider == "ollama" and choice not in (None, "auto")):
        del request["tool_choice"]
    if provider == "openai-responses":  # no stop sequences, no penalties: refused (stop-list, penalties)
        for name in ("stop", "frequency_penalty", "presence_penalty", "logit_bias", "seed"):
            request.pop(name, None)
    if provider == "ollama" and isinstance(request.get("messages"), list):
        for message in request["messages"]:
            parts = message.get("content") if isinstance(message, dict) else None
            if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
                continue
            kept = [p for p in parts if not str(_url(p)).startswith("http")]
            message["content"] = kept or "(an image URL was here)"
    return request
