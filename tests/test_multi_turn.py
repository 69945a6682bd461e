"""Ten turns deep, for every provider: what a provider hands out survives the caller echoing the history.

A scripted, strict provider stub answers each turn with reasoning (and its signatures),
parallel tool calls and cached usage. The client loop echoes the history exactly as an
OpenAI SDK user would: `result.assistant_message()`, then one tool message per call (an
image result and an error result among them), and a new user question after each final
answer. Before answering, the stub
- applies the provider's own rules, as the real API would refuse the request (a
  missing or altered signature, thinking blocks not first, a tool call without its
  result, an empty text block, a key its SDK types do not know), and
- checks the whole history against what it handed out: every thinking block and
  signature, every tool call and result, in the right place, byte for byte.
A refusal is a 400 in the provider's error shape, so the client raises and the test
fails loudly, naming the broken guarantee. The last tests show the stub does refuse.
Every provider runs whole, and streamed where the stub serves its rules' framing (SERVE);
every provider whose response rules read reasoning must have a script (derived from the rules).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from deepdiff import DeepDiff

from support.judges import (
    ANTHROPIC_REQUEST,
    JUDGES,
    SDK_VALIDATORS,
    judge_anthropic,
    judge_bedrock,
    judge_cohere,
    judge_gemini,
    judge_mistral,
    judge_ollama,
    judge_openai,
    judge_responses,
)
from support.messages import accumulate, judge_event, judge_message
from support.responses import judge_response, judge_responses_request
from support.sse_encoders import ENCODERS, events_reply
from support.variants import with_variants
from toolnexus import (
    ProviderError,
    TranslateResult,
    TranslationError,
    create_client,
    load_rules,
    translate_request,
    translate_response,
)
from toolnexus.devtools.stub import ProviderStub, StubReply, StubRequest

TURNS = 10
SCHEDULE = (["two calls", "one call", "answer"] * 3 + ["answer"])[:TURNS]
QUESTIONS = [f"Question {n}: check the weather, the page and the log." for n in range(1, TURNS + 2)]
CITIES = ["Paris", "東京", "Lyon", "Oslo", "Lima", "Pune", "Kyiv", "Bern", "Doha", "Baku", "Rome"]
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
SYSTEM_TEXT = "You are a careful agent. Use the tools."
EFFORT = "medium"
DUMMY_SIGNATURE = "skip_thought_signature_validator"  # Gemini's documented "not signed by me" value


@dataclass(frozen=True)
class Features:
    """What the caller sends a provider: cache markers and rich tool results only where the API takes them."""

    cache_control: bool
    rich_results: bool


def tools(features: Features) -> list[dict[str, Any]]:
    declared = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather now.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "screenshot",
                "description": "A page's screenshot.",
                "parameters": {"type": "object", "properties": {"page": {"type": "string"}}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "read_log",
                "description": "The app log.",
                "parameters": {"type": "object", "properties": {"lines": {"type": "integer"}}},
            },
        },
    ]
    if features.cache_control:
        declared[-1] = {**declared[-1], "cache_control": {"type": "ephemeral"}}  # top level, as other layers take it
    return declared


def system_message(features: Features) -> dict[str, Any]:
    if not features.cache_control:
        return {"role": "system", "content": SYSTEM_TEXT}
    part = {"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    return {"role": "system", "content": [part]}


def calls_for(turn: int) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the provider asks for on a turn: (name, arguments)."""
    kind = SCHEDULE[turn - 1]
    if kind == "two calls":
        return [("get_weather", {"city": CITIES[turn]}), ("screenshot", {"page": f"/page/{turn}"})]
    if kind == "one call":
        return [("read_log", {"lines": turn})]
    return []


