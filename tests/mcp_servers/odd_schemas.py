"""A stdio MCP server written by hand whose tools declare input schemas a validator finds odd:
``dangling`` refers to a definition it does not have (``$ref`` to nowhere); ``booking`` is a
draft-07 schema (``definitions``, a ``date-time``). Each call answers with its arguments.
``ask_room`` asks the person (elicitation) with a form whose fields a validator cannot use (a
``pattern`` that is not a regular expression, a ``minimum`` given as text) and answers with what
came back."""

from __future__ import annotations

import json
import sys

TOOLS = [
    {
        "name": "dangling",
        "inputSchema": {
            "type": "object",
            "properties": {"order": {"$ref": "#/$defs/Order"}},
            "required": ["order"],
        },
    },
    {
        "name": "booking",
        "inputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"when": {"$ref": "#/definitions/When"}, "seats": {"type": "integer"}},
            "required": ["when", "seats"],
            "definitions": {"When": {"type": "string", "format": "date-time"}},
        },
    },
    {"name": "ask_room", "inputSchema": {"type": "object"}},
]

FORM = {
    "type": "object",
    "properties": {
        "room": {"type": "string", "title": "Room", "pattern": "[A-"},
        "floor": {"type": "integer", "title": "Floor", "minimum": "1"},
    },
    "required": ["room", "floor"],
}


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
                "serverInfo": {"name": "odd-schemas", "version": "0"},
            },
        )
    elif method == "tools/list":
        reply(message_id, {"tools": TOOLS})
    elif method == "tools/call" and message["params"]["name"] == "ask_room":
        params = {"mode": "form", "message": "Which room?", "requestedSchema": FORM}
        asking = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": params}
        sys.stdout.write(json.dumps(asking) + "\n")
        sys.stdout.flush()
        for answer in map(json.loads, sys.stdin):
            if answer.get("id") == "ask-1":
                break
        text = json.dumps(answer.get("result", answer.get("error")), sort_keys=True)
        reply(message_id, {"content": [{"type": "text", "text": text}]})
    elif method == "tools/call":
        text = json.dumps(message["params"].get("arguments"), sort_keys=True)
        reply(message_id, {"content": [{"type": "text", "text": text}]})
    else:
        reply(message_id, {})
