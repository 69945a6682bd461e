"""The `toolnexus` command: check, request, response, providers, explain, diff, demo.

Whatever the input, the command never shows a Python traceback: every failure is
one line on stderr and a documented exit code (EXIT_CODES, also in `--help`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, TextIO

from ..api import stream_translator, translate_request, translate_response
from ..errors import ConfigError, ProviderError, ToolnexusError, TranslationError
from ..language.jsonsafe import JsonValueError, loads
from ..language.loader import builtin_rules_dir
from ..translate.result import TranslateResult
from ..translate.rulebook import load_rules
from .conformance import run_check

EXIT_FAILED = 1
EXIT_ERROR = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_PIPE = 141  # 128 + SIGPIPE, what `yes | head` reports
MAX_INPUT_BYTES = 64 * 1024 * 1024  # a bound on what is read, so /dev/zero or a runaway pipe cannot exhaust memory

EXIT_CODES = f"""\
exit codes:
  0    done
  1    check or demo found a failure (printed above the summary line)
  2    an error: one line on stderr naming the file and the path or rule location
       (input: a JSON object in UTF-8, at most {MAX_INPUT_BYTES // 2**20} MiB)
  3    a bug in toolnexus (one line; TOOLNEXUS_DEBUG=1 shows the traceback)
  130  interrupted (Ctrl-C)
  141  the output was closed early (e.g. piped into head); nothing more is printed"""

# Python keyword options the engine's messages suggest, as the CLI spells them.
CLI_SPELLING = {"pass unknown_fields='drop'": "pass --drop-unknown"}


class _InputError(Exception):
    """A CLI input problem (a file that cannot be read, or is not JSON), already worded for the user."""


def _label(name: str) -> str:
    return "<stdin>" if name == "-" else name


def _read_text(name: str) -> str:
    """The text of FILE (or stdin): bounded in size, UTF-8 (a byte order mark is accepted)."""
    data = _read_bytes(name)
    label = _label(name)
    try:
        return data.decode("utf-8-sig")  # a UTF-8 byte order mark, as Windows editors write, is accepted
    except UnicodeDecodeError as exc:
        utf16 = " (it looks like UTF-16: save it as UTF-8)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise _InputError(
            f"{label}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}){utf16}"
        ) from None


def _read_bytes(name: str) -> bytes:
    """The bytes of FILE (or stdin), bounded in size."""
    try:
        if name == "-":
            if sys.stdin.isatty():
                sys.stderr.write("toolnexus: reading standard input (end it with Ctrl-D; or pass FILE)\n")
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(name, "rb") as fh:
                data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise _InputError(f"{name}: {exc.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise _InputError(f"{_label(name)}: larger than the input limit of {MAX_INPUT_BYTES // 2**20} MiB")
    return data


def _read_json(name: str) -> Any:
    """The JSON document in FILE (or stdin), nested no deeper than Python can read."""
    text = _read_text(name)
    try:
        return loads(text)
    except JsonValueError as exc:  # nested too deep, NaN or Infinity, a lone surrogate: with its path
        raise _InputError(f"{_label(name)}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _InputError(f"{_label(name)}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise _InputError(f"{_label(name)}: JSON nested too deeply to read") from None


def _print_json(value: Any, out: TextIO, source: str, indent: int | None = 2) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")  # before anything is written, so a refusal leaves no half document
    except UnicodeEncodeError as exc:
        escape = json.dumps(text[exc.start])
        raise _InputError(f"{_label(source)}: holds {escape}, a lone surrogate that UTF-8 cannot carry") from None
    out.write(text)


def _print_json_lines(values: list[Any], out: TextIO, source: str) -> None:
    for value in values:
        _print_json(value, out, source, indent=None)


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    import time

    started = time.perf_counter()
    failed = passed = 0
    for outcome in run_check(args.rules):
        where = f"  {outcome.file}" if outcome.file else ""
        if outcome.ok:
            passed += 1
            if args.verbose:
                out.write(f"ok    {outcome.name}{where}\n")
            continue
        failed += 1
        out.write(f"FAIL  {outcome.name}{where}\n")
        for problem in outcome.problems:
            out.write("      " + problem.replace("\n", "\n      ") + "\n")
    providers = ", ".join(load_rules(args.rules).names())
    seconds = time.perf_counter() - started
    out.write(f"rules valid ({providers}); {passed} passed, {failed} failed in {seconds:.1f}s\n")
    return EXIT_FAILED if failed else 0


def cmd_request(args: argparse.Namespace, out: TextIO) -> int:
    request = _read_json(args.file)
    streaming = None
    if args.stream:
        streaming = load_rules(args.rules).get(args.to).streaming
        if streaming is None:
            raise ConfigError(f"the {args.to} rules have no streaming section, so there is no streamed body")
        if isinstance(request, dict):
            request = {k: v for k, v in request.items() if k != "stream"}  # --stream says it
    body = translate_request(
        args.to,
        request,
        rules=args.rules,
        system=args.system,
        unknown_fields="drop" if args.drop_unknown else "error",
        source=args.source,
    )
    _print_json(streaming.request_body(body, {"model": body.get("model", "")}) if streaming else body, out, args.file)
    for note in body.notes:
        sys.stderr.write(f"note: {note}\n")
    return 0


def cmd_response(args: argparse.Namespace, out: TextIO) -> int:
    if args.stream:
        return _response_stream(args, out)
    result = translate_response(
        args.from_, _read_json(args.file), rules=args.rules, requested_model=args.model, source=args.source
    )
    _print_json(result.to_dict() if isinstance(result, TranslateResult) else dict(result), out, args.file)
    return 0


def _response_stream(args: argparse.Namespace, out: TextIO) -> int:
    """A captured stream in the provider's framing -> the OpenAI chunks, one JSON object a line."""
    import httpx
    from httpx_sse import EventSource

    translator = stream_translator(args.from_, requested_model=args.model, rules=args.rules, source=args.source)
    streaming = load_rules(args.rules).get(args.from_).streaming
    assert streaming is not None  # stream_translator refused a provider without one
    if streaming.framing == "sse":
        text = _read_text(args.file) + "\n\n"  # a capture may lack the blank line that ends its last event
        captured = httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})
        datas = [event.data for event in EventSource(captured).iter_sse()]
        if not datas:
            raise _InputError(f"{_label(args.file)}: no server-sent events (`data:` lines) in it")
    else:
        datas = asyncio.run(_framed(streaming.framing, _read_bytes(args.file), streaming.endpoint, args.file))
    chunks: list[dict[str, Any]] = []
    for data in datas:
        chunks += translator.feed(data)
    chunks += translator.finish()
    _print_json_lines(chunks, out, args.file)
    return 0


