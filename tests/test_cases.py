"""The case tables in fixtures/cases/<concern>.yaml, run through toolnexus.devtools.conformance.

One concern per file, a column per provider; a case is added by adding a file or
a column, not Python. These tests also check that every concern covers every
provider (an expectation or a skip with its reason), that translating never
mutates the caller's input, and that each canned provider response is a
response the provider's own SDK accepts (so the cases stay realistic).
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import pydantic
import pytest

import toolnexus
from support.judges import SDK_VALIDATORS
from toolnexus import ProviderError, TranslationError, translate_request, translate_response
from toolnexus.devtools.conformance import Case, concern_files, lineage, load_concern, parents_of, run_case

CONCERNS = {path.stem: load_concern(path) for path in concern_files()}
ALL_CASES: list[Case] = [case for columns in CONCERNS.values() for case in columns.values() if case.skip is None]
RESPONSE_CASES = [case for case in ALL_CASES if "response" in case.data]


def _ids(cases: list[Case]) -> list[str]:
    return [case.name for case in cases]


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_case(case: Case) -> None:
    outcome = run_case(case)
    problems = "\n\n".join(outcome.problems)
    assert outcome.ok, f"{outcome.name} ({case.file}):\n{problems}"


def test_cases_exist() -> None:
    assert ALL_CASES, "no concern files found under fixtures/cases/"


def gaps(columns: dict[str, Case]) -> tuple[list[str], list[str]]:
    """(built-in providers without a column, columns for providers without rules)."""
    providers = set(toolnexus.providers())
    return sorted(providers - set(columns)), sorted(set(columns) - providers)


@pytest.mark.parametrize("concern", sorted(CONCERNS))
def test_every_concern_covers_every_provider(concern: str) -> None:
    """Each provider the built-in rules define has an expectation or a skip with a reason: gaps show."""
    missing, unknown = gaps(CONCERNS[concern])
    assert not missing, f"fixtures/cases/{concern}.yaml has no column for {missing} (an expectation, or skip: <reason>)"
    assert not unknown, f"fixtures/cases/{concern}.yaml has columns for providers without rules: {unknown}"


def test_a_concern_without_a_providers_column_shows_the_gap(tmp_path: Path) -> None:
    concern = tmp_path / "one-column.yaml"
    concern.write_text("doc: x\nrequest: {model: m, messages: []}\nproviders:\n  openai: {skip: a reason}\n")
    missing, unknown = gaps(load_concern(concern))
    parents = parents_of(toolnexus.load_rules())
    openai_family = {name for name in toolnexus.providers() if "openai" in lineage(name, parents)}
    assert missing == sorted(set(toolnexus.providers()) - openai_family) and missing and not unknown


@pytest.mark.parametrize("provider", toolnexus.providers())
def test_every_provider_has_cases(provider: str) -> None:
    assert any(case.provider == provider for case in ALL_CASES), f"provider '{provider}' has no case to run"


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types and key order (== alone treats True as 1)."""
    return a == b and repr(a) == repr(b)


@pytest.mark.parametrize("column", ALL_CASES, ids=_ids(ALL_CASES))
def test_inputs_not_mutated(column: Case) -> None:
    provider, case = column.provider, column.data
    if "request" in case:
        request = case["request"]
        before = copy.deepcopy(request)
        with contextlib.suppress(TranslationError):
            translate_request(provider, request, **case.get("options", {}))
        assert _same(request, before), "translate_request mutated the request"
    if "response" in case:
        response = case["response"]
        before = copy.deepcopy(response)
        try:
            result = translate_response(provider, response, requested_model=case.get("requested_model"))
        except (TranslationError, ProviderError):  # ProviderError: an error body
            pass
        else:
            assert result.raw is response, "result.raw is not the response as given"
        assert _same(response, before), "translate_response mutated the response"


# ---------------------------------------------------------------- canned responses are real


# google-genai: pydantic models (extra="forbid") that accept the REST camelCase keys. Enum fields only warn
# on an unknown value, so warnings are errors; lax validation coerces, so the dump must give the response back.


def _off_spec(case: dict[str, Any]) -> bool:
    """A response that is off the provider's documented shape on purpose.

    Such a case expects a ResponseError, or notes (an unknown block or stop
    reason, a synthesized finish reason), or tests the requested-model fallback
    with a response that names no model. Its response may fail SDK validation.
    """
    return (
        "expect_response_error" in case
        or bool(case.get("expect_result_notes"))
        or ("requested_model" in case and "model" not in case["response"])
    )


@pytest.mark.parametrize("column", RESPONSE_CASES, ids=_ids(RESPONSE_CASES))
def test_canned_response_is_valid_for_the_sdk(column: Case) -> None:
    provider, case = column.provider, column.data
    validate = SDK_VALIDATORS.get(provider)
    if validate is None:
        pytest.skip(f"no SDK validator for {provider}")
    try:
        validate(copy.deepcopy(case["response"]))
    except (pydantic.ValidationError, UserWarning, AssertionError) as exc:  # Gemini: an unknown enum value warns
        if _off_spec(case):
            pytest.skip(f"deliberately off-spec response: {str(exc).splitlines()[0]}")
        name = column.name
        raise AssertionError(f"{name}: the canned response is not a valid {provider} response:\n{exc}") from None
