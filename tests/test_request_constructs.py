"""The request-side constructs of the rule language, each alone on a made-up provider (`zeta`, written here):
merging by the provider's role, an explicit refusal, presence and emptiness tests, an absent constant, JSON text."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from support.made_up import made_up_provider
from toolnexus import RuleError, TranslationError, load_rules, translate_request

ZETA = made_up_provider(
    "zeta",
    ("  roles:\n", "  merge_same_role: from\n  roles:\n"),
    (
        "tool: {message: {from: human, say: {$content: blocks}}}",
        "tool: {message: {from: human, say: {$content: blocks}}, merge_consecutive: true}",
    ),
    request="""\
request:
  body:
    system:
      $when: system
      empty: false
      then: [{text: {$get: system}}]
    turns: {$get: messages}
    toolbox:
      $when: tools
      present: true
      then: {tools: {$get: tools}, choice: {$get: tool_choice}}
    schema: {$json_text: response_format.json_schema.schema}
    seed: {$absent: true}
  elsewhere:
    model: the URL
""",
    tool_choice="""\
tool_choice:
  auto: {mode: auto}
  none: {$refuse: zeta always lets the model call a tool; leave the tools out instead}
  required: {mode: any}
  function: {mode: one, name: {$get: name}}
""",
)

TOOLS = [{"type": "function", "function": {"name": "f"}}]
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.fixture(scope="module")
def zeta(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("zeta")
    (directory / "zeta.yaml").write_text(ZETA)
    return directory


def _to_zeta(zeta: Path, request: dict[str, Any], **kwargs: Any) -> Any:
    before = copy.deepcopy(request)
    body = translate_request("zeta", {"model": "m", **request}, rules=zeta, **kwargs)
    assert request == before
    return body


def test_a_user_message_after_tool_results_joins_their_turn_with_a_note(zeta: Path) -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [CALL, {**CALL, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "user", "content": "and now?"},
    ]
    body = _to_zeta(zeta, {"messages": messages})
    assert [turn["from"] for turn in body["turns"]] == ["human", "bot", "human"]
    assert body["turns"][2]["say"] == [
        {"answer": "c1", "body": "one"},
        {"answer": "c2", "body": "two"},
        {"t": "and now?"},
    ]
    merged = [(n.kind, n.path) for n in body.notes]
    assert merged == [("rewritten", "messages[4]")]  # the tool results merge as before, without a note


def test_turns_that_cannot_be_joined_without_loss_are_refused_at_the_later_message(tmp_path: Path) -> None:
    (tmp_path / "zeta.yaml").write_text(ZETA.replace("from: human, say", "from: human, tag: {$get: source.name}, say"))
    messages = [{"role": "user", "content": "a", "name": "x"}, {"role": "user", "content": "b", "name": "y"}]
    with pytest.raises(TranslationError) as info:
        translate_request("zeta", {"model": "m", "messages": messages}, rules=tmp_path)
    assert info.value.path == "messages[1]"


def test_merge_same_role_must_name_a_key(tmp_path: Path) -> None:
    (tmp_path / "zeta.yaml").write_text(ZETA.replace("merge_same_role: from", "merge_same_role: [from]"))
    with pytest.raises(RuleError) as info:
        load_rules(tmp_path, reload=True)
    assert (info.value.line, info.value.rule) == (
        ZETA.splitlines().index("  merge_same_role: from") + 1,
        "messages.merge_same_role",
    )


def test_refuse_stops_the_translation_at_tool_choice_with_the_rules_message(zeta: Path) -> None:
    with pytest.raises(TranslationError) as info:
        _to_zeta(zeta, {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "tool_choice": "none"})
    line = ZETA.splitlines().index(
        "  none: {$refuse: zeta always lets the model call a tool; leave the tools out instead}"
    )
    assert info.value.path == "tool_choice"
    assert (
        "leave the tools out" in info.value.message and f"zeta.yaml:{line + 1} tool_choice.none" in info.value.message
    )


def test_present_and_empty_write_a_section_only_when_there_is_something_to_put_in_it(zeta: Path) -> None:
    chat = [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}]
    body = _to_zeta(zeta, {"messages": chat, "tool_choice": "auto"})
    assert "toolbox" not in body and "system" not in body  # no tools: no choice either; an empty prompt: nothing
    body = _to_zeta(zeta, {"messages": chat[1:], "tools": TOOLS}, system="be brief")
    assert body["toolbox"] == {"tools": [{"name": "f"}], "choice": {"mode": "auto"}}
    assert body["system"] == [{"text": "be brief"}]


def test_json_text_and_absent(zeta: Path) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    request = {
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}},
    }
    body = _to_zeta(zeta, request)
    assert body["schema"] == '{"type":"object","properties":{"a":{"type":"string"}}}' and "seed" not in body


def test_a_part_template_written_as_a_list_writes_several_blocks(tmp_path: Path) -> None:
    marked = "    text:\n      - {t: {$get: text}}\n      - {$when: cache_control, present: true, then: {mark: here}}\n"
    (tmp_path / "zeta.yaml").write_text(ZETA.replace("    text: {t: {$get: text}}\n", marked))
    parts = [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "b"}]
    body = translate_request("zeta", {"model": "m", "messages": [{"role": "user", "content": parts}]}, rules=tmp_path)
    assert body["turns"] == [{"from": "human", "say": [{"t": "a"}, {"mark": "here"}, {"t": "b"}]}]
    assert body.notes == ()


# A role written as a list: one message writes several transcript entries (a provider whose transcript is a flat
# list of items). Zeta without merging, its assistant turn written as its text entry, then one entry per call.
SPLIT = ZETA.replace("  merge_same_role: from\n", "").replace(
    "    assistant: {message: {from: bot, say: {$content: blocks}}}\n",
    "    assistant:\n"
    "      message:\n"
    "        - {$when: source.content, empty: false, then: {from: bot, say: {$content: blocks, kinds: [text]}}}\n"
    "        - {$content: blocks, kinds: [tool_call]}\n",
)


def test_a_role_written_as_a_list_writes_several_entries(tmp_path: Path) -> None:
    (tmp_path / "zeta.yaml").write_text(SPLIT)
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "on it", "tool_calls": [CALL, {**CALL, "id": "c2"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "c3"}]},
        {"role": "tool", "tool_call_id": "c3", "content": "three"},
    ]
    body = translate_request("zeta", {"model": "m", "messages": messages}, rules=tmp_path)
    assert body["turns"] == [
        {"from": "human", "say": [{"t": "go"}]},
        {"from": "bot", "say": [{"t": "on it"}]},  # the element that is an entry
        {"call": "c1", "fn": "f", "args": {}},  # the element that is a list: each of its entries
        {"call": "c2", "fn": "f", "args": {}},
        {"from": "human", "say": [{"answer": "c1", "body": "one"}, {"answer": "c2", "body": "two"}]},
        {"call": "c3", "fn": "f", "args": {}},  # no text: the absent element writes nothing
        {"from": "human", "say": [{"answer": "c3", "body": "three"}]},
    ]
    assert body.notes == ()


def test_a_role_written_as_a_list_cannot_be_merged(tmp_path: Path) -> None:
    (tmp_path / "zeta.yaml").write_text(SPLIT.replace("  roles:\n", "  merge_same_role: from\n  roles:\n"))
    with pytest.raises(RuleError) as info:
        load_rules(tmp_path, reload=True)
    assert info.value.rule == "messages.roles.assistant.message"
