"""The benchmarks still measure equal work (issue 6), without timing anything.

tools/bench.py compares the engine with a hand-written translator of the same rules; a ratio
means something only while both give the same output. These tests keep the hand-written side
(every provider, Gemini included) in step with the rules, prove the parity check can fail, and
run both benchmark scripts once at their smallest. No speed is asserted.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from pathlib import Path
from random import Random
from typing import Any

import pytest

import toolnexus
from toolnexus.devtools.conformance import parents_of
from toolnexus.language.jsonsafe import JsonValueError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import bench
import bench_client
import bench_inputs
import bench_responses
import bench_stream
import count
from bench_baseline import HAND_STREAMS, hand_openai_as_response, hand_openai_message
from bench_inputs import tool_declarations, transcript
from bench_litellm import TINY_PNG, compatible_copy

# The providers the benchmark measures both ways: those with a hand-written request and response translator.
# Bedrock, Cohere, Ollama and the Responses API have a hand-written response translator only (bench_responses.py).
RESPONSES_ONLY = {"bedrock", "cohere", "ollama", "openai-responses"}
# Variants (`extends:`) are their parent's rules with a few rows changed; the hand-written baselines are per family.
PROVIDERS = [
    p for p in toolnexus.providers() if p not in RESPONSES_ONLY and p not in parents_of(toolnexus.load_rules())
]


def test_every_provider_has_a_hand_written_baseline() -> None:
    assert sorted(bench.HAND_WRITTEN) == sorted(PROVIDERS)
    assert sorted(bench_responses.HAND_WRITTEN_RESPONSES) == sorted(RESPONSES_ONLY)
    assert all(bench_responses.response_baseline(p, bench.parent_of) for p in toolnexus.providers())


def test_every_provider_has_response_rows_that_agree_with_the_hand_written_translator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Variants are timed on their parent's answers against its translator; the others on their own shape."""
    rows = bench.build_cases((), toolnexus.providers(), litellm=None, responses_only=True)
    assert {case.provider for case in rows} == set(toolnexus.providers())
    assert bench.check_parity(rows), capsys.readouterr().err
    ollama = next(c for c in rows if c.provider == "ollama" and c.input == "generated: 3 tool calls")
    assert ollama.sides[1].fn is bench_responses.hand_ollama_response


@pytest.fixture(scope="module")
def cases() -> list[bench.Case]:
    return bench.build_cases((10, 100, 1_000), PROVIDERS, litellm=None)


