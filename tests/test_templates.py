"""Each template operation alone: a before/after example, its absent case, its errors."""

from __future__ import annotations

import base64
import json
import re
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnexus import Note, ResponseError, RuleError, TranslationError
from toolnexus.language.jsonsafe import orjson_bytes
from toolnexus.language.loader import parse_rule_text
from toolnexus.language.paths import MISSING, compile_path, piped_hash
from toolnexus.language.templates import (
    USES_CONTEXT,
    Ctx,
    Env,
    Obj,
    compile_template,
    inline_node,
    parse_template,
    reads_of,
    sealed,
    unseal,
    walk,
)


def render(template_yaml: str, scope: Any, ctx: Ctx | None = None) -> Any:
    """Compile the YAML under `t:` and render it over `scope`."""
    source = parse_rule_text("t: " + template_yaml if "\n" not in template_yaml else template_yaml, "test.yaml")
    fn = compile_template(source.data["t"], ("t",), Env(source))
    return fn(scope, ctx or Ctx("test"))


def compile_error(template_yaml: str) -> RuleError:
    source = parse_rule_text(template_yaml, "test.yaml")
    with pytest.raises(RuleError) as info:
        compile_template(source.data["t"], ("t",), Env(source))
    return info.value


# ---------------------------------------------------------------- constants and objects


def test_constants_render_as_themselves() -> None:
    assert render("{type: object, properties: {}}", {}) == {"type": "object", "properties": {}}
    assert render("[1, two, true]", {}) == [1, "two", True]


def test_constant_containers_are_fresh_copies() -> None:
    first = render("{a: {b: []}}", {})
    first["a"]["b"].append("mutated")
    assert render("{a: {b: []}}", {}) == {"a": {"b": []}}


@pytest.mark.parametrize(
    "constant",
    ['{b: [1, "it\'s \\"q\\"", true, null, é]}', "{b: [{c: 2.5}]}", "[[], {}, -7]", "{'1': [x]}"],
)
def test_a_constant_inside_a_template_is_written_as_given_and_fresh_each_time(constant: str) -> None:
    """Inside a template that reads the scope, a small constant is built anew on every call (as a display of
    strings, ints, bools and null, else by copying it): a caller's change to one body never reaches the next."""
    template = f"{{a: {constant}, v: {{$get: v}}}}"
    expected = render(constant, {})
    first = render(template, {"v": 1})
    assert first == {"a": expected, "v": 1}
    (first["a"].setdefault("b", []) if isinstance(first["a"], dict) else first["a"]).append("mutated")
    assert render(template, {"v": 1}) == {"a": expected, "v": 1}


def test_absent_values_omit_their_key_and_an_all_absent_object_is_absent() -> None:
    assert render("{x: {$get: a}, y: {$get: b}}", {"a": 1}) == {"x": 1}
    assert render("{meta: {user_id: {$get: user}}}", {}) is MISSING


def test_a_run_of_copied_fields_is_written_in_the_templates_order_with_its_names() -> None:
    """Six or more keys in a row that each copy a scope field (a request body's optional fields) are written by
    one loop over the fields the scope holds: the same object as key by key, in the template's order (not the
    scope's), renamed, null kept, a field holding MISSING absent (a section that wrote nothing), a field copied
    twice or read elsewhere written as written alone."""
    keys = ["g", "b", "e", "a", "f", "c", "d"]  # neither the scope's order nor sorted
    template = "{m: {$get: m, required: true}, " + ", ".join(f"{k}: {{$get: {k}}}" for k in keys)
    template += ", twice: {$get: a}, h: {$get: h}, n: {$get: [z, y]}}"
    scope = {"c": None, "a": 1, "m": "model", "g": 7, "h": [1], "zz": "not copied", "f": MISSING}
    assert list(render(template, scope).items()) == [
        ("m", "model"),
        ("g", 7),
        ("a", 1),
        ("c", None),
        ("twice", 1),
        ("h", [1]),
    ]
    renamed = "{" + ", ".join(f"{k.upper()}: {{$get: {k}}}" for k in keys) + "}"
    assert list(render(renamed, {"b": 2, "f": 6, "g": 0}).items()) == [("G", 0), ("B", 2), ("F", 6)]
    assert render(renamed, {"x": 1}) is MISSING  # every key absent: the object is absent
    assert "for k_ in" in compile_source(renamed)  # the loop is what was tested (five in a row are written each)
    assert "for k_ in" not in compile_source("{" + ", ".join(f"{k}: {{$get: {k}}}" for k in keys[:5]) + "}")


def compile_source(template_yaml: str) -> str:
    """The Python one template compiles to."""
    source = parse_rule_text("t: " + template_yaml, "test.yaml")
    env = Env(source)
    compile_template(source.data["t"], ("t",), env)
    return env.generated[("t",)]


def test_null_is_not_absent() -> None:
    assert render("{x: {$get: a}}", {"a": None}) == {"x": None}


# ---------------------------------------------------------------- $get


def test_get_reads_plain_and_indexed_paths() -> None:
    scope = {"choices": [{"message": {"content": "hi"}}]}
    assert render("{$get: 'choices[0].message.content'}", scope) == "hi"
    assert render("{$get: 'choices[1].message'}", scope) is MISSING


def test_get_first_present_of_a_list_notes_the_others() -> None:
    ctx = Ctx("test")
    assert render("{$get: [a, b]}", {"a": 1, "b": 2}, ctx) == 1
    assert ctx.notes == [Note("dropped", "b", "a was also given and is sent instead")]
    assert render("{$get: [a, b]}", {"b": 2}) == 2


def test_get_default_is_synthesized_and_reported() -> None:
    ctx = Ctx("test")
    assert render("{$get: max_tokens, default: 4096}", {}, ctx) == 4096
    assert [(n.kind, n.path) for n in ctx.notes] == [("synthesized", "max_tokens")]


def test_a_typed_get_reads_null_as_absent_and_another_type_as_an_error_at_its_path() -> None:
    ctx = Ctx("test")
    assert render("{$get: sig, type: string}", {"sig": "s"}) == "s"
    assert render("{x: {$get: sig, type: string}}", {"sig": None}) is MISSING  # null: absent, no key
    assert render("{$get: sig, type: string, default: ''}", {"sig": None}, ctx) == ""
    assert [(n.kind, n.path) for n in ctx.notes] == [("synthesized", "sig")]
    assert render("{$get: n, type: number}", {"n": 2}) == 2
    assert render("{$get: [a, b], type: integer}", {"b": 3}) == 3
    ctx = Ctx("test", outbound=True)
    ctx.path = "content[1]"
    with pytest.raises(ResponseError) as info:  # in an answer: a ResponseError at the provider's place
        render("{$get: data, type: string}", {"data": 7}, ctx)
    assert info.value.path == "content[1].data"
    with pytest.raises(TranslationError) as request:  # in a request: a TranslationError
        render("{$get: [a, b], type: boolean}", {"b": 1})
    assert request.value.path == "b"
    with pytest.raises(TranslationError) as required:
        render("{$get: name, type: string, required: true}", {"name": None})
    assert required.value.path == "name"


def test_a_typed_get_names_a_known_type() -> None:
    error = compile_error("t:\n  $get: a\n  type: strng\n")
    assert (error.line, error.rule) == (3, "t.type")
    assert "string" in str(error)


def test_get_required_raises_with_the_path() -> None:
    ctx = Ctx("test")
    ctx.path = "tools[2].function"
    with pytest.raises(TranslationError) as info:
        render("{$get: name, required: true}", {}, ctx)
    assert info.value.path == "tools[2].function.name"


