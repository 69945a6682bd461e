"""Response rows for the providers tools/bench_baseline.py writes no request translator for.

tools/bench.py times `translate_response` for every provider the rules define. For Bedrock, Cohere,
Ollama and the OpenAI Responses API this file gives the answers (the Anthropic answers of
tools/bench_inputs.py, as that provider would have sent them: the same thinking, text, tool calls and
token counts) and a hand-written translator of each rule file's `response` section. A variant
(`extends:`) answers in its parent's shape: its rows are timed on the parent's answers, against the
parent's hand-written translator, after the same parity check (a variant whose rules read those
answers differently fails it by name).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from bench_baseline import HAND_WRITTEN, _gemini_digest
from toolnexus import TranslatedToolCall, TranslateResult

JSON = dict[str, Any]
Translate = Callable[[Any], Any]


def _blocks(anthropic: JSON) -> Iterable[tuple[str, JSON]]:
    return ((block["type"], block) for block in anthropic["content"])


def _arguments(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------- the answers, from Anthropic's


def as_bedrock(anthropic: JSON) -> JSON:
    """A Converse response: content blocks known by their one key, camelCase usage."""
    content: list[JSON] = []
    for kind, block in _blocks(anthropic):
        if kind == "thinking":
            reasoning = {"text": block["thinking"], "signature": block["signature"]}
            content.append({"reasoningContent": {"reasoningText": reasoning}})
        elif kind == "text":
            content.append({"text": block["text"]})
        elif kind == "tool_use":
            content.append({"toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}})
    tokens = anthropic["usage"]
    usage = {
        "inputTokens": tokens["input_tokens"],
        "outputTokens": tokens["output_tokens"],
        "totalTokens": sum(tokens.get(k) or 0 for k in ("input_tokens", "output_tokens", "cache_read_input_tokens")),
        "cacheReadInputTokens": tokens.get("cache_read_input_tokens") or 0,
        "cacheWriteInputTokens": tokens.get("cache_creation_input_tokens") or 0,
    }
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": anthropic["stop_reason"],
        "usage": usage,
        "metrics": {"latencyMs": 2_345},
    }


def as_cohere(anthropic: JSON) -> JSON:
    """A Cohere v2 chat response: thinking and text content items, tool calls with JSON text arguments."""
    content = [
        {"type": "thinking", "thinking": block["thinking"]}
        if kind == "thinking"
        else {"type": "text", "text": block["text"]}
        for kind, block in _blocks(anthropic)
        if kind in ("thinking", "text")
    ]
    calls = [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": _arguments(block["input"])},
        }
        for kind, block in _blocks(anthropic)
        if kind == "tool_use"
    ]
    message: JSON = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    tokens = anthropic["usage"]
    return {
        "id": "c14c80c3-bench",
        "finish_reason": "TOOL_CALL" if calls else "COMPLETE",
        "message": message,
        "usage": {
            "billed_units": {"input_tokens": tokens["input_tokens"], "output_tokens": tokens["output_tokens"]},
            "tokens": {"input_tokens": tokens["input_tokens"], "output_tokens": tokens["output_tokens"]},
            "cached_tokens": tokens.get("cache_read_input_tokens") or 0,
        },
    }


def as_ollama(anthropic: JSON) -> JSON:
    """An Ollama /api/chat answer: thinking and content on the message, calls without ids, object arguments."""
    texts = [block["text"] for kind, block in _blocks(anthropic) if kind == "text"]
    thinking = [block["thinking"] for kind, block in _blocks(anthropic) if kind == "thinking"]
    message: JSON = {"role": "assistant", "content": "".join(texts)}
    if thinking:
        message["thinking"] = "".join(thinking)
    calls = [
        {"function": {"name": block["name"], "arguments": block["input"]}}
        for kind, block in _blocks(anthropic)
        if kind == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    tokens = anthropic["usage"]
    return {
        "model": "qwen3:32b",
        "created_at": "2025-05-12T10:00:00.000000Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 4_883_583_458,
        "load_duration": 1_334_875,
        "prompt_eval_count": tokens["input_tokens"],
        "prompt_eval_duration": 342_546_000,
        "eval_count": tokens["output_tokens"],
        "eval_duration": 4_535_599_000,
    }


def as_openai_responses(anthropic: JSON) -> JSON:
    """A Responses API response: reasoning, message and function_call output items, and its nulls."""
    output: list[JSON] = []
    for n, (kind, block) in enumerate(_blocks(anthropic)):
        if kind == "thinking":
            summary = [{"type": "summary_text", "text": block["thinking"]}]
            output.append({"id": f"rs_{n}", "type": "reasoning", "summary": summary, "encrypted_content": "gAAAAbench"})
        elif kind == "text":
            text = {"type": "output_text", "text": block["text"], "annotations": [], "logprobs": []}
            output.append(
                {"id": f"msg_{n}", "type": "message", "status": "completed", "role": "assistant", "content": [text]}
            )
        elif kind == "tool_use":
            output.append({"id": f"fc_{n}", "type": "function_call", "status": "completed", "call_id": block["id"],
                           "name": block["name"], "arguments": _arguments(block["input"])})  # fmt: skip
    tokens = anthropic["usage"]
    prompt = tokens["input_tokens"] + (tokens.get("cache_read_input_tokens") or 0)
    return {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1_747_000_000,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-4.1-2025-04-14",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": tokens.get("cache_read_input_tokens") or 0},
            "output_tokens": tokens["output_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + tokens["output_tokens"],
        },
    }


SHAPES: dict[str, Callable[[JSON], JSON]] = {
    "bedrock": as_bedrock,
    "cohere": as_cohere,
    "ollama": as_ollama,
    "openai-responses": as_openai_responses,
}


# ---------------------------------------------------------------- the hand-written translators

BEDROCK_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                  "model_context_window_exceeded": "length", "guardrail_intervened": "content_filter",
                  "content_filtered": "content_filter"}  # fmt: skip
COHERE_FINISH = {"TOOL_CALL": "tool_calls", "MAX_TOKENS": "length", "TIMEOUT": "length"}
OLLAMA_FINISH = {"length": "length"}
RESPONSES_FINISH = {"incomplete": "length", "max_output_tokens": "length", "content_filter": "content_filter"}


def _present(*counts: Any) -> int | None:
    """A sum of the counts given (None when none is)."""
    given = [count for count in counts if count is not None]
    return sum(given) if given else None


def _usage(prompt: Any, completion: Any, total: Any, **details: JSON) -> JSON:
    usage = {k: v for k, v in (("prompt_tokens", prompt), ("completion_tokens", completion), ("total_tokens", total))}
    usage = {k: v for k, v in usage.items() if v is not None}
    for name, counts in details.items():
        kept = {k: v for k, v in counts.items() if v is not None}
        if kept:
            usage[name] = kept
    return usage


def hand_bedrock_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Converse response -> result: each block by its one key; reasoning kept as thinking blocks."""
    texts: list[str] = []
    reasoning: list[str] = []
    blocks: list[JSON] = []
    calls: list[TranslatedToolCall] = []
    for block in response["output"]["message"]["content"]:
        if "text" in block:
            texts.append(block["text"])
        elif "toolUse" in block:
            use = block["toolUse"]
            calls.append(TranslatedToolCall(id=use["toolUseId"], name=use["name"], arguments=_arguments(use["input"])))
        elif "reasoningContent" in block:
            content = block["reasoningContent"]
            if content.get("redactedContent") is not None:
                blocks.append({"type": "redacted_thinking", "data": content["redactedContent"]})
                continue
            text = content["reasoningText"]
            reasoning.append(text["text"])
            blocks.append({"type": "thinking", "thinking": text["text"], "signature": text["signature"]})
    tokens = response.get("usage") or {}
    given, read, written = (
        tokens.get("inputTokens"),
        tokens.get("cacheReadInputTokens"),
        tokens.get("cacheWriteInputTokens"),
    )
    usage = _usage(
        _present(given, read, written),
        tokens.get("outputTokens"),
        _present(given, read, written, tokens.get("outputTokens")),
        prompt_tokens_details={"cached_tokens": read, "cache_write_tokens": written},
    )
    return TranslateResult(
        text="".join(texts),
        tool_calls=calls,
        finish_reason="tool_calls" if calls else BEDROCK_FINISH.get(response.get("stopReason"), "stop"),
        usage=usage,
        model=requested_model or "",
        raw=response,
        reasoning_content="".join(reasoning),
        message_extras={"thinking_blocks": blocks} if blocks else {},
    )


