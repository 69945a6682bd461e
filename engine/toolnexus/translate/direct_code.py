"""The direct writer: a role's common message shapes written straight from the Chat Completions message.

The messages function (request_code.py) reads each message into the middle form (the reader's part dicts)
and writes the parts through the part templates. For the shapes most transcripts are made of, this module
generates a branch that skips the middle form: a fast test of the message's shape reads its values into
local variables, and the role's template and its part templates are written inline with each middle-form
field the template reads bound to the expression holding it (the part templates compiled against OpenAI's
shape). The shapes (the hub's, so known here; no provider's):

  user       content a string, or a list of text parts (each exactly `type` and `text`)
  assistant  content a string or null; tool_calls absent or a list of function calls whose arguments are
             JSON text of an object or an object
  tool       content a string or a list of text parts, answering a pending call, no `is_error`

Round-trip keys are ordinary template values: a tool call's own keys (`extra_content`) are read where the
tool-call template reads them (and settled where none does), a message key `messages.carry` places rides
on its part as the reader's `place` puts it (`carried`), and the role template reads the message's own keys
(`lead` blocks, `$merge: source`) as it reads them. Anything else, and a role or part template this writer
cannot write inline (one that reads its scope whole, a lookup, a spliced template, a part field carried by
one of several keys that its template leaves unwritten, a carried key whose part is known only at run time),
falls to the general branch: the reader's helpers for that message, with the same output, notes and errors. The
notes the general branch writes for these shapes are written here where they arise, in its order: the message keys
settled, a carried key no part takes, an empty turn dropped, then per part the keys its template does not
write, its rewritten id or arguments, the fields its template leaves unwritten (`_gap_lines`: Ollama's call ids,
dropped at the call's path), then what its template notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..language.codegen import Namespace, indent
from ..language.jsonsafe import loads, loads_written
from ..language.templates import USES_CONTEXT, Node, Render, inline_node
from .reader import (
    _ARGUMENTS_TEXT,
    MIDDLE_FIELDS,
    OBJECT_ARGUMENTS_SENT_AS_TEXT,
    TOOL_CALL_KEYS,
    orphaned,
    rewritten_id,
)

if TYPE_CHECKING:
    from .inbound import ContentPlan


class At:
    """Where a part sits in the request, formatted from its indexes only when a note or an error needs it."""

    def __init__(self, form: str) -> None:
        self.form = form

    def element_path(self, index: Any) -> str:
        return self.form.format(*index) if type(index) is tuple else self.form.format(index)


# The paths of the parts the shapes hold (as reader.part_path gives them).
CONTENT = At("messages[{}].content")  # a string content's one text part
CONTENT_PART = At("messages[{}].content[{}]")
CALL = At("messages[{}].tool_calls[{}]")


@dataclass(frozen=True)
class Parts:
    """The part templates and `$content` plans the direct writer inlines (built by compile_inbound)."""

    writers: Mapping[Render, ContentPlan]  # each `$content`'s plan, by its closure
    nodes: Mapping[str, Node]  # each part kind's parsed template
    reads: Mapping[str, frozenset[str] | None]  # the middle-form fields each part template reads (None: any)
    spliced: frozenset[str]  # the kinds whose template is a list of blocks
    opaque: Callable[[Any, str, Any, str | None], list[Any]]  # `lead`'s blocks, checked (inbound._opaque_blocks)


@dataclass(frozen=True)
class Group:
    """Parts of one kind a shape holds, as generated code sees them: under `header` (a `for` or an `if` line;
    None: one part, always there), each field's expression (`known`; a field not named is absent), where the
    part sits (`at`: an At's name and its index), the rewritten notes its reading gives (`derived`: field,
    condition, path, how, each an expression: noted when the template reads the field), for text its text
    (`flat`), and a test that there is none (`empty`; None: never empty)."""

    kind: str
    known: Mapping[str, str]
    at: tuple[str, str]
    header: str | None = None
    derived: tuple[tuple[str, str, str, str], ...] = ()
    flat: str | None = None
    empty: str | None = None
    extras_of: str | None = None  # the input object whose other keys ride on the part under their own name
    reader_keys: frozenset[str] = frozenset()  # the keys of that object the reader reads itself
    nested: tuple[Group, ...] = ()  # the part's own parts (a tool result's)
    last: str | None = None  # in the loop `header` starts: true for its last part
    maybe: frozenset[str] = frozenset()  # the fields of `known` that may be absent (MISSING)
    carried: tuple[tuple[str, str], ...] = ()  # message keys placed on its last part: (key, the variable holding it)
    written: str | None = None  # a list of its parts written already, where the caller read them: added as they are

    @property
    def has_part(self) -> str:
        """A test that the group has a part."""
        return "True" if self.empty is None else f"not ({self.empty})"


class _Gen(Namespace):
    """One role's direct branch being generated: the names it binds (into the namespace it shares), fresh tags."""

    def __init__(self, parts: Parts, names: dict[str, Any], prefix: str) -> None:
        super().__init__(names)
        self.parts, self.prefix = parts, prefix

    def bind(self, value: Any) -> str:
        return self.name(value, f"{self.prefix}x")

    def new_tag(self) -> str:
        return self.fresh(f"_{self.prefix}")

    def settle(self, key: str, value: str, path: str) -> str:
        """The statement settling `key` (given in `value`; `path`: an f-string) that no template writes: the note
        `messages.unsupported` writes for a key it drops whatever it holds (its `DROPPED`), else `c.settle`."""
        why = self.names["DROPPED"].get(key)
        if why is None:
            return f"c.settle({key!r}, {value}, {path})"
        return f"notes.append(Note('dropped', {path}, {why!r}))"


