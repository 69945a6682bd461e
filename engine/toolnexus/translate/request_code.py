"""The request's messages section as one generated function per rule file.

One pass over the transcript: per message, the direct writer's branch for its shape when it has a common
one (direct_code.py: read from the message and written by the templates inline, no middle form), else the
general branch: its role's read into the middle form (the reader's helper for each shape: one
implementation of each idea), the per-turn settling, the write by the role's compiled template; then the
merge of consecutive turns, and the notes where they arise. The role table, the
carry table and the hoisted roles are folded into the code, so the loop asks nothing the rule file
already answered at load.

The explain step is the reader: when the function raises (or declines a message that is not an object
of a known role), `Inbound.translate` reads the whole transcript with `read_messages` first,
which raises the reader's precise TranslationError with its path, as the reader's errors come before
any writer's; a transcript it accepts gets the generated function's own error, the first in message
order. tests/test_request_messages.py holds the two orders to the same result.

The JSON check of a transcript given as a dict folds into the same pass: a direct branch tests the values it
reads (direct_code.Shape.checks) and returns what it did not test, with every message the general branch or
the hoisting reads, for `jsonsafe.read_clean`; `Inbound.translate` asks the whole request's check whenever that
fails or anything raises first, so its refusal is the one the check gives (tests/test_request_check.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import Note
from ..language.codegen import indent
from ..language.paths import MISSING
from ..language.templates import USES_CONTEXT, Const, ContentLines, Ctx, ListPath, Node, Obj, inline_node
from .direct_code import Parts, Shape, carried, direct_names, role_writes, shapes
from .reader import (
    ROLES,
    IdMap,
    _assistant_parts,
    _text_only,
    _tool_result,
    _user_parts,
    orphans,
    part_path,
    place,
)

if TYPE_CHECKING:
    from .formats import CallerTools
    from .inbound import Inbound

# (the written messages, the hoisted prompts, the notes of the turns, the index of the first turn, what the
# JSON check of the transcript has left: the texts, members and messages of jsonsafe.read_clean; and whether a
# hoisted prompt holds more than its role and a string content, which only then is looked at again)
Unchecked = tuple[list[str], list[Any], list[Any]]
Written = tuple[list[Any], list[tuple[str, str, int, dict[str, Any]]], list[Note], int | None, Unchecked, bool]
Messages = Callable[[list[Any], Ctx, IdMap | None], Written | None]
# (the written declarations, the declared names), or None when the fast test declines the list
Tools = Callable[[Any, Ctx], tuple[list[Any], set[str]] | None]
# (the hoisted prompts, the index of the first turn) -> the system prompt written, or None when the fast test declines
System = Callable[[list[Any], int | None, Ctx], Any]


MESSAGES = ListPath("messages")


def same_written_role(previous: Any, message: Any, key: str, index: int, ctx: Ctx) -> bool:
    """`merge_same_role`: whether a written message joins the previous one because both have the same provider
    role (noted as rewritten). Keys other than lists must agree, else nothing could be merged without loss."""
    if not isinstance(previous, dict) or not isinstance(message, dict):
        return False
    role = message.get(key, MISSING)
    if role is MISSING or previous.get(key, MISSING) != role:
        return False
    for name, value in message.items():
        if not (isinstance(value, list) and isinstance(previous.get(name), list)) and previous.get(name) != value:
            raise ctx.fail(
                f"messages[{index}]",
                f"follows another {role!r} turn, which {ctx.provider} merges, but its {name!r} cannot be joined"
                " (a list on both turns, or the same value)",
            )
    ctx.notes.append(Note("rewritten", f"messages[{index}]", f"merged into the previous {role!r} turn"))
    return True


def settle_parts(turn: dict[str, Any], parts: list[dict[str, Any]], kinds: frozenset[str], ctx: Ctx) -> None:
    """Settle each part of a kind the template never writes (a `$content` with `kinds`, and nothing else)."""
    for part in parts:
        if part["kind"] not in kinds:
            ctx.settle(part["kind"], part.get("source", part.get("text")), part_path(turn, part))


# How the reader reads each role's message (OpenAI's shape: the hub's, not a provider's).
_READ = {
    "user": [
        "content = m.get('content')",
        "if type(content) is str: parts = [{'kind': 'text', 'text': content}]",
        "else: parts = user_parts(m, i, P)",
        "pending, answered = {}, set()",
    ],
    "assistant": [
        "pending = {}",
        "parts = assistant_parts(m, i, P, seen, ARGUMENTS_JSON, pending, ids)",
        "answered = set()",
    ],
    "tool": ["parts = [tool_result(m, i, P, pending, answered, ids)]"],
}
_TEXT = ["parts = [{'kind': 'text', 'text': text_only(m, i, P)}]"]  # a system or developer role not hoisted
# The tool calls after the last user turn marked as the current turn's, for a tool-call template that reads it.
_CURRENT_TURN = ["if i > last:", "    for p in parts:", "        if p['kind'] == 'tool_call': p['current_turn'] = True"]
READS_LAST = re.compile(r"\blast\b")


def generate(inbound: Inbound, content: ContentLines | None = None, parts: Parts | None = None) -> tuple[str, Messages]:
    """The messages section's function and its source (`content`: writes a role's `$content` inline; `parts`:
    what the direct writer inlines, for the common shapes of each role's message, see direct_code.py)."""
    names = message_names(inbound)
    lines = [
        "    for i, m in enumerate(msgs):",
        "        if type(m) is not dict: return None",
        "        role = m.get('role')",
        "        if type(role) is not str: return None",
    ]
    branch = "if"
    for role, body in role_branches(inbound, names, content, parts, "f'messages[{i}]'").items():
        lines += [f"        {branch} {'role in HOIST' if role is HOISTED else f'role == {role!r}'}:", *indent(body, 12)]
        branch = "elif"
    lines += [
        "        else:",
        "            return None  # not a role: the reader names it",
        "    c.path = ''",
        "    return out, hoisted, notes, first, (ck_texts, ck_deep, ck_msgs), h_more",
    ]
    head = ["def messages(msgs, c, ids):", "    if type(msgs) is not list: return None", *MESSAGES_HEAD]
    if any(READS_LAST.search(line) for line in lines):  # a template writes the current turn: find its start
        head.append("    last = -1  # the last user turn: the tool calls after it are the current turn's")
        if "user" not in inbound.hoist:
            head += [
                "    for j in range(len(msgs) - 1, -1, -1):",
                "        m = msgs[j]",
                "        if type(m) is dict and m.get('role') == 'user':",
                "            last = j",
                "            break",
            ]
    text, run = _compiled([*head, *lines], f"<messages {inbound.provider}>", names, "messages")
    return text, run


