"""The source formats' generated transcript readers (translate/format_code.py) against the general read.

The generated reader reads the common shape inline and gives up (None) on anything else, so the general
read (`SourceFormat._transcript`) reads it: both must give the same normal form, the same origins and the same
notes, or the same located error, for every source request the case tables, the bench and a made-up format hold.
"""

from __future__ import annotations

import copy
import pickle
import re
import sys
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from support.cases import CASES
from support.cli import explain_code, run_cli
from support.made_up import ACME_FORMAT
from toolnexus import Note, RuleError, ToolnexusError, load_rules
from toolnexus.language import jsonsafe
from toolnexus.language.paths import MISSING, compile_path, scope_fields
from toolnexus.language.templates import Apply, Ctx, KeySeal, seal, sealed, sealed_alone, unseal
from toolnexus.translate import formats
from toolnexus.translate.format_code import generate_answer
from toolnexus.translate.format_rules import compile_format
from toolnexus.translate.formats import SourceFormat, answer_scope, call_scopes, named, placed, remap
from toolnexus.translate.request_code import generate_tools
from toolnexus.translate.result import TranslatedToolCall, TranslateResult

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bench_inputs  # noqa: E402

FORMATS = ("anthropic", "openai-responses")
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}


def outcome(fmt: SourceFormat, request: Any, objects: bool = False) -> Any:
    try:
        hub, origins, records, notes = fmt.read_recorded(copy.deepcopy(request), objects=objects)
        return hub, placed(origins, records), notes
    except ToolnexusError as exc:
        return (type(exc).__name__, getattr(exc, "path", None), str(exc))


def general(fmt: SourceFormat) -> SourceFormat:
    """The same format with no generated readers (transcript, tools): the general read alone."""
    return replace(fmt, transcript=None, tools_reader=None, transcript_code="")


def source_requests() -> list[tuple[str, str, Any]]:
    tools = bench_inputs.tool_declarations()
    out = [
        ("anthropic", "bench 100", bench_inputs.messages_transcript(100, tools)),
        ("openai-responses", "bench 100", bench_inputs.responses_transcript(100, tools)),
    ]
    for case in CASES:
        source = case.data.get("options", {}).get("source")
        if source in FORMATS and "request" in case.data:
            out.append((source, case.name, case.data["request"]))
    return out


@pytest.mark.parametrize(
    ("source", "name", "request_"), source_requests(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_generated_reader_reads_as_the_general_read(source: str, name: str, request_: Any) -> None:
    fmt = load_rules().format(source)
    assert fmt.transcript is not None
    assert outcome(fmt, request_) == outcome(general(fmt), request_)
    assert outcome(fmt, request_, objects=True) == outcome(general(fmt), request_, objects=True)


def test_generated_reader_takes_the_common_shape() -> None:
    """The bench transcripts (what agents send) are read by the generated code alone, not handed on."""
    tools = bench_inputs.tool_declarations()
    for source, request in (
        ("anthropic", bench_inputs.messages_transcript(100, tools)),
        ("openai-responses", bench_inputs.responses_transcript(100, tools)),
    ):
        fmt = load_rules().format(source)
        assert fmt.transcript is not None
        system = request.get(fmt.system) if fmt.system else None
        assert fmt.transcript(request[fmt.each], system) is not None
        assert fmt.tools_reader is not None and fmt.tools_each is not None
        assert fmt.tools_reader(request[fmt.tools_each], [].append) is not None


def test_generated_tools_reader_hands_on_what_needs_settling() -> None:
    """A tool key no rule reads: the generated tools reader gives up, and the general read notes it or raises at
    its path, the records of the tools it had read not kept twice."""
    fmt = load_rules().format("anthropic")
    assert fmt.tools_reader is not None
    tools = [{"name": "f", "input_schema": {}}, {"name": "g", "input_schema": {}, "loud": True}]
    records: list[Any] = []
    assert fmt.tools_reader(tools, records.append) is None
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    with pytest.raises(ToolnexusError) as caught:
        fmt.read(request)
    assert caught.value.path == "tools[1].loud"  # type: ignore[attr-defined]
    hub, _, records, notes = fmt.read_recorded(request, unknown_fields="drop")
    assert [(n.kind, n.path) for n in notes] == [("dropped", "tools[1].loud")]
    assert [r[:3] for r in records if r[0] == "tools[{}]"] == [("tools[{}]", 0, 0), ("tools[{}]", 1, 0)]
    assert hub["tools"] == [{"type": "function", "function": {"name": n, "parameters": {}}} for n in "fg"]


SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}}}
CALLER_TOOLS = {  # per format: tool lists the provider's tools function takes in place, declines, or refuses
    "anthropic": [
        [
            {"name": "f", "description": "d", "input_schema": SCHEMA},
            {"type": "custom", "name": "g", "input_schema": {}},
        ],
        [{"name": "f"}],  # no schema: a provider's default noted (taken back: read as Chat Completions tools)
        [{"name": "f", "input_schema": SCHEMA, "cache_control": {"type": "ephemeral"}}],
        [{"name": "f", "description": "d", "input_schema": SCHEMA, "cache_control": {"type": "ephemeral"}}],
        [{"name": "f", "input_schema": SCHEMA, "type": "web_search"}],  # a listed key's other value: dropped
        [{"name": "f", "input_schema": SCHEMA, "loud": 1}],  # a key no rule reads: refused
        [{"name": "f", "input_schema": {"a": float("nan")}}],  # the JSON check's path, in the caller's names
        [{"name": "f", "input_schema": SCHEMA}, {"name": "f", "input_schema": SCHEMA}],
        [{"name": "f", "description": None, "input_schema": SCHEMA}],
        [{"name": "f", "input_schema": SCHEMA}, "g"],
        # a later tool's listed key with another value (the listed keys are tested over the whole list)
        [{"name": "f", "input_schema": SCHEMA}, {"name": "g", "input_schema": SCHEMA, "type": "web_search"}],
        {"name": "f"},
    ],
    "openai-responses": [
        [{"type": "function", "name": "f", "description": "d", "parameters": SCHEMA}],
        [{"type": "function", "name": "f", "parameters": SCHEMA, "strict": True}],
        [  # the usual keys, the usual keys and another, then one without them
            {"type": "function", "name": "f", "description": "d", "parameters": SCHEMA},
            {"type": "function", "name": "g", "description": "e", "parameters": SCHEMA, "strict": False},
            {"type": "function", "name": "h", "description": "e"},
        ],
        [{"type": "function", "name": "f", "parameters": SCHEMA, "defer_loading": False, "output_schema": None}],
        [{"type": "function", "name": "f", "parameters": SCHEMA, "output_schema": {}}],  # dropped, noted
        [{"type": "web_search"}],  # refused
        [{"type": "function", "name": "f", "parameters": {"a": float("inf")}}],
        [{"type": "function", "name": "f", "parameters": SCHEMA, "strict": None}, {"type": "function", "name": "g"}],
        [{"type": "function", "name": "f", "description": 5}],
        [{"type": "function", "name": "f"}, {"type": "function", "name": "g", "output_schema": {}}],
        [{"type": "function", "description": "d"}],
        # a listed key's accepted value told by equality (0 is False), and a tool without a key the others hold
        [{"type": "function", "name": "f", "async": 0}, {"name": "g", "parameters": SCHEMA}],
        [{"type": "function", "name": "f", "async": 0.0, "defer_loading": False}, {"type": "function", "name": "g"}],
    ],
}


