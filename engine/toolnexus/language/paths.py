"""Read paths: JMESPath syntax, compiled once into a getter.

A plain chain (`usage.input_tokens`, `choices[0].message`, `@`) compiles to a
tuple walk that tells *absent* (MISSING) from *null* (None); anything richer
(filters, projections, pipes, `&&`/`||`, multi-selects) is compiled from jmespath's
parse tree into the source of one Python function with jmespath's own semantics
(a streamed event, or each item of an answer, is read per path: jmespath's tree
interpreter costs several microseconds each, a function per node about one), where
absent and null both read as MISSING; a node outside that set (slices, `&expr`
arguments, ordering comparisons) runs the whole expression on jmespath's interpreter.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import countOf
from typing import Any, Final
from weakref import WeakSet

import jmespath
from jmespath.exceptions import JMESPathError, JMESPathTypeError, ParseError
from jmespath.functions import Functions
from jmespath.parser import ParsedResult
from jmespath.visitor import TreeInterpreter

from .codegen import Namespace


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
    """Compile `expression` into a getter (`is_path_read`); raise PathSyntaxError when it does not parse."""
    getter = _compiled(expression)
    _PATH_READS.add(getter)
    return getter


# Every getter `compile_path` made: a JMESPath read, a function of its data alone (no state, no effect), so generated
# lines calling one on values known at generation may be run then (`fold.folded`'s `pure`).
_PATH_READS: WeakSet[Getter] = WeakSet()


def is_path_read(value: Any) -> bool:
    """Whether `value` is a getter `compile_path` made (a function of its data alone)."""
    try:
        return value in _PATH_READS
    except TypeError:  # (a value no weak reference can name: no getter)
        return False


def _compiled(expression: str) -> Getter:
    """`compile_path`'s getter of `expression`."""
    parsed = _parse(expression)
    steps = _simple_steps(parsed.parsed)
    if steps is None:
        first_key = _first_key_getter(parsed)
        if first_key is not None:
            return first_key
        generated = _generated(parsed.parsed)
        if generated is not None:
            return generated

        def search(data: Any) -> Any:
            try:
                value = parsed.search(data)
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


def _tree(expression: str) -> Any:
    """The parsed path's syntax tree, or None when it is not a path (those questions are asked of any text)."""
    try:
        return _parse(expression).parsed
    except PathSyntaxError:
        return None


def scope_fields(expression: str) -> frozenset[str] | None:
    """The keys a path reads of the value it is evaluated on, or None when it reads that value otherwise (`@`, a
    projection or an index of it, a function given it) or is no path: a path whose reads of it are all keys
    gives the same over any object holding those keys as they are."""
    node = _tree(expression)
    return None if node is None else _scope_fields(node)


# Nodes whose first child is evaluated on the value, the rest on what the first gives (a step, a projection's
# elements, a filter's condition, a pipe's right side).
_ON_FIRST = frozenset(
    {"subexpression", "index_expression", "projection", "value_projection", "filter_projection", "pipe"}
)
# Nodes every child of which is evaluated on the value itself.
_ON_EACH = frozenset({"or_expression", "and_expression", "not_expression", "comparator", "flatten", "multi_select_list",
                      "multi_select_dict", "key_val_pair", "function_expression"})  # fmt: skip


def _scope_fields(node: dict[str, Any]) -> frozenset[str] | None:
    kind = node["type"]
    if kind == "field":
        return frozenset({node["value"]})
    if kind in ("literal", "expref"):  # a constant; an expression applied to elements, not to the value
        return frozenset()
    if kind not in _ON_FIRST and kind not in _ON_EACH:  # `@`, the identity of a projection, an index, a slice
        return None
    fields: frozenset[str] = frozenset()
    for child in node["children"][:1] if kind in _ON_FIRST else node["children"]:
        read = _scope_fields(child)
        if read is None:
            return None
        fields |= read
    return fields


def simple_steps(expression: str) -> list[str | int] | None:
    """The key/index steps of a plain chain (`a.b[0]` -> ["a", "b", 0]), or None for richer paths."""
    node = _tree(expression)
    return None if node is None else _simple_steps(node)


