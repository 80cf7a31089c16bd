"""A stdio "MCP server" written by hand that misbehaves as its first argument says, for the
hostile MCP tests:

- ``bracket_error``: its one tool answers ``isError`` with a text that starts with ``[``, as
  Python's OS errors do (``[Errno 2] ...``);
- ``silent_listing``: it answers ``initialize`` but never ``tools/list``;
- ``endless_listing``: every page of its tool list names the same next page;
- ``final_result``: it offers a tool named ``final_result``;
- ``bad_listing``: its tool list is not valid MCP (a tool without an input schema);
- ``noisy``: it prints a banner, a line of JSON that is no MCP message, and a line at each
  call, to its standard output;
- ``odd_media``: its one tool answers with an SVG image, an audio clip and a PNG image;
- ``bad_bytes``: it prints a Latin-1 banner, and at each call a line that is not valid UTF-8,
  to its standard output, and answers with a text holding a byte that is not UTF-8 either;
- ``server_error``: a call with ``{"fail": true}`` is answered with the JSON-RPC error -32000
  (the code the MCP SDK also uses for a closed connection), any other call with ``done``;
- ``cut_text``: a call with ``{"units": n}`` is answered with the first ``n`` UTF-16 units of a
  text with an emoji, as a JavaScript server's ``slice`` and ``JSON.stringify`` write it (cut
  inside the emoji: half of its pair, escaped); ``{"broken": true}`` with ``"result": null``;
  ``{"deep": n}`` and ``{"quoting": true}`` with ``done``, after a notification nested ``n``
  deep (too deep for the SDK's reader) or a request whose params are a text that holds an
  answer to request 1 (no valid MCP message: neither is read as one);
- ``late_form``: a call is never answered: it writes ``called`` to the file its second argument
  names, and once the call is cancelled (``notifications/cancelled``) asks for input
  (``elicitation/create``), then writes the answer it got to that file;
- ``late_form_next``: the first call is never answered: it writes ``called`` to the file its
  second argument names; once the call is cancelled, the next request the server reads (a
  ping, or the next call) is answered after a question for the ended call, as a server that
  was about to ask when it read the cancel sends it; each answer to that question is written
  to the file; the next calls are answered ``done``;
- ``bad_ping``: the first call is never answered; each ping after it is written (``ping``) to
  the file the second argument names, and answered with a JSON-RPC error if the third is
  ``error``, not at all if it is ``silent``; the next calls are answered ``done``;
- ``shadowing``: a ``drop_table`` tool whose arguments are named as pydantic's models' methods
  (``schema``, ``json``, ``copy``), answered with what it dropped.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hand_written import reply, serve

MODE = sys.argv[1]
TOOL = {"name": "read_file", "inputSchema": {"type": "object"}}


def bracket_error(message: dict[str, Any]) -> None:
    text = "[Errno 2] No such file or directory: 'notes.txt'"
    reply(message["id"], {"content": [{"type": "text", "text": text}], "isError": True})


def odd_media(message: dict[str, Any]) -> None:
    data = "iVBORw0KGgo="  # (eight bytes: enough for the test, no image is drawn)
    content = [
        {"type": "image", "mimeType": "image/svg+xml", "data": data},
        {"type": "audio", "mimeType": "audio/wav", "data": data},
        {"type": "image", "mimeType": "image/png", "data": data},
    ]
    reply(message["id"], {"content": content})


def answered(message: dict[str, Any]) -> None:
    reply(message["id"], {"content": [{"type": "text", "text": "done"}]})


def not_utf8(message: dict[str, Any]) -> None:
    sys.stdout.buffer.write(b"\xff\xfe progress 50%\n")
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {"content": [{"type": "text", "text": "caf@ au lait"}]},
        }
    )
    sys.stdout.buffer.write(line.encode().replace(b"@", b"\xe9") + b"\n")
    sys.stdout.flush()


def server_error(message: dict[str, Any]) -> None:
    if not message["params"].get("arguments", {}).get("fail"):
        answered(message)
        return
    error = {"code": -32000, "message": "quota exceeded for today"}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\n")
    sys.stdout.flush()


def cut_text(message: dict[str, Any]) -> None:
    arguments = message["params"].get("arguments", {})
    if arguments.get("deep") or arguments.get("quoting"):
        depth = arguments.get("deep", 1)
        skipped = (
            '{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", '
            f'"data": {"[" * depth}{"]" * depth}}}}}'
        )
        if arguments.get("quoting"):
            quoted = json.dumps(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}))
            skipped = f'{{"jsonrpc": "2.0", "id": "p1", "method": "ping", "params": {quoted}}}'
        sys.stdout.write(skipped + "\n")
        answered(message)
        return
    if arguments.get("broken"):
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None})
    else:
        units = "Weekly report \U0001f600 all green".encode("utf-16-le")[: 2 * arguments["units"]]
        text = units.decode("utf-16-le", "surrogatepass")  # (json.dumps escapes a lone half)
        result = {"content": [{"type": "text", "text": text}]}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
    sys.stdout.write(answer + "\n")
    sys.stdout.flush()


def drop_table(message: dict[str, Any]) -> None:
    arguments = message["params"]["arguments"]
    text = f"dropped {arguments['schema']}.{arguments['copy']} ({arguments['json']})"
    reply(message["id"], {"content": [{"type": "text", "text": text}]})


SHADOWING = {
    "name": "drop_table",
    "inputSchema": {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ("schema", "json", "copy")},
        "required": ["schema", "json", "copy"],
    },
}


def late_form(message: dict[str, Any]) -> None:
    log = sys.argv[2]
    with open(log, "w") as file:
        file.write("called\n")
    for line in sys.stdin:
        if json.loads(line).get("method") == "notifications/cancelled":
            break
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    ask = {"message": "Which name?", "requestedSchema": form}
    sys.stdout.write(
        json.dumps({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": ask})
    )
    sys.stdout.write("\n")
    sys.stdout.flush()
    for line in sys.stdin:
        if json.loads(line).get("id") == "e1":
            with open(log, "a") as file:
                file.write(line)
            return


def late_form_next(message: dict[str, Any]) -> None:
    log = sys.argv[2]
    with open(log, "w") as file:
        file.write("called\n")
    cancelled = False
    for line in sys.stdin:
        read = json.loads(line)
        if read.get("method") == "notifications/cancelled":
            cancelled = True
        elif read.get("id") == "e1":
            with open(log, "a") as file:
                file.write(line)
        elif cancelled and "id" in read:
            cancelled = False
            form = {"type": "object", "properties": {"name": {"type": "string"}}}
            ask = {"message": "Which name (for the call that ended)?", "requestedSchema": form}
            sys.stdout.write(
                json.dumps(
                    {"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": ask}
                )
                + "\n"
            )
            sys.stdout.flush()
        if read.get("method") == "ping":
            reply(read["id"], {})
        elif read.get("method") == "tools/call":
            answered(read)


def bad_ping(message: dict[str, Any]) -> None:
    log, answer = sys.argv[2], sys.argv[3]
    for line in sys.stdin:  # (the first call: never answered; the rest is read here)
        read = json.loads(line)
        if read.get("method") == "ping":
            with open(log, "a") as file:
                file.write("ping\n")
            if answer == "error":
                error = {"code": -32601, "message": "Method not found: ping"}
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": read["id"], "error": error}))
                sys.stdout.write("\n")
                sys.stdout.flush()
        elif read.get("method") == "tools/call":
            answered(read)


if MODE == "bracket_error":
    serve("hostile", [TOOL], bracket_error)
elif MODE == "noisy":  # a banner on standard output, where only JSON-RPC may go
    print("Starting the hostile server v0 ...", flush=True)
    print('{"status": "ready", "port": 0}', flush=True)  # (JSON, but no MCP message)
    serve("hostile", [TOOL], lambda message: (print("working...", flush=True), answered(message)))
elif MODE == "bad_listing":  # a tool whose hint is not a boolean, one without a schema
    bad = {
        "name": "wipe",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": "yes"},
    }
    serve("hostile", [TOOL, bad, {"name": "schemaless"}], answered)
elif MODE == "bad_bytes":  # a Latin-1 banner: "Démarrage ..."
    sys.stdout.buffer.write("Démarrage du serveur\n".encode("latin-1"))
    sys.stdout.flush()
    serve("hostile", [TOOL], not_utf8)
elif MODE == "server_error":
    serve("hostile", [TOOL], server_error)
elif MODE == "late_form":
    serve("hostile", [TOOL], late_form)
elif MODE == "late_form_next":
    serve("hostile", [TOOL], late_form_next)
elif MODE == "bad_ping":
    serve("hostile", [TOOL], bad_ping)
elif MODE == "shadowing":
    serve("hostile", [SHADOWING], drop_table)
elif MODE == "cut_text":
    serve("hostile", [TOOL], cut_text)
elif MODE == "odd_media":
    serve("hostile", [TOOL], odd_media)
elif MODE == "final_result":
    serve(
        "hostile",
        [TOOL, {"name": "final_result", "inputSchema": {"type": "object"}}],
        answered,
    )
else:
    for line in sys.stdin:
        request = json.loads(line)
        method, message_id = request.get("method"), request.get("id")
        if message_id is None:
            continue
        if method == "initialize":
            reply(
                message_id,
                {
                    "protocolVersion": request["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "0"},
                },
            )
        elif method == "tools/list" and MODE == "endless_listing":
            reply(message_id, {"tools": [TOOL], "nextCursor": "page-2"})
        elif method == "tools/list":
            continue  # silent_listing: never answered
        else:
            reply(message_id, {})