# The messages function's state, before its loop (`role_branches` reads and writes it).
MESSAGES_HEAD = (
    "    out, hoisted, notes, held_texts = [], [], c.notes, c.written",
    "    seen, pending, answered = {}, {}, set()",
    "    merging, merged, first = None, False, None",
    "    ck_texts, ck_deep, ck_msgs = [], [], []  # what the JSON check has left (jsonsafe.read_clean)",
    "    h_more = False",
)
HOISTED = "(hoisted)"  # `role_branches`' key of the hoisted roles' branch
GENERAL_HEAD = "ck_msgs.append(m)"  # the general branch's first line: a role's branch with no direct shape begins so


def message_names(inbound: Inbound) -> dict[str, Any]:
    """The names the messages function's lines use."""
    return {
        "MISSING": MISSING,
        "Note": Note,
        "P": inbound.provider,
        "MESSAGES": MESSAGES,
        "ARGUMENTS_JSON": inbound.reads_arguments_json,
        "CARRY": inbound.carry,
        "HOIST": inbound.hoist,
        "user_parts": _user_parts,
        "assistant_parts": _assistant_parts,
        "tool_result": _tool_result,
        "text_only": _text_only,
        "place": place,
        "orphans": orphans,
        "settle_parts": settle_parts,
        "same_role": same_written_role,
        "ROLE_KEY": inbound.merge_same_role,
        # Message keys `messages.unsupported` drops whatever they hold: their note, decided here (as `_settle` would).
        "DROPPED": {
            key: rule.dropped_because(inbound.provider)
            for key, rule in inbound.message_unsupported.items()
            if rule.action == "drop" and not rule.accept
        },
    }


