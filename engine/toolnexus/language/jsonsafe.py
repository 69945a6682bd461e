"""JSON at the boundaries: one depth limit, and refusing what no JSON text can hold.

Every JSON document toolnexus takes in or hands on (a request, a response body, a
streamed event, tool-call arguments given as text, a tool result the rules parse as
an object, a CLI input file) passes `check` or `loads` here (a request's transcript given as a dict: tested by
the generated messages function where it reads it, the rest by `read_clean`), so a pathological value is
refused where it enters, with the path of the culprit, instead of surfacing later as a
RecursionError, a UnicodeEncodeError in the HTTP layer or NaN in the output:

- nesting deeper than MAX_DEPTH arrays and objects (Python's own recursion would fail
  near 1,000, and no provider documents anything close to this);
- NaN and Infinity (Python's json reads `1e400` as Infinity; no JSON text can say it);
- lone surrogates (`"\\ud800"`), which cannot be encoded as UTF-8;
- values that are not JSON (a set, an object), and keys that are not strings.

The check runs on every request and response, so it has a fast path: orjson (the `fast`
extra) writes the value in C and fails on surrogates, on other types and beyond 254 levels.
It writes NaN and Infinity as null, so only when its text holds a null token (`null` after
`:`, `,` or `[` and before `,`, `]` or `}`; the word inside a string, as in a schema's
`"type": "null"`, is not one) are the floats of that value looked at, in one breadth-first pass
over its containers (strings are not entered) that stops once it has met as many Nones as the
text holds null tokens. A request of a few dozen messages and tools is encoded in one call (the
fixed cost of a call and of its null scan is paid once, not per member). A long transcript (a
mapping holding a list of more than _LONG items) is looked at message by message, never in one
buffer the size of the whole transcript: a message's own values in Python (an ASCII str, an int, a bool
or None needs nothing more, a float must be finite), what they hold in batches (its tool calls and content
parts encoded together with other messages', and searched for null tokens; its other strings encoded
together, for lone surrogates alone). Only a value that fails (or every value, without
orjson) is walked in Python, which finds the culprit and its path. `loads` needs no check
at all for text whose decoder refused NaN and overflow, that encodes as UTF-8, escapes no
surrogate and holds at most MAX_DEPTH brackets and braces (or is too short to nest deeper).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

try:
    import orjson
except ImportError:  # the `fast` extra is optional
    orjson = None  # type: ignore[assignment]

MAX_DEPTH = 256
"""The deepest nesting of arrays and objects toolnexus reads or writes, per JSON document."""


_SCALARS = (int, bool, type(None))
_LONG = 32  # a list longer than this is looked at item by item, not encoded again; a mapping holding one
# (a long transcript) is encoded member by member
_BATCH = 64  # a transcript's containers (or its texts) encoded in one orjson call: a bounded buffer
LONG_TEXT = 4096
"""Characters: a text the response function read that is longer is checked apart (`answer_nulls`)."""
_SHORT = 1024  # bytes: below this, one C count of "null" costs less than `_null_tokens`' Python step per token
# (a Responses answer's five top-level nulls: 1.06 -> 0.43 µs); beyond it the reverse scan is the faster (a
# forward count reads about 0.55 ns a byte, the reverse search 0.2-0.35)


class JsonValueError(ValueError):
    """A JSON value toolnexus refuses; `.where` is the path inside the value ("" for itself)."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


_ORJSON_OPTIONS = 0 if orjson is None else orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def check(value: Any) -> None:
    """Raise JsonValueError (with the culprit's path inside `value`) unless `value` is safe JSON."""
    if orjson is not None:
        try:
            if type(value) is dict and not _holds_long(value):  # `_clean`'s common case, inline: an answer
                out = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
                last = out.rfind(b"null")
                if last < 0 or _nulls_are_nones(value, out, last):
                    return
            elif _clean(value, 0):
                return
        except TypeError:  # not JSON: `locate` names it
            pass
        except RecursionError:  # called from deep inside some caller's stack: walk instead
            pass
    problem = locate(value)
    if problem is not None:
        raise JsonValueError(*problem)


