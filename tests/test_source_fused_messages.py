"""The fused transcript of a format of role messages (Anthropic Messages: `fused_code._Writer.blocks_message`).

One role message can make several normal-form messages (a user message's `tool_result` blocks tool messages,
the rest a user message; an assistant message's `tool_use` blocks its calls, thinking blocks riding along), so
the fused function writes each as soon as its role message's blocks close it. A helper's notes (at the normal
form's paths) are named by the reader's records of their one role message (`formats.named_alone`). Whatever it
declines, today's route (the reader, then the provider's rules) runs: the body, its notes and any error are the
same either way (`tests/test_source_fused.py` holds the Responses format to the same).
"""

from __future__ import annotations

import copy
import sys
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.fused import OPTIONS, assert_todays, counted, outcome, without_fused
from toolnexus import Note, ToolnexusError, load_rules
from toolnexus.language.templates import SEAL, sealed
from toolnexus.translate.formats import OWN_PATH, named_alone, translate_source

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bench_inputs import messages_transcript, tool_declarations  # noqa: E402

SOURCE = "anthropic"
FUSED = sorted(load_rules().format(SOURCE).fused)


def test_the_messages_format_composes_for_every_pair_the_responses_format_does() -> None:
    """Decided by the rules alone: the same providers (Mistral, which rewrites ids by a hash, too; Ollama, whose
    rules drop each call's id: noted at its block)."""
    assert sorted(load_rules().format("openai-responses").fused) == FUSED
    assert {"openai", "gemini", "anthropic", "cohere", "bedrock", "mistral", "ollama"} <= set(FUSED)


@pytest.mark.parametrize("provider", FUSED)
@pytest.mark.parametrize("size", [10, 100])
def test_the_bench_requests_take_the_fused_function(provider: str, size: int) -> None:
    fmt, hits = load_rules().format(SOURCE), []
    request = messages_transcript(size, tool_declarations())
    got = outcome(counted(fmt, provider, hits), provider, request)
    assert got == outcome(without_fused(fmt), provider, request)
    if got[0] == "body":  # (an error before the transcript is written, as Bedrock's image refusal, is today's)
        assert hits == [True]


def block(text: str, **more: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **more}


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}}
IMAGE_URL = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
DOCUMENT = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "aGk="}}
EPHEMERAL = {"type": "ephemeral"}


