"""Generated lines folded where some of their variables hold values known at generation (a partial evaluation).

A generated function that holds a value known in one of its branches (say, a field that is `{}` unless a piece of
the answer filled it) can run a copy of its lines with that value folded in: the tests it decides dropped, the
reads of it that give a known value replaced by that value, the stores no line reads any more removed. `folded`
does it for the few forms the engine's generators write (`isinstance`, `.get` with a constant key, `is`, `==`,
`and`/`or`/`not`, a conditional expression, `if`), and leaves anything else as it was: a line it cannot decide
runs as written, so the copy does what the lines do wherever the known values hold.

A name may also be known by its types alone (`Typed`: a string or None), and some functions by what they are:
`pure` ones (a function of its arguments alone, no state, no effect) run at generation on known arguments, their
result written afresh where it is a JSON value sharing nothing with them; `falsity` ones (`is_empty`) written as
`not VALUE` where the value's types are those whose result is its falsity.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Calls whose result a known argument decides (none of them can be rebound by the lines: `folded` checks).
_TYPES = {"dict": dict, "list": list, "str": str, "int": int, "tuple": tuple, "bool": bool, "float": float}
_IMMUTABLE = (str, int, float, bool, tuple, type(None))
_UNKNOWN = object()  # (a value the folder does not know)
_NONE: Mapping[str, Any] = {}
_BOOL: frozenset[type] = frozenset({bool})
# CPython 3.11 keeps the AST objects' recursion depth once per interpreter: two threads making them at once (a format
# compiled on first use from several threads) can raise SystemError, so the engine's parses take turns.
_PARSING = threading.Lock()


@dataclass(frozen=True)
class Typed:
    """A value known by its exact types only (`type(value)` is one of them), not by its value."""

    types: frozenset[type]


def parsed(text: str) -> ast.Module:
    """`ast.parse` of statements, one thread at a time (every parse the engine makes goes through `_PARSING`)."""
    with _PARSING:
        return ast.parse(text)


def parsed_expression(text: str) -> ast.expr:
    """`ast.parse` of one expression, one thread at a time."""
    with _PARSING:
        return ast.parse(text, mode="eval").body


def folded(
    lines: list[str],
    known: Mapping[str, Any],
    constants: Mapping[str, Any],
    keep: Iterable[str],
    pure: Mapping[str, Callable[..., Any]] = _NONE,
    falsity: Mapping[str, frozenset[type]] = _NONE,
) -> list[str]:
    """`lines` (a block of statements at no indent) run where each name of `known` holds its value (never mutated by
    the lines unless read as it is: a container stays named) or one of its types (`Typed`); `constants` are the
    module's names of fixed values (`MISSING`), `keep` the names read after the lines (their stores stay); `pure`
    the module's functions of their arguments alone, `falsity` those whose result is `not VALUE` for a value of one
    of their types."""
    tree = parsed("\n".join(lines))
    assigned = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    if assigned & ({"isinstance", *_TYPES} | set(constants) | set(pure) | set(falsity)):
        return lines  # (a name the folder reads as a builtin, a constant or a known function is rebound: no fold)
    env: dict[str, Any] = {**known}
    body = _Folder(constants, pure, falsity).block(tree.body, env)
    body = _without_dead_stores(body, set(keep))
    return ast.unparse(ast.Module(body=body, type_ignores=[])).splitlines() if body else ["pass"]


class _Folder:
    """The statements' and expressions' folding over an environment of known values (`_UNKNOWN` for any other)."""

    def __init__(
        self,
        constants: Mapping[str, Any],
        pure: Mapping[str, Callable[..., Any]] = _NONE,
        falsity: Mapping[str, frozenset[type]] = _NONE,
    ) -> None:
        self.constants = constants
        self.pure = pure
        self.falsity = falsity

    def block(self, statements: list[ast.stmt], env: dict[str, Any]) -> list[ast.stmt]:
        """The statements folded in order, `env` updated as they store; a known container the folded statement may
        change (anything but a `.get`, an `isinstance`, a test of it or a store of it whole) no longer known."""
        out: list[ast.stmt] = []
        for statement in statements:
            if isinstance(statement, (ast.For, ast.While)):
                _escape(env, statement, top=False)  # (a change in a later turn reaches an earlier turn's read)
            made = self.statement(statement, env)
            for node in made:
                _escape(env, node, top=True)
            out += made
        return out

    def statement(self, node: ast.stmt, env: dict[str, Any]) -> list[ast.stmt]:
        """One statement folded: an `if` decided is its branch, a store of a known value remembered. A name its
        expressions store (`:=`) is not known anywhere in it (a later read in it may follow the store)."""
        for inner in ast.walk(node.test if isinstance(node, (ast.If, ast.While)) else node):
            if isinstance(inner, ast.NamedExpr):
                env.pop(inner.target.id, None)
        if isinstance(node, ast.If):
            test = self.value(node.test, env)
            if test is not _UNKNOWN:
                return self.block(node.body if test else node.orelse, env)
            node.test = _truth(self.expr(node.test, env))
            branches = [dict(env), dict(env)]
            node.body = self.block(node.body, branches[0]) or [ast.Pass()]
            node.orelse = self.block(node.orelse, branches[1])
            _forget(env, node)
            return [node]
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = self.value(node.value, env)
            kinds = self.kinds(node.value, env) if value is _UNKNOWN else None
            node.value = self.expr(node.value, env)
            env[node.targets[0].id] = value if kinds is None else Typed(kinds)
            return [node]
        if isinstance(node, (ast.For, ast.While, ast.With, ast.Try)):
            _forget(env, node)  # (a loop's stores reach its next turn: nothing stored in it is known inside or after)
            for field in ("body", "orelse", "finalbody"):
                if hasattr(node, field):
                    setattr(node, field, self.block(getattr(node, field), dict(env)) or [])
            if isinstance(node, (ast.For, ast.While, ast.With)) and not node.body:
                node.body = [ast.Pass()]
            _forget(env, node)
            return [node]
        _forget(env, node)
        substituted: ast.stmt = _Substituted(self, env).visit(node)
        return [substituted]

    def expr(self, node: ast.expr, env: dict[str, Any]) -> ast.expr:
        """The expression with each part that is known and immutable written as its value."""
        written: ast.expr = _Substituted(self, env).visit(node)
        return written

    def value(self, node: ast.expr, env: dict[str, Any]) -> Any:
        """The expression's value where the known values decide it and reading it runs nothing, else `_UNKNOWN`."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                held = env[node.id]
                return _UNKNOWN if isinstance(held, Typed) else held
            return self.constants.get(node.id, _UNKNOWN)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            operand = self.value(node.operand, env)
            return _UNKNOWN if operand is _UNKNOWN else not operand
        if isinstance(node, ast.BoolOp):
            return self._bool_op(node, env)
        if isinstance(node, ast.IfExp):
            test = self.value(node.test, env)
            return _UNKNOWN if test is _UNKNOWN else self.value(node.body if test else node.orelse, env)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self.value(node.left, env), self.value(node.comparators[0], env)
            if left is _UNKNOWN or right is _UNKNOWN:
                return _UNKNOWN
            return _compare(node.ops[0], left, right, self.constants.values())
        if isinstance(node, ast.Call) and not node.keywords:
            return self._call(node, env)
        return _UNKNOWN

    def _bool_op(self, node: ast.BoolOp, env: dict[str, Any]) -> Any:
        """`and`/`or` of known operands (its value: the operand it stops at)."""
        for operand in node.values:
            value = self.value(operand, env)
            if value is _UNKNOWN:
                return _UNKNOWN
            if bool(value) is isinstance(node.op, ast.Or):
                return value
        return value

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        """`isinstance(known, TYPE)`, `type(known)`, and `known.get(KEY[, DEFAULT])` of a known dict."""
        func = node.func
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2:
            held, kind = self.value(node.args[0], env), node.args[1]
            if held is _UNKNOWN or not isinstance(kind, ast.Name) or kind.id not in _TYPES:
                return _UNKNOWN
            return isinstance(held, _TYPES[kind.id])
        if isinstance(func, ast.Name) and func.id in self.pure and func.id not in env:
            return _run(self.pure[func.id], node.args, env, self)
        args = [self.value(arg, env) for arg in node.args]
        if any(arg is _UNKNOWN for arg in args):
            return _UNKNOWN
        if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(args) <= 2:
            held = self.value(func.value, env)
            if type(held) is dict and isinstance(args[0], _IMMUTABLE):
                found = held.get(*args)
                sure = isinstance(found, _IMMUTABLE) or any(found is one for one in self.constants.values())
                return found if sure else _UNKNOWN
        return _UNKNOWN

    def kinds(self, node: ast.expr, env: dict[str, Any]) -> frozenset[type] | None:
        """The exact types the expression's value is one of, where the known values and types tell; else None."""
        value = self.value(node, env)
        if value is not _UNKNOWN:
            return frozenset({type(value)})
        if isinstance(node, ast.Name):
            held = env.get(node.id)
            return held.types if isinstance(held, Typed) else None
        if isinstance(node, (ast.BoolOp, ast.IfExp)):  # (its value is one of its operands')
            parts = [self.kinds(part, env) for part in (node.values if isinstance(node, ast.BoolOp) else
                                                        (node.body, node.orelse))]  # fmt: skip
            return None if any(part is None for part in parts) else frozenset().union(*parts)  # type: ignore[arg-type]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _BOOL
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return _BOOL
        if self.falsity_of(node, env) is not None:
            return _BOOL
        return None

    def falsity_of(self, node: ast.expr, env: dict[str, Any]) -> ast.expr | None:
        """The value a `falsity` function's call tests (`is_empty(VALUE)` of a value of its types: `not VALUE`)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1):
            return None
        types = self.falsity.get(node.func.id) if node.func.id not in env and not node.keywords else None
        kinds = self.kinds(node.args[0], env) if types is not None else None
        return node.args[0] if kinds is not None and types is not None and kinds <= types else None


def _run(function: Callable[..., Any], args: list[ast.expr], env: dict[str, Any], folder: _Folder) -> Any:
    """A pure function's result on arguments known at generation (a display of known values made), where it is a
    JSON value sharing no container with them (so that a display of it, made afresh each run, is the same); else
    `_UNKNOWN`."""
    given = [_given(arg, env, folder) for arg in args]
    if any(arg is _UNKNOWN for arg in given):
        return _UNKNOWN
    try:
        result = function(*given)
    except Exception:  # (it raises at run time too: the lines keep the call)
        return _UNKNOWN
    if any(result is constant for constant in folder.constants.values()):
        return result
    held = {id(part) for arg in given for part in _containers(arg)}
    if not displayed_afresh(result) or any(id(part) in held for part in _containers(result)):
        return _UNKNOWN
    return result


def _given(node: ast.expr, env: dict[str, Any], folder: _Folder) -> Any:
    """An argument's value: a known value, or a dict or list display of known values made now."""
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        keys = [_given(key, env, folder) for key in node.keys if key is not None]
        values = [_given(value, env, folder) for value in node.values]
        if _UNKNOWN in keys or _UNKNOWN in values or not all(isinstance(key, _IMMUTABLE) for key in keys):
            return _UNKNOWN
        return dict(zip(keys, values, strict=True))
    if isinstance(node, ast.List):
        items = [_given(item, env, folder) for item in node.elts]
        return _UNKNOWN if _UNKNOWN in items else items
    return folder.value(node, env)


