"""The pure public functions: no network, no state, rules compiled once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

from .errors import ConfigError, ProviderError
from .translate.formats import PLAIN, AnswerBody, SourceStream, translate_source
from .translate.inbound import RequestBody, UnknownFields
from .translate.result import TranslateResult
from .translate.rulebook import RulesArg, builtin_rulebook, load_rules
from .translate.stream import StreamTranslator


def translate_request(
    provider: str,
    request: dict[str, Any] | bytes | str,
    *,
    system: str | None = None,
    default_system: str | None = None,
    rules: RulesArg = None,
    unknown_fields: UnknownFields = "error",
    source: str = PLAIN,
) -> RequestBody:
    """An OpenAI Chat Completions request (or one in the `source` format) -> the provider-native body.

    `system` (per call) overrides the transcript's system/developer messages,
    which override `default_system` (a client-wide default). A request field the
    rules neither map nor list as unsupported raises, unless `unknown_fields="drop"`.
    The returned dict's `.notes` lists every drop, rewrite and synthesized value. `source`: the
    request's shape, `openai` (Chat Completions) or a format of `rules/formats/` (README
    "Source formats"); errors and notes then name the source request's paths.

    `request`: the decoded request (a dict, checked whole for JSON no provider can read), or its body as
    received (`bytes` or `str`), decoded by the engine's strict parse, which refuses the same things as it
    reads (NaN, Infinity, 1e400, a lone surrogate, nesting beyond `MAX_DEPTH`; text that is not JSON at its
    line and column), so no second pass over it runs.
    """
    book = load_rules(rules)
    inbound = book.get(provider).inbound
    decoded = False
    if isinstance(request, (bytes, str)):  # a body: its parse is the check
        request, decoded = inbound.decode(request), True
    if source == PLAIN:
        return inbound.translate(
            request, system=system, default_system=default_system, unknown_fields=unknown_fields, decoded=decoded
        )
    # The format's reader builds a new Chat Completions request, which `translate` checks as it does a dict's.
    body: RequestBody = translate_source(
        book.format(source),
        inbound,
        request,
        system=system,
        default_system=default_system,
        unknown_fields=unknown_fields,
    )
    return body


@overload
def translate_response(
    provider: str,
    response: dict[str, Any] | bytes | str,
    *,
    requested_model: str | None = None,
    rules: RulesArg = None,
    id_map: Mapping[str, str] | None = None,
    source: Literal["openai"] = "openai",
) -> TranslateResult: ...


@overload
def translate_response(
    provider: str,
    response: dict[str, Any] | bytes | str,
    *,
    requested_model: str | None = None,
    rules: RulesArg = None,
    id_map: Mapping[str, str] | None = None,
    source: str,
) -> TranslateResult | AnswerBody: ...


def translate_response(
    provider: str,
    response: dict[str, Any] | bytes | str,
    *,
    requested_model: str | None = None,
    rules: RulesArg = None,
    id_map: Mapping[str, str] | None = None,
    source: str = PLAIN,
) -> TranslateResult | AnswerBody:
    """A provider's response -> an OpenAI-shaped TranslateResult.

    `response`: the decoded answer (a dict, checked whole for JSON no provider can read), or its body as
    received (`bytes` or `str`), decoded by the engine's strict parse, which refuses the same things as it reads
    (one call for a caller that holds the body; `raw` is then the decoded object).

    With a `source` format other than `openai`: an `AnswerBody`, the answer in that format's shape
    (a dict; e.g. an Anthropic `Message`), with `.result` (the TranslateResult) and `.notes`.

    `id_map`: the `.id_map` of the request this answers (`translate_request`'s result), so a
    tool-call id the request sent rewritten comes back as the caller's id.

    A body with the provider's error shape (the rule file's `endpoint.error` paths) raises
    ProviderError with its type and message, as the client does for an HTTP error.
    """
    book = builtin_rulebook() if rules is None else load_rules(rules)
    rules_for = book.get(provider)
    outbound = rules_for.outbound
    # `type` first: a dict (the common case) is not tested against the tuple, which costs about 1K instructions
    if type(response) is not dict and isinstance(response, (bytes, str)):  # a body: its parse is the check
        answer, tokens = outbound.decode(response), 0
    else:  # the generated function checks it first (`Outbound.translate`)
        answer, tokens = response, -1
    endpoint = rules_for.endpoint
    # `error_in`'s own first screens, here without the call: an answer has no such root, or, where the message is
    # that field alone, no text there
    root = endpoint.error_root
    if (
        root is None
        or type(answer) is not dict
        or ((held := answer.get(root)) is not None and (not endpoint.error_root_only or isinstance(held, str)))
    ):
        error = endpoint.error_in(answer)
        if error is not None:
            raise ProviderError(error[1], provider=provider, kind="http", error_type=error[0])
    if source == PLAIN:
        return outbound.run(outbound, answer, requested_model, id_map, tokens)
    pairs = book.fused_answers.get(source) if type(source) is str else None  # (a format compiled already)
    fused = pairs.get(provider) if pairs else None  # the pair's, where it composes: None, and today's route runs
    if fused is not None and (body := fused(answer, requested_model, id_map, tokens)) is not None:
        return body
    result = outbound.run(outbound, answer, requested_model, id_map, tokens)  # (its error before a bad name's)
    return book.format(source).answers[provider](result, answer)


def stream_translator(
    provider: str,
    *,
    requested_model: str | None = None,
    rules: RulesArg = None,
    id_map: Mapping[str, str] | None = None,
    source: str = PLAIN,
) -> StreamTranslator | SourceStream:
    """A translator for one provider event stream, for callers that do their own HTTP.

    `feed(data)` per server-sent event (its `data:` text) returns OpenAI chunk dicts;
    at the end of the stream `finish()` returns the closing chunks and sets `.result`,
    the TranslateResult `translate_response` gives for the response the events built.
    `id_map` as for `translate_response`. With a `source` format other than `openai`, a
    `SourceStream`: `feed`/`finish` return that format's events (Anthropic `message_start` ...
    `message_stop`), and `finish()` also sets `.message`, the whole answer `translate_response` gives.
    """
    book = load_rules(rules)
    streaming = book.get(provider).streaming
    if streaming is None:
        raise ConfigError(f"the {provider} rules have no streaming section")
    translator = StreamTranslator(streaming, requested_model=requested_model, id_map=id_map)
    if source == PLAIN:
        return translator
    return SourceStream(book.format(source), translator)


def providers(rules: RulesArg = None) -> list[str]:
    """The providers the rules define."""
    return load_rules(rules).names()
