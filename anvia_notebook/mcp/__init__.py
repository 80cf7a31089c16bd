"""MCP tools behind approvals: use the tools of MCP servers in an agent.

::

    from anvia_notebook import mcp
    files = mcp.stdio("files", command="npx",
                      args=["-y", "@modelcontextprotocol/server-filesystem", "."])
    agent = AgentBuilder("ops", model).mcp([files]).build()  # approval unless read-only

Needs the ``mcp`` extra (``pip install "anvia_notebook[mcp]"``), imported only when a server
is first connected. One session per server per process, opened on first use and closed by
``close()``, :func:`close_all` or when the process exits.
"""

from __future__ import annotations

from ._registry import McpServer, close_all, connect
from ._servers import (
    ApprovalPolicy,
    ApprovalSetting,
    HttpServer,
    McpServerConfig,
    SseServer,
    StdioServer,
    http,
    sse,
    stdio,
)

__all__ = [
    "stdio",
    "http",
    "sse",
    "connect",
    "close_all",
    "McpServer",
    "McpServerConfig",
    "StdioServer",
    "HttpServer",
    "SseServer",
    "ApprovalPolicy",
    "ApprovalSetting",
]