def content_lines(gen: _Gen, groups: tuple[Group, ...], top: bool) -> Callable[..., list[str] | None]:
    """The ContentLines writing a `$content` from `groups` (see templates.ContentLines); None when it cannot."""

    def lines(node: Any, target: str, scope: str, call: str, bind: Any) -> list[str] | None:
        plan = gen.parts.writers.get(node.render)
        if plan is None or (plan.leads and not top):
            return None
        chosen = [g for g in groups if plan.wanted is None or g.kind in plan.wanted]
        t = gen.new_tag()
        blocks, where = f"b{t}", f"where{t}"
        head = [f"{blocks} = []"]
        for (getter, lead_where, reshaped_by), read in zip(plan.leads, node.reads[1:], strict=True):
            steps: tuple[str | int, ...] = read.steps or ()
            if len(steps) == 2 and steps[0] == "source" and type(steps[1]) is str:  # a message key: read from it
                value = f"m.get({steps[1]!r}, MISSING)"
            else:
                value = f"{gen.bind(getter)}({{'role': role, 'source': m, 'index': i}})"
            head += [
                f"lead{t} = {value}",
                f"if lead{t} is not MISSING and lead{t} is not None:"
                f" {blocks} += OPAQUE(lead{t}, {lead_where!r}, c, {reshaped_by!r})",
            ]
        out: list[str] = []
        for group in chosen:
            written = _part_lines(gen, group, blocks)
            if written is None:
                return None
            out += written
        if any("c.path = (" in line for line in out):
            out = [f"{where} = c.path", *out, f"c.path = {where}"]
        whole = f"{target} = {blocks} if {blocks} else MISSING"
        if plan.policy == "text_or_blocks":
            flat = _flat(gen, chosen, blocks if plan.leads else None)
            if flat is None:
                return [*head, *out, whole]
            test, text, settled = flat
            as_text = [*settled, f"{target} = {text}"]
            if test == "True":  # no part but text can be chosen, and no block leads
                return as_text
            return [
                *head,
                f"if {test}:",
                *indent(as_text),
                "else:",
                *indent([*out, whole]),
            ]
        if plan.policy == "blocks":
            return [*head, *out, whole]
        many = f"f'holds {{len({blocks})}} parts; the rules send one per message'"
        return [
            *head,
            *out,
            f"if len({blocks}) > 1: raise c.fail(f'messages[{{i}}]', {many})",
            f"{target} = {blocks}[0] if {blocks} else MISSING",
        ]

    return lines


