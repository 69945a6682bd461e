"""The fast lane: OpenAI messages and tools to the provider's in one generated pass,
for requests that need no note and raise no error.

The general path (reader -> middle form -> writers) is the reference: it validates
everything, names every culprit and reports every drop. Most real requests are clean,
though, and for them building a middle-form dict per part, then calling a template to
read it back, costs more than the translation itself. So, once per rule file, this
module writes one Python function for messages and one for tools, the way a person
would write them by hand for that provider: a loop over the messages, a branch per
role, the rule templates inlined with their fields bound to local variables (and an
object built only from always-present fields as one dict display). `toolnexus
explain --code` prints both functions.

The lane never decides anything the general path would not: whenever an input is
not plainly valid, or translating it would write a note, the generated code raises
`Fallback`; the lane removes any notes it wrote and the caller takes the general path
for that section. Nothing here knows a provider: the roles, templates, merge and drop
rules all come from the compiled rule file, and a role, part kind or declaration whose
template reads something the lane does not bind stays on the general path.
Uncommon shapes (content given as a list of parts, images) run through small helpers
below instead of inline code. `tests/test_lane.py` checks the lane against the
general path on every case and on generated transcripts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..language.ids import IdRule
from ..language.jsonsafe import loads
from ..language.loader import Key
from ..language.paths import MISSING
from ..language.templates import Ctx, Inliner
from .reader import OBJECT_ARGUMENTS_SENT_AS_TEXT, READ_KEYS, Hoisted

# The middle-form fields (reader.py) of a content list's parts, in the order the bound
# part functions (`write_part`) take them; tool calls and results are inlined instead.
# Fields the reader sets only when the caller gave a key the lane refuses (cache_control,
# extra_content, is_error, an image detail) are absent on every input the lane takes,
# so templates reading them bind to MISSING.
PART_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text", "source"),
    "image_base64": ("media_type", "data", "source"),
    "image_url": ("url", "source"),
}
ABSENT_FIELDS = ("cache_control", "extra_content", "is_error", "detail")

# The keys the lane itself reads, per message role and per nested object. Anything
# else in a message, part, call or tool (cache_control, extra_content, a provider
# extension, a typo) sends the request down the general path, which knows what each
# key means, or refuses it.
LANE_MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content"}),
    "user": frozenset({"role", "content"}),
    "assistant": frozenset({"role", "content", "tool_calls"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}
TEXT_PART_KEYS = frozenset({"type", "text"})
IMAGE_PART_KEYS = frozenset({"type", "image_url"})
IMAGE_KEYS = frozenset({"url", "detail"})
CALL_KEYS = frozenset({"id", "type", "function"})
FUNCTION_KEYS = frozenset({"name", "arguments"})
TOOL_KEYS = frozenset({"type", "function"})
TOOL_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})

Part = tuple[str, tuple[Any, ...], int]  # (kind, the bound part function's field values, index in content)
BoundRender = Callable[..., Any]  # render(*field values, ctx), from templates.compile_bound
BoundCompiler = Callable[[Any, Key, tuple[str, ...]], tuple[BoundRender | None, frozenset[str] | None]]


class Fallback(Exception):
    """Take the general path: it will raise the right error or write the right notes."""


class _Elements:
    """Element paths for notes the inlined templates write (`c.path = (owner, i)`)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def element_path(self, index: Any) -> str:
        return self.pattern.format(*index) if isinstance(index, tuple) else self.pattern.format(index)


# Where the general path points notes: a message, its string content, a content part, a tool call.
MESSAGE_PATHS = _Elements("messages[{}]")
TEXT_PATHS = _Elements("messages[{}].content")
CONTENT_PATHS = _Elements("messages[{}].content[{}]")
CALL_PATHS = _Elements("messages[{}].tool_calls[{}]")
TOOL_PATHS = _Elements("tools[{}].function")

GeneratedMessages = Callable[[Any, Ctx], tuple[list[Any], list[Hoisted]]]
GeneratedTools = Callable[[Any, Ctx], tuple[list[Any], set[str]]]


