"""Source formats: a request in another API's shape in, the answer back in that shape (README "Source formats").

A format file (`rules/formats/<name>.yaml`) is data, like a provider's rule file. Its `request`
section writes the normal form every provider's rules read (a Chat Completions request with the
round-trip keys of README "Round trips") from the format's request; its `answer` section writes
a `TranslateResult` back in the format's shape; its `stream` section writes the format's stream
events from the pieces a provider stream yields. Where the format's own provider rule file (its
`provider:`) already maps the wire format to the normal form, `derive` reads that mapping
backwards (`derive_body`, `derive_declaration`, `inverse_table`, `inverse_usage`) instead of
declaring it twice. Paths in errors and notes name the format's request (`messages[2].content[1]`):
each normal-form element keeps where it came from (`Origins`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from ..errors import Note, ResponseError, RuleError, TranslationError
from ..language.loader import Key, RuleSource, builtin_rules_dir, parse_rule_text, rule_schema
from ..language.paths import MISSING, compile_path
from ..language.templates import (
    Apply,
    Const,
    Ctx,
    Env,
    Get,
    ListOf,
    Lookup,
    Node,
    Obj,
    Render,
    Sum,
    compile_template,
    parse_template,
    reads_of,
    unseal,
)
from .result import TranslateResult

FORMATS_DIR = "formats"
PLAIN = "openai"  # the normal form itself: no format file, today's API


@dataclass(frozen=True)
class Unsupported:
    action: str
    accept: tuple[Any, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class Kind:
    """How one block kind of a role is read: a `part` of the message, an `item` of one of its lists, or a
    `message` of its own. `reads`: the block keys it reads (None: the whole block); `renames`: a normal-form
    key path -> the block key it came from (for error paths); `blocks`: keys re-read as blocks."""

    mode: str
    render: Render
    into: str = ""
    reads: frozenset[str] | None = None
    renames: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    blocks: tuple[str, ...] = ()
    state: tuple[str, str] | None = None  # (block key, message key): a block whose key holds sealed state sets it


Origins = dict[str, tuple[str, Mapping[str, str]]]  # normal-form path -> (the format's path, key renames below it)
Settle = tuple[list[Note], str]  # a call's notes and its unknown-fields policy
NOTHING: Mapping[str, Unsupported] = MappingProxyType({})  # no key listed: the policy decides


@dataclass(frozen=True)
class SourceFormat:
    """One compiled format file."""

    name: str
    file: str
    provider: str
    doc: str
    fields: Render
    field_reads: frozenset[str]
    field_origin: Mapping[str, str]  # a normal-form field -> the format's field it is read from
    unsupported: Mapping[str, Unsupported]
    system: str | None
    each: str
    kind: str
    roles: Mapping[str, Mapping[str, Kind]]
    plain_text: frozenset[str]  # roles whose one plain text part is written as a string (`text_alone`)
    tools_each: str | None
    tool: Render | None
    tool_reads: frozenset[str]
    tool_renames: Mapping[str, str]
    tool_unsupported: Mapping[str, Unsupported]
    answer: Render
    blocks_into: str
    blocks: tuple[tuple[Any, Render], ...]  # (the list it walks or None, the template of one block)
    stream: Mapping[str, Render]  # start, open.KIND, piece.KIND, close
    stream_end: tuple[Render, ...]
    reasoning_kinds: frozenset[str]  # the answer's block kinds that hold reasoning (the stream closes them last)
    stop_table: Mapping[str, str]
    stop_key: str
    usage: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...]

    # ------------------------------------------------------------------ request side

    def read(self, request: Any, unknown_fields: str = "error") -> tuple[dict[str, Any], Origins, list[Note]]:
        """The format's request -> the normal-form request, where each element came from, and what was dropped.
        A key the format neither reads nor lists is refused, or with `unknown_fields="drop"` dropped (noted)."""
        if not isinstance(request, dict):
            raise self._fail("", f"the request must be an object, got {type(request).__name__}")
        notes: list[Note] = []
        for name, value in request.items():
            if name in self.field_reads or name == self.each or name == self.system or name == self.tools_each:
                continue
            self._settle(name, value, name, self.unsupported, notes, unknown_fields)
        ctx = Ctx(self.name)
        hub: dict[str, Any] = self.fields(request, ctx) or {}
        notes += [n._replace(path=n.path.removeprefix(DERIVED + ".")) for n in ctx.notes]  # the answer's own key
        origins: Origins = {name: (source, {}) for name, source in self.field_origin.items() if name in hub}
        messages: list[dict[str, Any]] = []
        if self.system is not None and request.get(self.system) is not None:
            self._message("system", request[self.system], self.system, messages, origins, (notes, unknown_fields))
        transcript = request.get(self.each, MISSING)
        if transcript is MISSING:
            raise self._fail(self.each, "is required")
        if not isinstance(transcript, list):
            raise self._fail(self.each, f"must be a list, got {type(transcript).__name__}")
        for i, msg in enumerate(transcript):
            where = f"{self.each}[{i}]"
            if not isinstance(msg, dict):
                raise self._fail(where, f"must be an object, got {type(msg).__name__}")
            for key in msg:
                if key not in ("role", "content"):
                    raise self._fail(f"{where}.{key}", f"is not a {self.name} message key")
            role = msg.get("role")
            if role not in self.roles or role == "system":
                raise self._fail(f"{where}.role", f"must be one of {', '.join(r for r in self.roles if r != 'system')}")
            if "content" not in msg:
                raise self._fail(f"{where}.content", "is required")
            self._message(str(role), msg["content"], where, messages, origins, (notes, unknown_fields))
        hub["messages"] = messages
        if self.tools_each is not None and request.get(self.tools_each) is not None:
            hub["tools"] = self._tools(request[self.tools_each], origins, notes, unknown_fields)
        return hub, origins, notes

    def _message(
        self, role: str, content: Any, where: str, out: list[dict[str, Any]], origins: Origins, settle: Settle
    ) -> None:
        """One message's blocks, in order: parts join the current normal-form message, a `message` kind
        stands alone (closing the current one), an `item` joins one of the current message's lists."""
        kinds = self.roles[role]
        current: dict[str, Any] | None = None
        first = len(out)  # the normal-form messages this one writes start here

        def open_current() -> dict[str, Any]:
            nonlocal current
            if current is None:
                current = {"role": role, "content": []}
                origins[f"messages[{len(out)}]"] = (where, {})
                out.append(current)
            return current

        if isinstance(content, str):
            origins[f"messages[{len(out)}]"] = (where, {})
            out.append({"role": role, "content": content})
            return
        if not isinstance(content, list):
            raise self._fail(f"{where}.content" if role != "system" else where, "must be a string or a list of blocks")
        base = f"{where}.content" if role != "system" else where
        for j, block in enumerate(content):
            path = f"{base}[{j}]"
            kind = self._kind(kinds, block, path, settle)
            if kind.state is not None:
                state = unseal(block.get(kind.state[0]), Ctx(self.name), part="state")
                if state is not MISSING:
                    open_current()[kind.state[1]] = state
                    continue
            ctx = Ctx(self.name)
            ctx.path = path
            written = kind.render(block, ctx)
            if kind.mode == "message":
                current = None
                for key in kind.blocks:
                    if isinstance(written.get(key), list):
                        written[key] = self._parts(
                            kinds, written[key], f"{path}.{key}", f"messages[{len(out)}]", origins, settle
                        )
                origins[f"messages[{len(out)}]"] = (path, kind.renames)
                out.append(written)
                continue
            msg = open_current()
            hub_index = len(out) - 1
            if kind.mode == "part":
                origins[f"messages[{hub_index}].content[{len(msg['content'])}]"] = (path, kind.renames)
                msg["content"].append(written)
            else:
                items = msg.setdefault(kind.into, [])
                if not items:  # the list as a whole: where its first item came from
                    origins[f"messages[{hub_index}].{kind.into}"] = (path, {})
                origins[f"messages[{hub_index}].{kind.into}[{len(items)}]"] = (path, kind.renames)
                items.append(written)
        for msg in out[first:]:
            content = msg.get("content")
            if content == [] and msg["role"] != "user":
                msg["content"] = None
            elif role in self.plain_text and isinstance(content, list) and len(content) == 1:
                part = content[0]
                if isinstance(part, dict) and part.keys() == {"type", "text"} and part["type"] == "text":
                    msg["content"] = part["text"]

    def _parts(
        self, kinds: Mapping[str, Kind], blocks: list[Any], base: str, hub: str, origins: Origins, settle: Settle
    ) -> list[Any]:
        """Blocks inside a block (a tool result's content), read as parts."""
        parts = []
        for j, block in enumerate(blocks):
            path = f"{base}[{j}]"
            kind = self._kind(kinds, block, path, settle)
            if kind.mode != "part":
                raise self._fail(f"{path}.{self.kind}", f"a {block.get(self.kind)!r} block cannot be nested here")
            ctx = Ctx(self.name)
            ctx.path = path
            origins[f"{hub}.content[{j}]"] = (path, kind.renames)
            parts.append(kind.render(block, ctx))
        return parts

    def _kind(self, kinds: Mapping[str, Kind], block: Any, path: str, settle: Settle) -> Kind:
        if not isinstance(block, dict):
            raise self._fail(path, f"must be an object, got {type(block).__name__}")
        name = block.get(self.kind)
        kind = kinds.get(name) if isinstance(name, str) else None
        if kind is None:
            raise self._fail(f"{path}.{self.kind}", f"a {name!r} block is not read here; known: {', '.join(kinds)}")
        if kind.reads is not None:
            for key in block:
                if key != self.kind and key not in kind.reads:
                    self._settle(key, block[key], f"{path}.{key}", NOTHING, *settle)
        return kind

    def _tools(self, tools: Any, origins: Origins, notes: list[Note], unknown_fields: str) -> list[Any]:
        if not isinstance(tools, list):
            raise self._fail(self.tools_each or "", f"must be a list, got {type(tools).__name__}")
        assert self.tool is not None
        out = []
        for i, tool in enumerate(tools):
            path = f"{self.tools_each}[{i}]"
            if not isinstance(tool, dict):
                raise self._fail(path, f"must be an object, got {type(tool).__name__}")
            for key, value in tool.items():
                if key not in self.tool_reads:
                    self._settle(key, value, f"{path}.{key}", self.tool_unsupported, notes, unknown_fields)
            ctx = Ctx(self.name)
            ctx.path = path
            origins[f"tools[{i}]"] = (path, self.tool_renames)
            out.append({"type": "function", "function": self.tool(tool, ctx)})
        return out

    def _settle(
        self, name: str, value: Any, path: str, table: Mapping[str, Unsupported], notes: list[Note], policy: str
    ) -> None:
        rule = table.get(name)
        if rule is None and policy == "drop":
            notes.append(Note("dropped", path, f"not mapped by the {self.name} format"))
            return
        if rule is None:
            raise self._fail(path, f"is not mapped by the {self.name} format (rules/{FORMATS_DIR}/{self.name}.yaml)")
        if value is None or any(value == ok for ok in rule.accept):
            return
        if rule.action == "drop":
            notes.append(Note("dropped", path, rule.doc or f"the {self.name} format has no counterpart"))
            return
        raise self._fail(path, "cannot be translated" + (f": {rule.doc}" if rule.doc else ""))

    def _fail(self, path: str, message: str) -> TranslationError:
        return TranslationError(path, message, provider=self.name)

    # ------------------------------------------------------------------ answer side

    def view(self, result: TranslateResult, answer_id: Any, notes: list[Note]) -> dict[str, Any]:
        """The result as the answer templates read it, with what the format's provider would have said
        (`provider`: its stop reason and usage, derived from its response section read backwards)."""
        calls = []
        for call in result.tool_calls:
            try:
                arguments = json.loads(call.arguments) if call.arguments else {}
            except ValueError:
                arguments = call.arguments
            calls.append({"id": call.id, "name": call.name, "input": arguments, "extra_content": call.extra_content})
        said: dict[str, Any] = {}
        stop = self.stop_table.get(result.finish_reason)
        if stop is None:
            notes.append(Note("dropped", "finish_reason", f"{result.finish_reason!r} has no {self.name} counterpart"))
        else:
            said[self.stop_key] = stop
        for target, total, others in self.usage:
            value = _dig(result.usage, total)
            if type(value) is not int:
                continue
            for other in others:
                part = _dig(result.usage, other)
                value -= part if type(part) is int else 0
            if value < 0:  # the counts contradict each other: left out, never clamped
                notes.append(
                    Note("inconsistent", ".".join(total), f"less than the counts it includes; no {target[-1]}")
                )
                continue
            _put(said, target, value)
        if not (isinstance(answer_id, str) and answer_id):
            answer_id = f"msg_{uuid.uuid4().hex[:24]}"
            notes.append(Note("synthesized", "id", "the provider's answer names no id"))
        return {
            "id": answer_id,
            "model": result.model,
            "text": result.text,
            "reasoning_content": result.reasoning_content,
            "tool_calls": calls,
            "finish_reason": result.finish_reason,
            "usage": result.usage,
            "message_extras": result.message_extras,
            "refusal": result.refusal,
            DERIVED: said,
        }

    def write(self, result: TranslateResult, answer_id: Any = None, notes: list[Note] | None = None) -> dict[str, Any]:
        """A result as the format's whole answer (what it could not say, noted in `notes`)."""
        notes = [] if notes is None else notes
        return self.write_view(self.view(result, answer_id, notes), notes)

    def write_view(self, view: dict[str, Any], notes: list[Note]) -> dict[str, Any]:
        """The answer templates over a view; their notes (a default written) join `notes`."""
        ctx = Ctx(self.name, outbound=True)
        written: dict[str, Any] = self.answer(view, ctx)
        blocks = []
        for each, render in self.blocks:
            elements = [view] if each is None else each(view)
            for element in elements if isinstance(elements, list) else ():
                block = render(element, ctx)
                if block is not MISSING:
                    blocks.append(block)
        written[self.blocks_into] = blocks
        notes += [n._replace(path=n.path.removeprefix(DERIVED + ".")) for n in ctx.notes]  # the answer's own key
        return written

    def event(self, name: str, scope: Any) -> dict[str, Any]:
        """One stream event, written by the `stream.events` template `name`."""
        out: dict[str, Any] = self.stream[name](scope, Ctx(self.name, outbound=True))
        return out