def _flat(gen: _Gen, chosen: list[Group], leads: str | None) -> tuple[str, str, list[str]] | None:
    """`text_or_blocks` as text: (the test that every part chosen is text, none carries a key the text template
    writes and no lead block was given; the joined text; the carried keys it settles); None when that never
    holds. No part at all is the empty text, as the closure writes it."""
    tests = [] if leads is None else [f"not {leads}"]
    texts: list[str] = []
    settled: list[str] = []
    reads = gen.parts.reads.get("text") or frozenset()
    reporting = _plan_entry(gen, "text")
    extras = reads - {"text", "kind"}  # a part carrying one of these stays a block
    for group in chosen:
        if group.kind != "text":
            if group.empty is None:
                return None
            tests.append(group.empty)
            continue
        texts.append(group.flat or "''")
        for key, var in group.carried:
            if not extras.isdisjoint({key, "report", *(("source",) if "source" in group.known else ())}):
                tests.append(f"({var} is MISSING or not {group.has_part})")
            elif reporting is not None and reporting[0] is not None and key not in reporting[0]:
                given = f"{var} is not MISSING and {group.has_part}"
                settled.append(f"if {given}: {gen.settle(key, var, _message_key(key))}")
    return " and ".join(tests) or "True", " + ".join(texts) or "''", settled


def _message_key(key: str) -> str:
    """The f-string of a message key's path."""
    return f"f'messages[{{i}}].{key}'"


def _part_lines(gen: _Gen, group: Group, blocks: str) -> list[str] | None:
    """One group's parts written through their kind's template, inline, onto `blocks`."""
    if group.written is not None:
        return [f"{blocks} += {group.written}", f"if {WRITTEN_NOTES}: notes += {WRITTEN_NOTES}"]
    node = gen.parts.nodes.get(group.kind)
    reads = gen.parts.reads.get(group.kind)
    plan_entry = _plan_entry(gen, group.kind)
    if node is None or reads is None or plan_entry is None:
        return None
    reporting, gaps = plan_entry
    nested = {g.kind for g in group.nested}
    if gaps is not None and gaps.kinds is not None and not nested <= gaps.kinds:
        return None  # it leaves some of its own parts unwritten
    known: dict[str, str] = {}
    body: list[str] = []
    if group.extras_of is not None and reporting is not None:  # its own keys no template reads, settled
        kept = gen.bind(MIDDLE_FIELDS | group.reader_keys | reads)
        where = f"{group.at[0]}.element_path({group.at[1]})"
        body += [
            f"if not {group.extras_of}.keys() <= {kept}:",
            f"    for k, v in {group.extras_of}.items():",
            f"        if k not in {kept} and v is not None:",
            "            why = DROPPED.get(k)",  # as `settle` decides for a key known here
            f"            if why is None: c.settle(k, v, f'{{{where}}}.{{k}}')",
            f"            else: notes.append(Note('dropped', f'{{{where}}}.{{k}}', why))",
        ]
    for key, var in group.carried:  # on the last part only, as the reader's `place` puts it
        if key in reads:
            known[key] = var if group.last is None else f"({var} if {group.last} else MISSING)"
        elif reporting is not None:  # the template writes nothing for it: settled as the rules say
            given = f"{var} is not MISSING" + ("" if group.last is None else f" and {group.last}")
            body.append(f"if {given}: {gen.settle(key, var, _message_key(key))}")
    for name in reads:
        if name in known:
            continue
        if name in group.known:
            known[name] = group.known[name]
        elif name in MIDDLE_FIELDS or group.extras_of is None:
            known[name] = "MISSING"
        else:  # the input's own key, riding on the part when given (null is not given)
            value = f"e{gen.new_tag()}"
            known[name] = f"({value} if ({value} := {group.extras_of}.get({name!r})) is not None else MISSING)"
    t = gen.new_tag()
    inner = content_lines(gen, group.nested, top=False) if group.nested else None
    there = frozenset(group.known) - group.maybe
    inline = inline_node(
        node, "None", f"w{t}", is_dict=True, known=known, prefix=f"{t[1:]}_", content=inner, tag=t, present=there
    )
    if inline.whole or not inline.firsts.keys() <= known.keys():
        return None
    gen.names.update(inline.names)
    if reporting is not None:
        for name, test, path, how in group.derived:
            if name in reporting:
                body.append(f"if {test}: notes.append(Note('rewritten', {path}, {how}))")
    settled = [] if gaps is None else _gap_lines(gen, group, gaps.unread)
    if settled is None:
        return None
    body += settled
    if USES_CONTEXT.search("\n".join(inline.head + inline.body)):
        body.append(f"c.path = ({group.at[0]}, {group.at[1]})")
    body += inline.head + inline.body
    if group.kind in gen.parts.spliced:
        body.append(f"if w{t} is not MISSING: {blocks}.extend(w{t})")
    else:
        body.append(f"{blocks}.append(w{t})")
    if group.header is None:
        return body
    return [group.header, *indent(body)]


