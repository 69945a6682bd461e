"""The inputs of tools/bench.py: the parity fixtures, and deterministic generated ones.

  * the golden parity fixture's request (fixtures/translation-parity.request.json) and, per
    provider, its two responses (Anthropic's from translation-parity.input.json, the same two
    in OpenAI's shape, Gemini's from translation-parity-gemini.input.json);
  * generated responses per provider: a text answer, and thinking + text + three parallel
    tool calls with nested arguments (Gemini's without ids, as generateContent sends them);
  * agent transcripts of any length: a system and a developer prompt, user turns (strings,
    text-part arrays, images), assistant turns with 1-4 parallel tool calls whose nested
    arguments arrive as JSON strings or as objects, 0.5-2 KB tool results, and 20 tool
    declarations with realistic JSON schemas;
  * one user turn with the same 20 tool declarations (the cost of declaring tools).

A seeded random generator makes every run translate the same bytes.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

JSON = dict[str, Any]

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SEED = 20_240_611

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


def round_trip(request: JSON, style: str) -> JSON:
    """The transcript as a reasoning model's `assistant_message()` hands it back, with a cache breakpoint.

    Every assistant turn carries its reasoning_content, and, as `style` says, "anthropic": its signed
    thinking_blocks; "gemini": a thought signature (extra_content) on each step's first tool call, or on
    the message when it is text only. The last user message carries cache_control.
    """
    out = copy.deepcopy(request)
    rng = random.Random(SEED)
    for message in out["messages"]:
        if message["role"] != "assistant":
            continue
        reasoning = prose(rng, 200)
        message["reasoning_content"] = reasoning
        signature = base64.b64encode(rng.randbytes(48)).decode()
        if style == "anthropic":
            message["thinking_blocks"] = [{"type": "thinking", "thinking": reasoning, "signature": signature}]
        elif message.get("tool_calls"):
            message["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": signature}}
        elif message.get("content"):
            message["extra_content"] = {"google": {"thought_signature": signature}}
    users = [m for m in out["messages"] if m["role"] == "user"]
    if users:
        users[-1]["cache_control"] = {"type": "ephemeral"}
    return out


# ---------------------------------------------------------------- responses


def generated_responses(tools: list[JSON]) -> dict[str, dict[str, JSON]]:
    """Per provider: a text answer; thinking + text + three parallel tool calls; and a large answer
    (thinking, a 40,000-character text and 24 parallel tool calls)."""
    rng = random.Random(SEED)
    answer = prose(rng, 900)
    preface = prose(rng, 120)
    thinking = prose(rng, 600)
    picked = [rng.choice(tools)["function"] for _ in range(3)]
    calls = [(call_id(rng), f["name"], example(f["parameters"], rng)) for f in picked]
    long_answer = prose(rng, 40_000)  # the large answer: a long text and 24 parallel tool calls
    many = [
        (call_id(rng), f["name"], example(f["parameters"], rng))
        for f in (rng.choice(tools)["function"] for _ in range(24))
    ]
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

    def mistral(content: str, tool_calls: list[JSON] | None, finish: str) -> JSON:
        message: JSON = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        usage = {k: openai_usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return {"id": "cmpl-bench", "object": "chat.completion", "created": 1_747_000_000,
                "model": "mistral-large-2411", "choices": [choice], "usage": usage}  # fmt: skip

    def openai_calls(picked: list[tuple[str, str, JSON]]) -> list[JSON]:
        return [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False)}}
            for i, n, a in picked
        ]

    def mistral_calls(picked: list[tuple[str, str, JSON]]) -> list[JSON]:
        """Mistral's calls: 9-character ids, and the index its answers carry."""
        return [{**call, "id": call["id"][-9:], "index": k} for k, call in enumerate(openai_calls(picked))]

    def gemini(parts: list[JSON], finish: str) -> JSON:
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
            "usageMetadata": {
                "promptTokenCount": 43_545,
                "candidatesTokenCount": 380,
                "totalTokenCount": 44_057,
                "cachedContentTokenCount": 41_200,
                "thoughtsTokenCount": 132,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 43_545}],
            },
            "modelVersion": "gemini-2.5-pro",
            "responseId": "BenchBenchBench",
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
            "large": anthropic(
                [
                    {"type": "thinking", "thinking": thinking, "signature": "EqQBCkYIBRgCKkDbench"},
                    {"type": "text", "text": long_answer},
                    *({"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in many),
                ],
                "tool_use",
            ),
        },
        "openai": {
            "text": openai(answer, None, "stop"),
            "3 tool calls": openai(preface, openai_calls(calls), "tool_calls"),
            "large": openai(long_answer, openai_calls(many), "tool_calls"),
        },
        "mistral": {
            "text": mistral(answer, None, "stop"),
            "3 tool calls": mistral(preface, mistral_calls(calls), "tool_calls"),
            "large": mistral(long_answer, mistral_calls(many), "tool_calls"),
        },
        "gemini": {
            "text": gemini([{"text": answer}], "STOP"),
            "3 tool calls": gemini(
                [
                    {"text": thinking, "thought": True},
                    {"text": preface},
                    *(
                        {
                            "functionCall": {"name": n, "args": a},
                            **({"thoughtSignature": "CiQBbench"} if k == 0 else {}),
                        }
                        for k, (_, n, a) in enumerate(calls)
                    ),
                ],
                "STOP",
            ),
            "large": gemini(
                [
                    {"text": thinking, "thought": True},
                    {"text": long_answer},
                    *({"functionCall": {"name": n, "args": a}} for _, n, a in many),
                ],
                "STOP",
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


def twenty_tools_request(tools: list[JSON]) -> JSON:
    """One short user turn declaring the 20 tools: what declaring tools costs on its own."""
    return {
        "model": "bench-model",
        "messages": [{"role": "user", "content": "Find the failing test and fix it."}],
        "tools": tools,
        "tool_choice": "auto",
    }


def parity_inputs() -> tuple[JSON, dict[str, dict[str, JSON]]]:
    """The golden parity request, and per provider its responses keyed by branch."""
    shared = json.loads((FIXTURES / "translation-parity.input.json").read_text(encoding="utf-8"))
    gemini = json.loads((FIXTURES / "translation-parity-gemini.input.json").read_text(encoding="utf-8"))
    request = shared["request"]
    if isinstance(request, str):  # the request may live in a file of its own
        request = json.loads((FIXTURES / request).read_text(encoding="utf-8"))
    answers = shared["finish_reasons"]
    return request, {
        "anthropic": answers,
        "openai": {branch: openai_shaped(answer) for branch, answer in answers.items()},
        "mistral": {branch: openai_shaped(answer) for branch, answer in answers.items()},  # the same shape
        "gemini": gemini["finish_reasons"],
    }


def json_size(data: Any) -> int:
    """Bytes of `data` as compact UTF-8 JSON, as the client sends it."""
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())


# ---------------------------------------------------------------- source formats


def messages_transcript(messages: int, tools: list[JSON]) -> JSON:
    """The agent transcript of `messages` Chat Completions messages as an Anthropic Messages request (what a
    coding agent sends): the system and developer prompts as `system`, signed thinking blocks on every
    assistant turn, `tool_use` blocks with object inputs, each step's results as `tool_result` blocks of
    one user turn, images as image blocks, the last user turn with a cache breakpoint."""
    plain = round_trip(transcript(messages, tools), "anthropic")
    system = [m["content"] for m in plain["messages"] if m["role"] in ("system", "developer")]
    turns: list[JSON] = []
    for message in plain["messages"]:
        role, content = message["role"], message.get("content")
        if role == "user":
            blocks = content if isinstance(content, str) else [_block(part) for part in content]
            if message.get("cache_control"):
                blocks = [_block({"type": "text", "text": blocks})] if isinstance(blocks, str) else blocks
                blocks[-1] = {**blocks[-1], "cache_control": message["cache_control"]}
            turns.append({"role": "user", "content": blocks})
        elif role == "assistant":
            said: list[JSON] = [dict(block) for block in message.get("thinking_blocks") or ()]
            if content:
                said.append({"type": "text", "text": content})
            for call in message.get("tool_calls") or ():
                arguments = call["function"]["arguments"]
                given = json.loads(arguments) if isinstance(arguments, str) else arguments
                said.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": given})
            turns.append({"role": "assistant", "content": said})
        elif role == "tool":
            given = content if isinstance(content, str) else [_block(part) for part in content]
            result = {"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": given}
            if turns and turns[-1]["role"] == "user" and turns[-1].get("tool_results"):
                turns[-1]["content"].append(result)
            else:
                turns.append({"role": "user", "content": [result], "tool_results": True})
    for turn in turns:
        turn.pop("tool_results", None)
    declared = [
        {"name": t["function"]["name"], "description": t["function"]["description"],
         "input_schema": t["function"]["parameters"]}
        for t in tools
    ]  # fmt: skip
    return {
        "model": "bench-model",
        "max_tokens": 2048,
        "system": "\n\n".join(system),
        "messages": turns,
        "tools": declared,
        "tool_choice": {"type": "auto"},
        "stop_sequences": ["</final>"],
        "metadata": {"user_id": "bench-user-0001"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }


def _block(part: JSON) -> JSON:
    """A Chat Completions content part as the Messages block it is."""
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    url = part["image_url"]["url"]
    if url.startswith("data:"):
        media, data = url.removeprefix("data:").split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def responses_transcript(messages: int, tools: list[JSON]) -> JSON:
    """The same agent transcript as an OpenAI Responses request (what an OpenAI agent sends with nothing
    stored): the system prompt as `instructions`, the developer prompt and user turns as message items
    (input_text and input_image parts), every assistant step as a reasoning item (summary and
    encrypted_content), its text as an output_text message and its calls as function_call items with
    JSON-text arguments, and each result as a function_call_output item."""
    plain = round_trip(transcript(messages, tools), "anthropic")
    items: list[JSON] = []
    instructions = None
    for message in plain["messages"]:
        role, content = message["role"], message.get("content")
        if role == "system" and instructions is None:
            instructions = content
        elif role in ("system", "developer", "user"):
            given = content if isinstance(content, str) else [_input_part(part) for part in content]
            items.append({"type": "message", "role": role, "content": given})
        elif role == "assistant":
            for block in message.get("thinking_blocks") or ():
                summary = [{"type": "summary_text", "text": block["thinking"]}]
                items.append({"type": "reasoning", "summary": summary, "encrypted_content": block["signature"]})
            if content:
                said = [{"type": "output_text", "text": content, "annotations": []}]
                items.append({"type": "message", "role": "assistant", "content": said})
            for call in message.get("tool_calls") or ():
                arguments = call["function"]["arguments"]
                text = arguments if isinstance(arguments, str) else json.dumps(arguments)
                name = call["function"]["name"]
                items.append({"type": "function_call", "call_id": call["id"], "name": name, "arguments": text})
        elif role == "tool":
            given = content if isinstance(content, str) else [_input_part(part) for part in content]
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": given})
    declared = [{"type": "function", **t["function"]} for t in tools]
    return {
        "model": "bench-model",
        "instructions": instructions,
        "input": items,
        "tools": declared,
        "tool_choice": "auto",
        "max_output_tokens": 2048,
        "reasoning": {"effort": "medium"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "metadata": {"user_id": "bench-user-0001"},
    }


def _input_part(part: JSON) -> JSON:
    """A Chat Completions content part as the Responses input part it is."""
    if part["type"] == "text":
        return {"type": "input_text", "text": part["text"]}
    image = part["image_url"]
    return {"type": "input_image", "image_url": image["url"], "detail": image.get("detail", "auto")}
