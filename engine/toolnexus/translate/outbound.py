"""Provider response -> OpenAI-shaped TranslateResult, compiled from a rule file's
`response` section.

The response is read through *item sources*: each names a path (`each:` a list,
or `one:` object) and templates that turn an element into any of
`{text: ...}`, `{reasoning: ...}`, `{tool_call: {id, name, arguments, extra_content}}`
and `{message: {...}}`. Texts and reasonings concatenate in provider order, tool
calls keep provider order, `message` pieces merge into the assistant message's
extras (mappings merge, lists concatenate; a second, different value for one key
is noted and the first kept), and elements of a kind the rules do not know are
reported as notes and left in `raw`. Then the finish-reason table (any tool call
wins), usage and model.

A readable answer is never lost over accounting: a count that is not a non-negative integer is
left out and noted (`dropped`), and usage that breaks an invariant (prompt_tokens covers the
cached and cache-write counts, total is prompt + completion, completion covers reasoning) is
kept as given and noted (`inconsistent`). No count is ever made up. `toolnexus check` holds the
rules to the invariants: a case result with such a note fails unless the case expects it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, NoReturn

from ..errors import Note, ResponseError
from ..language.ids import IdRule, compile_id_rule
from ..language.jsonsafe import checked
from ..language.loader import RuleSource
from ..language.paths import MISSING, Getter
from ..language.templates import Ctx, Env, Render, compile_template, path_getter
from .result import TranslatedToolCall, TranslateResult

FINISH_TOOL_CALLS = "tool_calls"
FINISH_STOP = "stop"


@dataclass(frozen=True)
class ItemSource:
    path: str
    getter: Getter
    each: bool
    optional: bool
    kind: Getter | None
    kinds: dict[str, Render]
    template: Render | None
    arguments: str  # object | text | any: the form tool-call arguments must arrive in
    field_paths: dict[str, dict[str, str]]  # kind ("" without kinds) -> tool_call field -> path in the element
    optional_if: tuple[Getter, ...] = ()  # absent is fine when any of these is present (a blocked answer)
    kind_by_key: bool = False  # the kind is the first `kinds` key present in the element
    synthesize_ids: bool = False  # a tool call without an id gets one: see `synthesized_id`

    def element_path(self, index: int) -> str:
        """The response path of one element (built only for errors and notes)."""
        return f"{self.path}[{index}]" if self.each else self.path

    def pick(self, element: Any) -> tuple[Any, Render | None]:
        """The element's kind ("" without kinds) and its template; None for a kind the rules do not know."""
        if self.kind is None and not self.kind_by_key:
            return "", self.template
        if self.kind_by_key:
            kind = _first_key(element, self.kinds)
        else:
            kind = self.kind(element) if isinstance(element, dict) and self.kind else MISSING
        return kind, (self.kinds.get(kind) if isinstance(kind, str) else None)


