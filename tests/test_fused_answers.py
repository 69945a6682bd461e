"""A pair's fused answer function (`fused_answer_code`) gives today's answer: every answer fixture (the case tables'
responses, the demo replies, the bench's answers and variants of them) in every source format, its body, notes,
result and error compared with today's route (the response function, then the format's answer function), and the
fused route counted where it is taken."""

from __future__ import annotations

import copy
import json
import re
import sys
from base64 import urlsafe_b64encode
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from support.cases import CASES
from support.cli import explain_code
from toolnexus import ToolnexusError, load_rules, translate_response
from toolnexus.errors import Note, ResponseError
from toolnexus.language import jsonsafe, templates
from toolnexus.language.fold import Typed, folded
from toolnexus.language.jsonsafe import texts_read_alike
from toolnexus.language.paths import MISSING
from toolnexus.translate import formats
from toolnexus.translate.format_code import straight_usage_lines, usage_lines
from toolnexus.translate.formats import AnswerBody
from toolnexus.translate.fused_answer_code import held_block, held_inputs
from toolnexus.translate.outbound import ResponseGen

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bench_inputs  # noqa: E402

BENCH = bench_inputs.generated_responses(bench_inputs.tool_declarations())
FORMATS = [name for name in load_rules().formats() if name != "openai"]
PROVIDERS = toolnexus.providers()
Answer = tuple[str, Any, dict[str, Any]]  # (what it is, the answer, translate_response's options)


def _fixtures(provider: str) -> Iterator[Answer]:
    """The provider's answers the fixtures hold: the case tables' responses, the demo replies, the bench's."""
    for case in CASES:
        if case.provider == provider and "response" in case.data:
            options = {k: v for k, v in (case.data.get("options") or {}).items() if k in ("id_map", "requested_model")}
            yield case.name, case.data["response"], options
    demo = ROOT / "fixtures" / "demo" / f"{provider}.json"
    if demo.is_file():
        for n, reply in enumerate(json.loads(demo.read_text())["replies"]):
            yield f"demo reply {n}", reply, {}
    for name, answer in BENCH.get(provider, {}).items():
        yield f"bench {name}", answer, {}


def _changed(answer: Any, change: Callable[[Any], Any]) -> Any:
    """A deep copy of the answer changed in place by `change` (None where its shape has no such place)."""
    made = copy.deepcopy(answer)
    try:
        change(made)
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return made


def _message(answer: Any) -> Any:
    return answer["choices"][0]["message"]


def _calls(answer: Any) -> list[Any]:
    calls = _message(answer)["tool_calls"]
    if not calls:
        raise IndexError("no calls")
    return calls


