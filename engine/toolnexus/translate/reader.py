"""Read an OpenAI Chat Completions request into the middle form every rule file writes from.

OpenAI is the hub, so knowing its shape is the engine's job, not a provider's.
Reading validates everything and raises TranslationError with the path of the
culprit; nothing here knows any other provider. The middle form is plain dicts
(cheap to build, and usable directly as template scopes):

  message: {role, parts: [part...], source, index}   (+ positions: built by part_path when needed)
  part:    {kind: text, text}
           {kind: image_base64, media_type, data, source}
           {kind: image_url, url, source}
           {kind: tool_call, id, name, arguments (object), arguments_json (str), position, source}
           {kind: tool_result, tool_call_id, name, content (str), parts, index, source}
           {kind: <other OpenAI part type>, source}   (written only if a rule knows it)
  tool:    {name, description, parameters, strict, source, function, path, + the caller's other keys}
  tool_choice: {kind: auto|none|required|function|<type>, name, parallel_tool_calls, source}

Round-trip extensions of the OpenAI shape (README "Round trips"): no key is special here.
A content part's, a tool call's and a tool's keys beyond the ones OpenAI defines ride on
the middle form under their own name (a tool's given on the tool object or inside
`function`, agreeing when given on both), so a template can write them (`cache_control`,
`extra_content`); one no template writes is settled as the rule file says. Where a key
given on a whole message goes is the rule file's to say too (`messages.carry`, compiled
to a `Carry` table): it rides on the message's last part, or its last part of one kind.
The reader also takes `is_error` on a tool message and image parts in a tool message's
content. A tool call after the last user message is marked `current_turn: true`;
`position` is its index in its message. Keys appear on a part only when given.

`part_path(turn, part)` gives a part's location in the request. An optional
`report` key lets the writer say what a rule's template does with a part:
`optional` ({key: where}) names caller information that is dropped when the
template does not read it (`message` the same, for keys the message carried);
`derived` ({key: (where, how)}) names values computed from another form,
reported as rewritten when the template reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

from ..errors import TranslationError
from ..language.jsonsafe import JsonValueError, describe, loads, locate, text_encoder, where_in
from ..language.loader import did_you_mean
from ..language.paths import MISSING
from .format_rules import builtin_normal_form

# What a Chat Completions request may hold is the normal form's format file (formats/openai.yaml), compiled
# once: the names below are read from it (the reader's code reads each kind; the file says which exist).
NORMAL = builtin_normal_form()
ROLES = NORMAL.roles
# The message keys the reader itself consumes, per role (and the keys the rules' `carry` names).
READ_KEYS = NORMAL.read_keys

# The rules' `messages.carry`, per role: (message key, the part kind it rides on, None for any part).
Carry = Mapping[str, tuple[tuple[str, str | None], ...]]
NO_CARRY: Carry = MappingProxyType({})
# The middle-form kinds a part kind is read as: an image part is split by its URL (a data: URL is its bytes).
_MIDDLE_KINDS = {"image_url": ("image_base64", "image_url")}


TOOL_RESULT_KINDS = frozenset(m for k in NORMAL.listed_kinds("tool") for m in _MIDDLE_KINDS.get(k, (k,)))

# The caller's information in each part kind: (the middle-form keys any one of which carries it,
# its name in the input, where it sits in the input part). A part template that reads none of
# a field's keys would lose it, so the writer settles it as the rule file says (inbound.py).
PART_FIELDS: dict[str, tuple[tuple[frozenset[str], str, str], ...]] = {
    "text": ((frozenset({"text"}), "text", "text"),),
    "image_base64": ((frozenset({"data"}), "url", "image_url.url"),),  # its media type can be told from the bytes
    "image_url": ((frozenset({"url"}), "url", "image_url.url"),),
    "tool_call": (
        (frozenset({"id"}), "id", "id"),
        (frozenset({"name"}), "name", "function.name"),
        (frozenset({"arguments", "arguments_json"}), "arguments", "function.arguments"),
    ),
    "tool_result": ((frozenset({"tool_call_id"}), "tool_call_id", "tool_call_id"),),
}
# A part kind whose own parts' text is also one field of it: a tool result's `content` joins its text parts.
TEXT_OF_PARTS: dict[str, str] = {"tool_result": "content"}


def _fail(provider: str, path: str, message: str) -> TranslationError:
    return TranslationError(path, message, provider=provider)


def _bad_string(value: Any, path: str, provider: str) -> TranslationError:
    """The error for a value that should have been a non-empty string (built only on failure)."""
    if value is MISSING:
        return _fail(provider, path, "is required")
    if not isinstance(value, str):
        return _fail(provider, path, f"must be a string, got {type(value).__name__}")
    return _fail(provider, path, "must not be empty")


Hoisted = tuple[str, str, int, dict[str, Any]]

# The note for tool-call arguments given as an object where the rules send JSON text.
OBJECT_ARGUMENTS_SENT_AS_TEXT = "given as an object; sent as its JSON text"


IdMap = Callable[[str], str]


def read_messages(
    messages: Any,
    hoist: frozenset[str],
    provider: str,
    *,
    arguments_json: bool = True,
    tool_call_ids: IdMap | None = None,
    carry: Carry = NO_CARRY,
) -> tuple[list[dict[str, Any]], list[Hoisted]]:
    """Split the transcript into middle-form turns and hoisted (text, path, index, message) prompts.

    The happy path builds no path strings; they are made only for an error (or, by
    `part_path`, for a note). `arguments_json=False` skips serializing object-form
    arguments when no rule reads the JSON text. `tool_call_ids` maps a call id to the
    form the provider accepts (the rules' `tool_call_ids`); calls and their results
    carry the mapped id, reported as rewritten where it differs. `carry` places the
    message keys the rules name on the message's parts (see `place`).
    """
    if not isinstance(messages, list):
        raise _fail(provider, "messages", f"must be a list, got {type(messages).__name__}")
    turns: list[dict[str, Any]] = []
    hoisted: list[Hoisted] = []
    pending: dict[str, str] = {}  # tool call id -> name, of the assistant turn being answered
    answered: set[str] = set()
    seen_ids: dict[str, tuple[int, int]] = {}
    current = 0  # the first turn after the last user message
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise _fail(provider, f"messages[{i}]", f"must be an object, got {type(msg).__name__}")
        role = msg.get("role", MISSING)
        if type(role) is not str:
            message = "is required" if role is MISSING else f"must be a string, got {type(role).__name__}"
            raise _fail(provider, f"messages[{i}].role", message)
        if role in hoist:
            hoisted.append((_text_only(msg, i, provider), f"messages[{i}]", i, msg))
            continue
        if role == "user":
            parts = _user_parts(msg, i, provider)
            pending, answered, current = {}, set(), len(turns) + 1
        elif role == "assistant":
            pending = {}
            parts = _assistant_parts(msg, i, provider, seen_ids, arguments_json, pending, tool_call_ids)
            answered = set()
        elif role == "tool":
            parts = [_tool_result(msg, i, provider, pending, answered, tool_call_ids)]
        elif role in ROLES:  # a system/developer role this provider does not hoist
            parts = [{"kind": "text", "text": _text_only(msg, i, provider)}]
        else:
            hint = (
                " (the deprecated 'function' role: send tool messages)"
                if role == "function"
                else did_you_mean(str(role), ROLES)
            )
            raise _fail(provider, f"messages[{i}].role", f"unknown role {role!r}{hint}")
        placed = carry.get(role)
        if placed is not None and len(msg) > 2:  # more than role and content
            place(msg, parts, i, provider, placed)
        turns.append({"role": role, "parts": parts, "source": msg, "index": i})
    for turn in turns[current:]:
        for part in turn["parts"]:
            if part["kind"] == "tool_call":
                part["current_turn"] = True
    return turns, hoisted


def part_path(turn: dict[str, Any], part: dict[str, Any]) -> str:
    """Where a part sits in the request (computed on demand: errors and notes only).

    Constant time per part, so a message whose every part is noted stays linear: a tool
    call carries its position, and a content part's index comes from a table built once
    per message, the first time one of its parts needs a path.
    """
    base = f"messages[{turn['index']}]"
    kind = part["kind"]
    if kind == "tool_result":
        return base
    if kind == "tool_call":
        return f"{base}.tool_calls[{part['position']}]"
    source = part.get("source")
    content = turn["source"].get("content")
    if isinstance(content, list) and source is not None:
        positions = turn.get("positions")
        if positions is None:
            positions = turn["positions"] = {}
            for j, given in enumerate(content):
                positions.setdefault(id(given), j)  # the first of an object given twice, as a search would find
        return f"{base}.content[{positions[id(source)]}]"
    return f"{base}.content"


def _text_only(msg: dict[str, Any], i: int, provider: str) -> str:
    """Content that may only hold text: a string, or text parts concatenated."""
    content = msg.get("content", MISSING)
    if type(content) is str:
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            text = part.get("text") if isinstance(part, dict) and part.get("type") == "text" else None
            if type(text) is not str:
                path = f"messages[{i}].content[{j}]"
                if isinstance(part, dict) and part.get("type") == "text":
                    raise _bad_string(part.get("text", MISSING), f"{path}.text", provider)
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise _fail(provider, path, f"only text parts are allowed here, got {kind!r}")
            texts.append(text)
        return "".join(texts)
    if content is MISSING:
        raise _fail(provider, f"messages[{i}].content", "is required")
    raise _fail(
        provider,
        f"messages[{i}].content",
        f"must be a string or a list of text parts, got {type(content).__name__}",
    )


def _user_parts(msg: dict[str, Any], i: int, provider: str) -> list[dict[str, Any]]:
    content = msg.get("content", MISSING)
    if type(content) is str:
        parts = [{"kind": "text", "text": content}]
    elif isinstance(content, list):
        parts = [_part(part, i, j, provider) for j, part in enumerate(content)]
    else:
        parts = None
    if parts is not None:
        return parts
    if content is MISSING:
        raise _fail(provider, f"messages[{i}].content", "is required")
    raise _fail(
        provider, f"messages[{i}].content", f"must be a string or a list of parts, got {type(content).__name__}"
    )


def _part(part: Any, i: int, j: int, provider: str) -> dict[str, Any]:
    kind = part.get("type", MISSING) if isinstance(part, dict) else MISSING
    if kind == "text":
        text = part.get("text", MISSING)
        if type(text) is not str:
            raise _bad_string(text, f"messages[{i}].content[{j}].text", provider)
        out = {"kind": "text", "text": text, "source": part}
        if len(part) > 2:  # more than type and text
            _carry_extras(out, part, TEXT_PART_KEYS)
        return out
    path = f"messages[{i}].content[{j}]"
    if not isinstance(part, dict):
        raise _fail(provider, path, f"must be an object, got {type(part).__name__}")
    if not isinstance(kind, str):
        raise _fail(provider, f"{path}.type", "is required" if kind is MISSING else "must be a string")
    if kind == "image_url":
        image = part.get("image_url", MISSING)
        if not isinstance(image, dict):
            raise _fail(provider, f"{path}.image_url", "must be an object with a url")
        url = image.get("url", MISSING)
        if type(url) is not str or not url:
            raise _bad_string(url, f"{path}.image_url.url", provider)
        if url.startswith("data:"):
            media_type, data = _data_url(url, f"{path}.image_url.url", provider)
            out = {"kind": "image_base64", "media_type": media_type, "data": data, "source": part}
        elif url.startswith(("http://", "https://")):
            out = {"kind": "image_url", "url": url, "source": part}
        else:
            raise _fail(provider, f"{path}.image_url.url", "must be a data: URL or an http(s) URL")
        detail = image.get("detail")
        if detail is not None and detail != "auto":
            _carry(out, "detail", detail, "image_url.detail")
        if len(part) > 2:  # more than type and image_url
            _carry_extras(out, part, IMAGE_PART_KEYS)
        return out
    return {"kind": kind, "source": part}


# The keys of a content part or a tool call the reader reads itself; the caller's other keys ride on the
# middle-form part under their own name (a provider's round-trip keys: cache_control, extra_content, ...),
# unless the name is one of the middle form's own fields (MIDDLE_FIELDS), which such a key never replaces.
TEXT_PART_KEYS = NORMAL.part_keys("text")
IMAGE_PART_KEYS = NORMAL.part_keys("image_url")
TOOL_CALL_KEYS = NORMAL.list_keys("assistant", "tool_calls", "function")
MIDDLE_FIELDS = frozenset(
    {"kind", "text", "source", "report", "media_type", "data", "url", "detail", "parts", "content", "index"}
    | {"id", "name", "arguments", "arguments_json", "position", "current_turn", "tool_call_id", "is_error"}
)


def _carry_extras(out: dict[str, Any], given: dict[str, Any], read: frozenset[str]) -> None:
    """The caller's keys beyond what the reader reads, carried onto the part (settled if no template reads them)."""
    for key, value in given.items():
        if key not in read and value is not None and key not in MIDDLE_FIELDS:
            _carry(out, key, value, key)


def _carry(part: dict[str, Any], key: str, value: Any, where: str, *, message: bool = False) -> None:
    """Put optional caller information on a part; it is reported as dropped if the rule's template never reads it."""
    part[key] = value
    report = part.setdefault("report", {})
    report.setdefault("message" if message else "optional", {})[key] = where


def place(
    msg: dict[str, Any], parts: list[dict[str, Any]], i: int, provider: str, placed: tuple[tuple[str, str | None], ...]
) -> None:
    """Message keys the rules carry onto a part (`messages.carry`): each goes on the message's last part
    (of its kind), as if given there; given on that part too, it must agree. No such part: see `orphans`."""
    for key, kind in placed:
        value = msg.get(key)
        if value is None:
            continue
        last = next((p for p in reversed(parts) if kind is None or p["kind"] == kind), None)
        if last is None:
            continue
        if key in last and last[key] != value:
            raise _fail(provider, f"messages[{i}].{key}", f"differs from its last part's {key}; give one")
        _carry(last, key, value, key, message=True)


def system_parts(msg: dict[str, Any], i: int, provider: str, carry: Carry = NO_CARRY) -> list[dict[str, Any]]:
    """A hoisted system/developer message as text parts, with the keys `carry` places (its content is checked)."""
    content = msg.get("content")
    if isinstance(content, list):
        parts = [_part(part, i, j, provider) for j, part in enumerate(content)]
    else:
        parts = [{"kind": "text", "text": content}]
    place(msg, parts, i, provider, carry.get(msg["role"], ()))
    return parts


def _data_url(url: str, path: str, provider: str) -> tuple[str, str]:
    """`data:image/png;base64,AAAA` -> ("image/png", "AAAA")."""
    header, comma, data = url[5:].partition(",")
    media_type, _, encoding = header.partition(";")
    if not comma or encoding != "base64" or "/" not in media_type or not data:
        raise _fail(provider, path, "a data URL must look like data:<media type>;base64,<data>")
    return media_type, data


def _assistant_parts(
    msg: dict[str, Any],
    i: int,
    provider: str,
    seen_ids: dict[str, tuple[int, int]],
    arguments_json: bool,
    pending: dict[str, str],
    tool_call_ids: IdMap | None = None,
) -> list[dict[str, Any]]:
    """Text parts, then tool calls; `pending` learns each call's id -> name for the results that follow."""
    content = msg.get("content")
    parts: list[dict[str, Any]] = []
    if type(content) is str:
        if content:
            parts.append({"kind": "text", "text": content})
    elif isinstance(content, list):
        for j, part in enumerate(content):
            p = _part(part, i, j, provider)
            if p["kind"] != "text" or p["text"]:
                parts.append(p)
    elif content is not None:
        raise _fail(
            provider,
            f"messages[{i}].content",
            f"must be a string, a list of parts or null, got {type(content).__name__}",
        )
    calls = msg.get("tool_calls")
    if calls is None:
        return parts
    if not isinstance(calls, list):
        raise _fail(provider, f"messages[{i}].tool_calls", f"must be a list, got {type(calls).__name__}")
    for k, call in enumerate(calls):
        part = _tool_call(call, i, k, provider, arguments_json)
        call_id = part["id"]
        if call_id in seen_ids:
            first = seen_ids[call_id]
            raise _fail(
                provider,
                f"messages[{i}].tool_calls[{k}].id",
                f"tool call id {call_id!r} is already used at messages[{first[0]}].tool_calls[{first[1]}].id",
            )
        seen_ids[call_id] = (i, k)
        pending[call_id] = part["name"]
        part["position"] = k
        if tool_call_ids is not None:
            sent = tool_call_ids(call_id)
            if sent != call_id:
                _id_rewritten(part, "id", call_id, sent, provider)
        if not call.keys() <= TOOL_CALL_KEYS:  # more than id, type and function (`type` may be left out)
            _carry_extras(part, call, TOOL_CALL_KEYS)
        parts.append(part)
    return parts


def _id_rewritten(part: dict[str, Any], key: str, given: str, sent: str, provider: str) -> None:
    """An id the provider does not accept as given: the part sends `sent`, and says so where it is written."""
    part[key] = sent
    part.setdefault("report", {}).setdefault("derived", {})[key] = (key, rewritten_id(given, sent, provider))


def rewritten_id(given: str, sent: str, provider: str) -> str:
    """The rewritten note of a tool-call id sent as another."""
    return f"{given!r} is not a tool-call id {provider} accepts; sent as {sent!r} (results restore it)"


def orphans(turn: dict[str, Any], carry: Carry) -> list[tuple[str, str]]:
    """Message keys the rules carry onto a part, given where no part can take them (each reported as dropped)."""
    source, parts = turn["source"], turn["parts"]
    found = []
    for key, kind in carry.get(turn["role"], ()):
        if source.get(key) is not None and not any(kind is None or p["kind"] == kind for p in parts):
            found.append((key, orphaned(kind)))
    return found


def orphaned(kind: str | None) -> str:
    """Why a carried message key is dropped: the message has no part (of its kind) to carry it."""
    return f"no {kind + ' ' if kind else ''}part in this message to carry it"


# Object arguments as the JSON text `json.dumps(..., ensure_ascii=False)` writes, by a C encoder built once
# (`JSONEncoder.encode` builds one per call, which costs about as much as encoding a call's arguments).
_ARGUMENTS_TEXT = text_encoder(ensure_ascii=False)


def _tool_call(call: Any, i: int, k: int, provider: str, want_json: bool) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    call_id = call.get("id") if function is not None else None
    name = function.get("name") if isinstance(function, dict) else None
    if (
        type(call_id) is not str
        or not call_id
        or type(name) is not str
        or not name
        or call.get("type", "function") != "function"
    ):
        _tool_call_error(call, f"messages[{i}].tool_calls[{k}]", provider)
    assert isinstance(function, dict)
    raw = function.get("arguments", MISSING)
    if type(raw) is str:
        arguments = read_arguments(raw, i, k, provider)
        part = {"kind": "tool_call", "id": call_id, "name": name, "source": call, "arguments": arguments}
        part["arguments_json"] = raw
        if not raw or raw.isspace():
            part["report"] = {"derived": {"arguments": ("function.arguments", "given as empty text; sent as {}")}}
    elif isinstance(raw, dict):
        part = {"kind": "tool_call", "id": call_id, "name": name, "source": call, "arguments": raw}
        if want_json:
            try:
                part["arguments_json"] = _ARGUMENTS_TEXT(raw)
            except (TypeError, ValueError):
                where, what = locate(raw) or ("", "is not representable as JSON")
                path = where_in(f"messages[{i}].tool_calls[{k}].function.arguments", where)
                raise _fail(provider, path, what) from None
            part["report"] = {"derived": {"arguments_json": ("function.arguments", OBJECT_ARGUMENTS_SENT_AS_TEXT)}}
    else:
        path = f"messages[{i}].tool_calls[{k}].function.arguments"
        if raw is MISSING:
            raise _fail(provider, path, "is required")
        raise _fail(provider, path, f"must be a JSON object or its JSON text, got {type(raw).__name__}")
    return part


def _tool_call_error(call: Any, path: str, provider: str) -> NoReturn:
    """Say precisely what is wrong with a tool call the fast check refused."""
    if not isinstance(call, dict):
        raise _fail(provider, path, f"must be an object, got {type(call).__name__}")
    call_type = call.get("type", "function")
    if call_type != "function":
        raise _fail(provider, f"{path}.type", f"only function tool calls can be translated, got {call_type!r}")
    call_id = call.get("id", MISSING)
    if type(call_id) is not str or not call_id:
        raise _bad_string(call_id, f"{path}.id", provider)
    function = call.get("function", MISSING)
    if not isinstance(function, dict):
        raise _fail(provider, f"{path}.function", "is required" if function is MISSING else "must be an object")
    raise _bad_string(function.get("name", MISSING), f"{path}.function.name", provider)


def read_arguments(raw: str, i: int, k: int, provider: str) -> dict[str, Any]:
    """Arguments given as JSON text, parsed; they must be an object. Empty text means {}."""
    if not raw or raw.isspace():
        return {}
    try:
        parsed = loads(raw)
    except JsonValueError as exc:  # JSON that cannot be sent: the path goes on into the text
        path = f"messages[{i}].tool_calls[{k}].function.arguments"
        raise _fail(provider, where_in(path, exc.where), f"its JSON text {exc.message}") from None
    except ValueError as exc:
        path = f"messages[{i}].tool_calls[{k}].function.arguments"
        raise _fail(provider, path, describe(exc)) from None
    if not isinstance(parsed, dict):
        path = f"messages[{i}].tool_calls[{k}].function.arguments"
        raise _fail(provider, path, f"must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _tool_result(
    msg: dict[str, Any],
    i: int,
    provider: str,
    pending: dict[str, str],
    answered: set[str],
    tool_call_ids: IdMap | None = None,
) -> dict[str, Any]:
    call_id = msg.get("tool_call_id", MISSING)
    name = pending.get(call_id) if type(call_id) is str else None
    if name is None or call_id in answered:
        path = f"messages[{i}].tool_call_id"
        if type(call_id) is not str or not call_id:
            raise _bad_string(call_id, path, provider)
        if call_id in answered:
            raise _fail(provider, path, f"tool call {call_id!r} is already answered")
        raise _fail(provider, path, f"{call_id!r} answers no tool call of the preceding assistant turn")
    answered.add(call_id)
    content = msg.get("content")
    if type(content) is str:  # the common case, inline: the text and its one part
        text, parts = content, [{"kind": "text", "text": content}]
    else:
        text, parts = _tool_content(msg, i, provider)
    result = {
        "kind": "tool_result",
        "tool_call_id": call_id,
        "name": name,
        "content": text,
        "parts": parts,
        "index": i,
        "source": msg,
    }
    if len(msg) > 3:  # more than role, content and tool_call_id
        is_error = msg.get("is_error")
        if is_error is not None:
            if type(is_error) is not bool:
                message = f"must be true or false, got {type(is_error).__name__}"
                raise _fail(provider, f"messages[{i}].is_error", message)
            _carry(result, "is_error", is_error, "is_error")
    if tool_call_ids is not None:
        sent = tool_call_ids(call_id)
        if sent != call_id:
            _id_rewritten(result, "tool_call_id", call_id, sent, provider)
    return result


def _tool_content(msg: dict[str, Any], i: int, provider: str) -> tuple[str, list[dict[str, Any]]]:
    """A tool message's content given as parts (`_tool_result` reads a string itself): its text (text parts
    joined) and its parts (text and images)."""
    content = msg.get("content", MISSING)
    if not isinstance(content, list):
        return _text_only(msg, i, provider), []  # raises the precise error
    parts, texts = [], []
    for j, given in enumerate(content):
        part = _part(given, i, j, provider)
        if part["kind"] == "text":
            texts.append(part["text"])
        elif part["kind"] not in TOOL_RESULT_KINDS:
            message = f"only text and image parts are allowed here, got {part['kind']!r}"
            raise _fail(provider, f"messages[{i}].content[{j}]", message)
        parts.append(part)
    return "".join(texts), parts


TOOL_KEYS = NORMAL.tool_keys  # a tool object's own keys the reader reads
TOOL_TYPES = NORMAL.tool_types()  # the tool types it translates
TOOL_CHOICES = NORMAL.tool_choices  # tool_choice as a string
TOOL_FIELDS = frozenset({"name", "description", "parameters", "strict", "source", "function", "path"})  # middle form


def read_tools(tools: Any, provider: str) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise _fail(provider, "tools", f"must be a list, got {type(tools).__name__}")
    out = []
    names: dict[str, int] = {}
    for i, tool in enumerate(tools):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _fail(provider, path, f"must be an object, got {type(tool).__name__}")
        if tool.get("type", MISSING) not in TOOL_TYPES:
            raise _fail(provider, f"{path}.type", "only function tools can be translated")
        function = tool.get("function", MISSING)
        if not isinstance(function, dict):
            raise _fail(provider, f"{path}.function", "is required" if function is MISSING else "must be an object")
        fpath = f"{path}.function"
        name = function.get("name", MISSING)
        if type(name) is not str or not name:
            raise _bad_string(name, f"{fpath}.name", provider)
        if name in names:
            raise _fail(provider, f"{fpath}.name", f"tool {name!r} is already declared at tools[{names[name]}]")
        names[name] = i
        description = function.get("description", MISSING)
        if description is not MISSING and not isinstance(description, str):
            raise _fail(provider, f"{fpath}.description", "must be a string")
        parameters = function.get("parameters", MISSING)
        if parameters is not MISSING and not isinstance(parameters, dict):
            raise _fail(provider, f"{fpath}.parameters", "must be a JSON Schema object")
        read = {"name": name, "description": description, "parameters": parameters}
        read["strict"] = function.get("strict", MISSING)
        for key, value in function.items():  # the caller's other keys (cache_control, ...) under their own name
            if key not in read and key not in TOOL_FIELDS and value is not None:
                read[key] = value
        for key, value in tool.items():  # a key given on the tool object counts as given inside function
            if key not in TOOL_KEYS and key not in TOOL_FIELDS and value is not None:
                if read.get(key, value) != value:
                    raise _fail(provider, f"{path}.{key}", f"differs from function.{key}; give one")
                read[key] = value
        out.append({**read, "source": tool, "function": function, "path": fpath})
    return out


def read_tool_choice(choice: Any, parallel: Any, provider: str) -> dict[str, Any]:
    if choice is MISSING:
        return {"kind": "auto", "name": MISSING, "parallel_tool_calls": parallel, "source": MISSING}
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise _fail(provider, "tool_choice", f"unknown value {choice!r}{did_you_mean(choice, TOOL_CHOICES)}")
        return {"kind": choice, "name": MISSING, "parallel_tool_calls": parallel, "source": choice}
    if not isinstance(choice, dict):
        raise _fail(provider, "tool_choice", f"must be a string or an object, got {type(choice).__name__}")
    kind = choice.get("type", MISSING)
    if not isinstance(kind, str):
        raise _fail(provider, "tool_choice.type", "is required")
    name: Any = MISSING
    if kind == "function":
        function = choice.get("function", MISSING)
        if not isinstance(function, dict):
            raise _fail(provider, "tool_choice.function", "must be an object with a name")
        name = function.get("name", MISSING)
        if type(name) is not str or not name:
            raise _bad_string(name, "tool_choice.function.name", provider)
    return {"kind": kind, "name": name, "parallel_tool_calls": parallel, "source": choice}