async def _framed(name: str, data: bytes, endpoint: Any, file: str) -> list[str]:
    """A captured stream of another framing (NDJSON lines, AWS event-stream frames) cut into its events'
    data by the client's own reader for it."""
    from ..http.framing import framing
    from ..http.limits import MAX_EVENT_BYTES, BodyError
    from ..http.transport import Received

    chosen = framing(name)
    captured = Received(200, {"content-type": chosen.media_types[0]}, data)
    frames = chosen.read(captured, MAX_EVENT_BYTES, endpoint)
    try:
        datas = [text async for text in frames if text.strip()]
    except BodyError as exc:
        raise _InputError(f"{_label(file)}: {exc.message}") from None
    finally:
        await frames.aclose()
    if not datas:
        raise _InputError(f"{_label(file)}: no {name} events in it")
    return datas


def cmd_providers(args: argparse.Namespace, out: TextIO) -> int:
    book = load_rules(args.rules)
    for name, provider in book.providers.items():
        out.write(f"{name}\t{provider.openable_path()}\t{provider.doc}\n")
    return 0


def cmd_explain(args: argparse.Namespace, out: TextIO) -> int:
    book = load_rules(args.rules)
    if args.source is not None:
        out.write(book.format(args.source).explain(code=args.code) + "\n")
        return 0
    if args.provider is None:
        raise _InputError("name a provider to explain (or --source FORMAT)")
    out.write(book.get(args.provider).explain(code=args.code) + "\n")
    return 0


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    from .capabilities import build_summary, render_summary
    from .diff import build_report, render

    names = [*args.providers, *(n.strip() for n in (args.columns or "").split(",") if n.strip())]
    book = load_rules(args.rules)
    if args.sources is not None:
        from .format_diff import build_format_report

        if names or args.summary:
            raise _InputError("--sources compares source formats: name formats there, not providers or --summary")
        formats = [n.strip() for n in args.sources.split(",") if n.strip()]
        text = render(build_format_report(book, formats), args.format)
    elif args.summary:
        text = render_summary(build_summary(book, names), args.format, book=book)
    else:
        text = render(build_report(book, names), args.format)
    if args.output is None:
        out.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise _InputError(f"{args.output}: {exc.strerror}") from None
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import main as demo_main  # the client stack loads only for the demo

    return demo_main(out, args.rules)


