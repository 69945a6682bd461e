"""The engine operations behind the round-trip guarantees, each alone, on a made-up provider.

`acme` is a rule file written here, not a shipped provider: it shows each operation
does what the README says whatever the provider (replayed blocks first, a part's own
parts, cached system blocks, id normalization, message extras, usage invariants).
"""

from __future__ import annotations

import copy
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.made_up import made_up_provider
from support.strategies import SETTINGS, anthropic_responses, gemini_responses
from toolnexus import Note, RuleError, TranslationError, load_rules, translate_request, translate_response
from toolnexus.language.ids import MARK, IdRule, compile_pattern, decode, encode
from toolnexus.language.templates import Ctx
from toolnexus.translate.outbound import OPENAI_WITHIN, check_usage, merge_extras
from toolnexus.translate.reader import read_messages
from toolnexus.translate.result import TranslatedToolCall, TranslateResult

ACME = made_up_provider(
    "acme",
    ("    model: {$get: model}\n", ""),
    ("    tool_choice: {$get: tool_choice}\n", "    choice: {$get: tool_choice}\n"),
    messages="""\
messages:
  system: {roles: [system, developer], join: "\\n", blocks: when_cached}
  carry:
    cache_control: {roles: [system, developer, user, tool]}
    seal: {roles: [assistant], kind: text}
  roles:
    user: {message: {from: user, say: {$content: text_or_blocks}}}
    assistant: {message: {from: bot, say: {$content: blocks, lead: source.opaque}}}
    tool: {message: {from: user, say: {$content: blocks}}}
  parts:
    text: {t: {$get: text}, mark: {$get: cache_control}, seal: {$get: seal}}
    image_base64: {img: {$get: data}}
    tool_call: {call: {$get: id}, fn: {$get: name}, args: {$get: arguments}}
    tool_result: {answer: {$get: tool_call_id}, body: {$content: text_or_blocks}}
""",
    tool_call_ids='tool_call_ids: {pattern: "^[A-Za-z0-9_-]+$"}\n',
    response="""\
response:
  items:
    - each: out
      kind: kind
      kinds:
        say: {text: {$get: text}}
        think: {reasoning: {$get: text}, message: {blocks: [{$get: "@"}], seal: {$get: seal}}}
        call: {tool_call: {id: {$get: id}, name: {$get: name}, arguments: {$get: args}}}
  finish_reason: {from: stop, documented: [done], table: {done: stop}, unknown: stop}
  usage:
    prompt_tokens: {$get: usage.in}
    completion_tokens: {$get: usage.out}
    total_tokens: {$sum: [usage.in, usage.out]}
    prompt_tokens_details: {cached_tokens: {$get: usage.hit}, write_tokens: {$get: usage.wrote}}
  usage_within: {prompt_tokens: [prompt_tokens_details.write_tokens]}
""",
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@pytest.fixture(scope="module")
def acme(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("acme")
    (directory / "acme.yaml").write_text(ACME)
    return directory


def call(call_id: str, name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


# ---------------------------------------------------------------- $content lead: opaque blocks first


def test_lead_blocks_go_first_exactly_as_given(acme: Path) -> None:
    opaque = [{"kind": "sealed", "seal": "s1"}, {"kind": "sealed", "seal": "s2", "nested": {"x": [1]}}]
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok", "opaque": opaque, "tool_calls": [call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ]
    }
    before = copy.deepcopy(request)
    body = translate_request("acme", request, rules=acme)
    said = body["turns"][1]["say"]
    assert said[:2] == opaque and said[0] is opaque[0] and said[1] is opaque[1]  # the blocks themselves
    assert said[2:] == [{"t": "ok"}, {"call": "c1", "fn": "f", "args": {}}]
    assert request == before


@pytest.mark.parametrize(
    ("opaque", "path"),
    [("sealed", "messages[1].opaque"), ([{"kind": "sealed"}, "x"], "messages[1].opaque[1]")],
)
def test_lead_refuses_what_is_not_a_list_of_objects(acme: Path, opaque: Any, path: str) -> None:
    request = {
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok", "opaque": opaque}]
    }
    with pytest.raises(TranslationError) as info:
        translate_request("acme", request, rules=acme)
    assert info.value.path == path


def test_a_lead_path_may_pipe_its_blocks_through_a_reshaping(tmp_path: Path) -> None:
    """`lead: PATH | EXPR` sends the blocks reshaped; the message key still counts as read (no unmapped-field
    error) and a value that is not a list of objects is refused at the key, not at the expression."""
    piped = "lead: \"source.opaque | type(@) == 'array' && map(&(type(@) == 'object' && {sealed: @} || @), @) || @\""
    (tmp_path / "acme.yaml").write_text(ACME.replace("lead: source.opaque", piped))
    turns = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok", "opaque": [{"s": 1}]}]
    body = translate_request("acme", {"messages": turns}, rules=tmp_path)
    assert body["turns"][1]["say"] == [{"sealed": {"s": 1}}, {"t": "ok"}]
    for opaque, path in [("sealed", "messages[1].opaque"), ([{"s": 1}, "x"], "messages[1].opaque[1]")]:
        turns[1]["opaque"] = opaque
        with pytest.raises(TranslationError) as info:
            translate_request("acme", {"messages": turns}, rules=tmp_path)
        assert info.value.path == path


def test_a_reshaping_that_writes_refuse_in_place_of_a_block_refuses_it_at_its_index(tmp_path: Path) -> None:
    """`{"$refuse": MESSAGE}` written by a lead's reshaping stops the translation at that block, naming the rule's
    line; a plain (unreshaped) lead sends a caller's block of that shape as given."""
    piped = (
        "lead: \"source.opaque | type(@) == 'array' && map(&(type(seal) == 'string' && {sealed: seal}"
        ' || {\\"$refuse\\": \'a block needs its seal\'}), @) || @"'
    )
    (tmp_path / "acme.yaml").write_text(ACME.replace("lead: source.opaque", piped))
    turns = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok", "opaque": [{"seal": "s"}]}]
    assert translate_request("acme", {"messages": turns}, rules=tmp_path)["turns"][1]["say"][0] == {"sealed": "s"}
    turns[1]["opaque"] = [{"seal": "s"}, {"seal": None}]
    with pytest.raises(TranslationError) as info:
        translate_request("acme", {"messages": turns}, rules=tmp_path)
    assert info.value.path == "messages[1].opaque[1]"
    assert "acme.yaml:" in str(info.value)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "acme.yaml").write_text(ACME)
    turns[1]["opaque"] = [{"$refuse": "mine"}]
    assert translate_request("acme", {"messages": turns}, rules=plain)["turns"][1]["say"][0] == {"$refuse": "mine"}


# ---------------------------------------------------------------- a part writes its own parts


def test_a_tool_result_writes_its_own_parts_and_stays_text_when_it_is_text(acme: Path) -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "see:"}, image]},
            {
                "role": "tool",
                "tool_call_id": "c2",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
        ]
    }
    body = translate_request("acme", request, rules=acme)
    assert body["turns"][2]["say"] == [{"answer": "c1", "body": [{"t": "see:"}, {"img": PNG}]}]
    assert body["turns"][3]["say"] == [{"answer": "c2", "body": "ab"}]


