"""Read an OpenAI Chat Completions request into the middle form every rule file writes from.

OpenAI is the hub, so knowing its shape is the engine's job, not a provider's.
Reading validates everything and raises TranslationError with the path of the
culprit; nothing here knows any other provider. The middle form is plain dicts
(cheap to build, and usable directly as template scopes):

  message: {role, parts: [part...], source, path, index}
  part:    {kind: text, text}
           {kind: image_base64, media_type, data, source}
           {kind: image_url, url, source}
           {kind: tool_call, id, name, arguments (object), arguments_json (str), source}
           {kind: tool_result, tool_call_id, name, content (str), source}
           {kind: <other OpenAI part type>, source}   (written only if a rule knows it)
  tool:    {name, description, parameters, strict, source, path}
  tool_choice: {kind: auto|none|required|function|<type>, name, parallel_tool_calls, source}

Every part also carries `path`, its location in the request. Two optional keys let
the writer report what a rule's template does with a part: `optional` ({key: where})
names caller information that is dropped when the template does not read it;
`derived` ({key: (where, how)}) names values computed from another form, reported
as rewritten when the template reads them.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import TranslationError
from .loader import did_you_mean
from .paths import MISSING

ROLES = ("system", "developer", "user", "assistant", "tool")

# The message keys the reader itself consumes, per role.
READ_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content"}),
    "developer": frozenset({"role", "content"}),
    "user": frozenset({"role", "content"}),
    "assistant": frozenset({"role", "content", "tool_calls"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
}


def _fail(provider: str, path: str, message: str) -> TranslationError:
    return TranslationError(path, message, provider=provider)


Hoisted = tuple[str, str, int, dict[str, Any]]


def read_messages(messages: Any, hoist: frozenset[str], provider: str) -> tuple[list[dict[str, Any]], list[Hoisted]]:
    """Split the transcript into middle-form turns and hoisted (text, path, index, message) prompts."""
    if not isinstance(messages, list):
        raise _fail(provider, "messages", f"must be a list, got {type(messages).__name__}")
    turns: list[dict[str, Any]] = []
    hoisted: list[Hoisted] = []
    pending: dict[str, str] = {}  # tool call id -> name, of the assistant turn being answered
    answered: set[str] = set()
    seen_ids: dict[str, str] = {}
    for i, msg in enumerate(messages):
        path = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise _fail(provider, path, f"must be an object, got {type(msg).__name__}")
        role = msg.get("role", MISSING)
        if role is MISSING:
            raise _fail(provider, f"{path}.role", "is required")
        if role not in ROLES:
            hint = (
                " (the deprecated 'function' role: send tool messages)"
                if role == "function"
                else did_you_mean(str(role), ROLES)
            )
            raise _fail(provider, f"{path}.role", f"unknown role {role!r}{hint}")
        if role in hoist:
            hoisted.append((_text_only(msg, path, provider), path, i, msg))
            continue
        if role == "user":
            parts = _user_parts(msg, path, provider)
            pending, answered = {}, set()
        elif role == "assistant":
            parts = _assistant_parts(msg, path, provider, seen_ids)
            pending = {p["id"]: p["name"] for p in parts if p["kind"] == "tool_call"}
            answered = set()
        elif role == "tool":
            parts = [_tool_result(msg, path, provider, pending, answered)]
        else:  # a system/developer role this provider does not hoist
            parts = [{"kind": "text", "text": _text_only(msg, path, provider), "path": f"{path}.content"}]
        turns.append({"role": role, "parts": parts, "source": msg, "path": path, "index": i})
    return turns, hoisted


def _text_only(msg: dict[str, Any], path: str, provider: str) -> str:
    """Content that may only hold text: a string, or text parts concatenated."""
    content = msg.get("content", MISSING)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            part_path = f"{path}.content[{j}]"
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise _fail(provider, part_path, f"only text parts are allowed here, got {kind!r}")
            texts.append(_string(part, "text", part_path, provider))
        return "".join(texts)
    if content is MISSING:
        raise _fail(provider, f"{path}.content", "is required")
    raise _fail(provider, f"{path}.content", f"must be a string or a list of text parts, got {type(content).__name__}")


def _string(obj: dict[str, Any], key: str, path: str, provider: str, *, nonempty: bool = False) -> str:
    value = obj.get(key, MISSING)
    if value is MISSING:
        raise _fail(provider, f"{path}.{key}", "is required")
    if not isinstance(value, str):
        raise _fail(provider, f"{path}.{key}", f"must be a string, got {type(value).__name__}")
    if nonempty and not value:
        raise _fail(provider, f"{path}.{key}", "must not be empty")
    return value


def _user_parts(msg: dict[str, Any], path: str, provider: str) -> list[dict[str, Any]]:
    content = msg.get("content", MISSING)
    if isinstance(content, str):
        return [{"kind": "text", "text": content, "path": f"{path}.content"}]
    if isinstance(content, list):
        return [_part(part, f"{path}.content[{j}]", provider) for j, part in enumerate(content)]
    if content is MISSING:
        raise _fail(provider, f"{path}.content", "is required")
    raise _fail(provider, f"{path}.content", f"must be a string or a list of parts, got {type(content).__name__}")


def _part(part: Any, path: str, provider: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise _fail(provider, path, f"must be an object, got {type(part).__name__}")
    kind = part.get("type", MISSING)
    if not isinstance(kind, str):
        raise _fail(provider, f"{path}.type", "is required" if kind is MISSING else "must be a string")
    if kind == "text":
        return {"kind": "text", "text": _string(part, "text", path, provider), "source": part, "path": path}
    if kind == "image_url":
        image = part.get("image_url", MISSING)
        if not isinstance(image, dict):
            raise _fail(provider, f"{path}.image_url", "must be an object with a url")
        url = _string(image, "url", f"{path}.image_url", provider, nonempty=True)
        if url.startswith("data:"):
            media_type, data = _data_url(url, f"{path}.image_url.url", provider)
            out = {"kind": "image_base64", "media_type": media_type, "data": data, "source": part, "path": path}
        elif url.startswith(("http://", "https://")):
            out = {"kind": "image_url", "url": url, "source": part, "path": path}
        else:
            raise _fail(provider, f"{path}.image_url.url", "must be a data: URL or an http(s) URL")
        detail = image.get("detail")
        if detail is not None and detail != "auto":
            out["detail"] = detail
            out["optional"] = {"detail": "image_url.detail"}
        return out
    return {"kind": kind, "source": part, "path": path}


def _data_url(url: str, path: str, provider: str) -> tuple[str, str]:
    """`data:image/png;base64,AAAA` -> ("image/png", "AAAA")."""
    header, comma, data = url[5:].partition(",")
    media_type, _, encoding = header.partition(";")
    if not comma or encoding != "base64" or "/" not in media_type or not data:
        raise _fail(provider, path, "a data URL must look like data:<media type>;base64,<data>")
    return media_type, data


def _assistant_parts(msg: dict[str, Any], path: str, provider: str, seen_ids: dict[str, str]) -> list[dict[str, Any]]:
    content = msg.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        if content:
            parts.append({"kind": "text", "text": content, "path": f"{path}.content"})
    elif isinstance(content, list):
        for j, part in enumerate(content):
            p = _part(part, f"{path}.content[{j}]", provider)
            if p["kind"] != "text" or p["text"]:
                parts.append(p)
    elif content is not None:
        raise _fail(
            provider, f"{path}.content", f"must be a string, a list of parts or null, got {type(content).__name__}"
        )
    calls = msg.get("tool_calls")
    if calls is None:
        return parts
    if not isinstance(calls, list):
        raise _fail(provider, f"{path}.tool_calls", f"must be a list, got {type(calls).__name__}")
    for k, call in enumerate(calls):
        call_path = f"{path}.tool_calls[{k}]"
        part = _tool_call(call, call_path, provider)
        if part["id"] in seen_ids:
            raise _fail(
                provider, f"{call_path}.id", f"tool call id {part['id']!r} is already used at {seen_ids[part['id']]}"
            )
        seen_ids[part["id"]] = f"{call_path}.id"
        parts.append(part)
    return parts


def _tool_call(call: Any, path: str, provider: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise _fail(provider, path, f"must be an object, got {type(call).__name__}")
    call_type = call.get("type", "function")
    if call_type != "function":
        raise _fail(provider, f"{path}.type", f"only function tool calls can be translated, got {call_type!r}")
    call_id = _string(call, "id", path, provider, nonempty=True)
    function = call.get("function", MISSING)
    if not isinstance(function, dict):
        raise _fail(provider, f"{path}.function", "is required" if function is MISSING else "must be an object")
    name = _string(function, "name", f"{path}.function", provider, nonempty=True)
    raw = function.get("arguments", MISSING)
    arguments, arguments_json = read_arguments(raw, f"{path}.function.arguments", provider)
    part = {
        "kind": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "arguments_json": arguments_json,
        "source": call,
        "path": path,
    }
    if isinstance(raw, dict):
        part["derived"] = {"arguments_json": ("function.arguments", "given as an object; sent as its JSON text")}
    elif not arguments:
        part["derived"] = {"arguments": ("function.arguments", "given as empty text; sent as {}")}
    return part


def read_arguments(raw: Any, path: str, provider: str) -> tuple[dict[str, Any], str]:
    """Arguments as (object, JSON text). A string is parsed and kept byte for byte; "" is {}."""
    if isinstance(raw, str):
        if raw.strip() == "":
            return {}, raw
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail(provider, path, f"is not valid JSON ({exc.msg} at character {exc.pos})") from None
        if not isinstance(parsed, dict):
            raise _fail(provider, path, f"must be a JSON object, got {type(parsed).__name__}")
        return parsed, raw
    if isinstance(raw, dict):
        return raw, json.dumps(raw, ensure_ascii=False)
    if raw is MISSING:
        raise _fail(provider, path, "is required")
    raise _fail(provider, path, f"must be a JSON object or its JSON text, got {type(raw).__name__}")


def _tool_result(
    msg: dict[str, Any], path: str, provider: str, pending: dict[str, str], answered: set[str]
) -> dict[str, Any]:
    call_id = _string(msg, "tool_call_id", path, provider, nonempty=True)
    if call_id not in pending:
        raise _fail(
            provider, f"{path}.tool_call_id", f"{call_id!r} answers no tool call of the preceding assistant turn"
        )
    if call_id in answered:
        raise _fail(provider, f"{path}.tool_call_id", f"tool call {call_id!r} is already answered")
    answered.add(call_id)
    return {
        "kind": "tool_result",
        "tool_call_id": call_id,
        "name": pending[call_id],
        "content": _text_only(msg, path, provider),
        "source": msg,
        "path": path,
    }


def read_tools(tools: Any, provider: str) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise _fail(provider, "tools", f"must be a list, got {type(tools).__name__}")
    out = []
    names: dict[str, int] = {}
    for i, tool in enumerate(tools):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _fail(provider, path, f"must be an object, got {type(tool).__name__}")
        if tool.get("type", MISSING) != "function":
            raise _fail(provider, f"{path}.type", "only function tools can be translated")
        function = tool.get("function", MISSING)
        if not isinstance(function, dict):
            raise _fail(provider, f"{path}.function", "is required" if function is MISSING else "must be an object")
        fpath = f"{path}.function"
        name = _string(function, "name", fpath, provider, nonempty=True)
        if name in names:
            raise _fail(provider, f"{fpath}.name", f"tool {name!r} is already declared at tools[{names[name]}]")
        names[name] = i
        description = function.get("description", MISSING)
        if description is not MISSING and not isinstance(description, str):
            raise _fail(provider, f"{fpath}.description", "must be a string")
        parameters = function.get("parameters", MISSING)
        if parameters is not MISSING and not isinstance(parameters, dict):
            raise _fail(provider, f"{fpath}.parameters", "must be a JSON Schema object")
        out.append(
            {
                "name": name,
                "description": description,
                "parameters": parameters,
                "strict": function.get("strict", MISSING),
                "source": tool,
                "function": function,
                "path": fpath,
            }
        )
    return out


def read_tool_choice(choice: Any, parallel: Any, provider: str) -> dict[str, Any]:
    if choice is MISSING:
        return {"kind": "auto", "name": MISSING, "parallel_tool_calls": parallel, "source": MISSING}
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise _fail(
                provider, "tool_choice", f"unknown value {choice!r}{did_you_mean(choice, ['auto', 'none', 'required'])}"
            )
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
        name = _string(function, "name", "tool_choice.function", provider, nonempty=True)
    return {"kind": kind, "name": name, "parallel_tool_calls": parallel, "source": choice}