def _translated(provider: str, source: str, request: Any, unknown_fields: str) -> Any:
    try:
        body = toolnexus.translate_request(provider, request, source=source, unknown_fields=unknown_fields)
        return repr(dict(body)), body.notes  # the repr: the keys' order too
    except ToolnexusError as exc:
        return (type(exc).__name__, getattr(exc, "path", None), str(exc))


@pytest.mark.parametrize("source", FORMATS)
def test_the_provider_writes_the_callers_tool_declarations_in_place(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A format whose tool template writes each key from one key of the caller's tool: the provider's generated
    tools function reads the caller's declarations where they are (no Chat Completions tool built and read again),
    with the same body, notes and errors as reading them into Chat Completions tools first."""
    fmt = load_rules().format(source)
    assert fmt.caller_tools is not None
    transcript = {"anthropic": "messages", "openai-responses": "input"}[source]
    requests = [
        {"model": "m", transcript: [{"role": "user", "content": "hi"}], "tools": t} for t in CALLER_TOOLS[source]
    ]
    read = formats.SourceFormat._tools
    calls: list[Any] = []
    monkeypatch.setattr(formats.SourceFormat, "_tools", lambda self, *a: calls.append(a) or read(self, *a))
    for provider in ("gemini", "openai"):  # a declaration of the tool's keys, one of the whole tool
        assert "'tools': [{" in _translated(provider, source, requests[0], "error")[0]
    assert calls == []  # written in place: the format's own read of the tools never ran
    for provider in load_rules().names():
        for request in requests:
            for policy in ("error", "drop"):
                monkeypatch.setattr(formats.SourceFormat, "caller_tools", property(lambda self: None))
                expected = _translated(provider, source, request, policy)
                monkeypatch.undo()
                assert _translated(provider, source, request, policy) == expected, (provider, request, policy)


@pytest.mark.parametrize("source", FORMATS)
def test_the_caller_tools_are_built_in_one_display_and_appended_as_built(source: str) -> None:
    """A declaration reading the whole tool (OpenAI's) over a format's tools: the function object starts as a display
    of the tested name, and the tool built is appended as it is (no copy of it first); the plain tools function
    appends the caller's tool itself."""
    fmt, inbound = load_rules().format(source), load_rules().get("openai").inbound
    assert fmt.caller_tools is not None and inbound.declaration_node is not None
    made = generate_tools(inbound, inbound.declaration_node, fmt.caller_tools)
    plain = generate_tools(inbound, inbound.declaration_node)
    assert made is not None and plain is not None
    assert "function_ = {'name': k0_}" in made[0] and "out_.append(source_)" in made[0]
    assert "written_" not in made[0] and "out_.append(tool_)" in plain[0] and "written_" not in plain[0]


@pytest.mark.parametrize("source", FORMATS)
def test_the_caller_tools_keys_besides_are_tested_in_one_loop(source: str) -> None:
    """The caller's listed keys no declaration reads (a Responses tool's `type`) are tested after the loop by a
    loop over the tools, not by a `methodcaller` and a bound `__contains__` called per tool (four times its time,
    on every request with tools)."""
    fmt, inbound = load_rules().format(source), load_rules().get("openai").inbound
    assert fmt.caller_tools is not None and inbound.declaration_node is not None
    made = generate_tools(inbound, inbound.declaration_node, fmt.caller_tools)
    assert made is not None
    assert "methodcaller" not in made[0] and "__contains__" not in made[0]
    assert "        for tool_ in tools_:\n            if tool_.get(key_) not in quiet_:\n" in made[0]


def test_the_reader_keeps_only_messages_whose_form_may_change() -> None:
    """`made` (the messages whose form is settled at the end) holds a message only when its content is a list or a
    later block may join it: a user message of string content is final as made, an assistant one may be joined."""
    fmt = load_rules().format("openai-responses")
    assert fmt.transcript is not None
    output = {"type": "function_call_output", "call_id": "c1", "output": "done"}
    read = fmt.transcript([{"role": "user", "content": "hi"}, output, {"role": "assistant", "content": "ok"}], None)
    assert read is not None
    messages, _, made = read
    assert [role for _, role in made] == ["assistant"] and made[0][0] is messages[2]


SEALED = sealed({"thinking_blocks": [1]}, "")  # a reasoning item's state sealed onto no text


@pytest.mark.parametrize("content", ["opaque", 7, None, SEALED])
def test_the_reader_decodes_a_state_only_where_a_seal_is(content: Any) -> None:
    """A reasoning item's state is decoded (`unseal`) only from a string holding a seal: any other value has none,
    told with no call; read as the general read reads it."""
    fmt = load_rules().format("openai-responses")
    assert "st = unseal(m.get(" not in fmt.transcript_code
    item = {"type": "reasoning", "encrypted_content": content}
    request = {"model": "m", "input": [item, {"role": "user", "content": "hi"}]}
    assert outcome(fmt, request) == outcome(general(fmt), request)
    hub = outcome(fmt, request)[0]
    assert (hub["messages"][0].get("thinking_blocks") == [1]) is (content == SEALED)


def test_generated_reader_hands_on_what_needs_settling() -> None:
    """A key no rule reads (noted, or refused) and a block of no kind: the generated reader gives up, and the
    general read notes it or raises at its path."""
    fmt = load_rules().format("anthropic")
    assert fmt.transcript is not None
    loud = [{"role": "user", "content": [{"type": "text", "text": "hi", "loud": True}]}]
    odd = [{"role": "user", "content": [{"type": "sound", "text": "hi"}]}]
    assert fmt.transcript(loud, None) is None and fmt.transcript(odd, None) is None
    with pytest.raises(ToolnexusError) as caught:
        fmt.read({"model": "m", "messages": loud})
    assert caught.value.path == "messages[0].content[0].loud"  # type: ignore[attr-defined]
    _, _, notes = fmt.read({"model": "m", "messages": loud}, unknown_fields="drop")
    assert [(n.kind, n.path) for n in notes] == [("dropped", "messages[0].content[0].loud")]


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "hi", "loud": True},
        {"type": "text", "loud": True},  # as many keys as a whole text block, one of them unknown
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}, "loud": True},
    ],
)
def test_generated_reader_counts_a_blocks_known_keys(block: dict[str, Any]) -> None:
    """A block's shape is told by how many of its kind's keys it holds (no view of its keys made): an unknown key
    among them, whatever their number, hands the block on."""
    fmt = load_rules().format("anthropic")
    assert fmt.transcript is not None and not re.search(r"\bb2?\.keys\(\)", fmt.transcript_code)
    assert fmt.transcript([{"role": "user", "content": [block]}], None) is None
    clean = {key: value for key, value in block.items() if key != "loud"}
    assert fmt.transcript([{"role": "user", "content": [clean]}], None) is not None


