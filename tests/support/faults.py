"""Provider fault scenarios: stubs that misbehave, canned replies, and the driver that runs a client against them."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import re
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

import toolnexus
from toolnexus import Cancelled, LLMEvent, ToolnexusError, TranslateResult
from toolnexus.devtools.conformance import demo_file
from toolnexus.devtools.stub import (
    ProviderStub,
    Responder,
    StubReply,
    StubRequest,
    scripted,
)
from toolnexus.http.framing import FRAMINGS
from toolnexus.http.transport import AiohttpStack, TransportOption

PROVIDERS = toolnexus.providers()


FAST = (0.01, 0.05)  # backoff (first delay, ceiling) for tests


USER = [{"role": "user", "content": "hi"}]


TOOL_NAME = "add"  # the tool the demo replies call


HARD_CAP = 30.0  # seconds: a hung call fails its test instead of hanging the suite


HANG_GUARD = 10.0  # seconds: the longest wait for something that should happen at once; it only has to catch a hang


async def until(happened: Callable[[], bool], what: str, *, required: bool = True) -> None:
    """Return once `happened()` is true (polled every 10 ms); after HANG_GUARD seconds fail, not hang
    (or, not `required`, return and leave the judging to the test's asserts).

    What a test waits for instead of a fixed delay: a fixed delay stands for "once X happened", and a
    loaded machine may not have got to X by then (the request not sent yet, the chunk not read yet)."""
    deadline = time.monotonic() + HANG_GUARD
    while not happened():
        if time.monotonic() >= deadline:
            assert not required, f"{what}: not within {HANG_GUARD} s"
            return
        await asyncio.sleep(0.01)


def cancel_once(happened: Callable[[], bool], cancel: asyncio.Event, what: str) -> asyncio.Task[None]:
    """A task that sets `cancel` once `happened()` (see `until`); await it after the call it cancels."""

    async def setter() -> None:
        await until(happened, what)
        cancel.set()

    return asyncio.create_task(setter())


def noted(responder: Responder) -> tuple[Responder, threading.Event]:
    """`responder`, and an event set as a request reaches it: a drive, which cannot see the stub, waits on it."""
    arrived = threading.Event()

    def respond(request: StubRequest) -> StubReply | dict[str, Any]:
        arrived.set()
        return responder(request)

    return respond, arrived


ONE_CONNECTION = httpx.Limits(max_connections=1, max_keepalive_connections=1)


# Every transport the client offers (toolnexus.http.transport): the faults, secrets, cancel and
# concurrency tests run on each.
STACKS = ["aiohttp", "httpx"]


_SSL = ssl.create_default_context()


@cache
def _demo(provider: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(demo_file(provider).read_text("utf-8"))
    return data


def model(provider: str) -> str:
    return str(_demo(provider).get("model", "m"))


def canned_replies(provider: str) -> list[dict[str, Any]]:
    return copy.deepcopy(_demo(provider)["replies"])


def tool_call_reply(provider: str) -> dict[str, Any]:
    """The canned reply whose translation calls a tool."""
    for reply in canned_replies(provider):
        if toolnexus.translate_response(provider, reply).tool_calls:
            return reply
    raise AssertionError(f"fixtures/demo/{provider}.json has no tool-call reply")


def text_reply(provider: str) -> dict[str, Any]:
    """The canned reply whose translation is text only."""
    for reply in canned_replies(provider):
        result = toolnexus.translate_response(provider, reply)
        if result.text and not result.tool_calls:
            return reply
    raise AssertionError(f"fixtures/demo/{provider}.json has no text-only reply")


def walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, value) in a JSON value; paths read like ResponseError paths: `a.b[0].c`."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, f"{path}[{index}]")


def path_tokens(path: str) -> list[str | int]:
    return [int(index) if index else key for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)]


def get_at(value: Any, path: str) -> Any:
    for token in path_tokens(path):
        value = value[token]
    return value


def set_at(value: Any, path: str, new: Any) -> None:
    *head, last = path_tokens(path)
    for token in head:
        value = value[token]
    value[last] = new


def text_path(provider: str, reply: dict[str, Any]) -> str:
    """Where the reply's text sits: the one string that equals its translated text."""
    text = toolnexus.translate_response(provider, reply).text
    paths = [path for path, value in walk(reply) if value == text]
    assert len(paths) == 1, (provider, text, paths)
    return paths[0]


@dataclass(frozen=True)
class ToolCallSite:
    """Where the tool call sits in a canned reply (found by walking for its name)."""

    holder: str  # the dict that holds the name, e.g. content[1] or candidates[0].content.parts[1].functionCall
    element: str  # the list element that is or holds it, e.g. candidates[0].content.parts[1]
    block_list: str  # the list of blocks/parts/calls it is an element of
    arguments: str  # the path of the arguments value
    native_text: bool  # arguments arrive as JSON text (else as an object)


def tool_call_site(provider: str, reply: dict[str, Any]) -> ToolCallSite:
    holders = [path for path, value in walk(reply) if isinstance(value, dict) and value.get("name") == TOOL_NAME]
    assert len(holders) == 1, (provider, holders)
    holder = holders[0]
    element = holder[: holder.rindex("]") + 1]
    block_list = element[: element.rindex("[")]
    args = [
        key
        for key, value in get_at(reply, holder).items()
        if isinstance(value, dict) or (isinstance(value, str) and value.lstrip().startswith("{"))
    ]
    assert len(args) == 1, (provider, holder, args)
    native = get_at(reply, holder)[args[0]]
    return ToolCallSite(holder, element, block_list, f"{holder}.{args[0]}", isinstance(native, str))


@cache
def _endpoint_error(provider: str) -> dict[str, str]:
    spec: dict[str, str] = toolnexus.load_rules().get(provider).source.data["endpoint"]["error"]
    return spec


def error_object(provider: str, message: str, error_type: str) -> dict[str, Any]:
    """The provider's error body, built from its rule file's endpoint.error paths ("error.message", ...); of
    alternatives joined by `||` (other shapes, such as a streamed error event), the first: the error body's own."""
    body: dict[str, Any] = {}
    for role, value in (("message", message), ("type", error_type)):
        path = _endpoint_error(provider).get(role)
        if path is None:
            continue
        path = path.split("||")[0].strip()
        assert re.fullmatch(r"\w+(\.\w+)*", path), f"{provider}: endpoint.error.{role} is not a dotted path: {path}"
        *parents, last = path.split(".")
        node = body
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return body


def auth_header(provider: str) -> str:
    return toolnexus.load_rules().get(provider).endpoint.auth.header.lower()


def framed_reply(framing: str, pieces: list[bytes], **options: Any) -> StubReply:
    """A streamed answer in one of the rule language's framings (pieces: SSE events, NDJSON lines from
    `ndjson_lines`, or AWS event-stream frames from `aws_event`), sent as its media type; `cut`, `hold`,
    `pause` and `delay` make the faults (a frame cut in half, a stall, ...) as for SSE."""
    return StubReply(stream=pieces, headers={"Content-Type": FRAMINGS[framing].media_types[0]}, **options)


@dataclass
class StallReply(StubReply):
    """Send the headers and part of the body, then say nothing more for `stall` seconds."""

    stall: float = 10.0


class FaultStub(ProviderStub):
    """The shipped stub, plus StallReply (headers and half a body, then silence)."""

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, reply: StubReply) -> None:
        if not isinstance(reply, StallReply):
            ProviderStub._send(handler, reply)
            return
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode("utf-8")
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            time.sleep(reply.stall)
            handler.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


