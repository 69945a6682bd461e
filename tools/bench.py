"""Speed and memory of the toolnexus rule engine against a hand-written translator of the same rules.

    python tools/bench.py [--rounds N] [--clock wall|cpu] [--quick] [--memory] [--no-litellm]
                          [--responses] [--checked-baseline] [--sources]
                          [--baseline CHECKOUT] [--provider NAME]... [--input TEXT]...

What is timed: `toolnexus.translate_request` and `toolnexus.translate_response` for every
provider the rules define (`toolnexus.providers()`), on the inputs of tools/bench_inputs.py:
the golden parity fixture and its responses, generated responses (a text answer; thinking +
text + three parallel tool calls; a large answer of 40,000 characters and 24 tool calls), one
user turn declaring 20 tools, and agent transcripts of 10, 100, 1,000 and 10,000 messages
(parallel tool calls with nested arguments, 0.5-2 KB tool results, 20 tool declarations with
realistic JSON schemas).
Each request row has a `body:` row too: the request as the compact JSON bytes a client sends, through
the engine's body entry (`translate_request` of the bytes, decoded by its strict parse, which is its
check) against `json.loads` of the bytes and the hand-written translation (the `--baseline` side:
`json.loads` and that checkout's `translate_request`).

What it is compared with: tools/bench_baseline.py, the translator a careful person writes
by hand for the same rules (tools/bench_responses.py: response translators for the providers it
has none for; a variant is timed on its parent's answers against its parent's translator).
Before anything is timed, every input goes through both and the outputs must be identical
(equal JSON with the same key order; for responses every field but `notes`); otherwise the first
difference is printed and the script exits 1, because a ratio of unequal work means nothing. When
LiteLLM is installed (the `bench` extra), its transforms on the same inputs are a third column (tools/bench_litellm.py
says what is timed, and marks where LiteLLM refuses an input).

How it measures: each side is calibrated so that one batch takes about 100 ms (at least
one call); then, in this one process, the sides' batches of each input take turns, round
after round, in an order rotated every round. The table gives the median microseconds per
call of each side and the median of the per-round ratios. The scaling exponent is the
least-squares slope of log(time per request) against log(messages) over the transcripts
(1.0 is linear), over all sizes and over the two largest. The inputs are frozen out of
the garbage collector's view (`gc.freeze`) and every batch starts right after a
collection, so each side pays for what it allocates.

Memory: tracemalloc's peak while translating the largest transcript once (after a warm-up
call), beside the request's and the body's size as compact JSON. `--memory` runs only this.

`--responses` times only the single responses (no requests, no memory table). Each answer is also timed
as the body a proxy holds (rows `body: ...`): the engine's raw-body entry (`translate_response` of the
bytes, decoded by its strict parse) against `json.loads` of the bytes and the hand-written translation
(with `--baseline`, that checkout's raw-body entry; `json.loads` first for a checkout older than it).
`--checked-baseline` makes the hand-written side of each row run toolnexus's JSON check
(`jsonsafe.check`: no NaN or Infinity, bounded depth, no lone surrogates, anywhere in the request or
the answer) before translating, the minimum the engine's contract requires: what the ratio then shows
is the translation's own cost.

`--sources` times only the source-format rows: an Anthropic Messages request (the transcripts of 10
and 100 messages as a coding agent sends them: signed thinking blocks, tool_use and tool_result
blocks, images, a cache breakpoint) and an OpenAI Responses request (the same transcripts as an OpenAI
agent sends them with nothing stored: instructions, message items, reasoning items with
encrypted_content, function_call and function_call_output items) translated for gemini, openai and
anthropic with `source=`, each against the same conversation in Chat Completions form (what the
format's reader makes of it) through the same provider; and an Anthropic Message and an OpenAI Response
written back from a gemini and an openai answer (`translate_response(..., source=...)`) against the
TranslateResult alone. Both sides must give the same body (the same result) before anything is timed;
the ratio column is source/plain (target 1.3x). With `--baseline`, the source side under that
checkout's engine is a third side, checked to give the same output first.

`--baseline CHECKOUT` adds a third side to every request and response row: the same call under that
checkout's engine (its `engine/` imported in this process under its own modules), timed interleaved
with the other two, so a change is measured before -> after in one run; the table then gives its
µs, its ratio to the hand-written code and this engine's time over it. `--provider NAME` and
`--input TEXT` (both repeatable) keep the rows of those providers and of inputs whose name holds TEXT.

`--quick` is a smoke run (transcripts of 10 and 100 messages, 2 rounds, 5 ms batches,
no LiteLLM): it proves the script and the parity check work; its figures are too short
to quote. Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

try:
    import toolnexus
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT / "engine"))
    import toolnexus

from bench_baseline import HAND_WRITTEN  # noqa: E402 (after the checkout fallback)
from bench_inputs import (  # noqa: E402
    generated_responses,
    json_size,
    messages_transcript,
    parity_inputs,
    responses_transcript,
    round_trip,
    tool_declarations,
    transcript,
    twenty_tools_request,
)
from bench_litellm import LiteLLM, compatible_copy, first_line, load  # noqa: E402
from bench_responses import provider_answers, response_baseline  # noqa: E402
from progress import progress  # noqa: E402
from toolnexus import TranslateResult  # noqa: E402
from toolnexus.devtools.conformance import parents_of  # noqa: E402
from toolnexus.language import jsonsafe  # noqa: E402

JSON = dict[str, Any]
Translate = Callable[[Any], Any]

SIZES = (10, 100, 1_000, 10_000)
QUICK_SIZES = (10, 100)
TWENTY_TOOLS = "20 tool declarations"
TARGET_RATIO = 1.3  # issue 6: engine within 1.3x of hand-written
TARGET_EXPONENT = 1.1  # issue 6: scaling exponent from 1,000 to 10,000 messages
TARGET_VS_LITELLM = 10.0  # issue 6: Gemini tool declarations 10x cheaper than LiteLLM
LITELLM_REFERENCE_US = 2_500  # issue 6: LiteLLM 1.110's ~2.5 ms for 20 Gemini tools, measured earlier
SOURCES = ("anthropic", "openai-responses")  # the source formats of the --sources rows
ANSWER_NAMES = {"anthropic": "Message", "openai-responses": "Response"}  # what each writes an answer as
SOURCE_SIZES = (10, 100)
SOURCE_REQUEST_TARGETS = ("gemini", "openai", "anthropic")
SOURCE_ANSWERS = ("gemini", "openai", "anthropic")
TARGET_SOURCE_RATIO = 1.3  # a request or answer in a source format within 1.3x of the Chat Completions path


# =============================================================================
# Cases
# =============================================================================


@dataclass
class Side:
    name: str  # engine | hand-written | LiteLLM
    fn: Translate
    data: JSON  # the input it translates (LiteLLM may get a compatible copy)
    ns: list[float] = field(default_factory=list)  # per call, one per round
    iterations: int = 1


@dataclass
class Case:
    provider: str
    input: str  # what was translated
    op: str  # request | response
    size: str  # a human-readable size
    sides: list[Side]
    messages: int | None = None  # transcript length, for the scaling fit
    litellm_note: str = ""  # why LiteLLM's row is empty or was timed on a compatible copy
    source: str = "openai"  # the source format of a --sources row

    @property
    def label(self) -> str:
        return f"{self.provider} {self.input} {self.op}"

    def side(self, name: str) -> Side | None:
        return next((s for s in self.sides if s.name == name), None)

    def ratios(self, name: str, over: str = "hand-written") -> list[float]:
        """Per-round ratios of one side's time to another's."""
        this, that = self.side(name), self.side(over)
        assert this is not None and that is not None
        return [a / b for a, b in zip(this.ns, that.ns, strict=True)]


def kib(data: JSON | bytes) -> str:
    return f"{(len(data) if isinstance(data, bytes) else json_size(data)) / 1024:,.1f} KiB"


def from_body(translate: Translate) -> Translate:
    """A translator of decoded requests or answers, given the body: `json.loads` first (a body row's hand-written
    side)."""
    return lambda body: translate(json.loads(body))


def make_case(
    provider: str,
    name: str,
    op: str,
    data: JSON,
    litellm: LiteLLM | None,
    messages: int | None = None,
    checked: bool = False,
    hand: Translate | None = None,
) -> Case:
    request = op == "request"
    engine = partial(toolnexus.translate_request if request else toolnexus.translate_response, provider)
    size = f"{len(data['messages'])} msgs, {kib(data)}" if request else kib(data)
    hand = hand or HAND_WRITTEN[provider][0 if request else 1]
    if checked:
        hand = partial(checked_first, hand)
    sides = [Side("engine", engine, data), Side("hand-written", hand, data)]
    case = Case(provider, name, op, size, sides, messages)
    if litellm is not None and provider in HAND_WRITTEN:  # the providers tools/bench_litellm.py maps
        add_litellm(case, litellm.request(provider) if request else litellm.response(provider), data)
    return case


def other_engine(checkout: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """`--baseline`: translate_request and translate_response of another checkout's engine, imported in this
    process under its own module objects (this engine's are set aside meanwhile and put back after). Every
    provider is translated once while its modules are in place, so nothing is imported later by name."""
    engine = str(Path(checkout).resolve() / "engine")
    ours = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "toolnexus"}
    for name in ours:
        del sys.modules[name]
    sys.path.insert(0, engine)
    try:
        other = importlib.import_module("toolnexus")
        if not str(other.__file__).startswith(engine):
            raise SystemExit(f"--baseline: {checkout} has no engine/toolnexus")
        request = twenty_tools_request(tool_declarations())
        for provider in other.providers():
            other.translate_request(provider, request)
        return other.translate_request, other.translate_response
    finally:
        sys.path.remove(engine)
        for name in [name for name in sys.modules if name.split(".")[0] == "toolnexus"]:
            del sys.modules[name]
        sys.modules.update(ours)


def add_before(cases: Sequence[Case], before: tuple[Callable[..., Any], Callable[..., Any]]) -> None:
    """The `--baseline` side ("before") of every request and response row: that engine called as this one is
    (a `body:` row's bytes go to its raw-body entry, as the engine side's do; `json.loads` first for a
    checkout older than that entry)."""
    for case in cases:
        fn = partial(before[0] if case.op == "request" else before[1], case.provider)
        data = case.sides[0].data
        if isinstance(data, bytes):
            try:
                fn(data)
            except Exception:  # (an engine before the raw-body entry refuses bytes)
                fn = from_body(fn)
        case.sides.append(Side("before", fn, data))


def checked_first(translate: Translate, data: JSON) -> Any:
    """`--checked-baseline`: the request or answer through toolnexus's JSON check, then the hand-written
    translator."""
    jsonsafe.check(data)
    return translate(data)


def add_litellm(case: Case, fn: Translate, data: JSON) -> None:
    """LiteLLM's side, on the input as given or, when it refuses that, on a compatible copy."""
    try:
        fn(data)
        case.sides.append(Side("LiteLLM", fn, data))
        return
    except Exception as exc:  # LiteLLM's own errors, whatever their type: reported, not raised
        case.litellm_note = f"refuses the input as given ({first_line(exc)})"
    if case.op != "request":
        return
    adapted = compatible_copy(data)
    try:
        fn(adapted)
    except Exception as exc:
        case.litellm_note += f"; also the compatible copy ({first_line(exc)})"
        return
    case.sides.append(Side("LiteLLM", fn, adapted))


def build_cases(
    sizes: Sequence[int],
    providers: Sequence[str],
    litellm: LiteLLM | None,
    *,
    responses_only: bool = False,
    checked: bool = False,
) -> list[Case]:
    parity_request, parity_answers = parity_inputs()
    tools = tool_declarations()
    transcripts = {n: transcript(n, tools) for n in (() if responses_only else sizes)}
    generated = generated_responses(tools)
    cases: list[Case] = []
    for provider in providers:
        answers, hand = provider_answers(provider, parent_of, parity_answers, generated)
        answer_cases = [
            make_case(provider, name, "response", a, litellm, checked=checked, hand=hand) for name, a in answers
        ]
        answer_cases += [body_case(case) for case in answer_cases]
        if responses_only or provider not in HAND_WRITTEN:  # no hand-written request translator
            cases += answer_cases
            continue
        first = len(cases)
        cases.append(make_case(provider, "parity fixture", "request", parity_request, litellm, checked=checked))
        cases += answer_cases
        tools_request = twenty_tools_request(tools)
        cases.append(make_case(provider, TWENTY_TOOLS, "request", tools_request, litellm, checked=checked))
        for n, data in transcripts.items():
            cases.append(make_case(provider, f"transcript {n:,}", "request", data, litellm, n, checked=checked))
        style = "anthropic" if provider == "anthropic" else "gemini"
        for n, data in transcripts.items():
            trip = round_trip(data, style)
            cases.append(make_case(provider, f"round trip {n:,}", "request", trip, litellm, checked=checked))
        cases += [body_case(case) for case in cases[first:] if case.op == "request"]
    return cases


def body_case(case: Case) -> Case:
    """A request or response row's `body:` row: its input as the compact JSON bytes a client or provider sends."""
    engine, hand = case.sides[0], case.sides[1]
    body = json.dumps(engine.data, ensure_ascii=False, separators=(",", ":")).encode()
    sides = [Side("engine", engine.fn, body), Side("hand-written", from_body(hand.fn), body)]
    return Case(case.provider, f"body: {case.input}", case.op, kib(body), sides)


def parent_of(provider: str) -> str | None:
    """The provider a rule file `extends:`, if any."""
    return parents_of(toolnexus.load_rules()).get(provider)


def build_source_cases(sizes: Sequence[int] = SOURCE_SIZES, formats: Sequence[str] = SOURCES) -> list[Case]:
    """The `--sources` rows: sides `source` (the format's shape in or out) and `plain` (Chat Completions)."""
    tools = tool_declarations()
    generated = generated_responses(tools)
    transcripts = {"anthropic": messages_transcript, "openai-responses": responses_transcript}
    cases: list[Case] = []
    for fmt in formats:
        reader = toolnexus.load_rules().format(fmt)
        for n in sizes:
            request = transcripts[fmt](n, tools)
            plain = reader.read(request)[0]  # the same conversation in Chat Completions form
            for provider in SOURCE_REQUEST_TARGETS:
                sides = [
                    Side("source", partial(toolnexus.translate_request, provider, source=fmt), request),
                    Side("plain", partial(toolnexus.translate_request, provider), plain),
                ]
                size = f"{len(plain['messages'])} msgs, {kib(request)}"
                cases.append(Case(provider, f"{fmt} transcript {n:,}", "request", size, sides, n, source=fmt))
        for provider in SOURCE_ANSWERS:
            for name in ("3 tool calls", "large"):
                answer = generated[provider][name]
                sides = [
                    Side("source", partial(toolnexus.translate_response, provider, source=fmt), answer),
                    Side("plain", partial(toolnexus.translate_response, provider), answer),
                ]
                label = f"{fmt} {ANSWER_NAMES[fmt]}: {name}"
                cases.append(Case(provider, label, "response", kib(answer), sides, source=fmt))
    return cases


def add_source_before(cases: Sequence[Case], before: tuple[Callable[..., Any], Callable[..., Any]]) -> None:
    """`--sources --baseline`: the source side of every row under that checkout's engine ("before")."""
    for case in cases:
        fn = before[0] if case.op == "request" else before[1]
        case.sides.append(Side("before", partial(fn, case.provider, source=case.source), case.sides[0].data))


# =============================================================================
# Parity
# =============================================================================


def comparable(output: Any) -> Any:
    """What must be equal: a body as is; a result without its notes."""
    if isinstance(output, TranslateResult) or type(output).__name__ == "TranslateResult":  # --baseline's own class
        calls = [(c.id, c.name, c.arguments, c.extra_content) for c in output.tool_calls]
        return {
            "text": output.text,
            "reasoning_content": output.reasoning_content,
            "message_extras": output.message_extras,
            "tool_calls": calls,
            "finish_reason": output.finish_reason,
            "usage": output.usage,
            "model": output.model,
            "raw is the response": output.raw,
        }
    return output


def first_difference(engine: Any, baseline: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, key order included; None when identical."""
    if type(engine) is not type(baseline) and not (isinstance(engine, dict) and isinstance(baseline, dict)):
        engine_type, baseline_type = type(engine).__name__, type(baseline).__name__
        return f"{path}: engine gives {engine_type} {_short(engine)}, hand-written {baseline_type} {_short(baseline)}"
    if isinstance(engine, dict):
        if list(engine) != list(baseline):
            return f"{path}: keys differ (order counts):\n    engine: {list(engine)}\n    hand:   {list(baseline)}"
        for key in engine:
            found = first_difference(engine[key], baseline[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(engine, (list, tuple)):
        if len(engine) != len(baseline):
            return f"{path}: engine has {len(engine)} items, hand-written {len(baseline)}"
        for index, (a, b_) in enumerate(zip(engine, baseline, strict=True)):
            found = first_difference(a, b_, f"{path}[{index}]")
            if found:
                return found
        return None
    if engine is baseline or engine == baseline:
        return None
    if isinstance(engine, str) and isinstance(baseline, str):
        at = next((i for i, (x, y) in enumerate(zip(engine, baseline, strict=False)) if x != y), None)
        at = min(len(engine), len(baseline)) if at is None else at
        start = max(0, at - 20)
        return (
            f"{path}: strings differ at character {at}: engine ...{_short(engine[start : at + 40])}, "
            f"hand-written ...{_short(baseline[start : at + 40])}"
        )
    return f"{path}: engine gives {_short(engine)}, hand-written {_short(baseline)}"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[:limit] + "..."


def is_response(raw: Any, data: JSON | bytes) -> bool:
    """A result's `raw` is the answer translated: the dict given, or the one a body decodes to."""
    return raw is data or (isinstance(data, bytes) and raw == json.loads(data))


def check_parity(cases: Sequence[Case]) -> bool:
    """Engine and hand-written give the same output on every case (differences go to stderr)."""
    ok = True
    for case in cases:
        engine, hand = case.sides[0], case.sides[1]
        engine_out = comparable(engine.fn(engine.data))
        baseline_out = comparable(hand.fn(hand.data))
        if isinstance(engine_out, dict) and "raw is the response" in engine_out:
            engine_out["raw is the response"] = is_response(engine_out["raw is the response"], engine.data)
            baseline_out["raw is the response"] = is_response(baseline_out["raw is the response"], hand.data)
        difference = first_difference(engine_out, baseline_out)
        if difference:
            print(f"NOT THE SAME WORK: {case.label}\n  {difference}", file=sys.stderr)
            ok = False
        before = case.side("before")
        if before is not None:
            before_out = comparable(before.fn(before.data))
            if isinstance(before_out, dict) and "raw is the response" in before_out:
                before_out["raw is the response"] = is_response(before_out["raw is the response"], before.data)
            difference = first_difference(before_out, baseline_out)
            if difference:
                print(f"NOT THE SAME WORK (--baseline): {case.label}\n  {difference}", file=sys.stderr)
                ok = False
    return ok


def check_source_parity(cases: Sequence[Case]) -> bool:
    """Source and plain sides give the same body (the answer is written from the same result); a `--baseline`
    side ("before") gives the same source-format output as this engine."""
    ok = True
    for case in cases:
        source, plain = case.sides[0], case.sides[1]
        source_out, plain_out = source.fn(source.data), plain.fn(plain.data)
        if case.op == "response":
            compared, plain_out = comparable(source_out.result), comparable(plain_out)
            compared["raw is the response"] = plain_out["raw is the response"] = True
        else:
            compared = source_out
        difference = first_difference(compared, plain_out)
        if difference:
            print(f"NOT THE SAME WORK: {case.label}\n  {difference}", file=sys.stderr)
            ok = False
        before = case.side("before")
        if before is not None:
            before_out = before.fn(before.data)
            difference = first_difference(before_out, source_out)  # a body, or the answer in the source format
            if difference:
                print(f"NOT THE SAME WORK (--baseline): {case.label}\n  {difference}", file=sys.stderr)
                ok = False
    return ok


# =============================================================================
# Timing
# =============================================================================


Clock = Callable[[], int]
# wall: elapsed time, what a caller waits (the default). cpu: this thread's CPU time, which leaves
# out the time the OS gave to other processes; use it on a shared, loaded machine.
CLOCKS: dict[str, Clock] = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}


def batch_ns(fn: Translate, data: JSON, iterations: int, clock: Clock) -> int:
    """Time of `iterations` calls, after a collection so earlier garbage is not billed."""
    gc.collect()
    loop = range(iterations)
    start = clock()
    for _ in loop:
        fn(data)
    return clock() - start


def calibrate(fn: Translate, data: JSON, target_ns: int, clock: Clock) -> int:
    """Iterations for one batch of about `target_ns` (at least one call)."""
    fn(data)  # warm up
    iterations = 1
    while True:
        elapsed = batch_ns(fn, data, iterations, clock)
        if elapsed * 10 >= target_ns:
            return max(1, round(iterations * target_ns / elapsed))
        iterations *= 10


def measure(cases: Sequence[Case], rounds: int, target_ns: int, clock: Clock) -> None:
    sides = sum(len(case.sides) for case in cases)
    bar = progress(sides * (rounds + 1), "bench (calibrate, then rounds)", unit="batch")
    for case in cases:
        for side in case.sides:
            side.iterations = calibrate(side.fn, side.data, target_ns, clock)
            bar.update()
    for round_no in range(rounds):
        for case in cases:
            turn = round_no % len(case.sides)
            for side in case.sides[turn:] + case.sides[:turn]:  # who goes first rotates every round
                side.ns.append(batch_ns(side.fn, side.data, side.iterations, clock) / side.iterations)
                bar.update()
    bar.close()


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)


