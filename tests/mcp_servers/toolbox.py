"""A small MCP server for the tests, written with the ``mcp`` SDK's MCPServer (FastMCP).

Run as ``python toolbox.py`` (stdio), ``python toolbox.py http PORT`` (streamable HTTP on
127.0.0.1; ``http-400``: refusing a session it does not know with 400, as the TypeScript SDK's
servers do; ``http-failing``: answering each tool call, once it ran, with 400 and an error
of its own) or ``python toolbox.py sse PORT`` (HTTP with server-sent events, at ``/sse``). ``TOOLBOX_LOG`` names a file each call of a tool that changes things is appended to
(the tests count calls with it); ``TOOLBOX_CLASH=1`` adds a tool named like the tests' own.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time
from typing import Any

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("toolbox")

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
DESTRUCTIVE = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False
)
IDEMPOTENT = types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True
)

#: A 1x1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf000000030101007e1ff5d60000000049454e44ae426082"
    )
).decode()

_notes: dict[str, str] = {"greeting": "hello"}


def _started(tool: str) -> None:
    """Say that a long call began, in the file ``TOOLBOX_STARTED`` names (if any)."""
    path = os.environ.get("TOOLBOX_STARTED")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(tool + "\n")


def _log(line: str) -> None:
    path = os.environ.get("TOOLBOX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


@server.tool(annotations=READ_ONLY)
def read_note(key: str) -> str:
    """Read a note by its key."""
    return _notes.get(key, f"no note named {key}")


@server.tool(annotations=DESTRUCTIVE)
async def write_note(key: str, text: str) -> str:
    """Write (or overwrite) a note."""
    _log(f"write_note {key}")
    if os.environ.get("TOOLBOX_HANG"):  # the call never ends (tests kill the run meanwhile)
        await asyncio.Event().wait()
    _notes[key] = text
    return f"wrote {key}"


@server.tool(annotations=IDEMPOTENT)
async def set_flag(name: str) -> str:
    """Set a flag (safe to repeat)."""
    _log(f"set_flag {name}")
    if os.environ.get("TOOLBOX_HANG"):
        await asyncio.Event().wait()
    return f"flag {name} set"


@server.tool()
def pid() -> str:
    """The server's process id (declares no hints)."""
    return str(os.getpid())


@server.tool(annotations=READ_ONLY)
def picture() -> list[types.ContentBlock]:
    """A tiny picture, with a caption."""
    return [
        types.TextContent(text="a red dot"),
        types.ImageContent(data=PNG, mime_type="image/png"),
    ]


@server.tool(annotations=READ_ONLY)
def only_structured() -> types.CallToolResult:
    """Structured content and no text."""
    return types.CallToolResult(content=[], structured_content={"rows": 3, "ok": True})


@server.tool(annotations=READ_ONLY)
def resources() -> list[types.ContentBlock]:
    """A resource link and an embedded text resource."""
    return [
        types.ResourceLink(uri="file:///data/report.csv", name="report.csv", mime_type="text/csv"),
        types.EmbeddedResource(
            resource=types.TextResourceContents(uri="file:///data/notes.txt", text="line one")
        ),
    ]


@server.tool(annotations=READ_ONLY)
def fails() -> types.CallToolResult:
    """Reports an error (isError)."""
    return types.CallToolResult(
        content=[types.TextContent(text="disk quota exceeded")], is_error=True
    )


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float, progress_every: float = 0.0, ctx: Context | None = None) -> str:
    """Sleep, reporting progress every ``progress_every`` seconds when it is positive."""
    _started("slow")
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    step = 0
    while loop.time() < end:
        wait = min(end - loop.time(), progress_every if progress_every > 0 else seconds)
        await asyncio.sleep(wait)
        step += 1
        if progress_every > 0 and ctx is not None:
            await ctx.report_progress(step)
    return f"slept {seconds:g} s"


