"""The JSON check of a request given as a dict, folded into the messages function's reads (README "What the
JSON check costs a request given as a dict"): each value the direct branches read is tested where they read it,
and the rest of the transcript, with the request's other fields, is left to `jsonsafe.read_clean`.
Its refusal is still the whole request's check's: the same path and words, and the first culprit in the
request's order, before any other error the request would raise."""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

import toolnexus
from toolnexus import TranslationError, translate_request
from toolnexus.language import jsonsafe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench_inputs import parity_inputs, tool_declarations, transcript

PROVIDERS = tuple(toolnexus.providers())  # every rule file: each writes its transcript through the folded check
# longer than jsonsafe._LONG and _BATCH: both of its ways; without `stop`, which the Responses API refuses (a
# request every provider takes, so each reaches its messages function)
BASE = {key: value for key, value in transcript(60, tool_declarations()).items() if key != "stop"}
Request = dict[str, Any]


def first(role: str, test: Callable[[dict[str, Any]], bool] = lambda m: True) -> int:
    """The index of the first message of a role that passes `test`."""
    return next(i for i, m in enumerate(BASE["messages"]) if m["role"] == role and test(m))


def with_calls(message: dict[str, Any], given_as: type) -> bool:
    calls = message.get("tool_calls") or []
    return any(type(call["function"]["arguments"]) is given_as for call in calls)


USER = first("user", lambda m: type(m["content"]) is str)
USER_PARTS = first("user", lambda m: type(m["content"]) is list and len(m["content"][0]) == 2)
SPOKEN = first("assistant", lambda m: bool(m.get("content")))
CALLED = first("assistant", lambda m: with_calls(m, str) and not with_calls(m, dict))
CALLED_OBJECT = first("assistant", lambda m: with_calls(m, dict))
IMAGE = first("user", lambda m: type(m["content"]) is list and "image_url" in m["content"][-1])  # the general branch
TOOL = first("tool", lambda m: type(m["content"]) is str)
TOOL_PARTS = first("tool", lambda m: type(m["content"]) is list)
ANSWER = first("tool", lambda m: m["tool_call_id"] == BASE["messages"][CALLED]["tool_calls"][0]["id"])
OBJECT_CALL = next(
    k for k, c in enumerate(BASE["messages"][CALLED_OBJECT]["tool_calls"]) if type(c["function"]["arguments"]) is dict
)

# Where a culprit goes: a path of keys and indexes inside the request (the last step is set or added); a call's id
# goes to its answer's tool_call_id too (`ANSWERED`), so that the tool result still answers it.
PLACES = {
    "a user text": ("messages", USER, "content"),
    "a user text part": ("messages", USER_PARTS, "content", 0, "text"),
    "an assistant text": ("messages", SPOKEN, "content"),
    "a tool call id": ("messages", CALLED, "tool_calls", 0, "id"),
    "a tool name": ("messages", CALLED, "tool_calls", 0, "function", "name"),
    "an argument": ("messages", CALLED_OBJECT, "tool_calls", OBJECT_CALL, "function", "arguments", "bad"),
    "a tool call's own key": ("messages", CALLED, "tool_calls", 0, "extra"),
    "a function's own key": ("messages", CALLED, "tool_calls", 0, "function", "extra"),
    "an image's text": ("messages", IMAGE, "content", 0, "text"),
    "a tool result": ("messages", TOOL, "content"),
    "a tool result part": ("messages", TOOL_PARTS, "content", 1, "text"),
    "a message's own key": ("messages", TOOL, "extra"),
    "a system prompt": ("messages", 0, "content"),
    "a system prompt's own key": ("messages", 0, "extra"),  # beyond role and content: checked whole
    "a field": ("metadata",),
    "a tool": ("tools", 0, "function", "parameters", "extra"),
}
CULPRITS = {
    "nan": math.nan,
    "infinity": -math.inf,
    "a lone surrogate": "text \udc80 more",
    "no JSON value": {1, 2},
    "a key not a string": {2.5: "two and a half"},
}


ANSWERED = {PLACES["a tool call id"]: ("messages", ANSWER, "tool_call_id")}


def put(request: Request, place: tuple[str | int, ...], value: Any) -> Request:
    """`request` (a copy) with `value` at `place` (and where it is `ANSWERED`)."""
    out = copy.deepcopy(request)
    for at in (place, ANSWERED.get(place, ())):
        holder: Any = out
        for step in at[:-1]:
            holder = holder[step]
        if at:
            holder[at[-1]] = value
    return out


def refusal(provider: str, request: Request, unknown_fields: Literal["error", "drop"] = "error") -> tuple[str, str]:
    with pytest.raises(TranslationError) as caught:
        translate_request(provider, request, unknown_fields=unknown_fields)
    return caught.value.path, caught.value.message