def _shipped() -> list[str]:
    return sorted(p.stem for p in builtin_rules_dir().glob("*.yaml"))


def _command(
    sub: Any, name: str, run: Callable[[argparse.Namespace, TextIO], int], summary: str, example: str
) -> argparse.ArgumentParser:
    """A subcommand whose help ends with an example."""
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--rules", metavar="DIR", help="a rules directory whose files override or add providers")
    p.set_defaults(run=run)
    return p


def build_parser() -> argparse.ArgumentParser:
    names = _shipped()
    shipped = ", ".join(names)
    one, two = [*names, "PROVIDER", "PROVIDER"][:2]  # the examples name shipped rule files, whichever they are
    parser = argparse.ArgumentParser(
        prog="toolnexus",
        description="OpenAI tool-calling shapes in, any provider's out.",
        epilog=f"{EXIT_CODES}\n\nexample:\n  toolnexus request --to {one} request.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"toolnexus {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    which = f"one of: {shipped} (or one a --rules DIR adds)"

    p = _command(sub, "check", cmd_check, "validate every rule file and diff every golden fixture and case",
                 "toolnexus check --rules mydir  # mydir/fixtures/ cases replace same-named ones")  # fmt: skip
    p.add_argument("-v", "--verbose", action="store_true", help="list passing fixtures and cases too")

    p = _command(sub, "request", cmd_request, "print the provider-native body for an OpenAI request (notes on stderr)",
                 f"toolnexus request --to {two} request.json > body.json")  # fmt: skip
    p.add_argument("--to", required=True, metavar="PROVIDER", help=f"the provider to translate for, {which}")
    p.add_argument("--system", help="a per-call system prompt (overrides the transcript's)")
    p.add_argument("--drop-unknown", action="store_true", help="drop (with a note) fields the rules do not map")
    p.add_argument("--source", default="openai", metavar="FORMAT",
                   help="the request's format: openai (the default) or a format in rules/formats/")  # fmt: skip
    p.add_argument("--stream", action="store_true",
                   help="print the streamed call's body (with the rule file's streaming.body)")  # fmt: skip
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="JSON file, or - for stdin (the default)")

    p = _command(sub, "response", cmd_response, "print the OpenAI-shaped result of a provider response",
                 f"toolnexus response --from {one} response.json")  # fmt: skip
    p.add_argument(
        "--from", dest="from_", required=True, metavar="PROVIDER", help=f"the provider that answered, {which}"
    )
    p.add_argument("--model", help="the requested model, used when the response names none")
    p.add_argument("--source", default="openai", metavar="FORMAT",
                   help="the answer's format: openai (the default) or a format in rules/formats/")  # fmt: skip
    p.add_argument("--stream", action="store_true",
                   help="FILE is a captured stream in the provider's framing (server-sent events, NDJSON, "
                        "AWS event-stream frames): print its OpenAI chunks")  # fmt: skip
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="JSON file, or - for stdin (the default)")

    _command(sub, "providers", cmd_providers, "list the providers the rules define (name, rule file, description)",
             "toolnexus providers --rules mydir")  # fmt: skip

    _command(sub, "demo", cmd_demo, "a two-turn tool-calling exchange per provider, offline", "toolnexus demo")

    p = _command(sub, "diff", cmd_diff, "how each provider handles each concept, side by side",
                 f"toolnexus diff {one} {two} --format html --output differences.html")  # fmt: skip
    p.add_argument("providers", nargs="*", metavar="PROVIDER", help=f"the providers to compare (default: all), {which}")
    p.add_argument("--format", choices=("table", "markdown", "html"), default="table", help="the output format")
    p.add_argument("--providers", dest="columns", metavar="A,B,...",
                   help="the columns, in this order; NAME+variants: NAME and every file extending it")  # fmt: skip
    p.add_argument("--summary", action="store_true",
                   help="one row per provider: what it supports (tools, images, streaming, ...)")  # fmt: skip
    p.add_argument("--sources", nargs="?", const="", metavar="A,B,...",
                   help="compare the source formats instead (rules/formats/; default: all): how each format's "
                        "request is read and its answer and stream written")  # fmt: skip
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of printing")

    p = _command(sub, "explain", cmd_explain, "show a provider's compiled rules beside their source lines",
                 f"toolnexus explain {one} --code")  # fmt: skip
    p.add_argument("provider", nargs="?", metavar="PROVIDER", help=f"the provider to explain, {which}")
    p.add_argument("--source", metavar="FORMAT", help="explain a source format of rules/formats/ instead")
    p.add_argument("--code", action="store_true", help="also print the Python each template compiled to")
    return parser


