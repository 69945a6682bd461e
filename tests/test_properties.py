"""Property tests over every provider: generated valid OpenAI transcripts in, invariants out.

Each provider is read back through a small *view* (`VIEWS`): the tool calls, tool
results, turn texts, images and system prompt a body carries (a tool result in the
form the provider carries it: `RESULT_FORMS`). The same view is
computed from the OpenAI input, so one property holds for every provider:

  (a) tool calls reach the body once each, in order, with their id, name and arguments
  (b) tool results reach the body once each, in order, attached to their call
  (c) every character of system/user/assistant text reaches the body, in order
  (d) the caller's input is never mutated
  (e) translating twice gives the same body and notes
  (f) responses: tool calls come back with arguments that decode to the provider's input
  (g) invalid inputs raise TranslationError at the culprit's path, never anything else

The default budget is small so the suite stays fast; set HYPOTHESIS_EXAMPLES
(e.g. 2000) for a deeper run. A provider with no view fails loudly: add one.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import mimetypes
import os
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic.types
import openai.types.chat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolnexus
from toolnexus import TranslationError, translate_request, translate_response

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "150"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),  # CI: a fixed seed, so a red run is reproducible as it stands
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
PROVIDERS = toolnexus.providers()
ROLES = ("system", "developer", "user", "assistant", "tool")

# ---------------------------------------------------------------- JSON helpers


def json_equal(a: Any, b: Any) -> bool:
    """Equality that keeps JSON types apart (True is not 1, 1 is not 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def parse_arguments(raw: Any) -> Any:
    """OpenAI arguments as the object they mean ("" is {}), or the object itself."""
    if isinstance(raw, str):
        return {} if raw.strip() == "" else json.loads(raw)
    return raw


def within(path: str, prefix: str) -> bool:
    """`path` is `prefix` or below it (messages[1] does not contain messages[10])."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def text_of(content: Any) -> str:
    """Text of an OpenAI or Anthropic content: a string, or its text parts/blocks joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text")


def split_data_url(url: str) -> dict[str, str]:
    header, _, data = url[len("data:") :].partition(",")
    return {"media_type": header.partition(";")[0], "data": data}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def gemini_response_of(text: str) -> dict[str, Any]:
    """The issue's functionResponse.response: a JSON-object text is that object, anything else {"result": text}."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"result": text}


# ---------------------------------------------------------------- strategies

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


# ---------------------------------------------------------------- views


@dataclass
class View:
    """What a body carries, in order: the things every provider must keep."""

    system: str | None = None
    turns: list[tuple[str, str]] = field(default_factory=list)  # (user|assistant, text), empty text left out
    calls: list[tuple[str, str, Any, Any]] = field(default_factory=list)  # id, name, arguments object, as sent
    results: list[tuple[str, str]] = field(default_factory=list)  # tool_call_id, text
    images: list[dict[str, str]] = field(default_factory=list)  # {url} or {media_type, data}


def expected_view(request: dict[str, Any], merged: frozenset[str] = frozenset()) -> View:
    """The view of the OpenAI input itself: hoisted system joined by a blank line.

    merged: roles whose consecutive messages the provider sends as ONE turn (their texts join).
    """
    view = View()
    hoisted = []
    turn_role, turn_text = None, None  # the body turn the last message went to, and its text's index in turns
    for msg in request["messages"]:
        role, content = msg["role"], msg.get("content")
        if role in ("system", "developer"):
            hoisted.append(text_of(content))
        elif role == "tool":
            view.results.append((msg["tool_call_id"], text_of(content)))
            turn_role, turn_text = role, None
        else:
            text = text_of(content)
            if role == "assistant" and not text and not msg.get("tool_calls"):
                continue  # an empty assistant turn is dropped
            joined = role in merged and turn_role == role
            if text and joined and turn_text is not None:
                view.turns[turn_text] = (role, view.turns[turn_text][1] + text)
            elif text:
                view.turns.append((role, text))
                turn_text = len(view.turns) - 1
            elif not joined:
                turn_text = None
            turn_role = role
            for part in content if isinstance(content, list) else []:
                if part["type"] == "image_url":
                    url = part["image_url"]["url"]
                    view.images.append(split_data_url(url) if url.startswith("data:") else {"url": url})
            for call in msg.get("tool_calls") or []:
                raw = call["function"]["arguments"]
                view.calls.append((call["id"], call["function"]["name"], parse_arguments(raw), raw))
    view.system = "\n\n".join(hoisted) if hoisted else None
    return view


def view_anthropic(body: dict[str, Any]) -> View:
    system = body.get("system")
    view = View(system=system if system is None or isinstance(system, str) else text_of(system))
    for msg in body["messages"]:
        assert msg["role"] in ("user", "assistant"), msg["role"]
        content = msg["content"]
        if text_of(content):
            view.turns.append((msg["role"], text_of(content)))
        for block in content if isinstance(content, list) else []:
            if block["type"] == "tool_use":
                view.calls.append((block["id"], block["name"], block["input"], block["input"]))
            elif block["type"] == "tool_result":
                view.results.append((block["tool_use_id"], text_of(block["content"])))
            elif block["type"] == "image":
                source = block["source"]
                view.images.append({k: v for k, v in source.items() if k != "type"})
    return view


def view_openai(body: dict[str, Any]) -> View:
    messages = body["messages"]
    system_at = [i for i, m in enumerate(messages) if m["role"] in ("system", "developer")]
    assert system_at in ([], [0]), f"one system message at the front, got them at {system_at}"
    view = View(system=messages[0]["content"] if system_at else None)
    for msg in messages[len(system_at) :]:
        content = msg.get("content")
        if msg["role"] == "tool":
            view.results.append((msg["tool_call_id"], text_of(content)))
            continue
        if text_of(content):
            view.turns.append((msg["role"], text_of(content)))
        for part in content if isinstance(content, list) else []:
            if part["type"] == "image_url":
                url = part["image_url"]["url"]
                view.images.append(split_data_url(url) if url.startswith("data:") else {"url": url})
        for call in msg.get("tool_calls") or []:
            raw = call["function"]["arguments"]
            assert isinstance(raw, str), "OpenAI arguments are a JSON string"
            view.calls.append((call["id"], call["function"]["name"], parse_arguments(raw), raw))
    return view


def view_gemini(body: dict[str, Any]) -> View:
    system = body.get("systemInstruction")
    view = View(system=None if system is None else "".join(p["text"] for p in system["parts"]))
    names: dict[str, str] = {}
    for turn in body["contents"]:
        assert turn["role"] in ("user", "model"), turn["role"]
        text = "".join(p["text"] for p in turn["parts"] if "text" in p)
        if text:
            view.turns.append(("assistant" if turn["role"] == "model" else "user", text))
        for part in turn["parts"]:
            if "functionCall" in part:
                call = part["functionCall"]
                names[call["id"]] = call["name"]
                view.calls.append((call["id"], call["name"], call["args"], call["args"]))
            elif "functionResponse" in part:
                answer = part["functionResponse"]
                assert answer["name"] == names.get(answer["id"]), (
                    "a functionResponse is named after the call it answers"
                )
                view.results.append((answer["id"], json.dumps(answer["response"], sort_keys=True, ensure_ascii=False)))
            elif "inlineData" in part:
                view.images.append({"media_type": part["inlineData"]["mimeType"], "data": part["inlineData"]["data"]})
            elif "fileData" in part:
                view.images.append({"url": part["fileData"]["fileUri"]})
    return view


VIEWS: dict[str, Callable[[dict[str, Any]], View]] = {
    "anthropic": view_anthropic,
    "gemini": view_gemini,
    "openai": view_openai,
}
# How a tool result's text is carried, where a provider does not send it as text (the view's result form).
# Roles whose consecutive messages a provider sends as ONE turn (Gemini: a function-call turn must follow
# a user or function-response turn, so consecutive assistant messages become one model turn).
TURN_MERGES: dict[str, frozenset[str]] = {"gemini": frozenset({"assistant"})}
RESULT_FORMS: dict[str, Callable[[str], str]] = {
    "gemini": lambda text: json.dumps(gemini_response_of(text), sort_keys=True, ensure_ascii=False),
}


def results_as_sent(provider: str, results: list[tuple[str, str]]) -> list[tuple[str, str]]:
    form = RESULT_FORMS.get(provider)
    return [(call_id, form(text) if form else text) for call_id, text in results]


def view(provider: str, body: dict[str, Any]) -> View:
    if provider not in VIEWS:
        pytest.fail(f"no view for provider {provider!r}: add one to VIEWS in {__file__}")
    return VIEWS[provider](body)


def test_every_provider_has_a_view() -> None:
    assert set(PROVIDERS) <= set(VIEWS), f"providers without a view: {sorted(set(PROVIDERS) - set(VIEWS))}"


# ---------------------------------------------------------------- (a) (b) (c): nothing lost, nothing reordered


def check_nothing_lost(provider: str, request: dict[str, Any], body: dict[str, Any]) -> None:
    want, got = expected_view(request, TURN_MERGES.get(provider, frozenset())), view(provider, body)
    # (a) tool calls: once each, in order, same id, name and arguments object
    assert [(i, n) for i, n, _, _ in got.calls] == [(i, n) for i, n, _, _ in want.calls], "tool call ids/names"
    for (call_id, _, got_args, got_raw), (_, _, want_args, want_raw) in zip(got.calls, want.calls, strict=True):
        assert isinstance(got_args, dict), call_id
        assert json_equal(got_args, want_args), ("arguments", call_id, got_args, want_args)
        if provider == "openai" and isinstance(want_raw, str):
            assert got_raw == want_raw, "OpenAI string arguments pass through byte for byte"
    # (b) tool results: once each, in order, with their call id and text
    assert got.results == results_as_sent(provider, want.results), "tool results"
    # (c) text: the system prompt, and every turn's text, in order; images too
    assert got.system == want.system, "system prompt"
    assert got.turns == want.turns, "turn texts"
    assert got.images == want.images, "images"


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(request=requests())
def test_nothing_is_lost_or_reordered(provider: str, request: dict[str, Any]) -> None:
    check_nothing_lost(provider, request, translate_request(provider, request))


def anthropic_model(request: dict[str, Any]) -> list[Any]:
    """The issue's Anthropic message rules, restated as the expected turns."""
    expected: list[Any] = []
    for msg in request["messages"]:
        role, content = msg["role"], msg.get("content")
        if role == "user":
            if isinstance(content, str) or all(p["type"] == "text" for p in content):
                expected.append(("user", text_of(content)))  # text-only parts flatten, no separator
                continue
            blocks = []
            for p in content:
                if p["type"] == "text":
                    blocks.append({"type": "text", "text": p["text"]})
                elif p["image_url"]["url"].startswith("data:"):
                    source = {"type": "base64", **split_data_url(p["image_url"]["url"])}
                    blocks.append({"type": "image", "source": source})
                else:
                    blocks.append({"type": "image", "source": {"type": "url", "url": p["image_url"]["url"]}})
            expected.append(("user", blocks))
        elif role == "assistant":
            uses = [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": parse_arguments(c["function"]["arguments"]),
                }
                for c in msg.get("tool_calls") or []
            ]
            if text_of(content) or uses:  # an empty assistant turn is dropped
                expected.append(("assistant", text_of(content), uses))
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": msg["tool_call_id"], "content": text_of(content)}
            if expected and expected[-1][0] == "results":
                expected[-1][1].append(result)  # consecutive results: ONE user turn
            else:
                expected.append(("results", [result]))
    return expected