def test_a_tool_result_refuses_parts_other_than_text_and_images(acme: Path) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
            {"role": "tool", "tool_call_id": "c1", "content": [audio]},
        ]
    }
    with pytest.raises(TranslationError) as info:
        translate_request("acme", request, rules=acme)
    assert info.value.path == "messages[2].content[0]"


# ---------------------------------------------------------------- carry: message keys placed on a part


def test_carry_places_a_message_key_on_its_last_part_of_the_kind(acme: Path) -> None:
    assistant = {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    request = {"messages": [{"role": "user", "content": "go"}, {**assistant, "tool_calls": [call("c1")], "seal": "S"}]}
    body = translate_request("acme", request, rules=acme)
    assert body["turns"][1]["say"] == [{"t": "a"}, {"t": "b", "seal": "S"}, {"call": "c1", "fn": "f", "args": {}}]
    assert body.notes == ()


def test_carry_with_no_part_of_the_kind_reports_the_key_dropped(acme: Path) -> None:
    request = {
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call("c1")], "seal": "S"}]
    }
    body = translate_request("acme", request, rules=acme)
    assert [(n.kind, n.path) for n in body.notes] == [("dropped", "messages[1].seal")]
    assert "no text part" in body.notes[0].message


def test_a_key_the_rules_do_not_carry_for_a_role_is_an_ordinary_message_key(acme: Path) -> None:
    with pytest.raises(TranslationError) as info:
        translate_request("acme", {"messages": [{"role": "user", "content": "go", "seal": "S"}]}, rules=acme)
    assert info.value.path == "messages[0].seal"