def _gap_lines(gen: _Gen, group: Group, unread: tuple[tuple[str, str, frozenset[str]], ...]) -> list[str] | None:
    """Each field of the group's parts their template writes nothing for (`Gaps.unread`: a call's id a provider
    drops), settled at the part's path as the general branch's `_settle_gaps` settles it, after the part's
    rewritten notes: the note `messages.unsupported` writes for it, else `c.settle`. None: a field carried by
    one of several keys (which one the part holds is the general branch's to find)."""
    lines = []
    where = f"{group.at[0]}.element_path({group.at[1]})"
    for name, at, keys in unread:
        if len(keys) != 1:
            return None
        (key,) = keys
        value = group.known.get(key)
        if value is None:  # (the part never holds it: nothing to settle)
            continue
        settled = gen.settle(name, value, f"f'{{{where}}}.{at}'" if "source" in group.known else f"f'{{{where}}}'")
        lines.append(f"if {value} is not MISSING: {settled}" if key in group.maybe else settled)
    return lines


def _plan_entry(gen: _Gen, kind: str) -> tuple[frozenset[str] | None, Any] | None:
    """A kind's (fields read when its template reports, gaps) from any `$content` plan (they agree)."""
    for plan in gen.parts.writers.values():
        entry = plan.plan.get(kind)
        if entry is not None:
            return entry[1], entry[2]
    return None


# ---------------------------------------------------------------- the shapes, per role


def _text_groups(content: str, listed: bool, joined: str | None = None) -> Group:
    """The text parts of a content: a string's one part, or a list's text parts (`joined`: their text, when
    a variable holds it)."""
    if not listed:
        return Group("text", {"kind": "'text'", "text": content}, ("CONTENT", "i"), flat=content)
    return Group(
        "text",
        {"kind": "'text'", "text": "d_p['text']", "source": "d_p"},
        ("CONTENT_PART", "(i, d_j)"),
        header=f"for d_j, d_p in enumerate({content}):",
        flat=joined or f"''.join([d_p['text'] for d_p in {content}])",
        last=f"d_j == len({content}) - 1",
    )


_TEXT_PARTS = "TEXT_PARTS(d_c)"
_TEXT_CHECK: tuple[str, ...] = ("if not d_c.isascii(): ck_texts.append(d_c)",)
_PARTS_CHECK: tuple[str, ...] = ("for d_q in d_c:", "    if not d_q['text'].isascii(): ck_texts.append(d_q['text'])")


def text_parts(content: Any) -> bool:
    """Whether a content is a non-empty list of text parts that hold nothing but their text."""
    if type(content) is not list or not content:
        return False
    for part in content:
        if type(part) is not dict or len(part) != 2 or part.get("type") != "text" or type(part.get("text")) is not str:
            return False
    return True


def _calls_group(arguments_json: bool) -> Group:
    derived = [("id", "d_sent != d_id", "f'messages[{i}].tool_calls[{d_k}].id'", "REWRITTEN_ID(d_id, d_sent, P)")]
    if arguments_json:
        path = "f'messages[{i}].tool_calls[{d_k}].function.arguments'"
        derived.insert(0, ("arguments_json", "d_obj", path, repr(OBJECT_ARGUMENTS_SENT_AS_TEXT)))
    known = {
        "kind": "'tool_call'",
        "id": "d_sent",
        "name": "d_name",
        "source": "d_call",
        "arguments": "d_args",
        "arguments_json": "d_raw",
        "position": "d_k",
        "current_turn": "d_ct",
    }
    return Group(
        "tool_call",
        known,
        ("CALL", "(i, d_k)"),
        header="for d_k, (d_call, d_id, d_sent, d_name, d_args, d_raw, d_obj) in enumerate(d_calls):",
        derived=tuple(derived),
        empty="not d_calls",
        maybe=frozenset({"arguments_json", "current_turn"}),
        extras_of="d_call",
        reader_keys=TOOL_CALL_KEYS,
        last="d_k == len(d_calls) - 1",
    )


