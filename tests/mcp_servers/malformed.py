"""A stdio "MCP server" written by hand that answers every tool call with a result that is not
an MCP tool result (``content`` is a string), for the malformed-result test."""

from __future__ import annotations

from hand_written import reply, serve

serve(
    "malformed",
    [{"name": "broken", "inputSchema": {"type": "object"}}],
    lambda message: reply(message["id"], {"content": "this is not a list of content blocks"}),
)