def _dig(value: Any, steps: tuple[str, ...]) -> Any:
    for step in steps:
        value = value.get(step) if isinstance(value, dict) else None
    return value


def _put(out: dict[str, Any], steps: tuple[str, ...], value: Any) -> None:
    for step in steps[:-1]:
        out = out.setdefault(step, {})
    out[steps[-1]] = value


# ---------------------------------------------------------------------- derivation: a provider's rules backwards


def leaves(node: Node, at: tuple[str, ...] = (), applied: bool = False) -> Iterator[tuple[tuple[str, ...], str]]:
    """The (written key path, read path) pairs of a template's plain reads: an object's `$get`s (its first
    path) and `$list`s. Only these read backwards as a rename; anything else is declared. `applied`: also
    a value function's one read (`$json_text: input`), for naming where a written value came from."""
    if isinstance(node, Obj):
        for name, child in node.items:
            yield from leaves(child, (*at, name), applied)
    elif applied and isinstance(node, Apply) and node.path.steps is not None:
        yield at, node.path.expr
    elif isinstance(node, Get) and node.reads[0].steps is not None and node.reads[0].root is not None:
        yield at, node.reads[0].expr
    elif isinstance(node, ListOf) and node.path.steps is not None:
        yield at, node.path.expr


def nest(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """`[("function.name", "name")]` -> `{function: {name: {$get: name}}}`: a template from renames
    (each pair: the path written, the path read)."""
    out: dict[str, Any] = {}
    for target, read in pairs:
        steps = target.split(".")
        here = out
        for step in steps[:-1]:
            here = here.setdefault(step, {})
        here[steps[-1]] = {"$get": read}
    return out


def inverse_table(table: Mapping[str, Any]) -> dict[str, str]:
    """A table read backwards: each value -> the first key that gives it (the row the file lists first)."""
    out: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, str):
            out.setdefault(value, key)
    return out