Drive = Callable[[toolnexus.Client, list[BaseException]], Awaitable[TranslateResult]]


@dataclass
class Scenario:
    responder: Responder | None  # None: nothing listens (connection refused)
    bound: float  # seconds the call may take
    options: dict[str, Any] = field(default_factory=dict)  # client options
    drive: Drive | None = None  # default: one translate(USER)


@dataclass
class Outcome:
    result: TranslateResult | None
    error: BaseException | None  # what the (last) call raised
    errors: list[BaseException]  # every exception seen, including ones a drive expected
    elapsed: float
    requests: list[StubRequest]
    events: list[LLMEvent]
    client_repr: str
    leftover_tasks: list[str]
    resource_warnings: list[str]


async def _translate(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
    return await client.translate(USER)


def one_connection_transport(stack: str) -> TransportOption:
    """A pool of ONE connection on `stack`: a connection the client failed to release would make
    its next request (a retry, or the call after a cancel) wait for the pool and blow the time bound."""
    if stack == "aiohttp":
        return AiohttpStack(limit=1, ssl=_SSL)
    assert stack == "httpx", stack
    return httpx.AsyncHTTPTransport(verify=_SSL, limits=ONE_CONNECTION)


def run(provider: str, scenario: Scenario, *, api_key: str = "test-key", stack: str = "aiohttp") -> Outcome:
    """Run one fault on a fresh client and stub; report what came out and what was left behind."""
    events: list[LLMEvent] = []
    errors: list[BaseException] = []
    stub = FaultStub(scenario.responder) if scenario.responder is not None else None
    base_url = stub.base_url if stub is not None else closed_port_url()

    async def main() -> tuple[TranslateResult | None, BaseException | None, float, str, list[str]]:
        options = {"timeout": 10.0, "backoff": FAST, **scenario.options}
        transport = one_connection_transport(stack)
        client = toolnexus.create_client(base_url, provider, model(provider), api_key=api_key,
                                         on_event=events.append, transport=transport, **options)  # fmt: skip
        result: TranslateResult | None = None
        error: BaseException | None = None
        started = time.perf_counter()
        try:
            async with asyncio.timeout(HARD_CAP):
                result = await (scenario.drive or _translate)(client, errors)
        except Exception as exc:  # its type is what the tests assert
            error = exc
            errors.append(exc)
        elapsed = time.perf_counter() - started
        if stub is not None:  # a request the client gave up on (timed out) may not be read by the stub yet
            # (not required: an attempt a timeout or cancel ended before it sent anything reaches no stub)
            tried = sum(event.attempts for event in events)
            await until(lambda: len(stub.requests) >= tried, f"{tried} requests at the stub", required=False)
        client_repr = repr(client)
        await client.aclose()
        current = asyncio.current_task()
        for _ in range(20):  # a body left unread closes its async generators in tasks the loop runs next
            leftover = [repr(task) for task in asyncio.all_tasks() if task is not current]
            if not leftover:
                break
            await asyncio.sleep(0)
        return result, error, elapsed, client_repr, leftover

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        if stub is not None:
            stub.start()
        try:
            result, error, elapsed, client_repr, leftover = asyncio.run(main())
        finally:
            if stub is not None:
                stub.stop()
        gc.collect()
    leaks = [f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, ResourceWarning)]
    return Outcome(
        result=result,
        error=error,
        errors=errors,
        elapsed=elapsed,
        requests=list(stub.requests) if stub is not None else [],
        events=events,
        client_repr=client_repr,
        leftover_tasks=leftover,
        resource_warnings=leaks,
    )


