"""Hostile input at every JSON boundary: only toolnexus errors escape, each with the culprit's path.

Deep nesting, NaN and Infinity, lone surrogates and badly typed request fields, in every place
they can enter (the request, tool-call arguments text, a tool result the rules parse, a response
body, a streamed event, streamed JSON, an error body, the client's body, the CLI's input).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolnexus
from support.cases import request_outcome
from support.cli import run_cli
from toolnexus import (
    ProviderError,
    ResponseError,
    RuleError,
    ToolnexusError,
    TranslationError,
    stream_translator,
    translate_request,
    translate_response,
)
from toolnexus.devtools.stub import ProviderStub, StubReply
from toolnexus.http.client import encode_body
from toolnexus.language import jsonsafe, templates
from toolnexus.translate.rulebook import load_rules
from toolnexus.translate.stream_code import as_checked
from toolnexus.translate.stream_rules import EXTEND, Move

PROVIDERS = ["anthropic", "gemini", "openai"]
REPO = Path(__file__).resolve().parents[1]
DEEP = 1_000  # where Python's own recursion gives out


def nested(depth: int, leaf: Any = 1) -> Any:
    """`depth` objects, each inside the next (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_text(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def request_with(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}


def with_call(arguments: Any, *, call_id: str = "c1", name: str = "f", result: str = "done") -> dict[str, Any]:
    return request_with(
        messages=[
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            },
            {"role": "tool", "tool_call_id": call_id, "content": result},
        ],
        tools=[{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}],
    )


def refused(provider: str, request: dict[str, Any]) -> TranslationError:
    try:
        before: Any = copy.deepcopy(request)
    except RecursionError:  # deeper than the test's own copy goes
        before = None
    with pytest.raises(TranslationError) as info:
        translate_request(provider, request)
    assert before is None or request == before, "a refused request was mutated"
    return info.value


# ---------------------------------------------------------------- the request


@pytest.mark.parametrize("provider", PROVIDERS)
def test_deep_arguments_text_is_refused_at_the_arguments(provider: str) -> None:
    error = refused(provider, with_call(deep_text(DEEP)))
    assert error.path == "messages[1].tool_calls[0].function.arguments"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_arguments_text_deeper_than_the_limit_is_refused_where_it_gets_too_deep(provider: str) -> None:
    error = refused(provider, with_call(deep_text(jsonsafe.MAX_DEPTH + 1)))
    assert error.path == "messages[1].tool_calls[0].function.arguments" + ".a" * jsonsafe.MAX_DEPTH
    translate_request(provider, with_call(deep_text(jsonsafe.MAX_DEPTH)))  # the limit itself is allowed


@pytest.mark.parametrize("provider", PROVIDERS)
def test_deep_arguments_object_is_refused_with_its_path(provider: str) -> None:
    error = refused(provider, with_call(nested(DEEP)))
    assert error.path.startswith("messages[1].tool_calls[0].function.arguments.a.a")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_deep_tool_schema_is_refused_before_the_client_encodes_it(provider: str) -> None:
    request = request_with(tools=[{"type": "function", "function": {"name": "f", "parameters": nested(DEEP)}}])
    assert refused(provider, request).path.startswith("tools[0].function.parameters.a.a")


def test_a_deep_tool_result_the_rules_parse_as_an_object_is_refused_at_its_content() -> None:
    """Gemini's rules parse a tool result's JSON-object text ($as_object); the others send the text as it is."""
    request = with_call("{}", result=deep_text(DEEP))
    assert refused("gemini", request).path == "messages[2].content"
    for provider in ("anthropic", "openai"):
        translate_request(provider, request)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("where", "given"),
    [
        ("messages[1].tool_calls[0].id", with_call("{}", call_id="c\ud800")),
        ("messages[1].tool_calls[0].function.name", with_call("{}", name="f\udfff")),
        ("messages[0].content", request_with(messages=[{"role": "user", "content": "a\ud800b"}])),
        ("messages[2].content", with_call("{}", result="\ud800")),
        ("user", request_with(user="\ud800")),
        ("messages[1].tool_calls[0].function.arguments.k", with_call('{"k": "\\ud800"}')),
    ],
)
def test_a_lone_surrogate_is_refused_at_its_path_when_translating(provider: str, where: str, given: Any) -> None:
    assert refused(provider, given).path == where


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("given", "where"),
    [
        (request_with(temperature=math.nan), "temperature"),
        (request_with(temperature=math.inf), "temperature"),
        (request_with(stop=["a", -math.inf]), "stop[1]"),
        (request_with(metadata={"k": math.nan}), "metadata.k"),
        (
            request_with(tools=[{"type": "function", "function": {"name": "f", "parameters": {"m": math.inf}}}]),
            "tools[0].function.parameters.m",
        ),
        (
            request_with(
                messages=[
                    {"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"t": math.nan}}]}
                ]
            ),
            "messages[0].content[0].cache_control.t",
        ),
        (with_call('{"x": NaN}'), "messages[1].tool_calls[0].function.arguments.x"),
        (with_call('{"x": [1e400]}'), "messages[1].tool_calls[0].function.arguments.x[0]"),
        (with_call({"x": math.nan}), "messages[1].tool_calls[0].function.arguments.x"),
    ],
)
def test_nan_and_infinity_are_refused_everywhere(provider: str, given: Any, where: str) -> None:
    """NaN or Infinity anywhere, even in a field the provider drops, is refused: no output is invalid JSON."""
    assert refused(provider, given).path == where


# A request body in each shape `translate_request` reads: a tool's schema given as %s, that schema's path, and
# its level (the arrays and objects around it, itself included).
BODIES = [
    (
        "openai",
        '{"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", '
        '"function": {"name": "f", "parameters": %s}}]}',
        "tools[0].function.parameters",
        5,
    ),
    (
        "anthropic",
        '{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], '
        '"tools": [{"name": "f", "input_schema": %s}]}',
        "tools[0].input_schema",
        4,
    ),
    (
        "openai-responses",
        '{"model": "m", "input": "hi", "tools": [{"type": "function", "name": "f", "parameters": %s}]}',
        "tools[0].parameters",
        4,
    ),
]
SHAPES = pytest.mark.parametrize(("source", "body", "schema", "level"), BODIES, ids=[b[0] for b in BODIES])


def body_refused(provider: str, source: str, text: str) -> str:
    """The path of the TranslationError `translate_request` raises for the body `text`, the same as str and bytes."""
    paths = []
    for body in (text, text.encode()):
        with pytest.raises(TranslationError) as info:
            translate_request(provider, body, source=source)
        paths.append(info.value.path)
    assert paths[0] == paths[1]
    return paths[0]