def role_branches(
    inbound: Inbound,
    names: dict[str, Any],
    content: ContentLines | None,
    parts: Parts | None,
    hoisted_at: str,
    calls_read: str | None = None,
) -> dict[str, list[str]]:
    """Each role's branch of the loop over the messages (`m`, at `i`), by role (the hoisted roles' as `HOISTED`):
    the direct writer's shapes, else the general read and write, then the merge; `hoisted_at`: the expression of
    a hoisted prompt's path; `calls_read`: a test that the assistant's calls are read and checked already, where
    the caller built them (`direct_code.call_check`)."""
    branches: dict[str, list[str]] = {}
    if inbound.hoist:
        branches[HOISTED] = [
            "h_text = m.get('content')",  # a string content taken here: no call for the common prompt
            "if type(h_text) is not str: h_text = text_only(m, i, P); ck_msgs.append(m); h_more = True",
            "elif len(m) != 2: ck_msgs.append(m); h_more = True",
            "elif not h_text.isascii(): ck_texts.append(h_text)  # role and content, both read",
            f"hoisted.append((h_text, {hoisted_at}, i, m))",
            "continue",
        ]
    for role in ROLES:
        if role in inbound.hoist:
            continue
        general, tail = _role(role, inbound, names, content, parts)
        general.insert(0, GENERAL_HEAD)
        fast = None if parts is None else _direct(role, inbound, names, parts, calls_read)
        if fast is not None:
            general = [*fast, *indent(general)]
        branches[role] = [*general, *tail]
    return branches


def _direct(
    role: str, inbound: Inbound, names: dict[str, Any], parts: Parts, calls_read: str | None
) -> list[str] | None:
    """The direct writer's branches for a role's common shapes (direct_code.py), each ending where the general
    branch ends (`written` set), and the `else:` the general branch goes under; None when there is none."""
    rule = inbound.roles[role]
    found = shapes(role, inbound.reads_arguments_json, calls_read)
    if rule.node is None or rule.spliced or found is None:
        return None
    names.update(direct_names(parts))
    reads, kinds = found
    lines = list(reads)
    branch = "if"
    for variant, shape in enumerate(kinds):
        if rule.kinds is not None and not {group.kind for group in shape.groups} <= rule.kinds:
            continue
        shape = carried(shape, inbound.carry.get(role, ()))
        writes = role_writes(role, shape, rule.node, parts, names, variant)
        if writes is None:
            continue
        body = ["if first is None: first = i", *_checks(role, shape, inbound, names)]
        if rule.allowed is not None:  # as the general branch notes them (`orphans`)
            for key, var, test in shape.orphans:
                note = f"Note('dropped', f'messages[{{i}}].{key}', ORPHANED({dict(inbound.carry[role])[key]!r}))"
                body.append(f"if {var} is not MISSING and {test}: notes.append({note})")
        if rule.drop_if_empty and shape.empty is not None:
            why = f"an empty {role} turn cannot be sent to {inbound.provider}"
            body += [
                f"if {shape.empty}:",
                f"    notes.append(Note('dropped', f'messages[{{i}}]', {why!r}))",
                "    continue",
            ]
        nothing = f"the {inbound.provider} rules wrote nothing for this message"
        body += [
            *(["c.path = (MESSAGES, i)"] if USES_CONTEXT.search("\n".join(writes)) else []),
            *writes,
            f"if written is MISSING: raise c.fail(f'messages[{{i}}]', {nothing!r})",
        ]
        lines += [f"{branch} {shape.test}:", *indent([*_used_takes(shape.take, body), *body])]
        branch = "elif"
    if branch == "if":
        return None
    return [*lines, "else:"]


# A shape's take line that only reads a value into a variable (`d_ct`, a tool result's `d_text`, a carried key's
# `d_yN`): left out when nothing in its branch reads that variable (a template that writes no current turn, ...).
_VALUE_TAKE = re.compile(r"(?:if )?(d_ct|d_text|d_y\d+)\b")


def _used_takes(take: tuple[str, ...], body: list[str]) -> list[str]:
    """The shape's take lines its branch needs: each value read only into a variable no line of `body` reads
    is left out (a read of the message, no effect)."""
    text = "\n".join(body)
    kept = []
    for line in take:
        found = _VALUE_TAKE.match(line)
        if found is None or re.search(rf"\b{found[1]}\b", text):
            kept.append(line)
    return kept


def _checks(role: str, shape: Shape, inbound: Inbound, names: dict[str, Any]) -> list[str]:
    """A direct branch's JSON check (`Shape.checks`) and the settling of the message keys its role's rules read
    nothing for (`_allowed`), under the test that the message holds a key the check does not cover when every
    key it covers is read by the rules (one test of the keys in the common case)."""
    if shape.all_keys:
        other = f"len(m) != {len(shape.keys)}"
    else:
        names[f"SHAPE_KEYS_{role}"] = shape.keys
        other = f"not m.keys() <= SHAPE_KEYS_{role}"
    allowed, read = _allowed(role, inbound, names), inbound.roles[role].allowed
    if read is None or shape.keys <= read:
        return [*shape.checks, f"if {other}:", "    ck_msgs.append(m)", *indent(allowed)]
    return [*shape.checks, f"if {other}: ck_msgs.append(m)", *allowed]