@pytest.mark.parametrize("source", FORMATS)
def test_generated_reader_counts_a_messages_known_keys(source: str) -> None:
    """A message's shape is told the same way: an unknown key, in place of a known one or beside them, hands the
    transcript on."""
    fmt = load_rules().format(source)
    assert fmt.transcript is not None and ".keys()" not in fmt.transcript_code.split("def tools")[0]
    assert fmt.transcript([{"role": "user", "content": "hi"}], None) is not None
    for message in ({"role": "user", "content": "hi", "loud": 1}, {"role": "user", "loud": 1}):
        assert fmt.transcript([message], None) is None


def test_generated_reader_settles_accepted_values_silently() -> None:
    """A listed key holding a value its rule accepts (annotations: []) is read inline, with no note."""
    fmt = load_rules().format("openai-responses")
    assert fmt.transcript is not None
    items = [{"role": "assistant", "content": [{"type": "output_text", "text": "a", "annotations": []}]}]
    assert fmt.transcript(items, None) is not None
    cited = [{"role": "assistant", "content": [{"type": "output_text", "text": "a", "annotations": [{"x": 1}]}]}]
    assert fmt.transcript(cited, None) is None
    _, _, notes = fmt.read({"model": "m", "input": cited})
    assert [(n.kind, n.path) for n in notes] == [("dropped", "input[0].content[0].annotations")]


FIELDS = [  # (format, request besides its transcript): clean, or a key to settle at the top or below a field
    ("openai-responses", {"model": "m", "reasoning": {"effort": "low"}, "text": {"format": {"type": "text"}}}),
    ("openai-responses", {"model": "m", "include": ["reasoning.encrypted_content"]}),  # listed, accepted: silent
    ("openai-responses", {"model": "m", "text": {"format": "x"}}),  # an object read inside, not one: read as it is
    ("openai-responses", {"model": "m", "include": ["logprobs"], "temprature": 1}),  # listed and dropped; unknown
    ("openai-responses", {"model": "m", "reasoning": {"effort": "low", "summary": "auto"}}),  # listed below a field
    ("openai-responses", {"model": "m", "text": {"verbosity": "low", "format": {"type": "text", "size": 2}}}),
    ("openai-responses", {"model": "m", "previous_response_id": "r1"}),  # listed: refused
    ("anthropic", {"model": "m", "metadata": {"user_id": "u"}, "tool_choice": {"type": "auto"}}),
    ("anthropic", {"model": "m", "metadata": {"user_id": "u", "tag": 1}}),
    ("anthropic", {"model": "m", "tool_choice": {"type": "auto", "loud": True}, "top_k": 3}),
]


@pytest.mark.parametrize("policy", ["error", "drop"])
@pytest.mark.parametrize(("source", "fields"), FIELDS)
def test_the_fields_are_settled_only_where_a_key_needs_it(
    monkeypatch: pytest.MonkeyPatch, source: str, fields: dict[str, Any], policy: str
) -> None:
    """The fields' generated reader runs `settle_fields` only when its fast test finds a key to settle (a clean
    request is not walked key by key), and then notes or refuses as `settle_fields` alone does."""
    fmt = load_rules().format(source)
    request = {**fields, fmt.each: [{"role": "user", "content": "hi"}]}
    settled: list[Note] = []
    try:
        fmt.settle_fields(request, settled, policy)
        expected: Any = [(n.kind, n.path, n.message) for n in settled]
    except ToolnexusError as exc:
        expected = (getattr(exc, "path", None), str(exc))
    calls = []
    settle = SourceFormat.settle_fields
    monkeypatch.setattr(SourceFormat, "settle_fields", lambda *args: calls.append(args) or settle(*args))
    try:
        notes = fmt.read_recorded(request, policy)[3]
        got: Any = [(n.kind, n.path, n.message) for n in notes]
    except ToolnexusError as exc:
        got = (getattr(exc, "path", None), str(exc))
    assert got == expected
    assert bool(calls) is (expected != [])


