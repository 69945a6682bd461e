"""Toolkits: tools a caller declares to a provider. translate() declares them; nothing here runs them.

`define_tool(fn)` takes the name from the function, the description from its
docstring and, unless given, infers a JSON Schema for its parameters from the
type hints (str, int, float, bool, list[X], dict, Optional[X], Literal[...],
defaults). The function is kept only so a caller that executes tools itself can
find it; toolnexus never calls it.

`create_toolkit(mcp_config=...)` also declares the tools of MCP servers (the `mcp`
extra): it lists them (tools/list) and never calls one. `await tk.call(name, args)`
is there for a caller that runs tools itself; translate never uses it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, Note, ToolkitError
from ..language.jsonsafe import loads
from ..translate.rulebook import RulesArg, load_rules
from .mcp_config import read_config
from .mcp_tools import ToolResult, declare, tool_result

if typing.TYPE_CHECKING:
    from .mcp_session import McpSession

logger = logging.getLogger("toolnexus")

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True)
class Tool:
    """One declared tool: OpenAI function fields, plus the caller's function (never called here).

    An MCP tool has no function; `server` names its MCP server and `original_name` is
    its name there (the declared `name` follows the rule in mcp_tools).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    server: str = ""
    original_name: str = ""

    def to_openai(self) -> dict[str, Any]:
        function: dict[str, Any] = {"name": self.name, "parameters": self.input_schema}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


def define_tool(
    fn: Callable[..., Any],
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
) -> Tool:
    """Declare `fn` as a tool; the schema is inferred from its type hints unless given."""
    tool_name = name or getattr(fn, "__name__", "")
    if not tool_name or tool_name == "<lambda>":
        raise ConfigError("a tool needs a name: pass name= for a lambda or a callable object")
    doc = description if description is not None else inspect.getdoc(fn) or ""
    schema = input_schema if input_schema is not None else infer_schema(fn)
    return Tool(name=tool_name, description=doc, input_schema=schema, fn=fn)