def assert_clean(outcome: Outcome, bound: float) -> None:
    """The shared promise of every fault: typed, bounded, nothing left behind."""
    for error in outcome.errors:
        assert isinstance(error, ToolnexusError), f"a raw {type(error).__name__} escaped: {error!r}"
        assert not isinstance(error, (httpx.HTTPError, json.JSONDecodeError))
    assert outcome.elapsed < bound, f"took {outcome.elapsed:.2f} s (bound {bound} s)"
    assert outcome.leftover_tasks == [], outcome.leftover_tasks
    assert outcome.resource_warnings == [], outcome.resource_warnings


def _quoted(provider: str, request: StubRequest, echo: bool) -> str:
    return f" (you sent {request.headers.get(auth_header(provider), '')})" if echo else ""


def _error_reply(provider: str, status: int, message: str, echo: bool, **reply: Any) -> Responder:
    def respond(request: StubRequest) -> StubReply:
        body = error_object(provider, message + _quoted(provider, request, echo), "fault_injected")
        return StubReply(status=status, body=body, **copy.deepcopy(reply))

    return respond


def _sequence(*responders: Responder) -> Responder:
    """Answer the n-th request with the n-th responder (then repeat the last)."""
    pick = scripted(list(responders))
    return lambda request: pick(request)(request)


