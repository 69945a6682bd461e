"""What the fused transcript's tests share (`tests/test_source_fused*.py`): one source request's outcome, the
format with today's route only, and a pair's fused function counting the transcripts it takes."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from toolnexus import ToolnexusError, load_rules
from toolnexus.translate.formats import SourceFormat, translate_source


def outcome(fmt: SourceFormat, provider: str, request: Any, rules: Any = None, **options: Any) -> tuple[Any, ...]:
    """The body and its notes, or the error (type, message, path), of one source request (`rules`: the rulebook
    the format was compiled against, when not the built-in one)."""
    inbound = load_rules(rules).get(provider).inbound
    try:
        body = translate_source(fmt, inbound, copy.deepcopy(request), **options)
    except ToolnexusError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "path", None))
    return ("body", dict(body), [tuple(n) for n in body.notes], dict(body.id_map))


def without_fused(fmt: SourceFormat) -> SourceFormat:
    """The format with no fused function: today's route only (the test-only switch)."""
    return replace(fmt, fused={})


def counted(fmt: SourceFormat, provider: str, hits: list[int]) -> SourceFormat:
    """The format with the pair's fused function counting each transcript it takes."""
    run = fmt.fused[provider]

    def counting(items: list[Any], system: Any) -> Any:
        written = run(items, system)
        hits.append(written is not None)
        return written

    return replace(fmt, fused={provider: counting})


OPTIONS = [{}, {"system": "per call"}, {"unknown_fields": "drop"}]  # the call options each request is compared under


def assert_todays(fmt: SourceFormat, provider: str, request: Any) -> None:
    """The request's outcome with the pair's fused function is today's, under each of `OPTIONS`."""
    for options in OPTIONS:
        hits: list[int] = []
        got = outcome(counted(fmt, provider, hits), provider, request, **options)
        assert got == outcome(without_fused(fmt), provider, request, **options), options
