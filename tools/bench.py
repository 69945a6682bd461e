"""Speed of the toolnexus rule engine against a hand-written translator of the same rules.

    python tools/bench.py [--rounds N] [--quick]

What is timed: `toolnexus.translate_request` and `toolnexus.translate_response` for the
`anthropic` and `openai` rule files, on
  * the golden parity fixture (fixtures/translation-parity.input.json): its request and
    its two responses (for OpenAI, the same two responses in OpenAI's shape);
  * two generated provider responses: a text answer, and thinking + text + three
    parallel tool calls with nested input;
  * generated agent transcripts of 10, 100, 1,000 and 10,000 messages: a system and a
    developer prompt, user turns (strings, text-part arrays, images), assistant turns
    with 1-4 parallel tool calls whose nested arguments arrive as JSON strings or as
    objects, 0.5-2 KB tool results, and 20 tool declarations with realistic JSON
    schemas. A seeded random generator makes every run translate the same bytes.

What it is compared with: `hand_anthropic_*` and `hand_openai_*` below, the translator a
careful person writes by hand for the same rules, with no rule tables. Before anything
is timed, every input goes through both and the outputs must be identical (equal JSON
with the same key order; for responses every field but `notes`). Otherwise the first
difference is printed and the script exits 1, because a ratio of unequal work means
nothing. The hand-written side writes no notes and checks only what it must touch to
translate (tool-call arguments must be a JSON object, for both providers, as issue 2's
"Bad input" requires); the engine's fuller validation and notes are part of its cost.

How it measures: each side is calibrated so that one batch takes about 100 ms (at least
one call); then, in this one process, the engine and the hand-written batches of each
input alternate, round after round, with the order flipped every round. The table gives
the median microseconds per call of each side over the rounds and the median of the
per-round ratios engine / hand-written. The scaling exponent is the least-squares slope
of log(time per request) against log(messages) over the transcripts (1.0 is linear).
The generated inputs are frozen out of the garbage collector's view (`gc.freeze`) and
every batch starts right after a collection, so each side pays for what it allocates.

`--quick` is a smoke run for CI (transcripts of 10 and 100 messages, 2 rounds, 5 ms
batches): it proves the script and the parity check work; its figures are too short
to quote. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

try:
    import toolnexus
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT / "engine"))
    import toolnexus

from toolnexus import TranslatedToolCall, TranslateResult  # noqa: E402 (after the checkout fallback)

JSON = dict[str, Any]
Translate = Callable[[Any], Any]

PROVIDERS = ("anthropic", "openai")
SIZES = (10, 100, 1_000, 10_000)
QUICK_SIZES = (10, 100)
SEED = 20_240_611
PARITY_INPUT = ROOT / "fixtures" / "translation-parity.input.json"


# =============================================================================
# The hand-written baseline: the same rules, written as plain Python.
# =============================================================================

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


def _anthropic_id(call_id: str) -> str:
    """A tool-call id Anthropic accepts: as given, or tn_ + its URL-safe base64."""
    if ANTHROPIC_ID.fullmatch(call_id) and not call_id.startswith("tn_"):
        return call_id
    return "tn_" + base64.urlsafe_b64encode(call_id.encode()).decode().rstrip("=")


def _anthropic_assistant_blocks(message: JSON) -> list[JSON]:
    blocks: list[JSON] = []
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
                messages.append({"role": "user", "content": _anthropic_user_content(message["content"])})
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
    replay: list[JSON] = []
    calls: list[TranslatedToolCall] = []
    for block in response["content"]:
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            arguments = json.dumps(block["input"], ensure_ascii=False)
            calls.append(TranslatedToolCall(id=block["id"], name=block["name"], arguments=arguments))
        elif kind in ("thinking", "redacted_thinking"):
            reasoning.append(block.get("thinking", ""))
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
            out_calls.append(
                {"id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": text}}
            )
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


def hand_openai_response(response: JSON, requested_model: str | None = None) -> TranslateResult:
    """OpenAI response -> result: nearly field for field."""
    choice = response["choices"][0]
    message = choice["message"]
    calls = []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = function["arguments"]
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        extra = call.get("extra_content")
        calls.append(TranslatedToolCall(id=call["id"], name=function["name"], arguments=arguments, extra_content=extra))
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


HAND_WRITTEN: dict[str, tuple[Translate, Translate]] = {
    "anthropic": (hand_anthropic_request, hand_anthropic_response),
    "openai": (hand_openai_request, hand_openai_response),
}


# =============================================================================
# Inputs: the parity fixture, and deterministic generated transcripts.
# =============================================================================

_VOCABULARY = """the a to of and in for is on that with as it be this by are from or at an not we you
    request response cache table rule engine model token tool call result message schema field value
    index query filter order status user account invoice payment report build deploy release test
    file path line error warning retry timeout latency region cluster node service queue worker job
    config option default limit offset page cursor batch stream event log metric trace span window
    customer ticket issue label priority owner review merge branch commit diff patch version tag
    update create delete read write list search fetch parse render compile validate translate
    quickly carefully again later first next last every each some most all none only also still
    café naïve Grüße 東京 데이터 résumé über façade niño 🚀 ✅"""
WORDS = tuple(_VOCABULARY.split())


def words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def prose(rng: random.Random, chars: int) -> str:
    """Sentences of random words, about `chars` long."""
    out: list[str] = []
    size = 0
    while size < chars:
        sentence = words(rng, 6, 18)
        sentence = sentence[0].upper() + sentence[1:] + rng.choice((".", ".", ".", "?", ":", "!"))
        out.append(sentence)
        size += len(sentence) + 1
    return " ".join(out)


# ---------------------------------------------------------------- tool declarations


def s(description: str, **extra: Any) -> JSON:
    return {"type": "string", "description": description, **extra}


def i(description: str, minimum: int = 0, maximum: int = 1000, **extra: Any) -> JSON:
    return {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum, **extra}


def num(description: str) -> JSON:
    return {"type": "number", "description": description}


def b(description: str) -> JSON:
    return {"type": "boolean", "description": description}


def enum(description: str, *values: str) -> JSON:
    return {"type": "string", "description": description, "enum": list(values)}


def arr(description: str, items: JSON, **extra: Any) -> JSON:
    return {"type": "array", "description": description, "items": items, **extra}


def obj(description: str, required: Sequence[str] = (), **properties: JSON) -> JSON:
    schema: JSON = {"type": "object", "description": description, "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def string_map(description: str) -> JSON:
    return {"type": "object", "description": description, "additionalProperties": {"type": "string"}}


DATE_TIME = {"type": "string", "format": "date-time"}
EMAIL = {"type": "string", "format": "email"}


def tool(name: str, description: str, parameters: JSON) -> JSON:
    parameters = {key: value for key, value in parameters.items() if key != "description"}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def tool_declarations() -> list[JSON]:
    """Twenty tools of an agent, with the kind of schemas real ones carry."""
    when = obj("A point in time.", ["date_time"], date_time=DATE_TIME, time_zone=s("IANA zone, e.g. Europe/Paris."))
    return [
        tool("search_code", "Search the repository for code matching a query.", obj(
            "", ["query"],
            query=s("Text or regular expression to look for."),
            path_glob=s("Only files matching this glob, e.g. src/**/*.py."),
            filters=obj("Narrow the search.", language=enum("Language.", "python", "go", "rust", "typescript"),
                        modified_after=DATE_TIME, max_size_kb=i("Skip larger files.", 1, 4096)),
            limit=i("Most results to return.", 1, 200, default=20),
            case_sensitive=b("Match case exactly."))),
        tool("read_file", "Read a text file, optionally a line range.", obj(
            "", ["path"],
            path=s("Path relative to the repository root."),
            range=obj("Lines to read.", ["start_line"], start_line=i("First line, 1-based.", 1),
                      end_line=i("Last line, inclusive.", 1)),
            encoding=enum("Text encoding.", "utf-8", "latin-1", "utf-16"))),
        tool("write_file", "Create or overwrite a file.", obj(
            "", ["path", "content"],
            path=s("Path relative to the repository root."), content=s("The full new content."),
            mode=enum("How to write.", "overwrite", "append", "create_only"), create_dirs=b("Create parents."))),
        tool("apply_patch", "Apply hunks to a file.", obj(
            "", ["path", "hunks"],
            path=s("File to patch."),
            hunks=arr("Hunks in file order.", obj("One hunk.", ["old_start", "new_lines"],
                      old_start=i("Line the hunk starts at.", 1), old_lines=i("Lines it replaces."),
                      new_lines=arr("Replacement lines.", {"type": "string"}))))),
        tool("run_shell", "Run a shell command in the sandbox.", obj(
            "", ["command"],
            command=s("The command line."), cwd=s("Working directory."), timeout_s=i("Seconds before kill.", 1, 3600),
            env=string_map("Extra environment variables."))),
        tool("http_request", "Send an HTTP request and return status, headers and body.", obj(
            "", ["method", "url"],
            method=enum("HTTP method.", "GET", "POST", "PUT", "PATCH", "DELETE"),
            url={"type": "string", "format": "uri", "description": "Absolute URL."},
            headers=string_map("Request headers."), query=string_map("Query parameters."),
            body=obj("Request body.", content_type=enum("Media type.", "application/json", "text/plain"),
                     text=s("Body text.")),
            timeout_s=num("Seconds to wait."))),
        tool("query_database", "Run a read-only SQL query.", obj(
            "", ["sql"],
            sql=s("One SELECT statement; use $1, $2 for parameters."),
            params=arr("Positional parameters.", {"type": ["string", "number", "null"]}),
            database=enum("Which database.", "orders", "analytics", "billing"), max_rows=i("Row limit.", 1, 10000))),
        tool("send_email", "Send an email on the user's behalf.", obj(
            "", ["to", "subject", "body_text"],
            to=arr("Recipients.", EMAIL, minItems=1), cc=arr("Copy recipients.", EMAIL), subject=s("Subject line."),
            body_text=s("Plain-text body."),
            attachments=arr("Files to attach.", obj("One file.", ["filename", "mime_type"], filename=s("Name."),
                            mime_type=s("Media type."), size_bytes=i("Size.", 0, 10_000_000))))),
        tool("create_calendar_event", "Create an event in the user's calendar.", obj(
            "", ["title", "start", "end"],
            title=s("Event title."), start=when, end=when,
            attendees=arr("People invited.", obj("One attendee.", ["email"], email=EMAIL, optional=b("Optional."))),
            reminders=arr("Reminders.", obj("One reminder.", ["method", "minutes_before"],
                          method=enum("How.", "email", "popup"), minutes_before=i("Minutes before.", 0, 40320))),
            recurrence=obj("Repetition.", ["freq"], freq=enum("Frequency.", "daily", "weekly", "monthly"),
                           count=i("Occurrences.", 1, 365)))),
        tool("get_weather", "Current conditions and forecast for a place.", obj(
            "", ["location"],
            location=obj("Where.", ["city"], city=s("City name."), country_code=s("ISO 3166 code."),
                         lat=num("Latitude."), lon=num("Longitude.")),
            units=enum("Units.", "metric", "imperial"), days=i("Forecast days.", 1, 14))),
        tool("search_web", "Search the web.", obj(
            "", ["query"],
            query=s("Search terms."), site=s("Restrict to a domain."), recency_days=i("Only recent pages.", 1, 365),
            num_results=i("How many.", 1, 50), safe_search=b("Filter explicit results."))),
        tool("list_directory", "List files under a directory.", obj(
            "", ["path"],
            path=s("Directory."), recursive=b("Descend."), include_hidden=b("Dotfiles too."),
            patterns=arr("Glob patterns to keep.", {"type": "string"}), max_depth=i("Depth limit.", 1, 32))),
        tool("git_log", "Show commit history.", obj(
            "", ["repo_path"],
            repo_path=s("Repository."), branch=s("Branch or ref."), since=DATE_TIME, author=s("Author filter."),
            paths=arr("Only commits touching these paths.", {"type": "string"}), max_count=i("Limit.", 1, 500))),
        tool("create_issue", "Open an issue in the tracker.", obj(
            "", ["repo", "title"],
            repo=s("owner/name."), title=s("Issue title."), body=s("Markdown body."),
            labels=arr("Labels.", enum("Label.", "bug", "feature", "docs", "performance", "security")),
            assignees=arr("Logins.", {"type": "string"}), milestone=i("Milestone number.", 1, 999),
            priority=enum("Priority.", "p0", "p1", "p2", "p3"))),
        tool("update_ticket", "Change fields of a support ticket.", obj(
            "", ["ticket_id", "fields"],
            ticket_id=s("Ticket id, e.g. SUP-1234."),
            fields=obj("Fields to set.", status=enum("Status.", "open", "pending", "solved", "closed"),
                       assignee=s("Agent login."), due_date=DATE_TIME, story_points=num("Estimate."),
                       tags=arr("Tags.", {"type": "string"})),
            comment=s("Internal comment to add."))),
        tool("translate_text", "Translate text between languages.", obj(
            "", ["text", "target_lang"],
            text=s("Text to translate."), source_lang=s("Source language; detected when absent."),
            target_lang=enum("Target language.", "en", "de", "fr", "ja", "ko", "es"),
            formality=enum("Register.", "default", "more", "less"),
            glossary=arr("Fixed translations.", obj("Entry.", ["term", "translation"], term=s("Term."),
                         translation=s("Its translation."))))),
        tool("summarize_document", "Summarize a stored document.", obj(
            "", ["document_id"],
            document_id=s("Document id."), max_words=i("Length limit.", 20, 2000),
            focus=arr("Topics to emphasize.", {"type": "string"}), style=enum("Style.", "bullets", "prose", "tldr"))),
        tool("execute_python", "Run Python code in an isolated kernel.", obj(
            "", ["code"],
            code=s("Source code to run."), timeout_s=i("Seconds.", 1, 600),
            packages=arr("Extra packages.", {"type": "string"}), inputs=string_map("Variables to define first."))),
        tool("lookup_customer", "Find a customer and related records.", obj(
            "", ["customer"],
            customer=obj("Who.", email=EMAIL, id=s("Customer id."), phone=s("E.164 phone number.")),
            include=arr("Related records.", enum("Kind.", "orders", "invoices", "tickets", "notes")),
            order_filters=obj("Which orders.", status=enum("Status.", "placed", "shipped", "returned"),
                              placed_after=DATE_TIME, min_total=num("Minimum total.")))),
        tool("schedule_job", "Schedule a recurring background job.", obj(
            "", ["name", "cron", "task"],
            name=s("Job name."), cron=s("Cron expression, e.g. '0 3 * * *'."),
            task=obj("What runs.", ["kind"], kind=enum("Task kind.", "http", "script", "export"),
                     payload=obj("Task input.", target=s("Target."), args=arr("Arguments.", {"type": "string"}),
                                 retries=obj("Retry policy.", max=i("Attempts.", 0, 10), backoff_s=num("Backoff.")))),
            enabled=b("Start enabled."))),
    ]  # fmt: skip


# ---------------------------------------------------------------- values from schemas

LONG_TEXT_FIELDS = frozenset({"content", "code", "body", "body_text", "sql", "text", "comment", "new_lines"})


def example(schema: JSON, rng: random.Random, name: str = "") -> Any:
    """A plausible value for `schema` (the subset of JSON Schema the declarations use)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if kind == "object":
        properties = schema.get("properties")
        if properties is None:  # a string map
            return {f"{rng.choice(WORDS)}_{k}".upper(): words(rng, 1, 3) for k in range(rng.randint(1, 3))}
        required = set(schema.get("required", ()))
        return {key: example(sub, rng, key) for key, sub in properties.items() if key in required or rng.random() < 0.6}
    if kind == "array":
        return [example(schema["items"], rng, name) for _ in range(rng.randint(1, 4))]
    if kind == "integer":
        return rng.randint(schema.get("minimum", 0), min(schema.get("maximum", 1000), 5000))
    if kind == "number":
        return round(rng.uniform(-90, 90), 4)
    if kind == "boolean":
        return rng.random() < 0.5
    fmt = schema.get("format")
    if fmt == "date-time":
        month, day, hour, minute = rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)
        return f"2025-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:00Z"
    if fmt == "email":
        return f"{rng.choice(WORDS)}.{rng.randint(1, 999)}@example.com"
    if fmt == "uri":
        return f"https://api.example.com/v2/{rng.choice(WORDS)}/{rng.randint(1, 99999)}?page={rng.randint(1, 9)}"
    if name in LONG_TEXT_FIELDS:
        return "\n".join(
            words(rng, 4, 14) + (' "quoted"' if rng.random() < 0.2 else "") for _ in range(rng.randint(1, 8))
        )
    if "path" in name:
        return "/".join(rng.choices(("src", "pkg", "lib", "tests", "core", "api"), k=rng.randint(1, 3))) + (
            f"/{rng.choice(WORDS)}_{rng.randint(1, 99)}.py"
        )
    return words(rng, 1, 5)