def variants() -> dict[str, dict[str, Any]]:
    """The bench's requests and variants of them, each a shape the fused function takes or declines."""
    base = messages_transcript(10, tool_declarations())
    out = {f"bench{n}": messages_transcript(n, tool_declarations()) for n in (2, 4, 6, 10, 20, 40)}

    def edit(name: str, change: Any) -> None:
        request = copy.deepcopy(base)
        change(request)
        out[name] = request

    def first(r: dict[str, Any], role: str, kind: str) -> dict[str, Any]:
        """The first block of `kind` in a message of `role`."""
        return next(b for m in r["messages"] if m["role"] == role for b in m["content"] if b.get("type") == kind)

    m = "messages"
    edit("no system", lambda r: r.pop("system"))
    edit("system list", lambda r: r.update(system=[block("s", cache_control=EPHEMERAL), block("t")]))
    edit("system empty list", lambda r: r.update(system=[]))
    edit("system not text", lambda r: r.update(system=7))
    edit("result is_error", lambda r: first(r, "user", "tool_result").update(is_error=True))
    edit("result list content", lambda r: first(r, "user", "tool_result").update(content=[block("a"), block("b")]))
    edit("result one text", lambda r: first(r, "user", "tool_result").update(content=[block("ü")]))
    edit("result image", lambda r: first(r, "user", "tool_result").update(content=[block("a"), IMAGE]))
    edit("result document", lambda r: first(r, "user", "tool_result").update(content=[DOCUMENT]))
    edit("result empty list", lambda r: first(r, "user", "tool_result").update(content=[]))
    edit("result no content", lambda r: first(r, "user", "tool_result").pop("content"))
    edit("result cache_control", lambda r: first(r, "user", "tool_result").update(cache_control=EPHEMERAL))
    edit("result unknown key", lambda r: first(r, "user", "tool_result").update(bogus=1))
    edit("result nested tool_use", lambda r: first(r, "user", "tool_result").update(content=[{"type": "tool_use"}]))
    edit("orphan result", lambda r: first(r, "user", "tool_result").update(tool_use_id="nope"))
    edit("text after results", lambda r: r[m][2]["content"].append(block("and now?")))
    edit("text before results", lambda r: r[m][2]["content"].insert(0, block("first")))
    edit("text between results", lambda r: r[m][4]["content"].insert(1, block("between", cache_control=EPHEMERAL)))
    edit("user image", lambda r: r[m][0]["content"].append(IMAGE))
    edit("user image url", lambda r: r[m][0]["content"].append(IMAGE_URL))
    edit("user image bad source", lambda r: r[m][0]["content"].append({"type": "image", "source": {"type": "x"}}))
    edit("user image extra key", lambda r: r[m][0]["content"].append({**IMAGE, "source": {**IMAGE["source"], "x": 1}}))
    edit("user document", lambda r: r[m][0]["content"].append({**DOCUMENT, "title": "t.pdf"}))
    edit("user one text", lambda r: r[m][0].update(content=[block("only")]))
    edit("user cache_control", lambda r: r[m][0]["content"][0].update(cache_control=EPHEMERAL))
    edit("user empty list", lambda r: r[m].insert(2, {"role": "user", "content": []}))
    edit("user empty string", lambda r: r[m].insert(2, {"role": "user", "content": ""}))
    edit("user between", lambda r: r[m].insert(2, {"role": "user", "content": "hi"}))
    edit("user lone surrogate", lambda r: r[m][0]["content"][0].update(text="bad \ud800"))
    edit("last user tool results only", lambda r: r.update(messages=r[m][:-1] if r[m][-1]["role"] == "user" else r[m]))
    edit("assistant string", lambda r: r[m].insert(1, {"role": "assistant", "content": "ok"}))
    edit("assistant empty list", lambda r: r[m].insert(1, {"role": "assistant", "content": []}))
    edit("assistant text only", lambda r: r[m].append({"role": "assistant", "content": [block("done")]}))
    edit("assistant two texts", lambda r: r[m].append({"role": "assistant", "content": [block("a"), block("b")]}))
    edit("thinking no signature", lambda r: first(r, "assistant", "thinking").pop("signature"))
    # What the JSON check finds in a thinking block a message joined, checked as a container of that message.
    edit("thinking lone surrogate", lambda r: first(r, "assistant", "thinking").update(thinking="bad \ud800"))
    edit("thinking nan", lambda r: first(r, "assistant", "thinking").update(size=float("nan")))
    edit("thinking key not a string", lambda r: first(r, "assistant", "thinking").update({1: "x"}))
    edit(
        "redacted thinking",
        lambda r: r[m][1]["content"].insert(0, {"type": "redacted_thinking", "data": "opaque"}),
    )
    edit(
        "redacted sealed state",
        lambda r: r[m][1]["content"].append({"type": "redacted_thinking", "data": sealed({"a": 1}, "")}),
    )
    edit("server blocks", lambda r: r[m][1]["content"].insert(0, {"type": "server_tool_use", "id": "s", "name": "w"}))
    edit("text cache_control assistant", lambda r: r[m].append({"role": "assistant", "content": [block("a", x=1)]}))
    edit("tool_use id to encode", lambda r: [b.update({k: "é/1"}) for b, k in (
        (first(r, "assistant", "tool_use"), "id"), (first(r, "user", "tool_result"), "tool_use_id"))])  # fmt: skip
    edit("sealed tool_use id", lambda r: first(r, "assistant", "tool_use").update(
        id=sealed({"sig": "s"}, first(r, "assistant", "tool_use")["id"])))  # fmt: skip
    edit("sealed null state", lambda r: first(r, "assistant", "tool_use").update(
        id=first(r, "assistant", "tool_use")["id"] + SEAL + "bnVsbA"))  # fmt: skip
    edit("tool_use id not a string", lambda r: first(r, "assistant", "tool_use").update(id=7))
    edit("tool_use no name", lambda r: first(r, "assistant", "tool_use").pop("name"))
    edit("tool_use input a list", lambda r: first(r, "assistant", "tool_use").update(input=[1]))
    edit("tool_use input text", lambda r: first(r, "assistant", "tool_use").update(input='{"a": 1}'))
    for name, value in {"nan": float("nan"), "tiny float": 1e-05, "int key": {1: "a"}, "null": None}.items():
        edit(f"tool_use input {name}", lambda r, v=value: first(r, "assistant", "tool_use").update(input={"a": v}))
    edit("tool_use input empty", lambda r: first(r, "assistant", "tool_use").update(input={}))
    edit("duplicate tool_use id", lambda r: r[m][3]["content"][-1].update(id=first(r, "assistant", "tool_use")["id"]))
    edit("block unknown key", lambda r: r[m][0]["content"][0].update(bogus=1))
    edit("block unknown kind", lambda r: r[m][0]["content"].append({"type": "bogus"}))
    edit("block not an object", lambda r: r[m][0]["content"].append("x"))
    edit("message unknown key", lambda r: r[m][0].update(cache_control=EPHEMERAL))
    edit("message no content", lambda r: r[m][0].pop("content"))
    edit("message bad role", lambda r: r[m][0].update(role="system"))
    edit("message not an object", lambda r: r[m].insert(1, "x"))
    edit("content a number", lambda r: r[m][0].update(content=7))
    edit("transcript empty", lambda r: r.update(messages=[]))
    edit("no message made", lambda r: r.update(messages=[{"role": "user", "content": []}]))
    edit("no message made, a system", lambda r: r.update(messages=[{"role": "assistant", "content": []}]))
    edit("bad temperature", lambda r: r.update(temperature=5))
    edit("unknown field", lambda r: r.update(bogus=1))
    edit("bad choice", lambda r: r.update(tool_choice={"type": "tool", "name": "nope"}))
    return out