def test_generated_reader_of_a_made_up_format(tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(ACME_FORMAT)
    fmt = compile_format(path, load_rules().providers)
    assert fmt.transcript is not None and "def transcript" in fmt.transcript_code
    request = {
        "model": "m",
        "turns": [
            {"role": "user", "content": [{"is": "words", "say": "hi"}]},
            {"role": "assistant", "content": [{"is": "call", "ref": "c1", "fn": "f", "args": {"a": 1}}]},
            {"role": "user", "content": [{"is": "answer", "to": "c1", "body": "ok"}, {"is": "words", "say": "more"}]},
        ],
    }
    assert fmt.transcript(request["turns"], None) is not None
    assert outcome(fmt, request) == outcome(general(fmt), request)


@pytest.mark.parametrize("source", FORMATS)
def test_the_reader_reads_an_item_where_it_is_and_tests_a_role_once(source: str) -> None:
    """An item's or block's keys are read from its own variable (no copy of it first), and a text joining the
    last message tests its role once (its message taken in that test)."""
    code = load_rules().format(source).transcript_code
    assert not re.search(r"^ *(b|sd_\w+) = (m|b|b2)$", code, re.M)
    assert "cur = out[n]" not in code
    for line, after in pairwise(code.splitlines()):
        assert not (line.strip().startswith("if out and") and after.strip() == line.strip()), line


def test_explain_shows_the_generated_reader() -> None:
    shown = explain_code("--source", "anthropic")
    assert (
        "def transcript(msgs, system, objects=False, written=None):" in shown
        and "def read_fields(fmt, request, notes, policy):" in shown
        and "def write(r, answer_id, created, notes):" in shown
    )


def test_the_whole_answer_is_one_generated_function(tmp_path: Path) -> None:
    """The answer's message and every blocks entry (one block, or one per element walked) in one writer, over the
    result itself: its calls read as attributes, no object made per call and no view made."""
    path = tmp_path / "acme.yaml"
    path.write_text(ACME_FORMAT)
    fmt = compile_format(path, load_rules().providers)
    assert fmt.writer is not None and fmt.writer_code.startswith("def write(r, answer_id, created, notes):")
    result = TranslateResult("hi", [TranslatedToolCall("t1", "f", "{}")], "stop", {}, "m")
    written = fmt.writer(result, "r1", 1, [])
    assert written == {"said": "hi", "why": "end_turn", "calls": [{"ref": "t1", "fn": "f"}]}
    code = fmt.writer_code
    assert "e.id" in code and "CALL" not in code and "VIEW" not in code and "SAID" not in code


def test_state_sealed_alone_is_read_as_a_field(tmp_path: Path) -> None:
    """A `$seal` with no `onto` is a function of the state's value: the writer reads the state as any field (no
    view made) and seals it with no Ctx made; null or absent state: nothing written."""
    text = ACME_FORMAT.replace(
        "    said: {$get: text}\n", "    said: {$get: text}\n    kept: {$seal: message_extras.k}\n"
    )
    path = tmp_path / "acme.yaml"
    path.write_text(text)
    fmt = compile_format(path, load_rules().providers)
    code = fmt.writer_code
    assert "VIEW(" not in code and "Ctx(" not in code and "sealed(" in code
    for extras, kept in [({"k": {"s": 1}}, sealed_alone({"s": 1}, Ctx("t"))), ({"k": None}, None), (None, None)]:
        result = TranslateResult("hi", [], "stop", {}, "m", message_extras=extras)
        written = fmt.write(result, "r1")
        assert written.get("kept") == kept and (kept is None or unseal(kept, Ctx("t"), part="state") == {"s": 1})


@pytest.mark.parametrize("whole", [False, True])
def test_the_writer_derives_what_the_provider_would_have_said_itself(tmp_path: Path, whole: bool) -> None:
    """The writer derives the provider's stop reason and usage in its first lines, each count into a variable its
    templates read (no `said` made); a template reading `provider.usage` whole reads `said` as `SourceFormat.said`
    makes it. Either way the answer and its notes are what `said` gives, in its order: the stop reason, the usage,
    the made id, the writer's own."""
    text = ACME_FORMAT.replace("    out: {$get: provider.usage.output_tokens}\n", "    out: {$get: provider.usage}\n")
    path = tmp_path / "acme.yaml"
    path.write_text(text if whole else ACME_FORMAT)
    fmt = compile_format(path, load_rules().providers)
    assert ("V_provider = SAID(r, [])" in fmt.writer_code) is whole
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 5}}
    result = TranslateResult("hi", [], "weird", usage, "m")
    notes: list[Note] = []
    written = fmt.write(result, None, notes, 7)
    settled: list[Note] = []
    said = fmt.said(result, [])
    assert written["out"] == (said["usage"] if whole else said["usage"]["output_tokens"]) and "why" not in written
    view = answer_scope(fmt.ids, result, fmt.said(result, settled), "r1", 7, None)
    settled.append(Note("synthesized", "id", "the provider's answer names no id"))
    assert view["provider"] == said and [(n.kind, n.path) for n in notes] == [(n.kind, n.path) for n in settled]
    assert [(n.kind, n.path) for n in notes] == [
        ("dropped", "finish_reason"), ("inconsistent", "prompt_tokens"), ("synthesized", "id")
    ]  # fmt: skip


@pytest.mark.parametrize("reads_input", [True, False])
def test_a_template_reading_the_scope_whole_reads_the_view(tmp_path: Path, reads_input: bool) -> None:
    """Rich paths and a call's `@` read what the view holds: where rich paths alone read the view, by key, an
    object of those keys (`paths.scope_fields`); else the view itself (`length(@)`); each made where a template
    reads it (read twice, bound first; read once, in its place: in its branch); a call's object of CALL_FIELDS
    (and `input` where the format reads one)."""
    rich = "    said: {$get: text}\n    either: {$get: 'text || refusal'}\n    whole: {$get: '[text, refusal]'}\n"
    rich += "    swapped: {$get: 'refusal || text'}\n"
    call = "{ref: {$get: id}, all: {$get: '@'}" + (", args: {$get: input}}" if reads_input else "}")
    last = (
        "      - as: {$when: refusal, present: true, then: {why_not: {$get: 'refusal || text'}}}\n"
        "      - as: {n: {$get: 'length(@)'}}\n"
    )
    text = ACME_FORMAT.replace("    said: {$get: text}\n", rich).replace("{ref: {$get: id}, fn: {$get: name}}", call)
    path = tmp_path / "acme.yaml"
    path.write_text(text + last)
    fmt = compile_format(path, load_rules().providers)
    assert fmt.reads_input is reads_input
    calls = [TranslatedToolCall("t1", "f", '{"a": [1]}'), TranslatedToolCall("t2", "g", "")]
    written = fmt.write(TranslateResult("", calls, "stop", {}, "m", refusal="no"), "r1")
    fields: list[dict[str, Any]] = [
        {"id": "t1", "name": "f", "arguments": '{"a": [1]}', "extra_content": None},
        {"id": "t2", "name": "g", "arguments": "{}", "extra_content": None},
    ]
    if reads_input:
        fields = [fields[0] | {"input": {"a": [1]}}, fields[1] | {"input": {}}]
    blocks = [{"ref": f["id"], "all": f} | ({"args": f["input"]} if reads_input else {}) for f in fields]
    view = [*blocks, {"why_not": "no"}, {"n": len(formats.VIEW_FIELDS)}]
    message = {"said": "", "either": "no", "whole": ["", "no"], "swapped": "no", "why": "end_turn"}
    assert written == {**message, "calls": view}
    code = fmt.writer_code
    assert "(V_text or V_refusal)" in code  # `||` after a string the result holds: Python's `or`, no rich path
    assert "s_m = {'refusal': V_refusal, 'text': V_text}" in code and code.count("VIEW(") == 1
    assert "s_1 = " not in code and "s_2 = " not in code  # (the last entries' reads: in place)


@pytest.mark.parametrize(
    ("path", "keys"),
    [
        ("text || refusal", {"text", "refusal"}),
        ("[text, refusal]", {"text", "refusal"}),
        ("annotations[?type=='url'].{u: url, t: type}", {"annotations"}),
        ("a.b[0]", {"a"}),
        ("a[].b | [0]", {"a"}),
        ("sort_by(a, &x)", {"a"}),
        ("not_null(a, `1`)", {"a"}),
        ("@", None),
        ("*.x", None),
        ("[0]", None),
        ("[?x].y", None),
        ("length(@)", None),
        ("{x: a, y: @}", None),
    ],
)
def test_the_keys_a_path_reads_of_its_value(path: str, keys: set[str] | None) -> None:
    """`scope_fields`: the keys a path reads of the value it is given (None: it reads the value otherwise); over
    any object holding those keys as they are, the path gives what it gives over the whole."""
    found = scope_fields(path)
    assert found == (None if keys is None else frozenset(keys))
    whole = {"a": [{"b": 1, "x": 2}, {"b": [3], "x": 1}], "text": "", "refusal": "no", "c": 4, "x": [5]}
    whole["annotations"] = [{"type": "url", "url": "u"}, {"type": "file"}]
    if found is not None:
        assert compile_path(path)({k: v for k, v in whole.items() if k in found}) == compile_path(path)(whole)


