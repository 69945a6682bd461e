"""Work per call, counted rather than timed: a steady figure on a loaded machine.

usage: tools/count.py {answer,request,parity} PROVIDER [--source FORMAT] [--input NAME] [--messages N]
                      [--plain] [--baseline] [--engine CHECKOUT] [--instructions] [--calls N] [--top K]

The rows are tools/bench.py's:
- `answer PROVIDER`: the provider's answer `--input` translated back, as a `TranslateResult` or, with
  `--source anthropic|openai-responses`, in that format. The inputs are tools/bench.py's answer rows, in the
  shape the provider answers in: "stop" and "tools" (the parity fixture's finishStop and finishTools), "text",
  "3 tool calls" (the default) and "large" (the generated answers), or a row's own name ("parity finishStop");
- `request PROVIDER --source FORMAT`: a transcript of `--messages` messages in that format, translated for the
  provider; `--plain` the same conversation as a Chat Completions request (the row a source request's cost is
  compared with);
- `parity PROVIDER`: the golden parity fixture's request.

Without `--instructions` it prints the bytecodes one call executes (Python's own count, through
`sys.settrace`) and the `--top` code objects that executed most of them: where the work is. With
`--instructions` it runs itself under `valgrind --tool=callgrind` and prints the machine instructions per call,
counted inside the loop of `--calls` calls only (after 50 unmeasured), with `PYTHONHASHSEED=0`: the figure the
README's rounds cite. `--engine CHECKOUT` counts another checkout's engine (say, the commit before a change).
`--baseline` counts the hand-written translator of tools/bench_baseline.py on the same input instead (a request
row's conversation as Chat Completions, which is what it reads; an answer row with `--source`, the answer written
in that format by hand, `HAND_SOURCE_ANSWERS`: OpenAI's as a Messages `Message` and as a Responses `Response`);
with `--instructions` it counts both sides and prints the engine's, the hand-written one's and their ratio: the
ratio tools/bench.py times, in instructions.
"""

from __future__ import annotations