def _containers(value: Any) -> Iterable[Any]:
    """The value's lists and dicts, itself and nested."""
    if isinstance(value, (list, dict)):
        yield value
        for part in value.values() if isinstance(value, dict) else value:
            yield from _containers(part)


def displayed_afresh(value: Any) -> bool:
    """A constant Python's own display writes afresh each time (JSON strings, integers, booleans, null,
    finite floats, and lists and objects of them)."""
    if value is None or type(value) in (str, int, bool):
        return True
    if type(value) is float:
        return value == value and value not in (float("inf"), float("-inf"))
    if type(value) is list:
        return all(displayed_afresh(v) for v in value)
    return type(value) is dict and all(type(k) is str and displayed_afresh(v) for k, v in value.items())


def _truth(test: ast.expr) -> ast.expr:
    """A test written by its truth: `not not X` as `X` (an `if` tests only the truth)."""
    while (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.UnaryOp)
        and isinstance(test.operand.op, ast.Not)
    ):
        test = test.operand.operand
    return test


class _Substituted(ast.NodeTransformer):
    """An expression with each known immutable part written as its value (a name of a constant: that name)."""

    def __init__(self, folder: _Folder, env: dict[str, Any]) -> None:
        self.folder = folder
        self.env = env

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, ast.Constant):
            value = self.folder.value(node, self.env)
            written = _written(value, self.folder.constants)
            if written is not None and not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
                return ast.copy_location(written, node)
            if isinstance(node, ast.Call) and isinstance(value, (list, dict)):  # (a pure call's fresh JSON value)
                return ast.copy_location(parsed_expression(repr(value)), node)
        tested = self.folder.falsity_of(node, self.env) if isinstance(node, ast.expr) else None
        if tested is not None:
            return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=self.visit(tested)), node)
        said = _said_bool(node)
        if isinstance(node, ast.Compare) and said is not None and self.folder.kinds(node.left, self.env) == _BOOL:
            left: ast.expr = self.visit(node.left)  # (`B is True` of a bool: `B`; `B is False`: `not B`)
            return left if said else ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=left), node)
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            # (an operand of `is` written as its value only where that is a singleton: a string's identity is its own)
            node.left = self._operand(node.left)
            node.comparators = [self._operand(part) for part in node.comparators]
            return node
        return super().generic_visit(node)

    def _operand(self, node: ast.expr) -> ast.expr:
        """An operand of `is`: written as its value where that is None, a bool or a constant; else only its parts."""
        value = self.folder.value(node, self.env)
        if any(value is one for one in (None, True, False, *self.folder.constants.values())):
            return self.visit(node)  # type: ignore[no-any-return]
        return super().generic_visit(node)  # type: ignore[return-value]