def test_the_view_parses_arguments_only_for_a_format_that_writes_them_as_an_object() -> None:
    """Messages writes a call's `input` (its arguments parsed); Responses writes the text: its view parses none."""
    result = toolnexus.translate_response(
        "openai",
        {
            "id": "r1",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
                        ],
                    },
                }
            ],
        },
    )
    messages, responses = load_rules().format("anthropic"), load_rules().format("openai-responses")
    assert messages.reads_input and not responses.reads_input
    assert messages.write(result, "r1")["content"][0]["input"] == {"a": 1}
    assert responses.write(result, "r1")["output"][0]["arguments"] == '{"a":1}'


@pytest.mark.parametrize("source", ["anthropic", "openai-responses"])
def test_the_writer_seals_a_call_as_seal_does(source: str) -> None:
    """A call's id with its signature sealed on (`$seal: extra_content, onto: id`): the generated writer writes a
    call's block as one display, which reads both keys itself and seals only when there is state; every case
    written as `seal` writes it."""
    fmt = load_rules().format(source)
    assert fmt.writer is not None
    assert "sealed(e.extra_content, e.id)" in fmt.writer_code  # (the call's block: one display)
    (sealing,) = [n.function for n in nodes(fmt.plan.nodes) if isinstance(n, Apply) and isinstance(n.function, KeySeal)]
    states = [None, {}, {"sig": "s"}, {"sig": "é", "n": [1, 2.5]}]
    result = TranslateResult("hi", [TranslatedToolCall("c1", "f", "{}", s) for s in states], "stop", {}, "m")
    calls = call_scopes(result.tool_calls, None)
    written = fmt.write(result, "r1")[fmt.blocks_into or ""]
    id_key, kind = {"anthropic": ("id", "tool_use"), "openai-responses": ("call_id", "function_call")}[source]
    got = [block.get(id_key, MISSING) for block in written if block.get("type") == kind]
    general = [seal(call, Ctx(source, True), state=sealing.state.getter, onto=sealing.onto.getter) for call in calls]
    assert got == general and len(got) == len(calls)
    assert got[0] == "c1" and all(g.startswith("c1_tns_") for g in got[1:])  # as it was, and sealed


@pytest.mark.parametrize("source", ["anthropic", "openai-responses"])
def test_a_call_block_with_one_key_maybe_left_out_is_two_displays(source: str) -> None:
    """A call's block whose one optional key is its id (`$seal ... onto: id`, left out for a null id) is written as
    two displays chosen by that test, no display merged in: with an id, the id in its place (before the name);
    with none, every other key as it was, in order."""
    fmt = load_rules().format(source)
    assert fmt.writer is not None
    id_key, kind, last = {
        "anthropic": ("id", "tool_use", "input"),
        "openai-responses": ("call_id", "function_call", "arguments"),
    }[source]
    shown = next(line for line in fmt.writer_code.splitlines() if f"'type': '{kind}'" in line)
    assert "**(" not in shown and " if (e.id is not None) else {" in shown
    calls = [TranslatedToolCall("c1", "f", '{"a": 1}'), TranslatedToolCall(None, "g", "")]  # type: ignore[arg-type]
    result = TranslateResult("", calls, "stop", {}, "m")
    written = fmt.write(result, "r1")[fmt.blocks_into or ""]
    with_id, without = [block for block in written if block.get("type") == kind]
    assert list(with_id) == ["type", id_key, "name", last] and with_id[id_key] == "c1" and with_id["name"] == "f"
    assert list(without) == ["type", "name", last] and without["name"] == "g"


def nodes(plan: Any) -> list[Any]:
    """Every template node of the answer's blocks."""
    out: list[Any] = []
    todo = [node for key, node in plan.items() if key[:2] == ("answer", "blocks")]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.children())
    return out


def test_explain_needs_a_provider_or_a_source() -> None:
    done = run_cli("explain")
    assert done.returncode != 0 and "--source" in done.stderr and "Traceback" not in done.stderr


def notes_or_error(provider: str, request: dict[str, Any]) -> list[str]:
    """The paths of a translation's notes, or of its error."""
    try:
        return [note.path for note in toolnexus.translate_request(provider, request).notes]
    except ToolnexusError as exc:
        return [getattr(exc, "path", "")]


def below_every_element(hub: dict[str, Any]) -> list[str]:
    """A path inside each message, each of its keys and each element of its lists, the ends `named` matches."""
    paths = []
    for i, message in enumerate(hub["messages"]):
        paths.append(f"messages[{i}].role")
        for key, value in message.items():
            paths.append(f"messages[{i}].{key}")
            if isinstance(value, list):
                paths += [f"messages[{i}].{key}[{j}].x[0]" for j in range(len(value))]
    return paths


def test_a_note_path_takes_its_deepest_record_and_of_equal_ones_the_later() -> None:
    """Among one message's records, a path takes the element's over the key's over the message's, and of two
    records with the same key and numbers the later one (as `placed` keeps the later), whatever their order."""
    renamed = {"function.arguments": "input"}
    records: list[formats.Record] = [
        ("messages[{}]", 0, 0, "early[{0}]", 0, None, {}),
        ("messages[{}]", 0, 0, "late[{0}]", 4, None, {}),  # records come by their first number (`named` bisects)
        ("messages[{}]", 1, 0, "message[{0}]", 1, None, {}),
        ("messages[{}].tool_calls[{}]", 1, 0, "call[{0}]", 2, None, renamed),
        ("messages[{}].tool_calls", 1, 0, "calls[{0}]", 3, None, {}),
    ]
    paths = ["messages[0].content", "messages[1].tool_calls[0].function.arguments", "messages[1].tool_calls[1]"]
    expected = ["late[4].content", "call[2].input", "calls[3][1]"]
    assert named(paths, {}, records) == expected
    assert [remap(path, placed({}, list(records))) for path in paths] == expected


@pytest.mark.parametrize("source", FORMATS)
def test_the_notes_paths_are_placed_from_their_own_records_alone(source: str) -> None:
    """A call with notes formats only the record each note's path begins with (a message or a tool, a key of
    it, an element of that: never the unformattable one), and each path reads back as it does with every record
    placed, for every provider's notes and a path below every element the reader made."""
    tools = bench_inputs.tool_declarations()
    request = (bench_inputs.messages_transcript if source == "anthropic" else bench_inputs.responses_transcript)(
        100, tools
    )
    fmt = load_rules().format(source)
    hub, origins, records, _ = fmt.read_recorded(request)
    paths = [path for name in toolnexus.providers() for path in notes_or_error(name, hub)]
    paths += ["messages[0]", "messages[7].content[0].text", f"messages[{len(hub['messages']) - 1}]", "tools[2].x"]
    paths += ["messages", "messages[x].content", "messages[3]x", "messages[3].", "system.content[0]"]
    paths += below_every_element(hub) + [f"tools[{i}].function.name" for i in range(len(hub["tools"]))]
    paths += ["messages[7].content[0]x", "tools[1]x", "messages[2].tool_calls[0].function.arguments"]
    every = placed(dict(origins), list(records))
    unformattable = ("messages[{}]", len(hub["messages"]) + 5, 0, "{9}", 0, None, {})  # formatting it raises
    tools_at = len(records) - len(hub["tools"])  # the transcript's last record, in its order (`named` bisects)
    records[tools_at:tools_at] = [unformattable]
    assert named(paths, origins, records) == [remap(path, every) for path in paths]


