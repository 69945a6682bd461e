"""Test material: a provider's non-streaming response, re-told as the event stream its streaming API sends.

The reverse of the rule files' `streaming` sections, written from each provider's streaming
documentation, so the tests can serve the same content both ways and compare. Text and JSON are
cut into pieces at random character positions (`rng`); `ENCODERS` has one encoder per provider the
rules define (test_stream.py fails loudly when one is missing). Each encoder writes its events in the
framing its rule file names (`streaming.framing`): SSE events, NDJSON lines (Ollama) or AWS
event-stream frames (Bedrock); `streamed` serves them with that framing's media type and `data_of`
reads one back as the data text the stream translator is fed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import toolnexus
from toolnexus.devtools.stub import StubReply, sse_pieces
from toolnexus.http.framing import FRAMINGS

from .frames import aws_event, aws_exception, ndjson_lines
from .variants import with_variants

Encoder = Callable[..., list[bytes]]  # (response, rng, *, cuts=None) -> the events' bytes


def pieces(text: str, rng: random.Random, cuts: int | None = None) -> list[str]:
    """`text` cut at `cuts` (default: 0 to 4) random character positions; no piece is empty unless text is."""
    if len(text) < 2:
        return [text]
    count = rng.randint(0, 4) if cuts is None else cuts
    points = sorted(rng.sample(range(1, len(text)), min(count, len(text) - 1)))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def _sse(data: Any, event: str | None = None, *, crlf: bool = False) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    end = "\r\n" if crlf else "\n"
    head = f"event: {event}{end}" if event else ""
    return f"{head}data: {body}{end}{end}".encode()


# ---------------------------------------------------------------- Anthropic


def anthropic_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """message_start, one start/deltas/stop per content block, message_delta, message_stop (pings between)."""
    usage = dict(response.get("usage", {}))
    final_output = usage.pop("output_tokens", None)
    start_usage = {**usage, "output_tokens": 1} if final_output is not None else usage
    message = {**response, "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}
    if "stop_details" in response:
        message["stop_details"] = None
    out = [_sse({"type": "message_start", "message": message}, "message_start")]
    for index, block in enumerate(response["content"]):
        kind = block["type"]
        if rng.random() < 0.2:
            out.append(_sse({"type": "ping"}, "ping"))
        citations = block.get("citations") if kind == "text" else None
        if kind == "text":  # citations arrive one per citations_delta, before the text they cite
            start, field, delta, text = {**block, "text": ""}, "text", "text_delta", block["text"]
            if citations:
                start["citations"] = []
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):  # input as JSON text, server tools' too
            encoded = json.dumps(block["input"], ensure_ascii=False)
            start, field, delta, text = {**block, "input": {}}, "partial_json", "input_json_delta", encoded
        elif kind == "thinking":
            start, field, delta, text = (
                {**block, "thinking": "", "signature": ""},
                "thinking",
                "thinking_delta",
                block["thinking"],
            )
        elif kind == "compaction":  # the summary arrives whole in one compaction_delta
            start, field, delta, text = {"type": "compaction", "content": None}, "", "", ""
        else:
            start, field, delta, text = block, "", "", ""
        out.append(_sse({"type": "content_block_start", "index": index, "content_block": start}, "content_block_start"))
        for citation in citations or []:
            cited = {"type": "citations_delta", "citation": citation}
            out.append(_sse({"type": "content_block_delta", "index": index, "delta": cited}, "content_block_delta"))
        if kind == "compaction":
            piece = {
                "type": "compaction_delta",
                **{k: block[k] for k in ("content", "encrypted_content") if k in block},
            }
            out.append(_sse({"type": "content_block_delta", "index": index, "delta": piece}, "content_block_delta"))
        if field:
            for piece in pieces(text, rng, cuts) if text else []:
                body = {"type": "content_block_delta", "index": index, "delta": {"type": delta, field: piece}}
                out.append(_sse(body, "content_block_delta"))
        if kind == "thinking":
            signature = {"type": "signature_delta", "signature": block["signature"]}
            out.append(_sse({"type": "content_block_delta", "index": index, "delta": signature}, "content_block_delta"))
        out.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    delta = {"stop_reason": response.get("stop_reason"), "stop_sequence": response.get("stop_sequence")}
    if "stop_details" in response:  # a refusal's explanation comes with the stop reason
        delta["stop_details"] = response["stop_details"]
    end_usage = {"output_tokens": final_output} if final_output is not None else {}
    out.append(_sse({"type": "message_delta", "delta": delta, "usage": end_usage}, "message_delta"))
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


# ---------------------------------------------------------------- Gemini


def gemini_canonical(response: dict[str, Any]) -> dict[str, Any]:
    """The response with each run of text parts of one kind as one part (as a stream rebuilds it)."""
    candidates = response.get("candidates")
    if not candidates or "parts" not in candidates[0].get("content", {}):
        return response
    parts: list[dict[str, Any]] = []
    for part in candidates[0]["content"]["parts"]:
        last = parts[-1] if parts else None
        if (
            last is not None
            and set(last) <= {"text", "thought"}
            and set(part) <= {"text", "thought"}
            and "text" in last
            and "text" in part
            and last.get("thought") == part.get("thought")
        ):
            parts[-1] = {**last, "text": last["text"] + part["text"]}
        else:
            parts.append(part)
    content = {**candidates[0]["content"], "parts": parts}
    return {**response, "candidates": [{**candidates[0], "content": content}, *candidates[1:]]}


def gemini_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """Partial GenerateContentResponses: parts spread over events, texts cut in pieces; the last event has the
    finish reason and the full usage. Send gemini_canonical(response) as the non-streamed twin."""
    top = {k: v for k, v in response.items() if k not in ("candidates", "usageMetadata")}
    usage = response.get("usageMetadata")
    candidates = response.get("candidates", [])
    candidate = candidates[0] if candidates else None
    events: list[dict[str, Any]] = []
    if candidate is not None:
        content = candidate.get("content", {})
        head = {k: v for k, v in content.items() if k != "parts"}
        for part in content.get("parts", []):
            if "text" in part:
                split = pieces(part["text"], rng, cuts)
                same = {"thought": part["thought"]} if "thought" in part else {}
                news = [{**part, "text": split[0]}] + [{**same, "text": p} for p in split[1:]]
            else:
                news = [part]
            for new in news:
                if events and rng.random() < 0.3:  # several parts in one event
                    events[-1]["candidates"][0]["content"]["parts"].append(new)
                else:
                    events.append({"candidates": [{"content": {**head, "parts": [new]}, "index": 0}]})
        last_candidate = {k: v for k, v in candidate.items() if k != "content"}
        if "content" in candidate and "parts" not in content:
            last_candidate["content"] = content
        events.append({"candidates": [last_candidate]})
    else:
        events.append({})
    out = []
    for i, event in enumerate(events):
        if usage is not None:
            last = i == len(events) - 1
            event["usageMetadata"] = usage if last else {"promptTokenCount": usage["promptTokenCount"]}
        out.append(_sse({**event, **top}, crlf=True))
    return out


# ---------------------------------------------------------------- OpenAI


def openai_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """chat.completion.chunk events: role, content pieces, each tool call (head, argument pieces), the finish,
    usage in a last chunk (stream_options.include_usage), then [DONE]."""
    head = {k: v for k, v in response.items() if k not in ("object", "choices", "usage")}
    head["object"] = "chat.completion.chunk"
    choice = response["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        out = {"index": 0, "delta": delta, "logprobs": choice.get("logprobs"), "finish_reason": finish}
        return _sse({**head, "choices": [out], "usage": None})

    content = message.get("content")
    extra = {k: v for k, v in message.items() if k not in ("role", "content", "tool_calls")}
    out = [chunk({"role": "assistant", "content": "" if content is not None else None, **extra})]
    for piece in pieces(content, rng, cuts) if content else []:
        out.append(chunk({"content": piece}))
    for index, call in enumerate(message.get("tool_calls", [])):
        head_piece = {"index": index, "id": call["id"], "type": "function",
                      "function": {"name": call["function"]["name"], "arguments": ""}}  # fmt: skip
        head_piece |= {k: v for k, v in call.items() if k not in ("id", "type", "function")}  # extra_content
        out.append(chunk({"tool_calls": [head_piece]}))
        for piece in pieces(call["function"]["arguments"], rng, cuts):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    out.append(chunk({}, choice.get("finish_reason")))
    if "usage" in response:
        out.append(_sse({**head, "choices": [], "usage": response["usage"]}))
    out.append(_sse("[DONE]"))
    return out


# ---------------------------------------------------------------- Mistral


def mistral_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """chat.completion.chunk events as Mistral streams them: the role, content pieces, each tool call whole in
    one chunk (its arguments complete), then a last chunk with the finish reason and usage, then [DONE]."""
    head = {k: v for k, v in response.items() if k not in ("object", "choices", "usage")}
    head["object"] = "chat.completion.chunk"
    choice = response["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more})

    content = message.get("content")
    out = [chunk({"role": "assistant", "content": ""})]
    for piece in pieces(content, rng, cuts) if content else []:
        out.append(chunk({"content": piece}))
    for call in message.get("tool_calls") or []:
        out.append(chunk({"tool_calls": [call]}))
    usage = {"usage": response["usage"]} if "usage" in response else {}
    out.append(chunk({"content": ""}, choice.get("finish_reason"), **usage))
    out.append(_sse("[DONE]"))
    return out


# ---------------------------------------------------------------- Cohere


def cohere_canonical(response: dict[str, Any]) -> dict[str, Any]:
    """The response as its stream rebuilds it: the stream starts from an empty content list (the rules' `start`);
    message-start names only the role, so other empty lists and an empty tool_plan have no event to tell them."""
    message = response.get("message")
    if not isinstance(message, dict):
        return response
    kept = {k: v for k, v in message.items() if v not in ([], "") or k == "content"}
    return {**response, "message": {"content": [], **kept}}


def cohere_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """message-start, tool-plan-delta pieces, content-start/-delta/-end per block (text and thinking in pieces),
    tool-call-start/-delta/-end per call (arguments in pieces), citation-start/-end per citation, message-end with
    the finish reason and usage."""
    message = response.get("message", {})
    out = [
        _sse(
            {"type": "message-start", "id": response.get("id"), "delta": {"message": {"role": "assistant"}}},
            "message-start",
        )
    ]
    for piece in pieces(message["tool_plan"], rng, cuts) if message.get("tool_plan") else []:
        out.append(_sse({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}}, "tool-plan-delta"))
    for index, block in enumerate(message.get("content") or []):
        field = {"text": "text", "thinking": "thinking"}.get(block.get("type"))
        start = {**block, field: ""} if field else block
        out.append(
            _sse({"type": "content-start", "index": index, "delta": {"message": {"content": start}}}, "content-start")
        )
        for piece in pieces(block[field], rng, cuts) if field and block[field] else []:
            delta = {"message": {"content": {field: piece}}}
            out.append(_sse({"type": "content-delta", "index": index, "delta": delta}, "content-delta"))
        out.append(_sse({"type": "content-end", "index": index}, "content-end"))
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function", {})
        head = {**call, "function": {**function, "arguments": ""}} if "arguments" in function else call
        out.append(
            _sse(
                {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": head}}},
                "tool-call-start",
            )
        )
        for piece in pieces(function["arguments"], rng, cuts) if function.get("arguments") else []:
            delta = {"message": {"tool_calls": {"function": {"arguments": piece}}}}
            out.append(_sse({"type": "tool-call-delta", "index": index, "delta": delta}, "tool-call-delta"))
        out.append(_sse({"type": "tool-call-end", "index": index}, "tool-call-end"))
    for index, citation in enumerate(message.get("citations") or []):
        delta = {"message": {"citations": citation}}
        out.append(_sse({"type": "citation-start", "index": index, "delta": delta}, "citation-start"))
        out.append(_sse({"type": "citation-end", "index": index}, "citation-end"))
    end = {k: response[k] for k in ("finish_reason", "usage") if k in response}
    out.append(_sse({"type": "message-end", "delta": end}, "message-end"))
    return out


# ---------------------------------------------------------------- Ollama


def ollama_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """The lines of a streamed chat: thinking pieces, content pieces, the tool calls whole, then the last line
    (done true, done_reason and the counts), as NDJSON lines (the rules' `streaming.framing: ndjson`)."""
    head = {k: v for k, v in response.items() if k in ("model", "created_at")}
    message = response.get("message", {})
    role = message.get("role", "assistant")
    lines = []
    for piece in pieces(message["thinking"], rng, cuts) if message.get("thinking") else []:
        lines.append({**head, "message": {"role": role, "content": "", "thinking": piece}, "done": False})
    for piece in pieces(message["content"], rng, cuts) if message.get("content") else []:
        lines.append({**head, "message": {"role": role, "content": piece}, "done": False})
    if message.get("tool_calls"):
        lines.append(
            {**head, "message": {"role": role, "content": "", "tool_calls": message["tool_calls"]}, "done": False}
        )
    last_message = {k: v for k, v in message.items() if k not in ("thinking", "tool_calls")}
    last_message["content"] = "" if message.get("content") else message.get("content", "")
    if "content" not in message:
        del last_message["content"]
    lines.append({**response, "message": last_message})
    return ndjson_lines(lines)


# ---------------------------------------------------------------- Bedrock

BEDROCK_STREAMED = ("text", "toolUse", "reasoningContent")  # the block kinds ConverseStream's deltas carry
BEDROCK_TOP = ("output", "stopReason", "additionalModelResponseFields", "usage", "metrics", "trace",
               "performanceConfig")  # fmt: skip


def bedrock_canonical(response: dict[str, Any]) -> dict[str, Any]:
    """The Converse response as ConverseStream tells it: only blocks its deltas carry (text, toolUse,
    reasoningContent) and the top-level keys its events hold."""
    message = response.get("output", {}).get("message")
    if not isinstance(message, dict):
        return response
    blocks = [b for b in message.get("content", []) if isinstance(b, dict) and set(b) & set(BEDROCK_STREAMED)]
    top = {k: v for k, v in response.items() if k in BEDROCK_TOP}
    return {**top, "output": {**response["output"], "message": {**message, "content": blocks}}}


def bedrock_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """ConverseStream's frames (API_runtime_ConverseStreamOutput): messageStart, per block a contentBlockStart
    (toolUse only: id and name), deltas (text pieces, input JSON pieces, reasoning text pieces then its
    signature, or redactedContent whole) and contentBlockStop; messageStop (stopReason), metadata (usage,
    metrics). Send bedrock_canonical(response) as the non-streamed twin."""
    response = bedrock_canonical(response)
    message = response["output"]["message"]
    out = [aws_event("messageStart", {"role": message.get("role", "assistant")})]

    def delta(index: int, value: dict[str, Any]) -> None:
        out.append(aws_event("contentBlockDelta", {"delta": value, "contentBlockIndex": index}))

    for index, block in enumerate(message["content"]):
        if "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {k: v for k, v in use.items() if k != "input"}}
            out.append(aws_event("contentBlockStart", {"start": start, "contentBlockIndex": index}))
            for piece in pieces(json.dumps(use.get("input", {}), ensure_ascii=False), rng, cuts):
                delta(index, {"toolUse": {"input": piece}})
        elif "text" in block:
            for piece in pieces(block["text"], rng, cuts):
                delta(index, {"text": piece})
        else:
            reasoning = block["reasoningContent"]
            if "redactedContent" in reasoning:
                delta(index, {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})
            else:
                said = reasoning["reasoningText"]
                for piece in pieces(said["text"], rng, cuts):
                    delta(index, {"reasoningContent": {"text": piece}})
                if "signature" in said:
                    delta(index, {"reasoningContent": {"signature": said["signature"]}})
        out.append(aws_event("contentBlockStop", {"contentBlockIndex": index}))
    stop = {k: response[k] for k in ("stopReason", "additionalModelResponseFields") if k in response}
    out.append(aws_event("messageStop", stop))
    out.append(aws_event("metadata", {k: response[k] for k in BEDROCK_TOP[3:] if k in response}))
    return out


# ---------------------------------------------------------------- OpenAI Responses


def responses_events(response: dict[str, Any], rng: random.Random, *, cuts: int | None = None) -> list[bytes]:
    """response.created, then per output item: output_item.added, its pieces (a message's content parts with
    output_text / refusal deltas, a function call's argument deltas, a reasoning item's summary parts with
    their text deltas), output_item.done with the finished item; then response.completed (or .incomplete)
    carrying the whole response. https://platform.openai.com/docs/api-reference/responses-streaming"""
    seq = iter(range(1_000_000))

    def event(kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, **fields, "sequence_number": next(seq)}, kind)

    created = {**response, "output": [], "usage": None, "incomplete_details": None}
    if "status" in response:
        created["status"] = "in_progress"
    out = [event("response.created", response=created)]
    for i, item in enumerate(response.get("output", [])):
        kind, item_id = item.get("type"), item.get("id", f"item_{i}")
        if kind == "message":
            out.append(event("response.output_item.added", output_index=i,
                             item={**item, "status": "in_progress", "content": []}))  # fmt: skip
            for j, part in enumerate(item.get("content", [])):
                field = "refusal" if part.get("type") == "refusal" else "text"
                empty = {**part, field: ""} | ({"annotations": []} if field == "text" else {})
                out.append(event("response.content_part.added", item_id=item_id, output_index=i, content_index=j,
                                 part=empty))  # fmt: skip
                for piece in pieces(part.get(field, ""), rng, cuts) if part.get(field) else []:
                    name = "response.output_text.delta" if field == "text" else "response.refusal.delta"
                    extra = {"logprobs": []} if field == "text" else {}
                    out.append(event(name, item_id=item_id, output_index=i, content_index=j, delta=piece, **extra))
                out.append(event("response.content_part.done", item_id=item_id, output_index=i, content_index=j,
                                 part=part))  # fmt: skip
        elif kind == "function_call":
            out.append(event("response.output_item.added", output_index=i,
                             item={**item, "status": "in_progress", "arguments": ""}))  # fmt: skip
            for piece in pieces(item.get("arguments", ""), rng, cuts) if item.get("arguments") else []:
                out.append(event("response.function_call_arguments.delta", item_id=item_id, output_index=i,
                                 delta=piece))  # fmt: skip
            out.append(event("response.function_call_arguments.done", item_id=item_id, output_index=i,
                             name=item.get("name"), arguments=item.get("arguments")))  # fmt: skip
        elif kind == "reasoning":
            started = {k: v for k, v in item.items() if k != "encrypted_content"}
            out.append(event("response.output_item.added", output_index=i, item={**started, "summary": []}))
            for k, part in enumerate(item.get("summary", [])):
                out.append(event("response.reasoning_summary_part.added", item_id=item_id, output_index=i,
                                 summary_index=k, part={**part, "text": ""}))  # fmt: skip
                for piece in pieces(part.get("text", ""), rng, cuts) if part.get("text") else []:
                    out.append(event("response.reasoning_summary_text.delta", item_id=item_id, output_index=i,
                                     summary_index=k, delta=piece))  # fmt: skip
                out.append(event("response.reasoning_summary_part.done", item_id=item_id, output_index=i,
                                 summary_index=k, part=part))  # fmt: skip
        else:
            out.append(event("response.output_item.added", output_index=i, item=item))
        out.append(event("response.output_item.done", output_index=i, item=item))
    end = "response.incomplete" if response.get("status") == "incomplete" else "response.completed"
    out.append(event(end, response=response))
    return out


ENCODERS: dict[str, Encoder] = {
    "anthropic": anthropic_events,
    "bedrock": bedrock_events,
    "cohere": cohere_events,
    "gemini": gemini_events,
    "mistral": mistral_events,
    "ollama": ollama_events,
    "openai": openai_events,
    "openai-responses": responses_events,
}
ENCODERS = with_variants(ENCODERS)  # a variant without an entry takes its parent's
CANONICAL: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "gemini": gemini_canonical,
    "cohere": cohere_canonical,
    "bedrock": bedrock_canonical,
}
CANONICAL = with_variants(CANONICAL)  # a variant without an entry takes its parent's


