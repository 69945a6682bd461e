"""Read paths: JMESPath syntax, compiled once into a getter.

A plain chain (`usage.input_tokens`, `choices[0].message`, `@`) compiles to a
tuple walk that tells *absent* (MISSING) from *null* (None); anything richer
(filters, projections, pipes, `&&`/`||`, multi-selects) is compiled from jmespath's
parse tree into nested Python functions with jmespath's own semantics (a streamed
event is read per event: jmespath's tree interpreter costs several microseconds
each), where absent and null both read as MISSING; a node outside that set
(slices, `&expr` arguments) runs the whole expression on jmespath's interpreter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import jmespath
from jmespath.exceptions import JMESPathError, JMESPathTypeError, ParseError
from jmespath.functions import Functions
from jmespath.parser import ParsedResult
from jmespath.visitor import TreeInterpreter


class _Missing:
    """Absent, as opposed to null: an operation that yields it omits its key."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()

Getter = Callable[[Any], Any]


class PathSyntaxError(ValueError):
    """A rule path is not valid JMESPath."""


MAX_PATH_LENGTH = 1_000  # characters; the shipped rule files' longest path is under 100


def _parse(expression: str) -> ParsedResult:
    """jmespath's parse, bounded: its parser recurses once per nesting level."""
    if len(expression) > MAX_PATH_LENGTH:
        raise PathSyntaxError(f"longer than {MAX_PATH_LENGTH} characters")
    try:
        return jmespath.compile(expression)
    except JMESPathError as exc:
        raise PathSyntaxError(_describe(exc)) from None
    except RecursionError:
        raise PathSyntaxError("nested too deeply") from None


def _describe(exc: JMESPathError) -> str:
    """jmespath's message without its trailing `for expression:` lines (the caller shows the expression)."""
    if isinstance(exc, ParseError):
        where = f" at column {exc.lex_position + 1}" if isinstance(exc.lex_position, int) else ""
        return f"{exc.msg}{where}"
    first = str(exc).splitlines()[0]
    return first.removesuffix(",").removesuffix(" for expression:").rstrip(":,")


def compile_path(expression: str) -> Getter:
    """Compile `expression` into a getter; raise PathSyntaxError when it does not parse."""
    parsed = _parse(expression)
    steps = _simple_steps(parsed.parsed)
    if steps is None:
        first_key = _first_key_getter(parsed)
        if first_key is not None:
            return first_key
        read = _evaluator(parsed.parsed) or parsed.search

        def search(data: Any) -> Any:
            try:
                value = read(data)
            except JMESPathTypeError:  # a function given a value of another type (`keys(7)`): nothing there
                return MISSING
            return MISSING if value is None else value

        return search
    if not steps:
        return lambda data: data
    if len(steps) == 1 and isinstance(steps[0], str):
        only = steps[0]

        def get_one(data: Any) -> Any:
            if isinstance(data, dict):
                return data.get(only, MISSING)
            return MISSING

        return get_one
    return _chain_getter(steps)


def _first_key_getter(parsed: ParsedResult) -> Getter | None:
    """`keys(<plain chain>)[0]`, the name of a one-key union (an AWS event, a Converse delta), read on every
    streamed event: a dict's first key straight away, anything else as jmespath reads it (nothing, where
    jmespath refuses the type: a plain chain over a non-object reads nothing too)."""
    node = parsed.parsed
    if node["type"] != "index_expression" or node["children"][1] != {"type": "index", "value": 0, "children": []}:
        return None
    call = node["children"][0]
    if call["type"] != "function_expression" or call["value"] != "keys" or len(call["children"]) != 1:
        return None
    steps = _simple_steps(call["children"][0])
    if steps is None:
        return None
    inner = _chain_getter(steps) if steps else (lambda data: data)

    def first_key(data: Any) -> Any:
        value = inner(data)
        if type(value) is dict and value:
            return next(iter(value))
        try:
            found = parsed.search(data)
        except JMESPathTypeError:
            return MISSING
        return MISSING if found is None else found

    return first_key


