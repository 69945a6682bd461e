"""Source formats streamed: every provider's stream told as Messages events and as Responses events.

Each provider's generated answers are told as its stream (its test encoder) and translated to each source
format's events: every event is judged by the format's SDK (strict, a key the SDK does not declare fails), and
the stream must say what the whole answer says (`translate_response(..., source=...)` of the same answer).
Responses events are also fed to the openai SDK's own stream accumulator. The stream section's constructs are
tested alone on a made-up format; cancel and faults through the client.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import sys
import uuid
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from deepdiff import DeepDiff
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import toolnexus
from support.cli import explain_code
from support.faults import error_object, text_reply, tool_call_reply
from support.messages import accumulate, judge_event
from support.responses import judge_response, judge_responses_event, provider_data, sdk_accumulates
from support.sse_encoders import ENCODERS, canonical, data_of, error_event, events_reply
from support.strategies import GENERATORS, SETTINGS
from toolnexus import Cancelled, ProviderError, RuleError, StateError, ToolnexusError, load_rules
from toolnexus.devtools.conformance import demo_file
from toolnexus.devtools.stub import ProviderStub, scripted
from toolnexus.language.templates import Ctx
from toolnexus.translate import formats
from toolnexus.translate import stream as stream_module
from toolnexus.translate.format_rules import builtin_chunks, builtin_formats_dir, compile_chunks, compile_format
from toolnexus.translate.formats import ONCE, STRAIGHT, SourceEvents, SourceStream, general_moments, once_moments
from toolnexus.translate.result import TranslateResult

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import bench_stream  # its long answers of text, calls and reasoning

RULES = load_rules()
PROVIDERS = [p for p in toolnexus.providers() if RULES.get(p).streaming is not None]
FORMATS = ["anthropic", "openai-responses"]
FEW = settings(SETTINGS, max_examples=min(SETTINGS.max_examples, 25))
JUDGES = {"anthropic": judge_event, "openai-responses": judge_responses_event}


def told(provider: str, fmt: str, response: dict[str, Any], seed: int) -> tuple[list[dict[str, Any]], Any, Any]:
    """The answer streamed in the format (its events, the stream) and sent whole (None: the rules refuse it).
    Hypothesis skips an answer whose provider stream does not say all its reasoning (see below)."""
    try:
        whole = toolnexus.translate_response(provider, response, source=fmt)
    except ToolnexusError:
        whole = None
    plain = toolnexus.stream_translator(provider)
    chunks = [c for data in provider_data(provider, response, seed) for c in plain.feed(data)]
    if whole is not None:
        chunks += plain.finish()
        said = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c["choices"])
        # rules/openai-responses.yaml streams a reasoning item's first summary part; the others come whole
        # at the end, after the blocks that follow it: a gap of that provider's stream, not of the format's.
        if said != plain.result.reasoning_content and (whole.result.text or whole.result.tool_calls):
            assume(False)
    stream = toolnexus.stream_translator(provider, source=fmt)
    assert isinstance(stream, SourceStream)
    events: list[dict[str, Any]] = []
    try:
        for data in provider_data(provider, response, seed):
            events += stream.feed(data)
        events += stream.finish()
    except ToolnexusError:
        assert whole is None, "the stream refused what the whole answer took"
        return events, stream, None
    assert whole is not None, "the stream took what the whole answer refused"
    # an answer naming no id gets a new one each time (noted): the stream's stands for the whole answer's,
    # and so do the item ids the format makes from it (`answer.ids`)
    made = RULES.format(fmt).made_ids
    same_id = json.dumps(dict(whole))
    theirs_ids = [whole["id"], *made(whole["id"]).values()]
    for theirs, ours in zip(theirs_ids, [stream.message["id"], *made(stream.message["id"]).values()], strict=True):
        same_id = same_id.replace(json.dumps(theirs), json.dumps(ours))
    whole = json.loads(same_id)
    # an answer naming no time is given the time of translation: the two translations may be a second apart
    if "created_at" in whole and abs(whole["created_at"] - stream.message["created_at"]) <= 5:
        whole["created_at"] = stream.message["created_at"]
    return events, stream, whole


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("provider", PROVIDERS)
@FEW
@given(data=st.data())
def test_every_provider_streams_in_the_format_what_the_whole_answer_says(provider: str, fmt: str, data: Any) -> None:
    response = canonical(provider, data.draw(GENERATORS[provider](), label="response"))
    events, stream, whole = told(provider, fmt, response, data.draw(st.integers(0, 2**16), label="seed"))
    for event in events:
        JUDGES[fmt](event)
    if whole is None:
        return
    assert dict(stream.message) == whole
    if fmt == "anthropic":
        built = accumulate(events)
        if built != whole:  # the provider's order is not the whole answer's (reasoning or text after a call)
            same_blocks_reordered(built["content"], whole["content"], {"thinking", "redacted_thinking"})
            assert {**built, "content": []} == {**whole, "content": []}
        return
    check_responses_stream(events, whole)


def check_responses_stream(events: list[dict[str, Any]], whole: dict[str, Any]) -> None:
    """The Responses stream's own invariants, and the completed Response is the whole one."""
    judge_response(whole)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] == ("response.incomplete" if whole["status"] == "incomplete" else "response.completed")
    assert events[-1]["response"] == whole
    built = sdk_accumulates(events).model_dump(mode="json", exclude_unset=True)
    diff = DeepDiff(whole, built, ignore_numeric_type_changes=True, exclude_regex_paths=[r"\['parsed(_arguments)?'\]$"])
    assert not diff, diff.pretty()  # the SDK's parsed copies of text and arguments aside
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = {e["output_index"]: e["item"] for e in events if e["type"] == "response.output_item.done"}
    assert added == list(range(len(added))) and sorted(done) == added, "each item added, then done, in order"
    deltas: dict[tuple[str, int], str] = defaultdict(str)
    finals: dict[tuple[str, int], str] = {}
    for e in events:
        name = e["type"].rsplit(".", 1)
        if name[-1] == "delta":
            deltas[name[0], e["output_index"]] += e["delta"]
        elif name[0] in ("response.output_text", "response.reasoning_summary_text"):
            finals[name[0], e["output_index"]] = e["text"]
        elif name[0] == "response.function_call_arguments":
            finals[name[0], e["output_index"]] = e["arguments"]
    assert dict(deltas) == {k: v for k, v in finals.items() if k in deltas}, "the deltas joined are the .done text"
    assert all(v == "" for k, v in finals.items() if k not in deltas)
    items = [plain_arguments(done[i]) for i in sorted(done)]
    want = [plain_arguments(item) for item in whole["output"]]
    if items != want:  # the provider's order is not the whole answer's (reasoning or text after a call)
        same_blocks_reordered(items, want, {"reasoning"})