@pytest.mark.parametrize(("source", "name", "request_"), source_requests())
def test_the_records_come_in_the_order_named_bisects(source: str, name: str, request_: Any) -> None:
    """`named` finds a path's records by bisection: the transcript's records sorted by their first number (the
    message's), then the tools' (TOOL_RECORD) sorted by theirs, as the generated reader appends them."""
    fmt = load_rules().format(source)
    try:
        _, _, records, _ = fmt.read_recorded(copy.deepcopy(request_))
    except ToolnexusError:
        return  # a refused request has no notes to name
    keys = [record[0] for record in records]
    tools_at = keys.index(formats.TOOL_RECORD) if formats.TOOL_RECORD in keys else len(records)
    transcript, tools = records[:tools_at], records[tools_at:]
    assert all(record[0] == formats.TOOL_RECORD for record in tools)
    for part in (transcript, tools):
        numbers = [record[1] for record in part]
        assert numbers == sorted(numbers)


def test_a_made_id_is_made_only_where_its_item_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer reads `ids.NAME` inside the branch that writes its item, each cut from the answer's one digest,
    made at the first id read: a Response of text alone hashes once, one of reasoning, text and state makes its
    three ids from one hash, one of no item hashes nothing; the ids are those `made_ids` and the view make."""
    fmt = load_rules().format("openai-responses")
    hashed: list[str] = []
    real = formats.IDS_HASH
    assert fmt.writer is not None and fmt.writer.__globals__["IDS_HASH"] is real  # (the writer's own name for it)
    assert "MadeIds(" not in fmt.writer_code  # each id made where read: no object of them
    monkeypatch.setitem(fmt.writer.__globals__, "IDS_HASH", lambda data: hashed.append(data.decode()) or real(data))
    made = fmt.made_ids("r1")
    written = fmt.write(TranslateResult("hi", [], "stop", {}, "m"), "r1")
    assert hashed == ["r1"] and written["output"][0]["id"] == made["message"]
    hashed.clear()
    state = {"thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
    written = fmt.write(TranslateResult("hi", [], "stop", {}, "m", reasoning_content="t", message_extras=state), "r1")
    assert hashed == ["r1"]
    assert [item["id"] for item in written["output"]] == [made["reasoning"], made["message"], made["state"]]
    assert len(set(made.values())) == len(made) and made != fmt.made_ids("r2")
    view = formats.MadeIds(fmt.ids, "r1")
    assert view["state"] == made["state"] and view == made and view.get("nope") is None  # one read makes them all
    hashed.clear()
    fmt.write(TranslateResult("", [], "stop", {}, "m"), "r1")
    assert hashed == []


def test_a_format_makes_as_many_ids_as_one_digest_holds(tmp_path: Path) -> None:
    """Each made id is its own cut of one digest of the answer id: a format naming more ids than it holds is
    refused where it names them."""
    path = tmp_path / "acme.yaml"
    many = ", ".join(f"i{n}: i{n}_" for n in range(formats.IDS_PER_DIGEST + 1))
    text = ACME_FORMAT.replace("answer:\n  message:\n", f"answer:\n  ids: {{{many}}}\n  message:\n")
    assert text != ACME_FORMAT
    path.write_text(text)
    with pytest.raises(RuleError, match="at most 4 made ids") as caught:
        compile_format(path, load_rules().providers)
    assert caught.value.file is not None and caught.value.file.endswith("acme.yaml") and caught.value.line is not None


@pytest.mark.parametrize("read", ["{$get: ids}", "{$get: ids.nope}", '{$get: "ids.*"}'])
def test_the_made_ids_are_read_by_name_alone(tmp_path: Path, read: str) -> None:
    """Each made id is made when read by its name: a template reading them otherwise is refused, where it is."""
    path = tmp_path / "acme.yaml"
    text = ACME_FORMAT.replace(
        "answer:\n  message:\n", f"answer:\n  ids: {{item: it_}}\n  message:\n    mine: {read}\n"
    )
    assert text != ACME_FORMAT
    path.write_text(text)
    with pytest.raises(RuleError, match="a made id is read by its name") as caught:
        compile_format(path, load_rules().providers)
    assert caught.value.file is not None and caught.value.file.endswith("acme.yaml") and caught.value.line is not None
    path.write_text(text.replace(read, "{$get: ids.item}"))
    assert (
        compile_format(path, load_rules().providers)
        .write(TranslateResult("", [], "stop", {}, "m"), "r1")["mine"]
        .startswith("it_")
    )


def test_the_usage_read_backwards_writes_each_object_once_in_the_table_order() -> None:
    """`said` (generated, `derive_said`): the stop reason, then each count at its place in `said`, the objects made
    at their first count and written into after, in the table's order; a contradicting count noted and left out."""
    fmt = load_rules().format("openai-responses")
    usage = USAGE
    notes: list[Any] = []
    said = fmt.said(TranslateResult("", [], "stop", usage, "m"), notes)
    want = {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14,
            "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 1},
            "output_tokens_details": {"reasoning_tokens": 2}}  # fmt: skip
    assert said == {fmt.stop_key: "completed", "finish": "completed", "usage": want} and not notes
    assert list(said) == [fmt.stop_key, "finish", "usage"] and list(said["usage"]) == list(want)
    messages = load_rules().format("anthropic")
    notes = []
    said = messages.said(TranslateResult("", [], "stop", usage | {"prompt_tokens": 2}, "m"), notes)  # fewer than
    assert said["usage"]["input_tokens"] == 6  # the cached ones it includes: from the total, less what it includes
    assert [(n.kind, n.path) for n in notes] == [("inconsistent", "prompt_tokens")]


# The providers that send a call's arguments as text and whose generated messages function reads that text (the
# Responses API's rules read the transcript the general way, which parses it).
TEXT_PROVIDERS = [
    name
    for name in toolnexus.providers()
    if load_rules().get(name).inbound.reads_arguments_json
    and "LOADS(d_raw)" in dict(load_rules().get(name).inbound.code).get(("messages",), "")
]