VARIANTS = variants()


@pytest.mark.parametrize("provider", FUSED)
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_fused_function_gives_todays_body_notes_and_errors(provider: str, name: str) -> None:
    assert_todays(load_rules().format(SOURCE), provider, VARIANTS[name])


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic", "cohere"])
def test_the_variants_take_and_decline(provider: str) -> None:
    """The corpus above holds both: requests the fused function takes, and shapes it declines."""
    fmt, hits = load_rules().format(SOURCE), []
    for request in VARIANTS.values():
        outcome(counted(fmt, provider, hits), provider, request)
    assert 25 < sum(hits) < len(hits) - 10


@pytest.mark.parametrize("name", ["result list content", "text after results", "redacted thinking", "result image"])
def test_shapes_beyond_the_bench_are_taken(name: str) -> None:
    """A tool result's list of blocks (an image too), a user's text after its results (two messages of one role
    message), redacted thinking riding along: written by the fused function, not declined."""
    fmt = load_rules().format(SOURCE)
    for provider in ("openai", "anthropic"):
        hits: list[int] = []
        outcome(counted(fmt, provider, hits), provider, VARIANTS[name])
        assert hits == [True], provider


@pytest.mark.parametrize("size", [10, 40])
def test_a_helpers_notes_are_named_as_today(size: int) -> None:
    """Gemini's notes of the transcript (a cache breakpoint a helper drops, dropped thinking, a call's synthesized
    thought signature) come from the fused function, at today's paths and in today's order."""
    fmt = load_rules().format(SOURCE)
    request = messages_transcript(size, tool_declarations())
    hits: list[int] = []
    got = outcome(counted(fmt, "gemini", hits), "gemini", request)
    assert hits == [True] and got == outcome(without_fused(fmt), "gemini", request)
    assert {n[0] for n in got[2]} == {"dropped", "synthesized"}
    assert any(n[1].endswith(".cache_control") for n in got[2])


def test_a_helpers_note_in_a_role_message_of_two_messages_declines() -> None:
    """Which of its two messages (a tool result, then a user text with a cache breakpoint) a helper's note at
    the normal form's path is about is not known alone: declined, and today's route names it."""
    fmt = load_rules().format(SOURCE)
    request = VARIANTS["text between results"]
    hits: list[int] = []
    got = outcome(counted(fmt, "gemini", hits), "gemini", request)
    assert hits == [False] and got == outcome(without_fused(fmt), "gemini", request)
    assert any(n[1] == "messages[4].content[1].cache_control" for n in got[2])


def test_named_alone() -> None:
    """The function's own paths (marked) kept as they are; a helper's named by its one role message's records;
    one no record begins, or of a role message of two messages, None."""
    fmt = load_rules().format(SOURCE)
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, block("a")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "r"}, block("b")]},
    ]
    own = Note("rewritten", OWN_PATH + "messages[0].content", "m")
    helper = Note("dropped", "messages[1].thinking_blocks[0]", "m")
    assert named_alone([own, helper], msgs, fmt) == [
        Note("rewritten", "messages[0].content", "m"),
        Note("dropped", "messages[1].content[0]", "m"),
    ]
    assert named_alone([Note("dropped", "messages[2].content[0]", "m")], msgs, fmt) is None
    assert named_alone([Note("dropped", "tools[0]", "m")], msgs, fmt) is None