def _version() -> str:
    try:
        return metadata.version("toolnexus")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _worded(exc: Exception, args: argparse.Namespace) -> str:
    """The one error line: the input file named for errors about it, CLI flags for Python options."""
    text = str(exc)
    for python, flag in CLI_SPELLING.items():
        text = text.replace(python, flag)
    if isinstance(exc, ProviderError) and exc.kind == "http" and exc.status is None:  # an error body or event
        text = f"this is {exc.provider}'s error, not a response: {exc.error_type or 'error'}: {exc.message}"
    if isinstance(exc, TranslationError) and exc.path == "stream" and args.command == "request":
        text = (f"{exc.path}: `toolnexus request` prints the whole-answer body; pass --stream for the streamed"
                " call's (and `toolnexus response --stream` translates its events)")  # fmt: skip
    if isinstance(exc, (TranslationError, ProviderError)) and getattr(args, "file", None):
        text = f"{_label(args.file)}: {text}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every way it can end is an exit code from EXIT_CODES and at most one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        code: int = args.run(args, sys.stdout)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
    except (ToolnexusError, _InputError) as exc:
        return _fail(_worded(exc, args), EXIT_ERROR)
    except RecursionError:
        where = f"{_label(args.file)}: " if getattr(args, "file", None) else ""
        return _fail(f"{where}nested too deeply to translate", EXIT_ERROR)
    except MemoryError:
        return _fail("out of memory", EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader has gone (`toolnexus demo | head`): say nothing, as `ls | head` does, and keep
        # the interpreter's final flush from complaining about the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as exc:
        if os.environ.get("TOOLNEXUS_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (a bug; TOOLNEXUS_DEBUG=1 shows where)", EXIT_BUG)
    return code


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"toolnexus: error: {message}\n" if code != EXIT_INTERRUPTED else f"toolnexus: {message}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
