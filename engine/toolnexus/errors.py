"""The one exception tree of toolnexus, and the structured notes it reports.

    ToolnexusError                 base of everything toolnexus raises on purpose
    ├── RuleError                  a rule file is broken; raised at load, never at translate time
    │                              (.file, .line, .column, .rule)
    ├── TranslationError           an input cannot be translated; raised before anything is sent
    │   │                          (.path, e.g. "messages[3].tool_calls[0].function.arguments")
    │   └── ResponseError          a provider response cannot be read (.path into the response)
    ├── ConfigError                a client cannot be built as asked (no API key, a refused option, a model
    │                              name, key, header or base URL that cannot be sent as it is), or a
    │                              translator set up as it cannot be (an unknown source format)
    ├── StateError                 a call made out of order, in a state that cannot take it: a stream's
    │                              result read before its end, a closed client called, a format's events
    │                              asked of a stream translator under way (also a RuntimeError)
    ├── ProviderError              the provider call failed: HTTP error, connection, timeout, bad body
    │                              (.provider, .status, .error_type, .message, .request_id, .kind)
    ├── ToolkitError               an MCP toolkit cannot be built or used: a bad mcp_config entry, a server
    │                              that fails to start, initialize, list or answer a call
    │                              (.server, .stage, .path, .stderr_tail)
    └── Cancelled                  the caller's cancel event was set during the call

Locations are attributes, so callers and tests assert them rather than message text.
Errors never carry request bodies or credentials; only paths and short descriptions. A value a
TranslationError quotes that looks like a key or token (`sk-...`: one long word of letters and
digits) is shown as `***`: a request or an answer may hold one where an id or a name belongs.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

# A word that could be a credential: 20 or more key characters, letters and digits both (not part of a file path).
_KEY_LIKE = re.compile(r"(?<![\w.+/=-])(?=[\w.+=-]*\d)(?=[\w.+=-]*[A-Za-z])[\w.+=-]{20,}(?![\w.+/=-])")


def unquoted_keys(message: str) -> str:
    """`message` with each key-like word shown as `***`."""
    return _KEY_LIKE.sub("***", message)


class ToolnexusError(Exception):
    """Base class for every error toolnexus raises on purpose."""


class RuleError(ToolnexusError):
    """A rule file cannot be loaded: syntax, schema, unknown operation, uncovered table."""

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        line: int | None = None,
        column: int | None = None,
        rule: str = "",
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.rule = rule
        super().__init__(self.location_text() + message)

    def location_text(self) -> str:
        """`rules/anthropic.yaml:42:7 response.finish_reason: ` (as much as is known)."""
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.rule:
            where = f"{where} {self.rule}" if where else self.rule
        return f"{where}: " if where else ""


class TranslationError(ToolnexusError):
    """An OpenAI-shaped input cannot be translated; `.path` names the culprit."""

    def __init__(self, path: str, message: str, *, provider: str = "") -> None:
        message = unquoted_keys(message)
        self.path = path
        self.message = message
        self.provider = provider
        super().__init__(f"{path}: {message}" if path else message)


class ResponseError(TranslationError):
    """A provider response cannot be read; `.path` points into the response."""


class ConfigError(ToolnexusError):
    """A client or a translator cannot be set up as asked; raised by the call that asks, before it sends or writes
    anything."""


class StateError(ToolnexusError, RuntimeError):
    """A call made out of order: its object is in a state that cannot take it (not yet ended, closed, under way).

    Also a RuntimeError, Python's type for a call in the wrong state: these calls raised a bare one before this
    class, so code that catches RuntimeError for them keeps working."""


ToolkitStage = Literal["config", "start", "initialize", "tools/list", "tools/call"]


class ToolkitError(ToolnexusError):
    """A toolkit from MCP servers cannot be built or used; `.server` names the server.

    stage: config (the mcp_config entry, or an unset ${VAR}), start (the process could not
    be spawned or the URL reached), initialize, tools/list, tools/call. `.path` points into
    mcp_config when the entry itself is wrong. `.stderr_tail` holds the last lines a stdio
    server wrote to stderr (also appended to the message). Values expanded from the
    environment never appear in it.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str = "",
        stage: ToolkitStage = "config",
        path: str = "",
        stderr_tail: str = "",
    ) -> None:
        self.message = message
        self.server = server
        self.stage = stage
        self.path = path
        self.stderr_tail = stderr_tail
        where = path or (f"MCP server {server!r}" if server else "")
        text = f"{where}: {message}" if where else message
        if stage != "config":
            text += f" (during {stage})"
        if stderr_tail:
            text += "\n  its stderr ends with:\n    " + stderr_tail.replace("\n", "\n    ")
        super().__init__(text)


ProviderErrorKind = Literal["http", "connection", "timeout", "decode", "too_large"]


class ProviderError(ToolnexusError):
    """The one provider call failed; mapped from httpx at one boundary (`raise ... from`).

    kind: http (a non-2xx status; .status, .error_type and .message come from the
    provider's error body as its rule file describes it), connection, timeout
    (per attempt or overall), decode (a 2xx body that is not JSON; .message holds
    its first bytes), too_large (a body or one streamed event over the client's cap;
    the connection was closed). Never carries request headers or the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        kind: ProviderErrorKind,
        status: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        attempts: int = 1,
    ) -> None:
        self.message = message
        self.provider = provider
        self.kind = kind
        self.status = status
        self.error_type = error_type
        self.request_id = request_id
        self.attempts = attempts
        head = f"{provider} {status}" if status is not None else f"{provider} {kind}"
        extra = "".join(
            f", {name} {value}" for name, value in (("type", error_type), ("request id", request_id)) if value
        )
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"{head}{tries}: {message}{' (' + extra[2:] + ')' if extra else ''}")


class Cancelled(ToolnexusError):
    """The caller set its cancel event; the in-flight call was aborted and nothing is returned."""


NoteKind = Literal["dropped", "rewritten", "synthesized", "unknown", "inconsistent"]
NoteSide = Literal["", "request", "response"]


class Note(NamedTuple):
    """One thing the translation did that the caller did not literally ask for.

    kind: dropped (a value was not sent, or a response value not passed on),
    rewritten (sent in another form), synthesized (a value the caller did not give),
    unknown (a provider value the rules do not know; kept in `raw`), inconsistent
    (provider values that contradict each other, e.g. usage counts; kept as given).
    `path` points into the input the note is about. side: "request" (translating the
    caller's request) or "response" (reading the provider's answer) on a client's
    results and events, which carry both; "" from the pure functions, whose notes are all
    of their one side. (A NamedTuple: notes are made on hot paths, and are plain
    immutable values; `Note(kind, path, message)` still builds one.)
    """

    kind: NoteKind
    path: str
    message: str
    side: NoteSide = ""

    def __str__(self) -> str:
        side = f"{self.side} " if self.side else ""
        return f"{side}{self.kind}: {self.path}: {self.message}"


def sided(notes: tuple[Note, ...] | list[Note], side: NoteSide) -> tuple[Note, ...]:
    """The notes, each saying its side (a client's result carries the request's and the response's). Each made
    as the tuple it is: `_replace` costs several times as much, once per note of an answer of thousands of calls
    (a synthesized id each)."""
    return tuple(note if note[3] == side else _new(Note, (note[0], note[1], note[2], side)) for note in notes)


_new = tuple.__new__