import argparse
import collections
import functools
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WARMUP = 50  # calls before the counted ones: the rulebook compiled, caches filled
ANSWER_NAMES = {  # `--input`'s short names for tools/bench.py's answer rows
    "stop": "parity finishStop",
    "tools": "parity finishTools",
    "text": "generated: text",
    "3 tool calls": "generated: 3 tool calls",
    "large": "generated: large",
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tools/count.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("row", choices=("answer", "request", "parity"))
    parser.add_argument("provider")
    parser.add_argument("--source", help="the caller's format: anthropic or openai-responses")
    parser.add_argument(
        "--input", default="3 tool calls", help='the answer: stop, tools, text, "3 tool calls" (default) or large'
    )
    parser.add_argument("--messages", type=int, default=10, help="the request's transcript length (default 10)")
    parser.add_argument("--plain", action="store_true", help="the request as Chat Completions (the plain row)")
    parser.add_argument("--baseline", action="store_true", help="the row's hand-written translator (bench_baseline.py)")
    parser.add_argument("--engine", metavar="CHECKOUT", help="count this checkout's engine instead")
    parser.add_argument("--instructions", action="store_true", help="machine instructions, under callgrind")
    parser.add_argument("--calls", type=int, default=20, help="calls counted with --instructions (default 20)")
    parser.add_argument("--top", type=int, default=15, help="code objects listed with bytecodes (default 15)")
    args = parser.parse_args(argv)
    if args.row == "request" and args.source is None:
        parser.error("request needs --source (anthropic or openai-responses)")
    if args.calls < 1 or args.messages < 1:
        parser.error("--calls and --messages must be at least 1")
    return args


def row_call(args: argparse.Namespace) -> Callable[[], Any]:
    """The call the row names, its input built once, with the engine `--engine` names (else the one installed)."""
    engine = Path(args.engine or ROOT) / "engine"
    if args.engine:
        if not (engine / "toolnexus").is_dir():
            raise SystemExit(f"count.py: --engine: {args.engine} has no engine/toolnexus")
        sys.path.insert(0, str(engine))
    sys.path.insert(0, str(ROOT / "tools"))
    import toolnexus

    if args.engine and Path(toolnexus.__file__).resolve().parents[1] != engine.resolve():
        raise SystemExit(f"count.py: --engine: toolnexus came from {toolnexus.__file__}, not {engine}")
    from bench_inputs import (
        generated_responses,
        messages_transcript,
        parity_inputs,
        responses_transcript,
        tool_declarations,
    )

    if args.provider not in toolnexus.providers():
        raise SystemExit(f"count.py: no provider {args.provider!r}; one of {', '.join(toolnexus.providers())}")
    if args.row != "answer" and args.baseline:
        from bench_baseline import HAND_WRITTEN

        if args.provider not in HAND_WRITTEN:
            raise SystemExit(f"count.py: --baseline: no hand-written {args.provider}; one of {', '.join(HAND_WRITTEN)}")
    hand = HAND_WRITTEN[args.provider] if args.row != "answer" and args.baseline else None
    if args.row == "parity":
        request = parity_inputs()[0]
        if hand is not None:
            return functools.partial(hand[0], request)
        return lambda: toolnexus.translate_request(args.provider, request)
    if args.row == "answer":
        from bench_responses import provider_answers
        from toolnexus.devtools.conformance import parents_of

        parents = parents_of(toolnexus.load_rules())
        rows, answer_hand = provider_answers(
            args.provider, parents.get, parity_inputs()[1], generated_responses(tool_declarations())
        )
        answers = dict(rows)
        name = ANSWER_NAMES.get(args.input, args.input)
        if name not in answers:
            raise SystemExit(f"count.py: no answer {args.input!r}; one of {', '.join([*ANSWER_NAMES, *answers])}")
        answer, source = answers[name], args.source or "openai"
        if args.baseline and args.source is not None:  # the answer written in that format by hand
            from bench_baseline import HAND_SOURCE_ANSWERS
            from bench_responses import response_baseline

            shape = (response_baseline(args.provider, parents.get) or (args.provider,))[0]
            source_hand = HAND_SOURCE_ANSWERS.get(args.source, {}).get(shape)
            if source_hand is None:
                raise SystemExit(f"count.py: --baseline: no hand-written {shape} answer as {args.source}")
            return functools.partial(source_hand, answer)
        if args.baseline:
            if answer_hand is None:
                raise SystemExit(f"count.py: --baseline: no hand-written {args.provider} answer translator")
            return functools.partial(answer_hand, answer)
        return lambda: toolnexus.translate_response(args.provider, answer, source=source)
    transcripts = {"anthropic": messages_transcript, "openai-responses": responses_transcript}
    if args.source not in transcripts:
        raise SystemExit(f"count.py: no transcript in {args.source!r}; one of {', '.join(transcripts)}")
    request = transcripts[args.source](args.messages, tool_declarations())
    if args.plain or hand is not None:
        plain = toolnexus.load_rules().format(args.source).read(request)[0]
        if hand is not None:
            return functools.partial(hand[0], plain)
        return lambda: toolnexus.translate_request(args.provider, plain)
    return lambda: toolnexus.translate_request(args.provider, request, source=args.source)


def bytecodes(call: Callable[[], Any]) -> collections.Counter[str]:
    """The bytecodes one call executes, per code object (`file:line name`)."""
    counts: collections.Counter[str] = collections.Counter()

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[f"{Path(code.co_filename).name}:{code.co_firstlineno} {code.co_name}"] += 1
        return trace

    sys.settrace(trace)
    try:
        call()
    finally:
        sys.settrace(None)
    return counts


def counted_loop(call: Callable[[], Any], calls: int) -> None:
    """The calls callgrind counts: inside `functools.reduce`, the function its collection is toggled on."""
    functools.reduce(lambda _, __: call(), range(calls), None)


def instructions(argv: list[str], calls: int) -> int:
    """Machine instructions per call: this script again under callgrind, collecting inside `counted_loop` only."""
    if shutil.which("valgrind") is None:
        raise SystemExit("count.py: --instructions needs valgrind on PATH (apt install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--toggle-collect=functools_reduce"]
        rest = [a for a in argv if a != "--instructions"]
        env = {**os.environ, "PYTHONHASHSEED": "0", "TOOLNEXUS_COUNT_LOOP": "1"}
        done = subprocess.run([*command, sys.executable, __file__, *rest], env=env, capture_output=True, text=True)
        if done.returncode != 0 or not out.exists():
            raise SystemExit(f"count.py: the counted run failed:\n{done.stderr[-2000:]}")
        totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if totals is None:
        raise SystemExit("count.py: callgrind wrote no totals")
    return int(totals.group(1)) // calls


def working_call(args: argparse.Namespace) -> Callable[[], Any]:
    """The row's call, run once: a row the provider refuses (Ollama takes neither the Messages transcript's
    `'minimal'` thinking budget nor its image URLs) ends in one line naming the refusal, not a traceback, before
    anything is counted."""
    call = row_call(args)
    from toolnexus import ToolnexusError

    try:
        call()
    except ToolnexusError as exc:
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SystemExit(f"count.py: {args.provider} refuses this row's input: {said}") from None
    return call


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args.instructions:
        working_call(args)  # a refused row said in one line here, not in the counted run's traceback
        counted = instructions(argv, args.calls)
        if not args.baseline:
            print(f"{counted:,} instructions per call")
            return
        engine = instructions([a for a in argv if a != "--baseline"], args.calls)
        print(f"{engine:,} instructions per call (engine)")
        print(f"{counted:,} instructions per call (hand-written)")
        print(f"{engine / counted:.2f}x of hand-written")
        return
    call = working_call(args)
    for _ in range(WARMUP):
        call()
    # As tools/bench.py: what exists now (the compiled rules, the input) frozen out of the collector's view, so a
    # full collection falling inside the counted calls costs what the calls allocated, not a walk of the rulebook
    # (about 2M instructions on a 100-message row, counted or not by where it fell).
    gc.collect()
    gc.freeze()
    if os.environ.get("TOOLNEXUS_COUNT_LOOP"):  # the run under callgrind
        counted_loop(call, args.calls)
        return
    counts = bytecodes(call)
    print(f"{sum(counts.values()):,} bytecodes per call")
    for name, n in counts.most_common(args.top):
        print(f"{n:8,}  {name}")


if __name__ == "__main__":
    main()