# Changes any answer may take (where its shape has the place), and the Chat Completions shape's own: each declines
# to today's route or is fused, and either way the answer is today's.
_CHANGES: dict[str, Callable[[Any], Any]] = {
    "no usage": lambda a: a.pop("usage"),
    "usage null": lambda a: a.__setitem__("usage", None),
    "no id": lambda a: a.pop("id"),
    "no model": lambda a: a.pop("model"),
    "extra keys": lambda a: a.update(extra=[1, None], system_fingerprint="fp_1"),
    "a deep null": lambda a: a.__setitem__("logprobs", {"content": None}),
    "a deep inf": lambda a: a.__setitem__("logprobs", {"content": float("inf")}),
    "length": lambda a: a["choices"][0].__setitem__("finish_reason", "length"),
    "unknown finish": lambda a: a["choices"][0].__setitem__("finish_reason", "weird"),
    "no finish": lambda a: a["choices"][0].pop("finish_reason"),
    "content_filter": lambda a: a["choices"][0].__setitem__("finish_reason", "content_filter"),
    "finish tool_calls": lambda a: a["choices"][0].__setitem__("finish_reason", "tool_calls"),
    "no choices": lambda a: a.__setitem__("choices", a["choices"][:0]),
    "lone surrogate": lambda a: _message(a).__setitem__("content", "a \ud800 b"),
    "refusal": lambda a: _message(a).update(content=None, refusal="I can't help with that."),
    "refusal and text": lambda a: _message(a).update(content="Partly.", refusal="Not the rest."),
    "empty refusal": lambda a: _message(a).update(content=None, refusal=""),
    "empty annotations": lambda a: _message(a).__setitem__("annotations", []),
    "no content": lambda a: _message(a).pop("content"),
    "empty content": lambda a: _message(a).__setitem__("content", ""),
    "annotations": lambda a: _message(a).__setitem__("annotations", [{"type": "url_citation", "url_citation": {}}]),
    "message extra_content": lambda a: _message(a).__setitem__("extra_content", {"google": {"thought_signature": "c"}}),
    "usage total off": lambda a: a["usage"].__setitem__("total_tokens", a["usage"]["total_tokens"] + 1),
    "cached > prompt": lambda a: a["usage"].__setitem__("prompt_tokens_details", {"cached_tokens": 10**6}),
    "cache write": lambda a: a["usage"].__setitem__("prompt_tokens_details", {"cache_write_tokens": 1}),
    "negative count": lambda a: a["usage"].__setitem__("completion_tokens", -1),
    "cached and written": lambda a: a["usage"].__setitem__(
        "prompt_tokens_details", {"cached_tokens": 1, "cache_write_tokens": 2}
    ),
    "written > prompt": lambda a: a["usage"].__setitem__("prompt_tokens_details", {"cache_write_tokens": 10**6}),
    "other details": lambda a: a["usage"].update(
        prompt_tokens_details={"audio_tokens": 3}, completion_tokens_details={"reasoning_tokens": 2}
    ),
    "all counts 0": lambda a: a["usage"].update(
        prompt_tokens=0, completion_tokens=0, total_tokens=0, completion_tokens_details={"reasoning_tokens": 0}
    ),
    "total < output": lambda a: a["usage"].__setitem__("total_tokens", 0),
    "NaN in usage": lambda a: a["usage"].__setitem__("prompt_tokens_details", {"audio_tokens": float("nan")}),
    "empty tool_calls": lambda a: _message(a).__setitem__("tool_calls", []),
    "null tool_calls": lambda a: _message(a).__setitem__("tool_calls", None),
    "tool_calls not a list": lambda a: _message(a).__setitem__("tool_calls", {"a": 1}),
    "bad arguments": lambda a: _calls(a)[-1]["function"].__setitem__("arguments", "{not json"),
    "empty arguments": lambda a: _calls(a)[0]["function"].__setitem__("arguments", ""),
    "array arguments": lambda a: _calls(a)[0]["function"].__setitem__("arguments", "[1, 2]"),
    "long number": lambda a: _calls(a)[-1]["function"].__setitem__("arguments", '{"n": 12345678901234567890123}'),
    "escaped surrogate": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"a": "\\ud800"}'),
    "long number after a newline": lambda a: _calls(a)[0]["function"].__setitem__(
        "arguments", '{"n": [\n12345678901234567890123]}'
    ),
    "long negative number": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"n": -9223372036854775809}'),
    "long digits in a string": lambda a: _calls(a)[0]["function"].__setitem__(
        "arguments", '{"id": "12345678901234567890123"}'
    ),
    # where the screen of the texts as they are (`jsonsafe.texts_read_alike`) meets a run of 19 digits
    "long digits after an escaped quote": lambda a: _calls(a)[0]["function"].__setitem__(
        "arguments", '{"id": "a \\"12345678901234567890123\\" b"}'
    ),
    "long digits after an escape": lambda a: _calls(a)[0]["function"].__setitem__(
        "arguments", '{"id": "a\\n12345678901234567890123"}'
    ),
    "long number after a tab": lambda a: _calls(a)[-1]["function"].__setitem__(
        "arguments", '{"n":\t12345678901234567890123}'
    ),
    "long number the whole text": lambda a: _calls(a)[-1]["function"].__setitem__(
        "arguments", "12345678901234567890123"
    ),
    "a BOM, then a long number": lambda a: _calls(a)[0]["function"].__setitem__(
        "arguments", "\ufeff12345678901234567890123"
    ),
    "long exponent": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"x": 1.5e-12345678901234567890}'),
    "long fraction": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"x": 0.12345678901234567890123}'),
    "long digits in a key": lambda a: _calls(a)[0]["function"].__setitem__(
        "arguments", '{"12345678901234567890123": 1}'
    ),
    "NaN arguments": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"x": NaN, "y": Infinity}'),
    "duplicate keys": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"a": 1, "a": 2}'),
    "lone surrogate text": lambda a: _calls(a)[0]["function"].__setitem__("arguments", '{"a": "\ud800"}'),
    "call extra_content": lambda a: _calls(a)[-1].__setitem__("extra_content", {"google": {"thought_signature": "c"}}),
    "call extra_content null": lambda a: _calls(a)[0].__setitem__("extra_content", None),
    "call extra key": lambda a: _calls(a)[0].__setitem__("index", 0),
    "empty call id": lambda a: _calls(a)[-1].__setitem__("id", ""),
    "no name": lambda a: _calls(a)[0]["function"].pop("name"),
    "arguments an object": lambda a: _calls(a)[0]["function"].__setitem__("arguments", {"a": 1}),
    "call not an object": lambda a: _calls(a).__setitem__(0, "x"),
    # Anthropic's shape (content blocks of a kind, calls' input objects, ids restored, a reasoning state sealed)
    "redacted thinking": lambda a: _blocks(a).insert(0, {"type": "redacted_thinking", "data": "EqQ"}),
    "thinking twice": lambda a: _blocks(a).append({"type": "thinking", "thinking": "more", "signature": "s2"}),
    "server tool block": lambda a: _blocks(a).append({"type": "server_tool_use", "id": "srvtoolu_1", "name": "w"}),
    "a citation": lambda a: _blocks(a).append({"type": "text", "text": "t", "citations": [{"type": "x"}]}),
    "unknown block": lambda a: _blocks(a).append({"type": "weird"}),
    "input not an object": lambda a: _uses(a)[0].__setitem__("input", "x"),
    "input empty": lambda a: _uses(a)[-1].__setitem__("input", {}),
    "a tn_ call id": lambda a: _uses(a)[0].__setitem__("id", "tn_" + urlsafe_b64encode(b"call.1").decode()),
    "thinking tokens": lambda a: a["usage"].__setitem__("output_tokens_details", {"thinking_tokens": 5}),
    "stop refusal": lambda a: a.update(stop_reason="refusal", stop_details={"explanation": "no"}),
    "no thinking": lambda a: _blocks(a).remove(_kind(_blocks(a), "thinking")),
    # a thinking block holding more than strings: its seal screened as today (orjson writes a small float otherwise)
    "thinking small float": lambda a: _kind(_blocks(a), "thinking").__setitem__("x", 1e-07),
    "thinking number": lambda a: _kind(_blocks(a), "thinking").__setitem__("signature", 5),
    "thinking null": lambda a: _kind(_blocks(a), "thinking").__setitem__("signature", None),
    "thinking nested": lambda a: _kind(_blocks(a), "thinking").__setitem__("x", {"y": "z"}),
    "thinking surrogate": lambda a: _kind(_blocks(a), "thinking").__setitem__("signature", "a \ud800"),
    "thinking twice, a float": lambda a: _blocks(a).append({"type": "thinking", "thinking": "m", "signature": 0.00001}),
    "redacted thinking, a float": lambda a: _blocks(a).insert(0, {"type": "redacted_thinking", "data": 1e-05}),
    "no thinking, a tn_ call id": lambda a: (
        _blocks(a).remove(_kind(_blocks(a), "thinking")),
        _uses(a)[0].__setitem__("id", "tn_" + urlsafe_b64encode(b"call.1").decode()),
    ),
    "no thinking, a citation": lambda a: (
        _blocks(a).remove(_kind(_blocks(a), "thinking")),
        _blocks(a).append({"type": "text", "text": "t", "citations": [{"type": "x"}]}),
    ),
    "negative input tokens": lambda a: a["usage"].__setitem__("input_tokens", -1),
    "cache read counted": lambda a: a["usage"].__setitem__("cache_read_input_tokens", 7),
    "both cache counts": lambda a: a["usage"].update(cache_read_input_tokens=7, cache_creation_input_tokens=3),
    "cache counts, thinking": lambda a: a["usage"].update(
        cache_read_input_tokens=0, cache_creation_input_tokens=0, output_tokens_details={"thinking_tokens": 5}
    ),
    "all anthropic counts 0": lambda a: a["usage"].update(
        input_tokens=0, output_tokens=0, cache_read_input_tokens=0, cache_creation_input_tokens=0
    ),
    # an answer without its cache counts (the second straight usage path), or with one of them
    "no cache counts": lambda a: _without_cache_counts(a["usage"]),
    "no cache counts, thinking": lambda a: (
        _without_cache_counts(a["usage"]),
        a["usage"].__setitem__("output_tokens_details", {"thinking_tokens": 5}),
    ),
    "no cache counts, thinking > output": lambda a: (
        _without_cache_counts(a["usage"]),
        a["usage"].__setitem__("output_tokens_details", {"thinking_tokens": 10**6}),
    ),
    "only a cache write": lambda a: a["usage"].pop("cache_read_input_tokens"),
    "only a cache read, all 0": lambda a: (
        a["usage"].pop("cache_creation_input_tokens"),
        a["usage"].update(input_tokens=0, output_tokens=0, cache_read_input_tokens=0),
    ),
    # Gemini's shape (parts by key, call ids made, signatures sealed)
    "a call's own id": lambda a: _parts(a)[-1]["functionCall"].__setitem__("id", "fc_1"),
    "a text's signature": lambda a: _parts(a)[1].__setitem__("thoughtSignature", "sig"),
    "no thought": lambda a: _parts(a).pop(0),
    "no thought, grounded": lambda a: (
        _parts(a).pop(0),
        a["candidates"][0].__setitem__("groundingMetadata", {"webSearchQueries": ["q"], "groundingChunks": []}),
    ),
    "gemini total off": lambda a: a["usageMetadata"].__setitem__("totalTokenCount", 10**6),
    "gemini negative count": lambda a: a["usageMetadata"].__setitem__("candidatesTokenCount", -1),
    "gemini cached > prompt": lambda a: a["usageMetadata"].__setitem__("cachedContentTokenCount", 10**6),
    "gemini cached": lambda a: a["usageMetadata"].__setitem__("cachedContentTokenCount", 2),
    "gemini thoughts": lambda a: a["usageMetadata"].__setitem__("thoughtsTokenCount", 4),
    "gemini all 0": lambda a: a["usageMetadata"].update(
        promptTokenCount=0, candidatesTokenCount=0, totalTokenCount=0, thoughtsTokenCount=0
    ),
}


