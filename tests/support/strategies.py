"""Hypothesis strategies for OpenAI requests and provider responses, and the shared example budget."""

from __future__ import annotations

import base64
import copy
import itertools
import json
import os
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from support.variants import with_variants

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "150"))


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),  # CI: a fixed seed, so a red run is reproducible as it stands
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


ROLES = ("system", "developer", "user", "assistant", "tool")


def json_equal(a: Any, b: Any) -> bool:
    """Equality that keeps JSON types apart (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def text_of(content: Any) -> str:
    """Text of an OpenAI or Anthropic content: a string, or its text parts/blocks joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text")


texts = st.one_of(
    st.text(max_size=30),
    st.just(""),
    st.sampled_from(
        ["Paris", "naïve café", "日本語のテキスト", "emoji 🧪🚀", "שלום", "a\nb\r\nc\t", "\u2028\u0000\\\"'"]
    ),
    # long strings
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(300, 1500)),
)


nonempty_texts = st.one_of(
    st.text(min_size=1, max_size=30),
    st.sampled_from(["Paris", "naïve café", "日本語のテキスト", "emoji 🧪🚀", "a\nb\r\nc\t"]),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(300, 1500)),
)


NAME_CHARS = string.ascii_letters + string.digits + "_-"


keys = st.one_of(st.text(max_size=10), st.sampled_from(["city", "unit", "q", "ключ", "キー", ""]))


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=8,
)


json_objects = st.dictionaries(keys, json_values, max_size=5)


tool_names = st.one_of(
    st.sampled_from(["get_weather", "search", "read_file", "send-email", "lookup_v2"]),
    st.text(alphabet=NAME_CHARS, min_size=1, max_size=24),
)


id_tails = st.text(alphabet=string.ascii_letters + string.digits, max_size=10)


def encode_object(draw: Callable[..., Any], obj: dict[str, Any]) -> str:
    """A JSON text of `obj`, in one of the spellings clients send."""
    form = draw(st.sampled_from(["compact", "spaced", "ascii", "indent", "padded"]))
    if form == "compact":
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    if form == "spaced":
        return json.dumps(obj, ensure_ascii=False)
    if form == "ascii":
        return json.dumps(obj)
    if form == "indent":
        return json.dumps(obj, indent=2, ensure_ascii=False)
    return " \n" + json.dumps(obj, ensure_ascii=False) + "\n "


@st.composite
def arguments(draw: Callable[..., Any]) -> Any:
    """Tool-call arguments: a JSON text, an object (a lenient client), or "" (no parameters)."""
    form = draw(st.sampled_from(["string", "string", "object", "empty"]))
    if form == "empty":
        return ""
    obj = draw(json_objects)
    return obj if form == "object" else encode_object(draw, obj)


property_schemas = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "description": "City name, e.g. Paris"},
        {"type": "string", "enum": ["celsius", "fahrenheit"]},
        {"type": "integer", "minimum": 0},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
    ]
)


@st.composite
def tool_declarations(draw: Callable[..., Any], name: str) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        function["description"] = draw(texts)
    if draw(st.integers(0, 4)):
        props = draw(
            st.dictionaries(
                st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12), property_schemas, max_size=4
            )
        )
        parameters: dict[str, Any] = {"type": "object", "properties": props}
        if props and draw(st.booleans()):
            parameters["required"] = sorted(draw(st.sets(st.sampled_from(sorted(props)), min_size=1)))
        if draw(st.booleans()):
            parameters["additionalProperties"] = False
        function["parameters"] = parameters
    if draw(st.integers(0, 4)) == 0:
        function["strict"] = draw(st.booleans())
    return {"type": "function", "function": function}


def data_urls() -> st.SearchStrategy[str]:
    import base64

    return st.builds(
        lambda media, raw: f"data:{media};base64,{base64.b64encode(raw).decode()}",
        st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]),
        st.binary(min_size=1, max_size=48),
    )


https_urls = st.builds(
    lambda host, path: f"https://{host}/{path}",
    st.sampled_from(["example.com", "images.example.org", "cdn.test"]),
    st.builds(
        lambda path, ext: f"{path}.{ext}",
        st.text(alphabet=string.ascii_lowercase + string.digits + "_/-", max_size=20),
        st.sampled_from(["png", "jpg", "gif", "webp"]),
    ),
)