def answer_nulls(value: dict[str, Any], apart: Sequence[tuple[str | int, ...]] = ()) -> int:
    """`check` of an answer (a decoded response object) but for its last step: the null tokens orjson's text of it
    holds (0: none, and the answer is safe JSON), or JsonValueError for what `check` refuses otherwise.

    Each token is a None or a NaN/Infinity (orjson writes both as null). The generated response function counts
    the Nones in the objects it reads anyway; when they account for every token no float is NaN, else it calls
    `settle_nulls` with the same count. An answer is encoded in one call (it is no transcript), and without orjson
    it is walked here (so 0).

    `apart`: the places of long texts the function read (a str of more than LONG_TEXT characters there). Each is
    encoded on its own (orjson refuses a lone surrogate in it) and the answer with "" in its place, copied along
    the path to it only: the null-token search then reads the answer's other values, not every byte of its long
    texts (no text holds a null token). A failure of either is `locate`d in the answer itself.

    The count may be high, never low: when the text's last "null" lies within _SHORT bytes of its start, every
    "null" before it is counted in one C call, the word inside a string too (then `settle_nulls` walks further)."""
    if orjson is not None:
        try:
            rest = value
            if apart:
                texts: list[str] = []
                for place in apart:
                    rest = _set_apart(rest, place, 0, texts)
                orjson.dumps(texts)
            out = orjson.dumps(rest, default=_refuse, option=_ORJSON_OPTIONS)
        except (TypeError, RecursionError):  # not JSON, too deep, or a deep caller: `locate` decides
            pass
        else:
            last = out.rfind(b"null")
            if last < 0:
                return 0
            return out.count(b"null", 0, last + 4) if last < _SHORT else _null_tokens(out, last)
    problem = locate(value)
    if problem is not None:
        raise JsonValueError(*problem)
    return 0


def _set_apart(value: Any, place: tuple[str | int, ...], at: int, texts: list[str]) -> Any:
    """`value` with the long text at `place` (from its step `at` on) moved into `texts` and "" in its place: a
    copy of each object and list on the path to it, the rest shared. A place that holds no such text leaves the
    value as it is."""
    if at == len(place):
        if type(value) is str and len(value) > LONG_TEXT:
            texts.append(value)
            return ""
        return value
    step = place[at]
    held = isinstance(value, dict) and type(step) is str and step in value
    if not held and not (isinstance(value, list) and type(step) is int and -len(value) <= step < len(value)):
        return value
    item = value[step]
    new = _set_apart(item, place, at + 1, texts)
    if new is item:
        return value
    copy = value.copy()
    copy[step] = new
    return copy


def settle_nulls(value: Any, tokens: int) -> None:
    """The last step of `check` after `answer_nulls` gave `tokens`: JsonValueError (located) when one of them is
    a NaN or an Infinity rather than a None."""
    if not _finite(value, tokens):
        problem = locate(value)
        if problem is not None:
            raise JsonValueError(*problem)


def _clean(value: Any, level: int) -> bool:
    """Whether orjson encodes `value` and every null it writes is a None (False: let `locate` decide).

    A transcript (a mapping holding a long list, or a long list, at the top two levels) is encoded member
    by member, never into one buffer of its whole size; orjson's own limit of 254 levels per member then
    keeps the whole within MAX_DEPTH. Anything else is encoded in one call.
    """
    kind = type(value)
    if (kind is list and level < 2 and len(value) > _LONG) or (kind is dict and level == 0 and _holds_long(value)):
        return _members_clean(value, level)
    if kind in _SCALARS or (kind is str and value.isascii()):  # an ASCII str holds no lone surrogate
        return True
    try:
        out = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:
        return False
    if kind is float or kind is str:
        return out != b"null"  # a NaN or an Infinity; a str is encoded to find a lone surrogate
    last = out.rfind(b"null")  # rfind: CPython's reverse search is several times faster on long text
    return last < 0 or _nulls_are_nones(value, out, last)  # the first test alone settles most values


def _nulls_are_nones(value: Any, out: bytes, last: int) -> bool:
    """Whether each null token in orjson's text of a container (its last "null" at `last`) is a None."""
    tokens = _null_tokens(out, last)
    # A mapping's own Nones (a message's `content: null`) are met first, so when they are all the text holds,
    # the walk ends within the mapping's own values, never entering what it holds.
    return not tokens or _finite(value, tokens)