@dataclass
class Outbound:
    provider: str
    model: Render | None
    sources: tuple[ItemSource, ...]
    stop_path: str
    stop: Getter
    table: dict[str, str]
    unknown: str
    missing: str | None
    usage: Render
    blocked: tuple[str, Getter, str] | None = None  # (path, getter, finish reason): an answer refused whole
    tool_call_ids: IdRule | None = None  # ids encoded on the way in are restored on the way out

    def translate(self, response: Any, *, requested_model: str | None = None) -> TranslateResult:
        provider = self.provider
        if not isinstance(response, dict):
            raise ResponseError("", f"the response must be an object, got {type(response).__name__}", provider=provider)
        checked(response, "", lambda path, message: ResponseError(path, message, provider=provider))
        ctx = Ctx(provider, outbound=True)
        texts: list[str] = []
        calls: list[TranslatedToolCall] = []
        found = _Found()
        for src in self.sources:
            self._read_source(src, response, ctx, texts, calls, found)

        finish = self._finish_reason(response, bool(calls), ctx)
        usage = self.usage(response, ctx)
        usage = {} if usage is MISSING else _counts(usage, ctx)
        ctx.notes += check_usage(usage)
        model = self.model(response, ctx) if self.model is not None else MISSING
        if model is MISSING or not isinstance(model, str):
            model = requested_model or ""
        return TranslateResult(
            text="".join(texts),
            tool_calls=calls,
            finish_reason=finish,
            usage=usage,
            model=model,
            raw=response,
            notes=tuple(ctx.notes),
            reasoning_content="".join(found.reasoning),
            message_extras=found.extras,
        )

    def _read_source(
        self,
        src: ItemSource,
        response: dict[str, Any],
        ctx: Ctx,
        texts: list[str],
        calls: list[TranslatedToolCall],
        found: _Found,
    ) -> None:
        container = src.getter(response)
        if container is MISSING or container is None:
            if src.optional or any(present(response) not in (MISSING, None) for present in src.optional_if):
                return
            raise ResponseError(src.path, "is missing", provider=self.provider)
        if not src.each:
            elements: list[Any] = [container]
        elif isinstance(container, list):
            elements = container
        else:
            raise ResponseError(src.path, f"must be a list, got {type(container).__name__}", provider=self.provider)
        fields = src.field_paths.get("", {})
        for i, element in enumerate(elements):
            kind, template = src.pick(element)
            if src.kind is not None or src.kind_by_key:
                if template is None:
                    if not isinstance(element, dict):
                        raise ResponseError(
                            src.element_path(i),
                            f"must be an object, got {type(element).__name__}",
                            provider=self.provider,
                        )
                    note = f"unknown {self.provider} item kind {kind!r}; kept in raw"
                    ctx.notes.append(Note("unknown", src.element_path(i), note))
                    continue
                assert isinstance(kind, str)
                fields = src.field_paths[kind]
            assert template is not None
            ctx.path = (src, i)
            item = template(element, ctx)
            if item is MISSING:  # the rules found nothing they know in it: say so, keep it in raw
                ctx.notes.append(Note("unknown", src.element_path(i), "nothing the rules read is in it; kept in raw"))
                continue
            text = item.get("text")
            if text is not None:
                if type(text) is not str:
                    raise ResponseError(
                        src.element_path(i), f"text must be a string, got {type(text).__name__}", provider=self.provider
                    )
                texts.append(text)
            if "reasoning" in item or "message" in item:
                self._read_extras(item, ctx, found)
            call = item.get("tool_call")
            if call is not None:
                if src.synthesize_ids and not call.get("id"):
                    if found.digest is None:
                        found.digest = response_digest(response, self.provider)
                    call = {**call, "id": synthesized_id(found.digest, len(calls))}
                    ctx.notes.append(Note("synthesized", src.element_path(i), f"no call id; sent as {call['id']}"))
                calls.append(self._tool_call(call, src, i, fields, ctx))
        ctx.path = ""

    def _read_extras(self, item: dict[str, Any], ctx: Ctx, found: _Found) -> None:
        """An item's reasoning text and its pieces of the assistant message (ctx.path is the element)."""
        reasoning = item.get("reasoning")
        if reasoning is not None:
            if type(reasoning) is not str:
                message = f"reasoning must be a string, got {type(reasoning).__name__}"
                raise ResponseError(ctx.where(), message, provider=self.provider)
            found.reasoning.append(reasoning)
        extras = item.get("message")
        if extras is not None:
            if not isinstance(extras, dict):
                message = f"message extras must be a mapping, got {type(extras).__name__}"
                raise ResponseError(ctx.where(), message, provider=self.provider)
            merge_extras(found.extras, extras, "", ctx)

    def _tool_call(
        self, call: dict[str, Any], src: ItemSource, i: int, fields: dict[str, str], ctx: Ctx
    ) -> TranslatedToolCall:
        """Validate one tool call; errors point at the field inside the element when the rule reads it plainly."""
        call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments", MISSING)
        extra = call.get("extra_content")
        if extra is not None and not isinstance(extra, dict):
            message = f"a tool call's extra_content must be a mapping, got {type(extra).__name__}"
            raise ResponseError(src.element_path(i), message, provider=self.provider)
        form = src.arguments
        if type(arguments) is dict and form != "text":
            try:
                arguments = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ResponseError(
                    src.element_path(i), f"tool input is not representable as JSON ({exc})", provider=self.provider
                ) from None
        if (
            type(call_id) is str
            and call_id
            and type(name) is str
            and name
            and type(arguments) is str
            and (form != "object" or type(call.get("arguments")) is dict)
        ):
            if self.tool_call_ids is not None:
                given = call_id
                call_id = self.tool_call_ids.restore(call_id)
                if call_id != given:
                    ctx.notes.append(Note("rewritten", src.element_path(i), f"id {given!r} restored to {call_id!r}"))
            return TranslatedToolCall(id=call_id, name=name, arguments=arguments, extra_content=extra)
        return self._bad_tool_call(call, src.element_path(i), fields, form)

    def _bad_tool_call(self, call: dict[str, Any], path: str, fields: dict[str, str], form: str) -> NoReturn:
        def where(name: str) -> str:
            return f"{path}.{fields[name]}" if name in fields else path

        call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments", MISSING)
        if not isinstance(call_id, str) or not call_id:
            raise ResponseError(where("id"), "a tool call needs a non-empty string id", provider=self.provider)
        if not isinstance(name, str) or not name:
            raise ResponseError(where("name"), "a tool call needs a non-empty string name", provider=self.provider)
        got = "nothing" if arguments is MISSING else type(arguments).__name__
        wanted = "a JSON string" if form == "text" else "a JSON object"
        raise ResponseError(where("arguments"), f"tool input must be {wanted}, got {got}", provider=self.provider)

    def _finish_reason(self, response: dict[str, Any], has_tool_calls: bool, ctx: Ctx) -> str:
        stop = self.stop(response)
        if has_tool_calls:
            return FINISH_TOOL_CALLS
        if self.blocked is not None and self.blocked[1](response) not in (MISSING, None):
            return self.blocked[2]
        if stop is MISSING or stop is None:
            if self.missing is None:
                raise ResponseError(self.stop_path, "is missing", provider=self.provider)
            ctx.notes.append(Note("synthesized", self.stop_path, f"no stop reason given; reported as {self.missing!r}"))
            return self.missing
        mapped = self.table.get(stop) if isinstance(stop, str) else None
        if mapped is None:
            ctx.notes.append(
                Note("unknown", self.stop_path, f"unknown stop reason {stop!r}; reported as {self.unknown!r}")
            )
            return self.unknown
        if mapped == FINISH_TOOL_CALLS:  # "tool_calls" promises tool calls; there are none
            ctx.notes.append(Note("rewritten", self.stop_path, f"{stop!r} came with no tool call; reported as 'stop'"))
            return FINISH_STOP
        return mapped

    def finish_reason_for(self, has_tool_calls: bool, provider_stop: str | None) -> str:
        """The finish reason alone, without a response (the seed's named helper)."""
        if has_tool_calls:
            return FINISH_TOOL_CALLS
        if provider_stop is None:
            return self.missing or self.unknown
        if self.table.get(provider_stop) == FINISH_TOOL_CALLS:
            return FINISH_STOP
        return self.table.get(provider_stop, self.unknown)


