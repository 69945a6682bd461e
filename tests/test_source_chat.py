"""Chat Completions as a format file (rules/formats/openai.yaml, `normal: true`): the request reader's knowledge
of the normal form (fields, roles, message keys, part and tool-call keys, tool types, tool_choice strings) is
compiled from it, `Rulebook.format("openai")` is a format like the others (its answer a ChatCompletion), and
the file's own constructs are refused, located, anywhere else. Tested on made-up files in a tmp directory as
well as on the shipped one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from openai.types.chat import ChatCompletion, completion_create_params

from support.made_up import ACME_FORMAT
from toolnexus import RuleError, load_rules, translate_request, translate_response
from toolnexus.translate import reader
from toolnexus.translate.fields import FIELDS, OPENAI_REQUEST_FIELDS
from toolnexus.translate.format_rules import builtin_formats_dir, builtin_normal_form, compile_normal_form

SHIPPED = builtin_formats_dir() / "openai.yaml"

# A made-up normal form: other roles, keys and kinds than the shipped one, so what compiles is the file's.
MADE_UP_NORMAL = """
format: openai
provider: openai
normal: true
request:
  fields:
    model: {$get: model}
    tool_choice: {$lookup: tool_choice, table: {maybe: auto, never: none}}
  messages:
    each: turns
    kind: is
    roles:
      boss:
        kinds:
          words: {part: {is: words, say: {$get: say}}}
      human:
        others: pass
        keys: [mood]
        kinds:
          words: {part: {is: words, say: {$get: say}}}
          picture: {part: {is: picture, pixels: {$get: pixels}, size: {$get: size}}}
      bot:
        lists:
          calls:
            fn: {item: calls, as: {ref: {$get: ref}, is: fn, fn: {$get: fn}}}
        kinds:
          words: {part: {is: words, say: {$get: say}}}
  tools:
    each: gadgets
    fields: {name: {$get: spec.name}}
    unsupported:
      type: {action: error, accept: [fn, thing]}
answer:
  message: {said: {$get: text}}
