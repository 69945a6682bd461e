"""Templates: the value language of rule files, compiled once into closures.

A template is plain YAML data describing an output value:

- a scalar, list or mapping without `$` keys is a constant (mappings and lists
  recurse, so constants and operations mix freely);
- a mapping with exactly one `$`-key is an *operation*; its other keys are the
  operation's options.

Operations (the whole vocabulary; README "Rule format" has an example of each):

  $get: PATH | [PATH, ...]   read a value; a list reads the first present one.
        default: TEMPLATE    used when absent (reported as `synthesized` when it
                             gives a value: a default may itself be conditional)
        required: true       absent is a TranslationError at PATH
        type: string|integer|number|boolean|object|array
                             a typed read: null reads as absent (then `default`
                             or `required` apply); a value of another type is
                             an error at PATH (a ResponseError in an answer)
  $when: PATH                the `then` template when the value at PATH equals
        is: VALUE            `is` (same JSON type), or one of `in`, or when its
        in: [VALUE, ...]     presence (`present`: not absent, not null) or
        present: BOOL        emptiness (`empty`: absent, null, "", [] or {})
        empty: BOOL          is as given; else the `else` template, or absent
        then: TEMPLATE
        else: TEMPLATE
  $lookup: PATH              the `table` row named by the string at PATH (a table
        table: {VALUE: T}    maps an OpenAI value to the provider's); `skip`
        skip: [VALUE, ...]   values send nothing, `default` renders when the
        default: TEMPLATE    value is absent, any other value is a
                             TranslationError naming PATH (and the op's `doc`)
  $list: PATH                a string becomes a one-item list; a list stays
  $sum: [PATH, ...]          the sum of the counts present; absent if none is,
        empty: N             or N (for providers that omit counts that are zero)
                             when the objects holding the counts are there; a
                             count that is not a non-negative integer makes the
                             sum absent (a response: noted; a request: an error)
  $merge: PATH               the mapping at PATH, with the `with` keys set
        with: {KEY: TEMPLATE}  (an absent value removes the key)
  $as_object: PATH          a mapping stays; JSON text of an object becomes that
        wrap: KEY            object; anything else becomes {KEY: value}
  $media_type: PATH         the media type a URL's file extension names; absent
                             when it names none
  $json_text: PATH          the value as JSON text (a schema some provider takes
                             as a string)
  $data_url: PATH           an object {media_type, data} (base64) as one `data:`
                             URL (the form OpenAI image and file parts take)
  $seal: PATH               the state at PATH sealed (base64url JSON after `_tns_`)
        onto: PATH           onto the string at `onto` (else ""): state a format has
                             no field for rides back on an id; no state: the string
  $unseal: PATH             a sealed string's `part`: value (the string as it was)
        part: value|state    or state (what was sealed; absent if nothing)
  $refuse: MESSAGE           reached, the translation stops: a TranslationError
        at: PATH             at `at` (a request path; default: where the scope
                             sits, e.g. tool_choice) with MESSAGE and the rule's
                             file:line (a value the provider has no counterpart for)
  $absent: true             nothing: the key is not written
  $content: text_or_blocks | blocks | one
        kinds: [KIND, ...]   a message's parts written through the `parts`
        lead: PATH | [PATH]  table (inside a role's `message`, or a part's own
                             parts inside a part template); `lead` names lists
                             of opaque blocks in the message, written first (in
                             the order named) and exactly as given (replayed
                             reasoning blocks, server-side tool blocks)

Absent is not null: an operation yielding MISSING omits its key, and a mapping
whose every key is absent (or a list whose every element is absent) is itself absent. Rendering never mutates its scope
and never shares a mutable constant with the output.

The node API. `parse_template(value, key, env)` turns a template into the parsed rule,
frozen `Node`s, the one intermediate form every consumer asks (never the raw YAML):
`compile_node` generates Python from it, and `Env` keeps the nodes of each template it
compiled, so `Env.fields_read()` / `where_read()` / `reads` / `contents` are answers of
the nodes. Each node answers:

  node.children()   the nodes it is built from (Get's default, When's branches, Obj's
                    values, Array's items, Lookup's rows and default, Merge's `with`)
  node.paths()      the paths it reads itself, as `Read`s
  Obj.writes()      the keys it writes (each absent when its value is)
  walk(node)        the node and all below it, depth first, in the rule file's order
  reads_of(node)    every `Read` below it, in that order

and a `Read` says what it reads: `.expr` (as written), `.steps` (the plain path as keys
and indexes; None for a rich JMESPath path), `.root` (the top-level field; None when it
reads the scope itself), `.key` (where in the rule file) and `.getter` (compiled). The
node classes: Const, Get, When, ListOf, Sum, Obj, Array, Lookup, Apply ($as_object,
$media_type, $json_text), Merge, Content, Refuse, Absent.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import mimetypes
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from ..errors import Note, ResponseError, RuleError, TranslationError
from .codegen import Namespace, indent
from .jsonsafe import (
    JsonValueError,
    WrittenTexts,
    loads_object,
    orjson_bytes,
    orjson_compact,
    orjson_strings_bytes,
    text_encoder,
    where_in,
)
from .loader import Key, RuleSource, did_you_mean, dotted
from .paths import MISSING, Getter, PathSyntaxError, compile_path, either_fields, first_field, simple_steps


class ListPath:
    """A request list whose element paths are formatted only when a note or an error needs one."""

    def __init__(self, name: str, inside: str = "") -> None:
        self.name = name
        self.inside = inside  # the path of what is written inside each element (a tool's `.function`)

    def element_path(self, index: int) -> str:
        return f"{self.name}[{index}]{self.inside}"


class Ctx:
    """Per-call state threaded through rendering: notes collected, where we are.

    `path` is where the current scope sits in the input: a string, or a pair
    (something with `element_path(i)`, i) formatted only when an error or a note
    needs it, so the hot loop builds no strings.
    """

    __slots__ = ("ids", "notes", "objects", "outbound", "path", "provider", "settler", "written")

    # `outbound` and `ids` may be given by position: a class called with keywords builds a dict for them
    # (CPython 3.11), which costs a generated response function more than its own reads of a short answer.
    def __init__(self, provider: str, outbound: bool = False, ids: Mapping[str, str] | None = None) -> None:
        self.ids = ids  # the answered request's sent tool-call id -> caller's id (`RequestBody.id_map`)
        self.notes: list[Note] = []
        self.path: Any = ""
        self.provider = provider
        self.outbound = outbound
        self.settler: Callable[[Ctx, str, Any, str], None] | None = None  # the request side's policy (inbound.py)
        # Whoever reads what is rendered takes an object where `$json_text` would write one's text (a source
        # request's tool-call arguments, for a provider that sends them as objects): it is given as it is.
        self.objects = False
        # Where `$json_text` records the text it has orjson write of an object, with the object, by the text's id
        # (`jsonsafe.WrittenTexts`): a source request's, so the provider's read takes the object, not a parse.
        self.written: WrittenTexts | None = None

    def settle(self, name: str, value: Any, path: str) -> None:
        """An input field the rules write nothing for: as the rule file's policy says, else reported as dropped."""
        if self.settler is None:
            self.notes.append(Note("dropped", path, f"{self.provider} has no counterpart"))
        else:
            self.settler(self, name, value, path)

    def fail(self, path: str, message: str) -> TranslationError:
        cls = ResponseError if self.outbound else TranslationError
        return cls(path, message, provider=self.provider)

    def bad_count(self, path: str, value: Any, wanted: str | None = None) -> bool:
        """A count that is not a non-negative integer: in a response it is left out and noted (the
        answer is never lost over accounting), in a request an error. True: the sum is absent."""
        got = f"{value}" if type(value) is int else type(value).__name__
        wanted = wanted or "a count (an integer from 0)"
        if not self.outbound:
            raise self.fail(path, f"expected {wanted}, got {got}")
        note = Note("dropped", path, f"expected {wanted}, got {got}; left out of usage")
        if note not in self.notes:  # a count several sums read is noted once
            self.notes.append(note)
        return True

    def holder(self, path: str, value: Any) -> bool:
        """Whether the object holding counts is there; one present but not an object is noted like a bad count."""
        if isinstance(value, dict):
            return True
        if value is not MISSING and value is not None:
            self.bad_count(path, value, "an object of counts")
        return False

    def where(self) -> str:
        if isinstance(self.path, tuple):
            owner, index = self.path
            return str(owner.element_path(index))
        return str(self.path)

    def at(self, name: str) -> str:
        """The input path of `name` read from the current scope."""
        base = self.where()
        if not base:
            return name
        return f"{base}.{name}" if name and name[0] != "[" else f"{base}{name}"