def tool_message(call_id: str, name: str, arguments: dict[str, Any], features: Features) -> dict[str, Any]:
    """What the caller's own tool returns, as the OpenAI tool message it appends."""
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
    if name == "get_weather":
        message["content"] = f"18°C in {arguments['city']}"
    elif name == "screenshot" and features.rich_results:
        message["content"] = [
            {"type": "text", "text": f"Captured {arguments['page']}:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ]
    elif name == "screenshot":
        message["content"] = f"Captured {arguments['page']}."
    elif features.rich_results:
        message |= {"content": "permission denied", "is_error": True}
    else:
        message["content"] = "error: permission denied"
    return message


class Refused(AssertionError):
    """What the real provider would answer with a 400."""


@dataclass
class Bound:
    """A value the stub did not choose (an id the translator synthesized): the same everywhere it appears."""

    name: str


def matches(expected: Any, actual: Any, bindings: dict[str, Any], where: str = "") -> None:
    if isinstance(expected, Bound):
        seen = bindings.setdefault(expected.name, actual)
        if seen != actual or not isinstance(actual, str) or not actual:
            raise Refused(f"{where}: {actual!r} does not match the id used for the same call ({seen!r})")
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.keys() != actual.keys():
            raise Refused(f"{where}: keys {sorted(actual)} differ from what was handed out {sorted(expected)}")
        for key in expected:
            matches(expected[key], actual[key], bindings, f"{where}.{key}")
        return
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            matches(e, a, bindings, f"{where}[{i}]")
        return
    if expected != actual or type(expected) is not type(actual):
        raise Refused(
            f"{where}: {json.dumps(actual, ensure_ascii=False)[:300]} differs from what was handed out "
            f"{json.dumps(expected, ensure_ascii=False)[:300]}"
        )


@dataclass
class Script:
    """One provider's strict stub: answers turn by turn and checks every request against what it handed out."""

    features: Features
    turn: int = 0
    history: list[Any] = field(default_factory=list)  # what the next request must carry, provider-native
    failures: list[str] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)
    judge: Callable[..., None] | None = None  # a variant's SDK judge, else the family's own below

    def respond(self, request: StubRequest) -> Any:
        body = request.body
        self.bodies.append(body)
        expected = self.history + self.question()
        try:
            self.provider_rules(body)
            self.check_config(body)
            matches(expected, self.conversation(body), {}, "history")
        except (AssertionError, UserWarning, ValueError) as exc:
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.failures.append(f"turn {self.turn + 1}: {message}")
            return StubReply(status=400, body=self.error(message))
        self.history = expected
        self.turn += 1
        return self.answer(self.turn)

    def question(self) -> list[Any]:
        """The user question this request must end with: the first, and one after each answer."""
        if self.turn and SCHEDULE[self.turn - 1] != "answer":
            return []
        asked = sum(1 for t in range(1, self.turn + 1) if SCHEDULE[t - 1] == "answer")
        return [self.user_turn(QUESTIONS[asked])]

    # per provider
    def provider_rules(self, body: Any) -> None: ...
    def check_config(self, body: Any) -> None: ...
    def conversation(self, body: Any) -> list[Any]: ...
    def user_turn(self, text: str) -> Any: ...
    def answer(self, turn: int) -> dict[str, Any]: ...
    def error(self, message: str) -> dict[str, Any]: ...


# ---------------------------------------------------------------- Anthropic


@dataclass
class AnthropicScript(Script):
    signed: dict[str, str] = field(default_factory=dict)  # signature -> the thinking it signs
    redacted: set[str] = field(default_factory=set)

    def error(self, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

    def user_turn(self, text: str) -> Any:
        return {"role": "user", "content": text}

    def conversation(self, body: Any) -> list[Any]:
        return list(body["messages"])

    def check_config(self, body: Any) -> None:
        if body.get("thinking") != {"type": "enabled", "budget_tokens": 8192} or body["max_tokens"] <= 8192:
            raise Refused(f"thinking: expected an 8192 budget below max_tokens, got {body.get('thinking')}")
        want = [{"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
        if body.get("system") != want:
            raise Refused(f"system: the cached prompt did not arrive as given: {body.get('system')}")
        if body["tools"][-1].get("cache_control") != {"type": "ephemeral"}:
            raise Refused("tools[2].cache_control: the marker did not arrive as given")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_anthropic)(
            body
        )  # SDK types, roles, tool_use answered first in the next user turn, no empty text
        messages = body["messages"]
        marks = json.dumps(body).count('"cache_control"')
        if marks > 4:
            raise Refused(f"A maximum of 4 blocks with cache_control may be provided. Found {marks}.")
        last_user = max(k for k, m in enumerate(messages) if m["role"] == "user" and _has_text(m))
        for k, message in enumerate(messages):
            if message["role"] != "assistant" or isinstance(message["content"], str):
                continue
            kinds = [block["type"] for block in message["content"]]
            reasoning = [n for n, kind in enumerate(kinds) if kind in ("thinking", "redacted_thinking")]
            if reasoning != list(range(len(reasoning))):
                raise Refused(f"messages.{k}.content: thinking blocks must come first in an assistant turn")
            if k > last_user and "tool_use" in kinds and not reasoning:
                raise Refused(
                    f"messages.{k}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{kinds[0]}`. When `thinking` is enabled, a final `assistant` message must start "
                    "with a thinking block"
                )
            for n, block in enumerate(message["content"]):
                if block["type"] == "thinking" and self.signed.get(block["signature"]) != block["thinking"]:
                    raise Refused(f"messages.{k}.content.{n}: Invalid `signature` in `thinking` block")
                if block["type"] == "redacted_thinking" and block["data"] not in self.redacted:
                    raise Refused(f"messages.{k}.content.{n}: Invalid `data` in `redacted_thinking` block")

    def answer(self, turn: int) -> dict[str, Any]:
        thinking = f"Turn {turn}: {SCHEDULE[turn - 1]}; I keep the earlier results in mind."
        signature = f"EqQBCkgIBRABGAIiQ{turn:02d}Sig" + "x" * turn
        self.signed[signature] = thinking
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": thinking, "signature": signature}]
        if turn % 3 == 1:  # some turns also carry encrypted reasoning
            data = f"EmwKAhgBEgy3va3pzix{turn:02d}Redacted"
            self.redacted.add(data)
            content.append({"type": "redacted_thinking", "data": data})
        if turn % 3 == 2:  # and some a signed block with nothing to read (display omitted)
            empty = f"ErUBCkYIBRgCIkDx9Zb{turn:02d}Empty"
            self.signed[empty] = ""
            content.append({"type": "thinking", "thinking": "", "signature": empty})
        calls = calls_for(turn)
        content.append({"type": "text", "text": f"Working on it ({turn})." if calls else f"Answer {turn}: done."})
        uses = [
            {"type": "tool_use", "id": f"toolu_{turn:02d}_{j}", "name": n, "input": a} for j, (n, a) in enumerate(calls)
        ]
        content += uses
        self.history.append({"role": "assistant", "content": copy.deepcopy(content)})
        if uses:
            self.history.append({"role": "user", "content": [self.result(use) for use in uses]})
        return {
            "id": f"msg_{turn:02d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
            "stop_reason": "tool_use" if uses else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 40 + turn,
                "cache_read_input_tokens": 900 * turn,
                "cache_creation_input_tokens": 60,
                "output_tokens": 300,
                "output_tokens_details": {"thinking_tokens": 180},
            },
        }

    def result(self, use: dict[str, Any]) -> dict[str, Any]:
        """How Anthropic must receive the caller's tool message for this call."""
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": use["id"]}
        name, arguments = use["name"], use["input"]
        if name == "get_weather":
            return block | {"content": f"18°C in {arguments['city']}"}
        if name == "screenshot":
            image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
            return block | {"content": [{"type": "text", "text": f"Captured {arguments['page']}:"}, image]}
        return block | {"content": "permission denied", "is_error": True}


def _has_text(message: dict[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, str) or any(block["type"] == "text" for block in content)


# ---------------------------------------------------------------- Gemini


@dataclass
class GeminiScript(Script):
    signatures: set[str] = field(default_factory=set)

    def error(self, message: str) -> dict[str, Any]:
        return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}

    def user_turn(self, text: str) -> Any:
        return {"role": "user", "parts": [{"text": text}]}

    def conversation(self, body: Any) -> list[Any]:
        return list(body["contents"])

    def check_config(self, body: Any) -> None:
        thinking = body.get("generationConfig", {}).get("thinkingConfig")
        if thinking != {"thinkingBudget": 8192, "includeThoughts": True}:
            raise Refused(f"generationConfig.thinkingConfig: {thinking}")
        if body.get("systemInstruction") != {"parts": [{"text": SYSTEM_TEXT}]}:
            raise Refused(f"systemInstruction: {body.get('systemInstruction')}")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_gemini)(
            body
        )  # SDK types, camelCase, turn order, one response per call, no empty text part
        contents = body["contents"]
        last_user = max(
            k for k, c in enumerate(contents) if c["role"] == "user" and any("text" in p for p in c["parts"])
        )
        for k, turn in enumerate(contents):
            calls = [p for p in turn["parts"] if "functionCall" in p]
            if k > last_user and calls and "thoughtSignature" not in calls[0]:
                name = calls[0]["functionCall"]["name"]
                raise Refused(
                    "Function call is missing a thought_signature in functionCall parts. This is required "
                    f"for tools to work correctly. Additional data, function call `default_api:{name}`, "
                    f"position {turn['parts'].index(calls[0]) + 1}."
                )
            for n, part in enumerate(turn["parts"]):
                signature = part.get("thoughtSignature")
                if signature is not None and signature not in self.signatures and signature != DUMMY_SIGNATURE:
                    raise Refused(f"contents[{k}].parts[{n}]: Corrupted thought signature.")

    def answer(self, turn: int) -> dict[str, Any]:
        calls = calls_for(turn)
        signature = base64.b64encode(f"gemini signature of turn {turn}".encode()).decode()  # proto bytes
        self.signatures.add(signature)
        parts: list[dict[str, Any]] = [{"text": f"**Turn {turn}**\n\nWhat do I still need?", "thought": True}]
        if calls:
            parts.append({"text": f"Working on it ({turn})."})
            with_ids = turn % 2 == 0  # some answers carry call ids, most generateContent answers do not
            for j, (name, arguments) in enumerate(calls):
                call: dict[str, Any] = {"name": name, "args": arguments}
                if with_ids:
                    call = {"id": f"fc_{turn}_{j}", **call}
                part: dict[str, Any] = {"functionCall": call}
                if j == 0:  # parallel calls: only the first carries the step's signature
                    part["thoughtSignature"] = signature
                parts.append(part)
        else:
            parts.append({"text": f"Answer {turn}: done.", "thoughtSignature": signature})
        self.history.append({"role": "model", "parts": [self.replayed(p, turn, j) for j, p in enumerate(parts[1:])]})
        if calls:
            self.history.append({"role": "user", "parts": [self.result(p, turn, j) for j, p in enumerate(parts[2:])]})
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": 1000 * turn,
                "cachedContentTokenCount": 800 * turn,
                "candidatesTokenCount": 30,
                "thoughtsTokenCount": 60,
                "totalTokenCount": 1000 * turn + 90,
            },
            "modelVersion": "gemini-3-pro-preview",
            "responseId": f"resp-{turn}",
        }

    def replayed(self, part: dict[str, Any], turn: int, j: int) -> dict[str, Any]:
        """A model part as it must come back: as handed out, with the caller's id where Gemini gave none."""
        part = copy.deepcopy(part)
        call = part.get("functionCall")
        if call is not None and "id" not in call:
            part["functionCall"] = {"id": Bound(f"{turn}/{j - 1}"), **call}
        return part

    def result(self, part: dict[str, Any], turn: int, j: int) -> dict[str, Any]:
        call = part["functionCall"]
        answer: dict[str, Any] = {"id": call.get("id", Bound(f"{turn}/{j}")), "name": call["name"]}
        arguments = call["args"]
        if call["name"] == "get_weather":
            answer["response"] = {"result": f"18°C in {arguments['city']}"}
        elif call["name"] == "screenshot":
            answer["response"] = {"result": f"Captured {arguments['page']}:"}
            answer["parts"] = [{"inlineData": {"mimeType": "image/png", "data": PNG}}]
        else:
            answer["response"] = {"error": "permission denied"}
        return {"functionResponse": answer}


