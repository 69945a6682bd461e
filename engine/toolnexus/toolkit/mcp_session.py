"""One MCP server for a toolkit, through the official `mcp` SDK: connect, list tools, call on request, close.

The SDK's anyio task groups refuse to be exited from any task but the one that entered
them, and a toolkit is often closed from elsewhere (a shutdown handler,
`asyncio.wait_for(tk.close(), 10)`). So each session lives in a task of its own from
connect to disconnect; `close()` signals it (an event, or cancelling its own cancel
scope while it is still loading) and waits for it to finish. Loading runs under one
deadline: spawning or reaching the server, initialize and every tools/list page.
A stdio server's stderr goes to a temporary file, so a failure can quote its tail.
Nothing here runs a tool unless `call` is awaited, which only a caller does.
"""

from __future__ import annotations

import asyncio
import logging
import math
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import IO, Any, TextIO, cast

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from ..errors import ToolkitError, ToolkitStage
from ..redact import chain_mentions, guard_logs
from .mcp_config import ResolvedServer, ServerSpec

logger = logging.getLogger("toolnexus")

STDERR_TAIL_BYTES = 4096
STDERR_TAIL_LINES = 20


class McpSession:
    """One server's session, owned by its own task. Start with `start()`, then `await loaded()`."""

    def __init__(self, spec: ServerSpec, *, timeout: float, environ: dict[str, str]) -> None:
        self.spec = spec
        self.timeout = timeout
        self.tools: list[dict[str, Any]] = []
        self.error: ToolkitError | None = None
        self._environ = environ
        self._resolved: ResolvedServer | None = None
        self._stage: ToolkitStage = "config"
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._settled = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._stderr: IO[str] | None = None  # while the task runs, for a stdio server
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        state = "failed" if self.error else "loaded" if self._client else "not loaded"
        return f"McpSession({self.spec.name!r}, {self.spec.transport}, {state}, {len(self.tools)} tools)"

    def start(self) -> None:
        # Made here, not in the task: close() may cancel it before the task first runs.
        self._scope = anyio.CancelScope(deadline=anyio.current_time() + self.timeout)
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"toolnexus mcp {self.spec.name}")

    async def loaded(self) -> None:
        """Wait until the tools are listed; raise the ToolkitError that stopped it otherwise."""
        await self._settled.wait()
        if self.error is not None:
            raise self.error

    async def _own(self) -> None:
        """The session's whole life, in this one task."""
        if self.spec.transport != "stdio":
            await self._live()
            return
        with tempfile.TemporaryFile("w+", encoding="utf-8") as self._stderr:
            await self._live()
        self._stderr = None

    async def _live(self) -> None:
        scope = self._scope
        assert scope is not None
        loaded = False
        try:
            with scope:
                self._resolved = self.spec.resolve(self._environ)
                guard_logs(self, self._resolved.secrets)
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(Client(self._transport(stack), cache=None))
                    self._stage = "tools/list"
                    self.tools = await self._list_tools(client)
                    scope.deadline = math.inf
                    self._stage, self._client, loaded = "tools/call", client, True
                    self._settled.set()
                    logger.debug("MCP server %r: %d tools", self.spec.name, len(self.tools))
                    await self._stop.wait()
        except Exception as exc:  # the SDK's, the transport's, a group of them: described, kept, raised by loaded()
            if _leaves(exc, httpx2.TransportError) and not loaded:
                self._stage = "start"  # the URL could not be reached at all
            self.error = _toolkit_error(exc) or self._failure(describe(exc))
        finally:
            self._client = None
            if self.error is None and not loaded:
                stopped = "closed before it loaded" if self._stop.is_set() else None
                timed_out = f"timed out after {self.timeout:g}s" if scope.cancelled_caught else None
                self.error = self._failure(stopped or timed_out or "cancelled before it loaded")
            self._settled.set()

    def _transport(self, stack: AsyncExitStack) -> Any:
        """The SDK transport for this server, wrapped so the stage moves on once it is up."""
        server, spec = self._resolved, self.spec
        assert server is not None
        if spec.transport == "stdio":
            params = StdioServerParameters(command=spec.command[0], args=list(spec.command[1:]),
                                           env=dict(server.env) or None, cwd=spec.cwd)  # fmt: skip
            inner: Any = stdio_client(params, errlog=cast(TextIO, self._stderr))  # the task's temporary file
        else:
            # The SDK's documented way to send headers: an httpx2 client of our own (its timeouts, ours to close).
            http = httpx2.AsyncClient(headers=dict(server.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            stack.push_async_callback(http.aclose)
            inner = streamable_http_client(spec.url, http_client=http)
        return self._staged(inner)

    @asynccontextmanager
    async def _staged(self, inner: Any) -> AsyncIterator[Any]:
        self._stage = "start"
        async with inner as streams:
            self._stage = "initialize"
            yield streams

    async def _list_tools(self, client: Client) -> list[dict[str, Any]]:
        """Every page of tools/list, as JSON."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                return tools
            if cursor in seen:
                raise self._failure(f"tools/list returned the cursor {cursor!r} twice")
            seen.add(cursor)

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """tools/call, from whatever task asks; the CallToolResult as JSON."""
        client = self._client
        if client is None:
            ended = f"the session ended: {self.error.message}" if self.error else "the session is not running"
            raise self._failure("the toolkit is closed" if self._stop.is_set() else ended)
        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except Exception as exc:
            failure, cause = self._call_failure(tool, exc), exc
        else:
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)
        secrets = self._resolved.secrets if self._resolved is not None else ()
        # raised outside the handler: a cause quoting an expanded value is neither chained nor the context
        raise failure from (None if chain_mentions(cause, secrets) else cause)

    def _call_failure(self, tool: str, exc: Exception) -> ToolkitError:
        if not isinstance(exc, MCPError):
            return self._failure(f"tool {tool!r}: {describe(exc)}")
        if exc.code != CONNECTION_CLOSED:
            return self._failure(f"tool {tool!r} failed: {exc.message} (MCP error {exc.code})")
        closing = self._stop.is_set()
        return self._failure("the toolkit was closed during the call" if closing else
                             f"the server ended the session: {exc.message}")  # fmt: skip

    async def close(self) -> None:
        """Stop the session and wait for its task: the transport ends the server process or HTTP session."""
        self._stop.set()
        if self._scope is not None and not self._settled.is_set():
            self._scope.cancel()
        if self._task is not None:
            await asyncio.shield(self._task)

    def _failure(self, message: str) -> ToolkitError:
        redact = self._resolved.redact if self._resolved is not None else str
        tail = redact(self.stderr_tail())
        return ToolkitError(redact(message), server=self.spec.name, stage=self._stage, stderr_tail=tail)

    def stderr_tail(self) -> str:
        """The last lines a stdio server wrote to stderr (empty for HTTP servers)."""
        if self._stderr is None:
            return ""
        self._stderr.flush()
        with open(self._stderr.fileno(), "rb", closefd=False) as raw:
            size = raw.seek(0, 2)
            raw.seek(max(0, size - STDERR_TAIL_BYTES))
            text = raw.read().decode("utf-8", errors="replace")
        return "\n".join(text.strip().splitlines()[-STDERR_TAIL_LINES:])


def _leaves(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc`, or some leaf of its exception group, is a `kind`."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_leaves(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)


def _toolkit_error(exc: BaseException) -> ToolkitError | None:
    """Our own error, also when a task group wrapped it in an exception group."""
    if isinstance(exc, ToolkitError):
        return exc
    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        return _toolkit_error(exc.exceptions[0])
    return None


def describe(exc: BaseException) -> str:
    """One line for an SDK or transport failure; an exception group is described by its leaves."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(describe(e) for e in exc.exceptions))
    if isinstance(exc, MCPError):
        what = "the server closed the connection" if exc.code == CONNECTION_CLOSED else exc.message
        return f"{what} (MCP error {exc.code})"
    if isinstance(exc, httpx2.TransportError):
        try:  # the URL without its query or credentials
            url = exc.request.url
            where = f" {url.scheme}://{url.host}{f':{url.port}' if url.port else ''}{url.path}"
        except RuntimeError:  # no request attached
            where = ""
        return f"cannot reach{where}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}{f': {exc.filename}' if exc.filename else ''}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