@SETTINGS
@given(request=requests())
def test_anthropic_follows_its_rules(request: dict[str, Any]) -> None:
    body = translate_request("anthropic", request)
    # messages: the model above, block for block
    got: list[Any] = []
    for k, msg in enumerate(body["messages"]):
        content = msg["content"]
        if msg["role"] == "assistant":
            kinds = [b["type"] for b in content]
            assert kinds == sorted(kinds, key=lambda kind: kind != "text"), "text blocks come before tool_use blocks"
            assert all(b["text"] for b in content if b["type"] == "text"), "no empty text blocks"
            got.append(("assistant", text_of(content), [b for b in content if b["type"] == "tool_use"]))
        elif isinstance(content, list) and any(b["type"] == "tool_result" for b in content):
            assert all(b["type"] == "tool_result" for b in content), "a tool-result turn holds only tool results"
            before = body["messages"][k - 1] if k else {"role": None, "content": []}
            assert before["role"] == "assistant", "tool results follow the assistant turn that asked"
            asked = {b["id"] for b in before["content"] if b["type"] == "tool_use"}
            assert {b["tool_use_id"] for b in content} <= asked, "each result answers a call of the turn before"
            got.append(("results", content))
        else:
            assert msg["role"] == "user"
            got.append(("user", content))
    assert json.dumps(got, ensure_ascii=False) == json.dumps(anthropic_model(request), ensure_ascii=False)
    # the request fields
    assert body["model"] == request["model"]
    assert body["max_tokens"] == (request.get("max_tokens") or 4096)
    for key in ("temperature", "top_p"):
        assert json_equal(body.get(key), request.get(key)), key
    stop = request.get("stop")
    assert body.get("stop_sequences") == ([stop] if isinstance(stop, str) else stop)
    assert body.get("metadata") == ({"user_id": request["user"]} if "user" in request else None)
    tools = []
    for tool in request.get("tools", []):
        fn = tool["function"]
        out = {"name": fn["name"], "input_schema": fn.get("parameters", {"type": "object", "properties": {}})}
        if "description" in fn:
            out["description"] = fn["description"]
        tools.append(out)
    assert body.get("tools", []) == tools
    choice = request.get("tool_choice", "auto")
    single = request.get("parallel_tool_calls") is False
    if choice == "auto":
        expected: Any = {"type": "auto", "disable_parallel_tool_use": True} if single else None
    elif choice == "none":
        expected = {"type": "none"}
    else:
        expected = {"type": "any"} if choice == "required" else {"type": "tool", "name": choice["function"]["name"]}
        if single:
            expected["disable_parallel_tool_use"] = True
    assert body.get("tool_choice") == expected


