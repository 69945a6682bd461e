"""The one exception tree of toolnexus, and the structured notes it reports.

    ToolnexusError                 base of everything toolnexus raises on purpose
    ├── RuleError                  a rule file is broken; raised at load, never at translate time
    │                              (.file, .line, .column, .rule)
    └── TranslationError           an input cannot be translated; raised before anything is returned
        │                          (.path, e.g. "messages[3].tool_calls[0].function.arguments")
        └── ResponseError          a provider response cannot be read (.path into the response)

Locations are attributes, so callers and tests assert them rather than message text.
Errors never carry request bodies or credentials; only paths and short descriptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


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
        self.path = path
        self.message = message
        self.provider = provider
        super().__init__(f"{path}: {message}" if path else message)


class ResponseError(TranslationError):
    """A provider response cannot be read; `.path` points into the response."""


NoteKind = Literal["dropped", "rewritten", "synthesized", "unknown"]


@dataclass(frozen=True, slots=True)
class Note:
    """One thing the translation did that the caller did not literally ask for.

    kind: dropped (a value was not sent), rewritten (sent in another form),
    synthesized (a value the caller did not give), unknown (a provider value the
    rules do not know; kept in `raw`). `path` points into the input the note is about.
    """

    kind: NoteKind
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}: {self.message}"