def inverse_usage(
    node: Node,
) -> tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...]:
    """A usage template read backwards: each `$get` count is its result count again, and a `$sum` whose terms
    are all known but one gives that one as the total less the others (input_tokens = prompt_tokens less the
    cache counts). Returns (provider path, result total path, result paths subtracted) triples."""
    gets: dict[str, tuple[str, ...]] = {}
    sums: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def visit(n: Node, at: tuple[str, ...]) -> None:
        if isinstance(n, Obj):
            for name, child in n.items:
                visit(child, (*at, name))
        elif isinstance(n, Get) and n.reads[0].steps is not None:
            gets[n.reads[0].expr] = at
        elif isinstance(n, Sum) and all(r.steps is not None for r in n.reads):
            sums.append((at, tuple(r.expr for r in n.reads)))

    visit(node, ())
    out: list[tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]]]
    out = [(tuple(expr.split(".")), at, ()) for expr, at in gets.items()]
    for at, terms in sums:
        unknown = [t for t in terms if t not in gets]
        if len(unknown) == 1:
            out.append((tuple(unknown[0].split(".")), at, tuple(gets[t] for t in terms if t in gets)))
    return tuple(out)


def _lookup_rows(node: Node) -> dict[str, Any] | None:
    """A `$lookup` whose rows are all constants: value -> row (a table a format can read backwards)."""
    if not isinstance(node, Lookup):
        return None
    rows = {}
    for value, row in node.rows:
        if not isinstance(row, Const):
            return None
        rows[value] = row.value
    return rows