def _said_bool(node: ast.AST) -> bool | None:
    """The boolean `X is True` or `X is False` compares with; None for any other node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is):
        said = node.comparators[0]
        if isinstance(said, ast.Constant) and type(said.value) is bool:
            return said.value
    return None


def _written(value: Any, constants: Mapping[str, Any]) -> ast.expr | None:
    """A known value as an expression: a literal of an immutable value, or the name of a constant; else None."""
    if value is _UNKNOWN:
        return None
    for name, constant in constants.items():
        if value is constant:
            return ast.Name(id=name, ctx=ast.Load())
    if isinstance(value, _IMMUTABLE) and not isinstance(value, tuple):
        return ast.Constant(value=value)
    return None


def _compare(op: ast.cmpop, left: Any, right: Any, singletons: Iterable[Any]) -> Any:
    """A comparison of two known values (`singletons`: the constants, each the one object of its kind)."""
    if isinstance(op, (ast.Is, ast.IsNot)):
        sure = [None, True, False, *singletons]
        if not any(value is one for value in (left, right) for one in sure):
            return _UNKNOWN  # (two strings or numbers alike may or may not be one object)
        return (left is right) is isinstance(op, ast.Is)
    if isinstance(op, ast.Eq) and isinstance(left, _IMMUTABLE) and isinstance(right, _IMMUTABLE):
        return left == right
    if isinstance(op, ast.NotEq) and isinstance(left, _IMMUTABLE) and isinstance(right, _IMMUTABLE):
        return left != right
    return _UNKNOWN


def _escape(env: dict[str, Any], node: ast.AST, *, top: bool) -> None:
    """Forget each known container the statement may change or hand on (`top`: a store of it whole into names,
    `x = NAME`, is the statement's own and keeps it known, as `x` too; into a subscript or an attribute, the
    container is handed on)."""
    held = {name for name, value in env.items() if isinstance(value, (dict, list))}
    if not held:
        return
    allowed: set[int] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "get":
            allowed.add(id(inner.func.value))
        elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "isinstance":
            allowed.update(id(arg) for arg in inner.args[:1])
        elif isinstance(inner, (ast.If, ast.IfExp, ast.While)):
            allowed.add(id(inner.test))
        elif isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
            allowed.add(id(inner.operand))
        elif isinstance(inner, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in inner.ops):
            allowed.update(id(part) for part in (inner.left, *inner.comparators))
    if top and isinstance(node, ast.Assign) and all(isinstance(target, ast.Name) for target in node.targets):
        allowed.add(id(node.value))
    for inner in ast.walk(node):
        if (
            isinstance(inner, ast.Name)
            and isinstance(inner.ctx, ast.Load)
            and inner.id in held
            and id(inner) not in allowed
        ):
            gone = env[inner.id]
            for name in [name for name, value in env.items() if value is gone]:
                del env[name]
            held.discard(inner.id)


def _forget(env: dict[str, Any], node: ast.AST) -> None:
    """Every name the statement stores (anywhere in it) no longer known."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            env.pop(inner.id, None)


def _without_dead_stores(body: list[ast.stmt], keep: set[str]) -> list[ast.stmt]:
    """The statements without the stores of a name or a constant into a name nothing reads (not in `keep`)."""
    while True:
        module = ast.Module(body=body, type_ignores=[])
        read = keep | {n.id for n in ast.walk(module) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        dead = _DeadStores(read)
        body = dead.visit(module).body
        if not dead.removed:
            return body


class _DeadStores(ast.NodeTransformer):
    """Removes `name = NAME_OR_CONSTANT` where nothing reads `name` (an emptied block gets `pass`)."""

    def __init__(self, read: set[str]) -> None:
        self.read = read
        self.removed = False

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        target = node.targets[0] if len(node.targets) == 1 else None
        if (
            isinstance(target, ast.Name)
            and target.id not in self.read
            and isinstance(node.value, (ast.Name, ast.Constant))
        ):
            self.removed = True
            return None
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse"):
            if isinstance(node, (ast.If, ast.For, ast.While)) and field == "body" and not getattr(node, field):
                node.body = [ast.Pass()]
        return node
