"""A source request's transcript written by a (format, provider) pair's fused function (`formats._fused_source`).

The fused function writes what the provider's `messages` function returns straight from the format's items, its
paths the format's; `Inbound.translate_written` takes it and says where its notes are, so only the others are
named. When it declines (None), or anything raises, today's route (the format's reader, then the provider's
rules) runs from the fields already read, and names every note and error: the body, its notes and any error are
the same either way.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Note, ToolnexusError, load_rules
from toolnexus.language.templates import Ctx
from toolnexus.translate import formats
from toolnexus.translate.formats import SourceFormat, named, translate_source

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bench_inputs import responses_transcript, tool_declarations  # noqa: E402

SOURCE = "openai-responses"


def outcome(fmt: SourceFormat, provider: str, request: Any, **options: Any) -> tuple[Any, ...]:
    """The body and its notes, or the error (type, message, path), of one source request."""
    inbound = load_rules().get(provider).inbound
    try:
        body = translate_source(fmt, inbound, copy.deepcopy(request), **options)
    except ToolnexusError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "path", None))
    return ("body", dict(body), [tuple(n) for n in body.notes], dict(body.id_map))


def without_fused(fmt: SourceFormat) -> SourceFormat:
    """The format with no fused function: today's route only (the test-only switch)."""
    return replace(fmt, fused={})


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
        return turns, hoisted, notes, first, left, more

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
        turns, hoisted, notes, first, left, more = made(items, system)
        return turns, hoisted, [own, *notes], first, left, more

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


def test_an_error_after_the_transcript_is_todays() -> None:
    """An error the provider's rules raise with the fused transcript in hand: today's route raises it, named."""
    fmt = load_rules().format(SOURCE)
    request = responses_transcript(10, tool_declarations())
    request["tool_choice"] = {"type": "function", "name": "nope"}
    given = replace(fmt, fused={"openai": hub_written(fmt, "openai")})
    assert outcome(given, "openai", request) == outcome(without_fused(fmt), "openai", request)
    assert outcome(given, "openai", request)[0] == "error"
