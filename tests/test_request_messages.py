"""The request's messages section: the generated function (request_code.py) reads and writes the transcript
in one pass; on an error its explain step, the reader, reads the whole transcript first. The result is the
same as reading everything before writing anything (the body, notes and errors): on every case request, on
each case request damaged one place at a time, and on generated transcripts."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolnexus
from support.cases import request_cases, request_outcome
from support.damage import DAMAGE, damaged, places
from support.strategies import requests
from toolnexus.devtools.conformance import lineage, parents_of
from toolnexus.translate import inbound
from toolnexus.translate.inbound import Inbound

PROVIDERS = toolnexus.providers()
CASES = request_cases(PROVIDERS)


def explained(provider: str, request: Any, options: dict[str, Any]) -> Any:
    """The outcome when the reader reads every transcript before the generated function writes it."""
    write = Inbound._write_messages

    def reader_first(self: Inbound, msgs: Any, settler: Any, ids: Any) -> Any:
        self._explain_messages(msgs, ids)
        return write(self, msgs, settler, ids)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Inbound, "_write_messages", reader_first)
        return request_outcome(provider, request, options)


@pytest.mark.parametrize(("provider", "name", "request_", "options"), CASES, ids=[f"{c[0]}/{c[1]}" for c in CASES])
def test_the_generated_path_and_the_explain_step_agree_on_every_case(
    provider: str, name: str, request_: dict[str, Any], options: dict[str, Any]
) -> None:
    assert request_outcome(provider, request_, options) == explained(provider, request_, options)


def round_trip(provider: str) -> dict[str, Any]:
    """A transcript as `assistant_message()` hands it back: reasoning, signed blocks, thought signatures,
    and a cache breakpoint on the last user message."""
    signature = {"google": {"thought_signature": "c2ln"}}
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "weather?"}], "cache_control": {"type": "ephemeral"}},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "look it up",
                "thinking_blocks": [{"type": "thinking", "thinking": "look it up", "signature": "c2ln"}],
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                        "extra_content": signature,
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny.", "extra_content": signature},
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    }


@pytest.mark.parametrize("provider", PROVIDERS)
def test_round_trip_transcripts_never_reach_the_reader(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    """Round-trip keys are ordinary template values: such a transcript is written in the one pass."""

    def reader(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError("the transcript went to the explain step")

    request = round_trip(provider)
    expected = explained(provider, request, {})
    assert isinstance(expected[0], dict)
    monkeypatch.setattr(inbound, "read_messages", reader)
    assert request_outcome(provider, request, {}) == expected


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_two_agree_on_each_case_request_damaged_one_place_at_a_time(provider: str) -> None:
    count = 0
    for case_provider, _, request, options in CASES:
        if case_provider != provider or not isinstance(request.get("messages"), list):
            continue
        for n, path in enumerate(list(places(request["messages"], ("messages",)))[1:]):
            harm = DAMAGE[(n + count) % len(DAMAGE)]
            broken = damaged(request, path, harm)
            assert request_outcome(provider, broken, options) == explained(provider, broken, options), (path, harm)
        count += 1
    assert count


@settings(max_examples=60, deadline=None)
@given(provider=st.sampled_from(PROVIDERS), request=requests(), drop=st.booleans())
def test_the_two_agree_on_generated_transcripts(provider: str, request: dict[str, Any], drop: bool) -> None:
    options = {"unknown_fields": "drop"} if drop else {}
    assert request_outcome(provider, request, options) == explained(provider, request, options)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_explain_shows_the_messages_function_beside_its_rule(provider: str) -> None:
    shown = toolnexus.load_rules(None).get(provider).explain(code=True)
    header = next(line for line in shown.splitlines() if line.strip().startswith("# ") and line.endswith(" messages"))
    # the file that holds the messages section: the provider's own, or for a variant the ancestor's it inherits
    assert any(f"rules/{name}.yaml:" in header for name in lineage(provider, parents_of(toolnexus.load_rules())))
    assert "def messages(msgs, c, ids):" in shown.split(header, 1)[1]
