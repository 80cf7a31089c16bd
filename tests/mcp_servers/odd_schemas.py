"""A stdio MCP server written by hand whose tools declare input schemas a validator finds odd:
``dangling`` refers to a definition it does not have (``$ref`` to nowhere), ``self_ref`` to
itself; ``booking`` is a
draft-07 schema (``definitions``, a ``date-time``); ``labels`` (and ``labels_2020``, with
``unevaluatedProperties``) takes only properties whose names match a pattern that backtracks for
ever in Python's regular expressions. Each call
answers with its arguments.
``ask_room`` asks the person (elicitation) with a form whose fields a validator cannot use (a
``pattern`` that is not a regular expression, a ``minimum`` given as text), ``ask_code`` with a
field whose pattern backtracks for ever in Python's regular expressions; each answers with what
came back. ``research`` runs only as a task (``execution.taskSupport: "required"``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from hand_written import reply, serve

TOOLS = [
    {
        # (refers to itself: a validator following it never ends)
        "name": "self_ref",
        "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}},
    },
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
    {
        "name": "labels",
        "inputSchema": {
            "type": "object",
            "patternProperties": {"^(a+)+$": {"type": "integer"}},
            "additionalProperties": False,
        },
    },
    {
        "name": "labels_2020",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "patternProperties": {"^(a+)+$": {"type": "integer"}},
            "unevaluatedProperties": False,
        },
    },
    {"name": "ask_room", "inputSchema": {"type": "object"}},
    {"name": "ask_code", "inputSchema": {"type": "object"}},
    # Runs only as a task (a plain call is refused), as server-everything's research tool.
    {
        "name": "research",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "required"},
    },
]

FORM = {
    "type": "object",
    "properties": {
        "room": {"type": "string", "title": "Room", "pattern": "[A-"},
        "floor": {"type": "integer", "title": "Floor", "minimum": "1"},
    },
    "required": ["room", "floor"],
}


#: ``ask_code``'s form: a pattern that Python's regular expressions take hours to refuse
#: ``aaaa...!`` with (each ``a`` more doubles the time).
CODE_FORM = {
    "type": "object",
    "properties": {"code": {"type": "string", "title": "Code", "pattern": "^(a+)+$"}},
    "required": ["code"],
}


def call(message: dict[str, Any]) -> None:
    """``ask_room`` asks the person and answers with what came back; the others answer with
    their arguments."""
    result: Any = message["params"].get("arguments")
    name = message["params"]["name"]
    if name in ("ask_room", "ask_code"):
        form = FORM if name == "ask_room" else CODE_FORM
        params = {"mode": "form", "message": "Which one?", "requestedSchema": form}
        asking = {"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": params}
        sys.stdout.write(json.dumps(asking) + "\n")
        sys.stdout.flush()
        for answer in map(json.loads, sys.stdin):
            if answer.get("id") == "ask-1":
                break
        result = answer.get("result", answer.get("error"))
    text = json.dumps(result, sort_keys=True)
    reply(message["id"], {"content": [{"type": "text", "text": text}]})


serve("odd-schemas", TOOLS, call)