def same_blocks_reordered(built: list[dict[str, Any]], whole: list[dict[str, Any]], reasoning: set[str]) -> None:
    """A stream whose provider sent blocks in another order than the whole answer writes them (reasoning after
    text, text after a call): reasoning first, the same calls, the same text in all."""
    lead = next((i for i, b in enumerate(built) if b["type"] not in reasoning), len(built))
    assert all(b["type"] in reasoning for b in whole[:lead]), "the reasoning the answer opens with comes first"
    calls = [json.dumps(b) for b in built if b["type"] in ("tool_use", "function_call")]
    assert sorted(calls) == sorted(json.dumps(b) for b in whole if b["type"] in ("tool_use", "function_call"))
    assert "".join(map(text_of, built)) == "".join(map(text_of, whole))


def text_of(block: dict[str, Any]) -> str:
    """A Messages text block's text, a Responses message item's."""
    if block["type"] == "message":
        return "".join(part["text"] for part in block["content"])
    return str(block["text"]) if block["type"] == "text" else ""


def plain_arguments(item: dict[str, Any]) -> dict[str, Any]:
    """An item as compared: a function_call's arguments parsed (the stream's are the pieces as they came), a
    reasoning item without its id (the stream names it before the answer says its own)."""
    if item["type"] == "reasoning":
        return {k: v for k, v in item.items() if k != "id"}
    if item["type"] != "function_call":
        return item
    return {**item, "arguments": json.loads(item["arguments"] or "{}")}


def test_a_responses_stream_with_reasoning_text_and_calls() -> None:
    """A realistic Anthropic answer (signed thinking, redacted thinking, text, two calls) as Responses events."""
    answer = {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"},
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Lyon"}},
            {"type": "tool_use", "id": "toolu_3", "name": "weather", "input": {"city": "Oslo"}},
        ],
        "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 40, "output_tokens": 12},
    }  # fmt: skip
    events, _, whole = told("anthropic", "openai-responses", answer, 1)
    for event in events:
        judge_responses_event(event)
    check_responses_stream(events, whole)
    types = [e["type"] for e in events]
    assert types.count("response.reasoning_summary_text.delta") >= 1
    assert types.count("response.function_call_arguments.done") == 2
    # the last reasoning item carries the signed thinking sealed (`encrypted_content`) for the next turn
    assert [i["type"] for i in whole["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
        "reasoning",
    ]


# ---------------------------------------------------------------- the stream section's constructs alone

MADE_UP = """
format: acme
doc: a made-up format, to test the stream constructs alone
provider: anthropic
request:
  messages: {each: turns, kind: is, roles: {user: {kinds: {words: {part: {type: text, text: {$get: say}}}}}}}
answer:
  message: {said: {$get: text}, why: {$get: provider.stop_reason}}
  blocks:
    into: parts
    from:
      - as: {$when: reasoning_content, empty: false, then: {is: musing, said: {$get: reasoning_content}}}
      - as: {$when: text, empty: false, then: {is: words, said: {$get: text}}}
      - {each: tool_calls, as: {is: call, ref: {$get: id}}}
stream:
  reasoning: [musing]
  start:
    - {at: {$get: sequence}, hello: {$get: answer_id}, model: {$get: model}}
    - {at: {$get: sequence}, again: {$get: answer_id}}
  open:
    reasoning: {at: {$get: sequence}, opens: musing, n: {$get: index}}
    text: [{at: {$get: sequence}, opens: words, n: {$get: index}}, {at: {$get: sequence}, part: {$get: answer_id}}]
    tool_call: {at: {$get: sequence}, opens: call, n: {$get: index}, ref: {$get: id}}
    whole: {at: {$get: sequence}, opens: {$get: block}}
  piece:
    reasoning: {at: {$get: sequence}, muse: {$get: piece}}
    text: {at: {$get: sequence}, say: {$get: piece}}
    tool_call: {at: {$get: sequence}, args: {$get: piece}, ref: {$get: id}}
  done:
    reasoning: {at: {$get: sequence}, mused: {$get: pieces}, as: {$get: block}}
    text: [{at: {$get: sequence}, said: {$get: pieces}}, {at: {$get: sequence}, shut: {$get: index}}]
    tool_call: {at: {$get: sequence}, called: {$get: name}, with: {$get: pieces}}
    whole: {at: {$get: sequence}, shut: {$get: index}}
  end:
    - {at: {$get: sequence}, all: {$get: answer}}
"""

GEMINI = {
    "responseId": "r9", "modelVersion": "gemini-2.5-flash",
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "Hmm.", "thought": True}, {"text": "Hi."},
        {"functionCall": {"id": "fc1", "name": "weather", "args": {"city": "Bern"}}}]}, "finishReason": "STOP"}],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
}  # fmt: skip


def made_up_stream(tmp_path: Path, text: str = MADE_UP) -> SourceStream:
    path = tmp_path / "acme.yaml"
    path.write_text(text)
    return SourceStream(compile_format(path, RULES.providers), toolnexus.stream_translator("gemini"))


def test_made_up_format_stream_lists_done_sequence_pieces_block_and_answer(tmp_path: Path) -> None:
    stream = made_up_stream(tmp_path)
    events = [e for data in provider_data("gemini", GEMINI, 0) for e in stream.feed(data)] + stream.finish()
    assert [e.pop("at") for e in events] == list(range(len(events)))  # `sequence`: each event's number
    assert events[:2] == [{"hello": "r9", "model": "gemini-2.5-flash"}, {"again": "r9"}]  # `start`: a list
    text = "".join(e.get("say", "") for e in events)
    args = "".join(e.get("args", "") for e in events)
    assert {"mused": "Hmm.", "as": {"is": "musing", "said": "Hmm."}} in events  # `pieces`, and the answer's `block`
    assert [{"said": text}, {"shut": 1}] == [e for e in events if "said" in e or "shut" in e]  # `done.text`: a list
    assert {"called": "weather", "with": args} in events and json.loads(args) == {"city": "Bern"}
    assert {"part": "r9"} in events  # `answer_id` in a block's scope
    assert events[-1] == {"all": {"said": "Hi.", "why": "tool_use", "parts": stream.message["parts"]}}  # `answer`
    assert stream.message["parts"][0] == {"is": "musing", "said": "Hmm."}


