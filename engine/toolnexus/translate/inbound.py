"""OpenAI request -> provider request: compiled from a rule file's request, messages,
tools and tool_choice sections, then run once per call.

Order of a call: take the request's fields (null and a max_tokens of 0 mean "not
given"), settle every field the rules do not map (unsupported table, else the
unknown-fields policy), read the transcript into the middle form, choose the
system prompt, write messages, tools and tool_choice, and finally render the
body template over the request with those translated values in place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ..errors import Note, TranslationError
from ..language.ids import NO_IDS, IdRule, compile_id_rule
from ..language.jsonsafe import WrittenTexts, checked, loads_body, read_clean
from ..language.loader import Key, RuleSource, did_you_mean, dotted
from ..language.paths import MISSING, Getter, is_piped, piped_from
from ..language.templates import ContentLines, Ctx, Env, Node, Render, compile_template, path_getter
from .direct_code import Parts
from .fields import OPENAI_REQUEST_FIELDS, Range, compile_ranges, read_fields
from .reader import (
    NO_CARRY,
    PART_FIELDS,
    READ_KEYS,
    ROLES,
    TEXT_OF_PARTS,
    TOOL_CHOICES,
    TOOL_KEYS,
    TOOL_RESULT_KINDS,
    Carry,
    Hoisted,
    IdMap,
    orphans,
    part_path,
    read_messages,
    read_tool_choice,
    read_tools,
    system_parts,
)
from .request_code import (
    Messages,
    System,
    Tools,
    Written,
    generate,
    generate_system,
    generate_tools,
    settle_parts,
)

if TYPE_CHECKING:
    from .formats import CallerTools

UnknownFields = Literal["error", "drop"]


class _Parts:
    """ctx.path's owner while a part is written: its request path, formatted only for a note or an error.

    The index is a [turn, part] pair the writer updates in place as it goes through the parts.
    """

    @staticmethod
    def element_path(at: list[dict[str, Any]]) -> str:
        return part_path(at[0], at[1])


PARTS = _Parts()

EMPTY: Mapping[str, Any] = MappingProxyType({})
# (tool_choice absent or a string, parallel_tool_calls absent or a bool) -> the choice read from them, its writer
Choices = Mapping[tuple[Any, Any], tuple[dict[str, Any], Render]]
NO_CHOICES: Choices = MappingProxyType({})

# Fields the engine translates through their own sections before the body renders.
SECTION_FIELDS = frozenset({"messages", "tools", "tool_choice"})
# Keys of the body scope the engine computes; not OpenAI request fields.
COMPUTED_FIELDS = frozenset({"system"})


class RequestBody(dict[str, Any]):
    """The provider-native body (a plain dict) plus the notes of its translation, and `id_map`: each tool-call
    id it sends rewritten -> the caller's id, for translating the answer to this request (`translate_response`'s
    `id_map`), since a provider may echo a sent id and a rewrite's hash cannot be decoded."""

    notes: tuple[Note, ...] = ()
    id_map: Mapping[str, str] = NO_IDS
    # Where the transcript's notes are in `notes` (the system prompt's, then the turns'), when it was given written
    # (`Inbound.translate`'s `transcript`: a source format's fused function's, its notes named already).
    transcript_notes: slice = slice(0)


@dataclass(frozen=True)
class Unsupported:
    action: Literal["drop", "error"]
    accept: tuple[Any, ...] = ()
    doc: str = ""

    def dropped_because(self, provider: str) -> str:
        """The note's text when the value is dropped."""
        return self.doc or f"{provider} has no counterpart"


@dataclass(frozen=True)
class Gaps:
    """What one template leaves unwritten of its scope, found at load (the shipped rules leave nothing).

    unread: the part's information fields (reader.PART_FIELDS) none of whose keys it reads, as
    (name, where, keys); kinds: the kinds of its scope's own parts it writes (through `$content`,
    or a field holding their text), None for every kind. Each is settled as the rule file says.
    """

    unread: tuple[tuple[str, str, frozenset[str]], ...] = ()
    kinds: frozenset[str] | None = None


NO_GAPS = Gaps()


@dataclass(frozen=True)
class RoleRule:
    render: Render
    drop_if_empty: bool
    merge_consecutive: bool
    allowed: frozenset[str] | None  # message keys read by the reader or the template; None = all
    kinds: frozenset[str] | None = None  # the part kinds the template writes; None = all
    carried: frozenset[str] = frozenset()  # the message keys `messages.carry` places on a part
    # The template is a list: one message writes several transcript entries (each element an entry, a list of
    # entries, or nothing), for a provider whose transcript is a flat list of items.
    spliced: bool = False
    node: Node | None = None  # the parsed template, written inline in the messages function (request_code)


