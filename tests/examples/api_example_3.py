# The API page's example 3 (shared/seeds/001), unchanged: it must run as written.
import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolnexus import create_client


class StubServer:
    def __init__(self, handler):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer._send(self, handler(body))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @staticmethod
    def _send(req, payload):
        body = json.dumps(payload).encode("utf-8")
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        req.wfile.write(body)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


async def main():
    seen: list[dict] = []

    def echo(body):
        seen.append(body)
        return {
            "choices": [{"message": {"role": "assistant", "content": "noted"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    with StubServer(echo) as srv:
        client = create_client(
            base_url=srv.base_url,
            style="openai",
            model="test-model",
            api_key="test-key",
            system_prompt="You are terse.",  # the client-wide default
        )
        r1 = await client.translate([{"role": "user", "content": "hello"}], max_tokens=50)
        r2 = await client.translate([{"role": "user", "content": "hello again"}], system="Override prompt.")

    assert len(seen) == 2
    assert seen[0]["messages"][0] == {"role": "system", "content": "You are terse."}
    assert seen[0]["max_tokens"] == 50
    assert seen[1]["messages"][0] == {"role": "system", "content": "Override prompt."}  # per-call system wins
    # Each call is self-contained: the second request carries NO memory of the first turn.
    assert seen[1]["messages"] == [
        {"role": "system", "content": "Override prompt."},
        {"role": "user", "content": "hello again"},
    ]

    print("ok:", r1.text, "|", r2.text)


asyncio.run(main())
