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
from toolnexus.language.ids import encode

PROVIDERS = toolnexus.providers()


def images_with_detail(n: int) -> dict[str, Any]:
    """One user message of n image parts, each with a detail most providers have no place for."""
    # A data URL: every provider takes one (Converse takes no image URL).
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}}
    content = [{**image} for _ in range(n)]  # n distinct part objects
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


PNG = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def inline_images_with_detail(n: int) -> dict[str, Any]:
    """The same with inline (data URL) images, which every provider takes (Ollama takes no image URL)."""
    content = [{"type": "image_url", "image_url": {"url": PNG, "detail": "high"}} for _ in range(n)]
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def calls_with_odd_ids(n: int) -> dict[str, Any]:
    """One assistant message of n tool calls whose ids some providers do not accept as they are."""
    calls = [{"id": f"call.{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for k in range(n)]
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}],
    }


def growth(provider: str, small: Any, large: Any, translate: Callable[..., Any] = toolnexus.translate_request) -> float:
    """How much longer `large` takes than `small`: best-of-3 times, measured in turns (a burst of load on
    the machine hits both) with the cyclic garbage collector paused. The times are this thread's CPU time,
    not the wall clock: while other processes hold the cores the thread is not running and its clock stands
    still. What load still does (caches, a shared core) only ever inflates a ratio, so a measurement above
    the bound is taken again (twice at most) and the lowest kept: quadratic work stays near 4x however
    often it is measured."""
    translate(provider, small)  # warm the rules cache
    lowest = float("inf")
    for _ in range(3):
        best = [float("inf"), float("inf")]
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):
                for which, data in enumerate((small, large)):
                    started = time.thread_time()
                    translate(provider, data)
                    best[which] = min(best[which], time.thread_time() - started)
        finally:
            gc.enable()
        lowest = min(lowest, best[1] / best[0])
        if lowest < BOUND:
            break
    return lowest


BOUND = 3  # doubling the input may at most about double the time


@pytest.mark.parametrize(
    "shape", [images_with_detail, inline_images_with_detail, calls_with_odd_ids], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_doubling_the_noted_parts_at_most_about_doubles_the_time(
    provider: str, shape: Callable[[int], dict[str, Any]]
) -> None:
    try:
        toolnexus.translate_request(provider, shape(1))
    except toolnexus.TranslationError as exc:
        pytest.skip(f"{provider} refuses this shape on purpose: {exc}")
    ratio = growth(provider, shape(4000), shape(8000))
    assert ratio < BOUND, f"{provider}: 4,000 -> 8,000 parts took {ratio:.1f}x as long"


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_each_noted_part_is_named_by_its_own_index(provider: str) -> None:
    notes = toolnexus.translate_request(provider, images_with_detail(50)).notes
    paths = [n.path for n in notes if n.path.endswith(".detail")]
    assert paths == [f"messages[0].content[{j}].image_url.detail" for j in range(50)]


def test_each_rewritten_id_is_named_by_its_call_index() -> None:
    notes = toolnexus.translate_request("anthropic", calls_with_odd_ids(50)).notes
    paths = [n.path for n in notes if n.kind == "rewritten"]
    assert paths == [f"messages[1].tool_calls[{k}].id" for k in range(50)]


def anthropic_answer(n: int) -> dict[str, Any]:
    """An answer of n tool calls whose ids were encoded on the way in (each restored, noted) and n unknown blocks."""
    blocks: list[dict[str, Any]] = []
    for k in range(n):
        blocks.append({"type": "tool_use", "id": encode(f"call.{k}"), "name": "f", "input": {}})
        blocks.append({"type": "mystery", "k": k})
    usage = {"input_tokens": 1, "output_tokens": 1}
    return {"role": "assistant", "model": "c", "content": blocks, "stop_reason": "tool_use", "usage": usage}


def test_doubling_the_noted_items_of_an_answer_at_most_about_doubles_the_time() -> None:
    small, large = anthropic_answer(2000), anthropic_answer(4000)
    assert len(toolnexus.translate_response("anthropic", small).notes) == 4000
    ratio = growth("anthropic", small, large, toolnexus.translate_response)
    assert ratio < BOUND, f"2,000 -> 4,000 noted calls took {ratio:.1f}x as long"