@pytest.mark.parametrize("provider", TEXT_PROVIDERS)
def test_a_tool_use_input_is_not_parsed_back_from_the_text_written_of_it(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a provider that reads arguments text, a `tool_use` input is written as JSON text once and the
    provider's read takes the input itself (`jsonsafe.loads_written`, from the call's own record), not a parse
    of that text; the body is the one the parse gives, and a plain request parses as before."""
    request = bench_inputs.messages_transcript(10, bench_inputs.tool_declarations())
    expected = toolnexus.translate_request(provider, copy.deepcopy(request), source="anthropic")
    parsed: list[Any] = []
    real = jsonsafe.loads
    counted = lambda text: parsed.append(text) or real(text)  # noqa: E731
    monkeypatch.setattr(jsonsafe, "loads", counted)  # what `loads_written` parses
    monkeypatch.setitem(load_rules().get(provider).inbound.messages.__globals__, "LOADS", counted)
    body = toolnexus.translate_request(provider, request, source="anthropic")
    assert parsed == [] and body == expected and body.notes == expected.notes
    refused = copy.deepcopy(request)
    refused["messages"][1]["content"].append({"type": "tool_use", "id": "x", "input": {}})  # no name
    with pytest.raises(ToolnexusError, match="name"):
        toolnexus.translate_request(provider, refused, source="anthropic")
    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    plain = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "add"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "1"},
        ],
    }
    assert toolnexus.translate_request(provider, plain) and parsed == ['{"a": 1}']  # a plain request's text: parsed


def test_a_text_is_taken_as_its_object_only_when_it_is_the_very_text_written() -> None:
    """`loads_written` gives the held object for the text object recorded, and parses any other text, an equal
    one too."""
    text = '{"a":1}'
    held = {"a": 1}
    written = {id(text): (text, held)}
    assert jsonsafe.loads_written(text, written) is held
    equal = "".join(['{"a"', ":1}"])
    assert jsonsafe.loads_written(equal, written) == held and jsonsafe.loads_written(equal, written) is not held
    assert jsonsafe.loads_written(text, {}) == held and jsonsafe.loads_written(text, {}) is not held


@pytest.mark.parametrize("source", ["anthropic", "openai-responses"])
def test_the_writer_settles_the_answer_and_notes_with_no_ctx(source: str) -> None:
    """The writer settles what the answer adds itself (an id made and noted after the stop reason's and the usage's
    notes, where none is given), makes no Ctx where its templates note only at paths known now (each note added
    in its place) and tests the result's strings (`text`, `reasoning_content`) and its `message_extras` (always an
    object) by their own truth, no `is_empty`."""
    fmt = load_rules().format(source)
    code = fmt.writer_code
    assert "Ctx(" not in code and "OWN(" not in code and re.search(r"notes\.append\(NOTED_\d+\)", code)
    assert fmt.writer is not None
    noted = [value for name, value in fmt.writer.__globals__.items() if name.startswith("NOTED_")]  # (made once)
    assert any(n.kind == "synthesized" and n.path.startswith("usage.") for n in noted)
    tested = re.findall(rf"if (?:not )?{STRING}:", code)  # the variable itself, read up front
    assert tested and not re.search(rf"is_empty\({STRING}\)|= {STRING}\n", code)  # (not `if is_empty(w) is False:`)
    if source == "openai-responses":  # its reasoning item's state: the extras sealed where they are not empty
        assert "if V_message_extras:" in code
    for text in ("", "hi"):
        notes: list[Note] = []
        written = fmt.write(TranslateResult(text, [], "weird", {}, "m", reasoning_content=text), None, notes, 7)
        assert [(n.kind, n.path) for n in notes][:2] == [("dropped", "finish_reason"), ("synthesized", "id")]
        assert all(n.kind == "synthesized" for n in notes[2:]) and len(notes) > 2  # the usage's defaults, noted last
        blocks = written[fmt.blocks_into or ""]
        assert written["id"].startswith("msg_") and len(blocks) == (2 if text else 0)  # the reasoning's, the text's
    notes = []
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    if source == "openai-responses":
        usage |= {"prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
    fmt.write(TranslateResult("hi", [], "stop", usage, "m"), "r1", notes, 7)
    assert notes == []


@pytest.mark.parametrize("fails", [False, True])
def test_the_writer_makes_a_ctx_only_where_a_template_uses_it_beyond_noting(tmp_path: Path, fails: bool) -> None:
    """A template's notes at paths known now go into `notes` in their place, the view's `provider.` cut (no Ctx
    made); a template that may fail makes the Ctx where first used (`c = None`), its notes added last. The notes
    are the same, in the same order, either way."""
    got = "    got: {$get: model, required: true}\n" if fails else ""
    defaulted = "    out: {$get: provider.usage.output_tokens, default: 0}\n"
    defaulted += "    first: {$get: message_extras.k, default: no}\n"
    text = ACME_FORMAT.replace("    out: {$get: provider.usage.output_tokens}\n", defaulted + got)
    path = tmp_path / "acme.yaml"
    path.write_text(text)
    fmt = compile_format(path, load_rules().providers)
    code = fmt.writer_code
    assert ("    c = None" in code and "(c := c or Ctx('acme', True))" in code) is fails and ("Ctx(" in code) is fails
    notes: list[Note] = []
    fmt.write(TranslateResult("hi", [], "stop", {}, "m"), None, notes, 7)
    assert [(n.kind, n.path) for n in notes] == [
        ("synthesized", "id"), ("synthesized", "usage.output_tokens"), ("synthesized", "message_extras.k")
    ]  # fmt: skip


@pytest.mark.parametrize(("source", "key"), [("anthropic", "thinking_blocks"), ("openai-responses", "reasoning_items")])
def test_the_writer_reads_a_key_several_entries_read_once(source: str, key: str) -> None:
    """A key of the view one level down that several entries read (the list one walks, another's test) is read
    once, up front, into a variable each reads."""
    code = load_rules().format(source).writer_code
    assert code.count(f".get({key!r}") == 1 and "es = H_0" in code


STRING = r"V_(?:text|reasoning_content)"  # a writer's variable of a string the result always holds


@pytest.mark.parametrize("source", FORMATS)
def test_the_answer_reads_its_id_and_time_where_the_streaming_paths_do(source: str) -> None:
    """`SourceFormat.answers`: each provider's answer says the id (a non-empty string, else one made and noted) and
    the time (a number, else now) its answer holds where the provider's streaming rules read a chunk's."""
    answers = [{"id": "a", "created": 3, "created_at": 4, "responseId": "g"}, {"id": 5, "created": "x"}]
    answers += [{"created": 2.5}, {"id": ""}, [], None]
    fmt = load_rules().format(source)
    synthesized = Note("synthesized", "id", "the provider's answer names no id")
    for name, provider in load_rules().providers.items():
        streaming = provider.streaming
        for answer in answers:
            given = streaming is not None and isinstance(answer, dict)
            found = streaming.chunk_id(answer) if given and streaming.chunk_id else None  # type: ignore[union-attr]
            made = streaming.created(answer) if given and streaming.created else None  # type: ignore[union-attr]
            body = fmt.answers[name](TranslateResult("hi", [], "stop", {}, "m"), answer)
            if isinstance(found, str) and found:
                assert body["id"] == found and synthesized not in body.notes, (name, answer)
            else:
                assert body["id"].startswith("msg_") and synthesized in body.notes, (name, answer)
            if "created_at" in body:
                number = type(made) in (int, float)
                assert body["created_at"] == made if number else type(body["created_at"]) is int, (name, answer)
    gemini = fmt.answers["gemini"](TranslateResult("hi", [], "stop", {}, "m"), {"responseId": "g"})
    assert gemini["id"] == "g" and gemini.result.text == "hi"


def test_an_answer_reads_no_time_where_the_writer_reads_none() -> None:
    """A writer that reads no time (Anthropic's Message has none) is given none: its answers read the id alone."""
    anthropic = load_rules().format("anthropic").answers_code.values()
    responses = load_rules().format("openai-responses").answers_code.values()
    assert not any("created" in code for code in anthropic)
    assert any("created = response.get('created', MISSING)" in code for code in responses)


# Plain paths of every shape an answer function (`generate_answer`) reads inline (a key, a chain, an index inside
# it, a negative index, a chain ending at an index), each beside an answer that holds a value there.
HEADER_PATHS = ["id", "meta.id", "meta.inner.id", "items[0].id", "items[-1].meta.id", "items[-2].id", "meta.ids[1]"]


def _holding(path: str, value: Any) -> Any:
    """The smallest answer holding `value` at the plain path `path` (a list index pads with None)."""
    steps = [int(s) if s.lstrip("-").isdigit() else s for s in re.findall(r"[^.\[\]]+", path)]
    out: Any = value
    for step in reversed(steps):
        if isinstance(step, str):
            out = {step: out}
        else:
            out = [None] * step + [out] if step >= 0 else [out] + [None] * (-step - 1)
    return out


@pytest.mark.parametrize("path", HEADER_PATHS)
def test_the_answer_reads_nested_paths_as_their_getters_do(path: str) -> None:
    """`generate_answer` with each path as both the id's and the time's: the writer is given a value of the right
    type found, of the wrong type or under a key of the wrong type (a list, a string, None) not (as it settles
    them: an id a non-empty string, a time a number), exactly as the path's getter says; an answer that is not an
    object has neither."""
    getter = compile_path(path)

    def writer(r: Any, answer_id: Any, created: Any, notes: list[Note]) -> dict[str, Any]:
        return {
            "said": (
                answer_id if isinstance(answer_id, str) else None,
                created if type(created) in (int, float) else None,
            )
        }

    _, answer = generate_answer("made-up", writer, ((path, getter), (path, getter)), True)
    answers = [_holding(path, v) for v in ("i", 7, 2.5, True, None, [], {})]
    answers += [_holding(path.rpartition(".")[0], bad) for bad in ("s", [1], None, 3) if "." in path]
    answers += [{}, [], "x", None, {"meta": []}, {"items": {}}, {"items": [1]}, {"meta": {"ids": [1]}}]
    hits = 0
    for given in answers:
        found = getter(given) if isinstance(given, dict) else None
        want = (found if isinstance(found, str) else None, found if type(found) in (int, float) else None)
        assert answer(TranslateResult("", [], "stop", {}, "m"), given)["said"] == want, (path, given)
        hits += want != (None, None)
    assert hits == 3, path  # the string, the int and the float each found where the path says


USAGE = {
    "prompt_tokens": 10,
    "completion_tokens": 4,
    "total_tokens": 14,
    "prompt_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 1},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


def _leaves(value: Any, at: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if not isinstance(value, dict):
        return {at: value}
    return {path: leaf for key, inner in value.items() for path, leaf in _leaves(inner, (*at, key)).items()}


@pytest.mark.parametrize("source", FORMATS)
@pytest.mark.parametrize("bad", [-1, True, 2.0, "3", None, {}, MISSING])
def test_the_writer_settles_each_count_as_said_does(source: str, bad: Any) -> None:
    """A count the writer reads straight into its variable (one result count no other reads: `usage_lines`) is
    settled as `said` settles it: a negative int noted `inconsistent` and left out, anything else not an int left
    out with no note; the notes come in the same order and the answer writes what `said` holds."""
    fmt = load_rules().format(source)
    assert "if type(U_0) is not int: U_0 = MISSING" in fmt.writer_code or source == "anthropic"
    assert "if type(U_3) is not int: U_3 = MISSING" in fmt.writer_code
    for path in _leaves(USAGE):
        usage = copy.deepcopy(USAGE)
        *outer, key = path
        held = usage
        for step in outer:
            held = held[step]
        held[key] = bad
        if bad is MISSING:
            del held[key]
        said_notes: list[Note] = []
        result = TranslateResult("hi", [], "stop", usage, "m")
        said = fmt.said(result, said_notes)
        notes: list[Note] = []
        written = fmt.write(result, "r1", notes, 7)
        assert [n for n in notes if n.kind != "synthesized"] == said_notes, (path, bad)
        wrote = _leaves(written["usage"])
        for at, value in _leaves(said.get("usage", {})).items():
            assert wrote.get(at, value) == value, (path, bad, at)


def test_an_answer_holds_its_result_and_notes_in_slots() -> None:
    """An AnswerBody keeps `result` and `notes` in slots (no instance dict made per answer), and a copy, a deep copy
    or a pickled one keeps them."""
    result = TranslateResult("hi", [], "weird", {"prompt_tokens": -1}, "m")
    body = load_rules().format("anthropic").answers["openai"](result, {"id": "a"})
    assert not hasattr(body, "__dict__") and body.result is result and body.notes
    for made in (copy.copy(body), copy.deepcopy(body), pickle.loads(pickle.dumps(body))):
        assert type(made) is type(body) and made == body and made.notes == body.notes and made.result == result


def test_a_fused_answers_result_is_made_on_first_read_and_copies_alike() -> None:
    """A fused answer keeps its result's fields (`made_of`, each call as new_tool_call's arguments) and makes the
    result of them on first read, once; a copy, a deep copy or a pickled one, taken before the read or after, gives
    the same result."""
    call = TranslatedToolCall("c1", "f", '{"a": 1}')
    held = ("c1", "f", '{"a": 1}', None, None)
    fields = ("hi", [held], "tool_calls", {"prompt_tokens": 1}, "m", {"id": "a"}, (), "", {}, [], None)
    body = formats.AnswerBody({"id": "a"})
    body.made, body.made_of, body.notes = None, fields, ()
    expected = TranslateResult("hi", [call], "tool_calls", {"prompt_tokens": 1}, "m", {"id": "a"})
    unread = [copy.copy(body), copy.deepcopy(body), pickle.loads(pickle.dumps(body))]
    assert body.made is None and body.result == expected and body.result is body.result
    for made in [*unread, copy.copy(body), copy.deepcopy(body), pickle.loads(pickle.dumps(body))]:
        assert type(made) is type(body) and made == body and made.notes == () and made.result == expected
