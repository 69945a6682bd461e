"""A source request's transcript written by a (format, provider) pair's fused function (`formats._fused_source`).

The fused function writes what the provider's `messages` function returns straight from the format's items, its
paths the format's; `Inbound.translate` takes it and says where its notes are, so only the others are
named. When it declines (None), or anything raises, today's route (the format's reader, then the provider's
rules) runs from the fields already read, and names every note and error: the body, its notes and any error are
the same either way.
"""

from __future__ import annotations

import copy
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cases import CASES
from support.cli import explain_code
from support.fused import OPTIONS, assert_todays, counted, outcome, without_fused
from toolnexus import Note, ToolnexusError, load_rules
from toolnexus.language.templates import SEAL, Ctx, sealed
from toolnexus.translate import formats
from toolnexus.translate.formats import SourceFormat, named, translate_source

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bench_inputs import messages_transcript, responses_transcript, tool_declarations  # noqa: E402

SOURCE = "openai-responses"


def hub_written(fmt: SourceFormat, provider: str) -> formats.Fused:
    """A stand-in fused function: the format's reader, then the provider's `messages`, its paths named by the
    reader's records (what a fused function writes at once)."""
    inbound = load_rules().get(provider).inbound
    assert fmt.transcript is not None

    def written(items: list[Any], system: Any) -> Any:
        read = fmt.transcript(items, system, False, None)
        if read is None:
            return None
        messages, records, made = read
        for message, role in made:  # the reader's post-pass (`read_transcript`)
            content = message.get("content")
            if isinstance(content, list) and len(content) == 1 and role in fmt.plain_text:
                if content[0].keys() == {"type", "text"} and content[0]["type"] == "text":
                    message["content"] = content[0]["text"]
            elif content == [] and message["role"] != "user":
                message["content"] = None
        written = inbound.messages(messages, Ctx(provider), None)
        if written is None:
            return None
        turns, hoisted, notes, first, left, more = written
        hoisted = [(text, named([path], {}, records)[0], i, m) for text, path, i, m in hoisted]
        paths = named([n.path for n in notes], {}, records)
        notes = [Note(n.kind, path, n.message, n.side) for n, path in zip(notes, paths, strict=True)]
        return (turns, hoisted, notes, first, left, more), None

    return written


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_written_transcript_gives_todays_body_and_notes(provider: str) -> None:
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(10, tool_declarations())
    request["metadata"] = {"a": "b"}  # a field's note, named by the origins around the transcript's
    given = replace(fmt, fused={provider: hub_written(fmt, provider)})
    for options in ({}, {"system": "per call"}):
        assert outcome(given, provider, request, **options) == outcome(without_fused(fmt), provider, request, **options)


def test_the_transcripts_notes_are_named_by_position() -> None:
    """A note the fused function makes is kept as it is, even at a path the origins would rename (the format's
    transcript key may be the hub's, as Anthropic's `messages`); the fields' notes are named by the origins."""
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(10, tool_declarations())
    request["metadata"] = {"a": "b"}
    made = hub_written(fmt, "gemini")
    own = Note("dropped", "max_completion_tokens", "a path the origins rename")

    def noting(items: list[Any], system: Any) -> Any:
        (turns, hoisted, notes, first, left, more), sent = made(items, system)
        return (turns, hoisted, [own, *notes], first, left, more), sent

    body = translate_source(replace(fmt, fused={"gemini": noting}), load_rules().get("gemini").inbound, request)
    today = outcome(without_fused(fmt), "gemini", request)[2]
    assert [tuple(n) for n in body.notes if n != own] == today
    assert own in body.notes and ("dropped", "metadata", "gemini has no counterpart", "") in today


def test_a_decline_reads_the_fields_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fmt = load_rules().format(SOURCE)
    read = fmt.read_fields
    calls = []

    def counted(*args: Any) -> Any:
        calls.append(1)
        return read(*args)

    request = responses_transcript(10, tool_declarations())
    declining = replace(fmt, fused={"openai": lambda items, system: None}, read_fields=counted)
    assert outcome(declining, "openai", request) == outcome(without_fused(fmt), "openai", request)
    assert len(calls) == 1


