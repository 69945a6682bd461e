"""The hand-written baseline of tools/bench.py: each provider's rules written as plain Python.

This is the translator a careful person writes by hand for the same rules as
rules/<provider>.yaml, with no rule tables: one function per direction and provider.
Before anything is timed, tools/bench.py checks that its output equals the engine's
(same JSON, same key order; for responses every field but `notes`). It writes no notes
and checks only what it must touch to translate (tool-call arguments must be a JSON
object, as issue 2's "Bad input" requires); the engine's fuller validation and its notes
are part of the engine's cost.

Round trips (README "Round trips"): the response translators follow their rule sections
whole (reasoning, Anthropic's thinking blocks, Gemini's thought signatures, extra_content,
cache-write and reasoning tokens, restored tool-call ids). The request translators handle
what the benchmark inputs contain and what the rules do to it: Anthropic's tool-call id
check, and Gemini's dummy signature on the first call of each step of the current turn
(when a call carries no signature), and the round-trip keys `round_trip` adds (thinking
blocks first in Anthropic's assistant turn, thought signatures on Gemini's parts, a user
message's cache_control on its last block for Anthropic). Keys the inputs never carry
(is_error, images in tool results, cache_control elsewhere) are not read; if an input
gains one, the parity check names the difference.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from toolnexus import TranslatedToolCall, TranslateResult

JSON = dict[str, Any]
Translate = Callable[[Any], Any]


HOISTED_ROLES = frozenset({"system", "developer"})
SYSTEM_JOIN = "\n\n"
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
OPENAI_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "function_call": "tool_calls",
}
# The OpenAI request fields after `model` and `messages`, in rules/openai.yaml's body order.
OPENAI_PASSTHROUGH = (
    "tools", "tool_choice", "parallel_tool_calls", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "stop", "user", "n", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs",
    "top_logprobs", "seed", "response_format", "reasoning_effort", "store", "metadata", "service_tier",
    "prediction", "prompt_cache_key", "safety_identifier", "verbosity", "modalities", "audio",
    "web_search_options",
)  # fmt: skip
OPENAI_USAGE = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "completion_tokens_details",
)
ZERO_MEANS_ABSENT = ("max_tokens", "max_completion_tokens")


def _text_of(content: str | list[JSON]) -> str:
    """A system prompt or tool result: a string, or its text parts concatenated."""
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content)


def _parse_arguments(raw: str | JSON) -> JSON:
    """Tool-call arguments as an object; a JSON string is parsed, "" means {}."""
    if isinstance(raw, dict):
        return raw
    if not raw.strip():
        return {}
    parsed = json.loads(raw)
    if not isinstance(parsed, dict):
        raise ValueError("tool-call arguments must be a JSON object")
    return parsed


def _anthropic_image(url: str) -> JSON:
    if url.startswith("data:"):
        header, _, data = url[5:].partition(",")
        return {"type": "image", "source": {"type": "base64", "media_type": header.partition(";")[0], "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _anthropic_user_content(content: str | list[JSON]) -> str | list[JSON]:
    if isinstance(content, str):
        return content
    if all(part["type"] == "text" for part in content):
        return "".join(part["text"] for part in content)
    return [
        {"type": "text", "text": part["text"]} if part["type"] == "text" else _anthropic_image(part["image_url"]["url"])
        for part in content
    ]


ANTHROPIC_ID = re.compile("^[a-zA-Z0-9_-]+$")
ENCODED_ID = "tn_"


def _anthropic_id(call_id: str) -> str:
    """A tool-call id Anthropic accepts: as given, or tn_ + its unpadded URL-safe base64."""
    if ANTHROPIC_ID.fullmatch(call_id) and not call_id.startswith(ENCODED_ID):
        return call_id
    return ENCODED_ID + base64.urlsafe_b64encode(call_id.encode()).decode().rstrip("=")


def _restored_id(sent: str) -> str:
    """The caller's id for one Anthropic hands back: an id _anthropic_id encoded is decoded, others kept."""
    if not sent.startswith(ENCODED_ID):
        return sent
    body = sent[len(ENCODED_ID) :]
    try:
        original = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return sent
    return original if _anthropic_id(original) == sent else sent


