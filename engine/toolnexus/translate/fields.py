"""The OpenAI request's field types (data: openai_request.schema.json), and a provider's ranges.

The types are knowledge of the input format, so they are declared once, as a JSON Schema
shipped with the package, and checked for every provider before any rule reads a field:
a `max_tokens` of "100", 1e30 or true never reaches a body. What a provider accepts
beyond the type (Anthropic's temperature stops at 1) is its rule file's `request.ranges`,
compiled here; a value outside is refused, naming the range and where the rule file
declares it. Nothing is ever clamped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema

from ..errors import TranslationError
from ..language.loader import RuleSource, did_you_mean
from .format_rules import builtin_normal_form

_SCHEMA: dict[str, Any] = json.loads(
    resources.files("toolnexus.translate").joinpath("openai_request.schema.json").read_text(encoding="utf-8")
)
# JSON has one number type, but a token count is whole: 1.0 and true are not integers on the wire;
# and NaN or Infinity is no JSON number at all.
_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
    {
        "integer": lambda _checker, v: type(v) is int,
        "number": lambda _checker, v: type(v) is int or (type(v) is float and math.isfinite(v)),
    }
)
_VALIDATOR = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, type_checker=_TYPES
)(_SCHEMA)
FIELDS: frozenset[str] = frozenset(_SCHEMA["properties"])
# Every top-level field of the request, as the normal form's file (formats/openai.yaml) names them: the
# typed ones above and those the reader checks itself (the transcript, the tools, the choice among them, the
# legacy function-calling pair). A rule file's request side may name only these, so a misspelt `temprature`
# is refused at load.
OPENAI_REQUEST_FIELDS = builtin_normal_form().fields
# OpenAI reads a max_tokens of 0, like null, as "not given" (so no range applies to it).
ZERO_MEANS_ABSENT = frozenset({"max_tokens", "max_completion_tokens"})
_HASHABLE = (str, int, float, bool)


@dataclass(frozen=True)
class Range:
    """A provider's documented range for a numeric request field (both ends inclusive)."""

    minimum: float | None
    maximum: float | None
    where: str  # the rule file and line that declares it

    def holds(self, value: float) -> bool:
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)

    def text(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return f"between {self.minimum:g} and {self.maximum:g}"
        return f"at least {self.minimum:g}" if self.minimum is not None else f"at most {self.maximum:g}"


def read_fields(
    request: dict[str, Any], ranges: Mapping[str, Range], mapped: frozenset[str], provider: str
) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The request's fields checked and split in one pass: (those the rules map, the others in request order).

    A field of the wrong type, or outside the provider's range, is refused here, before the caller settles any
    of the others (so a type error comes first, whatever the order of the fields). Null, and a max_tokens of 0,
    mean not given: such a field is in neither."""
    scope: dict[str, Any] = {}
    others: list[tuple[str, Any]] = []
    for name, value in request.items():
        if value is None:
            continue
        kind = type(value)
        if name in FIELDS:
            if kind in _HASHABLE:  # the verdict is kept by value: a list of strings (a stop list) as their
                key = value  # tuple, another list or an object by its JSON text
            elif kind is list and _strings(value):
                key = tuple(value)
            else:
                key = json.dumps(value, sort_keys=True)
            problem = _VERDICTS.get((name, kind, key), _UNKNOWN)  # `_cached_problem`'s common case, inline
            if problem is _UNKNOWN:
                problem = _cached_problem(name, kind, key, value)
            if problem is not None:
                raise TranslationError(*problem, provider=provider)  # type: ignore[misc]
            if name in ZERO_MEANS_ABSENT and value == 0:
                continue
            limits = ranges.get(name)
            if limits is not None and not limits.holds(value):
                message = f"must be {limits.text()} for {provider} ({limits.where})"
                raise TranslationError(name, message, provider=provider)
        if name in mapped:
            scope[name] = value
        else:
            others.append((name, value))
    return scope, others


def _strings(items: list[Any]) -> bool:
    """Whether every item is a str (a loop: all() over a generator costs twice as much, on every stop list)."""
    for item in items:  # noqa: SIM110
        if type(item) is not str:
            return False
    return True


def _cached_problem(name: str, kind: type, key: Any, value: Any) -> tuple[str, str] | None:
    """Most requests repeat their values (a model, a temperature, a stop list), so verdicts are kept."""
    found = _VERDICTS.get((name, kind, key), _UNKNOWN)
    if found is _UNKNOWN:
        found = _problem(name, value)
        if len(_VERDICTS) >= 1024:
            _VERDICTS.clear()
        _VERDICTS[name, kind, key] = found
    return found  # type: ignore[return-value]


_UNKNOWN = object()
_VERDICTS: dict[tuple[str, type, Any], object] = {}


def _problem(name: str, value: Any) -> tuple[str, str] | None:
    """(path, message) of the first schema error for one field, or None."""
    error = next(_VALIDATOR.iter_errors({name: value}), None)
    if error is None:
        return None
    path = ""
    for step in error.absolute_path:
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else str(step))
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = next(key for key in error.validator_value if key not in error.instance)
        return f"{path}.{missing}", "is required"
    schema = error.schema if isinstance(error.schema, dict) else {}
    wanted = schema.get("description")
    message = f"must be {wanted}" if wanted else error.message[:200]
    return path, f"{message}, got {_shown(error.instance)}"


def _shown(value: Any) -> str:
    """A short picture of a JSON value for an error (never the whole of a large one)."""
    if isinstance(value, (dict, list)):
        kind = "object" if isinstance(value, dict) else "list"
        return f"an empty {kind}" if not value else f"an {kind}" if kind == "object" else "a list"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def compile_ranges(source: RuleSource) -> dict[str, Range]:
    """`request.ranges` of a rule file; only numeric fields of the OpenAI request can have one."""
    out: dict[str, Range] = {}
    for name, spec in source.data["request"].get("ranges", {}).items():
        key = ("request", "ranges", name)
        if _kind(name) not in ("number", "integer"):
            numeric = [field for field in sorted(FIELDS) if _kind(field) in ("number", "integer")]
            hint = did_you_mean(name, numeric)
            raise source.error(key, f"'{name}' is not a numeric OpenAI request field{hint}; ranges apply to numbers")
        low, high = spec.get("minimum"), spec.get("maximum")
        if low is not None and high is not None and low > high:
            raise source.error(key, f"minimum {low} is above maximum {high}")
        file, line, _ = source.locate(key)
        out[name] = Range(low, high, f"{file}:{line} request.ranges.{name}" if line else file)
    return out


def _kind(name: str) -> str | None:
    spec = _SCHEMA["properties"].get(name, {})
    ref = spec.get("$ref", "")
    if ref.startswith("#/$defs/"):
        spec = _SCHEMA["$defs"][ref.removeprefix("#/$defs/")]
    kind = spec.get("type")
    return kind if isinstance(kind, str) else None
