"""The request's messages section: the generated function (request_code.py) reads and writes the transcript
in one pass; on an error its explain step, the reader, reads the whole transcript first. The result is the
same as reading everything before writing anything (the body, notes and errors): on every case request, on
each case request damaged one place at a time, and on generated transcripts."""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolnexus
from support.cases import request_cases, request_outcome
from support.damage import DAMAGE, damaged, places
from support.made_up import made_up_provider
from support.strategies import requests
from toolnexus.devtools.conformance import lineage, parents_of
from toolnexus.translate import inbound, request_code
from toolnexus.translate.rulebook import Rulebook, builtin_rulebook, read_rules_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from bench_inputs import round_trip as bench_round_trip
from bench_inputs import tool_declarations, transcript

PROVIDERS = toolnexus.providers()
CASES = request_cases(PROVIDERS)
BENCHED = ("anthropic", "gemini", "openai", "mistral")  # the providers tools/bench.py times against hand-written code


@pytest.fixture(scope="module")
def general() -> Rulebook:
    """The built-in rules compiled with no direct branch: every message is read into the middle form by the
    reader's helpers and written through the part templates (the general branch)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(request_code, "_direct", lambda *args: None)
        return builtin_rulebook.__wrapped__()


def bench_requests() -> list[tuple[str, dict[str, Any]]]:
    """tools/bench.py's transcripts: plain, and as `assistant_message()` hands them back in both styles."""
    plain = transcript(300, tool_declarations())
    styles = ("anthropic", "gemini")
    return [("plain", plain), *((f"round trip {style}", bench_round_trip(plain, style)) for style in styles)]


def explained(provider: str, request: Any, options: dict[str, Any]) -> Any:
    """The outcome when the reader reads every transcript before the generated function writes it."""
    rules = toolnexus.load_rules().get(provider).inbound
    write = rules.messages

    def reader_first(msgs: Any, ctx: Any, ids: Any) -> Any:
        rules._explain_messages(msgs, ids)
        return write(msgs, ctx, ids)

    with pytest.MonkeyPatch.context() as patch:  # the generated function is the rule file's own field (frozen)
        patch.setitem(rules.__dict__, "messages", reader_first)
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
def test_the_two_agree_on_each_case_request_damaged_one_place_at_a_time(provider: str, general: Rulebook) -> None:
    """... and the direct writer's branches agree with the general branch on each (a damaged message leaves the
    direct writer's shapes at its first difference)."""
    count = 0
    for case_provider, _, request, options in CASES:
        if case_provider != provider or not isinstance(request.get("messages"), list):
            continue
        for n, path in enumerate(list(places(request["messages"], ("messages",)))[1:]):
            harm = DAMAGE[(n + count) % len(DAMAGE)]
            broken = damaged(request, path, harm)
            outcome = request_outcome(provider, broken, options)
            assert outcome == explained(provider, broken, options), (path, harm)
            assert outcome == request_outcome(provider, broken, {**options, "rules": general}), (path, harm)
        count += 1
    assert count