def _anthropic_cached(content: str | list[JSON], mark: JSON) -> list[JSON]:
    """A user message's cache_control marks its last block, so its content goes as blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": mark}]
    blocks = [
        {"type": "text", "text": part["text"]} if part["type"] == "text" else _anthropic_image(part["image_url"]["url"])
        for part in content
    ]
    blocks[-1]["cache_control"] = mark
    return blocks


def _anthropic_assistant_blocks(message: JSON) -> list[JSON]:
    blocks: list[JSON] = list(message.get("thinking_blocks") or ())  # signed reasoning first, as given
    content = message.get("content")
    if isinstance(content, str):
        if content:
            blocks.append({"type": "text", "text": content})
    elif content:
        blocks.extend({"type": "text", "text": part["text"]} for part in content if part["text"])
    for call in message.get("tool_calls") or ():
        function = call["function"]
        blocks.append(
            {
                "type": "tool_use",
                "id": _anthropic_id(call["id"]),
                "name": function["name"],
                "input": _parse_arguments(function["arguments"]),
            }
        )
    return blocks


def _anthropic_tool_choice(choice: Any, parallel: Any) -> JSON | None:
    serial = parallel is False
    if choice is None or choice == "auto":
        return {"type": "auto", "disable_parallel_tool_use": True} if serial else None
    if choice == "none":
        return {"type": "none"}
    out: JSON = {"type": "any"} if choice == "required" else {"type": "tool", "name": choice["function"]["name"]}
    if serial:
        out["disable_parallel_tool_use"] = True
    return out


def _anthropic_tool(function: JSON) -> JSON:
    tool = {"name": function["name"]}
    if "description" in function:
        tool["description"] = function["description"]
    parameters = function.get("parameters")
    tool["input_schema"] = parameters if parameters is not None else {"type": "object", "properties": {}}
    return tool


def hand_anthropic_request(request: JSON) -> JSON:
    """OpenAI Chat Completions request -> Anthropic Messages body, by hand."""
    system: list[str] = []
    messages: list[JSON] = []
    results: list[JSON] | None = None  # the user turn collecting consecutive tool results
    for message in request["messages"]:
        role = message["role"]
        if role in HOISTED_ROLES:
            system.append(_text_of(message["content"]))
        elif role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": _anthropic_id(message["tool_call_id"]),
                "content": _text_of(message["content"]),
            }
            if results is None:
                results = [block]
                messages.append({"role": "user", "content": results})
            else:
                results.append(block)
        else:
            results = None
            if role == "user":
                mark = message.get("cache_control")
                content = message["content"]
                written = _anthropic_user_content(content) if mark is None else _anthropic_cached(content, mark)
                messages.append({"role": "user", "content": written})
            else:
                blocks = _anthropic_assistant_blocks(message)
                if blocks:  # Anthropic rejects an empty assistant turn
                    messages.append({"role": "assistant", "content": blocks})

    max_tokens = request.get("max_completion_tokens") or request.get("max_tokens") or ANTHROPIC_DEFAULT_MAX_TOKENS
    body: JSON = {"model": request["model"], "max_tokens": max_tokens}
    if system:
        body["system"] = SYSTEM_JOIN.join(system)
    body["messages"] = messages
    tools = request.get("tools")
    if tools is not None:
        body["tools"] = [_anthropic_tool(tool["function"]) for tool in tools]
    choice = _anthropic_tool_choice(request.get("tool_choice"), request.get("parallel_tool_calls"))
    if choice is not None:
        body["tool_choice"] = choice
    for name in ("temperature", "top_p"):
        value = request.get(name)
        if value is not None:
            body[name] = value
    stop = request.get("stop")
    if stop is not None:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else stop
    user = request.get("user")
    if user is not None:
        body["metadata"] = {"user_id": user}
    return body


def hand_anthropic_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Anthropic Messages response -> OpenAI-shaped result, by hand."""
    texts: list[str] = []
    reasoning: list[str] = []
    replay: list[JSON] = []  # signed thinking blocks, as received, for the next turn
    calls: list[TranslatedToolCall] = []
    for block in response["content"]:
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            arguments = json.dumps(block["input"], ensure_ascii=False)
            calls.append(TranslatedToolCall(id=_restored_id(block["id"]), name=block["name"], arguments=arguments))
        elif kind == "thinking":
            reasoning.append(block["thinking"])
            replay.append(block)
        elif kind == "redacted_thinking":
            replay.append(block)
    tokens = response.get("usage") or {}
    cached, written = tokens.get("cache_read_input_tokens"), tokens.get("cache_creation_input_tokens")
    prompt = tokens.get("input_tokens", 0) + (cached or 0) + (written or 0)
    completion = tokens.get("output_tokens", 0)
    usage: JSON = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    details = {k: v for k, v in (("cached_tokens", cached), ("cache_write_tokens", written)) if v is not None}
    if details:
        usage["prompt_tokens_details"] = details
    thinking_tokens = (tokens.get("output_tokens_details") or {}).get("thinking_tokens")
    if thinking_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": thinking_tokens}
    model = response.get("model")
    return TranslateResult(
        text="".join(texts),
        tool_calls=calls,
        finish_reason="tool_calls" if calls else ANTHROPIC_FINISH.get(response.get("stop_reason", ""), "stop"),
        usage=usage,
        model=model if isinstance(model, str) else requested_model or "",
        raw=response,
        reasoning_content="".join(reasoning),
        message_extras={"thinking_blocks": replay} if replay else {},
    )


