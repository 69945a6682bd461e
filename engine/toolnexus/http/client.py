"""client.translate: OpenAI shapes in, exactly one provider call, OpenAI shapes out.

Nothing executes and nothing is remembered between calls. The body is exactly
what `translate_request` returns (then `request_params`, then `before_llm`);
the result is `translate_response` of the decoded answer. The call itself (retries,
deadlines, caps, the error map, key scrubbing, hooks, one `llm` event per call) is
the call layer's (call.py), shared with `translate_stream` (client_stream.py); this
module adds the translation around it and the cancel event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from functools import partial
from typing import Any, Literal, overload

from ..errors import Cancelled, ConfigError, TranslationError
from ..toolkit.toolkit import Toolkit
from ..translate.endpoint import check_headers
from ..translate.formats import PLAIN, AnswerBody, translate_source
from ..translate.inbound import RequestBody
from ..translate.result import TranslateResult
from ..translate.rulebook import Provider, RulesArg, load_rules
from .call import AfterLLM, BeforeLLM, Caller, LLMEvent, Policy, encode_body, request_notes
from .client_stream import SourceEventStream, TranslateStream
from .limits import MAX_EVENT_BYTES, MAX_RESPONSE_BYTES, check_cap, overall_default
from .transport import TransportOption

REFUSED_PARAMS = frozenset({"messages", "tools", "stream"})
OWN_ARGUMENTS = frozenset({"model", "messages", "tools", "tool_choice", "max_tokens"})  # translate's own arguments
__all__ = ["Client", "LLMEvent", "create_client", "encode_body"]


class Client:
    """Translates one OpenAI-shaped turn through one provider call. Safe to share across tasks.

    base_url: the provider's base URL; None (the default) takes the one its rule file names.
    style: any provider the rules define. api_key: explicit, else the env var the rule
    file names (ANTHROPIC_API_KEY, ...). A model name, key, header or base URL that cannot
    be sent as it is is a ConfigError here, before any request. system_prompt: the client-wide default, used
    only when neither the call nor the transcript gives one. timeout: seconds per attempt,
    a deadline for all of it (connect, headers, every byte); overall_timeout: for all attempts
    together, by default every attempt's timeout plus the longest retry-after honoured between
    them (300 s with the defaults). max_response_bytes: the most a body may hold once inflated;
    max_event_bytes: the most one streamed event (or line) may hold; beyond either the call
    fails with ProviderError kind too_large (see limits.py for the defaults). max_retries: extra attempts on
    connection errors, timeouts, 408/409/429/5xx (0 = exactly one attempt); backoff:
    (first delay, ceiling) in seconds, the provider's retry-after wins. request_params:
    merged into every body after translation (messages, tools and stream are refused).
    before_llm(body) may return a replacement body; after_llm(response) sees the decoded
    answer; on_event receives one LLMEvent per call. transport: "aiohttp" (the default: aiohttp's
    pool, used directly), "httpx" (httpx's own pool), an httpx transport, or an AiohttpStack (aiohttp
    with a connection limit or a TLS context; see http/transport.py). endpoint_options: the values
    the rule file's `endpoint.options` name (an Azure deployment, a Vertex project and location, an
    OpenRouter title header); a required one
    missing, or one the rules do not declare, is a ConfigError here.
    credentials: for a provider whose rules authenticate with aws-sigv4 or google-oauth,
    a botocore or google-auth Credentials object instead of the standard chain's (see http/auth.py;
    an api_key given instead is sent as a bearer token). A client belongs to the event loop it first calls in.
    """

    def __init__(
        self,
        base_url: str | None = None,
        style: str = "",
        model: str = "",
        api_key: str | None = None,
        *,
        system_prompt: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60.0,
        overall_timeout: float | None = None,
        max_retries: int = 2,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
        backoff: tuple[float, float] = (0.5, 8.0),
        rules: RulesArg = None,
        before_llm: BeforeLLM | None = None,
        after_llm: AfterLLM | None = None,
        request_params: dict[str, Any] | None = None,
        on_event: Callable[[LLMEvent], None] | None = None,
        transport: TransportOption = None,
        credentials: Any = None,
        endpoint_options: Mapping[str, str] | None = None,
    ) -> None:
        missing = [name + "=" for name, value in (("style", style), ("model", model)) if not value]
        if missing:
            raise ConfigError(f"create_client needs {' and '.join(missing)}")
        if max_retries < 0:
            raise ConfigError("max_retries must be 0 or more")
        refused = REFUSED_PARAMS & set(request_params or {})
        if refused:
            raise ConfigError(f"request_params cannot set {', '.join(sorted(refused))}: translate owns them")
        self._book = load_rules(rules)
        self._provider: Provider = self._book.get(style)
        endpoint = self._provider.endpoint
        key = endpoint.resolve_key(api_key)
        check_headers(headers or {})
        values = endpoint.values(model, endpoint_options)  # the URL's, query's and headers' placeholders
        self._values = values  # and a streamed request's overlay's (`streaming.request`)
        self._url = str(endpoint.url(base_url, model, values=values))  # parsed once; a bad model or option raises
        streaming = self._provider.streaming
        self._stream_url = (
            str(endpoint.url(base_url, model, streaming.path, values)) if streaming and streaming.path else self._url
        )
        headers = {**endpoint.headers_for(values), **(headers or {})}
        self.style = style
        self.model = model
        self.base_url = endpoint.base(base_url, values)
        self.system_prompt = system_prompt
        self.max_retries = max_retries
        self.timeout = timeout
        self.overall_timeout = overall_timeout if overall_timeout is not None else overall_default(timeout, max_retries)
        self.max_response_bytes = check_cap("max_response_bytes", max_response_bytes)
        self.max_event_bytes = check_cap("max_event_bytes", max_event_bytes)
        self._params = dict(request_params or {})
        policy = Policy(
            timeout=timeout, overall_timeout=self.overall_timeout, max_retries=max_retries,
            max_response_bytes=self.max_response_bytes, max_event_bytes=self.max_event_bytes, backoff=backoff,
            before_llm=before_llm, after_llm=after_llm, on_event=on_event,
        )  # fmt: skip
        self._caller = Caller(style, model, endpoint, key, policy, headers=headers, transport=transport,
                              credentials=credentials, secrets=endpoint.secrets(values))  # fmt: skip
        # bound once: one call's answer, translated; checked again only when after_llm could have changed it
        self._answer = self._read_answer if after_llm is not None else self._read_decoded

    def __repr__(self) -> str:
        return f"Client(style={self.style!r}, model={self.model!r}, base_url={self.base_url!r}, api_key='***')"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the connection pool."""
        await self._caller.aclose()

    # ------------------------------------------------------------ the call

    @overload
    async def translate(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
        source: Literal["openai"] = "openai",
    ) -> TranslateResult: ...

    @overload
    async def translate(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
        source: str,
    ) -> TranslateResult | AnswerBody: ...

    async def translate(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
        source: str = PLAIN,
    ) -> TranslateResult | AnswerBody:
        """Exactly one provider call (retries aside): OpenAI messages in, a TranslateResult out.

        `params`: other OpenAI request fields for this call (reasoning_effort, response_format,
        temperature, ...), translated by the rules like the rest. `source`: the shape of `messages`,
        `tools`, `tool_choice` and `params` (README "Source formats"); other than `openai`, the answer
        comes back in that shape too (an `AnswerBody`, e.g. an Anthropic Message, with `.result`).
        """
        self._caller.check_open()
        body = self.build_body(messages, tools=tools, toolkit=toolkit, tool_choice=tool_choice, system=system,
                               max_tokens=max_tokens, params=params, source=source)  # fmt: skip
        notes = request_notes(body)
        content = encode_body(await self._caller.before(body))
        answer = self._answer if not body.id_map else partial(self._answer, id_map=body.id_map)
        call = self._caller.call(self._url, content, answer, notes)
        result = await (call if cancel is None else self._cancellable(call, cancel))
        if source == PLAIN:
            return result
        written: AnswerBody = self._book.format(source).answers[self._provider.name](result, result.raw)
        return written

    @overload
    def translate_stream(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
        source: Literal["openai"] = "openai",
    ) -> TranslateStream: ...

    @overload
    def translate_stream(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
        source: str,
    ) -> TranslateStream | SourceEventStream: ...

    def translate_stream(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
        params: dict[str, Any] | None = None,
        source: str = PLAIN,
    ) -> TranslateStream | SourceEventStream:
        """One streamed provider call: `async for chunk in stream` (OpenAI chunk dicts), then `stream.result`.

        Same parameters as `translate`; the body is translated now (a TranslationError raises here),
        the call starts on the first iteration. See client_stream.py for retries, hooks and cancel.
        With a `source` other than `openai`, a SourceEventStream of that format's events.
        """
        streaming = self._provider.streaming
        if streaming is None:
            raise ConfigError(f"the {self.style} rules have no streaming section")
        body = self.build_body(messages, tools=tools, toolkit=toolkit, tool_choice=tool_choice, system=system,
                               max_tokens=max_tokens, params=params, source=source)  # fmt: skip
        notes = request_notes(body)
        sent = streaming.request_body(body, self._values)
        if source == PLAIN:
            return TranslateStream(self._caller, sent, self._stream_url, streaming, cancel, notes, body.id_map)
        return SourceEventStream(self._caller, sent, self._stream_url, streaming, cancel, notes, body.id_map,
                                 source=self._book.format(source))  # fmt: skip

    def build_body(
        self,
        messages: list[Any],
        *,
        tools: list[Any] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        params: dict[str, Any] | None = None,
        source: str = PLAIN,
    ) -> RequestBody:
        """The provider body translate would send (before `before_llm`): the pure translation + request_params."""
        clash = sorted(OWN_ARGUMENTS & set(params or ()))
        if clash:
            raise TranslationError(clash[0], "is an argument of translate, not a params entry", provider=self.style)
        fmt = None if source == PLAIN else self._book.format(source)
        keys = ("messages", "tools", "max_tokens") if fmt is None else fmt.request_keys()  # the source's own names
        request: dict[str, Any] = {**(params or {}), "model": self.model, keys[0]: messages}
        declared = (toolkit.to_openai() if toolkit is not None else []) + list(tools or [])
        if declared:
            request[keys[1]] = declared
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
        if max_tokens:
            request[keys[2]] = max_tokens
        inbound = self._provider.inbound
        if fmt is None:
            body = inbound.translate(request, system=system, default_system=self.system_prompt)
        else:
            body = translate_source(fmt, inbound, request, system=system, default_system=self.system_prompt)
        if self._params:
            merged = RequestBody({**body, **self._params})
            merged.notes = body.notes
            if body.id_map:
                merged.id_map = body.id_map
            return merged
        return body

    async def _cancellable(self, call: Awaitable[TranslateResult], cancel: asyncio.Event) -> TranslateResult:
        task = asyncio.ensure_future(call)
        waiter = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            waiter.cancel()
        if task.cancelled():
            raise Cancelled("the call was cancelled by the caller's cancel event")
        return task.result()

    def _read_answer(self, data: dict[str, Any], id_map: Mapping[str, str] | None = None) -> TranslateResult:
        return self._provider.outbound.translate(data, requested_model=self.model, id_map=id_map)

    def _read_decoded(self, data: dict[str, Any], id_map: Mapping[str, str] | None = None) -> TranslateResult:
        return self._provider.outbound.translate_decoded(data, requested_model=self.model, id_map=id_map)


create_client = Client
"""`create_client(base_url, style, model, api_key=None, **options)`: the API page's name for `Client(...)`."""