@st.composite
def image_parts(draw: Callable[..., Any]) -> dict[str, Any]:
    image: dict[str, Any] = {"url": draw(st.one_of(data_urls(), https_urls))}
    if draw(st.integers(0, 3)) == 0:
        image["detail"] = draw(st.sampled_from(["auto", "low", "high"]))
    return {"type": "image_url", "image_url": image}


@st.composite
def text_contents(draw: Callable[..., Any], *, nonempty: bool) -> Any:
    """A string, or a list of text parts (system, developer, tool)."""
    t = nonempty_texts if nonempty else texts
    if draw(st.booleans()):
        return draw(t)
    return [{"type": "text", "text": s} for s in draw(st.lists(t, min_size=1, max_size=3))]


@st.composite
def user_contents(draw: Callable[..., Any], *, nonempty: bool) -> Any:
    t = nonempty_texts if nonempty else texts
    form = draw(st.sampled_from(["string", "text_parts", "mixed"]))
    if form == "string":
        return draw(t)
    text_part = t.map(lambda s: {"type": "text", "text": s})
    if form == "text_parts":
        return draw(st.lists(text_part, min_size=1, max_size=3))
    parts = draw(st.lists(st.one_of(text_part, image_parts()), min_size=1, max_size=4))
    if not any(p["type"] == "image_url" for p in parts):
        parts.insert(draw(st.integers(0, len(parts))), draw(image_parts()))
    return parts


@st.composite
def requests(draw: Callable[..., Any], *, api_valid: bool = False, names: bool = False) -> dict[str, Any]:
    """A valid OpenAI Chat Completions request with a realistic transcript.

    api_valid: also what the providers' APIs demand beyond OpenAI's shape (every tool
    call answered, no empty text, the first turn a user turn), for the SDK judges.
    names: give some system/developer/user messages a `name`.
    """
    declared = draw(st.lists(tool_names, max_size=3, unique=True))
    tools = [draw(tool_declarations(name)) for name in declared]
    call_names = declared or draw(st.lists(tool_names, min_size=1, max_size=3, unique=True))
    counter = itertools.count()
    messages: list[dict[str, Any]] = []
    if api_valid:
        messages.append({"role": "user", "content": draw(user_contents(nonempty=True))})
    for _ in range(draw(st.integers(0 if api_valid else 1, 6))):
        role = draw(st.sampled_from(["assistant", "user", "assistant", "user", "system", "developer"]))
        if role in ("system", "developer"):
            msg: dict[str, Any] = {"role": role, "content": draw(text_contents(nonempty=api_valid))}
            if api_valid and not text_of(msg["content"]):
                continue
        elif role == "user":
            msg = {"role": "user", "content": draw(user_contents(nonempty=api_valid))}
        else:
            msg = {"role": "assistant"}
            form = draw(st.sampled_from(["text", "null", "absent", "empty", "parts"]))
            if form == "text":
                msg["content"] = draw(nonempty_texts if api_valid else texts)
            elif form == "null":
                msg["content"] = None
            elif form == "empty":
                msg["content"] = ""
            elif form == "parts":
                msg["content"] = [
                    {"type": "text", "text": s}
                    for s in draw(st.lists(nonempty_texts if api_valid else texts, min_size=1, max_size=3))
                ]
            calls = []
            for _ in range(draw(st.sampled_from([1, 0, 2, 1, 3]))):
                call_id = f"{draw(st.sampled_from(['call_', 'toolu_', 'c', '']))}{draw(id_tails)}_{next(counter)}"
                function = {"name": draw(st.sampled_from(call_names)), "arguments": draw(arguments())}
                calls.append({"id": call_id, "type": "function", "function": function})
            if calls:
                msg["tool_calls"] = calls
            elif form == "absent":
                msg["content"] = draw(texts)
            if api_valid and not text_of(msg.get("content")) and not calls:
                continue
        if names and role != "assistant" and draw(st.integers(0, 2)) == 0:
            msg["name"] = draw(st.text(alphabet=NAME_CHARS, min_size=1, max_size=16))
        messages.append(msg)
        if msg.get("tool_calls"):
            ids = [c["id"] for c in msg["tool_calls"]]
            answered = draw(st.permutations(ids))
            if not api_valid:
                answered = answered[: len(ids) - draw(st.integers(0, len(ids)))]  # mostly all
            for call_id in answered:
                content = draw(text_contents(nonempty=api_valid))
                messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
    request: dict[str, Any] = {
        "model": draw(st.sampled_from(["gpt-4o", "claude-sonnet-4-5", "m"])),
        "messages": messages,
    }
    if tools:
        request["tools"] = tools
        choices = st.sampled_from(["absent", "auto", "none", "required", "named"])
    else:
        choices = st.sampled_from(["absent", "auto", "none"])
    choice = draw(choices)
    if choice == "named":
        request["tool_choice"] = {"type": "function", "function": {"name": draw(st.sampled_from(declared))}}
    elif choice != "absent":
        request["tool_choice"] = choice
    if tools and draw(st.booleans()):
        request["parallel_tool_calls"] = draw(st.booleans())
    if draw(st.booleans()):
        request["max_tokens"] = draw(st.one_of(st.just(0), st.none(), st.integers(1, 64000)))
    if draw(st.integers(0, 3)) == 0:
        request["temperature"] = draw(st.floats(0, 1))
    if draw(st.integers(0, 3)) == 0:
        request["top_p"] = draw(st.floats(0, 1))
    if draw(st.integers(0, 3)) == 0:
        request["stop"] = draw(st.one_of(nonempty_texts, st.lists(nonempty_texts, min_size=1, max_size=4)))
    if draw(st.integers(0, 3)) == 0:
        request["user"] = draw(st.text(alphabet=NAME_CHARS, min_size=1, max_size=20))
    return request


