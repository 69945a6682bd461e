"""A local provider stub on 127.0.0.1: the demo's embedded provider and the tests' server.

It speaks plain HTTP/1.1 from a thread, records every request it receives, and
answers with whatever its responder returns: a JSON-able dict (200), or a
StubReply for a status, headers, raw bytes, a delay, a cut connection, or a
stream sent piece by piece: server-sent events (see `sse_pieces`), NDJSON lines
(`ndjson_lines`) or AWS event-stream frames (`aws_frame`; give the reply its content type).
It can check what a request was authenticated with: `bearer_of`, `sigv4_verified`.
"""

from __future__ import annotations

import binascii
import hmac
import json
import random
import re
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Flag(threading.Event):
    """A threading.Event that a deep copy of its reply does not share (and can copy at all)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Flag:
        return Flag()


@dataclass
class StubReply:
    status: int = 200
    body: Any = None  # a dict/list is sent as JSON; bytes as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    cut: bool = False  # send part of the body (a stream: all its pieces, never ended), then close the connection
    # pieces written and flushed one by one (chunked): an event stream, or any body sent slowly or made lazily
    # (a generator is read as it is sent, so a huge body never sits in memory; a reply with one is not replayable)
    stream: Iterable[bytes] | None = None
    pause: float = 0.0  # stream: seconds between pieces
    hold: float = 0.0  # stream: after the pieces, keep the connection open this long (or until the client leaves)
    client_closed: Flag = field(default_factory=Flag, repr=False)  # stream: set when the client left


@dataclass
class StubRequest:
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body's bytes as received (what a signature covers)


Responder = Callable[[StubRequest], "StubReply | dict[str, Any]"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # many concurrent clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left mid-answer (a capped or cancelled call) is expected, not an error to print."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ProviderStub:
    """`with ProviderStub(responder) as stub: ... stub.base_url ... stub.requests`."""

    def __init__(self, responder: Responder) -> None:
        self.requests: list[StubRequest] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once, no delayed-ACK stall
            wbufsize = -1  # buffered: one write per answer

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw
                request = StubRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
                with outer._lock:
                    outer.requests.append(request)
                reply = responder(request)
                outer._send(self, reply if isinstance(reply, StubReply) else StubReply(body=reply))

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="toolnexus-stub", daemon=True
        )

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, reply: StubReply) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        if reply.stream is not None:
            _send_stream(handler, reply)
            return
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode("utf-8")
        try:
            _send_head(handler, reply, "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if reply.cut:
                handler.wfile.write(payload[: len(payload) // 2])
                handler.wfile.flush()
                handler.close_connection = True
                return
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a cancelled call); nothing to answer

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ProviderStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ProviderStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def scripted(replies: list[Any]) -> Responder:
    """A responder that answers with `replies` in order (then repeats the last)."""
    lock = threading.Lock()
    position = [0]

    def respond(request: StubRequest) -> Any:
        with lock:
            index = min(position[0], len(replies) - 1)
            position[0] += 1
        return replies[index]

    return respond


def _send_stream(handler: BaseHTTPRequestHandler, reply: StubReply) -> None:
    """An event stream in chunked encoding, one piece per chunk; `cut` closes the connection without ending it."""
    assert reply.stream is not None
    try:
        _send_head(handler, reply, "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for i, piece in enumerate(reply.stream):
            if i and reply.pause:
                time.sleep(reply.pause)
            if piece:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.flush()
        if reply.hold and _client_left(handler.connection, reply.hold):
            reply.client_closed.set()
            return
        if reply.cut:
            handler.close_connection = True
            return
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        reply.client_closed.set()  # the client went away mid-stream


def _send_head(handler: BaseHTTPRequestHandler, reply: StubReply, content_type: str) -> None:
    """The status line and the reply's headers, with `content_type` unless the reply names its own.
    Reads the reply, never changes it: a reply answered twice is sent twice the same way."""
    handler.send_response(reply.status)
    if not any(name.lower() == "content-type" for name in reply.headers):
        handler.send_header("Content-Type", content_type)
    for name, value in reply.headers.items():
        handler.send_header(name, value)


def _client_left(connection: socket.socket, seconds: float) -> bool:
    """Wait up to `seconds`; True as soon as the client closes its end of the connection."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([connection], [], [], min(left, 0.02))
        if readable:
            try:
                if not connection.recv(1, socket.MSG_PEEK):
                    return True
            except OSError:
                return True
            time.sleep(0.01)  # bytes from the client (none expected): keep waiting
    return False


def sse_pieces(events: list[bytes], rng: random.Random | None = None, *, cuts: int = 0) -> list[bytes]:
    """The bytes of `events` split at `cuts` random byte boundaries (anywhere: inside a line, a UTF-8 character)."""
    data = b"".join(events)
    if not cuts or len(data) < 2:
        return [data]
    rng = rng or random.Random(0)
    points = sorted(rng.sample(range(1, len(data)), min(cuts, len(data) - 1)))
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


NDJSON = "application/x-ndjson"
AWS_EVENTSTREAM = "application/vnd.amazon.eventstream"


def ndjson_lines(objects: list[Any]) -> list[bytes]:
    """Each object as one line of newline-delimited JSON."""
    return [json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n" for item in objects]


def aws_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream frame (string headers only): prelude (total and headers length, CRC32),
    headers, payload, CRC32 of all before it. Written here because botocore only decodes frames and
    the maintained encoder (smithy-aws-event-stream) needs a newer Python; the tests check each frame
    this writes with botocore's decoder."""
    head = b"".join(
        struct.pack("!B", len(name.encode()))
        + name.encode()
        + struct.pack("!BH", 7, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    prelude = struct.pack("!II", 16 + len(head) + len(payload), len(head))
    message = prelude + struct.pack("!I", binascii.crc32(prelude)) + head + payload
    return message + struct.pack("!I", binascii.crc32(message))


def aws_event(event_type: str, payload: Any) -> bytes:
    """An `event` frame of `event_type` with a JSON payload."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return aws_frame(headers, json.dumps(payload).encode("utf-8"))


def aws_exception(exception_type: str, payload: Any) -> bytes:
    """An `exception` frame: the stream's error, typed by `:exception-type`, its JSON payload the provider's."""
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return aws_frame(headers, json.dumps(payload).encode("utf-8"))


def bearer_of(request: StubRequest) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, else None."""
    value = request.headers.get("authorization", "")
    return value[7:] if value.startswith("Bearer ") else None


_SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/\d{8}/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})"
)


def sigv4_verified(request: StubRequest, credentials: Any, service: str, region: str) -> bool:
    """Whether the request carries a valid AWS SigV4 signature by `credentials` (a botocore Credentials)
    for `service` in `region`: botocore signs the request as received (its signed headers, body and
    X-Amz-Date) again, and the two signatures must be equal."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    found = _SIGV4.fullmatch(request.headers.get("authorization", ""))
    if found is None or (found["key"], found["region"], found["service"]) != (credentials.access_key, region, service):
        return False
    signed = found["signed"].split(";")
    if any(name not in request.headers for name in signed):
        return False
    url = f"http://{request.headers['host']}{request.path}"
    again = AWSRequest(method="POST", url=url, data=request.raw, headers={n: request.headers[n] for n in signed})
    again.context["timestamp"] = request.headers.get("x-amz-date", "")
    signer = SigV4Auth(credentials, service, region)
    expected = signer.signature(signer.string_to_sign(again, signer.canonical_request(again)), again)
    return hmac.compare_digest(expected, found["signature"])