def test_a_carried_key_given_on_the_part_too_must_agree(acme: Path) -> None:
    content = [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]
    message = {"role": "user", "content": content, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    with pytest.raises(TranslationError) as info:
        translate_request("acme", {"messages": [message]}, rules=acme)
    assert info.value.path == "messages[0].cache_control"
    same = {**message, "cache_control": {"type": "ephemeral"}}
    assert translate_request("acme", {"messages": [same]}, rules=acme)["turns"][0]["say"] == [
        {"t": "a", "mark": {"type": "ephemeral"}}
    ]


def test_a_parts_own_keys_ride_on_it_under_their_own_name(acme: Path) -> None:
    """No key is special to the reader: a part's `seal` reaches the template that reads it, and
    makes a hoisted prompt blocks as cache_control does (the text template writes it)."""
    content = [{"type": "text", "text": "A", "seal": "S"}]
    body = translate_request("acme", {"messages": [{"role": "user", "content": content}]}, rules=acme)
    assert body["turns"][0]["say"] == [{"t": "A", "seal": "S"}]
    hoisted = {"messages": [{"role": "system", "content": content}, {"role": "user", "content": "go"}]}
    assert translate_request("acme", hoisted, rules=acme)["system"] == [{"t": "A", "seal": "S"}]


# ---------------------------------------------------------------- cache_control keeps blocks


def test_a_text_part_the_text_template_writes_more_of_is_never_flattened(acme: Path) -> None:
    mark = {"type": "ephemeral", "ttl": "1h"}
    plain = translate_request(
        "acme", {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]}, rules=acme
    )
    marked = translate_request(
        "acme", {"messages": [{"role": "user", "content": "a", "cache_control": mark}]}, rules=acme
    )
    assert plain["turns"][0]["say"] == "a"
    assert marked["turns"][0]["say"] == [{"t": "a", "mark": mark}]
    assert marked["turns"][0]["say"][0]["mark"] is mark  # passed through as given


def test_system_becomes_blocks_only_when_a_part_is_cached(acme: Path) -> None:
    mark = {"type": "ephemeral"}
    cached = {
        "messages": [
            {
                "role": "system",
                "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B", "cache_control": mark}],
            },
            {"role": "developer", "content": "C"},
            {"role": "user", "content": "go"},
        ]
    }
    assert translate_request("acme", cached, rules=acme)["system"] == [{"t": "A"}, {"t": "B", "mark": mark}, {"t": "C"}]
    plain = copy.deepcopy(cached)
    del plain["messages"][0]["content"][1]["cache_control"]
    assert translate_request("acme", plain, rules=acme)["system"] == "AB\nC"
    overridden = translate_request("acme", cached, rules=acme, system="S")
    assert overridden["system"] == "S"


def test_a_provider_without_cache_markers_drops_each_with_a_note() -> None:
    request = {
        "model": "gemini-2.5-flash",
        "messages": [
            {"role": "system", "content": "S", "cache_control": {"type": "ephemeral"}},
            {"role": "user", "content": "go"},
        ],
    }
    body = translate_request("gemini", request)
    assert body["systemInstruction"] == {"parts": [{"text": "S"}]}
    assert body.notes == (Note("dropped", "messages[0].cache_control", "gemini has no counterpart"),)


# ---------------------------------------------------------------- tool-call ids


def test_ids_the_provider_refuses_are_encoded_alike_in_the_call_and_its_result(acme: Path) -> None:
    request = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("Call.1"), call("ok_2")]},
            {"role": "tool", "tool_call_id": "Call.1", "content": "a"},
            {"role": "tool", "tool_call_id": "ok_2", "content": "b"},
        ]
    }
    body = translate_request("acme", request, rules=acme)
    sent = encode("Call.1")
    assert [block["call"] for block in body["turns"][1]["say"]] == [sent, "ok_2"]
    assert [turn["say"][0]["answer"] for turn in body["turns"][2:]] == [sent, "ok_2"]
    assert [(n.kind, n.path) for n in body.notes] == [
        ("rewritten", "messages[1].tool_calls[0].id"),
        ("rewritten", "messages[2].tool_call_id"),
    ]


def test_an_encoded_id_in_a_response_comes_back_as_the_original(acme: Path) -> None:
    response = {"out": [{"kind": "call", "id": encode("Call.1"), "name": "f", "args": {}}], "stop": "done"}
    result = translate_response("acme", response, rules=acme)
    assert result.tool_calls[0].id == "Call.1"
    assert [n.kind for n in result.notes] == ["rewritten"]


RULE = IdRule(compile_pattern("^[a-zA-Z0-9_-]+$"))


