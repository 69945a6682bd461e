"""Hostile input to the source formats: every case request, provider answer and provider stream, damaged one
place at a time, gives a body, an answer the format's SDK judge accepts, or a toolnexus error naming the place
in the shape the caller gave (the source request's `input[3].arguments`, never the normal form's
`messages[3].tool_calls[0]`); never a bare Python exception.

The formats come from the rules (`load_rules().formats()`): a new format file is fuzzed by itself, and needs
a judge of its answers here. Each value meets every harm of DAMAGE, in turn, at its successive places (the
full product is the request test of test_request_messages.py's size times seven, for no new failure kind).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest

import toolnexus
from support.cases import CASES
from support.damage import DAMAGE, damaged, damaged_one_at_a_time, names_a_place, places, source_formats
from support.messages import judge_event, judge_message
from support.responses import judge_response, judge_responses_event
from support.sse_encoders import ENCODERS, canonical, data_of
from toolnexus import (
    ProviderError,
    ResponseError,
    ToolnexusError,
    TranslationError,
    translate_request,
    translate_response,
)

RULES = toolnexus.load_rules()
PROVIDERS = toolnexus.providers()
FORMATS = source_formats()

# The SDK judge of each format's whole answers (strict; a key the SDK would not keep fails).
ANSWER_JUDGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "anthropic": judge_message,
    "openai-responses": judge_response,
}
# The SDK judge of each format's stream events, for the formats with a `stream:` section.
EVENT_JUDGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "anthropic": judge_event,
    "openai-responses": judge_responses_event,
}
STREAMED = [name for name in FORMATS if RULES.format(name).stream]


def test_every_format_has_its_judges() -> None:
    assert sorted(ANSWER_JUDGES) == FORMATS
    assert sorted(EVENT_JUDGES) == STREAMED


# ---------------------------------------------------------------- requests

SOURCE_REQUESTS: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
for _case in CASES:  # one per concern: the columns of a case file share its request
    _options = _case.data.get("options") or {}
    if _options.get("source") in FORMATS and "request" in _case.data:
        SOURCE_REQUESTS.setdefault((_options["source"], _case.concern), (_case.data["request"], _options))


def test_the_case_tables_hold_requests_of_every_format() -> None:
    assert {source for source, _ in SOURCE_REQUESTS} == set(FORMATS)


def refusal_in_the_source_shape(provider: str, request: Any, options: dict[str, Any]) -> str | None:
    """None when the request is translated or refused at a place of it, else what is wrong (a bare exception,
    a TranslationError whose path is not a place of the request)."""
    try:
        translate_request(provider, request, **options)
    except TranslationError as exc:
        return None if names_a_place(request, exc.path) else f"{exc.path!r} is not a place of the request: {exc}"
    except ToolnexusError:
        return None
    except Exception as exc:  # the test's subject: nothing else may escape
        return f"a bare {type(exc).__name__}: {exc}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("source", FORMATS)
def test_each_source_request_damaged_one_place_at_a_time_is_translated_or_refused_at_its_place(source: str) -> None:
    problems: list[str] = []
    runs = 0
    for turn, ((fmt, concern), (request, options)) in enumerate(sorted(SOURCE_REQUESTS.items())):
        if fmt != source:
            continue
        for path, harm, broken in damaged_one_at_a_time(request, turn):
            for provider in PROVIDERS:
                runs += 1
                problem = refusal_in_the_source_shape(provider, broken, options)
                if problem:
                    problems.append(f"{concern} {path} <- {harm!r} for {provider}: {problem}")
    assert runs
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------- whole answers

ANSWERS = [c for c in CASES if "response" in c.data]


def carried_as_received(response: Any, path: tuple[Any, ...], answer: Any) -> bool:
    """The damaged object (a block the damage is in) is in the answer exactly as the provider gave it: round-trip
    state the rules carry back unread (Anthropic's server blocks, Responses' reasoning items); its checks are
    the provider's, on the next turn."""
    written = json.dumps(answer, sort_keys=True, default=str)
    for cut in range(len(path) - 1, 0, -1):
        holder = response
        for step in path[:cut]:
            holder = holder[step]
        if isinstance(holder, dict) and holder and json.dumps(holder, sort_keys=True) in written:
            return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("source", FORMATS)
def test_each_case_answer_damaged_one_place_at_a_time_is_written_back_or_refused_at_its_place(source: str) -> None:
    problems: list[str] = []
    for turn, column in enumerate(ANSWERS):
        for path, harm, broken in damaged_one_at_a_time(column.data["response"], turn):
            try:
                answer = translate_response(column.provider, broken, source=source)
            except ResponseError as exc:  # named in the provider's answer (remap_error leaves it as it is)
                if not exc.path:
                    problems.append(f"{column.name} {path} <- {harm!r}: a ResponseError naming no place: {exc}")
                continue
            except ProviderError:  # a body in the provider's error shape
                continue
            except Exception as exc:  # the test's subject: nothing else may escape
                problems.append(f"{column.name} {path} <- {harm!r}: a bare {type(exc).__name__}: {exc}")
                continue
            try:
                ANSWER_JUDGES[source](dict(answer))
            except Exception as exc:  # the SDK's ValidationError or the judge's AssertionError
                if not carried_as_received(broken, path, dict(answer)):
                    problems.append(f"{column.name} {path} <- {harm!r}: the SDK refuses the answer: {exc}"[:400])
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------- streams

STREAMS = [
    c
    for c in CASES
    if "response" in c.data
    and "expect_response_error" not in c.data
    and RULES.get(c.provider).streaming is not None
    and c.provider in ENCODERS
]


def provider_stream(column: Any) -> list[str]:
    """The provider's stream of the column's answer, as the data of each event."""
    provider = column.provider
    events = ENCODERS[provider](canonical(provider, column.data["response"]), random.Random(column.concern))
    return [data_of(provider, event) for event in events]


@pytest.mark.slow
@pytest.mark.parametrize("source", STREAMED)
def test_each_provider_stream_with_one_event_damaged_gives_events_or_a_toolnexus_error(source: str) -> None:
    """Each event of each case answer's stream, damaged at one place (in turn) while the others stay whole."""
    problems: list[str] = []
    turn = 0
    for column in STREAMS:
        datas = provider_stream(column)
        for k, data in enumerate(datas):
            try:
                event = json.loads(data)
            except ValueError:  # a stream's closing word (`[DONE]`): no place inside
                continue
            inside = list(places(event))[1:]
            if not inside:
                continue
            turn += 1
            path, harm = inside[turn % len(inside)], DAMAGE[turn % len(DAMAGE)]
            told = [*datas[:k], json.dumps(damaged(event, path, harm)), *datas[k + 1 :]]
            stream = toolnexus.stream_translator(column.provider, source=source)
            try:
                events = [e for d in told for e in stream.feed(d)]
                events += stream.finish()
            except ToolnexusError:  # a ResponseError, or a ProviderError (an error event, a stream cut off)
                continue
            except Exception as exc:  # the test's subject: nothing else may escape
                problems.append(f"{column.name} event {k} {path} <- {harm!r}: a bare {type(exc).__name__}: {exc}")
                continue
            broken = damaged(event, path, harm)
            for written in events:
                try:
                    EVENT_JUDGES[source](written)
                except Exception as exc:  # the SDK's ValidationError or the judge's AssertionError
                    if not carried_as_received(broken, path, written):
                        problems.append(f"{column.name} event {k} {path} <- {harm!r}: the SDK refuses {exc}"[:400])
    assert turn
    assert problems == [], "\n".join(problems)