ALWAYS = (
    "{f: {n: {$get: n, required: true}, a: {$get: a, required: true}}, d: {$get: d, default: 0},"
    " l: [{$get: l, required: true}]}"
)


def test_a_required_value_is_tested_once_and_written_in_the_display() -> None:
    """A required value is never absent after its check (as `_never_missing` says): written with no second test,
    tested where read up front and put in its object's display, an object or a list holding one never tested
    empty; the values, errors and notes are the same."""
    code = compile_source(ALWAYS)
    assert "is not MISSING" not in code and "if not " not in code
    assert "out = {'f': {'n': f0, 'a': f1}}" in code
    ctx = Ctx("test")
    assert render(ALWAYS, {"n": 1, "a": 2, "l": 3}, ctx) == {"f": {"n": 1, "a": 2}, "d": 0, "l": [3]}
    assert [(n.kind, n.path) for n in ctx.notes] == [("synthesized", "d")]
    for scope, path in (({}, "n"), ({"n": 1}, "a"), ({"n": 1, "a": 2}, "l")):
        with pytest.raises(TranslationError) as info:
            render(ALWAYS, scope)
        assert info.value.path == path


@pytest.mark.parametrize(
    ("template", "scope"),
    [
        ("{x: {$when: k, is: 1, then: {$get: a, required: true}}}", {"k": 2}),
        ("{x: {$lookup: k, table: {a: 1}, skip: [b], default: 3}}", {"k": "b"}),
        ("{x: {$when: k, is: 1, then: 3, else: {$get: a}}}", {"k": 2}),
    ],
)
def test_a_value_absent_on_one_branch_is_still_tested(template: str, scope: Any) -> None:
    """A branch (`$when`'s other one, a `$lookup` row) may give nothing although another always gives a value:
    the key is still left out then, and the object with it."""
    assert render(template, scope) is MISSING


def test_get_with_a_projection_uses_jmespath() -> None:
    scope = {"content": [{"type": "text", "text": "a"}, {"type": "x"}, {"type": "text", "text": "b"}]}
    assert render("{$get: \"content[?type=='text'].text\"}", scope) == ["a", "b"]


# ---------------------------------------------------------------- $when


def test_when_renders_then_only_on_an_equal_value_of_the_same_type() -> None:
    template = "{$when: parallel_tool_calls, is: false, then: {type: auto}}"
    assert render(template, {"parallel_tool_calls": False}) == {"type": "auto"}
    assert render(template, {"parallel_tool_calls": True}) is MISSING
    assert render(template, {"parallel_tool_calls": 0}) is MISSING  # 0 is not false
    assert render(template, {}) is MISSING


# ---------------------------------------------------------------- $list


def test_list_wraps_a_string_and_keeps_a_list() -> None:
    assert render("{$list: stop}", {"stop": "END"}) == ["END"]
    assert render("{$list: stop}", {"stop": ["a", "b"]}) == ["a", "b"]
    assert render("{$list: stop}", {}) is MISSING
    with pytest.raises(TranslationError) as info:
        render("{$list: stop}", {"stop": 3})
    assert info.value.path == "stop"


# ---------------------------------------------------------------- $sum


def test_sum_adds_the_integers_present() -> None:
    template = "{$sum: [u.a, u.b, u.c]}"
    assert render(template, {"u": {"a": 1, "c": 5}}) == 6
    assert render(template, {"u": {}}) is MISSING
    assert render(template, {"u": {"a": None, "b": 2}}) == 2


@pytest.mark.parametrize("bad", ["7", 7.0, True, -1, [7]])
def test_sum_with_a_count_it_cannot_read_is_absent_noted_in_a_response_and_refused_in_a_request(bad: Any) -> None:
    ctx = Ctx("test", outbound=True)
    assert render("{$sum: [u.a, u.b], empty: 0}", {"u": {"a": bad, "b": 2}}, ctx) is MISSING, "never a partial sum"
    assert [(n.kind, n.path) for n in ctx.notes] == [("dropped", "u.a")]
    with pytest.raises(TranslationError) as info:
        render("{$sum: [u.a]}", {"u": {"a": bad}})
    assert info.value.path == "u.a"


def test_sum_empty_applies_only_inside_the_objects_holding_the_counts() -> None:
    template = "{$sum: [u.a, u.b], empty: 0}"
    assert render(template, {"u": {}}) == 0
    assert render(template, {}) is MISSING
    assert render(template, {"u": None}) is MISSING
    ctx = Ctx("test", outbound=True)
    assert render(template, {"u": "counts"}, ctx) is MISSING
    assert [(n.kind, n.path) for n in ctx.notes] == [("dropped", "u")]


# ---------------------------------------------------------------- $merge


def test_merge_overlays_keys_and_removes_absent_ones_without_touching_the_source() -> None:
    source = {"role": "assistant", "content": "x", "tool_calls": []}
    scope = {"source": source, "calls": MISSING, "name": "n"}
    out = render("{$merge: source, with: {tool_calls: {$get: calls}, name: {$get: name}}}", scope)
    assert out == {"role": "assistant", "content": "x", "name": "n"}
    assert source == {"role": "assistant", "content": "x", "tool_calls": []}


def test_when_in_matches_any_listed_value() -> None:
    template = "{$when: response_format.type, in: [json_object, json_schema], then: application/json}"
    assert render(template, {"response_format": {"type": "json_schema"}}) == "application/json"
    assert render(template, {"response_format": {"type": "json_object"}}) == "application/json"
    assert render(template, {"response_format": {"type": "text"}}) is MISSING
    assert render(template, {}) is MISSING


# ---------------------------------------------------------------- lists


def test_a_list_whose_every_element_is_absent_is_absent() -> None:
    assert render("{parts: [{text: {$get: system}}]}", {}) is MISSING
    assert render("{parts: [{text: {$get: system}}]}", {"system": "S"}) == {"parts": [{"text": "S"}]}
    assert render("[{$get: a}, {$get: b}]", {"b": 2}) == [2]
    assert render("[{$get: a}, fixed]", {}) == ["fixed"]  # a constant element keeps the list


# ---------------------------------------------------------------- $as_object


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"temp": 21}', {"temp": 21}),
        ({"already": "object"}, {"already": "object"}),
        ("sunny", {"result": "sunny"}),
        ("[1, 2]", {"result": "[1, 2]"}),
        ('{"broken": ', {"result": '{"broken": '}),
        (7, {"result": 7}),
    ],
)
def test_as_object_keeps_objects_and_wraps_the_rest(content: Any, expected: Any) -> None:
    assert render("{$as_object: content, wrap: result}", {"content": content}) == expected


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"a": NaN}', "content.a"),
        ('{"a": [1e400]}', "content.a[0]"),
        ('{"id": "\\ud800"}', "content.id"),
        ('{"a":' + "[" * 300 + "1" + "]" * 300 + "}", "content.a" + "[0]" * 255),
        ('{"a":' + "[" * 100_000 + "1" + "]" * 100_000 + "}", "content"),  # beyond what Python's decoder reaches
    ],
)
def test_as_object_refuses_json_text_it_cannot_send_at_its_path(content: str, where: str) -> None:
    """JSON text that parses but cannot be sent (NaN, 1e400, a lone surrogate, nested too deep) is an error."""
    with pytest.raises(TranslationError) as info:
        render("{$as_object: content, wrap: result}", {"content": content})
    assert info.value.path == where


