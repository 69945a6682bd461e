"""Damage one place of a value at a time: the fuzzing helpers the request, answer and stream tests share."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import toolnexus


def places(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place inside a value (as keys and indexes), outermost first."""
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from places(item, (*path, key))


# One damage per place, in turn: a wrong type, null, text JSON cannot hold, a number JSON cannot say, absent,
# an empty list, an object.
DAMAGE: list[Any] = [7, None, "\ud800", math.nan, KeyError, [], {"x": 1}]


def damaged(value: Any, path: tuple[Any, ...], harm: Any) -> Any:
    """A deep copy of `value` with the place at `path` replaced by `harm` (`KeyError`: removed)."""
    out = copy.deepcopy(value)
    holder = out
    for step in path[:-1]:
        holder = holder[step]
    if harm is KeyError:
        del holder[path[-1]]
    else:
        holder[path[-1]] = harm
    return out


def damaged_one_at_a_time(value: Any, turn: int = 0) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """(place, harm, damaged value) for every place below the top, the harms taken in turn from DAMAGE
    starting at `turn` (so successive values meet every harm at every depth without running all of them)."""
    for n, path in enumerate(list(places(value))[1:]):
        harm = DAMAGE[(n + turn) % len(DAMAGE)]
        yield path, harm, damaged(value, path, harm)


def source_formats() -> list[str]:
    """Every source format the rules hold besides the normal form: a new format file joins by itself."""
    return [name for name in toolnexus.load_rules().formats() if name != "openai"]


_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def names_a_place(value: Any, path: str) -> bool:
    """`path` (`input[3].arguments.city`) names a place of `value`: every step but the last is there (the last
    may be what is missing), a JSON text read as the value it spells. A path of another shape (the normal
    form's `messages[3].tool_calls[0]` for a Responses request) fails."""
    steps: list[str | int] = []
    at = 0
    while at < len(path):
        match = _STEP.match(path, at)
        if match is None:
            return False
        steps.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        at = match.end()
    for step in steps[:-1]:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return False
        holds = isinstance(value, list) and isinstance(step, int) and step < len(value)
        if not (holds or (isinstance(value, dict) and step in value)):
            return False
        value = value[step]
    return True