def _openai_assistant(message: JSON) -> JSON:
    """As given, but object arguments become the JSON string OpenAI requires."""
    calls = message.get("tool_calls")
    if not calls:
        return {k: v for k, v in message.items() if k != "tool_calls"} if "tool_calls" in message else message
    rewritten = False
    out_calls = []
    for call in calls:
        function = call["function"]
        arguments = function["arguments"]
        if isinstance(arguments, str):
            _parse_arguments(arguments)  # validated, then sent byte for byte
            out_calls.append(call)
        else:
            text = json.dumps(_parse_arguments(arguments), ensure_ascii=False)
            rewritten_call = {
                "id": call["id"],
                "type": "function",
                "function": {"name": function["name"], "arguments": text},
            }
            if call.get("extra_content") is not None:
                rewritten_call["extra_content"] = call["extra_content"]
            out_calls.append(rewritten_call)
            rewritten = True
    return {**message, "tool_calls": out_calls} if rewritten else message


def hand_openai_request(request: JSON) -> JSON:
    """OpenAI request -> OpenAI body: system prompts hoisted to the front, the rest as given."""
    system: list[str] = []
    messages: list[JSON] = [{}]  # slot for the system message
    for message in request["messages"]:
        role = message["role"]
        if role in HOISTED_ROLES:
            system.append(_text_of(message["content"]))
        elif role == "assistant":
            messages.append(_openai_assistant(message))
        else:
            messages.append(message)
    if system:
        messages[0] = {"role": "system", "content": SYSTEM_JOIN.join(system)}
    else:
        del messages[0]
    body: JSON = {"model": request["model"], "messages": messages}
    for name in OPENAI_PASSTHROUGH:
        value = request.get(name)
        if value is not None and not (value == 0 and name in ZERO_MEANS_ABSENT):
            body[name] = value
    return body


def _chat_calls(message: JSON) -> list[TranslatedToolCall]:
    """A Chat Completions message's tool calls; object arguments become their JSON text."""
    calls = []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = function["arguments"]
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        extra = call.get("extra_content")
        calls.append(TranslatedToolCall(id=call["id"], name=function["name"], arguments=arguments, extra_content=extra))
    return calls


def hand_openai_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """OpenAI response -> result: nearly field for field."""
    choice = response["choices"][0]
    message = choice["message"]
    calls = _chat_calls(message)
    tokens = response.get("usage") or {}
    model = response.get("model")
    extra = message.get("extra_content")
    return TranslateResult(
        text=message.get("content") or "",
        tool_calls=calls,
        finish_reason="tool_calls" if calls else OPENAI_FINISH.get(choice.get("finish_reason"), "stop"),
        usage={key: tokens[key] for key in OPENAI_USAGE if tokens.get(key) is not None},
        model=model if isinstance(model, str) else requested_model or "",
        raw=response,
        message_extras={"extra_content": extra} if extra is not None else {},
    )


# ---------------------------------------------------------------- gemini (rules/gemini.yaml)

GEMINI_CHOICE_MODE = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
GEMINI_JSON_FORMATS = ("json_object", "json_schema")
GEMINI_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
}  # every other documented reason, and an unknown or missing one, is "stop"
GEMINI_PART_KINDS = ("thought", "functionCall", "text", "inlineData", "executableCode", "codeExecutionResult")
# Gemini's documented stand-in for a thought signature it never issued (history it did not sign).
GEMINI_DUMMY_SIGNATURE = "skip_thought_signature_validator"


def _gemini_part(part: JSON) -> JSON:
    if part["type"] == "text":
        return {"text": part["text"]}
    url = part["image_url"]["url"]
    if url.startswith("data:"):
        header, _, data = url[5:].partition(",")
        return {"inlineData": {"mimeType": header.partition(";")[0], "data": data}}
    media_type = mimetypes.guess_type(urlsplit(url).path)[0]
    return {"fileData": {"mimeType": media_type, "fileUri": url} if media_type else {"fileUri": url}}


def _gemini_model_parts(message: JSON, names: dict[str, str], current_turn: bool) -> list[JSON]:
    """Text, then function calls; `names` learns each call's id -> name for the results that follow.

    In the current turn (after the last user message) the step's first call carries the dummy
    signature: Gemini 3 refuses that call unsigned, and these transcripts carry no signatures.
    """
    content = message.get("content")
    parts: list[JSON] = []
    if isinstance(content, str):
        if content:
            parts.append({"text": content})
    elif content:
        parts.extend({"text": part["text"]} for part in content if part["text"])
    signed = _gemini_signature(message)
    if signed is not None and parts:  # a signature on the message is its last text part's
        parts[-1]["thoughtSignature"] = signed
    for position, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        names[call["id"]] = function["name"]
        arguments = _parse_arguments(function["arguments"])
        part: JSON = {"functionCall": {"id": call["id"], "name": function["name"], "args": arguments}}
        signed = _gemini_signature(call)
        if signed is not None:
            part["thoughtSignature"] = signed
        elif current_turn and position == 0:
            part["thoughtSignature"] = GEMINI_DUMMY_SIGNATURE
        parts.append(part)
    return parts