def either_fields(expression: str) -> tuple[str, ...] | None:
    """The keys of a path that is `a || b || ...` of the value's own keys alone, in order (its value: the first
    truthy key's, else the last's), or None for any other path."""
    node = _tree(expression)
    return _either_fields(node) if node is not None and node["type"] == "or_expression" else None


def _either_fields(node: dict[str, Any]) -> tuple[str, ...] | None:
    if node["type"] == "field":
        return (node["value"],)
    if node["type"] != "or_expression":
        return None
    left, right = (_either_fields(child) for child in node["children"])
    return None if left is None or right is None else left + right


def plain_hash(expression: str) -> dict[str, tuple[tuple[str, ...] | None, Any]] | None:
    """A multi-select hash whose values are chains of names or literal scalars (`{type: 'summary_text', text:
    delta}`): per key, the chain's names (None for a literal) and the literal; None for any other path."""
    node = _tree(expression)
    if node is None or node["type"] != "multi_select_dict":
        return None
    out: dict[str, tuple[tuple[str, ...] | None, Any]] = {}
    for pair in node["children"]:
        value = pair["children"][0]
        if value["type"] == "literal" and (value["value"] is None or type(value["value"]) in (str, int, float, bool)):
            out[pair["value"]] = (None, value["value"])
            continue
        steps = _simple_steps(value)
        if not steps or not all(type(step) is str for step in steps):
            return None
        out[pair["value"]] = (tuple(str(step) for step in steps), None)
    return out


def piped_hash(expression: str) -> tuple[list[str | int], dict[str, Getter]] | None:
    """A plain chain piped into a multi-select hash whose values cannot raise (`a.b | {c: x || {d: @}}`): the
    chain's steps and, per key in order, its value compiled as a getter of what the chain read (MISSING for
    null), so a reader that has the chain's value already reads only the rest, and knows the keys it builds;
    None for any other path, or a value not compiled. (A value that could raise would make the whole path
    nothing, which a getter per value cannot tell.)"""
    node = _tree(expression)
    if node is None or node["type"] != "pipe":
        return None
    steps, hashed = _simple_steps(node["children"][0]), node["children"][1]
    if steps is None or hashed["type"] != "multi_select_dict" or not _never_raises(hashed):
        return None
    out: dict[str, Getter] = {}
    for pair in hashed["children"]:
        getter = _generated(pair["children"][0])
        if getter is None:
            return None
        out[pair["value"]] = getter
    return steps, out


def first_field(expression: str) -> str | None:
    """The top-level field a path reads (`usage.input_tokens` -> `usage`), if plain or piped from a plain chain."""
    steps = piped_from(expression)
    if steps and isinstance(steps[0], str):
        return steps[0]
    return None


def is_piped(expression: str) -> bool:
    """Whether a path pipes what it reads through an expression (`a.b | f(@)`), not a plain read."""
    node = _tree(expression)
    return node is not None and node["type"] == "pipe"


def piped_from(expression: str) -> list[str | int] | None:
    """The plain chain a path reads: the path itself when plain, or what it pipes on (`a.b | f(@)` -> a, b),
    so a value reshaped on its way out is still known (and located) by the field it came from."""
    node = _tree(expression)
    if node is None:
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
# A rich path becomes the source of one Python function, straight-line code per node of jmespath's tree with
# jmespath.visitor.TreeInterpreter's semantics (None for absent or null): an answer reads several such paths per
# output item, and a call per node costs more than the node's own work. _Unsupported: a node it does not compile.

_FUNCTIONS = Functions()
_EQUALITY = {op: TreeInterpreter.COMPARATOR_FUNC[op] for op in ("eq", "ne")}
_EMPTY_WHEN_FALSE = (str, list, dict)
_FIRST = {  # `| [0]`
    "type": "index_expression",
    "children": [{"type": "identity", "children": []}, {"type": "index", "value": 0, "children": []}],
}
_NEVER_RAISE = frozenset(("current", "identity", "field", "index", "literal", "subexpression", "index_expression",
                          "pipe", "projection", "filter_projection", "flatten", "or_expression", "and_expression",
                          "not_expression", "multi_select_dict", "multi_select_list", "key_val_pair"))  # fmt: skip


class _Unsupported(Exception):
    """A node the generator leaves to jmespath's interpreter (slices, `&expr` arguments, ordering)."""