def test_as_object_needs_its_wrap_key() -> None:
    assert compile_error("t: {$as_object: content}\n").rule == "t"


# ---------------------------------------------------------------- $media_type


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/cat.png", "image/png"),
        ("https://example.com/a/b.JPG?size=large#x", "image/jpeg"),
        ("https://example.com/photo", MISSING),
        (None, MISSING),
    ],
)
def test_media_type_comes_from_the_url_extension(url: Any, expected: Any) -> None:
    value = render("{$media_type: url}", {"url": url} if url is not None else {})
    assert value is expected if expected is MISSING else value == expected


# ---------------------------------------------------------------- compile-time errors


def test_unknown_operation_suggests_the_closest() -> None:
    err = compile_error("t:\n  a: {$gett: x}\n")
    assert (err.line, err.rule) == (2, "t.a.$gett")
    assert "did you mean '$get'" in err.message


def test_unknown_option_and_two_operations_are_refused() -> None:
    assert compile_error("t: {$get: x, defualt: 1}\n").rule == "t.defualt"
    assert "one operation" in compile_error("t: {$get: x, $list: y}\n").message


def test_dollar_strings_are_reserved() -> None:
    assert compile_error("t:\n  x: $get\n").line == 2


def test_bad_path_is_a_located_rule_error() -> None:
    err = compile_error("t:\n  x: {$get: 'a[?'}\n")
    assert err.line == 2 and "bad path" in err.message


def test_content_outside_a_role_message_is_refused() -> None:
    assert "only allowed" in compile_error("t: {$content: blocks}\n").message


# ---------------------------------------------------------------- paths


@pytest.mark.parametrize(
    ("path", "data", "expected"),
    [
        ("a", {"a": 1}, 1),
        ("a.b", {"a": {"b": None}}, None),
        ("a.b", {"a": {}}, MISSING),
        ("a[0]", {"a": []}, MISSING),
        ("a[-1]", {"a": [1, 2]}, 2),
        ("@", {"x": 1}, {"x": 1}),
        ("a.b", {"a": "not a mapping"}, MISSING),
    ],
)
def test_plain_paths_tell_absent_from_null(path: str, data: Any, expected: Any) -> None:
    value = compile_path(path)(data)
    if expected is MISSING:
        assert value is MISSING
    else:
        assert value == expected


# ---------------------------------------------------------------- $when ... else


def test_when_else_renders_when_the_value_differs_or_is_absent() -> None:
    template = "{$when: is_error, is: true, then: {error: {$get: content}}, else: {result: {$get: content}}}"
    assert render(template, {"is_error": True, "content": "boom"}) == {"error": "boom"}
    assert render(template, {"is_error": False, "content": "ok"}) == {"result": "ok"}
    assert render(template, {"content": "ok"}) == {"result": "ok"}


# ---------------------------------------------------------------- $lookup

LOOKUP = """t:
  $lookup: effort
  doc: budgets differ per model
  skip: [none]
  default: {budget: 0}
  table:
    low: {budget: 1024, by: {$get: who}}
    high: {budget: 8192}
"""


def test_lookup_renders_the_row_the_value_names() -> None:
    assert render(LOOKUP, {"effort": "low", "who": "me"}) == {"budget": 1024, "by": "me"}
    assert render(LOOKUP, {"effort": "high"}) == {"budget": 8192}


def test_lookup_skips_listed_values_and_renders_its_default_when_absent() -> None:
    assert render(LOOKUP, {"effort": "none"}) is MISSING
    assert render(LOOKUP, {}) == {"budget": 0}
    assert render("t: {$lookup: effort, table: {low: 1}}\n", {}) is MISSING  # no default: absent


LOOKUP_INSIDE = "t:\n  x:\n" + "".join(f"  {line}\n" for line in LOOKUP.splitlines()[1:])


@pytest.mark.parametrize("scope", [{}, {"effort": None}, {"effort": "low", "who": "me"}, {"effort": "none"}])
def test_a_lookup_inside_an_object_is_written_as_the_lookup_alone(scope: dict[str, Any]) -> None:
    """Inside an object the absent value's default is written inline, a row through the table: the same values."""
    alone = render(LOOKUP, scope)
    assert render(LOOKUP_INSIDE, scope) == ({"x": alone} if alone is not MISSING else MISSING)


SCALAR_ROWS = "t:\n  x:\n    $lookup: choice\n    table: {auto: auto, any: required, tool: {type: function}}\n"


@pytest.mark.parametrize("choice", ["auto", "any", "tool", True, "other"])
def test_a_lookup_row_of_one_scalar_is_written_inline_with_no_ctx(choice: Any) -> None:
    """A row of one scalar is taken from a dict in the generated lines (no closure call: no Ctx needed); any
    other value goes through the table's closure, which writes an object row or refuses, as before."""
    source = parse_rule_text(SCALAR_ROWS, "test.yaml")
    env = Env(source)
    fn = compile_template(source.data["t"], ("t",), env)
    assert re.search(r"elif type\((v\d+)\) is str and \1 in (k\d+): \1 = \2\[\1\]", env.generated[("t",)])
    scope = {"choice": choice}
    if choice in ("auto", "any"):
        assert fn(scope, None) == {"x": {"auto": "auto", "any": "required"}[choice]}  # type: ignore[arg-type]
    elif choice == "tool":
        assert fn(scope, Ctx("test")) == {"x": {"type": "function"}}
    else:
        with pytest.raises(TranslationError):
            fn(scope, Ctx("test"))


def test_a_lookup_default_written_inline_is_fresh_each_time() -> None:
    first = render(LOOKUP_INSIDE, {})
    first["x"]["budget"] = 1  # a written default is the caller's to change: the next one is its own
    assert render(LOOKUP_INSIDE, {}) == {"x": {"budget": 0}}


def test_lookup_refuses_a_value_without_a_row_naming_the_path_and_the_doc() -> None:
    ctx = Ctx("test")
    ctx.path = "generation"
    with pytest.raises(TranslationError) as info:
        render(LOOKUP, {"effort": "max"}, ctx)
    assert info.value.path == "generation.effort"
    assert "budgets differ per model" in info.value.message and "low, high, none" in info.value.message
    with pytest.raises(TranslationError) as info:
        render(LOOKUP, {"effort": 3})
    assert info.value.path == "effort"


def test_lookup_needs_a_table_and_a_list_of_skipped_values() -> None:
    assert "needs `table`" in compile_error("t: {$lookup: effort}\n").message
    assert compile_error("t: {$lookup: effort, table: {a: 1}, skip: none}\n").rule == "t.skip"


# ---------------------------------------------------------------- $get default that may be absent


def test_a_default_is_reported_only_when_it_gives_a_value() -> None:
    template = "{$get: signature, default: {$when: first, is: true, then: dummy}}"
    ctx = Ctx("test")
    assert render(template, {"first": False}, ctx) is MISSING
    assert ctx.notes == []
    assert render(template, {"first": True}, ctx) == "dummy"
    assert [(n.kind, n.path) for n in ctx.notes] == [("synthesized", "signature")]
    assert render(template, {"signature": "real", "first": True}) == "real"


# ---------------------------------------------------------------- the node API (the parsed rule)


