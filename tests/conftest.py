"""Shared pytest setup for the suite.

Test modules import shared material from `tests/support/` (strategies, fault
stubs, SDK judges, case-table helpers, the SSE encoders) and never from each
other; tests/test_suite_layout.py holds that. `-m "not slow"` deselects the
tests marked `slow` (declared in pyproject.toml) for a quicker local run; CI
runs everything. Every hypothesis test is `slow` (each runs the example budget,
1-5 s at the default), besides the tests marked by hand (wheel, soak, 40 MB,
slow drip, stream memory).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # `import support` from any test module, whatever the rootdir
    sys.path.insert(0, str(TESTS))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Hypothesis tests run many examples each: they are `slow`, so a local `-m "not slow"` run skips them."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)