def _allowed(role: str, inbound: Inbound, names: dict[str, Any]) -> list[str]:
    """The message keys the role's rules read nothing for, settled (or dropped as `messages.unsupported` says)."""
    rule = inbound.roles[role]
    if rule.allowed is None:
        return []
    names[f"ALLOWED_{role}"] = rule.allowed
    return [
        f"if not m.keys() <= ALLOWED_{role}:",
        "    for k, v in m.items():",
        f"        if k not in ALLOWED_{role} and v is not None:",
        "            why = DROPPED.get(k)",
        "            if why is None: c.settle(k, v, f'messages[{i}].{k}')",
        "            else: notes.append(Note('dropped', f'messages[{i}].{k}', why))",
    ]


def _writes_current_turn(parts: Parts | None) -> bool:
    """Whether the tool-call template may read `current_turn` (unknown: it may)."""
    reads = None if parts is None else parts.reads.get("tool_call", frozenset())
    return reads is None or "current_turn" in reads


def _role(
    role: str, inbound: Inbound, names: dict[str, Any], content: ContentLines | None, parts: Parts | None
) -> tuple[list[str], list[str]]:
    """One role's read, settling, write (its template inline) and merge (as `messages.roles.<role>` says): the
    lines up to `written`, and the merge after it."""
    rule = inbound.roles[role]
    if rule.node is None:
        names[f"render_{role}"] = rule.render
        write = [f"written = render_{role}(turn, c)"]
    else:
        known = {"role": repr(role), "parts": "parts", "source": "m", "index": "i"}
        inline = inline_node(
            rule.node, "turn", "written", is_dict=True, known=known, prefix=f"{role}_", content=content
        )
        names.update(inline.names)
        write = [*inline.head, *inline.body]
    lines = list(_READ.get(role, _TEXT))
    if role == "assistant" and _writes_current_turn(parts):
        lines += _CURRENT_TURN
    placed = inbound.carry.get(role)
    if placed:  # `rule.carried` is built from this table: the keys placed are those it may find no part for
        names[f"PLACED_{role}"] = placed
        names[f"PLACED_KEYS_{role}"] = rule.carried
        lines += [
            f"carries = not PLACED_KEYS_{role}.isdisjoint(m)",
            f"if carries: place(m, parts, i, P, PLACED_{role})",
        ]
    lines += [
        f"turn = {{'role': {role!r}, 'parts': parts, 'source': m, 'index': i}}",
        "if first is None: first = i",
    ]
    lines += _allowed(role, inbound, names)
    if rule.allowed is not None and rule.carried:
        lines += [
            "if carries:",
            "    for key, why in orphans(turn, CARRY): notes.append(Note('dropped', f'messages[{i}].{key}', why))",
        ]
    if rule.kinds is not None:
        names[f"KINDS_{role}"] = rule.kinds
        lines.append(f"settle_parts(turn, parts, KINDS_{role}, c)")
    if rule.drop_if_empty:
        why = f"an empty {role} turn cannot be sent to {inbound.provider}"
        lines += ["if not parts:", f"    notes.append(Note('dropped', f'messages[{{i}}]', {why!r}))", "    continue"]
    nothing = f"the {inbound.provider} rules wrote nothing for this message"
    lines += [
        "c.path = (MESSAGES, i)",
        *write,
        f"if written is MISSING: raise c.fail(f'messages[{{i}}]', {nothing!r})",
    ]
    if rule.spliced:  # several entries: each element of the list, an element that is a list giving its own
        return lines, ["for w in written: out.extend(w) if type(w) is list else out.append(w)", "merging = None"]
    if not rule.merge_consecutive and inbound.merge_same_role is None:
        return lines, ["out.append(written)", "merging = None"]
    same = f"merging == {role!r}" if rule.merge_consecutive else "False"
    if inbound.merge_same_role is not None:  # messages.merge_same_role: also by the written provider role
        same += " or (out and same_role(out[-1], written, ROLE_KEY, i, c))"
    return lines, [
        f"if {same}:",
        "    if not merged:",
        "        out[-1] = {k: list(v) if isinstance(v, list) else v for k, v in out[-1].items()}",
        "        merged = True",
        "    into = out[-1]  # merge_into, inline: lists concatenate, other values are the latest",
        "    for k, v in written.items():",
        "        if isinstance(v, list) and isinstance(into.get(k), list): into[k].extend(v)",
        "        else: into[k] = v",
        "else:",
        "    out.append(written)",
        "    merged = False",
        f"merging = {role!r}" if rule.merge_consecutive else "merging = None",
    ]