@SETTINGS
@given(request=requests())
def test_openai_passes_the_transcript_through(request: dict[str, Any]) -> None:
    """The identity provider: everything but the hoisted system and object arguments is verbatim."""
    body = translate_request("openai", request)
    turns = [m for m in request["messages"] if m["role"] not in ("system", "developer")]
    sent = body["messages"][1:] if body["messages"] and body["messages"][0]["role"] == "system" else body["messages"]
    assert len(sent) == len(turns)
    for got, want in zip(sent, turns, strict=True):
        if "tool_calls" not in want:
            assert json_equal(got, want)
            continue
        assert json_equal(
            {k: v for k, v in got.items() if k != "tool_calls"}, {k: v for k, v in want.items() if k != "tool_calls"}
        )
        for got_call, want_call in zip(got["tool_calls"], want["tool_calls"], strict=True):
            want_args = want_call["function"]["arguments"]
            if isinstance(want_args, str):
                assert json_equal(got_call, want_call)
            else:
                assert json_equal(json.loads(got_call["function"]["arguments"]), want_args)
    for key in ("tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "stop", "user", "model"):
        assert json_equal(body.get(key), request.get(key)), key


def gemini_part(part: dict[str, Any]) -> dict[str, Any]:
    if part["type"] == "text":
        return {"text": part["text"]}
    url = part["image_url"]["url"]
    if url.startswith("data:"):
        image = split_data_url(url)
        return {"inlineData": {"mimeType": image["media_type"], "data": image["data"]}}
    guessed, _ = mimetypes.guess_type(url)
    return {"fileData": {**({"mimeType": guessed} if guessed else {}), "fileUri": url}}


def gemini_model(request: dict[str, Any]) -> dict[str, Any]:
    """The issue's Gemini rules, restated as the expected generateContent body."""
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    hoisted: list[str] = []
    after_result = False
    last_user = max((k for k, m in enumerate(request["messages"]) if m["role"] == "user"), default=-1)
    for index, msg in enumerate(request["messages"]):
        role, content = msg["role"], msg.get("content")
        if role in ("system", "developer"):
            hoisted.append(text_of(content))
            continue
        if role == "tool":
            answer = {
                "id": msg["tool_call_id"],
                "name": names[msg["tool_call_id"]],
                "response": gemini_response_of(text_of(content)),
            }
            if after_result:  # consecutive results: ONE user turn
                contents[-1]["parts"].append({"functionResponse": answer})
            else:
                contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
            after_result = True
            continue
        after_result = False
        if role == "user":
            sent = [{"text": content}] if isinstance(content, str) else [gemini_part(p) for p in content]
            contents.append({"role": "user", "parts": sent})
            continue
        said = [content] if isinstance(content, str) else [p["text"] for p in content or []]
        parts = [{"text": t} for t in said if t]  # Gemini refuses an empty text part
        for position, c in enumerate(msg.get("tool_calls") or []):
            names[c["id"]] = c["function"]["name"]
            args = parse_arguments(c["function"]["arguments"])
            call = {"id": c["id"], "name": c["function"]["name"], "args": args}
            parts.append({"functionCall": call})
            if index > last_user and position == 0:  # Gemini 3 validates the current turn's steps: documented dummy
                parts[-1]["thoughtSignature"] = "skip_thought_signature_validator"
        if parts and contents and contents[-1]["role"] == "model":
            contents[-1]["parts"] += parts  # consecutive assistant messages: ONE model turn
        elif parts:  # an empty assistant turn is dropped
            contents.append({"role": "model", "parts": parts})
    body: dict[str, Any] = {"contents": contents}
    if hoisted:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(hoisted)}]}
    if request.get("tools"):
        declarations = []
        for tool in request["tools"]:
            fn = tool["function"]
            out: dict[str, Any] = {"name": fn["name"]}
            if "description" in fn:
                out["description"] = fn["description"]
            if "parameters" in fn:
                out["parametersJsonSchema"] = fn["parameters"]
            declarations.append(out)
        body["tools"] = [{"functionDeclarations": declarations}]
    choice = request.get("tool_choice")
    if choice is not None:
        mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}.get(choice) if isinstance(choice, str) else "ANY"
        config: dict[str, Any] = {"mode": mode}
        if isinstance(choice, dict):
            config["allowedFunctionNames"] = [choice["function"]["name"]]
        body["toolConfig"] = {"functionCallingConfig": config}
    generation: dict[str, Any] = {}
    if request.get("max_tokens"):
        generation["maxOutputTokens"] = request["max_tokens"]
    for key, name in (("temperature", "temperature"), ("top_p", "topP")):
        if key in request:
            generation[name] = request[key]
    if "stop" in request:
        generation["stopSequences"] = [request["stop"]] if isinstance(request["stop"], str) else request["stop"]
    if generation:
        body["generationConfig"] = generation
    return body