def test_parsed_nodes_say_what_they_read_and_write_where() -> None:
    text = """\
t:
  a: {$get: [x.y, "z[0]"], default: {$when: flag, is: true, then: 1}}
  b: {$lookup: mode, table: {fast: {$get: speed}}, default: slow}
  c: {$merge: source, with: {k: {$get: "items[*].id"}}}
  d: 3
"""
    source = parse_rule_text(text, "test.yaml")
    node = parse_template(source.data["t"], ("t",), Env(source))
    assert isinstance(node, Obj) and node.writes() == ("a", "b", "c", "d")
    reads = [(read.expr, read.steps, read.root, read.key) for read in reads_of(node)]
    assert reads == [
        ("x.y", ("x", "y"), "x", ("t", "a", "$get", 0)),
        ("z[0]", ("z", 0), "z", ("t", "a", "$get", 1)),
        ("flag", ("flag",), "flag", ("t", "a", "default", "$when")),
        ("mode", ("mode",), "mode", ("t", "b", "$lookup")),
        ("speed", ("speed",), "speed", ("t", "b", "table", "fast", "$get")),
        ("source", ("source",), "source", ("t", "c", "$merge")),
        ("items[*].id", None, None, ("t", "c", "with", "k", "$get")),
    ]
    assert [type(n).__name__ for n in walk(node)][:4] == ["Obj", "Get", "When", "Const"]


def test_env_fields_read_asks_the_nodes() -> None:
    source = parse_rule_text("t: {a: {$get: x.y}, b: {$get: '@'}}\nu: {a: {$get: x.y}, c: {$get: w}}\n", "test.yaml")
    env = Env(source)
    compile_template(source.data["u"], ("u",), env)
    assert env.fields_read() == {"x", "w"} and env.where_read("w") == ("u", "c", "$get")
    compile_template(source.data["t"], ("t",), env)
    assert env.fields_read() is None  # `@` reads the whole scope


# ---------------------------------------------------------------- $when present / empty, $absent, $json_text, $refuse


@pytest.mark.parametrize(
    ("value", "present", "empty"),
    [
        (MISSING, False, True),
        (None, False, True),
        ("", True, True),
        ([], True, True),
        ({}, True, True),
        ("x", True, False),
        ([1], True, False),
        ({"a": 1}, True, False),
        (0, True, False),
        (False, True, False),
    ],
)
def test_when_present_and_empty_test_the_value_not_its_contents(value: Any, present: bool, empty: bool) -> None:
    scope = {} if value is MISSING else {"a": value}
    assert render("{$when: a, present: true, then: 'Y', else: 'N'}", scope) == ("Y" if present else "N")
    assert render("{$when: a, present: false, then: 'Y'}", scope) == ("Y" if not present else MISSING)
    assert render("{$when: a, empty: true, then: 'Y', else: 'N'}", scope) == ("Y" if empty else "N")
    assert render("{$when: a, empty: false, then: {$get: a}}", scope) == (MISSING if empty else value)


def test_when_takes_exactly_one_test_and_a_boolean_for_present_and_empty() -> None:
    assert compile_error("t: {$when: a, present: true, is: 1, then: x}").rule == "t"
    bad = compile_error("t:\n  $when: a\n  empty: 'yes'\n  then: x\n")
    assert (bad.rule, bad.line) == ("t.empty", 3)


def test_absent_writes_no_key() -> None:
    assert render("{keep: 1, gone: {$absent: true}}", {}) == {"keep": 1}
    assert render("{$when: a, is: 1, then: {$absent: true}, else: 2}", {"a": 1}) is MISSING
    assert render("{$merge: m, with: {b: {$absent: true}}}", {"m": {"a": 1, "b": 2}}) == {"a": 1}
    assert compile_error("t:\n  $absent: false\n").rule == "t.$absent"


def test_json_text_writes_the_value_serialized() -> None:
    scope = {"s": {"type": "object", "properties": {"é": {"type": "string"}}}}
    text = render("{schema: {$json_text: s}}", scope)["schema"]
    assert text == '{"type":"object","properties":{"é":{"type":"string"}}}'
    assert render("{schema: {$json_text: s}}", {}) is MISSING


def test_json_text_gives_an_object_as_it_is_to_a_reader_that_takes_objects() -> None:
    ctx = Ctx("test")
    ctx.objects = True
    scope = {"s": {"a": [1, "é"]}, "l": [1, 2]}
    assert render("{o: {$json_text: s}}", scope, ctx)["o"] is scope["s"]  # no text written to be parsed back
    assert render("{o: {$json_text: l}}", scope, ctx)["o"] == "[1,2]"  # not an object: its text, as ever
    assert render("{o: {$json_text: s}}", scope)["o"] == '{"a":[1,"é"]}'


def test_refuse_raises_at_the_scope_path_with_the_rules_message_and_location() -> None:
    source = parse_rule_text("t:\n  kind:\n    $refuse: no such mode here\n", "made-up.yaml")
    fn = compile_template(source.data["t"], ("t",), Env(source))
    ctx = Ctx("made-up")
    ctx.path = "tool_choice"
    with pytest.raises(TranslationError) as info:
        fn({}, ctx)
    assert info.value.path == "tool_choice" and info.value.provider == "made-up"
    assert "no such mode here" in info.value.message and "made-up.yaml:3 t.kind" in info.value.message


def test_refuse_at_names_a_request_path_and_is_reached_only_when_written() -> None:
    template = "{$lookup: mode, table: {a: 1, b: {$refuse: 'b has no counterpart', at: mode}}}"
    assert render(template, {"mode": "a"}) == 1
    with pytest.raises(TranslationError) as info:
        render(template, {"mode": "b"})
    assert info.value.path == "mode"
    assert compile_error("t:\n  $refuse: ''\n").rule == "t.$refuse"
    assert compile_error("t:\n  $refuse: x\n  at: [1]\n").rule == "t.at"


@pytest.mark.parametrize("expression", ["keys(@)[0]", "keys(a.b)[0]", "keys(a[1])[0]"])
@pytest.mark.parametrize(
    "data",
    [{"x": 1, "y": 2}, {"a": {"b": {"k": 1, "j": 2}}}, {"a": [0, {"m": 1}]}, {"a": {"b": {}}}, {}, {"a": 3}],
)
def test_the_first_key_of_a_union_reads_as_jmespath_reads_it(expression: str, data: Any) -> None:
    """`keys(<chain>)[0]` is read straight from the dict (every streamed event names its type so), with
    jmespath's answer; where jmespath refuses the type (`keys(3)`), nothing (a provider's event of another
    shape is noted as unknown, not a bare jmespath error)."""
    import jmespath
    from jmespath.exceptions import JMESPathTypeError

    try:
        want = jmespath.search(expression, data)
    except JMESPathTypeError:
        assert compile_path(expression)(data) is MISSING
        return
    assert compile_path(expression)(data) == (MISSING if want is None else want)


def test_data_url_joins_media_type_and_base64_data() -> None:
    assert render("{u: {$data_url: src}}", {"src": {"media_type": "image/png", "data": "iVBO"}}) == {
        "u": "data:image/png;base64,iVBO"
    }
    assert render("{u: {$data_url: src}}", {}) is MISSING
    with pytest.raises(TranslationError) as caught:
        render("{u: {$data_url: src}}", {"src": {"media_type": "image/png"}})
    assert caught.value.path == "src"