# ---------------------------------------------------------------------- loading


def format_schema() -> dict[str, Any]:
    schema = rule_schema()
    return {"$ref": "#/$defs/format_file", "$defs": schema["$defs"]}


def _validate(source: RuleSource) -> None:
    cls = jsonschema.validators.validator_for(format_schema())
    errors = sorted(cls(format_schema()).iter_errors(source.data), key=lambda e: (-len(e.absolute_path), str(e.path)))
    if errors:
        raise source.error(tuple(errors[0].absolute_path), errors[0].message)


def compile_format(path: Path, providers: Mapping[str, Any], display: str | None = None) -> SourceFormat:
    """One format file compiled against the rulebook holding its provider (for what it derives)."""
    display = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read: {exc}", file=display) from None
    source = parse_rule_text(text, display)
    _validate(source)
    data = source.data
    name = data["format"]
    provider = providers.get(data["provider"])
    if provider is None:
        raise source.error(("provider",), f"no rules for provider '{data['provider']}' to derive from")
    rules = provider.source  # the provider's loaded rule file: its templates, parsed again as nodes here
    env = Env(source)
    theirs = Env(rules)
    request = data["request"]
    messages = request["messages"]
    own_reads = {messages["each"], messages.get("system")}
    tools_spec = request.get("tools")
    if tools_spec:
        own_reads.add(tools_spec["each"])
    fields, reads, origin = _compile_fields(request, rules, source, env, own_reads)

    roles = _compile_roles(messages["roles"], env)
    tool_render, tool_reads, tool_renames = _compile_tools(tools_spec, rules, source, env)

    answer = data["answer"]
    finish = _section(rules, ("response", "finish_reason"), source, ("provider",))
    stop_table = inverse_table(finish["table"])
    usage_node = parse_template(
        _section(rules, ("response", "usage"), source, ("provider",)), ("response", "usage"), theirs
    )
    stream_spec = data.get("stream", {})
    stream_renders: dict[str, Render] = {}
    for group in ("open", "piece"):
        for kind, template in stream_spec.get(group, {}).items():
            stream_renders[f"{group}.{kind}"] = compile_template(template, ("stream", group, kind), env)
    for single in ("start", "close"):
        if single in stream_spec:
            stream_renders[single] = compile_template(stream_spec[single], ("stream", single), env)
    blocks_spec = answer.get("blocks", {"into": "content", "from": []})
    return SourceFormat(
        name=name,
        file=display,
        provider=data["provider"],
        doc=data.get("doc", ""),
        fields=fields,
        field_reads=frozenset(reads),
        field_origin=MappingProxyType(origin),
        unsupported=_unsupported(request.get("unsupported", {})),
        system=messages.get("system"),
        each=messages["each"],
        kind=messages["kind"],
        roles=MappingProxyType(roles),
        plain_text=frozenset(r for r, spec in messages["roles"].items() if spec.get("text_alone")),
        tools_each=tools_spec["each"] if tools_spec else None,
        tool=tool_render,
        tool_reads=tool_reads,
        tool_renames=MappingProxyType(tool_renames),
        tool_unsupported=_unsupported(tools_spec.get("unsupported", {}) if tools_spec else {}),
        answer=compile_template(answer["message"], ("answer", "message"), env),
        blocks_into=blocks_spec["into"],
        blocks=tuple(
            (
                compile_path(entry["each"]) if "each" in entry else None,
                compile_template(entry["as"], ("answer", "blocks", "from", i, "as"), env),
            )
            for i, entry in enumerate(blocks_spec["from"])
        ),
        stream=MappingProxyType(stream_renders),
        reasoning_kinds=frozenset(stream_spec.get("reasoning", ())),
        stream_end=tuple(
            compile_template(t, ("stream", "end", i), env) for i, t in enumerate(stream_spec.get("end", []))
        ),
        stop_table=MappingProxyType(stop_table),
        stop_key=str(finish["from"]),
        usage=inverse_usage(usage_node),
    )