# ---------------------------------------------------------------- OpenAI


@dataclass
class ChatScript(Script):
    """A chat API whose messages start with the system prompt as a string and take user text as a string."""

    def user_turn(self, text: str) -> Any:
        return {"role": "user", "content": text}

    def conversation(self, body: Any) -> list[Any]:
        if body["messages"][0] != {"role": "system", "content": SYSTEM_TEXT}:
            raise Refused(f"messages[0]: {body['messages'][0]}")
        return list(body["messages"][1:])


def google_signature(turn: int) -> dict[str, Any]:
    """What Google's OpenAI-compatible layer hands out: a thought signature in extra_content."""
    return {"google": {"thought_signature": base64.b64encode(f"openai-layer signature {turn}".encode()).decode()}}


def thinking_text(turn: int) -> str:
    return f"Turn {turn}: {SCHEDULE[turn - 1]}; I keep the earlier results in mind."


def reasoning_content(turn: int) -> dict[str, Any]:
    """DeepSeek's and xAI's readable reasoning beside content (DeepSeek wants it back inside a tool-calling turn)."""
    return {"reasoning_content": thinking_text(turn)}


def reasoning_details(turn: int) -> dict[str, Any]:
    """OpenRouter's readable reasoning and its reasoning_details (summaries, encrypted blocks, signatures)."""
    signed = {"type": "reasoning.text", "text": thinking_text(turn), "signature": f"sig{turn:02d}", "index": 0}
    encrypted = base64.b64encode(f"encrypted {turn}".encode()).decode()
    hidden = {"type": "reasoning.encrypted", "data": encrypted, "index": 1}
    details = [{**signed, "format": "anthropic-claude-v1"}, hidden]
    return {"reasoning": thinking_text(turn), "reasoning_details": details}


@dataclass
class OpenAIScript(ChatScript):
    """`reasoning`: what this OpenAI-compatible provider hands out beside the answer; `renamed`: the keys of it
    that come back under another name (OpenRouter's readable `reasoning` comes back as reasoning_content)."""

    reasoning: Callable[[int], dict[str, Any]] | None = None
    renamed: dict[str, str] = field(default_factory=dict)

    def error(self, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}

    def check_config(self, body: Any) -> None:
        effort = body.get("reasoning_effort", body.get("reasoning", {}).get("effort"))  # OpenRouter: reasoning.effort
        if effort != EFFORT:
            raise Refused(f"reasoning_effort: {effort}")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_openai)(
            body
        )  # SDK types; each assistant tool call answered by the tool messages right after it

    def call_id(self, turn: int, j: int) -> str:
        return f"call_{turn:02d}_{j}"

    def answer(self, turn: int) -> dict[str, Any]:
        calls = [
            {"id": self.call_id(turn, j), "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for j, (n, a) in enumerate(calls_for(turn))
        ]
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else f"Answer {turn}: done."}
        if calls:
            message["tool_calls"] = calls
        if self.reasoning is not None:
            message |= self.reasoning(turn)
        elif calls:  # an OpenAI-compatible layer that signs its calls (Google's): the first call carries it
            calls[0]["extra_content"] = google_signature(turn)
        self.history.append({self.renamed.get(k, k): copy.deepcopy(v) for k, v in message.items()})
        for call in calls:
            arguments = json.loads(call["function"]["arguments"])
            self.history.append(tool_message(call["id"], call["function"]["name"], arguments, self.features))
        return {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 1_700_000_000 + turn,
            "model": "o4-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {
                "prompt_tokens": 1000 * turn,
                "completion_tokens": 400,
                "total_tokens": 1000 * turn + 400,
                "prompt_tokens_details": {"cached_tokens": 512 * turn},
                "completion_tokens_details": {"reasoning_tokens": 256},
            },
        }