def test_made_up_format_stream_without_done_uses_close(tmp_path: Path) -> None:
    close = "  close: {at: {$get: sequence}, closed: {$get: index}, had: {$get: pieces}}\n"
    text = MADE_UP.split("  done:")[0] + close + "  end: []\n"
    stream = made_up_stream(tmp_path, text)
    events = [e for data in provider_data("gemini", GEMINI, 0) for e in stream.feed(data)] + stream.finish()
    closes = [(e["closed"], e["had"]) for e in events if "closed" in e]
    assert [i for i, _ in closes] == [0, 1, 2] and closes[0][1] == "Hmm." and closes[1][1] == "Hi."


def test_made_up_format_stream_item_ids_are_the_answers(tmp_path: Path) -> None:
    """`item_ids`: a kind's first block is named by the id the whole answer's `answer.ids` makes for it."""
    text = MADE_UP.replace("  message: {said:", "  ids: {words: w_}\n  message: {said:")
    text = text.replace(
        "      - as: {$when: text, empty: false, then: {is: words, said: {$get: text}}}",
        "      - as: {$when: text, empty: false, then: {is: words, id: {$get: ids.words}, said: {$get: text}}}",
    )
    text = text.replace("  reasoning: [musing]\n", "  reasoning: [musing]\n  item_ids: {text: words}\n")
    text = text.replace(
        "{at: {$get: sequence}, part: {$get: answer_id}}", "{at: {$get: sequence}, part: {$get: item_id}}"
    )
    stream = made_up_stream(tmp_path, text)
    events = [e for data in provider_data("gemini", GEMINI, 0) for e in stream.feed(data)] + stream.finish()
    named = [e["part"] for e in events if "part" in e]
    words = [b for b in stream.message["parts"] if b["is"] == "words"]
    assert named == [words[0]["id"]] and named[0].startswith("w_")
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace("item_ids: {text: words}", "item_ids: {text: nowhere}"))
    with pytest.raises(RuleError) as info:
        compile_format(path, RULES.providers)
    assert info.value.file == str(path) and info.value.line == text.splitlines().index("  item_ids: {text: words}") + 1


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda t: t.replace("  done:\n", "  finished:\n"), ":stream"),  # neither close nor done (nor a known key)
        (
            lambda t: t.replace("    text: [{at: {$get: sequence}, opens: words", "    text: []\n    x: [{at: 1"),
            ":stream",
        ),
        (
            lambda t: t.replace("    text: [{at: {$get: sequence}, said", "    nope: [{at: {$get: sequence}, said"),
            ":stream",
        ),
    ],
)
def test_made_up_format_stream_errors_are_located(tmp_path: Path, change: Any, where: str) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(change(MADE_UP))
    with pytest.raises(RuleError) as info:
        compile_format(path, RULES.providers)
    assert info.value.file == str(path) and info.value.line is not None
    assert info.value.line >= MADE_UP.splitlines().index("stream:") + 1


GEMINI_CALLS = {
    **GEMINI,
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "Hi."},
        {"functionCall": {"id": "fc1", "name": "weather", "args": {"city": "Bern"}}},
        {"functionCall": {"id": "fc2", "name": "weather", "args": {"city": "Oslo"}}}]}, "finishReason": "STOP"}],
}  # fmt: skip


@pytest.mark.parametrize("apart", [False, True])
def test_made_up_format_stream_index_within_kind_numbers_a_kind_among_its_own(tmp_path: Path, apart: bool) -> None:
    """`index_within_kind`: a listed kind's blocks are numbered among their own kind (0, 1 for two calls after
    a text block), the others among all blocks as before."""
    text = MADE_UP.replace("  reasoning: [musing]\n", "  reasoning: [musing]\n  index_within_kind: [tool_call]\n")
    stream = made_up_stream(tmp_path, text if apart else MADE_UP)
    events = [e for data in provider_data("gemini", GEMINI_CALLS, 0) for e in stream.feed(data)] + stream.finish()
    opened = [(e["opens"], e["n"]) for e in events if "opens" in e]
    assert opened == ([("words", 0), ("call", 0), ("call", 1)] if apart else [("words", 0), ("call", 1), ("call", 2)])
    assert [e["ref"] for e in events if e.get("opens") == "call"] == ["fc1", "fc2"]


def test_made_up_format_stream_index_within_kind_names_a_known_kind_located(tmp_path: Path) -> None:
    text = MADE_UP.replace("  reasoning: [musing]\n", "  reasoning: [musing]\n  index_within_kind: [tool_cal]\n")
    path = tmp_path / "acme.yaml"
    path.write_text(text)
    with pytest.raises(RuleError) as info:
        compile_format(path, RULES.providers)
    assert info.value.file == str(path)
    assert info.value.line == text.splitlines().index("  index_within_kind: [tool_cal]") + 1


def test_made_up_format_stream_an_event_written_as_nothing_is_not_sent(tmp_path: Path) -> None:
    """An event template that writes nothing (a `$when` without `else`) sends no event and takes no number."""
    text = MADE_UP.replace(
        "  end:\n    - {at: {$get: sequence}, all: {$get: answer}}\n",
        "  end:\n    - {$when: answer.said, is: never, then: {at: {$get: sequence}, never: true}}\n"
        "    - {at: {$get: sequence}, all: {$get: answer}}\n",
    )
    nothing = "{$when: answer_id, is: never, then: {x: 1}}"
    text = text.replace("    text: [{at:", f"    text: [{nothing}, {{at:")
    assert text != MADE_UP
    stream = made_up_stream(tmp_path, text)
    events = [e for data in provider_data("gemini", GEMINI, 0) for e in stream.feed(data)] + stream.finish()
    assert [e.pop("at") for e in events] == list(range(len(events)))
    assert "all" in events[-1] and not any("never" in e or "x" in e for e in events)