def whole_check(request: Request) -> tuple[str, str]:
    """What `check` of the whole request says: the refusal the translation must give."""
    found = jsonsafe.locate(request)
    assert found is not None
    return found


def test_the_places_are_read_by_the_direct_branches_as_the_bench_transcript_holds_them() -> None:
    messages = BASE["messages"]
    assert len(messages) > 32 and messages[0]["role"] == "system"
    assert isinstance(messages[TOOL_PARTS]["content"], list) and len(messages[TOOL_PARTS]["content"]) == 2
    for provider in PROVIDERS:
        translate_request(provider, BASE)


@pytest.mark.parametrize("unknown_fields", ["error", "drop"])
@pytest.mark.parametrize("culprit", CULPRITS, ids=str)
@pytest.mark.parametrize("place", PLACES, ids=str)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_culprit_anywhere_is_refused_as_the_whole_check_refuses_it(
    provider: str, place: str, culprit: str, unknown_fields: Literal["error", "drop"]
) -> None:
    """Dropping what the rules do not map, the check alone refuses a culprit in a key nothing reads."""
    request = put(BASE, PLACES[place], CULPRITS[culprit])
    assert refusal(provider, request, unknown_fields) == whole_check(request)


@pytest.mark.parametrize("place", PLACES, ids=str)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_short_transcript_is_refused_as_the_whole_check_refuses_it(provider: str, place: str) -> None:
    """A transcript within one batch (transcript 60 cut to its first messages that hold the place)."""
    steps = PLACES[place]
    request = BASE
    if steps[0] == "messages":
        request = {**BASE, "messages": BASE["messages"][: int(steps[1]) + 2]}
    request = put(request, steps, "a \ud800")
    assert refusal(provider, request) == whole_check(request)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_first_culprit_in_the_requests_order_is_named(provider: str) -> None:
    in_transcript = put(BASE, PLACES["a tool result"], math.nan)
    both = put(in_transcript, PLACES["a tool"], math.nan)  # `tools` follows `messages`: the transcript's first
    assert refusal(provider, both)[0] == f"messages[{TOOL}].content"
    tools_first = {"tools": both["tools"], **both}  # `tools` before `messages`: the tool's first
    assert refusal(provider, tools_first)[0] == "tools[0].function.parameters.extra"
    earlier = put(both, PLACES["a user text"], "\udfff")
    assert refusal(provider, earlier)[0] == f"messages[{USER}].content"


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"max_tokens": -1}, id="a range"),  # every provider refuses it (Ollama takes any top_p)
        pytest.param({"unknown_field": 1}, id="an unmapped field"),
        pytest.param({"parallel_tool_calls": "yes"}, id="a badly typed field"),
        pytest.param({"tool_choice": {"type": "function", "function": {"name": "nowhere"}}}, id="a tool choice"),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_check_refuses_before_any_other_error(provider: str, other: Request) -> None:
    request = put({**BASE, **other}, PLACES["a tool result part"], math.inf)
    assert refusal(provider, request) == whole_check(request)
    with pytest.raises(TranslationError) as caught:  # the other error, once the culprit is gone
        translate_request(provider, {**BASE, **other})
    assert caught.value.path != whole_check(request)[0]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_check_refuses_before_an_earlier_messages_error(provider: str) -> None:
    """An error the messages function raises (or a shape it declines) at a message before the culprit's."""
    request = put(BASE, PLACES["a tool result"], math.nan)
    for broken in ({"role": "tool", "tool_call_id": "nowhere", "content": "x"}, {"role": "nobody"}, "not a message"):
        damaged = put(request, ("messages", 3), broken)
        assert refusal(provider, damaged) == whole_check(damaged)


class _RecordingOrjson:
    """orjson, recording the values `jsonsafe` asks it to encode."""

    def __init__(self, real: Any) -> None:
        self.real, self.encoded = real, list[Any]()

    def dumps(self, value: Any, *args: Any, **kwargs: Any) -> bytes:
        self.encoded.append(value)
        return bytes(self.real.dumps(value, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_other_fields_go_in_the_transcripts_batch(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request's other fields (the golden request's tools) are no encoding of their own: they are a member of
    the batch the transcript leaves to `read_clean`, whatever else that batch holds for the provider."""
    request = {key: value for key, value in parity_inputs()[0].items() if key != "tool_choice"}  # (Ollama has none)
    assert len(request["messages"]) > 2 and request.get("tools")
    expected = translate_request(provider, request)
    recording = _RecordingOrjson(jsonsafe.orjson)
    monkeypatch.setattr(jsonsafe, "orjson", recording)
    assert translate_request(provider, request) == expected
    rest = {key: value for key, value in request.items() if key != "messages"}
    assert rest not in recording.encoded  # not checked on its own
    assert any(type(value) is list and rest in value for value in recording.encoded)  # but in a batch
