"""The response section's one generated function: the common answer is read inline, an element it
cannot read plainly goes to the explain step, and the compiled state is immutable."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import pytest

import toolnexus
from support.cli import explain_code
from support.faults import get_at, set_at, walk
from toolnexus import ResponseError, api, load_rules, translate_response
from toolnexus.devtools.conformance import load_cases
from toolnexus.language import jsonsafe
from toolnexus.language.paths import MISSING
from toolnexus.language.templates import Ctx
from toolnexus.translate.endpoint import Endpoint
from toolnexus.translate.outbound import Outbound, ResponseGen, _explain_counts, _Found, check_usage
from toolnexus.translate.result import TranslatedToolCall, TranslateResult, new_tool_call, tool_calls

PROVIDERS = toolnexus.providers()


def clean_case_responses() -> list[tuple[str, str, dict[str, Any]]]:
    """(provider, case, response) for every case answer that translates with no note at all."""
    out = []
    for column in load_cases():
        provider, case = column.provider, column.data
        if column.skip is None and provider in PROVIDERS:
            if "response" not in case or "expect_response_error" in case or case.get("expect_result_notes"):
                continue
            try:
                result = translate_response(provider, case["response"])
            except toolnexus.ToolnexusError:
                continue
            if not result.notes:
                out.append((provider, column.concern, case["response"]))
    return out


CLEAN = clean_case_responses()


def every_case_response() -> list[tuple[str, str, dict[str, Any]]]:
    """(provider, case, response) for every case answer JSON can say, clean or not."""
    out = []
    for column in load_cases():
        response = column.data.get("response")
        if column.skip is None and column.provider in PROVIDERS and isinstance(response, dict):
            out.append((column.provider, column.concern, response))
    return out


def translated(provider: str, response: Any) -> Any:
    """What `translate_response` gives: the result with its raw and notes, or the error's type, path and text."""
    try:
        result = translate_response(provider, response)
    except toolnexus.ToolnexusError as error:
        return type(error).__name__, getattr(error, "path", None), str(error)
    return result.to_dict(), result.raw, result.notes


@pytest.mark.parametrize(
    ("provider", "name", "response"), every_case_response(), ids=[f"{p}/{n}" for p, n, _ in every_case_response()]
)
def test_a_body_translates_as_its_decoded_answer(provider: str, name: str, response: dict[str, Any]) -> None:
    """The raw-body entry: the answer's JSON text, as bytes or str, gives the dict's result, notes or error."""
    text = json.dumps(response)
    expected = translated(provider, response)
    assert translated(provider, text.encode()) == expected
    assert translated(provider, text) == expected