RULES = Path(__file__).resolve().parents[2] / "rules"


def finish_table(provider: str) -> dict[str, str]:
    """A provider's finish-reason table as its rule file writes it: tests derive from it, never copy it."""
    data = yaml.safe_load((RULES / f"{provider}.yaml").read_text(encoding="utf-8"))
    return dict(data["response"]["finish_reason"]["table"])


ANTHROPIC_FINISH = finish_table("anthropic")
ANTHROPIC_STOPS = sorted(ANTHROPIC_FINISH)


@st.composite
def anthropic_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    counter = itertools.count()
    text_block = texts.map(lambda t: {"type": "text", "text": t})
    thinking_block = texts.map(lambda t: {"type": "thinking", "thinking": t, "signature": "c2ln"})

    @st.composite
    def tool_use(draw: Callable[..., Any]) -> dict[str, Any]:
        return {
            "type": "tool_use",
            "id": f"toolu_{draw(id_tails)}_{next(counter)}",
            "name": draw(tool_names),
            "input": draw(json_objects),
        }

    content = draw(st.lists(st.one_of(text_block, tool_use(), thinking_block), max_size=6))
    has_tools = any(b["type"] == "tool_use" for b in content)
    stops = ANTHROPIC_STOPS if has_tools else [s for s in ANTHROPIC_STOPS if s != "tool_use"]
    usage = {"input_tokens": draw(st.integers(0, 10**6)), "output_tokens": draw(st.integers(0, 10**5))}
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if draw(st.booleans()):
            usage[key] = draw(st.integers(0, 10**6))
    return {
        "id": f"msg_{draw(id_tails)}",
        "type": "message",
        "role": "assistant",
        "model": draw(st.sampled_from(["claude-sonnet-4-5-20250929", "claude-opus-4-1"])),
        "content": content,
        "stop_reason": draw(st.sampled_from(stops)),
        "stop_sequence": None,
        "usage": usage,
    }


GEMINI_FINISH = finish_table("gemini")


@st.composite
def gemini_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    counter = itertools.count()
    text_part = texts.map(lambda t: {"text": t})
    thought_part = texts.map(lambda t: {"text": t, "thought": True})

    @st.composite
    def function_call(draw: Callable[..., Any]) -> dict[str, Any]:
        call: dict[str, Any] = {"name": draw(tool_names), "args": draw(json_objects)}
        if draw(st.booleans()):  # generateContent usually sends no id
            call["id"] = f"fc_{draw(id_tails)}_{next(counter)}"
        part: dict[str, Any] = {"functionCall": call}
        if draw(st.integers(0, 3)) == 0:
            part["thoughtSignature"] = base64.b64encode(draw(st.binary(min_size=1, max_size=24))).decode()
        return part

    parts = draw(st.lists(st.one_of(text_part, function_call(), thought_part), max_size=6))
    candidate: dict[str, Any] = {
        "content": {"role": "model"},
        "finishReason": draw(st.sampled_from(sorted(GEMINI_FINISH))),
    }
    if parts:
        candidate["content"]["parts"] = parts
    candidate["index"] = 0
    # Gemini leaves zero counts out; a zero candidatesTokenCount is the case table's concern
    # (response-usage-no-candidate-tokens), so here every answer has output tokens.
    usage: dict[str, Any] = {"promptTokenCount": draw(st.integers(1, 10**6))}
    if draw(st.booleans()):
        usage["cachedContentTokenCount"] = draw(st.integers(1, usage["promptTokenCount"]))
    usage["candidatesTokenCount"] = draw(st.integers(1, 10**5))
    if any(p.get("thought") for p in parts) or draw(st.booleans()):
        usage["thoughtsTokenCount"] = draw(st.integers(1, 10**5))
    usage["totalTokenCount"] = (
        usage["promptTokenCount"] + usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0)
    )
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": draw(st.sampled_from(["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.0-flash"])),
        "responseId": f"resp-{draw(id_tails)}",
    }


