"""The request's tools section: tools of the common shape are written from their function object by a fast
test, any other list goes to the explain step (the reader), and the two write the same declarations, notes
and errors. The system prompt likewise: one prompt of its role ahead of every turn is written by a generated fast test,
any other chosen by `Inbound._choose_system`, with the same body, notes and errors."""

from __future__ import annotations

import copy
from typing import Any, NoReturn

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import toolnexus
from support.cases import request_cases, request_outcome
from toolnexus.translate import inbound
from toolnexus.translate.reader import TOOL_CHOICES
from toolnexus.translate.rulebook import builtin_rulebook

PROVIDERS = toolnexus.providers()


CASES = request_cases(PROVIDERS)


def explained(
    monkeypatch: pytest.MonkeyPatch, provider: str, request: Any, options: dict[str, Any], fast: str = "tools"
) -> Any:
    """The outcome with a fast test (`tools`: every tool list; `system`: every prompt) declining, so the explain
    step writes them all."""
    with monkeypatch.context() as patch:  # the generated function is the rule file's own field (a frozen class)
        patch.setitem(toolnexus.load_rules().get(provider).inbound.__dict__, fast, lambda *_: None)
        return request_outcome(provider, request, options)


@pytest.mark.parametrize(("provider", "name", "request_", "options"), CASES, ids=[f"{c[0]}/{c[1]}" for c in CASES])
def test_the_fast_test_and_the_explain_step_agree_on_every_case(
    monkeypatch: pytest.MonkeyPatch, provider: str, name: str, request_: dict[str, Any], options: dict[str, Any]
) -> None:
    outcome = request_outcome(provider, request_, options)
    assert outcome == explained(monkeypatch, provider, request_, options)
    assert outcome == explained(monkeypatch, provider, request_, options, "system")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_plain_tools_never_reach_the_reader(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    def reader(*args: Any) -> NoReturn:
        raise AssertionError("the tools went to the explain step")

    tools = [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {}}},
        {"type": "function", "function": {"name": "now"}},
    ]
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    expected = explained(monkeypatch, provider, request, {})
    monkeypatch.setattr(inbound, "read_tools", reader)
    assert request_outcome(provider, request, {}) == expected


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "late",
    [
        {"type": "function", "function": {"name": "b", "x": 1}},  # not plain: settled by the explain step
        {"type": "function", "function": {"name": "a"}},  # a name declared twice: the reader's error
        {"type": "function", "function": {"name": "b", "description": 3}},
    ],
)
def test_notes_written_before_the_fast_test_declines_are_written_once(
    monkeypatch: pytest.MonkeyPatch, provider: str, late: dict[str, Any]
) -> None:
    tools = [{"type": "function", "function": {"name": "a"}}, late]  # the first may get a synthesized schema
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    options = {"unknown_fields": "drop"}
    assert request_outcome(provider, request, options) == explained(monkeypatch, provider, request, options)


NAMES = st.sampled_from(["a", "b", "", 3, None])
VALUES = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.dictionaries(st.sampled_from(["type"]), NAMES))
FUNCTIONS = st.dictionaries(
    st.sampled_from(["name", "description", "parameters", "strict", "cache_control", "path", "source", "x"]),
    st.one_of(NAMES, VALUES),
    max_size=4,
)
TOOLS = st.one_of(
    st.dictionaries(
        st.sampled_from(["type", "function", "cache_control", "strict"]),
        st.one_of(st.just("function"), FUNCTIONS, VALUES),
        max_size=3,
    ),
    st.fixed_dictionaries({"type": st.just("function"), "function": FUNCTIONS}),  # near the common shape
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": NAMES}, optional={"parameters": VALUES}),
        }
    ),
)


NULL_READ_KEY = [{"type": "function", "function": {"name": "a", "cache_control": None}}]  # read, but null
UNREAD_KEY = [{"type": "function", "function": {"name": "a", "strict": True, "x": 1}}]
ON_THE_TOOL = [{"type": "function", "function": {"name": "a"}, "cache_control": {"type": "ephemeral"}}]
TWICE = [{"type": "function", "function": {"name": "a"}}] * 2


