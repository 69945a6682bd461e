"""The pure public functions: no network, no state, rules compiled once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ConfigError, ProviderError
from .translate.inbound import RequestBody, UnknownFields
from .translate.result import TranslateResult
from .translate.rulebook import RulesArg, load_rules
from .translate.stream import StreamTranslator


def translate_request(
    provider: str,
    request: dict[str, Any],
    *,
    system: str | None = None,
    default_system: str | None = None,
    rules: RulesArg = None,
    unknown_fields: UnknownFields = "error",
) -> RequestBody:
    """An OpenAI Chat Completions request -> the provider-native body.

    `system` (per call) overrides the transcript's system/developer messages,
    which override `default_system` (a client-wide default). A request field the
    rules neither map nor list as unsupported raises, unless `unknown_fields="drop"`.
    The returned dict's `.notes` lists every drop, rewrite and synthesized value.
    """
    return (
        load_rules(rules)
        .get(provider)
        .inbound.translate(request, system=system, default_system=default_system, unknown_fields=unknown_fields)
    )


def translate_response(
    provider: str,
    response: dict[str, Any],
    *,
    requested_model: str | None = None,
    rules: RulesArg = None,
    id_map: Mapping[str, str] | None = None,
) -> TranslateResult:
    """A provider's decoded response -> an OpenAI-shaped TranslateResult.

    `id_map`: the `.id_map` of the request this answers (`translate_request`'s result), so a
    tool-call id the request sent rewritten comes back as the caller's id.

    A body with the provider's error shape (the rule file's `endpoint.error` paths) raises
    ProviderError with its type and message, as the client does for an HTTP error.
    """
    rules_for = load_rules(rules).get(provider)
    error = rules_for.endpoint.error_in(response)
    if error is not None:
        raise ProviderError(error[1], provider=provider, kind="http", error_type=error[0])
    return rules_for.outbound.translate(response, requested_model=requested_model, id_map=id_map)


def stream_translator(
    provider: str,
    *,
    requested_model: str | None = None,
    rules: RulesArg = None,
    id_map: Mapping[str, str] | None = None,
) -> StreamTranslator:
    """A translator for one provider event stream, for callers that do their own HTTP.

    `feed(data)` per server-sent event (its `data:` text) returns OpenAI chunk dicts;
    at the end of the stream `finish()` returns the closing chunks and sets `.result`,
    the TranslateResult `translate_response` gives for the response the events built.
    `id_map` as for `translate_response`.
    """
    streaming = load_rules(rules).get(provider).streaming
    if streaming is None:
        raise ConfigError(f"the {provider} rules have no streaming section")
    return StreamTranslator(streaming, requested_model=requested_model, id_map=id_map)


def providers(rules: RulesArg = None) -> list[str]:
    """The providers the rules define."""
    return load_rules(rules).names()
