"""Tool-call id normalization: the rules' `tool_call_ids` section, as two pure functions.

Some providers restrict the form of a tool-call id (Anthropic: letters, digits, `_`
and `-`). An id from elsewhere (another provider's history, a hand-built transcript)
may not fit. A stateless translator cannot keep a table, so the mapping is a pure
function of the id:

- `normalize`: an id the provider accepts is sent unchanged; any other id (and any
  id that already looks like an encoded one) becomes `tn_` + its UTF-8 bytes in
  unpadded URL-safe base64. Stable (same id, same result), injective (two ids
  never collide: encoded ids all carry the mark, unchanged ids never do), and the
  call and its result map identically, so they still pair up.
- `restore`: the inverse, for ids the provider hands back: an encoded id becomes
  the caller's original; anything else is left alone.

The pattern is matched with RE2 (the `google-re2` package), which runs in time linear
in the id: a rule file cannot make a pattern like `^([a-z]+)+$` take seconds on one id,
as Python's backtracking `re` would. RE2 has no backreferences or lookarounds; a
pattern using them is refused at load, at its line. Ids are matched as their UTF-8
bytes against the pattern compiled from its UTF-8 bytes (RE2 reads both as UTF-8, so
the answer is the same), which skips the wrapper's per-call offset bookkeeping for str.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2

from .loader import RuleSource

MARK = "tn_"


def encode(call_id: str) -> str:
    return MARK + base64.urlsafe_b64encode(call_id.encode("utf-8")).decode("ascii").rstrip("=")


def decode(sent: str) -> str | None:
    """The id `encode` made `sent` from, or None when `sent` is not one of its results."""
    if not sent.startswith(MARK):
        return None
    body = sent[len(MARK) :]
    try:
        original = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return original if encode(original) == sent else None


@dataclass(frozen=True)
class IdRule:
    """A provider's accepted tool-call id form (a regular expression the whole id must match)."""

    pattern: Any  # a compiled RE2 pattern over UTF-8 bytes (google-re2 ships no type hints)

    def accepts(self, call_id: str) -> bool:
        """Whether the provider takes this id as it is (the whole id matches the pattern)."""
        return self.pattern.fullmatch(call_id.encode("utf-8", "surrogatepass")) is not None

    def normalize(self, call_id: str) -> str:
        if self.accepts(call_id) and not call_id.startswith(MARK):
            return call_id
        return encode(call_id)

    def memo(self) -> Callable[[str], str]:
        """`normalize` for one request: a call and its result share one check."""
        seen: dict[str, str] = {}

        def normalize(call_id: str) -> str:
            sent = seen.get(call_id)
            if sent is None:
                sent = seen[call_id] = self.normalize(call_id)
            return sent

        return normalize

    def restore(self, sent: str) -> str:
        original = decode(sent)
        return sent if original is None else original

    def admits_encoded_ids(self) -> bool:
        """Whether the pattern accepts what `normalize` produces (checked when the rules load)."""
        samples = ("a", "a.b:c", "é/\u6771", "x" * 40)
        return all(self.accepts(encode(sample)) for sample in samples)


def compile_id_rule(source: RuleSource) -> IdRule | None:
    """The rule file's `tool_call_ids` section, compiled (None when the provider takes any id)."""
    spec = source.data.get("tool_call_ids")
    if spec is None:
        return None
    try:
        rule = IdRule(compile_pattern(spec["pattern"]))
    except re2.error as exc:
        raise source.error(("tool_call_ids", "pattern"), f"not an RE2 regular expression: {_reason(exc)}") from None
    if not rule.admits_encoded_ids():
        raise source.error(("tool_call_ids", "pattern"), "must accept the encoded form tn_ + URL-safe base64")
    return rule


def compile_pattern(pattern: str) -> Any:
    """A rule file's regular expression, compiled by RE2 (linear-time matching); raises re2.error."""
    options = re2.Options()
    options.log_errors = False  # the error comes back as an exception; RE2 would also print it to stderr
    return re2.compile(pattern.encode("utf-8", "surrogatepass"), options)


def _reason(exc: Exception) -> str:
    """RE2's message (it comes as bytes)."""
    reason = exc.args[0] if exc.args else str(exc)
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