@pytest.mark.parametrize("provider", PROVIDERS)
@SHAPES
@pytest.mark.parametrize(
    ("given", "where"),
    [
        ('{"m": NaN}', ".m"),
        ('{"m": [1, -Infinity]}', ".m[1]"),
        ('{"m": Infinity}', ".m"),
        ('{"m": {"n": 1e400}}', ".m.n"),
        ('{"description": "a\\ud800"}', ".description"),
        ('{"\\udfff": 1}', ".\udfff"),
        (deep_text(DEEP), None),  # too deep for the decoder itself: the whole body
        (deep_text(100_000), None),
        ("{1}", None),  # not JSON
    ],
)
def test_a_request_body_json_cannot_carry_is_refused_with_its_path(
    provider: str, source: str, body: str, schema: str, level: int, given: str, where: str | None
) -> None:
    """The body entry: the strict parse refuses what the decoded request's check refuses, at the same path."""
    assert body_refused(provider, source, body % given) == ("" if where is None else schema + where)


@pytest.mark.parametrize("provider", PROVIDERS)
@SHAPES
def test_a_request_body_nested_beyond_the_limit_is_refused_where_it_gets_too_deep(
    provider: str, source: str, body: str, schema: str, level: int
) -> None:
    """One level beyond the limit is refused at the object that passes it. At the limit, the body translates as
    the dict does (a source format's reader may nest it deeper in the request it builds, which is then refused)."""
    limit = jsonsafe.MAX_DEPTH + 1 - level  # the most objects the schema may nest (itself the first)
    assert body_refused(provider, source, body % deep_text(limit + 1)) == schema + ".a" * limit
    at_limit = body % deep_text(limit)
    options = {"source": source}
    assert request_outcome(provider, at_limit, options) == request_outcome(provider, json.loads(at_limit), options)


def agent_request(messages: int, tools: int) -> dict[str, Any]:
    """A request of realistic size: `tools` declarations with nested schemas (one holding a `null` default and
    the word null inside strings, as in `"type": "null"` and `",null]"`), and `messages` turns whose assistant
    turns have a null content and arguments given as objects: null tokens the JSON check must tell from a NaN."""
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": ["string", "null"], "default": None, "description": "a list like [1,null] or ,null]"},
            "range": {"type": "array", "items": {"type": "number", "minimum": 0.5, "maximum": 2.5}},
        },
    }
    declared = [
        {"type": "function", "function": {"name": f"tool_{i}", "description": "d", "parameters": copy.deepcopy(schema)}}
        for i in range(tools)
    ]
    turns: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "go"}]
    while len(turns) < messages:
        call = f"c{len(turns)}"
        arguments = {"when": None, "range": [0.5, 1.5], "nested": {"deep": [{"x": 2.5}]}}
        function = {"name": "tool_0", "arguments": arguments}
        turns.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call, "type": "function", "function": function}],
            }
        )
        turns.append({"role": "tool", "tool_call_id": call, "content": "done"})
    turns.append({"role": "user", "content": "and now?"})
    return {"model": "m", "messages": turns, "tools": declared, "tool_choice": "auto"}


# The JSON check encodes a request whose lists hold at most a few dozen items in one call, and a longer one member
# by member: both sides of that line, with the culprit deep inside a tool schema and inside object arguments.
SIZES = [(4, 1), (12, 9), (12, 20), (33, 32), (40, 33), (70, 40)]
CULPRITS = [math.nan, math.inf, -math.inf, "\ud800", {1}, 1j]


@pytest.mark.parametrize("provider", [*PROVIDERS, "mistral"])
@pytest.mark.parametrize(("messages", "tools"), SIZES)
@pytest.mark.parametrize("culprit", CULPRITS, ids=["nan", "inf", "-inf", "surrogate", "set", "complex"])
def test_a_bad_value_deep_in_a_tool_schema_or_in_object_arguments_is_refused_at_its_path(
    provider: str, messages: int, tools: int, culprit: Any
) -> None:
    request = agent_request(messages, tools)
    assert translate_request(provider, copy.deepcopy(request))  # valid as built: nulls are not NaN
    last = tools - 1
    schema = copy.deepcopy(request)
    schema["tools"][last]["function"]["parameters"]["properties"]["range"]["items"]["maximum"] = culprit
    where = f"tools[{last}].function.parameters.properties.range.items.maximum"
    assert refused(provider, schema).path == where
    turn = len(request["messages"]) - 3  # the last assistant turn
    arguments = copy.deepcopy(request)
    arguments["messages"][turn]["tool_calls"][0]["function"]["arguments"]["nested"]["deep"][0]["x"] = culprit
    where = f"messages[{turn}].tool_calls[0].function.arguments.nested.deep[0].x"
    assert refused(provider, arguments).path == where


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("messages", "tools"), SIZES)
def test_a_bad_key_deep_in_a_tool_schema_is_refused_at_its_object(provider: str, messages: int, tools: int) -> None:
    for key in (None, 2.5, ("t",), "k\udfff"):  # an int key is written as its text, as the standard encoder does
        request = agent_request(messages, tools)
        request["tools"][tools - 1]["function"]["parameters"]["properties"]["range"]["items"][key] = 1
        where = f"tools[{tools - 1}].function.parameters.properties.range.items"
        assert refused(provider, request).path == where + (f".{key}" if isinstance(key, str) else "")


BAD_FIELDS = [
    ("max_tokens", "100"),
    ("max_tokens", -1),
    ("max_tokens", 1e30),
    ("max_tokens", True),
    ("max_tokens", 0.0),
    ("max_completion_tokens", 2.5),
    ("temperature", "hot"),
    ("top_p", [1]),
    ("frequency_penalty", "0"),
    ("presence_penalty", {}),
    ("stop", 5),
    ("stop", [5]),
    ("user", 5),
    ("seed", "x"),
    ("seed", 1.5),
    ("n", "2"),
    ("n", 0),
    ("parallel_tool_calls", "yes"),
    ("response_format", "json"),
    ("response_format", {}),
    ("response_format", [1]),
    ("response_format", {"type": "bogus"}),
    ("response_format", {"type": "json_schema"}),
    ("response_format", {"type": "json_schema", "json_schema": {"name": "x"}}),
    ("response_format", {"type": "json_schema", "json_schema": {"schema": "x"}}),
    ("messages", []),
    ("messages", {}),
    ("model", 5),
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("name", "value"), BAD_FIELDS)
def test_request_fields_are_type_checked_for_every_provider(provider: str, name: str, value: Any) -> None:
    """The OpenAI request's field types (one data file) hold whatever the provider, and whether it maps the field."""
    assert refused(provider, request_with(**{name: value})).path.startswith(name)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_null_and_a_zero_max_tokens_still_mean_not_given(provider: str) -> None:
    translate_request(provider, request_with(max_tokens=0, temperature=None, stop=None))


@pytest.mark.parametrize(
    ("provider", "name", "inside", "outside"),
    [
        ("anthropic", "temperature", 1.0, 1.01),
        ("anthropic", "top_p", 0.0, -0.1),
        ("anthropic", "temperature", 0, -0.5),
        ("gemini", "temperature", 2.0, 2.1),
        ("gemini", "top_p", 1, 1.01),
        ("openai", "temperature", 2, 3),
        ("openai", "frequency_penalty", -2, -2.5),
        ("openai", "presence_penalty", 2.0, 2.01),
        ("openai", "top_logprobs", 20, 21),
    ],
)
def test_a_value_outside_the_rule_files_range_is_refused_never_clamped(
    provider: str, name: str, inside: Any, outside: Any
) -> None:
    translate_request(provider, request_with(**{name: inside}))  # the range's own ends are inside it
    error = refused(provider, request_with(**{name: outside}))
    assert error.path == name
    assert f"{provider}.yaml:" in str(error)  # it names the rule file (and line) that declares the range