DERIVED = "provider"  # the view key holding what the format's provider would have said (derived)
WHOLE = "/"  # a rename ending so names a value function's read: what lies below it has no counterpart


def _renames(node: Node) -> dict[str, str]:
    """A kind's written key -> the block key it reads (a value function's read marked WHOLE)."""
    plain = {".".join(w): r for w, r in leaves(node)}
    return {
        key: plain.get(key, read + WHOLE) for key, read in ((".".join(w), r) for w, r in leaves(node, applied=True))
    }


def _compile_roles(spec: Mapping[str, Any], env: Env) -> dict[str, Mapping[str, Kind]]:
    """Each role's block kinds, compiled."""
    roles: dict[str, Mapping[str, Kind]] = {}
    for role, role_spec in spec.items():
        kinds = {}
        for kind, entry in role_spec["kinds"].items():
            at: Key = ("request", "messages", "roles", role, "kinds", kind)
            mode = next(m for m in ("part", "item", "message") if m in entry)
            template = entry["as"] if mode == "item" else entry[mode]
            node = parse_template(template, (*at, mode), env)
            kinds[kind] = Kind(
                mode=mode,
                render=compile_template(template, (*at, mode), env),
                into=entry.get("item", ""),
                reads=_block_reads(node, tuple(entry.get("blocks", ()))),
                renames=MappingProxyType(_renames(node)),
                blocks=tuple(entry.get("blocks", ())),
                state=(entry["state"]["from"], entry["state"]["set"]) if "state" in entry else None,
            )
        roles[role] = MappingProxyType(kinds)
    return roles


