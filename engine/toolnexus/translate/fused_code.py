"""A (source format, provider) pair's fused transcript function (README "Performance": what it saves).

Today's route reads a source request's transcript into normal-form messages with records of where each element came
from (format_code), then the provider's messages function reads those messages again and writes them (request_code),
and the notes are named through the records. The fused function is one loop over the format's items: each
normal-form message is built as the format's reader builds it (the kinds' templates inline, no records) and, as soon
as no later item can join it, written by the provider's own branch for its role (the same
`request_code.role_branches` lines, the direct writer's shapes first), so no message list is walked twice and
nothing is named afterwards. A tool call that joins it is checked and written at its item, from the variables the
item's template holds (`direct_code.call_check`, `call_write`; the current turn, where its template reads it, from
`last`), its notes at that item's own index: the branch adds the calls as written; arguments a `$json_text` writes
for a provider that reads text are written there by orjson inline and their object handed to that check
(`arguments_written`: no text parsed back); the JSON check takes the lists items joined (reasoning items) as the
message's containers, not the message whole (`members_checked`). Its result is what the messages function returns,
hoisted prompts at the format's paths and indexes the items' (only their order is compared: `first`, and `last`,
the current turn's start, found by a scan of the items for the last user message when a branch reads it). Each note
a branch makes is made at its path in the format's request, as `formats.named` would find it through the reader's
records (`sourced`: an f-string of the item's index, the rest renamed at generation; an element of a list items
joined, at its own item), and the body keeps them as they are (`RequestBody.transcript_notes`).

A format of role messages (no `items`: Anthropic Messages) composes the same way, one role message at a time:
its blocks in order, parts and items (`item` kinds: a `tool_use` one of the calls, thinking riding along) joining
the message its role message opens, a block that is a message of its own (a `tool_result`) writing the open one
first, then itself, the open one written at the role message's end; an element of a list at its block of the
role message's content. The format's templates render with a Ctx of their own (the reader keeps none of their
notes), and a helper's notes at the normal form's paths (a part's key it drops, say) are kept with the function's
own, in order, and named at the end (`formats.named_alone`): one at an element of a list of the one message its
role message made (a part's `content[n]`, a call's `tool_calls[n]`) at the `n`th block whose kind joins that list,
from the rule data (`SourceFormat.block_lists`); any other by the reader's records of its role message read again;
one that made several messages declines.

It declines (None) whatever it does not take, so today's route runs and says it exactly: a block of a shape the
reader's fast test declines, sealed state, a key to settle, a note at a path not known here (any a helper makes,
at the normal form's paths, in a format of items), anything raised.

A provider that rewrites ids by a table (`tool_call_ids.rewrite`: every id of the transcript is needed before the
first message is written) gets its table from a scan of the format's items first (`transcript_ids`: the ids at the
keys its kinds' templates read them from, `id_keys`, in the order the normal form holds them), then the one loop;
a rewrite that fails raises, and today's route says it. A pair gets none when its pieces do not compose: a
rewrite whose ids a template reads otherwise than as one key's value, more than one role items join, a joined
role that is not written as its text alone, a joined role's branch with no direct shape that settles its parts'
unwritten fields at the normal form's paths (every transcript with one would decline). A field the direct writer
settles at the part's path (`direct_code._gap_lines`: Ollama's rules write no call id, and drop it) is noted at the
call's item, as a rewritten id is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..language.codegen import indent
from ..language.ids import IdsFound
from ..language.jsonsafe import orjson_bytes
from ..language.templates import SEAL, Apply, Const, Ctx, Get, ListPath, Obj, json_text, unseal
from .direct_code import CALL_FIELDS, CALLS, WRITTEN_CALLS, WRITTEN_NOTES, At, call_check, call_write
from .format_code import ReaderGen, escaped_path, written_role
from .formats import OWN_PATH, TEXT_PART, Fused, Kind, SourceFormat, named_alone, remap
from .request_code import GENERAL_HEAD, HOISTED, MESSAGES, MESSAGES_HEAD, READS_LAST, message_names, role_branches

if TYPE_CHECKING:
    from .inbound import Inbound

_CONTINUE = re.compile(r"\bcontinue\b")
# A general branch's settling of the fields its part template leaves unwritten, for every part of a kind (inbound's
# `_settle_gaps`): noted at the hub's paths, so where the branch of the message items join (the calls) has no direct
# shape that settles them at the part's path, every transcript with one would decline, and run both routes.
_GAPS = re.compile(r" *\w+\(s, part_, \w+, c\)")
# A branch's note (or a key it settles) and the hub paths it is written at: an f-string of the message index, a
# part's `element_path` in one, `c.at` below the scope `c.path` was last set to (`(MESSAGES, i)`, `(CALL, ...)`).
_NOTES = re.compile(r"\bnotes\.append\(")  # a note a sourced line makes
_NOTE = re.compile(r"(?:c\.)?notes\.append\(|c\.settle\(")
_HUB_PATH = re.compile(r"f'" + re.escape(MESSAGES.name) + r"\[\{i\}\]([^']*)'")
_ELEMENT = re.compile(r"\{(\w+)\.element_path\((.*?)\)\}")
_SCOPE = re.compile(r"( *)c\.path = (.*)")
_AT = re.compile(r"c\.at\('([^']*)'\)")
_UNKNOWN = "\0"  # a scope not known here
# A direct branch's JSON check of a message holding keys besides its shape's (`request_code._checks`): the whole
# message left to the check, on the line after the test or on the test's own.
_OTHER_KEYS = re.compile(r"( *)if not m\.keys\(\) <= (SHAPE_KEYS_\w+):( ck_msgs\.append\(m\))?")
_CALL_INDEX = "d_k"  # the index of a call `direct_code.call_write` writes, in its notes' paths (`tool_calls[{d_k}]`)
_ROLE = re.compile(r"(?<![\w'])role\b(?!')")  # the messages function's variable of the message's role, read
# What follows the message in a hub path: a key (or `{k}`, one known at run time), an element of it, below it.
_REST = re.compile(r"\.(\w+|\{\w+\})(?:\[\{(\w+)\}\])?((?:\..*)?)")


@dataclass(frozen=True)
class _Source:
    """Where a written message's notes are in the format's request, as `formats.named` finds them through the
    reader's records: at its item (`at`: f-string text, `i` the item's index), its keys renamed by `renames`;
    an element of a list items join it into (`lists`: their kinds' renames) at its own item, the list itself at
    its first (the items a message joined are a run from its first: `joined_at` counts them)."""

    at: str
    renames: Mapping[str, str] = field(default_factory=dict)
    lists: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # Where the list's `n`th element is, `@` standing for its index: an item from the message's first (a format of
    # items), or a block of the message's content (a format of role messages); and what `joined_at` counts from.
    element: str = "{@}"
    counted: str = "msgs, i"
    # A call written at its own item (`_Writer.call_checked`): that item's path, for its element of the list (the
    # index `call_write` notes it at), so no run is counted.
    here: str | None = None

    def path(self, rest: str) -> str | None:
        """The f-string text of the source path of the message's hub path followed by `rest`; None: unknown here."""
        if not rest:
            return self.at
        found = _REST.fullmatch(rest)
        if found is None or "{" in found[3]:  # (a key below the element known at run time: not renamed here)
            return None
        key, index, deeper = found.groups()
        if key not in self.lists and key[0] != "{":  # a key of the message itself
            return None if index is not None else remap("m" + rest, {"m": (self.at, self.renames)})
        if not self.lists or (key[0] == "{" and index is not None) or (index is None and deeper):
            return None
        # A list items joined (a key known at run time: one of them, or a KeyError that declines), at its item.
        known = f"JOINED[{key[1:-1]}]" if key[0] == "{" else f'JOINED["{key}"]'
        if self.here is not None and index == _CALL_INDEX:
            item = self.here
        else:
            item = self.element.replace("@", f"joined_at({self.counted}, {known}, {index or 0})")
        return item if index is None else remap("m" + deeper, {"m": (item, self.lists[key])})


def joined_at(items: list[Any], start: int, kinds: tuple[str, frozenset[str]], n: int) -> int:
    """The index of the `n`th item from `start` of one of the kinds that join a list (`kinds`: the kind key and
    those kinds), for a note's path: the items a message joined are a run from its first."""
    key, names = kinds
    for at in range(start, len(items)):
        if items[at].get(key) in names:
            if not n:
                return at
            n -= 1
    raise LookupError(n)


def _hub_scope(expr: str, names: Mapping[str, Any]) -> str | None:
    """The hub path (f-string text) of a `c.path` or `element_path` scope `(OWNER, index)`; None: not one of these."""
    found = re.fullmatch(r"\((\w+), (.*)\)", expr)
    if found is None:
        return None
    owner = names.get(found[1])
    if not isinstance(owner, At | ListPath):
        return None
    held = tuple(f"{{{var}}}" for var in re.findall(r"\w+", found[2]))  # each index a placeholder of its variable
    index: Any = held if len(held) > 1 else held[0]
    return str(owner.element_path(index))


def sourced(lines: list[str], source: _Source, names: Mapping[str, Any], mark: str = "") -> list[str]:
    """A branch's lines with each note it makes at its path in the format's request (`source`), so nothing is
    named afterwards (`mark` begins each such path, where the function's notes and a helper's share a list); a note
    whose path is not known here (a key to settle, a part's) declines instead."""
    out, scope, depth = [], None, 0
    for line in lines:
        if scope is not None and len(line) - len(line.lstrip()) < depth:
            scope = None  # (set in a block that has ended)
        found = _SCOPE.fullmatch(line)
        if found is not None:
            scope, depth = _hub_scope(found[2], names), len(found[1])
        elif (noted := _NOTE.search(line)) is not None:
            line = line[: noted.start()] + _noted(line[noted.start() :], scope, source, names, mark)
        out.append(line)
    return out


_FUNCTION_NOTE = re.compile(r"(?<![\w.])notes(?:\.append\(| \+=)")  # a note on the function's own list


def joined_notes(lines: list[str], noted: bool) -> bool:
    """Whether a joined item's lines make no note on the function's list but the one of a list noted at its
    first item (`noted`): else that note could come before one the branch makes after it (the function declines)."""
    return sum(bool(_FUNCTION_NOTE.search(line)) for line in lines) == noted


def members_checked(lines: list[str]) -> list[str]:
    """The open message's branch with its keys besides the shape's left to the JSON check as containers, not the
    whole message again (its shape's values are checked as read, its calls at their items). Those keys are the
    lists items joined (the rule data's names; a reasoning item there is the caller's, whole), each a member of
    the message as `jsonsafe._members_clean` would have taken it: the same containers at the same depth."""
    out = list(lines)
    for at, line in enumerate(lines):
        found = _OTHER_KEYS.fullmatch(line)
        if found is None:
            continue
        deep = f"ck_deep.extend([m[k] for k in m.keys() - {found[2]}])"
        if found[3]:
            out[at] = f"{found[1]}if not m.keys() <= {found[2]}: {deep}"
        elif at + 1 < len(lines) and lines[at + 1].strip() == "ck_msgs.append(m)":
            out[at + 1] = lines[at + 1].replace("ck_msgs.append(m)", deep)
    return out


def _noted(call: str, scope: str | None, source: _Source, names: Mapping[str, Any], mark: str) -> str:
    """A note's statement at its source path, or `return None` when that path is not known here."""
    call = _ELEMENT.sub(lambda found: _hub_scope(f"({found[1]}, {found[2]})", names) or _UNKNOWN, call)
    if scope is not None:
        call = _AT.sub(lambda found: f"f'{scope}{'' if found[1][:1] == '[' else '.'}{found[1]}'", call)
    paths = [source.path(rest) for rest in _HUB_PATH.findall(call)]
    if call.startswith("c.settle(") or not paths or None in paths or "c.at(" in call or _UNKNOWN in call:
        return "return None"
    for path in paths:
        call = _HUB_PATH.sub(lambda _: f"f'{mark}{path}'", call, count=1)  # noqa: B023 (used at once)
    return call.removeprefix("c.")


@dataclass(frozen=True)
class IdKeys:
    """Where a format's blocks hold the tool-call ids its templates read into the normal form, for a rewrite's
    scan of every id before the first message is written (`transcript_ids`): by kind, the key of a call's `id`
    (an item of `tool_calls`) or of a result's `tool_call_id` (a message of its own), and whether it is read
    `$unseal`ed (the id before its seal); `blocks`: the kinds are blocks of each role message's `content`."""

    kind: str
    keys: Mapping[Any, tuple[str, bool]]  # (read with a block's kind, whatever it is: a miss)
    blocks: bool


def id_keys(fmt: SourceFormat) -> IdKeys | None:
    """The format's `IdKeys`, from its kinds' templates; None when an id is read otherwise than as one key's
    value (its scan would not find the ids the normal form holds)."""
    kinds = [fmt.items] if fmt.items is not None else list(fmt.roles.values())
    keys: dict[str, tuple[str, bool]] = {}
    for name, kind in ((name, kind) for found in kinds for name, kind in found.items()):
        if kind.mode == "item" and kind.into == CALLS:
            held = "id"
        elif kind.mode == "message":
            held = "tool_call_id"
        else:
            continue
        read = dict(kind.node.items).get(held) if isinstance(kind.node, Obj) else None
        if read is None and not isinstance(kind.node, Obj):
            return None  # (a message or a call the template makes whole: where its id is is not known here)
        if read is None:
            continue
        key = _id_key(read)
        if key is None or keys.setdefault(name, key) != key:
            return None
    return IdKeys(fmt.kind, MappingProxyType(keys), fmt.items is None)


def _id_key(node: Any) -> tuple[str, bool] | None:
    """The key an id's template reads as it is (`$get`, or `$unseal`'s value: True), or None."""
    if isinstance(node, Get) and node.plain and len(node.reads) == 1:
        read, unsealed = node.reads[0], False
    elif isinstance(node, Apply) and _unseals(node.function):
        read, unsealed = node.path, True
    else:
        return None
    steps = read.steps
    return (steps[0], unsealed) if steps is not None and len(steps) == 1 and type(steps[0]) is str else None


def _unseals(function: Any) -> bool:
    """Whether a template's value function is `$unseal`'s value part (the id before its seal)."""
    return isinstance(function, partial) and function.func is unseal and function.keywords == VALUE


def transcript_ids(items: list[Any], keys: IdKeys) -> IdsFound:
    """Each tool-call id of the format's transcript, in order of first appearance, as the normal form holds them
    (`language.ids._transcript_ids` over the messages the reader makes: its messages are in the items' order, a
    message's calls in its blocks'); anything malformed is skipped (the fused function declines it). Where an id
    is, is its item alone: a rewrite that fails raises, and the fused function's caller runs today's route."""
    found: IdsFound = {}
    kind, held = keys.kind, keys.keys
    for i, item in enumerate(items):
        if type(item) is not dict:
            continue
        blocks = item.get("content") if keys.blocks else (item,)
        if type(blocks) is not list and type(blocks) is not tuple:
            continue
        for block in blocks:
            if type(block) is not dict:
                continue
            read = held.get(block.get(kind))
            if read is None:
                continue
            call_id = block.get(read[0])
            if type(call_id) is str:
                if read[1] and SEAL in call_id:
                    call_id = unseal(call_id, UNSEALING, part="value")
                if call_id not in found:
                    found[call_id] = (i, None)
    return found


UNSEALING = Ctx("")  # (`unseal` notes nothing: its value part reads no Ctx)
VALUE = {"part": "value"}  # (`$unseal`'s keywords when it reads the id before the seal)


def with_fused(fmt: SourceFormat, providers: Mapping[str, Any]) -> SourceFormat:
    """The format with the fused function of each provider whose pieces compose with it, and their sources."""
    made = {name: found for name, p in providers.items() if (found := generate_fused(fmt, p.inbound)) is not None}
    return replace(
        fmt,
        fused=MappingProxyType({name: run for name, (_, run) in made.items()}),
        fused_code=MappingProxyType({name: text for name, (text, _) in made.items()}),
    )


def generate_fused(fmt: SourceFormat, inbound: Inbound) -> tuple[str, Fused] | None:
    """The pair's fused function and its source, or None when its pieces do not compose."""
    items = fmt.items
    ids = inbound.tool_call_ids
    rewrites = ids is not None and ids.rewrite is not None  # (a rewrite scans every id of the transcript first)
    keys = id_keys(fmt) if rewrites else None
    if inbound.writes is None or (rewrites and keys is None):
        return None
    if items is not None:  # a format of items: those that join make one message of one role
        joined = {kind.joins for kind in items.values() if kind.joins} | fmt.joining_roles
        if len(joined) != 1:
            return None
        (joins,) = joined
        opened: frozenset[str] = frozenset({joins})
    elif fmt.joining_roles:
        return None
    else:  # a format of role messages: each one's blocks make messages of its own (`_Writer.blocks_message`)
        joins, opened = None, fmt.transcript_roles
    if not opened <= fmt.plain_text or not opened.isdisjoint(inbound.hoist):
        return None  # (its text is kept as a list of parts here until it is complete)
    gen = ReaderGen(fmt)
    gen.names.update(message_names(inbound))
    calls_read = "x_ok" if "assistant" in opened else None  # the role whose calls are checked at their items
    branches = role_branches(inbound, gen.names, *inbound.writes, "x_path", calls_read)
    if any(_settles_every_part(branches.get(role, [])) for role in opened):
        return None
    reads_last = any(READS_LAST.search(line) for lines in branches.values() for line in lines)
    if reads_last and (joins == "user" or any(written_role(kind) == "user" for kind in (items or {}).values())):
        return None  # (the current turn's start is found among the format's role messages only)
    takes_calls = calls_read is not None and any(WRITTEN_CALLS in line for line in branches.get("assistant", ()))
    writer = _Writer(fmt, gen, branches, joins, reads_last, inbound if takes_calls else None, keys is not None)
    lines = writer.function()
    if lines is None:
        return None
    objects = not inbound.reads_arguments_json
    gen.names.update({"Ctx": Ctx, "P": inbound.provider, "TEXT_PART": TEXT_PART, "OBJECTS": objects})
    gen.names.update({"ONE_TURN": (None,), "joined_at": joined_at, "JOINED": writer.joined, "TOOL_CALL_IDS": ids})
    gen.names.update({"TRANSCRIPT_IDS": transcript_ids, "ID_KEYS": keys})
    gen.names.update({"ALONE": writer.alone, "NAMED_ALONE": named_alone, "FORMAT": fmt})
    gen.names["SETTLE"] = inbound._settle_error  # (a key not mapped raises, and declines: today's route notes it)
    text = "\n".join(lines) + "\n"
    exec(compile(text, f"<fused {fmt.name} -> {inbound.provider}>", "exec"), gen.names)
    return text, gen.names["fused"]


def _settles_every_part(branch: list[str]) -> bool:
    """Whether a branch of the role items join settles its parts' unwritten fields at the normal form's paths
    on every message (`_settle_gaps`: it has no direct shape that writes them at the part's path), so every
    transcript with such a part would decline."""
    return branch[:1] == [GENERAL_HEAD] and any(_GAPS.fullmatch(line) for line in branch)


class _Writer:
    """The fused function's lines: the format's walk (`format_code.ReaderGen`'s templates), the provider's branches."""

    def __init__(
        self,
        fmt: SourceFormat,
        gen: ReaderGen,
        branches: dict[str, list[str]],
        joins: str | None,
        reads_last: bool,
        calls: Inbound | None,
        scans_ids: bool,
    ) -> None:
        self.fmt, self.gen, self.branches, self.joins, self.reads_last = fmt, gen, branches, joins, reads_last
        self.scans_ids = scans_ids  # a provider that rewrites ids: every id of the items first (`transcript_ids`)
        self.calls = calls  # the provider whose joined calls are written at their items; None: its branch reads them
        self.item = escaped_path(fmt.each) + "[{i}]"  # an item's path (f-string text)
        # The kinds that join a list of a message: items that join one (a format of items), or a role's `item`
        # blocks (a format of role messages: the message their role message makes).
        if fmt.items is not None:
            joining = {name: kind for name, kind in fmt.items.items() if kind.joins}
        else:
            joining = {
                name: kind for kinds in fmt.roles.values() for name, kind in kinds.items() if kind.mode == "item"
            }
        lists: dict[str, list[str]] = {}
        for name, kind in joining.items():
            lists.setdefault(kind.into, []).append(name)
        # Each list items join a message into: (the kind key, the kinds that join it), for `joined_at`.
        self.joined = {into: (fmt.kind, frozenset(kinds)) for into, kinds in lists.items()}
        self.lists = {kind.into: kind.renames for kind in joining.values()}
        # Each role's kinds that make a message of their own (the current turn's scan: a user message of only
        # these makes no user message).
        self.alone = {
            role: frozenset(n for n, k in kinds.items() if k.mode == "message") for role, kinds in fmt.roles.items()
        }
        # A format of role messages: a helper's notes (at the normal form's paths) are named at the end, where a
        # role message made one message (`formats.named_alone`), so the function's own share their list, marked.
        self.mark = "" if fmt.items is not None else repr(OWN_PATH)[1:-1]
        # The Ctx the format's templates render with: the reader's notes are not kept (a Ctx of their own, `x_rc`),
        # where a helper's are; else any note declines.
        self.ctx = "c" if fmt.items is not None else "x_rc"
        self.noted: frozenset[str] = frozenset()  # the lists noted at their first item (`noted_at_items`)
        if fmt.items is not None:
            self.joined_source = _Source(self.item, {}, self.lists, self.item.replace("{i}", "{@}"))
        else:  # an element of a list at its block of the message's content
            self.joined_source = _Source(
                self.item, {}, self.lists, self.item + ".content[{@}]", 'msgs[i]["content"], 0'
            )

    def written(
        self, role: str, message: str, index: str, path: str, last: bool, source: _Source, read_as: str | None = None
    ) -> list[str] | None:
        """A complete normal-form message `message` of `role` (its index `index`; `path`: its source path's
        expression, for a hoisted prompt) written by the provider's branch for its role, its notes at their paths
        in `source`; `last`: nothing follows in the item's lines (a `continue` of the branch ends the item, as it
        ends the message; else it ends a loop of one turn around the branch); `read_as`: the role whose blocks it
        was read from (its own, unless said)."""
        hoisted = role in self.gen.names["HOIST"]
        branch = self.branches.get(HOISTED if hoisted else role)
        if branch is None:
            return None
        branch = sourced(branch, source, self.gen.names, self.mark)
        if not last:
            if branch and branch[-1] == "continue":  # its last line: nothing follows it in the branch anyway
                branch = branch[:-1]
            if any(_CONTINUE.search(line) for line in branch):
                branch = ["for _ in ONE_TURN:", *indent(branch)]
        at = [f"x_path = {path}"] if hoisted else []
        if any(_ROLE.search(line.partition("  #")[0]) for line in branch):  # (a `lead` block's getter reads it)
            at.append(f"role = {message}['role']")
        return [*self.formed(message, role, read_as or role), *at, f"m, i = {message}, {index}", *branch]

    def formed(self, message: str, role: str, read_as: str) -> list[str]:
        """The message's content in its final form, as `SourceFormat.read_transcript` settles it once nothing
        more joins it: an empty list none (but a user's), one plain text part its string where the role its
        blocks were read as says so."""
        lines = [f"x_c = {message}['content']", "if type(x_c) is list:"]
        if role != "user":
            lines.append(f"    if not x_c: {message}['content'] = None")
        if read_as in self.fmt.plain_text:
            lines += [
                "    if len(x_c) == 1 and type(x_p := x_c[0]) is dict and x_p.keys() == TEXT_PART"
                " and x_p['type'] == 'text':",
                f"        {message}['content'] = x_p['text']",
            ]
        return lines if len(lines) > 2 else []

    def flushed(self, role: str, last: bool = False) -> list[str] | None:
        """The open message (`x_open`, of `role`: which items or blocks join) written, when there is one."""
        written = self.written(role, "x_open", "x_at", "None", last, self.joined_source)
        if written is None:
            return None
        if self.noted and role == self.joins:  # (their notes made at their items: not again)
            allowed = f"ALLOWED_{role}"
            self.gen.names[f"{allowed}_OR_NOTED"] = self.gen.names[allowed] | self.noted
            written = [re.sub(rf"\b{allowed}\b", f"{allowed}_OR_NOTED", line) for line in written]
        return ["if x_open is not None:", *indent(members_checked(written)), "    x_open = None"]

    def noted_at_items(self, role: str) -> frozenset[str]:
        """The lists items join a message of `role` into that its branch drops with a note (keys its rules read
        nothing for, which `messages.unsupported` drops: `DROPPED`): noted at the list's first item instead, where
        the branch would say that item's index (`joined_at`) after every other item of the message was read. The
        same order: a joined item makes no other note of the function's (a template's go to `c.notes`, a call's
        to `WRITTEN_NOTES`; `joined_notes` holds them to it), and the branch's first note is this key's."""
        allowed, dropped = self.gen.names.get(f"ALLOWED_{role}"), self.gen.names.get("DROPPED", {})
        if self.fmt.items is None or allowed is None:
            return frozenset()
        kinds = self.fmt.items.values()
        return frozenset(k.into for k in kinds if k.joins == role and k.into not in allowed and k.into in dropped)

    def no_calls(self, role: str) -> list[str]:
        """None of a message's calls written yet (`call_checked`), where they are written at their items."""
        if self.calls is None or role != "assistant":
            return []
        return [f"x_ok, {WRITTEN_CALLS}, {WRITTEN_NOTES} = True, [], []", "d_new, d_deep = {}, False"]

    def opened(self, role: str) -> list[str]:
        """The message of `role` items or blocks join, opened when none is."""
        return [
            "if x_open is None:",
            f"    x_open, x_at = {{'role': {role!r}, 'content': []}}, x_i",
            *indent(self.no_calls(role)),
        ]

    def arguments_written(self, kind: Kind, writes: list[str]) -> tuple[list[str], str | None]:
        """The item's template lines with the `$json_text` a call's arguments are written by, where the provider
        reads text, written inline for an object orjson writes (`json_text`'s own first way, unrecorded), its object
        kept in `d_a` for the call's check (`call_check`'s `given`), which then parses nothing back; with `d_a`, or
        the lines as they are and None. (The object is the very one `Ctx.written` would hand the check.)"""
        inbound = self.calls
        if inbound is None or not inbound.reads_arguments_json or kind.into != CALLS:
            return writes, None
        node = kind.node
        for key in CALL_FIELDS["d_raw"]:
            node = dict(node.items).get(key) if isinstance(node, Obj) else None
        var = self.gen.key_values.get(id(node)) if isinstance(node, Apply) and node.function is json_text else None
        if var is None:
            return writes, None
        applied = re.compile(rf"( *)if {var} is not MISSING: {var} = (\w+)\({var}, (\w+)\)")
        for n, line in enumerate(writes):
            match = applied.fullmatch(line)
            if match is not None and self.gen.names.get(match[2]) is json_text:
                pad, function, ctx = match.groups()
                self.gen.names["ORJSON_BYTES"] = orjson_bytes
                written = f"(d_a := ORJSON_BYTES({var})) is not None: d_a, {var} = {var}, d_a.decode()"
                inline = [
                    f"if {var} is not MISSING:",
                    f"    if type({var}) is dict and {written}",
                    f"    else: d_a, {var} = None, {function}({var}, {ctx})",
                ]
                return [*writes[:n], *(pad + each for each in inline), *writes[n + 1 :]], "d_a"
        return writes, None

    def call_checked(self, kind: Kind, given: str | None = None) -> list[str]:
        """A tool call that joins the open message (`x_w`), its fields read where the item's template left them,
        checked as the provider's assistant branch checks each call (`direct_code.call_check`) and written as it
        writes each (`call_write`) onto the open message's calls: that branch then takes them as written (`x_ok`).
        A call whose fields are not so held, or that fails the check, leaves them all to the branch's reading."""
        inbound = self.calls
        if inbound is None or inbound.writes is None or kind.into != CALLS:
            return []
        fields: dict[str, str] = {"d_call": "x_w"}
        for name, keys in CALL_FIELDS.items():
            node = kind.node
            for key in keys:
                node = dict(node.items).get(key) if isinstance(node, Obj) else None
            var = self.gen.key_values.get(id(node))
            if var is None and not isinstance(node, Obj):
                return ["x_ok = False"]
            fields[name] = var or "x_w" + "".join(f"[{key!r}]" for key in keys)  # (an object: always a dict)
        assert isinstance(kind.node, Obj)
        held = {key: self.gen.key_values.get(id(node)) for key, node in kind.node.items}
        typed = dict(kind.node.items).get("type") == Const("function")  # (written so: never tested again)
        turn = "True if i > last else MISSING" if self.reads_last else None  # (`last`: found before the loop)
        written = call_write(inbound.reads_arguments_json, inbound.writes[1], self.gen.names, held, turn)
        if written is None:
            return ["x_ok = False"]
        # Its notes at its item, kept until the branch adds the calls (where today's route notes them, in order).
        here = self.item.replace("{i}", "{x_i}") if self.fmt.items is not None else self.item + ".content[{x_j}]"
        source = replace(self.joined_source, here=here)
        written = [
            _NOTES.sub(f"{WRITTEN_NOTES}.append(", line) for line in sourced(written, source, self.gen.names, self.mark)
        ]
        return [
            "if x_ok:",
            *(f"    {name} = {value}" for name, value in fields.items()),  # (one by one: no tuple made)
            "    while True:  # one pass: a failed check ends it (`break`) as it ends the branch's loop",
            *indent(call_check(inbound.reads_arguments_json, "x_ok = False; break", given, typed), 8),
            f"        i, d_k = x_at, len({WRITTEN_CALLS})",
            *indent(written, 8),
            "        break",
        ]

    def parts(self, kinds: Any, blocks: str, into: str) -> list[str] | None:
        """A list of blocks read as parts (each kind's template inline) onto the list `into`."""
        lines = [
            f"for x_b in {blocks}:",
            "    if type(x_b) is not dict: return None",
            f"    x_k = x_b.get({self.fmt.kind!r})",
        ]
        branch = "if"
        for name, kind in kinds.items():
            if kind.mode != "part" or kind.state is not None:
                continue
            reads, writes = self.gen.template(kind, "x_q", "x_b", self.ctx)
            lines += [f"    {branch} x_k == {name!r}:", *indent([*reads, *writes, f"{into}.append(x_q)"], 8)]
            branch = "elif"
        return [*lines, "    else: return None"] if branch == "elif" else None

    def joined_item(self, kind: Kind, role: str, scope: str = "x_m") -> list[str]:
        """An item (or a block, at `scope`) that joins the open message of `role` (into its list `kind.into`)."""
        reads, writes = self.gen.template(kind, "x_w", scope, self.ctx)
        lines = list(reads)
        if kind.state is not None:  # sealed state: today's route unseals it
            lines += [
                f"x_st = {scope}.get({kind.state[0]!r})",
                f"if type(x_st) is str and {SEAL!r} in x_st: return None",
            ]
        inline, given = self.arguments_written(kind, writes)
        checked = self.call_checked(kind, given)
        if len(checked) > 1:  # (checked here: its `d_a` read)
            writes = inline
        first = [f"if x_l is None: x_open[{kind.into!r}] = [x_w]"]
        if kind.into in self.noted:
            path = self.mark + self.joined_source.element.replace("@", "x_i")
            note = f"    notes.append(Note('dropped', f'{path}', DROPPED[{kind.into!r}]))  # (first: its index)"
            first = ["if x_l is None:", f"    x_open[{kind.into!r}] = [x_w]", note]
        return [
            *lines,
            *writes,
            *self.opened(role),
            f"x_l = x_open.get({kind.into!r})",
            *first,
            "else: x_l.append(x_w)",
            *checked,
        ]

    def message_item(self, kind: Kind) -> list[str] | None:
        """An item that is a message of its own (its `blocks` read as its role's parts)."""
        role = written_role(kind)
        if role is None or role == self.joins:
            return None
        reads, writes = self.gen.template(kind, "x_w", "x_m", self.ctx)
        lines = [*reads, *writes]
        for key in kind.blocks:
            parts = self.parts(self.fmt.roles.get(role, {}), "x_n", "x_ps")
            if parts is None:
                return None
            lines += [f"x_n = x_w.get({key!r})", "if type(x_n) is list:", "    x_ps = []", *indent(parts)]
            lines.append(f"    x_w[{key!r}] = x_ps")
        path = repr(escaped_path(self.fmt.each) + "[{}]") + ".format(x_i)"
        written = self.written(role, "x_w", "x_i", path, True, _Source(self.item, kind.renames))
        return None if written is None else [*lines, *written]

    def role_message(self, role: str) -> list[str] | None:
        """A message of `role` (its content `x_c`): a string, or a list of its role's blocks."""
        parts = self.parts(self.fmt.roles[role], "x_c", "x_ps" if role != self.joins else "x_open['content']")
        if parts is None:
            return None
        if role == self.joins:  # joins the open message: each part, as the reader's `joining` does
            return [
                "if type(x_c) is str:",
                *indent(self.opened(role)),
                "    x_open['content'].append({'type': 'text', 'text': x_c})",
                "elif type(x_c) is list:",
                "    if x_c:",
                *indent(self.opened(role), 8),
                *indent(parts),
                "else: return None",
            ]
        path = repr(escaped_path(self.fmt.each) + "[{}]") + ".format(x_i)"
        written = self.written(role, "x_w", "x_i", path, True, _Source(self.item))
        if written is None:
            return None
        return [
            f"if type(x_c) is str: x_w = {{'role': {role!r}, 'content': x_c}}",
            "elif type(x_c) is list and x_c:  # (none: the reader makes no message, and the open one stays open)",
            "    x_ps = []",
            *indent(parts),
            f"    x_w = {{'role': {role!r}, 'content': x_ps}}",
            "else: return None",
            *written,
        ]

    def blocks_message(self, role: str) -> list[str] | None:
        """A role message of a format of role messages (its content `x_c`): a string, or its role's blocks in
        order, as the reader reads them: parts and items join the message they open, a block that is a message
        of its own (a tool result) first writes that one, then itself; the open one is written at the end."""
        fmt = self.fmt
        path = repr(escaped_path(fmt.each) + "[{}]") + ".format(x_i)"
        whole = self.written(role, "x_w", "x_i", path, True, _Source(self.item))
        last = self.flushed(role, True)
        if whole is None or last is None:
            return None
        lines = [
            "if type(x_c) is str:",
            f"    x_w = {{'role': {role!r}, 'content': x_c}}",
            *indent(self.no_calls(role)),
            *indent(whole[len(self.formed("x_w", role, role)) :]),  # (a string: in its final form)
            "elif type(x_c) is list:",
            "    x_open = None",
            "    for x_j, x_b in enumerate(x_c):",
            "        if type(x_b) is not dict: return None",
            f"        x_k = x_b.get({fmt.kind!r})",
        ]
        branch = "if"
        for name, kind in fmt.roles[role].items():
            if kind.mode == "part":
                reads, writes = self.gen.template(kind, "x_q", "x_b", self.ctx)
                body = [*reads, *writes, *self.opened(role), "x_open['content'].append(x_q)"]
            elif kind.mode == "item":
                body = self.joined_item(kind, role, "x_b")
            else:
                own = self.own_message(kind, role)
                if own is None:
                    return None
                body = own
            lines += [f"        {branch} x_k == {name!r}:", *indent(body, 12)]
            branch = "elif"
        return [*lines, "        else: return None", *indent(last), "else: return None"]

    def own_message(self, kind: Kind, role: str) -> list[str] | None:
        """A block of `role` that is a message of its own (`x_b`, its `blocks` read as that role's parts): the open
        message written first, as the reader closes it there."""
        written_as = written_role(kind)
        if written_as is None or kind.state is not None:
            return None
        reads, writes = self.gen.template(kind, "x_w", "x_b", self.ctx)
        lines = [*reads, *writes]
        for key in kind.blocks:
            parts = self.parts(self.fmt.roles[role], "x_n", "x_ps")
            if parts is None:
                return None
            lines += [f"x_n = x_w.get({key!r})", "if type(x_n) is list:", "    x_ps = []", *indent(parts)]
            lines.append(f"    x_w[{key!r}] = x_ps")
        flushed = self.flushed(role)
        source = _Source(self.item + ".content[{x_j}]", kind.renames)
        written = self.written(written_as, "x_w", "x_i", "None", False, source, role)
        if flushed is None or written is None:
            return None
        return [*lines, *flushed, *written]

    def system(self) -> list[str]:
        """The format's system key (`system`): a string, the hoisted prompt or first message it is (a list of
        blocks declines: a hoisted prompt's parts are noted at the normal form's paths, after the transcript)."""
        fmt = self.fmt
        if fmt.system is None or "system" not in fmt.roles:
            return []
        held = escaped_path(fmt.system)
        written = self.written("system", "x_w", "-1", repr(held), False, _Source(held))
        if written is None:
            return ["    if system is not None: return None"]
        return [
            "    if system is not None:",
            "        if type(system) is not str: return None",
            "        x_w = {'role': 'system', 'content': system}",
            *indent(written, 8),
        ]

    def current_turn(self) -> list[str]:
        """The index of the last user message's item, when a branch reads where the current turn starts (`last`,
        as the messages function finds it among the normal-form messages: their order is the items')."""
        if not self.reads_last:
            return []
        if "user" in self.gen.names["HOIST"]:
            return ["    last = -1"]
        fmt = self.fmt
        if fmt.items is None:  # a role message makes a user message unless its blocks are all messages of their own
            return [
                "    last = len(msgs) - 1  # the last user message: the tool calls after it are the current turn's",
                "    for x_m in reversed(msgs):",
                "        if x_m.get('role') == 'user' and (type(x_c := x_m.get('content')) is str or any(",
                f"            type(x_b) is not dict or x_b.get({fmt.kind!r}) not in ALONE['user'] for x_b in x_c)):",
                "            break",
                "        last -= 1",
            ]
        return [  # (an item not an object raises here: declined, as the loop declines it)
            "    last = len(msgs) - 1  # the last user message: the tool calls after it are the current turn's",
            "    for x_m in reversed(msgs):",
            f"        if x_m.get('role') == 'user'"
            f" and x_m.get({fmt.kind!r}, {fmt.message_kind!r}) == {fmt.message_kind!r}:",
            "            break",
            "        last -= 1",
        ]

    def function(self) -> list[str] | None:
        """The whole function's lines (the system key, then one branch per item kind and per role of the format's
        message kind, the open message written last), or None when a piece does not compose."""
        fmt = self.fmt
        own = (  # the function's notes: apart from a helper's (at the hub's paths: declines), or with them (marked)
            "    notes = []  # the transcript's, at the format's paths (any made at the hub's, in c.notes, declines)"
            if not self.mark
            else "    c.settler = SETTLE  # a helper's notes are kept: settled as today's (a key not mapped: raised)"
        )
        read = (
            []
            if self.ctx == "c"
            else [f"    {self.ctx} = Ctx(P)", f"    {self.ctx}.objects, {self.ctx}.written = c.objects, c.written"]
        )
        lines = [
            "def fused(msgs, system):",
            "    c = Ctx(P)",
            "    c.objects, c.written = OBJECTS, None if OBJECTS else {}  # as `translate_source` reads",
            *MESSAGES_HEAD,
            own,
            *read,
            "    ids, sent_ids = TOOL_CALL_IDS.for_ids(TRANSCRIPT_IDS(msgs, ID_KEYS), P)"
            if self.scans_ids
            else "    ids, sent_ids = (None, None) if TOOL_CALL_IDS is None else TOOL_CALL_IDS.for_request(None, P)",
            *self.current_turn(),
            "    x_open = x_at = None  # the message items join while nothing else follows it, and its index",
            *self.system(),
            "    for x_i, x_m in enumerate(msgs):",
            "        if type(x_m) is not dict: return None",
        ]
        if fmt.items is None:
            return self.role_messages(lines)
        lines.append(f"        x_t = x_m.get({fmt.kind!r}, {fmt.message_kind!r})")
        assert self.joins is not None
        self.noted = self.noted_at_items(self.joins)
        last = self.flushed(self.joins)
        if last is None:
            return None
        joining = [f"x_t != {name!r}" for name, kind in fmt.items.items() if kind.joins]
        joining.append(f"(x_t != {fmt.message_kind!r} or x_m.get('role') != {self.joins!r})")
        lines += [f"        if x_open is not None and {' and '.join(joining)}:", *indent(last[1:], 8)]
        branch = "if"
        for name, kind in fmt.items.items():
            body = self.joined_item(kind, kind.joins) if kind.joins else self.message_item(kind)
            if body is None or (kind.joins and not joined_notes(body, kind.into in self.noted)):
                return None
            lines += [f"        {branch} x_t == {name!r}:", *indent(body, 12)]
            branch = "elif"
        roles = self.by_role(self.role_message, 12, keyed=True)
        if roles is None:
            return None
        lines += [f"        {branch} x_t == {fmt.message_kind!r}:", *roles, "        else: return None"]
        return [*lines, *indent(last), *_END]

    def by_role(self, message: Callable[[str], list[str] | None], depth: int, keyed: bool) -> list[str] | None:
        """A role message's keys tested (`keyed`: the format's kind key among them), then its branch for each
        transcript role (`message`: its lines), at `depth`; None when one does not compose."""
        fmt, pad = self.fmt, " " * depth
        known = self.gen.name(frozenset({"role", "content", *([fmt.kind] if keyed else [])}), "MESSAGE_KEYS_")
        table = self.gen.name(fmt.message_unsupported, "UNSUPPORTED_")
        lines = [
            f"{pad}x_r, x_c = x_m.get('role', MISSING), x_m.get('content', MISSING)",
            f"{pad}if len(x_m) != (x_r is not MISSING) + (x_c is not MISSING)"
            + (f" + ({fmt.kind!r} in x_m)" if keyed else "")
            + f" and not quiet(x_m, {known}, {table}): return None",
        ]
        branch = "if"
        for role in sorted(fmt.transcript_roles):
            body = message(role)
            if body is None:
                return None
            lines += [f"{pad}{branch} x_r == {role!r}:", *indent(body, depth + 4)]
            branch = "elif"
        return [*lines, f"{pad}else: return None"]

    def role_messages(self, lines: list[str]) -> list[str] | None:
        """The function's loop over a format of role messages (`lines`: up to the loop's first test)."""
        roles = self.by_role(self.blocks_message, 8, keyed=False)
        if roles is None:
            return None
        return [
            *lines,
            *roles,
            "    if first is None and not hoisted: return None  # (no message: today's route refuses the transcript)",
            "    if notes:  # (the function's own at the format's paths, marked; a helper's at the hub's, named here)",
            "        notes = NAMED_ALONE(notes, msgs, FORMAT)",
            "        if notes is None: return None",
            _END[1],
        ]


# The fused function's last lines: what it made, unless a helper noted at the normal form's paths.
_END = (
    "    if c.notes: return None  # (a helper's, at the hub's paths: today's route names them)",
    "    return (out, hoisted, notes, first, (ck_texts, ck_deep, ck_msgs), h_more), sent_ids",
)