def test_a_fused_function_that_raises_declines() -> None:
    """Whatever the generated loop raises (a shape it did not foresee) is a decline: today's route answers."""
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(10, tool_declarations())

    def raising(items: list[Any], system: Any) -> Any:
        raise TypeError("unhashable type: 'list'")

    assert outcome(replace(fmt, fused={"openai": raising}), "openai", request) == outcome(
        without_fused(fmt), "openai", request
    )


def test_an_error_after_the_transcript_is_todays() -> None:
    """An error the provider's rules raise with the fused transcript in hand: today's route raises it, named."""
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(10, tool_declarations())
    request["tool_choice"] = {"type": "function", "name": "nope"}
    given = replace(fmt, fused={"openai": hub_written(fmt, "openai")})
    assert outcome(given, "openai", request) == outcome(without_fused(fmt), "openai", request)
    assert outcome(given, "openai", request)[0] == "error"


# ---------------------------------------------------------------- the generated fused functions (fused_code)

FUSED = sorted(load_rules().format(SOURCE).fused)


def test_the_pairs_that_compose_get_a_fused_function() -> None:
    """Decided by the rules: a provider that rewrites ids by a hash (Mistral: the format's items scanned for every
    id first), one whose roles read the current turn (Gemini), end a turn early (Cohere: an empty turn dropped)
    or encode ids one by one (Anthropic, Bedrock) gets one; a format of role messages composes as one of items."""
    assert {"openai", "groq", "xai", "gemini", "vertex-gemini", "cohere", "openai-responses"} <= set(FUSED)
    assert {"anthropic", "vertex-anthropic", "bedrock", "mistral"} <= set(FUSED)
    assert "ollama" in FUSED  # its calls' ids dropped at their items (a part field its template leaves unwritten)
    assert set(load_rules().format("anthropic").fused) == set(FUSED)


@pytest.mark.parametrize("provider", FUSED)
@pytest.mark.parametrize("size", [10, 20, 40])
def test_the_bench_requests_take_the_fused_function(provider: str, size: int) -> None:
    fmt, hits = load_rules().format(SOURCE), []
    request = responses_transcript(size, tool_declarations())
    assert outcome(counted(fmt, provider, hits), provider, request) == outcome(without_fused(fmt), provider, request)
    assert hits == [True]


