"""Shared pytest setup for the suite.

Test modules import shared material from `tests/support/` (strategies, fault
stubs, SDK judges, case-table helpers, the SSE encoders) and never from each
other; tests/test_suite_layout.py holds that. `-m "not slow"` deselects the
tests marked `slow` (declared in pyproject.toml) for a quicker local run; CI
runs everything.
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # `import support` from any test module, whatever the rootdir
    sys.path.insert(0, str(TESTS))