def _gemini_signature(carrier: JSON) -> str | None:
    """The thought signature a message or a tool call carries back (extra_content.google.thought_signature)."""
    return ((carrier.get("extra_content") or {}).get("google") or {}).get("thought_signature")


def _gemini_result(text: str) -> JSON:
    """JSON text of an object is sent as that object, anything else as {"result": text}."""
    if text.lstrip()[:1] == "{":
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"result": text}


def _gemini_declaration(function: JSON) -> JSON:
    declaration = {"name": function["name"]}
    if "description" in function:
        declaration["description"] = function["description"]
    if "parameters" in function:
        declaration["parametersJsonSchema"] = function["parameters"]  # JSON Schema as given: shared, unedited
    return declaration


def _gemini_tool_config(choice: Any) -> JSON | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        return {"functionCallingConfig": {"mode": GEMINI_CHOICE_MODE[choice]}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice["function"]["name"]]}}


def _gemini_generation_config(request: JSON) -> JSON:
    config: JSON = {}
    max_tokens = request.get("max_completion_tokens") or request.get("max_tokens")
    if max_tokens:
        config["maxOutputTokens"] = max_tokens
    for ours, theirs in (("temperature", "temperature"), ("top_p", "topP")):
        if request.get(ours) is not None:
            config[theirs] = request[ours]
    stop = request.get("stop")
    if stop is not None:
        config["stopSequences"] = [stop] if isinstance(stop, str) else stop
    for ours, theirs in (("frequency_penalty", "frequencyPenalty"), ("presence_penalty", "presencePenalty")):
        if request.get(ours) is not None:
            config[theirs] = request[ours]
    if request.get("seed") is not None:
        config["seed"] = request["seed"]
    response_format = request.get("response_format") or {}
    if response_format.get("type") in GEMINI_JSON_FORMATS:
        config["responseMimeType"] = "application/json"
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema is not None:
        config["responseJsonSchema"] = schema
    return config


def hand_gemini_request(request: JSON) -> JSON:
    """OpenAI Chat Completions request -> Gemini generateContent body, by hand."""
    system: list[str] = []
    contents: list[JSON] = []
    names: dict[str, str] = {}  # tool call id -> function name, of the model turn being answered
    merging: str | None = None  # the OpenAI role whose consecutive turns are being merged
    messages = request["messages"]
    # The current turn: the steps after the last user message (all of them when there is none).
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), -1)
    for index, message in enumerate(messages):
        role = message["role"]
        if role in HOISTED_ROLES:
            system.append(_text_of(message["content"]))
            continue
        if role == "user":
            content = message["content"]
            parts = [{"text": content}] if isinstance(content, str) else [_gemini_part(p) for p in content]
            contents.append({"role": "user", "parts": parts})
            merging = None
            continue
        if role == "assistant":
            names = {}
            parts = _gemini_model_parts(message, names, index > last_user)
            if not parts:  # Gemini rejects an empty turn; what follows may still merge with what came before
                continue
        else:
            response = _gemini_result(_text_of(message["content"]))
            call_id = message["tool_call_id"]
            parts = [{"functionResponse": {"id": call_id, "name": names[call_id], "response": response}}]
        if merging == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": "model" if role == "assistant" else "user", "parts": parts})
        merging = role

    body: JSON = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": SYSTEM_JOIN.join(system)}]}
    tools = request.get("tools")
    if tools is not None:
        body["tools"] = [{"functionDeclarations": [_gemini_declaration(tool["function"]) for tool in tools]}]
    tool_config = _gemini_tool_config(request.get("tool_choice"))
    if tool_config is not None:
        body["toolConfig"] = tool_config
    generation = _gemini_generation_config(request)
    if generation:
        body["generationConfig"] = generation
    return body


def _gemini_digest(response: JSON) -> str:
    """The rules' ids for calls without one are call_<position>_<this>: a hash of the whole response (stable
    for the same response, different for answers that differ)."""
    return hashlib.sha256(json.dumps(response, sort_keys=True, default=repr).encode("ascii")).hexdigest()[:16]


