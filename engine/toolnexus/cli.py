"""The `toolnexus` command: check, request, response, providers, explain, diff, demo.

Errors print one line (with the path or rule location) and exit 2; a failed
check prints its diffs and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .api import translate_request, translate_response
from .conformance import run_check
from .errors import ToolnexusError
from .jsonsafe import JsonValueError, loads
from .rulebook import load_rules

EXIT_FAILED = 1
EXIT_ERROR = 2


def _read_json(name: str) -> Any:
    try:
        if name == "-":
            return loads(sys.stdin.read())
        with open(name, encoding="utf-8") as fh:
            return loads(fh.read())
    except OSError as exc:
        raise _InputError(f"{name}: {exc.strerror}") from None
    except JsonValueError as exc:  # nested too deep, NaN or Infinity, a lone surrogate
        raise _InputError(f"{name}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise _InputError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _InputError(f"{name}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None


class _InputError(Exception):
    pass


def _print_json(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    failed = passed = 0
    for outcome in run_check(args.rules):
        if outcome.ok:
            passed += 1
            if args.verbose:
                out.write(f"ok    {outcome.name}\n")
            continue
        failed += 1
        out.write(f"FAIL  {outcome.name}\n")
        for problem in outcome.problems:
            out.write("      " + problem.replace("\n", "\n      ") + "\n")
    providers = ", ".join(load_rules(args.rules).names())
    out.write(f"rules valid ({providers}); {passed} passed, {failed} failed\n")
    return EXIT_FAILED if failed else 0


def cmd_request(args: argparse.Namespace, out: TextIO) -> int:
    request = _read_json(args.file)
    body = translate_request(
        args.to, request, rules=args.rules, system=args.system, unknown_fields="drop" if args.drop_unknown else "error"
    )
    _print_json(dict(body), out)
    for note in body.notes:
        sys.stderr.write(f"note: {note}\n")
    return 0


def cmd_response(args: argparse.Namespace, out: TextIO) -> int:
    result = translate_response(args.from_, _read_json(args.file), rules=args.rules, requested_model=args.model)
    _print_json(result.to_dict(), out)
    return 0


def cmd_providers(args: argparse.Namespace, out: TextIO) -> int:
    book = load_rules(args.rules)
    for name, provider in book.providers.items():
        out.write(f"{name}\t{provider.openable_path()}\t{provider.doc}\n")
    return 0


def cmd_explain(args: argparse.Namespace, out: TextIO) -> int:
    out.write(load_rules(args.rules).get(args.provider).explain(code=args.code) + "\n")
    return 0


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    from .diff import build_report, render

    names = [*args.providers, *(n.strip() for n in (args.columns or "").split(",") if n.strip())]
    text = render(build_report(load_rules(args.rules), names), args.format)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolnexus", description="OpenAI tool-calling shapes in, any provider's out.")
    rules = argparse.ArgumentParser(add_help=False)
    rules.add_argument("--rules", metavar="DIR", help="a rules directory that overrides or adds providers")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", parents=[rules], help="validate every rule file and diff every golden fixture and case")
    p.add_argument("-v", "--verbose", action="store_true", help="list passing fixtures too")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("request", parents=[rules], help="print the provider-native body for an OpenAI request")
    p.add_argument("--to", required=True, metavar="PROVIDER")
    p.add_argument("--system", help="a per-call system prompt (overrides the transcript's)")
    p.add_argument("--drop-unknown", action="store_true", help="drop (with a note) fields the rules do not map")
    p.add_argument("file", nargs="?", default="-", help="JSON file, or - for stdin")
    p.set_defaults(run=cmd_request)

    p = sub.add_parser("response", parents=[rules], help="print the OpenAI-shaped result of a provider response")
    p.add_argument("--from", dest="from_", required=True, metavar="PROVIDER")
    p.add_argument("--model", help="the requested model, used when the response names none")
    p.add_argument("file", nargs="?", default="-", help="JSON file, or - for stdin")
    p.set_defaults(run=cmd_response)

    p = sub.add_parser("providers", parents=[rules], help="list the providers the rules define")
    p.set_defaults(run=cmd_providers)

    p = sub.add_parser("demo", parents=[rules], help="a two-turn tool-calling exchange per provider, offline")
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser("diff", parents=[rules], help="how each provider handles each concept, side by side")
    p.add_argument("providers", nargs="*", metavar="PROVIDER", help="the providers to compare (default: all)")
    p.add_argument("--providers", dest="columns", metavar="A,B,...", help="the provider columns, in this order")
    p.add_argument("--format", choices=("table", "markdown", "html"), default="table")
    p.add_argument("--output", metavar="FILE", help="write to FILE instead of printing")
    p.set_defaults(run=cmd_diff)

    p = sub.add_parser("explain", parents=[rules], help="show a provider's compiled rules beside their source lines")
    p.add_argument("provider")
    p.add_argument("--code", action="store_true", help="also print the Python each template compiled to")
    p.set_defaults(run=cmd_explain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args, sys.stdout)
    except (ToolnexusError, _InputError) as exc:
        sys.stderr.write(f"toolnexus: error: {exc}\n")
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main())
