"""A local provider stub on 127.0.0.1: the demo's embedded provider and the tests' server.

It speaks plain HTTP/1.1 from a thread, records every request it receives, and
answers with whatever its responder returns: a JSON-able dict (200), or a
StubReply for a status, headers, raw bytes, a delay, a cut connection, or a
stream sent piece by piece (see `sse_pieces`; give the reply the content type of its framing).
The tests' encoders of NDJSON lines and AWS event-stream frames, and their checks of what a request
was authenticated with, are in tests/support/frames.py.
"""

from __future__ import annotations

import json
import random
import select
import socket
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