def hand_gemini_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Gemini generateContent response -> OpenAI-shaped result, by hand."""
    candidate = (response.get("candidates") or [{}])[0]
    texts: list[str] = []
    reasoning: list[str] = []
    extras: JSON = {}  # the first signed text or thought part's signature, for the assistant message
    calls: list[TranslatedToolCall] = []
    digest = ""  # computed for the first call without an id
    for part in (candidate.get("content") or {}).get("parts") or ():
        kind = next((k for k in GEMINI_PART_KINDS if part.get(k) is not None and part.get(k) is not False), None)
        signature = part.get("thoughtSignature")
        signed = {"google": {"thought_signature": signature}} if signature is not None else None
        if kind == "functionCall":
            call = part["functionCall"]
            arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
            if not call.get("id"):
                digest = digest or _gemini_digest(response)
            call_id = call.get("id") or f"call_{len(calls)}_{digest}"
            calls.append(TranslatedToolCall(id=call_id, name=call["name"], arguments=arguments, extra_content=signed))
            continue
        if kind == "text":
            texts.append(part["text"])
        elif kind == "thought":
            reasoning.append(part["text"])
        if signed is not None and not extras:
            extras = {"extra_content": signed}
    if calls:
        finish = "tool_calls"
    elif (response.get("promptFeedback") or {}).get("blockReason") is not None:
        finish = "content_filter"
    else:
        finish = GEMINI_FINISH.get(candidate.get("finishReason"), "stop")
    tokens = response.get("usageMetadata") or {}
    thoughts = tokens.get("thoughtsTokenCount")
    usage: JSON = {}
    prompt = [tokens[key] for key in ("promptTokenCount", "toolUsePromptTokenCount") if tokens.get(key) is not None]
    if prompt:
        usage["prompt_tokens"] = sum(prompt)
    usage["completion_tokens"] = (tokens.get("candidatesTokenCount") or 0) + (thoughts or 0)
    if tokens.get("totalTokenCount") is not None:
        usage["total_tokens"] = tokens["totalTokenCount"]
    if tokens.get("cachedContentTokenCount") is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": tokens["cachedContentTokenCount"]}
    if thoughts is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": thoughts}
    model = response.get("modelVersion")
    return TranslateResult(
        text="".join(texts),
        tool_calls=calls,
        finish_reason=finish,
        usage=usage,
        model=model if isinstance(model, str) else requested_model or "",
        raw=response,
        reasoning_content="".join(reasoning),
        message_extras=extras,
    )


# ---------------------------------------------------------------- mistral (rules/mistral.yaml)

MISTRAL_ID = re.compile("^[a-zA-Z0-9]{9}$")
MISTRAL_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
MISTRAL_FINISH = {
    "stop": "stop",
    "length": "length",
    "model_length": "length",
    "error": "stop",
    "tool_calls": "tool_calls",
}
MISTRAL_PASSTHROUGH = (
    "temperature", "top_p", "stop", "seed", "n", "presence_penalty", "frequency_penalty", "logprobs",
    "top_logprobs", "response_format", "prediction", "prompt_cache_key",
)  # fmt: skip


def _mistral_id(call_id: str) -> str:
    """A 9-character id: as given when it fits, else base-62 digits of a SHAKE-256 hash (the first attempt:
    the inputs never collide)."""
    if MISTRAL_ID.match(call_id):
        return call_id
    number = int.from_bytes(hashlib.shake_256(f"0:{call_id}".encode()).digest(15), "big")
    digits = []
    for _ in range(9):
        number, digit = divmod(number, 62)
        digits.append(MISTRAL_ALPHABET[digit])
    return "".join(digits)


def _mistral_user_content(content: str | list[JSON]) -> str | list[JSON]:
    if isinstance(content, str):
        return content
    if all(part["type"] == "text" for part in content):
        return "".join(part["text"] for part in content)
    out: list[JSON] = []
    for part in content:
        if part["type"] == "text":
            out.append({"type": "text", "text": part["text"]})
        elif part["image_url"]["url"].startswith("data:"):
            out.append(part)  # the data: URL as given
        else:
            image = part["image_url"]
            written: JSON = {"url": image["url"]}
            if image.get("detail") not in (None, "auto"):
                written["detail"] = image["detail"]
            out.append({"type": "image_url", "image_url": written})
    return out


def hand_mistral_request(request: JSON) -> JSON:
    """OpenAI request -> Mistral chat completions body, by hand."""
    system: list[str] = []
    messages: list[JSON] = [{}]  # slot for the system message
    names: dict[str, str] = {}
    for message in request["messages"]:
        role = message["role"]
        if role in HOISTED_ROLES:
            system.append(_text_of(message["content"]))
        elif role == "user":
            messages.append({"role": "user", "content": _mistral_user_content(message["content"])})
        elif role == "assistant":
            content = message.get("content")
            written: JSON = {"role": "assistant", "content": _text_of(content) if content else ""}
            calls = []
            for call in message.get("tool_calls") or ():
                function = call["function"]
                arguments = function["arguments"]
                if not isinstance(arguments, str):
                    arguments = json.dumps(_parse_arguments(arguments), ensure_ascii=False)
                else:
                    _parse_arguments(arguments)
                names[call["id"]] = function["name"]
                calls.append({"id": _mistral_id(call["id"]), "type": "function",
                              "function": {"name": function["name"], "arguments": arguments}})  # fmt: skip
            if calls:
                written["tool_calls"] = calls
            messages.append(written)
        else:
            answered = message["tool_call_id"]
            content = _text_of(message["content"])
            messages.append({"role": "tool", "tool_call_id": _mistral_id(answered), "name": names[answered],
                             "content": content})  # fmt: skip
    if system:
        messages[0] = {"role": "system", "content": SYSTEM_JOIN.join(system)}
    else:
        del messages[0]
    body: JSON = {"model": request["model"], "messages": messages}
    if request.get("tools"):
        body["tools"] = [
            {"type": "function", "function": {
                **{k: t["function"][k] for k in ("name", "description") if k in t["function"]},
                "parameters": t["function"].get("parameters", {"type": "object", "properties": {}}),
                **({"strict": t["function"]["strict"]} if "strict" in t["function"] else {}),
            }}
            for t in request["tools"]
        ]  # fmt: skip
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        body["tool_choice"] = {"type": "function", "function": {"name": choice["function"]["name"]}}
    elif choice is not None:
        body["tool_choice"] = "any" if choice == "required" else choice
    if request.get("parallel_tool_calls") is not None:
        body["parallel_tool_calls"] = request["parallel_tool_calls"]
    limit = request.get("max_completion_tokens") or request.get("max_tokens")
    if limit:
        body["max_tokens"] = limit
    for name in MISTRAL_PASSTHROUGH:
        if request.get(name) is not None:
            body["random_seed" if name == "seed" else name] = request[name]
    return body


def hand_mistral_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Mistral response -> result (no request map here: an id is kept as the provider sent it)."""
    choice = response["choices"][0]
    message = choice["message"]
    calls = _chat_calls(message)
    tokens = response.get("usage") or {}
    model = response.get("model")
    return TranslateResult(
        text=message.get("content") or "",
        tool_calls=calls,
        finish_reason="tool_calls" if calls else MISTRAL_FINISH.get(choice.get("finish_reason"), "stop"),
        usage={key: tokens[key] for key in OPENAI_USAGE[:3] if tokens.get(key) is not None},
        model=model if isinstance(model, str) else requested_model or "",
        raw=response,
    )


