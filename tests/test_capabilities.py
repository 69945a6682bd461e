"""`toolnexus diff --summary`: what each provider supports, asked of its rule file; the README's table is its output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.cli import run_cli
from support.made_up import made_up_provider
from toolnexus import load_rules
from toolnexus.devtools.capabilities import build_summary, render_summary
from toolnexus.devtools.diff import NOTHING

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- toolnexus capabilities: begin -->", "<!-- toolnexus capabilities: end -->"

# A made-up provider that supports nothing optional; each test adds one capability and asks again.
ZETA = made_up_provider(
    "zeta",
    endpoint="endpoint: {path: /chat, auth: none}\n",
    request="""\
request:
  body:
    model: {$get: model, required: true}
    system: {$get: system}
    turns: {$get: messages}
    box: {$get: tools}
    choice: {$get: tool_choice}
  unsupported:
    parallel_tool_calls: {action: drop}
""",
    tool_choice="""\
tool_choice:
  auto: {mode: auto}
  none: {$refuse: zeta has no none}
  required: {$refuse: zeta has no required}
  function: {$refuse: zeta has no named choice}
""",
)


def answer(tmp_path: Path, capability: str, *edits: tuple[str, str]) -> str:
    text = ZETA
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "zeta.yaml").write_text(text, encoding="utf-8")
    summary = build_summary(load_rules(tmp_path, reload=True), ["zeta"])
    return summary.rows[0][1][summary.capabilities.index(capability)]


BODY = "    turns: {$get: messages}\n"
PARTS = "    text: {t: {$get: text}}\n"


def test_tools(tmp_path: Path) -> None:
    assert answer(tmp_path, "tools") == "yes"
    refused = ("box: {$get: tools}", "box: {$when: tools, present: true, then: {$refuse: zeta takes no tools}}")
    assert answer(tmp_path, "tools", refused) == NOTHING  # placed only to be refused


def test_tool_choice_leaves_out_refused_kinds(tmp_path: Path) -> None:
    assert answer(tmp_path, "tool_choice") == "auto"
    assert answer(tmp_path, "tool_choice", ("{$refuse: zeta has no none}", "{mode: none}")) == "auto, none"


def test_parallel_tool_calls(tmp_path: Path) -> None:
    assert answer(tmp_path, "parallel tool calls") == "no switch (dropped)"
    switch = ("  auto: {mode: auto}", "  auto: {mode: auto, one: {$when: parallel_tool_calls, is: false, then: true}}")
    listed = ("    parallel_tool_calls: {action: drop}\n", "    seed: {action: drop}\n")
    assert answer(tmp_path, "parallel tool calls", switch, listed) == "switch"
    refused = ("parallel_tool_calls: {action: drop}", "parallel_tool_calls: {action: error, accept: [true]}")
    assert answer(tmp_path, "parallel tool calls", refused) == "no switch (refused)"


def test_tool_call_ids(tmp_path: Path) -> None:
    assert answer(tmp_path, "tool-call ids") == "any"
    pattern = ("tool_choice:\n", 'tool_call_ids: {pattern: "^[A-Za-z0-9_-]+$"}\ntool_choice:\n')
    assert answer(tmp_path, "tool-call ids", pattern).endswith("else tn_ + base64url")
    hashed = ("tool_choice:\n", 'tool_call_ids: {pattern: "^[a-z]{9}$", rewrite: {alphabet: a-z, length: 9}}\n'
              "tool_choice:\n")  # fmt: skip
    assert answer(tmp_path, "tool-call ids", hashed).endswith("hashed (9 of a-z)")
    synthesized = ("kind: kind,", "kind: kind, synthesize_ids: true,")
    assert answer(tmp_path, "tool-call ids", synthesized) == "any; synthesized when absent"


def test_images(tmp_path: Path) -> None:
    assert answer(tmp_path, "images") == NOTHING
    url = (PARTS, PARTS + "    image_url: {link: {$get: url}}\n")
    assert answer(tmp_path, "images", url) == "URL"
    both = (PARTS, PARTS + "    image_url: {link: {$get: url}}\n    image_base64: {data: {$get: data}}\n")
    assert answer(tmp_path, "images", both) == "base64, URL"
    refused = (PARTS, PARTS + "    image_url: {$refuse: no images}\n")
    assert answer(tmp_path, "images", refused) == NOTHING
    user = "    user: {message: {from: human, say: {$content: blocks}}}\n"
    as_given = (user, "    user: {message: {$get: source}}\n")
    assert answer(tmp_path, "images", as_given) == "as given"


def test_streaming_and_its_framing(tmp_path: Path) -> None:
    assert answer(tmp_path, "streaming") == NOTHING
    section = "streaming:\n  body: {stream: true}\n  done: END\n  every: [{into: '@', from: '@'}]\n"
    assert answer(tmp_path, "streaming", ("response:\n", section + "response:\n")) == "sse"
    framed = section.replace("  done: END\n", "  framing: ndjson\n  complete: [done]\n")
    assert answer(tmp_path, "streaming", ("response:\n", framed + "response:\n")) == "ndjson"


def test_reasoning(tmp_path: Path) -> None:
    assert answer(tmp_path, "reasoning") == NOTHING
    effort = (BODY, BODY + "    think: {$lookup: reasoning_effort, table: {low: 1, high: 2}}\n")
    assert answer(tmp_path, "reasoning", effort) == "effort"
    returned = ("kinds: {say:", "kinds: {thought: {reasoning: {$get: text}}, say:")
    assert answer(tmp_path, "reasoning", returned) == "returned"
    assert answer(tmp_path, "reasoning", effort, returned) == "effort, returned"


def test_caching(tmp_path: Path) -> None:
    assert answer(tmp_path, "caching") == NOTHING
    marked = (PARTS, "    text: {t: {$get: text}, mark: {$when: cache_control, present: true, then: here}}\n")
    assert answer(tmp_path, "caching", marked) == "breakpoints"
    usage = "usage: {prompt_tokens: {$get: usage.in}"
    reported = (usage, usage + ", prompt_tokens_details: {cached_tokens: {$get: usage.hit}}")
    assert answer(tmp_path, "caching", reported) == "hits reported"
    assert answer(tmp_path, "caching", marked, reported) == "breakpoints, hits reported"


def test_structured_output(tmp_path: Path) -> None:
    assert answer(tmp_path, "structured output") == NOTHING
    table = (BODY, BODY + "    format: {$lookup: response_format.type, skip: [text], table: {json_object: json}}\n")
    assert answer(tmp_path, "structured output", table) == "json_object"
    schema = (BODY, BODY + "    schema: {$json_text: response_format.json_schema.schema}\n")
    assert answer(tmp_path, "structured output", schema) == NOTHING  # $json_text is not a read of the schema
    both = (BODY, BODY + "    mime: {$when: response_format.type, in: [json_object, json_schema], then: json}\n")
    assert answer(tmp_path, "structured output", both) == "json_object, json_schema"
    given = (BODY, BODY + "    response_format: {$get: response_format}\n")
    assert answer(tmp_path, "structured output", given) == "as given"


def test_citations(tmp_path: Path) -> None:
    assert answer(tmp_path, "citations") == NOTHING
    say = "kinds: {say: {text: {$get: text}}}"
    made = "kinds: {say: {text: {$get: text}, annotations: {each: refs, as: {type: url_citation, url_citation: {}}}}}"
    assert answer(tmp_path, "citations", (say, made)) == "url_citation"
    given = "kinds: {say: {text: {$get: text}, annotations: {each: refs, as: {$get: '@'}}}}"
    assert answer(tmp_path, "citations", (say, given)) == "as given"


def test_refusal_text(tmp_path: Path) -> None:
    assert answer(tmp_path, "refusal text") == NOTHING
    finish = "  finish_reason: {from: stop"
    assert answer(tmp_path, "refusal text", (finish, "  refusal: {$get: why.text}\n" + finish)) == "explanation"
    assert answer(tmp_path, "refusal text", (finish, "  refusal: {$get: 'out[0].refusal'}\n" + finish)) == "as given"


def test_auth(tmp_path: Path) -> None:
    assert answer(tmp_path, "auth") == "none"
    keyed = ("auth: none}", "auth: {scheme: header, header: x-key}, api_key_env: [ZETA_KEY]}")
    assert answer(tmp_path, "auth", keyed) == "header x-key"
    first_edition = ("auth: none}", "auth_header: Authorization, auth_scheme: Bearer, api_key_env: [ZETA_KEY]}")
    assert answer(tmp_path, "auth", first_edition) == "bearer"  # what it sends: Authorization: Bearer <key>
    prefixed = ("auth: none}", "auth: {scheme: header, header: x-key, prefix: Token}, api_key_env: [ZETA_KEY]}")
    assert answer(tmp_path, "auth", prefixed) == "header x-key (Token <key>)"


# The README shows the generated summary.


def test_readme_summary_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text()
    assert readme.count(BEGIN) == 1 and readme.count(END) == 1, f"README.md needs one {BEGIN} ... {END} block"
    shown = readme.split(BEGIN)[1].split(END)[0].strip("\n")
    book = load_rules()
    fresh = render_summary(build_summary(book), "markdown", book=book).strip("\n")
    assert shown == fresh, (
        "README.md's provider capability table is stale: run `toolnexus diff --summary --format markdown` and "
        f"paste its output between {BEGIN} and {END}"
    )


def test_every_provider_has_a_row_each_family_together() -> None:
    book = load_rules()
    summary = build_summary(book)
    names = [name for name, _ in summary.rows]
    assert sorted(names) == book.names()
    for name in names:  # a variant comes after its parent
        parent = book.get(name).source.data.get("extends")
        assert parent is None or names.index(parent) < names.index(name)


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_the_cli_prints_the_summary(fmt: str) -> None:
    run = run_cli("diff", "--summary", "--format", fmt, env={**os.environ, "COLUMNS": "160"})
    assert run.returncode == 0, run.stderr
    book = load_rules()
    assert run.stdout == render_summary(build_summary(book), fmt, book=book, width=160)


def test_the_terminal_summary_fits_the_width_without_splitting_a_word() -> None:
    book = load_rules()
    summary = build_summary(book)
    words = {w for _, answers in summary.rows for a in answers for w in a.split()} | set(book.names())
    words |= {w for c in summary.capabilities for w in c.split()} | {"provider", "(extends", "|"}
    words |= {f"{p})" for p in book.names()}
    for width in (200, 230):  # the longest words alone take about 190 columns
        lines = render_summary(summary, "table", book=book, width=width).splitlines()
        assert max(map(len, lines)) <= width
        bars = [i for i, ch in enumerate(lines[0]) if ch == "|"]
        assert all([i for i, ch in enumerate(line) if ch == "|"] == bars for line in lines if "|" in line)
        cells = [line for line in lines if not line.startswith("-")]  # the rule under the header aside
        assert {w for line in cells for w in line.split()} <= words  # every word whole