def _false(value: Any) -> bool:
    """jmespath's falsehood: empty string, list or object, null, false (a 0 is true)."""
    return value is None or value is False or (isinstance(value, _EMPTY_WHEN_FALSE) and not value)


def _operands(node: Any, kind: str) -> list[Any]:
    """The operands of a chain of one operator, in order (`&&` and `||` are each associative in jmespath's truth)."""
    children = node["children"]
    return [leaf for child in children for leaf in (_operands(child, kind) if child["type"] == kind else [child])]


def _never_raises(node: Any) -> bool:
    """Whether reading `node` cannot raise (so a projection read for its first element may stop there)."""
    kind = node["type"]
    if kind == "comparator":
        ok = node["value"] in _EQUALITY
    elif kind == "function_expression":
        ok = node["value"] == "type" and len(node["children"]) == 1
    else:
        ok = kind in _NEVER_RAISE
    return ok and all(_never_raises(child) for child in node["children"] if isinstance(child, dict))


_Scope = tuple[dict[tuple[str, str], str], frozenset[str]]  # the fields read, the names proved objects


class _Generator(Namespace):
    """Emits the statements of one rich path; each `emit` gives the name that holds its node's value."""

    def __init__(self) -> None:
        super().__init__({"EMPTY": _EMPTY_WHEN_FALSE, "call": _FUNCTIONS.call_function, "TYPES": _TYPE_NAMES,
                          "MISSING": MISSING, "JMESPathTypeError": JMESPathTypeError, "countOf": countOf})  # fmt: skip
        self.lines: list[str] = []
        self.bools: set[str] = set()  # names that always hold True or False (comparisons, `!`)
        self.read: dict[tuple[str, str], str] = {}  # (name, key) -> the name its field was read into, in scope
        self.dicts: frozenset[str] = frozenset()  # names a test passed on the way here proved objects, in scope
        self.holders: dict[str, str] = {}  # a field's name -> the name it was read from (an object if it is not null)
        self.proves: dict[str, frozenset[str]] = {}  # a test's name -> the names that are objects where it is true

    def scope(self) -> _Scope:
        """What is known here (fields read, objects proved), to go back to where a block ends."""
        return dict(self.read), self.dicts

    def leave(self, scope: _Scope) -> None:
        """Back to what was known at `scope` (the block that learned more has ended)."""
        self.read, self.dicts = scope

    def passed(self, test: str) -> None:
        """In a block that runs only where `test` is true: the objects it proves are objects there (their fields
        read without testing their type again)."""
        self.dicts |= self.proves.get(test, frozenset())

    def non_null(self, name: str) -> frozenset[str]:
        """The names that are objects where `name` is not null: the ones its field was read from, outward."""
        held: set[str] = set()
        while (name := self.holders.get(name, "")) and name not in held:
            held.add(name)
        return frozenset(held)

    def false_test(self, name: str) -> str:
        """jmespath's falsehood of `name` as Python: `not` for a boolean, decided here for a literal."""
        if name in self.bools:
            return f"not {name}"
        if name in self.names:
            return repr(_false(self.names[name]))
        return f"({name} is None or {name} is False or (not {name} and isinstance({name}, EMPTY)))"

    def nested(self, node: Any, src: str, pad: str) -> str:
        """Read `node` in a block that may not run: the fields it reads are not known after it."""
        known = self.scope()
        try:
            return self.emit(node, src, pad)
        finally:
            self.leave(known)

    def true_test(self, name: str) -> str:
        """jmespath's truth of `name` as Python."""
        if name in self.bools:
            return name
        if name in self.names:
            return repr(not _false(self.names[name]))
        return f"not {self.false_test(name)}"

    def free(self, node: Any, src: str) -> bool:
        """Whether reading `node` from `src` writes no line (a literal, `@`, a field already read)."""
        kind = node["type"]
        return kind in ("literal", "current", "identity") or (kind == "field" and (src, node["value"]) in self.read)

    def chain(self, node: Any, src: str, pad: str, out: str) -> None:
        """`a && b && ...` or `a || b || ...` into `out`, each operand read in a block inside the one before, only
        while the value is still open, so a value settled early is not tested again at every level. An `&&` chain
        left of a `||` whose right is read already (`type == 'x' && ... && 'y' || type`) takes that value at the
        `else` of each level it fails at."""
        kind = node["type"]
        operands = _operands(node, kind)
        if kind == "or_expression" and len(operands) == 2 and operands[0]["type"] == "and_expression":
            inner = _operands(operands[0], "and_expression")
            head = self.emit(inner[0], src, pad)
            if self.free(operands[1], src):
                fallback = self.emit(operands[1], src, pad)
                if self.steps("and_expression", head, inner[1:], src, pad, out, fallback):
                    self.bools.add(out)
                return
            held = self.fresh("v")
            if self.steps("and_expression", head, inner[1:], src, pad, held):
                self.bools.add(held)
            head, operands = held, operands[1:]
        else:
            head, operands = self.emit(operands[0], src, pad), operands[1:]
        if self.steps(kind, head, operands, src, pad, out):
            self.bools.add(out)

    def steps(self, kind: str, head: str, rest: list[Any], src: str, pad: str, out: str, fallback: str = "") -> bool:
        """`out = head`, then, where the value is still open (true for `&&`, false for `||`), the next operand one
        block in (what they read is not known after); `fallback`: the value where an `&&` chain turns out false.
        Whether `out` always holds a boolean."""
        known, boolean = self.scope(), head in self.bools and (not fallback or fallback in self.bools)
        if kind == "and_expression" and not fallback:  # true only where every operand was
            self.proves[out] = self.proves.get(out, frozenset()) | self.proves.get(head, frozenset())
        self.line(pad, f"{out} = {head}")
        if not rest:
            test = self.false_test(head)
            if fallback and test != "False":
                self.line(pad, f"{out} = {fallback}" if test == "True" else f"if {test}: {out} = {fallback}")
            return boolean
        self.line(pad, f"if {self.true_test(head) if kind == 'and_expression' else self.false_test(head)}:")
        if kind == "and_expression":
            self.passed(head)
        following = self.emit(rest[0], src, pad + "    ")
        boolean = self.steps(kind, following, rest[1:], src, pad + "    ", out, fallback) and boolean
        if fallback:
            self.line(pad, f"else: {out} = {fallback}")
        self.leave(known)
        return boolean

    def line(self, pad: str, text: str) -> None:
        self.lines.append(pad + text)

    def emit(self, node: Any, src: str, pad: str, first: bool = False) -> str:
        """Read `node` from `src`; with `first`, only the value's first element (`... | [0]`)."""
        kind, value, children = node["type"], node.get("value"), node["children"]
        if first and kind in ("projection", "filter_projection") and _never_raises(node):
            return self.project(node, src, pad, first=True)
        if first and kind == "pipe":
            left, right = children
            if (
                right["type"] in ("projection", "filter_projection")
                and right["children"][0]["type"] in ("current", "identity")
                and left["type"] in ("projection", "filter_projection", "flatten")
                and _never_raises(node)
            ):  # `list | [?test].rest | [0]`: the projection over the left's elements as they are read
                return self.project({**right, "children": [left, *right["children"][1:]]}, src, pad, first=True)
            return self.emit(right, self.emit(left, src, pad), pad, first=True)
        if first:
            return self.emit(_FIRST, self.emit(node, src, pad), pad)
        if kind in ("current", "identity"):
            return src
        if kind == "literal":
            return self.name(value, "k")
        if kind == "key_val_pair":
            return self.emit(children[0], src, pad)
        if kind in ("subexpression", "index_expression", "pipe"):
            if kind == "pipe" and children[1] == _FIRST:
                return self.emit(children[0], src, pad, first=True)
            for child in children:
                src = self.emit(child, src, pad)
            return src
        if kind in ("projection", "filter_projection"):
            return self.project(node, src, pad)
        if kind == "field" and (src, value) in self.read:  # read before, on a way that leads here
            return self.read[src, value]
        out = self.fresh("v")
        if kind == "field":
            if src in self.dicts:
                self.line(pad, f"{out} = {src}.get({value!r})")
            else:
                self.line(pad, f"{out} = {src}.get({value!r}) if isinstance({src}, dict) else None")
            self.read[src, value] = out
            self.holders[out] = src
        elif kind == "index" and value in (0, -1):
            self.line(pad, f"{out} = {src}[{value}] if isinstance({src}, list) and {src} else None")
        elif kind == "index":
            fits = f"isinstance({src}, list) and -len({src}) <= {value} < len({src})"
            self.line(pad, f"{out} = {src}[{value}] if {fits} else None")
        elif kind == "flatten":
            base = self.emit(children[0], src, pad)
            item = self.fresh("v")
            self.line(pad, f"if isinstance({base}, list):")
            self.line(pad, f"    {out} = []")
            self.line(pad, f"    for {item} in {base}:")
            self.line(pad, f"        if isinstance({item}, list): {out}.extend({item})")
            self.line(pad, f"        else: {out}.append({item})")
            self.line(pad, f"else: {out} = None")
        elif kind in ("or_expression", "and_expression"):
            self.chain(node, src, pad, out)
        elif (
            kind == "not_expression"
            and children[0]["type"] in ("projection", "filter_projection")
            and _never_raises(children[0])
        ):
            found = self.project(children[0], src, pad, first=True)  # a list is empty when it has no first value
            self.line(pad, f"{out} = {found} is None")
            self.bools.add(out)
        elif kind == "not_expression":
            a = self.emit(children[0], src, pad)
            self.line(pad, f"{out} = False if (type({a}) is int or type({a}) is float) and {a} == 0 else not {a}")
            self.bools.add(out)
        elif kind in ("multi_select_dict", "multi_select_list"):
            self.line(pad, f"if {src} is None: {out} = None")
            self.line(pad, "else:")
            inner = pad + "    "
            values = [self.nested(child, src, inner) for child in children]
            if kind == "multi_select_list":
                self.line(inner, f"{out} = [{', '.join(values)}]")
            else:
                pairs = ", ".join(f"{child['value']!r}: {v}" for child, v in zip(children, values, strict=True))
                self.line(inner, f"{out} = {{{pairs}}}")
        elif kind == "comparator" and value in _EQUALITY:
            self.compare(node, src, pad, out)
            self.bools.add(out)
        elif kind == "function_expression":
            args = [self.emit(child, src, pad) for child in children]
            if value == "type" and len(args) == 1:  # any one value: no argument error to raise
                self.line(pad, f"{out} = TYPES.get(type({args[0]})) or call('type', [{args[0]}])")
            elif value == "join" and len(args) == 2:
                sep, parts = args
                strings = f"type({parts}) is list and countOf(map(type, {parts}), str) == len({parts})"
                self.line(pad, f"if type({sep}) is str and {strings}: {out} = {sep}.join({parts})")
                self.line(pad, f"else: {out} = call('join', [{sep}, {parts}])")
            else:
                self.line(pad, f"{out} = call({value!r}, [{', '.join(args)}])")
        else:
            raise _Unsupported(kind)
        return out

    def project(self, node: Any, src: str, pad: str, first: bool = False) -> str:
        """`base[*].rest`, `base[?test].rest`: rest of each element of a list base, nulls left out (with
        `first`, the first such value, or None), a projection or flatten under it read in the same loops."""
        out = self.fresh("v")
        self.line(pad, f"{out} = None")
        found, body, loops, known = self.elements(node, src, pad, "" if first else f"{out} = []", outer=True)
        if first:
            self.line(body, f"if {found} is not None: {out} = {found}; break")
            for at in reversed(loops[1:]):  # out of each loop around the one that found it
                self.line(at, f"if {out} is not None: break")
        else:
            self.line(body, f"if {found} is not None: {out}.append({found})")
        self.leave(known)  # what the loops read or proved is not known after them
        return out

    def elements(
        self, node: Any, src: str, pad: str, start: str = "", outer: bool = False
    ) -> tuple[str, str, list[str], _Scope]:
        """Loops over the elements of the list `node` reads, a projection or flatten under it looped over in place
        (no list built between; `start`: a line run first where the list is one): the element's name (with
        `outer`, a projection's null still to be left out), the pad of the loops' body, the pad of each loop
        (outermost first), and the fields known after them."""
        kind = node["type"]
        if kind in ("projection", "filter_projection"):
            base_node, rest_node, *test = node["children"]
            item, body, loops, known = self.elements(base_node, src, pad, start)
            if test:
                passing = self.emit(test[0], item, body)
                self.line(body, f"if {self.false_test(passing)}: continue")
                self.passed(passing)
            found = self.emit(rest_node, item, body)
            if not outer:
                self.line(body, f"if {found} is None: continue")
            return found, body, loops, known
        if kind == "flatten":  # a list element's elements, any other element itself
            item, body, loops, known = self.elements(node["children"][0], src, pad, start)
            inner = self.fresh("v")
            self.line(body, f"for {inner} in ({item} if isinstance({item}, list) else ({item},)):")
            return inner, body + "    ", [*loops, body], known
        base, item = self.emit(node, src, pad), self.fresh("v")
        self.line(pad, f"if isinstance({base}, list):")
        if start:
            self.line(pad, f"    {start}")
        self.line(pad, f"    for {item} in {base}:")
        return item, pad + "        ", [pad + "    "], self.scope()

    def compare(self, node: Any, src: str, pad: str, out: str) -> None:
        """`==` / `!=`: against a string or number literal inline, else jmespath's equality."""
        left, right = node["children"]
        eq = node["value"] == "eq"
        plain = _plain_equality(right)
        if plain is None and (plain := _plain_equality(left)) is not None:
            left = right  # the literal on the left: equality is symmetric
        if plain is None:
            a, b = self.emit(left, src, pad), self.emit(right, src, pad)
            self.line(pad, f"{out} = {self.name(_EQUALITY[node['value']], 'k')}({a}, {b})")
            return
        lit, exact = plain
        if left["type"] == "function_expression" and left["value"] == "type" and lit in _TYPE_CLASSES:
            held = self.emit(left["children"][0], src, pad)  # `type(x) == 'string'`: x's class, no name made
            self.line(pad, f"{out} = {'' if eq else 'not '}isinstance({held}, {_TYPE_CLASSES[lit]})")
            if eq:
                self.proves[out] = self.non_null(held) | ({held} if lit == "object" else set())
            return
        a, k = self.emit(left, src, pad), repr(lit) if type(lit) is str else self.name(lit, "k")  # no name to look up
        if eq:
            self.line(pad, f"{out} = {a} == {k}" + (f" and type({a}) is not bool" if exact else ""))
            self.proves[out] = self.non_null(a)  # equal to a string or number: not null
        else:
            self.line(pad, f"{out} = {a} != {k}" + (f" or type({a}) is bool" if exact else ""))