@SETTINGS
@given(request=requests())
def test_gemini_follows_its_rules(request: dict[str, Any]) -> None:
    body = translate_request("gemini", request)
    want = gemini_model(request)
    assert list(body) == [k for k in body if k in want] and set(body) == set(want), (sorted(body), sorted(want))
    for key, value in want.items():
        assert json_equal(body[key], value), (key, body[key], value)
    noted = {n.path for n in body.notes}
    if "user" in request:
        assert "user" in noted, "user has no Gemini place: dropped with a note"
    if request.get("parallel_tool_calls") is False:
        assert "parallel_tool_calls" in noted, "parallel_tool_calls false cannot be honoured: dropped with a note"


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(request=requests(names=True))
def test_message_names_are_sent_or_reported(provider: str, request: dict[str, Any]) -> None:
    """A valid OpenAI `name` is accepted; where it is not sent, a note says so (nothing silent)."""
    body = translate_request(provider, request)
    noted = {n.path for n in body.notes}
    for i, msg in enumerate(request["messages"]):
        if "name" in msg:
            sent = body.get("messages", [])  # Gemini's contents have no name
            kept = any(isinstance(m, dict) and m.get("name") == msg["name"] for m in sent)
            assert kept or f"messages[{i}].name" in noted, (i, msg, body.notes)