def test_a_range_is_sent_exactly_as_given() -> None:
    body = translate_request("anthropic", request_with(temperature=0.999, max_tokens=1))
    assert (body["temperature"], body["max_tokens"]) == (0.999, 1)
    assert translate_request("gemini", request_with(temperature=1.7))["generationConfig"]["temperature"] == 1.7


def rules_dir_with(tmp_path: Path, provider: str, old: str, new: str) -> Path:
    text = (REPO / "rules" / f"{provider}.yaml").read_text(encoding="utf-8")
    assert old in text
    (tmp_path / f"{provider}.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("new", "rule"),
    [
        ("    user: {minimum: 0}\n", "request.ranges.user"),  # not a number
        ("    tempreature: {minimum: 0}\n", "request.ranges.tempreature"),  # not a field (did you mean?)
        ("    seed: {minimum: 5, maximum: 1}\n", "request.ranges.seed"),  # empty
        ("    seed: {minimum: 0, clamp: true}\n", "request.ranges.seed"),  # not a range key
    ],
)
def test_a_bad_range_is_a_located_rule_error(tmp_path: Path, new: str, rule: str) -> None:
    rules = rules_dir_with(tmp_path, "anthropic", "  ranges:\n", "  ranges:\n" + new)
    with pytest.raises(RuleError) as info:
        load_rules(rules).get("anthropic")
    assert info.value.rule.startswith(rule)
    assert info.value.file.endswith("anthropic.yaml") and info.value.line is not None
    if "tempreature" in rule:
        assert "did you mean 'temperature'" in info.value.message


# ---------------------------------------------------------------- responses, streams, error bodies, the client


def openai_response(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "r", "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def test_a_deep_response_is_a_response_error_with_its_path() -> None:
    response = {"content": [{"type": "tool_use", "id": "t", "name": "f", "input": nested(DEEP)}], "stop_reason": "x"}
    with pytest.raises(ResponseError) as info:
        translate_response("anthropic", response)
    assert info.value.path.startswith("content[0].input.a.a")


@pytest.mark.parametrize(
    ("response", "where"),
    [
        (openai_response({"role": "assistant", "content": "a\ud800"}), "choices[0].message.content"),
        (openai_response({"role": "assistant", "content": "x", "n": math.inf}), "choices[0].message.n"),
    ],
)
def test_a_response_json_cannot_carry_is_refused_with_its_path(response: Any, where: str) -> None:
    with pytest.raises(ResponseError) as info:
        translate_response("openai", response)
    assert info.value.path == where


ANSWER_TEXT = '{"id": "r", "model": "m", "choices": [{"message": {"role": "assistant", "content": %s}}]}'


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('"a\\ud800"', "choices[0].message.content"),
        ("NaN", "choices[0].message.content"),
        ("[null, 1e400]", "choices[0].message.content[1]"),
        ("-Infinity", "choices[0].message.content"),
        (deep_text(300), "choices[0].message.content" + ".a" * 252),
        (deep_text(DEEP), ""),  # too deep for the decoder itself: the whole body
        (deep_text(100_000), ""),
    ],
)
def test_a_response_body_json_cannot_carry_is_refused_with_its_path(content: str, where: str) -> None:
    """The raw-body entry: the strict parse refuses what the decoded answer's check refuses, at the same path."""
    for body in (ANSWER_TEXT % content, (ANSWER_TEXT % content).encode()):
        with pytest.raises(ResponseError) as info:
            translate_response("openai", body)
        assert info.value.path == where


@pytest.mark.parametrize("data", [deep_text(DEEP), deep_text(100_000), '{"type": "ping", "x": "\\ud800"}'])
def test_a_hostile_stream_event_is_a_decode_error(data: str) -> None:
    translator = stream_translator("anthropic")
    with pytest.raises(ProviderError) as info:
        translator.feed(data)
    assert info.value.kind == "decode"


def test_deep_streamed_arguments_are_a_response_error_at_the_tool_input() -> None:
    translator = stream_translator("anthropic")
    events = [
        {"type": "message_start", "message": {"id": "m", "model": "m", "content": [], "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "["}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "[" * DEEP}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "]" * 1001}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    with pytest.raises(ToolnexusError) as info:
        for event in events:
            translator.feed(json.dumps(event))
        translator.finish()
    assert isinstance(info.value, ResponseError)
    assert info.value.path.startswith("content[0]")


@pytest.mark.parametrize("body", [deep_text(100_000).encode(), b'{"error": {"message": "\\ud800"}}', b"\xff\xfe"])
def test_an_unreadable_error_body_is_described_not_raised(body: bytes) -> None:
    endpoint = load_rules(None).get("anthropic").endpoint
    kind, message = endpoint.describe_error(body)
    assert kind is None and message.startswith("unreadable body")


def test_encode_body_names_where_in_the_body_a_hook_put_a_bad_value() -> None:
    with pytest.raises(TranslationError) as info:
        encode_body({"messages": [{"content": "x"}], "temperature": math.nan, "k": nested(DEEP)})
    assert info.value.path == "body.temperature"


@pytest.mark.parametrize(
    "body", [deep_text(100_000).encode(), deep_text(DEEP).encode(), b'{"choices": [], "x": "\\udc00"}']
)
def test_the_client_reads_a_hostile_body_as_a_decode_error(body: bytes) -> None:
    with ProviderStub(lambda request: StubReply(body=body, headers={"content-type": "application/json"})) as stub:

        async def main() -> None:
            client = toolnexus.create_client(base_url=stub.base_url, style="openai", model="m", api_key="k")
            async with client:
                await client.translate([{"role": "user", "content": "hi"}])

        with pytest.raises(ProviderError) as info:
            asyncio.run(main())
    assert info.value.kind == "decode"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[NaN, " + "[" * 100_000 + "]" * 100_000 + "]", ""),  # a NaN first, then too deep for the decoder
        ('{"a": [1, 1e400]}', "a[1]"),
        ('{"k\\ud800": 1}', "k\ud800"),
        (b'{"a": -Infinity}', "a"),
        ("[" * 300 + "]" * 300, "[0]" * 256),
        ("[" * 257 + "]" * 257, "[0]" * 256),  # the shortest text nested too deep
    ],
)
def test_every_boundary_decodes_through_one_loads_that_raises_only_value_errors(text: str | bytes, where: str) -> None:
    with pytest.raises(jsonsafe.JsonValueError) as info:
        jsonsafe.loads(text)
    assert info.value.where == where


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-32"])
def test_loads_reads_bytes_as_the_text_they_encode(encoding: str) -> None:
    """Bytes go to orjson as they are; what it refuses (a BOM, not UTF-8) is decoded as json detects it."""
    text = '{"a": "\u00e9t\u00e9", "b": [1, 2.5, 123456789012345678901234]}'
    assert jsonsafe.loads(text.encode(encoding)) == json.loads(text)


# ---------------------------------------------------------------- the CLI


@pytest.mark.parametrize("literal", ["NaN", "1e400", "-Infinity"])
def test_the_cli_refuses_nan_and_infinity_with_the_path_and_prints_no_json(literal: str) -> None:
    text = json.dumps(request_with(temperature=0.5)).replace("0.5", literal)
    run = run_cli("request", "--to", "openai", "-", stdin=text)
    assert run.returncode == 2
    assert run.stdout == ""
    assert "temperature" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize(
    "content",
    [
        deep_text(100_000).encode(),  # too deep for Python's decoder
        b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800"}]}',  # a lone surrogate escape
        "{}".encode("utf-16"),  # not UTF-8
    ],
)
def test_the_cli_reports_a_hostile_input_file_in_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "in.json"
    path.write_bytes(content)
    run = run_cli("request", "--to", "anthropic", str(path), stdin="")
    assert run.returncode == 2
    assert run.stdout == "" and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr


# ---------------------------------------------------------------- the property: only toolnexus errors, with paths

leaves = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, "\ud800", "x\udfffy", 1e308, -(2**70), "", True, None]),
    st.integers(-5, 5),
    st.text(max_size=4),
)


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    depth = draw(st.sampled_from([1, 50, jsonsafe.MAX_DEPTH - 1, jsonsafe.MAX_DEPTH + 1, DEEP]))
    leaf = draw(leaves)
    return nested(depth, leaf) if draw(st.booleans()) else json.loads("[" * depth + "0" + "]" * depth)