def _generated(node: Any) -> Getter | None:
    """The rich path `node` as one generated function (MISSING for jmespath's None), or None if a node in it
    is not compiled. One that reads several fields of the value it is given gets a second body, run when that
    value is a plain dict, reading them without testing its type each time (any other value takes the first)."""
    try:
        general, tests = _generated_read(node, frozenset(), None)
        return general if tests < 2 else _generated_read(node, frozenset({"data"}), general)[0]
    except (_Unsupported, SyntaxError, RecursionError):  # CPython nests at most 20 loops in one function
        return None


def _generated_read(node: Any, dicts: frozenset[str], general: Getter | None) -> tuple[Getter, int]:
    """`node` read by one generated function, `dicts` the names known to be objects from its start, any value
    other than a plain dict handed to `general` first; with the times it tests the given value's type."""
    gen = _Generator()
    gen.dicts = dicts
    result = gen.emit(node, "data", "    ")
    head = [] if general is None else ["  if type(data) is not dict:", "    return general(data)"]
    body = [*gen.lines, f"    return MISSING if {result} is None else {result}"]
    source = "\n".join(
        # a function given a value of another type (`keys(7)`) reads nothing, as a path over a non-object
        ["def read(data):", *head, "  try:", *("  " + line for line in body), "  except JMESPathTypeError:",
         "    return MISSING", ""]
    )  # fmt: skip
    code = compile(source, "<rich path>", "exec")
    gen.names["general"] = general
    exec(code, gen.names)
    read: Getter = gen.names["read"]
    return read, sum(line.count("isinstance(data, dict)") for line in gen.lines)


# jmespath's type() of the JSON types (a subclass asks jmespath itself).
_TYPE_NAMES = {str: "string", bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}
_TYPE_NAMES[type(None)] = "null"
# The type() names one class tells exactly (jmespath's type() tests isinstance of these first, or only them).
_TYPE_CLASSES = {"string": "str", "array": "list", "object": "dict"}


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