# =============================================================================
# Memory
# =============================================================================


@dataclass
class MemoryRow:
    provider: str
    side: str
    input_bytes: int
    output_bytes: int
    peak: int  # tracemalloc's peak during the call, above what was allocated before it
    kept: int  # still allocated after it: the body's own objects (it shares the request's strings)


def traced(fn: Translate, data: JSON) -> tuple[int, int, Any]:
    """(peak, kept, output) of one call under tracemalloc, after a warm-up call outside it."""
    fn(data)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        output = fn(data)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before, current - before, output


def memory(messages: int, providers: Sequence[str]) -> list[MemoryRow]:
    request = transcript(messages, tool_declarations())
    rows = []
    for provider in providers:
        sides = (
            ("engine", partial(toolnexus.translate_request, provider)),
            ("hand-written", HAND_WRITTEN[provider][0]),
        )
        for name, fn in sides:
            peak, kept, output = traced(fn, request)
            rows.append(MemoryRow(provider, name, json_size(request), json_size(output), peak, kept))
    return rows


# =============================================================================
# Report
# =============================================================================


def machine_note() -> str:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    try:
        version = metadata.version("toolnexus")
    except metadata.PackageNotFoundError:
        version = "from the checkout"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return (
        f"{platform.python_implementation()} {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores ({usable} usable), load average {load}; toolnexus {version} {checkout()}"
    )