# The assistant message's calls (the hub's key), and where a call holds what its check reads (`call_check`).
CALLS = "tool_calls"
CALL_FIELDS = {
    "d_fn": ("function",),
    "d_id": ("id",),
    "d_name": ("function", "name"),
    "d_raw": ("function", "arguments"),
}


def _read_calls(arguments_json: bool, done: str | None) -> list[str]:
    """The assistant's tool calls read into `d_calls` ((call, id, sent id, name, arguments, their JSON text,
    given as an object)) and `d_new` (id -> name); `d_ok` False for a shape the general branch reads.
    `done`: a test that they are read already, each where the caller had it (`call_check` run on it there)."""
    call, function = "d_call.get({!r})", "d_fn.get({!r})"  # (`d_fn` read first: it is tested to be a dict)
    read = {name: (function if keys[1:] else call).format(keys[-1]) for name, keys in CALL_FIELDS.items()}
    del read["d_fn"]
    loop = [
        "d_calls, d_new, d_deep = [], {}, False",
        "if d_ok and d_tc is not None:",
        "    if type(d_tc) is not list: d_ok = False",
        "    else:",
        "        for d_call in d_tc:",
        "            d_fn = d_call.get('function') if type(d_call) is dict else None",
        "            if type(d_fn) is not dict: d_ok = False; break",
        f"            {', '.join(read)} = {', '.join(read.values())}",
        *indent(call_check(arguments_json, "d_ok = False; break"), 12),
        "            d_calls.append((d_call, d_id, d_sent, d_name, d_args, d_raw, d_obj))",
    ]
    return loop if done is None else [f"if not {done}:", *indent(loop)]


def call_check(arguments_json: bool, fail: str, given: str | None = None, typed: bool = False) -> list[str]:
    """One tool call's check (`d_call`, its `CALL_FIELDS` read), its id sent (`d_sent`) and taken into `d_new`
    when it holds; `fail`: what gives its message to the general branch (it ends the check). `given`: a variable
    holding the object the caller had orjson write the arguments text of (else None), taken as their parse;
    `typed`: the caller wrote the call's `type` as 'function' (not tested again)."""
    raw = (
        ["    try: d_raw = ARGUMENTS_TEXT(d_raw)", f"    except (TypeError, ValueError): {fail}"]
        if arguments_json
        else ["    d_raw = MISSING"]
    )
    typed_test = "" if typed else " or d_call.get('type', 'function') != 'function'"
    call_keys = "3" if typed else "2 + ('type' in d_call)"  # (its id and function; its type, where it has one)
    loads = "WRITTEN_LOADS(d_raw, held_texts) if held_texts else LOADS(d_raw)"
    if given is not None:
        loads = f"{given} if {given} is not None else {loads}"
    return [
        "if (type(d_id) is not str or not d_id or type(d_name) is not str or not d_name or d_id in seen",
        f"        or d_id in d_new{typed_test}): {fail}",
        "if not d_id.isascii(): ck_texts.append(d_id)",
        "if not d_name.isascii(): ck_texts.append(d_name)",
        f"if len(d_fn) != 2 or len(d_call) != {call_keys}: d_deep = True",
        "if type(d_raw) is str and d_raw:",
        f"    try: d_args = {loads}",
        f"    except ValueError: {fail}",
        f"    if type(d_args) is not dict: {fail}",
        "    d_obj = False",
        "elif type(d_raw) is dict:",
        "    d_args, d_obj, d_deep = d_raw, True, True",
        *raw,
        f"else: {fail}",
        "d_new[d_id] = d_name",
        "d_sent = d_id if ids is None else ids(d_id)",
    ]


WRITTEN_CALLS = "d_written"  # the assistant's calls a caller wrote where it read them (`call_write`), in order
WRITTEN_NOTES = "d_written_notes"  # the notes their writes made, in order: noted where the calls are added


