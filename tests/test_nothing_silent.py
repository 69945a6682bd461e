"""Nothing the caller gives is lost unreported, whatever the rule file's templates read.

A user rule directory (a copy of the Anthropic rules with one template narrowed) writes
less than the input carries: a part kind its `$content` leaves out, a field a part
template never reads, a tool result's images next to its text. Each such field is
settled like an unmapped message key: by the rule file's `messages.unsupported` entry
(drop with a note, or refuse), else by `unknown_fields` (refused by default, a
`dropped` note with "drop"). The built-in rules' behaviour on the same inputs is in
the case tables (fixtures/cases/tool-result-image-detail-and-error.yaml).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import toolnexus
from support.variants import with_variants
from toolnexus import TranslationError
from toolnexus.devtools.conformance import lineage, parents_of

RULES = Path(__file__).resolve().parents[1] / "rules"

CALL = {"id": "call_1", "type": "function", "function": {"name": "shot", "arguments": '{"page": 2}'}}
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
PNG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
ASKED: dict[str, Any] = {"role": "user", "content": "Take a screenshot."}
CALLED: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [CALL]}

# role -> (edits narrowing one template of rules/anthropic.yaml, the messages, the fields left over: (name, path)).
CASES: dict[str, tuple[tuple[tuple[str, str], ...], list[dict[str, Any]], list[tuple[str, str]]]] = {
    "user": (
        (
            (
                "message: {role: user, content: {$content: text_or_blocks}}",
                "message: {role: user, content: {$content: blocks, kinds: [text]}}",
            ),
        ),
        [{"role": "user", "content": [{"type": "text", "text": "Compare:"}, IMAGE, PNG]}],
        [("image_url", "messages[0].content[1]"), ("image_base64", "messages[0].content[2]")],
    ),
    "assistant": (
        (
            (
                "tool_call: {type: tool_use, id: {$get: id}, name: {$get: name}, input: {$get: arguments}}",
                "tool_call: {type: tool_use, id: {$get: id}, name: {$get: name}}",
            ),
        ),
        [ASKED, CALLED],
        [("arguments", "messages[1].tool_calls[0].function.arguments")],
    ),
    "tool": (
        (  # the result's text only: its images and is_error have no place
            ("content: {$content: text_or_blocks}   # text stays", "content: {$get: content}   # text stays"),
            ("      is_error: {$when: is_error, is: true, then: true}\n", ""),
        ),
        [
            ASKED,
            CALLED,
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "is_error": True,
                "content": [{"type": "text", "text": "Half of it:"}, IMAGE],
            },
        ],
        [("is_error", "messages[2].is_error"), ("image_url", "messages[2].content[1]")],
    ),
    "system": (
        (  # cached system prompts go out as text blocks, whose template here writes only the cache marker
            (
                "    text: {type: text, text: {$get: text}, cache_control: {$get: cache_control}}",
                "    text: {type: text, cache_control: {$get: cache_control}}",
            ),
        ),
        [
            {
                "role": "system",
                "content": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        [("text", "messages[0].content[0].text")],
    ),
    "developer": (
        (  # a developer message kept in the transcript, whose template writes only images
            ("    roles: [system, developer]         # hoisted", "    roles: [system]         # hoisted"),
            (
                "  roles:\n    user:\n",
                "  roles:\n    developer:\n"
                "      message: {role: user, content: {$content: blocks, kinds: [image_url]}}\n    user:\n",
            ),
        ),
        [{"role": "developer", "content": "Be brief."}, ASKED],
        [("text", "messages[0].content")],
    ),
}
CASES = with_variants(CASES)  # a variant without an entry takes its parent's


def user_rules(tmp_path: Path, edits: tuple[tuple[str, str], ...], extra_unsupported: str = "") -> Path:
    """A rules directory holding a copy of the Anthropic rules with `edits` applied."""
    text = (RULES / "anthropic.yaml").read_text(encoding="utf-8")
    if extra_unsupported:
        edits = (*edits, ("  # How each part", extra_unsupported + "  # How each part"))
    for old, new in edits:
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
        text = text.replace(old, new)
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "anthropic.yaml").write_text(text, encoding="utf-8")
    return folder


def request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 100, "messages": messages}


@pytest.mark.parametrize("role", CASES)
def test_a_field_no_template_writes_is_refused_by_default(role: str, tmp_path: Path) -> None:
    edits, messages, left = CASES[role]
    with pytest.raises(TranslationError) as caught:
        toolnexus.translate_request("anthropic", request(messages), rules=user_rules(tmp_path, edits))
    assert caught.value.path == left[0][1]


@pytest.mark.parametrize("role", CASES)
def test_with_unknown_fields_drop_each_such_field_is_a_dropped_note(role: str, tmp_path: Path) -> None:
    edits, messages, left = CASES[role]
    body = toolnexus.translate_request(
        "anthropic", request(messages), rules=user_rules(tmp_path, edits), unknown_fields="drop"
    )
    dropped = [n.path for n in body.notes if n.kind == "dropped"]
    assert dropped == [path for _, path in left]


@pytest.mark.parametrize("action", ["drop", "error"])
@pytest.mark.parametrize("role", CASES)
def test_the_rule_files_unsupported_entry_decides(role: str, action: str, tmp_path: Path) -> None:
    edits, messages, left = CASES[role]
    listed = "".join(f"    {name}: {{action: {action}}}\n" for name in dict(left))
    rules = user_rules(tmp_path, edits, extra_unsupported=listed)
    if action == "error":
        with pytest.raises(TranslationError) as caught:
            toolnexus.translate_request("anthropic", request(messages), rules=rules)
        assert caught.value.path == left[0][1]
    else:
        body = toolnexus.translate_request("anthropic", request(messages), rules=rules)
        assert [n.path for n in body.notes if n.kind == "dropped"] == [path for _, path in left]


def test_what_is_written_is_still_written(tmp_path: Path) -> None:
    """Settling a leftover image does not disturb the text the narrowed tool template does write."""
    edits, messages, _ = CASES["tool"]
    body = toolnexus.translate_request(
        "anthropic", request(messages), rules=user_rules(tmp_path, edits), unknown_fields="drop"
    )
    written = [{"type": "tool_result", "tool_use_id": "call_1", "content": "Half of it:"}]
    assert body["messages"][-1]["content"] == written


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_cache_marker_on_a_message_with_no_part_is_reported(provider: str) -> None:
    """A message's cache_control goes on its last part; with no part at all it is dropped, and said so."""
    message = {"role": "user", "content": [], "cache_control": {"type": "ephemeral"}}
    body = toolnexus.translate_request(provider, request([message]))
    assert ("dropped", "messages[0].cache_control") in [(n.kind, n.path) for n in body.notes]


