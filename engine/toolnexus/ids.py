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
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

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

    pattern: re.Pattern[str]

    def normalize(self, call_id: str) -> str:
        if self.pattern.fullmatch(call_id) and not call_id.startswith(MARK):
            return call_id
        return encode(call_id)

    def restore(self, sent: str) -> str:
        original = decode(sent)
        return sent if original is None else original

    def admits_encoded_ids(self) -> bool:
        """Whether the pattern accepts what `normalize` produces (checked when the rules load)."""
        return all(self.pattern.fullmatch(encode(sample)) for sample in ("a", "a.b:c", "é/\u6771", "x" * 40))


def compile_id_rule(source: RuleSource) -> IdRule | None:
    """The rule file's `tool_call_ids` section, compiled (None when the provider takes any id)."""
    spec = source.data.get("tool_call_ids")
    if spec is None:
        return None
    try:
        rule = IdRule(re.compile(spec["pattern"]))
    except re.error as exc:
        raise source.error(("tool_call_ids", "pattern"), f"not a regular expression: {exc}") from None
    if not rule.admits_encoded_ids():
        raise source.error(("tool_call_ids", "pattern"), "must accept the encoded form tn_ + URL-safe base64")
    return rule