# ---------------------------------------------------------------- compiling


def compile_outbound(source: RuleSource) -> Outbound:
    data = source.data
    rule = data["response"]
    key = ("response",)
    sources = []
    for i, spec in enumerate(rule["items"]):
        at = (*key, "items", i)
        has_each, has_one = "each" in spec, "one" in spec
        if has_each == has_one:
            raise source.error(at, "give exactly one of `each` (a list) or `one` (an object)")
        path = spec["each"] if has_each else spec["one"]
        by_key = bool(spec.get("kind_by_key", False))
        has_kind, has_as = "kind" in spec or by_key, "as" in spec
        if has_kind == has_as or ("kind" in spec and by_key):
            raise source.error(at, "give either `kind` (or `kind_by_key`) with `kinds`, or `as`")
        if has_kind and not isinstance(spec.get("kinds"), dict):
            raise source.error(at, "`kind` needs a `kinds` table")
        kinds = {
            name: compile_template(tmpl, (*at, "kinds", name), Env(source))
            for name, tmpl in (spec.get("kinds") or {}).items()
        }
        sources.append(
            ItemSource(
                path=path,
                getter=path_getter(path, (*at, "each" if has_each else "one"), Env(source)),
                each=has_each,
                optional=bool(spec.get("optional", False)),
                kind=path_getter(spec["kind"], (*at, "kind"), Env(source)) if "kind" in spec else None,
                kinds=kinds,
                template=compile_template(spec["as"], (*at, "as"), Env(source)) if has_as else None,
                arguments=spec.get("arguments", "any"),
                field_paths={
                    name: _tool_call_paths(tmpl)
                    for name, tmpl in ({"": spec["as"]} if has_as else spec["kinds"]).items()
                },
                optional_if=tuple(
                    path_getter(p, (*at, "optional_if", j), Env(source))
                    for j, p in enumerate(spec.get("optional_if", []))
                ),
                kind_by_key=by_key,
                synthesize_ids=bool(spec.get("synthesize_ids", False)),
            )
        )

    finish = rule["finish_reason"]
    missing_values = [v for v in finish["documented"] if v not in finish["table"]]
    if missing_values:
        raise source.error(
            (*key, "finish_reason", "table"),
            f"does not cover the documented stop reason(s) {', '.join(missing_values)}",
        )
    return Outbound(
        provider=data["provider"],
        model=compile_template(rule["model"], (*key, "model"), Env(source)) if "model" in rule else None,
        sources=tuple(sources),
        stop_path=finish["from"],
        stop=path_getter(finish["from"], (*key, "finish_reason", "from"), Env(source)),
        table=dict(finish["table"]),
        unknown=finish["unknown"],
        missing=finish.get("missing"),
        usage=compile_template(rule["usage"], (*key, "usage"), Env(source)),
        blocked=(
            (
                finish["blocked"]["from"],
                path_getter(finish["blocked"]["from"], (*key, "finish_reason", "blocked", "from"), Env(source)),
                finish["blocked"]["reason"],
            )
            if "blocked" in finish
            else None
        ),
        tool_call_ids=compile_id_rule(source),
    )


