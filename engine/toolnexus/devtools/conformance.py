"""The conformance check: golden fixtures and case tables, diffed with deepdiff.

Two kinds of data files drive it, both shipped with the package:

- golden fixtures, `fixtures/*.input.json`: an OpenAI request and provider
  responses whose translation, picked into named keys, must equal an agreed
  output file byte for byte (key-sorted JSON, indent 1);
- case tables, `fixtures/cases/<concern>.yaml`: one concern each, with one
  OpenAI request and, per provider, the expected provider body (or an expected
  error kind and path), and/or that provider's response and the expected
  OpenAI-shaped result, and/or a provider event `stream` and what it translates to;
  or `skip:` and the reason the provider has no counterpart.

`toolnexus check` and the test suite run the same code, so a case is added by
adding a file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from deepdiff import DeepDiff

from .. import errors
from ..api import stream_translator, translate_request, translate_response
from ..language.loader import did_you_mean, parse_rule_text
from ..translate.result import TranslateResult
from ..translate.rulebook import Rulebook, RulesArg, lineage, load_rules
from ..translate.rulebook import parents_of as providers_parents

GOLDEN_SUFFIX = ".input.json"


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

CONCERN_KEYS = {"doc", "request", "options", "providers"}
REQUEST_EXPECT = {"expect_request", "expect_error", "expect_notes"}
RESPONSE_KEYS = {"response", "requested_model", "expect_result", "expect_response_error", "expect_result_notes"}
STREAM_KEYS = {"stream", "expect_chunk_header"}  # a provider event stream, and the id/created/model of every chunk
ANSWERS = ("response", "stream")
COLUMN_KEYS = {"doc", "skip", "with"} | REQUEST_EXPECT | RESPONSE_KEYS | STREAM_KEYS
CASES_DIR = "cases"


def shown(path: Path) -> str:
    """A path as a user can open it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Case:
    """One provider's column of a concern: what to translate and what must come out, or why not.

    `data` holds the column in the shape `run_case` runs: `request` (the concern's
    shared OpenAI input with the column's `with:` fields set), `options`, the
    `expect_*` values, and the provider `response` with its expectations.
    """

    concern: str
    provider: str
    file: Path
    data: dict[str, Any]
    skip: str | None = None
    inherited_from: str | None = None  # the parent provider whose column this variant runs

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.concern}" + (f" ({self.inherited_from}'s column)" if self.inherited_from else "")


def concern_files(directory: Path | None = None) -> list[Path]:
    """The concern files of a fixtures directory (the shipped one by default)."""
    return sorted(((directory or fixtures_dir()) / CASES_DIR).glob("*.yaml"))


def _check_keys(source: Any, where: tuple[Any, ...], data: Any, allowed: set[str], what: str) -> None:
    if not isinstance(data, dict):
        raise source.error(where, f"{what} is a mapping")
    for key in data:
        if key not in allowed:
            raise source.error((*where, key), f"unknown {what} key '{key}'{did_you_mean(str(key), allowed)}")


def parents_of(book: Rulebook) -> dict[str, str]:
    """Each provider whose rule file `extends:` another, and that parent."""
    return providers_parents(book.providers)


def demo_file(provider: str, suffix: str = ".json", rules: RulesArg = None) -> Path:
    """`fixtures/demo/<provider><suffix>`, or for a variant without one its nearest ancestor's
    (a variant answers in its parent's shape until it says otherwise); the provider's own path when none exists."""
    demo = fixtures_dir() / "demo"
    found = [demo / f"{name}{suffix}" for name in lineage(provider, parents_of(load_rules(rules)))]
    return next((path for path in found if path.exists()), found[0])


def inherit_columns(cases: dict[str, Case], parents: Mapping[str, str]) -> dict[str, Case]:
    """A variant without a column of its own takes its nearest ancestor's column, run against the variant.

    So a variant is held to its parent's expectations until its concern file writes a column where it differs.
    """
    out = dict(cases)
    for name in parents:
        ancestor = next((a for a in lineage(name, parents) if a in cases), None)
        if ancestor is not None and ancestor != name:
            column = cases[ancestor]
            out[name] = Case(column.concern, name, column.file, column.data, column.skip, ancestor)
    return out


def load_concern(path: Path, parents: Mapping[str, str] | None = None) -> dict[str, Case]:
    """A concern file's columns by provider, variants without a column taking their parent's (`parents`:
    variant -> parent, by default the built-in rules'); a mistake raises RuleError at its file:line:column."""
    return inherit_columns(_own_columns(path), parents_of(load_rules()) if parents is None else parents)


def _own_columns(path: Path) -> dict[str, Case]:
    source = parse_rule_text(path.read_text(encoding="utf-8"), shown(path))
    concern = source.data
    _check_keys(source, (), concern, CONCERN_KEYS, "concern")
    columns = concern.get("providers")
    if not isinstance(columns, dict) or not columns:
        raise source.error(("providers",), "a concern needs providers: a column per provider")
    request = concern.get("request")
    if request is not None and not isinstance(request, dict):
        raise source.error(("request",), "request is an OpenAI request object")
    cases = {}
    for provider, column in columns.items():
        where = ("providers", provider)
        _check_keys(source, where, column, COLUMN_KEYS, "column")
        if "skip" in column:
            if not isinstance(column["skip"], str) or not column["skip"].strip() or set(column) - {"skip", "doc"}:
                raise source.error((*where, "skip"), "skip is the reason this provider has no counterpart, alone")
            cases[provider] = Case(path.stem, provider, path, {}, column["skip"])
            continue
        data = {"doc": column.get("doc", concern.get("doc"))}
        if request is not None:
            if not ({"expect_request", "expect_error"} & set(column)):
                raise source.error(where, "a concern with a request needs expect_request or expect_error")
            mine = column.get("with", {})
            if not isinstance(mine, dict):
                raise source.error((*where, "with"), "with is a mapping of request fields")
            data["request"] = {**request, **mine}
            if "options" in concern:
                data["options"] = concern["options"]
        elif REQUEST_EXPECT & set(column) or "with" in column:
            raise source.error(where, "request expectations need the concern's request")
        answer = next((k for k in ANSWERS if k in column), None)
        if answer and not ({"expect_result", "expect_response_error"} & set(column)):
            raise source.error((*where, answer), f"a {answer} needs expect_result or expect_response_error")
        if answer is None and (RESPONSE_KEYS | STREAM_KEYS) & set(column):
            raise source.error(where, "response expectations need a response or a stream")
        if "stream" in column and not isinstance(column["stream"], list):
            raise source.error((*where, "stream"), "stream is a list of events (objects, or strings sent as they are)")
        if "expect_chunk_header" in column and "stream" not in column:
            raise source.error((*where, "expect_chunk_header"), "expect_chunk_header needs a stream")
        if request is None and answer is None:
            raise source.error(where, "a column needs a response or a stream when the concern has no request")
        data.update({k: v for k, v in column.items() if k not in ("doc", "with")})
        cases[provider] = Case(path.stem, provider, path, data)
    return cases


def load_cases(directory: Path | None = None) -> list[Case]:
    """Every column of every concern in a fixtures directory, skips and inherited columns included."""
    parents = parents_of(load_rules())
    return [case for path in concern_files(directory) for case in load_concern(path, parents).values()]


def _expect_error(kind_and_path: dict[str, str], exc: errors.ToolnexusError | None, what: str) -> list[str]:
    if exc is None:
        return [f"{what}: expected {kind_and_path['kind']} at {kind_and_path.get('path')!r}, but it translated"]
    actual = {"kind": type(exc).__name__, "path": getattr(exc, "path", None)}
    expected = {"kind": kind_and_path["kind"], "path": kind_and_path.get("path")}
    if "type" in kind_and_path:  # a provider's error: the type its body names
        actual["type"], expected["type"] = getattr(exc, "error_type", None), kind_and_path["type"]
    return [] if actual == expected else [f"{what}: expected error {expected}, got {actual} ({exc})"]


def _notes(notes: tuple[errors.Note, ...]) -> list[dict[str, str]]:
    return [{"kind": n.kind, "path": n.path} for n in notes]


def run_case(case: Case, rules: RulesArg = None) -> Outcome:
    """Translate one column and compare it with its expectations (a skipped column passes)."""
    outcome = Outcome(case.name, file=shown(case.file))
    if "request" in case.data:
        outcome.problems += _run_request(case.provider, case.data, rules)
    if "response" in case.data:
        outcome.problems += _run_response(case.provider, case.data, rules)
    if "stream" in case.data:
        outcome.problems += _run_stream(case.provider, case.data, rules)
    return outcome


def _load_outcomes(path: Path, parents: Mapping[str, str]) -> tuple[dict[str, Case], Outcome | None]:
    """A concern file's columns, or the outcome that reports why it cannot be read."""
    try:
        return load_concern(path, parents), None
    except (errors.RuleError, OSError, UnicodeDecodeError) as exc:
        return {}, Outcome(path.stem, [str(exc)], file=shown(path))


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
    problems = [] if result.raw is case["response"] else ["result.raw is not the provider response as given"]
    return problems + _check_result(result, case)


def _check_result(result: TranslateResult, case: dict[str, Any], what: str = "result") -> list[str]:
    problems = []
    actual = result.to_dict()
    actual.pop("notes")
    diff = _diff(case["expect_result"], actual)
    if diff:
        problems.append(f"{what} differs:\n{diff}")
    if "expect_result_notes" in case and _notes(result.notes) != case["expect_result_notes"]:
        problems.append(f"{what} notes: expected {case['expect_result_notes']}, got {_notes(result.notes)}")
    broken = [str(n) for n in result.notes if n.kind == "inconsistent"]
    if broken and "expect_result_notes" not in case:  # the rules' usage must keep the invariants
        problems.append(f"the {what}'s usage breaks the invariants: {'; '.join(broken)}")
    return problems


def _told(chunks: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """The text and tool calls the chunks' deltas add up to (a client reading them would have)."""
    text, calls = "", list[dict[str, Any]]()
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            for piece in delta.get("tool_calls", ()):
                if piece["index"] == len(calls):
                    calls.append({"id": piece["id"], "type": "function", "function": {**piece["function"]}})
                    calls[-1].update({k: v for k, v in piece.items() if k not in ("index", "id", "type", "function")})
                else:
                    calls[piece["index"]]["function"]["arguments"] += piece["function"]["arguments"]
    return text, calls


def _run_stream(provider: str, case: dict[str, Any], rules: RulesArg) -> list[str]:
    """The column's events fed one by one (an object as its JSON text), then the stream finished."""
    translator = stream_translator(provider, requested_model=case.get("requested_model"), rules=rules)
    chunks: list[dict[str, Any]] = []
    try:
        for event in case["stream"]:
            chunks += translator.feed(event if isinstance(event, str) else json.dumps(event))
        chunks += translator.finish()
    except (errors.TranslationError, errors.ProviderError) as exc:
        if "expect_response_error" in case:
            return _expect_error(case["expect_response_error"], exc, "stream")
        return [f"stream: unexpected {type(exc).__name__}: {exc}"]
    if "expect_response_error" in case:
        return _expect_error(case["expect_response_error"], None, "stream")
    assert translator.result is not None
    problems = _check_result(translator.result, case, "streamed result")
    if (told := _told(chunks)) != (translator.result.text, translator.result.tool_calls_json()):
        problems.append(f"the chunks tell {told}, not the streamed result")
    header = case.get("expect_chunk_header")
    if header is not None:
        wrong = [c for c in chunks if {k: c.get(k) for k in header} != header]
        if wrong:
            problems.append(f"{len(wrong)} of {len(chunks)} chunks differ from the header {header}: {wrong[0]}")
    return problems


# ---------------------------------------------------------------- the whole check


def run_check(rules: RulesArg = None) -> Iterator[Outcome]:
    """Load every rule file, then every golden fixture and case. Yields outcomes.

    Cases come from the shipped fixtures/cases/ and, for a user rules directory,
    from its own `fixtures/cases/` (so a provider added there can carry its
    cases). A user's golden fixture or concern file with the name of a shipped
    one replaces it, so a changed mapping can carry the expectations it changes.
    """
    book: Rulebook = load_rules(rules)  # raises RuleError on a broken rule file
    user = Path(rules) / "fixtures" if isinstance(rules, (str, Path)) else None
    if user is not None and not user.is_dir():
        user = None
    golden = {p.name: p for p in golden_files()}
    concerns = {p.name: p for p in concern_files()}
    if user is not None:
        golden.update({p.name: p for p in golden_files(user)})
        concerns.update({p.name: p for p in concern_files(user)})
    for name in sorted(golden):
        yield check_golden(golden[name], book)
    if user is not None:
        for stray in sorted(user.glob("*/*.yaml")):
            if stray.parent.name != CASES_DIR:
                yield Outcome(
                    stray.stem,
                    [f"case files live in fixtures/{CASES_DIR}/<concern>.yaml, a column per provider"],
                    file=shown(stray),
                )
    covered: set[str] = set()
    providers = book.names()
    parents = parents_of(book)
    for name in sorted(concerns):
        cases, broken = _load_outcomes(concerns[name], parents)
        if broken is not None:
            yield broken
        for provider, case in sorted(cases.items()):
            if provider not in providers:
                problem = f"no rule file for provider '{provider}'{did_you_mean(provider, providers)}"
                yield Outcome(case.name, [problem], file=shown(case.file))
            elif case.skip is None:
                covered.add(provider)
                yield run_case(case, book)
    for provider in providers:
        if provider not in covered:
            yield Outcome(f"{provider}/*", [f"provider '{provider}' has no cases in fixtures/{CASES_DIR}/"])
