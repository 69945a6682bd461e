"""Secrets: a recognisable key, replayed through every fault of test_faults.py for every provider.

After each run the key must not appear in: str/repr/vars of every exception and of its whole
cause/context chain, its formatted traceback, any log record (DEBUG, the `toolnexus` logger
and every other), any `on_event` LLMEvent (repr and asdict), repr(client), or the result
(repr, to_dict, json.dumps of raw). The stub also quotes the credential it received back in
every error body it sends (a provider that echoes the key), and each test asserts the key did
reach the stub, so it can fail.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import sys
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

import google.auth.credentials
import httpx
import pytest

import toolnexus
from support.cases import CASES
from support.damage import damaged, places, source_formats
from support.faults import (
    FAULTS,
    PROVIDERS,
    STACK_TARGETS,
    STACKS,
    USER,
    FaultStub,
    auth_header,
    error_object,
    model,
    run,
    text_reply,
)
from support.frames import AWS_EVENTSTREAM, NDJSON, aws_exception, ndjson_lines
from toolnexus import ConfigError, ProviderError, ToolkitError, ToolnexusError
from toolnexus.devtools.stub import StubReply, StubRequest
from toolnexus.redact import exception_chain
from toolnexus.translate.endpoint import EXCERPT_BYTES

SECRET = "sk-SECRET-toolnexus-1234567890"


def exception_texts(label: str, error: BaseException) -> dict[str, str]:
    texts = {f"traceback({label})": "".join(traceback.format_exception(error))}
    for depth, link in enumerate(exception_chain(error)):
        where = f"{label} chain[{depth}] {type(link).__name__}"
        texts[f"str({where})"] = str(link)
        texts[f"repr({where})"] = repr(link)
        texts[f"args({where})"] = repr(link.args)
        texts[f"vars({where})"] = repr(vars(link))
    return texts


def record_texts(records: list[logging.LogRecord]) -> dict[str, str]:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    texts = {}
    for i, record in enumerate(records):
        where = f"log[{i}] {record.name}"
        texts[f"{where} message"] = record.getMessage()
        texts[f"{where} msg+args"] = f"{record.msg!s} {record.args!r}"
        texts[f"{where} formatted"] = formatter.format(record)
    return texts


@pytest.mark.parametrize(("provider", "stack"), STACK_TARGETS)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_the_key_never_leaves_through_a_fault(
    provider: str, stack: str, fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger (httpx, httpcore and aiohttp too) at DEBUG
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    outcome = run(provider, FAULTS[fault](provider, True), api_key=SECRET, stack=stack)

    # the key was really in play: it reached the stub (nothing listens for a refused connection)
    if fault == "refused":
        assert outcome.requests == []
    else:
        assert outcome.requests, "no request reached the stub"
        assert all(SECRET in request.headers.get(auth_header(provider), "") for request in outcome.requests)

    haystacks: dict[str, str] = {"repr(client)": outcome.client_repr}
    for i, error in enumerate(outcome.errors):
        haystacks.update(exception_texts(f"error {i}", error))
    toolnexus_records = [r for r in caplog.records if r.name.startswith("toolnexus")]
    assert toolnexus_records, "the toolnexus logger said nothing at DEBUG"
    haystacks.update(record_texts(caplog.records))
    haystacks["caplog.text"] = caplog.text
    assert outcome.events, "no LLMEvent was emitted"
    for i, event in enumerate(outcome.events):
        haystacks[f"repr(event {i})"] = repr(event)
        haystacks[f"asdict(event {i})"] = json.dumps(asdict(event), default=str)
    if outcome.result is not None:
        haystacks["repr(result)"] = repr(outcome.result)
        haystacks["result.to_dict()"] = json.dumps(outcome.result.to_dict(), default=str)
        haystacks["json.dumps(result.raw)"] = json.dumps(outcome.result.raw, default=str)

    leaks = [where for where, text in haystacks.items() if SECRET in text]
    assert leaks == []


# ----------------------------------------------------------------- the key at the edge of an excerpt
# Unreadable bodies are shown by their first EXCERPT_BYTES bytes, and the key is scrubbed from that
# excerpt. A provider that quotes the key across the excerpt's end must not leak its first half.


def page_quoting_the_key_across_the_excerpt_end(request: StubRequest, provider: str) -> bytes:
    quoted = request.headers.get(auth_header(provider), "").encode()
    start = quoted.index(SECRET.encode())
    lead = b"<html><body>bad gateway; you sent: "
    pad = EXCERPT_BYTES - len(lead) - start - len(SECRET) // 2  # the excerpt ends mid-key
    return lead + b"." * pad + quoted + b"</body></html>"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", [502, 200])
def test_a_key_cut_by_the_excerpt_does_not_leak_its_first_half(provider: str, status: int) -> None:
    def respond(request: StubRequest) -> StubReply:
        page = page_quoting_the_key_across_the_excerpt_end(request, provider)
        return StubReply(status=status, body=page, headers={"Content-Type": "text/html"})

    with FaultStub(respond) as stub:

        async def main() -> ProviderError:
            async with toolnexus.create_client(
                stub.base_url, provider, model(provider), api_key=SECRET, max_retries=0
            ) as client:
                with pytest.raises(ProviderError) as info:
                    await client.translate(USER)
                return info.value

        error = asyncio.run(main())
    assert SECRET in stub.requests[0].headers[auth_header(provider)]
    half = SECRET[: len(SECRET) // 2]
    text = str(error) + repr(error) + "".join(traceback.format_exception(error))
    assert half.encode() in page_quoting_the_key_across_the_excerpt_end(stub.requests[0], provider)[:EXCERPT_BYTES]
    assert "you sent" in text  # the excerpt did reach the message
    assert half not in text, f"the first half of the key leaked: {error.message}"


# ----------------------------------------------------------------- headers, keys HTTP cannot carry, chains
# Each test collects every text a user could see (the error, its whole cause/context chain, its
# formatted traceback, every log record of every library at DEBUG) and looks for the key's core:
# the key stripped of whitespace is inside every escaped spelling of it too (b'sk-...\\n').

REQUEST_ID_PROVIDERS = [p for p in PROVIDERS if toolnexus.load_rules().get(p).endpoint.request_id_header]


def leaks(secret: str, errors: list[BaseException], caplog: pytest.LogCaptureFixture) -> list[str]:
    """Where the secret's core shows: error texts, chains, tracebacks, log records (every logger)."""
    haystacks: dict[str, str] = {"caplog.text": caplog.text, **record_texts(caplog.records)}
    for i, error in enumerate(errors):
        haystacks.update(exception_texts(f"error {i}", error))
    return [where for where, text in haystacks.items() if secret.strip() in text]