@pytest.mark.parametrize(("provider", "name", "request_", "options"), CASES, ids=[f"{c[0]}/{c[1]}" for c in CASES])
def test_the_direct_writer_and_the_general_branch_agree_on_every_case(
    provider: str, name: str, request_: dict[str, Any], options: dict[str, Any], general: Rulebook
) -> None:
    """The same body, notes and error (kind, path, message) with the direct branches as through the middle form."""
    assert request_outcome(provider, request_, options) == request_outcome(
        provider, request_, {**options, "rules": general}
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_direct_writer_and_the_general_branch_agree_on_the_bench_transcripts(
    provider: str, general: Rulebook
) -> None:
    for name, request in bench_requests():
        for options in ({}, {"unknown_fields": "drop"}):
            direct = request_outcome(provider, request, options)
            assert direct == request_outcome(provider, request, {**options, "rules": general}), name


@pytest.mark.parametrize("provider", BENCHED)
def test_the_bench_transcripts_are_written_without_the_middle_form(provider: str) -> None:
    """Every message of the benchmark's transcripts (plain and round trip) is written by a direct branch, but for
    the user messages holding an image (the general branch reads those)."""

    def refuse(name: str) -> Any:
        def helper(*args: Any, **kwargs: Any) -> NoReturn:
            raise AssertionError(f"{name} read a message into the middle form")

        return helper

    def images_only(message: dict[str, Any], *args: Any) -> Any:
        assert any(part.get("type") != "text" for part in message["content"]), message
        return user_parts(message, *args)

    user_parts = request_code._user_parts
    with pytest.MonkeyPatch.context() as patch:
        for name in ("_assistant_parts", "_tool_result", "place"):
            patch.setattr(request_code, name, refuse(name))
        patch.setattr(request_code, "_user_parts", images_only)
        rules = builtin_rulebook.__wrapped__()
    for name, request in bench_requests():
        body = toolnexus.translate_request(provider, copy.deepcopy(request), rules=rules)
        assert dict(body) == dict(toolnexus.translate_request(provider, copy.deepcopy(request))), name


@settings(max_examples=60, deadline=None)
@given(provider=st.sampled_from(PROVIDERS), request=requests(), drop=st.booleans())
def test_the_two_agree_on_generated_transcripts(
    provider: str, request: dict[str, Any], drop: bool, general: Rulebook
) -> None:
    """... and the direct writer agrees with the general branch."""
    options = {"unknown_fields": "drop"} if drop else {}
    outcome = request_outcome(provider, request, options)
    assert outcome == explained(provider, request, options)
    assert outcome == request_outcome(provider, request, {**options, "rules": general})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_explain_shows_the_messages_function_beside_its_rule(provider: str) -> None:
    shown = toolnexus.load_rules(None).get(provider).explain(code=True)
    header = next(line for line in shown.splitlines() if line.strip().startswith("# ") and line.endswith(" messages"))
    # the file that holds the messages section: the provider's own, or for a variant the ancestor's it inherits
    assert any(f"rules/{name}.yaml:" in header for name in lineage(provider, parents_of(toolnexus.load_rules())))
    assert "def messages(msgs, c, ids):" in shown.split(header, 1)[1]


# A made-up provider whose rules use what the direct writer writes: a carried message key its text template
# writes (`mark`) and one it does not (`sig`, settled), a tool call's own key it writes (`tag`), a tool result
# with its own `$content`, an assistant turn led by opaque blocks and merged tool turns.
KAPPA = made_up_provider(
    "kappa",
    (
        "    tool: {message: {from: human, say: {$content: blocks}}}\n",
        "    tool: {message: {from: human, say: {$content: blocks}}, merge_consecutive: true}\n"
        "  carry:\n"
        "    mark: {roles: [user, tool]}\n"
        "    sig: {roles: [assistant], kind: text}\n"
        "  unsupported: {sig: {action: drop}}\n",
    ),
    (
        "assistant: {message: {from: bot, say: {$content: blocks}}}",
        "assistant: {message: {from: bot, say: {$content: blocks, lead: source.lead}}}",
    ),
    ("    text: {t: {$get: text}}\n", "    text: {t: {$get: text}, m: {$get: mark}}\n"),
    (
        "args: {$get: arguments}}",
        "args: {$get: arguments}, tag: {$get: tag}, first: {$when: position, is: 0, then: yes}}",
    ),
    ("body: {$get: content}}", "body: {$content: text_or_blocks}, m: {$get: mark}}"),
)
KAPPA_TRANSCRIPT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hi", "mark": "m1"},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "mark": "m2"},
    {
        "role": "assistant",
        "content": "calling",
        "sig": "s1",
        "lead": [{"kind": "opaque"}],
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}, "tag": "t"},
            {"id": "c2", "type": "function", "function": {"name": "f", "arguments": {"y": 2}}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "one", "mark": "m3"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "t"}, {"type": "text", "text": "wo"}]},
    {
        "role": "assistant",
        "content": None,
        "sig": "orphaned",
        "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c3", "content": "three"},
    {"role": "assistant", "content": "done", "sig": "s2"},
]