Render = Callable[[Any, Ctx], Any]
# How generated lines add a note at a path the template names, where the caller says: (the note's kind, that path,
# its message) -> the statement (`notes.append(Note(...))` at a path known now: no context used for it).
NoteSink = Callable[[str, str, str], str]
# Lines that write a `$content` inline: (node, target, scope, the closure's call, a binder of names) -> the lines,
# or None for the closure's call. The binder returns the name a value is bound to in the generated namespace.
ContentLines = Callable[[Any, str, str, str, Callable[[Any], str]], list[str] | None]
ContentFactory = Callable[[dict[str, Any], Key], Render]


@dataclass
class Env:
    """What a template being compiled may use, and what it was seen to read."""

    source: RuleSource
    content: ContentFactory | None = None
    # Where each compiled template's Python goes (rule key -> source), for `explain --code`: the caller's
    # table, returned on the compiled object it builds (never written into the loaded rule source).
    generated: dict[Key, str] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)  # each template compiled here, parsed
    parsed: dict[Key, Node] = field(default_factory=dict)  # the same, by the rule key it was compiled at
    loose: dict[str, Key] = field(default_factory=dict)  # paths read outside a template (path_getter)

    @property
    def reads(self) -> dict[str, Key]:
        """Each path read (by the templates' nodes, then outside them) -> where it is first read."""
        out: dict[str, Key] = {}
        for node in self.nodes:
            for read in reads_of(node):
                out.setdefault(read.expr, read.key)
        for expr, key in self.loose.items():
            out.setdefault(expr, key)
        return out

    @property
    def contents(self) -> list[frozenset[str] | None]:
        """Each `$content`'s kinds (None: every kind), asked of the nodes."""
        return [node.kinds for root in self.nodes for node in walk(root) if isinstance(node, Content)]

    def where_read(self, name: str) -> Key:
        """The rule key of the first path that reads the top-level field `name`."""
        return next((key for expr, key in self.reads.items() if first_field(expr) == name), ())

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
    "$get": {"default", "required", "type", "doc", "source"},
    "$when": {"is", "in", "present", "empty", "then", "else", "doc", "source"},
    "$lookup": {"table", "skip", "default", "doc", "source"},
    "$as_object": {"wrap", "doc", "source"},
    "$media_type": {"doc", "source"},
    "$list": {"doc", "source"},
    "$sum": {"empty", "doc", "source"},
    "$merge": {"with", "doc", "source"},
    "$content": {"kinds", "lead", "doc", "source"},
    "$json_text": {"doc", "source"},
    "$data_url": {"doc", "source"},
    "$seal": {"onto", "doc", "source"},
    "$unseal": {"part", "doc", "source"},
    "$refuse": {"at", "doc", "source"},
    "$absent": {"doc", "source"},
}
_TESTS = ("is", "in", "present", "empty")  # $when's tests: exactly one is given


def compile_template(value: Any, key: Key, env: Env) -> Render:
    """Compile one template found at `key` of the rule file into one generated function.

    Every operation becomes straight-line Python (a dict built key by key, `.get`
    chains, plain ifs); only `$content` calls a closure (the parts table). The
    source is kept in `env.generated` for `toolnexus explain --code`.
    """
    return compile_node(kept_template(value, key, env), key, env)


def kept_template(value: Any, key: Key, env: Env) -> Node:
    """One template found at `key` parsed and kept in `env` (what it reads, `parsed`), for a caller that pastes
    it into a generated function of its own (`inline_node`) rather than compiling it alone."""
    node = parse_template(value, key, env)
    env.nodes.append(node)
    env.parsed[key] = node
    return node


def compile_node(node: Node, key: Key, env: Env) -> Render:
    """One parsed template as one generated function (its source kept in `env.generated`)."""
    if isinstance(node, Const):
        return _constant(node.value)
    gen = _Codegen()
    gen.scope_dict = "sd"
    body = gen.emit(node, "out", "s")
    prologue = ["sd = s if isinstance(s, dict) else {}"] if gen.firsts or gen.copies else []
    prologue += [f"{var} = sd.get({name!r}, MISSING)" for name, var in gen.firsts.items()]
    return _define(gen, "render(s, c)", prologue + gen.prelude + body, key, env)


@dataclass(frozen=True)
class Inline:
    """One parsed template as lines of a caller's generated function (one that writes many scopes in a loop):
    `head` reads the scope held in the caller's variable (each top-level field once, into the variable `firsts`
    names), `body` leaves the value in the caller's target; `names` is what they use. The lines use `c`, `s`,
    `sd` and numbered names (`f0`, `p0`, `v1`, `k2`): the caller uses none of these."""

    head: list[str]
    body: list[str]
    names: dict[str, Any]
    firsts: dict[str, str]
    whole: bool = False  # the lines use the scope itself (a closure given it, a rich path), not only its fields
    contextual: bool = False  # the lines use the context (`ctx`): a closure given it, a failure, a note into it
    # The variable holding each object key's value once the lines ran (a key of the object written or of an
    # object inside its keys, so always computed), by the key's node's id: a caller reads it there, not back.
    key_values: dict[int, str] = field(default_factory=dict)


def inline_node(
    node: Node,
    scope: str,
    target: str,
    *,
    is_dict: bool = False,
    known: Mapping[str, str] | None = None,
    prefix: str = "",
    content: ContentLines | None = None,
    tag: str = "",
    present: frozenset[str] = frozenset(),
    late: frozenset[str] = frozenset(),
    chains: Mapping[tuple[str | int, ...], str] | None = None,
    texts: frozenset[str] = frozenset(),
    runs: bool = False,
    ctx: str = "c",
    note: NoteSink | None = None,
    into: str | None = None,
    ahead: bool = False,
    made: frozenset[str] = frozenset(),
) -> Inline:
    """`node` inlined (see Inline); `is_dict`: the caller has tested that the scope is a dict; `known`: fields of
    the scope the caller holds in a variable or an expression (field -> it), read from there (a field held as
    `MISSING` is absent: what reads it is written as its absent value, at generation); `present`: known fields
    never absent (written without a test); `late`: fields whose keys cost to read (each made when read): a key
    below one is read where the template reads it (inside its branch), not up front. The scope itself is built
    only when the lines use it whole.
    `prefix` goes before the names it binds; `content` writes a `$content` inline (see ContentLines); `tag`
    ends every variable the lines bind (`s`, `sd`, `f0`, ...), so templates pasted into one function, one
    inside another's loop, stay apart. `chains`: plain key chains below a known field the caller holds each in a
    variable or an expression (`provider.usage.input_tokens` -> a count it derived), read from there with no step
    between, where the template reads it (the scope's field itself not read). `texts`:
    known fields that hold a string or an object (a result's `text`): present, and their `empty` test their falsity.
    `runs`: a run of plain copies of scope fields is written as one loop over those the scope holds (`_Codegen._runs`,
    as a compiled template's is), for a scope of many optional fields (a request's).
    `ctx`: the expression each use of the context is written as (a caller may make it where first used); `note`:
    how a note at a path the template names is written (see NoteSink; None: into the context's notes).
    `into`: a list the lines append the value to where it has one (`target` is then not written).
    `ahead`: an object's keys never absent, up to the first that may be, all go into its one display, their values'
    lines (any, reading nothing of the object) run before it in their order: the object made at its size, not grown
    key by key (without it, only keys of names, literals and required values' checks); `made`: the expressions of
    `chains` never absent (an id made where read), written with no test."""
    known = known or {}
    absent = frozenset(name for name, var in known.items() if var == "MISSING")
    variables = {name: var for name, var in known.items() if var.isidentifier() and name not in absent}
    gen = _Codegen(prefix, content, tag, absent, variables, (present | texts) & known.keys(), late)
    gen.ctx, gen.note, gen.ahead = ctx, note, ahead
    gen.texts = texts & known.keys()
    gen.held_chains = chains or {}
    gen.made = made
    s, sd = f"s{tag}", f"sd{tag}"
    gen.scope_dict = sd if runs else None
    body = gen.emit(node, target, s) if into is None else gen.append(node, into, s)
    reads = [(name, var) for name, var in gen.firsts.items() if name not in known]
    whole = re.search(rf"(?<![\w.']){s}(?![\w'])", "\n".join(gen.prelude + body)) is not None
    head = [f"{s} = {scope}"] if whole else []
    if reads and not gen.copies and is_dict and not whole and scope.isidentifier():  # a dict in the caller's variable
        sd = scope  # (read there, no copy of it first)
    elif reads or gen.copies:
        held = s if whole else scope
        head.append(f"{sd} = {held}" if is_dict else f"{sd} = {held} if isinstance({held}, dict) else {{}}")
    head += [f"{var} = {sd}.get({name!r}, MISSING)" for name, var in reads]
    head += [f"{var} = {known[name]}" for name, var in gen.firsts.items() if name in known and var != known[name]]
    names = {**_NAMES, **gen.names}
    return Inline(head + gen.prelude, body, names, dict(gen.firsts), whole, gen.contextual, dict(gen.key_values))