hostile = st.one_of(leaves, deep_values(), st.lists(leaves, max_size=3), st.dictionaries(st.text(max_size=2), leaves))
FIELDS = [
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "user",
    "seed",
    "n",
    "response_format",
    "metadata",
    "logit_bias",
]


def as_text(value: Any) -> str:
    """JSON text of a hostile value (NaN written as Python writes it; too deep for the encoder: deep text)."""
    try:
        return json.dumps(value)
    except (RecursionError, ValueError):
        return deep_text(DEEP)


def rich_request(parts: int) -> dict[str, Any]:
    """A valid request touching every structure the reader knows, with `parts` text parts in its first turn."""
    request = with_call('{"city": "Paris"}')
    request["messages"][0]["content"] = [{"type": "text", "text": "t"}] * parts + [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    ]
    request["messages"].insert(0, {"role": "system", "content": "Be terse."})
    request["messages"].append({"role": "assistant", "content": "Done."})
    request["tools"][0]["function"].update(description="a tool", parameters={"type": "object", "properties": {}})
    request.update(tool_choice="auto", max_tokens=100, temperature=0.5, stop=["END"], user="u")
    return request


def places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a request (each value, container or not), as a key path."""
    out = [at] if at else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):  # the first few parts stand for the rest
            out += places(item, (*at, index))
    return out


def put(request: dict[str, Any], at: tuple[Any, ...], value: Any) -> None:
    """Set the value at `at`, unless an earlier change already replaced what held it."""
    target: Any = request
    try:
        for step in at[:-1]:
            target = target[step]
        if isinstance(target, dict) or (isinstance(target, list) and type(at[-1]) is int):
            target[at[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass


@st.composite
def hostile_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request, then pathological values put into one to three of its places (any place at all)."""
    request = copy.deepcopy(rich_request(draw(st.sampled_from([1, 7, 200, 2_000]))))  # part counts up to large
    for at in draw(st.lists(st.sampled_from(places(rich_request(1))), min_size=1, max_size=3)):
        value = draw(hostile)
        if isinstance(at[-1], str) and at[-1] == "arguments" and draw(st.booleans()):
            value = as_text(value)  # hostile JSON text where JSON text is read
        put(request, at, value)
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=2, unique=True)):
        request[name] = draw(hostile)
    return request


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(
    max_examples=100,
    deadline=timedelta(
        seconds=5
    ),  # generous for a loaded 2-core machine; examples are capped (200 parts, 1,000 levels)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(request=hostile_requests())
def test_hostile_requests_give_a_body_or_a_toolnexus_error_with_a_path(provider: str, request: Any) -> None:
    """Deep nesting, NaN and Infinity, surrogates and wrong types in any place: a valid body, or a located error."""
    try:
        body = translate_request(provider, request, unknown_fields="drop")
    except TranslationError as error:
        assert error.path, f"no path: {error}"
        return
    json.dumps(body, allow_nan=False).encode("utf-8")  # whatever is returned is valid JSON


response_bodies = st.one_of(
    st.builds(lambda v: openai_response({"role": "assistant", "content": v}), hostile),
    st.builds(
        lambda v: {"content": [{"type": "tool_use", "id": "t", "name": "f", "input": v}], "stop_reason": "tool_use"},
        hostile,
    ),
    st.builds(lambda v: {"candidates": [{"content": {"parts": [{"text": v}]}}]}, hostile),
    st.builds(
        lambda v: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": v}}]}}]}, hostile
    ),
)


def answer_outcome(provider: str, response: Any) -> Any:
    """A result's view, or the ResponseError's path."""
    try:
        return translate_response(provider, response).to_dict()
    except ResponseError as error:
        return error.path


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(response=response_bodies)
def test_a_hostile_answer_as_a_body_gives_what_the_decoded_answer_gives(provider: str, response: Any) -> None:
    """The raw-body entry's parse refuses what the dict's check refuses, at the same path (NaN written as Python
    writes it); an answer Python cannot write as JSON text has no body to compare."""
    try:
        text = json.dumps(response)
    except (TypeError, ValueError, RecursionError):
        return
    assert answer_outcome(provider, text.encode()) == answer_outcome(provider, response)


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(response=response_bodies)
def test_hostile_responses_give_a_result_or_a_response_error(provider: str, response: Any) -> None:
    try:
        result = translate_response(provider, response)
    except ResponseError as error:
        assert error.path, f"no path: {error}"
        return
    json.dumps(result.to_dict(), allow_nan=False).encode("utf-8")


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(value=hostile)
def test_hostile_stream_events_give_chunks_or_a_toolnexus_error(provider: str, value: Any) -> None:
    """Each value as a whole event, and inside one."""
    for event in (value, {"type": "message_start", "x": value}, {"candidates": [{"content": {"parts": [value]}}]}):
        try:
            text = json.dumps(event)
        except RecursionError:  # deeper than the test's own encoder goes: send the deep text itself
            text = deep_text(DEEP)
        with contextlib.suppress(ToolnexusError):
            stream_translator(provider).feed(text)


def test_the_check_enters_only_text_holding_a_null_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema saying "null" (a string) holds no null token: the check looks no further than orjson's text.
    A transcript is looked at message by message: only what its messages hold (their containers, encoded in
    batches) is searched for null tokens, and only a batch whose text holds one is entered; a message's own
    `content: null` enters nothing."""
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    entered: list[Any] = []
    finite = jsonsafe._finite
    monkeypatch.setattr(jsonsafe, "_finite", lambda value, tokens: entered.append(value) or finite(value, tokens))
    jsonsafe.check({"parameters": {"type": ["string", "null"], "properties": {"null": {}}}, "n": [1]})
    assert entered == []
    answer = {"schema": {"type": "null"}, "m": [{"a": None}]}
    jsonsafe.check(answer)
    assert entered == [answer]
    entered.clear()
    messages = [{"role": "user", "content": "x"}] * 40 + [{"role": "assistant", "content": None, "f": [1.5, None]}]
    jsonsafe.check({"messages": messages, "schema": {"type": "null"}})
    assert entered == [[messages[-1]["f"]]]
    entered.clear()
    jsonsafe.check({"messages": [{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}] * 40})
    assert entered == []
    entered.clear()  # a message whose one null is its own `content: null`: the walk ends within its own values,
    looked: list[float] = []  # never entering what it holds (no float below it is looked at)
    finite_float = math.isfinite
    monkeypatch.setattr(jsonsafe.math, "isfinite", lambda x: looked.append(x) or finite_float(x))
    last = {"f": {"g": [1.5]}, "content": None}
    jsonsafe.check({"messages": [{"role": "user", "content": "x"}] * 40 + [last]})
    assert looked == []
    monkeypatch.undo()
    with pytest.raises(jsonsafe.JsonValueError) as caught:  # a NaN beside it still writes a null of its own
        jsonsafe.check({"messages": [{"role": "user", "content": "x"}] * 40 + [{"content": None, "f": math.nan}]})
    assert caught.value.where == "messages[40].f"


def test_a_transcript_message_of_strings_and_nones_is_not_scanned_for_null_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A message whose values are all str, int, bool or None holds no float: orjson's pass settles it, so its
    text's null tokens are never looked for; a message holding a float (or a container) still is."""
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    looked: list[Any] = []
    nones = jsonsafe._nulls_are_nones
    monkeypatch.setattr(jsonsafe, "_nulls_are_nones", lambda v, out, first: looked.append(v) or nones(v, out, first))
    flat = [{"role": "tool", "content": "x", "tool_call_id": "c", "name": None, "n": 3, "b": True}] * 40
    jsonsafe.check({"messages": flat})
    assert looked == []
    with pytest.raises(jsonsafe.JsonValueError) as caught:
        jsonsafe.check({"messages": [*flat, {"role": "tool", "content": None, "f": math.inf}]})
    assert caught.value.where == "messages[40].f"
    for culprit, where in [
        ({"role": "tool", "content": "\udc00 x", "name": None}, "messages[40].content"),
        ({"role": "tool", "content": "é", "\ud800": "x"}, "messages[40].\ud800"),
        ({"role": "tool", "n": 2**70, "f": 1.5, "s": {"x"}}, "messages[40].s"),
    ]:
        with pytest.raises(jsonsafe.JsonValueError) as caught:
            jsonsafe.check({"messages": [*flat, culprit]})
        assert caught.value.where == where
    jsonsafe.check({"messages": [*flat, {"role": "tool", "content": "東京 🚀", "n": 2**70, 7: "x"}]})  # json writes it


def test_explain_shows_the_compiled_ranges() -> None:
    lines = load_rules(None).get("anthropic").explain().splitlines()
    assert "  request ranges: temperature between 0 and 1, top_p between 0 and 1" in lines


@pytest.fixture(params=["orjson", "standard"])
def encoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The check with orjson (the `fast` extra) and without it: the verdicts must not differ."""
    if request.param == "standard":
        monkeypatch.setattr(jsonsafe, "orjson", None)
    elif jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    return str(request.param)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1, None, {"b": None, "c": math.nan}]}, "a[2].c"),
        ([None, (1.5, -math.inf)], "[1][1]"),
        ({"k": "ok", "s": ["x", "\udfff"]}, "s[1]"),
        ({"\ud800": 1}, "\ud800"),
        ({"set": {1}}, "set"),
        (nested(jsonsafe.MAX_DEPTH + 1), ".".join("a" * jsonsafe.MAX_DEPTH)),
        ({"n": None, "deep": nested(DEEP)}, "deep" + ".a" * (jsonsafe.MAX_DEPTH - 1)),
        ({"big": 2**70, "m": None, "x": math.nan}, "x"),
        ({"s": "a:null]", "t": ["null", [math.inf]]}, "t[1][0]"),  # the word in strings, the token elsewhere
        ([{"x": ",null}"}, {"y": {"z": [1, math.nan]}}], "[1].y.z[1]"),
        ({"t": "x" * 20_000, "m": [{"s": "y" * 20_000}, {"a": None, "f": (1, math.inf)}]}, "m[1].f[1]"),
    ],
)
def test_the_check_finds_the_same_culprit_with_and_without_orjson(encoder: str, value: Any, where: str) -> None:
    with pytest.raises(jsonsafe.JsonValueError) as info:
        jsonsafe.check(value)
    assert info.value.where == where


@pytest.mark.parametrize(
    "value", [{"a": None, "b": [None, 1.5, "x"]}, nested(jsonsafe.MAX_DEPTH), {"big": 2**70}, {1: "int key"}, ()]
)
def test_the_check_accepts_what_json_can_say_with_and_without_orjson(encoder: str, value: Any) -> None:
    jsonsafe.check(value)


def test_a_nan_among_many_items_is_found_with_orjson() -> None:
    """A long list is looked at item by item: its culprit is still found, with its path."""
    items: list[Any] = [{"content": None, "n": i} for i in range(100)]
    items[73]["x"] = [math.nan]
    with pytest.raises(jsonsafe.JsonValueError) as info:
        jsonsafe.check({"messages": items})
    assert info.value.where == "messages[73].x[0]"


@pytest.mark.parametrize("at", [0, 63, 64, 150, 199])
@pytest.mark.parametrize(
    ("culprit", "inside"),
    [(math.nan, "tool_calls[0].x"), ("\ud800 é", "tool_calls[0].x"), ("é \udfff", "content"), (math.inf, "f")],
)
def test_a_culprit_in_any_batch_of_a_long_transcript_is_found(at: int, culprit: Any, inside: str) -> None:
    """A transcript's containers and its text that is not ASCII are encoded in batches: a culprit in the first,
    a middle or the last batch, at either edge of one, is found with its path."""
    items: list[Any] = [
        {"role": "assistant", "content": "é" if i % 2 else None, "tool_calls": [{"id": "c", "x": [1.5, None]}]}
        for i in range(200)
    ]
    if inside == "tool_calls[0].x":
        items[at]["tool_calls"][0]["x"] = culprit
    else:
        items[at][inside] = culprit
    jsonsafe.check({"messages": items[:at]})
    with pytest.raises(jsonsafe.JsonValueError) as info:
        jsonsafe.check({"messages": items})
    assert info.value.where == f"messages[{at}].{inside}"


LONG_PADDING = ', "pad": "' + "x" * 600 + '"'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": "\\ud800"' + LONG_PADDING + "}", "a"),  # a lone surrogate, escaped
        ('{"a": "\ud800"' + LONG_PADDING + "}", "a"),  # a lone surrogate, as itself
        ('{"a": [1e400]' + LONG_PADDING + "}", "a[0]"),  # beyond a float
        ('{"a": NaN' + LONG_PADDING + "}", "a"),
        ('{"a": ' + "[" * 300 + "]" * 300 + LONG_PADDING + "}", "a" + "[0]" * 255),
    ],
)
def test_long_json_text_is_refused_where_its_culprit_sits(text: str, where: str) -> None:
    with pytest.raises(jsonsafe.JsonValueError) as caught:
        jsonsafe.loads(text)
    assert caught.value.where == where


def test_long_plain_json_text_is_decoded_without_a_second_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text that encodes as UTF-8, escapes no surrogate and has few brackets cannot hold what `check` refuses."""

    def walked(value: Any) -> None:
        raise AssertionError("checked again")

    monkeypatch.setattr(jsonsafe, "check", walked)
    text = '{"a": ["é", "\\u00e9", 1.5, {"b": null}]' + LONG_PADDING + "}"
    assert jsonsafe.loads(text)["a"] == ["é", "é", 1.5, {"b": None}]


@pytest.mark.parametrize("depth", [8, jsonsafe.MAX_DEPTH - 2, jsonsafe.MAX_DEPTH - 1, jsonsafe.MAX_DEPTH])
def test_long_text_with_many_brackets_decodes_alike_whatever_its_depth(
    monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """More brackets than MAX_DEPTH (20 tool schemas) need not nest deep: what orjson reads and writes back is
    within the limit, read by orjson alone; deeper text (orjson writes 254 levels) goes to the standard decoder."""
    schemas = ", ".join(['{"p": {"type": ["a", "b"]}}'] * 300)
    text = '{"tools": [' + schemas + '], "d": ' + deep_text(depth - 1) + "}"
    expected = json.loads(text)
    standard = jsonsafe._FINITE.decode

    def decoded(text: str) -> Any:
        assert depth > 254, "read by the standard decoder"
        return standard(text)

    monkeypatch.setattr(jsonsafe._FINITE, "decode", decoded)
    assert jsonsafe.loads(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"n": 18446744073709551616, "m": -9223372036854775809}',  # beyond 64 bits: orjson would give floats
        '{"created": 1796083201, "model": "gpt-2026-11-30", "x": [1.5, -0.0, 1e-7, 123456789012345678]}',
        '{"t": "\\u00e9\\ud83d\\ude00", "u": "é", "v": null, "w": true}',
        '{"id": "cmpl-0000000000000000000000001", "n":\t18446744073709551616}',  # a run in an id, then a number
        "[1,\n -18446744073709551616, 0.12345678901234567890123]",
        "18446744073709551616",
    ],
)
def test_text_decodes_to_what_the_standard_decoder_gives(text: str) -> None:
    """Text orjson reads (the `fast` extra) and text it leaves to the standard decoder give the same value,
    types included: an integer beyond 64 bits stays an exact int."""
    value = jsonsafe.loads(text)
    assert value == json.loads(text)
    assert json.dumps(value) == json.dumps(json.loads(text))


