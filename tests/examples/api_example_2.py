# The API page's example 2 (shared/seeds/001), unchanged: it must run as written.
import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolnexus import create_client, create_toolkit, define_tool


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


def add(a: float, b: float) -> str:
    """Add two numbers and return the sum."""
    return str(a + b)


def scripted(body):
    assert any(t["function"]["name"] == "add" for t in body["tools"])  # the toolkit WAS declared
    return {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 21, "b": 21}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


async def main():
    tk = await create_toolkit()
    tk.register(
        define_tool(
            add,
            name="add",
            description="Add two numbers.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        )
    )
    try:
        with StubServer(scripted) as srv:
            client = create_client(base_url=srv.base_url, style="openai", model="test-model", api_key="test-key")
            result = await client.translate([{"role": "user", "content": "add 21 and 21"}], toolkit=tk)

        assert result.finish_reason == "tool_calls"
        assert len(result.tool_calls) == 1
        call = result.tool_calls[0]
        assert call.name == "add"
        assert call.arguments == '{"a": 21, "b": 21}'  # raw JSON string, echoable byte-for-byte
        # tool was never actually run — translate declares, it does not execute.
        assert result.tool_calls_json() == [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 21, "b": 21}'}}
        ]

        print("ok:", call.name, call.arguments)
    finally:
        await tk.close()


asyncio.run(main())
