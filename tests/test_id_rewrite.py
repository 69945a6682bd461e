"""`tool_call_ids.rewrite` alone, on a made-up provider: ids the pattern refuses become a hash of themselves in
the rule's alphabet and length, identically in a call and its result, never colliding inside a request, and
come back as the caller's ids through the request's id map (pure functions, the stream translator, the client).
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.strategies import SETTINGS
from toolnexus import RuleError, TranslationError, create_client, load_rules, translate_request, translate_response
from toolnexus.language.ids import IdRule, Rewrite, compile_pattern, encode, expand_alphabet

NINE = "^[a-zA-Z0-9]{9}$"
RULE_FILE = """\
provider: nine
endpoint: {{path: /chat, auth_header: x-key, api_key_env: [NINE_KEY], base_url: "http://127.0.0.1:9"}}
request:
  body:
    model: {{$get: model}}
    system: {{$get: system}}
    turns: {{$get: messages}}
    tools: {{$get: tools}}
    choice: {{$get: tool_choice}}
messages:
  system: {{roles: [system, developer], join: "\\n"}}
  roles:
    user: {{message: {{from: user, say: {{$content: text_or_blocks}}}}}}
    assistant: {{message: {{from: bot, say: {{$content: blocks}}}}}}
    tool: {{message: {{from: tool, say: {{$content: blocks}}}}}}
  parts:
    text: {{t: {{$get: text}}}}
    tool_call: {{call: {{$get: id}}, fn: {{$get: name}}, args: {{$get: arguments}}}}
    tool_result: {{answer: {{$get: tool_call_id}}, body: {{$content: text_or_blocks}}}}
tool_call_ids:
  pattern: "{pattern}"
  rewrite:
{rewrite}
tools: {{declaration: {{name: {{$get: name}}}}}}
tool_choice: {{auto: {{mode: auto}}, none: {{mode: none}}, required: {{mode: any}}, function: {{mode: one}}}}
response:
  items:
    - each: out
      kind: kind
      kinds:
        say: {{text: {{$get: text}}}}
        call: {{tool_call: {{id: {{$get: id}}, name: {{$get: name}}, arguments: {{$get: args}}}}}}
  finish_reason: {{from: stop, documented: [done], table: {{done: stop}}, unknown: stop}}
  usage:
    prompt_tokens: {{$get: usage.in}}
    completion_tokens: {{$get: usage.out}}
    total_tokens: {{$sum: [usage.in, usage.out]}}