# ---------------------------------------------------------------- the normal form's stream: Chat Completions chunks

NORMAL = builtin_formats_dir() / "openai.yaml"
HEADER = ("chatcmpl-1", 5, "m")


def _normal_copy(tmp_path: Path, old: str, new: str) -> Path:
    text = NORMAL.read_text()
    assert old in text
    path = tmp_path / "openai.yaml"
    path.write_text(text.replace(old, new))
    return path


def test_chunks_are_what_the_normal_forms_stream_section_writes(tmp_path: Path) -> None:
    """The chunk writers are compiled from formats/openai.yaml's `stream` section alone: a changed template
    changes what is written."""
    path = _normal_copy(tmp_path, "delta: {content: {$get: piece}}", "delta: {content: {$get: piece}, mine: 1}")
    chunk = compile_chunks(path).pieces["text"](HEADER, {"piece": "Hi"})
    assert chunk["choices"][0]["delta"] == {"content": "Hi", "mine": 1} and chunk["id"] == "chatcmpl-1"


def test_the_normal_forms_stream_read_as_any_formats_writes_the_same_chunks() -> None:
    """Run the way every format's stream runs (SourceEvents: blocks numbered, `index_within_kind`), from the
    chunks or from the moments they are written from, the normal form's `stream` section writes the very chunks
    the StreamTranslator yields: one description, one meaning.
    (Reasoning, text, then two calls whose arguments come in pieces: the calls are tool_calls[0] and [1].)"""
    answer = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 5},
        "content": [{"type": "thinking", "thinking": "Hmm.", "signature": "sig"}, {"type": "text", "text": "Look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Bern"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Oslo"}}],
    }  # fmt: skip
    with mock.patch.object(stream_module, "time", SimpleNamespace(time=lambda: 1.7e9)):
        plain = toolnexus.stream_translator("anthropic")
        direct = SourceStream(RULES.format("openai"), toolnexus.stream_translator("anthropic"))
    chunks = [c for data in provider_data("anthropic", answer, 0) for c in plain.feed(data)] + plain.finish()
    assert plain.result is not None
    events = SourceEvents(RULES.format("openai"), plain)
    written = [e for chunk in chunks for e in events.chunk(chunk)] + events.end(plain.result)
    assert written == chunks
    # and written from the moments the chunks are written from (`into`: no chunk built)
    assert [e for data in provider_data("anthropic", answer, 0) for e in direct.feed(data)] + direct.finish() == chunks
    calls = [e for c in chunks if c["choices"] for e in c["choices"][0]["delta"].get("tool_calls", ())]
    assert [(e["index"], e.get("id")) for e in calls if "id" in e] == [(0, "toolu_1"), (1, "toolu_2")]


@pytest.mark.parametrize("extra", [None, {"google": {"thought_signature": "s"}}])
@pytest.mark.parametrize("piece", ["", '{"a":1}'])
def test_chunk_writers_written_as_one_display_are_what_their_templates_write(extra: Any, piece: str) -> None:
    """Each chunk writer, generated as one display (a `$when` without `else` as a key or element there or
    left out), writes what the general code of its template writes, over the header and the moment's scope."""
    from toolnexus.language.templates import Ctx, Env, compile_node

    chunks = builtin_chunks()
    fmt = RULES.format("openai")
    scope = {"index": 1, "id": "call_1", "name": "f", "extra_content": extra, "piece": piece}
    header = dict(zip(("answer_id", "created", "model"), HEADER, strict=True))
    writers = {("stream", "start"): chunks.start, ("stream", "open", "tool_call"): chunks.open}
    writers.update({("stream", "piece", kind): chunks.pieces[kind] for kind in ("text", "reasoning", "tool_call")})
    for key, write in writers.items():
        general = compile_node(fmt.plan.nodes[key], key, Env(fmt.plan.source))
        assert write.__name__ == "write"  # generated, not the general render
        assert write(HEADER, dict(scope)) == general({**header, **scope}, Ctx("openai", outbound=True)), key
    entries = chunks.open(HEADER, dict(scope))["choices"][0]["delta"]["tool_calls"]
    written: list[Any] = []
    chunks.call(HEADER, written, 1, "call_1", "f", extra, piece)
    assert written == entries
    assert len(entries) == (2 if piece else 1) and ("extra_content" in entries[0]) is (extra is not None)
    chunks.arguments(HEADER, written, 1, piece)
    assert (
        written[len(entries) :]
        == chunks.pieces["tool_call"](HEADER, {"index": 1, "piece": piece})["choices"][0]["delta"]["tool_calls"]
    )


@pytest.mark.parametrize("piece", ["", '{"a":1}'])
def test_a_display_over_a_name_known_null_leaves_its_tests_out(piece: str) -> None:
    """A name the caller writes as `None` (a value it knows is null: a plain call's `extra_content`): the display
    decides its `$when` tests when written, and writes the same chunk as the display that tests it."""
    from toolnexus.language.templates import is_empty

    chunks = builtin_chunks()
    names = dict(zip(("answer_id", "created", "model"), ("h[0]", "h[1]", "h[2]"), strict=True))
    names.update({"index": "k", "id": "cid", "name": "nm", "piece": "a"})
    folded = chunks.display("open", {**names, "extra_content": "None"})
    tested = chunks.display("open", {**names, "extra_content": "x"})
    assert folded is not None and tested is not None
    assert "x is not None" in tested and "None is not None" not in folded and "extra_content" not in folded
    scope = {"h": HEADER, "k": 1, "cid": "call_1", "nm": "f", "a": piece, "x": None, "is_empty": is_empty}
    want = chunks.open(HEADER, {"index": 1, "id": "call_1", "name": "f", "extra_content": None, "piece": piece})
    assert eval(folded, scope) == eval(tested, scope) == want


@pytest.mark.parametrize("piece", ["", '{"a":1}'])
def test_a_display_over_a_name_known_a_string_tests_its_truth(piece: str) -> None:
    """A name the caller knows holds a string (`texts`: a plain call's arguments, made a string first): its
    `$when: {empty: false}` is the string's truth, not `is_empty`, and the chunk is the one `is_empty` writes."""
    from toolnexus.language.templates import is_empty

    chunks = builtin_chunks()
    names = dict(zip(("answer_id", "created", "model"), ("h[0]", "h[1]", "h[2]"), strict=True))
    names.update({"index": "k", "id": "cid", "name": "nm", "extra_content": "None", "piece": "a"})
    known = chunks.display("open", names, frozenset({"piece"}))
    tested = chunks.display("open", names)
    assert known is not None and tested is not None
    assert "is_empty" not in known and " if a else " in known and "is_empty(a)" in tested
    scope = {"h": HEADER, "k": 1, "cid": "call_1", "nm": "f", "a": piece, "is_empty": is_empty}
    want = chunks.open(HEADER, {"index": 1, "id": "call_1", "name": "f", "extra_content": None, "piece": piece})
    assert eval(known, scope) == eval(tested, scope) == want


@pytest.mark.parametrize("fmt", [*FORMATS, "openai"])
def test_released_calls_are_the_moments_their_chunks_are_written_from(fmt: str) -> None:
    """Tool calls released together (held for a synthesized id) go out one way, as moments: a whole call (held as
    its index in the final translation's calls) as the opening its chunk would be written from, with that call's
    id, name, signature and arguments; a held opening or arguments piece as it was held; all in order. Plain,
    they are the entries of the one chunk that releases them; in a format, its events."""
    from toolnexus.translate.result import new_tool_call
    from toolnexus.translate.stream import CHUNKS, _Entries, _moment

    chunks = builtin_chunks()
    calls = [new_tool_call("call_0_x", "f", '{"a":1}', None), new_tool_call("call_1_x", "g", "", {"k": "v"}),
             new_tool_call("call_2_x", "h", "{}", {"google": {"thought_signature": "s"}})]  # fmt: skip
    opening = {"index": 3, "id": "c3", "name": "k", "extra_content": None, "piece": ""}
    piece = {"index": 3, "piece": '{"b":'}
    translator = toolnexus.stream_translator("gemini")
    translator._held = [0, (chunks.open, opening), 1, (chunks.pieces["tool_call"], piece), 2]
    moments = [chunks.open if type(item) is int else item[0] for item in translator._held]
    scopes = [
        {"index": item, "id": calls[item].id, "name": calls[item].name,
         "extra_content": calls[item].extra_content, "piece": calls[item].arguments}
        if type(item) is int else item[1]
        for item in translator._held
    ]  # fmt: skip
    if fmt == "openai":  # as `finish` releases them: one generated loop writing a chunk's entries
        got: list[Any] = []
        CHUNKS.released(HEADER, got, translator._held, calls, functools.partial(_moment, _Entries(HEADER)))
        translator._held.clear()
        chunks_of = [m(HEADER, s) for m, s in zip(moments, scopes, strict=True)]
        want = [e for chunk in chunks_of for e in chunk["choices"][0]["delta"]["tool_calls"]]
        assert [e.get("id") for e in want] == ["call_0_x", None, "c3", "call_1_x", None, "call_2_x", None]
        assert "extra_content" not in want[0] and want[3]["extra_content"] == {"k": "v"}
    else:  # the format's events, as its writer reads the chunks the held moments are written from
        translator._writer = events = SourceEvents(RULES.format(fmt))
        events.start([], (HEADER[0], HEADER[1], HEADER[2]))
        got = translator._release([], events, calls)
        reader = SourceEvents(RULES.format(fmt))
        reader.start([], (HEADER[0], HEADER[1], HEADER[2]))
        want = [e for m, s in zip(moments, scopes, strict=True) for e in reader.chunk(m(HEADER, s))]
        assert [e.get("type") for e in want].count(want[0]["type"]) == 4  # four calls opened
    assert got == want and translator._held == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_finished_source_stream_is_freed_as_soon_as_it_is_dropped(fmt: str) -> None:
    """The translator and the format's events refer to each other while the answer streams; once it has ended
    nothing of the answer waits for the cyclic collector (a long answer's thousands of objects would, stream
    after stream, and make its full passes long)."""
    import gc
    import weakref

    reply = tool_call_reply("gemini")
    stream = toolnexus.stream_translator("gemini", source=fmt)
    for data in provider_data("gemini", reply, 0):
        stream.feed(data)
    stream.finish()
    assert stream.message is not None
    translator, events = weakref.ref(stream.translator), weakref.ref(stream.events)
    gc.disable()
    try:
        del stream
        assert translator() is None and events() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("provider", ["gemini", "anthropic", "openai"])
def test_a_calls_input_is_the_object_the_provider_sent_not_its_text_read_back(provider: str) -> None:
    """Messages written from a stream (and whole): where the provider sent a call's arguments as an object, the
    `tool_use.input` is that object (the assembled answer's), not a parse of its JSON text; where it sent text, the
    text read. Either way `input` is what the call's `input_json_delta` pieces say."""
    reply = bench_stream.tool_reply(provider, json.loads(demo_file(provider).read_text(encoding="utf-8")), 12)
    assert reply is not None
    stream = toolnexus.stream_translator(provider, source="anthropic")
    events = [e for data in provider_data(provider, canonical(provider, reply[0]), 0) for e in stream.feed(data)]
    events += stream.finish()
    whole = toolnexus.translate_response(provider, canonical(provider, reply[0]), source="anthropic")
    for message in (stream.message, whole):
        assert message is not None
        uses = [b for b in message["content"] if b["type"] == "tool_use"]
        assert len(uses) == len(message.result.tool_calls) > 1
        for use, call in zip(uses, message.result.tool_calls, strict=True):
            assert use["input"] == json.loads(call.arguments)
            assert (use["input"] is call.given) is (provider != "openai")
    said: dict[int, str] = defaultdict(str)
    for event in events:
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
            said[event["index"]] += event["delta"]["partial_json"]
    inputs = [json.loads(said[i]) for i, b in enumerate(stream.message["content"]) if b["type"] == "tool_use"]
    assert inputs == [b["input"] for b in stream.message["content"] if b["type"] == "tool_use"]


def test_chunk_writers_refuse_a_template_they_cannot_write_located(tmp_path: Path) -> None:
    """A chunk moment is one chunk; a tool call's entries are written plainly (calls released together join
    them): anything else is a located RuleError."""
    text = NORMAL.read_text()
    entries = "            tool_calls:\n              - index: {$get: index}\n"
    path = _normal_copy(
        tmp_path, entries, "            tool_calls: {$get: calls}\n            other:\n              - index: 0\n"
    )
    with pytest.raises(RuleError) as info:
        compile_chunks(path)
    assert info.value.file == str(path)
    lines = text.splitlines()
    assert info.value.line == lines.index("    tool_call:", lines.index("  open:", lines.index("stream:"))) + 1
    assert info.value.rule == "stream.open.tool_call"


# ---------------------------------------------------------------- cancel and faults, through the client


async def client_events(provider: str, fmt: str, reply: Any, cancel: asyncio.Event | None = None) -> Any:
    """One translate_stream in the format against a stub; the events yielded, then the error it ended with."""
    events: list[dict[str, Any]] = []
    with ProviderStub(scripted([reply])) as stub:
        async with toolnexus.create_client(stub.base_url, provider, "m", api_key="k", max_retries=0) as client:
            stream = client.translate_stream([{"role": "user", "content": "hi"}], cancel=cancel, source=fmt)
            try:
                async for event in stream:
                    events.append(event)
                    if cancel is not None and len(events) == 1:
                        asyncio.get_running_loop().call_later(0.05, cancel.set)
            except ToolnexusError as exc:
                return events, exc, stream
    return events, None, stream


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai", "bedrock"])
def test_client_stream_in_the_format_cancel_and_faults(provider: str, fmt: str) -> None:
    sent = ENCODERS[provider](tool_call_reply(provider), random.Random(3), cuts=3)
    events, error, stream = asyncio.run(client_events(provider, fmt, events_reply(provider, sent)))
    assert error is None and events
    for event in events:
        JUDGES[fmt](event)
    assert stream.message is not None
    # cancelled while the provider holds the connection: Cancelled, no whole answer
    held = events_reply(provider, [b"".join(ENCODERS[provider](text_reply(provider), random.Random(3))[:2])], hold=60.0)
    events, error, stream = asyncio.run(client_events(provider, fmt, held, asyncio.Event()))
    assert isinstance(error, Cancelled) and events
    with pytest.raises(StateError, match="once the stream is exhausted") as info:
        stream.message  # noqa: B018
    assert isinstance(info.value, RuntimeError)  # what it was before StateError, still caught as one
    # an error event mid-stream: a ProviderError after valid events, no whole answer
    bad = [*sent[:2], error_event(provider, error_object(provider, "Overloaded", "overloaded_error")), *sent[2:]]
    events, error, stream = asyncio.run(client_events(provider, fmt, events_reply(provider, bad)))
    assert isinstance(error, ProviderError) and error.kind == "http"
    for event in events:
        JUDGES[fmt](event)
    with pytest.raises(StateError):
        stream.message  # noqa: B018


def test_the_answer_so_far_leaves_the_stream_untouched() -> None:
    """`partial()` translates a copy of the response built so far: mid-reasoning it holds the reasoning said so
    far, and the stream goes on to the same result as if it had never been asked."""
    answer = {
        "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "thinking", "thinking": "Long thought.", "signature": "c2ln"},
                    {"type": "text", "text": "Done."}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 4, "output_tokens": 2},
    }  # fmt: skip
    translator = toolnexus.stream_translator("anthropic")
    datas = provider_data("anthropic", answer, 2)
    asked = []
    for data in datas:
        translator.feed(data)
        asked.append(translator.partial())
    translator.finish()
    assert translator.result is not None
    assert translator.result.to_dict() == toolnexus.translate_response("anthropic", answer).to_dict()
    said = [r.reasoning_content for r in asked if r is not None]
    assert said and all("Long thought.".startswith(s) for s in said) and said[-1] == "Long thought."
    assert translator.started == 2  # one element per content block


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_format_asked_of_a_stream_under_way_is_a_state_error(fmt: str) -> None:
    """A translator writes a format's events only from its first event (a blank one does not count): asked later,
    a StateError (a call made out of order), and the translator goes on writing its chunks as before."""
    datas = provider_data("anthropic", text_reply("anthropic"), 1)
    fresh = toolnexus.stream_translator("anthropic")
    fresh.feed(" ")
    assert isinstance(SourceStream(RULES.format(fmt), fresh).events, SourceEvents)
    plain, late = toolnexus.stream_translator("anthropic"), toolnexus.stream_translator("anthropic")
    expected = [plain.feed(data) for data in datas]
    said = [late.feed(datas[0])]
    with pytest.raises(StateError, match="only from its first event"):
        SourceStream(RULES.format(fmt), late)
    said += [late.feed(data) for data in datas[1:]]
    said.append(late.finish())
    expected.append(plain.finish())
    choices = [[[c["choices"] for c in chunks] for chunks in run] for run in (said, expected)]
    assert choices[0] == choices[1] and late.result is not None and plain.result is not None
    assert late.result.text == plain.result.text != ""