def _copied_field(node: Node | None) -> str | None:
    """The top-level scope field a plain `$get` of one key copies (None: the node does more, or is no `$get`)."""
    if not isinstance(node, Get) or not node.plain or len(node.reads) != 1:
        return None
    steps = node.reads[0].steps
    return steps[0] if steps is not None and len(steps) == 1 and isinstance(steps[0], str) else None


# The fewest keys in a row, each a plain copy of a scope field, written as one loop over the fields the scope
# holds (`_Codegen._runs`): a request body's many optional fields, of which a request gives a few.
_RUN = 6

# Whether generated lines use the call's context `c` (a note, an error, a closure given it).
USES_CONTEXT = re.compile(r"(?<![\w.'])c(?![\w'])")


def _define(gen: _Codegen, signature: str, lines: list[str], key: Key, env: Env) -> Render:
    source = f"def {signature}:\n" + "".join(f"    {line}\n" for line in lines) + "    return out\n"
    namespace = {**_NAMES, **gen.names}
    exec(compile(source, f"<template {'.'.join(map(str, key))}>", "exec"), namespace)
    render: Render = namespace["render"]
    env.generated[key] = source
    return render


# Template nodes: the parsed rule, what the compiler understood before code is generated (see the
# module docstring, "The node API"). Every consumer asks these, never the raw YAML.


@dataclass(frozen=True)
class Read:
    """One path a template reads: inline steps when plain, else a compiled JMESPath getter."""

    expr: str
    steps: tuple[str | int, ...] | None  # the plain path (keys and indexes), None for a rich JMESPath path
    getter: Getter
    key: Key = ()  # where in the rule file it is written

    @property
    def root(self) -> str | None:
        """The top-level field it reads, or None when it reads the scope itself (`@`, a projection)."""
        if self.steps is not None:
            return self.steps[0] if self.steps and isinstance(self.steps[0], str) else None
        return first_field(self.expr)


class Node:
    """A parsed template value: what it reads (`paths`), what it is built from (`children`)."""

    def children(self) -> tuple[Node, ...]:
        return ()

    def paths(self) -> tuple[Read, ...]:
        return ()


@dataclass(frozen=True)
class Const(Node):
    value: Any


@dataclass(frozen=True)
class Get(Node):
    reads: tuple[Read, ...]
    default: Node | None
    required: bool
    out_name: str
    wanted: str | None = None  # `type`: the JSON type a typed read takes (null is absent, another type an error)

    @property
    def plain(self) -> bool:
        """Only reads: no default, not required, untyped (what a reader may read inline as a path)."""
        return self.default is None and not self.required and self.wanted is None

    def children(self) -> tuple[Node, ...]:
        return () if self.default is None else (self.default,)

    def paths(self) -> tuple[Read, ...]:
        return self.reads


@dataclass(frozen=True)
class When(Node):
    path: Read
    expected: Any  # the values (`is`, `in`), or (True,)/(False,) for `present` and `empty`
    then: Node
    otherwise: Node | None = None  # the `else` node, or None (absent)
    test: str = "is"  # is (a value equal to one of `expected`) | present | empty

    def children(self) -> tuple[Node, ...]:
        return (self.then,) if self.otherwise is None else (self.then, self.otherwise)

    def paths(self) -> tuple[Read, ...]:
        return (self.path,)


@dataclass(frozen=True)
class ListOf(Node):
    path: Read

    def paths(self) -> tuple[Read, ...]:
        return (self.path,)


@dataclass(frozen=True)
class Sum(Node):
    reads: tuple[Read, ...]
    empty: Any  # the value when no path is present (MISSING unless the rule says `empty:`)
    holders: tuple[Read, ...] = ()  # the objects holding the counts: `empty` applies only when they are there

    def paths(self) -> tuple[Read, ...]:
        return self.reads + self.holders


@dataclass(frozen=True)
class Obj(Node):
    items: tuple[tuple[str, Node], ...]

    def children(self) -> tuple[Node, ...]:
        return tuple(node for _, node in self.items)

    def writes(self) -> tuple[str, ...]:
        """The keys it writes (each absent when its value is)."""
        return tuple(name for name, _ in self.items)


@dataclass(frozen=True)
class Array(Node):
    items: tuple[Node, ...]

    def children(self) -> tuple[Node, ...]:
        return self.items


@dataclass(frozen=True)
class Lookup(Node):
    """`$lookup`: a table row per OpenAI value, compiled into one closure over the whole scope."""

    path: Read
    rows: tuple[tuple[str, Node], ...]
    default: Node | None
    render: Render
    skip: tuple[str, ...] = ()  # the values that send nothing

    def children(self) -> tuple[Node, ...]:
        return tuple(node for _, node in self.rows) + (() if self.default is None else (self.default,))

    def paths(self) -> tuple[Read, ...]:
        return (self.path,)


@dataclass(frozen=True)
class Apply(Node):
    """A value function applied to one read (`$as_object`, `$media_type`); it gets the Ctx for its errors."""

    path: Read
    function: Callable[[Any, Ctx], Any]
    keys: tuple[str, ...] = ()  # the keys of the object it reads, when it reads only those (`$data_url`)

    def paths(self) -> tuple[Read, ...]:
        return (self.path,)


@dataclass(frozen=True)
class Merge(Node):
    path: Read
    sets: tuple[tuple[str, Node], ...]

    def children(self) -> tuple[Node, ...]:
        return tuple(node for _, node in self.sets)

    def paths(self) -> tuple[Read, ...]:
        return (self.path,)


CONTENT_POLICIES = ("text_or_blocks", "blocks", "one")


@dataclass(frozen=True)
class Content(Node):
    """`$content`: the message's (or part's) parts, written through the parts table's closure."""

    render: Render
    kinds: frozenset[str] | None  # the part kinds it writes, None for every kind
    reads: tuple[Read, ...]  # `parts`, and the `lead` path when given
    policy: str = "blocks"  # text_or_blocks | blocks | one (the message's one part, written as the whole value)

    def paths(self) -> tuple[Read, ...]:
        return self.reads


@dataclass(frozen=True)
class Refuse(Node):
    """`$refuse`: reaching it is a TranslationError at `at` (or the scope's path) with the rule's own message."""

    message: str
    at: str | None  # a request path, resolved from the scope's path; None: the scope's path itself
    where: str  # the rule's file:line and key, appended to the message


@dataclass(frozen=True)
class Absent(Node):
    """`$absent: true`: writes nothing (the key is not written)."""


def walk(node: Node) -> Iterator[Node]:
    """The node and everything it is built from, depth first, in the rule file's order."""
    yield node
    for child in node.children():
        yield from walk(child)


def reads_of(node: Node) -> Iterator[Read]:
    """Every path the template reads, in the rule file's order."""
    for each in walk(node):
        yield from each.paths()


def parse_template(value: Any, key: Key, env: Env) -> Node:
    """Understand one template value (recursively), checking it as the rule file's author wrote it."""
    if isinstance(value, dict):
        ops = [k for k in value if k.startswith("$")]
        if ops:
            return _op_node(value, ops, key, env)
        items = tuple((k, parse_template(v, (*key, k), env)) for k, v in value.items())
        if all(isinstance(n, Const) for _, n in items):
            return Const(value)
        return Obj(items)
    if isinstance(value, list):
        elements = tuple(parse_template(v, (*key, i), env) for i, v in enumerate(value))
        if all(isinstance(n, Const) for n in elements):
            return Const(value)
        return Array(elements)
    if isinstance(value, str) and value.startswith("$"):
        raise env.error(
            key, f"'{value}': strings starting with '$' are reserved for operations (write {_as_operation(value)})"
        )
    return Const(value)


def _as_operation(text: str) -> str:
    """The mapping a `$...` string was probably meant as: `$get top_p` -> `{$get: top_p}`."""
    head, _, rest = text.partition(" ")
    operation = head if head in _OPTIONS else (difflib.get_close_matches(head, list(_OPTIONS), n=1) or [""])[0]
    if operation:
        return f"{{{operation}: {rest.strip() or 'PATH'}}}"
    return f"{{$get: {text[1:].strip() or 'PATH'}}}"  # `$temperature`: a field, read