def _without_cache_counts(usage: dict[str, Any]) -> None:
    """Anthropic's usage as an answer without cache counts has it (a KeyError where the usage has none)."""
    usage.pop("cache_read_input_tokens")
    usage.pop("cache_creation_input_tokens")


def _kind(blocks: list[Any], kind: str) -> Any:
    """The first block of a kind (a KeyError where there is none: the change has no place in this answer)."""
    for block in blocks:
        if block.get("type") == kind:
            return block
    raise KeyError(kind)


def _blocks(answer: Any) -> list[Any]:
    return answer["content"]


def _uses(answer: Any) -> list[Any]:
    uses = [block for block in _blocks(answer) if block["type"] == "tool_use"]
    if not uses:
        raise IndexError("no calls")
    return uses


def _parts(answer: Any) -> list[Any]:
    return answer["candidates"][0]["content"]["parts"]


def _answers(provider: str) -> Iterator[Answer]:
    """The provider's fixtures, each also as a body and not an object, with an id map and with a model asked; the
    bench's answers with each change too."""
    for name, answer, options in _fixtures(provider):
        yield name, answer, options
        if not name.startswith("bench"):
            continue
        yield f"{name} as bytes", json.dumps(answer).encode(), options
        yield f"{name} not an object", [answer], options
        yield f"{name} id_map", answer, {"id_map": {"call_x": "orig"}}
        for label, change in _CHANGES.items():
            changed = _changed(answer, change)
            if changed is not None:
                yield f"{name} {label}", changed, {"requested_model": "asked"}