# ---------------------------------------------------------------- the generated writers against the general walk


def lockstep(fmt: Any, provider: str, datas: list[str]) -> list[list[Any]]:
    """One provider stream (its events' data) written in the format three ways at once: by a translator writing
    the format's events itself (`into`: each moment given to them as it comes, no chunk built), and from the plain
    translator's chunks (`SourceEvents.chunk`) by the generated writers (`SourceFormat.events`) and by each
    moment's templates walked one by one (`general_moments`). Each step's events, the whole answer at the end, or
    the error, per way. Ids and times a way would make are made the same."""
    made = {"uuid": SimpleNamespace(uuid4=lambda: uuid.UUID(int=7)), "time": SimpleNamespace(time=lambda: 1.7e9)}
    with mock.patch.multiple(stream_module, **made):
        plain = toolnexus.stream_translator(provider)
        direct = SourceStream(fmt, toolnexus.stream_translator(provider))
    general = replace(fmt, events=MappingProxyType({}), straight=MappingProxyType({}))
    chunked = [SourceEvents(fmt, plain), SourceEvents(general, plain)]
    out: list[list[Any]] = [[], [], []]

    def refused(exc: ToolnexusError) -> list[Any]:
        return [(type(exc).__name__, getattr(exc, "path", None), str(exc))]

    def said(way: int, run: Any) -> None:
        try:
            got = run()
        except ToolnexusError as exc:
            got = refused(exc)
        out[way].append(got)

    def written(events: SourceEvents, chunks: list[dict[str, Any]], result: Any = None) -> list[Any]:
        got = [event for chunk in chunks for event in events.chunk(chunk)]
        return got if result is None else [*got, *events.end(result), dict(events.message or {})]

    def steps(data: str | None) -> bool:
        """One event (None: the end) the three ways; False once the plain translator refuses it."""
        try:
            chunks = plain.feed(data) if data is not None else plain.finish()
        except ToolnexusError as exc:
            said(0, lambda: direct.feed(data) if data is not None else direct.finish())
            out[1].append(refused(exc))
            out[2].append(refused(exc))
            return False
        said(0, lambda: direct.feed(data) if data is not None else [*direct.finish(), dict(direct.message or {})])
        for k, events in enumerate(chunked, 1):
            said(k, lambda events=events: written(events, chunks, plain.result if data is None else None))
        return True

    with mock.patch.multiple(formats, **made), mock.patch.multiple(stream_module, **made):
        for data in [*datas, None]:
            if not steps(data):
                break
    return out


