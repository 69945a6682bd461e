"""The conformance check: golden fixtures and case tables, diffed with deepdiff.

Two kinds of data files drive it, both shipped with the package:

- golden fixtures, `fixtures/*.input.json`: an OpenAI request and provider
  responses whose translation, picked into named keys, must equal an agreed
  output file byte for byte (key-sorted JSON, indent 1);
- case tables, `fixtures/<provider>/<case>.yaml`: one concern each, with an
  OpenAI request and the expected provider body (or an expected error kind and
  path), and/or a provider response and the expected OpenAI-shaped result.

`toolnexus check` and the test suite run the same code, so a case is added by
adding a file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from deepdiff import DeepDiff

from .. import errors
from ..api import translate_request, translate_response
from ..language.loader import did_you_mean, parse_rule_text
from ..translate.rulebook import Rulebook, RulesArg, load_rules

GOLDEN_SUFFIX = ".input.json"
CASE_KEYS = {
    "doc", "request", "options", "expect_request", "expect_error", "expect_notes",
    "response", "requested_model", "expect_result", "expect_response_error", "expect_result_notes",
}  # fmt: skip


def fixtures_dir() -> Path:
    """The shipped fixtures: inside the installed package, or the repo's fixtures/."""
    packaged = Path(str(resources.files("toolnexus"))) / "fixtures"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "fixtures"


@dataclass
class Outcome:
    """One golden fixture or case, and what went wrong with it (nothing when it passed)."""

    name: str
    problems: list[str] = field(default_factory=list)
    file: str = ""  # the fixture or case file, as a user can open it

    @property
    def ok(self) -> bool:
        return not self.problems


def _diff(expected: Any, actual: Any) -> str:
    diff = DeepDiff(expected, actual, ignore_order=False, verbose_level=2)
    return diff.pretty() if diff else ""


# ---------------------------------------------------------------- golden fixtures


def golden_files(directory: Path | None = None) -> list[Path]:
    return sorted((directory or fixtures_dir()).glob(f"*{GOLDEN_SUFFIX}"))


def build_golden(spec: dict[str, Any], base: Path, rules: RulesArg = None) -> dict[str, Any]:
    """Translate a golden input (its request file is beside it) and pick the agreed keys out."""
    provider = spec["provider"]
    request = json.loads((base / spec["request"]).read_text(encoding="utf-8"))
    body = translate_request(provider, request, rules=rules)
    out: dict[str, Any] = {name: body.get(key) for name, key in spec["request_parts"].items()}
    for name, response in spec.get("finish_reasons", {}).items():
        out[name] = translate_response(provider, response, rules=rules).finish_reason
    return out


def golden_text(value: Any) -> str:
    """The agreed serialization: key-sorted, indent 1, trailing newline."""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def check_golden(path: Path, rules: RulesArg = None) -> Outcome:
    outcome = Outcome(path.name, file=shown(path))
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
        expected_path = path.with_name(spec["expected"])
        outcome.name = expected_path.name
        expected_text = expected_path.read_text(encoding="utf-8")
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a user's golden file that cannot be read
        outcome.problems.append(f"cannot read the golden fixture: {type(exc).__name__}: {exc}")
        return outcome
    try:
        actual = build_golden(spec, path.parent, rules)
    except errors.ToolnexusError as exc:
        outcome.problems.append(f"translation failed: {exc}")
        return outcome
    diff = _diff(json.loads(expected_text), actual)
    if diff:
        outcome.problems.append(diff)
    elif golden_text(actual) != expected_text:
        outcome.problems.append("same values, but the serialization differs from the agreed bytes")
    return outcome


# ---------------------------------------------------------------- case tables


def shown(path: Path) -> str:
    """A path as a user can open it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def case_files(directory: Path | None = None) -> dict[str, list[Path]]:
    """Case files by provider directory name."""
    base = directory or fixtures_dir()
    return {d.name: sorted(d.glob("*.yaml")) for d in sorted(base.iterdir()) if d.is_dir()}


def load_case(path: Path) -> dict[str, Any]:
    """A case file's data; a broken one raises RuleError at its file:line:column, like a rule file."""
    source = parse_rule_text(path.read_text(encoding="utf-8"), shown(path))
    case = source.data
    if not isinstance(case, dict):
        raise source.error((), "a case file holds a mapping")
    for key in case:
        if key not in CASE_KEYS:
            raise source.error((key,), f"unknown case key '{key}'{did_you_mean(key, CASE_KEYS)}")
    if not ({"request", "response"} & set(case)):
        raise source.error((), "a case needs a request or a response")
    if "request" in case and not ({"expect_request", "expect_error"} & set(case)):
        raise source.error(("request",), "a request needs expect_request or expect_error")
    if "response" in case and not ({"expect_result", "expect_response_error"} & set(case)):
        raise source.error(("response",), "a response needs expect_result or expect_response_error")
    return case