@dataclass
class Lane:
    run_messages: GeneratedMessages
    run_tools: GeneratedTools

    def messages(self, messages: Any, ctx: Ctx) -> tuple[list[Any], list[Hoisted]] | None:
        """The provider's messages and the hoisted prompts (as the reader gives them), or None."""
        return _run(self.run_messages, messages, ctx)

    def tools(self, tools: Any, ctx: Ctx) -> tuple[list[Any], set[str]] | None:
        """The provider's tool declarations and the declared names, or None for the general path."""
        return _run(self.run_tools, tools, ctx)


T = TypeVar("T")


def _run(generated: Callable[[Any, Ctx], T], data: Any, ctx: Ctx) -> T | None:
    """Run a generated function; on Fallback, leave no note and no path behind."""
    start = len(ctx.notes)
    try:
        return generated(data, ctx)
    except Fallback:
        del ctx.notes[start:]
        ctx.path = ""
        return None


# ---------------------------------------------------------------- helpers the generated code calls


def text_only(content: Any) -> str:
    """Content that may only hold text: a string, or text parts concatenated."""
    if type(content) is str:
        return content
    if type(content) is not list:
        raise Fallback
    texts = []
    for part in content:
        if type(part) is not dict or part.get("type") != "text" or not part.keys() <= TEXT_PART_KEYS:
            raise Fallback
        text = part.get("text")
        if type(text) is not str:
            raise Fallback
        texts.append(text)
    return "".join(texts)


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments given as text; they must be a JSON object (parsed even when unused)."""
    try:
        parsed = loads(raw)
    except ValueError:
        raise Fallback from None
    if type(parsed) is not dict:
        raise Fallback
    return parsed


def dump_arguments(arguments: dict[str, Any]) -> str:
    """Arguments given as an object, as the JSON text the rules send."""
    try:
        return json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        raise Fallback from None


def read_list(content: Any) -> list[Part]:
    """A content list, text and images, as the reader would read it."""
    if type(content) is not list:
        raise Fallback
    return [_list_part(part, j) for j, part in enumerate(content)]


def _list_part(part: Any, j: int) -> Part:
    kind = part.get("type") if type(part) is dict else None
    if kind == "text":
        text = part.get("text")
        if type(text) is not str or not part.keys() <= TEXT_PART_KEYS:
            raise Fallback
        return ("text", (text, part), j)
    if kind != "image_url" or not part.keys() <= IMAGE_PART_KEYS:
        raise Fallback
    image = part.get("image_url")
    url = image.get("url") if type(image) is dict and image.keys() <= IMAGE_KEYS else None
    if type(url) is not str or image.get("detail", "auto") not in ("auto", None):
        raise Fallback  # a detail other than auto may be reported as dropped
    if url.startswith("data:"):
        header, comma, data = url[5:].partition(",")
        media_type, _, encoding = header.partition(";")
        if not comma or encoding != "base64" or "/" not in media_type or not data:
            raise Fallback
        return ("image_base64", (media_type, data, part), j)
    if url.startswith(("http://", "https://")):
        return ("image_url", (url, part), j)
    raise Fallback


def write_content(
    parts: list[Part],
    text_or_blocks: bool,
    kinds: frozenset[str] | None,
    writers: dict[str, BoundRender],
    i: int,
    ctx: Ctx,
) -> Any:
    """`$content` over a content list already read: the joined text, or the blocks, or absent."""
    if kinds is not None:
        parts = [p for p in parts if p[0] in kinds]
    if text_or_blocks and all(p[0] == "text" for p in parts):
        return parts[0][1][0] if len(parts) == 1 else "".join(p[1][0] for p in parts)
    blocks = [write_part(part, writers, i, ctx) for part in parts]
    return blocks if blocks else MISSING


def write_part(part: Part, writers: dict[str, BoundRender], i: int, ctx: Ctx) -> Any:
    """One part of a content list through its bound template, with the part's path for notes."""
    kind, values, j = part
    write = writers.get(kind)
    if write is None:
        raise Fallback
    ctx.path = (CONTENT_PATHS, (i, j))
    return write(*values, ctx)


