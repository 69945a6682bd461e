"""A local provider stub on 127.0.0.1: the demo's embedded provider and the tests' server.

It speaks plain HTTP/1.1 from a thread, records every request it receives, and
answers with whatever its responder returns: a JSON-able dict (200), or a
StubReply for a status, headers, raw bytes, a delay, or a cut connection.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class StubReply:
    status: int = 200
    body: Any = None  # a dict/list is sent as JSON; bytes as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    cut: bool = False  # send part of the body, then close the connection


@dataclass
class StubRequest:
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[StubRequest], "StubReply | dict[str, Any]"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # many concurrent clients connect at once


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
                request = StubRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
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
        payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode("utf-8")
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.headers.pop("Content-Type", "application/json"))
            for name, value in reply.headers.items():
                handler.send_header(name, value)
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