def _tool_call_paths(template: Any) -> dict[str, str]:
    """For error paths: which element field a tool_call template reads, where it is a plain `$get`."""
    call = template.get("tool_call") if isinstance(template, dict) else None
    if not isinstance(call, dict):
        return {}
    return {
        name: spec["$get"]
        for name, spec in call.items()
        if isinstance(spec, dict) and isinstance(spec.get("$get"), str)
    }


class _Found:
    """What a response's items add beyond text and tool calls."""

    __slots__ = ("digest", "extras", "reasoning")

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.extras: dict[str, Any] = {}
        self.digest: str | None = None  # the response's digest, computed once for its synthesized ids


def merge_extras(into: dict[str, Any], extras: dict[str, Any], prefix: str, ctx: Ctx) -> None:
    """Merge one item's assistant-message pieces: mappings merge, lists concatenate, a clash keeps the first.

    A clash is noted at ctx's path (the element being read).
    """
    for key, value in extras.items():
        have = into.get(key, MISSING)
        if have is MISSING:
            if isinstance(value, dict):
                into[key] = {}
                merge_extras(into[key], value, f"{prefix}{key}.", ctx)
            else:
                into[key] = list(value) if isinstance(value, list) else value  # never extend the response's own list
        elif isinstance(have, list) and isinstance(value, list):
            have.extend(value)
        elif isinstance(have, dict) and isinstance(value, dict):
            merge_extras(have, value, f"{prefix}{key}.", ctx)
        elif have != value:
            message = f"a second {prefix}{key} for the assistant message; the first is kept"
            ctx.notes.append(Note("dropped", ctx.where(), message))


def check_usage(usage: dict[str, Any]) -> list[Note]:
    """The usage invariants every provider's rules must keep: a note for each one broken.

    prompt_tokens includes the cached and cache-write counts; total_tokens is
    prompt_tokens + completion_tokens; completion_tokens includes the reasoning count.
    """
    prompt, completion, total = usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens", 0) + details.get("cache_write_tokens", 0)
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0)
    notes = []
    if prompt is not None and completion is not None and total is not None and total != prompt + completion:
        message = f"is {total}, but prompt_tokens + completion_tokens is {prompt + completion}"
        notes.append(Note("inconsistent", "usage.total_tokens", message))
    if cached and (prompt is None or cached > prompt):
        message = f"is {'absent' if prompt is None else prompt}, less than its cached and cache-write tokens ({cached})"
        notes.append(Note("inconsistent", "usage.prompt_tokens", message))
    if reasoning and (completion is None or reasoning > completion):
        message = f"is {'absent' if completion is None else completion}, less than its reasoning tokens ({reasoning})"
        notes.append(Note("inconsistent", "usage.completion_tokens", message))
    return notes


def _counts(usage: dict[str, Any], ctx: Ctx, where: tuple[str, ...] = ("usage",)) -> dict[str, Any]:
    """Usage as OpenAI has it: non-negative integers, and `*_details` objects of them; a null count is
    absent, any other value is left out and noted (`where` is the path so far, joined only for a note)."""
    out: dict[str, Any] = {}
    for key, value in usage.items():
        if type(value) is int and value >= 0:
            out[key] = value
        elif value is None:
            continue
        elif isinstance(value, dict) and len(where) == 1 and key.endswith("_details"):
            inner = _counts(value, ctx, (*where, key))
            if inner:
                out[key] = inner
        else:
            ctx.bad_count(".".join((*where, key)), value, "an object of counts" if key.endswith("_details") else None)
    return out


def _first_key(element: Any, kinds: dict[str, Render]) -> Any:
    """`kind_by_key`: the first `kinds` key the element holds with a value (not null or false)."""
    if not isinstance(element, dict):
        return MISSING
    for name in kinds:
        value = element.get(name)
        if value is not None and value is not False:
            return name
    return next(iter(element), MISSING)  # unknown: named by its first key, for the note


def response_digest(response: Any, provider: str) -> str:
    """A digest of the whole response (its JSON with sorted keys): the part of a synthesized id that
    tells two answers apart. Two answers that differ anywhere (a response id, a token count, the
    call itself) get different digests; the same response always gets the same one."""
    try:
        text = json.dumps(response, sort_keys=True, ensure_ascii=True, default=repr)
    except (RecursionError, TypeError, ValueError) as exc:  # nested too deep, keys that do not sort, a cycle
        message = f"cannot be read as JSON to give its tool calls ids ({type(exc).__name__})"
        raise ResponseError("", message, provider=provider) from None
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def synthesized_id(digest: str, position: int) -> str:
    """`call_<position>_<response digest>`: unique within the result (the position among its tool calls)
    and across answers (the digest), stable for the same response."""
    return f"call_{position}_{digest}"