def hand_cohere_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Cohere v2 chat response -> result: the tool plan and thinking are reasoning; arguments as given."""
    message = response["message"]
    reasoning = [message["tool_plan"]] if message.get("tool_plan") is not None else []
    texts: list[str] = []
    for item in message.get("content") or ():
        if item["type"] == "text":
            texts.append(item["text"])
        elif item["type"] == "thinking":
            reasoning.append(item["thinking"])
    calls = [
        TranslatedToolCall(id=call["id"], name=call["function"]["name"], arguments=call["function"]["arguments"])
        for call in message.get("tool_calls") or ()
    ]
    tokens = (response.get("usage") or {}).get("tokens") or {}
    given, made = tokens.get("input_tokens"), tokens.get("output_tokens")
    usage = _usage(
        given,
        made,
        _present(given, made),
        prompt_tokens_details={"cached_tokens": (response.get("usage") or {}).get("cached_tokens")},
    )
    return TranslateResult(
        text="".join(texts),
        tool_calls=calls,
        finish_reason="tool_calls" if calls else COHERE_FINISH.get(response.get("finish_reason"), "stop"),
        usage=usage,
        model=requested_model or "",
        raw=response,
        reasoning_content="".join(reasoning),
    )


def hand_ollama_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Ollama /api/chat answer -> result: calls get the rules' synthesized ids (position and a digest)."""
    message = response["message"]
    digest = ""
    calls = []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        call_id = call.get("id")
        if not call_id:
            digest = digest or _gemini_digest(response)
            call_id = f"call_{len(calls)}_{digest}"
        calls.append(
            TranslatedToolCall(id=call_id, name=function["name"], arguments=_arguments(function.get("arguments", {})))
        )
    given, made = response.get("prompt_eval_count"), response.get("eval_count")
    model = response.get("model")
    return TranslateResult(
        text=message.get("content") or "",
        tool_calls=calls,
        finish_reason="tool_calls" if calls else OLLAMA_FINISH.get(response.get("done_reason"), "stop"),
        usage=_usage(given, made, _present(given, made)),
        model=model if isinstance(model, str) else requested_model or "",
        raw=response,
        reasoning_content=message.get("thinking") or "",
    )


