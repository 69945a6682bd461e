"""Translating a request stays linear in its size when every part earns a note.

A note names the part it is about (`messages[0].content[3999].image_url.detail`);
finding that index by searching the message once per note made a message of many
noted parts quadratic. These tests double the size and bound the growth of the
best-of-3 time: a growth ratio, never an absolute timing.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import pytest

import toolnexus

PROVIDERS = toolnexus.providers()


def images_with_detail(n: int) -> dict[str, Any]:
    """One user message of n image parts, each with a detail most providers have no place for."""
    image = {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "high"}}
    content = [{**image} for _ in range(n)]  # n distinct part objects
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def calls_with_odd_ids(n: int) -> dict[str, Any]:
    """One assistant message of n tool calls whose ids some providers do not accept as they are."""
    calls = [{"id": f"call.{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for k in range(n)]
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}],
    }


def best_of_3(provider: str, request: dict[str, Any]) -> float:
    """The best of three runs, with the cyclic garbage collector paused (its passes are noise here)."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            started = time.perf_counter()
            toolnexus.translate_request(provider, request)
            best = min(best, time.perf_counter() - started)
    finally:
        gc.enable()
    return best


@pytest.mark.parametrize("shape", [images_with_detail, calls_with_odd_ids], ids=lambda f: f.__name__)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_doubling_the_noted_parts_at_most_about_doubles_the_time(
    provider: str, shape: Callable[[int], dict[str, Any]]
) -> None:
    small, large = shape(4000), shape(8000)
    toolnexus.translate_request(provider, small)  # warm the rules cache
    ratio = best_of_3(provider, large) / best_of_3(provider, small)
    assert ratio < 3, f"{provider}: 4,000 -> 8,000 parts took {ratio:.1f}x as long"


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_each_noted_part_is_named_by_its_own_index(provider: str) -> None:
    notes = toolnexus.translate_request(provider, images_with_detail(50)).notes
    paths = [n.path for n in notes if n.path.endswith(".detail")]
    assert paths == [f"messages[0].content[{j}].image_url.detail" for j in range(50)]


def test_each_rewritten_id_is_named_by_its_call_index() -> None:
    notes = toolnexus.translate_request("anthropic", calls_with_odd_ids(50)).notes
    paths = [n.path for n in notes if n.kind == "rewritten"]
    assert paths == [f"messages[1].tool_calls[{k}].id" for k in range(50)]