def test_an_id_encoded_one_by_one_is_noted_and_mapped_by_the_fused_function() -> None:
    """Anthropic's ids fit its pattern or are encoded as read: the rewrite is noted at the blocks' paths (a
    call's at its block of the assistant message's content) and the body maps the sent id back, as today."""
    fmt, hits = load_rules().format(SOURCE), []
    got = outcome(counted(fmt, "anthropic", hits), "anthropic", VARIANTS["tool_use id to encode"])
    assert got == outcome(without_fused(fmt), "anthropic", VARIANTS["tool_use id to encode"]) and hits == [True]
    assert [n[1] for n in got[2] if n[0] == "rewritten"] == [
        "messages[1].content[1].id",
        "messages[2].content[0].tool_use_id",
    ]
    assert list(got[3].values()) == ["é/1"]


@pytest.mark.parametrize("size", [10, 40])
def test_ollamas_dropped_ids_are_noted_at_their_blocks_by_the_fused_function(size: int) -> None:
    """Ollama's rules write no call id: each `tool_use` block's `id` and each `tool_result` block's `tool_use_id`
    is dropped and noted at its block by the fused function, as today's route names them (the bench request's
    thinking budget, which Ollama refuses, left out)."""
    fmt, hits = load_rules().format(SOURCE), []
    request = messages_transcript(size, tool_declarations())
    request.pop("thinking")
    got = outcome(counted(fmt, "ollama", hits), "ollama", request)
    assert got == outcome(without_fused(fmt), "ollama", request) and hits == [True]
    dropped = [path for kind, path, *_ in got[2] if kind == "dropped" and path.endswith(("].id", ".tool_use_id"))]
    assert dropped == [
        f"messages[{i}].content[{j}].{'id' if block['type'] == 'tool_use' else 'tool_use_id'}"
        for i, m in enumerate(request["messages"])
        if type(m["content"]) is list
        for j, block in enumerate(m["content"])
        if block["type"] in ("tool_use", "tool_result")
    ]


def test_the_body_says_where_the_transcripts_notes_are() -> None:
    fmt = load_rules().format(SOURCE)
    body = translate_source(fmt, load_rules().get("gemini").inbound, messages_transcript(10, tool_declarations()))
    made = body.notes[body.transcript_notes]
    assert made and all(n.path.startswith("messages[") for n in made)
    assert not any(n.path.startswith(OWN_PATH) for n in body.notes)


# ---------------------------------------------------------------- generated Messages transcripts

TEXT = st.text(st.characters(max_codepoint=0x1FFFF), max_size=6)  # (lone surrogates too: the JSON check's)
IDS = st.sampled_from(["c1", "c2", "c3", "", "c_tns_x", "ü", 7])
INPUTS = st.sampled_from([{"a": 1}, {}, [1], "{}", None, {"t": "\ud800"}])
MORE = st.sampled_from([{}, {"cache_control": EPHEMERAL}, {"bogus": 1}])
RESULTS = st.one_of(TEXT, st.lists(st.builds(block, TEXT), max_size=2), st.just([IMAGE]))
USER_BLOCKS = st.one_of(
    st.builds(lambda text, more: block(text, **more), TEXT, MORE),
    st.just(IMAGE),
    st.just(DOCUMENT),
    st.builds(
        lambda i, out, err: {"type": "tool_result", "tool_use_id": i, "content": out, **err},
        IDS,
        RESULTS,
        st.sampled_from([{}, {"is_error": True}]),
    ),
)
ASSISTANT_BLOCKS = st.one_of(
    st.builds(block, TEXT),
    st.builds(
        lambda i, name, given: {"type": "tool_use", "id": i, "name": name, "input": given},
        IDS,
        st.sampled_from(["get", "", "ü"]),
        INPUTS,
    ),
    st.builds(lambda text: {"type": "thinking", "thinking": text, "signature": "s"}, TEXT),
    st.builds(lambda data: {"type": "redacted_thinking", "data": data}, st.sampled_from(["d", "x_tns_y"])),
)
MESSAGES = st.one_of(
    st.builds(lambda role, text: {"role": role, "content": text}, st.sampled_from(["user", "assistant"]), TEXT),
    st.builds(lambda blocks: {"role": "user", "content": blocks}, st.lists(USER_BLOCKS, max_size=3)),
    st.builds(lambda blocks: {"role": "assistant", "content": blocks}, st.lists(ASSISTANT_BLOCKS, max_size=3)),
)


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic", "cohere"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(MESSAGES, min_size=1, max_size=8),
       system=st.one_of(st.none(), TEXT, st.just([block("s", cache_control=EPHEMERAL)])),
       options=st.sampled_from(OPTIONS))  # fmt: skip