def _outcome(provider: str, answer: Any, source: str, options: dict[str, Any]) -> tuple[Any, bool]:
    """The answer's body (its items, notes and result as a tuple) or its error, and whether it was fused."""
    try:
        body = translate_response(provider, copy.deepcopy(answer), source=source, **options)
    except ToolnexusError as exc:
        return (type(exc).__name__, str(exc), getattr(exc, "path", None)), False
    assert isinstance(body, AnswerBody)
    fused = body.made is None  # (a fused body makes its result when first read)
    result = body.result
    view = (result.to_dict(), result.notes, result.refusal, result.annotations, result.message_extras,
            result.reasoning_content, result.tool_calls, [call.given for call in result.tool_calls])  # fmt: skip
    return (repr(dict(body)), body.notes, repr(view), type(result.raw)), fused


class _Fixed:
    """`uuid` and `time` as the writer reads them (a made answer id, now): one answer, one id and time on either
    route."""

    hex = "0" * 32

    @classmethod
    def uuid4(cls) -> type[_Fixed]:
        return cls

    @staticmethod
    def time() -> float:
        return 1_700_000_000.0


@pytest.mark.parametrize("source", FORMATS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_fused_answer_is_todays(provider: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    book = load_rules()
    fmt = book.format(source)
    monkeypatch.setattr(formats, "uuid", _Fixed)
    monkeypatch.setattr(formats, "time", _Fixed)
    answers = list(_answers(provider))
    fused = []
    expected = {}
    with monkeypatch.context() as today:
        today.setitem(book.fused_answers, source, {})
        for name, answer, options in answers:
            expected[name], _ = _outcome(provider, answer, source, options)
    for name, answer, options in answers:
        got, taken = _outcome(provider, answer, source, options)
        assert got == expected[name], name
        if taken:
            fused.append(name)
    bench = [f"bench {name}" for name in BENCH.get(provider, {})]
    if provider in fmt.fused_answers:
        assert set(bench) <= set(fused) and len(fused) > len(bench), fused
    else:
        assert not fused


def test_the_fused_pairs_and_their_code() -> None:
    """Every provider's answers are fused into Messages and into a Response: a writer that makes ids (each cut where
    it is written), a provider that dispatches by kind, takes arguments as objects, restores or makes call ids or
    seals a reasoning state (its lines, its Ctx's notes first); `explain --source --code` shows each pair's
    function."""
    book = load_rules()
    for source in ("anthropic", "openai-responses"):
        assert set(book.format(source).fused_answers) == set(PROVIDERS)
    shown = explain_code("--source", "anthropic")
    assert "# the whole answer from openai: read and written in one function" in shown


def test_the_fused_answer_is_asked_only_of_a_compiled_format() -> None:
    """A format not compiled yet has no fused function to ask (its name may be wrong, its file broken): the answer's
    own error still comes before the name's, and the first answer of a pair takes today's route."""
    book = load_rules(ROOT / "rules", reload=True)
    assert book.fused_answers == {}
    with pytest.raises(ResponseError):
        translate_response("openai", {"choices": "x"}, source="no-such-format", rules=book)
    with pytest.raises(ResponseError):
        translate_response("openai", {"choices": "x"}, source=["not", "a", "name"], rules=book)  # type: ignore[call-overload]
    body = translate_response("openai", BENCH["openai"]["text"], source="anthropic", rules=book)
    assert body.made is not None and "openai" in book.fused_answers["anthropic"]
    assert translate_response("openai", BENCH["openai"]["text"], source="anthropic", rules=book).made is None


def test_translate_response_takes_the_fused_body_and_runs_todays_route_on_a_decline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fused function is asked after the error-body test, with the answer as the response function takes it (a
    body decoded, its check done: tokens 0); its body is the answer, and its None runs today's route from the start."""
    answer = BENCH["openai"]["text"]
    today = translate_response("openai", answer, source="anthropic")
    asked: list[tuple[Any, ...]] = []
    made = AnswerBody(fused=True)

    def fake(decline: bool) -> Callable[..., AnswerBody | None]:
        def fused(*given: Any) -> AnswerBody | None:
            asked.append(given)
            return None if decline else made

        return fused

    monkeypatch.setitem(load_rules().fused_answers, "anthropic", {"openai": fake(False)})
    assert translate_response("openai", json.dumps(answer), source="anthropic", id_map={"a": "b"}) is made
    assert asked == [(answer, None, {"a": "b"}, 0)]
    with pytest.raises(toolnexus.ProviderError):
        translate_response("openai", {"error": {"message": "no", "type": "server_error"}}, source="anthropic")
    assert len(asked) == 1
    monkeypatch.setitem(load_rules().fused_answers, "anthropic", {"openai": fake(True)})
    declined = translate_response("openai", answer, source="anthropic", requested_model="m")
    assert asked[1] == (answer, "m", None, -1) and declined == today and declined.made is not None


def test_a_message_parses_each_call_where_the_read_holds_it() -> None:
    """Into Messages, each call's input is parsed and its block made where the read holds the call (no inputs read
    after the read), its texts screened once: a long number declines (today's route gives the standard decoder's
    int), a clean answer is fused."""
    code = load_rules().format("anthropic").fused_answers_code["openai"]
    assert "HELD_INPUTS(" not in code and code.count("blocks += call_blocks") == 2
    assert "call_blocks.append(" in code and "TEXTS_READ_ALIKE(call_texts)" in code
    answer = copy.deepcopy(BENCH["openai"]["3 tool calls"])
    assert translate_response("openai", answer, source="anthropic").made is None
    _calls(answer)[0]["function"]["arguments"] = '{"n": [\n12345678901234567890123]}'
    body = translate_response("openai", answer, source="anthropic")
    assert body.made is not None and body["content"][1]["input"] == {"n": [12345678901234567890123]}
    _calls(answer)[0]["function"]["arguments"] = '{"id": "a\\"12345678901234567890123"}'  # in a string: fused
    body = translate_response("openai", answer, source="anthropic")
    assert body.made is None and body["content"][1]["input"] == {"id": 'a"12345678901234567890123'}


def test_a_message_block_reads_the_call_from_the_read_s_own_names() -> None:
    """Each call's block reads a member the call is held as a plain name (its id, its name) from that name, not the
    held tuple; a member held as an expression (the extra content tested a dict) from the tuple."""
    code = load_rules().format("anthropic").fused_answers_code["openai"]
    blocks = [line.strip() for line in code.splitlines() if "call_blocks.append(" in line]
    assert blocks and all("held_call[0]" not in b and "held_call[1]" not in b for b in blocks)
    assert all("'name': cn" in b and "sealed(held_call[3], ci)" in b for b in blocks)
    held = ("ci", "cn", "arguments_json(ca)", "cx if type(cx) is dict else None", "None")
    assert held_block("(e[0], e[2], e[3], e[4], e, i)", held) == (
        "(ci, held_call[2], held_call[3], None, held_call, i)"
    )


@pytest.mark.parametrize(
    ("texts", "alike"),
    [
        (['{"id": "12345678901234567890123"}'], True),  # inside a string: orjson reads it as it is
        (['{"id": "a \\"12345678901234567890123"}'], True),
        (['{"id": "a\\n12345678901234567890123"}'], True),
        (['{"12345678901234567890123": 1}'], True),
        (['{"n": 1234567890123456789}'], False),  # 19 digits: a number that may pass 64 bits
        (['{"n":12345678901234567890123}'], False),
        (['{"n": [\n12345678901234567890123]}'], False),
        (['{"n":\t-12345678901234567890123}'], False),
        (["12345678901234567890123"], False),  # the first text's start
        (['{"a": 1}', "12345678901234567890123"], False),  # a later text's start, after the joining comma
        (['{"x": 1e12345678901234567890}'], False),
        (['{"x": 0.12345678901234567890123}'], False),
        (['{"a": "' + "x" * 300 + '", "n": 12345678901234567890123}'], False),  # long: the sampled screen
        (['{"a": "' + "x" * 300 + '", "id": "12345678901234567890123"}'], True),
        (['{"a": "f\u00e7ade \U0001f680", "n": 1}', '{"b": "\u00fcber"}'], True),
    ],
)
def test_texts_read_alike_screens_the_texts_as_they_are(texts: list[str], alike: bool) -> None:
    """The screen of the arguments orjson read: a run of 19 digits a number may hold (at a text's start, after what
    a number's digits follow) says no; one inside a string (after a quote, a letter or an escape) passes."""
    assert texts_read_alike(texts) is alike


def test_a_held_call_gives_the_object_its_arguments_came_as() -> None:
    """A call held as new_tool_call's arguments gives the writer the object it was given as (Anthropic's `input`,
    not its text read again: the same object, as `call_inputs` gives), else its text read, {} for none."""
    given = {"n": 1.0}
    calls = [("a", "f", '{"n":1.0}', None, given), ("b", "f", '{"m": 2}', None, None), ("c", "f", "", None, None)]
    inputs = held_inputs(calls)
    assert inputs[0] is given and inputs[1:] == [{"m": 2}, {}]
    assert held_inputs([calls[0]])[0] is given and held_inputs([]) == []
    assert held_inputs(calls[1:]) == [{"m": 2}, {}] and held_inputs([calls[0], calls[2]]) == [given, {}]
    assert held_inputs([calls[1], calls[1]]) == [{"m": 2}, {"m": 2}]
    both = held_inputs([calls[0], calls[0]])
    assert both == [given, given] and both[1] is given
    mixed = held_inputs([calls[2], calls[0], calls[1]])
    assert mixed == [{}, given, {"m": 2}] and mixed[1] is given


def _lines_run(provider: str, source: str, answer: Any) -> list[str]:
    """The source lines of the pair's fused function that one translation of the answer runs, in order."""
    fmt = load_rules().format(source)
    code = fmt.fused_answers_code[provider].splitlines()
    run: list[str] = []

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_name != "fused_answer":
            return None
        if event == "line":
            run.append(code[frame.f_lineno - 1])
        return trace

    sys.settrace(trace)
    try:
        translate_response(provider, copy.deepcopy(answer), source=source)
    finally:
        sys.settrace(None)
    return run


@pytest.mark.parametrize("source", FORMATS)
def test_an_answer_whose_read_made_no_pieces_runs_the_writer_folded(source: str) -> None:
    """Where the read made no extras, reasoning or annotations (OpenAI's bench answers), the writer's lines run
    folded over their known values: no line run reads the message's extras or reasoning (each `{}`, `""`), and its
    tests of them are gone; an answer that has extras runs the lines as written."""
    for name, answer in BENCH["openai"].items():
        run = _lines_run("openai", source, answer)
        writer = run[next(n for n, line in enumerate(run) if "answer_id, created =" in line) :]
        folded_reads = [line for line in writer if re.search(r"V_message_extras|V_reasoning_content", line)]
        assert writer and not folded_reads, name
    extras = _changed(BENCH["openai"]["text"], _CHANGES["message extra_content"])
    assert any("V_message_extras" in line for line in _lines_run("openai", source, extras))


@pytest.mark.parametrize("source", FORMATS)
def test_usage_the_read_built_straight_is_written_from_its_counts(source: str) -> None:
    """Where the provider's straight usage path ran (every count clean: the bench's answers), the writer reads the
    counts from the read's own variables (`straight_usage_lines`): no line of the writer run reads the usage object
    the read built; where it did not (a count null), the usage is derived from that object as written."""
    answers = [(provider, name, answer) for provider in ("openai", "anthropic", "gemini", "mistral")
               for name, answer in BENCH[provider].items()]  # fmt: skip
    answers += [("anthropic", f"{name} {label}", _changed(answer, _CHANGES[label]))
                for name, answer in BENCH["anthropic"].items()
                for label in ("no cache counts", "no cache counts, thinking", "only a cache write")]  # fmt: skip
    for provider, name, answer in answers:
        run = _lines_run(provider, source, answer)
        path = 2 if "cache" in name else 1  # (Anthropic's second path: an answer without all its cache counts)
        assert any(line.strip() == f"u_straight = {path}" for line in run), (provider, name)
        writer = run[next(n for n, line in enumerate(run) if "answer_id, created =" in line) :]
        assert not [line for line in writer if re.search(r"u = R_usage|u\.get\(", line)], (provider, name)
    nulled = _changed(BENCH["openai"]["text"], lambda a: a["usage"].__setitem__("completion_tokens", None))
    run = _lines_run("openai", source, nulled)
    assert any("u = R_usage" in line for line in run) and not any(
        re.search(r"u_straight = [1-9]", line) for line in run
    )


def test_the_fold_decides_what_known_values_decide_and_nothing_else() -> None:
    """`fold.folded`: a test of a known value is its branch, a `.get` of a known dict its value, a store nothing
    reads gone; a known container a line may change (a store into it, a call given it) is not known after it, two
    strings are not taken for one object, and a loop's later turn is not folded from its first."""
    missing = {"MISSING": MISSING}
    lines = [
        "x = E.get('k', MISSING) if isinstance(E, dict) else MISSING",
        "if x is not MISSING:",
        "    out.append(x)",
        "if S:",
        "    out.append(S)",
        "y = S is ''",
        "out.append(y)",
    ]
    assert folded(lines, {"E": {}, "S": ""}, missing, {"out"}) == ["y = S is ''", "out.append(y)"]
    changed = ["E['k'] = 1", "if E.get('k', MISSING) is MISSING:", "    out.append(0)"]
    assert folded(changed, {"E": {}}, missing, {"out"}) == changed
    handed = ["F = E", "grow(F)", "if E:", "    out.append(E)"]
    assert folded(handed, {"E": {}}, missing, {"out"}) == handed
    boxed = ["box['e'] = E", "grow(box['e'])", "if not E:", "    out.append(0)"]  # (handed on inside a container)
    assert folded(boxed, {"E": {}}, missing, {"out", "box"}) == boxed
    looped = ["for n in ns:", "    if not E:", "        out.append(n)", "    E['n'] = n"]
    assert folded(looped, {"E": {}}, missing, {"out"}) == looped
    assert folded(["isinstance = 1", "if isinstance(E, dict):", "    out.append(E)"], {"E": {}}, missing, set()) == [
        "isinstance = 1",
        "if isinstance(E, dict):",
        "    out.append(E)",
    ]
    walrus = ["d = ''", "m = f(d or (d := g()), d or (d := g()))", "if (d := h()):", "    out.append(d)"]
    assert folded(walrus, {}, missing, {"out", "f", "g", "h"}) == [
        "d = ''",
        "m = f(d or (d := g()), d or (d := g()))",
        "if (d := h()):",
        "    out.append(d)",
    ]
    keyed = ["x = E.get(L, MISSING)", "y = E.get('k', L)", "out.append(x if y else 0)"]
    assert folded(keyed, {"E": {}, "L": []}, missing, {"out"}) == keyed


@pytest.mark.parametrize("source", ["openai-responses"])
def test_the_folded_writer_tests_what_the_read_leaves_by_type_and_runs_known_rich_paths_at_generation(
    source: str,
) -> None:
    """Where the read made no annotations, the writer's rich path over them (an empty list) ran at generation: no
    line run calls it or tests its result; and the text-or-refusal test (a string or None, `RESULT_TYPES`) is that
    value's truth, no `is_empty` call; an answer with extras runs the lines as written."""
    for name, answer in BENCH["openai"].items():
        run = _lines_run("openai", source, answer)
        writer = run[next(n for n, line in enumerate(run) if "answer_id, created =" in line) :]
        assert writer and not [line for line in writer if re.search(r"V_annotations|is_empty\(", line)], name
    extras = _changed(BENCH["openai"]["text"], _CHANGES["message extra_content"])
    assert any("is_empty(" in line for line in _lines_run("openai", source, extras))


def test_the_fold_runs_pure_functions_and_tests_by_known_types() -> None:
    """`fold.folded`'s `pure` functions run on known values at generation (a fresh display of a JSON result; kept
    where the result shares a container with its argument, or the call raises, or the name is rebound), and a
    `falsity` function of a value known to be of its types is that value's falsity (kept for any other type)."""
    missing = {"MISSING": MISSING}

    def cited(data: Any) -> Any:
        return [dict(x) for x in data["a"]]

    lines = ["v = cited({'a': L})", "if v is MISSING:", "    v = []", "out.append(v)"]
    assert folded(lines, {"L": []}, missing, {"out"}, {"cited": cited}) == ["v = []", "out.append(v)"]
    assert folded(lines, {"L": []}, missing, {"out"}, {"cited": lambda data: data["a"]}) == lines  # (shared)
    assert folded(lines, {"L": []}, missing, {"out"}, {"cited": lambda data: data["b"]}) == lines  # (raises)
    assert folded(lines, {"L": []}, missing, {"out"}, {"cited": lambda data: MISSING}) == [
        "v = MISSING",
        "v = []",
        "out.append(v)",
    ]
    rebound = ["cited = f", *lines]
    assert folded(rebound, {"L": []}, missing, {"out"}, {"cited": cited}) == rebound
    empty = {"is_empty": frozenset({str, type(None)})}
    tested = ["v = T or R", "if is_empty(v) is False:", "    out.append(v)"]
    typed = {"T": Typed(frozenset({str})), "R": Typed(frozenset({str, type(None)}))}
    assert folded(tested, typed, missing, {"out"}, falsity=empty) == ["v = T or R", "if v:", "    out.append(v)"]
    numbered = {**typed, "R": Typed(frozenset({str, int}))}
    assert folded(tested, numbered, missing, {"out"}, falsity=empty) == tested
    assert folded(tested, {}, missing, {"out"}, falsity=empty) == tested


def _straight_maps() -> dict[str, Any]:
    """Each provider's straight usage paths' maps (`ResponseGen.straight_usage`), as a fused function's read makes
    them, by provider and path number."""
    maps = {}
    for name, provider in load_rules().providers.items():
        gen = ResponseGen(provider.outbound)
        gen.straight_mark = "u_straight"
        gen.read()
        maps.update({f"{name} {number}": known for number, known in enumerate(gen.straight_usage, 1)})
    return maps


def _usage_of(known: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The usage the straight path builds from its variables' values (a details mapping kept where not empty)."""
    usage: dict[str, Any] = {}
    for path, (var, kind) in known.items():
        if len(path) == 1 and kind == "sure":
            usage[path[0]] = values[var]
        elif kind == "holder" and values[var] is not MISSING:
            usage[path[0]] = dict(values[var])
        elif len(path) == 2 and values[var] is not MISSING:
            usage.setdefault(path[0], {})[path[1]] = values[var]
    return usage


@pytest.mark.parametrize("source", FORMATS)
def test_the_straight_counts_are_the_ones_derived_from_the_usage(source: str) -> None:
    """`straight_usage_lines` over what each provider's straight path leaves gives every count and note that the
    derivation from the usage that path built gives (counts small and large, absent, 0; differences below 0)."""
    fmt = load_rules().format(source)
    derive, counts = usage_lines(fmt, into_said=False)
    start = f"{' = '.join(counts.values())} = MISSING"
    names = {"MISSING": MISSING, "Note": Note}
    maps = _straight_maps()
    assert {"openai 1", "anthropic 1", "anthropic 2", "gemini 1"} <= set(maps)
    for provider, known in maps.items():
        straight = straight_usage_lines(fmt, known, frozenset(counts.values()))
        assert straight, provider
        variables = sorted({var for var, kind in known.values() if var})
        for n, pick in enumerate([0, 1, 5, 10**6, "absent", "mixed"] * 2):
            values: dict[str, Any] = {}
            for k, var in enumerate(variables):
                kinds = {kind for v, kind in known.values() if v == var}
                count = (n * 7 + k * 13) % 40 if pick == "mixed" else 3 if pick == "absent" else pick
                if "holder" in kinds:
                    values[var] = MISSING if pick == "absent" else {"cached_tokens": count, "audio_tokens": 1}
                elif kinds == {"maybe"} and (pick == "absent" or n % 2):
                    values[var] = MISSING
                else:
                    values[var] = count
            got: dict[str, Any] = {**names, **values, "notes": []}
            exec("\n".join([start, *straight]), got)
            want: dict[str, Any] = {**names, "u": _usage_of(known, values), "notes": []}
            exec("\n".join([start, *derive]), want)
            assert [got[var] for var in counts.values()] == [want[var] for var in counts.values()], (provider, values)
            assert got["notes"] == want["notes"], (provider, values)


@pytest.mark.parametrize("source", FORMATS)
def test_a_writer_note_known_at_generation_is_made_once(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer's note whose kind, path and message are known at generation (a template's default at a path it
    names: OpenAI's answers give no cache-write count; the id made where the answer names none) is one Note made at
    generation, appended as it is on either route (no line run makes one), equal to the note it was: the same object
    in every answer's notes."""
    answer = BENCH["openai"]["3 tool calls"]
    unnamed = _changed(answer, lambda a: a.pop("id"))
    translate_response("openai", answer, source=source)  # (the format compiled: the fused function asked from now)
    for route in ("fused", "today"):
        with monkeypatch.context() as today:
            if route == "today":
                today.setitem(load_rules().fused_answers, source, {})
            first, again = (translate_response("openai", copy.deepcopy(answer), source=source) for _ in range(2))
            made = [translate_response("openai", copy.deepcopy(unnamed), source=source) for _ in range(2)]
        assert first.notes == again.notes and all(a is b for a, b in zip(first.notes, again.notes, strict=True))
        id_notes = [[n for n in body.notes if n.path == "id"] for body in made]
        assert id_notes[0] == [Note("synthesized", "id", "the provider's answer names no id")], route
        assert id_notes[0][0] is id_notes[1][0], route
    if source == "openai-responses":
        assert [note.path for note in first.notes] == ["usage.input_tokens_details.cache_write_tokens"]
    writer = _lines_run("openai", source, answer)
    writer = writer[next(n for n, line in enumerate(writer) if "answer_id, created =" in line) :]
    assert not [line for line in writer if line.strip().startswith("notes.append(Note(")]  # (run: one made)


def test_a_seal_of_extras_holding_only_strings_is_not_screened(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused Response's seal of message extras whose every merged object held only strings (the read tests each
    thinking block's values where it meets it) is orjson's text unscreened (`sealed_texts`), the same seal as
    today's; a block holding anything else clears the flag and the seal is screened as before."""
    code = load_rules().format("openai-responses").fused_answers_code["anthropic"]
    assert "(SEALED_TEXTS if m_texts else sealed)(" in code and "m_texts = True" in code
    screened: list[Any] = []
    real = templates.orjson_bytes
    monkeypatch.setattr(templates, "orjson_bytes", lambda value: screened.append(value) or real(value))
    answer = BENCH["anthropic"]["3 tool calls"]
    body = translate_response("anthropic", copy.deepcopy(answer), source="openai-responses")
    assert body.made is None and screened == []  # fused, and the state written with no screen
    (item,) = [item for item in body["output"] if "encrypted_content" in item]
    block = _kind(answer["content"], "thinking")
    assert templates.unseal(item["encrypted_content"], None, part="state") == {"thinking_blocks": [block]}
    assert item["encrypted_content"] == templates.sealed({"thinking_blocks": [block]}, "")
    screened.clear()
    floated = _changed(answer, lambda a: _kind(_blocks(a), "thinking").__setitem__("x", 1e-07))
    body = translate_response("anthropic", floated, source="openai-responses")
    assert body.made is None and len(screened) == 1
    (item,) = [item for item in body["output"] if "encrypted_content" in item]
    state = templates.unseal(item["encrypted_content"], None, part="state")
    assert state["thinking_blocks"][0]["x"] == 1e-07


@pytest.mark.parametrize(
    "state",
    [
        {"thinking_blocks": [{"type": "thinking", "thinking": 'Grüße ✅ "q"\n\u0001', "signature": "EqQ"}]},
        {"a": "b", "c": {"d": ["e", {"f": "g"}]}},
        {"thinking_blocks": [{"type": "redacted_thinking", "data": "a \ud800 b"}]},  # orjson refuses: today's
        {},
    ],
)
@pytest.mark.parametrize("fast", [True, False], ids=["orjson", "no orjson"])
def test_sealed_texts_is_sealed_for_an_object_of_strings(
    state: dict[str, Any], fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sealed_texts` writes the seal `sealed` writes (today's bytes, so every seal opens as before), also where
    orjson is not installed (jsonsafe's one optional import: `orjson_strings_bytes` gives None)."""
    expected = [templates.sealed(state, text) for text in ("", "call_1")]
    if not fast:
        monkeypatch.setattr(jsonsafe, "orjson", None)
        monkeypatch.setattr(jsonsafe, "_ORJSON_FLOATS", False)  # as its import-time test finds with no orjson
        assert jsonsafe.orjson_strings_bytes(state) is None
    assert [templates.sealed_texts(state, text) for text in ("", "call_1")] == expected
    assert templates.unseal(templates.sealed_texts(state, "x"), None, part="state") == json.loads(json.dumps(state))


@pytest.mark.parametrize("provider", list(BENCH))  # (each answer shape the bench generates)
def test_a_responses_made_id_is_cut_in_the_writers_line(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Response's made ids (the message's; Anthropic's reasoning and state items' too) are hashed and cut in the
    fused function's own lines (`formats.IDS_DIGEST_CODE`, `made_id_code`): no Python function runs for them, one
    hash makes them all, and they are the ids `made_ids` makes, on the fused route and today's."""
    source = "openai-responses"
    answer = BENCH[provider]["3 tool calls"]
    fmt = load_rules().format(source)
    translate_response(provider, answer, source=source)  # (the format compiled: the fused function asked from now)
    fused = fmt.fused_answers[provider]
    hashed: list[bytes] = []
    monkeypatch.setitem(fused.__globals__, "IDS_HASH", lambda data: hashed.append(data) or formats.IDS_HASH(data))
    called: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == formats.__file__:
            called.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        body = translate_response(provider, copy.deepcopy(answer), source=source)
    finally:
        sys.setprofile(None)
    made = fmt.made_ids(body["id"])
    ids = [item["id"] for item in body["output"] if item["type"] != "function_call"]
    assert not {"made_id", "ids_digest", "made_ids"} & set(called), called
    assert ids and set(ids) <= set(made.values()) and hashed == [body["id"].encode()]
    monkeypatch.setitem(load_rules().fused_answers, source, {})  # today's route: the format's writer
    today = translate_response(provider, copy.deepcopy(answer), source=source)
    assert json.dumps(today) == json.dumps(body) and today.notes == body.notes


@pytest.mark.parametrize("provider", list(BENCH))  # (each answer shape the bench generates)
def test_a_responses_objects_are_made_whole_by_one_display(provider: str) -> None:
    """The writer makes the Response and its message item each at its size (`inline_node`'s `ahead`): every key's
    lines first, then one display, two where one key may be absent (the Response's `incomplete_details`, the
    message's `content`), the made id never absent; no line run grows either key by key. The body is today's."""
    source = "openai-responses"
    answer = BENCH[provider]["3 tool calls"]
    run = _lines_run(provider, source, answer)
    grown = [line for line in run if re.match(r"\s*(out|v\d+_\d+)\['(?!output')\w+'\] = ", line)]
    assert not grown, grown
    assert any(re.match(r"\s*(else: |if .*: )?out = \{'id': ", line) for line in run)
    body = translate_response(provider, copy.deepcopy(answer), source=source)
    message = next(item for item in body["output"] if item["type"] == "message")
    assert list(message) == ["type", "id", "role", "status", "content"]
    assert list(body)[:5] == ["id", "object", "created_at", "status", "error"] and list(body)[-1] == "usage"