def _members_clean(value: dict[Any, Any] | list[Any], level: int) -> bool:
    if type(value) is dict:
        if not _plain_keys(value):
            return False
        return all(_clean(item, level + 1) for item in value.values())
    # A transcript's messages: each message's own values are looked at here (a str, int, bool or None needs
    # nothing more, a float must be finite), and what they hold is encoded in batches of _BATCH: the containers
    # (a message's tool calls, its content parts) in one orjson call, its text that is not ASCII in another
    # (orjson refuses a lone surrogate). Only the containers' text is searched for a null token: a message's
    # own None (`content: null`) writes none there, and text writes none at all.
    deep: list[Any] = []
    texts: list[str] = []
    for item in value:
        if type(item) is not dict:
            if not _clean(item, level + 1):
                return False
            continue
        for key, member in item.items():
            kind = type(member)
            if kind is str:
                if not member.isascii():
                    texts.append(member)
            elif kind is dict or kind is list:
                deep.append(member)
            elif kind is float:
                if not math.isfinite(member):
                    return False
            elif kind is not int and member is not None and kind is not bool:
                return False  # not JSON, or a subclass: `locate` decides
            if type(key) is not str:
                return False
            if not key.isascii():
                texts.append(key)
        if len(deep) >= _BATCH or len(texts) >= _BATCH:
            if not _batch_clean(deep, texts):
                return False
            deep, texts = [], []
    return _batch_clean(deep, texts)


def read_clean(texts: list[str], deep: list[Any], messages: list[Any]) -> bool:
    """`check`'s verdict on a transcript whose reader tested the values it read as it read them (the request's
    generated messages function: an ASCII str, a str equal to one so tested, a key of a known set, need nothing
    more) and left the rest here (False: let `locate` decide, on the whole request):

    - `texts`: the strs it read that are not ASCII (orjson refuses a lone surrogate);
    - `deep`: containers it read in part, each a message's member (one level inside its message, as
      `_members_clean` batches them, so orjson's own depth limit keeps the whole within MAX_DEPTH);
    - `messages`: the messages it did not read that way, each looked at as `_members_clean` looks at one.

    Each is encoded in batches of _BATCH, never in one buffer the size of the transcript."""
    if orjson is None:
        return False
    if messages and not _members_clean(messages, 1):
        return False
    if len(texts) <= _BATCH and len(deep) <= _BATCH:  # a short transcript's: one batch
        return _batch_clean(deep, texts)
    for at in range(0, max(len(texts), len(deep)), _BATCH):
        if not _batch_clean(deep[at : at + _BATCH], texts[at : at + _BATCH]):
            return False
    return True