@dataclass
class MistralScript(OpenAIScript):
    """Mistral's ids are exactly 9 letters and digits (its own come back unchanged) and a tool message carries its
    function's name. Its rules read no reasoning (reasoning_effort is dropped, noted), so none is handed out."""

    def call_id(self, turn: int, j: int) -> str:
        return f"c{turn:02d}{j}Mstrl"

    def check_config(self, body: Any) -> None:
        if "reasoning_effort" in body:
            raise Refused("reasoning_effort: Mistral's chat completions take none")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_mistral)(body)  # SDK models; 9-character ids; each call answered right after its turn

    def answer(self, turn: int) -> dict[str, Any]:
        before = len(self.history)
        answer = super().answer(turn)
        sent, *results = self.history[before:]
        calls = {c["id"]: c for c in sent.get("tool_calls", [])}
        for call in calls.values():
            call.pop("extra_content", None)  # no OpenAI-compatible layer signed these
        if sent["content"] is None:
            sent["content"] = ""  # a tool-call turn's content goes as an empty string
        for result in results:
            result["name"] = calls[result["tool_call_id"]]["function"]["name"]
        message = answer["choices"][0]["message"]
        for j, call in enumerate(message.get("tool_calls", [])):
            call.pop("extra_content", None)
            call["index"] = j  # Mistral numbers its calls, in whole answers as in chunks
        usage = answer["usage"]
        answer["usage"] = {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        return answer


# ---------------------------------------------------------------- Bedrock Converse


@dataclass
class BedrockScript(Script):
    signed: dict[str, str] = field(default_factory=dict)  # signature -> the reasoning text it signs
    redacted: set[str] = field(default_factory=set)

    def error(self, message: str) -> dict[str, Any]:
        return {"message": message}  # Converse's error body; its type is in the x-amzn-errortype header

    def user_turn(self, text: str) -> Any:
        return {"role": "user", "content": [{"text": text}]}

    def conversation(self, body: Any) -> list[Any]:
        return list(body["messages"])

    def check_config(self, body: Any) -> None:
        thinking = body.get("additionalModelRequestFields", {}).get("thinking")
        if thinking != {"type": "enabled", "budget_tokens": 8192} or body["inferenceConfig"]["maxTokens"] <= 8192:
            raise Refused(f"thinking: expected an 8192 budget below maxTokens, got {thinking}")
        if body.get("system") != [{"text": SYSTEM_TEXT}]:
            raise Refused(f"system: expected one text block, got {body.get('system')}")
        if [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]] != ["get_weather", "screenshot", "read_log"]:
            raise Refused("toolConfig.tools: the declared tools did not arrive")

    def provider_rules(self, body: Any) -> None:
        judge_bedrock(body)  # the service model; roles alternate from a user turn; toolUse answered; no empty text
        messages = body["messages"]
        last_user = max(k for k, m in enumerate(messages) if any("text" in b for b in m["content"]))
        for k, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            kinds = [next(iter(block)) for block in message["content"]]
            reasoning = [n for n, kind in enumerate(kinds) if kind == "reasoningContent"]
            if reasoning != list(range(len(reasoning))):
                raise Refused(f"messages.{k}.content: reasoning blocks must come first in an assistant turn")
            if k > last_user and "toolUse" in kinds and not reasoning:
                raise Refused(f"messages.{k}.content.0: with thinking enabled, the turn must start with reasoning")
            for n, block in enumerate(message["content"]):
                content = block.get("reasoningContent", {})
                text = content.get("reasoningText")
                if text is not None and self.signed.get(text.get("signature", "")) != text.get("text"):
                    raise Refused(f"messages.{k}.content.{n}: the reasoning signature is invalid")
                if "redactedContent" in content and content["redactedContent"] not in self.redacted:
                    raise Refused(f"messages.{k}.content.{n}: the redacted reasoning is not ours")

    def answer(self, turn: int) -> dict[str, Any]:
        thinking = f"Turn {turn}: {SCHEDULE[turn - 1]}; I keep the earlier results in mind."
        signature = f"EqQBCkgIBRABGAIiQ{turn:02d}Sig" + "x" * turn
        self.signed[signature] = thinking
        content: list[dict[str, Any]] = [
            {"reasoningContent": {"reasoningText": {"text": thinking, "signature": signature}}}
        ]
        if turn % 3 == 1:  # some turns also carry encrypted reasoning (bytes: base64 text on the wire)
            data = base64.b64encode(f"redacted reasoning {turn}".encode()).decode()
            self.redacted.add(data)
            content.append({"reasoningContent": {"redactedContent": data}})
        if turn % 3 == 2:  # and some a signed block with nothing to read
            empty = f"ErUBCkYIBRgCIkDx9Zb{turn:02d}Empty"
            self.signed[empty] = ""
            content.append({"reasoningContent": {"reasoningText": {"text": "", "signature": empty}}})
        calls = calls_for(turn)
        content.append({"text": f"Working on it ({turn})." if calls else f"Answer {turn}: done."})
        uses = [
            {"toolUse": {"toolUseId": f"tooluse_{turn:02d}_{j}", "name": n, "input": a}}
            for j, (n, a) in enumerate(calls)
        ]
        content += uses
        self.history.append({"role": "assistant", "content": copy.deepcopy(content)})
        if uses:
            self.history.append({"role": "user", "content": [self.result(use["toolUse"]) for use in uses]})
        prompt = 40 + turn
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if uses else "end_turn",
            "usage": {
                "inputTokens": prompt,
                "outputTokens": 300,
                "totalTokens": prompt + 900 * turn + 60 + 300,
                "cacheReadInputTokens": 900 * turn,
                "cacheWriteInputTokens": 60,
            },
            "metrics": {"latencyMs": 800 + turn},
        }

    def result(self, use: dict[str, Any]) -> dict[str, Any]:
        """How Converse must receive the caller's tool message for this call."""
        block: dict[str, Any] = {"toolUseId": use["toolUseId"]}
        name, arguments = use["name"], use["input"]
        if name == "get_weather":
            return {"toolResult": block | {"content": [{"text": f"18°C in {arguments['city']}"}]}}
        if name == "screenshot":
            image = {"image": {"format": "png", "source": {"bytes": PNG}}}
            return {"toolResult": block | {"content": [{"text": f"Captured {arguments['page']}:"}, image]}}
        return {"toolResult": block | {"content": [{"text": "permission denied"}], "status": "error"}}


# ---------------------------------------------------------------- Cohere v2


@dataclass
class CohereScript(ChatScript):
    """A tool turn carries Cohere's tool_plan and its calls; an answer its thinking and text. Both come back as
    tool_plan (the readable reasoning), every result as a document naming its call."""

    def error(self, message: str) -> dict[str, Any]:
        return {"message": message}

    def check_config(self, body: Any) -> None:
        if body.get("thinking", {}).get("type") != "enabled":
            raise Refused(f"thinking: {body.get('thinking')}")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_cohere)(body)  # SDK types, no unknown key, each result answers an earlier call

    def answer(self, turn: int) -> dict[str, Any]:
        calls = [
            {"id": f"{n}_{turn:02d}{j}k3x9", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for j, (n, a) in enumerate(calls_for(turn))
        ]
        message: dict[str, Any] = {"role": "assistant"}
        if calls:
            message |= {"tool_plan": thinking_text(turn), "tool_calls": calls}
            sent = copy.deepcopy(message)
        else:
            thinking = {"type": "thinking", "thinking": thinking_text(turn)}
            message["content"] = [thinking, {"type": "text", "text": f"Answer {turn}: done."}]
            sent = {"role": "assistant", "tool_plan": thinking_text(turn), "content": message["content"][1:]}
        self.history.append(sent)
        for call in calls:
            arguments = json.loads(call["function"]["arguments"])
            given = tool_message(call["id"], call["function"]["name"], arguments, self.features)["content"]
            document = {"id": call["id"], "data": {"result": given}}
            content = [{"type": "document", "document": document}]
            self.history.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        usage = {
            "billed_units": {"input_tokens": 40 + turn, "output_tokens": 300},
            "tokens": {"input_tokens": 1000 * turn, "output_tokens": 300},
            "cached_tokens": 800 * turn,
        }
        reason = "TOOL_CALL" if calls else "COMPLETE"
        return {"id": f"c{turn:02d}", "finish_reason": reason, "message": message, "usage": usage}


# ---------------------------------------------------------------- Ollama


@dataclass
class OllamaScript(ChatScript):
    """Ollama's calls carry no id: its thinking comes back as `thinking`, each call as handed out, and each result
    names its function (`tool_name`), its text as content and an image as base64 in `images`."""

    def error(self, message: str) -> dict[str, Any]:
        return {"error": message}

    def check_config(self, body: Any) -> None:
        if body.get("think") != EFFORT:
            raise Refused(f"think: {body.get('think')}")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_ollama)(body)  # SDK types, no unknown key, content one string
        pending: list[str] = []
        for k, message in enumerate(body["messages"]):
            if message["role"] == "tool" and (not pending or message.get("tool_name") != pending.pop(0)):
                raise Refused(f"messages[{k}]: a tool result must name the call it answers (tool_name), in order")
            if message["role"] != "tool" and pending:
                raise Refused(f"messages[{k}]: the calls before it were not all answered")
            pending += [c["function"]["name"] for c in message.get("tool_calls") or []]

    def answer(self, turn: int) -> dict[str, Any]:
        calls = [{"function": {"name": n, "arguments": a}} for n, a in calls_for(turn)]
        message: dict[str, Any] = {"role": "assistant", "content": "" if calls else f"Answer {turn}: done."}
        message["thinking"] = thinking_text(turn)
        if calls:
            message["tool_calls"] = calls
        self.history.append(copy.deepcopy(message))
        for call in calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            self.history.append(self.result(tool_message("", name, arguments, self.features), name))
        return {"model": "qwen3", "created_at": f"2026-11-30T09:00:{turn:02d}Z", "message": message, "done": True,
                "done_reason": "stop", "prompt_eval_count": 1000 * turn, "eval_count": 300}  # fmt: skip

    @staticmethod
    def result(given: dict[str, Any], name: str) -> dict[str, Any]:
        """How Ollama must receive the caller's tool message: text joined, images as base64, no error flag."""
        content = given["content"]
        if isinstance(content, str):
            return {"role": "tool", "tool_name": name, "content": content}
        text = "".join(p["text"] for p in content if p["type"] == "text")
        images = [p["image_url"]["url"].split(",", 1)[1] for p in content if p["type"] == "image_url"]
        return {"role": "tool", "tool_name": name, "content": text, "images": images}


# ---------------------------------------------------------------- OpenAI Responses