@pytest.mark.parametrize("source", [SOURCE, "anthropic"])
@pytest.mark.parametrize("size", [10, 40])
def test_every_pair_and_option_writes_the_bench_requests_through_the_fused_function(
    source: str, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each provider, under each call option, writes the bench's request through its fused function to the end
    (`formats._fused_source` gives the body: no decline after the transcript either), unless the provider refuses
    the request (today's route then says why: Ollama refuses Messages' thinking budget, the Responses API its
    stop sequences)."""
    fmt = load_rules().format(source)
    made = responses_transcript if source == SOURCE else messages_transcript
    request = made(size, tool_declarations())
    fused_source, bodies = formats._fused_source, []

    def spied(*args: Any, **kwargs: Any) -> Any:
        body = fused_source(*args, **kwargs)
        bodies.append(body is not None)
        return body

    monkeypatch.setattr(formats, "_fused_source", spied)
    refused = set()
    for provider in sorted(fmt.fused):
        for options in OPTIONS:
            bodies.clear()
            try:
                translate_source(fmt, load_rules().get(provider).inbound, copy.deepcopy(request), **options)
            except ToolnexusError:
                refused.add(provider)
                continue
            assert bodies == [True], (provider, options)
    assert refused == ({"ollama", "openai-responses"} if source == "anthropic" else set())


def variants() -> dict[str, dict[str, Any]]:
    """The bench's requests and variants of them, each a shape the fused function takes or declines."""
    base = responses_transcript(10, tool_declarations())
    said = responses_transcript(20, tool_declarations())
    out = {f"bench{n}": responses_transcript(n, tool_declarations()) for n in (2, 4, 6, 10, 20, 40)}

    def edit(name: str, given: dict[str, Any], change: Any) -> None:
        request = copy.deepcopy(given)
        change(request)
        out[name] = request

    items = "input"
    edit("no instructions", base, lambda r: r.pop("instructions"))
    edit("late developer", base, lambda r: r[items].insert(5, {"type": "message", "role": "developer", "content": "d"}))
    edit("system role", base, lambda r: r[items][0].update(role="system"))
    edit("arguments no object", base, lambda r: r[items][3].update(arguments="[1]"))
    edit("orphan output", base, lambda r: r[items][8].update(call_id="nope"))
    edit("lone surrogate", base, lambda r: r[items][1].update(content="bad \ud800"))
    edit("surrogate in reasoning", base, lambda r: r[items][2]["summary"][0].update(text="bad \ud800"))
    # What the JSON check finds in a reasoning item a message joined, checked as a container of that message.
    edit("nan in reasoning", base, lambda r: r[items][2]["summary"][0].update(size=float("nan")))
    edit("big int in reasoning", base, lambda r: r[items][2].update(count=2**70))
    edit("key not a string in reasoning", base, lambda r: r[items][2]["summary"][0].update({1: "x"}))
    edit("user between", base, lambda r: r[items].insert(3, {"type": "message", "role": "user", "content": "hi"}))
    edit("duplicate id", base, lambda r: r[items][4].update(call_id=r[items][3]["call_id"]))
    edit("assistant text", base, lambda r: r[items].append({"type": "message", "role": "assistant", "content": "ok"}))
    edit("list output", base, lambda r: r[items][7].update(output=[{"type": "input_text", "text": "ü"}]))
    edit("empty list output", base, lambda r: r[items][7].update(output=[]))
    edit("bad temperature", base, lambda r: r.update(temperature=5))
    edit("unknown field", base, lambda r: r.update(bogus=1))
    edit("bad choice", base, lambda r: r.update(tool_choice={"type": "function", "name": "nope"}))
    edit(
        "prompt between calls",
        base,
        lambda r: r[items].insert(4, {"type": "message", "role": "developer", "content": "x"}),
    )
    edit("moved prompt", base, lambda r: r[items].insert(2, {"type": "message", "role": "developer", "content": "✅"}))
    edit("system at end", base, lambda r: r[items].append({"type": "message", "role": "system", "content": "last"}))
    edit(
        "call between outputs",
        base,
        lambda r: r[items].insert(8, {"type": "function_call", "call_id": "c9", "name": "x", "arguments": "{}"}),
    )
    edit("no reasoning", base, lambda r: r[items].pop(2))
    edit("id to encode", base, lambda r: [r[items][n].update(call_id="é/1") for n in (3, 7)])
    edit("call status", base, lambda r: r[items][3].update(status="completed"))
    edit("call unknown key", base, lambda r: r[items][3].update(bogus=1))
    edit("sealed state", base, lambda r: r[items][2].update(encrypted_content="x_tns_y"))
    edit("empty user list", base, lambda r: r[items].insert(4, {"type": "message", "role": "user", "content": []}))
    edit("user image", base, lambda r: r[items][1].update(content=[{"type": "input_image", "image_url": "data:,"}]))
    edit("user image no url", base, lambda r: r[items][1].update(content=[{"type": "input_image"}]))
    edit("instructions list", base, lambda r: r.update(instructions=[{"type": "input_text", "text": "s"}]))
    edit("item not an object", base, lambda r: r[items].insert(3, "x"))
    edit("transcript empty", base, lambda r: r.update({items: []}))
    edit("short, instructions unreadable", base, lambda r: r.update(instructions="\ud800", input=r[items][:2]))
    edit("two texts", said, lambda r: r[items][3]["content"].append({"type": "output_text", "text": "two"}))
    edit("assistant string", said, lambda r: r[items][3].update(content="as a string"))
    edit("assistant empty text", said, lambda r: r[items][3]["content"][0].update(text=""))
    edit("annotations", said, lambda r: r[items][3]["content"][0].update(annotations=[{"type": "x"}]))
    edit("text after calls", said, lambda r: r[items].insert(5, r[items].pop(3)))
    edit("text first", said, lambda r: r[items].pop(2))
    edit("refusal", said, lambda r: r[items][3].update(content=[{"type": "refusal", "refusal": "no"}]))
    # A call's id as its item's template reads it: sealed (its state the call's own key), or one the check refuses.
    edit("sealed call id", base, lambda r: r[items][3].update(call_id=sealed({"sig": "s"}, r[items][3]["call_id"])))
    edit("sealed null state", base, lambda r: r[items][3].update(call_id=r[items][3]["call_id"] + SEAL + "bnVsbA"))
    edit("call id not a string", base, lambda r: r[items][3].update(call_id=7))
    edit("call id missing", base, lambda r: r[items][3].pop("call_id"))
    edit("arguments an object", base, lambda r: r[items][3].update(arguments={"a": 1}))
    edit("later arguments an object", base, lambda r: r[items][5].update(arguments={"a": 1}))
    # A call's id sealed later, or holding the seal but not a string; an output missing, null, not a string.
    edit("later sealed call id", base, lambda r: r[items][5].update(call_id=sealed({"x": 1}, r[items][5]["call_id"])))
    edit("sealed id not a string", base, lambda r: r[items][3].update(call_id=["a" + SEAL + "b"]))
    edit("output missing", base, lambda r: r[items][7].pop("output"))
    edit("output null", base, lambda r: r[items][7].update(output=None))
    edit("output a number", base, lambda r: r[items][7].update(output=3))
    edit("output one text", base, lambda r: r[items][7].update(output=[{"type": "input_text", "text": "t"}]))
    edit("output image", base, lambda r: r[items][7].update(output=[{"type": "input_image", "image_url": "u"}]))
    return out


VARIANTS = variants()


@pytest.mark.parametrize("provider", FUSED)
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_fused_function_gives_todays_body_notes_and_errors(provider: str, name: str) -> None:
    assert_todays(load_rules().format(SOURCE), provider, VARIANTS[name])


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
def test_the_variants_take_and_decline(provider: str) -> None:
    """The corpus above holds both: requests the fused function takes, and shapes it declines."""
    fmt, hits = load_rules().format(SOURCE), []
    for request in VARIANTS.values():
        outcome(counted(fmt, provider, hits), provider, request)
    assert 20 < sum(hits) < len(hits)


def read_back(provider: str, request: dict[str, Any]) -> bool:
    """Whether the pair's fused function took the request with its assistant branch reading calls back from a
    message (its own loop over `tool_calls`), not as they were checked and written at their items."""
    fmt = load_rules().format(SOURCE)
    loop = {n for n, line in enumerate(fmt.fused_code[provider].splitlines(), 1) if "for d_call in d_tc:" in line}
    ran: list[int] = []

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith("<fused"):
            return None
        if event == "line" and frame.f_lineno in loop:
            ran.append(frame.f_lineno)
        return trace

    given = copy.deepcopy(request)
    sys.settrace(trace)
    try:
        fmt.fused[provider](given["input"], given.get("instructions"))
    except ToolnexusError:
        pass  # (the general branch's error: today's route raises it, named)
    finally:
        sys.settrace(None)
    assert loop
    return bool(ran)


# The pairs whose calls are not written at their items, and why.
CALLS_NOT_WRITTEN = {
    "openai-responses": "its assistant branch is the general one: no shape of it takes calls written",
}
CALLS_WRITTEN = sorted(set(FUSED) - CALLS_NOT_WRITTEN.keys())


def test_which_pairs_write_their_calls_at_the_items() -> None:
    fmt = load_rules().format(SOURCE)
    assert {p for p in FUSED if "d_written.append(" in fmt.fused_code[p]} == set(CALLS_WRITTEN)


@pytest.mark.parametrize("provider", CALLS_WRITTEN)
def test_the_calls_are_written_at_their_items(provider: str) -> None:
    """Each joined call is checked and written at its item, its fields where the item's template holds them (a
    sealed id unsealed); the assistant branch reads them back only when one fails the check there."""
    for name in ("bench10", "bench40", "sealed call id", "sealed null state"):
        assert not read_back(provider, VARIANTS[name]), name
    assert read_back(provider, VARIANTS["call id not a string"])


@pytest.mark.parametrize("size", [10, 40])
def test_the_fused_functions_notes_are_named_where_they_are_made(size: int) -> None:
    """Gemini's notes of the transcript (a dropped reasoning item, a call's synthesized thought signature) are
    made by the fused function at the format's paths (its own: the body says where they are), today's paths."""
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(size, tool_declarations())
    body = translate_source(fmt, load_rules().get("gemini").inbound, request)
    made = body.notes[body.transcript_notes]
    assert {n.kind for n in made} == {"dropped", "synthesized"}
    assert [tuple(n) for n in body.notes] == outcome(without_fused(fmt), "gemini", request)[2]


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_calls_notes_are_made_at_its_own_item(provider: str) -> None:
    """A call written at its item notes at that item's index (the message's third call, its message opened by a
    reasoning item): no count of the message's items from its first."""
    fmt, hits = load_rules().format(SOURCE), []
    name = "later arguments an object" if provider == "openai" else "bench10"
    got = outcome(counted(fmt, provider, hits), provider, VARIANTS[name])
    assert got == outcome(without_fused(fmt), provider, VARIANTS[name]) and hits == [True]
    made = [n[1] for n in got[2] if n[1].endswith((".arguments", ".call_id"))]
    assert made == (["input[5].arguments"] if provider == "openai" else ["input[3].call_id", "input[12].call_id"])
    written = [line for line in fmt.fused_code[provider].splitlines() if "d_written_notes.append(" in line]
    assert written and not any("joined_at(" in line for line in written)


def test_an_id_encoded_one_by_one_is_noted_and_mapped_by_the_fused_function() -> None:
    """Anthropic's ids fit its pattern or are encoded as read (no scan first): the rewrite is noted at the items'
    paths and the body maps the sent id back, as today."""
    fmt, hits = load_rules().format(SOURCE), []
    got = outcome(counted(fmt, "anthropic", hits), "anthropic", VARIANTS["id to encode"])
    assert got == outcome(without_fused(fmt), "anthropic", VARIANTS["id to encode"]) and hits == [True]
    assert [n[1] for n in got[2] if n[0] == "rewritten"] == ["input[3].call_id", "input[7].call_id"]
    assert list(got[3].values()) == ["é/1"]


@pytest.mark.parametrize("size", [10, 40])
def test_ollamas_dropped_ids_are_noted_at_their_items_by_the_fused_function(size: int) -> None:
    """Ollama's rules write no call id: each call's and each result's id is dropped and noted at its item's
    `call_id` by the fused function (its own notes: the body says where they are), as today's route names them."""
    fmt, hits = load_rules().format(SOURCE), []
    request = responses_transcript(size, tool_declarations())
    got = outcome(counted(fmt, "ollama", hits), "ollama", request)
    assert got == outcome(without_fused(fmt), "ollama", request) and hits == [True]
    dropped = [path for kind, path, *_ in got[2] if kind == "dropped" and path.endswith(".call_id")]
    items = request["input"]
    assert dropped == [f"input[{n}].call_id" for n, item in enumerate(items) if "call_id" in item]
    body = translate_source(fmt, load_rules().get("ollama").inbound, request)
    assert set(dropped) <= {n.path for n in body.notes[body.transcript_notes]}


@pytest.mark.parametrize("source", [SOURCE, "anthropic"])
def test_a_call_written_at_its_item_is_noted_at_that_item(source: str) -> None:
    """The notes of a call checked and written at its item (a dropped or rewritten id) name that item's path: no
    run of the message's items is counted for them (`joined_at`), as it is for the calls its branch reads back."""
    fmt = load_rules().format(source)
    for provider in ("ollama", "mistral", "anthropic"):
        code = fmt.fused_code[provider]
        assert "d_written_notes.append(" in code and 'JOINED["tool_calls"], d_k)' in code, provider
        written = [line for line in code.splitlines() if "d_written_notes.append(" in line]
        assert not any("joined_at" in line for line in written), provider


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
def test_a_joined_messages_lists_are_left_to_the_json_check_as_containers(provider: str) -> None:
    """The reasoning items a message joined go to the JSON check as that message's containers (a lone surrogate,
    NaN or a key that is not a string in one still refuses: the variants above), and the message is not looked
    at again whole: its shape's values were checked as read, its calls at their items."""
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(10, tool_declarations())
    written, _ = fmt.fused[provider](request["input"], request["instructions"])
    _, deep, messages = written[4]
    assert messages == [] and [[item["type"] for item in held] for held in deep] == [["reasoning"], ["reasoning"]]


def _reasoning(text: str) -> dict[str, Any]:
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]}


