# ruff: noqa: E501
"""One-off migration, second step: give every concern a column for every provider.

A request concern's missing column is the shared request translated by the
built-in rules (with the provider's usual model), recorded as its expectation
and reviewed; a response concern's missing column is an answer written here
(OpenAI's counterpart of the concern) or `skip:` with the reason from SKIPS.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from toolnexus import ProviderError, TranslationError, providers, translate_request, translate_response

CASES = Path(__file__).resolve().parents[1] / "fixtures" / "cases"
MODEL = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}

OPENAI_ANSWER: dict[str, Any] = {
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "The capital of France is Paris.",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 19, "completion_tokens": 8, "total_tokens": 27},
    "service_tier": "default",
    "system_fingerprint": "fp_fc9f1d7035",
}
CALL = {
    "id": "call_Ql9sBtdxu2A5sHVjYy8hP1Zq",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}


def openai_answer(**change: Any) -> dict[str, Any]:
    answer = copy.deepcopy(OPENAI_ANSWER)
    choice = answer["choices"][0]
    for key, value in change.items():
        if key == "model" and value is None:
            del answer["model"]
        elif key in ("content", "tool_calls"):
            choice["message"][key] = value
        else:
            choice[key] = value
    return answer


# concern -> (the OpenAI answer, the requested model) for response concerns OpenAI has a counterpart of
OPENAI_RESPONSES: dict[str, tuple[dict[str, Any], str | None]] = {
    "response-finish-unknown": (openai_answer(finish_reason="insufficient_system_resource"), None),
    "response-model-fallback": (openai_answer(model=None), "gpt-4o"),
    "response-model-from-response": (openai_answer(), "gpt-4o"),
    "response-text-and-tool-call": (
        openai_answer(content="Let me check.", tool_calls=[CALL], finish_reason="tool_calls"),
        None,
    ),
    "response-tool-call-wins-over-finish": (
        openai_answer(content=None, tool_calls=[CALL], finish_reason="length"),
        None,
    ),
    "response-empty-content-stop": (openai_answer(content=""), None),
}

PASS = "OpenAI answers pass through: "
SKIPS: dict[str, str] = {
    "error-response-arguments-list": "OpenAI tool-call arguments are JSON text passed on byte for byte; there is no object to check",
    "error-response-arguments-string": "OpenAI tool-call arguments are JSON text passed on byte for byte; there is no object to check",
    "error-response-function-call-without-name": "Gemini's functionCall part only; the other providers' tool calls have their own error concerns",
    "error-response-missing-content": "Anthropic's required content list only; Gemini's counterpart is error-response-no-candidates, OpenAI's message is read as given",
    "error-response-no-candidates": "Gemini's candidates/promptFeedback only; Anthropic's counterpart is error-response-missing-content",
    "finish-tool-use-without-tool-call": "Anthropic's tool_use stop reason only; the others have no finish reason that promises a tool call without one",
    "response-candidate-safety-no-content": "Gemini's candidate without content only",
    "response-empty-content-stop": "not written yet: an Anthropic answer with an empty content list and end_turn would be its counterpart",
    "response-encoded-id-restored": "Anthropic's tool_use id pattern only (ids outside it are encoded on the way out)",
    "response-finish-blocklist": "Gemini's finishReason BLOCKLIST only",
    "response-finish-context-window-exceeded": "Anthropic's stop reason model_context_window_exceeded only",
    "response-finish-end-turn": "Anthropic's stop reason end_turn only; "
    + PASS
    + "stop is covered by response-text-stop",
    "response-finish-image-safety": "Gemini's finishReason IMAGE_SAFETY only",
    "response-finish-malformed-function-call": "Gemini's finishReason MALFORMED_FUNCTION_CALL only",
    "response-finish-missing": "Anthropic's whole answer always carries stop_reason (null only in a stream's message_start)",
    "response-finish-other": "Gemini's finishReason OTHER only",
    "response-finish-pause-turn": "Anthropic's stop reason pause_turn (server tools) only",
    "response-finish-prohibited-content": "Gemini's finishReason PROHIBITED_CONTENT only",
    "response-finish-recitation": "Gemini's finishReason RECITATION only",
    "response-finish-spii": "Gemini's finishReason SPII only",
    "response-finish-stop-sequence": "Anthropic's stop reason stop_sequence only; OpenAI reports a stop sequence as stop",
    "response-function-call-id-kept": "Gemini's optional functionCall id only; the others always send tool-call ids",
    "response-function-call-synthesized-id": "Gemini's functionCall without an id only; the others always send tool-call ids",
    "response-function-call-thought-signature": "Gemini's thoughtSignature only",
    "response-function-call-without-args": "Gemini's functionCall without args only; Anthropic always sends input, OpenAI's arguments text passes through",
    "response-prompt-blocked-other": "Gemini's promptFeedback.blockReason only",
    "response-prompt-blocked": "Gemini's promptFeedback.blockReason only",
    "response-signed-empty-thinking": "Anthropic's signed thinking blocks only",
    "response-synthesized-ids-unique": "Gemini's functionCall without an id only; the others always send tool-call ids",
    "response-text-parts-concatenated": "an OpenAI message's content is one string, not parts",
    "response-thinking-not-text": "Chat Completions answers carry no thinking parts",
    "response-thinking-tool-use": "Anthropic's thinking blocks with tool_use only; Gemini's counterpart is response-thoughts-and-signatures",
    "response-thoughts-and-signatures": "Gemini's thought parts and signatures only; Anthropic's counterpart is response-thinking-tool-use",
    "response-unknown-part": "an OpenAI message has no list of typed parts; its fields pass through",
    "response-usage-cache-zero": "Anthropic's cache counters only; Gemini omits zero counts (response-usage-no-candidate-tokens), OpenAI's usage passes through",
    "response-usage-cache": "Anthropic's cache counters only; Gemini's is response-usage-cached, OpenAI's response-usage-reasoning-and-cache",
    "response-usage-cached": "Gemini's cachedContentTokenCount only; Anthropic's is response-usage-cache, OpenAI's response-usage-reasoning-and-cache",
    "response-usage-details": "OpenAI's usage details only (passed through); the others' usage is built by their rules, see response-usage-*",
    "response-usage-no-candidate-tokens": "Gemini omits zero counts (proto3 JSON) only",
    "response-usage-reasoning-and-cache": "OpenAI's usage details only (passed through); the others' are response-usage-cache, response-usage-cached, response-usage-thoughts",
    "response-usage-thoughts": "Gemini's thoughtsTokenCount only; OpenAI's reasoning tokens are response-usage-reasoning-and-cache",
    "response-usage-tool-use-prompt": "Gemini's toolUsePromptTokenCount only",
    "usage-null-cache-fields": "Anthropic's nullable cache counters only",
}


def notes(items: Any) -> list[dict[str, str]]:
    return [{"kind": n.kind, "path": n.path} for n in items]


class Dumper(yaml.SafeDumper):
    """Multi-line strings double-quoted on one line, as the hand-written cases spell them."""


Dumper.add_representer(
    str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style='"' if "\n" in s else None)
)


def dump(key: str, value: Any) -> str:
    if not isinstance(value, (dict, list)):
        return f"    {key}: {json.dumps(value)}"
    text = yaml.dump(
        {key: value}, Dumper=Dumper, default_flow_style=None, sort_keys=False, allow_unicode=True, width=110
    )
    return "\n".join("    " + line for line in text.rstrip("\n").splitlines())


def request_column(provider: str, concern: dict[str, Any]) -> list[str]:
    out = []
    request = dict(concern["request"])
    if request.get("model") != MODEL[provider]:
        request["model"] = MODEL[provider]
        out.append(dump("with", {"model": MODEL[provider]}))
    try:
        body = translate_request(provider, request, **concern.get("options", {}))
    except TranslationError as exc:
        out.append(dump("expect_error", {"kind": type(exc).__name__, "path": exc.path}))
    else:
        out.append(dump("expect_request", dict(body)))
        out.append(dump("expect_notes", notes(body.notes)))
    return out


def response_column(concern: str) -> list[str]:
    response, requested = OPENAI_RESPONSES[concern]
    out = []
    if requested:
        out.append(dump("requested_model", requested))
    out.append(dump("response", response))
    try:
        result = translate_response("openai", response, requested_model=requested)
    except (TranslationError, ProviderError) as exc:
        out.append(dump("expect_response_error", {"kind": type(exc).__name__, "path": getattr(exc, "path", None)}))
    else:
        data = result.to_dict()
        data.pop("notes")
        out.append(dump("expect_result", data))
        out.append(dump("expect_result_notes", notes(result.notes)))
    return out


def main() -> None:
    for path in sorted(CASES.glob("*.yaml")):
        concern = yaml.safe_load(path.read_text())
        added = []
        for provider in providers():
            if provider in concern["providers"]:
                continue
            if "request" in concern:
                column = request_column(provider, concern)
            elif provider == "openai" and path.stem in OPENAI_RESPONSES:
                column = response_column(path.stem)
            else:
                column = [f"    skip: {yaml.safe_dump(SKIPS[path.stem], width=1000).splitlines()[0]}"]
            added.append(f"  {provider}:\n" + "\n".join(column))
            print(path.stem, provider, column[-1].strip()[:100] if "skip" in column[-1] else "")
        if added:
            path.write_text(path.read_text() + "\n".join(added) + "\n")


if __name__ == "__main__":
    main()