TOOLS = ListPath("tools", ".function")


def generate_tools(inbound: Inbound, declaration: Node, caller: CallerTools | None = None) -> tuple[str, Tools] | None:
    """The tools section's function and its source: per tool, the fast test of its shape and the declaration
    written inline. The test passes a tool `{type: function, function}` whose function keys the declaration all
    reads (none null; any keys when it reads the tool whole), with a new non-empty name, a string description and
    an object of parameters if given. It declines (None) anything else, and the explain step decides: the notes
    written before it declined are taken back. With `caller`, the same function over a source format's own
    declarations: each key read where the caller keeps it, besides only the listed keys holding what settles
    silently; a declaration reading the tool whole reads it as the Chat Completions tool the format's read makes,
    built from those keys (None when the declaration is not read that way: keys it does not count)."""
    whole = inbound.plain_tool_scope == "source"
    if whole:
        scope = "tool_" if caller is None else "source_"
        inline = inline_node(declaration, f"{{'source': {scope}}}", "written_", is_dict=True, known={"source": scope})
    else:  # the name, tested below before anything is written, is known there: written without a test
        known = {"name": "name_"}
        inline = inline_node(declaration, "fn_", "written_", is_dict=True, known=known, present=frozenset(known))
    names = {**inline.names, "TOOLS": TOOLS, "READS": inbound.tool_keys_read}
    firsts = {} if whole else inline.firsts  # the function keys the declaration reads, each read once

    tested = {key: firsts.get(key, f"{key}_") for key in ("name", "description", "parameters")}
    own_reads = [
        f"        {var} = fn_.get({key!r}, MISSING)"
        for key, var in tested.items()
        if key not in firsts or var == f"{key}_"
    ]
    decline = ["            del c.notes[noted_:]", "            return None"]
    shape = [
        "        fn_ = tool_.get('function') if type(tool_) is dict and len(tool_) == 2 else None",
        "        if type(fn_) is not dict or tool_.get('type') != 'function':",
        *decline,
    ]
    counted = not whole and inbound.tool_keys_read is not None and inbound.tool_keys_read <= firsts.keys()
    built: list[str] = []  # what the declaration reads, made from the caller's keys first
    besides: list[str] = []  # the caller's keys no declaration reads, tested after the loop
    if caller is not None:
        if not (counted or whole):
            return None
        # every key the declaration reads (and the three tested; read whole: every key) in a variable, read from
        # the caller's key
        held = {key: f"k{i}_" for i, key in enumerate(dict.fromkeys([*tested, *(caller.keys if whole else firsts)]))}
        if not whole:
            inline = inline_node(declaration, "fn_", "written_", is_dict=True, known=held, present=frozenset({"name"}))
            names.update(inline.names)
        firsts, tested = {key: held[key] for key in firsts}, {key: held[key] for key in tested}
        own_reads = [
            f"        {var} = fn_.get({caller.keys[key]!r}, MISSING)"
            if key in caller.keys
            else f"        {var} = MISSING"
            for key, var in held.items()
        ]
        if whole:  # the Chat Completions tool the format's read makes (`SourceFormat._tools`), its keys in order
            first = next(iter(caller.keys), None)  # the name, tested below, is there: in the display when first
            built = [f"        function_ = {{'name': {held['name']}}}" if first == "name" else "        function_ = {}"]
            for key in caller.keys:
                present = "" if key == "name" else f"if {held[key]} is not MISSING: "
                if key != "name" or first != "name":
                    built.append(f"        {present}function_[{key!r}] = {held[key]}")
            built.append("        source_ = {'type': 'function', 'function': function_}")
        read = caller.keys if whole else inbound.tool_keys_read or ()
        names["OWN_"] = frozenset(caller.keys[key] for key in read if key in caller.keys)
        names["QUIET_"] = caller.quiet
        shape = ["        fn_ = tool_", "        if type(fn_) is not dict:", *decline]
        # The keys besides those read (a Responses tool's `type`), tested once over the whole list after the
        # loop: each listed, and every tool's value (None where absent) one that settles silently. A tool that
        # fails declines either way; nothing the loop wrote is kept then. The values are tested by a loop: a
        # `methodcaller` and a bound `__contains__` called per tool cost four times its time.
        besides = [
            "    for key_ in set().union(*tools_) - OWN_:",
            "        quiet_ = QUIET_.get(key_)",
            "        if quiet_ is None:",
            *decline,
            "        for tool_ in tools_:",
            "            if tool_.get(key_) not in quiet_:",
            *["    " + line for line in decline],
        ]
    name, description, parameters = tested.values()
    body = [f"        {line}" for line in inline.body]
    copied = inline.body[0].removeprefix("written_ = ") if len(inline.body) == 1 else ""
    written = [*body, "        out_.append(written_)"]
    if copied.isidentifier():  # the declaration is a variable as it is (the tool read whole): appended, no copy
        written = [f"        out_.append({copied})"]
    lines: list[str] = [
        "def tools(tools_, c):",
        "    if type(tools_) is not list: return None",
        "    out_, declared_, noted_ = [], set(), len(c.notes)",
        "    for i_, tool_ in enumerate(tools_):",
        *shape,
    ]
    # Only keys the declaration reads, none null: with each read key in a variable, that is a count (the keys it
    # reads that are present are all its keys) and a test of the variables not tested below (name, description
    # and parameters are refused when null by their type test), cheaper than a subset test and a scan of values.
    only_read: list[str] = []
    if counted:
        reads = [key for key in firsts if key in (inbound.tool_keys_read or ())]
        count = " + ".join("1" if key == "name" else f"({firsts[key]} is not MISSING)" for key in reads)
        only_read = [f"                or {firsts[key]} is None" for key in reads if key not in tested]
        if caller is None:
            only_read.append(f"                or len(fn_) != {count}")
    elif not whole:
        lines += ["        if not fn_.keys() <= READS or None in fn_.values():", *decline]
    lines += own_reads  # first: the inline head may read below the name (a chain `name.x`, read up front)
    lines += ["        " + line for line in inline.head]
    lines += [
        f"        if (type({name}) is not str or not {name} or {name} in declared_",
        f"                or ({description} is not MISSING and type({description}) is not str)",
        f"                or ({parameters} is not MISSING and type({parameters}) is not dict)",
        *only_read,
        "                ):",
        *decline,
        f"        declared_.add({name})",
        *built,
        *(["        c.path = (TOOLS, i_)"] if USES_CONTEXT.search("\n".join(inline.body)) else []),
        *written,
        *besides,
        "    c.path = ''",
        "    return out_, declared_",
    ]
    label = f"<tools {inbound.provider}>" if caller is None else f"<tools {caller.format} -> {inbound.provider}>"
    text, run = _compiled(lines, label, names, "tools")
    return text, run