@dataclass(frozen=True)
class Inbound:
    provider: str
    body: Render
    consumed: frozenset[str]
    unsupported: Mapping[str, Unsupported]
    hoist: frozenset[str]
    join: str
    system_message: Render | None
    roles: Mapping[str, RoleRule]
    message_unsupported: Mapping[str, Unsupported]
    declaration: Render
    tool_keys_read: frozenset[str] | None  # the function keys the declaration reads; None = it reads the tool whole
    tool_unsupported: Mapping[str, Unsupported]
    tool_choice: Mapping[str, Render]
    reads_arguments_json: bool
    system_blocks: Render | None = None  # writes a system text part, when the rules keep cached system parts
    text_reads: frozenset[str] = frozenset()  # what the `text` part template reads (for drop notes)
    text_gaps: Gaps | None = None  # what it leaves unwritten, when the system blocks are written with it
    tool_call_ids: IdRule | None = None
    carry: Carry = field(default_factory=lambda: NO_CARRY)  # messages.carry: message keys placed on a part, per role
    # Per role: the message keys the reader and `carry` read.
    read_keys: Mapping[str, frozenset[str]] = field(default_factory=lambda: EMPTY)
    code: tuple[tuple[Key, str], ...] = ()  # (rule key, the Python compiled from it), in compile order
    plan: Mapping[str, Any] = field(default_factory=lambda: EMPTY)
    ranges: Mapping[str, Range] = field(default_factory=lambda: EMPTY)  # request.ranges: what the provider accepts
    # The declaration's scope for a tool that passes the tools section's fast test: its function object (the
    # template reads only function keys), the tool as `source` (it reads only that), or None (explain always).
    plain_tool_scope: Literal["function", "source"] | None = None
    messages: Messages = field(default=lambda *_: None)  # the messages section's generated function (request_code)
    system: System = field(default=lambda *_: None)  # the system prompt's generated fast test (request_code)
    tools: Tools = field(default=lambda *_: None)  # the tools section's generated function (request_code)
    # messages.merge_same_role: the written message key holding the provider's role; consecutive written
    # messages with the same value there become one (None: only merge_consecutive merges).
    merge_same_role: str | None = None
    spliced: frozenset[str] = frozenset()  # part kinds whose template is a list: its blocks join the message's
    declaration_node: Node | None = None  # the declaration as nodes (what a source format's tools function pastes)
    # What the messages function's roles are written with (`request_code.role_branches`' `content` and `parts`):
    # a source format's fused function writes them the same way (fused_code).
    writes: tuple[ContentLines, Parts] | None = None
    # A source format's tools function, by format (`caller_tools`): made on first use
    _caller_tools: dict[str, Tools | None] = field(default_factory=dict, compare=False, repr=False)
    # Each tool choice given as a string or not at all, read at load (`_choice_table`): the kinds the rules write.
    choices: Choices = field(default_factory=lambda: NO_CHOICES)

    def decode(self, body: bytes | str) -> Any:
        """A request body (JSON text) -> its value (`jsonsafe.loads_body`); a refusal is a TranslationError."""
        return loads_body(body, partial(TranslationError, provider=self.provider))

    def translate(
        self,
        request: Any,
        *,
        system: str | None = None,
        default_system: str | None = None,
        unknown_fields: UnknownFields = "error",
        decoded: bool = False,
        written: WrittenTexts | None = None,
        tools: tuple[list[Any], set[str]] | None = None,
        transcript: Written | None = None,
    ) -> RequestBody:
        """The provider's body for a request, checked whole for JSON no provider can read unless `decoded`: an
        object `jsonsafe.loads` returned untouched (`decode`), whose parse refused what the check refuses.
        `written`: arguments texts written of objects a moment before, read as those objects (`loads_written`);
        `tools`: the tools section written already (a source format's declarations, by `caller_tools`);
        `transcript`: the transcript written already (what `messages` returns: a source format's fused function's,
        its paths the source's); then the body tells where its notes are (`RequestBody.transcript_notes`)."""
        provider = self.provider
        if not isinstance(request, dict):
            raise TranslationError(
                "", f"the request must be an object, got {type(request).__name__}", provider=provider
            )
        if system is not None and type(system) is not str:
            raise TranslationError("system", f"must be a string, got {type(system).__name__}", provider=provider)
        if default_system is not None and type(default_system) is not str:
            message = f"must be a string, got {type(default_system).__name__}"
            raise TranslationError("default_system", message, provider=provider)
        # The check of the transcript folds into the messages function's reads (`jsonsafe.read_clean`), and that
        # of the rest goes in the same batch, after the transcript is written. Each refusal is `check`'s of the
        # whole request, before any other error: a failed verdict, and any error raised before it, asks it of the
        # whole request first. A request of one or two messages is checked whole here: within the request's one
        # orjson call they cost less than the copy of the request without them.
        rest: dict[str, Any] | None = None
        fused = transcript is not None  # (its values are checked by what it has left, whatever the count)
        if not decoded:
            messages = request.get("messages")
            if type(messages) is list and (len(messages) > 2 or fused):
                rest = request.copy()
                del rest["messages"]
            else:
                checked(request, "", self._refuse)
        ctx = Ctx(provider)
        ctx.settler = self._settle_drop if unknown_fields == "drop" else self._settle_error
        ctx.written = written
        try:  # the fields read and settled, then the transcript written (one block: each step is one call)
            scope, others = read_fields(request, self.ranges, self.consumed, provider)
            for name, value in others:
                self._settle(name, value, name, self.unsupported, ctx, unknown_fields)
            msgs = scope.get("messages", MISSING)
            if msgs is MISSING:
                raise TranslationError("messages", "is required", provider=provider)
            if msgs == []:  # OpenAI refuses an empty transcript too; no provider answers one
                raise TranslationError("messages", "must hold at least one message", provider=provider)
            parallel = scope.get("parallel_tool_calls", MISSING)
            if parallel is not MISSING and type(parallel) is not bool:
                raise TranslationError("parallel_tool_calls", "must be true or false", provider=provider)
            id_map, sent_ids = None, None
            if transcript is None:
                if self.tool_call_ids is not None:
                    id_map, sent_ids = self.tool_call_ids.for_request(msgs, provider)
                # The transcript written by the generated function, its notes kept apart (they go in after the
                # system prompt's). On an error its explain step, the reader, goes first: the reader's errors come
                # before the writer's, as it reads the whole transcript before anything is written.
                kept, ctx.notes = ctx.notes, []
                try:
                    transcript = self.messages(msgs, ctx, id_map)
                except TranslationError:
                    self._explain_messages(msgs, id_map)
                    raise
                if transcript is None:  # a shape the fast test declines: the reader says what is wrong with it
                    self._explain_messages(msgs, id_map)
                    raise TranslationError("messages", "cannot be read", provider=provider)
                ctx.notes = kept
            turns, hoisted, turn_notes, first, left, more = transcript
        except Exception:
            if rest is not None:
                checked(request, "", self._refuse)
            raise
        if rest is not None:
            left[1].append(rest)  # a member of the batch, as the transcript's containers are
            if not read_clean(*left):
                checked(request, "", self._refuse)
                if fused:  # what it refuses is in the transcript's source, not here: its caller names it
                    raise TranslationError("messages", "holds what no provider can read", provider=provider)
        starts = len(ctx.notes)  # the transcript's notes: the system prompt's, then the turns'
        written = self.system(hoisted, first, ctx) if hoisted and system is None and not more else None
        if written is not None:  # one prompt of its role and content, ahead of every turn: the generated write
            chosen = written
            if self.system_message is not None:
                turns.insert(0, written)
        else:
            if hoisted or system is not None:
                chosen = self._choose_system(hoisted, first, system, default_system, ctx)
                if system is None and more:  # a prompt of its role and a string content alone carries nothing
                    chosen = self._cached_system(hoisted, chosen, ctx)
            else:
                chosen = default_system if default_system is not None else MISSING
            if self.system_message is not None and chosen is not MISSING:
                turns.insert(0, self._system_message(chosen, hoisted, system, ctx))
        if more:  # else each hoisted prompt holds its role and content alone, both read
            for _, path, _, source in hoisted:
                allowed = self.read_keys[source["role"]]
                if not source.keys() <= allowed:
                    self._check_message_keys(source, path, allowed, ctx, unknown_fields)
        if turn_notes:
            ctx.notes += turn_notes
        ends = len(ctx.notes)
        scope["messages"] = turns
        if self.system_message is None:
            scope["system"] = chosen

        declared: set[str] | None = None
        if tools is not None:
            scope["tools"], declared = tools
        elif "tools" in scope:
            scope["tools"], declared = self._tools_section(scope["tools"], ctx, unknown_fields)
        given = scope.get("tool_choice", MISSING)
        known = self.choices.get((given, parallel)) if type(given) is str or given is MISSING else None
        if known is not None:  # read at load: no name to look for among the tools
            choice, writer = known
        else:
            choice, writer = self._tool_choice(given, parallel, declared)
        ctx.path = "tool_choice"
        scope["tool_choice"] = writer(choice, ctx)
        ctx.path = ""

        body = RequestBody(self.body(scope, ctx) or {})
        body.notes = tuple(ctx.notes)
        if sent_ids:
            body.id_map = sent_ids
        if fused:
            body.transcript_notes = slice(starts, ends)
        return body

    def _tool_choice(self, given: Any, parallel: Any, declared: set[str] | None) -> tuple[dict[str, Any], Render]:
        """The request's tool choice read (the reader's middle form) and the rules' writer for its kind."""
        provider = self.provider
        choice = read_tool_choice(given, parallel, provider)
        if choice["name"] is not MISSING and declared is not None and choice["name"] not in declared:
            raise TranslationError(
                "tool_choice.function.name", f"no tool named {choice['name']!r} is declared", provider=provider
            )
        writer = self.tool_choice.get(choice["kind"])
        if writer is None:
            raise TranslationError(
                "tool_choice", f"a {choice['kind']!r} tool_choice cannot be sent to {provider}", provider=provider
            )
        return choice, writer

    def _tools_section(self, tools: Any, ctx: Ctx, unknown_fields: UnknownFields) -> tuple[list[Any], set[str]]:
        """The tools and their declared names, from the generated function (`request_code.generate_tools`: its
        fast test and the write, per tool). When it declines the list or raises, the explain step (the reader,
        then `_write_tool` per tool) refuses, settles and notes precisely. Both write the same declarations."""
        noted = len(ctx.notes)
        try:
            fast = self.tools(tools, ctx)  # declines every list when the rules have no plain declaration
        except TranslationError:
            fast = None  # the reader's errors come first: it reads every tool before one is written
        if fast is not None:
            return fast
        del ctx.notes[noted:]
        read = read_tools(tools, self.provider)
        return [self._write_tool(t, ctx, unknown_fields) for t in read], {t["name"] for t in read}

    def caller_tools(self, caller: CallerTools) -> Tools | None:
        """The tools section's function over a source format's own declarations (`generate_tools`), made once per
        format; None: that format's declarations are read into Chat Completions ones first."""
        if caller.format not in self._caller_tools:
            made = None
            if self.plain_tool_scope is not None and self.declaration_node is not None:
                made = generate_tools(self, self.declaration_node, caller)
            self._caller_tools[caller.format] = None if made is None else made[1]
        return self._caller_tools[caller.format]

    def _refuse(self, path: str, message: str) -> TranslationError:
        return TranslationError(path, message, provider=self.provider)

    def write_tools(self, tools: Any, unknown_fields: UnknownFields = "error") -> list[Any]:
        """OpenAI tool declarations alone -> the provider's (for toolkits and the seed helpers)."""
        ctx = Ctx(self.provider)
        checked(tools, "tools", self._refuse)
        return self._tools_section(tools, ctx, unknown_fields)[0]

    def _settle(
        self,
        name: str,
        value: Any,
        path: str,
        table: Mapping[str, Unsupported],
        ctx: Ctx,
        unknown_fields: UnknownFields,
    ) -> None:
        """A field the rules do not map: accept, drop with a note, or refuse."""
        rule = table.get(name)
        if rule is None:
            if unknown_fields == "drop":
                ctx.notes.append(Note("dropped", path, f"not mapped by the {self.provider} rules"))
                return
            raise TranslationError(
                path,
                f"is not mapped by the {self.provider} rules"
                " (list it under `unsupported`, or pass unknown_fields='drop')",
                provider=self.provider,
            )
        if rule.accept and any(json_equal(value, ok) for ok in rule.accept):
            return
        if rule.action == "drop":
            ctx.notes.append(Note("dropped", path, rule.dropped_because(self.provider)))
            return
        raise TranslationError(
            path, f"cannot be sent to {self.provider}" + (f": {rule.doc}" if rule.doc else ""), provider=self.provider
        )

    def _settle_drop(self, ctx: Ctx, name: str, value: Any, path: str) -> None:
        """Ctx.settle for a field inside a message, when unknown fields are dropped."""
        self._settle(name, value, path, self.message_unsupported, ctx, "drop")

    def _settle_error(self, ctx: Ctx, name: str, value: Any, path: str) -> None:
        """Ctx.settle for a field inside a message, when unknown fields are refused."""
        self._settle(name, value, path, self.message_unsupported, ctx, "error")

    def _choose_system(
        self,
        hoisted: list[Hoisted],
        first_turn: int | None,
        system: str | None,
        default_system: str | None,
        ctx: Ctx,
    ) -> Any:
        """Per-call system > the transcript's hoisted prompts > the client-wide default."""
        if system is not None:
            for _, path, _, _ in hoisted:
                ctx.notes.append(Note("dropped", path, "overridden by the per-call system prompt"))
            return system
        if hoisted:
            for _, path, index, _ in hoisted:
                if first_turn is not None and index > first_turn:
                    ctx.notes.append(Note("rewritten", path, "moved into the system prompt, ahead of earlier turns"))
            if len(hoisted) == 1:  # the common case: no list to make, nothing to join
                return hoisted[0][0]
            return self.join.join([text for text, _, _, _ in hoisted])  # a list: join makes one of a generator
        return default_system if default_system is not None else MISSING

    def _cached_system(self, hoisted: list[tuple[str, str, int, dict[str, Any]]], chosen: Any, ctx: Ctx) -> Any:
        """Hoisted prompts whose parts carry more than their text (a message key `carry` places, a part's own
        keys): kept as text blocks where the rules say so (`blocks: when_cached`, when a part carries a key
        the `text` template writes), and what no template writes settled."""
        for _, _, _, msg in hoisted:  # a loop: any() over a generator costs more, on every call
            if _carries_more(msg):
                break
        else:
            return chosen
        parts = []
        for _, path, i, msg in hoisted:
            turn = {
                "role": msg["role"],
                "index": i,
                "source": msg,
                "parts": system_parts(msg, i, self.provider, self.carry),
            }
            for key, why in orphans(turn, self.carry):
                ctx.notes.append(Note("dropped", f"{path}.{key}", why))
            parts += [(turn, part) for part in turn["parts"]]
        reads = self.text_reads if self.system_blocks is not None else frozenset()
        for turn, part in parts:
            if "report" in part:
                _report_part(turn, part, reads, ctx)
        extras = self.text_reads - {"text", "kind"}
        if self.system_blocks is None or all(extras.isdisjoint(part) for _, part in parts):
            return chosen
        blocks: list[Any] = []
        for turn, part in parts:
            if self.text_gaps is not None:
                _settle_gaps(turn, part, self.text_gaps, ctx)
            ctx.path = (PARTS, [turn, part])
            _add_blocks(blocks, self.system_blocks(part, ctx), "text" in self.spliced)
        ctx.path = ""
        return blocks

    def _explain_messages(self, msgs: Any, ids: IdMap | None) -> None:
        carry, arguments_json = self.carry, self.reads_arguments_json
        read_messages(msgs, self.hoist, self.provider, arguments_json=arguments_json, tool_call_ids=ids, carry=carry)

    def _system_message(self, chosen: Any, hoisted: list[Hoisted], system: str | None, ctx: Ctx) -> Any:
        """The system prompt as a message of its own (for rules that place it so, once one is chosen)."""
        assert self.system_message is not None
        written = self.system_message({"text": chosen}, ctx)
        role = written.get("role") if isinstance(written, dict) else None
        if role is not None and system is None:
            for _, path, _, source in hoisted:
                if source["role"] != role:  # a hoisted message's role is a string the reader read
                    ctx.notes.append(Note("rewritten", path, f"sent as part of the one {role} message"))
        return written

    def _check_message_keys(
        self, source: dict[str, Any], path: str, allowed: frozenset[str], ctx: Ctx, unknown_fields: UnknownFields
    ) -> None:
        """The slow path: settle each message key the rules do not read."""
        for key, value in source.items():
            if key not in allowed and value is not None:
                self._settle(key, value, f"{path}.{key}", self.message_unsupported, ctx, unknown_fields)

    def _write_tool(self, tool: dict[str, Any], ctx: Ctx, unknown_fields: UnknownFields) -> Any:
        if self.tool_keys_read is not None:
            for key, value in tool["function"].items():
                if key not in self.tool_keys_read and value is not None:
                    self._settle(key, value, f"{tool['path']}.{key}", self.tool_unsupported, ctx, unknown_fields)
            where = tool["path"].rsplit(".", 1)[0]  # the tool object, around its function
            for key, value in tool["source"].items():
                if key not in TOOL_KEYS and key not in self.tool_keys_read and value is not None:
                    self._settle(key, value, f"{where}.{key}", self.tool_unsupported, ctx, unknown_fields)
        ctx.path = tool["path"]
        written = self.declaration(tool, ctx)
        ctx.path = ""
        return written


