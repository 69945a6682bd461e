"""Secrets (issue 5): a recognisable key, replayed through every fault of test_faults.py for every provider.

After each run the key must not appear in: str/repr/vars of every exception and of its whole
cause/context chain, its formatted traceback, any log record (DEBUG, the `toolnexus` logger
and every other), any `on_event` LLMEvent (repr and asdict), repr(client), or the result
(repr, to_dict, json.dumps of raw). The stub also quotes the credential it received back in
every error body it sends (a provider that echoes the key), and each test asserts the key did
reach the stub, so it can fail.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from dataclasses import asdict

import pytest

import toolnexus
from test_faults import FAULTS, PROVIDERS, STACK_TARGETS, USER, FaultStub, auth_header, model, run
from toolnexus import ProviderError
from toolnexus.endpoint import EXCERPT_BYTES
from toolnexus.redact import exception_chain
from toolnexus.stub import StubReply, StubRequest

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