@dataclass
class ResponsesScript(Script):
    """The Responses API with store false: every reasoning item must come back whole, encrypted content included,
    before the calls it led to; every function_call is answered by its function_call_output."""

    encrypted: dict[str, str] = field(default_factory=dict)  # reasoning item id -> the encrypted content handed out

    def error(self, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}

    def user_turn(self, text: str) -> Any:
        return {"type": "message", "role": "user", "content": text}

    def conversation(self, body: Any) -> list[Any]:
        return list(body["input"])

    def check_config(self, body: Any) -> None:
        if body.get("reasoning") != {"effort": EFFORT} or body.get("include") != ["reasoning.encrypted_content"]:
            raise Refused(f"reasoning: expected effort {EFFORT} with encrypted content, got {body.get('reasoning')}")
        if body.get("store") is not False or body.get("instructions") != SYSTEM_TEXT:
            raise Refused(f"store/instructions: got {body.get('store')}, {body.get('instructions')!r}")
        if [t["name"] for t in body["tools"]] != ["get_weather", "screenshot", "read_log"]:
            raise Refused("tools: the declared tools did not arrive")

    def provider_rules(self, body: Any) -> None:
        (self.judge or judge_responses)(body)  # SDK types; calls answered; assistant text; encrypted reasoning
        for k, item in enumerate(body["input"]):
            if item.get("type") == "reasoning" and self.encrypted.get(item["id"]) != item.get("encrypted_content"):
                raise Refused(f"input[{k}]: the encrypted content of reasoning item {item['id']} is not ours")

    def answer(self, turn: int) -> dict[str, Any]:
        summary = [{"type": "summary_text", "text": f"Turn {turn}: {SCHEDULE[turn - 1]}."}]
        if turn % 3 == 1:  # some turns summarise in two parts
            summary.append({"type": "summary_text", "text": "I keep the earlier results in mind."})
        if turn % 3 == 2:  # and some say nothing readable
            summary = []
        reasoning = {"id": f"rs_{turn:02d}", "type": "reasoning", "summary": summary,
                     "encrypted_content": f"gAAAAABo{turn:02d}Enc" + "q" * turn}  # fmt: skip
        self.encrypted[reasoning["id"]] = reasoning["encrypted_content"]
        calls = calls_for(turn)
        text = f"Working on it ({turn})." if calls else f"Answer {turn}: done."
        message = {"id": f"msg_{turn:02d}", "type": "message", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
        uses = [
            {"id": f"fc_{turn:02d}_{j}", "type": "function_call", "call_id": f"call_{turn:02d}_{j}", "name": n,
             "arguments": json.dumps(a, ensure_ascii=False), "status": "completed"}
            for j, (n, a) in enumerate(calls)
        ]  # fmt: skip
        self.history.append(copy.deepcopy(reasoning))
        self.history.append({"type": "message", "role": "assistant", "content": text})
        for use in uses:
            self.history.append({k: use[k] for k in ("type", "call_id", "name", "arguments")})
        self.history += [self.result(use) for use in uses]
        cached = 900 * turn
        return {
            "id": f"resp_{turn:02d}", "object": "response", "created_at": 1_756_315_696 + turn,
            "status": "completed", "error": None, "incomplete_details": None, "instructions": SYSTEM_TEXT,
            "metadata": {}, "model": "gpt-5-2025-08-07", "output": [reasoning, message, *uses],
            "parallel_tool_calls": True, "temperature": 1.0, "tool_choice": "auto", "tools": [], "top_p": 1.0,
            "usage": {"input_tokens": cached + 40 + turn,
                      "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                      "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 180},
                      "total_tokens": cached + 40 + turn + 300},
        }  # fmt: skip

    def result(self, use: dict[str, Any]) -> dict[str, Any]:
        """How Responses must receive the caller's tool message for this call."""
        item: dict[str, Any] = {"type": "function_call_output", "call_id": use["call_id"]}
        name, arguments = use["name"], json.loads(use["arguments"])
        if name == "get_weather":
            return item | {"output": f"18°C in {arguments['city']}"}
        if name == "screenshot":
            image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"}
            return item | {"output": [{"type": "input_text", "text": f"Captured {arguments['page']}:"}, image]}
        return item | {"output": "permission denied"}  # is_error has no counterpart: dropped, noted


SCRIPTS: dict[str, Callable[[], Script]] = {
    "anthropic": lambda: AnthropicScript(Features(cache_control=True, rich_results=True)),
    "bedrock": lambda: BedrockScript(Features(cache_control=False, rich_results=True)),
    "gemini": lambda: GeminiScript(Features(cache_control=True, rich_results=True)),
    "openai": lambda: OpenAIScript(Features(cache_control=False, rich_results=False)),
    "vertex-anthropic": lambda: AnthropicScript(
        Features(cache_control=True, rich_results=True), judge=JUDGES["vertex-anthropic"]
    ),
    "openrouter": lambda: OpenAIScript(
        Features(cache_control=False, rich_results=False),
        judge=JUDGES["openrouter"],
        reasoning=reasoning_details,
        renamed={"reasoning": "reasoning_content"},
    ),
    "deepseek": lambda: OpenAIScript(
        Features(cache_control=False, rich_results=False), judge=JUDGES["deepseek"], reasoning=reasoning_content
    ),
    "xai": lambda: OpenAIScript(
        Features(cache_control=False, rich_results=False), judge=JUDGES["xai"], reasoning=reasoning_content
    ),
    "mistral": lambda: MistralScript(Features(cache_control=False, rich_results=False)),
    "cohere": lambda: CohereScript(Features(cache_control=False, rich_results=False)),
    "ollama": lambda: OllamaScript(Features(cache_control=False, rich_results=True)),
    "openai-responses": lambda: ResponsesScript(Features(cache_control=False, rich_results=True)),
}
SCRIPTS = with_variants(SCRIPTS)  # a variant without an entry takes its parent's


# ---------------------------------------------------------------- the caller


Echo = Callable[[TranslateResult], dict[str, Any]]


def as_the_sdk_user_does(result: TranslateResult) -> dict[str, Any]:
    return result.assistant_message()


def streams(provider: str) -> bool:
    """Whether the provider streams (in its own framing: SSE, NDJSON lines or AWS event-stream frames)."""
    return load_rules().get(provider).streaming is not None


def served(provider: str, script: Script, streamed: bool) -> Callable[[StubRequest], Any]:
    """The script as the stub's responder: a streamed call's body must ask for the stream as the rules say, and
    its answer goes out as the provider's stream events (a refusal stays the provider's error body)."""
    if not streamed:
        return script.respond
    streaming = load_rules().get(provider).streaming
    assert streaming is not None
    rng = random.Random(provider)

    def respond(request: StubRequest) -> Any:
        asked = {k: request.body.get(k) for k in streaming.body}
        if asked != streaming.body:
            return StubReply(status=400, body=script.error(f"a streamed call must send {streaming.body}, got {asked}"))
        plain = {k: v for k, v in request.body.items() if k not in streaming.body}
        answer = script.respond(StubRequest(request.path, request.headers, plain, request.raw))
        if isinstance(answer, StubReply):
            return answer
        return events_reply(provider, ENCODERS[provider](answer, rng), rng, cuts=3)

    return respond


