"""Toolkits: tools a caller declares to a provider. translate() declares them; nothing here runs them.

`define_tool(fn)` takes the name from the function, the description from its
docstring and, unless given, infers a JSON Schema for its parameters from the
type hints (str, int, float, bool, list[X], dict, Optional[X], Literal[...],
defaults). The function is kept only so a caller that executes tools itself can
find it; toolnexus never calls it.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError
from .rulebook import RulesArg, load_rules

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True)
class Tool:
    """One declared tool: OpenAI function fields, plus the caller's function (never called here)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

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
    """An ordered set of declared tools. Declared by translate(toolkit=...), never executed by it."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

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

    async def close(self) -> None:
        """Release what the toolkit holds (nothing for native tools; MCP sessions later)."""
        self._tools.clear()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def create_toolkit(*, mcp_config: Any = None) -> Toolkit:
    """A new, empty toolkit. `mcp_config` (tools from MCP servers) is not built yet."""
    if mcp_config is not None:
        raise ConfigError("toolkits from MCP servers are not supported yet")
    return Toolkit()
