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

import copy
import json
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic.types
import openai.types.chat
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import toolnexus
from support.judges import within_reach
from support.strategies import (
    ANTHROPIC_FINISH,
    GEMINI_FINISH,
    SETTINGS,
    anthropic_responses,
    broken_requests,
    gemini_responses,
    json_equal,
    json_scalars,
    openai_responses,
    requests,
    text_of,
    texts,
)
from support.variants import with_variants
from toolnexus import ProviderError, RequestBody, TranslationError, translate_request, translate_response

PROVIDERS = toolnexus.providers()
MISSING_FIELD = object()
RULES = toolnexus.load_rules()

# ---------------------------------------------------------------- JSON helpers


def parse_arguments(raw: Any) -> Any:
    """OpenAI arguments as the object they mean ("" is {}), or the object itself."""
    if isinstance(raw, str):
        return {} if raw.strip() == "" else json.loads(raw)
    return raw


def within(path: str, prefix: str) -> bool:
    """`path` is `prefix` or below it (messages[1] does not contain messages[10])."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


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


def view_mistral(body: dict[str, Any]) -> View:
    """OpenAI's shape; ids were rewritten to 9 characters, so they are read back through the request's id map."""
    view = view_openai(body)
    assert isinstance(body, RequestBody), "the view reads the request's id map"
    back = body.id_map
    view.calls = [(back.get(i, i), name, args, raw) for i, name, args, raw in view.calls]
    view.results = [(back.get(i, i), text) for i, text in view.results]
    return view


def view_bedrock(body: dict[str, Any]) -> View:
    system = body.get("system")
    view = View(system=None if system is None else "".join(b["text"] for b in system))
    for msg in body["messages"]:
        assert msg["role"] in ("user", "assistant"), msg["role"]
        text = "".join(b["text"] for b in msg["content"] if "text" in b)
        if text:
            view.turns.append((msg["role"], text))
        for block in msg["content"]:
            if "toolUse" in block:
                use = block["toolUse"]
                view.calls.append((use["toolUseId"], use["name"], use["input"], use["input"]))
            elif "toolResult" in block:
                result = block["toolResult"]
                view.results.append((result["toolUseId"], "".join(c.get("text", "") for c in result["content"])))
            elif "image" in block:
                image = block["image"]
                view.images.append({"media_type": f"image/{image['format']}", "data": image["source"]["bytes"]})
    return view


def view_cohere(body: dict[str, Any]) -> View:
    """A system message first; text blocks, image_url blocks, JSON-text tool calls; each result a document."""
    messages = body["messages"]
    system_at = [i for i, m in enumerate(messages) if m["role"] == "system"]
    assert system_at in ([], [0]), f"one system message at the front, got them at {system_at}"
    view = View(system=messages[0]["content"] if system_at else None)
    for msg in messages[len(system_at) :]:
        content = msg.get("content")
        if msg["role"] == "tool":
            (document,) = content
            view.results.append(
                (msg["tool_call_id"], json.dumps(document["document"]["data"], sort_keys=True, ensure_ascii=False))
            )
            continue
        if text_of(content):
            view.turns.append((msg["role"], text_of(content)))
        for part in content if isinstance(content, list) else []:
            if part["type"] == "image_url":
                url = part["image_url"]["url"]
                view.images.append(split_data_url(url) if url.startswith("data:") else {"url": url})
        for call in msg.get("tool_calls") or []:
            raw = call["function"]["arguments"]
            view.calls.append((call["id"], call["function"]["name"], parse_arguments(raw), raw))
    return view


def view_ollama(body: dict[str, Any]) -> View:
    """A system message first; string content, base64 images, object arguments; calls and results carry no id,
    so a call is known by its position and a result by its text (RESULT_IDS_LOST)."""
    messages = body["messages"]
    system_at = [i for i, m in enumerate(messages) if m["role"] == "system"]
    assert system_at in ([], [0]), f"one system message at the front, got them at {system_at}"
    view = View(system=messages[0]["content"] if system_at else None)
    for msg in messages[len(system_at) :]:
        content = msg.get("content")
        assert isinstance(content, str), "Ollama's content is a string"
        if msg["role"] == "tool":
            view.results.append(("", content))
            continue
        if content:
            view.turns.append((msg["role"], content))
        view.images += [{"data": data} for data in msg.get("images", [])]
        for call in msg.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            view.calls.append(("", call["function"]["name"], arguments, arguments))
    return view


def _input_text(content: Any) -> str:
    """The text of a Responses message or function output: a string, or its input_text parts joined."""
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content or [] if p.get("type") == "input_text")


def view_responses(body: dict[str, Any]) -> View:
    """`instructions`; the `input` items: messages (text, input_image parts), function_call items (JSON text),
    function_call_output items."""
    view = View(system=body.get("instructions"))
    for item in body["input"]:
        kind = item.get("type", "message")
        if kind == "function_call":
            raw = item["arguments"]
            assert isinstance(raw, str), "Responses arguments are a JSON string"
            view.calls.append((item["call_id"], item["name"], parse_arguments(raw), raw))
        elif kind == "function_call_output":
            view.results.append((item["call_id"], _input_text(item["output"])))
        elif kind == "message":
            assert item["role"] in ("user", "assistant"), item["role"]
            if _input_text(item["content"]):
                view.turns.append((item["role"], _input_text(item["content"])))
            for part in item["content"] if isinstance(item["content"], list) else []:
                if part["type"] == "input_image":
                    url = part["image_url"]
                    view.images.append(split_data_url(url) if url.startswith("data:") else {"url": url})
    return view


VIEWS: dict[str, Callable[[dict[str, Any]], View]] = {
    "anthropic": view_anthropic,
    "bedrock": view_bedrock,
    "gemini": view_gemini,
    "mistral": view_mistral,
    "openai": view_openai,
    "cohere": view_cohere,
    "ollama": view_ollama,
    "openai-responses": view_responses,
}
VIEWS = with_variants(VIEWS)  # a variant without an entry takes its parent's
# Providers whose calls and results carry no id (Ollama): compared without it, in order. Images there are
# base64 data alone (the model tells the format from the bytes).
IDS_LOST = frozenset({"ollama"})
IMAGE_FORMS: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {"ollama": lambda image: {"data": image["data"]}}
# How a tool result's text is carried, where a provider does not send it as text (the view's result form).
# Roles whose consecutive messages a provider sends as ONE turn (Gemini: a function-call turn must follow
# a user or function-response turn, so consecutive assistant messages become one model turn).
# Bedrock: user and assistant turns alternate, so consecutive messages of either become one turn.
TURN_MERGES: dict[str, frozenset[str]] = {
    "gemini": frozenset({"assistant"}),
    "bedrock": frozenset({"user", "assistant"}),
}
TURN_MERGES = with_variants(TURN_MERGES)  # a variant without an entry takes its parent's
# Providers that send no system prompt for an empty one (Converse refuses an empty text block).
EMPTY_SYSTEM_OMITTED = frozenset({"bedrock"})


def refused(provider: str, request: dict[str, Any]) -> str | None:
    """Where a provider refuses a valid request on purpose (Converse: an image URL, tool_choice none; Responses:
    stop sequences), or None."""
    if provider == "openai-responses":
        return "stop" if request.get("stop") is not None else None
    if provider != "bedrock":
        return None
    messages = request.get("messages")
    for i, msg in enumerate(messages if isinstance(messages, list) else []):
        content = msg.get("content") if isinstance(msg, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            image = part.get("image_url") if isinstance(part, dict) and part.get("type") == "image_url" else None
            url = image.get("url") if isinstance(image, dict) else None
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                return f"messages[{i}].content[{j}]"
    return "tool_choice" if request.get("tool_choice") == "none" else None


def translated(provider: str, request: dict[str, Any], **options: Any) -> Any:
    """The body, or None after checking the refusal `refused` expects is the one raised."""
    where = refused(provider, request)
    if where is None:
        return translate_request(provider, request, **options)
    with pytest.raises(TranslationError) as info:
        translate_request(provider, request, **options)
    assert info.value.path == where
    return None


RESULT_FORMS: dict[str, Callable[[str], str]] = {
    "gemini": lambda text: json.dumps(gemini_response_of(text), sort_keys=True, ensure_ascii=False),
    "cohere": lambda text: json.dumps(gemini_response_of(text), sort_keys=True, ensure_ascii=False),  # a document
}
RESULT_FORMS = with_variants(RESULT_FORMS)  # a variant without an entry takes its parent's


def as_carried(provider: str, want: View) -> View:
    """The input's view as the provider can carry it: without ids where it has none, images in its form."""
    if provider in IDS_LOST:
        want.calls = [("", name, args, raw) for _, name, args, raw in want.calls]
        want.results = [("", text) for _, text in want.results]
    if provider in IMAGE_FORMS:
        want.images = [IMAGE_FORMS[provider](image) for image in want.images]
    return want


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
    want, got = (
        as_carried(provider, expected_view(request, TURN_MERGES.get(provider, frozenset()))),
        view(provider, body),
    )
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
    omitted = provider in EMPTY_SYSTEM_OMITTED and want.system == ""
    assert got.system == (None if omitted else want.system), "system prompt"
    assert got.turns == want.turns, "turn texts"
    assert got.images == want.images, "images"


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(request=requests())
def test_nothing_is_lost_or_reordered(provider: str, request: dict[str, Any]) -> None:
    request = within_reach(provider, request)
    body = translated(provider, request)
    if body is not None:
        check_nothing_lost(provider, request, body)


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
    request = within_reach(provider, request)
    body = translated(provider, request)
    if body is None:
        return
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
    request = within_reach(provider, request)
    before = copy.deepcopy(request)
    first = translated(provider, request, system=system, default_system=default_system)
    assert json_equal(request, before), "the caller's request was mutated"
    if first is None:
        return
    second = translate_request(provider, request, system=system, default_system=default_system)
    assert json.dumps(first, ensure_ascii=False) == json.dumps(second, ensure_ascii=False)
    assert first.notes == second.notes
    assert json_equal(request, before), "the caller's request was mutated"
    # and the system prompt follows the precedence: per call > transcript > client-wide default
    transcript = expected_view(request).system
    want = system if system is not None else transcript if transcript is not None else default_system
    assert view(provider, first).system == (None if want == "" and provider in EMPTY_SYSTEM_OMITTED else want)