@SETTINGS
@given(st.text(max_size=40))
def test_normalize_is_reversible_stable_and_fits_the_pattern(call_id: str) -> None:
    sent = RULE.normalize(call_id)
    assert RULE.accepts(sent) and RULE.normalize(call_id) == sent
    assert RULE.restore(sent) == call_id


@SETTINGS
@given(st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=40))
def test_ids_the_provider_accepts_are_untouched_unless_they_look_encoded(call_id: str) -> None:
    assert RULE.normalize(call_id) == call_id or call_id.startswith(MARK)


@SETTINGS
@given(st.lists(st.text(max_size=20), min_size=2, max_size=6, unique=True))
def test_different_ids_never_collide(ids: list[str]) -> None:
    assert len({RULE.normalize(i) for i in ids}) == len(ids)


def test_decode_refuses_what_encode_never_made() -> None:
    assert decode("toolu_01") is None
    assert decode(MARK + "!!!") is None
    assert decode(MARK + "eB") is None  # decodes to "x", but encode("x") is tn_eA: not one of encode's results
    assert RULE.restore("tn_x") == "tn_x"


def test_a_pattern_that_cannot_hold_encoded_ids_is_a_rule_error(tmp_path: Path) -> None:
    from toolnexus import RuleError

    (tmp_path / "acme.yaml").write_text(ACME.replace('"^[A-Za-z0-9_-]+$"', '"^[a-z]+$"'))
    with pytest.raises(RuleError) as info:
        load_rules(tmp_path)
    assert info.value.rule == "tool_call_ids.pattern"


# ---------------------------------------------------------------- reader: where a call stands


def test_calls_after_the_last_user_message_are_the_current_turn() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "tool", "tool_call_id": "c2", "content": "x"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": None, "tool_calls": [call("c3"), call("c4")]},
    ]
    turns, _ = read_messages(messages, frozenset({"system"}), "test")
    calls = [p for turn in turns for p in turn["parts"] if p["kind"] == "tool_call"]
    assert [(p["id"], p["position"], p.get("current_turn", False)) for p in calls] == [
        ("c1", 0, False),
        ("c2", 1, False),
        ("c3", 0, True),
        ("c4", 1, True),
    ]


# ---------------------------------------------------------------- response: reasoning and message extras


def test_reasoning_concatenates_and_message_pieces_merge(acme: Path) -> None:
    response = {
        "out": [
            {"kind": "think", "text": "one ", "seal": "s"},
            {"kind": "say", "text": "hi"},
            {"kind": "think", "text": "two", "seal": "s"},
        ],
        "stop": "done",
        "usage": {"in": 3, "out": 4},
    }
    result = translate_response("acme", response, rules=acme)
    assert result.reasoning_content == "one two"
    assert result.message_extras == {"blocks": response["out"][0:3:2], "seal": "s"}
    message = result.assistant_message()
    assert message == {"role": "assistant", "content": "hi", "reasoning_content": "one two", **result.message_extras}
    message["blocks"][0]["text"] = "changed"  # the caller's copy, not the response
    assert response["out"][0]["text"] == "one "


def test_merge_extras_keeps_the_first_of_two_different_values_with_a_note() -> None:
    ctx = Ctx("test", outbound=True)
    into: dict[str, Any] = {}
    given = {"l": [1], "m": {"k": "a"}}
    for n, extras in enumerate([given, {"l": [2], "m": {"k": "a", "j": 1}}, {"m": {"k": "b"}}]):
        ctx.path = f"parts[{n}]"  # the element being read
        merge_extras(into, extras, "", ctx)
    assert into == {"l": [1, 2], "m": {"k": "a", "j": 1}}
    assert given == {"l": [1], "m": {"k": "a"}}  # never extended in place
    assert ctx.notes == [Note("dropped", "parts[2]", "a second m.k for the assistant message; the first is kept")]


def test_assistant_message_has_the_openai_shape_without_extras() -> None:
    plain = TranslateResult(text="", tool_calls=[], finish_reason="stop", usage={}, model="m")
    assert plain.assistant_message() == {"role": "assistant", "content": None}
    signed = TranslatedToolCall("c1", "f", "{}", extra_content={"google": {"thought_signature": "s"}})
    with_call = TranslateResult(text="t", tool_calls=[signed], finish_reason="tool_calls", usage={}, model="m")
    assert with_call.assistant_message()["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"},
         "extra_content": {"google": {"thought_signature": "s"}}}
    ]  # fmt: skip


# ---------------------------------------------------------------- usage invariants

CACHE_WRITES = {**OPENAI_WITHIN, "prompt_tokens": (("prompt_tokens_details", "cached_tokens"),
                                                   ("prompt_tokens_details", "cache_write_tokens"))}  # fmt: skip