async def converse(
    provider: str,
    script: Script,
    echo: Echo = as_the_sdk_user_does,
    *,
    drop_result: bool = False,
    streamed: bool = False,
) -> list[TranslateResult]:
    """The caller's loop: translate (or stream), append what came back, run the tools, ask again after each
    answer. Each request's history is built only from the earlier results."""
    features = script.features
    messages: list[dict[str, Any]] = [system_message(features), {"role": "user", "content": QUESTIONS[0]}]
    asked = 1
    results = []
    options: dict[str, Any] = {"tools": tools(features), "params": {"reasoning_effort": EFFORT}}
    with ProviderStub(served(provider, script, streamed)) as stub:
        async with create_client(stub.base_url, provider, "m", api_key="k", max_retries=0) as client:
            for _ in range(TURNS):
                if streamed:
                    stream = client.translate_stream(messages, **options)
                    assert [chunk async for chunk in stream]
                    result = stream.result
                else:
                    result = await client.translate(messages, **options)
                results.append(result)
                messages.append(echo(result))
                answers = [
                    tool_message(call.id, call.name, json.loads(call.arguments), features) for call in result.tool_calls
                ]
                messages += answers[:-1] if drop_result else answers
                if not result.tool_calls:
                    messages.append({"role": "user", "content": QUESTIONS[asked]})
                    asked += 1
    return results


def reads_reasoning(provider: str) -> bool:
    """The provider's response rules read reasoning or something to hand back (a signed block, a signature on a
    tool call, reasoning_details): its answers must survive ten turns of echoed history."""
    sources = load_rules().get(provider).outbound.sources
    return any(
        parts.reasoning is not None or parts.message is not None or "extra_content" in (parts.tool_call or {})
        for source in sources
        for parts in source.parts.values()
    )


def test_every_provider_whose_rules_read_reasoning_runs_the_ten_turns() -> None:
    readers = {name for name in load_rules().names() if reads_reasoning(name)}
    assert {"anthropic", "openrouter", "cohere"} <= readers and "mistral" not in readers, readers  # it tells them apart
    assert readers <= set(SCRIPTS), f"no ten-turn script for {sorted(readers - set(SCRIPTS))}"


RUNS = [(p, False) for p in sorted(SCRIPTS)] + [(p, True) for p in sorted(SCRIPTS) if streams(p)]


@pytest.mark.parametrize(("provider", "streamed"), RUNS, ids=[f"{p}-{'streamed' if s else 'whole'}" for p, s in RUNS])
def test_ten_turns_keep_every_signature_thinking_block_and_tool_result(provider: str, streamed: bool) -> None:
    script = SCRIPTS[provider]()
    try:
        results = asyncio.run(converse(provider, script, streamed=streamed))
    except ProviderError as exc:
        raise AssertionError(f"{provider} refused: {script.failures or exc}") from None
    assert not script.failures, script.failures
    counted = load_rules().get(provider).source.data["response"]["usage"]  # the counts the rules read
    assert len(results) == len(script.bodies) == TURNS
    assert [bool(r.tool_calls) for r in results] == [kind != "answer" for kind in SCHEDULE]
    for turn, result in enumerate(results, 1):
        usage = result.usage
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"], (turn, usage)
        if "prompt_tokens_details" in counted:
            assert usage["prompt_tokens_details"]["cached_tokens"] > 0, (turn, usage)
        if "completion_tokens_details" in counted:
            reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
            assert 0 < reasoning <= usage["completion_tokens"], (turn, usage)
        assert result.finish_reason == ("tool_calls" if result.tool_calls else "stop")


def test_the_anthropic_history_grows_by_exactly_what_was_handed_out() -> None:
    script = SCRIPTS["anthropic"]()
    results = asyncio.run(converse("anthropic", script))
    last = script.bodies[-1]["messages"]
    thinking = [b for m in last if m["role"] == "assistant" for b in m["content"] if b["type"] == "thinking"]
    assert len(thinking) == TURNS - 1 + sum(
        1 for t in range(1, TURNS) if t % 3 == 2
    )  # every turn's, and the empty ones
    assert all(r.reasoning_content.startswith(f"Turn {t}:") for t, r in enumerate(results, 1))
    assert [b["type"] for b in results[0].assistant_message()["thinking_blocks"]] == ["thinking", "redacted_thinking"]


def test_gemini_signatures_ride_on_the_tool_calls_and_the_message() -> None:
    script = SCRIPTS["gemini"]()
    results = asyncio.run(converse("gemini", script))
    first = results[0].tool_calls_json()
    assert first[0]["extra_content"]["google"]["thought_signature"] in script.signatures
    assert "extra_content" not in first[1]  # the second of parallel calls had no signature
    answer = results[2].assistant_message()
    assert answer["extra_content"]["google"]["thought_signature"] in script.signatures
    sent = [p["thoughtSignature"] for c in script.bodies[-1]["contents"] for p in c["parts"] if "thoughtSignature" in p]
    assert len(sent) == TURNS - 1 and set(sent) <= script.signatures  # every earlier turn's, none invented


@pytest.mark.parametrize("streamed", [False, True] if streams("ollama") else [False])
def test_ollama_results_name_the_calls_whose_ids_were_synthesized(streamed: bool) -> None:
    """Ollama's calls carry no id: each gets a synthesized one (noted, never the same twice in a conversation),
    and the results sent back name their call's function instead, in the calls' order."""
    script = SCRIPTS["ollama"]()
    results = asyncio.run(converse("ollama", script, streamed=streamed))
    ids = [call.id for result in results for call in result.tool_calls]
    assert len(ids) == len(set(ids)) == sum(len(calls_for(t)) for t in range(1, TURNS + 1))
    synthesized = [n for r in results for n in r.notes if n.kind == "synthesized"]
    assert len(synthesized) == len(ids) and all(any(i in n.message for i in ids) for n in synthesized)
    last = script.bodies[-1]["messages"]
    names = [call["function"]["name"] for m in last for call in m.get("tool_calls") or []]
    assert [m["tool_name"] for m in last if m["role"] == "tool"] == names
    assert not any("tool_call_id" in m or "id" in c for m in last for c in m.get("tool_calls") or [m])


# ---------------------------------------------------------------- the stub refuses what the provider refuses


def _plain_echo(result: TranslateResult) -> dict[str, Any]:
    """What a caller does that keeps only OpenAI's own fields (drops thinking_blocks and extra_content)."""
    message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in result.tool_calls
        ]
    return message


@pytest.mark.parametrize(
    ("provider", "refusal"),
    [
        ("anthropic", "Expected `thinking` or `redacted_thinking`"),
        ("gemini", "differs from what was handed out"),  # the documented dummy instead of the real signature
    ],
)
def test_an_echo_that_drops_signatures_is_refused(provider: str, refusal: str) -> None:
    script = SCRIPTS[provider]()
    with pytest.raises(ProviderError) as info:
        asyncio.run(converse(provider, script, _plain_echo))
    assert info.value.status == 400 and refusal in script.failures[0], script.failures


@pytest.mark.parametrize("provider", sorted(SCRIPTS))
def test_a_tool_call_without_its_result_is_refused(provider: str) -> None:
    script = SCRIPTS[provider]()
    with pytest.raises(ProviderError):
        asyncio.run(converse(provider, script, drop_result=True))
    assert script.failures and script.failures[0].startswith("turn 2:"), script.failures


def _second_request(provider: str) -> tuple[Script, Any]:
    """A script that answered the first request, and the second request a caller echoing correctly sends."""
    script = SCRIPTS[provider]()
    features = script.features
    messages = [system_message(features), {"role": "user", "content": QUESTIONS[0]}]
    request = {"model": "m", "messages": messages, "tools": tools(features), "reasoning_effort": EFFORT}
    answer = script.respond(StubRequest("/", {}, translate_request(provider, request)))
    first = translate_response(provider, answer)
    messages += [first.assistant_message()]
    messages += [tool_message(c.id, c.name, json.loads(c.arguments), features) for c in first.tool_calls]
    body = translate_request(provider, {**request, "messages": messages})
    assert not isinstance(copy.deepcopy(script).respond(StubRequest("/", {}, body)), StubReply), "refused as is"
    return script, body