@settings(max_examples=150, deadline=None)
@example(provider="anthropic", tools=NULL_READ_KEY)
@example(provider="gemini", tools=UNREAD_KEY)
@example(provider="openai", tools=TWICE)
@example(provider="anthropic", tools=ON_THE_TOOL)
@given(provider=st.sampled_from(PROVIDERS), tools=st.one_of(st.lists(TOOLS, max_size=3), VALUES))
def test_the_two_agree_on_generated_tool_lists(provider: str, tools: Any) -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    with pytest.MonkeyPatch.context() as patch:
        for options in ({}, {"unknown_fields": "drop"}):
            assert request_outcome(provider, request, options) == explained(patch, provider, request, options)


TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
CHOICES = [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [TOOL], **given, **parallel}
    for given in [{}, *({"tool_choice": choice} for choice in sorted(TOOL_CHOICES))]
    for parallel in [{}, {"parallel_tool_calls": True}, {"parallel_tool_calls": False}]
]


@pytest.fixture(scope="module")
def unread_choices() -> Any:
    """The built-in rules compiled with no tool choice read at load: each call reads its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inbound, "_choice_table", lambda *args: inbound.NO_CHOICES)
        return builtin_rulebook.__wrapped__()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_tool_choices_read_at_load_write_what_each_call_reads(provider: str, unread_choices: Any) -> None:
    for request in CHOICES:
        assert request_outcome(provider, request, {}) == request_outcome(provider, request, {"rules": unread_choices})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_call_writes_its_own_tool_choice(provider: str) -> None:
    """A caller may change the body it is given: the next call's tool choice is its own (a constant is copied).
    (The body holds the request's own values, such as a tool's parameters: each call here is given a copy.)"""
    for request in CHOICES:
        try:
            first = toolnexus.translate_request(provider, copy.deepcopy(request))
        except toolnexus.TranslationError:
            continue  # a choice the provider cannot take
        expected = copy.deepcopy(dict(first))
        spoil(first)
        assert toolnexus.translate_request(provider, copy.deepcopy(request)) == expected


def spoil(value: Any) -> None:
    """Change every object and list inside `value`, in place."""
    if isinstance(value, dict):
        for item in value.values():
            spoil(item)
        value["spoiled"] = True
    elif isinstance(value, list):
        for item in value:
            spoil(item)
        value.append("spoiled")


SYSTEMS = [
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}],
    [{"role": "user", "content": "hi"}, {"role": "system", "content": "be brief"}],
    [{"role": "system", "content": "a"}, {"role": "system", "content": "b"}, {"role": "user", "content": "hi"}],
    [{"role": "system", "content": [{"type": "text", "text": "a"}]}, {"role": "user", "content": "hi"}],
    [{"role": "system", "content": "a", "name": "n"}, {"role": "user", "content": "hi"}],
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("options", [{}, {"system": "per call"}, {"default_system": "default"}])
@pytest.mark.parametrize("messages", SYSTEMS, ids=range(len(SYSTEMS)))
def test_the_system_fast_test_and_the_choice_agree(
    monkeypatch: pytest.MonkeyPatch, provider: str, options: dict[str, Any], messages: list[Any]
) -> None:
    request = {"model": "m", "messages": messages}
    for unknown in ({}, {"unknown_fields": "drop"}):
        outcome = request_outcome(provider, request, {**options, **unknown})
        assert outcome == explained(monkeypatch, provider, request, {**options, **unknown}, "system")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_plain_system_prompt_is_never_chosen_by_the_loop(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    def choose(*args: Any) -> NoReturn:
        raise AssertionError("a plain system prompt went through _choose_system")

    monkeypatch.setattr(inbound.Inbound, "_choose_system", choose)
    toolnexus.translate_request(provider, {"model": "m", "messages": SYSTEMS[0]})