@pytest.mark.parametrize("source", ["anthropic", "openai-responses"])
def test_a_body_is_written_back_in_a_source_format_as_its_decoded_answer(source: str) -> None:
    provider, _, response = next(c for c in CLEAN if c[0] == "gemini")
    expected = translate_response(provider, response, source=source)
    assert translate_response(provider, json.dumps(response).encode(), source=source) == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"id": "x", "content": [', "is not valid JSON (Expecting value: line 1 column 25 (char 24))"),
        (b"\xff\xfe{", "is not valid JSON"),
        ("[]", "the response must be an object, got list"),
        ("", "is not valid JSON (Expecting value: line 1 column 1 (char 0))"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_response_error_at_the_root(body: bytes | str, message: str) -> None:
    with pytest.raises(ResponseError) as info:
        translate_response("anthropic", body)
    assert info.value.path == "" and message in str(info.value)


@pytest.mark.parametrize("answer", [[], None, 3, ("a",)])  # a str or bytes is a body
def test_a_decoded_answer_that_is_not_an_object_is_a_response_error_at_the_root(answer: Any) -> None:
    """The generated function's check refuses it before reading, as the body entry does."""
    for provider in ("anthropic", "openai"):
        for translate in (
            lambda a, p=provider: translate_response(p, a),
            lambda a, p=provider: load_rules().get(p).outbound.translate(a),
        ):
            with pytest.raises(ResponseError) as info:
                translate(answer)
            assert info.value.path == "" and f"must be an object, got {type(answer).__name__}" in str(info.value)


def test_a_body_in_the_providers_error_shape_is_its_provider_error() -> None:
    body = b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    with pytest.raises(toolnexus.ProviderError) as info:
        translate_response("anthropic", body)
    assert info.value.error_type == "overloaded_error" and "Overloaded" in str(info.value)


def test_a_dict_answer_is_told_by_its_type_and_its_error_root_by_one_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """`translate_response` tells a dict from a body by its type alone, and calls `Endpoint.error_in` only for an
    answer holding the root field of the error message's path: the rest of that test would say no error anyway."""
    answer = {"type": "message", "model": "m", "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}
    looked: list[Any] = []
    error_in = Endpoint.error_in
    monkeypatch.setattr(Endpoint, "error_in", lambda self, data: looked.append(data) or error_in(self, data))
    monkeypatch.setattr(api, "isinstance", lambda v, kinds: looked.append(kinds) or isinstance(v, kinds), raising=False)
    assert translate_response("anthropic", answer).text == "hi" and looked == []
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(toolnexus.ProviderError):
        translate_response("anthropic", error)
    assert looked == [error]


class Text(str):
    """A str subclass: `error_in` takes it as a message, so the screen must too."""


ROOT_ONLY = sorted(p for p in PROVIDERS if load_rules().get(p).endpoint.error_root_only)


def test_the_error_screen_where_the_message_is_its_root_field_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the error message's path is one field (`message`), an answer whose field there holds no text (a
    Cohere-shaped answer's `message` object) is not handed to `Endpoint.error_in`, and on every value there the
    screen and `error_in` agree: a text (a str subclass too) is the provider's error, anything else an answer."""
    assert "cohere" in ROOT_ONLY and "openai" not in ROOT_ONLY  # a message path of one field, and one of two
    looked: list[Any] = []
    error_in = Endpoint.error_in
    monkeypatch.setattr(Endpoint, "error_in", lambda self, data: looked.append(data) or error_in(self, data))
    answer = {"id": "x", "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}}
    assert translate_response("cohere", {**answer, "finish_reason": "COMPLETE"}).text == "hi" and looked == []
    for provider in ROOT_ONLY:
        endpoint = load_rules().get(provider).endpoint
        for held in ("bad key", Text("bad key"), "", {"role": "assistant"}, ["x"], 3, 1.5, True, None):
            body = {endpoint.error_root: held, "id": "x"}
            expected = error_in(endpoint, body)
            try:
                translate_response(provider, body)
            except toolnexus.ProviderError as exc:
                assert expected is not None and str(exc).endswith(expected[1]), (provider, held)
            except toolnexus.TranslationError:
                assert expected is None, (provider, held)  # an answer, refused as one
            else:
                assert expected is None, (provider, held)


def test_a_body_is_checked_by_its_parse_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The body's strict parse is its check: the whole-answer check of a dict is not run on it."""
    body = json.dumps(CLEAN[0][2]).encode()

    def check(value: Any, apart: Any = ()) -> NoReturn:
        raise AssertionError("a decoded body was checked again")

    run = load_rules().get(CLEAN[0][0]).outbound.run  # the generated function checks a dict
    monkeypatch.setitem(run.__globals__, "answer_nulls", check)
    assert translate_response(CLEAN[0][0], body).raw == CLEAN[0][2]
    with pytest.raises(AssertionError):
        translate_response(CLEAN[0][0], CLEAN[0][2])


# Ollama's calls never carry an id, so every tool-call answer has a `synthesized` note: none is clean.
ID_LESS = frozenset({"ollama"})


def test_the_clean_answers_cover_tool_calls_and_text_for_every_provider() -> None:
    for provider in PROVIDERS:
        results = [translate_response(p, r) for p, _, r in CLEAN if p == provider]
        assert (provider in ID_LESS or any(r.tool_calls for r in results)) and any(r.text for r in results), provider


# A `one:` item whose element is a string (Cohere's message.tool_plan) is read by the explain step: the
# generated fast path expects an object element. The result is the same; strict xfail until it is fast.
SLOW = {
    "cohere/response-function-call-id-kept",
    "cohere/response-several-tool-calls",
    "cohere/response-thinking-tool-use",
    "cohere/round-trip-tool-call",
}


@pytest.mark.parametrize(
    ("provider", "name", "response"),
    [
        pytest.param(*c, marks=pytest.mark.xfail(strict=True, reason="a string item takes the explain step"))
        if f"{c[0]}/{c[1]}" in SLOW
        else c
        for c in CLEAN
    ],
    ids=[f"{p}/{n}" for p, n, _ in CLEAN],
)
def test_a_clean_answer_never_reaches_the_explain_step(
    monkeypatch: pytest.MonkeyPatch, provider: str, name: str, response: dict[str, Any]
) -> None:
    expected = translate_response(provider, response).to_dict()

    def explain(*args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"{provider}/{name} reached the explain step")

    for step in ("_read_element", "_read_source", "_finish_reason"):
        monkeypatch.setattr(Outbound, step, explain)
    assert translate_response(provider, response).to_dict() == expected


def test_an_element_the_fast_test_refuses_gets_the_explain_steps_located_error() -> None:
    answer = {
        "content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "t1", "name": "f", "input": "{}"}],
        "stop_reason": "tool_use",
    }
    with pytest.raises(ResponseError) as info:
        translate_response("anthropic", answer)
    assert info.value.path == "content[1].input"


def test_notes_a_refused_fast_read_wrote_are_not_written_twice() -> None:
    """Gemini's functionCall args have a default (a note); a bad signature then sends the part to the explain
    step, which writes the default's note itself: once."""
    part = {"functionCall": {"id": "c1", "name": "f"}, "thoughtSignature": "s"}
    answer = {"candidates": [{"content": {"parts": [part]}, "finishReason": "STOP"}]}
    result = translate_response("gemini", answer)
    assert [n.kind for n in result.notes] == ["synthesized"]
    assert result.tool_calls[0].arguments == "{}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_explain_code_shows_the_one_response_function(provider: str) -> None:
    compiled = load_rules().get(provider).outbound
    assert compiled.code.startswith("def respond(")
    explained = load_rules().get(provider).explain(code=True).replace("\n  ", "\n")
    assert compiled.code.rstrip() in explained
    assert compiled.templates_code and all(text.rstrip() in explained for _, text in compiled.templates_code)
    shown = explain_code(provider)
    assert "def respond(o, r, requested_model, id_map=None, tokens=0, given=None):" in shown


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_compiled_response_state_is_frozen_and_the_rule_source_holds_no_response_function(provider: str) -> None:
    compiled = load_rules().get(provider)
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.outbound.code = ""  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.outbound.sources[0].path = ""  # type: ignore[misc]
    with pytest.raises(TypeError):
        compiled.outbound.table["x"] = "stop"  # type: ignore[index]
    assert not hasattr(compiled.source, "generated")
    assert {key[0] for key, _ in compiled.outbound.templates_code} == {"response"}
    assert all(text.startswith("def render(") for _, text in compiled.outbound.templates_code)
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.outbound.templates_code = ()  # type: ignore[misc]


# ---------------------------------------------------------------- the generated function agrees with the explain steps


def by_explain_steps(outbound: Outbound, response: dict[str, Any]) -> TranslateResult:
    """The whole answer read by the explain steps alone (every element by its whole template): the reference."""
    ctx = Ctx(outbound.provider, outbound=True)
    found = _Found()
    for src in outbound.sources:
        outbound._read_source(src, response, ctx, found)
    ctx.path = ""
    finish = outbound._finish_reason(response, bool(found.calls), ctx)
    usage = outbound.usage(response, ctx)
    usage = {} if usage is MISSING else _explain_counts(usage, ctx)
    ctx.notes += check_usage(usage, outbound.within)
    model = outbound.model(response, ctx) if outbound.model is not None else MISSING
    refusal = outbound.refusal_of(response, ctx)
    return TranslateResult(
        text="".join(found.texts),
        tool_calls=found.calls,
        finish_reason=finish,
        usage=usage,
        model=model if isinstance(model, str) else "",
        raw=response,
        notes=tuple(ctx.notes),
        reasoning_content="".join(found.reasoning),
        message_extras=found.extras,
        annotations=found.annotations,
        refusal=refusal,
    )


def outcome(run: Callable[[], TranslateResult]) -> Any:
    try:
        return run().to_dict()
    except ResponseError as exc:
        return ("error", exc.path)


def variants(value: Any, budget: int) -> Iterator[Any]:
    """The value with one place changed (up to `budget` places, chosen by a fixed seed): removed, null, a
    number, text, an empty object or list."""
    places: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            places.append((node, key))
            stack.append(node[key])
    random.Random(len(places)).shuffle(places)
    for node, key in places[:budget]:
        for replacement in (MISSING, None, 7, "x", {}, []):
            original = node[key]
            if replacement is MISSING:
                if not isinstance(node, dict):
                    continue
                del node[key]
            else:
                node[key] = replacement
            yield copy.deepcopy(value)
            node[key] = original


ANSWERS = [
    (column.provider, column.concern, column.data["response"])
    for column in load_cases()
    if column.skip is None and column.provider in PROVIDERS and isinstance(column.data.get("response"), dict)
]


def agrees_when_damaged(outbound: Any, answer: dict[str, Any], budget: int) -> None:
    """The generated function and the explain steps give the same outcome (result or error) on every damaged
    copy of `answer`."""
    for damaged in variants(copy.deepcopy(answer), budget=budget):
        fast = outcome(lambda d=damaged: outbound.run(outbound, d, None))
        assert fast == outcome(lambda d=damaged: by_explain_steps(outbound, d)), damaged


@pytest.mark.parametrize(("provider", "name", "response"), ANSWERS, ids=[f"{p}/{n}" for p, n, _ in ANSWERS])
def test_the_generated_function_agrees_with_the_explain_steps_on_damaged_answers(
    provider: str, name: str, response: dict[str, Any]
) -> None:
    outbound = load_rules().get(provider).outbound
    agrees_when_damaged(outbound, response, budget=60)


@pytest.mark.parametrize("details", ["prompt_tokens_details", "completion_tokens_details"])
def test_a_details_object_given_as_a_number_is_left_out_and_noted(details: str) -> None:
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, details: 7},
    }
    result = translate_response("openai", answer)
    assert result.text == "hi" and details not in result.usage and result.usage["total_tokens"] == 5
    assert [(n.kind, n.path) for n in result.notes] == [("dropped", f"usage.{details}")]


@pytest.mark.parametrize(
    ("details", "kept", "noted"),
    [
        ({"cached_tokens": 1, "audio_tokens": 0}, {"cached_tokens": 1, "audio_tokens": 0}, []),
        ({}, None, []),
        ({"cached_tokens": -1}, None, ["usage.prompt_tokens_details.cached_tokens"]),
        ({"cached_tokens": 1, "audio_tokens": "2"}, {"cached_tokens": 1}, ["usage.prompt_tokens_details.audio_tokens"]),
        ({"cached_tokens": True}, None, ["usage.prompt_tokens_details.cached_tokens"]),
    ],
)
def test_a_details_object_read_inline_is_copied_when_clean_else_explained(
    details: dict[str, Any], kept: dict[str, Any] | None, noted: list[str]
) -> None:
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "prompt_tokens_details": details},
    }
    result = translate_response("openai", answer)
    assert result.usage.get("prompt_tokens_details") == kept
    assert result.usage.get("prompt_tokens_details") is not details  # a copy: never the answer's own object
    assert [n.path for n in result.notes if n.kind == "dropped"] == noted