# ---------------------------------------------------------------- OpenAI's answer as a Messages `Message`

# The Anthropic stop reason of each finish reason: ANTHROPIC_FINISH read backwards, its first row for each.
ANTHROPIC_STOP = {finish: stop for stop, finish in reversed(ANTHROPIC_FINISH.items())}


def hand_openai_message(response: JSON, requested_model: str | None = None) -> JSON:
    """OpenAI response -> Anthropic `Message` (rules/formats/anthropic.yaml's answer), in one step with no result
    in between: the floor of `translate_response("openai", answer, source="anthropic")` (tools/count.py
    `--baseline --source anthropic`). Reads what the bench's answers carry (no extra_content, no reasoning)."""
    choice = response["choices"][0]
    message = choice["message"]
    calls = message.get("tool_calls") or ()
    text = message.get("content")
    content: list[JSON] = [{"type": "text", "text": text}] if text else []
    for call in calls:
        function = call["function"]
        arguments = function["arguments"]
        content.append({"type": "tool_use", "id": call["id"], "name": function["name"],
                        "input": _loads(arguments) if arguments.strip() else {}})  # fmt: skip
    tokens = response.get("usage") or {}
    details = tokens.get("prompt_tokens_details") or {}
    cached, written = details.get("cached_tokens"), details.get("cache_write_tokens")
    usage: JSON = {
        "input_tokens": tokens.get("prompt_tokens", 0) - (cached or 0) - (written or 0),
        "output_tokens": tokens.get("completion_tokens", 0),
    }
    if cached is not None:
        usage["cache_read_input_tokens"] = cached
    if written is not None:
        usage["cache_creation_input_tokens"] = written
    model = response.get("model")
    finish = "tool_calls" if calls else OPENAI_FINISH.get(choice.get("finish_reason"), "stop")
    return {
        "id": response["id"],
        "type": "message",
        "role": "assistant",
        "model": model if isinstance(model, str) else requested_model or "",
        "content": content,
        "stop_reason": ANTHROPIC_STOP[finish],
        "stop_sequence": None,
        "usage": usage,
    }