# ---------------------------------------------------------------- (d) (e): no mutation, deterministic


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(request=requests(), system=st.none() | texts, default_system=st.none() | texts)
def test_input_is_never_mutated_and_output_is_deterministic(
    provider: str, request: dict[str, Any], system: str | None, default_system: str | None
) -> None:
    before = copy.deepcopy(request)
    first = translate_request(provider, request, system=system, default_system=default_system)
    assert json_equal(request, before), "the caller's request was mutated"
    second = translate_request(provider, request, system=system, default_system=default_system)
    assert json.dumps(first, ensure_ascii=False) == json.dumps(second, ensure_ascii=False)
    assert first.notes == second.notes
    assert json_equal(request, before), "the caller's request was mutated"
    # and the system prompt follows the precedence: per call > transcript > client-wide default
    transcript = expected_view(request).system
    want = system if system is not None else transcript if transcript is not None else default_system
    assert view(provider, first).system == want


# ---------------------------------------------------------------- (f) responses

ANTHROPIC_STOPS = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]
ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "refusal": "content_filter",
}


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


@SETTINGS
@given(response=anthropic_responses())
def test_anthropic_response_tool_calls_come_back_exactly(response: dict[str, Any]) -> None:
    anthropic.types.Message.model_validate(response)  # keep the generated data realistic
    before = copy.deepcopy(response)
    result = translate_response("anthropic", response)
    assert json_equal(response, before), "the provider response was mutated"
    uses = [b for b in response["content"] if b["type"] == "tool_use"]
    calls = result.tool_calls_json()
    assert [(c["id"], c["function"]["name"]) for c in calls] == [(u["id"], u["name"]) for u in uses]
    for call, use in zip(calls, uses, strict=True):
        assert call["type"] == "function"
        assert isinstance(call["function"]["arguments"], str)
        assert json_equal(json.loads(call["function"]["arguments"]), use["input"])
    assert result.text == "".join(b["text"] for b in response["content"] if b["type"] == "text")
    assert (result.finish_reason == "tool_calls") == bool(uses)
    if not uses:
        assert result.finish_reason == ANTHROPIC_FINISH[response["stop_reason"]]
    usage = response["usage"]
    prompt = (
        usage["input_tokens"] + usage.get("cache_read_input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    )
    assert result.usage["prompt_tokens"] == prompt
    assert result.usage["completion_tokens"] == usage["output_tokens"]
    assert result.usage["total_tokens"] == prompt + usage["output_tokens"]
    if "cache_read_input_tokens" in usage:
        assert result.usage["prompt_tokens_details"]["cached_tokens"] == usage["cache_read_input_tokens"]
    assert result.model == response["model"]
    assert result.raw == before


GEMINI_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "LANGUAGE": "stop",
    "OTHER": "stop",
    "MALFORMED_FUNCTION_CALL": "stop",
}


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


@SETTINGS
@given(response=gemini_responses())
def test_gemini_response_tool_calls_come_back_exactly(response: dict[str, Any]) -> None:
    before = copy.deepcopy(response)
    result = translate_response("gemini", response)
    assert json_equal(response, before), "the provider response was mutated"
    parts = response["candidates"][0]["content"].get("parts", [])
    asked = [p["functionCall"] for p in parts if "functionCall" in p]
    calls = result.tool_calls_json()
    assert [c["function"]["name"] for c in calls] == [a["name"] for a in asked], "every call, in order"
    for call, fc in zip(calls, asked, strict=True):
        assert call["id"] == fc["id"] if "id" in fc else call["id"], "an id kept, or one synthesized"
        assert json_equal(json.loads(call["function"]["arguments"]), fc["args"])
    assert len({c["id"] for c in calls}) == len(calls), "ids are unique within the result"
    again = translate_response("gemini", copy.deepcopy(response)).tool_calls_json()
    assert [c["id"] for c in again] == [c["id"] for c in calls], "synthesized ids are stable for the same response"
    assert result.text == "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
    assert (result.finish_reason == "tool_calls") == bool(asked)
    if not asked:
        assert result.finish_reason == GEMINI_FINISH[response["candidates"][0]["finishReason"]]
    usage = response["usageMetadata"]
    assert result.usage["prompt_tokens"] == usage["promptTokenCount"]
    assert result.usage["completion_tokens"] == usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0)
    assert result.usage["total_tokens"] == usage["totalTokenCount"]
    if "cachedContentTokenCount" in usage:
        assert result.usage["prompt_tokens_details"]["cached_tokens"] == usage["cachedContentTokenCount"]
    if "thoughtsTokenCount" in usage:
        assert result.usage["completion_tokens_details"]["reasoning_tokens"] == usage["thoughtsTokenCount"]
    assert result.model == response["modelVersion"]


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