def canonical(provider: str, response: dict[str, Any]) -> dict[str, Any]:
    """The response as the stream rebuilds it (identity except where a provider's stream regroups parts)."""
    return CANONICAL.get(provider, lambda r: r)(response)


# ---------------------------------------------------------------- serving and reading by framing


def framing_of(provider: str) -> str:
    """The framing the provider's rule file streams in (sse unless it names another)."""
    streaming = toolnexus.load_rules().get(provider).streaming
    return streaming.framing if streaming is not None else "sse"


def events_reply(
    provider: str, events: list[bytes], rng: random.Random | None = None, *, cuts: int = 0, **options: Any
) -> StubReply:
    """A stub reply streaming `events` (an encoder's) cut at `cuts` random byte boundaries, as the media
    type of the provider's framing; `options` are StubReply's (cut, hold, pause, delay, ...)."""
    media = FRAMINGS[framing_of(provider)].media_types[0]
    headers = {"Content-Type": media, **options.pop("headers", {})}
    return StubReply(stream=sse_pieces(events, rng, cuts=cuts), headers=headers, **options)


def data_of(provider: str, event: bytes) -> str:
    """The data text of one encoded event, as the provider's framing gives it to the stream translator."""
    framing = framing_of(provider)
    if framing == "ndjson":
        return event.decode().rstrip("\n")
    if framing == "aws-eventstream":
        from botocore.eventstream import EventStreamBuffer

        buffer = EventStreamBuffer()
        buffer.add_data(event)
        message = next(buffer)
        return json.dumps({message.headers[":event-type"]: json.loads(message.payload)})
    for line in event.decode().splitlines():
        if line.startswith("data: "):
            return line[len("data: ") :]
    raise AssertionError(event)


def error_event(provider: str, error: dict[str, Any], error_type: str = "overloaded_error") -> bytes:
    """A mid-stream error in the provider's framing: an SSE `error` event, an NDJSON line, or an AWS
    `exception` frame typed `error_type` (its payload the error body)."""
    framing = framing_of(provider)
    if framing == "ndjson":
        return ndjson_lines([error])[0]
    if framing == "aws-eventstream":
        return aws_exception(error_type, error)
    return b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