def checkout() -> str:
    """The commit being measured, and whether the work tree differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "engine", "rules"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return ""
    if head.returncode:
        return ""
    return f"at {head.stdout.strip()}" + (" + uncommitted engine/rules changes" if dirty.stdout.strip() else "")


def micros(ns: float) -> str:
    us = ns / 1000
    return f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def median_us(side: Side | None) -> float:
    return statistics.median(side.ns) / 1000 if side is not None and side.ns else math.nan


def report_speed(cases: Sequence[Case], providers: Sequence[str], litellm: LiteLLM | None) -> None:
    print("µs = median microseconds per call; ratio = median of per-round engine/hand-written [min-max]")
    if litellm is not None:
        print(
            f"LiteLLM {litellm.version}: its transforms (tools/bench_litellm.py); "
            "vs engine = median of per-round LiteLLM/engine"
        )
    header = f"{'input':<28} {'op':<9} {'size':<22} {'engine µs':>10} {'hand µs':>10} {'ratio':>7}  {'[min-max]':<12}"
    before = any(case.side("before") for case in cases)
    if before:
        print("before = the --baseline checkout's engine; after/before = median of per-round engine/before")
        header += f" {'before µs':>10} {'before':>7} {'after/before':>12}"
    if litellm is not None:
        header += f" {'LiteLLM µs':>11} {'vs engine':>8}"
    footnotes: list[str] = []
    for provider in providers:
        print(f"\n{provider}\n{header}\n{'-' * len(header)}")
        for case in (c for c in cases if c.provider == provider):
            ratios = case.ratios("engine")
            line = (
                f"{case.input:<28} {case.op:<9} {case.size:<22} {micros(statistics.median(case.sides[0].ns)):>10} "
                f"{micros(statistics.median(case.sides[1].ns)):>10} {statistics.median(ratios):>6.2f}x  "
                f"{f'[{min(ratios):.2f}-{max(ratios):.2f}]':<12}"
            )
            side = case.side("before")
            if side is not None:
                line += (
                    f" {micros(statistics.median(side.ns)):>10} {statistics.median(case.ratios('before')):>6.2f}x"
                    f" {statistics.median(case.ratios('engine', over='before')):>11.2f}x"
                )
            if litellm is not None:
                line += litellm_cells(case, footnotes)
            print(line)
    for number, note in enumerate(footnotes, 1):
        print(f"  [{number}] LiteLLM {note}")


def report_sources(cases: Sequence[Case]) -> None:
    print("µs = median microseconds per call; ratio = median of per-round source/plain [min-max]")
    print("plain: the same conversation in Chat Completions form (requests), the TranslateResult alone (answers)")
    before = any(case.side("before") for case in cases)
    if before:
        print("before = the --baseline checkout's engine on the source side; after/before = median of per-round ratios")
    header = f"{'provider':<10} {'input':<40} {'op':<9} {'size':<22} {'source µs':>10} {'plain µs':>10} {'ratio':>7}"
    header += "  [min-max]" + (f" {'before µs':>10} {'ratio':>7} {'after/before':>12}" if before else "")
    print(f"\n{header}\n{'-' * len(header)}")
    for case in cases:
        ratios = case.ratios("source", over="plain")
        line = (
            f"{case.provider:<10} {case.input:<40} {case.op:<9} {case.size:<22} "
            f"{micros(statistics.median(case.sides[0].ns)):>10} {micros(statistics.median(case.sides[1].ns)):>10} "
            f"{statistics.median(ratios):>6.2f}x  [{min(ratios):.2f}-{max(ratios):.2f}]"
        )
        if before:
            over = statistics.median(case.ratios("before", over="plain"))
            change = statistics.median(case.ratios("source", over="before"))
            line += f" {micros(statistics.median(case.sides[2].ns)):>10} {over:>6.2f}x {change:>11.2f}x"
        print(line)
    medians = {case.label: statistics.median(case.ratios("source", over="plain")) for case in cases}
    worst = max(medians, key=medians.__getitem__)
    within = sum(ratio <= TARGET_SOURCE_RATIO for ratio in medians.values())
    print(f"\ntargets (reported, never asserted)\n  source within {TARGET_SOURCE_RATIO}x of plain: {within} of "
          f"{len(medians)} rows; worst {medians[worst]:.2f}x ({worst})")  # fmt: skip


def litellm_cells(case: Case, footnotes: list[str]) -> str:
    side = case.side("LiteLLM")
    mark = ""
    if case.litellm_note:
        note = case.litellm_note
        if side is not None:
            note += "; timed on a copy with object arguments as JSON text and http(s) images as data URLs"
        if note not in footnotes:
            footnotes.append(note)
        mark = f"[{footnotes.index(note) + 1}]"
    if side is None:
        return f" {'error' + mark:>11} {'':>8}"
    times = f"{micros(statistics.median(side.ns))}{mark}"
    return f" {times:>11} {statistics.median(case.ratios('LiteLLM', over='engine')):>7.1f}x"


def report_scaling(cases: Sequence[Case], providers: Sequence[str]) -> dict[str, float]:
    """Print the scaling exponents; return the engine's over the two largest sizes, per provider."""
    print("\nscaling exponent: slope of log(µs per request) against log(messages); 1.00 is linear")
    print(f"{'provider':<11} {'side':<13} {'all sizes':>10} {'last two':>9} {'µs/message':>11}")
    engine_last: dict[str, float] = {}
    for provider in providers:
        rows = sorted((c for c in cases if c.provider == provider and c.messages), key=lambda c: c.messages or 0)
        if len(rows) < 2:
            continue
        for name in ("engine", "hand-written"):
            points = [(float(c.messages or 0), median_us(c.side(name))) for c in rows]
            last = slope(points[-2:])
            if name == "engine":
                engine_last[provider] = last
            per_message = points[-1][1] / points[-1][0]
            print(f"{provider:<11} {name:<13} {slope(points):>10.2f} {last:>9.2f} {per_message:>11.2f}")
    sizes = sorted({c.messages for c in cases if c.messages})
    if len(sizes) > 1:  # one size (an --input of one transcript) has no slope
        print(f"(all sizes: {sizes[0]:,}..{sizes[-1]:,} messages; last two: {sizes[-2]:,} -> {sizes[-1]:,})")
    return engine_last