def json_equal(a: Any, b: Any) -> bool:
    """Equality that keeps JSON types apart (True is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _carries_more(msg: dict[str, Any]) -> bool:
    """Whether a message, or a part of its content, has keys beyond its role and content (a part's type and text)."""
    content = msg.get("content")
    return len(msg) > 2 or (isinstance(content, list) and any(isinstance(p, dict) and len(p) > 2 for p in content))


# ---------------------------------------------------------------- compiling


def compile_inbound(source: RuleSource) -> Inbound:
    data = source.data
    provider = data["provider"]
    request = data["request"]
    msgs = data["messages"]

    unsupported = _unsupported_table(request.get("unsupported", {}))
    code: dict[Key, str] = {}  # each template's generated Python, for `toolnexus explain --code`

    parts: dict[str, tuple[Render, frozenset[str] | None]] = {}
    gaps: dict[str, Gaps] = {}  # filled below, at load, before anything is written
    finish: list[Callable[[], None]] = []  # each `$content`'s table, built once every part is compiled

    writers: dict[Render, ContentPlan] = {}  # each `$content`'s plan, for writing it inline (`_content_lines`)

    def content_factory(spec: dict[str, Any], key: Key) -> Render:
        return _content_writer(spec, key, parts, gaps, source, provider, finish, writers)

    part_nodes: dict[str, Node] = {}  # each part template's parsed nodes, for the direct writer
    for kind, template in msgs["parts"].items():
        # A part may write its own parts (a tool result's images).
        env = Env(source, content=content_factory, generated=code)
        parts[kind] = (compile_template(template, ("messages", "parts", kind), env), _frozen(env.fields_read()))
        part_nodes[kind] = env.parsed[("messages", "parts", kind)]
        _refuse_direct_parts(env, source)
        found = _gaps(env, PART_FIELDS.get(kind, ()), TEXT_OF_PARTS.get(kind))
        if found.unread or (kind in TEXT_OF_PARTS and found.kinds is not None and TOOL_RESULT_KINDS - found.kinds):
            gaps[kind] = found

    carry = _carry_table(msgs.get("carry", {}))
    read_keys = {role: READ_KEYS[role] | {key for key, _ in carry.get(role, ())} for role in ROLES}
    roles: dict[str, RoleRule] = {}
    hoist = frozenset(msgs["system"]["roles"])
    for role in ROLES:
        rule = msgs["roles"].get(role)
        if rule is None:
            if role not in hoist:
                raise source.error(("messages", "roles"), f"role '{role}' is neither hoisted nor given a rule")
            continue
        env = Env(source, content=content_factory, generated=code)
        render = compile_template(rule["message"], ("messages", "roles", role, "message"), env)
        _refuse_direct_parts(env, source)
        if not env.contents and env.fields_read("source") is not None:
            raise source.error(
                ("messages", "roles", role, "message"),
                "never writes the message's content (use $content or $get: source)",
            )
        consumed = env.fields_read("source")
        spliced_role = isinstance(rule["message"], list)
        if spliced_role and (rule.get("merge_consecutive") or msgs.get("merge_same_role")):
            message = "a message written as a list of entries cannot be merged with the next one"
            raise source.error(("messages", "roles", role, "message"), message)
        roles[role] = RoleRule(
            render=render,
            drop_if_empty=bool(rule.get("drop_if_empty", False)),
            merge_consecutive=bool(rule.get("merge_consecutive", False)),
            allowed=None if consumed is None else frozenset(consumed) | read_keys[role],
            kinds=_gaps(env, (), None).kinds,
            carried=frozenset(key for key, _ in carry.get(role, ())),
            spliced=spliced_role,
            node=env.parsed[("messages", "roles", role, "message")],
        )

    system_rule = msgs["system"]
    system_message = None
    if "message" in system_rule:
        system_env = Env(source, generated=code)
        system_message = compile_template(system_rule["message"], ("messages", "system", "message"), system_env)
    system_node = system_env.parsed[("messages", "system", "message")] if system_message is not None else None
    system_blocks = None
    if system_rule.get("blocks") == "when_cached":
        if "text" not in parts:
            raise source.error(("messages", "system", "blocks"), "needs a `text` part template to write the blocks")
        system_blocks = parts["text"][0]

    body_env = Env(source, generated=code)
    body = compile_template(request["body"], ("request", "body"), body_env)
    body_reads = body_env.fields_read()
    if body_reads is None:
        raise source.error(
            ("request", "body"), "body paths must name request fields (no `@` or projections at the top)"
        )
    for name in sorted(body_reads - COMPUTED_FIELDS - OPENAI_REQUEST_FIELDS):
        raise source.error(body_env.where_read(name), _not_a_request_field(name))
    for table in ("unsupported", "elsewhere"):
        for name in request.get(table, {}):
            if name not in OPENAI_REQUEST_FIELDS:
                raise source.error(("request", table, name), _not_a_request_field(name))
    for needed in sorted(SECTION_FIELDS):
        if needed not in body_reads:
            raise source.error(("request", "body"), f"never places `{needed}` (add {needed}: {{$get: {needed}}})")
    if system_message is None and "system" not in body_reads:
        raise source.error(
            ("request", "body"), "never places the system prompt (add {$get: system}, or give messages.system.message)"
        )

    choice_env = Env(source, generated=code)
    tool_choice = {
        kind: compile_template(template, ("tool_choice", kind), choice_env)
        for kind, template in data["tool_choice"].items()
    }
    consumed = (body_reads - COMPUTED_FIELDS) | SECTION_FIELDS | set(request.get("elsewhere", {}))
    if "parallel_tool_calls" in (choice_env.fields_read() or ()):
        consumed |= {"parallel_tool_calls"}
    for name in unsupported:
        if name in consumed:
            raise source.error(("request", "unsupported", name), f"'{name}' is both mapped and listed as unsupported")

    tools = data["tools"]
    decl_env = Env(source, generated=code)
    declaration = compile_template(tools["declaration"], ("tools", "declaration"), decl_env)
    decl_reads = decl_env.fields_read()
    tool_keys_read = None if decl_reads is None or {"source", "function"} & decl_reads else frozenset(decl_reads)
    plain_tool_scope: Literal["function", "source"] | None = None
    if tool_keys_read is not None and "path" not in tool_keys_read:
        plain_tool_scope = "function"
    elif decl_reads == {"source"}:
        plain_tool_scope = "source"

    tool_call_ids = compile_id_rule(source)
    spliced = frozenset(kind for kind, template in msgs["parts"].items() if isinstance(template, list))
    for fill in finish:  # complete now, so nothing compiled is ever filled in (or raced over) at translate time
        fill()
    inbound = Inbound(
        provider=provider,
        body=body,
        consumed=frozenset(consumed),
        unsupported=MappingProxyType(unsupported),
        hoist=hoist,
        join=system_rule["join"],
        system_message=system_message,
        roles=MappingProxyType(roles),
        message_unsupported=_unsupported_table(msgs.get("unsupported", {})),
        declaration=declaration,
        tool_keys_read=tool_keys_read,
        plain_tool_scope=plain_tool_scope,
        reads_arguments_json=_reads(parts.get("tool_call"), "arguments_json"),
        tool_unsupported=_unsupported_table(tools.get("unsupported", {})),
        tool_choice=MappingProxyType(tool_choice),
        # A writer reading its scope whole could hand it out in the body: then each call reads its own.
        choices=NO_CHOICES if choice_env.fields_read() is None else _choice_table(tool_choice, provider),
        system_blocks=system_blocks,
        text_reads=(parts["text"][1] or frozenset()) if "text" in parts else frozenset(),
        text_gaps=gaps.get("text"),
        tool_call_ids=tool_call_ids,
        merge_same_role=msgs.get("merge_same_role"),
        spliced=spliced,
        carry=carry,
        read_keys=MappingProxyType(read_keys),
        code=tuple(code.items()),
        ranges=MappingProxyType(compile_ranges(source)),
        plan=MappingProxyType(
            {"consumed": tuple(sorted(consumed)), "hoist": tuple(sorted(hoist)), "parts": tuple(sorted(parts))}
        ),
    )
    part_reads = MappingProxyType({kind: reads for kind, (_, reads) in parts.items()})
    direct = Parts(MappingProxyType(writers), MappingProxyType(part_nodes), part_reads, spliced, _opaque_blocks)
    writes = (_content_lines(writers), direct)
    inbound = replace(inbound, writes=writes)
    text, run = generate(inbound, *writes)  # the messages section's one function
    code_items = (*inbound.code, (("messages",), text))
    system_fast = generate_system(inbound, system_node)
    if system_fast is not None:
        code_items = (*code_items, (("messages", "system"), system_fast[0]))
        inbound = replace(inbound, system=system_fast[1])
    if plain_tool_scope is None:
        return replace(inbound, messages=run, code=code_items)
    node = decl_env.parsed[("tools", "declaration")]
    tools_text, tools_run = _needed(generate_tools(inbound, node))
    sections = (*code_items, (("tools",), tools_text))
    return replace(inbound, messages=run, tools=tools_run, code=sections, declaration_node=node)


def _needed(generated: tuple[str, Tools] | None) -> tuple[str, Tools]:
    assert generated is not None  # the plain tools function is always generated
    return generated


def _choice_table(writers: Mapping[str, Render], provider: str) -> Choices:
    """Every tool choice a request gives as a string (or not at all), with each parallel_tool_calls, read once
    here: `translate` then only looks it up. Kinds the rules cannot write are left to `_tool_choice` to refuse.
    The choices are read, never changed, by their writers."""
    table: dict[tuple[Any, Any], tuple[dict[str, Any], Render]] = {}
    for given in (MISSING, *TOOL_CHOICES):
        for parallel in (MISSING, True, False):
            choice = read_tool_choice(given, parallel, provider)
            writer = writers.get(choice["kind"])
            if writer is not None:
                table[given, parallel] = (choice, writer)
    return MappingProxyType(table)


def _carry_table(spec: dict[str, Any]) -> Carry:
    """`messages.carry` ({key: {roles, kind}}) as the reader's table: per role, (key, kind or None)."""
    table: dict[str, list[tuple[str, str | None]]] = {}
    for key, rule in spec.items():
        for role in rule["roles"]:
            table.setdefault(role, []).append((key, rule.get("kind")))
    return MappingProxyType({role: tuple(placed) for role, placed in table.items()})


def _reads(part: tuple[Render, frozenset[str] | None] | None, key: str) -> bool:
    """Whether a part template reads `key` of the middle form (unknown reads count as yes)."""
    if part is None:
        return False
    reads = part[1]
    return reads is None or key in reads


def _frozen(fields: set[str] | None) -> frozenset[str] | None:
    return None if fields is None else frozenset(fields)


def _not_a_request_field(name: str) -> str:
    return f"'{name}' is not an OpenAI request field{did_you_mean(name, OPENAI_REQUEST_FIELDS | COMPUTED_FIELDS)}"


def _unsupported_table(table: dict[str, Any]) -> Mapping[str, Unsupported]:
    return MappingProxyType(
        {
            name: Unsupported(action=spec["action"], accept=tuple(spec.get("accept", ())), doc=spec.get("doc", ""))
            for name, spec in table.items()
        }
    )


def _report_part(turn: dict[str, Any], part: dict[str, Any], reads: frozenset[str], ctx: Ctx) -> None:
    """Settle what a part template drops (unread optional keys); note what it rewrites (derived keys it reads)."""
    report = part["report"]
    if len(report) > 1 or "derived" not in report:  # a rewritten id or arguments alone is the common case
        for key, where in report.get("optional", EMPTY).items():
            if key not in reads:
                ctx.settle(where.rpartition(".")[2], part[key], f"{part_path(turn, part)}.{where}")
        for key, where in report.get("message", EMPTY).items():
            if key not in reads:
                ctx.settle(where.rpartition(".")[2], part[key], f"messages[{turn['index']}].{where}")
    for key, (where, how) in report.get("derived", EMPTY).items():
        if key in reads:
            ctx.notes.append(Note("rewritten", f"{part_path(turn, part)}.{where}", how))


def _content_writer(
    spec: dict[str, Any],
    key: Key,
    parts: dict[str, tuple[Render, frozenset[str] | None]],
    gaps: dict[str, Gaps],
    source: RuleSource,
    provider: str,
    finish: list[Callable[[], None]],
    writers: dict[Render, ContentPlan],
) -> Render:
    """Compile `$content`: write a message's (or a part's) parts through the parts table.

    `parts` is the table being compiled (a part template may use `$content` too), so it
    is read once every part is compiled: `compile_inbound` calls what this adds to `finish`.
    """
    policy = spec["$content"]
    kinds = spec.get("kinds")
    declared = source.data["messages"]["parts"]
    if kinds is not None:
        if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
            raise source.error((*key, "kinds"), "kinds must be a list of part kinds")
        for i, k in enumerate(kinds):
            if k not in declared:
                raise source.error((*key, "kinds", i), f"no part template for kind '{k}' in messages.parts")
    lead = spec.get("lead")
    leads = [] if lead is None else [lead] if not isinstance(lead, list) else lead  # several: in order
    lead_keys = [(*key, "lead") if path is lead else (*key, "lead", j) for j, path in enumerate(leads)]
    lead_getters = [
        (path_getter(path, at, Env(source)), _lead_where(path), _rule_where(source, at) if is_piped(path) else None)
        for path, at in zip(leads, lead_keys, strict=True)
    ]  # fmt: skip
    wanted = frozenset(kinds) if kinds is not None else None
    flatten, one = policy == "text_or_blocks", policy == "one"
    # Filled at the end of the load (`fill`), so a part's own `$content` sees the whole table. Per kind: its
    # writer, the fields it reads when it reads them one by one (it may drop or rewrite, see _report_part; else
    # None), its gaps (None: it leaves nothing unwritten) and whether it is spliced; all decided once, here.
    plan: dict[str, tuple[Render, frozenset[str] | None, Gaps | None, bool]] = {}
    # [the text template's reads when it reports, keys a text part may carry that the text template writes
    # (such a part stays a block)]
    text: list[Any] = [None, frozenset()]

    def fill() -> None:
        spliced = frozenset(kind for kind, template in declared.items() if isinstance(template, list))
        for kind, (write, reads) in parts.items():
            reporting = reads if reads is not None and "source" not in reads else None
            plan[kind] = (write, reporting, gaps.get(kind), kind in spliced)
        text_reads = parts["text"][1] if "text" in parts else None
        text[:] = [plan["text"][1] if "text" in plan else None, frozenset(text_reads or ()) - {"text", "kind"}]

    finish.append(fill)

    def render(turn: Any, ctx: Ctx) -> Any:
        selected = turn["parts"] if wanted is None else [p for p in turn["parts"] if p["kind"] in wanted]
        blocks: list[Any] = []
        for lead_getter, lead_where, reshaped_by in lead_getters:
            opaque = lead_getter(turn)
            if opaque is not MISSING and opaque is not None:
                blocks += _opaque_blocks(opaque, lead_where, ctx, reshaped_by)
        if flatten and not blocks:
            text_reads, text_extras = text
            reported = False
            for p in selected:
                if p["kind"] != "text":
                    break
                if len(p) > 3:  # more than kind, text and source: it carries something
                    if text_extras and not text_extras.isdisjoint(p):
                        break  # a part the text template writes more of than its text stays a block
                    reported = reported or "report" in p
            else:
                if reported and text_reads is not None:
                    for p in selected:
                        if "report" in p:
                            _report_part(turn, p, text_reads, ctx)
                return selected[0]["text"] if len(selected) == 1 else "".join(p["text"] for p in selected)
        where = ctx.path
        at = [turn, None]
        ctx.path = (PARTS, at)
        for part in selected:
            entry = plan.get(part["kind"])
            if entry is None:
                raise ctx.fail(part_path(turn, part), f"{part['kind']} parts cannot be sent to {provider}")
            write, reads, gap, spliced = entry
            if reads is not None and "report" in part:
                _report_part(turn, part, reads, ctx)
            if gap is not None:
                _settle_gaps(turn, part, gap, ctx)
            at[1] = part
            written = write(part, ctx)
            if not spliced:
                blocks.append(written)
            elif written is not MISSING:
                blocks.extend(written)
        ctx.path = where
        if not one:
            return blocks if blocks else MISSING
        if len(blocks) > 1:
            raise ctx.fail(f"messages[{turn['index']}]", f"holds {len(blocks)} parts; the rules send one per message")
        return blocks[0] if blocks else MISSING

    writers[render] = ContentPlan(policy, wanted, tuple(lead_getters), plan, provider)
    return render


@dataclass(frozen=True)
class ContentPlan:
    """What one `$content` writes, for writing it inline (`_content_lines`): its policy, the kinds it selects
    (None: every kind), the opaque blocks it leads with (getter, where, the reshaping rule or None), and its
    per-kind plan (filled at the end of the load, before any function is generated: see `_content_writer`)."""

    policy: str
    wanted: frozenset[str] | None
    leads: tuple[tuple[Getter, str, str | None], ...]
    plan: Mapping[str, tuple[Render, frozenset[str] | None, Gaps | None, bool]]
    provider: str


# The part kinds most messages hold, tested first where a `$content` is written inline (a transcript is mostly
# tool results, tool calls and text).
_COMMON_KINDS = ("tool_result", "tool_call", "text")


def _likely_first(item: tuple[str, Any]) -> int:
    return _COMMON_KINDS.index(item[0]) if item[0] in _COMMON_KINDS else len(_COMMON_KINDS)


def _content_lines(writers: Mapping[Render, ContentPlan]) -> ContentLines:
    """A role template's `$content` written inline in the messages function: the same steps as its closure
    (`_content_writer`'s render), with the per-kind plan decided in the code. `text_or_blocks` writes a message
    of one plain text part as its text inline, and calls the closure for anything else (or when it leads with
    opaque blocks)."""

    def lines(node: Any, target: str, scope: str, call: str, bind: Callable[[Any], str]) -> list[str] | None:
        writer = writers.get(node.render)
        if writer is None:
            return None
        wanted = writer.wanted
        if writer.policy == "text_or_blocks":
            if writer.leads:
                return None
            if wanted is not None and "text" not in wanted:
                return None
            return [
                f"ps_ = {scope}['parts']",
                f"if len(ps_) == 1 and len(ps_[0]) <= 3 and ps_[0]['kind'] == 'text': {target} = ps_[0]['text']",
                f"else: {target} = {call}",
            ]
        out = ["blocks_ = []"]
        for getter, where, reshaped_by in writer.leads:
            out += [
                f"lead_ = {bind(getter)}({scope})",
                f"if lead_ is not MISSING and lead_ is not None:"
                f" blocks_ += {bind(_opaque_blocks)}(lead_, {where!r}, c, {reshaped_by!r})",
            ]
        out += [
            "where_ = c.path",
            f"at_ = [{scope}, None]",
            f"c.path = ({bind(PARTS)}, at_)",
            f"for part_ in {scope}['parts']:",
            "    kind_ = part_['kind']",
        ]
        branch = "if"
        for kind, (write, reads, gap, spliced) in sorted(writer.plan.items(), key=_likely_first):
            if wanted is not None and kind not in wanted:
                continue
            out.append(f"    {branch} kind_ == {kind!r}:")
            if reads is not None:
                out.append(f"        if 'report' in part_: {bind(_report_part)}({scope}, part_, {bind(reads)}, c)")
            if gap is not None:
                out.append(f"        {bind(_settle_gaps)}({scope}, part_, {bind(gap)}, c)")
            out.append("        at_[1] = part_")
            if spliced:
                out.append(f"        w_ = {bind(write)}(part_, c)")
                out.append("        if w_ is not MISSING: blocks_.extend(w_)")
            else:
                out.append(f"        blocks_.append({bind(write)}(part_, c))")
            branch = "elif"
        cannot = f"f'{{kind_}} parts cannot be sent to {writer.provider}'"
        refuse = f"raise c.fail({bind(part_path)}({scope}, part_), {cannot})"
        if wanted is None:
            out.append(f"    else: {refuse}" if branch == "elif" else f"    {refuse}")
        elif branch == "elif":
            out.append(f"    elif kind_ in {bind(wanted)}: {refuse}")
        else:
            out.append(f"    if kind_ in {bind(wanted)}: {refuse}")
        out.append("c.path = where_")
        if writer.policy == "blocks":
            return [*out, f"{target} = blocks_ if blocks_ else MISSING"]
        many = "f'holds {len(blocks_)} parts; the rules send one per message'"
        return [
            *out,
            f"if len(blocks_) > 1: raise c.fail(f\"messages[{{{scope}['index']}}]\", {many})",
            f"{target} = blocks_[0] if blocks_ else MISSING",
        ]

    return lines


# A path that reads the middle form's `parts` itself (`parts`, `parts[0].content`), not through `$content`.
DIRECT_PARTS = re.compile(r"parts(?![A-Za-z0-9_])")


def _refuse_direct_parts(env: Env, source: RuleSource) -> None:
    """Parts are written through `$content` only: read directly, they would go out in the middle form's own
    shape, and whatever the read leaves out (other parts, a part's other fields) would be lost unreported."""
    for expr, key in env.reads.items():
        if DIRECT_PARTS.match(expr) and key[-1:] != ("$content",):  # `$content` itself reads them, as it should
            message = f"reads the parts directly ('{expr}'): write them with $content (see messages.parts)"
            raise source.error(key, message)


def _gaps(env: Env, fields: tuple[tuple[frozenset[str], str, str], ...], text_field: str | None) -> Gaps:
    """What a compiled template leaves unwritten (see Gaps); nothing when it reads its input object whole."""
    reads = env.fields_read()
    if reads is None or env.fields_read("source") is None:
        return NO_GAPS
    unread = tuple((name, where, keys) for keys, name, where in fields if keys.isdisjoint(reads))
    if any(kinds is None for kinds in env.contents):
        return Gaps(unread)
    kinds = frozenset[str]().union(*(k for k in env.contents if k is not None))
    return Gaps(unread, kinds | ({"text"} if text_field in reads else frozenset()))


def _settle_gaps(turn: dict[str, Any], part: dict[str, Any], gaps: Gaps, ctx: Ctx) -> None:
    """Settle the caller's information a part template writes nothing for (the rule file says drop or error)."""
    for name, where, keys in gaps.unread:
        value = next((part[k] for k in keys if k in part), MISSING)
        if value is not MISSING:
            path = part_path(turn, part)  # a part with no source is a string content itself
            ctx.settle(name, value, f"{path}.{where}" if "source" in part else path)
    if gaps.kinds is not None:
        settle_parts(turn, part.get("parts", ()), gaps.kinds, ctx)


def _add_blocks(blocks: list[Any], written: Any, spliced: bool) -> None:
    """A part's written block, or, from a part template written as a list, its blocks (the absent ones left out)."""
    if not spliced:
        blocks.append(written)
    elif written is not MISSING:
        blocks.extend(written)


def _lead_where(path: Any) -> str:
    """Where a `lead` path's blocks are in the message: the field it reads, also when it pipes them through a
    reshaping (`source.blocks | map(...)` is located at `blocks`)."""
    steps = piped_from(path) if isinstance(path, str) else None
    if not steps:
        return str(path).removeprefix("source.")
    text = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in steps).lstrip(".")
    return text.removeprefix("source.")


def _rule_where(source: RuleSource, key: Key) -> str:
    """A rule's file:line and key, for a refusal the rule writes (as `$refuse` names it)."""
    line, _ = source.where(key)
    return f"{source.file}:{line} {dotted(key)}" if line else source.file


def _opaque_blocks(value: Any, where: str, ctx: Ctx, reshaped_by: str | None = None) -> list[Any]:
    """`lead`: blocks the caller carried back (e.g. signed reasoning), sent exactly as given.

    A reshaping (`reshaped_by`: the rule's file:line) that writes `{"$refuse": MESSAGE}` in place of a block
    refuses that block: a malformed block stops here, at its index, not at the provider.
    """
    if not isinstance(value, list):
        raise ctx.fail(ctx.at(where), f"must be a list of blocks, got {type(value).__name__}")
    for j, block in enumerate(value):
        if not isinstance(block, dict):
            raise ctx.fail(ctx.at(f"{where}[{j}]"), f"must be an object, got {type(block).__name__}")
        if reshaped_by is not None and block.keys() == {"$refuse"} and isinstance(block["$refuse"], str):
            raise ctx.fail(ctx.at(f"{where}[{j}]"), f"{block['$refuse']} ({reshaped_by})")
    return value