def test_engine_and_hand_written_agree_on_every_input(
    cases: list[bench.Case], capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.check_parity(cases), capsys.readouterr().err
    assert {case.provider for case in cases} == set(PROVIDERS)
    assert {case.op for case in cases} == {"request", "response"}


def parity_failure(case: bench.Case, hand_written: bench.Translate, capsys: pytest.CaptureFixture[str]) -> str:
    """The parity check's complaint when `hand_written` stands in for the case's baseline (it must complain)."""
    hand = case.sides[1]
    honest = hand.fn
    hand.fn = hand_written
    try:
        assert not bench.check_parity([case])
    finally:
        hand.fn = honest
    return capsys.readouterr().err


def test_the_parity_check_names_the_first_difference(
    cases: list[bench.Case], capsys: pytest.CaptureFixture[str]
) -> None:
    case = next(c for c in cases if c.provider == "gemini" and c.input == "transcript 100")
    honest = case.sides[1].fn

    def off_by_one_part(request: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = honest(request)
        body["contents"][3] = {**body["contents"][3], "parts": body["contents"][3]["parts"][:-1]}
        return body

    err = parity_failure(case, off_by_one_part, capsys)
    assert "NOT THE SAME WORK: gemini transcript 100 request" in err
    assert "$.contents[3].parts" in err


@pytest.mark.parametrize(
    ("provider", "forget", "where"),
    [
        ("anthropic", {"reasoning_content": ""}, "$.reasoning_content"),
        ("anthropic", {"message_extras": {}}, "$.message_extras"),
        ("gemini", {"reasoning_content": ""}, "$.reasoning_content"),
        ("gemini", {"tool_calls": "unsigned"}, "$.tool_calls[0]"),
    ],
)
def test_the_parity_check_sees_what_the_next_turn_needs(
    cases: list[bench.Case], capsys: pytest.CaptureFixture[str], provider: str, forget: dict[str, Any], where: str
) -> None:
    """A baseline that loses reasoning, thinking blocks or a call's thought signature is not the same work."""
    case = next(c for c in cases if c.provider == provider and c.input == "generated: 3 tool calls")
    honest = case.sides[1].fn

    def forgetful(response: dict[str, Any]) -> toolnexus.TranslateResult:
        result: toolnexus.TranslateResult = honest(response)
        if forget.get("tool_calls") == "unsigned":
            assert result.tool_calls[0].extra_content is not None  # the input does sign its first call
            calls = [dataclasses.replace(call, extra_content=None) for call in result.tool_calls]
            return dataclasses.replace(result, tool_calls=calls)
        return dataclasses.replace(result, **forget)

    err = parity_failure(case, forgetful, capsys)
    assert f"NOT THE SAME WORK: {case.label}" in err
    assert where in err


def test_the_inputs_are_the_same_on_every_run() -> None:
    tools = tool_declarations()
    assert json.dumps(transcript(100, tools)) == json.dumps(transcript(100, tool_declarations()))
    assert len(transcript(1_000, tools)["messages"]) == 1_000


def test_the_litellm_copy_changes_only_what_litellm_refuses() -> None:
    request = transcript(100, tool_declarations())
    before = copy.deepcopy(request)
    adapted = compatible_copy(request)
    assert request == before  # the original is untouched
    calls = [c for m in adapted["messages"] for c in m.get("tool_calls") or ()]
    assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)
    originals = [c for m in request["messages"] for c in m.get("tool_calls") or ()]
    for ours, theirs in zip(originals, calls, strict=True):
        assert json.loads(theirs["function"]["arguments"]) == (
            ours["function"]["arguments"]
            if isinstance(ours["function"]["arguments"], dict)
            else json.loads(ours["function"]["arguments"])
        )
    urls = [
        p["image_url"]["url"]
        for m in adapted["messages"]
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]
    assert urls and all(u.startswith("data:") for u in urls) and TINY_PNG in urls


def test_a_quick_run_reports_every_provider(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    for provider in PROVIDERS:
        assert f"\n{provider}\n" in out
        assert f"memory, {provider}: peak" in out
    for section in ("parity: engine and hand-written outputs identical", "scaling exponent", "memory:", "targets"):
        assert section in out
    assert bench.TWENTY_TOOLS in out


def test_the_memory_section_runs_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--memory", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "100-message transcript" in out
    assert all(f"{provider:<11} engine" in out for provider in PROVIDERS)


def test_the_end_to_end_bench_runs_against_its_stub_process(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--requests", "20", "--seconds", "0.5", "--rounds", "1", "--concurrency", "1,2", "--provider", "gemini"]
    assert bench_client.main([*args, "--stacks", "httpx", "--split", "--stream", "--answer", "calls"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len([line for line in lines if line.startswith("httpx    gemini")]) == 2, out
    assert len([line for line in lines if line.startswith("  httpx    gemini") and "translation" in line]) == 2, out
    sides = [line for line in lines if line.startswith("  httpx    gemini") and "target" not in line]
    for side in ("stream", "stream-functions"):
        assert len([line for line in sides if f" {side} " in line]) == 2, out
    assert len([line for line in lines if "translate_stream / stream-functions" in line]) == 2, out
    assert len([line for line in lines if "translate / functions (same stack)" in line]) == 2, out


def test_the_framings_bench_runs_every_framing_at_its_smallest(capsys: pytest.CaptureFixture[str]) -> None:
    bench_stream.main(["--framings", "--events", "40", "--rounds", "1"])
    lines = capsys.readouterr().out.splitlines()
    for name in ("sse", "ndjson", "aws-eventstream"):
        assert len([line for line in lines if line.startswith(f"framing alone  {name} ")]) == 1, lines
    assert len([line for line in lines if line.startswith("translate_stream ")]) == 2, lines


def test_the_stream_bench_has_rows_for_the_providers_of_every_framing(capsys: pytest.CaptureFixture[str]) -> None:
    """Bedrock (AWS frames) and Ollama (NDJSON) timed like the SSE providers, read bare by their framing."""
    bench_stream.main(["--events", "40", "--rounds", "1", "--provider", "bedrock", "--provider", "ollama"])
    rows = [line.split(" | ")[:3] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    timed = {(row[0].lstrip("| "), row[1]) for row in rows[1:] if row[2] != "-"}
    assert timed == {("bedrock", "text"), ("bedrock", "tools"), ("bedrock", "reasoning"),
                     ("ollama", "text"), ("ollama", "reasoning")}, rows  # fmt: skip


def test_the_stub_answers_pipelined_requests_and_keeps_the_first_body() -> None:
    replies = {b"/v1/x": bench_client.http_response(200, b'{"ok": true}')}
    captured: dict[bytes, bytes] = {}
    protocol = bench_client.StubProtocol(replies, captured)
    sent: list[bytes] = []

    class Transport:
        def write(self, data: bytes) -> None:
            sent.append(data)

    protocol.transport = Transport()  # type: ignore[assignment]
    first = b'{"a": 1}'
    wire = (
        b"POST /v1/x HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(first), first)
        + b"POST /v1/x HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}"
        + b"POST /nowhere HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
    )
    for start in range(0, len(wire), 7):  # arriving in pieces
        protocol.data_received(wire[start : start + 7])
    assert sent[:2] == [replies[b"/v1/x"]] * 2
    assert sent[2].startswith(b"HTTP/1.1 404")
    assert captured == {b"/v1/x": first}
    protocol.data_received(b"GET /__captured/v1/x HTTP/1.1\r\n\r\n")
    assert sent[3].endswith(b"\r\n\r\n" + first)


def test_responses_only_with_the_checked_baseline_times_answers_through_the_json_check() -> None:
    cases = bench.build_cases((10,), PROVIDERS, litellm=None, responses_only=True, checked=True)
    assert {case.op for case in cases} == {"response"}
    assert {case.provider for case in cases} == set(PROVIDERS)
    answer = copy.deepcopy(cases[0].sides[1].data)
    answer["extra"] = [float("nan")]
    with pytest.raises(JsonValueError) as info:
        cases[0].sides[1].fn(answer)
    assert info.value.where == "extra[0]"


def test_every_response_row_has_a_body_row_timed_on_the_same_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    """A `body:` row: the engine's raw-body entry against `json.loads` and the hand-written translation."""
    rows = bench.build_cases((), ["openai", "anthropic"], litellm=None, responses_only=True)
    bodies = [case for case in rows if case.input.startswith("body: ")]
    assert sorted(case.input[len("body: ") :] for case in bodies) == sorted(
        case.input for case in rows if case not in bodies
    )
    assert all(isinstance(side.data, bytes) for case in bodies for side in case.sides)
    assert bench.check_parity(bodies), capsys.readouterr().err
    case = bodies[0]
    other = json.dumps({**json.loads(case.sides[0].data), "id": "another"})
    assert "raw is the response" in parity_failure(
        case, lambda body: toolnexus.translate_response(case.provider, other), capsys
    )


def test_the_checked_baseline_times_requests_through_the_json_check_too() -> None:
    """`--checked-baseline` on request rows: the hand-written side refuses what the engine refuses, located."""
    cases = bench.build_cases((10,), ["openai"], litellm=None, checked=True)
    tools = next(case for case in cases if case.input == bench.TWENTY_TOOLS)
    request = copy.deepcopy(tools.sides[1].data)
    request["tools"][3]["function"]["parameters"]["properties"]["x"] = {"type": "number", "default": float("inf")}
    with pytest.raises(JsonValueError) as info:
        tools.sides[1].fn(request)
    assert info.value.where == "tools[3].function.parameters.properties.x.default"


def test_every_request_row_has_a_body_row_timed_on_the_same_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    """A `body:` row: the engine's body entry against `json.loads` and the hand-written translation, same output."""
    rows = [case for case in bench.build_cases((10,), ["openai", "gemini"], litellm=None) if case.op == "request"]
    bodies = [case for case in rows if case.input.startswith("body: ")]
    assert sorted((c.provider, c.input[len("body: ") :]) for c in bodies) == sorted(
        (c.provider, c.input) for c in rows if c not in bodies
    )
    for case in bodies:
        plain = next(c for c in rows if c.provider == case.provider and "body: " + c.input == case.input)
        assert all(type(side.data) is bytes and json.loads(side.data) == plain.sides[0].data for side in case.sides)
    assert bench.check_parity(bodies), capsys.readouterr().err
    case = next(c for c in bodies if c.provider == "gemini")
    other = json.dumps({**json.loads(case.sides[0].data), "temperature": 0.25})
    complaint = parity_failure(case, lambda body: toolnexus.translate_request("gemini", other), capsys)
    assert f"NOT THE SAME WORK: {case.label}" in complaint and "generationConfig" in complaint


def test_the_stream_bench_compares_with_a_baseline_checkout_row_by_row(capsys: pytest.CaptureFixture[str]) -> None:
    """`--baseline`: each row under the baseline's engine and this one, in one run (here this checkout twice)."""
    checkout = Path(__file__).resolve().parents[1]
    bench_stream.main(["--baseline", str(checkout), "--events", "40", "--rounds", "1", "--provider", "anthropic",
                       "--row", "tools"])  # fmt: skip
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| anthropic ")]
    assert len(rows) == 1 and all(cell.strip(" |").endswith("x") for cell in rows[0][3:]), rows


def test_the_sources_run_times_messages_and_responses_in_and_out_against_chat_completions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--sources`: Messages and Responses requests to each target and answers written back in each format,
    each beside the plain path."""
    assert bench.main(["--sources", "--quick", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "parity: source and plain outputs identical on all 24 inputs" in out
    rows = [line.split() for line in out.splitlines() if " transcript " in line or "Message: " in line or
            "Response: " in line]  # fmt: skip
    requests = {(row[0], row[1], row[3]) for row in rows if "request" in row}
    want = {(p, f, n) for p in bench.SOURCE_REQUEST_TARGETS for f in bench.SOURCES for n in ("10", "100")}
    assert requests == want, out
    answers = {(row[0], row[1], row[2]) for row in rows if "response" in row}
    assert answers == {(p, f, f"{bench.ANSWER_NAMES[f]}:") for p in bench.SOURCE_ANSWERS for f in bench.SOURCES}
    assert "source within 1.3x of plain" in out


def test_the_responses_transcript_is_the_same_conversation_as_the_messages_one() -> None:
    """The Responses rows translate the conversation the Messages rows do: read into Chat Completions form,
    both give the same messages up to what each format carries (Responses has no thinking signatures, so its
    reasoning comes as reasoning items; Messages has no developer role, so its system is one string)."""
    tools = bench.tool_declarations()
    responses = toolnexus.load_rules().format("openai-responses").read(bench.responses_transcript(100, tools))[0]
    messages = toolnexus.load_rules().format("anthropic").read(bench.messages_transcript(100, tools))[0]
    calls = [[c["id"] for c in m.get("tool_calls") or ()] for m in responses["messages"] if m["role"] == "assistant"]
    assert calls == [[c["id"] for c in m.get("tool_calls") or ()] for m in messages["messages"]
                     if m["role"] == "assistant"]  # fmt: skip
    results = [(m["tool_call_id"], m["content"]) for m in responses["messages"] if m["role"] == "tool"]
    assert results == [(m["tool_call_id"], m["content"]) for m in messages["messages"] if m["role"] == "tool"]
    assert [m["role"] for m in responses["messages"]][:2] == ["system", "developer"]
    assert len(responses["messages"]) == 100


def test_the_sources_baseline_side_must_write_the_same_answer(capsys: pytest.CaptureFixture[str]) -> None:
    """`--sources --baseline`: the before side is checked against this engine's source output, then timed."""
    root = Path(__file__).resolve().parents[1]
    cases = [c for c in bench.build_source_cases((10,)) if c.provider == "openai"]
    bench.add_source_before(cases, bench.other_engine(str(root)))
    assert bench.check_source_parity(cases), capsys.readouterr().err
    response = next(c for c in cases if c.source == "openai-responses" and c.op == "response")
    honest = response.sides[2].fn
    response.sides[2].fn = lambda answer: {**honest(answer), "status": "incomplete"}
    assert not bench.check_source_parity([response])
    err = capsys.readouterr().err
    assert "NOT THE SAME WORK (--baseline)" in err and "$.status" in err, err
    assert bench.main(["--sources", "--quick", "--rounds", "1", "--baseline", str(root)]) == 0
    assert "after/before" in capsys.readouterr().out


def test_the_sources_parity_check_sees_a_different_body(capsys: pytest.CaptureFixture[str]) -> None:
    case = next(c for c in bench.build_source_cases((10,)) if c.provider == "gemini" and c.op == "request")
    assert bench.check_source_parity([case]), capsys.readouterr().err
    honest = case.sides[1].fn
    case.sides[1].fn = lambda request: {**honest(request), "contents": honest(request)["contents"][:-1]}
    assert not bench.check_source_parity([case])
    assert "$.contents" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses"])
def test_the_stream_bench_has_source_format_rows(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    """The format's events out of an openai and a gemini stream (text, tools, and gemini's reasoning), timed
    like the other rows."""
    bench_stream.main(["--events", "40", "--rounds", "1", "--provider", "openai", "--provider", "gemini",
                       "--source", fmt])  # fmt: skip
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    timed = {(row[0].lstrip("| "), row[1]) for row in rows[1:] if row[2] != "-"}
    want = {(p, r) for p in ("openai", "gemini") for r in ("text", "tools")} | {("gemini", "reasoning")}
    assert timed == {(p, f"{r} ({fmt} out)") for p, r in want}, rows
    assert all(row[6].endswith("x") and row[9].endswith("x |") for row in rows[1:] if row[2] != "-"), rows


def test_a_baseline_checkout_is_a_third_side_timed_in_the_same_run(capsys: pytest.CaptureFixture[str]) -> None:
    """`--baseline CHECKOUT` times every row under that checkout's engine too (here this very checkout, imported
    again as separate modules); this engine's modules are back in place afterwards."""
    ours = sys.modules["toolnexus"]
    root = Path(__file__).resolve().parents[1]
    request, _ = bench.other_engine(str(root))
    assert sys.modules["toolnexus"] is ours
    assert request is not toolnexus.translate_request
    assert request.__module__ == toolnexus.translate_request.__module__  # the same code, other module objects
    args = ["--quick", "--rounds", "1", "--baseline", str(root), "--provider", "openai", "--input", "parity"]
    assert bench.main(args) == 0
    out = capsys.readouterr().out
    assert "after/before" in out
    assert "openai" in out and "gemini\n" not in out


@pytest.mark.parametrize("takes_bytes", [True, False])
def test_the_before_side_of_a_body_row_is_called_as_the_engine_side_is(takes_bytes: bool) -> None:
    """`--baseline`: a `body:` row's before side hands that checkout the bytes, as the engine side does (its
    raw-body entry); a checkout that refuses bytes gets `json.loads` of them first. A dict row's gets the dict."""
    seen: list[tuple[str, Any]] = []

    def before(provider: str, data: Any) -> Any:
        if isinstance(data, bytes) and not takes_bytes:
            raise TypeError("the request must be an object")
        seen.append((provider, data))
        return data

    body = b'{"messages":[]}'
    cases = [
        bench.Case("openai", "body: x", "request", "0 KiB", [bench.Side("engine", lambda b: b, body)]),
        bench.Case("openai", "x", "response", "0 KiB", [bench.Side("engine", lambda d: d, {"a": 1})]),
    ]
    bench.add_before(cases, (before, before))
    seen.clear()
    for case in cases:
        side = case.sides[-1]
        assert side.name == "before"
        side.fn(side.data)
    assert seen == [("openai", body if takes_bytes else {"messages": []}), ("openai", {"a": 1})]


def _stream_datas(provider: str, row: str, events: int = 60) -> list[str]:
    script = json.loads(bench_stream.demo_file(provider).read_text(encoding="utf-8"))
    made = bench_stream.rows(provider, script, events)[row]
    assert made is not None
    reply, cuts = made
    return [bench_stream.data_of(provider, e) for e in bench_stream.ENCODERS[provider](reply, Random(1), cuts=cuts)]


@pytest.mark.parametrize(
    ("provider", "row"),
    [(p, row) for p in bench_stream.HAND_STREAMS for row in ("text", "tools", "reasoning")
     if bench_stream.rows(p, json.loads(bench_stream.demo_file(p).read_text(encoding="utf-8")), 8)[row]],
)  # fmt: skip
@pytest.mark.parametrize("events", [20, 300])
def test_the_hand_written_stream_translators_give_the_engines_chunks_and_result(
    provider: str, row: str, events: int
) -> None:
    """`--hand` times a hand-written stream translator only while it does the engine's work: same chunks, same
    result (all but its notes), on every row it covers, short and long (the encoders cut pieces differently)."""
    assert bench_stream.hand_differs(provider, _stream_datas(provider, row, events), HAND_STREAMS[provider]) is None


def test_the_hand_stream_parity_check_sees_a_lost_chunk_and_a_different_result() -> None:
    datas = _stream_datas("gemini", "tools")
    hand = HAND_STREAMS["gemini"]

    def drops_the_first_text(datas: list[str]) -> tuple[list[dict[str, Any]], Any]:
        chunks, result = hand(datas)
        return [chunks[0], *chunks[2:]], result

    def other_finish(datas: list[str]) -> tuple[list[dict[str, Any]], Any]:
        chunks, result = hand(datas)
        return chunks, dataclasses.replace(result, finish_reason="stop")

    assert bench_stream.hand_differs("gemini", datas, drops_the_first_text) == "the chunks"
    assert bench_stream.hand_differs("gemini", datas, other_finish) == "result.finish_reason"


def test_the_stream_bench_times_the_hand_written_rows(capsys: pytest.CaptureFixture[str]) -> None:
    bench_stream.main(["--hand", "--events", "40", "--rounds", "1", "--provider", "mistral"])
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| mistral ")]
    assert [row[1] for row in rows] == ["text", "tools"], rows
    assert all(cell.strip(" |").endswith("x") for row in rows for cell in row[6:]), rows


def _counted(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """tools/count.py's bytecode count for a row, and the code objects it lists."""
    count.main([*argv, "--top", "40"])
    total, *listed = capsys.readouterr().out.splitlines()
    return int(total.split()[0].replace(",", "")), [line.split(None, 1)[1] for line in listed]


def test_the_count_tool_counts_a_source_row_as_its_plain_row_plus_the_formats_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A source answer is the provider's answer read and the format's written in one fused function; a source
    request's transcript is written by the pair's fused function where the plain request runs the provider's
    messages function (Ollama's too: its dropped call ids noted at their items): each counted more than its plain
    row, where the code it lists says."""
    plain, plain_code = _counted(capsys, "answer", "openai")
    source, source_code = _counted(capsys, "answer", "openai", "--source", "anthropic")
    assert plain < source and "<fused answer openai -> anthropic>:1 fused_answer" in set(source_code) - set(plain_code)
    plain, plain_code = _counted(capsys, "request", "ollama", "--source", "openai-responses", "--plain")
    source, source_code = _counted(capsys, "request", "ollama", "--source", "openai-responses")
    assert plain < source and "<fused openai-responses -> ollama>:1 fused" in set(source_code) - set(plain_code)
    assert "<messages ollama>:1 messages" in set(plain_code) - set(source_code)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["answer", "nobody"], "no provider 'nobody'"),
        (["answer", "openai", "--input", "huge"], "no answer 'huge'"),
        (["request", "openai", "--source", "cohere"], "no transcript in 'cohere'"),
        (["request", "openai"], "request needs --source"),
        (["parity", "openai", "--calls", "0"], "--calls and --messages must be at least 1"),
        (["parity", "openai", "--engine", "/nonexistent"], "/nonexistent has no engine/toolnexus"),
        (["parity", "cohere", "--baseline"], "no hand-written cohere"),  # tools/bench_baseline.py has none
        (["answer", "mistral", "--source", "anthropic", "--baseline"], "no hand-written mistral answer as anthropic"),
        # the Messages transcript's 'minimal' thinking budget, which Ollama's rules refuse: one line, no traceback
        (["request", "ollama", "--source", "anthropic"], "ollama refuses this row's input: thinking: 'minimal'"),
    ],
)
def test_the_count_tool_refuses_a_row_it_cannot_build_in_one_line(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        count.main(argv)
    assert said in f"{raised.value.code} {capsys.readouterr().err}"


def test_the_count_tool_says_instructions_need_valgrind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(count.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="--instructions needs valgrind on PATH"):
        count.main(["parity", "openai", "--instructions"])


def test_the_count_tool_counts_the_hand_written_translator_on_the_rows_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--baseline` counts tools/bench_baseline.py's function for the row's provider on the same input (a request
    row's conversation as Chat Completions): it runs none of the engine's code, and costs less than the engine."""
    engine, _ = _counted(capsys, "request", "gemini", "--source", "anthropic", "--plain")
    hand, hand_code = _counted(capsys, "request", "gemini", "--source", "anthropic", "--baseline")
    assert hand < engine
    assert "bench_baseline.py:496 hand_gemini_request" in hand_code
    assert not any(name.startswith("<") or name.startswith("inbound.py") for name in hand_code), hand_code
    plain, _ = _counted(capsys, "request", "gemini", "--source", "anthropic", "--plain", "--baseline")
    assert plain == hand  # the hand-written side reads the plain request either way
    answer, answer_code = _counted(capsys, "answer", "mistral", "--baseline")
    assert "bench_baseline.py:723 hand_mistral_response" in answer_code and answer > 0
    message, message_code = _counted(capsys, "answer", "groq", "--source", "anthropic", "--baseline")
    assert "bench_baseline.py:746 hand_openai_message" in message_code and message > 0  # the family's shape
    response, response_code = _counted(capsys, "answer", "openai", "--source", "openai-responses", "--baseline")
    assert "bench_baseline.py:796 hand_openai_as_response" in response_code and response > 0
    assert not any(name.startswith("<") for name in message_code), message_code


@pytest.mark.parametrize("name", ["3 tool calls", "large", "text"])
def test_the_hand_written_message_writes_the_engines_message(name: str) -> None:
    """`hand_openai_message`, the floor tools/count.py counts for OpenAI's answers as a `Message`, writes the
    engine's `Message` byte for byte (same keys in the same order) on the bench's answers, and no notes are due."""
    answer = bench_inputs.generated_responses(tool_declarations())["openai"][name]
    body = toolnexus.translate_response("openai", answer, source="anthropic")
    assert json.dumps(hand_openai_message(answer)) == json.dumps(body) and not body.notes


@pytest.mark.parametrize("name", ["3 tool calls", "large", "text"])
def test_the_hand_written_response_writes_the_engines_response(name: str) -> None:
    """`hand_openai_as_response`, the floor tools/count.py counts for OpenAI's answers as a `Response`, writes the
    engine's `Response` byte for byte (same keys in the same order, the message's made id included) on the bench's
    answers; the engine's one note (the cache-write count the answer does not give) is no byte of it."""
    answer = bench_inputs.generated_responses(tool_declarations())["openai"][name]
    body = toolnexus.translate_response("openai", answer, source="openai-responses")
    assert json.dumps(hand_openai_as_response(answer)) == json.dumps(body)
    assert [note.path for note in body.notes] == ["usage.input_tokens_details.cache_write_tokens"]
