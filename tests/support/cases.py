"""The shipped case tables (fixtures/cases/*.yaml) as the columns the tests run."""

from __future__ import annotations

import copy
from typing import Any

from toolnexus import ToolnexusError, translate_request
from toolnexus.devtools.conformance import Case, load_cases

CASES: list[Case] = [case for case in load_cases() if case.skip is None]  # every column with an expectation


def case_ids(cases: list[Case]) -> list[str]:
    """`provider/concern`, the name `toolnexus check` prints."""
    return [case.name for case in cases]


def request_cases(providers: list[str]) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(provider, case, request, options) for every column with a request, of the providers given."""
    return [
        (c.provider, c.name, c.data["request"], c.data.get("options", {}))
        for c in CASES
        if c.provider in providers and "request" in c.data
    ]


def request_outcome(provider: str, request: Any, options: dict[str, Any]) -> Any:
    """What a translation gives: the body and its notes, or the error's kind, path and message."""
    try:
        body = translate_request(provider, copy.deepcopy(request), **options)
    except ToolnexusError as exc:
        return (type(exc).__name__, getattr(exc, "path", None), str(exc))
    return (dict(body), body.notes)