def _ok(provider: str) -> Responder:
    return lambda request: text_reply(provider)


def fault_refused(provider: str, echo: bool = False) -> Scenario:
    return Scenario(responder=None, bound=4.0, options={"max_retries": 2})


def fault_reset_mid_body(provider: str, echo: bool = False) -> Scenario:
    return Scenario(lambda request: StubReply(body=text_reply(provider), cut=True), 4.0, {"max_retries": 1})


def fault_never_finishes(provider: str, echo: bool = False) -> Scenario:
    return Scenario(lambda request: StubReply(body=text_reply(provider), delay=10.0), 6.0,
                    {"timeout": 0.3, "max_retries": 1})  # fmt: skip


def fault_stalls_mid_body(provider: str, echo: bool = False) -> Scenario:
    return Scenario(lambda request: StallReply(body=text_reply(provider), stall=10.0), 6.0,
                    {"timeout": 0.3, "max_retries": 1})  # fmt: skip


RETRY_AFTER_S = 1


def fault_429_then_ok(provider: str, echo: bool = False) -> Scenario:
    limited = _error_reply(provider, 429, "rate limited", echo, headers={"retry-after": str(RETRY_AFTER_S)})
    return Scenario(_sequence(limited, _ok(provider)), RETRY_AFTER_S + 4.0, {"max_retries": 3})


def fault_500_thrice_then_ok(provider: str, echo: bool = False) -> Scenario:
    failing = _error_reply(provider, 500, "internal error", echo)
    return Scenario(_sequence(failing, failing, failing, _ok(provider)), 4.0, {"max_retries": 3})


def fault_500_forever(provider: str, echo: bool = False) -> Scenario:
    return Scenario(_error_reply(provider, 500, "internal error", echo), 4.0, {"max_retries": 3})


HTML_502 = (
    b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center>"
    b"<hr><center>nginx</center></body></html>" + b"<!-- a long page -->" * 200
)


def fault_html_502(provider: str, echo: bool = False) -> Scenario:
    def respond(request: StubRequest) -> StubReply:
        quoted = _quoted(provider, request, echo).encode()
        page = HTML_502.replace(b"<hr>", b"<hr>" + quoted, 1)
        return StubReply(status=502, body=page, headers={"Content-Type": "text/html"})

    return Scenario(respond, 4.0, {"max_retries": 1})