# ---------------------------------------------------------------- OpenAI's answer as a Responses `Response`

# The Responses stop of each finish reason: rules/openai-responses.yaml's finish table read backwards, its first row
# for each (a call's answer stops as `stop` does), as rules/formats/openai-responses.yaml's answer says.
RESPONSES_STOP = {"stop": "completed", "length": "max_output_tokens", "content_filter": "content_filter"}
RESPONSES_STOP["tool_calls"] = RESPONSES_STOP["stop"]
RESPONSES_INCOMPLETE = ("max_output_tokens", "incomplete", "content_filter")  # the answer's status then
RESPONSES_INCOMPLETE_WHY = ("max_output_tokens", "content_filter")  # its incomplete_details then
RESPONSES_MESSAGE_INCOMPLETE = ("max_output_tokens", "incomplete")  # the message item's status then


def hand_openai_as_response(response: JSON, requested_model: str | None = None) -> JSON:
    """OpenAI response -> Responses `Response` (rules/formats/openai-responses.yaml's answer), in one step with no
    result in between: the floor of `translate_response("openai", answer, source="openai-responses")`
    (tools/count.py `--baseline --source openai-responses`). Reads what the bench's answers carry (no extra_content,
    no reasoning, no annotations); the answer's id and time as given, the message's id cut from the answer id's
    BLAKE2b digest as the format's `ids` make it (a made id is part of the answer's bytes)."""
    choice = response["choices"][0]
    message = choice["message"]
    calls = message.get("tool_calls") or ()
    stop = RESPONSES_STOP[OPENAI_FINISH.get(choice.get("finish_reason"), "stop") if not calls else "tool_calls"]
    answer_id = response["id"]
    output: list[JSON] = []
    text, refusal = message.get("content"), message.get("refusal")
    if text or refusal:
        content: list[JSON] = [{"type": "output_text", "text": text, "annotations": []}] if text else []
        if refusal:
            content.append({"type": "refusal", "refusal": refusal})
        output.append({
            "type": "message",
            "id": "msg_" + hashlib.blake2b(answer_id.encode()).hexdigest()[:32],
            "role": "assistant",
            "status": "incomplete" if stop in RESPONSES_MESSAGE_INCOMPLETE else "completed",
            "content": content,
        })  # fmt: skip
    for call in calls:
        function = call["function"]
        output.append({"type": "function_call", "call_id": call["id"], "name": function["name"],
                       "arguments": function["arguments"] or "{}"})  # fmt: skip
    tokens = response.get("usage") or {}
    details = tokens.get("prompt_tokens_details") or {}
    model = response.get("model")
    return {
        "id": answer_id,
        "object": "response",
        "created_at": response["created"],
        "status": "incomplete" if stop in RESPONSES_INCOMPLETE else "completed",
        "error": None,
        "incomplete_details": {"reason": stop} if stop in RESPONSES_INCOMPLETE_WHY else None,
        "model": model if isinstance(model, str) else requested_model or "",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": tokens.get("prompt_tokens", 0),
            "input_tokens_details": {
                "cached_tokens": details.get("cached_tokens", 0),
                "cache_write_tokens": details.get("cache_write_tokens", 0),
            },
            "output_tokens": tokens.get("completion_tokens", 0),
            "output_tokens_details": {
                "reasoning_tokens": (tokens.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
            },
            "total_tokens": tokens.get("total_tokens", 0),
        },
    }


HAND_WRITTEN: dict[str, tuple[Translate, Translate]] = {
    "mistral": (hand_mistral_request, hand_mistral_response),
    "anthropic": (hand_anthropic_request, hand_anthropic_response),
    "openai": (hand_openai_request, hand_openai_response),
    "gemini": (hand_gemini_request, hand_gemini_response),
}
# Each answer shape's hand-written translation into a source format's answer, by format (tools/count.py).
HAND_SOURCE_ANSWERS: dict[str, dict[str, Callable[[JSON], JSON]]] = {
    "anthropic": {"openai": hand_openai_message},
    "openai-responses": {"openai": hand_openai_as_response},
}


# ---------------------------------------------------------------- streams (tools/bench_stream.py --hand)
#
# The least a stream translator written by hand does for the same rules: read each event, send what it can as
# a chunk at once, keep what the whole answer needs, and translate the answer rebuilt from the events with the
# hand-written response translator above at the end. Only what the benchmark's streams carry is read.

HandStream = Callable[[list[str]], tuple[list[JSON], TranslateResult]]

try:  # the fastest parse installed, as the engine's own (orjson, the `fast` extra), so the parse is no difference
    from orjson import loads as _loads
except ImportError:
    _loads = json.loads


def _chunk(head: JSON, delta: JSON, finish: str | None = None) -> JSON:
    return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