def test_a_made_up_providers_messages_are_written_directly_as_through_the_middle_form(tmp_path: Path) -> None:
    request = {"model": "m", "messages": KAPPA_TRANSCRIPT, "tools": [{"type": "function", "function": {"name": "f"}}]}
    (tmp_path / "kappa.yaml").write_text(KAPPA, encoding="utf-8")
    direct = request_outcome("kappa", request, {"rules": read_rules_dir(tmp_path)})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(request_code, "_direct", lambda *args: None)
        general = read_rules_dir(tmp_path)
    assert direct == request_outcome("kappa", request, {"rules": general})
    body, notes = direct
    assert body["turns"][0] == {"from": "human", "say": [{"t": "hi", "m": "m1"}]}
    assert body["turns"][2]["say"][1:] == [
        {"t": "calling"},
        {"call": "c1", "fn": "f", "args": {"x": 1}, "tag": "t", "first": True},
        {"call": "c2", "fn": "f", "args": {"y": 2}},
    ]
    assert {(n.kind, n.path) for n in notes} >= {("dropped", "messages[3].sig"), ("dropped", "messages[6].sig")}
    assert request_outcome("kappa", request, {"rules": written_without_the_middle_form(tmp_path)}) == direct


def test_a_part_template_the_direct_writer_cannot_inline_takes_the_general_branch(tmp_path: Path) -> None:
    """A `$lookup` is a closure over the whole part: its role's messages are read into the middle form."""
    looked_up = KAPPA.replace("fn: {$get: name}", "fn: {$lookup: name, table: {f: F}}")
    (tmp_path / "kappa.yaml").write_text(looked_up, encoding="utf-8")
    rules = read_rules_dir(tmp_path)
    code = dict(rules.get("kappa").inbound.code)[("messages",)]
    assistant = code.split("elif role == 'assistant':", 1)[1].split("elif role == 'tool':", 1)[0]
    assert "d_ok" not in assistant and "d_ok" in code.split("elif role == 'tool':", 1)[1]
    request = {"model": "m", "messages": KAPPA_TRANSCRIPT, "tools": [{"type": "function", "function": {"name": "f"}}]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(request_code, "_direct", lambda *args: None)
        general = read_rules_dir(tmp_path)
    outcome = request_outcome("kappa", request, {"rules": rules})
    assert outcome == request_outcome("kappa", request, {"rules": general})
    assert outcome[0]["turns"][2]["say"][2]["fn"] == "F"


# A transcript of calls and results (a result as a string and as text parts), for a provider whose part
# templates leave the ids unwritten (Ollama: its calls carry no id, a result names its function).
UNWRITTEN_IDS = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": "calling",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": {"y": 2}}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "one"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "t"}, {"type": "text", "text": "wo"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c3", "function": {"name": "f", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c3", "content": "three"},
]


def written_without_the_middle_form(directory: Path | None = None) -> Rulebook:
    """The rules (built-in, or `directory`'s) compiled with the reader's helpers refusing to be called."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("_assistant_parts", "_tool_result", "_user_parts", "place"):
            patch.setattr(request_code, name, lambda *args: pytest.fail("read into the middle form"))
        return builtin_rulebook.__wrapped__() if directory is None else read_rules_dir(directory)


def test_a_field_the_part_template_leaves_unwritten_is_settled_by_the_direct_branch(general: Rulebook) -> None:
    """Ollama's calls and results are written directly, each id its template writes nothing for dropped at the
    part's path as `messages.unsupported` says (`direct_code._gap_lines`), as the general branch drops it."""
    request = {"model": "m", "messages": UNWRITTEN_IDS}
    outcome = request_outcome("ollama", request, {})
    assert outcome == request_outcome("ollama", request, {"rules": general})
    assert request_outcome("ollama", request, {"rules": written_without_the_middle_form()}) == outcome
    body, notes = outcome
    assert body["messages"][2]["tool_calls"] == [
        {"function": {"name": "f", "arguments": {"x": 1}}},
        {"function": {"name": "g", "arguments": {"y": 2}}},
    ]
    assert [n.path for n in notes if n.kind == "dropped"] == [
        "messages[2].tool_calls[0].id",
        "messages[2].tool_calls[1].id",
        "messages[3].tool_call_id",
        "messages[4].tool_call_id",
        "messages[5].tool_calls[0].id",
        "messages[6].tool_call_id",
    ]