@st.composite
def openai_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    counter = itertools.count()
    calls = [
        {
            "id": f"call_{draw(id_tails)}_{next(counter)}",
            "type": "function",
            "function": {"name": draw(tool_names), "arguments": encode_object(draw, draw(json_objects))},
        }
        for _ in range(draw(st.integers(0, 4)))
    ]
    message: dict[str, Any] = {"role": "assistant", "content": draw(st.none() | texts), "refusal": None}
    if calls:
        message["tool_calls"] = calls
        finish = draw(st.sampled_from(["tool_calls", "tool_calls", "stop", "length"]))
    else:
        finish = draw(st.sampled_from(["stop", "length", "content_filter"]))
    prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
    return {
        "id": f"chatcmpl-{draw(id_tails)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


@st.composite
def responses_answers(draw: Callable[..., Any]) -> dict[str, Any]:
    """An OpenAI Responses `Response`: optional reasoning (summary parts, encrypted content), an optional message
    with one output_text part, then function calls (arguments as JSON text); completed, or incomplete for
    max_output_tokens; usage with its input and output token details."""
    counter = itertools.count()
    output: list[dict[str, Any]] = []
    if draw(st.booleans()):
        summary = [{"type": "summary_text", "text": t} for t in draw(st.lists(texts.filter(bool), max_size=2))]
        output.append({"id": f"rs_{draw(id_tails)}", "type": "reasoning", "summary": summary,
                       "encrypted_content": f"gAAA{draw(id_tails)}"})  # fmt: skip
    text = draw(st.none() | texts)
    if text is not None:
        part = {"type": "output_text", "text": text, "annotations": []}
        output.append({"id": f"msg_{draw(id_tails)}", "type": "message", "role": "assistant",
                       "status": "completed", "content": [part]})  # fmt: skip
    for _ in range(draw(st.integers(0, 3))):
        n = next(counter)
        output.append({"id": f"fc_{n}", "type": "function_call", "call_id": f"call_{draw(id_tails)}_{n}",
                       "name": draw(tool_names), "arguments": encode_object(draw, draw(json_objects)),
                       "status": "completed"})  # fmt: skip
    cut = draw(st.booleans())
    prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
    cached, reasoning = draw(st.integers(0, prompt)), draw(st.integers(0, completion))
    return {
        "id": f"resp_{draw(id_tails)}", "object": "response", "created_at": 1_700_000_000,
        "status": "incomplete" if cut else "completed", "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None, "instructions": None,
        "metadata": {}, "model": "gpt-5-2025-08-07", "output": output, "parallel_tool_calls": True,
        "temperature": 1.0, "tool_choice": "auto", "tools": [], "top_p": 1.0,
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                  "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": reasoning},
                  "total_tokens": prompt + completion},
    }  # fmt: skip


mistral_ids = st.text(alphabet=string.ascii_letters + string.digits, min_size=9, max_size=9)