def test_generated_transcripts_give_todays_result(
    provider: str, messages: list[Any], system: Any, options: dict[str, Any]
) -> None:
    fmt = load_rules().format(SOURCE)
    request = {"model": "m", "max_tokens": 9, "messages": messages} | ({} if system is None else {"system": system})
    hits: list[int] = []
    got = outcome(counted(fmt, provider, hits), provider, request, **options)
    assert got == outcome(without_fused(fmt), provider, request, **options)


def reading_again(fmt: Any) -> Any:
    """The format with no block kinds known (`SourceFormat.block_lists`): `named_alone` reads each role message
    again, as before the notes were named at their blocks."""
    again = replace(fmt)
    again.__dict__["block_lists"] = MappingProxyType({})  # (the cached property's slot, set before it is read)
    return again


def test_a_helpers_note_at_a_block_is_named_without_reading_its_message_again() -> None:
    """The bench's dropped cache breakpoint (a helper's, at the normal form's path of a user part) is named at its
    block from the rule data alone: the reader is not run again, and the name is the one its records give."""
    fmt, reads = load_rules().format(SOURCE), []

    def transcript(*args: Any) -> Any:
        reads.append(args)
        return fmt.transcript(*args)

    counting = replace(fmt, transcript=transcript)
    msgs = messages_transcript(10, tool_declarations())["messages"]
    notes = [
        Note("dropped", "messages[0].content[0].cache_control", "m"),
        Note("dropped", "messages[1].thinking_blocks[0]", "m"),
    ]
    got = named_alone(notes, msgs, counting)
    assert reads == []
    assert got == named_alone(notes, msgs, reading_again(counting))
    assert got == [
        Note("dropped", "messages[0].content[0].cache_control", "m"),
        Note("dropped", "messages[1].content[0]", "m"),
    ]
    assert reads  # (the way it is compared with reads it again)


def element_paths(msgs: list[Any]) -> list[str]:
    """Normal-form paths at the elements of each role message's lists, and below them (a part's, a call's keys)."""
    out = []
    for i in range(len(msgs)):
        for name in ("content", "tool_calls", "thinking_blocks", "server_blocks", "unknown"):
            for n in range(4):
                at = f"messages[{i}].{name}[{n}]"
                out += [at, f"{at}.cache_control", f"{at}.id", f"{at}.function.name", f"{at}[0]", f"{at}x"]
        out += [f"messages[{i}]", f"messages[{i}].content", f"messages[{i}].tool_calls", f"messages[{i}].role"]
    return out


def reads_alone(fmt: Any, message: Any) -> bool:
    """Whether the reader's fast test takes the role message alone (neither declines nor raises)."""
    try:
        return fmt.transcript([message], None, False, None) is not None
    except ToolnexusError:
        return False


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_note_named_at_its_block_is_named_as_its_records_name_it(name: str) -> None:
    """Every path a helper could note at, in every role message of the corpus: named at its block where the rule
    data tells the block, the same name as the message read again gives (or None, the same decline). A role
    message the reader's fast test declines alone is left out: the fused function declines it before naming."""
    fmt = load_rules().format(SOURCE)
    assert fmt.transcript is not None
    msgs = VARIANTS[name]["messages"]
    again = reading_again(fmt)
    read = [reads_alone(fmt, message) for message in msgs]
    for path in element_paths(msgs):
        if not read[int(path.split("[")[1].split("]")[0])]:
            continue
        note = [Note("dropped", path, "m")]
        assert named_alone(note, msgs, fmt) == named_alone(note, msgs, again), path


@pytest.mark.parametrize("provider", ["openai", "groq", "mistral", "cohere"])
def test_a_tool_use_input_written_as_text_is_not_parsed_back(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """For a provider that reads a call's arguments as JSON text, each `tool_use` input that orjson writes is
    handed to the call's check as the object it was written of (`fused_code._Writer.arguments_written`): no text
    parsed back. The body is today's (the variants above hold the inputs orjson leaves to the standard encoder)."""
    fmt = load_rules().format(SOURCE)
    names, parsed = fmt.fused[provider].__globals__, []
    for name in ("WRITTEN_LOADS", "LOADS"):
        monkeypatch.setitem(names, name, lambda text, *more, real=names[name]: parsed.append(text) or real(text, *more))
    request = messages_transcript(10, tool_declarations())
    hits: list[int] = []
    got = outcome(counted(fmt, provider, hits), provider, request)
    assert hits == [True]
    assert parsed == []
    assert got == outcome(without_fused(fmt), provider, request)