def report_memory(rows: Sequence[MemoryRow], messages: int) -> None:
    print(f"\nmemory: tracemalloc while translating the {messages:,}-message transcript once (after a warm-up call)")
    print("peak: most allocated at once during the call; kept: still allocated after it (the body's own objects)")
    header = (
        f"{'provider':<11} {'side':<13} {'request':>10} {'body':>10} {'peak':>10} {'kept':>10} "
        f"{'peak/request':>13} {'peak/body':>10}"
    )
    print(f"{header}\n{'-' * len(header)}")
    for row in rows:
        print(
            f"{row.provider:<11} {row.side:<13} {mib(row.input_bytes):>10} {mib(row.output_bytes):>10} "
            f"{mib(row.peak):>10} {mib(row.kept):>10} {row.peak / row.input_bytes:>12.2f}x "
            f"{row.peak / row.output_bytes:>9.2f}x"
        )
    print("(request and body: their size as compact UTF-8 JSON)")


def mib(size: int) -> str:
    return f"{size / 2**20:,.2f} MiB"


def report_targets(cases: Sequence[Case], exponents: dict[str, float], memory_rows: Sequence[MemoryRow]) -> None:
    print("\ntargets (reported, never asserted)")
    medians = {case.label: statistics.median(case.ratios("engine")) for case in cases}
    worst = max(medians, key=medians.__getitem__)
    within = sum(ratio <= TARGET_RATIO for ratio in medians.values())
    print(f"  engine within {TARGET_RATIO}x of hand-written: {within} of {len(medians)} rows; "
          f"worst {medians[worst]:.2f}x ({worst})")  # fmt: skip
    for provider, exponent in exponents.items():
        verdict = "met" if exponent <= TARGET_EXPONENT else "NOT met"
        print(f"  scaling exponent <= {TARGET_EXPONENT} (two largest sizes), {provider}: {exponent:.2f} ({verdict})")
    for case in cases:
        if case.input != TWENTY_TOOLS or case.provider != "gemini":
            continue
        engine_us = median_us(case.sides[0])
        litellm_side = case.side("LiteLLM")
        measured = ""
        if litellm_side is not None:
            litellm_us = median_us(litellm_side)
            measured = f"; LiteLLM in this run: {litellm_us:,.0f} µs, {litellm_us / engine_us:.0f}x the engine"
        print(
            f"  Gemini, {TWENTY_TOOLS}: engine {engine_us:,.1f} µs, {LITELLM_REFERENCE_US / engine_us:.0f}x cheaper "
            f"than the {LITELLM_REFERENCE_US / 1000:g} ms measured earlier for LiteLLM (target {TARGET_VS_LITELLM:g}x)"
            f"{measured}"
        )
    for row in memory_rows:
        if row.side == "engine":
            print(f"  memory, {row.provider}: peak {row.peak / row.output_bytes:.2f}x the body's JSON size, "
                  f"{row.peak / row.input_bytes:.2f}x the request's")  # fmt: skip