def merge_into(merged: dict[str, Any], message: dict[str, Any]) -> None:
    """Consecutive messages of one role become one: list values concatenate, the others are the latest."""
    for key, value in message.items():
        if isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key].extend(value)
        else:
            merged[key] = value


def own_copy(message: dict[str, Any]) -> dict[str, Any]:
    """The first message of a merge, copied before others are merged into it (never the caller's lists)."""
    return {k: list(v) if isinstance(v, list) else v for k, v in message.items()}


# ---------------------------------------------------------------- generating


@dataclass(frozen=True)
class RolePlan:
    """What the generator needs of one role rule (inbound.py compiles the rest)."""

    template: Any
    drop_if_empty: bool
    merge_consecutive: bool
    allowed: frozenset[str] | None


def compile_lane(
    rules: dict[str, Any],
    hoist: frozenset[str],
    roles: dict[str, RolePlan],
    tool_keys_read: frozenset[str] | None,
    ids: IdRule | None,
    inliner: Inliner,
    bind: BoundCompiler,
) -> tuple[Lane, str]:
    """Generate and compile the lane for one rule file; returns it and its source (for explain)."""
    parts = rules["messages"]["parts"]
    writers: dict[str, BoundRender] = {}  # for content lists, through write_part
    for kind, fields in PART_FIELDS.items():
        if kind in parts and not _content_specs(parts[kind]):
            render, _ = bind(parts[kind], ("messages", "parts", kind), fields)
            if render is not None:
                writers[kind] = render
    gen = _Generator(inliner, parts, writers, ids)
    source = gen.messages_function(hoist, roles) + "\n\n" + gen.tools_function(rules["tools"], tool_keys_read)
    namespace: dict[str, Any] = {
        **inliner.names,
        **gen.constants,
        "Fallback": Fallback,
        "MESSAGE_PATHS": MESSAGE_PATHS,
        "TEXT_PATHS": TEXT_PATHS,
        "CALL_PATHS": CALL_PATHS,
        "TOOL_PATHS": TOOL_PATHS,
        "CALL_KEYS": CALL_KEYS,
        "FUNCTION_KEYS": FUNCTION_KEYS,
        "TOOL_KEYS": TOOL_KEYS,
        "NO_CALLS": {},  # never written to: an assistant turn with calls starts a dict of its own
        "text_only": text_only,
        "parse_arguments": parse_arguments,
        "dump_arguments": dump_arguments,
        "OBJECT_ARGUMENTS_SENT_AS_TEXT": OBJECT_ARGUMENTS_SENT_AS_TEXT,
        "read_list": read_list,
        "write_content": write_content,
        "write_part": write_part,
        "merge_into": merge_into,
        "own_copy": own_copy,
        "WRITERS": writers,
        "normalize_id": ids.normalize if ids is not None else None,
    }
    exec(compile(source, "<fast lane>", "exec"), namespace)
    return Lane(namespace["lane_messages"], namespace["lane_tools"]), source


_USES_CTX = re.compile(r"\bc\b")
ABSENT = {name: "MISSING" for name in ABSENT_FIELDS}
Policy = tuple[bool, frozenset[str] | None]  # (text_or_blocks?, kinds) of a `$content`
Read = tuple[list[str], bool]  # a role's reading lines, and whether its content value is never absent