# ---------------------------------------------------------------- transcripts


def call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", k=24))


def tool_result_text(rng: random.Random) -> str:
    """0.5-2 KB of what tools print: JSON rows, log lines or prose."""
    target = rng.randint(500, 1900)
    style = rng.random()
    lines: list[str] = []
    size = 0
    while size < target:
        if style < 0.4:
            row = {
                "id": rng.randint(1, 99999),
                "name": words(rng, 1, 3),
                "status": rng.choice(("open", "done", "failed")),
                "updated_at": f"2025-05-{rng.randint(1, 28):02d}T10:00:00Z",
                "score": round(rng.random(), 3),
            }
            line = json.dumps(row, ensure_ascii=False)
        elif style < 0.7:
            line = f"2025-05-{rng.randint(1, 28):02d} {rng.choice(('INFO', 'WARN', 'ERROR'))} {words(rng, 5, 14)}"
        else:
            line = prose(rng, 80)
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def user_message(rng: random.Random) -> JSON:
    roll = rng.random()
    if roll < 0.75:
        return {"role": "user", "content": prose(rng, rng.randint(40, 700))}
    if roll < 0.9:
        return {
            "role": "user",
            "content": [{"type": "text", "text": prose(rng, 120) + " "} for _ in range(rng.randint(2, 3))],
        }
    if rng.random() < 0.7:
        data = base64.b64encode(rng.randbytes(rng.randint(200, 1200))).decode()
        image = {"url": f"data:image/png;base64,{data}"}
    else:
        image = {"url": f"https://images.example.com/shots/{rng.randint(1, 99999)}.png", "detail": "auto"}
    return {
        "role": "user",
        "content": [{"type": "text", "text": prose(rng, 100)}, {"type": "image_url", "image_url": image}],
    }