def _read(expr: Any, key: Key, env: Env) -> Read:
    getter = _compiled_path(expr, key, env)
    steps = simple_steps(expr)
    return Read(expr, None if steps is None else tuple(steps), getter, key)


def _holders(paths: tuple[Read, ...], key: Key, env: Env) -> tuple[Read, ...]:
    """The objects holding `$sum`'s counts (`usage` for `usage.output_tokens`), each once; top-level
    and non-plain paths have none to check."""
    out: dict[str, Read] = {}
    for read in paths:
        if read.steps and len(read.steps) > 1 and isinstance(read.steps[-1], str):
            parent = read.expr[: -len(read.steps[-1]) - 1]
            if read.expr.endswith(f".{read.steps[-1]}") and parent not in out:
                out[parent] = _read(parent, key, env)
    return tuple(out.values())


def _reads(value: Any, key: Key, env: Env) -> tuple[Read, ...]:
    exprs = value if isinstance(value, list) else [value]
    if not exprs:
        raise env.error(key, "expected at least one path")
    return tuple(_read(e, (*key, i) if isinstance(value, list) else key, env) for i, e in enumerate(exprs))


def _one_read(value: Any, key: Key, env: Env) -> Read:
    if isinstance(value, list):
        raise env.error(key, "takes one path, not a list")
    return _read(value, key, env)


def _op_node(spec: dict[str, Any], ops: list[str], key: Key, env: Env) -> Node:
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
        default = parse_template(spec["default"], (*key, "default"), env) if "default" in spec else None
        wanted = spec.get("type")
        if wanted is not None and wanted not in JSON_TYPES:
            raise env.error((*key, "type"), f"unknown type {wanted!r}{did_you_mean(str(wanted), JSON_TYPES)}")
        out = str(key[-1]) if key else "?"
        return Get(_reads(arg, at, env), default, bool(spec.get("required", False)), out, wanted)
    if op == "$when":
        tests = [t for t in _TESTS if t in spec]
        if len(tests) != 1 or "then" not in spec:
            raise env.error(
                key,
                "$when needs `then` and one of `is` (a value), `in` (a list of values),"
                " `present` or `empty` (true or false)",
            )
        test = tests[0]
        if test == "in" and not isinstance(spec["in"], list):
            raise env.error((*key, "in"), "`in` takes a list of values")
        if test in ("present", "empty") and type(spec[test]) is not bool:
            raise env.error((*key, test), f"`{test}` takes true or false")
        expected = tuple(spec["in"]) if test == "in" else (spec[test],)
        otherwise = parse_template(spec["else"], (*key, "else"), env) if "else" in spec else None
        then = parse_template(spec["then"], (*key, "then"), env)
        return When(_one_read(arg, at, env), expected, then, otherwise, "is" if test == "in" else test)
    if op == "$refuse":
        if not isinstance(arg, str) or not arg.strip():
            raise env.error(at, "$refuse takes the message the caller sees (a non-empty string)")
        where_to = spec.get("at")
        if where_to is not None and (not isinstance(where_to, str) or not where_to):
            raise env.error((*key, "at"), "`at` takes a request path (a string)")
        line, _ = env.source.where(at)
        where = f"{env.source.file}:{line} {dotted(key)}" if line else env.source.file
        return Refuse(arg, where_to, where)
    if op == "$absent":
        if arg is not True:
            raise env.error(at, "$absent takes true (write nothing here)")
        return Absent()
    if op == "$json_text":
        return Apply(_one_read(arg, at, env), json_text)
    if op == "$lookup":
        return _lookup(spec, _one_read(arg, at, env), key, env)
    if op == "$as_object":
        wrap = spec.get("wrap")
        if not isinstance(wrap, str) or not wrap:
            raise env.error(key, "$as_object needs `wrap`: the key a non-object value goes under")
        return Apply(_one_read(arg, at, env), partial(as_object, wrap=wrap, where=str(arg)))
    if op == "$media_type":
        return Apply(_one_read(arg, at, env), media_type)
    if op == "$data_url":
        return Apply(_one_read(arg, at, env), partial(data_url, where=str(arg)), ("media_type", "data"))
    if op == "$seal":
        onto = spec.get("onto")
        if onto is not None and (not isinstance(onto, str) or not onto):
            raise env.error((*key, "onto"), "`onto` takes the path of the string the state is sealed onto")
        state = _one_read(arg, at, env)
        if onto is None:
            return Apply(state, sealed_alone)
        return Apply(_read("@", at, env), sealer(state, _one_read(onto, (*key, "onto"), env)))
    if op == "$unseal":
        part = spec.get("part")
        if part not in ("value", "state"):
            raise env.error((*key, "part"), "$unseal takes `part`: value (the string) or state (what was sealed)")
        return Apply(_one_read(arg, at, env), partial(unseal, part=part))
    if op == "$list":
        return ListOf(_one_read(arg, at, env))
    if op == "$sum":
        if not isinstance(arg, list):
            raise env.error(at, "$sum takes a list of paths")
        empty = spec.get("empty", MISSING)
        if empty is not MISSING and type(empty) is not int:
            raise env.error((*key, "empty"), "`empty` must be an integer")
        paths = _reads(arg, at, env)
        return Sum(paths, empty, _holders(paths, at, env) if empty is not MISSING else ())
    if op == "$merge":
        with_spec = spec.get("with", {})
        if not isinstance(with_spec, dict):
            raise env.error((*key, "with"), "`with` must be a mapping")
        sets = tuple((k, parse_template(v, (*key, "with", k), env)) for k, v in with_spec.items())
        return Merge(_one_read(arg, at, env), sets)
    # $content
    if env.content is None:
        raise env.error(at, "$content is only allowed in a role's `message`")
    if arg not in CONTENT_POLICIES:
        raise env.error(
            at,
            f"$content takes text_or_blocks, blocks or one, got {arg!r}" + did_you_mean(str(arg), CONTENT_POLICIES),
        )
    kinds = spec.get("kinds")
    reads = [_read("parts", at, env)]
    lead = spec.get("lead")
    for j, path in enumerate([lead] if isinstance(lead, str) else lead if isinstance(lead, list) else []):
        at_lead = (*key, "lead") if isinstance(lead, str) else (*key, "lead", j)
        reads.append(_read(path, at_lead, env))  # the message key it replays counts as read
    kinds_read = frozenset(kinds) if isinstance(kinds, list) else None
    return Content(env.content(spec, key), kinds_read, tuple(reads), str(arg))


# `$get`'s `type`: the JSON type names and the Python values that are each (a bool is not a number).
JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def typed(ctx: Ctx, value: Any, wanted: str, expr: str) -> Any:
    """A typed `$get`'s read: null is absent; a value of another type is an error at its path, so no answer
    carries an object its format's readers refuse and no request sends one its provider would."""
    if value is None:
        return MISSING
    if JSON_TYPES[wanted](value):
        return value
    article = "an" if wanted[0] in "aeio" else "a"
    raise ctx.fail(ctx.at(expr), f"expected {article} {wanted}, got {type(value).__name__}")


def pick_first(ctx: Ctx, *candidates: Any) -> Any:
    """`$get: [a, b]` at run time: the first present value; the others present are reported as dropped."""
    found: tuple[str, Any] | None = None
    for expr, value in zip(candidates[::2], candidates[1::2], strict=True):
        if value is MISSING:
            continue
        if found is None:
            found = (expr, value)
        else:
            ctx.notes.append(Note("dropped", ctx.at(expr), f"{found[0]} was also given and is sent instead"))
    return MISSING if found is None else found[1]


# A generated line that only copies a variable read up front (`v3 = f1`).