def debug_everywhere(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # the root: httpx, httpcore, aiohttp, mcp, httpx2 loggers all propagate
    for name in ("toolnexus", "httpx", "httpcore", "aiohttp", "aiohttp.client"):
        caplog.set_level(logging.DEBUG, logger=name)


async def every_call(client: toolnexus.Client, provider: str) -> list[BaseException]:
    """translate, then translate_stream when the rules stream: the errors they raised."""
    errors: list[BaseException] = []
    try:
        await client.translate(USER)
    except ToolnexusError as exc:
        errors.append(exc)
    if toolnexus.load_rules().get(provider).streaming is not None:
        try:
            async for _ in client.translate_stream(USER):
                pass
        except ToolnexusError as exc:
            errors.append(exc)
    return errors


def calls_per_provider(provider: str) -> int:
    return 2 if toolnexus.load_rules().get(provider).streaming is not None else 1


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("provider", REQUEST_ID_PROVIDERS)
def test_a_key_echoed_in_the_request_id_header_is_scrubbed(
    provider: str, stack: str, caplog: pytest.LogCaptureFixture
) -> None:
    debug_everywhere(caplog)
    header = toolnexus.load_rules().get(provider).endpoint.request_id_header
    assert header is not None

    def respond(request: StubRequest) -> StubReply:
        quoted = request.headers[auth_header(provider)]
        return StubReply(status=400, body=error_object(provider, "bad request", "invalid_request_error"),
                         headers={header: f"req_1 {quoted}"})  # fmt: skip

    with FaultStub(respond) as stub:

        async def main() -> list[BaseException]:
            async with toolnexus.create_client(stub.base_url, provider, model(provider), api_key=SECRET,
                                               max_retries=0, transport=stack) as client:  # fmt: skip
                return await every_call(client, provider)

        errors = asyncio.run(main())
    assert all(SECRET in request.headers[auth_header(provider)] for request in stub.requests)
    assert len(errors) == calls_per_provider(provider)
    for error in errors:
        assert isinstance(error, ProviderError) and error.request_id is not None
        assert error.request_id.startswith("req_1 ")  # the id itself is still reported
    assert leaks(SECRET, errors, caplog) == []


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("key", [SECRET + "\n", SECRET + "\r\n", " " + SECRET + "\t\n"], ids=repr)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_key_http_cannot_carry_is_refused_and_leaves_no_trace(
    provider: str, key: str, stack: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A key read from a file keeps its newline: refused at create_client, quoted nowhere (not by the
    HTTP library's header check, its exception, its DEBUG log or a traceback)."""
    debug_everywhere(caplog)
    with FaultStub(lambda request: text_reply(provider)) as stub:

        async def main() -> list[BaseException]:
            try:
                client = toolnexus.create_client(stub.base_url, provider, model(provider), api_key=key,
                                                 max_retries=2, transport=stack)  # fmt: skip
            except ToolnexusError as exc:
                return [exc]
            async with client:
                return await every_call(client, provider)

        errors = asyncio.run(main())
    assert [type(error) for error in errors] == [ConfigError]
    assert stub.requests == []
    assert leaks(key, errors, caplog) == []


class QuotingTransport(httpx.AsyncBaseTransport):
    """A transport whose failure quotes the request's headers (as some proxies and libraries do)."""

    def __init__(self, quote: bool) -> None:
        self.quote = quote

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        said = f" for {dict(request.headers)}" if self.quote else ""
        raise httpx.ConnectError(f"proxy refused the connection{said}", request=request)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_transport_error_quoting_the_key_is_not_chained(provider: str, caplog: pytest.LogCaptureFixture) -> None:
    debug_everywhere(caplog)

    async def main(quote: bool) -> list[BaseException]:
        async with toolnexus.create_client("http://127.0.0.1:9/v1", provider, model(provider), api_key=SECRET,
                                           max_retries=0, transport=QuotingTransport(quote)) as client:  # fmt: skip
            return await every_call(client, provider)

    errors = asyncio.run(main(quote=True))
    assert len(errors) == calls_per_provider(provider)
    assert all(isinstance(e, ProviderError) and e.kind == "connection" for e in errors)
    assert leaks(SECRET, errors, caplog) == []
    clean = asyncio.run(main(quote=False))[0]  # a cause that quotes nothing is still chained, for debugging
    assert isinstance(clean.__cause__, httpx.ConnectError)


# ----------------------------------------------------------------- MCP: values expanded from ${VAR}

MCP_SECRET = "mcp-token-8f3e2d1c0b"


def load_toolkit(config: dict[str, Any], strict: bool) -> tuple[list[BaseException], Any]:
    pytest.importorskip("mcp")

    async def main() -> tuple[list[BaseException], Any]:
        try:
            tk = await toolnexus.create_toolkit(mcp_config=config, strict=strict, timeout=10)
        except ToolkitError as exc:
            return [exc], None
        failures = dict(tk.failures)
        await tk.close()
        return list(failures.values()), failures

    return asyncio.run(main())


@pytest.mark.parametrize("strict", [True, False])
def test_an_expanded_header_value_http_cannot_carry_is_refused_unquoted(
    strict: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The value from the environment ends in a newline: refused before the HTTP library sees it (which
    would quote it, escaped, where the scrubbing of the plain value does not reach)."""
    debug_everywhere(caplog)
    monkeypatch.setenv("TN_TEST_MCP_TOKEN", MCP_SECRET + "\n")
    with FaultStub(lambda request: StubReply(status=404, body={})) as stub:  # something listens at the URL
        config = {"mcpServers": {"remote": {"url": stub.base_url + "/mcp",
                                            "headers": {"Authorization": "Bearer ${TN_TEST_MCP_TOKEN}"}}}}  # fmt: skip
        errors, _ = load_toolkit(config, strict)
    assert stub.requests == []
    (error,) = errors
    assert isinstance(error, ToolkitError)
    assert (error.server, error.stage, error.path) == ("remote", "config", "mcpServers.remote.headers.Authorization")
    if not strict:
        assert any(r.levelno == logging.WARNING and r.name == "toolnexus" for r in caplog.records)
    assert leaks(MCP_SECRET, errors, caplog) == []


@pytest.mark.parametrize("value", ["k3y", "Zq", "x9-77"])
def test_a_short_expanded_value_is_not_shown_in_a_stderr_tail(
    value: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TN_TEST_SHORT", value)
    echo = "import os, sys; sys.stderr.write('using key ' + os.environ['KEY'] + '\\n'); sys.exit(1)"
    config = {"mcpServers": {"echo": {"command": [sys.executable, "-c", echo], "env": {"KEY": "${TN_TEST_SHORT}"}}}}
    errors, _ = load_toolkit(config, strict=False)
    (error,) = errors
    assert isinstance(error, ToolkitError)
    assert error.stderr_tail == "using key ***"
    assert leaks(value, errors, caplog) == []


def test_an_mcp_server_echoing_an_expanded_header_value_in_its_reply_leaves_no_trace(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The server refuses and quotes the token in a response header and its body; the MCP SDK's HTTP
    stack logs response headers at DEBUG."""
    debug_everywhere(caplog)
    monkeypatch.setenv("TN_TEST_MCP_TOKEN", MCP_SECRET)

    def respond(request: StubRequest) -> StubReply:
        quoted = request.headers.get("authorization", "")
        return StubReply(status=401, body={"error": f"bad token {quoted}"}, headers={"x-echo": quoted})

    with FaultStub(respond) as stub:
        config = {"mcpServers": {"remote": {"url": stub.base_url + "/mcp",
                                            "headers": {"Authorization": "Bearer ${TN_TEST_MCP_TOKEN}"}}}}  # fmt: skip
        errors, _ = load_toolkit(config, strict=False)
    assert stub.requests and MCP_SECRET in stub.requests[0].headers["authorization"]
    assert [type(error) for error in errors] == [ToolkitError]
    assert leaks(MCP_SECRET, errors, caplog) == []


# ----------------------------------------------------------------- signatures and tokens (endpoint.auth)
# A signed call's secrets are the AWS secret key and session token and each attempt's signature; an OAuth
# call's are its tokens. The stub echoes what it received in every error it sends (an error body, an
# exception frame, an NDJSON error line), and none of it may reach what the caller sees.

FRAMING_RULES = Path(__file__).resolve().parent / "framing_rules"
AWS_SECRET, AWS_TOKEN = "aws-SECRET-toolnexus-0123456789abcdef", "aws-TOKEN-toolnexus-0123456789abcdef"


class _Tokens(google.auth.credentials.Credentials):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.refreshes = 0

    def refresh(self, request: Any) -> None:
        self.refreshes += 1
        self.token = f"ya29.SECRET-toolnexus-token-{self.refreshes}"
        self.expiry = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(hours=1)


def _echo(request: StubRequest) -> str:
    return f"you sent {request.headers.get('authorization', '')} {request.headers.get('x-amz-security-token', '')}"


def _exception_frame(request: StubRequest) -> StubReply:
    frame = aws_exception("accessDeniedException", {"message": _echo(request)})
    return StubReply(stream=[frame], headers={"Content-Type": AWS_EVENTSTREAM})


def _signed_scenarios() -> dict[str, tuple[str, Any, bool]]:
    """name -> (provider, responder, streamed)"""
    return {
        "sigv4-error-body": ("frames", lambda r: StubReply(status=500, body={"message": _echo(r)}), False),
        "sigv4-exception-frame": ("frames", _exception_frame, True),
        "oauth-401-echo": ("tokens", lambda r: StubReply(status=401, body={"error": _echo(r)}), False),
        # the shipped rule files: Bedrock's ConverseStream signed with SigV4, Vertex's Google tokens
        "bedrock-sigv4-exception-frame": ("bedrock", _exception_frame, True),
        "bedrock-sigv4-error-body": ("bedrock", lambda r: StubReply(status=500, body={"message": _echo(r)}), False),
        "vertex-oauth-401-echo": (
            "vertex-gemini",
            lambda r: StubReply(status=401, body={"error": {"code": 401, "message": _echo(r)}}),
            False,
        ),
        "oauth-ndjson-error-line": (
            "tokens",
            lambda r: StubReply(stream=ndjson_lines([{"error": _echo(r)}]), headers={"Content-Type": NDJSON}),
            True,
        ),
    }


@pytest.mark.parametrize("scenario", list(_signed_scenarios()))
def test_signatures_and_tokens_never_leave(scenario: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from botocore.credentials import Credentials

    caplog.set_level(logging.DEBUG)
    provider, responder, streamed = _signed_scenarios()[scenario]
    text = (FRAMING_RULES / "lines.yaml").read_text().replace("provider: lines", "provider: tokens")
    scopes = "  auth: {scheme: google-oauth, scopes: [https://www.googleapis.com/auth/cloud-platform]}"
    (tmp_path / "tokens.yaml").write_text(text.replace("  auth: none", scopes))
    (tmp_path / "frames.yaml").write_text((FRAMING_RULES / "frames.yaml").read_text())
    signed = provider in ("frames", "bedrock")
    credentials = Credentials("AKIDTOOLNEXUS", AWS_SECRET, AWS_TOKEN) if signed else _Tokens()
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # Bedrock's rules name no region: the chain's
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    rules = tmp_path if provider in ("frames", "tokens") else None
    events: list[Any] = []

    async def main() -> tuple[BaseException | None, str]:
        client = toolnexus.create_client(stub.base_url, provider, "m", rules=rules, credentials=credentials,
                                         backoff=(0.01, 0.02), max_retries=1, on_event=events.append)  # fmt: skip
        try:
            if streamed:
                async for _ in client.translate_stream(USER):
                    pass
            else:
                await client.translate(USER)
        except ToolnexusError as exc:
            return exc, repr(client)
        finally:
            await client.aclose()
        return None, repr(client)

    with FaultStub(responder) as stub:
        error, client_repr = asyncio.run(main())
    assert isinstance(error, ProviderError)
    secrets = [AWS_SECRET, AWS_TOKEN] if signed else []
    for request in stub.requests:
        authorization = request.headers["authorization"]
        secrets.append(authorization.rpartition("Signature=")[2] if signed else authorization[7:])
    assert secrets and all(len(s) >= 16 for s in secrets)
    assert any(s in _echo(r) for r in stub.requests for s in secrets), "the stub really echoed them"
    haystacks = {"repr(client)": client_repr, **exception_texts("error", error), **record_texts(caplog.records)}
    haystacks["caplog.text"] = caplog.text
    haystacks.update({f"event {i}": repr(event) for i, event in enumerate(events)})
    leaks = [(where, secret[:6]) for where, text in haystacks.items() for secret in secrets if secret in text]
    assert leaks == []


# ----------------------------------------------------------------- a key-like value in a request, in every format
# A request may hold a key where an id, a name or a type belongs (pasted in the wrong field). An error quotes the
# value it refuses; one that looks like a key is shown as '***' (every string place of every case request, in
# each format, for every provider). What the errors show is checked: their texts, their chains' and their
# tracebacks (a chained JSONDecodeError keeps the caller's text as its `doc`, as the request itself does).


def requests_in(source: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """One request per concern of the case tables in `source` (`openai`: the plain ones), with its options."""
    found: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for case in CASES:
        options = case.data.get("options") or {}
        if options.get("source", "openai") == source and "request" in case.data:
            found.setdefault(case.concern, (case.data["request"], options))
    return list(found.values())


@pytest.mark.slow
@pytest.mark.parametrize("source", ["openai", *source_formats()])
def test_a_key_in_a_request_field_is_not_quoted_by_an_error(source: str) -> None:
    seen: list[str] = []
    refused = 0
    for request, options in requests_in(source):
        for path in list(places(request))[1:]:
            if not isinstance(_at(request, path), str):
                continue
            keyed = damaged(request, path, SECRET)
            for provider in toolnexus.providers():
                try:
                    toolnexus.translate_request(provider, keyed, **options)
                except ToolnexusError as exc:
                    refused += 1
                    shown = exception_texts(str(path), exc).items()  # a cause's own attributes hold the caller's
                    seen += [where for where, text in shown if SECRET in text and not where.startswith("vars(")]
    assert refused, "no request refused the key: the test would pass whatever errors quote"
    assert seen == []


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value
