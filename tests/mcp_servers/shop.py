"""A realistic MCP server for the toolkit tests, written with the SDK's own server API (MCPServer).

    python shop.py                 stdio
    python shop.py http PORT       streamable HTTP on 127.0.0.1:PORT, path /mcp

Environment: SHOP_LOG, a file that gets one line per inbound MCP method (and `pid N` at start),
so tests see from the server's side what a client sent; SHOP_ID, what `whoami` answers;
SHOP_PAGE_SIZE, tools per tools/list page (cursors are page numbers); SHOP_TOKEN, when set,
the bearer token every HTTP request must carry. An HTTP request with the header
`X-Hang-On-List: 1` never gets its tools/list answered.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST
from pydantic import BaseModel, Field

LOG = os.environ.get("SHOP_LOG")
PAGE_SIZE = int(os.environ.get("SHOP_PAGE_SIZE", "0"))
TOKEN = os.environ.get("SHOP_TOKEN")


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(line + "\n")


async def record(ctx: Any, call_next: Any) -> Any:
    """Log the method; check the bearer token over HTTP; cut tools/list into pages."""
    name = ctx.params.get("name") if isinstance(ctx.params, dict) else None
    log(f"{ctx.method} {name}" if ctx.method == "tools/call" else ctx.method)
    headers = getattr(ctx.request, "headers", None)  # the HTTP request, over streamable HTTP
    if TOKEN is not None and headers is not None and headers.get("authorization") != f"Bearer {TOKEN}":
        raise MCPError(INVALID_REQUEST, "bad or missing bearer token")
    if ctx.method == "tools/list" and headers is not None and headers.get("x-hang-on-list") == "1":
        await anyio.sleep_forever()
    result = await call_next(ctx)
    if ctx.method == "tools/list" and PAGE_SIZE and isinstance(result, dict):  # the result as it goes on the wire
        start = int((ctx.params or {}).get("cursor") or 0)
        tools = result["tools"]
        result = {**result, "tools": tools[start : start + PAGE_SIZE]}
        if start + PAGE_SIZE < len(tools):
            result["nextCursor"] = str(start + PAGE_SIZE)
    return result


app = MCPServer("shop", middleware=[record])


class Address(BaseModel):
    street: str
    city: str
    postcode: str | None = None
    country: Annotated[str, Field(description="ISO 3166 alpha-2")] = "FR"


class Speed(StrEnum):
    standard = "standard"
    express = "express"


class Item(BaseModel):
    sku: str
    quantity: Annotated[int, Field(ge=1)] = 1


@app.tool()
def place_order(
    items: list[Item],
    ship_to: Address,
    speed: Speed = Speed.standard,
    gift_note: str | None = None,
) -> dict[str, Any]:
    """Place an order for the given items, shipped to an address."""
    return {"order": "o-1", "items": len(items), "city": ship_to.city, "speed": speed.value}


@app.tool()
def search_products(query: str, sort: Literal["price", "rating"] = "rating", limit: int = 10) -> str:
    """Full-text product search."""
    return f"3 results for {query!r} by {sort}"


@app.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@app.tool()
def whoami() -> str:
    """Which server instance answers (no parameters)."""
    return os.environ.get("SHOP_ID", "shop")


@app.tool()
def out_of_stock(sku: str) -> str:
    """Always fails, as a tool error."""
    raise ValueError(f"{sku} is out of stock")


@app.tool(name="inventory.count")
def inventory_count(sku: str) -> int:
    """A name with a dot: fine for MCP, not for every provider."""
    return 7


@app.tool()
async def wait(seconds: float) -> str:
    """Answers after a while."""
    await anyio.sleep(seconds)
    return "done"


@app.tool()
def crash() -> str:
    """Ends the server process mid-call."""
    sys.stderr.write("shop: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


if __name__ == "__main__":
    log(f"pid {os.getpid()}")
    print("shop: ready", file=sys.stderr)
    if sys.argv[1:2] == ["http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