@pytest.mark.parametrize(
    ("text", "long"),
    [
        (b'{"id": "cmpl-demo0000000000000000000000002", "created": 1796083201}', False),  # inside a string
        (b'{"id": "12345678901234567890"}', False),  # a quote before the run: a string
        (b'{"n": 12345678901234567890}', True),
        (b'{"n":-12345678901234567890}', True),
        (b"[1,\n12345678901234567890]", True),
        (b"[12345678901234567890]", True),  # after a bracket (of the class of what a number follows)
        (b'{"a": [[-12345678901234567890]]}', True),
        (b"[0.1234567890123456789012]", True),  # a fraction's run: left to the standard decoder too
        (b'{"id": "x00000000000000000000000000", "n": 12345678901234567890}', True),  # past the first run
    ],
)
def test_only_a_digit_run_a_number_can_hold_sends_text_to_the_standard_decoder(text: bytes, long: bool) -> None:
    """A long id of digits (every event of some streams) is read by orjson; a run of 19 digits where a number's
    digits can stand (orjson would read an integer beyond 64 bits as a float) is not."""
    if jsonsafe.orjson is not None:
        assert (jsonsafe._for_orjson(text.decode()) is None) is long
        assert (jsonsafe._for_orjson(text) is None) is long  # a body's bytes, as they are
    assert jsonsafe.loads(text) == json.loads(text)