def _closing(head: JSON, result: TranslateResult) -> list[JSON]:
    """The finish reason's chunk and the usage's (Chat Completions' `stream_options.include_usage` shape)."""
    return [_chunk(head, {}, result.finish_reason), {**head, "choices": [], "usage": result.usage}]


def hand_gemini_stream(datas: list[str]) -> tuple[list[JSON], TranslateResult]:
    """Gemini `streamGenerateContent` events -> chunks and the result: each text or thought piece sent as it
    comes; calls without an id held whole (their ids hash the whole answer) and sent in one chunk at the end."""
    out: list[JSON] = []
    parts: list[JSON] = []
    candidate: JSON = {}
    answer: JSON = {}
    head: JSON | None = None
    for data in datas:
        event = _loads(data)
        if head is None:
            head = {"id": event["responseId"], "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": event["modelVersion"]}  # fmt: skip
            out.append(_chunk(head, {"role": "assistant", "content": ""}))
        for key, value in event.items():
            if key != "candidates":
                _merge_into(answer, key, value)
        for key, value in event["candidates"][0].items():
            if key != "content":
                _merge_into(candidate, key, value)
        opened: JSON | None = None  # the chunk that opened the answer: its pieces in the same event said as one
        for part in (event["candidates"][0].get("content") or {}).get("parts") or ():
            text = part.get("text")
            if text is None:
                parts.append(part)
                opened = None
                continue
            field = "reasoning_content" if part.get("thought") else "content"
            last = parts[-1] if parts else None
            if last is None or "text" not in last or bool(last.get("thought")) != bool(part.get("thought")):
                chunk = {field: text}
                opened = chunk if not parts else None
                parts.append(part)
                out.append(_chunk(head, chunk))
                continue
            parts[-1] = {**last, "text": last["text"] + text}
            if opened is not None:
                opened[field] += text
            else:
                out.append(_chunk(head, {field: text}))
    assert head is not None, "a stream of no events"
    answer["candidates"] = [{**candidate, "content": {"role": "model", "parts": parts}}]
    result = hand_gemini_response(answer)
    if result.tool_calls:
        entries: list[JSON] = []
        for index, call in enumerate(result.tool_calls):
            entries.append({"index": index, "id": call.id, "type": "function",
                            "function": {"name": call.name, "arguments": ""}})  # fmt: skip
            entries.append({"index": index, "function": {"arguments": call.arguments}})
        out.append(_chunk(head, {"tool_calls": entries}))
    return [*out, *_closing(head, result)], result


def hand_mistral_stream(datas: list[str]) -> tuple[list[JSON], TranslateResult]:
    """Mistral chunks -> chunks and the result: a text piece sent as it comes, each call (whole in one event,
    with its id) sent as its opening and its arguments at once; the answer rebuilt for the result."""
    out: list[JSON] = []
    calls: list[JSON] = []
    texts: list[str] = []
    answer: JSON = {"object": "chat.completion"}
    choice: JSON = {"index": 0}
    head: JSON | None = None
    for data in datas:
        if data == "[DONE]":
            break
        event = _loads(data)
        if head is None:
            head = {"id": event["id"], "object": "chat.completion.chunk", "created": event["created"],
                    "model": event["model"]}  # fmt: skip
        for key in ("id", "created", "model", "usage"):
            if key in event:
                answer[key] = event[key]
        for got in event["choices"]:
            if got.get("finish_reason") is not None:
                choice["finish_reason"] = got["finish_reason"]
            delta = got["delta"]
            if "role" in delta:
                out.append(_chunk(head, {"role": delta["role"], "content": delta.get("content") or ""}))
            elif delta.get("content"):
                texts.append(delta["content"])
                out.append(_chunk(head, {"content": delta["content"]}))
            entries: list[JSON] = []
            for call in delta.get("tool_calls") or ():
                index, function = call["index"], call["function"]
                entries.append({"index": index, "id": call["id"], "type": "function",
                                "function": {"name": function["name"], "arguments": ""}})  # fmt: skip
                entries.append({"index": index, "function": {"arguments": function["arguments"]}})
                calls.append(call)
            if entries:
                out.append(_chunk(head, {"tool_calls": entries}))
    assert head is not None, "a stream of no events"
    message: JSON = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    answer["choices"] = [{**choice, "message": message}]
    result = hand_mistral_response(answer)
    return [*out, *_closing(head, result)], result


def _merge_into(held: JSON, key: str, value: Any) -> None:
    """A repeated top-level value: an object's keys merged into the one held, anything else replaced."""
    if isinstance(value, dict) and isinstance(held.get(key), dict):
        held[key].update(value)
    else:
        held[key] = value


HAND_STREAMS: dict[str, HandStream] = {"gemini": hand_gemini_stream, "mistral": hand_mistral_stream}