def _refusal(provider: str, change: Callable[[list[Any]], Any]) -> str:
    script, body = _second_request(provider)
    broken = copy.deepcopy(body)
    change(broken["messages" if "messages" in broken else "contents"])
    assert DeepDiff(body, broken), "the change changed nothing"
    reply = script.respond(StubRequest("/", {}, broken))
    assert isinstance(reply, StubReply) and reply.status == 400, "the stub accepted a body the provider refuses"
    return script.failures[-1]


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (lambda m: m[1]["content"].reverse(), "thinking blocks must come first"),
        (lambda m: m[1]["content"][0].update(signature="forged"), "Invalid `signature`"),
        (lambda m: m[1]["content"].insert(2, {"type": "text", "text": ""}), "empty text block"),
        (lambda m: m.pop(2), "tool_use never answered"),
    ],
    ids=["thinking-not-first", "altered-signature", "empty-text", "tool-use-without-result"],
)
def test_the_anthropic_stub_refuses_what_anthropic_refuses(change: Callable[[list[Any]], Any], refusal: str) -> None:
    assert refusal in _refusal("anthropic", change)


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (lambda c: c[1]["parts"][1].pop("thoughtSignature"), "missing a thought_signature"),
        (lambda c: c[1]["parts"][1].update(thoughtSignature="Zm9yZ2Vk"), "Corrupted thought signature"),
        (lambda c: c[1]["parts"].append({"text": ""}), "empty text part"),
        (lambda c: c.pop(2), "never answered"),
    ],
    ids=["missing-signature", "altered-signature", "empty-text", "call-without-result"],
)
def test_the_gemini_stub_refuses_what_gemini_refuses(change: Callable[[list[Any]], Any], refusal: str) -> None:
    assert refusal in _refusal("gemini", change)


def test_bedrock_reasoning_comes_back_first_with_its_signature() -> None:
    script = SCRIPTS["bedrock"]()
    results = asyncio.run(converse("bedrock", script))
    last = script.bodies[-1]["messages"]
    signed = [
        b
        for m in last
        if m["role"] == "assistant"
        for b in m["content"]
        if "reasoningText" in b.get("reasoningContent", {})
    ]
    assert len(signed) == TURNS - 1 + sum(1 for t in range(1, TURNS) if t % 3 == 2)  # every turn's, and the empty ones
    assert all(r.reasoning_content.startswith(f"Turn {t}:") for t, r in enumerate(results, 1))
    first = results[0].assistant_message()["thinking_blocks"]  # the one shape thinking_blocks have (Anthropic's)
    assert [b["type"] for b in first] == ["thinking", "redacted_thinking"]
    assert first[0]["signature"] == script.history[1]["content"][0]["reasoningContent"]["reasoningText"]["signature"]


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        (lambda m: m[1]["content"].reverse(), "reasoning blocks must come first"),
        (lambda m: m[1]["content"][0]["reasoningContent"]["reasoningText"].update(signature="forged"), "signature"),
        (lambda m: m[1]["content"].insert(2, {"text": ""}), "text block is not empty"),
        (lambda m: m.pop(2), "answered in the next turn"),
        (lambda m: m.insert(3, {"role": "user", "content": [{"text": "and?"}]}), "roles must alternate"),
    ],
    ids=["reasoning-not-first", "altered-signature", "empty-text", "tool-use-without-result", "two-user-turns"],
)
def test_the_bedrock_stub_refuses_what_converse_refuses(change: Callable[[list[Any]], Any], refusal: str) -> None:
    assert refusal in _refusal("bedrock", change)


@pytest.mark.parametrize("provider", sorted(SCRIPTS))
def test_the_scripted_answers_are_what_the_provider_sdk_accepts(provider: str) -> None:
    """The stub's answers stay realistic: each passes the provider's own response type."""
    script = SCRIPTS[provider]()
    for turn in range(1, TURNS + 1):
        SDK_VALIDATORS[provider](copy.deepcopy(script.answer(turn)))


def test_params_are_translated_by_the_rules_and_cannot_replace_translates_own_arguments() -> None:
    script = SCRIPTS["anthropic"]()
    messages = [system_message(script.features), {"role": "user", "content": QUESTIONS[0]}]

    async def run() -> None:
        with ProviderStub(script.respond) as stub:
            async with create_client(stub.base_url, "anthropic", "m", api_key="k", max_retries=0) as client:
                await client.translate(messages, tools=tools(script.features), params={"reasoning_effort": EFFORT})
                with pytest.raises(TranslationError) as info:
                    await client.translate(messages, params={"messages": []})
                assert info.value.path == "messages"

    asyncio.run(run())
    assert script.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert "reasoning_effort" not in script.bodies[0] and len(script.bodies) == 1


# ---------------------------------------------------------------- Messages in: the same ten turns, source="anthropic"


def messages_tools(features: Features) -> list[dict[str, Any]]:
    """The tools as an Anthropic Messages caller declares them."""
    out = []
    for tool in tools(features):
        function = tool["function"]
        declared = {"name": function["name"], "description": function["description"]}
        declared["input_schema"] = function["parameters"]
        if "cache_control" in tool:
            declared["cache_control"] = tool["cache_control"]
        out.append(declared)
    return out


def messages_system(features: Features) -> Any:
    content = system_message(features)["content"]
    return content if isinstance(content, str) else [dict(part) for part in content]


def messages_tool_result(call_id: str, name: str, arguments: dict[str, Any], features: Features) -> dict[str, Any]:
    """The same tool output as `tool_message`, as a Messages tool_result block."""
    given = tool_message(call_id, name, arguments, features)
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    content = given["content"]
    if isinstance(content, list):
        content = [
            {"type": "text", "text": p["text"]}
            if p["type"] == "text"
            else {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": p["image_url"]["url"].split(",")[1]},
            }
            for p in content
        ]
    block["content"] = content
    if given.get("is_error"):
        block["is_error"] = True
    return block


@dataclass
class CompactArgumentsScript(OpenAIScript):
    """OpenAI answering with compact JSON arguments (as it does): a Messages caller holds tool input as an object,
    so what comes back is its compact JSON text, and the stub checks the history byte for byte."""

    def answer(self, turn: int) -> dict[str, Any]:
        out = super().answer(turn)
        for call in out["choices"][0]["message"].get("tool_calls", []):
            call["function"]["arguments"] = json.dumps(
                json.loads(call["function"]["arguments"]), ensure_ascii=False, separators=(",", ":")
            )
        for message in self.history:
            for call in message.get("tool_calls", ()):
                call["function"]["arguments"] = json.dumps(
                    json.loads(call["function"]["arguments"]), ensure_ascii=False, separators=(",", ":")
                )
        return out


MESSAGES_SCRIPTS: dict[str, Callable[[], Script]] = {
    "bedrock": SCRIPTS["bedrock"],  # its reasoning comes back as Messages thinking blocks, and goes back as its own
    "gemini": SCRIPTS["gemini"],
    "openai": lambda: CompactArgumentsScript(Features(cache_control=False, rich_results=False)),
}