def _batch_clean(deep: list[Any], texts: list[str]) -> bool:
    """Whether orjson encodes the containers of `deep` with every null a None, and every str of `texts`.

    Each container sits one level inside the batch, as inside its message, so orjson's own depth limit
    keeps the whole within MAX_DEPTH as when a message is encoded alone."""
    try:
        if texts:
            orjson.dumps(texts)
        if not deep:
            return True
        out = orjson.dumps(deep, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:
        return False
    last = out.rfind(b"null")
    return last < 0 or _nulls_are_nones(deep, out, last)


def _utf8(text: str) -> bool:
    """Whether UTF-8 can encode a str (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _holds_long(mapping: dict[Any, Any]) -> bool:
    """Whether a mapping holds a list of more than _LONG items (a long transcript's messages): then it is
    encoded member by member, never into one buffer of its whole size."""
    for item in mapping.values():  # noqa: SIM110 (twice as fast as any() over a generator; runs on every answer)
        if type(item) is list and len(item) > _LONG:
            return True
    return False


def _plain_keys(mapping: dict[Any, Any]) -> bool:
    """Whether every key is a str that UTF-8 can encode (no lone surrogate)."""
    if not all(type(key) is str for key in mapping):
        return False
    try:
        "".join(mapping).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _finite(value: Any, tokens: int) -> bool:
    """Whether every float inside a container orjson encoded is finite: it writes NaN and Infinity as null, so
    this runs only when its text holds `tokens` null tokens (or words that look like one, inside strings).

    Breadth first, over containers only (orjson has already refused what is too deep or not JSON), and it
    stops at the `tokens`-th None: then every null token in the text is a None, so no NaN or Infinity wrote
    one. An answer's nulls (`refusal`, `logprobs`, `stop_sequence`) sit near its top, its bulk (tool calls,
    content blocks) further down: breadth first meets them before entering the bulk."""
    queue = [value]
    push, isfinite = queue.append, math.isfinite  # the hot loop of every answer with a null
    for container in queue:  # grows as it goes: each container's own items first, then the containers in it
        for item in container.values() if isinstance(container, dict) else container:
            kind = type(item)
            if kind is str:  # the commonest item first
                continue
            if item is None:
                tokens -= 1
                if not tokens:
                    return True
            elif kind is dict or kind is list:
                push(item)
            elif kind is int or kind is bool:
                continue
            elif kind is float:
                if not isfinite(item):
                    return False
            elif isinstance(item, (dict, list, tuple)):
                push(item)
    return True


def _null_tokens(text: bytes, last: int) -> int:
    """How many null tokens orjson's text, whose last "null" is at `last`, holds: where it wrote a None, a NaN or
    an Infinity (`null` after `:`, `,` or `[` and before `,`, `]` or `}`; the word inside a string, as in a
    schema's `"type": "null"`, is not one).

    A string holding `,null]` counts too, which costs only a longer look in `_finite`. Scanned from the end:
    an answer's nulls (a refusal, logprobs, a stop sequence not met) follow its long text.
    """
    end = len(text)
    found = 0
    i = last
    while i >= 0:
        if (i == 0 or text[i - 1] in b":,[") and (i + 4 == end or text[i + 4] in b",]}"):
            found += 1
        i = text.rfind(b"null", 0, i)
    return found


def text_encoder(
    *,
    ensure_ascii: bool,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    compact: bool = False,
    allow_nan: bool = False,
) -> Callable[[Any], str]:
    """`json.dumps` with these options (NaN refused unless `allow_nan`; `compact`: separators "," and ":"), its
    C encoder built once.

    `json.dumps` and `JSONEncoder.encode` build a new C encoder on every call, which costs more than encoding
    a tool call's arguments. For values `check` passed (trees: no cycle to detect). Where the interpreter's
    C encoder is missing or takes other arguments, the standard encoder's own `encode`.
    """
    items, keys = (",", ":") if compact else (", ", ": ")
    standard = json.JSONEncoder(
        ensure_ascii=ensure_ascii, allow_nan=allow_nan, sort_keys=sort_keys, default=default, separators=(items, keys)
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    strings = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    try:
        built = make(None, standard.default, strings, None, keys, items, sort_keys, False, allow_nan)  # type: ignore[misc]
    except TypeError:  # missing (None) or another signature
        return standard.encode

    def encode(value: Any) -> str:
        return "".join(built(value, 0))

    sample = {"b": [1, 2.5, -0.0, 1e300, True, None, 'é\u2028\n"\\'], "a": {"x": ""}, "é": []}
    return encode if encode(sample) == standard.encode(sample) else standard.encode


def orjson_compact(value: Any) -> str | None:
    """`orjson_bytes`'s text as a str: `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`'s, or None."""
    out = orjson_bytes(value)
    return None if out is None else out.decode()


def orjson_bytes(value: Any) -> bytes | None:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`'s text for an object as UTF-8, written by
    orjson (several times as fast on a tool call's arguments) where orjson's text is the very same. It writes every
    str, int, bool and None as json does and most floats too, but not a NaN or an Infinity (null), nor a float below
    1e-4 (`0.00001` for `1e-05`, `1e-7` for `1e-07`): text holding `null`, `0.0000` or `e-` anywhere (in a
    string too: then it is only slower) is left to the standard encoder. None: left to it, also for what orjson
    refuses (a key not a str, an int beyond 64 bits, a lone surrogate, too deep), which it writes or refuses."""
    if not _ORJSON_FLOATS or type(value) is not dict:
        return None
    try:
        out = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError
        return None
    # rfind: faster than `in`; `e-` looked for only where a `-` is (one byte's search: a tenth of a two-byte one's)
    if out.rfind(b"null") >= 0 or out.rfind(b"0.0000") >= 0 or (out.rfind(b"-") >= 0 and out.rfind(b"e-") >= 0):
        return None
    return out


def orjson_strings_bytes(value: Any) -> bytes | None:
    """`orjson_bytes` of a value its caller knows holds only strings, in objects and lists: orjson writes that as
    json.dumps does, so its text is not searched. None where orjson refuses it (a lone surrogate) or is absent."""
    if orjson is None:
        return None
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError
        return None


def _floats_agree() -> bool:
    """Whether this orjson writes floats as json.dumps does outside the text `orjson_compact` leaves alone."""
    if orjson is None:
        return False
    sample = [0.0, -0.0, 1.5, -2.25, 0.1, 1e-4, 0.00012, 123456789.125, 1e15, 9999999999999998.0, 1e16, 1.5e300]
    sample += [1 / 3, 1.7976931348623157e308, -1e22, 4.35, 100.0, 2.0**60]
    return all(orjson.dumps(x) == json.dumps(x).encode() for x in sample)


_ORJSON_FLOATS = _floats_agree()


def where_in(base: str, where: str) -> str:
    """`base` (a path) joined with a path inside it: ("messages[0]", "content") -> "messages[0].content"."""
    if not where:
        return base
    if not base or where.startswith("["):
        return base + where
    return f"{base}.{where}"


def checked(value: Any, base: str, fail: Callable[[str, str], Exception]) -> Any:
    """`value` after `check`, with a failure raised as `fail(path, message)` (path joined onto `base`)."""
    try:
        check(value)
    except JsonValueError as exc:
        raise fail(where_in(base, exc.where), exc.message) from None
    return value


def loads_body(body: str | bytes, fail: Callable[[str, str], Exception]) -> Any:
    """A request's or a response's body -> its value, by `loads`, whose parse refuses what `check` refuses; a
    refusal raised as `fail(path, message)`: at the culprit's path, or at the top with the decoder's own words
    (what, and the line and column in the text; nothing of the text) for text that is not JSON."""
    try:
        return loads(body)
    except JsonValueError as exc:
        raise fail(exc.where, exc.message) from None
    except ValueError as exc:
        raise fail("", f"is not valid JSON ({exc})") from None


# Texts the engine had orjson write of an object it still holds, by the text's id: (the text, the object), kept
# by one call (`translate_source`: a source request's tool-call inputs, written as arguments text for a provider
# that reads text; `Ctx.written`). orjson writes only JSON `check` passes (no NaN, no Infinity: `orjson_compact`
# leaves text with a null to the standard encoder; no lone surrogate, no key but a str, no int beyond 64 bits, at
# most 254 levels), so `loads` of such a text gives back an object equal to the one held.
WrittenTexts = dict[int, tuple[str, Any]]


def loads_written(text: str, written: WrittenTexts) -> Any:
    """`loads`, but for a text in `written` its object, not its parse (a provider's read of the arguments text a
    source request's reader wrote a moment before). The text is held there, so its id names no other object."""
    held = written.get(id(text))
    if held is not None and held[0] is text:
        return held[1]
    return loads(text)


def loads(text: str | bytes) -> Any:
    """Standard JSON text -> value; ValueError for what is not JSON or is refused by `check`.

    Python reads NaN, Infinity and 1e400 as floats; `check` then refuses them with their path.
    A JSONDecodeError says where in the text; a JsonValueError says where in the value (`.where`).
    Bytes go to orjson as they are (it refuses what is not UTF-8, a BOM and a surrogate, which the standard
    decoder then reads); otherwise they are decoded first (in the encoding json detects), so that the checks
    fold into the parse.
    """
    # orjson reads it 3x as fast when it reads it the same. This runs on every streamed event: the byte classes are
    # made here, not in a helper, and a short text (the usual event) is not counted for its depth; a call less
    # counts in a small event's parse.
    encoded = text.encode("utf-8", "surrogatepass") if type(text) is str else text
    if orjson is not None and type(encoded) is bytes:
        classes = encoded.translate(_NUMBER_CLASSES)
        if (run := classes.find(_LONG_NUMBER)) < 0 or _long_numbers_quoted(classes, run):
            try:
                value = orjson.loads(encoded)
            except orjson.JSONDecodeError:
                pass  # not JSON, or JSON `check` refuses: the standard decoder below says which and where
            else:  # orjson reads up to 1,024 levels and writes up to 254: a value it writes is within MAX_DEPTH
                if len(encoded) < _DEEP_TEXT or not _may_nest_deep(encoded) or _writes(value):
                    return value
    if not isinstance(text, str):  # undecodable: json reads it with surrogatepass, `check` names the culprit
        with contextlib.suppress(UnicodeDecodeError):
            text = text.decode(json.detect_encoding(text))
    try:
        try:
            value = _FINITE.decode(text) if type(text) is str else json.loads(text)
            clean = type(text) is str and _plain_text(text)
        except _NotFinite:  # decoded again as Python reads it, so that `check` names the culprit's path
            value, clean = json.loads(text), False
    except RecursionError:
        raise JsonValueError("", f"is nested deeper than {MAX_DEPTH} levels") from None
    except MemoryError:
        raise JsonValueError("", "is too large to decode") from None
    if not clean:
        check(value)
    return value


def standard_loads(text: str) -> Any:
    """`json.loads(text)` exactly (NaN and Infinity read as floats, its own errors), read by orjson where orjson
    reads the text the same (3x as fast): for text the engine wrote itself or already checked."""
    encoded = _for_orjson(text)
    if encoded is not None:
        try:
            return orjson.loads(encoded)
        except orjson.JSONDecodeError:
            pass  # not JSON, or JSON orjson refuses (NaN): the standard decoder reads it or says why not
    return json.loads(text)


def standard_loads_each(texts: list[str]) -> list[Any]:
    """`standard_loads` of each text, or the text itself where that raises ValueError (text that is not JSON):
    an answer's tool-call arguments as objects. Each text is read by orjson first, as it is (no bytes made for
    it); whether orjson read the numbers alike is asked after, once, of all the texts' UTF-8 (which orjson's reads
    have cached in each str, so making it copies) joined by commas: a comma is what a number may follow, so the
    joined bytes hold a long number orjson may read otherwise where one of the texts does, and one translate and
    search serve them all. Only then is each text asked alone, and the standard decoder reads the few orjson may
    not have read alike. The depth `_for_orjson` also counts is not asked: orjson reads text up to its own limit
    as the standard decoder does, and refuses deeper text (and NaN, a lone surrogate), which the standard decoder
    then reads or refuses."""
    if orjson is None:
        return [_standard_or_text(text) for text in texts]
    out: list[Any] = []
    encoded: list[bytes] = []
    for text in texts:
        try:
            out.append(orjson.loads(text))
        except orjson.JSONDecodeError:
            out.append(_standard_or_text(text))
        encoded.append(text.encode("utf-8", "surrogatepass"))
    if not _numbers_read_alike(b",".join(encoded)):  # a long number orjson may have read otherwise: whose?
        for i, text in enumerate(texts):
            if not _numbers_read_alike(encoded[i]):
                out[i] = _standard_or_text(text)  # as it read any it did not (the same read again)
    return out


def _standard_or_text(text: str) -> Any:
    """`json.loads(text)`, or the text itself where it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def loads_object(text: str) -> dict[str, Any] | None:
    """JSON text of one object -> that object; text that is not JSON, or JSON of something else -> None; JSON
    `check` refuses -> JsonValueError, as `loads` says. For text that is often not JSON (a tool's output: log
    lines, one JSON row per line): where orjson reads one whole value and finds more text after it, the
    standard decoder (which would say "Extra data" there) is not asked."""
    encoded = _for_orjson(text)
    if encoded is not None:
        try:
            value = orjson.loads(encoded)
        except orjson.JSONDecodeError as exc:
            if exc.msg.startswith(_AFTER_DOCUMENT):
                return None
        else:
            return value if type(value) is dict else None
    try:
        value = loads(text)
    except JsonValueError:
        raise
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# orjson's message for text after one whole JSON value (on another wording, the standard decoder decides).
_AFTER_DOCUMENT = "unexpected content after document"


def _for_orjson(text: str | bytes) -> bytes | None:
    """Text as the bytes orjson reads exactly as the standard decoder does, with nothing left for `check`
    (None: orjson missing, a number orjson may read otherwise, or more brackets than MAX_DEPTH in text long
    enough to nest that deep: the check's to judge; bytes as they are)."""
    if orjson is None or (type(text) is not str and type(text) is not bytes):
        return None
    encoded = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return encoded if _numbers_read_alike(encoded) and not _may_nest_deep(encoded) else None


def _may_nest_deep(encoded: bytes) -> bool:
    """Whether the text holds enough brackets and braces to nest deeper than MAX_DEPTH."""
    return len(encoded) >= _DEEP_TEXT and encoded.count(b"[") + encoded.count(b"{") > MAX_DEPTH


def _writes(value: Any) -> bool:
    """Whether orjson writes the value it read (it refuses more than 254 levels, fewer than MAX_DEPTH)."""
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def _numbers_read_alike(encoded: bytes, quoted: bool = True) -> bool:
    """Whether orjson reads every number of the text as the standard decoder does (see below). Any 19 bytes in a
    row hold four bytes at a multiple of 4, one after another: text whose every 4th byte shows no 4 digits in a row
    holds no run of 19 digits, and only a quarter of it is classed; else the whole text's classes say. `quoted`
    False: any run of 19 digits says no, one inside a string too (for orjson's text of texts, `texts_read_alike`,
    whose escapes hide what a run in a text follows)."""
    if len(encoded) >= _SAMPLED_FROM and encoded[::_SAMPLE_STEP].translate(_NUMBER_CLASSES).find(_SAMPLED_RUN) < 0:
        return True
    classes = encoded.translate(_NUMBER_CLASSES)
    run = classes.find(_LONG_NUMBER)
    return run < 0 or (quoted and _long_numbers_quoted(classes, run))


ORJSON_LOADS: Callable[[str | bytes], Any] | None = None if orjson is None else orjson.loads
"""orjson's parse, None without orjson (a generated fused answer's per-call parse: `fused_answer_code`)."""


def texts_read_alike(texts: list[str]) -> bool:
    """Whether orjson, having read each text, read every number in them as the standard decoder does: the texts'
    UTF-8 joined by commas screened as one text (as `standard_loads_each` asks), so a run of 19 digits inside a
    string (after a quote or a letter, as the texts are, unescaped) passes. A text orjson read encodes (it holds no
    lone surrogate). On long texts a third cheaper than screening orjson's write of the list, whose escapes hide
    what a run follows."""
    return _numbers_read_alike(b",".join(map(str.encode, texts)))


def _long_numbers_quoted(classes: bytes, run: int) -> bool:
    """Whether every run of 19 digits (the first at `run`) lies inside a string: one search from the first on (an id
    of digits, say) settles it."""
    return run > 0 and classes.find(_LONG_NUMBER_AFTER, run - 1) < 0


# orjson refuses NaN, Infinity, 1e400 and lone surrogates as `check` does, and reads numbers as Python does,
# except an integer beyond 64 bits (a float there): text with no run of 19 digits that starts the text or follows
# what a number's digits can follow is read by orjson (a run after a letter or a quote is inside a string, such
# as an id: orjson reads it). Every byte as its class: a digit '0', anything a number's digits can follow ':' (an
# opening bracket or brace too: a run after a brace is not JSON, so treating it as a number only sends the text to
# the standard decoder; one class, so that one search finds a run after any of them), anything else 'x'.
_BEFORE_NUMBER = frozenset(b"-+.eE:, \t\n\r[{")
_NUMBER_CLASSES = bytes(
    ord("0") if 0x30 <= b <= 0x39 else ord(":") if b in _BEFORE_NUMBER else ord("x") for b in range(256)
)
_LONG_NUMBER = b"0" * 19
# Every 4th byte, 4 digits in a row: what a run of 19 digits shows there (19 // 4 == 4), and what a date, a time of
# day or a 10-digit timestamp does not (a wider step would see them: 2025-10-15T22:02:00Z has digits 5 and 6
# apart); shorter text is classed whole, as cheaply as sampled.
_SAMPLE_STEP = 4
_SAMPLED_RUN = b"0" * (len(_LONG_NUMBER) // _SAMPLE_STEP)
_SAMPLED_FROM = 256
_LONG_NUMBER_AFTER = b":" + _LONG_NUMBER
# Valid JSON nested deeper than MAX_DEPTH opens and closes MAX_DEPTH + 1 arrays or objects: shorter text cannot
# (orjson refuses it, or reads it no deeper than the limit).
_DEEP_TEXT = 2 * (MAX_DEPTH + 1)


# A \\u escape of a surrogate (U+D800-U+DFFF): the only way JSON text that encodes as UTF-8 can yield a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _plain_text(text: str) -> bool:
    """Whether text the finite decoder read needs no `check`: it encodes as UTF-8 and escapes no surrogate
    (so it holds no lone one), and has at most MAX_DEPTH brackets and braces (so it cannot nest deeper)."""
    if len(text) >= _DEEP_TEXT and text.count("[") + text.count("{") > MAX_DEPTH:
        return False
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        return False
    return text.isascii() or _utf8(text)


class _NotFinite(Exception):
    pass


def _not_finite(_text: str) -> Any:
    raise _NotFinite


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e400
        raise _NotFinite
    return number


# The standard decoder, stopped by NaN, Infinity and overflowing numbers, which `check` then locates.
_FINITE = json.JSONDecoder(parse_constant=_not_finite, parse_float=_finite_float)


def describe(exc: ValueError) -> str:
    """A short text for a `loads` failure (where in the text or in the value, and what)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"is not valid JSON ({exc.msg} at character {exc.pos})"
    if isinstance(exc, JsonValueError):
        return f"{exc.message} (at {exc.where})" if exc.where else exc.message
    return f"is not valid JSON ({exc})"


class _Problem(Exception):
    def __init__(self, message: str) -> None:
        self.message = message
        self.parts: list[str | int] = []


def locate(value: Any) -> tuple[str, str] | None:
    """(path inside `value`, what is wrong) for the first problem found, or None."""
    try:
        _walk(value, 1)
    except _Problem as problem:
        where = ""
        for part in reversed(problem.parts):
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else part)
        return where, problem.message
    except RecursionError:  # called from deep inside some caller's stack
        return "", f"is nested too deep to check (the limit is {MAX_DEPTH} levels)"
    return None


def _walk(value: Any, depth: int) -> None:
    """Raise _Problem for the first value JSON cannot hold; depth counts the arrays and objects around it."""
    kind = type(value)
    if kind is str or isinstance(value, str):
        if not value.isascii():
            _text(value)
    elif isinstance(value, (dict, list, tuple)):
        if depth > MAX_DEPTH:
            raise _Problem(f"is nested deeper than {MAX_DEPTH} levels")
        # An integer key (a list index, or one the standard encoder writes as its text) needs no check.
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            if type(key) is not int and not (type(key) is str and key.isascii()):
                _key(key)
            if type(item) in _SCALARS:
                continue
            try:
                _walk(item, depth + 1)
            except _Problem as problem:
                problem.parts.append(key)
                raise
    elif kind is float or isinstance(value, float):
        if not math.isfinite(value):
            raise _Problem(f"is {value!r}, not a finite number (NaN, Infinity, beyond 1.8e308): JSON cannot say it")
    elif not isinstance(value, (int, type(None))):
        raise _Problem(f"is not a JSON value ({kind.__name__})")


def _key(key: Any) -> None:
    if not isinstance(key, str):
        raise _Problem(f"has a key that is not a string ({type(key).__name__})")
    try:
        _text(key)
    except _Problem as problem:
        problem.message = "a key " + problem.message
        problem.parts.append(key)
        raise


def _text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Problem(
            f"holds a lone surrogate {text[exc.start]!r} at character {exc.start}, which UTF-8 cannot encode"
        ) from None