def infer_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """A JSON Schema object for `fn`'s parameters, from its annotations and defaults."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # unresolvable forward references and the like
        raise ConfigError(
            f"tool {getattr(fn, '__name__', fn)!r}: cannot read its type hints ({exc}); pass input_schema="
        ) from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"tool {fn.__name__}: *args/**kwargs cannot be declared; pass input_schema=")
        hint = hints.get(param.name, Any)
        schema, optional = _schema_for(hint, f"{fn.__name__}({param.name})")
        if param.default is not param.empty:
            schema = {**schema, "default": param.default}
        elif not optional:
            required.append(param.name)
        properties[param.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def _schema_for(hint: Any, where: str) -> tuple[dict[str, Any], bool]:
    """(schema, is Optional) for one annotation."""
    if hint is Any:
        return {}, False
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}, False
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return _schema_for(rest[0], where)[0], True
        return {"anyOf": [_schema_for(a, where)[0] for a in args]}, type(None) in args
    if origin is typing.Literal:
        kinds = {_SCALARS.get(type(a)) for a in args}
        schema: dict[str, Any] = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), **schema}
        return schema, False
    if hint is list or origin is list:
        return ({"type": "array", "items": _schema_for(args[0], where)[0]} if args else {"type": "array"}), False
    if hint is dict or origin is dict:
        return {"type": "object"}, False
    raise ConfigError(f"tool {where}: cannot infer a JSON Schema for {hint!r}; pass input_schema=")


class Toolkit:
    """An ordered set of declared tools. Declared by translate(toolkit=...), never executed by it.

    A toolkit made with `mcp_config` also holds one session per MCP server until `close()`;
    `notes` lists the tool names it had to rewrite, `failures` the servers skipped under
    strict=False.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._sessions: dict[str, McpSession] = {}
        self.notes: list[Note] = []
        self.failures: dict[str, ToolkitError] = {}
        self._closed = False

    def __repr__(self) -> str:
        servers = f", mcp servers={list(self._sessions)}" if self._sessions else ""
        return f"Toolkit(tools={list(self._tools)}{servers})"

    def register(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ConfigError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def to_openai(self) -> list[dict[str, Any]]:
        """The declarations as OpenAI `tools`."""
        return [tool.to_openai() for tool in self._tools.values()]

    def to_provider(self, provider: str, *, rules: RulesArg = None) -> list[Any]:
        """The declarations as `provider` wants them, through the same rules translate uses."""
        return load_rules(rules).get(provider).inbound.write_tools(self.to_openai())

    def to_anthropic(self, *, rules: RulesArg = None) -> list[Any]:
        return self.to_provider("anthropic", rules=rules)

    def to_gemini(self, *, rules: RulesArg = None) -> list[Any]:
        return self.to_provider("gemini", rules=rules)

    async def call(self, name: str, arguments: Any = None, *, timeout: float | None = None) -> ToolResult:
        """Run MCP tool `name` (its declared name) with `arguments` (an object, or its JSON text): the caller's
        choice, never translate's. Returns OpenAI tool-message content (see ToolResult); a protocol failure,
        a dead server or a closed toolkit raises ToolkitError."""
        if self._closed:
            raise ToolkitError(f"cannot call {name!r}: the toolkit is closed", stage="tools/call")
        tool = self._tools.get(name)
        session = self._sessions.get(tool.server) if tool is not None else None
        if tool is None or session is None:
            what = "a native tool: call its function yourself" if tool is not None else "not a tool of this toolkit"
            raise ToolkitError(f"{name!r} is {what}", stage="tools/call")
        raw = await session.call(tool.original_name, _arguments(arguments, name, tool.server), timeout)
        return tool_result(raw)

    async def close(self) -> None:
        """End every MCP session (and its server process) and forget the tools. Safe from any task, twice."""
        sessions, self._sessions = list(self._sessions.values()), {}
        self._tools.clear()
        self._closed = True
        await asyncio.gather(*(s.close() for s in sessions))

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _arguments(arguments: Any, name: str, server: str) -> dict[str, Any]:
    """A call's arguments as an object: JSON text is parsed (empty text is {}), anything else refused."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = loads(arguments)
        except ValueError as exc:
            raise ToolkitError(f"arguments of {name!r} are not JSON: {exc}", server=server, stage="tools/call",
                               path="arguments") from exc  # fmt: skip
    if not isinstance(arguments, dict):
        raise ToolkitError(f"arguments of {name!r} must be an object, got {type(arguments).__name__}",
                           server=server, stage="tools/call", path="arguments")  # fmt: skip
    return arguments


async def create_toolkit(
    *, mcp_config: Any = None, strict: bool = True, timeout: float = 30.0, environ: Mapping[str, str] | None = None
) -> Toolkit:
    """A new toolkit; with `mcp_config` (a mapping or a JSON file, see mcp_config.py), declaring MCP servers' tools.

    Every server starts at once; each has `timeout` seconds to start, initialize and list its
    tools. A server that fails raises ToolkitError (after the others are closed), unless
    strict=False: then it is logged, kept in `tk.failures` and skipped. `${VAR}` in the config
    reads `environ` (default: the process environment): pass only the variables it may use.
    """
    toolkit = Toolkit()
    if mcp_config is None:
        return toolkit
    specs = read_config(mcp_config)
    try:
        from .mcp_session import McpSession
    except ImportError as exc:
        raise ToolkitError(f"MCP servers need the mcp package: pip install 'toolnexus[mcp]' ({exc})") from exc
    variables = dict(os.environ if environ is None else environ)
    sessions = {spec.name: McpSession(spec, timeout=timeout, environ=variables) for spec in specs}
    toolkit._sessions = dict(sessions)
    try:
        for session in sessions.values():
            session.start()
        await asyncio.gather(*(s.loaded() for s in sessions.values()), return_exceptions=True)
        failures = {name: s.error for name, s in sessions.items() if s.error is not None}
        if failures and strict:
            first, *rest = failures.values()
            also = f" (also failed: {', '.join(e.server for e in rest)})" if rest else ""
            raise ToolkitError(first.message + also, server=first.server, stage=first.stage, path=first.path,
                               stderr_tail=first.stderr_tail) from first  # fmt: skip
        for name, error in failures.items():
            logger.warning("MCP server %r skipped: %s", name, error)
            await toolkit._sessions.pop(name).close()
        toolkit.failures = failures
        declared, toolkit.notes = declare({name: s.tools for name, s in toolkit._sessions.items()})
        for item in declared:
            toolkit.register(Tool(item.name, item.description, item.input_schema, server=item.server,
                                  original_name=item.original_name))  # fmt: skip
    except BaseException:
        await toolkit.close()
        raise
    return toolkit