def test_seal_carries_state_on_a_string_and_unseal_gives_both_back() -> None:
    scope = {"id": "call_1", "extra": {"sig": "é/+="}}
    sealed = render("{id: {$seal: extra, onto: id}}", scope)["id"]
    assert sealed.startswith("call_1_tns_") and all(c.isalnum() or c in "_-" for c in sealed)
    back = render("{id: {$unseal: id, part: value}, extra: {$unseal: id, part: state}}", {"id": sealed})
    assert back == {"id": "call_1", "extra": {"sig": "é/+="}}
    # no state: the string as it is, and nothing to unseal
    assert render("{id: {$seal: extra, onto: id}}", {"id": "call_1"}) == {"id": "call_1"}
    assert render("{id: {$seal: extra, onto: id}}", {"id": "call_1", "extra": None}) == {"id": "call_1"}
    assert render("{id: {$seal: extra, onto: id}}", {"id": None, "extra": None}) is MISSING
    assert render("{id: {$seal: extra, onto: id}}", {"extra": {"sig": "s"}}) is MISSING
    assert render("{x: {$unseal: id, part: state}, y: {$unseal: id, part: value}}", {"id": 7}) == {"y": 7}
    assert render("{id: {$unseal: id, part: value}, x: {$unseal: id, part: state}}", {"id": "a_b"}) == {"id": "a_b"}
    # onto nothing: the state alone; a seal that does not decode is no seal
    assert render("{d: {$seal: extra}}", scope)["d"].startswith("_tns_")
    assert render("{x: {$unseal: id, part: value}}", {"id": "a_tns_!!"}) == {"x": "a_tns_!!"}


@pytest.mark.parametrize("value", ["call_1", 7, None, "a_tns_!!", sealed({"sig": 1}, "call_1")])
def test_unseal_of_a_plain_string_is_told_by_its_first_test(value: Any) -> None:
    """A string with no seal (the common case: an id as sent) is its own value, told by the generated code's first
    test (not a string, or one holding a seal, goes on to the call); every value gives what `unseal` gives."""
    code = compile_source("{x: {$unseal: id, part: value}}")
    assert "if (type(v1) is not str or '_tns_' in v1) and v1 is not MISSING:" in code
    assert render("{x: {$unseal: id, part: value}}", {"id": value}) == {"x": unseal(value, Ctx("t"), part="value")}


def _sealed_text(sealed: str, onto: str) -> bytes:
    """The JSON a seal carries, from `<onto>_tns_<base64url>`."""
    packed = sealed.removeprefix(onto + "_tns_")
    assert "=" not in packed and "+" not in packed and "/" not in packed
    return base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))


@pytest.mark.parametrize(
    "state",
    [
        {"google": {"thought_signature": "CiQB"}},  # printable ASCII: orjson's text
        {"sig": "é 東京 🧪"},  # non-ASCII, astral and DEL kept as they are, in UTF-8
        {"sig": "\x7f"},
        {"sig": '\x01\n"\\', "n": [1, 2.5, True]},  # escapes both write alike
        {"sig": None, "f": 1e-07},  # what orjson_bytes leaves to the standard encoder
        {"n": 10**30},
        ["a", 1],  # not an object
    ],
)
def test_seal_writes_the_state_as_json_dumps_does(state: Any) -> None:
    """A sealed state's text is `json.dumps(state, ensure_ascii=False, separators=(",", ":"))` in UTF-8 byte for
    byte, however it is written, so the same state seals onto the same string."""
    sealed = render("{id: {$seal: extra, onto: id}}", {"id": "c", "extra": state})["id"]
    assert _sealed_text(sealed, "c") == json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()


def test_a_lone_surrogate_is_sealed_escaped_and_read_back() -> None:
    """UTF-8 cannot carry a lone surrogate: that state's text is written with ASCII escapes, which `unseal` reads."""
    state = {"sig": "a\ud800b"}
    sealed = render("{id: {$seal: extra, onto: id}}", {"id": "c", "extra": state})["id"]
    assert _sealed_text(sealed, "c") == json.dumps(state, separators=(",", ":")).encode()
    assert render("{x: {$unseal: id, part: state}}", {"id": sealed}) == {"x": state}


_SEAL_TEXTS = st.one_of(
    st.text(max_size=12),  # any character but a lone surrogate: astral, control characters, DEL
    st.sampled_from(["\x7f", "\x00\x1f", "é", "\u2028", "🧪", "a\\x41", '"\\/', "CiQB" * 40]),
)
_SEAL_STATES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), _SEAL_TEXTS),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_SEAL_TEXTS, children, max_size=3)),
    max_leaves=10,
)


@given(st.dictionaries(_SEAL_TEXTS, _SEAL_STATES, min_size=1, max_size=4) | _SEAL_STATES)
def test_sealed_is_json_dumps_byte_for_byte(state: Any) -> None:
    """Whichever encoder writes it (orjson where its text is the same, else the standard's built once), the sealed
    text is `json.dumps(state, ensure_ascii=False, separators=(",", ":"))` in UTF-8: non-ASCII and astral
    characters and DEL as they are, control characters escaped, floats (tiny, huge, NaN) and big integers as json
    writes them, nested."""
    expected = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()
    assert _sealed_text(sealed(state, "c"), "c") == expected


def test_orjson_writes_what_json_dumps_writes_and_leaves_the_rest_to_the_standard_encoder() -> None:
    """`orjson_bytes`, the seal's fast path: UTF-8 bytes where orjson's text is json.dumps's, else None."""
    state = {"google": {"thought_signature": "CiQB/+=" * 40}, "t": "é\x7f🧪"}
    assert orjson_bytes(state) == json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()
    assert [orjson_bytes(s) for s in ({"t": None}, {"f": 1e-05}, {"s": "\ud800"}, ["a"])] == [None] * 4


def test_seal_and_unseal_options_are_checked_at_load() -> None:
    assert compile_error("t: {x: {$unseal: id, part: both}}").rule == "t.x.part"
    assert compile_error("t: {x: {$seal: a, onto: 3}}").rule == "t.x.onto"