async def converse_in_messages(provider: str, script: Script, *, streamed: bool) -> list[dict[str, Any]]:
    """The caller's loop in Messages format: each request's history is built only from the earlier answers,
    as Anthropic `Message`s (whole) or the Messages events a stream gave, and tool_result blocks."""
    features = script.features
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTIONS[0]}]
    asked = 1
    answers = []
    params = {"system": messages_system(features), "thinking": {"type": "enabled", "budget_tokens": 8192}}
    options: dict[str, Any] = {"tools": messages_tools(features), "params": params, "max_tokens": 20480}
    with ProviderStub(served(provider, script, streamed)) as stub:
        async with create_client(stub.base_url, provider, "m", api_key="k", max_retries=0) as client:
            for _ in range(TURNS):
                request = {"model": "m", "max_tokens": 20480, "messages": messages, **options["params"]}
                request["tools"] = options["tools"]
                ANTHROPIC_REQUEST.validate_python(json.loads(json.dumps(request)))  # a real Messages request
                if streamed:
                    stream = client.translate_stream(messages, **options, source="anthropic")
                    events = [event async for event in stream]
                    for event in events:
                        judge_event(event)
                    answer = dict(stream.message)  # type: ignore[union-attr]
                    assert accumulate(events) == answer
                else:
                    answer = dict(await client.translate(messages, **options, source="anthropic"))
                judge_message(answer)
                answers.append(answer)
                messages.append({"role": "assistant", "content": answer["content"]})
                calls = [b for b in answer["content"] if b["type"] == "tool_use"]
                if calls:
                    results = [messages_tool_result(c["id"], c["name"], c["input"], features) for c in calls]
                    messages.append({"role": "user", "content": results})
                else:
                    messages.append({"role": "user", "content": QUESTIONS[asked]})
                    asked += 1
    return answers


def whole_and_streamed(scripts: Mapping[str, Any]) -> list[Any]:
    """Each provider's run of a format's ten turns, whole and streamed."""
    return [
        pytest.param(p, s, id=f"{p}-{'streamed' if s else 'whole'}") for p in sorted(scripts) for s in (False, True)
    ]


MESSAGES_RUNS = whole_and_streamed(MESSAGES_SCRIPTS)


def run_in_format(script: Script, converse_in: Callable[..., Any], provider: str, streamed: bool) -> list[Any]:
    """The ten turns in a source format against a provider's strict stub: every request accepted, one per turn."""
    try:
        answers: list[Any] = asyncio.run(converse_in(provider, script, streamed=streamed))
    except ProviderError as exc:
        raise AssertionError(f"{provider} refused: {script.failures or exc}") from None
    assert not script.failures, script.failures
    assert len(answers) == len(script.bodies) == TURNS
    return answers


@pytest.mark.parametrize(("provider", "streamed"), MESSAGES_RUNS)
def test_ten_turns_in_messages_format(provider: str, streamed: bool) -> None:
    """Messages in, the provider out, Messages back: signatures, tool ids, tool results and cache markers survive
    ten turns whose history is only the earlier Messages answers."""
    answers = run_in_format(MESSAGES_SCRIPTS[provider](), converse_in_messages, provider, streamed)
    assert [any(b["type"] == "tool_use" for b in a["content"]) for a in answers] == [k != "answer" for k in SCHEDULE]
    for answer in answers:
        assert answer["stop_reason"] == ("tool_use" if answer["content"][-1]["type"] == "tool_use" else "end_turn")
        assert answer["usage"]["cache_read_input_tokens"] > 0


# ------------------------------------------------------------- Responses in: the ten turns, source="openai-responses"


def responses_tools(features: Features) -> list[dict[str, Any]]:
    """The tools as a Responses caller declares them (flat function tools)."""
    return [{"type": "function", **tool["function"], "strict": False} for tool in tools(features)]


def responses_tool_output(call: dict[str, Any], features: Features) -> dict[str, Any]:
    """The same tool output as `tool_message`, as a function_call_output item: Responses has no error flag, so an
    error says so in its output."""
    given = tool_message(call["call_id"], call["name"], json.loads(call["arguments"]), features)
    content = given["content"]
    if given.get("is_error"):
        content = f"error: {content}"
    elif isinstance(content, list):
        content = [
            {"type": "input_text", "text": p["text"]}
            if p["type"] == "text"
            else {"type": "input_image", "image_url": p["image_url"]["url"], "detail": "auto"}
            for p in content
        ]
    return {"type": "function_call_output", "call_id": call["call_id"], "output": content}


@dataclass
class ResponsesInAnthropicScript(AnthropicScript):
    """Anthropic behind a Responses caller: no cache markers (Responses has none), and the failed tool's result
    arrives as its text."""

    def check_config(self, body: Any) -> None:
        if body.get("thinking") != {"type": "enabled", "budget_tokens": 8192} or body["max_tokens"] <= 8192:
            raise Refused(f"thinking: expected an 8192 budget below max_tokens, got {body.get('thinking')}")
        if body.get("system") != SYSTEM_TEXT:
            raise Refused(f"system: {body.get('system')}")

    def result(self, use: dict[str, Any]) -> dict[str, Any]:
        block = super().result(use)
        return {**block, "content": "error: permission denied"} if block.pop("is_error", False) else block


@dataclass
class ResponsesInGeminiScript(GeminiScript):
    """Gemini behind a Responses caller: the failed tool's result arrives as its text."""

    def result(self, part: dict[str, Any], turn: int, j: int) -> dict[str, Any]:
        out = super().result(part, turn, j)
        if "error" in out["functionResponse"]["response"]:
            out["functionResponse"]["response"] = {"result": "error: permission denied"}
        return out


RESPONSES_SCRIPTS: dict[str, Callable[[], Script]] = {
    "anthropic": lambda: ResponsesInAnthropicScript(Features(cache_control=False, rich_results=True)),
    "gemini": lambda: ResponsesInGeminiScript(Features(cache_control=False, rich_results=True)),
}


async def converse_in_responses(provider: str, script: Script, *, streamed: bool) -> list[dict[str, Any]]:
    """The caller's loop in Responses format: each request's input is built only from the earlier answers'
    output items (as `Response`s) and function_call_output items."""
    features = script.features
    items: list[dict[str, Any]] = [{"role": "user", "content": QUESTIONS[0]}]
    asked = 1
    answers = []
    params: dict[str, Any] = {"instructions": SYSTEM_TEXT, "reasoning": {"effort": EFFORT}, "store": False}
    params["include"] = ["reasoning.encrypted_content"]
    options: dict[str, Any] = {"tools": responses_tools(features), "params": params, "max_tokens": 20480}
    with ProviderStub(served(provider, script, streamed)) as stub:
        async with create_client(stub.base_url, provider, "m", api_key="k", max_retries=0) as client:
            for _ in range(TURNS):
                request = {"model": "m", "input": items, "max_output_tokens": 20480, **params}
                judge_responses_request(request | {"tools": options["tools"]})  # a real Responses request
                if streamed:  # the Responses stream events (another branch's work): a Response at the end
                    stream = client.translate_stream(items, **options, source="openai-responses")
                    assert [event async for event in stream]
                    answer = dict(stream.message)  # type: ignore[union-attr]
                else:
                    answer = dict(await client.translate(items, **options, source="openai-responses"))
                judge_response(answer)
                answers.append(answer)
                items = items + answer["output"]
                calls = [item for item in answer["output"] if item["type"] == "function_call"]
                if calls:
                    items += [responses_tool_output(call, features) for call in calls]
                else:
                    items.append({"role": "user", "content": QUESTIONS[asked]})
                    asked += 1
    return answers


RESPONSES_RUNS = whole_and_streamed(RESPONSES_SCRIPTS)


@pytest.mark.parametrize(("provider", "streamed"), RESPONSES_RUNS)
def test_ten_turns_in_responses_format(provider: str, streamed: bool) -> None:
    """Responses in, the provider out, Responses back: signatures, thinking blocks, tool ids and tool results
    survive ten turns whose input is only the earlier Responses answers."""
    answers = run_in_format(RESPONSES_SCRIPTS[provider](), converse_in_responses, provider, streamed)
    calls = [[i["name"] for i in a["output"] if i["type"] == "function_call"] for a in answers]
    assert [bool(c) for c in calls] == [k != "answer" for k in SCHEDULE]
    for answer in answers:
        assert answer["status"] == "completed" and answer["usage"]["input_tokens_details"]["cached_tokens"] > 0
