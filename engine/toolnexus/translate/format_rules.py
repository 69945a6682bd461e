"""Source format files compiled: found, validated and turned into a `SourceFormat` once, at load.

A format file (`rules/formats/<name>.yaml`, or `DIR/formats/` of a user rules directory) is data,
like a provider's rule file. Where the format's own provider rule file (its `provider:`) already
maps the wire format to the normal form, the format reads that mapping backwards (`leaves`, `nest`,
`inverse_table`, `inverse_usage`, `_nearest`) instead of declaring it twice. Kept apart from
`formats` (the per-call run) because it alone knows the rule files' shape. The normal form's own file
(formats/openai.yaml, `normal: true`) is also compiled alone, needing no provider, into the `NormalForm`
the request reader is built from at import (`compile_normal_form`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from itertools import takewhile
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema

from ..errors import Note, RuleError, TranslationError
from ..language.loader import Key, RuleSource, builtin_rules_dir, dotted, parse_rule_text, rule_schema
from ..language.paths import MISSING, compile_path
from ..language.templates import (
    Apply,
    Array,
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
    When,
    compile_template,
    is_empty,
    kept_template,
    parse_template,
    reads_of,
    walk,
)
from .format_code import (
    as_python,
    generate_answers,
    generate_events,
    generate_fields,
    generate_said,
    generate_writer,
)
from .format_code import generate as generate_reader
from .formats import (
    IDS_PER_DIGEST,
    PLAIN,
    WHOLE,
    Derived,
    Kind,
    NormalForm,
    Plan,
    SourceFormat,
    TableBackwards,
    Unsupported,
    fields_as_given,
)

FORMATS_DIR = "formats"  # the subdirectory of a rules directory that holds format files
NORMAL_ONLY = frozenset({"keys", "lists", "others"})  # a role's keys only the normal form's file may give


# ---------------------------------------------------------------------- derivation: a provider's rules backwards


def leaves(
    node: Node, at: tuple[str, ...] = (), applied: bool = False, branches: bool = False
) -> Iterator[tuple[tuple[str, ...], str]]:
    """The (written key path, read path) pairs of a template's plain reads: an object's `$get`s (its first
    path) and `$list`s. Only these read backwards as a rename; anything else is declared. `applied`: also
    a value function's one read (`$json_text: input`), for naming where a written value came from.
    `branches`: also the reads inside each branch of a `$when` and each row of a `$lookup` (for naming
    where a value came from: whichever branch ran wrote it)."""
    if isinstance(node, Obj):
        for name, child in node.items:
            yield from leaves(child, (*at, name), applied, branches)
    elif branches and isinstance(node, (When, Lookup)):
        for child in node.children():
            yield from leaves(child, at, applied, branches)
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


def _load(path: Path, display: str) -> RuleSource:
    """A format file read, parsed and checked against the schema (and the normal form's own keys)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read: {exc}", file=display) from None
    source = parse_rule_text(text, display)
    _validate(source)
    normal = source.data.get("normal", False)
    if normal != (source.data["format"] == PLAIN):
        at: Key = ("normal",) if normal else ("format",)
        raise source.error(at, f"only the normal form's file, formats/{PLAIN}.yaml, is `normal: true` (and it must be)")
    if not normal:
        for role, spec in source.data["request"]["messages"]["roles"].items():
            for key in NORMAL_ONLY & spec.keys():
                at = ("request", "messages", "roles", role, key)
                raise source.error(at, f"`{key}` describes the normal form's reader: only formats/{PLAIN}.yaml has it")
    return source


def compile_format(path: Path, providers: Mapping[str, Any], display: str | None = None) -> SourceFormat:
    """One format file compiled against the rulebook holding its provider (for what it derives)."""
    display = display or str(path)
    source = _load(path, display)
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
    derived: dict[str, Derived] = {}  # filled by what reads the provider's rules backwards
    tables, reads, origin, derived_reads = _compile_fields(request, rules, source, env, own_reads, derived)

    roles = _compile_roles(messages["roles"], messages["kind"], env)
    items_spec = messages.get("items")
    items = (
        MappingProxyType(
            _compile_kinds(items_spec["kinds"], ("request", "messages", "items", "kinds"), messages["kind"], env)
        )
        if items_spec
        else None
    )
    paths, whole = _field_paths(request, derived_reads, reads, env)
    tool_render, tool_node, tool_reads, tool_renames = _compile_tools(tools_spec, rules, source, env, derived)

    answer = data["answer"]
    finish = _section(rules, ("response", "finish_reason"), source, ("provider",))
    stop_table = inverse_table(finish["table"])
    usage_node = parse_template(
        _section(rules, ("response", "usage"), source, ("provider",)), ("response", "usage"), theirs
    )
    stream_spec = data.get("stream", {})
    if len(answer.get("ids", {})) > IDS_PER_DIGEST:
        raise source.error(("answer", "ids"), f"at most {IDS_PER_DIGEST} made ids: each is cut from one digest")
    for kind, named in stream_spec.get("item_ids", {}).items():
        if named not in answer.get("ids", {}):
            raise source.error(("stream", "item_ids", kind), f"answer.ids names no {named!r}")
    blocks_spec = answer.get("blocks", {"into": None, "from": []})
    fmt = SourceFormat(
        name=name,
        file=display,
        provider=data["provider"],
        doc=data.get("doc", ""),
        field_tables=MappingProxyType(tables),
        field_reads=frozenset(reads),
        field_origin=MappingProxyType(origin),
        unsupported=_unsupported(request.get("unsupported", {})),
        system=messages.get("system"),
        each=messages["each"],
        kind=messages["kind"],
        roles=MappingProxyType(roles),
        plain_text=frozenset(r for r, spec in messages["roles"].items() if spec.get("text_alone")),
        text_role=messages.get("text"),
        items=items,
        message_kind=items_spec.get("message") if items_spec else None,
        message_unsupported=_unsupported(messages.get("unsupported", {})),
        transcript_roles=frozenset(r for r, spec in messages["roles"].items() if spec.get("transcript", True)),
        joining_roles=frozenset(r for r, spec in messages["roles"].items() if spec.get("joins")),
        field_paths=paths,
        whole_fields=whole,
        field_inside=_inside(paths),
        tools_each=tools_spec["each"] if tools_spec else None,
        tool=tool_render,
        tool_node=tool_node,
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
        stream=compile_stream(stream_spec, env),
        reasoning_kinds=frozenset(stream_spec.get("reasoning", ())),
        index_within_kind=frozenset(stream_spec.get("index_within_kind", ())),
        stream_end=tuple(
            compile_template(t, ("stream", "end", i), env) for i, t in enumerate(stream_spec.get("end", []))
        ),
        stop_table=MappingProxyType(stop_table),
        stop_key=str(finish["from"]),
        usage=inverse_usage(usage_node),
        plan=Plan(
            source,
            MappingProxyType(dict(env.parsed)),
            MappingProxyType(derived),
            tuple(entry.get("each") for entry in blocks_spec["from"]),
        ),
        ids=MappingProxyType(dict(answer.get("ids", {}))),
        item_ids=MappingProxyType(dict(stream_spec.get("item_ids", {}))),
        normal=compile_normal_form(path, display) if data.get("normal") else None,
    )
    _check_ids(fmt, source)
    # The normal form's request is given back as it is (`SourceFormat.read`): it has no transcript to read.
    code, reader, tools_reader = ("", None, None) if fmt.normal is not None else generate_reader(fmt)
    fields_code, fields = ("", fields_as_given) if fmt.normal is not None else generate_fields(fmt)
    fmt = replace(fmt, reads_input=_reads_name(env, "input"))  # the view's calls hold `input`: the writer reads it
    fmt = replace(fmt, derive_said=generate_said(fmt))  # (the writer's `said`, where it reads one whole)
    written, writer, reads_time = generate_writer(fmt)
    answers_code, answers = generate_answers(writer, reads_time, providers)
    events_code, events, straight = generate_events(fmt)
    return replace(
        fmt,
        events=MappingProxyType(events),
        straight=MappingProxyType(straight),
        events_code=events_code,
        transcript=reader,
        tools_reader=tools_reader,
        read_fields=fields,
        fields_code=fields_code,
        transcript_code=code,
        writer=writer,
        writer_code=written,
        answers=MappingProxyType(answers),
        answers_code=MappingProxyType(answers_code),
        chunks_code=compile_chunks(path, display).code if fmt.normal is not None else "",
    )


def _check_ids(fmt: SourceFormat, source: RuleSource) -> None:
    """An answer template (or the stream's end) reads a made id by its name (`ids.message`, a name `answer.ids`
    lists): each is made when read (`formats.MadeIds`), so the ids are never read whole or by a rich path."""
    for key, node in fmt.plan.nodes.items():
        if key[:1] != ("answer",) and key[:2] != ("stream", "end"):
            continue
        for read in reads_of(node):
            steps = read.steps
            if read.root != "ids" and (steps is not None or "ids" not in re.split(r"[^A-Za-z0-9_$]+", read.expr)):
                continue  # (a rich path naming `ids` anywhere counts, as in `_reads_name`)
            if steps is None or len(steps) != 2 or steps[1] not in fmt.ids:
                raise source.error(read.key or key, f"{read.expr!r}: a made id is read by its name, one of "
                                   f"answer.ids ({', '.join(fmt.ids) or 'none'}): ids.NAME")  # fmt: skip


def _reads_name(env: Env, name: str) -> bool:
    """Whether a template of the answer or the stream's end reads a path with a step `name` (over-counting:
    a rich path naming it anywhere counts), so the view makes that value only for a format that reads it."""
    return any(
        name in re.split(r"[^A-Za-z0-9_$]+", read.expr)
        for key, node in env.parsed.items()
        if key[:1] == ("answer",) or key[:2] == ("stream", "end")
        for read in reads_of(node)
    )


def _events(spec: Any, at: Key, env: Env) -> tuple[Render, ...]:
    """One moment's events: a template, or a list of them (several events, in order), each compiled alone (the
    general code; `format_code.generate_events` writes each moment as one function, what a stream runs)."""
    if isinstance(spec, list):
        return tuple(compile_template(template, (*at, i), env) for i, template in enumerate(spec))
    return (compile_template(spec, at, env),)


def compile_stream(spec: Mapping[str, Any], env: Env) -> Mapping[str, tuple[Render, ...]]:
    """The `stream` section's templates by moment: `start`, `close`, and per block kind `open.KIND`,
    `piece.KIND`, `done.KIND` (a kind's closing events; `close` serves the kinds without). `end` is apart."""
    renders: dict[str, tuple[Render, ...]] = {}
    for group in ("open", "piece", "done"):
        for kind, template in spec.get(group, {}).items():
            renders[f"{group}.{kind}"] = _events(template, ("stream", group, kind), env)
    for single in ("start", "close"):
        if single in spec:
            renders[single] = _events(spec[single], ("stream", single), env)
    return MappingProxyType(renders)


def _renames(node: Node) -> dict[str, str]:
    """A kind's written key -> the block key it reads (a value function's read marked WHOLE)."""
    plain = {".".join(w): r for w, r in leaves(node)}
    return {
        key: plain.get(key, read + WHOLE) for key, read in ((".".join(w), r) for w, r in leaves(node, applied=True))
    }


def _compile_roles(spec: Mapping[str, Any], kind_key: str, env: Env) -> dict[str, Mapping[str, Kind]]:
    """Each role's block kinds, compiled."""
    return {
        role: MappingProxyType(
            _compile_kinds(role_spec["kinds"], ("request", "messages", "roles", role, "kinds"), kind_key, env)
        )
        for role, role_spec in spec.items()
    }


def _compile_kinds(spec: Mapping[str, Any], at: Key, kind_key: str, env: Env) -> dict[str, Kind]:
    """Block (or transcript item) kinds, compiled: how each is read and where it goes."""
    kinds = {}
    for kind, entry in spec.items():
        where: Key = (*at, kind)
        mode = next(m for m in ("part", "item", "message") if m in entry)
        template = entry["as"] if mode == "item" else entry[mode]
        node = parse_template(template, (*where, mode), env)
        reads = _block_reads(node, (*entry.get("blocks", ()), *([entry["state"]["from"]] if "state" in entry else [])))
        render = compile_template(template, (*where, mode), env)
        paths = _key_paths(node)
        kinds[kind] = Kind(
            mode=mode,
            render=render,
            node=env.parsed[(*where, mode)],
            into=entry.get("item", ""),
            reads=reads,
            known=None if reads is None else reads | {kind_key},
            renames=MappingProxyType(_renames(node)),
            blocks=tuple(entry.get("blocks", ())),
            state=(entry["state"]["from"], entry["state"].get("set", "")) if "state" in entry else None,
            joins=entry.get("joins"),
            unsupported=_unsupported(entry.get("unsupported", {})),
            paths=paths,
            inside=_inside(paths),
        )
    return kinds


def _key_paths(node: Node) -> frozenset[str]:
    """The key paths a kind's template reads in a block (`source.type`, `cache_control`: read whole; a path
    stops at its first index; a value function that reads some keys of an object, `$data_url`, reads those)."""
    out = set()
    for each in walk(node):
        for read in each.paths():
            if read.steps is None:  # an expression: its first field read whole
                out.update([read.root] if read.root else [])
                continue
            named = ".".join(map(str, takewhile(lambda step: isinstance(step, str), read.steps)))
            keys = each.keys if isinstance(each, Apply) else ()
            out.update([f"{named}.{key}" for key in keys] if named and keys else [named] if named else [])
    return frozenset(out)


def _inside(paths: frozenset[str] | set[str]) -> frozenset[str]:
    """The objects the key paths read inside: every proper prefix of each (`text.format` of `text.format.name`)."""
    return frozenset(p.rsplit(".", i)[0] for p in paths for i in range(1, p.count(".") + 1))


def _field_paths(
    request: Mapping[str, Any], derived: set[str], reads: set[str], env: Env
) -> tuple[frozenset[str], frozenset[str]]:
    """The nested field paths the request's fields read, at any depth (`text.format.name`, from the derived
    renames and the declared templates; a path stops at its first index: a list is read whole), and the
    top-level fields read whole or through an expression (nothing below them is checked). A key below a
    field read inside that no path reaches is unmapped, as a top-level one is (`SourceFormat.unread`)."""
    paths = {p for p in derived if "." in p}
    whole: set[str] = set()
    for key, template in request.get("fields", {}).items():
        for read in reads_of(parse_template(template, ("request", "fields", key), env)):
            if read.steps is None or read.root is None:
                whole.add(read.expr.split(".")[0].split("[")[0].split(" ")[0])
            elif len(read.steps) == 1:
                whole.add(read.expr)
            else:
                named = list(takewhile(lambda step: isinstance(step, str), read.steps))
                paths.add(".".join(map(str, named)))
    for name in reads:
        if not any(p.startswith(name + ".") for p in paths):
            whole.add(name)  # read only as a whole (a table read backwards, a plain value)
    return frozenset(paths), frozenset(whole)


def _compile_tools(
    tools_spec: Mapping[str, Any] | None,
    rules: RuleSource | None,
    source: RuleSource,
    env: Env,
    derived: dict[str, Derived],
) -> tuple[Render | None, Node | None, frozenset[str], dict[str, str]]:
    """A tool declaration read into the normal form's function (the provider's declaration read backwards
    under the declared `fields`): its render and its node, the tool keys it reads, and its renames."""
    tool_render, tool_node = None, None
    tool_reads: frozenset[str] = frozenset()
    tool_renames: dict[str, str] = {}
    if tools_spec:
        pairs: list[tuple[str, str]] = []
        if tools_spec.get("derive") == "declaration" and rules is not None:
            declaration = _section(rules, ("tools", "declaration"), source, ("request", "tools", "derive"))
            node = parse_template(declaration, ("tools", "declaration"), Env(rules))
            pairs = [(read, ".".join(written)) for written, read in leaves(node)]
            declared = tools_spec.get("fields", {})
            derived.update(
                (f"tools[].{read}", Derived(("tools", "declaration", *written)))
                for written, read in leaves(node)
                if read.split(".")[0] not in declared
            )
        template = nest(pairs) | tools_spec.get("fields", {})
        tool_node = parse_template(template, ("request", "tools"), env)
        tool_render = compile_template(template, ("request", "tools"), env)
        tool_reads = frozenset(r.split(".")[0] for r in _reads_of(tool_node))
        tool_renames = {f"function.{w[0]}" if w else "": r for w, r in leaves(tool_node)}
    return tool_render, tool_node, tool_reads, tool_renames


def _compile_fields(
    request: Mapping[str, Any],
    rules: RuleSource,
    source: RuleSource,
    env: Env,
    own_reads: set[Any],
    derived: dict[str, Derived],
) -> tuple[dict[str, TableBackwards], set[str], dict[str, tuple[str, Mapping[str, str]]], set[str]]:
    """The normal-form fields: the provider's body read backwards (`derive: [body]`) under the declared
    `fields`, kept as the template `request.fields` (which `format_code.generate_fields` pastes into the fields'
    reader). Returns the tables of constant rows read backwards (by the normal-form field each writes), the
    format's fields read, each normal-form field's origin (with the key renames below it), and the format's field
    paths the derived renames read; sets `derived` (each normal-form path read backwards)."""
    declared = dict(request.get("fields", {}))
    theirs = Env(rules)
    origin: dict[str, str] = {}
    renamed: dict[str, str] = {}  # a normal-form path -> the format's field it is read from
    tables: dict[str, TableBackwards] = {}  # a normal-form field -> a constant-row table read backwards
    if "body" in request.get("derive", []):
        body = _section(rules, ("request", "body"), source, ("request", "derive"))
        for key, template in body.items():
            node = parse_template(template, ("request", "body", key), theirs)
            rows = _lookup_rows(node)
            if isinstance(node, Lookup) and rows is not None and key not in own_reads:
                target = node.path.expr
                tables[target] = _nearest(target, key, rows, str(source.data["format"]))
                origin[target] = key
                derived[target] = Derived(("request", "body", key), node)
                continue
            for written, read in leaves(node, (key,)):
                if written[0] in own_reads or read.split(".")[0] in declared or read in ("messages", "tools"):
                    continue
                renamed.setdefault(read, ".".join(written))
                derived.setdefault(read, Derived(("request", "body", *written)))
                origin.setdefault(read.split(".")[0], ".".join(written))
    kept_template(nest(list(renamed.items())) | declared, ("request", "fields"), env)
    reads = _roots(env) | set(origin.values())
    renames: dict[str, Mapping[str, str]] = {}
    for key, template in declared.items():
        node = parse_template(template, ("request", "fields", key), Env(source))
        plain = [r.steps for r in reads_of(node) if r.steps]
        if plain:  # where the field came from: the part every plain read of it shares (text.format), else the first
            common = [s[0] for s in takewhile(lambda steps: len(set(steps)) == 1, zip(*plain, strict=False))]
            while common and not isinstance(common[-1], str):
                common.pop()
            origin.setdefault(key, ".".join(map(str, common or plain[0])))
            renames[key] = _renames_below(node, origin[key])

    placed: dict[str, tuple[str, Mapping[str, str]]] = {
        name: (source_path, MappingProxyType(renames.get(name, {}))) for name, source_path in origin.items()
    }
    return tables, {r.split(".")[0] for r in reads}, placed, set(renamed.values())


def _renames_below(node: Node, origin: str) -> dict[str, str]:
    """A declared field's written key paths -> the key path below `origin` each is read from, in every branch
    (`function.name` -> `name` for a tool choice read from `tool_choice.name`): so an error the provider's rules
    raise below the field names the format's key, not the normal form's."""
    out: dict[str, str] = {}
    for written, read in leaves(node, applied=True, branches=True):
        if written and read.startswith(origin + "."):
            out.setdefault(".".join(written), read[len(origin) + 1 :])
    return out


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


def _nearest(target: str, read: str, rows: Mapping[str, Any], fmt: str) -> TableBackwards:
    """A `$lookup` table of constant rows read backwards: the row equal to the value gives its key; a value
    that differs from rows of its shape in one number only takes the nearest row at or above it (else the
    largest), noted as rewritten (into the notes given: it needs no Ctx); a value no row resembles is an error at
    the read path."""
    getter = compile_path(read)

    def render(scope: Any, notes: list[Note]) -> Any:
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
        notes.append(Note("rewritten", f"{read}.{field_name}", f"{given} sent as {target} {key} ({number})"))
        return key

    return render


# ---------------------------------------------------------------------- the normal form


def compile_normal_form(path: Path, display: str | None = None) -> NormalForm:
    """The normal form's file (formats/openai.yaml) as what the request reader knows of a Chat Completions
    request: its fields, its roles with their message keys and part kinds, each part kind's keys (one reader
    reads a kind in every role, so a kind's keys agree everywhere), the typed lists (tool calls), the tool
    keys and types, and the tool_choice strings."""
    display = display or str(path)
    source = _load(path, display)
    request = source.data["request"]
    messages = request["messages"]
    kind_key = messages["kind"]
    env = Env(source)
    parts: dict[str, frozenset[str]] = {}
    where: dict[str, Key] = {}
    role_kinds: dict[str, frozenset[str] | None] = {}
    read_keys: dict[str, frozenset[str]] = {}
    lists: dict[tuple[str, str, str], frozenset[str]] = {}
    for role, spec in messages["roles"].items():
        at: Key = ("request", "messages", "roles", role)
        for kind, compiled in _compile_kinds(spec["kinds"], (*at, "kinds"), kind_key, env).items():
            known = _known(compiled, (*at, "kinds", kind), source)
            if parts.setdefault(kind, known) != known:
                raise source.error((*at, "kinds", kind), f"reads other keys than {dotted(where[kind])}: give one")
            where.setdefault(kind, (*at, "kinds", kind))
        for name, kinds in spec.get("lists", {}).items():
            for kind, compiled in _compile_kinds(kinds, (*at, "lists", name), kind_key, env).items():
                lists[role, name, kind] = _known(compiled, (*at, "lists", name, kind), source)
        role_kinds[role] = None if spec.get("others") == "pass" else frozenset(spec["kinds"])
        read_keys[role] = frozenset({"role", "content", *spec.get("keys", ()), *spec.get("lists", {})})
    tools = request.get("tools")
    if tools is None:
        raise source.error(("request",), "the normal form names its tools (`tools`)")
    _, _, tool_reads, _ = _compile_tools(tools, None, source, env, {})
    tool_unsupported = _unsupported(tools.get("unsupported", {}))
    fields = request.get("fields", {})
    choice = parse_template(fields.get("tool_choice"), ("request", "fields", "tool_choice"), env)
    choices = tuple(value for node in _walk(choice) for value, _ in _rows_of(node, "tool_choice"))
    return NormalForm(
        file=display,
        fields=frozenset({*fields, messages["each"], tools["each"]}),
        roles=tuple(messages["roles"]),
        read_keys=MappingProxyType(read_keys),
        role_kinds=MappingProxyType(role_kinds),
        parts=MappingProxyType(parts),
        lists=MappingProxyType(lists),
        tool_keys=tool_reads | frozenset(tool_unsupported),
        tool_unsupported=tool_unsupported,
        tool_choices=choices,
    )


def _known(kind: Kind, at: Key, source: RuleSource) -> frozenset[str]:
    """The keys a normal-form kind's template reads, with its kind key: what the reader reads of such a part."""
    if kind.known is None:
        raise source.error(at, "reads the whole part (`@`): name the keys it reads")
    return kind.known


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children():
        yield from _walk(child)


def _rows_of(node: Node, read: str) -> tuple[tuple[str, Node], ...]:
    """A `$lookup` of `read` itself: its rows (the values it takes), else none."""
    return node.rows if isinstance(node, Lookup) and node.path.expr == read else ()


@cache
def builtin_normal_form() -> NormalForm:
    """The built-in normal form (the request reader's, compiled once at import)."""
    path = builtin_formats_dir() / f"{PLAIN}.yaml"
    return compile_normal_form(path, f"rules/{FORMATS_DIR}/{PLAIN}.yaml")


@cache
def builtin_formats_dir() -> Path:
    return builtin_rules_dir() / FORMATS_DIR


def format_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.yaml") if p.is_file())


# ---------------------------------------------------------------------- the normal form's stream

HEADER = ("answer_id", "created", "model")  # what every chunk names, as the StreamTranslator holds it (`h`)
Write = Callable[[tuple[Any, ...], dict[str, Any]], Any]  # (header, the moment's scope) -> one chunk
# Where a chunk holds its tool-call entries: tool calls released together (held for a synthesized id) are one
# chunk whose entries are all of theirs (Chat Completions lets one delta carry several calls' entries).
JOINED: tuple[str | int, ...] = ("choices", 0, "delta", "tool_calls")
# (h, out, index, id, name, extra_content, piece): a tool call's `open` entries, from its fields, added to `out`;
# (h, out, index, piece): an arguments piece's entries. A call held back is written by these when released; a
# piece is always a string.
CallEntries = Callable[[tuple[Any, ...], list[Any], Any, Any, Any, Any, Any], None]
PieceEntries = Callable[[tuple[Any, ...], list[Any], Any, Any], None]
# (h, out, held, calls, moment): the calls held to the end, released in order: an index is a whole call, its `open`
# entries written from its translation (`calls[index]`, a TranslatedToolCall: id, name, extra_content, arguments);
# any other is a held moment, given to `moment(out, *it)`.
Released = Callable[[tuple[Any, ...], list[Any], list[Any], list[Any], Callable[..., None]], None]


@dataclass(frozen=True)
class Chunks:
    """The normal form's `stream` section (formats/openai.yaml) as the StreamTranslator writes its chunks:
    `start`, a tool call's `open`, each kind's `pieces` and the `end` events. A moment is written by a
    function of the header `h` (answer_id, created, model) and the moment's own scope `s`, generated from its
    template as one Python display where the template is plain, else its general render over both. `display`
    gives a piece's display over named expressions, for a provider stream's generated code to write inline."""

    file: str
    call: CallEntries  # `open`'s entries alone (at `JOINED`) from a call's fields, for calls released together
    arguments: PieceEntries  # `piece.tool_call`'s entries alone, likewise
    released: Released  # every held call's entries, in order: a whole call's `open` entries from its translation
    start: Write
    open: Write
    pieces: Mapping[str, Write]
    end: tuple[Render, ...]
    nodes: Mapping[str, Node]  # piece kind -> its parsed template
    code: str  # the generated writers' source (`explain`)

    def display(self, kind: str, names: Mapping[str, str], texts: frozenset[str] = frozenset()) -> str | None:
        """The piece's chunk as one Python expression over `names` (the header's names and the piece's; `texts`:
        those known to hold a string), or None when its template is not that plain."""
        return as_python(self.nodes[kind], names, texts)


def compile_chunks(path: Path, display: str | None = None) -> Chunks:
    """The normal form's file's `stream` section, compiled alone (no provider): the chunk writers."""
    display = display or str(path)
    source = _load(path, display)
    spec = source.data.get("stream")
    if spec is None:
        raise source.error((), "the normal form declares its stream (`stream`)")
    env = Env(source)
    writers: dict[str, Write] = {}
    nodes: dict[str, Node] = {}
    code: list[str] = []
    moments: list[tuple[str, Key]] = [("start", ("stream", "start")), ("open", ("stream", "open", "tool_call"))]
    moments += [(f"piece.{kind}", ("stream", "piece", kind)) for kind in ("text", "reasoning", "tool_call")]
    for moment, at in moments:
        template = spec["start"] if moment == "start" else spec[at[1]][at[2]]
        if isinstance(template, list):
            raise source.error(at, "a chunk moment writes one chunk: give one template")
        render = compile_template(template, at, env)
        node = nodes[moment.removeprefix("piece.")] = env.parsed[at]
        text = as_python(node, _names(moment))
        if text is None:
            writers[moment] = _general(render)
            code.append(f"# {dotted(at)}: its general render over the header and its scope")
            continue
        written = f"def write(h, s):  # {dotted(at)}\n    return {text}\n"
        namespace: dict[str, Any] = {"is_empty": is_empty}
        exec(compile(written, f"<chunk {dotted(at)}>", "exec"), namespace)
        writers[moment] = namespace["write"]
        code.append(written)
    entries: dict[str, Any] = {}
    for moment, at in (("open", ("stream", "open", "tool_call")), ("tool_call", ("stream", "piece", "tool_call"))):
        below = _below(nodes[moment], JOINED)
        names = _entry_names(moment)  # its arguments piece: always a string (`CallEntries`, `PieceEntries`)
        shown = as_python(below, names, frozenset({"piece"})) if below is not None else None
        if shown is None:
            raise source.error(at, "must write its tool_calls entries plainly (a list at choices[0].delta."
                               "tool_calls of constants, reads of its scope and `$when`s)")  # fmt: skip
        signature = ", ".join(["h", "out", *(n for n in names.values() if not n.startswith("h["))])
        joined = (f"def entries({signature}):  # {dotted(at)}'s entries, for calls released together\n"
                  f"    out += {shown}\n")  # fmt: skip
        namespace = {"is_empty": is_empty}
        exec(compile(joined, f"<chunk {dotted(at)} entries>", "exec"), namespace)
        entries[moment] = namespace["entries"]
        code.append(joined)
        if moment == "open" and below is not None:  # the same entries, for every call held to the end, in a loop
            fields = {"id": "c.id", "name": "c.name", "extra_content": "c.extra_content", "piece": "c.arguments"}
            shown = as_python(below, {**names, **fields}, frozenset({"piece"}))
            released = (f"def released(h, out, held, calls, moment):  # {dotted(at)}'s entries, for held calls\n"
                        "    for index in held:\n"
                        "        if type(index) is not int:\n"
                        "            moment(out, *index)\n"
                        "            continue\n"
                        "        c = calls[index]\n"
                        f"        out += {shown}\n")  # fmt: skip
            exec(compile(released, f"<chunk {dotted(at)} released>", "exec"), namespace)
            entries["released"] = namespace["released"]
            code.append(released)
    return Chunks(
        file=display,
        call=entries["open"],
        arguments=entries["tool_call"],
        released=entries["released"],
        start=writers["start"],
        open=writers["open"],
        pieces=MappingProxyType({k: writers[f"piece.{k}"] for k in ("text", "reasoning", "tool_call")}),
        end=tuple(compile_template(t, ("stream", "end", i), env) for i, t in enumerate(spec.get("end", []))),
        nodes=MappingProxyType(nodes),
        code="\n".join(code),
    )


# What each chunk moment's scope holds beside the header (the StreamTranslator's: a tool call's number, id,
# name, round-trip state and the arguments it came with); a template reading another name reads it absent.
_CHUNK_SCOPES = {
    "start": (),
    "open": ("index", "id", "name", "extra_content", "piece"),
    "piece.text": ("piece",),
    "piece.reasoning": ("piece",),
    "piece.tool_call": ("index", "piece"),
}


def _names(moment: str) -> dict[str, str]:
    """The names a chunk moment's writer has, as Python: the header's in `h`, the moment's own in `s`."""
    return {**{name: f"h[{i}]" for i, name in enumerate(HEADER)}, **{n: f"s[{n!r}]" for n in _CHUNK_SCOPES[moment]}}


def _entry_names(moment: str) -> dict[str, str]:
    """The names a tool call's entries writer has (`Chunks.call`, `Chunks.arguments`): the header's in `h`, the
    moment's own as its parameters, in the order a format's events take them (`SourceEvents.call`)."""
    own = _CHUNK_SCOPES["open" if moment == "open" else "piece.tool_call"]
    return {**{name: f"h[{i}]" for i, name in enumerate(HEADER)}, **{n: "call_id" if n == "id" else n for n in own}}


def _below(node: Node, path: tuple[str | int, ...]) -> Node | None:
    """The template node written at `path` (object keys, list positions), or None."""
    for step in path:
        if isinstance(node, Obj) and type(step) is str:
            found = next((child for name, child in node.items if name == step), None)
        elif isinstance(node, Array) and type(step) is int and step < len(node.children()):
            found = node.children()[step]
        else:
            return None
        if found is None:
            return None
        node = found
    return node


def _general(render: Render) -> Write:
    """A chunk moment whose template needs the general code: rendered over the header's names and its scope."""
    ctx = Ctx(PLAIN, outbound=True)

    def write(h: tuple[Any, ...], s: dict[str, Any]) -> Any:
        out = render({**dict(zip(HEADER, h, strict=True)), **s}, ctx)
        ctx.notes.clear()  # a default a chunk's template writes is not the answer's to note
        return out

    return write


@cache
def builtin_chunks() -> Chunks:
    """The built-in normal form's chunk writers (the StreamTranslator's, compiled once at import)."""
    return compile_chunks(builtin_formats_dir() / f"{PLAIN}.yaml", f"rules/{FORMATS_DIR}/{PLAIN}.yaml")