def _compile_tools(
    tools_spec: Mapping[str, Any] | None, rules: RuleSource, source: RuleSource, env: Env
) -> tuple[Render | None, frozenset[str], dict[str, str]]:
    """A tool declaration read into the normal form's function (the provider's declaration read backwards
    under the declared `fields`): its render, the tool keys it reads, and its renames."""
    tool_render = None
    tool_reads: frozenset[str] = frozenset()
    tool_renames: dict[str, str] = {}
    if tools_spec:
        pairs: list[tuple[str, str]] = []
        if tools_spec.get("derive") == "declaration":
            declaration = _section(rules, ("tools", "declaration"), source, ("request", "tools", "derive"))
            node = parse_template(declaration, ("tools", "declaration"), Env(rules))
            pairs = [(read, ".".join(written)) for written, read in leaves(node)]
        template = nest(pairs) | tools_spec.get("fields", {})
        tool_node = parse_template(template, ("request", "tools"), env)
        tool_render = compile_template(template, ("request", "tools"), env)
        tool_reads = frozenset(r.split(".")[0] for r in _reads_of(tool_node))
        tool_renames = {f"function.{w[0]}" if w else "": r for w, r in leaves(tool_node)}
    return tool_render, tool_reads, tool_renames


def _compile_fields(
    request: Mapping[str, Any], rules: RuleSource, source: RuleSource, env: Env, own_reads: set[Any]
) -> tuple[Render, set[str], dict[str, str]]:
    """The normal-form fields: the provider's body read backwards (`derive: [body]`) under the declared
    `fields`. Returns the render, the format's fields it reads, and each normal-form field's origin."""
    declared = dict(request.get("fields", {}))
    theirs = Env(rules)
    origin: dict[str, str] = {}
    renamed: dict[str, str] = {}  # a normal-form path -> the format's field it is read from
    tables: dict[str, Render] = {}  # a normal-form field -> a constant-row table read backwards
    if "body" in request.get("derive", []):
        body = _section(rules, ("request", "body"), source, ("request", "derive"))
        for key, template in body.items():
            node = parse_template(template, ("request", "body", key), theirs)
            rows = _lookup_rows(node)
            if isinstance(node, Lookup) and rows is not None and key not in own_reads:
                target = node.path.expr
                tables[target] = _nearest(target, key, rows, str(source.data["format"]))
                origin[target] = key
                continue
            for written, read in leaves(node, (key,)):
                if written[0] in own_reads or read.split(".")[0] in declared or read in ("messages", "tools"):
                    continue
                renamed.setdefault(read, ".".join(written))
                origin.setdefault(read.split(".")[0], ".".join(written))
    render = compile_template(nest(list(renamed.items())) | declared, ("request", "fields"), env)
    reads = _roots(env) | set(origin.values())
    for key, template in declared.items():
        first = next(iter(_reads_of(parse_template(template, ("request", "fields", key), Env(source)))), None)
        if first is not None:
            origin.setdefault(key, first)

    def fields(scope: Any, ctx: Ctx) -> Any:
        out = render(scope, ctx) or {}
        for key, table in tables.items():
            value = table(scope, ctx)
            if value is not MISSING:
                out[key] = value
        return out

    return fields, {r.split(".")[0] for r in reads}, origin


def _section(rules: RuleSource, key: Key, fmt: RuleSource, asked_at: Key) -> Any:
    """The provider rule file's section a format derives from; missing, a RuleError where the format asks."""
    value: Any = rules.data
    for step in key:
        value = value.get(step) if isinstance(value, dict) else None
    if value is None:
        raise fmt.error(asked_at, f"{rules.file} has no {'.'.join(map(str, key))} to derive from")
    return value


def _roots(env: Env) -> set[str]:
    return {root for expr in env.reads if (root := expr.split(".")[0].split("[")[0]) and root != "@"}


def _reads_of(node: Node) -> list[str]:
    return [read.expr for read in reads_of(node)]


def _block_reads(node: Node, blocks: tuple[str, ...]) -> frozenset[str] | None:
    roots = set()
    for expr in _reads_of(node):
        if expr == "@":
            return None
        roots.add(expr.split(".")[0])
    return frozenset(roots | set(blocks))