@pytest.mark.parametrize(
    ("usage", "path"),
    [
        ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 14}, "usage.total_tokens"),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 3}},
            "usage.prompt_tokens",
        ),
        ({"prompt_tokens_details": {"cached_tokens": 1}}, "usage.prompt_tokens"),
        ({"completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 6}}, "usage.completion_tokens"),
    ],
)
def test_check_usage_notes_each_broken_invariant(usage: dict[str, Any], path: str) -> None:
    assert [(n.kind, n.path) for n in check_usage(usage, CACHE_WRITES)] == [("inconsistent", path)]


@pytest.mark.parametrize(
    "usage",
    [
        {},
        {"prompt_tokens": 10},
        {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 7, "cache_write_tokens": 3}},
        {"completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 5}},
    ],
)
def test_check_usage_accepts_consistent_and_partial_usage(usage: dict[str, Any]) -> None:
    assert check_usage(usage, CACHE_WRITES) == []


def test_a_count_outside_openai_is_checked_only_where_a_rule_file_says_a_total_includes_it() -> None:
    usage = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 3}}
    assert check_usage(usage) == []  # OpenAI's own usage knows no cache writes


@pytest.mark.parametrize(("wrote", "noted"), [(2, []), (3, [("inconsistent", "usage.prompt_tokens")])])
def test_usage_within_in_a_rule_file_holds_its_total_to_the_counts_it_names(
    acme: Path, wrote: int, noted: list[tuple[str, str]]
) -> None:
    response = {"out": [], "stop": "done", "usage": {"in": 10, "out": 1, "hit": 8, "wrote": wrote}}
    result = translate_response("acme", response, rules=acme)
    assert result.usage["prompt_tokens_details"] == {"cached_tokens": 8, "write_tokens": wrote}
    assert [(n.kind, n.path) for n in result.notes] == noted


def test_usage_within_naming_a_count_the_usage_does_not_write_is_a_located_rule_error(tmp_path: Path) -> None:
    (tmp_path / "acme.yaml").write_text(
        ACME.replace("[prompt_tokens_details.write_tokens]", "[prompt_tokens_details.wrote]")
    )
    with pytest.raises(RuleError) as info:
        load_rules(tmp_path, reload=True)
    assert info.value.file is not None and info.value.file.endswith("acme.yaml")
    assert info.value.line == ACME.splitlines().index(next(x for x in ACME.splitlines() if "usage_within" in x)) + 1


# ---------------------------------------------------------------- generated answers, echoed back


def _echo(result: TranslateResult, question: str = "go") -> list[dict[str, Any]]:
    """A user question, the answer as assistant_message() gives it, and a result for each tool call."""
    answers = [{"role": "tool", "tool_call_id": c.id, "content": f"result of {c.name}"} for c in result.tool_calls]
    return [{"role": "user", "content": question}, result.assistant_message(), *answers]


@SETTINGS
@given(response=anthropic_responses())
def test_anthropic_thinking_and_tool_use_come_back_first_and_unchanged(response: dict[str, Any]) -> None:
    result = translate_response("anthropic", response)
    if not result.tool_calls:
        return  # reasoning must survive into the tool-result turn; an answer without calls ends the loop
    body = translate_request("anthropic", {"model": "m", "messages": _echo(result)})
    sent = body["messages"][1]["content"]
    blocks = response["content"]
    thinking = [b for b in blocks if b["type"] == "thinking"]
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    assert sent[: len(thinking)] == thinking, "every thinking block, first, in order, unchanged"
    assert sent[len(thinking) :] == [{"type": "text", "text": text}] * bool(text) + [
        b for b in blocks if b["type"] == "tool_use"
    ]


@SETTINGS
@given(response=gemini_responses())
def test_gemini_signatures_come_back_on_their_calls(response: dict[str, Any]) -> None:
    result = translate_response("gemini", response)
    if not result.tool_calls:
        return
    body = translate_request("gemini", {"model": "m", "messages": _echo(result)})
    issued = [p for p in response["candidates"][0]["content"]["parts"] if "functionCall" in p]
    sent_calls = [p for p in body["contents"][1]["parts"] if "functionCall" in p]
    assert len(sent_calls) == len(issued)
    for position, (sent, original) in enumerate(zip(sent_calls, issued, strict=True)):
        expected = original.get("thoughtSignature", "skip_thought_signature_validator" if position == 0 else None)
        assert sent.get("thoughtSignature") == expected, (position, sent, original)