RICH_PATHS = [
    "a.b | {r: (c && @) || {t: @}}",
    "a || b",
    "a && b",
    "!a",
    "!a.b",
    "a[*].b",
    "a[?b == 'x'].c",
    "a[?b != `1`]",
    "a[].b",
    "a[-1].b | c",
    "[a, b.c]",
    "{x: a, y: `[1, 2]`}",
    "{x: a.b}",
    "length(a)",
    "join('', a[*].b)",
    "a == `0`",  # against a literal: compared inline (true and false never equal 0 or 1 in jmespath)
    "a != `1`",
    "a == `1.0`",
    "a == `2`",
    "a != 'x'",
    "b == 'x' && 'first' || 'later'",
    "a[?b == 'x'] | [0]",  # read for its first element: the projection stops there
    "a[?b == 'x'].c | [0]",
    "a[].b | [?@ != 'x'] | [0]",
    "a[0] | [0]",
    "a[*].length(b) | [0]",  # a function in the projection: every element read, as jmespath raises on a later one
    "(a[?type(b) != 'string'] | [0]) || join('', a[?b].b || `[]`)",
    "b == 'x' && a[0] && !(a[?b != 'x']) && 'all x' || b",  # a field read again, where it is known
    "!(a[*].b)",  # `!` of a projection: whether it has a first element (a false one counts)
    "!(a[?b == 'x'])",
    "!(a[*].length(b))",  # a function in the projection: every element read
    "{x: a || b, y: a && b, z: b}",
    "a && b && c || d",  # chains: each operand one block inside the one before
    "a || b || c",
    "(a || b) && c",
    "a && (b || c) || d.e",  # the `||`'s right not read yet
    "a && `1` && b || b.c",
    "b == 'x' && `0` || a",
    "a[?b == 'x'].c[] | [?@ != `1`] | [0]",  # loops over the left of the pipe as it is read
    "a[][] | [?b] | [0]",
    "a[].c[].b | [0]",
    "!(a[].b)",
    "a[][].b",  # a projection over a flatten: one loop in another, one list built
    "a[?b == 'x'].c[].b",
    "a[?b == 'x'].c",  # an element whose field equals a string is an object: its other field read untested
    "a[?c.b == 'x'].c.d",  # ... and so is the object that field was in
    "a[?b == 'x' && c == `2`].d || b",  # every operand of a passing `&&` test
    "b == 'x' && a.c || a",  # `b == 'x'` tells nothing of `a`
    "a[?type(b) == 'object'].b.c",  # `type(b) == 'object'`: b is one
    "a[?type(b) == 'array'] | [0]",
    "a[?type(c) != 'string' || b == 'x'].c",  # `||`: neither operand known true
    "!(a[?b != 'x']) && a[0].c",
    "a && a.b && b || c",  # several fields of the value given: a second body for a plain dict
    "a[0:2]",  # not compiled: jmespath's interpreter
    "sort_by(a, &b)[0]",  # not compiled: an expression argument
]
RICH_DATA = [
    {"a": {"b": {"c": 1}}},
    {"a": {"b": {"r": 1}}},
    {"a": {"b": {}}, "b": 0},
    {"a": [{"b": "x", "c": 1}, {"b": "y", "c": 2}, {"b": 1}, {"b": True}, 3, [4, {"b": "x", "c": 5}]]},
    {"a": [], "b": {"c": None}},
    {"a": [{"b": "x", "c": [1, None, 2]}, {"b": "x", "c": 3}, None, [[{"b": 0}], {"b": "x", "c": [[7]]}]]},
    {"a": [{"c": [{"b": None}, {"b": 1}]}, {"c": {"b": 2}}], "c": 0, "d": {"e": 1}},
    {"a": "", "b": False},
    {"a": 0, "b": [0]},
    {"a": ["p", "q"]},
    {"a": [{"b": "x"}, {"b": "x", "c": 2}], "b": "x"},
    {"a": [{"b": "xy"}, {"b": 1}]},
    {"a": [{"c": 1}, {"b": False}, {"b": ""}]},
    {"a": None},
    {"a": True, "b": "x"},
    {"a": False, "b": "y"},
    {"a": 1},
    {"a": 1.0},
    {"a": 2},
    {"a": "x"},
    {},
    [1, 2],
    "text",
    None,
]


@pytest.mark.parametrize("expression", RICH_PATHS)
def test_a_rich_path_reads_as_jmespath_reads_it(expression: str) -> None:
    """Pipes, multi-selects, `&&`/`||`/`!`, projections, filters and functions are compiled from jmespath's
    tree (a streamed event reads them per event): the same answers, and nothing where jmespath refuses a
    value's type (data of another shape reads nothing, as a plain chain over a non-object does)."""
    for data in RICH_DATA:
        assert_reads_as_jmespath(expression, data)


def assert_reads_as_jmespath(expression: str, data: Any) -> None:
    """The compiled path's answer on `data` is jmespath's: MISSING where jmespath gives null or refuses the type."""
    import jmespath
    from jmespath.exceptions import JMESPathTypeError

    try:
        want = jmespath.search(expression, data)
    except JMESPathTypeError:
        assert compile_path(expression)(data) is MISSING, (expression, data)
        return
    got, want = compile_path(expression)(data), MISSING if want is None else want
    assert got == want and type(got) is type(want), (expression, data, got, want)  # 0 is not False


# Data over the keys and values the rich paths read: objects, lists and lists in lists, every JSON scalar that
# jmespath's truth and comparisons tell apart (0 and False, "" and [], 1 and 1.0, the compared literals).
_RICH_SCALARS = st.sampled_from([None, True, False, 0, 1, 1.0, 2, "", "x", "y", "xy", "string", "refusal"])
_RICH_VALUES = st.recursive(
    _RICH_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "type"]), inner)
    ),
    max_leaves=12,
)


@given(data=_RICH_VALUES)
def test_every_rich_path_reads_any_data_as_jmespath_reads_it(data: Any) -> None:
    """The property behind the table above: on any data built of the keys and values the paths compare, each
    compiled path gives jmespath's answer (nothing where jmespath gives null or refuses the value's type)."""
    for expression in RICH_PATHS:
        assert_reads_as_jmespath(expression, data)


class _Object(dict):  # type: ignore[type-arg]
    """An object that is not a plain dict: the general body reads it."""


@pytest.mark.parametrize("data", [{"a": {"b": 1}, "b": 2}, _Object(a=_Object(b=1), b=2), [1], None])
def test_a_dict_given_and_any_other_value_read_alike(data: Any) -> None:
    """A path that reads several fields of the value it is given has a body for a plain dict and one for any
    other value: both give jmespath's answer."""
    assert_reads_as_jmespath("a && a.b && b || c", data)
    assert_reads_as_jmespath("a.b || b", data)


def _type_tests(expression: str, data: Any) -> int:
    """How many times reading `expression` from `data` calls isinstance."""
    read, calls = compile_path(expression), 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "c_call" and arg is isinstance

    sys.setprofile(profile)
    try:
        read(data)
    finally:
        sys.setprofile(None)
    return calls


def test_a_field_is_read_without_testing_again_what_a_passing_test_proved() -> None:
    """Where a field equal to a string let the read through, the object it was read from is one: its other
    fields are read without testing its type; a plain dict given is told by its class, not tested per field."""
    elements = {"a": [{"b": "x", "c": {"d": 1}}, {"b": "y"}]}
    assert _type_tests("a[?b == 'x'].c", elements) == 1 + 1 + 2  # the given value, the list, each element's b
    assert _type_tests("a[?c.b == 'x'].c.d", {"a": [{"c": {"b": "x", "d": 1}}]}) == 1 + 1 + 2
    assert _type_tests("type == 'x' && a", {"type": "x", "a": 1}) == 1  # one test for the value given
    assert _type_tests("a.b || a.c || b", {"a": {}, "b": 1}) == 2  # a plain dict given: told by its class


def test_rich_paths_are_compiled_not_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled reader never calls jmespath's interpreter; the forms it does not compile still do."""
    from jmespath.parser import ParsedResult

    interpreted: list[str] = []
    search = ParsedResult.search
    monkeypatch.setattr(ParsedResult, "search", lambda self, data, options=None: interpreted.append(self.expression)
                        or search(self, data, options))  # fmt: skip
    for expression in RICH_PATHS:
        compile_path(expression)({"a": [{"b": "x"}]})
    assert interpreted == ["a[0:2]", "sort_by(a, &b)[0]"]


RICH = [
    "type == 'message' && content[0].type == 'refusal' && 'refusal' || type",
    "'x' == a",
    "a != 'x'",
    'a == `"x"`',
    "a == b",
    "type(a)",
    "type(a) != 'string'",
    "items[?type(text) != 'string'] | [0]",
    "a || b",
    "a && b",
    "!a",
]
VALUES = ["x", "", [], {}, 0, 0.0, False, True, None, 1.5, ["x"], {"k": 1}, MISSING]