class _Generator:
    """Writes the lane's source: the OpenAI reading is fixed here, every write comes from a template."""

    def __init__(
        self, inliner: Inliner, parts: dict[str, Any], writers: dict[str, BoundRender], ids: IdRule | None
    ) -> None:
        self.inliner = inliner
        self.parts = parts
        self.writers = writers
        self.ids = ids
        self.constants: dict[str, Any] = {}

    def _constant(self, name: str, value: Any) -> str:
        self.constants[name] = value
        return name

    def _template(
        self,
        template: Any,
        key: Key,
        target: str,
        bound: dict[str, str],
        present: frozenset[str],
        path: str,
        content_var: str = "content",
    ) -> list[str] | None:
        """Inline lines for one template; when they may write a note or an error, `path` is set first."""
        lines = self.inliner.emit(template, key, target, {**ABSENT, **bound}, present, content_var)
        if lines is not None and _USES_CTX.search("\n".join(lines)):
            lines = [f"c.path = {path}", *lines]
        return lines

    def _part(
        self, kind: str, target: str, bound: dict[str, str], present: frozenset[str], path: str
    ) -> list[str] | None:
        """Inline lines writing one part, or None when the kind has no bindable template."""
        template = self.parts.get(kind)
        if template is None:
            return None
        specs = _content_specs(template)
        if not specs:
            return self._template(template, ("messages", "parts", kind), target, bound, present, path)
        # A part with parts of its own (a tool result's text and images): only its text here.
        if len(specs) > 1 or set(specs[0]) - CONTENT_OPTIONS:
            return None
        nested = self._string_content(_policy(specs[0]), bound["content"], "part_content", path)
        if nested is None:
            return None
        lines, present_nested = nested
        body = self._template(
            template,
            ("messages", "parts", kind),
            target,
            bound,
            present | ({"content"} if present_nested else frozenset()),
            path,
            content_var="part_content",
        )
        return None if body is None else lines + body

    def _string_content(self, policy: Policy, text: str, target: str, path: str) -> tuple[list[str], bool] | None:
        """`$content` of a string content (one text part): (lines setting `target`, never absent?)."""
        text_or_blocks, kinds = policy
        keeps_text = kinds is None or "text" in kinds
        if text_or_blocks:
            return [f"{target} = {text if keeps_text else repr('')}"], True
        if not keeps_text:
            return [f"{target} = MISSING"], False
        block = self._part("text", "block", {"text": text, "source": "MISSING"}, frozenset({"text"}), path)
        return None if block is None else ([*block, f"{target} = [block]"], True)

    def messages_function(self, hoist: frozenset[str], roles: dict[str, RolePlan]) -> str:
        lines = [
            "def lane_messages(messages, c):",
            "    if type(messages) is not list: raise Fallback",
            "    out = []",
            "    hoisted = []",
            "    pending = NO_CALLS  # tool call id -> name, of the assistant turn being answered",
            "    answered = None  # the ids answered since that turn (a set once there is one)",
            "    seen_ids = set()",
            "    merging = None  # the role whose consecutive messages are being merged",
            "    merged = False  # whether out[-1] is already our own merged copy",
            "    started = False",
            "    last_user = -1  # tool calls after the last user message are the current turn's",
            "    for j in range(len(messages) - 1, -1, -1):",
            "        m = messages[j]",
            "        if type(m) is dict and m.get('role') == 'user':",
            "            last_user = j",
            "            break",
            "    for i, msg in enumerate(messages):",
            "        if type(msg) is not dict: raise Fallback",
            "        role = msg.get('role')",
            "        if type(role) is not str: raise Fallback",
        ]
        if hoist:
            keys = self._constant("HOIST_KEYS", LANE_MESSAGE_KEYS["system"])
            lines += [
                f"        if role in {self._constant('HOIST', hoist)}:",
                f"            if started or not msg.keys() <= {keys}:",
                "                raise Fallback  # a late prompt is reported as moved; unread keys are settled",
                "            hoisted.append((text_only(msg.get('content')), f'messages[{i}]', i, msg))",
                "            continue",
            ]
        lines.append("        started = True")
        branch = "if"
        for role, reader in (("user", self._user), ("assistant", self._assistant), ("tool", self._tool)):
            plan = roles.get(role)
            body = None if plan is None else self._role(role, plan, reader)
            lines.append(f"        {branch} role == {role!r}:")
            lines += _indent(body or ["raise Fallback  # not bindable: the general path writes it"], 3)
            branch = "elif"
        lines += [
            "        else:",
            "            raise Fallback  # another role, or none: the general path reads or refuses it",
            "    c.path = ''",
            "    return out, hoisted",
        ]
        return "\n".join(lines) + "\n"

    def _role(
        self, role: str, plan: RolePlan, reader: Callable[[RolePlan, Policy | None], Read | None]
    ) -> list[str] | None:
        contents = _content_specs(plan.template)
        if len(contents) > 1 or (contents and set(contents[0]) - CONTENT_OPTIONS - {"lead"}):
            return None
        policy = _policy(contents[0]) if contents else None
        # A `lead` replays a message key (signed reasoning) first: the lane takes only messages without it.
        leads = {str(c["lead"]).removeprefix("source.").split(".")[0] for c in contents if "lead" in c}
        got = reader(plan, policy)
        if got is None:
            return None
        read, content_present = got
        present = frozenset({"role", "source", "index"})
        if policy is not None and content_present:
            present |= {"content"}
        write = self._template(
            plan.template,
            ("messages", "roles", role, "message"),
            "message",
            {"role": "role", "source": "msg", "index": "i"},
            present,
            "(MESSAGE_PATHS, i)",
            content_var="content_value",
        )
        if write is None:
            return None
        allowed = self._constant(f"ALLOWED_{role}", _lane_keys(role, plan.allowed) - leads)
        lines = [f"if not msg.keys() <= {allowed}: raise Fallback", *read, *write]
        if not (len(write) == 1 and write[0].startswith("message = {")):  # a dict display is never absent
            lines.append("if message is MISSING: raise Fallback")
        if plan.merge_consecutive:
            lines += [
                f"if merging == {role!r}:",
                "    if not merged:",
                "        out[-1] = own_copy(out[-1])",
                "        merged = True",
                "    merge_into(out[-1], message)",
                "else:",
                "    out.append(message)",
                "    merged = False",
                f"merging = {role!r}",
            ]
        else:
            lines += ["out.append(message)", "merged = False", "merging = None"]
        return lines

    def _user(self, plan: RolePlan, policy: Policy | None) -> Read | None:
        lines = ["content = msg.get('content')", "if type(content) is str:"]
        present = True
        if policy is None:
            lines += [
                "    pass",
                "else:",
                "    read_list(content)  # validated; the template writes the message as given",
            ]
        else:
            string = self._string_content(policy, "content", "content_value", "(TEXT_PATHS, i)")
            if string is None:
                return None
            string_lines, present = string
            kinds = self._constant("KINDS_user", policy[1])
            lines += [
                *_indent(string_lines, 1),
                "else:",
                f"    content_value = write_content(read_list(content), {policy[0]!r}, {kinds}, WRITERS, i, c)",
            ]
            present = present and policy[0]  # blocks from an empty list are absent
        return [*lines, "pending = NO_CALLS", "answered = None"], present

    def _assistant(self, plan: RolePlan, policy: Policy | None) -> Read | None:
        if policy is not None and policy[0]:
            return None  # text_or_blocks for assistant turns: the general path
        kinds = None if policy is None else policy[1]
        keeps = {k for k in ("text", "tool_call") if policy is not None and (kinds is None or k in kinds)}
        call_fields = _fields_read(self.parts.get("tool_call"))
        reads_json = "arguments_json" in call_fields
        # Where the rules send an object's JSON text, the general path reports it (reader.py's
        # `report`); the lane writes the same note, unless the template also reads `source`.
        report_json = reads_json and "tool_call" in keeps and "source" not in call_fields
        lines = ["content = msg.get('content')", "calls = msg.get('tool_calls')", "pending = NO_CALLS", "blocks = []"]
        if plan.drop_if_empty:
            lines.append("has_parts = False")
        text_block = None
        if "text" in keeps:
            text_block = self._part(
                "text", "block", {"text": "content", "source": "MISSING"}, frozenset({"text"}), "(TEXT_PATHS, i)"
            )
            if text_block is None:
                return None
        lines += ["if type(content) is str:", "    if content:"]
        if plan.drop_if_empty:
            lines.append("        has_parts = True")
        lines += _indent([*text_block, "blocks.append(block)"], 2) if text_block else ["        pass"]
        lines += ["elif content is not None:", "    for part in read_list(content):"]
        lines.append("        if part[0] == 'text' and not part[1][0]: continue")
        if plan.drop_if_empty:
            lines.append("        has_parts = True")
        if policy is not None:
            append = "blocks.append(write_part(part, WRITERS, i, c))"
            if kinds is None:
                lines.append(f"        {append}")
            else:
                lines.append(f"        if part[0] in {self._constant('KINDS_assistant', kinds)}: {append}")
        lines += [
            "if calls is not None:",
            "    if type(calls) is not list: raise Fallback",
            "    pending = {}",
        ]
        if "current_turn" in call_fields:
            lines.append("    current = True if i > last_user else MISSING")
        lines += [
            "    for k, call in enumerate(calls):",
            "        function = call.get('function') if type(call) is dict and call.keys() <= CALL_KEYS else None",
            "        if type(function) is not dict or call.get('type', 'function') != 'function': raise Fallback",
            "        if not function.keys() <= FUNCTION_KEYS: raise Fallback",
            "        call_id = call.get('id')",
            "        name = function.get('name')",
            "        raw = function.get('arguments')",
            "        if type(call_id) is not str or not call_id or type(name) is not str or not name: raise Fallback",
            "        if call_id in seen_ids: raise Fallback",
        ]
        if self.ids is not None:
            lines.append("        if normalize_id(call_id) != call_id: raise Fallback  # a rewritten id is reported")
        lines += [
            "        if type(raw) is str:",
            "            if not raw or raw.isspace(): raise Fallback  # empty text is sent as {} and reported",
            "            arguments = parse_arguments(raw)",
            "            arguments_json = raw",
            "        elif type(raw) is dict:",
            "            arguments = raw",
        ]
        if not reads_json:
            lines.append("            arguments_json = MISSING")
        elif report_json:
            lines += [
                "            arguments_json = dump_arguments(raw)",
                "            c.notes.append(Note('rewritten', f'messages[{i}].tool_calls[{k}].function.arguments',"
                " OBJECT_ARGUMENTS_SENT_AS_TEXT))",
            ]
        else:
            lines.append("            arguments_json = dump_arguments(raw)")
        lines += [
            "        else:",
            "            raise Fallback",
            "        seen_ids.add(call_id)",
            "        pending[call_id] = name",
        ]
        if plan.drop_if_empty:
            lines.append("        has_parts = True")
        if "tool_call" in keeps:
            bound = {
                "id": "call_id",
                "name": "name",
                "arguments": "arguments",
                "arguments_json": "arguments_json",
                "position": "k",
                "current_turn": "current",
                "source": "call",
            }
            present = frozenset({"id", "name", "arguments", "position", "source"})
            block = self._part("tool_call", "block", bound, present, "(CALL_PATHS, (i, k))")
            if block is None:
                return None
            lines += _indent([*block, "blocks.append(block)"], 2)
        lines.append("answered = None")
        if plan.drop_if_empty:
            lines.append("if not has_parts: raise Fallback  # reported as dropped")
        if policy is not None:
            lines.append("content_value = blocks if blocks else MISSING")
        return lines, plan.drop_if_empty and kinds is None  # never empty: an empty turn fell back

    def _tool(self, plan: RolePlan, policy: Policy | None) -> Read | None:
        lines = [
            "call_id = msg.get('tool_call_id')",
            "name = pending.get(call_id) if type(call_id) is str else None",
            "if name is None: raise Fallback",
            "if answered is None: answered = {call_id}",
            "elif call_id in answered: raise Fallback",
            "else: answered.add(call_id)",
            "content = msg.get('content')",
            "if type(content) is not str: content = text_only(content)",
        ]
        if policy is None:
            return lines, True
        text_or_blocks, kinds = policy
        if kinds is not None and "tool_result" not in kinds:
            return [*lines, f"content_value = {repr('') if text_or_blocks else 'MISSING'}"], text_or_blocks
        bound = {"tool_call_id": "call_id", "name": "name", "content": "content", "index": "i", "source": "msg"}
        block = self._part("tool_result", "block", bound, frozenset(bound), "(MESSAGE_PATHS, i)")
        if block is None:
            return None
        return [*lines, *block, "content_value = [block]"], True

    def tools_function(self, tools: dict[str, Any], keys_read: frozenset[str] | None) -> str:
        bound = {
            "name": "name",
            "description": "description",
            "parameters": "parameters",
            "strict": "strict",
            "source": "tool",
            "function": "function",
        }
        write = self._template(
            tools["declaration"],
            ("tools", "declaration"),
            "declared",
            bound,
            frozenset({"name", "source", "function"}),
            "(TOOL_PATHS, i)",
        )
        if write is None:
            return "def lane_tools(tools, c):\n    raise Fallback  # the declaration is not bindable\n"
        function_keys = TOOL_FUNCTION_KEYS if keys_read is None else keys_read - set(ABSENT_FIELDS)
        lines = [
            "def lane_tools(tools, c):",
            "    if type(tools) is not list: raise Fallback",
            "    out = []",
            "    names = set()",
            "    for i, tool in enumerate(tools):",
            "        is_function = type(tool) is dict and tool.get('type') == 'function' and tool.keys() <= TOOL_KEYS",
            "        function = tool.get('function') if is_function else None",
            "        if type(function) is not dict: raise Fallback",
            f"        if not function.keys() <= {self._constant('TOOL_FUNCTION_KEYS', function_keys)}: raise Fallback",
            "        name = function.get('name')",
            "        description = function.get('description', MISSING)",
            "        parameters = function.get('parameters', MISSING)",
            "        strict = function.get('strict', MISSING)",
            "        if type(name) is not str or not name or name in names: raise Fallback",
            "        if description is not MISSING and type(description) is not str: raise Fallback",
            "        if parameters is not MISSING and type(parameters) is not dict: raise Fallback",
            "        names.add(name)",
            *_indent(write, 2),
            "        out.append(declared)",
            "    c.path = ''",
            "    return out, names",
        ]
        return "\n".join(lines) + "\n"