# ---------------------------------------------------------------- (f) responses


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


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(case=broken_requests())
def test_invalid_input_raises_translation_error_at_the_culprit(
    provider: str, case: tuple[dict[str, Any], str, str]
) -> None:
    request, mutation, culprit = case
    reached = within_reach(provider, request)  # less what the provider refuses on purpose, if the culprit stays
    top = culprit.split(".")[0].split("[")[0]
    assume(reached.get(top, MISSING_FIELD) == request.get(top, MISSING_FIELD))
    request = reached
    before = copy.deepcopy(request)
    with pytest.raises(TranslationError) as info:
        translate_request(provider, request)
    on_purpose = info.value.path == refused(provider, before)  # a refusal of the valid rest may come first
    assert within(info.value.path, culprit) or on_purpose, (
        f"{mutation}: error at {info.value.path!r}, culprit is {culprit!r}"
    )
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
    except ProviderError:  # only a body in the provider's error shape (Mistral's is a top-level message)
        assert toolnexus.load_rules().get(provider).endpoint.error_in(response) is not None
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
    for provider in PROVIDERS:
        want = as_carried(provider, expected_view(request))
        got = view(provider, translate_request(provider, request))
        results = results_as_sent(provider, want.results)
        assert got.calls[0][:3] == want.calls[0][:3] and got.results == results and got.turns == want.turns
    want = expected_view(request)
    broken = copy.deepcopy(request)
    broken["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"a": 2}'
    broken["messages"][0]["content"] = "hello"
    got = view("anthropic", translate_request("anthropic", broken))
    assert not json_equal(got.calls[0][2], want.calls[0][2])
    assert got.turns != want.turns
    assert not within("messages[10].role", "messages[1]")