@pytest.mark.parametrize("expression", RICH)
def test_compiled_comparisons_types_and_falsehood_read_as_jmespath_reads_them(expression: str) -> None:
    """A comparison with a string, `type()` and jmespath's falsehood are compiled to plain Python: the answer is
    jmespath's on every JSON type (a bool is not a number, 0 is true, an empty string, list or object false)."""
    import jmespath

    for value in VALUES:
        data: dict[str, Any] = {"type": "message", "content": [{"type": value}], "b": "x", "items": [{"text": value}]}
        if value is not MISSING:
            data["a"] = value
        want = jmespath.search(expression, data)
        want = MISSING if want is None else want
        got = compile_path(expression)(data)
        assert (got, type(got)) == (want, type(want)), (expression, value)  # True is not 1


def test_a_projection_read_for_its_first_element_stops_there() -> None:
    """`list[?test] | [0]` (the first matching part of an answer) reads no element after the first match."""

    class Counted(dict[str, Any]):
        reads = 0

        def get(self, key: str, default: Any = None) -> Any:
            Counted.reads += 1
            return super().get(key, default)

    parts = [{"type": "text"}, {"type": "refusal", "refusal": "no"}, *(Counted(type="refusal") for _ in range(5))]
    assert compile_path("content[?type == 'refusal'].refusal | [0]")({"content": parts}) == "no"
    assert Counted.reads == 0
    assert compile_path("content[?type == 'refusal'].type")({"content": parts}) == ["refusal"] * 6
    assert Counted.reads >= 5  # the whole projection reads every element


def test_a_chain_tests_a_settled_value_once() -> None:
    """`d && a && b || d` tests a false `a` once (not again at each `&&` and at the `||`) and reads the rest
    only where the value is still open."""

    class Counted(dict[str, Any]):
        tests = 0

        def __len__(self) -> int:
            Counted.tests += 1
            return super().__len__()

    assert compile_path("d && a && b || d")({"a": Counted(), "d": 4}) == 4
    assert Counted.tests == 1
    assert compile_path("a == 'x' && b && c || a")({"a": "y", "b": Counted()}) == "y"
    assert Counted.tests == 1  # `b` never read


def test_a_projection_piped_into_a_first_match_stops_reading_there() -> None:
    """`list[].field | [?test] | [0]` reads the left's elements only up to the first match (no whole list built
    in between), as `list[?test] | [0]` does."""

    class Counted(dict[str, Any]):
        reads = 0

        def get(self, key: str, default: Any = None) -> Any:
            Counted.reads += 1
            return super().get(key, default)

    later = [Counted(c=[{"t": "r", "r": "x"}]) for _ in range(5)]
    items = [{"c": [{"t": "a"}]}, {"c": [{"t": "r", "r": "no"}]}, *later]
    assert compile_path("items[].c[] | [?t == 'r'].r | [0]")({"items": items}) == "no"
    assert compile_path("items[*].c[] | [?t == 'r'].r | [0]")({"items": items}) == "no"
    assert Counted.reads == 0


def test_a_chain_piped_into_an_object_gives_its_steps_and_a_getter_per_key() -> None:
    """`a.b | {k: ...}` splits into the chain's steps and, per key, a getter of what the chain reads, which put
    together read what the whole path reads; an object one of whose values could raise (which makes the whole
    path nothing) or any other path does not split."""
    path = "a.b | {t: (hide && `1`) || text, s: seen || `0`, n: {x: @}}"
    split = piped_hash(path)
    assert split is not None
    steps, getters = split
    assert steps == ["a", "b"] and list(getters) == ["t", "s", "n"]
    for inner in ({"text": "hi", "seen": 2}, {"hide": True}, "x", []):
        values = {key: get(inner) for key, get in getters.items()}
        want = compile_path(path)({"a": {"b": inner}})
        assert {key: None if value is MISSING else value for key, value in values.items()} == want
    for other in ("a.b | {k: length(@)}", "a.b", "{k: a.b}", "a[*].b | {k: c}", "a.b | [c]"):
        assert piped_hash(other) is None, other


def test_a_key_chain_prefix_is_read_once() -> None:
    """`u.usage.a` and `u.usage.b` read `usage` once (each prefix of a plain chain is its own variable), and a
    value read up front is written as it is: the result is the same, with fewer reads."""
    source = parse_rule_text("t: {a: {$get: u.usage.a}, b: {$get: u.usage.b}, c: {$get: n}}\n", "test.yaml")
    env = Env(source)
    fn = compile_template(source.data["t"], ("t",), env)
    code = env.generated[("t",)]
    assert code.count(".get('usage'") == 1 and "['c'] = f" in code
    assert fn({"u": {"usage": {"a": 1, "b": 2}}, "n": 3}, Ctx("test")) == {"a": 1, "b": 2, "c": 3}
    assert fn({"u": {"usage": 7}}, Ctx("test")) is MISSING


# ---------------------------------------------------------------- inline_node (a template inside a caller's function)


def inlined(template_yaml: str, scope: Any, **options: Any) -> tuple[Any, list[Note], str]:
    """Inline the YAML under `t:` into a made-up loop function, run it over one scope: (value, notes, its code)."""
    source = parse_rule_text("t: " + template_yaml, "test.yaml")
    node = parse_template(source.data["t"], ("t",), Env(source))
    inline = inline_node(node, "scope_", "value_", **options)
    lines = ["def run(scope_, c):", *("    " + line for line in inline.head + inline.body), "    return value_"]
    names = dict(inline.names)
    exec("\n".join(lines), names)
    ctx = Ctx("test")
    return names["run"](scope, ctx), ctx.notes, "\n".join(lines)


@pytest.mark.parametrize(
    ("template", "scope"),
    [
        ("{name: {$get: name}, d: {$get: [a, b]}, n: {$get: deep.x}}", {"name": "n", "b": 2, "deep": {"x": 1}}),
        ("{schema: {$get: parameters, default: {type: object}}}", {}),
        ("{$when: kind, is: x, then: {k: {$get: v}}, else: {$get: '@'}}", {"kind": "y", "v": 1}),
        ("{$lookup: choice, table: {auto: {type: any}}}", {"choice": "auto"}),
        ("{$get: name}", "not an object"),
    ],
)
def test_an_inlined_template_writes_and_notes_what_its_own_function_does(template: str, scope: Any) -> None:
    ctx = Ctx("test")
    expected = render(template, scope, ctx)
    value, notes, _ = inlined(template, scope)
    assert (value, notes) == (expected, ctx.notes)


def test_an_inlined_template_reads_known_fields_from_the_callers_variables() -> None:
    value, _, code = inlined("{r: {$get: role}, t: {$get: text}}", {"text": "hi"}, known={"role": "'user'"})
    assert value == {"r": "user", "t": "hi"}
    assert ".get('role'" not in code


def test_an_object_of_known_fields_is_one_display_built_once() -> None:
    """An object of fields the caller holds and knows are there is a display of them with a key always written: put
    whole in its parent's display, never tested and never built twice."""
    known = {"a": "A", "b": "B"}
    source = parse_rule_text("t: {f: {a: {$get: a}, b: {$get: b}}}", "test.yaml")
    made = inline_node(parse_template(source.data["t"], ("t",), Env(source)), "scope_", "v_", known=known,
                       present=frozenset(known))  # fmt: skip
    assert made.body == ["v_ = {'f': {'a': A, 'b': B}}"]


def test_an_inlined_template_reads_a_dict_in_the_callers_variable_in_place() -> None:
    value, _, code = inlined("{t: {$get: text}, r: {$get: role}}", {"text": "hi"}, is_dict=True)
    assert value == {"t": "hi"}
    assert "sd" not in code and "= scope_.get('text', MISSING)" in code


