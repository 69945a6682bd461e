"""`python -m toolnexus.devtools.demo_mcp`: the demo's `add` tool served by a local MCP server over stdio.

Written with the official SDK's own server API (the `mcp` extra). `toolnexus demo` starts it
to show a toolkit whose tools come from an MCP server; the same function as the native demo tool.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from .demo import add

server = MCPServer("calc")
server.add_tool(add)

if __name__ == "__main__":
    server.run()