@pytest.mark.parametrize("shift", range(8))
@pytest.mark.parametrize(
    ("number", "long"),
    [
        ("-9223372036854775809", True),  # 19 digits, the fewest orjson reads otherwise
        ("123456789012345678901234", True),
        ("922337203685477580", False),  # 18 digits
        ('"2025-10-15T22:02:00Z", "at": 1796083201', False),  # a date and a 10-digit time: short runs, close
    ],
)
def test_a_long_text_is_screened_for_a_digit_run_at_any_offset(shift: int, number: str, long: bool) -> None:
    """Long text is screened by every 4th byte first (`_numbers_read_alike`): a run of 19 digits is found wherever
    it starts, and runs shorter than that send nothing to the standard decoder."""
    text = '{"pad": "' + "x" * (300 + shift) + '", "n": ' + number + "}"
    if jsonsafe.orjson is not None:
        assert (jsonsafe._for_orjson(text) is None) is long
        assert jsonsafe.standard_loads_each([text, text[:40] + '"}']) == [json.loads(text), {"pad": "x" * 31}]
    assert jsonsafe.loads(text) == json.loads(text)


# Pieces of JSON text where the screen before orjson decides: digit runs in numbers and in strings (an id),
# NaN and Infinity spellings, numbers beyond a float or 64 bits, escapes (paired and lone surrogates), a lone
# surrogate as itself, non-ASCII text.
_PIECES = st.sampled_from(
    [
        "NaN", "-NaN", "Infinity", "-Infinity", "infinity", "1e400", "-1e400", "1E309", "null", "true", "-0.0",
        "12345678901234567890", "-9223372036854775809", "9223372036854775807", "18446744073709551615",
        "1234567890123456789", "0.12345678901234567890123", "1e0000000000000000001", "1.5E+0000000000000000002",
        '"cmpl-00000000000000000000001"', '"12345678901234567890"', '"\\ud800"', '"\\udfff x"', '"\\ud83d\\ude00"',
        '"\\uD83D\\uDE00"', '"\ud800"', '"é\\u00e9"', '"\\\\u d800"', "[", "]", "{", "}", ",", ":",
    ]
)  # fmt: skip
_KEYS = st.sampled_from(['"a"', '"b"', '"\\udc00"', '"é"', '"0000000000000000000000"'])
_LEAVES = (
    _PIECES
    | st.integers(-(10**25), 10**25).map(str)
    | st.floats().map(repr)
    | st.text(max_size=6).map(lambda text: json.dumps(text, ensure_ascii=False))
)
_TEXTS = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]")
        | st.lists(st.tuples(_KEYS, inner), max_size=4).map(
            lambda pairs: "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"
        )
    ),
    max_leaves=16,
)