def call_write(
    arguments_json: bool,
    parts: Parts,
    names: dict[str, Any],
    keys: Mapping[str, str | None],
    turn: str | None = None,
) -> list[str] | None:
    """One call checked (`call_check`) written by the tool-call template onto `WRITTEN_CALLS`, as the assistant
    branch writes each (at message `i`, position `d_k`); None when it cannot be written there. `keys`: every key
    the call may hold and the variable holding it (None: not held in one), so its own keys are read there;
    `turn`: whether the message is in the current turn (`d_ct`), where the caller knows it (None: not known)."""
    group = replace(_calls_group(arguments_json), header=None, last=None)
    if arguments_json:  # checked: its JSON text is there
        group = replace(group, maybe=group.maybe - {"arguments_json"})
    reads = parts.reads.get("tool_call")
    own = {key: var for key, var in keys.items() if key not in MIDDLE_FIELDS | TOOL_CALL_KEYS}
    if reads is not None and own.keys() <= reads and None not in own.values():  # (each read: none left to settle)
        given = {key: f"({var} if {var} is not None else MISSING)" for key, var in own.items()}  # (null: not given)
        group = replace(group, known={**group.known, **given}, maybe=group.maybe | given.keys(), extras_of=None)
    lines = _part_lines(_Gen(parts, names, "call"), group, WRITTEN_CALLS)
    if lines is None:
        return None
    if any(re.search(r"\bd_ct\b", line) for line in lines):  # (the current turn: known there, or not written)
        return None if turn is None else [f"d_ct = {turn}", *lines]
    return lines


@dataclass(frozen=True)
class Shape:
    """One shape of a role's message: the test that the message has it (after `reads`), the lines that take
    it (the reader's bookkeeping), and its parts."""

    test: str
    take: tuple[str, ...]
    groups: tuple[Group, ...]
    empty: str | None = None  # no part at all (an empty assistant turn)
    orphans: tuple[tuple[str, str, str], ...] = ()  # carried keys no part may take: (key, variable, the test)
    # The JSON check of what the shape reads (README "What the JSON check costs a request given as a dict"): its
    # lines, which leave a text that is not ASCII to `ck_texts` (and a member read only in part to `ck_deep`),
    # and the message keys they cover: a message with any other key is left to `ck_msgs` whole (`all_keys`: each
    # of them is there when the message has the shape, so its count is the test).
    checks: tuple[str, ...] = ()
    keys: frozenset[str] = frozenset()
    all_keys: bool = False


def carried(shape: Shape, placed: tuple[tuple[str, str | None], ...]) -> Shape:
    """The shape with the message keys `messages.carry` places: each given rides on the last part of its kind
    (of any kind: the last part), as the reader's `place` puts it, and one with no such part is noted as
    dropped (`orphans`). A key whose part is known only at run time, or that could meet the part's own key of
    that name, is absent from the shape (given, it takes the general branch)."""
    groups = list(shape.groups)
    tests, take = [shape.test], list(shape.take)
    orphans: list[tuple[str, str, str]] = []
    for n, (key, kind) in enumerate(placed):
        var = f"d_y{n}"
        found = [j for j, group in enumerate(groups) if kind is None or group.kind == kind]
        group = groups[found[-1]] if found else None
        closed = group is not None and (group.extras_of is not None or group.written is not None)  # (see Group)
        if key in MIDDLE_FIELDS or closed or (group is not None and len(found) > 1 and group.empty is not None):
            tests.append(f"m.get({key!r}) is None")
            continue
        take += [f"{var} = m.get({key!r}, MISSING)", f"if {var} is None: {var} = MISSING"]
        if group is None:
            orphans.append((key, var, "True"))
        elif group.empty is not None:
            orphans.append((key, var, group.empty))
        if group is not None:
            groups[found[-1]] = replace(group, carried=(*group.carried, (key, var)))
    return replace(shape, test=" and ".join(tests), take=tuple(take), groups=tuple(groups), orphans=tuple(orphans))


