"""A stdio "MCP server" written by hand that answers every tool call with a result that is not
an MCP tool result (``content`` is a string), for the malformed-result test."""

from __future__ import annotations

import json
import sys


def reply(message_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if message_id is None:
        continue  # a notification
    if method == "initialize":
        reply(
            message_id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "malformed", "version": "0"},
            },
        )
    elif method == "tools/list":
        tool = {"name": "broken", "inputSchema": {"type": "object"}}
        reply(message_id, {"tools": [tool]})
    elif method == "tools/call":
        reply(message_id, {"content": "this is not a list of content blocks"})
    else:
        reply(message_id, {})