def _chain_getter(steps: list[str | int]) -> Getter:
    """A plain chain as straight-line generated code (read on every response, so no loop per step)."""
    lines = ["def get(data):"]
    for step in steps:
        if isinstance(step, str):
            lines += ["    if not isinstance(data, dict): return MISSING", f"    data = data.get({step!r}, MISSING)"]
        else:
            lines += [
                f"    if not isinstance(data, list) or not -len(data) <= {step} < len(data): return MISSING",
                f"    data = data[{step}]",
            ]
    namespace: dict[str, Any] = {"MISSING": MISSING}
    exec(compile("\n".join([*lines, "    return data"]) + "\n", "<path>", "exec"), namespace)
    get: Getter = namespace["get"]
    return get


def simple_steps(expression: str) -> list[str | int] | None:
    """The key/index steps of a plain chain (`a.b[0]` -> ["a", "b", 0]), or None for richer paths."""
    try:
        return _simple_steps(_parse(expression).parsed)
    except PathSyntaxError:
        return None


def first_field(expression: str) -> str | None:
    """The top-level field a path reads (`usage.input_tokens` -> `usage`), if plain or piped from a plain chain."""
    steps = piped_from(expression)
    if steps and isinstance(steps[0], str):
        return steps[0]
    return None


def is_piped(expression: str) -> bool:
    """Whether a path pipes what it reads through an expression (`a.b | f(@)`), not a plain read."""
    try:
        return bool(_parse(expression).parsed["type"] == "pipe")
    except PathSyntaxError:
        return False


def piped_from(expression: str) -> list[str | int] | None:
    """The plain chain a path reads: the path itself when plain, or what it pipes on (`a.b | f(@)` -> a, b),
    so a value reshaped on its way out is still known (and located) by the field it came from."""
    try:
        node = _parse(expression).parsed
    except PathSyntaxError:
        return None
    while node["type"] == "pipe":
        node = node["children"][0]
    return _simple_steps(node)


def _simple_steps(node: Any) -> list[str | int] | None:
    kind = node["type"]
    if kind == "current":
        return []
    if kind == "field":
        return [node["value"]]
    if kind == "index":
        return [node["value"]]
    if kind in ("subexpression", "index_expression"):
        out: list[str | int] = []
        for child in node["children"]:
            steps = _simple_steps(child)
            if steps is None:
                return None
            out.extend(steps)
        return out
    return None


# ---------------------------------------------------------------- rich paths, compiled
# Each function takes the current value and gives jmespath's answer (None for absent or null), as
# jmespath.visitor.TreeInterpreter does node by node; None from _evaluator: a node it does not compile.

Eval = Callable[[Any], Any]
_FUNCTIONS = Functions()
_EQUALITY = {op: TreeInterpreter.COMPARATOR_FUNC[op] for op in ("eq", "ne")}


_EMPTY_WHEN_FALSE = (str, list, dict)


def _false(value: Any) -> bool:
    """jmespath's falsehood: empty string, list or object, null, false (a 0 is true)."""
    return value is None or value is False or (isinstance(value, _EMPTY_WHEN_FALSE) and not value)


