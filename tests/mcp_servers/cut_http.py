"""A streamable HTTP "MCP server" written by hand (``cut_http.py MODE PORT``, on 127.0.0.1)
whose one tool, ``read_file``, answers with a text cut inside an emoji as a JavaScript server
writes it: half of the emoji's UTF-16 pair, escaped (``"\\ud83d"``), in an answer sent as JSON
(MODE ``json``) or as an event of an event stream (MODE ``sse``, the stream sent in pieces
that cut the escape itself in two). A call with ``{"whole": true}`` gets the whole emoji and
one with ``{"slash": true}`` an escaped backslash before ``ud83d`` (a text, not an escape)."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT = sys.argv[1], int(sys.argv[2])
TOOL = {"name": "read_file", "inputSchema": {"type": "object"}}


def answer(message: dict) -> str | None:
    """The JSON text of the answer to ``message`` (None for a notification)."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    if method == "initialize":
        result: dict = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "cut-http", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        arguments = message["params"].get("arguments") or {}
        text = "Weekly report " + ("\U0001f600" if arguments.get("whole") else "\ud83d")
        if arguments.get("slash"):
            text = "C:\\ud83d"
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    response = {"jsonrpc": "2.0", "id": ident, "result": result}
    # (as JSON.stringify writes it: a lone half escaped, a whole emoji as it is)
    written = json.dumps(response, ensure_ascii=False, allow_nan=False)
    return written.replace("\ud83d", "\\ud83d")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        said = answer(json.loads(body))
        if said is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        data = said.encode("utf-8", "surrogatepass")
        self.send_response(200)
        self.send_header("mcp-session-id", "s1")
        if MODE == "json":
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        event = b"event: message\ndata: " + data + b"\n\n"
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        cut = event.find(b"\\ud8")
        pieces = [event[: cut + 4], event[cut + 4 :]] if cut >= 0 else [event]
        for piece in pieces:  # (each its own chunk: the escape comes in two)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    do_DELETE = do_GET


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