def generate_system(inbound: Inbound, message: Node | None) -> tuple[str, System] | None:
    """The system prompt's fast test and write: one hoisted prompt, ahead of every turn, is the prompt; with a
    system message template (`message`; None: the body places the prompt), written inline when the template
    writes the prompt's own role, a constant (else there is no fast test: None). It declines (None) anything
    else, and `Inbound._choose_system` and `_system_message` choose, note and write the prompt."""
    lines = [
        "def system(hoisted, first, c):",
        "    if len(hoisted) != 1: return None",
        "    text_, _, index_, source_ = hoisted[0]",
        "    if first is not None and index_ > first: return None",
    ]
    if message is None:
        return _compiled([*lines, "    return text_"], f"<system {inbound.provider}>", {}, "system")
    role = dict(message.items).get("role") if isinstance(message, Obj) else None
    if not isinstance(role, Const) or type(role.value) is not str:
        return None
    known = {"text": "text_"}  # a string: the hoisted prompt's text
    inline = inline_node(message, "{'text': text_}", "written_", is_dict=True, known=known, present=frozenset(known))
    lines += [
        f"    if source_['role'] != {role.value!r}: return None",  # else a note: sent as part of the role's message
        *indent(inline.head),
        *indent(inline.body),
        "    return written_",
    ]
    return _compiled(lines, f"<system {inbound.provider}>", inline.names, "system")


def _compiled(lines: list[str], label: str, names: dict[str, Any], function: str) -> tuple[str, Any]:
    """The generated source and the function it defines (its names bound in `names`)."""
    text = "\n".join(lines) + "\n"
    exec(compile(text, label, "exec"), names)
    return text, names[function]