"""
REWRITE = "    alphabet: a-zA-Z0-9\n    length: 9\n"


def rule_file(directory: Path, pattern: str = NINE, rewrite: str = REWRITE) -> Path:
    (directory / "nine.yaml").write_text(RULE_FILE.format(pattern=pattern, rewrite=rewrite))
    return directory


@pytest.fixture(scope="module")
def nine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rule_file(tmp_path_factory.mktemp("nine"))


def call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def transcript(ids: list[str]) -> list[dict[str, Any]]:
    """One user turn, one assistant turn calling each id, and each call's result."""
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]},
        *({"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids),
    ]


def sent_ids(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the ids the calls were sent with, the ids the results were sent with)."""
    calls = [block["call"] for block in body["turns"][1]["say"]]
    return calls, [turn["say"][0]["answer"] for turn in body["turns"][2:]]


RULE = IdRule(compile_pattern(NINE), Rewrite(expand_alphabet("a-zA-Z0-9") or "", 9))
IDS = st.lists(st.text(min_size=1, max_size=24), min_size=1, max_size=8, unique=True)


# ---------------------------------------------------------------- the rewrite, property by property


@SETTINGS
@given(IDS)
def test_the_rewrite_fits_the_pattern_and_keeps_ids_apart_and_is_stable(ids: list[str]) -> None:
    map_id, changed = RULE.for_request(transcript(ids), "nine")
    sent = [map_id(i) for i in ids]
    assert all(RULE.accepts(s) for s in sent)
    assert len(set(sent)) == len(ids)  # injective inside the request
    assert [i for i in ids if RULE.accepts(i)] == [i for i, s in zip(ids, sent, strict=True) if s == i]
    assert {s: i for i, s in zip(ids, sent, strict=True) if s != i} == changed
    again, _ = RULE.for_request(copy.deepcopy(transcript(ids)), "nine")
    assert [again(i) for i in ids] == sent  # the same transcript, the same ids, in another request


@SETTINGS
@given(IDS, st.data())
def test_a_call_and_its_result_pair_up_and_the_answer_restores_the_callers_id(
    nine: Path, ids: list[str], data: st.DataObject
) -> None:
    body = translate_request("nine", {"messages": transcript(ids)}, rules=nine)
    calls, results = sent_ids(body)
    assert calls == results and all(RULE.accepts(s) for s in calls)
    echoed = data.draw(st.sampled_from(calls))
    response = {"out": [{"kind": "call", "id": echoed, "name": "f", "args": {}}], "stop": "done"}
    result = translate_response("nine", response, rules=nine, id_map=body.id_map)
    assert result.tool_calls[0].id == ids[calls.index(echoed)]


def test_ids_that_fit_are_sent_unchanged_and_others_are_noted(nine: Path) -> None:
    request = {"messages": transcript(["abcDEF123", "call_abc"])}
    before = copy.deepcopy(request)
    body = translate_request("nine", request, rules=nine)
    calls, _ = sent_ids(body)
    assert calls[0] == "abcDEF123" and re.fullmatch(NINE, calls[1])
    assert [(n.kind, n.path) for n in body.notes] == [
        ("rewritten", "messages[1].tool_calls[1].id"),
        ("rewritten", "messages[3].tool_call_id"),
    ]
    assert dict(body.id_map) == {calls[1]: "call_abc"}
    assert request == before  # the caller's input untouched


def test_without_the_request_map_a_rewritten_id_stays_as_sent(nine: Path) -> None:
    response = {"out": [{"kind": "call", "id": "Zz9Zz9Zz9", "name": "f", "args": {}}], "stop": "done"}
    assert translate_response("nine", response, rules=nine).tool_calls[0].id == "Zz9Zz9Zz9"
    restored = translate_response("nine", response, rules=nine, id_map={"Zz9Zz9Zz9": "call_1"})
    assert restored.tool_calls[0].id == "call_1"
    assert [(n.kind, n.path) for n in restored.notes] == [("rewritten", "out[0]")]


def test_a_rewrite_never_takes_an_id_sent_unchanged() -> None:
    """A tiny alphabet and length force collisions: the rewrite rehashes past the ids that fit."""
    tiny = IdRule(compile_pattern("^[ab]{2}$"), Rewrite("ab", 2))
    derived = tiny.rewrite.derive("x", 0) if tiny.rewrite else ""
    others = sorted({"aa", "ab", "ba", "bb"} - {derived})[:2]
    map_id, _ = tiny.for_request(transcript([derived, "x", *others]), "tiny")
    sent = [map_id(i) for i in [derived, "x", *others]]
    assert sent[0] == derived and sent[2:] == others  # fitting ids unchanged
    assert sent[1] not in {derived, *others} and len(set(sent)) == 4


def test_collisions_error_refuses_at_the_colliding_id() -> None:
    tiny = IdRule(compile_pattern("^[ab]{2}$"), Rewrite("ab", 2, "error"))
    derived = tiny.rewrite.derive("x", 0) if tiny.rewrite else ""
    with pytest.raises(TranslationError) as info:
        tiny.for_request(transcript([derived, "x"]), "tiny")
    assert info.value.path == "messages[1].tool_calls[1].id"


def test_a_request_with_more_ids_than_the_rewrite_can_hold_is_refused_at_the_id() -> None:
    tiny = IdRule(compile_pattern("^[ab]$"), Rewrite("ab", 1))
    with pytest.raises(TranslationError) as info:
        tiny.for_request(transcript(["x", "y", "z"]), "tiny")
    assert info.value.path == "messages[1].tool_calls[2].id"


def test_the_alphabet_takes_ranges_and_plain_characters() -> None:
    assert expand_alphabet("a-c_-") == "abc_-"
    assert expand_alphabet("0-9") == "0123456789"
    assert expand_alphabet("z-a") is None


# ---------------------------------------------------------------- refused at load, at the line


@pytest.mark.parametrize(
    ("pattern", "rewrite", "rule"),
    [
        (NINE, "    alphabet: a-z_\n    length: 9\n", "tool_call_ids.rewrite"),  # _ does not fit
        (NINE, "    alphabet: a-zA-Z0-9\n    length: 8\n", "tool_call_ids.rewrite"),  # too short
        (NINE, "    alphabet: z-a\n    length: 9\n", "tool_call_ids.rewrite.alphabet"),
        (NINE, "    alphabet: aaa\n    length: 9\n", "tool_call_ids.rewrite.alphabet"),
        (NINE, "    alphabet: a-z\n    length: 0\n", "tool_call_ids.rewrite.length"),
        (NINE, "    alphabet: a-z\n    length: 9\n    collisions: ignore\n", "tool_call_ids.rewrite.collisions"),
        (NINE, "    alphabet: a-z\n", "tool_call_ids.rewrite"),
    ],
)
def test_a_rewrite_that_cannot_fit_the_pattern_is_refused_at_its_line(
    tmp_path: Path, pattern: str, rewrite: str, rule: str
) -> None:
    with pytest.raises(RuleError) as info:
        load_rules(rule_file(tmp_path, pattern, rewrite))
    assert info.value.rule == rule
    lines = (tmp_path / "nine.yaml").read_text().splitlines()
    key = rule.rsplit(".", 1)[-1]
    assert info.value.line is not None and lines[info.value.line - 1].strip().startswith(key + ":")


def test_a_pattern_refusing_the_tn_encoding_loads_with_a_rewrite(nine: Path) -> None:
    assert load_rules(nine).get("nine").inbound.tool_call_ids == RULE


# ---------------------------------------------------------------- the client keeps each request's map


def test_the_client_restores_an_id_its_request_sent_rewritten(nine: Path) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        echoed = body["turns"][1]["say"][0]["call"]
        answer = {"out": [{"kind": "call", "id": echoed, "name": "f", "args": {}}], "stop": "done"}
        return httpx.Response(200, json={**answer, "usage": {"in": 1, "out": 1}})

    async def main() -> str:
        async with create_client(style="nine", model="m", api_key="k", rules=nine, max_retries=0,
                                 transport=httpx.MockTransport(handler)) as client:  # fmt: skip
            result = await client.translate(transcript(["call_0"]))
        return result.tool_calls[0].id

    assert asyncio.run(main()) == "call_0"
    assert re.fullmatch(NINE, seen[0]["turns"][1]["say"][0]["call"])


# ---------------------------------------------------------------- $content: one (a tool message that is its result)


def test_content_one_writes_the_messages_one_part_as_the_whole_message(tmp_path: Path) -> None:
    """`$content: one` lets a tool message be its tool_result part, so the part's mapped id is what is sent."""
    text = RULE_FILE.format(pattern=NINE, rewrite=REWRITE).replace(
        "tool: {message: {from: tool, say: {$content: blocks}}}", "tool: {message: {$content: one}}"
    )
    (tmp_path / "nine.yaml").write_text(text)
    body = translate_request("nine", {"messages": transcript(["call_a"])}, rules=tmp_path)
    sent = body["turns"][1]["say"][0]["call"]
    assert body["turns"][2] == {"answer": sent, "body": "ok"}
    parts = text.replace(
        "user: {message: {from: user, say: {$content: text_or_blocks}}}", "user: {message: {$content: one}}"
    )
    (tmp_path / "nine.yaml").write_text(parts)
    two = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    with pytest.raises(TranslationError) as info:  # a message of two parts is not one part
        translate_request("nine", {"messages": two}, rules=load_rules(tmp_path, reload=True))
    assert info.value.path == "messages[0]"


def test_an_id_first_met_in_a_tool_result_is_refused_at_its_tool_call_id() -> None:
    """The transcript's ids keep where they were met; the path is written only for the error."""
    tiny = IdRule(compile_pattern("^[ab]$"), Rewrite("ab", 1))
    results = [{"role": "tool", "tool_call_id": name, "content": "r"} for name in ("x", "y", "z")]
    with pytest.raises(TranslationError) as info:
        tiny.for_request(results, "tiny")
    assert info.value.path == "messages[2].tool_call_id"


def _messages_answer(call_id: str) -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": "f", "input": {}}],
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }  # fmt: skip