def assistant_with_calls(rng: random.Random, tools: list[JSON], count: int) -> JSON:
    calls = []
    for _ in range(count):
        function = rng.choice(tools)["function"]
        arguments: str | JSON = example(function["parameters"], rng)
        if rng.random() < 0.7:  # the usual wire shape: a JSON string, in one of two spellings
            arguments = json.dumps(
                arguments, ensure_ascii=rng.random() < 0.5, separators=rng.choice(((",", ":"), None))
            )
        calls.append(
            {"id": call_id(rng), "type": "function", "function": {"name": function["name"], "arguments": arguments}}
        )
    roll = rng.random()
    content = None if roll < 0.5 else "" if roll < 0.65 else prose(rng, rng.randint(30, 200))
    return {"role": "assistant", "content": content, "tool_calls": calls}


def tool_message(rng: random.Random, call: JSON) -> JSON:
    text = tool_result_text(rng)
    if rng.random() < 0.15:
        half = len(text) // 2
        return {
            "role": "tool",
            "tool_call_id": call["id"],
            "content": [{"type": "text", "text": text[:half]}, {"type": "text", "text": text[half:]}],
        }
    return {"role": "tool", "tool_call_id": call["id"], "content": text}


def transcript(messages: int, tools: list[JSON], seed: int = SEED) -> JSON:
    """An agent conversation of exactly `messages` messages, the same on every run."""
    rng = random.Random(seed * 100_003 + messages)
    out: list[JSON] = [{"role": "system", "content": prose(rng, 1500)}]
    if messages > 1:
        out.append({"role": "developer", "content": prose(rng, 200)})
    while len(out) < messages:
        out.append(user_message(rng))
        for _ in range(rng.randint(1, 4)):  # tool rounds before the answer
            room = messages - len(out) - 1  # messages left for results after the assistant turn
            if room < 1:
                break
            assistant = assistant_with_calls(rng, tools, min(rng.choice((1, 1, 2, 2, 3, 4)), room))
            out.append(assistant)
            out.extend(tool_message(rng, call) for call in assistant["tool_calls"])
        if len(out) < messages:
            out.append({"role": "assistant", "content": prose(rng, rng.randint(100, 1500))})
    return {
        "model": "bench-model",
        "messages": out[:messages],
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "max_tokens": 2048,
        "temperature": 0.2,
        "stop": ["</final>"],
        "user": "bench-user-0001",
    }