@pytest.mark.parametrize("fmt", [*FORMATS, "openai"])
@pytest.mark.parametrize("provider", PROVIDERS)
@FEW
@given(data=st.data())
def test_generated_stream_writers_write_what_the_general_walk_writes(provider: str, fmt: str, data: Any) -> None:
    response = canonical(provider, data.draw(GENERATORS[provider](), label="response"))
    datas = provider_data(provider, response, data.draw(st.integers(0, 2**16), label="seed"))
    direct, fast, general = lockstep(RULES.format(fmt), provider, datas)
    assert direct == general and fast == general


@pytest.mark.parametrize("fmt", [*FORMATS, "openai"])
@pytest.mark.parametrize("provider", bench_stream.ROWS)
def test_generated_stream_writers_on_long_answers_of_text_calls_and_reasoning(provider: str, fmt: str) -> None:
    """The bench's answers (long text; parallel calls of many argument pieces; long reasoning; each a row where the
    provider's rules stream it), written the three ways: the same events, nearly all of them written by the
    one-piece shortcut; the reasoning's pieces go to the open block's own handler (set on the translator's
    `_Waiting`), the method asked at most once, for the first piece."""
    script = json.loads(demo_file(provider).read_text(encoding="utf-8"))
    waits = stream_module._Waiting.reasoning
    for row, made in bench_stream.rows(provider, script, 60).items():
        if made is None:
            continue
        datas = [data_of(provider, e) for e in ENCODERS[provider](made[0], random.Random(1), cuts=made[1])]
        with mock.patch.object(stream_module._Waiting, "reasoning", autospec=True, side_effect=waits) as asked:
            direct, fast, general = lockstep(RULES.format(fmt), provider, datas)
        assert direct == general and fast == general, row
        assert sum(map(len, general)) > 60, row
        assert asked.call_count <= 1, row