class _Codegen(Namespace):
    """Turns template nodes into lines of Python; closures, getters and constants go into `names`."""

    def __init__(
        self,
        prefix: str = "",
        content: ContentLines | None = None,
        tag: str = "",
        absent: frozenset[str] = frozenset(),
        held: Mapping[str, str] | None = None,
        present: frozenset[str] = frozenset(),
        late: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(tag=tag)  # the tag ends every name made here (templates pasted into one function stay apart)
        self.late = late  # scope fields whose keys are read where used, not up front (see `inline_node`)
        self.absent = absent  # scope fields known to be absent: their reads are MISSING, decided here
        self.held = held or {}  # scope fields the caller holds in a variable: read from it, not copied
        self.present = present  # scope fields known to be there (not MISSING): written without a test
        self.present_vars: set[str] = set()  # the variables holding them
        # The lines that only refuse an absent required value read up front (`_get`), and the displays built of
        # names and literals alone (`_obj`): an object's keys of those go into its display, the checks first.
        self.checks: set[str] = set()
        self.pure: set[str] = set()
        self.ahead = False  # any lines of a key's value before the display (`inline_node`'s `ahead`)
        self.texts: frozenset[str] = frozenset()  # of those, strings or objects: `empty` is falsity
        self.prefix = prefix  # before the names bound in `names`, for several inlined templates in one namespace
        self.content = content  # `$content` written inline where this gives lines (else its closure is called)
        self.firsts: dict[str, str] = {}  # scope key -> the variable that reads it once, up front
        self.chains: dict[tuple[str | int, ...], str] = {}  # plain key chains read up front
        self.held_chains: Mapping[tuple[str | int, ...], str] = {}  # plain key chains the caller holds (`inline_node`)
        self.made: frozenset[str] = frozenset()  # of their expressions, those never absent
        self.prelude: list[str] = []  # their reads, after the `firsts`
        # The scope's dict variable where a run of plain reads is copied from it whole (`_copied`; None: never),
        # and whether the lines do so.
        self.scope_dict: str | None = None
        self.copies = False
        self.ctx = "c"  # what each use of the context is written as (`inline_node`)
        self.note: NoteSink | None = None  # how a note at a path named here is written (None: into the context)
        self.contextual = False  # whether the lines use the context
        self.key_values: dict[int, str] = {}  # each object key's variable, by its node's id (see Inline)

    def context(self) -> str:
        """The context as the lines use it (so they are known to)."""
        self.contextual = True
        return self.ctx

    def _noted(self, kind: str, path: str, message: str) -> str:
        """A note at `path` (as the template names it) added where the caller says, else to the context."""
        if self.note is not None:
            return self.note(kind, path, message)
        return f"{self.context()}.notes.append(Note({kind!r}, {self.context()}.at({path!r}), {message!r}))"

    def _name(self, value: Any) -> str:
        """A literal for plain scalars, else a name bound in the generated function's namespace."""
        if value is None or type(value) in (str, int, bool):
            return repr(value)
        return self.name(value, self.prefix + "k")

    def _text(self, node: When) -> str | None:
        """The field a `$when` tests when it is one known to hold a string or an object (its only step), tested for
        a bool."""
        steps = node.path.steps
        if steps is None or len(steps) != 1 or steps[0] not in self.texts or type(node.expected[0]) is not bool:
            return None
        return str(steps[0])

    def _read(self, read: Read, target: str, scope: str) -> list[str]:
        if read.steps is None:
            either = self._either(read.expr)
            return [f"{target} = {either or f'{self._name(read.getter)}({scope})'}"]
        steps = read.steps
        if steps and steps[0] in self.absent:
            return [f"{target} = MISSING"]
        held = self.held_chains.get(steps)
        if held is not None:  # the caller holds its value (a count it derived, an id it makes where read)
            if held in self.made:
                self.present_vars.add(held)
            return [f"{target} = {held}"]
        if steps and isinstance(steps[0], str):
            first = self.firsts.setdefault(steps[0], self.held.get(steps[0]) or f"f{len(self.firsts)}{self.tag}")
            if steps[0] in self.present:
                self.present_vars.add(first)
            if len(steps) > 1 and all(isinstance(step, str) for step in steps):
                if steps[0] in self.late:
                    return read_lines(target, first, steps[1:])
                return [f"{target} = {self._chain(first, steps)}"]
            lines = [f"{target} = {first}"]
            steps = steps[1:]
        else:
            lines = [f"{target} = {scope}"]
        return lines + read_lines(target, target, steps) if steps else lines

    def _either(self, expr: str) -> str | None:
        """`a || b || ...` of fields the caller holds, each but the last a string (whose truth is JMESPath's), as
        Python's `or` of their variables (which gives the last as it is, as `||` does); else None."""
        fields = either_fields(expr)
        if fields is None or not all(f in self.held and f not in self.absent for f in fields):
            return None
        if not all(f in self.texts for f in fields[:-1]):
            return None
        for name in fields:
            self.firsts.setdefault(name, self.held[name])
        return f"({' or '.join(self.held[name] for name in fields)})"

    def _chain(self, first: str, steps: tuple[str | int, ...]) -> str:
        """A plain key chain read once, up front (`usage.input_tokens` feeds several sums): its variable. Each
        prefix is a chain of its own, read once (`usage.a` and `usage.b` read `usage` once)."""
        source = first
        for end in range(2, len(steps) + 1):
            var = self.chains.get(steps[:end])
            if var is None:
                var = self.chains[steps[:end]] = f"p{len(self.chains)}{self.tag}"
                step = steps[end - 1]
                self.prelude.append(
                    f"{var} = {source}.get({step!r}, MISSING) if isinstance({source}, dict) else MISSING"
                )
            source = var
        return source

    def emit(self, node: Any, target: str, scope: str) -> list[str]:
        """Lines that leave the node's value (possibly MISSING) in `target`."""
        if isinstance(node, Const):
            if isinstance(node.value, (dict, list)) and not node.value:  # a new empty one, written as such
                return [f"{target} = {'{}' if isinstance(node.value, dict) else '[]'}"]
            if isinstance(node.value, (dict, list)):
                display = _display(node.value)  # built anew each time it runs, as `fresh_copy` builds a copy
                return [f"{target} = {display if display is not None else f'fresh_copy({self._name(node.value)})'}"]
            return [f"{target} = {self._name(node.value)}"]
        if isinstance(node, Content):
            call = f"{self._name(node.render)}({scope}, {self.context()})"
            inline = None if self.content is None else self.content(node, target, scope, call, self._name)
            return inline if inline is not None else [f"{target} = {call}"]
        if isinstance(node, Lookup):  # the value absent (most requests) and a row of one scalar inline; another
            lines = self._read(node.path, target, scope)  # row through the table's closure (it may need the Ctx)
            lines.append(f"if {target} is MISSING or {target} is None:")
            lines += indent(self.emit(node.default, target, scope) if node.default else [f"{target} = MISSING"])
            scalars = {
                value: row.value
                for value, row in node.rows
                if isinstance(row, Const) and not isinstance(row.value, (dict, list))
            }
            if scalars:
                table = self._name(scalars)
                lines.append(f"elif type({target}) is str and {target} in {table}: {target} = {table}[{target}]")
            return [*lines, f"else: {target} = {self._name(node.render)}({scope}, {self.context()})"]
        if isinstance(node, Apply) and isinstance(node.function, KeySeal):  # no state: the `onto` string as it is
            state = self.fresh("v")
            lines = [*self._read(node.function.state, state, scope), *self._read(node.function.onto, target, scope)]
            call = f"{target} = {self._name(node.function)}({scope}, {self.context()})"
            return [
                *lines,
                f"if {state} is not MISSING and {state} is not None: {call}",
                f"elif {target} is None: {target} = MISSING",
            ]
        if isinstance(node, Apply):
            lines = self._read(node.path, target, scope)
            if lines == [f"{target} = MISSING"]:  # an absent field: the function is never applied
                return lines
            function, fn = self._name(node.function), node.function
            if fn is sealed_alone:  # no Ctx made for it: the state sealed where there, as `sealed_alone` does
                return [
                    *lines,
                    f"if {target} is not MISSING: {target} = MISSING if {target} is None else sealed({target}, '')",
                ]
            call = f"{target} = {function}({target}, {self.context()})"
            if isinstance(fn, partial) and fn.func is unseal:  # a string with no seal: all value, no state
                unsealed = f"type({target}) is str and {SEAL!r} not in {target}"
                if fn.keywords["part"] == "value":  # (the plain string, the common case, told by the first test)
                    sealed_or_other = f"type({target}) is not str or {SEAL!r} in {target}"
                    return [*lines, f"if ({sealed_or_other}) and {target} is not MISSING: {call}"]
                return [*lines, f"if {unsealed}: {target} = MISSING", f"elif {target} is not MISSING: {call}"]
            lines.append(f"if {target} is not MISSING: {call}")
            return lines
        if isinstance(node, Merge):
            return self._merge(node, target, scope)
        if isinstance(node, Absent):
            return [f"{target} = MISSING"]
        if isinstance(node, Refuse):
            c = self.context()
            where = f"{c}.at({node.at!r})" if node.at is not None else f"{c}.where()"
            return [f"raise {c}.fail({where}, {f'{node.message} ({node.where})'!r})"]
        if isinstance(node, Get):
            return self._get(node, target, scope)
        if isinstance(node, When):
            return self._when(node, target, scope, None)
        if isinstance(node, ListOf):
            lines = self._read(node.path, target, scope)
            lines.append(f"if type({target}) is str: {target} = [{target}]")
            lines.append(f"elif {target} is not MISSING and not isinstance({target}, list):")
            lines.append(
                f"    raise {self.context()}.fail({self.context()}.at({node.path.expr!r}),"
                f" 'expected a string or a list, got ' + type({target}).__name__)"
            )
            return lines
        if isinstance(node, Sum):
            bad = self.fresh("bad")
            lines = [f"{target} = MISSING", f"{bad} = False"]
            for read in node.reads:
                tmp = self.fresh("v")
                lines += self._read(read, tmp, scope)
                lines.append(f"if {tmp} is not MISSING and {tmp} is not None:")
                lines.append(
                    f"    if type({tmp}) is not int or {tmp} < 0:"
                    f" {bad} = {self.context()}.bad_count({self.context()}.at({read.expr!r}), {tmp})"
                )
                lines.append(f"    else: {target} = {tmp} if {target} is MISSING else {target} + {tmp}")
            held = []
            for read in node.holders:  # only with `empty`: read before the branch below
                tmp = self.fresh("h")
                lines += self._read(read, tmp, scope)
                held.append(f"{self.context()}.holder({self.context()}.at({read.expr!r}), {tmp}), ")
            lines.append(f"if {bad}: {target} = MISSING")
            if node.empty is not MISSING:
                lines.append(f"elif {target} is MISSING and all(({''.join(held)})): {target} = {node.empty!r}")
            return lines
        if isinstance(node, Obj):
            return self._obj(node, target, scope)
        assert isinstance(node, Array)
        lines = [f"{target} = []"]
        for child in node.items:
            lines += self.append(child, target, scope)
        if not _never_missing(node):
            lines.append(f"if not {target}: {target} = MISSING")  # every element absent: the list is absent
        return lines

    def append(self, node: Node, into: str, scope: str) -> list[str]:
        """Lines that append the node's value to the list in `into` where it has one: a `$when` appends under its
        test (no MISSING written to be tested after), a value always there with no test, an absent one never."""
        if isinstance(node, When):
            return self._when(node, self.fresh("v"), scope, into)
        before, value, sure = self._value(node, scope)
        if value == "MISSING" and not before:  # absent: never added
            return []
        added = f"{into}.append({value})"
        return [*before, added if sure else f"if {value} is not MISSING: {added}"]

    def _value(self, node: Node, scope: str) -> tuple[list[str], str, bool]:
        """Lines leaving a node's value in an expression, and whether it is never MISSING (`_never_missing`, or a
        field known to be there): a constant's literal or display, or a variable or a display of names and
        literals the lines end by copying (the copy not made), else a fresh variable."""
        if isinstance(node, Const) and not isinstance(node.value, (dict, list)):
            return [], self._name(node.value), True
        tmp = self.fresh("v")
        lines = self.emit(node, tmp, scope)
        *before, last = lines
        value = last.removeprefix(f"{tmp} = ")
        sure = _never_missing(node) or value in self.present_vars or value in self.pure  # (a display: a key always)
        copied = value != last and not re.search(rf"\b{tmp}\b", "\n".join(before))
        if copied and (value.isidentifier() or value in self.pure or isinstance(node, Const)):
            return before, value, sure
        return lines, tmp, sure

    def _obj(self, node: Obj, target: str, scope: str) -> list[str]:
        """An object written key by key: the keys never absent before any other line (but the checks of required
        values read up front, moved before it) in one dict display, then each key (one that may be absent
        tested); an object with no key always written is absent when empty. With `ahead` (`inline_node`), every
        key's lines first and the object one display, two where one key may be absent (`_displayed`)."""
        checks: list[str] = []  # the required values' checks, before the display
        leading: list[str] = []  # the display's keys
        lines: list[str] = []
        always = False
        runs, copied = self._runs(node)
        keys: list[tuple[str, list[str], str, bool]] = []  # each written key: its name, lines, value, never absent
        for at, (name, child) in enumerate(node.items):
            run = runs.get(at)
            if run is not None:
                lines += self._copied(run, target)
            if at in copied:
                continue
            before, value, sure = self._value(child, scope)
            if value.isidentifier():
                self.key_values[id(child)] = value
            if value == "MISSING" and not before:  # absent: the key is never written
                continue
            keys.append((name, before, value, sure))
            if not sure:
                lines += [*before, f"if {value} is not MISSING: {target}[{name!r}] = {value}"]
                continue
            always = True
            # (its value a name, a literal or a display of them; with `ahead`, any lines not reading the object)
            ahead = self.ahead and not re.search(rf"(?<![\w.']){re.escape(target)}(?![\w'])", "\n".join(before))
            if not lines and (ahead or self.checks.issuperset(before)):
                checks += before
                leading.append(f"{name!r}: {value}")
            else:
                lines += [*before, f"{target}[{name!r}] = {value}"]
        displayed = self._displayed(keys, target) if self.ahead and not runs and lines else None
        if displayed is not None:
            return displayed
        display = f"{{{', '.join(leading)}}}"
        if not lines:
            self.pure.add(display)
        if not always:
            lines.append(f"if not {target}: {target} = MISSING")
        return [*checks, f"{target} = {display}", *lines]

    def _displayed(self, keys: list[tuple[str, list[str], str, bool]], target: str) -> list[str] | None:
        """An object of keys never absent but one, written as two displays (with that key and without) after every
        key's lines in their order: made at its size, not grown key by key; None where the lines read the object,
        or more or fewer keys than one may be absent, or none is always there."""
        maybe = [n for n, (_, _, _, sure) in enumerate(keys) if not sure]
        ahead = [line for _, before, _, _ in keys for line in before]
        if len(maybe) != 1 or len(keys) < 2 or re.search(rf"(?<![\w.']){re.escape(target)}(?![\w'])", "\n".join(ahead)):
            return None
        value = keys[maybe[0]][2]
        both = [f"{name!r}: {value}" for name, _, value, _ in keys]
        without = [item for n, item in enumerate(both) if n != maybe[0]]
        return [
            *ahead,
            f"if {value} is not MISSING: {target} = {{{', '.join(both)}}}",
            f"else: {target} = {{{', '.join(without)}}}",
        ]

    def _when(self, node: When, target: str, scope: str, into: str | None) -> list[str]:
        """A `$when`: its value left in `target` (an absent one where no branch holds), or with `into` appended to
        that list by the branch that holds (nothing where none does)."""

        def branch(taken: Node | None) -> list[str]:
            if taken is None:
                return [f"{target} = MISSING"] if into is None else []
            return self.emit(taken, target, scope) if into is None else self.append(taken, into, scope)

        lines = self._read(node.path, target, scope)
        if lines == [f"{target} = MISSING"]:  # an absent field: the branch is known now
            holds = {"present": False, "empty": True}.get(node.test) == node.expected[0]
            return branch(node.then if holds else node.otherwise)
        held = lines[0].removeprefix(f"{target} = ") if len(lines) == 1 else ""
        if held.isidentifier():  # a variable read up front: tested as it is, not copied first
            tested, lines = held, []
        else:
            tested = target
        if node.test == "present":
            lines.append(f"if ({tested} is not MISSING and {tested} is not None) is {node.expected[0]!r}:")
        elif node.test == "empty" and self._text(node) is not None:
            lines.append(f"if {'not ' if node.expected[0] is True else ''}{tested}:")
        elif node.test == "empty":
            lines.append(f"if is_empty({tested}) is {node.expected[0]!r}:")
        elif len(node.expected) == 1:
            expected = self._name(node.expected[0])
            lines.append(f"if type({tested}) is type({expected}) and {tested} == {expected}:")
        elif all(type(e) is str for e in node.expected):  # strings alone: one set lookup
            options = self._name(frozenset(node.expected))
            lines.append(f"if type({tested}) is str and {tested} in {options}:")
        else:
            options = self._name(node.expected)
            lines.append(f"if any(type({tested}) is type(e) and {tested} == e for e in {options}):")
        lines += indent(branch(node.then) or ["pass"])
        otherwise = branch(node.otherwise)
        if otherwise == [f"{target} = MISSING"]:
            lines.append(f"else: {target} = MISSING")
        elif otherwise:
            lines += ["else:", *indent(otherwise)]
        return lines

    def _runs(self, node: Obj) -> tuple[dict[int, list[tuple[str, str]]], set[int]]:
        """The runs of an object's keys that each copy one scope field as it is (a plain `$get` of a top-level
        key not read up front, each field once), _RUN or more in a row: by the index of their first key, their
        (key, field) pairs; and the indexes of every key in a run."""
        runs: dict[int, list[tuple[str, str]]] = {}
        if self.scope_dict is None:
            return runs, set()
        current: list[tuple[int, str, str]] = []
        for at, (name, child) in enumerate((*node.items, ("", None))):
            field = _copied_field(child)
            taken = self.firsts.keys() | self.present | self.absent | {f for _, _, f in current}
            if field is not None and field not in taken:
                current.append((at, name, field))
                continue
            if len(current) >= _RUN:
                runs[current[0][0]] = [(key, field) for _, key, field in current]
            current = []
        return runs, {at for first, run in runs.items() for at in range(first, first + len(run))}

    def _copied(self, run: list[tuple[str, str]], target: str) -> list[str]:
        """A run of copied fields (`_runs`) written in one loop over the fields the scope holds, in the
        template's order: a request holds a few of the many fields a body may copy (a field holding MISSING,
        a section that wrote nothing, is absent)."""
        self.copies = True
        sd, order = self.scope_dict, {field: at for at, (_, field) in enumerate(run)}
        fields = f"sorted({self._name(frozenset(order))}.intersection({sd}), key={self._name(order)}.__getitem__)"
        key = "k_" if all(key == field for key, field in run) else f"{self._name({f: k for k, f in run})}[k_]"
        return [f"for k_ in {fields}:", f"    if (v_ := {sd}[k_]) is not MISSING: {target}[{key}] = v_"]

    def _merge(self, node: Merge, target: str, scope: str) -> list[str]:
        expr = node.path.expr
        lines = self._read(node.path, target, scope)
        c = self.context()
        lines.append(f"if not isinstance({target}, dict): raise {c}.fail({c}.at({expr!r}), 'expected a mapping')")
        lines.append(f"{target} = dict({target})")
        for name, child in node.sets:
            tmp = self.fresh("v")
            lines += self.emit(child, tmp, scope)
            # `source` is, by the middle form's convention, the input object at c's path.
            where = name if expr == "source" else f"{expr}.{name}"
            lines.append(f"if {tmp} is not MISSING: {target}[{name!r}] = {tmp}")
            noted = self._noted("dropped", where, "the rules write nothing for it here")
            lines.append(f"elif {target}.pop({name!r}, None) is not None: {noted}")
        return lines

    def _get(self, node: Get, target: str, scope: str) -> list[str]:
        def check(read: Read, var: str) -> list[str]:
            if node.wanted is None:
                return []
            return [f"if {var} is not MISSING: {var} = typed({self.context()}, {var}, {node.wanted!r}, {read.expr!r})"]

        if len(node.reads) == 1:
            lines = self._read(node.reads[0], target, scope) + check(node.reads[0], target)
        else:
            lines, args, temps = [], [], []
            for read in node.reads:
                tmp = self.fresh("v")
                lines += self._read(read, tmp, scope) + check(read, tmp)
                args += [repr(read.expr), tmp]
                temps.append(tmp)
            present = " + ".join(f"({tmp} is not MISSING)" for tmp in temps)
            lines.append(f"if {present} > 1: {target} = pick_first({self.context()}, {', '.join(args)})")
            fallback = " ".join(f"{t} if {t} is not MISSING else" for t in temps[:-1])
            lines.append(f"else: {target} = {fallback} {temps[-1]}")
        if node.required:
            c = self.context()
            refuse = f" is MISSING: raise {c}.fail({c}.at({node.reads[0].expr!r}), 'is required')"
            copied = lines[0].removeprefix(f"{target} = ") if len(lines) == 1 else ""
            if copied.isidentifier() and copied != "MISSING":  # a variable read up front: tested there, then copied
                self.checks.add(f"if {copied}{refuse}")
                lines = [f"if {copied}{refuse}", *lines]
            else:
                lines.append(f"if {target}{refuse}")
        if node.default is not None:
            # Reported only when the default gives a value (a conditional default may give none).
            message = f"not given; the rule's default is sent as {node.out_name}"
            lines.append(f"if {target} is MISSING:")
            lines += indent(self.emit(node.default, target, scope))
            noted = self._noted("synthesized", node.reads[-1].expr, message)
            lines.append(f"    {noted}" if _never_missing(node.default) else f"    if {target} is not MISSING: {noted}")
        return lines


def _never_missing(node: Node) -> bool:
    """Whether the node's lines always leave a value (never MISSING), known now: a constant, a `$get` with a default
    that always has one, a required `$get` (after its check), a `$when` whose branches always have one, an object or
    a list with a member always written."""
    if isinstance(node, Const):
        return True
    if isinstance(node, Array):
        return any(_never_missing(child) for child in node.items)
    if isinstance(node, When):
        return node.otherwise is not None and _never_missing(node.then) and _never_missing(node.otherwise)
    if isinstance(node, Get):
        return node.required or (node.default is not None and _never_missing(node.default))
    return isinstance(node, Obj) and any(_never_missing(child) for _, child in node.items)


def _constant(value: Any) -> Render:
    """A template that is one constant: a container built anew on every call (from its Python display when it has
    one, as generated code builds one: a small tool_choice object on every request), else its value."""
    if isinstance(value, (dict, list)):
        display = _display(value)
        if display is not None:
            render: Render = eval(f"lambda scope, ctx: {display}", {})  # a display of plain data (`_display`)
            return render
        return lambda scope, ctx: fresh_copy(value)
    return lambda scope, ctx: value


def _display(value: Any) -> str | None:
    """A Python display (`{'mode': 'AUTO'}`) of a small constant of strings, ints, bools and None (in objects
    with string keys and lists), which builds a fresh copy each time it runs, cheaper than `fresh_copy`'s walk;
    None for anything else (floats among them: their text is not always Python's)."""
    text = repr(value)
    if len(text) > 300:
        return None
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if not all(type(key) is str for key in item):
                return None
            stack += item.values()
        elif type(item) is list:
            stack += item
        elif type(item) not in (str, int, bool, type(None)):
            return None
    return text


def fresh_copy(value: Any) -> Any:
    """A copy of plain JSON-like data (cheaper than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: fresh_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fresh_copy(v) for v in value]
    return value


def is_empty(value: Any) -> bool:
    """`$when`'s `empty` test: absent, null, "", [] and {} are empty."""
    return value is MISSING or value is None or (type(value) in (str, list, dict) and not value)


# The types whose `is_empty` is their falsity (`not value`): a value known to be of one is tested by its truth
# (`fold.folded`'s `falsity`).
EMPTY_IS_FALSITY: frozenset[type] = frozenset({str, list, dict, type(None)})


_COMPACT_TEXT = text_encoder(ensure_ascii=False, compact=True, allow_nan=True)  # json.dumps's output, built once


def json_text(value: Any, ctx: Ctx) -> Any:
    """`$json_text`: the value serialized as compact JSON text (keys in their order, non-ASCII kept); an object
    as it is where the reader takes objects (`Ctx.objects`: no text written to be parsed back)."""
    if ctx.objects and type(value) is dict:
        return value
    text = orjson_compact(value)
    if text is not None:
        if ctx.written is not None:
            ctx.written[id(text)] = (text, value)
        return text
    try:
        return _COMPACT_TEXT(value)
    except Exception:  # a cycle, a depth or a value JSON has no text for: json.dumps raises its own error, as ever
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def path_getter(expression: Any, key: Key, env: Env) -> Getter:
    """Compile a rule path found at `key` outside a template (recorded in `env` as read)."""
    getter = _compiled_path(expression, key, env)
    env.loose.setdefault(expression, key)
    return getter


def _compiled_path(expression: Any, key: Key, env: Env) -> Getter:
    """Compile a rule path found at `key`, as a located RuleError when it does not parse."""
    if not isinstance(expression, str):
        raise env.error(key, f"expected a path (a string), got {type(expression).__name__}")
    try:
        getter = compile_path(expression)
    except PathSyntaxError as exc:
        shown = expression if len(expression) <= 80 else expression[:77] + "..."
        raise env.error(key, f"bad path ({exc}): {shown}") from None
    return getter


def as_object(value: Any, ctx: Ctx, *, wrap: str, where: str) -> Any:
    """`$as_object`: a mapping stays; JSON text of an object becomes it; anything else is wrapped.

    JSON text that parses but is refused (deeper than the limit, NaN, a lone surrogate) is an error at `where`.
    """
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.lstrip()[:1] == "{":
        try:
            parsed = loads_object(value)
        except JsonValueError as exc:
            raise ctx.fail(where_in(ctx.at(where), exc.where), f"its JSON text {exc.message}") from None
        if parsed is not None:
            return parsed
    return {wrap: value}


# The extension table (Python's, plus the system's files, as mimetypes.guess_type reads), built
# here at import and never changed after: the module-level mimetypes functions fill a shared
# table lazily on first use, and any code may add to it.
_MEDIA_TYPES = mimetypes.MimeTypes([name for name in mimetypes.knownfiles if os.path.isfile(name)])


def media_type(url: Any, ctx: Ctx) -> Any:
    """`$media_type`: the media type a URL's file extension names, else absent."""
    if not isinstance(url, str):
        return MISSING
    guessed, _ = _MEDIA_TYPES.guess_type(urlsplit(url).path)
    return guessed or MISSING


def data_url(value: Any, ctx: Ctx, *, where: str) -> Any:
    """`$data_url`: an object of `media_type` and base64 `data` as one `data:` URL (absent stays absent)."""
    if value is MISSING or value is None:
        return MISSING
    kind = value.get("media_type") if isinstance(value, dict) else None
    data = value.get("data") if isinstance(value, dict) else None
    if type(kind) is not str or not kind or type(data) is not str:
        raise ctx.fail(ctx.at(where), "must be an object with a media_type and base64 data (strings)")
    return f"data:{kind};base64,{data}"


SEAL = "_tns_"  # between a string and its sealed state: letters, digits, _ and - only, as ids allow
_ESCAPED_TEXT = text_encoder(ensure_ascii=True, compact=True, allow_nan=True)  # for a lone surrogate, built once


def seal(scope: Any, ctx: Ctx, *, state: Getter, onto: Getter) -> Any:
    """`$seal`: the state at the path sealed (base64url JSON) onto the string at `onto`, for a format that has no
    field of its own to carry the state back in; no state: the `onto` string as it is."""
    text = onto(scope)
    carried = state(scope)
    if carried is MISSING or carried is None or text is MISSING or text is None:
        return MISSING if text is None else text
    return sealed(carried, text)


def sealed_alone(state: Any, ctx: Ctx) -> Any:
    """`$seal` with no `onto`: the state (there, not null) sealed onto "", for a field of its own to carry; else
    absent. A function of the state's value alone, so generated code reads the state as any field (no scope)."""
    return MISSING if state is MISSING or state is None else sealed(state, "")


def sealed(carried: Any, text: Any, written: bytes | None = None) -> str:
    """State there (not null) sealed onto a string there: the string, `SEAL`, the state as base64url JSON.

    The JSON is `json.dumps(state, ensure_ascii=False, separators=(",", ":"))` in UTF-8 (orjson's where it is the
    same): a state's non-ASCII text, escaped, cost the standard encoder most of a seal's work and made the seal
    longer. A lone surrogate, which UTF-8 cannot carry, is written escaped; `unseal` reads both.
    base64's two letters replaced: two replaces cost a tenth of `urlsafe_b64encode`'s translate. `written`: the
    state's JSON as its caller already has it (`sealed_texts`)."""
    if written is None:
        written = orjson_bytes(carried)
    if written is None:
        try:
            written = _COMPACT_TEXT(carried).encode()
        except UnicodeEncodeError:
            written = _ESCAPED_TEXT(carried).encode()
    packed = binascii.b2a_base64(written, newline=False).rstrip(b"=")
    return f"{text}{SEAL}{packed.replace(b'+', b'-').replace(b'/', b'_').decode()}"


def sealed_texts(carried: dict[str, Any], text: str) -> str:
    """`sealed` of an object its caller knows holds only strings, in objects and lists (a fused answer's message
    extras, each object merged into them tested where the read met it): its text is not searched for what orjson
    writes otherwise (null for NaN, its short small floats), the searches that cost a third of a seal
    (`orjson_strings_bytes`). Where orjson refuses it (a lone surrogate) or is not installed: `sealed`."""
    return sealed(carried, text, orjson_strings_bytes(carried))


def sealer(state: Read, onto: Read) -> Callable[[Any, Ctx], Any]:
    """`seal` over these reads; where both are one key of the scope (a call's `extra_content` onto its `id`,
    once per call of an answer), a KeySeal."""
    state_key = state.steps[0] if state.steps is not None and len(state.steps) == 1 else None
    onto_key = onto.steps[0] if onto.steps is not None and len(onto.steps) == 1 else None
    if type(state_key) is str and type(onto_key) is str:
        return KeySeal(state, onto, state_key, onto_key)
    return partial(seal, state=state.getter, onto=onto.getter)


class KeySeal:
    """`$seal` of one key of the scope onto another: with no state there (absent or null), the `onto` string as
    it is, read off the scope directly; else `seal`. Generated code reads the two keys itself, as its other reads
    (`_Codegen.emit`), and calls this only when there is state to seal."""

    __slots__ = ("func", "general", "keywords", "onto", "onto_key", "state", "state_key")

    def __init__(self, state: Read, onto: Read, state_key: str, onto_key: str) -> None:
        self.state, self.onto, self.state_key, self.onto_key = state, onto, state_key, onto_key
        self.general = partial(seal, state=state.getter, onto=onto.getter)
        self.func, self.keywords = seal, self.general.keywords  # as the partial it stands for (`toolnexus diff`)

    def __call__(self, scope: Any, ctx: Ctx) -> Any:
        if type(scope) is not dict or scope.get(self.state_key) is not None:
            return self.general(scope, ctx)
        text = scope.get(self.onto_key, MISSING)
        return MISSING if text is None else text


def unseal(text: Any, ctx: Ctx, *, part: str) -> Any:
    """`$unseal`: a `$seal`ed string's own value (`part: value`; an unsealed string is all value) or the
    state sealed onto it (`part: state`; absent when none, or when the seal does not decode)."""
    if type(text) is not str:
        return text if part == "value" else MISSING
    head, sep, packed = text.rpartition(SEAL)
    try:
        state = json.loads(base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))) if sep else MISSING
    except ValueError:
        state = MISSING
    if part == "state":
        return state
    return head if state is not MISSING else text