def shapes(role: str, arguments_json: bool, calls_read: str | None = None) -> tuple[list[str], list[Shape]] | None:
    """A role's reads and the shapes the direct writer writes (None: the general branch only); `calls_read`: a
    test that the assistant's calls were checked and written already where the caller read them (`call_check`,
    `call_write`), so its shape adds them as they are."""
    take: tuple[str, ...]
    checks: tuple[str, ...]
    if role == "user":
        take = ("pending, answered = {}, set()",)
        keys = frozenset({"role", "content"})
        text, parts = _text_groups("d_c", False), _text_groups("d_c", True)
        return ["d_c = m.get('content')"], [
            Shape("type(d_c) is str", take, (text,), checks=_TEXT_CHECK, keys=keys, all_keys=True),
            Shape(_TEXT_PARTS, take, (parts,), checks=_PARTS_CHECK, keys=keys, all_keys=True),
        ]
    if role == "assistant":
        reads = [
            f"d_c, d_tc = m.get('content'), m.get({CALLS!r})",
            "d_ok = d_c is None or type(d_c) is str",
            *_read_calls(arguments_json, calls_read),
        ]
        take = (
            "pending, answered = d_new, set()",
            "for d_k, d_id in enumerate(d_new): seen[d_id] = (i, d_k)",
            "d_ct = True if i > last else MISSING",
        )
        known = {"kind": "'text'", "text": "d_c"}
        text = Group("text", known, ("CONTENT", "i"), "if d_c:", flat="(d_c or '')", empty="not d_c")
        checks = ("if d_c and not d_c.isascii(): ck_texts.append(d_c)", "if d_deep: ck_deep.append(d_tc)")
        keys = frozenset({"role", "content", "tool_calls"})
        calls = _calls_group(arguments_json)
        shape = Shape("d_ok", take, (text, calls), "not d_c and not d_calls", checks=checks, keys=keys)
        if calls_read is None:
            return reads, [shape]
        written = replace(calls, written=WRITTEN_CALLS, empty=f"not {WRITTEN_CALLS}")
        fast = replace(
            shape, test=f"d_ok and {calls_read}", groups=(text, written), empty=f"not d_c and {written.empty}"
        )
        return reads, [fast, replace(shape, test=f"d_ok and not {calls_read}")]
    if role == "tool":
        reads = [
            "d_c, d_id = m.get('content'), m.get('tool_call_id')",
            "d_name = pending.get(d_id) if type(d_id) is str else None",
            "d_ok = d_name is not None and d_id not in answered and m.get('is_error') is None",
        ]
        take = ("answered.add(d_id)", "d_sent = d_id if ids is None else ids(d_id)")
        out = []
        rewritten = ("tool_call_id", "d_sent != d_id", "f'messages[{i}].tool_call_id'", "REWRITTEN_ID(d_id, d_sent, P)")
        for listed, test in ((False, "type(d_c) is str"), (True, _TEXT_PARTS)):
            joined = "''.join([d_p['text'] for d_p in d_c])" if listed else "d_c"
            known = {"kind": "'tool_result'", "tool_call_id": "d_sent", "name": "d_name", "content": "d_text"}
            result = Group(
                "tool_result",
                known | {"index": "i", "source": "m"},
                ("MESSAGES", "i"),
                derived=(rewritten,),
                nested=(_text_groups("d_c", listed, "d_text"),),
            )
            # Its tool_call_id equals a call's id its assistant turn read: checked there.
            checks = _PARTS_CHECK if listed else _TEXT_CHECK
            keys = frozenset({"role", "content", "tool_call_id"})
            shape = Shape(f"d_ok and {test}", (*take, f"d_text = {joined}"), (result,), checks=checks, keys=keys)
            out.append(replace(shape, all_keys=True))
        return reads, out
    return None


def direct_names(parts: Parts) -> dict[str, Any]:
    """What every direct branch uses."""
    return {
        "CONTENT": CONTENT,
        "CONTENT_PART": CONTENT_PART,
        "CALL": CALL,
        "LOADS": loads,
        "WRITTEN_LOADS": loads_written,
        "ARGUMENTS_TEXT": _ARGUMENTS_TEXT,
        "REWRITTEN_ID": rewritten_id,
        "ORPHANED": orphaned,
        "OPAQUE": parts.opaque,
        "TEXT_PARTS": text_parts,
    }


def role_writes(
    role: str, shape: Shape, node: Node, parts: Parts, names: dict[str, Any], variant: int
) -> list[str] | None:
    """A shape's write: the role's template inline over the shape's parts, into `written` (None: it cannot)."""
    gen = _Gen(parts, names, f"{role}{variant}d")
    content = content_lines(gen, shape.groups, top=True)
    known = {"role": repr(role), "source": "m", "index": "i"}
    t = gen.new_tag()
    there = frozenset(known)
    inline = inline_node(
        node, "None", "written", is_dict=True, known=known, prefix=f"{t[1:]}_", content=content, tag=t, present=there
    )
    if inline.whole or not inline.firsts.keys() <= known.keys():
        return None
    names.update(inline.names)
    return [*inline.head, *inline.body]