CONTENT_OPTIONS = frozenset({"$content", "kinds", "doc", "source"})


def _policy(spec: dict[str, Any]) -> Policy:
    kinds = spec.get("kinds")
    return (spec["$content"] == "text_or_blocks", None if kinds is None else frozenset(kinds))


def _lane_keys(role: str, allowed: frozenset[str] | None) -> frozenset[str]:
    """Message keys the lane may pass: those it reads, and those the role's template reads from the message."""
    read_by_template = frozenset() if allowed is None else allowed - READ_KEYS[role]
    return LANE_MESSAGE_KEYS[role] | read_by_template


def _indent(lines: list[str], levels: int) -> list[str]:
    return ["    " * levels + line for line in lines]


def _content_specs(template: Any) -> list[dict[str, Any]]:
    """Every `$content` operation in a template."""
    found: list[dict[str, Any]] = []
    if isinstance(template, dict):
        if "$content" in template:
            found.append(template)
        for value in template.values():
            found += _content_specs(value)
    elif isinstance(template, list):
        for value in template:
            found += _content_specs(value)
    return found


def _fields_read(template: Any) -> set[str]:
    """The top-level fields a template's `$` operations name (a superset is safe here)."""
    fields: set[str] = set()
    if isinstance(template, dict):
        for key, value in template.items():
            if key.startswith("$"):
                for path in value if isinstance(value, list) else [value]:
                    if isinstance(path, str):
                        fields.add(re.split(r"[.\[]", path, maxsplit=1)[0])
            fields |= _fields_read(value)
    elif isinstance(template, list):
        for value in template:
            fields |= _fields_read(value)
    return fields
