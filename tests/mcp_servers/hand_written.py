"""The stdio loop of the MCP servers written by hand for fault tests (servers that send what the
official SDK would not let them): JSON-RPC lines in, lines out."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def reply(message_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def serve(name: str, tools: list[dict[str, Any]], call: Callable[[dict[str, Any]], None]) -> None:
    """Answer ``initialize`` and ``tools/list`` (with ``tools``) until stdin closes; a
    ``tools/call`` request goes to ``call`` (which replies); anything else gets an empty result."""
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
                    "serverInfo": {"name": name, "version": "0"},
                },
            )
        elif method == "tools/list":
            reply(message_id, {"tools": tools})
        elif method == "tools/call":
            call(message)
        else:
            reply(message_id, {})