def truncated_json(provider: str, request: StubRequest | None = None, echo: bool = False) -> bytes:
    reply = text_reply(provider)
    if echo and request is not None:  # quoted first, so it is inside the excerpt an error shows
        reply = {"echo": _quoted(provider, request, echo), **reply}
    text = json.dumps(reply).encode()
    return text[: len(text) * 2 // 3]


def fault_truncated_json(provider: str, echo: bool = False) -> Scenario:
    return Scenario(lambda request: StubReply(body=truncated_json(provider, request, echo)), 4.0)


def fault_error_in_200(provider: str, echo: bool = False) -> Scenario:
    return Scenario(_error_reply(provider, 200, "quota exhausted", echo), 4.0)


BIG_BYTES = 40 * 1024 * 1024


BIG_BOUND = 10.0


@cache
def big_text() -> str:
    unit = "forty megabytes of answer, élan ✓ "  # some multi-byte characters too
    return unit * (BIG_BYTES // len(unit.encode()) + 1)


def fault_40_mb(provider: str, echo: bool = False) -> Scenario:
    reply = text_reply(provider)
    set_at(reply, text_path(provider, reply), big_text())
    payload = json.dumps(reply).encode()  # serialised once, not per request
    return Scenario(lambda request: StubReply(body=payload), BIG_BOUND)


SLOW_ANSWER_S = 10.0  # the cancelled call's answer: a call that waited for it takes twice its time bound


def fault_cancel_mid_flight(provider: str, echo: bool = False) -> Scenario:
    """A cancel event set while the stub delays its first answer; the same client then answers."""
    slow, received = noted(lambda request: StubReply(body=text_reply(provider), delay=SLOW_ANSWER_S))

    async def drive(client: toolnexus.Client, errors: list[BaseException]) -> TranslateResult:
        # not after a fixed delay: a loaded machine may not have sent the request by then,
        # and the slow answer would go to the reused client's call instead
        cancel = asyncio.Event()
        setter = cancel_once(received.is_set, cancel, "the cancelled call's request at the stub")
        try:
            await client.translate(USER, cancel=cancel)
        except Cancelled as exc:
            errors.append(exc)
        else:
            raise AssertionError("the call was not cancelled")
        await setter
        return await client.translate(USER)  # the same client, reused

    return Scenario(_sequence(slow, _ok(provider)), SLOW_ANSWER_S / 2, drive=drive)


def wrong_shape_body(provider: str, case: str) -> dict[str, Any]:
    """A JSON body of the wrong shape, built from the canned replies."""
    if case == "empty-object":
        return {}
    reply = tool_call_reply(provider)
    site = tool_call_site(provider, reply)
    if case == "unknown-element":
        get_at(reply, site.block_list).append({"type": "mystery_block", "mystery_block": {"detail": "new"}})
    elif case == "tool-input-string":
        set_at(reply, site.arguments, "a string, not an object")
    elif case == "tool-input-wrong-type":  # the JSON type the provider does not use for arguments
        text_only = any(src.arguments == "text" for src in toolnexus.load_rules().get(provider).outbound.sources)
        set_at(reply, site.arguments, {"a": 21} if site.native_text and text_only else [21, 21])
    else:
        raise AssertionError(case)
    return reply


WRONG_SHAPES = ["empty-object", "unknown-element", "tool-input-string", "tool-input-wrong-type"]


def fault_wrong_shape(case: str) -> Callable[[str, bool], Scenario]:
    def build(provider: str, echo: bool = False) -> Scenario:
        body = wrong_shape_body(provider, case)
        return Scenario(lambda request: copy.deepcopy(body), 4.0)

    return build


FAULTS: dict[str, Callable[[str, bool], Scenario]] = {
    "refused": fault_refused,
    "reset-mid-body": fault_reset_mid_body,
    "never-finishes": fault_never_finishes,
    "stalls-mid-body": fault_stalls_mid_body,
    "429-then-ok": fault_429_then_ok,
    "500-thrice-then-ok": fault_500_thrice_then_ok,
    "500-forever": fault_500_forever,
    "html-502": fault_html_502,
    "truncated-json": fault_truncated_json,
    **{f"wrong-shape-{case}": fault_wrong_shape(case) for case in WRONG_SHAPES},
    "error-in-200": fault_error_in_200,
    "40-mb": fault_40_mb,
    "cancel-mid-flight": fault_cancel_mid_flight,
}


def _one_per_framing() -> list[str]:
    """The first provider (by name) of each framing the rules use: what a transport does with a fault
    depends on how the body is cut into events, not on the provider."""
    firsts: dict[str, str] = {}
    for provider in PROVIDERS:
        streaming = toolnexus.load_rules().get(provider).streaming
        firsts.setdefault(streaming.framing if streaming is not None else "", provider)
    return sorted(firsts.values())


# Every provider on the default transport (aiohttp); httpx's on one provider of each framing.
STACK_TARGETS = [pytest.param(provider, "aiohttp", id=provider) for provider in PROVIDERS] + [
    pytest.param(provider, "httpx", id=f"{provider}-httpx") for provider in _one_per_framing()
]