def _expect_error(kind_and_path: dict[str, str], exc: errors.ToolnexusError | None, what: str) -> list[str]:
    if exc is None:
        return [f"{what}: expected {kind_and_path['kind']} at {kind_and_path.get('path')!r}, but it translated"]
    actual = {"kind": type(exc).__name__, "path": getattr(exc, "path", None)}
    expected = {"kind": kind_and_path["kind"], "path": kind_and_path.get("path")}
    return [] if actual == expected else [f"{what}: expected error {expected}, got {actual} ({exc})"]


def _notes(notes: tuple[errors.Note, ...]) -> list[dict[str, str]]:
    return [{"kind": n.kind, "path": n.path} for n in notes]


def run_case(provider: str, path: Path, rules: RulesArg = None) -> Outcome:
    outcome = Outcome(f"{provider}/{path.stem}", file=shown(path))
    try:
        case = load_case(path)
    except (errors.RuleError, OSError, UnicodeDecodeError) as exc:
        outcome.problems.append(str(exc))
        return outcome
    if "request" in case:
        outcome.problems += _run_request(provider, case, rules)
    if "response" in case:
        outcome.problems += _run_response(provider, case, rules)
    return outcome


def _run_request(provider: str, case: dict[str, Any], rules: RulesArg) -> list[str]:
    try:
        body = translate_request(provider, case["request"], rules=rules, **case.get("options", {}))
    except errors.TranslationError as exc:
        if "expect_error" in case:
            return _expect_error(case["expect_error"], exc, "request")
        return [f"request: unexpected {type(exc).__name__}: {exc}"]
    if "expect_error" in case:
        return _expect_error(case["expect_error"], None, "request")
    problems = []
    diff = _diff(case["expect_request"], dict(body))
    if diff:
        problems.append(f"request body differs:\n{diff}")
    if "expect_notes" in case and _notes(body.notes) != case["expect_notes"]:
        problems.append(f"request notes: expected {case['expect_notes']}, got {_notes(body.notes)}")
    return problems


def _run_response(provider: str, case: dict[str, Any], rules: RulesArg) -> list[str]:
    try:
        result = translate_response(
            provider, case["response"], requested_model=case.get("requested_model"), rules=rules
        )
    except (errors.TranslationError, errors.ProviderError) as exc:  # ProviderError: an error body
        if "expect_response_error" in case:
            return _expect_error(case["expect_response_error"], exc, "response")
        return [f"response: unexpected {type(exc).__name__}: {exc}"]
    if "expect_response_error" in case:
        return _expect_error(case["expect_response_error"], None, "response")
    problems = []
    actual = result.to_dict()
    actual.pop("notes")
    diff = _diff(case["expect_result"], actual)
    if diff:
        problems.append(f"result differs:\n{diff}")
    if result.raw is not case["response"]:
        problems.append("result.raw is not the provider response as given")
    if "expect_result_notes" in case and _notes(result.notes) != case["expect_result_notes"]:
        problems.append(f"result notes: expected {case['expect_result_notes']}, got {_notes(result.notes)}")
    broken = [str(n) for n in result.notes if n.kind == "inconsistent"]
    if broken and "expect_result_notes" not in case:  # the rules' usage must keep the invariants
        problems.append(f"the result's usage breaks the invariants: {'; '.join(broken)}")
    return problems


# ---------------------------------------------------------------- the whole check


def run_check(rules: RulesArg = None) -> Iterator[Outcome]:
    """Load every rule file, then every golden fixture and case. Yields outcomes.

    Cases come from the shipped fixtures/ and, for a user rules directory, from
    its own `fixtures/` (so a provider added there can carry its cases). A user's
    golden fixture or case with the name of a shipped one replaces it, so a
    changed mapping can carry the expectations it changes.
    """
    book: Rulebook = load_rules(rules)  # raises RuleError on a broken rule file
    user = Path(rules) / "fixtures" if isinstance(rules, (str, Path)) else None
    if user is not None and not user.is_dir():
        user = None
    golden = {p.name: p for p in golden_files()}
    cases = {provider: {p.name: p for p in files} for provider, files in case_files().items()}
    if user is not None:
        golden.update({p.name: p for p in golden_files(user)})
        for provider, mine in case_files(user).items():
            cases.setdefault(provider, {}).update({p.name: p for p in mine})
    for name in sorted(golden):
        yield check_golden(golden[name], book)
    for provider in book.names():
        by_name = cases.get(provider, {})
        if not by_name:
            yield Outcome(f"{provider}/*", [f"provider '{provider}' has no cases in fixtures/{provider}/"])
        for case_name in sorted(by_name):
            yield run_case(provider, by_name[case_name], book)