def _unsupported(table: Mapping[str, Any]) -> Mapping[str, Unsupported]:
    return MappingProxyType(
        {k: Unsupported(v["action"], tuple(v.get("accept", ())), v.get("doc", "")) for k, v in table.items()}
    )


def _nearest(target: str, read: str, rows: Mapping[str, Any], fmt: str) -> Render:
    """A `$lookup` table of constant rows read backwards: the row equal to the value gives its key; a value
    that differs from rows of its shape in one number only takes the nearest row at or above it (else the
    largest), noted as rewritten; a value no row resembles is an error at the read path."""
    getter = compile_path(read)

    def render(scope: Any, ctx: Ctx) -> Any:
        value = getter(scope)
        if value is MISSING or value is None:
            return MISSING
        for key, row in rows.items():
            if row == value:
                return key
        near = []
        if isinstance(value, dict):
            for key, row in rows.items():
                if not isinstance(row, dict) or row.keys() != value.keys():
                    continue
                differ = [k for k in row if row[k] != value[k]]
                if len(differ) == 1 and type(row[differ[0]]) is int and type(value[differ[0]]) is int:
                    near.append((row[differ[0]], key, differ[0]))
        if not near:
            raise TranslationError(read, f"no {target} corresponds to it", provider=fmt)
        near.sort()
        field_name = near[0][2]
        given = value[field_name]
        above = [n for n in near if n[0] >= given]
        number, key, _ = above[0] if above else near[-1]
        ctx.notes.append(Note("rewritten", f"{read}.{field_name}", f"{given} sent as {target} {key} ({number})"))
        return key

    return render


@cache
def builtin_formats_dir() -> Path:
    return builtin_rules_dir() / FORMATS_DIR


def format_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.yaml") if p.is_file())


def answer_id(provider: Any, response: Any) -> Any:
    """The answer's id where the provider's stream rules say it is (`streaming.id`), else absent."""
    streaming = provider.source.data.get("streaming") if isinstance(provider.source.data, dict) else None
    path = streaming.get("id") if isinstance(streaming, dict) else None
    if not isinstance(path, str) or not isinstance(response, dict):
        return None
    value = compile_path(path)(response)
    return value if isinstance(value, str) else None


def remap(path: str, origins: Origins) -> str:
    """A normal-form path as the format's request names it: the longest known prefix replaced, the keys
    below it renamed back (`messages[3].tool_calls[0].function.arguments` -> `messages[2].content[1].input`)."""
    cut = len(path)
    while cut > 0:
        head = path[:cut]
        if head in origins:
            source, renames = origins[head]
            rest = path[cut:].lstrip(".")
            for hub, own in renames.items():
                if rest == hub or rest.startswith(hub + ".") or rest.startswith(hub + "["):
                    rest = own[: -len(WHOLE)] if own.endswith(WHOLE) else own + rest[len(hub) :]
                    break
            return f"{source}.{rest}" if rest and not rest.startswith("[") else source + rest
        cut = max(path.rfind(".", 0, cut), path.rfind("[", 0, cut))
    return path


def remap_error(exc: TranslationError, origins: Origins) -> TranslationError:
    cls = type(exc)
    if cls is ResponseError:
        return exc
    return cls(remap(exc.path, origins), exc.message, provider=exc.provider)


class AnswerBody(dict[str, Any]):
    """An answer in a source format's shape (a dict: its JSON is what the format's API returns), with the
    `result` it was written from and its `notes` (the result's)."""

    result: TranslateResult
    notes: tuple[Note, ...] = ()