def hand_openai_responses_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """Responses API response -> result: message text, function calls, reasoning summaries (and encrypted
    reasoning items kept for the next turn)."""
    texts: list[str] = []
    reasoning: list[str] = []
    items: list[JSON] = []
    calls: list[TranslatedToolCall] = []
    for item in response["output"]:
        kind = item["type"]
        if kind == "message":
            texts.append(item["content"][0]["text"])
        elif kind == "function_call":
            calls.append(TranslatedToolCall(id=item["call_id"], name=item["name"], arguments=item["arguments"]))
        elif kind == "reasoning":
            reasoning.append("\n\n".join(part["text"] for part in item.get("summary") or ()))
            if item.get("encrypted_content") is not None:
                items.append(item)
    status = (response.get("incomplete_details") or {}).get("reason") or response.get("status")
    tokens = response.get("usage") or {}
    usage = _usage(
        tokens.get("input_tokens"),
        tokens.get("output_tokens"),
        tokens.get("total_tokens"),
        prompt_tokens_details={
            "cached_tokens": (tokens.get("input_tokens_details") or {}).get("cached_tokens"),
            "cache_write_tokens": (tokens.get("input_tokens_details") or {}).get("cache_write_tokens"),
        },
        completion_tokens_details={
            "reasoning_tokens": (tokens.get("output_tokens_details") or {}).get("reasoning_tokens")
        },
    )
    model = response.get("model")
    return TranslateResult(
        text="".join(texts),
        tool_calls=calls,
        finish_reason="tool_calls" if calls else RESPONSES_FINISH.get(status, "stop"),
        usage=usage,
        model=model if isinstance(model, str) else requested_model or "",
        raw=response,
        reasoning_content="".join(reasoning),
        message_extras={"reasoning_items": items} if items else {},
    )


HAND_WRITTEN_RESPONSES: dict[str, Translate] = {
    "bedrock": hand_bedrock_response,
    "cohere": hand_cohere_response,
    "ollama": hand_ollama_response,
    "openai-responses": hand_openai_responses_response,
}


def response_baseline(provider: str, parent: Callable[[str], str | None]) -> tuple[str, Translate] | None:
    """The shape a provider answers in (itself, or the ancestor a variant `extends:`) and the hand-written
    translator of that shape's answers; None when there is none."""
    root: str | None = provider
    while root is not None:
        if root in HAND_WRITTEN:
            return root, HAND_WRITTEN[root][1]
        if root in HAND_WRITTEN_RESPONSES:
            return root, HAND_WRITTEN_RESPONSES[root]
        root = parent(root)
    return None


def provider_answers(
    provider: str,
    parent: Callable[[str], str | None],
    parity_answers: dict[str, dict[str, JSON]],
    generated: dict[str, dict[str, JSON]],
) -> tuple[list[tuple[str, JSON]], Translate | None]:
    """A provider's answer rows (`parity finishStop`, ..., `generated: text`, ...: tools/bench.py's inputs, in its
    order) in the shape it answers in, and the hand-written translator of that shape (None when there is none).
    The two answer tables gain the shape's answers as they are first made."""
    shape, hand = response_baseline(provider, parent) or (provider, None)
    if shape in SHAPES and shape not in parity_answers:  # the Anthropic answers as this provider would send them
        parity_answers[shape] = {k: SHAPES[shape](a) for k, a in parity_answers["anthropic"].items()}
        generated[shape] = {k: SHAPES[shape](a) for k, a in generated["anthropic"].items()}
    answers = [(f"parity {branch}", answer) for branch, answer in parity_answers[shape].items()]
    answers += [(f"generated: {name}", answer) for name, answer in generated[shape].items()]
    return answers, hand