@st.composite
def json_texts(draw: st.DrawFn) -> str | bytes:
    """JSON text (or nearly: a piece may break it) around the screen's edges, nested up to past MAX_DEPTH."""
    text = draw(_TEXTS)
    depth = draw(st.sampled_from([0, 1, jsonsafe.MAX_DEPTH - 1, jsonsafe.MAX_DEPTH, jsonsafe.MAX_DEPTH + 1, 300]))
    opening, closing = draw(st.sampled_from([("[", "]"), ('{"k": ', "}"), ("[0,", "]")]))
    text = opening * depth + text + closing * depth
    text = draw(st.sampled_from(["", " ", "\n\t"])) + text + draw(st.sampled_from(["", "\r\n", "]"]))
    return text.encode("utf-8", "surrogatepass") if draw(st.booleans()) else text


def _outcome(text: str | bytes) -> tuple[Any, ...]:
    """What `loads` gives: the value (as json writes it: types, key order and duplicates told apart), the
    refusal with its path, or the decoder's error with its place."""
    try:
        value = jsonsafe.loads(text)
    except jsonsafe.JsonValueError as exc:
        return ("refused", exc.where, exc.message)
    except ValueError as exc:
        return ("not JSON", type(exc).__name__, str(exc))
    return ("value", type(value).__name__, json.dumps(value))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_texts())
def test_the_screen_before_orjson_changes_no_decision(text: str | bytes) -> None:
    """`loads` reads text through orjson only where the screen proves orjson reads it as the standard decoder
    and `check` would: the same value, the same refusal at the same path, the same decode error as the standard
    path alone (orjson absent) gives, for digit runs, NaN spellings, surrogates and nesting around MAX_DEPTH."""
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    fast = _outcome(text)
    with mock.patch.object(jsonsafe, "orjson", None):
        exact = _outcome(text)
    assert fast == exact


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '{"a": 1}\n{"b": 2}',  # a tool's output of one JSON row per line
        '{"a": 1} trailing',
        "[1, 2]",
        '"text"',
        '{"a": 1',
        '{"a": NaN}',
        '{"a": 1e400}',
        '{"a": "\\ud800"}',
        '{"n": 123456789012345678901234}',
        "{" * 300 + "}" * 300,
        '{"a": ' * 300 + "1" + "}" * 300,
    ],
)
def test_loads_object_agrees_with_loads(encoder: str, text: str) -> None:
    """`loads_object` (what `$as_object` reads a tool's text with): the object `loads` gives, None where `loads`
    fails to read JSON or reads something else, and the same JsonValueError where `check` refuses it."""
    try:
        expected = jsonsafe.loads(text)
    except jsonsafe.JsonValueError as exc:
        with pytest.raises(jsonsafe.JsonValueError) as caught:
            jsonsafe.loads_object(text)
        assert (caught.value.where, caught.value.message) == (exc.where, exc.message)
        return
    except ValueError:
        expected = None
    assert jsonsafe.loads_object(text) == (expected if isinstance(expected, dict) else None)


def test_loads_object_asks_no_second_decoder_for_text_after_one_whole_value(monkeypatch: pytest.MonkeyPatch) -> None:
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    monkeypatch.setattr(jsonsafe, "_FINITE", None)  # the standard decoder: any use of it fails this test
    assert jsonsafe.loads_object('{"id": 1, "status": "open"}\n{"id": 2, "status": "done"}') is None


@pytest.mark.parametrize(
    "value",
    [{"é": [1, 2.5, -0.0, 1e300, True, None, '\u2028\n"\\']}, [], "text", {"z": {"a": {}}, "b": [[]]}, 12],
)
def test_the_text_encoder_writes_what_json_dumps_writes_and_refuses_nan(value: Any) -> None:
    """Tool-call arguments and the digest of an answer are written by a C encoder built once: the same text."""
    arguments = jsonsafe.text_encoder(ensure_ascii=False)
    digest = jsonsafe.text_encoder(ensure_ascii=True, sort_keys=True, default=repr)
    assert arguments(value) == json.dumps(value, ensure_ascii=False)
    assert digest(value) == json.dumps(value, ensure_ascii=True, sort_keys=True, default=repr)
    assert arguments.__qualname__ == "text_encoder.<locals>.encode"  # the encoder built once, on CPython
    with pytest.raises(ValueError):
        arguments({"x": [math.nan]})


@pytest.mark.parametrize(
    "value",
    [{"é": [1, 2.5, -0.0, 1e16, math.nan, -math.inf, 10**30, '\u2028\n"\\', "\ud800"]}, {1: True, None: []}, "x"],
)
def test_json_text_writes_what_json_dumps_writes_compactly(value: Any) -> None:
    """`$json_text` (a tool_use block's input read into arguments text) through the C encoder built once: the
    compact text json.dumps writes, NaN and big integers included."""
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert templates.json_text(value, templates.Ctx("p")) == compact
    assert templates._COMPACT_TEXT.__qualname__ == "text_encoder.<locals>.encode"  # built once, on CPython


_JSON_LEAVES = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.text()
_JSON_FLOATS = st.floats() | st.sampled_from([1e-05, 1e-7, -2.5e-9, 0.0001, 1e16, 1e-300, 5e-324, 123.0])
_JSON_VALUES = st.recursive(
    _JSON_LEAVES | _JSON_FLOATS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=5))
def test_json_text_of_an_object_is_json_dumps_compact_text_whoever_writes_it(value: dict[str, Any]) -> None:
    """An object's `$json_text` is written by orjson where orjson's text is json.dumps's (no float it writes
    otherwise: NaN, Infinity, below 1e-4), else by the standard encoder: the same text either way."""
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert templates.json_text(value, templates.Ctx("p")) == compact
    fast = jsonsafe.orjson_compact(value)
    assert fast is None or fast == compact


def test_orjson_writes_an_object_of_strings_and_integers() -> None:
    if jsonsafe.orjson is None:
        pytest.skip("orjson is not installed")
    value = {"code": 'print("東京")\n\t\x00\u2028', "n": [1, -2, 2**63], "ok": True, "x": 1.5}
    assert jsonsafe.orjson_compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for left in ({"x": 1e-05}, {"x": None}, {"x": math.nan}, {"x": 2**64}, {1: 2}, {"x": "\ud800"}):
        assert jsonsafe.orjson_compact(left) is None  # the standard encoder's to write (or refuse)


def test_json_text_raises_json_dumps_own_error_for_a_cycle_or_an_unencodable_value() -> None:
    """What the encoder built without cycle detection cannot write is written by json.dumps again, which raises
    the error it always raised (the caller's own bug: a cycle, or a value JSON has no text for)."""
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        templates.json_text(cycle, templates.Ctx("p"))
    with pytest.raises(TypeError):
        templates.json_text({"x": object()}, templates.Ctx("p"))


@pytest.mark.parametrize(
    "text", ['{"a": 1, "a": 2}', "[NaN, Infinity]", "12345678901234567890123", '"\\ud800"', "1e400", '{"é": -0.0}']
)
def test_standard_loads_reads_what_json_loads_reads(text: str) -> None:
    """A call's arguments read back for an answer in a source format: json.loads's value, through orjson only
    where it reads the text the same."""
    got, want = jsonsafe.standard_loads(text), json.loads(text)
    assert json.dumps(got) == json.dumps(want) and type(got) is type(want)