@pytest.mark.parametrize("provider", toolnexus.providers())
def test_a_cache_marker_on_a_system_prompt_with_no_part_is_reported(provider: str) -> None:
    system = {"role": "system", "content": [], "cache_control": {"type": "ephemeral"}}
    body = toolnexus.translate_request(provider, request([system, ASKED]))
    assert ("dropped", "messages[0].cache_control") in [(n.kind, n.path) for n in body.notes]


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_parts_unknown_key_is_settled_not_lost(provider: str) -> None:
    """A key a content part or a tool call carries that no template writes is refused, or dropped and noted."""
    part = {"type": "text", "text": "x", "vendor_hint": 1}
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "vendor_hint": 2}
    messages = [
        {"role": "user", "content": [part]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    with pytest.raises(TranslationError) as info:
        toolnexus.translate_request(provider, request(messages))
    assert info.value.path == "messages[0].content[0].vendor_hint"
    body = toolnexus.translate_request(provider, request(messages), unknown_fields="drop")
    dropped = [n.path for n in body.notes if n.kind == "dropped"]
    assert dropped == ["messages[0].content[0].vendor_hint", "messages[1].tool_calls[0].vendor_hint"]


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_tools_unknown_key_is_settled_not_lost(provider: str) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}, "vendor_hint": 1}
    given = {**request([{"role": "user", "content": "x"}]), "tools": [tool]}
    with pytest.raises(TranslationError) as info:
        toolnexus.translate_request(provider, given)
    assert info.value.path == "tools[0].vendor_hint"
    body = toolnexus.translate_request(provider, given, unknown_fields="drop")
    assert [n.path for n in body.notes if n.kind == "dropped"] == ["tools[0].vendor_hint"]


# ---------------------------------------------------------------- another provider's round-trip state


def _message_keys(node: Any) -> set[str]:
    """The top-level keys a response `message:` template writes (through `$when`'s branches)."""
    if not isinstance(node, dict):
        return set()
    if any(key.startswith("$") for key in node):
        return set().union(*(_message_keys(node[k]) for k in ("then", "else") if k in node))
    return set(node)


def _round_trip_keys(node: Any) -> set[str]:
    """Every key a response section carries back on assistant_message() (the `message:` templates)."""
    if isinstance(node, list):
        return set().union(*map(_round_trip_keys, node))
    if not isinstance(node, dict):
        return set()
    found = _message_keys(node["message"]) if "message" in node else set()
    kinds = node.get("kinds") if isinstance(node.get("kinds"), dict) else {}  # keyed by item kind ("message" too)
    children = [*(v for k, v in node.items() if k != "kinds"), *kinds.values()]
    return found.union(*map(_round_trip_keys, children))


def _written_by() -> dict[str, set[str]]:
    """Round-trip key -> the providers whose own responses write it (reasoning_content: every assistant message)."""
    owners: dict[str, set[str]] = {"reasoning_content": set()}
    for path in RULES.glob("*.yaml"):
        for key in _round_trip_keys(yaml.safe_load(path.read_text()).get("response")):
            owners.setdefault(key, set()).add(path.stem)
    return owners


WRITTEN_BY = _written_by()
PARENTS = parents_of(toolnexus.load_rules())
FOREIGN = [  # (provider, a round-trip key no provider of its lineage writes)
    (provider, key)
    for provider in toolnexus.providers()
    for key in sorted(WRITTEN_BY)
    if not WRITTEN_BY[key] & set(lineage(provider, PARENTS))
]


@pytest.mark.parametrize(("provider", "key"), FOREIGN)
def test_another_providers_round_trip_key_is_dropped_with_a_note_or_kept_never_refused(provider: str, key: str) -> None:
    """A conversation that switches provider carries the last one's state (thinking_blocks, extra_content,
    reasoning_items, ...): a provider that cannot take it back drops it with a note, it is never an error."""
    value: Any = {"vendor": {"mark": "rt-mark"}} if key == "extra_content" else [{"type": "x", "mark": "rt-mark"}]
    value = "rt-mark" if key == "reasoning_content" else value
    turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello", key: value}]
    body = toolnexus.translate_request(provider, request([*turns, {"role": "user", "content": "Bye"}]))
    dropped = any(n.kind == "dropped" and n.path == f"messages[1].{key}" for n in body.notes)
    assert dropped or "rt-mark" in json.dumps(body), f"{key} to {provider}: neither dropped with a note nor sent"