def _call(n: int) -> list[dict[str, Any]]:
    call_id = f"call_{n}"
    return [
        {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": call_id, "output": "sunny"},
    ]


def _said(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": text}


SEALED_ID = sealed({"sig": "x"}, "c1")
# Reasoning items where a message opens, after its text, after a call, twice in one message, alone (an empty
# assistant turn), last, and a call's item sealed (its state dropped) after them.
REASONING_PLACES = {
    "first": [_said("user", "hi"), _reasoning("a"), _said("assistant", "b"), _said("user", "c")],
    "after text": [_said("user", "hi"), _said("assistant", "b"), _reasoning("a"), *_call(1), _said("user", "c")],
    "after a call": [_said("user", "hi"), *_call(1)[:1], _reasoning("a"), _reasoning("b"), *_call(1)[1:]],
    "twice": [_said("user", "hi"), _reasoning("a"), *_call(1), _reasoning("b"), _said("assistant", "d")],
    "alone": [_said("user", "hi"), _reasoning("a"), _said("user", "c"), _reasoning("b"), _said("assistant", "e")],
    "last": [_said("user", "hi"), *_call(1), _said("assistant", "b"), _reasoning("a")],
    "sealed": [
        _said("user", "hi"),
        _reasoning("a"),
        {"type": "function_call", "call_id": SEALED_ID, "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": SEALED_ID, "output": "sunny"},
    ],
}


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "mistral", "ollama"])
def test_a_list_its_branch_drops_is_noted_at_its_first_item(provider: str) -> None:
    """A provider that drops a message's reasoning items (a key its rules read nothing for) has the fused function
    note the list at its first item (`noted_at_items`), and its branch not again: each note, its path and its
    order among the others (an empty turn's, a call's) is today's, wherever the items are."""
    fmt = load_rules().format(SOURCE)
    code = fmt.fused_code[provider]
    assert "DROPPED['reasoning_items']))  # (first: its index)" in code
    assert "ALLOWED_assistant_OR_NOTED" in code and "k not in ALLOWED_assistant and" not in code
    for name, items in REASONING_PLACES.items():
        hits: list[int] = []
        request = {"model": "m", "input": items}
        got = outcome(counted(fmt, provider, hits), provider, request)
        assert got == outcome(without_fused(fmt), provider, request), name
        assert got[0] == "body" and any(kind == "dropped" for kind, *_ in got[2]), name
    bench = responses_transcript(40, tool_declarations())
    hits = []
    assert outcome(counted(fmt, provider, hits), provider, bench) == outcome(without_fused(fmt), provider, bench)
    assert hits == [True]