@st.composite
def mistral_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    """A Mistral chat completion: 9-character call ids, arguments as JSON text or an object, no cache or
    reasoning counts, finish reasons from its documented list."""
    ids = draw(st.lists(mistral_ids, max_size=4, unique=True))
    calls = []
    for index, call_id in enumerate(ids):
        arguments = draw(json_objects)
        given = arguments if draw(st.booleans()) else encode_object(draw, arguments)
        function = {"name": draw(tool_names), "arguments": given}
        calls.append({"id": call_id, "type": "function", "function": function, "index": index})
    message: dict[str, Any] = {"role": "assistant", "content": draw(texts)}
    if calls:
        message["tool_calls"] = calls
        finish = draw(st.sampled_from(["tool_calls", "tool_calls", "stop", "length"]))
    else:
        finish = draw(st.sampled_from(["stop", "length", "model_length", "error"]))
    prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
    return {
        "id": f"cmpl-{draw(id_tails)}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "mistral-large-2411",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


BEDROCK_FINISH = finish_table("bedrock")
COHERE_FINISH = finish_table("cohere")
OLLAMA_FINISH = finish_table("ollama")


@st.composite
def cohere_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    """v2 chat answers: an optional tool plan, thinking and text blocks, tool calls with JSON-text arguments."""
    counter = itertools.count()
    blocks = draw(
        st.lists(
            st.one_of(
                texts.map(lambda t: {"type": "text", "text": t}),
                texts.map(lambda t: {"type": "thinking", "thinking": t}),
            ),
            max_size=4,
        )
    )
    calls = [
        {
            "id": f"{draw(tool_names)}_{draw(id_tails)}{next(counter)}",
            "type": "function",
            "function": {"name": draw(tool_names), "arguments": encode_object(draw, draw(json_objects))},
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    message: dict[str, Any] = {"role": "assistant"}
    if calls and draw(st.booleans()):
        message["tool_plan"] = draw(texts.filter(bool))
    message["content"] = blocks
    if calls:
        message["tool_calls"] = calls
    stops = sorted(COHERE_FINISH) if calls else [s for s in sorted(COHERE_FINISH) if s != "TOOL_CALL"]
    tokens = {"input_tokens": draw(st.integers(0, 10**6)), "output_tokens": draw(st.integers(0, 10**5))}
    usage: dict[str, Any] = {"billed_units": dict(tokens), "tokens": tokens}
    if draw(st.booleans()):
        usage["cached_tokens"] = draw(st.integers(0, tokens["input_tokens"]))
    return {
        "id": f"{draw(id_tails)}-{draw(id_tails)}",
        "finish_reason": draw(st.sampled_from(stops)),
        "message": message,
        "usage": usage,
    }


@st.composite
def bedrock_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    """Converse answers: text, toolUse (object input) and reasoning blocks (signed text, or redacted)."""
    counter = itertools.count()
    text_block = texts.map(lambda t: {"text": t})
    reasoning_block = st.one_of(
        texts.filter(bool).map(lambda t: {"reasoningContent": {"reasoningText": {"text": t, "signature": "c2ln"}}}),
        st.just({"reasoningContent": {"redactedContent": "b3BhcXVl"}}),
    )

    @st.composite
    def tool_use(draw: Callable[..., Any]) -> dict[str, Any]:
        use = {"toolUseId": f"tooluse_{draw(id_tails)}{next(counter)}", "name": draw(tool_names)}
        return {"toolUse": {**use, "input": draw(json_objects)}}

    content = draw(st.lists(st.one_of(text_block, tool_use(), reasoning_block), max_size=6))
    has_tools = any("toolUse" in b for b in content)
    stops = sorted(BEDROCK_FINISH) if has_tools else [s for s in sorted(BEDROCK_FINISH) if s != "tool_use"]
    inputs, outputs = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**5))
    usage: dict[str, Any] = {"inputTokens": inputs, "outputTokens": outputs, "totalTokens": inputs + outputs}
    if draw(st.booleans()):
        usage["cacheReadInputTokens"] = draw(st.integers(0, 10**6))
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": draw(st.sampled_from(stops)),
        "usage": usage,
        "metrics": {"latencyMs": draw(st.integers(0, 10**5))},
    }


@st.composite
def ollama_responses(draw: Callable[..., Any]) -> dict[str, Any]:
    """/api/chat answers: content, optional thinking, tool calls with object arguments and no id."""
    message: dict[str, Any] = {"role": "assistant", "content": draw(texts)}
    if draw(st.booleans()):
        message["thinking"] = draw(texts.filter(bool))
    calls = [
        {"function": {"name": draw(tool_names), "arguments": draw(json_objects)}}
        for _ in range(draw(st.integers(0, 3)))
    ]
    if calls:
        message["tool_calls"] = calls
    return {
        "model": draw(st.sampled_from(["llama3.2", "qwen3:8b", "gpt-oss:20b"])),
        "created_at": "2025-06-03T14:20:31.123456Z",
        "message": message,
        "done": True,
        "done_reason": draw(st.sampled_from(sorted(OLLAMA_FINISH))),
        "total_duration": draw(st.integers(0, 10**10)),
        "load_duration": draw(st.integers(0, 10**9)),
        "prompt_eval_count": draw(st.integers(0, 10**6)),
        "prompt_eval_duration": draw(st.integers(0, 10**9)),
        "eval_count": draw(st.integers(0, 10**5)),
        "eval_duration": draw(st.integers(0, 10**9)),
    }