def _converse_answer(call_id: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": call_id, "name": "f", "input": {}}}
        ]}},
        "stopReason": "tool_use", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    }  # fmt: skip


# An answer holding one call of the given id, in each id-encoding provider's shape.
ANSWER = {"anthropic": _messages_answer, "vertex-anthropic": _messages_answer, "bedrock": _converse_answer}
CALL_AND_RESULT = [
    {"role": "user", "content": "go"},
    {"role": "assistant", "tool_calls": [
        {"id": "é/1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]},
    {"role": "tool", "tool_call_id": "é/1", "content": "done"},
]  # fmt: skip


ENCODING = sorted(
    name
    for name, provider in load_rules().providers.items()
    if provider.outbound.tool_call_ids is not None and provider.outbound.tool_call_ids.rewrite is None
)


@pytest.mark.parametrize("provider", ENCODING)
def test_an_answers_call_id_is_looked_up_only_where_it_can_come_back_changed(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ids are encoded one by one, an answer's call id changes only through the request's map or as an
    encoded id: any other is kept as it is with no lookup per call; those two are restored and noted as before."""
    looked_up: list[str] = []
    restore = IdRule.restore

    def counted(rule: IdRule, sent: str, id_map: Any = None) -> str:
        looked_up.append(sent)
        return restore(rule, sent) if id_map is None else restore(rule, sent, id_map)

    monkeypatch.setattr(IdRule, "restore", counted)
    sent = translate_request(provider, {"model": "m", "messages": CALL_AND_RESULT})
    encoded = encode("é/1")
    assert encoded in json.dumps(sent) and not looked_up  # (sent encoded, as the answer's call id comes back)
    for answer_id, id_map, caller_id in (
        ("toolu_plain", None, "toolu_plain"),
        (encoded, None, "é/1"),
        ("toolu_mapped", {"toolu_mapped": "given"}, "given"),
    ):
        looked_up.clear()
        result = translate_response(provider, ANSWER[provider](answer_id), id_map=id_map)
        assert [call.id for call in result.tool_calls] == [caller_id]
        assert looked_up == ([] if answer_id == "toolu_plain" else [answer_id])
        assert any(n.kind == "rewritten" for n in result.notes) is (caller_id != answer_id)