def test_an_inlined_template_builds_its_scope_only_when_it_reads_it_whole() -> None:
    _, _, plain = inlined("{t: {$get: text}}", {"text": "hi"}, is_dict=True)
    _, _, whole = inlined("{$get: '@'}", {"text": "hi"})
    assert "s = scope_" not in plain
    assert "s = scope_" in whole


@pytest.mark.parametrize(
    "template",
    [
        "{t: {$get: text}, x: {$get: gone}}",
        "{t: {$get: text}, x: {$get: gone.deep.er}}",
        "{x: {$when: gone, is: true, then: 1, else: 2}}",
        "{x: {$when: gone, present: false, then: 1}}",
        "{x: {$when: gone, empty: true, then: 1}}",
        "{x: {$when: gone, present: true, then: 1}, t: {$get: text}}",
        "{x: {$as_object: gone, wrap: result}, t: {$get: text}}",
        "{x: {$get: gone, default: fallback}}",
    ],
)
def test_a_field_the_caller_holds_as_missing_is_absent_at_generation(template: str) -> None:
    """A known field given as MISSING: what reads it is written as its absent value, the same as reading it."""
    scope = {"text": "hi"}
    ctx = Ctx("test")
    expected = render(template, scope, ctx)
    value, notes, code = inlined(template, scope, is_dict=True, known={"gone": "MISSING", "text": "'hi'"})
    assert (value, notes) == (expected, ctx.notes)
    assert not re.search(r"\bf\d+ = MISSING", code) and "is_empty(" not in code  # never read, never tested


def test_an_inlined_template_writes_its_notes_and_its_context_as_the_caller_says() -> None:
    """`note`: a note at a path the template names is the caller's statement, no context used for it; `ctx`: every
    other use of the context is written as the caller's expression (one that makes it where first used, say).
    `contextual` says whether the lines use the context at all."""
    source = parse_rule_text("t: {a: {$get: a, default: 1}, b: {$get: b, required: true}}", "test.yaml")
    node = parse_template(source.data["t"], ("t",), Env(source))
    noted = parse_rule_text("t: {a: {$get: a, default: 1}}", "test.yaml")
    sink = inline_node(parse_template(noted.data["t"], ("t",), Env(noted)), "scope_", "v_",
                       note=lambda kind, path, message: f"sink({kind!r}, {path!r}, {message!r})")  # fmt: skip
    code = "\n".join(sink.head + sink.body)
    assert "sink('synthesized', 'a', " in code and not USES_CONTEXT.search(code) and not sink.contextual
    made = inline_node(node, "scope_", "v_", ctx="C()")
    code = "\n".join(made.head + made.body)
    assert "C().notes.append(Note('synthesized', C().at('a'), " in code and "raise C().fail(C().at('b'), " in code
    assert not USES_CONTEXT.search(code) and made.contextual
    ctx = Ctx("test")
    names = {**made.names, "C": lambda: ctx}
    exec("\n".join(["def run(scope_):", *("    " + line for line in made.head + made.body), "    return v_"]), names)
    assert names["run"]({"b": 2}) == {"a": 1, "b": 2} and [(n.kind, n.path) for n in ctx.notes] == [
        ("synthesized", "a")
    ]


@pytest.mark.parametrize("scope", [{}, {"n": 3, "k": "x"}])
def test_a_value_always_there_is_written_with_no_test(scope: dict[str, Any]) -> None:
    """A constant, a `$get` with a constant default, a `$when` of two such branches and an object with such a key are
    never absent: each is written with no MISSING test (the default's note none either), and the object holding
    them is never dropped as empty."""
    template = "{c: [], u: {n: {$get: n, default: 0}}, w: {$when: k, is: x, then: 1, else: 2}}"
    ctx = Ctx("test")
    expected = render(template, scope, ctx)
    value, notes, code = inlined(template, scope)
    assert (value, notes) == (expected, ctx.notes)
    assert "is not MISSING" not in code and "if not " not in code and "'c': []" in code


@pytest.mark.parametrize("scope", [{}, {"k": "x"}, {"k": "x", "v": 2}, {"k": "y", "v": None}, {"t": "hi", "k": "x"}])
@pytest.mark.parametrize(
    "template",
    [
        "{$when: k, is: x, then: {a: 1, v: {$get: v}}}",
        "{$when: k, is: x, then: {v: {$get: v}}}",
        "{$when: k, is: x, then: {$when: v, present: true, then: [1]}}",
        "{$when: k, is: x, then: {a: 1}, else: {$get: v}}",
        "{$when: gone, present: false, then: {$get: v}}",
        "{$when: t, empty: false, then: {type: text, text: {$get: t}}}",
        "{$get: v}",
        "{a: {$get: v}}",
    ],
)
def test_a_value_appended_to_a_list_is_appended_where_it_is_written(template: str, scope: dict[str, Any]) -> None:
    """`into`: the value goes into the caller's list where it has one; a `$when` appends under its test, so a branch
    sure to write a value writes no MISSING to be tested after (nothing is appended where no branch holds)."""
    expected = render(template, scope, Ctx("test"))
    source = parse_rule_text("t: " + template, "test.yaml")
    node = parse_template(source.data["t"], ("t",), Env(source))
    known = {"gone": "MISSING", "t": "T"}
    inline = inline_node(node, "scope_", "v_", is_dict=True, known=known, texts=frozenset({"t"}), into="out_")
    code = "\n".join(["def run(scope_, c):", "    out_ = []", *("    " + line for line in inline.head + inline.body)])
    names = {**inline.names, "T": scope.get("t", "")}
    exec(code + "\n    return out_", names)
    assert names["run"](scope, Ctx("test")) == ([] if expected is MISSING else [expected])
    if "else" not in template and ("a: 1" in template or "text:" in template):  # sure to write: appended as built
        assert "v_ = MISSING" not in code and "is not MISSING: out_.append" not in code


@pytest.mark.parametrize("refusal", [None, "", "no", 0, False])
@pytest.mark.parametrize("text", ["", "hi"])
def test_either_of_known_fields_after_strings_is_pythons_or(text: str, refusal: Any) -> None:
    """`a || b` of fields the caller holds, each but the last a string: Python's `or` of them, no rich path (the
    last as it is, as JMESPath gives it: false and 0 too)."""
    template = "{$when: 't || r', empty: false, then: {$get: 't || r'}, else: none}"
    source = parse_rule_text("t: " + template, "test.yaml")
    node = parse_template(source.data["t"], ("t",), Env(source))
    made = inline_node(node, "scope_", "v_", is_dict=True, known={"t": "T", "r": "R"}, texts=frozenset({"t"}))
    code = "\n".join(made.head + made.body)
    assert "(T or R)" in code and "scope_" not in code
    names = {**made.names, "T": text, "R": refusal}
    exec("\n".join(["def run(scope_, c):", *("    " + line for line in made.head + made.body), "    return v_"]), names)
    scope = {"t": text, "r": refusal}
    assert names["run"](scope, Ctx("test")) == render(template, scope)


def test_an_inlined_template_says_when_it_reads_its_scope_whole() -> None:
    source = parse_rule_text("t: {a: {$get: '@'}, b: {$get: text}}", "test.yaml")
    whole = inline_node(parse_template(source.data["t"], ("t",), Env(source)), "scope_", "v_")
    source = parse_rule_text("t: {b: {$get: text}}", "test.yaml")
    plain = inline_node(parse_template(source.data["t"], ("t",), Env(source)), "scope_", "v_")
    assert whole.whole and not plain.whole