# =============================================================================
# Main
# =============================================================================


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="smoke run: small transcripts, short batches, no LiteLLM")
    parser.add_argument("--memory", action="store_true", help="only the memory section")
    parser.add_argument("--no-litellm", action="store_true", help="leave LiteLLM out even when it is installed")
    parser.add_argument("--responses", action="store_true", help="only the single responses (no requests, no memory)")
    parser.add_argument(
        "--checked-baseline", action="store_true", help="the hand-written side runs jsonsafe.check first"
    )
    parser.add_argument(
        "--sources", action="store_true", help="only the Messages and Responses rows, against Chat Completions"
    )
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall time (default) or thread CPU time"
    )
    parser.add_argument(
        "--baseline", metavar="CHECKOUT", help="a third side: every row under that checkout's engine (before/after)"
    )
    parser.add_argument("--provider", action="append", metavar="NAME", help="only this provider's rows (repeatable)")
    parser.add_argument("--input", action="append", metavar="TEXT", help="only inputs named with TEXT (repeatable)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 7)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    target_ns = 5_000_000 if args.quick else 100_000_000
    sizes = QUICK_SIZES if args.quick else SIZES
    machine = machine_note()  # before the run: its load average is the other processes'
    if args.sources:
        return run_sources(rounds, target_ns, args.clock, machine, args.baseline)
    providers = [p for p in toolnexus.providers() if p in HAND_WRITTEN and (not args.provider or p in args.provider)]
    answering = [
        p
        for p in toolnexus.providers()
        if response_baseline(p, parent_of) is not None and (not args.provider or p in args.provider)
    ]
    for missing in sorted(set(toolnexus.providers()) - set(answering) - set(args.provider or ())):
        print(f"note: no hand-written baseline for {missing}; left out", file=sys.stderr)
    for answers_only in sorted(set(answering) - set(providers)):
        print(f"note: no hand-written request translator for {answers_only}; its responses only", file=sys.stderr)

    if args.memory:
        print(f"toolnexus bench, memory only\nmachine: {machine}")
        report_memory(memory(sizes[-1], providers), sizes[-1])
        return 0

    litellm = None if args.quick or args.no_litellm else load()
    cases = build_cases(sizes, answering, litellm, responses_only=args.responses, checked=args.checked_baseline)
    if args.input:
        cases = [case for case in cases if any(text in case.input for text in args.input)]
    if args.baseline:
        add_before(cases, other_engine(args.baseline))
    if not check_parity(cases):
        print("stopping: the engine and the hand-written translator disagree, so a ratio would mean nothing",
              file=sys.stderr)  # fmt: skip
        return 1
    gc.collect()
    gc.freeze()  # the inputs are long-lived: keep them out of every collection
    measure(cases, rounds, target_ns, CLOCKS[args.clock])
    memory_rows = [] if args.responses else memory(sizes[-1], providers)

    print(
        f"toolnexus bench: rule engine vs hand-written translator, interleaved in one process, {rounds} rounds, "
        f"~{target_ns / 1e6:g} ms batches, {args.clock} clock"
        + (" (QUICK: a smoke run, do not quote)" if args.quick else "")
    )
    print(f"machine: {machine}")
    print(f"parity: engine and hand-written outputs identical on all {len(cases)} inputs (checked before timing)")
    if litellm is None and not args.quick and not args.no_litellm:
        print("LiteLLM: not installed (pip install -e '.[bench]' adds its rows)")
    if args.checked_baseline:
        print("baseline: the hand-written side runs jsonsafe.check first (--checked-baseline)")
    report_speed(cases, answering, litellm)
    exponents = report_scaling(cases, answering)
    if memory_rows:
        report_memory(memory_rows, sizes[-1])
    report_targets(cases, exponents, memory_rows)
    return 0


def run_sources(rounds: int, target_ns: int, clock: str, machine: str, baseline: str | None = None) -> int:
    """`--sources`: the source-format rows alone, each against the same work in Chat Completions form."""
    cases = build_source_cases()
    if baseline:
        add_source_before(cases, other_engine(baseline))
    if not check_source_parity(cases):
        print("stopping: the source and plain paths give different output, so a ratio would mean nothing",
              file=sys.stderr)  # fmt: skip
        return 1
    gc.collect()
    gc.freeze()
    measure(cases, rounds, target_ns, CLOCKS[clock])
    print(f"toolnexus bench: source formats vs Chat Completions, interleaved in one process, {rounds} rounds, "
          f"~{target_ns / 1e6:g} ms batches, {clock} clock")  # fmt: skip
    print(f"machine: {machine}")
    print(f"parity: source and plain outputs identical on all {len(cases)} inputs (checked before timing)")
    report_sources(cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