@pytest.mark.parametrize("unknown_fields", ["error", "drop"])
def test_an_unwritten_field_no_rule_names_is_settled_by_the_direct_branch(tmp_path: Path, unknown_fields: str) -> None:
    """With no `messages.unsupported` rule for a call's id, the direct branch settles it (`c.settle`) at the
    call's path: refused, or dropped and noted with unknown_fields="drop", as through the middle form."""
    text = (Path(__file__).resolve().parents[1] / "rules" / "ollama.yaml").read_text(encoding="utf-8")
    rule = re.compile(r"^    id: \{action: drop.*\n", re.MULTILINE)
    assert rule.search(text) is not None
    (tmp_path / "ollama.yaml").write_text(rule.sub("", text), encoding="utf-8")
    request = {"model": "m", "messages": UNWRITTEN_IDS}
    options = {"unknown_fields": unknown_fields}
    outcome = request_outcome("ollama", request, {**options, "rules": written_without_the_middle_form(tmp_path)})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(request_code, "_direct", lambda *args: None)
        general = read_rules_dir(tmp_path)
    assert outcome == request_outcome("ollama", request, {**options, "rules": general})
    if unknown_fields == "error":
        assert outcome[:2] == ("TranslationError", "messages[2].tool_calls[0].id")
    else:
        noted = ("dropped", "messages[5].tool_calls[0].id", "not mapped by the ollama rules")
        assert noted in [tuple(n)[:3] for n in outcome[1]]


@pytest.mark.parametrize("general_branch", [False, True])
def test_a_tool_calls_own_key_rides_on_without_its_type(general_branch: bool, general: Rulebook) -> None:
    """`type` may be left out of a tool call; its other keys are still read (written, or settled), both ways."""
    call = {"id": "call_1", "function": {"name": "f", "arguments": "{}"}, "extra_content": {"k": "v"}}
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [call]}],
    }
    rules = general if general_branch else None
    body = toolnexus.translate_request("openai", request, rules=rules)
    assert body["messages"][1]["tool_calls"][0]["extra_content"] == {"k": "v"}
    noted = toolnexus.translate_request("anthropic", request, rules=rules, unknown_fields="drop")
    assert ("dropped", "messages[1].tool_calls[0].extra_content") in {(n.kind, n.path) for n in noted.notes}


# the providers whose rules write a tool call's arguments as JSON text (their template reads `arguments_json`)
ARGUMENTS_AS_TEXT = [p for p in PROVIDERS if builtin_rulebook().get(p).inbound.reads_arguments_json]


def test_the_providers_writing_arguments_as_text_are_read_from_their_rules() -> None:
    assert {"openai", "mistral"} <= set(ARGUMENTS_AS_TEXT) and "anthropic" not in ARGUMENTS_AS_TEXT


def json_texts_of(value: Any, wanted: Any) -> list[str]:
    """Every string in `value` (a body) that is the JSON text of `wanted`, however it is encoded."""
    if isinstance(value, dict | list):
        return [t for v in (value.values() if isinstance(value, dict) else value) for t in json_texts_of(v, wanted)]
    try:
        return [value] if isinstance(value, str) and json.loads(value) == wanted else []
    except ValueError:
        return []


@pytest.mark.parametrize("provider", ARGUMENTS_AS_TEXT)
def test_object_arguments_are_sent_as_the_standard_encoder_writes_them(provider: str) -> None:
    """Object arguments become the JSON text `json.dumps(..., ensure_ascii=False)` writes (the C encoder is built
    once, not per call): non-ASCII kept, every float as Python writes it; a NaN is refused at its path. Wherever
    the provider's body carries them, they are that text, once."""
    arguments = {"q": '東京 é\u2028"\\', "n": [0.1, -0.0, 1e-07, 1.5e300, 2**70, True, None], "o": {"": {}}}
    request = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call1abcd", "type": "function", "function": {"name": "f", "arguments": arguments}}
                ],
            },
            {"role": "tool", "tool_call_id": "call1abcd", "content": "ok"},
        ],
    }
    body = toolnexus.translate_request(provider, request)
    assert json_texts_of(body, arguments) == [json.dumps(arguments, ensure_ascii=False)]
    request["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"x": [1, math.nan]}
    with pytest.raises(toolnexus.TranslationError) as info:
        toolnexus.translate_request(provider, request)
    assert info.value.path == "messages[1].tool_calls[0].function.arguments.x[1]"