class SourceEvents:
    """OpenAI chunks -> the source format's stream events (the `stream` section), for one answer.

    `chunk(c)` per OpenAI chunk returns the format's events; `end(result)` the closing ones, and sets
    `message` (the whole answer, as `translate_response` writes it). Blocks are opened, added to and
    closed as the stream section says; reasoning closes last (its signature is known only at the end).
    """

    def __init__(self, fmt: SourceFormat) -> None:
        self.format = fmt
        self.message: AnswerBody | None = None
        self._started = False
        self._id: str = ""
        self._blocks = 0
        self._open: tuple[str, int] | None = None  # the open text or tool_call block: (kind, index)
        self._reasoning: int | None = None  # the open reasoning block's index
        self._calls: dict[int, int] = {}  # the chunk's tool-call index -> its block index

    def chunk(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        fmt = self.format
        if not self._started:
            self._started = True
            self._id = chunk.get("id") or f"msg_{uuid.uuid4().hex[:24]}"
            out.append(fmt.event("start", {"id": self._id, "model": chunk.get("model", "")}))
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            piece = delta.get("reasoning_content")
            if piece:
                if self._reasoning is None:
                    self._reasoning = self._new_block(out, "reasoning", {}, close=False)
                out.append(fmt.event("piece.reasoning", {"index": self._reasoning, "piece": piece}))
            piece = delta.get("content")
            if piece:
                if self._open is None or self._open[0] != "text":
                    self._new_block(out, "text", {})
                assert self._open is not None
                out.append(fmt.event("piece.text", {"index": self._open[1], "piece": piece}))
            for call in delta.get("tool_calls") or ():
                position = call.get("index", 0)
                function = call.get("function") or {}
                if position not in self._calls:
                    scope = {
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "extra_content": call.get("extra_content"),
                    }
                    self._calls[position] = self._new_block(out, "tool_call", scope)
                arguments = function.get("arguments")
                if arguments:
                    out.append(fmt.event("piece.tool_call", {"index": self._calls[position], "piece": arguments}))
        return out

    def _new_block(self, out: list[dict[str, Any]], kind: str, scope: dict[str, Any], close: bool = True) -> int:
        if close and self._open is not None:
            out.append(self.format.event("close", {"index": self._open[1]}))
            self._open = None
        index = self._blocks
        self._blocks += 1
        out.append(self.format.event(f"open.{kind}", {**scope, "index": index}))
        if close:
            self._open = (kind, index)
        return index

    def end(self, result: TranslateResult) -> list[dict[str, Any]]:
        fmt = self.format
        out = [] if self._started else self.chunk({"id": None, "model": result.model, "choices": []})
        if self._open is not None:
            out.append(fmt.event("close", {"index": self._open[1]}))
            self._open = None
        notes: list[Note] = []
        view = fmt.view(result, self._id, notes)
        message = AnswerBody(fmt.write_view(view, notes))
        blocks = [b for b in message.get(fmt.blocks_into, []) if b.get(fmt.kind) in fmt.reasoning_kinds]
        signed = blocks[:1] if self._reasoning is not None else []
        if self._reasoning is not None:
            signature = signed[0].get("signature") if signed else None
            if signature:
                out.append(fmt.event("piece.signature", {"index": self._reasoning, "piece": signature}))
            out.append(fmt.event("close", {"index": self._reasoning}))
        for block in blocks[len(signed) :]:  # reasoning blocks no piece announced (redacted, sealed state)
            index = self._blocks
            self._blocks += 1
            out.append(fmt.event("open.whole", {"index": index, "block": block}))
            out.append(fmt.event("close", {"index": index}))
        ctx = Ctx(fmt.name, outbound=True)
        out += [render(view, ctx) for render in fmt.stream_end]
        message.result = result
        message.notes = (*result.notes, *notes)
        self.message = message
        return out


class SourceStream:
    """A provider stream -> the source format's events, for callers that do their own HTTP.

    `feed(data)` per provider event returns the format's events; `finish()` the closing ones, and sets
    `result` (the TranslateResult) and `message` (the whole answer, as `translate_response` writes it).
    """

    def __init__(self, fmt: SourceFormat, translator: Any) -> None:
        self.translator = translator
        self.events = SourceEvents(fmt)
        self.result: TranslateResult | None = None
        self.message: AnswerBody | None = None

    def feed(self, data: str) -> list[dict[str, Any]]:
        return [event for chunk in self.translator.feed(data) for event in self.events.chunk(chunk)]

    def finish(self) -> list[dict[str, Any]]:
        out = [event for chunk in self.translator.finish() for event in self.events.chunk(chunk)]
        result = self.translator.result
        assert result is not None
        out += self.events.end(result)
        self.result, self.message = result, self.events.message
        return out


def translate_source(
    fmt: SourceFormat,
    inbound: Any,
    request: Any,
    *,
    system: str | None = None,
    default_system: str | None = None,
    unknown_fields: Any = "error",
) -> Any:
    """A request in the format -> the provider's body (`inbound`: the provider's compiled request side),
    its errors and notes naming the format's paths."""
    hub, origins, notes = fmt.read(request, unknown_fields)
    try:
        body = inbound.translate(hub, system=system, default_system=default_system, unknown_fields=unknown_fields)
    except TranslationError as exc:
        raise remap_error(exc, origins) from None
    body.notes = (*notes, *(Note(n.kind, remap(n.path, origins), n.message, n.side) for n in body.notes))
    return body


def write_answer(fmt: SourceFormat, provider: Any, result: TranslateResult) -> AnswerBody:
    """A result as the format's whole answer, with its id where the provider's rules say the answer's is."""
    notes: list[Note] = []
    answer = AnswerBody(fmt.write(result, answer_id(provider, result.raw), notes))
    answer.result, answer.notes = result, (*result.notes, *notes)
    return answer