not_objects = st.one_of(
    st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2), st.booleans(), st.none()
)


not_object_json = st.sampled_from(["[]", "[1, 2]", "3", "-1.5", '"s"', "null", "true", "false", '["{}"]'])


@st.composite
def broken_requests(draw: Callable[..., Any]) -> tuple[dict[str, Any], str, str]:
    """A valid request with one thing broken: (request, mutation, the culprit's path)."""
    request = draw(requests())
    msgs = request["messages"]
    calls = [(i, k) for i, m in enumerate(msgs) for k in range(len(m.get("tool_calls") or []))]
    users = [i for i, m in enumerate(msgs) if m["role"] == "user"]
    results = [i for i, m in enumerate(msgs) if m["role"] == "tool"]
    assistants = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
    options: list[str] = []
    if calls:
        options += [
            "args_bad_json",
            "args_not_object",
            "args_wrong_type",
            "call_without_id",
            "call_not_object",
            "call_without_name",
            "function_not_object",
        ]
    if len(calls) > 1:
        options.append("duplicate_call_id")
    if results:
        options += ["result_without_id", "result_answered_twice"]
    if users:
        options += ["orphan_after_user", "user_content_wrong_type", "user_part_not_object"]
    if assistants:
        options.append("tool_calls_not_list")
    if "tools" in request:
        options += ["tools_not_list", "tool_not_object", "tool_without_name", "choice_undeclared"]
    options += [
        "message_not_object",
        "unknown_role",
        "missing_role",
        "orphan_at_start",
        "choice_garbage",
        "messages_not_list",
    ]
    mutation = draw(st.sampled_from(options))

    def pick(seq: list[Any]) -> Any:
        return draw(st.sampled_from(seq))

    if mutation == "messages_not_list":
        request["messages"] = draw(
            st.one_of(
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                st.text(max_size=5),
                st.integers(),
                st.booleans(),
            )
        )
        return request, mutation, "messages"
    if mutation == "message_not_object":
        i = draw(st.integers(0, len(msgs) - 1))
        msgs[i] = draw(not_objects)
        return request, mutation, f"messages[{i}]"
    if mutation in ("unknown_role", "missing_role"):
        i = draw(st.integers(0, len(msgs) - 1))
        if mutation == "missing_role":
            del msgs[i]["role"]
        else:
            msgs[i]["role"] = draw(
                st.one_of(
                    st.text(max_size=10).filter(lambda r: r not in ROLES),
                    st.sampled_from(["function", "System", "model", "bot"]),
                    st.integers(),
                    st.none(),
                    st.lists(st.sampled_from(ROLES), max_size=1),  # unhashable
                    st.dictionaries(st.sampled_from(ROLES), st.text(max_size=3), max_size=1),
                )
            )
        return request, mutation, f"messages[{i}]"
    if mutation in ("orphan_at_start", "orphan_after_user"):
        j = 0 if mutation == "orphan_at_start" else pick(users) + 1
        known = [msgs[i]["tool_calls"][k]["id"] for i, k in calls if i < j]
        call_id = draw(
            st.sampled_from(known) if known and draw(st.booleans()) else id_tails.map(lambda t: f"orphan_{t}")
        )
        msgs.insert(j, {"role": "tool", "tool_call_id": call_id, "content": draw(texts)})
        return request, mutation, f"messages[{j}]"
    if mutation in ("result_without_id", "result_answered_twice"):
        j = pick(results)
        if mutation == "result_without_id":
            del msgs[j]["tool_call_id"]
        else:
            msgs.insert(j + 1, copy.deepcopy(msgs[j]))
            j += 1
        return request, mutation, f"messages[{j}]"
    if mutation in ("user_content_wrong_type", "user_part_not_object"):
        i = pick(users)
        if mutation == "user_content_wrong_type":
            msgs[i]["content"] = draw(
                st.one_of(
                    st.integers(),
                    st.booleans(),
                    st.none(),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                )
            )
            return request, mutation, f"messages[{i}].content"
        msgs[i]["content"] = [*(msgs[i]["content"] if isinstance(msgs[i]["content"], list) else []), draw(not_objects)]
        return request, mutation, f"messages[{i}].content[{len(msgs[i]['content']) - 1}]"
    if mutation == "tool_calls_not_list":
        i = pick(assistants)
        msgs[i]["tool_calls"] = draw(
            st.one_of(
                st.integers(),
                st.text(min_size=1, max_size=5),
                st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2),
            )
        )
        return request, mutation, f"messages[{i}].tool_calls"
    if mutation == "duplicate_call_id":
        (i0, k0), (i, k) = sorted(draw(st.permutations(calls))[:2])
        msgs[i]["tool_calls"][k]["id"] = msgs[i0]["tool_calls"][k0]["id"]
        return request, mutation, f"messages[{i}].tool_calls[{k}]"
    if calls and mutation in (
        "args_not_object",
        "args_bad_json",
        "args_wrong_type",
        "call_without_id",
        "call_not_object",
        "call_without_name",
        "function_not_object",
    ):
        i, k = pick(calls)
        call = msgs[i]["tool_calls"][k]
        at = f"messages[{i}].tool_calls[{k}]"
        if mutation == "call_not_object":
            msgs[i]["tool_calls"][k] = draw(not_objects)
            return request, mutation, at
        if mutation == "call_without_id":
            bad = draw(st.sampled_from(["absent", "empty", "int", "none"]))
            if bad == "absent":
                del call["id"]
            else:
                call["id"] = {"empty": "", "int": 7, "none": None}[bad]
            return request, mutation, at
        if mutation == "function_not_object":
            call["function"] = draw(not_objects)
            return request, mutation, f"{at}.function"
        if mutation == "call_without_name":
            bad = draw(st.sampled_from(["absent", "empty", "int"]))
            if bad == "absent":
                del call["function"]["name"]
            else:
                call["function"]["name"] = {"empty": "", "int": 3}[bad]
            return request, mutation, f"{at}.function.name"
        if mutation == "args_not_object":
            call["function"]["arguments"] = draw(not_object_json)
        elif mutation == "args_wrong_type":
            call["function"]["arguments"] = draw(
                st.one_of(
                    st.lists(st.integers(), max_size=2),
                    st.integers(),
                    st.floats(allow_nan=False),
                    st.booleans(),
                    st.none(),
                )
            )
        else:
            valid = json.dumps(draw(json_objects), ensure_ascii=False)
            call["function"]["arguments"] = draw(
                st.one_of(
                    st.integers(1, len(valid) - 1).map(
                        lambda n: valid[:n]
                    ),  # a proper prefix of an object never parses
                    st.sampled_from(["{'a': 1}", "{a: 1}", '{"a": 1,}', "{} {}", "nope", '{"a": NaN']),
                )
            )
        return request, mutation, f"{at}.function.arguments"
    if mutation == "tools_not_list":
        request["tools"] = draw(
            st.one_of(
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.text(max_size=5), st.integers()
            )
        )
        return request, mutation, "tools"
    if mutation == "tool_not_object":
        j = draw(st.integers(0, len(request["tools"]) - 1))
        request["tools"][j] = draw(not_objects)
        return request, mutation, f"tools[{j}]"
    if mutation == "tool_without_name":
        j = draw(st.integers(0, len(request["tools"]) - 1))
        del request["tools"][j]["function"]["name"]
        return request, mutation, f"tools[{j}]"
    if mutation == "choice_undeclared":
        request["tool_choice"] = {"type": "function", "function": {"name": "undeclared-" + draw(id_tails)}}
        return request, mutation, "tool_choice"
    assert mutation == "choice_garbage"
    request["tool_choice"] = draw(
        st.one_of(st.integers(), st.sampled_from(["any", "Auto", "requried", ""]), st.lists(st.integers(), max_size=1))
    )
    return request, mutation, "tool_choice"


# Each provider's answers (a variant without an entry takes its parent's generator).
GENERATORS: dict[str, Callable[[], st.SearchStrategy[dict[str, Any]]]] = with_variants(
    {
        "anthropic": anthropic_responses,
        "bedrock": bedrock_responses,
        "gemini": gemini_responses,
        "mistral": mistral_responses,
        "openai": openai_responses,
        "openai-responses": responses_answers,
        "cohere": cohere_responses,
        "ollama": ollama_responses,
    }
)