@pytest.mark.parametrize("fmt", [*FORMATS, "openai"])
def test_a_translator_writing_the_format_gives_every_moment_to_its_handler(fmt: str) -> None:
    """Reasoning that opens the answer (held to the end of each event), then text, a call, reasoning after them
    and a second call (given as they come): written by a translator writing the format itself (`into`), the
    events are those written from its chunks, piece by piece."""
    answer = {
        "id": "msg_3", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 5},
        "content": [{"type": "thinking", "thinking": "First thought.", "signature": "c2lnMQ=="},
                    {"type": "text", "text": "Look here."},
                    {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Bern"}},
                    {"type": "thinking", "thinking": "Second thought.", "signature": "c2lnMg=="},
                    {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Oslo"}}],
    }  # fmt: skip
    datas = [data_of("anthropic", e) for e in ENCODERS["anthropic"](answer, random.Random(5), cuts=3)]
    direct, fast, general = lockstep(RULES.format(fmt), "anthropic", datas)
    assert direct == general and fast == general
    assert len([e for step in direct for e in step]) > 25


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_event_continuing_the_opening_reasoning_and_starting_other_blocks_is_looked_at_whole(fmt: str) -> None:
    """One provider event continues the reasoning the answer opens with, then starts a text block and a second
    reasoning block: written by a translator writing the format itself, its moments wait for the end of the event
    (`SourceEvents.opening`), so the boundary between the reasoning blocks is read from the whole event, as it is
    read from the event's chunks."""

    def event(parts: list[dict[str, Any]], finish: str | None = None) -> str:
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
        return json.dumps({"candidates": [{**candidate, **({"finishReason": finish} if finish else {})}],
                           "modelVersion": "gemini-x", "responseId": "r1"})  # fmt: skip

    datas = [
        event([{"thought": True, "text": "First "}]),
        event([{"thought": True, "text": "thought."}, {"text": "Look."}, {"thought": True, "text": "Second."}]),
        event([{"text": " Done."}], "STOP"),
    ]
    direct, fast, general = lockstep(RULES.format(fmt), "gemini", datas)
    assert direct == general and fast == general
    assert len([e for step in direct for e in step]) > 12


@pytest.mark.parametrize("fmt", FORMATS)
def test_opening_reasoning_pieces_go_straight_and_what_follows_in_their_event_waits_behind_them(fmt: str) -> None:
    """In the reasoning an answer opens with, a piece of an event that started no element is written as it comes
    (nothing held for the end of its event); a moment after it in the same event (the text that ends the reasoning)
    waits for the end of the event behind the events the piece wrote: every event's events are those written
    from its chunks."""

    def event(parts: list[dict[str, Any]], finish: str | None = None) -> str:
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
        return json.dumps({"candidates": [{**candidate, **({"finishReason": finish} if finish else {})}],
                           "modelVersion": "gemini-x", "responseId": "r1"})  # fmt: skip

    datas = [event([{"thought": True, "text": f"Thought {i}. "}]) for i in range(8)]
    datas += [event([{"thought": True, "text": "Last."}, {"text": "Look."}]), event([{"text": " Done."}], "STOP")]
    stream = toolnexus.stream_translator("gemini", source=fmt)
    replays, waits = stream_module.StreamTranslator._moments, stream_module._Waiting.reasoning
    with (
        mock.patch.object(stream_module.StreamTranslator, "_moments", autospec=True, side_effect=replays) as spy,
        mock.patch.object(stream_module._Waiting, "reasoning", autospec=True, side_effect=waits) as asked,
    ):
        said = [stream.feed(data) for data in datas[:8]]
    # the first events' moments wait: for the header, then while the element's text becomes a streamed one (moments
    # the generated code writes in general); from then on every piece goes straight, to the open reasoning block's
    # own handler (set on the translator's `_Waiting`: no step of its own between)
    assert spy.call_count <= 3 and asked.call_count <= 1 and all(said)
    direct, fast, general = lockstep(RULES.format(fmt), "gemini", datas)
    assert direct == general and fast == general and len(direct[8]) > 2


def test_generated_stream_writers_of_a_made_up_format(tmp_path: Path) -> None:
    """Every moment of a made-up format, one of its pieces reading what a piece's scope lacks (`pieces`: the
    template pasted, not one display), written the same three ways."""
    text = MADE_UP.replace("args: {$get: piece}, ref: {$get: id}}", "args: {$get: piece}, late: {$get: pieces}}")
    fmt = made_up_stream(tmp_path, text).events.format
    assert "def write_piece_tool_call(s, piece, q, c):\n    return [" not in fmt.events_code
    direct, fast, general = lockstep(fmt, "gemini", provider_data("gemini", GEMINI, 0))
    assert direct == general and fast == general
    assert [sorted(e) for step in fast for e in step if "args" in e] == [["args", "at"]]  # `pieces`: not a piece's


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai", "made-up"])
def test_each_stream_moment_is_one_generated_function(fmt: str, tmp_path: Path) -> None:
    """One function per moment, writing its events straight-line; for the built-in formats every piece's events,
    and in Messages and Responses a call's opening (its id sealed with any state) and the whole call said in one
    piece (`once.tool_call`), are one display (no test per value, no template walked), and every moment writes
    what its templates do, None values too."""
    compiled = made_up_stream(tmp_path).events.format if fmt == "made-up" else RULES.format(fmt)
    full = {"index": 2, "answer_id": "r1", "item_id": "i1", "pieces": "pp", "id": "call_1", "name": "f",
            "extra_content": {"google": {"s": "x"}}, "block": {"type": "b"}, "model": "m", "created": 5,
            "answer": {"status": "completed"}, "provider": {}, "finish_reason": "stop",
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}  # fmt: skip
    said = {"refusal": "no", "annotations": [{"type": "url_citation"}], "usage": {"prompt_tokens": 1}}
    general = general_moments(compiled)
    empty = {name for name, renders in compiled.stream.items() if not renders}  # a moment of no event (`[]`)
    assert set(compiled.events) == set(general) - empty - ({"end"} if not compiled.stream_end else set())
    for name, write in compiled.events.items():
        own = ONCE.get(name.partition(".")[2], ()) if name.startswith("once.") else ()  # its block's, as arguments
        signature = f"def write_{name.replace('.', '_')}(s, piece, q, c{''.join(f', a_{n}' for n in own)}):"
        assert signature in compiled.events_code
        piece = "p" if name.startswith(("piece.", "once.")) else None
        for scope in (full, {**full, "id": None, "name": None, "extra_content": None}, {**full, **said}):
            ctx, again = Ctx(compiled.name, outbound=True), Ctx(compiled.name, outbound=True)
            args = [scope[n] for n in own]  # a block said in one piece: the stream's scope, then its own names
            stream = {k: v for k, v in scope.items() if k not in own} if own else dict(scope)
            got = write(stream, piece, 7, ctx, *args)
            assert got == general[name](dict(stream), piece, 7, again, *args), name
            assert ctx.notes == again.notes, name
            if own:  # the same events as its opening, piece and closing written over the block's whole scope
                parts = once_moments(compiled.events)[name]
                closing = {**scope, "pieces": piece}
                pieces = [(parts[0], None, scope), (parts[1], piece, scope), (parts[2], None, closing)]
                q, whole = 7, []
                for part, said_piece, over in pieces:
                    whole += general[part](dict(over), said_piece, q, Ctx(compiled.name, outbound=True))
                    q = 7 + len(whole)
                assert got == whole, name
            if name in compiled.straight:  # bound to a block's scope: the same events, appended, and the next number
                out: list[Any] = [None]
                assert compiled.straight[name](dict(stream))(out, piece, 7) == 7 + len(got) and out[1:] == got, name
        call = name.startswith("once.") or name == "open.tool_call"
        plain = name.startswith("piece.") or (fmt in FORMATS and call)
        assert (name in compiled.straight) is (plain and tuple(name.split(".")) in STRAIGHT), name
        if fmt != "made-up" and plain:
            assert f"{signature}\n    return [" in compiled.events_code


def test_reasoning_blocks_among_answer_blocks_that_are_not_objects_go_whole_at_the_end() -> None:
    """The answer's reasoning blocks are read among all its blocks at the end (in C, each an object): blocks that
    are not objects (raw server blocks) are walked one by one, and a reasoning block after them still goes whole."""
    extras = {"server_blocks": ["raw", 3], "extra_content": {"google": {"x": 1}}}
    result = TranslateResult("hi", [], "stop", {}, "m", reasoning_content="thought", message_extras=extras)
    events = SourceEvents(RULES.format("anthropic"))
    opened = [e["content_block"] for e in events.end(result) if e["type"] == "content_block_start"]
    assert events.message is not None and "raw" in events.message["content"]
    assert [block["type"] for block in opened] == ["thinking", "redacted_thinking"]
    assert opened[1] == events.message["content"][-1]


def test_explain_shows_the_stream_writers() -> None:
    shown = explain_code("--source", "openai-responses")
    assert "stream: the events' generated writers" in shown
    assert "def write_piece_text(s, piece, q, c):" in shown and "def write_end(s, piece, q, c):" in shown
