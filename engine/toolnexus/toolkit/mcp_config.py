"""mcp_config: which MCP servers a toolkit reads tools from, in the Claude-desktop style.

    {"mcpServers": {                                    # or "servers" (VS Code) or "mcp" (OpenCode)
        "files":  {"command": "python", "args": ["-m", "srv"], "env": {"X": "1"}, "cwd": "..."},
        "search": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    }}

`command` (a string with `args`, or a list) means stdio; `url` means streamable HTTP; `type`
may say so explicitly. `enabled: false` (or `disabled: true`) skips a server. `${VAR}` and
`${VAR:-default}` expand from the environment in header values and env values (where
credentials go) when the server starts; the expanded values are kept out of every repr and
error. Nothing else expands: the SDK logs the URL at debug level, so no secret belongs there.
Any variable may be named: a config is trusted like code (it names commands to run), and
`create_toolkit(environ=...)` is how a caller limits what it can read.
This module only reads the config; it imports nothing from the MCP SDK.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ToolkitError
from ..language.jsonsafe import loads
from ..language.loader import did_you_mean
from ..redact import header_problem, scrub

TOP_LEVEL_KEYS = ("mcpServers", "servers", "mcp")
SERVER_KEYS = ("type", "command", "args", "env", "environment", "cwd", "url", "headers", "enabled", "disabled")
STDIO_TYPES = frozenset({"stdio", "local"})
HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp", "remote"})
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
MIN_SECRET_LEN = 6  # a default written in the config is redacted from error text from this length on

Transport = Literal["stdio", "http"]


@dataclass(frozen=True)
class ServerSpec:
    """One server entry as written (nothing expanded yet); `path` locates it in mcp_config."""

    name: str
    path: str
    transport: Transport
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def resolve(self, environ: Mapping[str, str]) -> ResolvedServer:
        """Expand ${VAR} everywhere it may stand; an unset variable without a default is an error."""
        expander = _Expander(self, environ)
        env = {k: expander(v, f"{self.path}.env.{k}") for k, v in self.env.items()}
        headers = {k: expander(v, f"{self.path}.headers.{k}") for k, v in self.headers.items()}
        for name, value in headers.items():  # refused here, or the HTTP library quotes the value in its error
            problem = header_problem(name, value)
            if problem is not None:
                raise ToolkitError(problem + " (after ${VAR} expansion)", server=self.name,
                                   path=f"{self.path}.headers.{name}")  # fmt: skip
        return ResolvedServer(spec=self, env=env, headers=headers, secrets=frozenset(expander.secrets))


@dataclass(frozen=True)
class ResolvedServer:
    """A server entry with its variables expanded. Its repr shows no value that came from the environment."""

    spec: ServerSpec
    env: Mapping[str, str] = field(repr=False)
    headers: Mapping[str, str] = field(repr=False)
    secrets: frozenset[str] = field(repr=False)

    def redact(self, text: str) -> str:
        """`text` with every secret (see _Expander) replaced by ***, also where it is quoted escaped."""
        return scrub(text, self.secrets)


class _Expander:
    """Expands ${VAR}; keeps as secrets every value read from the environment, whatever its length (a short
    one also masks its other occurrences in error text), and defaults of MIN_SECRET_LEN or more characters."""

    def __init__(self, spec: ServerSpec, environ: Mapping[str, str]) -> None:
        self.spec = spec
        self.environ = environ
        self.secrets: set[str] = set()

    def __call__(self, text: str, path: str) -> str:
        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            value = self.environ.get(name)
            if value is None:
                if default is None:
                    raise ToolkitError(
                        f"environment variable {name} is not set (write ${{{name}:-default}} for a default)",
                        server=self.spec.name,
                        path=path,
                    )
                value = default
                if len(value) >= MIN_SECRET_LEN:
                    self.secrets.add(value)
            elif value:
                self.secrets.add(value)
            return value

        return _VAR.sub(one, text)


def read_config(config: Any) -> list[ServerSpec]:
    """The enabled servers of `config` (a mapping, or a path to a JSON file), in order; bad entries raise."""
    base: Path | None = None
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        try:
            config = loads(path.read_text(encoding="utf-8"))  # deep nesting, NaN, surrogates: refused
        except OSError as exc:
            raise ToolkitError(f"cannot read the MCP config: {exc.strerror}", path=str(path)) from exc
        except ValueError as exc:
            raise ToolkitError(f"not valid JSON: {exc}", path=str(path)) from exc
        base = path.resolve().parent
    if not isinstance(config, Mapping):
        raise ToolkitError(f"mcp_config must be a mapping or a path to a JSON file, got {type(config).__name__}")
    present = [key for key in TOP_LEVEL_KEYS if key in config]
    if len(present) != 1:
        found = f"found {', '.join(present)}" if present else f"found {', '.join(map(str, config)) or 'nothing'}"
        raise ToolkitError(f"mcp_config needs exactly one of {', '.join(TOP_LEVEL_KEYS)} ({found})")
    top = present[0]
    servers = config[top]
    if not isinstance(servers, Mapping):
        raise ToolkitError("must map server names to server entries", path=top)
    specs = []
    for name, entry in servers.items():
        spec = _read_server(str(name), entry, f"{top}.{name}", base)
        if spec is not None:
            specs.append(spec)
    return specs


def _read_server(name: str, entry: Any, path: str, base: Path | None) -> ServerSpec | None:
    if not isinstance(entry, Mapping):
        raise ToolkitError(f"a server entry must be an object, got {type(entry).__name__}", server=name, path=path)

    def fail(key: str, message: str) -> ToolkitError:
        return ToolkitError(message, server=name, path=f"{path}.{key}" if key else path)

    for key in entry:
        if key not in SERVER_KEYS:
            raise fail(str(key), f"unknown key{did_you_mean(str(key), SERVER_KEYS)}; known: {', '.join(SERVER_KEYS)}")
    enabled, disabled = entry.get("enabled", True), entry.get("disabled", False)
    for key, value in (("enabled", enabled), ("disabled", disabled)):
        if not isinstance(value, bool):
            raise fail(key, "must be true or false")
    if not enabled or disabled:
        return None
    if "env" in entry and "environment" in entry:
        raise fail("environment", "give env or environment, not both")
    env_key = "environment" if "environment" in entry else "env"
    declared = entry.get("type")
    if "command" in entry and "url" in entry:
        raise fail("url", "give command (stdio) or url (streamable HTTP), not both")
    if "command" in entry:
        if declared is not None and declared not in STDIO_TYPES:
            raise fail("type", f"{declared!r} does not go with command (stdio): use one of {sorted(STDIO_TYPES)}")
        for key in ("url", "headers"):
            if key in entry:
                raise fail(key, "only a url server takes headers")
        command = entry["command"]
        if isinstance(command, str) and command:
            argv = [command, *_strings(entry.get("args", []), fail, "args")]
        elif isinstance(command, list) and command:
            argv = [*_strings(command, fail, "command"), *_strings(entry.get("args", []), fail, "args")]
        else:
            raise fail("command", "must be a non-empty string or list of strings")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise fail("cwd", "must be a string")
        if cwd is not None and base is not None and not Path(cwd).is_absolute():
            cwd = str(base / cwd)  # relative to the config file, not to wherever the process runs
        return ServerSpec(
            name=name,
            path=path,
            transport="stdio",
            command=tuple(argv),
            env=_string_map(entry.get(env_key, {}), fail, env_key),
            cwd=cwd,
        )
    if "url" in entry:
        if declared is not None and declared not in HTTP_TYPES:
            hint = " (SSE servers are not supported: use their streamable HTTP endpoint)" if declared == "sse" else ""
            raise fail("type", f"{declared!r} does not go with url: use one of {sorted(HTTP_TYPES)}{hint}")
        for key in ("args", "env", "environment", "cwd"):
            if key in entry:
                raise fail(key, "only a command (stdio) server takes args, env and cwd")
        url = entry["url"]
        if not isinstance(url, str) or not re.match(r"https?://", url):
            raise fail("url", "must be an http:// or https:// URL")
        return ServerSpec(name=name, path=path, transport="http", url=url,
                          headers=_string_map(entry.get("headers", {}), fail, "headers"))  # fmt: skip
    raise fail("", "needs a command (stdio) or a url (streamable HTTP)")


def _strings(value: Any, fail: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(key, "must be a list of strings")
    return list(value)


def _string_map(value: Any, fail: Any, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise fail(key, "must map names to strings")
    return {str(k): v for k, v in value.items()}
