"""Keeping secrets out of everything toolnexus shows.

Three guards, used by the client and the MCP toolkit alike:
- `header_problem`: a header name or value that HTTP cannot carry (CR, LF, other control
  characters, non-ASCII) is refused before anything is sent, naming the header and never
  quoting the value. Otherwise the HTTP library refuses it later, quoting the value in its
  exception, its log line and every traceback.
- `spellings` and `scrub`: a secret is replaced by *** in text, also in the escaped forms
  other libraries print it in (`b'sk-...\\n'`, `'sk-...\\t'`).
- `chain_mentions`: whether an exception, or anything in its __cause__/__context__ chain,
  shows a secret; such a cause is not chained to the error toolnexus raises.
- `guard_logs`: httpcore logs every response's headers at DEBUG, so a server that echoes
  a key in a header would put it in the caller's logs; a filter on httpcore's loggers
  scrubs the secrets of live clients and MCP sessions from those records.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Iterable
from contextlib import suppress

REDACTED = "***"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # an HTTP header name (RFC 9110 token)
_VALUE = re.compile(r"[\t\x20-\x7e]*")  # printable ASCII and tabs: what every HTTP stack sends as is
# httpcore (under httpx) and httpcore2 (under the MCP SDK's httpx2) log response headers at DEBUG
HEADER_LOGGERS = tuple(f"{lib}.{part}" for lib in ("httpcore", "httpcore2")
                       for part in ("http11", "http2", "connection", "proxy", "socks"))  # fmt: skip


def control_character(text: str) -> bool:
    """Whether `text` holds a C0/C1 control character (CR, LF, NUL, ...) or DEL."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


def header_problem(name: object, value: object) -> str | None:
    """Why (name, value) cannot be sent as an HTTP header, never quoting the value; None when it can."""
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        return f"{name!r} is not a valid header name"
    if not isinstance(value, str):
        return f"the value of {name!r} must be a string, got {type(value).__name__}"
    if not _VALUE.fullmatch(value):
        return (
            f"the value of {name!r} holds a control character (CR, LF, ...) or non-ASCII text, "
            "which HTTP cannot carry; the value is not shown"
        )
    return None


def spellings(secret: str) -> list[str]:
    """The forms `secret` takes in text: as is, stripped, and escaped as a Python str or bytes repr."""
    forms = {secret, secret.strip(), repr(secret)[1:-1]}
    with suppress(UnicodeEncodeError):  # a lone surrogate has no bytes form
        forms.add(repr(secret.encode("utf-8"))[2:-1])
    return sorted((form for form in forms if form), key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every spelling of every secret replaced by ***."""
    for form in sorted({f for s in secrets for f in spellings(s)}, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    return text


def exception_chain(error: BaseException) -> list[BaseException]:
    """`error` and every exception reachable through __cause__ and __context__, each once."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop()
        if current is None or any(current is known for known in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__]
    return seen


def chain_mentions(error: BaseException, secrets: Iterable[str]) -> bool:
    """Whether `error` or any exception in its cause/context chain shows a secret (str, repr, args, attributes)."""
    forms = [f for s in secrets for f in spellings(s)]
    for link in exception_chain(error) if forms else []:
        text = f"{link!s} {link!r} {link.args!r} {getattr(link, '__dict__', {})!r}"
        if any(form in text for form in forms):
            return True
    return False


class _LogScrubber(logging.Filter):
    """Scrubs the secrets of live owners (clients) from log records; a record without one passes as is."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: weakref.WeakKeyDictionary[object, tuple[str, ...]] = weakref.WeakKeyDictionary()

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = [secret for owned in list(self.secrets.values()) for secret in owned]
        if secrets:
            text = record.getMessage()
            clean = scrub(text, secrets)
            if clean != text:
                record.msg, record.args = clean, None
        return True


_SCRUBBER = _LogScrubber()


def guard_logs(owner: object, secrets: Iterable[str]) -> None:
    """Keep `secrets` out of the HTTP libraries' DEBUG records for as long as `owner` lives.
    (A logger runs its filters only for records it is enabled for, so this costs nothing below DEBUG.)"""
    for name in HEADER_LOGGERS:
        logging.getLogger(name).addFilter(_SCRUBBER)  # once: addFilter ignores a filter already there
    _SCRUBBER.secrets[owner] = tuple(secrets)
