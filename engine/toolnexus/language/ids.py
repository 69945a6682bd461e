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

A provider whose ids are too narrow for that encoding (Mistral: exactly 9 letters and
digits) declares a `rewrite` (an alphabet and a length): an id that does not fit becomes
a hash of itself written in that alphabet. A hash cannot be decoded, so the request's
own map (sent id -> caller's id, `RequestBody.id_map`) restores what the provider
echoes; the rewrite is still stateless: the same transcript maps the same way.

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
import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import re2

from ..errors import TranslationError
from .loader import RuleSource

MARK = "tn_"
NO_IDS: Mapping[str, str] = MappingProxyType({})
REHASH_LIMIT = 64  # attempts before a rewrite gives up on an id (only a tiny alphabet and length get there)


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
class Rewrite:
    """`tool_call_ids.rewrite`: an id the pattern refuses becomes `length` characters of `alphabet`, derived from
    a hash of the id (attempt 0, then 1, 2, ... while the result collides, when `collisions` is `rehash`)."""

    alphabet: str
    length: int
    collisions: Literal["rehash", "error"] = "rehash"

    def derive(self, call_id: str, attempt: int) -> str:
        return _derive(self.alphabet, self.length, call_id, attempt)


@functools.lru_cache(maxsize=4096)  # a pure function; a conversation sends the same ids on every turn
def _derive(alphabet: str, length: int, call_id: str, attempt: int) -> str:
    """`length` characters of `alphabet` from a hash of the attempt number and the id."""
    width = len(alphabet)
    size = (length * width.bit_length() + 7) // 8 + 8  # spare bytes keep the digits near-uniform
    seed = f"{attempt}:{call_id}".encode("utf-8", "surrogatepass")
    number = int.from_bytes(hashlib.shake_256(seed).digest(size), "big")
    chars = []
    for _ in range(length):
        number, digit = divmod(number, width)
        chars.append(alphabet[digit])
    return "".join(chars)


@functools.lru_cache(maxsize=16_384)  # as _normalized: for a rewrite's ids, which go through `accepts` alone
def _accepts(pattern: Any, call_id: str) -> bool:
    """Whether `pattern` matches the whole id (RE2's Python wrapper costs microseconds a match)."""
    return pattern.fullmatch(call_id.encode("utf-8", "surrogatepass")) is not None


@functools.lru_cache(maxsize=16_384)  # a pure function; a conversation sends the same ids on every turn
def _normalized(pattern: Any, call_id: str) -> str:
    """`IdRule.normalize`, kept per id (a cache hit is one lookup)."""
    if _accepts(pattern, call_id) and not call_id.startswith(MARK):
        return call_id
    return encode(call_id)


# Each tool-call id of a transcript, in order of first appearance, with where it first appears: (message, call), or
# (message, None) for a result's `tool_call_id` (`_transcript_ids`).
IdsFound = dict[str, tuple[int, int | None]]


@dataclass(frozen=True)
class IdRule:
    """A provider's accepted tool-call id form (a regular expression the whole id must match), and how
    another id is made to fit: `tn_` + base64url by default, or the rule's `rewrite`."""

    pattern: Any  # a compiled RE2 pattern over UTF-8 bytes (google-re2 ships no type hints)
    rewrite: Rewrite | None = None

    def accepts(self, call_id: str) -> bool:
        """Whether the provider takes this id as it is (the whole id matches the pattern)."""
        return _accepts(self.pattern, call_id)

    def normalize(self, call_id: str) -> str:
        """The encoded form of an id (the default, stateless and reversible, with no rewrite)."""
        return _normalized(self.pattern, call_id)

    def for_request(self, messages: Any, provider: str) -> tuple[Callable[[str], str], dict[str, str]]:
        """The id map of one request: a function the reader calls per id (a call and its result share one
        answer), and the dict it fills, sent id -> caller's id, for each id it changed."""
        return self.for_ids(_transcript_ids(messages) if self.rewrite is not None else {}, provider)

    def for_ids(self, found: IdsFound, provider: str) -> tuple[Callable[[str], str], dict[str, str]]:
        """`for_request` given the transcript's ids already (`found`, as `_transcript_ids` finds them: what a
        rewrite needs; a source format's fused transcript scans its own items for them)."""
        if self.rewrite is not None:
            table = self._rewritten(found, provider)
            # a dict's own lookup, for every id the reader reads
            return _Rewritten(table).__getitem__, {sent: given for given, sent in table.items()}
        changed: dict[str, str] = {}
        pattern = self.pattern

        def normalize(call_id: str) -> str:
            sent = _normalized(pattern, call_id)
            if sent != call_id:
                changed[sent] = call_id
            return sent

        return normalize, changed

    def _rewritten(self, found: IdsFound, provider: str) -> dict[str, str]:
        """Caller's id -> sent id for every id of the transcript the pattern refuses, in order of first
        appearance; never equal to an id sent unchanged or to another rewritten one. The first derivation
        fits but for a collision or a pattern it misses (`_rehashed`), so it is tried inline."""
        rewrite = self.rewrite
        assert rewrite is not None
        pattern = self.pattern
        refused = [call_id for call_id in found if not _accepts(pattern, call_id)]
        table: dict[str, str] = {}
        if not refused:
            return table
        taken = found.keys() - refused  # the ids sent unchanged, then each rewritten one as it is made
        alphabet, length = rewrite.alphabet, rewrite.length
        for call_id in refused:
            sent = _derive(alphabet, length, call_id, 0)
            if sent in taken or not _accepts(pattern, sent):
                sent = self._rehashed(call_id, found[call_id], taken, provider)
            taken.add(sent)
            table[call_id] = sent
        return table

    def _rehashed(self, call_id: str, where: tuple[int, int | None], taken: set[str], provider: str) -> str:
        """The rewrite of an id by attempts 0, 1, 2, ...: the first that is free and fits the pattern."""
        rewrite = self.rewrite
        assert rewrite is not None
        for attempt in range(REHASH_LIMIT):
            sent = rewrite.derive(call_id, attempt)
            if sent not in taken and self.accepts(sent):
                return sent
            if rewrite.collisions == "error" and sent in taken:
                message = f"{call_id!r} rewrites to {sent!r}, an id this request already sends"
                raise TranslationError(_id_path(where), message, provider=provider)
        message = f"no free {rewrite.length}-character id for {call_id!r}"
        raise TranslationError(_id_path(where), message, provider=provider)

    def restore(self, sent: str, id_map: Mapping[str, str] = NO_IDS) -> str:
        """The caller's id for an id the provider hands back: from the request's map when given, else
        decoded from `tn_` + base64url (a rewrite's hash cannot be decoded: without the map it stays)."""
        original = id_map.get(sent)
        if original is not None:
            return original
        if self.rewrite is not None:
            return sent
        original = decode(sent)
        return sent if original is None else original

    def admits_encoded_ids(self) -> bool:
        """Whether the pattern accepts what `normalize` produces (checked when the rules load)."""
        samples = ("a", "a.b:c", "é/\u6771", "x" * 40)
        return all(self.accepts(encode(sample)) for sample in samples)

    def admits_rewritten_ids(self) -> bool:
        """Whether the pattern accepts every character of the rewrite's alphabet at every place, and a few
        derived ids (checked when the rules load)."""
        rewrite = self.rewrite
        assert rewrite is not None
        samples = [char * rewrite.length for char in rewrite.alphabet]
        samples += [rewrite.derive(sample, 0) for sample in ("a", "call_1", "é/\u6771")]
        return all(self.accepts(sample) for sample in samples)


class _Rewritten(dict[str, str]):
    """A request's rewritten ids, caller's id -> sent id; any other id is sent as it is."""

    def __missing__(self, call_id: str) -> str:
        return call_id


def _transcript_ids(messages: Any) -> IdsFound:
    """Each tool-call id of a transcript, in order of first appearance, as the reader will find them (anything
    malformed is skipped here: the reader refuses it, at its path), with where it first appears: (message, call)
    or (message, None) for a `tool_call_id`, formatted by `_id_path` only for an error (a long transcript has
    thousands of ids). One loop, no generator: it runs over the whole transcript on every request."""
    found: IdsFound = {}
    if not isinstance(messages, list):
        return found
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            for k, call in enumerate(calls):
                if isinstance(call, dict):
                    call_id = call.get("id")
                    if type(call_id) is str and call_id not in found:
                        found[call_id] = (i, k)
        answered = msg.get("tool_call_id")
        if type(answered) is str and answered not in found:
            found[answered] = (i, None)
    return found


def _id_path(where: tuple[int, int | None]) -> str:
    i, k = where
    return f"messages[{i}].tool_call_id" if k is None else f"messages[{i}].tool_calls[{k}].id"


def compile_id_rule(source: RuleSource) -> IdRule | None:
    """The rule file's `tool_call_ids` section, compiled (None when the provider takes any id)."""
    spec = source.data.get("tool_call_ids")
    if spec is None:
        return None
    try:
        pattern = compile_pattern(spec["pattern"])
    except re2.error as exc:
        raise source.error(("tool_call_ids", "pattern"), f"not an RE2 regular expression: {_reason(exc)}") from None
    if "rewrite" not in spec:
        rule = IdRule(pattern)
        if not rule.admits_encoded_ids():
            raise source.error(("tool_call_ids", "pattern"), "must accept the encoded form tn_ + URL-safe base64")
        return rule
    given = spec["rewrite"]
    alphabet = expand_alphabet(given["alphabet"])
    if alphabet is None:
        raise source.error(("tool_call_ids", "rewrite", "alphabet"), "a range runs backwards (write it low-high)")
    if len(alphabet) < 2:
        raise source.error(("tool_call_ids", "rewrite", "alphabet"), "needs at least two characters")
    rule = IdRule(pattern, Rewrite(alphabet, given["length"], given.get("collisions", "rehash")))
    if not rule.admits_rewritten_ids():
        message = f"{given['length']} characters of {given['alphabet']!r} do not all fit the pattern"
        raise source.error(("tool_call_ids", "rewrite"), message)
    return rule


def expand_alphabet(spec: str) -> str | None:
    """A rewrite's alphabet: characters and `x-y` ranges (a `-` first or last is itself), in the order given,
    each once; None when a range runs backwards."""
    chars: dict[str, None] = {}
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            low, high = spec[i], spec[i + 2]
            if low > high:
                return None
            chars.update(dict.fromkeys(chr(c) for c in range(ord(low), ord(high) + 1)))
            i += 3
        else:
            chars[spec[i]] = None
            i += 1
    return "".join(chars)


def compile_pattern(pattern: str) -> Any:
    """A rule file's regular expression, compiled by RE2 (linear-time matching); raises re2.error."""
    options = re2.Options()
    options.log_errors = False  # the error comes back as an exception; RE2 would also print it to stderr
    return re2.compile(pattern.encode("utf-8", "surrogatepass"), options)


def _reason(exc: Exception) -> str:
    """RE2's message (it comes as bytes)."""
    reason = exc.args[0] if exc.args else str(exc)
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