def _evaluator(node: Any) -> Eval | None:
    kind, value = node["type"], node.get("value")  # a jmespath tree node (a dict)
    steps = _simple_steps(node)
    if steps and len(steps) == 1 and isinstance(steps[0], str):  # one field (`type`): one call, not two
        key = steps[0]
        return lambda v: v.get(key) if isinstance(v, dict) else None
    if steps:  # a plain chain inside: one straight walk (null and absent both None, as jmespath gives them)
        walk = _chain_getter(steps)
        return lambda v: None if (found := walk(v)) is MISSING else found
    fs: list[Eval] = []
    for child in node["children"]:
        if isinstance(child, dict):
            if (f := _evaluator(child)) is None:
                return None
            fs.append(f)
    if kind in ("current", "identity"):
        return lambda v: v
    if kind == "field":
        return lambda v: v.get(value) if isinstance(v, dict) else None
    if kind == "index":
        return lambda v: v[value] if isinstance(v, list) and -len(v) <= value < len(v) else None
    if kind == "literal":
        return lambda v: value
    if kind in ("subexpression", "index_expression", "pipe"):
        return _chain(fs)
    if kind == "key_val_pair":
        return fs[0]
    if kind == "multi_select_dict":
        pairs = [(child["value"], f) for child, f in zip(node["children"], fs, strict=True)]
        if len(pairs) == 1:  # `{a: b}`, the usual reshaping of one event value: no comprehension per call
            ((key, f),) = pairs
            return lambda v: None if v is None else {key: f(v)}
        return lambda v: None if v is None else {key: f(v) for key, f in pairs}
    if kind == "multi_select_list":
        return lambda v: None if v is None else [f(v) for f in fs]
    if kind == "or_expression":
        a, b = fs
        return lambda v: b(v) if _false(found := a(v)) else found
    if kind == "and_expression":
        a, b = fs
        return lambda v: found if _false(found := a(v)) else b(v)
    if kind == "not_expression":
        (a,) = fs
        return lambda v: False if _zero(found := a(v)) else not found
    if kind == "comparator" and value in _EQUALITY:
        a, b, same = *fs, _EQUALITY[value]
        plain = _plain_equality(node["children"][1])
        if plain is None and (plain := _plain_equality(node["children"][0])) is not None:
            a = fs[1]  # the literal on the left: equality is symmetric
        if plain is not None:  # against a string or number literal: jmespath's equality, inline
            lit, exact = plain
            if value == "eq":
                return (lambda v: (x := a(v)) == lit and type(x) is not bool) if exact else (lambda v: a(v) == lit)
            return (lambda v: (x := a(v)) != lit or type(x) is bool) if exact else (lambda v: a(v) != lit)
        return lambda v: same(a(v), b(v))
    if kind == "function_expression" and value == "type" and len(fs) == 1:
        (a,) = fs  # any one value: no argument error to raise
        return lambda v: _TYPE_NAMES.get(type(found := a(v))) or _FUNCTIONS.call_function("type", [found])
    if kind == "function_expression":
        name = value
        return lambda v: _FUNCTIONS.call_function(name, [f(v) for f in fs])
    if kind in ("projection", "filter_projection"):
        return _projection(fs)
    if kind == "flatten":
        (a,) = fs
        return lambda v: _flat(base) if isinstance(base := a(v), list) else None
    return None


# jmespath's type() of the JSON types (a subclass asks jmespath itself).
_TYPE_NAMES = {str: "string", bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}
_TYPE_NAMES[type(None)] = "null"


def _plain_equality(node: Any) -> tuple[Any, bool] | None:
    """A string or number literal compared with: (the literal, whether a boolean must not equal it). jmespath
    never lets true or false equal 0 or 1 (Python would); any other comparison with such a literal is Python's."""
    if node.get("type") != "literal":
        return None
    lit = node["value"]
    if type(lit) is str or (type(lit) in (int, float) and lit not in (0, 1)):
        return lit, False
    if type(lit) in (int, float):
        return lit, True
    return None


def _chain(fs: list[Eval]) -> Eval:
    if len(fs) == 2:
        a, b = fs
        return lambda v: b(a(v))

    def chain(v: Any) -> Any:
        for f in fs:
            v = f(v)
        return v

    return chain


def _projection(fs: list[Eval]) -> Eval:
    """`base[*].rest` (and `base[?test].rest`): rest of each element of a list base, nulls left out."""
    base, rest, *test = fs
    keep = test[0] if test else None

    def project(v: Any) -> Any:
        items = base(v)
        if not isinstance(items, list):
            return None
        out = []
        for item in items:
            if keep is None or not _false(keep(item)):
                found = rest(item)
                if found is not None:
                    out.append(found)
        return out

    return project


def _flat(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out


def _zero(value: Any) -> bool:
    return type(value) in (int, float) and value == 0
