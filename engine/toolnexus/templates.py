"""Templates: the value language of rule files, compiled once into closures.

A template is plain YAML data describing an output value:

- a scalar, list or mapping without `$` keys is a constant (mappings and lists
  recurse, so constants and operations mix freely);
- a mapping with exactly one `$`-key is an *operation*; its other keys are the
  operation's options.

Operations (the whole vocabulary; README "Rule format" has an example of each):

  $get: PATH | [PATH, ...]   read a value; a list reads the first present one.
        default: TEMPLATE    used when absent (reported as `synthesized`)
        required: true       absent is a TranslationError at PATH
  $when: PATH                the `then` template when the value at PATH equals
        is: VALUE            `is` (same type), else absent
        then: TEMPLATE
  $list: PATH                a string becomes a one-item list; a list stays
  $sum: [PATH, ...]          the sum of the integers present; absent if none is
  $merge: PATH               the mapping at PATH, with the `with` keys set
        with: {KEY: TEMPLATE}  (an absent value removes the key)
  $content: text_or_blocks | blocks
        kinds: [KIND, ...]   a message's parts written through the `parts`
                             table (only inside a role's `message`)

Absent is not null: an operation yielding MISSING omits its key, and a mapping
whose every key is absent is itself absent. Rendering never mutates its scope
and never shares a mutable constant with the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import Note, ResponseError, RuleError, TranslationError
from .loader import Key, RuleSource, did_you_mean
from .paths import MISSING, Getter, PathSyntaxError, compile_path, first_field


class Ctx:
    """Per-call state threaded through rendering: notes collected, where we are."""

    __slots__ = ("notes", "outbound", "path", "provider")

    def __init__(self, provider: str, *, outbound: bool = False) -> None:
        self.notes: list[Note] = []
        self.path = ""
        self.provider = provider
        self.outbound = outbound

    def fail(self, path: str, message: str) -> TranslationError:
        cls = ResponseError if self.outbound else TranslationError
        return cls(path, message, provider=self.provider)

    def at(self, name: str) -> str:
        """The input path of `name` read from the current scope."""
        if not self.path:
            return name
        return f"{self.path}.{name}" if name and name[0] != "[" else f"{self.path}{name}"


Render = Callable[[Any, Ctx], Any]
ContentFactory = Callable[[dict[str, Any], Key], Render]


@dataclass
class Env:
    """What a template being compiled may use, and what it was seen to read."""

    source: RuleSource
    content: ContentFactory | None = None
    reads: set[str] = field(default_factory=set)

    def error(self, key: Key, message: str) -> RuleError:
        return self.source.error(key, message)

    def fields_read(self, under: str | None = None) -> set[str] | None:
        """Top-level fields the template read (below `under`), or None for "everything"."""
        fields: set[str] = set()
        for expr in self.reads:
            if under is not None:
                if expr == under:
                    return None
                if not expr.startswith(under + "."):
                    continue
                expr = expr[len(under) + 1 :]
            root = first_field(expr)
            if root is None:
                return None
            fields.add(root)
        return fields


_OPTIONS: dict[str, set[str]] = {
    "$get": {"default", "required", "doc", "source"},
    "$when": {"is", "then", "doc", "source"},
    "$list": {"doc", "source"},
    "$sum": {"doc", "source"},
    "$merge": {"with", "doc", "source"},
    "$content": {"kinds", "doc", "source"},
}


def compile_template(value: Any, key: Key, env: Env) -> Render:
    """Compile one template found at `key` of the rule file."""
    render, _ = _compile(value, key, env)
    return render


def _compile(value: Any, key: Key, env: Env) -> tuple[Render, bool]:
    """Return the renderer and whether it is a constant."""
    if isinstance(value, dict):
        ops = [k for k in value if k.startswith("$")]
        if ops:
            return _compile_op(value, ops, key, env), False
        compiled = [(k, *_compile(v, (*key, k), env)) for k, v in value.items()]
        if all(const for _, _, const in compiled):
            return _constant(value), True
        return _object(compiled), False
    if isinstance(value, list):
        items = [_compile(v, (*key, i), env) for i, v in enumerate(value)]
        if all(const for _, const in items):
            return _constant(value), True
        renders = [r for r, _ in items]
        return (lambda scope, ctx: [r(scope, ctx) for r in renders]), False
    if isinstance(value, str) and value.startswith("$"):
        raise env.error(
            key, f"'{value}': strings starting with '$' are reserved for operations (write {{{value}: ...}})"
        )
    return _constant(value), True


def _constant(value: Any) -> Render:
    if isinstance(value, (dict, list)):
        return lambda scope, ctx: fresh_copy(value)
    return lambda scope, ctx: value


def fresh_copy(value: Any) -> Any:
    """A copy of plain JSON-like data (cheaper than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: fresh_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fresh_copy(v) for v in value]
    return value


def _object(compiled: list[tuple[str, Render, bool]]) -> Render:
    pairs = tuple((k, r) for k, r, _ in compiled)

    def render(scope: Any, ctx: Ctx) -> Any:
        out = {}
        for name, fn in pairs:
            v = fn(scope, ctx)
            if v is not MISSING:
                out[name] = v
        return out if out else MISSING

    return render


def path_getter(expression: Any, key: Key, env: Env) -> Getter:
    """Compile a rule path found at `key`, as a located RuleError when it does not parse."""
    if not isinstance(expression, str):
        raise env.error(key, f"expected a path (a string), got {type(expression).__name__}")
    try:
        getter = compile_path(expression)
    except PathSyntaxError as exc:
        raise env.error(key, f"bad path '{expression}': {exc}") from None
    env.reads.add(expression)
    return getter