"""


def write(tmp_path: Path, text: str, name: str = "openai.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ---------------------------------------------------------------- the reader reads the file


def test_the_readers_tables_are_the_compiled_normal_form() -> None:
    normal = builtin_normal_form()
    assert reader.NORMAL is normal
    assert reader.ROLES == normal.roles == ("system", "developer", "user", "assistant", "tool")
    assert reader.READ_KEYS is normal.read_keys
    assert reader.READ_KEYS["tool"] == {"role", "content", "tool_call_id", "is_error"}
    assert reader.TEXT_PART_KEYS == normal.part_keys("text") == {"type", "text"}
    assert reader.IMAGE_PART_KEYS == normal.part_keys("image_url") == {"type", "image_url"}
    assert (
        reader.TOOL_CALL_KEYS == normal.list_keys("assistant", "tool_calls", "function") == {"id", "type", "function"}
    )
    assert reader.TOOL_KEYS == normal.tool_keys == {"type", "function"}
    assert reader.TOOL_TYPES == ("function",) and reader.TOOL_CHOICES == ("auto", "none", "required")
    # a tool message's parts: the file's text and image_url, an image read as its URL or its bytes
    assert {"text", "image_url", "image_base64"} == reader.TOOL_RESULT_KINDS
    assert normal.role_kinds["system"] == {"text"} and normal.role_kinds["user"] is None


def test_a_made_up_normal_form_compiles_to_its_own_tables(tmp_path: Path) -> None:
    normal = compile_normal_form(write(tmp_path, MADE_UP_NORMAL))
    assert normal.roles == ("boss", "human", "bot")
    assert normal.read_keys == {
        "boss": {"role", "content"},
        "human": {"role", "content", "mood"},
        "bot": {"role", "content", "calls"},
    }
    assert normal.part_keys("picture") == {"is", "pixels", "size"}
    assert normal.list_keys("bot", "calls", "fn") == {"ref", "is", "fn"}
    assert normal.role_kinds == {"boss": {"words"}, "human": None, "bot": {"words"}}
    assert normal.tool_keys == {"spec", "type"} and normal.tool_types() == ("fn", "thing")
    assert normal.tool_choices == ("maybe", "never")
    assert normal.fields == {"model", "tool_choice", "turns", "gadgets"}


def test_a_normal_form_without_what_the_reader_reads_names_its_file(tmp_path: Path) -> None:
    normal = compile_normal_form(write(tmp_path, MADE_UP_NORMAL), "formats/openai.yaml")
    with pytest.raises(RuleError) as caught:
        normal.part_keys("text")
    assert caught.value.file == "formats/openai.yaml" and "'text'" in str(caught.value)
    with pytest.raises(RuleError):
        normal.list_keys("assistant", "tool_calls", "function")
    with pytest.raises(RuleError):
        normal.listed_kinds("human")  # others pass: no list of its kinds
    assert normal.listed_kinds("bot") == {"words"} and normal.tool_types() == ("fn", "thing")
    without = compile_normal_form(
        write(tmp_path, MADE_UP_NORMAL.replace("    unsupported:\n      type:", "    unsupported:\n      kind:"))
    )
    with pytest.raises(RuleError):
        without.tool_types()


def test_the_request_fields_a_rule_file_may_name_are_the_normal_forms() -> None:
    assert OPENAI_REQUEST_FIELDS is builtin_normal_form().fields
    assert FIELDS <= OPENAI_REQUEST_FIELDS  # every typed field is one the file names
    sdk = set(completion_create_params.CompletionCreateParamsBase.__annotations__)
    # the SDK's fields the normal form does not name: each provider's rules settle them as unknown fields
    assert sdk - OPENAI_REQUEST_FIELDS <= {"moderation", "prompt_cache_options", "prompt_cache_retention"}


def test_the_default_source_reads_as_the_shipped_file_says() -> None:
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "x"}}]}],
        "tool_choice": "requird",
    }
    with pytest.raises(Exception) as caught:
        translate_request("openai", request)
    assert getattr(caught.value, "path", None) == "tool_choice" and "'required'" in str(caught.value)


# ---------------------------------------------------------------- located errors


def test_a_reader_construct_in_another_format_is_located(tmp_path: Path) -> None:
    (tmp_path / "formats").mkdir()
    text = ACME_FORMAT.replace(
        "      user:\n        kinds:\n", "      user:\n        keys: [mood]\n        kinds:\n", 1
    )
    assert text != ACME_FORMAT
    write(tmp_path / "formats", text, "acme.yaml")
    with pytest.raises(RuleError) as caught:
        load_rules(tmp_path).format("acme")
    assert caught.value.file.endswith("formats/acme.yaml") and caught.value.line == line_of(text, "keys: [mood]")


def test_normal_true_in_another_format_is_located(tmp_path: Path) -> None:
    text = ACME_FORMAT.replace("provider: anthropic\n", "provider: anthropic\nnormal: true\n", 1)
    with pytest.raises(RuleError) as caught:
        compile_normal_form(write(tmp_path, text, "acme.yaml"))
    assert caught.value.line == line_of(text, "normal: true")


def test_a_broken_normal_form_is_located(tmp_path: Path) -> None:
    for old, new, needle in (
        ("            fn: {item: calls,", "            fn: {itme: calls,", "itme"),  # a list entry: the kinds' schema
        ("        others: pass\n", "        others: drop\n", "others: drop"),
        ("        keys: [mood]\n", "        keys: mood\n", "keys: mood"),
        ("{is: picture, pixels: {$get: pixels}, size: {$get: size}}", '{$get: "@"}', "picture"),  # keys unnamed
        # one reader reads a kind in every role: its keys must agree
        (
            "          words: {part: {is: words, say: {$get: say}}}\n  tools:",
            "          words: {part: {is: words, text: {$get: text}}}\n  tools:",
            "text: {$get: text}",
        ),
    ):
        text = MADE_UP_NORMAL.replace(old, new, 1)
        assert text != MADE_UP_NORMAL, old
        with pytest.raises(RuleError) as caught:
            compile_normal_form(write(tmp_path, text))
        assert caught.value.line == line_of(text, needle), (old, str(caught.value))


def test_a_rules_directory_cannot_change_the_normal_form(tmp_path: Path) -> None:
    same, changed = tmp_path / "same", tmp_path / "changed"
    for rules in (same, changed):
        (rules / "formats").mkdir(parents=True)
        shutil.copy(SHIPPED, rules / "formats" / "openai.yaml")
    assert load_rules(same).formats()[0] == "openai"  # a copy (a copied rules directory) changes nothing
    edited = changed / "formats" / "openai.yaml"
    edited.write_text(SHIPPED.read_text().replace("others: pass", "others: pass  # changed", 1))
    with pytest.raises(RuleError) as caught:
        load_rules(changed)
    assert caught.value.file == str(edited)


# ---------------------------------------------------------------- the format, as the others


ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 7},
}


def test_the_normal_forms_answer_is_a_chat_completion_of_the_result() -> None:
    fmt = load_rules().format("openai")
    result = translate_response("anthropic", ANSWER)
    answer = fmt.write(result, "chatcmpl-1", [], 7)
    ChatCompletion.model_validate(answer, strict=True)
    assert set(answer) == set(ChatCompletion.model_validate(answer).model_dump(exclude_unset=True))
    message = answer["choices"][0]["message"]
    assert message["content"] == result.text and message["tool_calls"] == result.tool_calls_json()
    assert answer["choices"][0]["finish_reason"] == "tool_calls" and answer["usage"] == result.usage
    plain = fmt.write(translate_response("anthropic", {**ANSWER, "content": ANSWER["content"][:1]}), "c", [], 7)
    assert "tool_calls" not in plain["choices"][0]["message"]  # absent, not an empty list


def test_the_default_source_still_returns_the_translate_result() -> None:
    assert type(translate_response("anthropic", ANSWER)).__name__ == "TranslateResult"
    assert type(translate_response("anthropic", ANSWER, source="openai")).__name__ == "TranslateResult"


def test_the_normal_forms_request_reads_as_itself() -> None:
    """Read through its format, a Chat Completions request is given back as it is (it is the normal form):
    the tool message's keys, which no other format's message may carry, included."""
    request = {
        "model": "m",
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ],
    }
    hub, origins, notes = load_rules().format("openai").read(request)
    assert hub == request and hub is not request and origins == {} and notes == []


def test_the_normal_form_has_no_generated_transcript_reader() -> None:
    """Its request is given back as it is, so no reader is generated for it (nor shown as if it ran)."""
    normal = load_rules().format("openai")
    assert normal.transcript is None and normal.transcript_code == ""
    assert "the request is the normal form as it is" in normal.explain(code=True)
    assert load_rules().format("anthropic").transcript is not None