# ---------------------------------------------------------------- responses


def generated_responses(tools: list[JSON]) -> dict[str, dict[str, JSON]]:
    """Per provider: a text answer, and thinking + text + three parallel tool calls."""
    rng = random.Random(SEED)
    answer = prose(rng, 900)
    preface = prose(rng, 120)
    thinking = prose(rng, 600)
    picked = [rng.choice(tools)["function"] for _ in range(3)]
    calls = [(call_id(rng), f["name"], example(f["parameters"], rng)) for f in picked]
    anthropic_usage = {
        "input_tokens": 2_345,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 41_200,
        "output_tokens": 512,
        "service_tier": "standard",
    }
    openai_usage = {
        "prompt_tokens": 43_545,
        "completion_tokens": 512,
        "total_tokens": 44_057,
        "prompt_tokens_details": {"cached_tokens": 41_200, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }

    def anthropic(content: list[JSON], stop: str) -> JSON:
        return {
            "id": "msg_01BenchBenchBench",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": anthropic_usage,
        }

    def openai(content: str | None, tool_calls: list[JSON] | None, finish: str) -> JSON:
        message: JSON = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": "chatcmpl-Bench",
            "object": "chat.completion",
            "created": 1_747_000_000,
            "model": "gpt-4.1",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": openai_usage,
            "service_tier": "default",
            "system_fingerprint": "fp_bench",
        }

    return {
        "anthropic": {
            "text": anthropic([{"type": "text", "text": answer}], "end_turn"),
            "3 tool calls": anthropic(
                [
                    {"type": "thinking", "thinking": thinking, "signature": "EqQBCkYIBRgCKkDbench"},
                    {"type": "text", "text": preface},
                    *({"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls),
                ],
                "tool_use",
            ),
        },
        "openai": {
            "text": openai(answer, None, "stop"),
            "3 tool calls": openai(
                preface,
                [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)},
                    }
                    for i, n, a in calls
                ],
                "tool_calls",
            ),
        },
    }