def test_the_tool_calls_a_generated_function_builds_are_the_frozen_dataclass() -> None:
    answer = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    (call,) = translate_response("openai", answer).tool_calls
    assert type(call) is TranslatedToolCall
    assert call == TranslatedToolCall("c1", "f", "{}") and hash(call) == hash(TranslatedToolCall("c1", "f", "{}"))
    assert repr(call) == repr(TranslatedToolCall("c1", "f", "{}"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.id = "c2"  # type: ignore[misc]


def test_new_tool_call_sets_every_field_the_dataclass_declares() -> None:
    extra = {"google": {"thought_signature": "s"}}
    fast = new_tool_call("i", "n", "{}", extra, {})
    assert fast == TranslatedToolCall("i", "n", "{}", extra)
    assert [getattr(fast, f.name) for f in dataclasses.fields(TranslatedToolCall)] == ["i", "n", "{}", extra, {}]
    assert new_tool_call("i", "n", "{}", extra).given is None  # arguments that came as text


def test_tool_calls_built_by_columns_set_every_field_as_new_tool_call_does() -> None:
    built = tool_calls(["a", "b"], ["f", "g"], ["{}", '{"x":1}'])
    fields = [f.name for f in dataclasses.fields(TranslatedToolCall)]
    assert [[getattr(call, name) for name in fields] for call in built] == [
        [getattr(new_tool_call(i, n, a, None), name) for name in fields]
        for i, n, a in (("a", "f", "{}"), ("b", "g", '{"x":1}'))
    ]


GIVEN_CALLS = {  # per arguments form: object (gemini), object or text (mistral), text (openai): each call's arguments
    "gemini": [{"a": 1}],
    "mistral": [{"a": 1, "b": [2.5]}, '{"b":2}'],
    "openai": ['{"a": 1}'],
}


def given_answer(provider: str, sent: list[Any]) -> dict[str, Any]:
    """An answer of tool calls whose arguments are `sent`, as the provider says it."""
    if provider == "gemini":
        parts = [{"functionCall": {"name": "f", "args": args}} for args in sent]
        return {"candidates": [{"content": {"parts": parts}, "finishReason": "STOP"}]}
    calls = [{"id": f"call{i:05d}", "type": "function", "function": {"name": "f", "arguments": args}}
             for i, args in enumerate(sent)]  # fmt: skip
    return {"choices": [{"message": {"content": None, "tool_calls": calls}, "finish_reason": "tool_calls"}]}


@pytest.mark.parametrize("provider", sorted(GIVEN_CALLS))
def test_a_call_keeps_the_arguments_object_the_provider_sent(provider: str) -> None:
    """`given` is the very object the answer holds where the arguments came as one (their text is its JSON), None
    where they came as text, read alike by the generated function and the explain steps (a source format writes it
    as the call's object, no text read back)."""
    outbound = load_rules().get(provider).outbound
    sent = copy.deepcopy(GIVEN_CALLS[provider])
    answer = given_answer(provider, sent)
    for result in (outbound.translate(answer), by_explain_steps(outbound, answer)):
        assert len(result.tool_calls) == len(sent)
        for call, value in zip(result.tool_calls, sent, strict=True):
            if isinstance(value, dict):
                assert call.given is value and json.loads(call.arguments) == value
            else:
                assert call.given is None and call.arguments == value


def with_spied_usage(outbound: Outbound, calls: list[Any]) -> Outbound:
    """The outbound regenerated (by `replace`) with its usage template counting the calls (the usage explain step)."""
    usage = outbound.usage

    def spy(response: Any, ctx: Ctx) -> Any:
        calls.append(response)
        return usage(response, ctx)

    return dataclasses.replace(outbound, usage=spy)


@pytest.mark.parametrize(("provider", "name", "response"), CLEAN, ids=[f"{p}/{n}" for p, n, _ in CLEAN])
def test_clean_usage_is_read_inline_without_rendering_the_template(
    provider: str, name: str, response: dict[str, Any]
) -> None:
    calls: list[Any] = []
    outbound = load_rules().get(provider).outbound
    spied = with_spied_usage(outbound, calls)
    assert spied.translate(response).to_dict() == outbound.translate(response).to_dict()
    assert calls == []


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_bad_count_takes_the_usage_explain_step_and_is_noted(provider: str) -> None:
    answers = {
        "openai": {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": -1}},
        "anthropic": {"content": [], "stop_reason": "end_turn", "usage": {"input_tokens": "3", "output_tokens": 2}},
        "gemini": {"candidates": [{"content": {"parts": [{"text": "x"}]}}], "usageMetadata": {"totalTokenCount": 1.5}},
    }
    calls: list[Any] = []
    result = with_spied_usage(load_rules().get(provider).outbound, calls).translate(answers[provider])
    assert len(calls) == 1
    assert [n.kind for n in result.notes if n.path.startswith(("usage", "usageMetadata"))] == ["dropped"]


# A made-up provider whose `message` and `extra_content` templates are mappings of plain reads: one value
# under nested keys, and several (one nested) under one mapping. The generated code builds them inline.
ZETA = """\
provider: zeta
extends: openai
response:
  items:
    - each: out
      kind: kind
      kinds:
        say:
          text: {$get: text}
          message: {extra_content: {zeta: {sig: {$get: sig}}}}
        call:
          tool_call:
            id: {$get: id}
            name: {$get: fn.name}
            arguments: {$get: fn.args}
            extra_content: {zeta: {sig: {$get: sig}}}
          message: {seen: {$get: seen}, more: {first: {$get: a.first}, second: {$get: a.second}}}
"""


def test_a_mapping_of_plain_reads_is_built_inline_as_its_template_renders_it(tmp_path: Any) -> None:
    (tmp_path / "zeta.yaml").write_text(ZETA)
    outbound = load_rules(tmp_path).get("zeta").outbound
    assert "m = MISSING if m0 is MISSING else {'extra_content': {'zeta': {'sig': m0}}}" in outbound.code
    assert "render" not in outbound.code  # no field of either kind is rendered by its own template
    answer = {
        "out": [
            {"kind": "say", "text": "hi", "sig": "s1"},
            {"kind": "say", "text": "there"},
            {"kind": "call", "id": "c1", "fn": {"name": "f", "args": {"x": 1}}, "sig": {}, "a": {"second": None}},
            {"kind": "call", "id": "c2", "fn": {"name": "g", "args": {}}, "seen": [1], "a": {"first": {}}},
        ],
        "choices": [{"finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3},
    }
    result = outbound.translate(answer)
    assert result.message_extras == {
        "extra_content": {"zeta": {"sig": "s1"}},
        "more": {"second": None, "first": {}},
        "seen": [1],
    }
    assert [c.extra_content for c in result.tool_calls] == [{"zeta": {"sig": {}}}, None]
    agrees_when_damaged(outbound, answer, budget=80)


# A made-up provider whose calls' arguments are a plain read with a default (Gemini's `args` may be left out).
ETA = """\
provider: eta
extends: openai
response:
  items:
    - each: out
      kind: kind
      arguments: object
      kinds:
        call:
          tool_call:
            id: {$get: id}
            name: {$get: fn.name}
            arguments: {$get: fn.args, default: {}}
"""


def test_a_read_with_a_default_is_read_inline_and_rendered_only_when_absent(tmp_path: Any) -> None:
    (tmp_path / "eta.yaml").write_text(ETA)
    outbound = load_rules(tmp_path).get("eta").outbound
    assert re.search(r"^ *ca = e\d+$", outbound.code, re.M)  # read inline
    # the default's template, with the Ctx built and the notes marked only then (most calls hold their arguments)
    default = r"^ *if ca is MISSING: \(c := .*\.path = .*; mark = .*; ca = render\d+\(e, c\)$"
    assert re.search(default, outbound.code, re.M)
    answer = {"out": [{"kind": "call", "id": "c1", "fn": {"name": "f", "args": {"x": 1}}},
                      {"kind": "call", "id": "c2", "fn": {"name": "g"}}],
              "choices": [{"finish_reason": "stop"}]}  # fmt: skip
    result = outbound.translate(answer)
    assert [c.arguments for c in result.tool_calls] == ['{"x": 1}', "{}"]
    assert [n.path for n in result.notes if n.kind == "synthesized"] == ["out[1].fn.args"]
    agrees_when_damaged(outbound, answer, budget=60)


# A made-up provider whose text is a `$get` of one rich path (the Responses API's text from its parts).
LAMBDA = """\
provider: lambda
extends: openai
response:
  items: [{each: out, kind: kind, kinds: {say: {text: {$get: "parts[?type == 'text'].text | [0]"}}}}]
"""


def test_a_get_of_one_rich_path_is_read_by_its_getter_and_builds_no_ctx(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lambda.yaml").write_text(LAMBDA)
    outbound = load_rules(tmp_path).get("lambda").outbound
    assert re.search(r"^ *t = g\d+\(e\)$", outbound.code, re.M)  # the getter, inline: no render, no Ctx
    answer = {"out": [{"kind": "say", "parts": [{"type": "image"}, {"type": "text", "text": "hi"}]},
                      {"kind": "say", "parts": [{"type": "text", "text": "!"}]}],
              "choices": [{"finish_reason": "stop"}]}  # fmt: skip
    built: list[Any] = []
    monkeypatch.setitem(outbound.run.__globals__, "Ctx", lambda *args: built.append(args) or Ctx(*args))
    assert outbound.translate(answer).text == "hi!"
    assert built == []
    agrees_when_damaged(outbound, answer, budget=60)


# A made-up provider whose reasoning blocks carry a signature read as a string (typed): null is no signature,
# another type a ResponseError at the provider's place, never an object a format's reader refuses.
THETA = """\
provider: theta
extends: openai
response:
  items:
    - each: out
      kind: kind
      kinds:
        say: {text: {$get: text, type: string}}
        think:
          reasoning: {$get: text}
          message: {thinking_blocks: [{type: thinking, thinking: {$get: text}, signature: {$get: sig, type: string}}]}
"""


def test_a_typed_read_in_an_answer_leaves_a_null_out_and_refuses_another_type_at_its_place(tmp_path: Any) -> None:
    (tmp_path / "theta.yaml").write_text(THETA)
    outbound = load_rules(tmp_path).get("theta").outbound
    answer = {"out": [{"kind": "think", "text": "hm", "sig": None}, {"kind": "say", "text": "hi"}],
              "choices": [{"finish_reason": "stop"}]}  # fmt: skip
    assert outbound.translate(answer).message_extras == {"thinking_blocks": [{"type": "thinking", "thinking": "hm"}]}
    for place, bad in (("out[0].sig", {"sig": 7}), ("out[1].text", {"text": ["hi"]})):
        broken = copy.deepcopy(answer)
        broken["out"][int(place[4])].update(bad)
        with pytest.raises(ResponseError) as info:
            outbound.translate(broken)
        assert info.value.path == place
    agrees_when_damaged(outbound, answer, budget=60)


# ---------------------------------------------------------------- the answer check, fused into the generated function
# `jsonsafe.answer_nulls` encodes the answer and counts its null tokens (a None or a NaN/Infinity each); the generated
# function counts the Nones in the objects it reads and looks at the whole answer only when they do not account for
# every token. A NaN or an Infinity stays the located ResponseError `jsonsafe.check` names, whatever else the answer
# holds and whichever step of the function meets it first.


def checked_path(answer: dict[str, Any]) -> str:
    with pytest.raises(jsonsafe.JsonValueError) as info:
        jsonsafe.check(answer)
    return info.value.where


def openai_answer(**message: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def nan_cases() -> list[tuple[str, dict[str, Any], str]]:
    """(provider, answer, path of its NaN or Infinity): each beside Nones the generated function counts."""
    in_details = openai_answer(content="hi", refusal=None)
    in_details["usage"]["prompt_tokens_details"] = {"cached_tokens": math.nan}
    in_arguments = openai_answer(content=None, refusal=None)
    in_arguments["choices"][0]["message"]["tool_calls"] = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "f", "arguments": '{"x": 1}'},
            "extra_content": {"k": math.inf},
        }
    ]
    unread = openai_answer(
        content="hi", refusal=None
    )  # a None the function counts first, the NaN where it reads nothing
    unread["service_tier"] = None
    unread["choices"][0]["logprobs"] = {"content": [{"token": "hi", "logprob": math.nan}]}
    annotated = openai_answer(content="hi", refusal=None)
    annotated["choices"][0]["message"]["annotations"] = [
        {"type": "url_citation", "url_citation": {"url": "u", "title": None, "start_index": math.nan, "end_index": 1}}
    ]
    anthropic = {
        "model": "claude",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": None, "y": [1, -math.inf]}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    cited = {
        "model": "claude",
        "content": [
            {"type": "text", "text": "hi", "citations": [{"type": "web_search_result_location", "url": "u",
                                                          "title": None, "encrypted_index": math.nan}]}
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2, "output_tokens_details": {"thinking_tokens": math.nan}},
    }  # fmt: skip
    return [
        ("openai", in_details, "usage.prompt_tokens_details.cached_tokens"),
        ("openai", in_arguments, "choices[0].message.tool_calls[0].extra_content.k"),
        ("openai", unread, "choices[0].logprobs.content[0].logprob"),
        ("openai", annotated, "choices[0].message.annotations[0].url_citation.start_index"),
        ("anthropic", anthropic, "content[0].input.y[1]"),
        ("anthropic", cited, checked_path(cited)),
    ]


@pytest.mark.parametrize(("provider", "answer", "where"), nan_cases())
def test_a_nan_beside_counted_nones_is_the_located_response_error(
    provider: str, answer: dict[str, Any], where: str
) -> None:
    assert jsonsafe.answer_nulls(answer) > 0  # the fused step decides, not the encoding alone
    assert checked_path(answer) == where
    with pytest.raises(ResponseError) as info:
        translate_response(provider, answer)
    assert info.value.path == where


def first_clean_answers() -> dict[str, dict[str, Any]]:
    """provider -> its first clean case answer (a small answer: no text long enough to be set apart)."""
    out: dict[str, dict[str, Any]] = {}
    for provider, _, answer in CLEAN:
        out.setdefault(provider, answer)
    return out


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("bad", [math.nan, -math.inf, "a\ud800b"], ids=["nan", "infinity", "surrogate"])
def test_a_bad_value_where_a_small_answer_is_not_read_is_refused_at_its_path(provider: str, bad: Any) -> None:
    """A small answer (no text long enough to be set apart) with a NaN, an Infinity or a lone surrogate in a member
    the rules never read, beside a None there, is the ResponseError at the path `jsonsafe.check` names: what any
    check folded into the generated function's reads must still refuse."""
    answer = copy.deepcopy(first_clean_answers()[provider])
    answer["unread"] = {"none": None, "values": [1, bad]}
    assert checked_path(answer) == "unread.values[1]"
    with pytest.raises(ResponseError) as info:
        translate_response(provider, answer)
    assert info.value.path == "unread.values[1]"
    del answer["unread"]
    assert translate_response(provider, answer).raw is answer  # the same answer without it reads clean


def test_a_short_answer_saying_null_in_its_text_counts_high_and_reads_the_same() -> None:
    """A short answer's nulls are counted in one call, the word "null" inside a string too: the count is high, the
    function's Nones do not account for it, and the walk finds every float finite (the answer reads as the plain
    check says); a NaN beside the word is still the located error."""
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    answer = openai_answer(content='{"x": null, "y": [null]} is null', refusal=None)
    assert jsonsafe.answer_nulls(answer) > 2  # the two Nones (refusal, logprobs) and the words in the text
    jsonsafe.check(answer)
    assert translate_response("openai", answer).text == '{"x": null, "y": [null]} is null'
    answer["choices"][0]["message"]["annotations"] = [{"type": "url_citation", "n": math.inf}]
    with pytest.raises(ResponseError) as info:
        translate_response("openai", answer)
    assert info.value.path == "choices[0].message.annotations[0].n" == checked_path(answer)


def test_a_nan_in_tool_arguments_is_refused_before_they_are_written_as_json() -> None:
    """The function writes an arguments object as JSON text before it counts Nones; a NaN there fails that
    write, and the answer check's error is what is raised."""
    answer = {
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": None, "b": math.nan}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
    }
    with pytest.raises(ResponseError) as info:
        translate_response("anthropic", answer)
    assert info.value.path == "content[0].input.b"


@pytest.mark.parametrize(("provider", "name", "response"), ANSWERS, ids=[f"{p}/{n}" for p, n, _ in ANSWERS])
def test_every_place_of_an_answer_holding_nan_beside_a_none_is_refused_where_check_says(
    provider: str, name: str, response: dict[str, Any]
) -> None:
    """Each case answer, a None added at its top, and a NaN put in each of its places in turn: the result is the
    ResponseError at the path `jsonsafe.check` names (the fused check and the plain check agree)."""
    outbound = load_rules().get(provider).outbound
    answer = {**copy.deepcopy(response), "tn_extra": None}
    whole = outcome(lambda: outbound.translate(answer))
    places: list[tuple[Any, Any]] = []
    stack: list[Any] = [answer]
    while stack:
        node = stack.pop()
        for key in list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []:
            places.append((node, key))
            stack.append(node[key])
    for node, key in random.Random(len(places)).sample(places, min(len(places), 40)):
        original = node[key]
        node[key] = math.nan
        with pytest.raises(ResponseError) as info:
            outbound.translate(answer)
        assert info.value.path == checked_path(answer)
        node[key] = original
    assert outcome(lambda: outbound.translate(answer)) == whole  # and whole again, as before


def long_text_answers() -> list[tuple[str, dict[str, Any], tuple[str | int, ...]]]:
    """(provider, answer, place of its text of more than LONG_TEXT characters): a text the function reads."""
    text = "word null, [null] " * (jsonsafe.LONG_TEXT // 10)  # "null" words, which are no null token
    anthropic = {
        "model": "claude",
        "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    return [
        ("openai", openai_answer(content=text, refusal=None), ("choices", 0, "message", "content")),
        ("anthropic", anthropic, ("content", 1, "text")),
    ]


@pytest.mark.parametrize(("provider", "answer", "place"), long_text_answers())
def test_a_long_text_the_function_reads_is_checked_apart_and_still_refused_where_check_says(
    provider: str, answer: dict[str, Any], place: tuple[str | int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check encodes a long text the function read on its own, and the answer without it: the result is the
    same (the answer itself as `raw`, unchanged); a lone surrogate in the text, or a NaN beside it, is the
    ResponseError at the path `jsonsafe.check` names."""
    seen: list[Any] = []
    nulls = jsonsafe.answer_nulls
    run = load_rules().get(provider).outbound.run
    monkeypatch.setitem(
        run.__globals__, "answer_nulls", lambda value, apart=(): seen.append(apart) or nulls(value, apart)
    )
    given = copy.deepcopy(answer)
    result = translate_response(provider, answer)
    assert seen == [(place,)] and result.raw is answer and answer == given and result.text.endswith("[null] ")
    for damage in ("surrogate", "nan"):
        broken = copy.deepcopy(answer)
        if damage == "nan":
            broken["usage"]["x"] = math.nan
        else:
            set_at(broken, place_path(place), get_at(broken, place_path(place)) + "\ud800")
        with pytest.raises(ResponseError) as info:
            translate_response(provider, broken)
        assert info.value.path == checked_path(broken) == ("usage.x" if damage == "nan" else place_path(place))


def place_path(place: tuple[str | int, ...]) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in place).lstrip(".")


LONG = "a word null, [null] \u00e9 " * (jsonsafe.LONG_TEXT // 10)  # "null" words, which are no null token


def long_text_case_answers() -> dict[str, tuple[dict[str, Any], str]]:
    """provider -> (a clean case answer whose one text is LONG, that text's path): the first clean answer whose
    translated text is one string of it that can be made long and still translate with no note."""
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for provider, _, answer in CLEAN:
        text = translate_response(provider, answer).text
        places = [path for path, value in walk(answer) if value == text] if text and provider not in out else []
        if len(places) != 1:
            continue
        long = copy.deepcopy(answer)
        set_at(long, places[0], LONG)
        try:
            result = translate_response(provider, long)
        except toolnexus.ToolnexusError:
            continue
        if result.text == LONG and not result.notes:
            out[provider] = (long, places[0])
    return out


LONG_TEXT_ANSWERS = long_text_case_answers()


def test_every_provider_has_a_long_text_answer() -> None:
    """The long-text concern below covers every provider (a new rule file with no such case shows here)."""
    assert set(LONG_TEXT_ANSWERS) == set(PROVIDERS)


@pytest.mark.parametrize("provider", sorted(LONG_TEXT_ANSWERS))
def test_a_long_answer_text_is_read_whole_and_refused_where_check_says(provider: str) -> None:
    """Every provider: an answer whose text is longer than the check sets apart gives that text whole, leaves the
    answer as it was (and as `raw`), and a lone surrogate in it, or a NaN beside it, is the ResponseError at the
    path `jsonsafe.check` names."""
    answer, path = LONG_TEXT_ANSWERS[provider]
    given = copy.deepcopy(answer)
    result = translate_response(provider, answer)
    assert result.text == LONG and result.raw is answer and answer == given
    broken = copy.deepcopy(answer)
    set_at(broken, path, LONG + "\ud800")
    with pytest.raises(ResponseError) as info:
        translate_response(provider, broken)
    assert info.value.path == checked_path(broken) == path
    with pytest.raises(ResponseError) as info:
        translate_response(provider, {**answer, "zz": [None, math.inf]})
    assert info.value.path == "zz[1]"


def test_answer_nulls_sets_apart_only_a_long_text_at_its_place() -> None:
    """A place holding a short text, no text or nothing at all leaves the count as the whole answer's; a long text
    there is not searched for null tokens (its words "[null," would each count), and nothing is changed in place."""
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    answer = openai_answer(content="[null," * jsonsafe.LONG_TEXT, refusal=None)
    given = copy.deepcopy(answer)
    whole = jsonsafe.answer_nulls(answer)
    assert whole == 2 + jsonsafe.LONG_TEXT  # refusal, logprobs and every word
    assert jsonsafe.answer_nulls(answer, [("choices", 0, "message", "content")]) == 2
    assert answer == given
    for place in [("choices", 0, "message", "role"), ("choices", 5, "message", "content"), ("model", "x"), ()]:
        assert jsonsafe.answer_nulls(answer, [place]) == whole
    answer["choices"][0]["message"]["content"] += "\udfff"
    with pytest.raises(jsonsafe.JsonValueError) as info:
        jsonsafe.answer_nulls(answer, [("choices", 0, "message", "content")])
    assert info.value.where == "choices[0].message.content"


# A made-up provider with optional sources under one object (as a grounding object and the lists inside it).
IOTA = """\
provider: iota
extends: openai
response:
  items:
    - one: choices[0].message
      as: {text: {$get: content}}
    - one: meta.notes
      optional: true
      as: {reasoning: {$get: text}}
    - each: meta.cites
      optional: true
      as: {text: {$get: text}}
"""


def test_optional_sources_under_one_absent_object_are_skipped_as_one(tmp_path: Any) -> None:
    """The sources under `meta` are read only when `meta` holds something; absent (or null), the answer reads as
    it did, and the Nones below it are no longer there to count (a NaN beside is still found)."""
    (tmp_path / "iota.yaml").write_text(IOTA)
    outbound = load_rules(tmp_path).get("iota").outbound
    assert re.search(r"^        if r\d+ is not MISSING and r\d+ is not None:$", outbound.code, re.M)
    answer: dict[str, Any] = {"choices": [{"message": {"content": "a"}, "finish_reason": "stop"}]}
    for meta in (MISSING, None, {}, {"notes": {"text": "n"}, "cites": [{"text": "b"}, {"text": None}]}, "x"):
        given = answer if meta is MISSING else {**answer, "meta": meta}
        assert outcome(lambda g=given: outbound.translate(g)) == outcome(lambda g=given: by_explain_steps(outbound, g))
    result = outbound.translate({**answer, "meta": {"notes": {"text": "n"}, "cites": [{"text": "b"}]}})
    assert (result.text, result.reasoning_content) == ("ab", "n")
    with pytest.raises(ResponseError) as info:
        outbound.translate({**answer, "meta": None, "x": [None, math.nan]})
    assert info.value.path == "x[1]"
    agrees_when_damaged(outbound, {**answer, "meta": {"notes": {"text": "n"}, "cites": [{"text": "b"}]}}, budget=40)


USAGE_ANSWERS = {  # an answer whose every usage count is clean, per provider whose usage is built straight
    "openai": {
        "choices": [{"message": {"content": "x"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 9,
            "completion_tokens": 4,
            "total_tokens": 13,
            "prompt_tokens_details": {"cached_tokens": 2, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 1},
        },
    },
    "anthropic": {
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 3,
            "cache_read_input_tokens": 4,
            "cache_creation_input_tokens": 0,
            "output_tokens": 2,
            "output_tokens_details": {"thinking_tokens": 1},
        },
    },
    "gemini": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": "STOP"}],
        "usageMetadata": {
            "promptTokenCount": 9,
            "toolUsePromptTokenCount": 1,
            "candidatesTokenCount": 4,
            "thoughtsTokenCount": 1,
            "totalTokenCount": 15,
            "cachedContentTokenCount": 2,
        },
    },
    "openai-responses": {
        "output": [],
        "status": "completed",
        "usage": {
            "input_tokens": 9,
            "input_tokens_details": {"cached_tokens": 2},
            "output_tokens": 4,
            "output_tokens_details": {"reasoning_tokens": 1},
            "total_tokens": 13,
        },
    },
}
COUNT_DAMAGE = (MISSING, None, -1, True, 1.5, "3", {}, [], {"n": 1}, 10**6)


def usage_key(answer: dict[str, Any]) -> str:
    """Where the answer holds its usage (Gemini's `usageMetadata`)."""
    return "usageMetadata" if "usageMetadata" in answer else "usage"


def damaged_counts(answer: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Copies of the answer with one place inside its usage changed (every place, every damage), and one with
    the answer's totals made inconsistent."""
    stack: list[tuple[Any, Any]] = [(answer, usage_key(answer))]
    while stack:
        node, key = stack.pop()
        value = node[key]
        for inner in value if isinstance(value, dict) else ():
            stack.append((value, inner))
        for replacement in COUNT_DAMAGE:
            damaged = copy.deepcopy(answer)
            holder = damaged
            for step in path_to(answer, node) or ():
                holder = holder[step]
            if replacement is MISSING:
                del holder[key]
            else:
                holder[key] = replacement
            yield damaged


def path_to(root: Any, target: Any) -> list[Any] | None:
    """The keys from `root` down to the mapping `target` (by identity)."""
    if root is target:
        return []
    for key, value in root.items() if isinstance(root, dict) else ():
        if isinstance(value, dict):
            found = path_to(value, target)
            if found is not None:
                return [key, *found]
    return None


@pytest.mark.parametrize("provider", sorted(USAGE_ANSWERS))
def test_straight_usage_agrees_with_the_explain_steps_on_every_damaged_count(provider: str) -> None:
    """The straight usage path (every count clean) and the checked path it falls back to give the explain steps'
    usage (in the same key order), notes and null accounting for every count damaged in every way."""
    outbound = load_rules().get(provider).outbound
    assert "if type(" in outbound.code and "else:" in outbound.code
    for damaged in damaged_counts(USAGE_ANSWERS[provider]):
        fast, slow = outbound.translate(copy.deepcopy(damaged)), by_explain_steps(outbound, damaged)
        assert list(fast.usage.items()) == list(slow.usage.items()), damaged
        assert fast.to_dict() == slow.to_dict(), damaged


@pytest.mark.parametrize("provider", sorted(USAGE_ANSWERS))
def test_straight_usage_notes_a_count_one_past_its_invariant(provider: str) -> None:
    """Each clean count set to every value from 0 to past the largest: the straight path's invariant test (on
    totals it knows are integers) agrees with the explain steps at every edge, a part equal to its total fine and
    one more noted."""
    outbound = load_rules().get(provider).outbound
    answer = USAGE_ANSWERS[provider]
    usage = usage_key(answer)
    places = [(path, key) for path, holder in _count_holders(answer[usage], (usage,)) for key in holder]
    noted = set()
    for path, key in places:
        for count in range(16):
            changed = copy.deepcopy(answer)
            holder = changed
            for step in path:
                holder = holder[step]
            holder[key] = count
            fast, slow = outbound.translate(changed), by_explain_steps(outbound, changed)
            assert fast.to_dict() == slow.to_dict(), changed
            noted.add(any(note.kind == "inconsistent" for note in fast.notes))
    assert noted == {True, False}


def _count_holders(value: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """(path, mapping) of every mapping of counts in a usage object, itself first."""
    yield path, {key: count for key, count in value.items() if type(count) is int}
    for key, inner in value.items():
        if isinstance(inner, dict):
            yield from _count_holders(inner, (*path, key))


SUM_LATER_COUNTS = {  # per provider whose usage sums counts straight: a sum's counts after its first, in USAGE_ANSWERS
    "anthropic": ("cache_read_input_tokens", "cache_creation_input_tokens"),
    "gemini": ("toolUsePromptTokenCount", "thoughtsTokenCount"),  # the second sum's, with `empty: 0`
}


def without_later_counts(provider: str) -> Iterator[dict[str, Any]]:
    """The provider's clean answer without each non-empty subset of a sum's later counts (an answer without its
    cache counts, as the parity fixture's Anthropic answers are)."""
    later = SUM_LATER_COUNTS[provider]
    for size in range(1, len(later) + 1):
        for left_out in itertools.combinations(later, size):
            answer = copy.deepcopy(USAGE_ANSWERS[provider])
            for key in left_out:
                del answer[usage_key(answer)][key]
            yield answer


@pytest.mark.parametrize("provider", sorted(SUM_LATER_COUNTS))
def test_a_sum_without_its_later_counts_takes_a_straight_usage_path(provider: str) -> None:
    """A sum's later counts absent (counted 0): the usage is built by the second straight path, never the checked
    one (its `ok` flag never set), and it is the explain steps' usage, in the same key order, with the same notes;
    each such answer with one more count made inconsistent too."""
    outbound = load_rules().get(provider).outbound
    builder = ResponseGen(outbound)
    straight = builder.function().replace("    ok = True", "    ok = 1 / 0")  # the checked path fails if it runs
    exec(compile(straight, "<straight>", "exec"), builder.names)
    for answer in without_later_counts(provider):
        result = builder.names["respond"](outbound, copy.deepcopy(answer), None)
        slow = by_explain_steps(outbound, answer)
        assert list(result.usage.items()) == list(slow.usage.items()), answer
        assert result.to_dict() == slow.to_dict(), answer
        usage = usage_key(answer)
        for key in answer[usage]:
            if type(answer[usage][key]) is int:
                changed = copy.deepcopy(answer)
                changed[usage][key] += 7
                fast, slow = outbound.translate(changed), by_explain_steps(outbound, changed)
                assert fast.to_dict() == slow.to_dict(), changed
        for damaged in damaged_counts(answer):
            assert outbound.translate(copy.deepcopy(damaged)).to_dict() == by_explain_steps(outbound, damaged).to_dict()


@pytest.mark.parametrize("provider", sorted(USAGE_ANSWERS))
def test_clean_counts_take_the_straight_usage_path(provider: str) -> None:
    """A clean usage is built by the straight path: the checked path's `ok` flag is never set."""
    outbound = load_rules().get(provider).outbound
    builder = ResponseGen(outbound)
    straight = builder.function().replace("    ok = True", "    ok = 1 / 0")  # the checked path fails if it runs
    exec(compile(straight, "<straight>", "exec"), builder.names)
    result = builder.names["respond"](outbound, copy.deepcopy(USAGE_ANSWERS[provider]), None)
    assert result.usage == outbound.translate(USAGE_ANSWERS[provider]).usage


@pytest.mark.parametrize("provider", sorted(USAGE_ANSWERS))
def test_the_straight_usage_test_reads_details_counts_where_they_were_read(provider: str) -> None:
    """On the straight usage path(s) the invariant test adds up each details count from the variable it was read
    into (or the provider's object of counts), never looking `u` up again; its verdict is the explain steps'
    (the tests above), and a clean answer with every details count raised past its total is noted alike."""
    outbound = load_rules().get(provider).outbound
    builder = ResponseGen(outbound)
    paths = [builder.usage_straight(outbound.usage_node, "W", absent_terms=absent) for absent in (False, True)]
    bodies = ["\n".join(path[2]) for path in paths if path is not None]
    assert bodies
    for body in bodies:
        assert "u.get(" not in body and "NO_KEYS" not in body, body
    answer = USAGE_ANSWERS[provider]
    usage = usage_key(answer)
    for path, holder in _count_holders(answer[usage], (usage,)):
        if len(path) < 2:
            continue
        for key in holder:
            changed = copy.deepcopy(answer)
            target = changed
            for step in path:
                target = target[step]
            target[key] = 10**9
            fast, slow = outbound.translate(changed), by_explain_steps(outbound, changed)
            assert fast.to_dict() == slow.to_dict(), changed