def test_standard_loads_raises_json_loads_own_error() -> None:
    for text in ("{", "", "[1,]"):
        with pytest.raises(json.JSONDecodeError) as caught:
            jsonsafe.standard_loads(text)
        with pytest.raises(json.JSONDecodeError) as standard:
            json.loads(text)
        assert (caught.value.msg, caught.value.pos) == (standard.value.msg, standard.value.pos)


def _standard_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_texts().map(lambda t: t.decode("utf-8", "surrogatepass") if isinstance(t, bytes) else t)))
def test_standard_loads_each_gives_what_each_text_read_alone_gives(texts: list[str]) -> None:
    """The arguments read at once (orjson over all of them, then one screen of their joined bytes) give, text by
    text, what json.loads gives, or the text itself where json.loads refuses it: where orjson refuses one text
    among many, where a long number sits in one, however the texts sit side by side."""
    got = jsonsafe.standard_loads_each(texts)
    want = [_standard_or_text(text) for text in texts]
    assert [type(g) for g in got] == [type(w) for w in want]
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize(
    "texts",
    [
        ['{"a": 1}', "12345678901234567890123"],  # a long number starting a later text (the joined check's seam)
        ['{"a": [1, 2]}', '{"n": 123456789012345678901}'],
        ['{"a": "12345678901234567890123"}', "[NaN, 1e400]"],  # digits in a string; what orjson refuses
        ['"\\ud800"', '{"é": -0.0}', '{"a": 1, "a": 2}', '{"x": "東京"}'],
        ["{", '{"a": 1}', "not json", "[1,]"],  # text that is not JSON: given back as it is
    ],
)
def test_standard_loads_each_reads_each_as_standard_loads_does(texts: list[str]) -> None:
    """An answer's tool-call arguments read at once: each as json.loads reads it (the numbers beyond 64 bits as
    exact ints, not as orjson's floats), or the text itself where json.loads refuses it."""
    want = []
    for text in texts:
        try:
            want.append(json.loads(text))
        except ValueError:
            want.append(text)
    got = jsonsafe.standard_loads_each(texts)
    assert json.dumps(got) == json.dumps(want) and [type(g) for g in got] == [type(w) for w in want]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_mistyped_field_is_refused_before_an_unmapped_one_ahead_of_it(provider: str) -> None:
    """Every field's type is checked before any unmapped field is settled, whatever their order."""
    assert refused(provider, request_with(not_a_field=1, temperature="hot")).path == "temperature"


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]})


def ollama_line(message: dict[str, Any], done: bool = False) -> str:
    event = {"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", **message}}
    return json.dumps({**event, "done": done, **({"done_reason": "stop"} if done else {})})


def chat_events(first: str) -> tuple[list[str], str]:
    """Chat Completions chunks (the OpenAI family): an annotation nested 252 levels below `delta.annotations`."""
    events = [openai_chunk({"role": "assistant", "content": "hi"})]
    if first == "generated":
        events.append(openai_chunk({"annotations": [{"type": "url_citation"}]}))
    events += [openai_chunk({"annotations": nested(252)}), openai_chunk({}, "stop"), "[DONE]"]
    return events, f"choices[0].message.annotations[{len(events) - 4}].a.a"


def ollama_events(first: str) -> tuple[list[str], str]:
    """Ollama's NDJSON lines: a whole call given as an object (not a list) with arguments at the event's limit."""
    events = [ollama_line({"content": "hi"})]
    if first == "generated":
        events.append(ollama_line({"content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}))
    deep = {"function": {"name": "f", "arguments": nested(252)}}
    events += [ollama_line({"content": "", "tool_calls": deep}), ollama_line({"content": ""}, done=True)]
    return events, f"message.tool_calls[{len(events) - 3}].function.arguments.a.a"


def gemini_event(content: dict[str, Any] | None = None, finish: str | None = None) -> str:
    candidate: dict[str, Any] = {"index": 0}
    if content:
        candidate["content"] = content
    if finish:
        candidate["finishReason"] = finish
    return json.dumps({"candidates": [candidate], "modelVersion": "m", "responseId": "r"})


def gemini_events(first: str) -> tuple[list[str], str]:
    """Gemini's events: a part given as an object (not a list, which its `join` row extends by) with a call's
    arguments at the event's limit."""
    events = [gemini_event({"role": "model", **({"parts": [{"text": "hi"}]} if first == "generated" else {})})]
    deep = {"functionCall": {"name": "f", "args": nested(250)}}
    events += [gemini_event({"parts": deep}), gemini_event(finish="STOP")]
    return events, f"candidates[0].content.parts[{int(first == 'generated')}].functionCall.args.a.a"


def extends(node: Any) -> bool:
    """Whether a `combine` table extends a list anywhere (an `extend` row, or a `join` row, which implies one)."""
    return node.policy == EXTEND or any(extends(child) for child in node.children.values())


# Every provider whose stream skips the whole-answer check (`Streaming.checked`) and extends a list: the events
# that nest an object as deep as an event may, which the row then puts a level deeper.
EXTEND_EVENTS = {
    "azure-openai": chat_events,
    "deepseek": chat_events,
    "gemini": gemini_events,
    "groq": chat_events,
    "ollama": ollama_events,
    "openai": chat_events,
    "openrouter": chat_events,
    "xai": chat_events,
}


def test_every_unchecked_stream_with_an_extend_row_has_a_too_deep_case() -> None:
    """A provider whose rules add one skips no case: its column in EXTEND_EVENTS shows, or the gap does."""
    unchecked = {p for p in toolnexus.providers() if (r := stream_translator(p).rules).checked and extends(r.combine)}
    assert unchecked == set(EXTEND_EVENTS)


@pytest.mark.parametrize("first", ["general", "generated"])
@pytest.mark.parametrize("provider", sorted(EXTEND_EVENTS))
def test_a_streamed_object_an_extend_row_nests_too_deep_is_refused_at_the_end(provider: str, first: str) -> None:
    """An event nested as deep as the check allows is read; an `extend` row adds its object as one element, a level
    deeper, so the assembled answer is checked whole and refused there, in every stream that otherwise skips that
    check. `first`: the object is the first element (the general merge makes the list) or follows one (generated
    code)."""
    events, where = EXTEND_EVENTS[provider](first)
    translator = stream_translator(provider)
    for event in events:
        translator.feed(event)
    with pytest.raises(ResponseError) as info:
        translator.finish()
    assert info.value.path.startswith(where)


def test_a_stream_whose_step_writes_deeper_than_it_reads_is_checked_whole() -> None:
    """A stream's answer skips the final whole-answer check only when no step places a value deeper than its event
    held it (an event's parse already refused anything deeper than the limit); one step a level deeper, and the
    check runs."""
    rules = stream_translator("openai").rules
    assert rules.checked and as_checked(rules)
    step = rules.every[2]  # choices[0].message from choices[0].delta
    assert isinstance(step, Move)
    deeper = dataclasses.replace(step, into=(*step.into, "more"))
    assert not as_checked(dataclasses.replace(rules, every=(*rules.every[:2], deeper, *rules.every[3:])))
    assert not stream_translator("anthropic").rules.checked  # its arguments' JSON is parsed at the end