def openai_shaped(anthropic_response: JSON) -> JSON:
    """The parity fixture's Anthropic responses, as OpenAI would have sent them."""
    content = anthropic_response["content"]
    text = "".join(block["text"] for block in content if block["type"] == "text")
    calls = [
        {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
        }
        for block in content
        if block["type"] == "tool_use"
    ]
    message: JSON = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    tokens = anthropic_response["usage"]
    prompt, completion = tokens["input_tokens"], tokens["output_tokens"]
    return {
        "id": "chatcmpl-parity",
        "object": "chat.completion",
        "model": anthropic_response["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "length"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


# =============================================================================
# Cases, the parity check, timing.
# =============================================================================


@dataclass
class Case:
    provider: str
    input: str  # what was translated
    op: str  # request | response
    size: str  # a human-readable size
    engine: Translate
    baseline: Translate
    data: JSON
    messages: int | None = None  # transcript length, for the scaling fit
    engine_ns: list[float] = field(default_factory=list)  # per call, one per round
    baseline_ns: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.provider} {self.input} {self.op}"


def kib(data: JSON) -> str:
    return f"{len(json.dumps(data, ensure_ascii=False).encode()) / 1024:,.1f} KiB"


def request_case(provider: str, name: str, data: JSON, messages: int | None = None) -> Case:
    engine = partial(toolnexus.translate_request, provider)
    size = f"{len(data['messages'])} msgs, {kib(data)}"
    return Case(provider, name, "request", size, engine, HAND_WRITTEN[provider][0], data, messages)


def response_case(provider: str, name: str, data: JSON) -> Case:
    engine = partial(toolnexus.translate_response, provider)
    return Case(provider, name, "response", kib(data), engine, HAND_WRITTEN[provider][1], data)


def build_cases(sizes: Sequence[int]) -> list[Case]:
    parity = json.loads(PARITY_INPUT.read_text(encoding="utf-8"))
    if isinstance(parity["request"], str):  # the request may live in a file of its own
        parity["request"] = json.loads((PARITY_INPUT.parent / parity["request"]).read_text(encoding="utf-8"))
    tools = tool_declarations()
    transcripts = {n: transcript(n, tools) for n in sizes}
    generated = generated_responses(tools)
    cases: list[Case] = []
    for provider in PROVIDERS:
        cases.append(request_case(provider, "parity fixture", parity["request"]))
        for branch, answer in parity["finish_reasons"].items():
            answer = answer if provider == "anthropic" else openai_shaped(answer)
            cases.append(response_case(provider, f"parity {branch}", answer))
        cases.extend(
            response_case(provider, f"generated: {name}", answer) for name, answer in generated[provider].items()
        )
        cases.extend(request_case(provider, f"transcript {n:,}", data, n) for n, data in transcripts.items())
    return cases


# ---------------------------------------------------------------- parity


def comparable(output: Any) -> Any:
    """What must be equal: a body as is; a result without its notes."""
    if isinstance(output, TranslateResult):
        calls = [(c.id, c.name, c.arguments, c.extra_content) for c in output.tool_calls]
        return {
            "text": output.text,
            "reasoning_content": output.reasoning_content,
            "message_extras": output.message_extras,
            "tool_calls": calls,
            "finish_reason": output.finish_reason,
            "usage": output.usage,
            "model": output.model,
            "raw is the response": output.raw,
        }
    return output


def first_difference(engine: Any, baseline: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, key order included; None when identical."""
    if type(engine) is not type(baseline) and not (isinstance(engine, dict) and isinstance(baseline, dict)):
        engine_type, baseline_type = type(engine).__name__, type(baseline).__name__
        return f"{path}: engine gives {engine_type} {_short(engine)}, hand-written {baseline_type} {_short(baseline)}"
    if isinstance(engine, dict):
        if list(engine) != list(baseline):
            return f"{path}: keys differ (order counts):\n    engine: {list(engine)}\n    hand:   {list(baseline)}"
        for key in engine:
            found = first_difference(engine[key], baseline[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(engine, (list, tuple)):
        if len(engine) != len(baseline):
            return f"{path}: engine has {len(engine)} items, hand-written {len(baseline)}"
        for index, (a, b_) in enumerate(zip(engine, baseline, strict=True)):
            found = first_difference(a, b_, f"{path}[{index}]")
            if found:
                return found
        return None
    if engine is baseline or engine == baseline:
        return None
    if isinstance(engine, str) and isinstance(baseline, str):
        at = next((i for i, (x, y) in enumerate(zip(engine, baseline, strict=False)) if x != y), None)
        at = min(len(engine), len(baseline)) if at is None else at
        start = max(0, at - 20)
        return (
            f"{path}: strings differ at character {at}: engine ...{_short(engine[start : at + 40])}, "
            f"hand-written ...{_short(baseline[start : at + 40])}"
        )
    return f"{path}: engine gives {_short(engine)}, hand-written {_short(baseline)}"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[:limit] + "..."


def check_parity(cases: Sequence[Case]) -> bool:
    ok = True
    for case in cases:
        engine_out = comparable(case.engine(case.data))
        baseline_out = comparable(case.baseline(case.data))
        if isinstance(engine_out, dict) and "raw is the response" in engine_out:
            engine_out["raw is the response"] = engine_out["raw is the response"] is case.data
            baseline_out["raw is the response"] = baseline_out["raw is the response"] is case.data
        difference = first_difference(engine_out, baseline_out)
        if difference:
            print(f"NOT THE SAME WORK: {case.label}\n  {difference}", file=sys.stderr)
            ok = False
    return ok


# ---------------------------------------------------------------- timing


Clock = Callable[[], int]
# wall: elapsed time, what a caller waits (the default). cpu: this thread's CPU time, which leaves
# out the time the OS gave to other processes; use it on a shared, loaded machine.
CLOCKS: dict[str, Clock] = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}


def batch_ns(fn: Translate, data: JSON, iterations: int, clock: Clock) -> int:
    """Wall time of `iterations` calls, after a collection so earlier garbage is not billed."""
    gc.collect()
    loop = range(iterations)
    start = clock()
    for _ in loop:
        fn(data)
    return clock() - start


def calibrate(fn: Translate, data: JSON, target_ns: int, clock: Clock) -> int:
    """Iterations for one batch of about `target_ns` (at least one call)."""
    fn(data)  # warm up
    iterations = 1
    while True:
        elapsed = batch_ns(fn, data, iterations, clock)
        if elapsed * 10 >= target_ns:
            return max(1, round(iterations * target_ns / elapsed))
        iterations *= 10


def measure(cases: Sequence[Case], rounds: int, target_ns: int, clock: Clock) -> None:
    plan = [
        (
            case,
            calibrate(case.engine, case.data, target_ns, clock),
            calibrate(case.baseline, case.data, target_ns, clock),
        )
        for case in cases
    ]
    for round_no in range(rounds):
        for case, engine_n, baseline_n in plan:
            sides = [("engine", case.engine, engine_n), ("baseline", case.baseline, baseline_n)]
            if round_no % 2:
                sides.reverse()
            per_call = {name: batch_ns(fn, case.data, n, clock) / n for name, fn, n in sides}
            case.engine_ns.append(per_call["engine"])
            case.baseline_ns.append(per_call["baseline"])
            case.ratios.append(per_call["engine"] / per_call["baseline"])
        print(f"  round {round_no + 1}/{rounds} done", file=sys.stderr, flush=True)


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)


# ---------------------------------------------------------------- report


def machine_note() -> str:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    try:
        version = metadata.version("toolnexus")
    except metadata.PackageNotFoundError:
        version = "from the checkout"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores ({usable} usable), load average {load}; toolnexus {version} {checkout()}"
    )


def checkout() -> str:
    """The commit being measured, and whether the work tree differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "engine", "rules"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return ""
    if head.returncode:
        return ""
    return f"at {head.stdout.strip()}" + (" + uncommitted engine/rules changes" if dirty.stdout.strip() else "")


def micros(ns: float) -> str:
    us = ns / 1000
    return f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def report(cases: Sequence[Case], rounds: int, target_ns: int, clock: str, machine: str, quick: bool) -> None:
    print(
        f"toolnexus bench: rule engine vs hand-written translator, interleaved in one process, {rounds} rounds, "
        f"~{target_ns / 1e6:g} ms batches, {clock} clock{' (QUICK: a smoke run, do not quote)' if quick else ''}"
    )
    print(f"machine: {machine}")
    print(f"parity: engine and hand-written outputs identical on all {len(cases)} inputs (checked before timing)")
    print("µs = median microseconds per call; ratio = median of per-round engine/hand-written [min-max]\n")
    header = f"{'input':<28} {'op':<9} {'size':<22} {'engine µs':>11} {'hand µs':>11} {'ratio':>7}  {'[min-max]':<13}"
    for provider in PROVIDERS:
        print(f"{provider}\n{header}\n{'-' * len(header)}")
        for case in (c for c in cases if c.provider == provider):
            ratio = statistics.median(case.ratios)
            spread = f"[{min(case.ratios):.2f}-{max(case.ratios):.2f}]"
            print(
                f"{case.input:<28} {case.op:<9} {case.size:<22} {micros(statistics.median(case.engine_ns)):>11} "
                f"{micros(statistics.median(case.baseline_ns)):>11} {ratio:>6.2f}x  {spread}"
            )
        print()

    print("scaling exponent: slope of log(µs per request) against log(messages); 1.00 is linear")
    print(f"{'provider':<11} {'side':<13} {'all sizes':>10} {'last two':>9} {'µs/message':>11}")
    for provider in PROVIDERS:
        rows = sorted((c for c in cases if c.provider == provider and c.messages), key=lambda c: c.messages or 0)
        if len(rows) < 2:
            continue
        for side, name in (("engine", "engine"), ("baseline", "hand-written")):
            points = [(float(c.messages or 0), statistics.median(getattr(c, f"{side}_ns"))) for c in rows]
            per_message = points[-1][1] / points[-1][0] / 1000
            print(f"{provider:<11} {name:<13} {slope(points):>10.2f} {slope(points[-2:]):>9.2f} {per_message:>11.1f}")
    sizes = [c.messages for c in cases if c.provider == PROVIDERS[0] and c.messages]
    print(f"(all sizes: {min(sizes):,}..{max(sizes):,} messages; last two: the two largest; µs/message at the largest)")

    worst = max(cases, key=lambda c: statistics.median(c.ratios))
    within = sum(statistics.median(c.ratios) <= 2.0 for c in cases)
    print(
        f"\ntarget (issue 2): engine within 2x of hand-written on {within} of {len(cases)} rows; "
        f"worst {statistics.median(worst.ratios):.2f}x ({worst.label})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="CI smoke run: small transcripts, short batches")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall time (default) or thread CPU time"
    )
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 7)
    target_ns = 5_000_000 if args.quick else 100_000_000
    if rounds < 1:
        parser.error("--rounds must be at least 1")

    cases = build_cases(QUICK_SIZES if args.quick else SIZES)
    if not check_parity(cases):
        print(
            "stopping: the engine and the hand-written translator disagree, so a ratio would mean nothing",
            file=sys.stderr,
        )
        return 1
    machine = machine_note()  # before the run: its load average is the other processes'
    gc.collect()
    gc.freeze()  # the inputs are long-lived: keep them out of every collection
    measure(cases, rounds, target_ns, CLOCKS[args.clock])
    report(cases, rounds, target_ns, args.clock, machine, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