@SETTINGS
@given(response=openai_responses())
def test_openai_response_tool_calls_pass_through(response: dict[str, Any]) -> None:
    openai.types.chat.ChatCompletion.model_validate(response, strict=True)
    before = copy.deepcopy(response)
    result = translate_response("openai", response)
    assert json_equal(response, before), "the provider response was mutated"
    message = response["choices"][0]["message"]
    calls = message.get("tool_calls", [])
    assert result.tool_calls_json() == calls, "ids, names and argument strings byte for byte, in order"
    for call in result.tool_calls_json():
        assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert result.text == (message["content"] or "")
    assert (result.finish_reason == "tool_calls") == bool(calls)
    if not calls:
        assert result.finish_reason == response["choices"][0]["finish_reason"]
    assert result.usage["prompt_tokens"] == response["usage"]["prompt_tokens"]
    assert result.usage["total_tokens"] == response["usage"]["total_tokens"]


# ---------------------------------------------------------------- (g) invalid inputs

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


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(case=broken_requests())
def test_invalid_input_raises_translation_error_at_the_culprit(
    provider: str, case: tuple[dict[str, Any], str, str]
) -> None:
    request, mutation, culprit = case
    before = copy.deepcopy(request)
    with pytest.raises(TranslationError) as info:
        translate_request(provider, request)
    assert within(info.value.path, culprit), f"{mutation}: error at {info.value.path!r}, culprit is {culprit!r}"
    assert json_equal(request, before), "a refused request was mutated"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("arguments", ['{"a": NaN}', '{"a": -Infinity}', '{"n": [Infinity]}'])