def _paths(value: Any, key: Key, env: Env) -> list[tuple[str, Getter]]:
    exprs = value if isinstance(value, list) else [value]
    if not exprs:
        raise env.error(key, "expected at least one path")
    return [(str(e), path_getter(e, (*key, i) if isinstance(value, list) else key, env)) for i, e in enumerate(exprs)]


def _one_path(value: Any, key: Key, env: Env) -> tuple[str, Getter]:
    if isinstance(value, list):
        raise env.error(key, "takes one path, not a list")
    return str(value), path_getter(value, key, env)


def _compile_op(spec: dict[str, Any], ops: list[str], key: Key, env: Env) -> Render:
    if len(ops) > 1:
        raise env.error(key, f"one operation per mapping, found {', '.join(ops)}")
    op = ops[0]
    if op not in _OPTIONS:
        raise env.error((*key, op), f"unknown operation '{op}'{did_you_mean(op, _OPTIONS)}")
    for option in spec:
        if option != op and option not in _OPTIONS[op]:
            raise env.error((*key, option), f"{op} has no option '{option}'{did_you_mean(option, _OPTIONS[op])}")
    arg = spec[op]
    at = (*key, op)
    if op == "$get":
        return _op_get(spec, arg, at, key, env)
    if op == "$when":
        if "is" not in spec or "then" not in spec:
            raise env.error(key, "$when needs `is` and `then`")
        return _op_when(path_getter(arg, at, env), spec["is"], compile_template(spec["then"], (*key, "then"), env))
    if op == "$list":
        return _op_list(*_one_path(arg, at, env))
    if op == "$sum":
        if not isinstance(arg, list):
            raise env.error(at, "$sum takes a list of paths")
        return _op_sum(_paths(arg, at, env))
    if op == "$merge":
        with_spec = spec.get("with", {})
        if not isinstance(with_spec, dict):
            raise env.error((*key, "with"), "`with` must be a mapping")
        sets = tuple((k, compile_template(v, (*key, "with", k), env)) for k, v in with_spec.items())
        return _op_merge(*_one_path(arg, at, env), sets)
    # $content
    if env.content is None:
        raise env.error(at, "$content is only allowed in a role's `message`")
    if arg not in ("text_or_blocks", "blocks"):
        raise env.error(
            at,
            f"$content takes text_or_blocks or blocks, got {arg!r}"
            + did_you_mean(str(arg), ["text_or_blocks", "blocks"]),
        )
    env.reads.add("parts")
    return env.content(spec, key)


def _op_get(spec: dict[str, Any], arg: Any, at: Key, key: Key, env: Env) -> Render:
    paths = _paths(arg, at, env)
    out_name = str(key[-1]) if key else "?"
    required = spec.get("required", False)
    default = compile_template(spec["default"], (*key, "default"), env) if "default" in spec else None
    if len(paths) == 1 and default is None and not required:
        getter = paths[0][1]
        return lambda scope, ctx: getter(scope)

    def render(scope: Any, ctx: Ctx) -> Any:
        found: tuple[str, Any] | None = None
        for expr, getter in paths:
            v = getter(scope)
            if v is MISSING:
                continue
            if found is None:
                found = (expr, v)
            else:
                ctx.notes.append(Note("dropped", ctx.at(expr), f"{found[0]} was also given and is sent instead"))
        if found is not None:
            return found[1]
        if required:
            raise ctx.fail(ctx.at(paths[0][0]), "is required")
        if default is not None:
            ctx.notes.append(
                Note("synthesized", ctx.at(paths[-1][0]), f"not given; the rule's default is sent as {out_name}")
            )
            return default(scope, ctx)
        return MISSING

    return render


def _op_when(getter: Getter, expected: Any, then: Render) -> Render:
    def render(scope: Any, ctx: Ctx) -> Any:
        v = getter(scope)
        if type(v) is type(expected) and v == expected:
            return then(scope, ctx)
        return MISSING

    return render


def _op_list(expr: str, getter: Getter) -> Render:
    def render(scope: Any, ctx: Ctx) -> Any:
        v = getter(scope)
        if v is MISSING or isinstance(v, list):
            return v
        if isinstance(v, str):
            return [v]
        raise ctx.fail(ctx.at(expr), f"expected a string or a list, got {type(v).__name__}")

    return render


def _op_sum(paths: list[tuple[str, Getter]]) -> Render:
    def render(scope: Any, ctx: Ctx) -> Any:
        total: Any = MISSING
        for expr, getter in paths:
            v = getter(scope)
            if v is MISSING or v is None:
                continue
            if type(v) is not int:
                raise ctx.fail(ctx.at(expr), f"expected an integer, got {type(v).__name__}")
            total = v if total is MISSING else total + v
        return total

    return render


def _op_merge(expr: str, getter: Getter, sets: tuple[tuple[str, Render], ...]) -> Render:
    def render(scope: Any, ctx: Ctx) -> Any:
        base = getter(scope)
        if not isinstance(base, dict):
            raise ctx.fail(ctx.at(expr), "expected a mapping")
        out = dict(base)
        for name, fn in sets:
            v = fn(scope, ctx)
            if v is MISSING:
                out.pop(name, None)
            else:
                out[name] = v
        return out

    return render