CASE_REQUESTS = {c.name: c.data["request"] for c in CASES if (c.data.get("options") or {}).get("source") == SOURCE}


@pytest.mark.parametrize("provider", FUSED)
def test_the_case_tables_responses_inputs_give_todays_result(provider: str) -> None:
    """Each body, note (its path too) and error of the case tables' Responses inputs is today's."""
    fmt, hits = load_rules().format(SOURCE), []
    for name, request in CASE_REQUESTS.items():
        got = outcome(counted(fmt, provider, hits), provider, request)
        assert got == outcome(without_fused(fmt), provider, request), name
    assert any(hits)


def test_explain_shows_the_fused_functions() -> None:
    shown = explain_code("--source", SOURCE)
    assert "def fused(msgs, system):" in shown
    assert re.search(r"# the transcript to [a-z, -]*\bopenai\b", shown)


# ---------------------------------------------------------------- generated Responses inputs

TEXT = st.text(st.characters(max_codepoint=0x1FFFF), max_size=6)  # (lone surrogates too: the JSON check's)
CALL_IDS = st.sampled_from(["c1", "c2", "c3", "", "c_tns_x", "ü"])
ARGUMENTS = st.sampled_from(['{"a": 1}', "{}", "[1]", "", "{", '{"t": "\\ud800"}'])
ROLES = st.sampled_from(["user", "developer", "system", "assistant", "tool"])
OUTPUTS = st.one_of(TEXT, st.lists(st.builds(lambda t: {"type": "input_text", "text": t}, TEXT), max_size=2))
QUIET = st.sampled_from([{}, {"annotations": []}, {"annotations": [1]}])