def _lookup(spec: dict[str, Any], read: Read, key: Key, env: Env) -> Lookup:
    """Compile `$lookup`: a table from an OpenAI string value to a provider template."""
    table = spec.get("table")
    if not isinstance(table, dict) or not table:
        raise env.error(key, "$lookup needs `table`: a mapping from a value to its template")
    skip = spec.get("skip", [])
    if not isinstance(skip, list) or not all(isinstance(v, str) for v in skip):
        raise env.error((*key, "skip"), "`skip` takes a list of values")
    row_nodes = tuple((name, parse_template(row, (*key, "table", name), env)) for name, row in table.items())
    default_node = parse_template(spec["default"], (*key, "default"), env) if "default" in spec else None
    rows = {name: compile_node(node, (*key, "table", name), env) for name, node in row_nodes}
    default = None if default_node is None else compile_node(default_node, (*key, "default"), env)
    known = ", ".join([*rows, *skip])
    why = f": {spec['doc']}" if isinstance(spec.get("doc"), str) else ""
    skipped = frozenset(skip)
    expr, getter = read.expr, read.getter

    def render(scope: Any, ctx: Ctx) -> Any:
        value = getter(scope)
        if value is MISSING or value is None:
            return MISSING if default is None else default(scope, ctx)
        row = rows.get(value) if type(value) is str else None
        if row is not None:
            return row(scope, ctx)
        if type(value) is not str:
            raise ctx.fail(ctx.at(expr), f"must be a string, got {type(value).__name__}")
        if value in skipped:
            return MISSING
        raise ctx.fail(ctx.at(expr), f"{value!r} cannot be sent to {ctx.provider} (the rules know {known}){why}")

    return Lookup(read, row_nodes, default_node, render, tuple(skip))


def read_lines(target: str, scope: str, steps: tuple[str | int, ...]) -> list[str]:
    """Lines of generated code leaving the value at the plain path `steps` below `scope` (or MISSING) in `target`."""
    lines = [] if steps else [f"{target} = {scope}"]
    source = scope
    for step in steps:
        if isinstance(step, str):
            lines.append(f"{target} = {source}.get({step!r}, MISSING) if isinstance({source}, dict) else MISSING")
        else:
            lines.append(
                f"{target} = {source}[{step}] if isinstance({source}, list)"
                f" and -len({source}) <= {step} < len({source}) else MISSING"
            )
        source = target
    return lines


# What every generated template may use besides its own names.
_NAMES: dict[str, Any] = {
    "MISSING": MISSING,
    "fresh_copy": fresh_copy,
    "Note": Note,
    "pick_first": pick_first,
    "is_empty": is_empty,
    "sealed": sealed,
    "typed": typed,
}
