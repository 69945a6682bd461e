"""The shipped case tables (fixtures/cases/*.yaml) as the columns the tests run."""

from __future__ import annotations

from toolnexus.devtools.conformance import Case, load_cases

CASES: list[Case] = [case for case in load_cases() if case.skip is None]  # every column with an expectation


def case_ids(cases: list[Case]) -> list[str]:
    """`provider/concern`, the name `toolnexus check` prints."""
    return [case.name for case in cases]