@server.tool(annotations=READ_ONLY)
def busy(seconds: float) -> str:
    """Compute for ``seconds`` without yielding (a synchronous tool: the server reads nothing
    meanwhile, not even the end of its standard input)."""
    _started("busy")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return f"busy {seconds:g} s"


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """The server dies during this call."""
    sys.stderr.write("toolbox: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


class Booking(BaseModel):
    size: str = Field(description="Table size", json_schema_extra={"enum": ["small", "large"]})
    outdoor: bool = Field(description="Sit outside?")
    guests: int = Field(description="How many guests", ge=1, le=12)
    note: str | None = Field(default=None, description="Anything else")


@server.tool(annotations=READ_ONLY)
async def book_table(ctx: Context) -> str:
    """Ask the person for the booking details (elicitation) and report what came back."""
    result = await ctx.elicit("How should the table be booked?", Booking)
    if result.action == "accept":
        data = result.data
        return f"accept size={data.size!r} outdoor={data.outdoor!r} guests={data.guests!r} note={data.note!r}"
    return result.action


class Name(BaseModel):
    name: str = Field(description="A name")


@server.tool(annotations=READ_ONLY)
async def ask_name(label: str, ctx: Context) -> str:
    """Ask the person for a name for ``label`` (elicitation); report it with the label."""
    result = await ctx.elicit(f"Which name for {label}?", Name)
    if result.action == "accept":
        return f"{label}: {result.data.name}"
    return f"{label}: {result.action}"


@server.tool(annotations=READ_ONLY)
async def ask_two_names(ctx: Context) -> str:
    """Ask the person for two names, one after the other, in one call."""
    names = []
    for label in ("first", "second"):
        result = await ctx.elicit(f"Which {label} name?", Name)
        names.append(result.data.name if result.action == "accept" else result.action)
    return " and ".join(names)


class Nothing(BaseModel):
    """A form with no field: the person only accepts or declines."""


@server.tool(annotations=READ_ONLY)
async def wipe_notes(ctx: Context) -> str:
    """Ask the person to confirm (a form with no field), then report what came back."""
    result = await ctx.elicit("Delete every note? This cannot be undone.", Nothing)
    return "wiped" if result.action == "accept" else result.action


@server.tool(annotations=READ_ONLY)
async def connect_account(ctx: Context) -> str:
    """Send the person to a web page (a URL elicitation) and report what came back."""
    result = await ctx.elicit_url(
        "Sign in to the booking service.", "https://example.com/sign-in?code=42", "sign-in-1"
    )
    return result.action


_signed_in = False


@server.tool(annotations=READ_ONLY)
async def list_files() -> str:
    """The person's files: the first call answers that the person must sign in on a web page
    first (error -32042, URL elicitation required); later calls list them."""
    global _signed_in
    if not _signed_in:
        _signed_in = True  # (the page would tell the server; here, asking once is enough)
        from mcp.shared.exceptions import UrlElicitationRequiredError

        link = types.ElicitRequestURLParams(
            message="Sign in to read your files.",
            url="https://example.com/files/sign-in?state=7",
            elicitation_id="files-1",
        )
        raise UrlElicitationRequiredError([link])
    return "a.txt, b.txt"


@server.tool(annotations=READ_ONLY)
async def roots(ctx: Context) -> str:
    """The roots the client declares (their URIs, one a line), or that it declares none."""
    capabilities = ctx.session.client_params.capabilities if ctx.session.client_params else None
    if capabilities is None or capabilities.roots is None:
        return "no roots declared"
    listed = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in listed.roots)


if os.environ.get("TOOLBOX_ASK_QUESTION"):

    @server.tool(annotations=DESTRUCTIVE)
    def ask_question(questions: list[dict[str, Any]]) -> str:
        """Archive the questions in the ticket system (a server's tool of a name this package
        uses too)."""
        _log(f"archived {len(questions)}")
        return "archived"


if os.environ.get("TOOLBOX_DOTTED"):

    @server.tool(name="files.read", annotations=READ_ONLY)
    def files_read(path: str) -> str:
        """A tool whose name has a dot (MCP allows it; OpenAI and Anthropic do not)."""
        return path


if os.environ.get("TOOLBOX_CLASH"):

    @server.tool(annotations=READ_ONLY)
    def add(a: int, b: int) -> int:
        """A tool whose name clashes with the tests' own ``add``."""
        return a + b


def _json_rpc_error(code: int, message: str) -> bytes:
    """The body of a JSON-RPC error answering a request whose id was not read."""
    import json

    error = {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": None}
    return json.dumps(error).encode()


def failing_its_calls_with_400(app: Any) -> Any:
    """``app`` whose tool calls run, then are answered with HTTP 400 and a JSON-RPC error of the
    tool's own (a browser session it lost): a server that says a tool's failure so."""
    body = _json_rpc_error(-32603, "Browser session expired")

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        request = b"".join(chunks)
        given = False

        async def again() -> Any:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": request, "more_body": False}
            return await receive()

        if b'"tools/call"' not in request:
            await app(scope, again, send)
            return

        async def dropped(message: Any) -> None:
            return None

        await app(scope, again, dropped)  # (the call runs)
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return failing


def refusing_with_400(app: Any) -> Any:
    """``app`` answering a session it does not know as the TypeScript SDK's servers do: HTTP 400
    with a JSON-RPC error the client can read (the Python SDK answers 404)."""
    body = _json_rpc_error(-32000, "Bad Request: No valid session ID provided")

    async def refusing(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        refused = False

        async def relay(message: Any) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 404:
                refused = True
                length = str(len(body)).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", length)]
                await send({"type": "http.response.start", "status": 400, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            elif not refused:
                await send(message)

        await app(scope, receive, relay)

    return refusing


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "http-400":
        import uvicorn

        app = refusing_with_400(server.streamable_http_app())
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    elif len(sys.argv) >= 3 and sys.argv[1] == "http-failing":
        import uvicorn

        app = failing_its_calls_with_400(server.streamable_http_app())
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    elif len(sys.argv) >= 3 and sys.argv[1] == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