def test_non_standard_json_arguments_are_refused(provider: str, arguments: str) -> None:
    """NaN and Infinity are not JSON (RFC 8259), though Python's json.loads takes them;
    accepted, they make an Anthropic body that cannot be serialized as JSON."""
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call_of("c1", "f", arguments)]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
    }
    with pytest.raises(TranslationError) as info:
        translate_request(provider, request)
    assert within(info.value.path, "messages[1].tool_calls[0].function.arguments")


def call_of(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# Arbitrary JSON-shaped garbage in the places an OpenAI request has structure.
vocab = st.sampled_from(
    [
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "function",
        "name",
        "arguments",
        "id",
        "type",
        "text",
        "image_url",
        "url",
        "user",
        "assistant",
        "tool",
        "system",
        "developer",
        "data:image/png;base64,AA",
        "{}",
        "",
    ]
)


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(children, max_size=4), st.dictionaries(vocab, children, max_size=5))


garbage = st.recursive(st.one_of(vocab, json_scalars), _nest, max_leaves=20)


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(
    messages=st.one_of(garbage, st.lists(st.dictionaries(vocab, garbage, max_size=5), max_size=4)),
    extra=st.dictionaries(
        st.sampled_from(["tools", "tool_choice", "parallel_tool_calls", "max_tokens", "stop"]), garbage, max_size=2
    ),
)
def test_garbage_raises_only_translation_error(provider: str, messages: Any, extra: dict[str, Any]) -> None:
    request = {"model": "m", "messages": messages, **extra}
    before = copy.deepcopy(request)
    try:
        body = translate_request(provider, request)
    except TranslationError as exc:
        assert isinstance(exc.path, str)
    else:
        json.dumps(body)
    assert json_equal(request, before)


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(
    response=st.dictionaries(
        st.sampled_from(["content", "choices", "stop_reason", "usage", "model", "type", "id", "message"]),
        garbage,
        max_size=5,
    )
)
def test_garbage_responses_raise_only_translation_error(provider: str, response: dict[str, Any]) -> None:
    before = copy.deepcopy(response)
    try:
        result = translate_response(provider, response)
    except TranslationError as exc:
        assert isinstance(exc.path, str)
    else:
        json.dumps(result.to_dict())
    assert json_equal(response, before)


def test_a_property_can_fail() -> None:
    """The checks above are not vacuous: a dropped tool call or a changed text is seen."""
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "héllo"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }
    want = expected_view(request)
    for provider in PROVIDERS:
        got = view(provider, translate_request(provider, request))
        results = results_as_sent(provider, want.results)
        assert got.calls[0][:3] == want.calls[0][:3] and got.results == results and got.turns == want.turns
    broken = copy.deepcopy(request)
    broken["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"a": 2}'
    broken["messages"][0]["content"] = "hello"
    got = view("anthropic", translate_request("anthropic", broken))
    assert not json_equal(got.calls[0][2], want.calls[0][2])
    assert got.turns != want.turns
    assert not within("messages[10].role", "messages[1]")