def said(text: str, more: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text, **more}]}


def called(call_id: str, name: str, raw: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": raw}


def reasoned(text: str, state: str) -> dict[str, Any]:
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}], "encrypted_content": state}


ITEMS = st.one_of(
    st.builds(lambda role, text: {"type": "message", "role": role, "content": text}, ROLES, TEXT),
    st.builds(lambda text: {"role": "user", "content": [{"type": "input_text", "text": text}]}, TEXT),
    st.builds(said, TEXT, QUIET),
    st.builds(called, CALL_IDS, st.sampled_from(["get", "", "ü"]), ARGUMENTS),
    st.builds(lambda i, out: {"type": "function_call_output", "call_id": i, "output": out}, CALL_IDS, OUTPUTS),
    st.builds(reasoned, TEXT, st.sampled_from(["s", "x_tns_y"])),
)


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(ITEMS, min_size=1, max_size=8), instructions=st.one_of(st.none(), TEXT),
       options=st.sampled_from(OPTIONS))  # fmt: skip
def test_generated_inputs_give_todays_result(
    provider: str, items: list[Any], instructions: Any, options: dict[str, Any]
) -> None:
    fmt = load_rules().format(SOURCE)
    request = {"model": "m", "input": items} | ({} if instructions is None else {"instructions": instructions})
    hits: list[int] = []
    got = outcome(counted(fmt, provider, hits), provider, request, **options)
    assert got == outcome(without_fused(fmt), provider, request, **options)


@pytest.mark.parametrize("source", ["openai-responses", "anthropic"])
def test_a_call_checked_at_its_item_is_not_tested_for_the_type_its_template_wrote(source: str) -> None:
    """A joined call's template writes `type: function`, so its check at the item (`call_check`'s `typed`) does not
    read it back; a call the assistant branch reads from the message (`_read_calls`) is still tested for it."""
    fmt = load_rules().format(source)
    for provider in CALLS_WRITTEN:
        code = fmt.fused_code[provider]
        at_items = code.count("while True:  # one pass")
        assert at_items and code.count("or d_id in d_new): x_ok = False; break") == at_items, provider
        assert "or d_id in d_new or d_call.get('type', 'function') != 'function'): d_ok = False" in code, provider
