"""One live session with one MCP server, on the MCP loop: open, list tools, call, close.

A connection opens on first use and stays open for the process (one session per server per
kernel). A server that dies is noticed by the call it breaks (that call gets an error), or, with
no call in flight, when its messages end; the next call opens a new session. Everything here
runs on the MCP loop (see ``_loop_thread``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import os
import re
import shutil
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import (
    McpConnectionError,
    McpMalformedResultError,
    McpTimeoutError,
    McpToolError,
)
from ..question_types import describe_validation_error
from ._call_slots import CallSlots
from ._guard import (
    child_processes,
    end_group,
    end_watcher,
    guarded_command,
    start_watcher,
    started_server_soon,
)
from ._halves import mend_halves
from ._lines import read_again
from ._sdk_logs import quiet_sdk_logs
from ._servers import HttpServer, McpServerConfig, SseServer, StdioServer
from ._stderr import StderrTail

if TYPE_CHECKING:
    import mcp.types as mcp_types
    from mcp import ClientSession

__all__ = ["Connection", "ElicitFn", "stderr_tail"]

#: Lines of a server's standard error named in an error that it could not start.
STDERR_LINES = 12
#: Seconds a server may take at least to start, answer ``initialize`` and list its tools (its
#: ``timeout=`` when larger: a server npx fetches the first time may need minutes).
START_TIMEOUT = 30.0
#: The longest the first call after one that ended without its answer waits for the server to
#: answer its ping (see ``Connection._fence``), in seconds, at most the call's own time limit.
FENCE_PING_TIMEOUT = 5.0
#: Seconds a server that could not start is given to finish writing its standard error.
_LAST_WORDS = 2.0

#: Who asks the person during one call (see ``_elicit``); None: nobody can be asked.
ElicitFn = Callable[[list[Any]], Awaitable[Any]]


def stderr_tail(text: str, lines: int = STDERR_LINES) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return "\n".join(kept)


def _flatten(error: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from anyio task groups."""
    while isinstance(getattr(error, "exceptions", None), (list, tuple)) and error.exceptions:  # type: ignore[attr-defined]
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return error


#: The message of the MCP SDK's error for a connection that closed under a request.
_SDK_CLOSED = "Connection closed"
#: How the SDK's streamable HTTP client tells of a request whose response stream ended (the
#: server went away mid-call), with the same code: its words, not the server's. (Not its "SSE
#: stream failed: ...": a stream it could not read, an event over its size limit, from a
#: server still there.)
_SDK_STREAM_LOST = frozenset(
    {
        "SSE stream ended without a response",
        "SSE stream ended and reconnection attempts were exhausted",
    }
)


def _is_closed(error: BaseException) -> bool:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    error = _flatten(error)
    if isinstance(error, MCPError):
        # The SDK's own word that the transport closed. A server may answer a call with the
        # same code (-32000 is in JSON-RPC's range for servers' errors), with its own message:
        # that is the server's error, and its session goes on.
        if error.code != CONNECTION_CLOSED or error.data is not None:
            return False
        return error.message == _SDK_CLOSED or error.message in _SDK_STREAM_LOST
    import anyio

    return isinstance(
        error,
        (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            ConnectionError,
            EOFError,
            BrokenPipeError,
        ),
    )


class _SessionUnknown(Exception):
    """The HTTP server no longer knows the session (HTTP 404, or a 400 about the session: it
    was restarted or ended the session): it did not handle the call, which may be made again
    on a new session."""


def _session_unknown(error: BaseException) -> bool:
    """Whether ``error`` is the MCP SDK's word for an HTTP 404 on the session ("Session not
    found" from the server, or the SDK's own "Session terminated")."""
    from mcp import MCPError

    error = _flatten(error)
    if not isinstance(error, MCPError) or error.code not in (-32600, -32001):
        return False
    message = str(getattr(error, "message", "") or error).lower()
    return "session" in message and ("not found" in message or "terminated" in message)


def _refused_post(error: BaseException, refusals: set[str]) -> bool:
    """Whether ``error`` is how the SDK tells of its request's POST refused with an HTTP error
    (a call the server did not handle, when the session was refused too): the JSON-RPC error
    of a refusal (``refusals``: their messages), or the SDK's stand-in for a body it could not
    read. Any other failure of a call, a lost stream, is not a reason to make it again."""
    from mcp import MCPError

    error = _flatten(error)
    if not isinstance(error, MCPError):
        return False
    said = str(getattr(error, "message", "") or error)
    return said in refusals or (error.code == -32603 and said == STAND_IN)


#: What the SDK says of a request whose POST got an HTTP error with no JSON-RPC error in it.
STAND_IN = "Server returned an error response"
#: How servers refuse a session they do not know, word for word (the MCP transports of the
#: TypeScript and Python SDKs and their examples); a tool's own error that names some session
#: ("Browser session expired") is not one.
_REFUSED_SESSION = re.compile(
    r"\s*(?:(?:bad request|not found|unauthorized)\s*:\s*)?"
    r"(?:no valid session id provided|mcp-session-id header is required|missing session id"
    r"|session not found|invalid session id|invalid or expired session id"
    r"|session (?:has been )?terminated|server not initialized)\.?\s*",
    re.IGNORECASE,
)
#: A refusal's body is read only when it is at most this long (an error's few bytes).
_REFUSAL_READ = 4096


def _links_required(error: BaseException) -> list[Any] | None:
    """The web pages a server's error -32042 (URL elicitation required) asks the person to
    open first, or None for any other error (or one whose pages cannot be read)."""
    from mcp import MCPError
    from mcp.shared.exceptions import UrlElicitationRequiredError
    from mcp.types import URL_ELICITATION_REQUIRED

    if not isinstance(error, MCPError) or error.code != URL_ELICITATION_REQUIRED:
        return None
    try:
        links = UrlElicitationRequiredError.from_error(error.error).elicitations
    except (ValueError, TypeError, AttributeError):  # (a ValidationError is a ValueError)
        return None
    return links or None


def _not_mcp(error: ValidationError) -> str:
    """What is wrong with an answer of the server's that is not valid MCP (its tool list)."""
    title = error.title.removesuffix("Result")
    listed = describe_validation_error(error, "answer", most=3)
    return f"its answer to {title} is not valid MCP ({listed})"


class _EndWatched:
    """The server's messages as the session reads them, setting ``ended`` when they end: a
    stdio server that exits (or an SSE stream that drops) while no call is in flight is then
    noticed at once, and the next call opens a new session instead of failing. A line the SDK
    could not read is read again where its intent is plain (see :mod:`._lines`)."""

    def __init__(self, stream: Any, ended: asyncio.Event) -> None:
        self._stream = stream
        self._ended = ended

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aenter__(self) -> _EndWatched:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        self._ended.set()
        return await self._stream.__aexit__(*exc_info)

    def __aiter__(self) -> _EndWatched:
        return self

    async def __anext__(self) -> Any:
        try:
            return read_again(await self._stream.__anext__())
        except _stream_ends(StopAsyncIteration):
            self._ended.set()
            raise

    async def receive(self) -> Any:
        try:
            return read_again(await self._stream.receive())
        except _stream_ends():
            self._ended.set()
            raise

    async def aclose(self) -> None:
        self._ended.set()
        await self._stream.aclose()


@functools.cache
def _stream_ends(*more: type[BaseException]) -> tuple[type[BaseException], ...]:
    """How anyio says a stream has ended or was closed (and ``more``)."""
    import anyio

    return (*more, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


async def _first_of(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


class _PersonWait:
    """Whether a call is waiting for a person (an elicitation), with an event per change."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = asyncio.Event()

    def begin(self) -> None:
        self.count += 1
        self.changed.set()
        self.changed = asyncio.Event()

    def end(self) -> None:
        self.count -= 1
        self.changed.set()
        self.changed = asyncio.Event()


#: The MCP SDK versions this package works with (as its ``mcp`` extra asks).
SDK_VERSIONS = "mcp>=2.3,<3"


def _require_sdk() -> None:
    """The official MCP SDK, of a version this package works with: 1.x lacks what it uses (a
    session then waited for ever, without a word), a later major version may change it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        import mcp  # noqa: F401

        installed = version("mcp")
    except (ImportError, PackageNotFoundError):
        raise ImportError(
            "MCP servers need the official MCP SDK: pip install 'anvia_notebook[mcp]'"
        ) from None
    major, _, rest = installed.partition(".")
    minor = rest.partition(".")[0]
    if not (major == "2" and minor.isdigit() and int(minor) >= 3):
        raise ImportError(
            f"MCP servers need the official MCP SDK {SDK_VERSIONS}; version {installed} is "
            "installed: pip install 'anvia_notebook[mcp]' (or pip install "
            f"'{SDK_VERSIONS}')."
        )


class Connection:
    """The session with one server. Use only on the MCP loop."""

    def __init__(
        self, config: McpServerConfig, on_open: Callable[[Connection], None] | None = None
    ) -> None:
        self.config = config
        #: Told each time a session opens (the registry then knows it, to close it).
        self._on_open = on_open
        self.session: ClientSession | None = None
        self.tools: list[mcp_types.Tool] = []
        #: The server said its tools changed (``notifications/tools/list_changed``): they are
        #: listed again before the next run is given them.
        self.tools_changed = False
        self._holder: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        #: The HTTP server refused a request of this session for its session (see
        #: :meth:`_note_refused`): it no longer knows it.
        self._session_refused = False
        #: The messages of the JSON-RPC errors those refusals held.
        self._refusals: set[str] = set()
        self._opening: asyncio.Lock | None = None
        #: The calls in flight on this session: who asks the person for each, and whether
        #: a person is being asked (which pauses its time limit).
        self._calls: list[tuple[ElicitFn | None, _PersonWait]] = []
        #: The session on which a call ended without its answer (stopped, out of time): the
        #: server may still ask for it (see :meth:`_fence`).
        self._abandoned_in: ClientSession | None = None
        #: Fences in progress: a form that comes meanwhile is the server's for an ended call.
        self._fences = 0
        #: Admission: a call that can ask someone runs alone (see ``_call_slots``).
        self._slots = CallSlots()
        #: Times the session was opened (a reconnect counts), for tests and messages.
        self.opened = 0

    @property
    def _start_timeout(self) -> float:
        return max(START_TIMEOUT, self.config.timeout)

    # -- open and close ----------------------------------------------------------------------

    async def ensure_open(self) -> ClientSession:
        _require_sdk()
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self.session is not None and self._holder is not None and not self._holder.done():
                if self.tools_changed:
                    self.tools_changed = False
                    self.tools = await asyncio.wait_for(
                        self._list_tools(self.session), self._start_timeout
                    )
                return self.session
            await self._open()
            assert self.session is not None
            return self.session

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._closing = asyncio.Event()
        self._holder = loop.create_task(self._hold(ready, self._closing))
        try:
            await ready
        except BaseException:
            self._holder.cancel()
            with contextlib.suppress(BaseException):
                await self._holder
            raise
        self.opened += 1
        if self._on_open is not None:
            self._on_open(self)

    async def close(self) -> None:
        """End the session (the server process, for stdio, is stopped by the SDK)."""
        holder, closing = self._holder, self._closing
        self.session = None
        if holder is None or closing is None:
            return
        closing.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(holder), timeout=15)
        if not holder.done():  # pragma: no cover - the SDK bounds its own shutdown
            holder.cancel()
        self._holder = None

    async def _hold(self, ready: asyncio.Future[None], closing: asyncio.Event) -> None:
        """Enter the transport and the session, list the tools, then keep them open until
        :meth:`close` (entered and left in this one task, as anyio requires)."""
        from mcp import ClientSession

        errlog = StderrTail()
        group: int | None = None  # the stdio server's process group, once it is known
        watcher: Any = None  # the watcher of that group (see _guard), this process's child
        try:
            async with contextlib.AsyncExitStack() as stack:
                config = self.config
                if isinstance(config, StdioServer):
                    # One stdio server is started at a time in this process: it is told from
                    # the other children by its command line, which two servers may share, and
                    # closing one took down the other (its process group) now and then.
                    async with _starting(asyncio.get_running_loop()):
                        before = child_processes()
                        read, write = await stack.enter_async_context(
                            self._transport(errlog.writer)
                        )
                        errlog.started()
                        group = await started_server_soon(
                            before, config.command, config.args, config.env, config.cwd
                        )
                        if group is not None:
                            watcher = start_watcher(group)
                else:
                    read, write = await stack.enter_async_context(self._transport(errlog.writer))
                    errlog.started()
                ended = asyncio.Event()  # the server's messages ended: it went away
                session = await stack.enter_async_context(
                    _results_as_sent(ClientSession)(
                        _EndWatched(read, ended),
                        write,
                        elicitation_callback=self._on_elicit,
                        list_roots_callback=self._roots_callback(),
                        message_handler=self._on_server_message,
                    )
                )
                self.tools = await asyncio.wait_for(self._start(session), self._start_timeout)
                self.tools_changed = False
                self.session = session
                ready.set_result(None)
                await _first_of(closing, ended)  # (ended: the next call opens a new session)
        except BaseException as error:
            self.session = None
            if not ready.done():
                ready.set_exception(self._start_error(error, errlog))
            elif not isinstance(error, asyncio.CancelledError):
                return  # the session broke; the call that noticed it reports that
            else:
                raise
        finally:
            self.session = None
            errlog.started()
            if group is not None:  # what the server started and left running
                await end_group(group)
            if watcher is not None:  # (collected here: nobody else would)
                await end_watcher(watcher)

    def _command(self) -> tuple[str, list[str]]:
        """The command that starts the stdio server (through the guard where there is one)."""
        config = self.config
        assert isinstance(config, StdioServer)
        env = dict(config.env) if config.env is not None else None
        return guarded_command(config.command, config.args, env, config.cwd)

    def _transport(self, errlog: Any) -> Any:
        config = self.config
        quiet_sdk_logs()
        if isinstance(config, StdioServer):
            from mcp import StdioServerParameters, stdio_client

            env = dict(config.env) if config.env is not None else None
            command, args = self._command()
            # Bytes that are not UTF-8 on the server's output (a Latin-1 banner, say) read as
            # U+FFFD: strict decoding would end the reading of its messages for good.
            params = StdioServerParameters(
                command=command,
                args=args,
                env=env,
                cwd=config.cwd,
                encoding_error_handler="replace",
            )
            return stdio_client(params, errlog=errlog)
        if isinstance(config, SseServer):
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=dict(config.headers or {}))
        if isinstance(config, HttpServer):
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers=dict(config.headers or {}))
            hooks = client.event_hooks
            client.event_hooks = {
                **hooks,
                "response": [mend_halves, *hooks["response"], self._note_refused],
            }
            self._session_refused = False
            self._refusals = set()
            return _http_transport(config.url, client)
        raise TypeError(f"Not an MCP server: {config!r}")  # pragma: no cover

    async def _note_refused(self, response: Any) -> None:
        """Note a request of the session refused for its session. A server that no longer
        knows a session answers 404 (the MCP spec, the Python SDK) or 400 with words on the
        session (the TypeScript SDK's servers: "No valid session ID provided"), and did not
        handle the request; the SDK turns a 400 into "Server returned an error response"."""
        if response.status_code not in (400, 404) or response.request.method != "POST":
            return  # (a refused GET, the SDK's resumption of a stream, is not a call's)
        if not response.request.headers.get("mcp-session-id"):
            return
        kind = response.headers.get("content-type", "")
        if "json" not in kind and not kind.startswith("text/"):  # (not an event stream)
            return
        length = response.headers.get("content-length", "")
        if not length.isdigit() or int(length) > _REFUSAL_READ:
            return
        body = await response.aread()  # (an error's few bytes: the SDK reads them from here)
        said: Any = body.decode("utf-8", "replace")
        with contextlib.suppress(ValueError, LookupError, TypeError, RecursionError):
            said = json.loads(body)["error"]["message"]  # (a JSON-RPC error: its words)
        if isinstance(said, str) and _REFUSED_SESSION.fullmatch(said):
            self._session_refused = True
            self._refusals.add(said)

    def _roots_callback(self) -> Any:
        config = self.config
        if not isinstance(config, StdioServer) or config.roots is None:
            return None
        from pathlib import Path

        roots = [(Path(r).as_uri(), r) for r in config.roots]  # (absolute: see stdio())

        async def list_roots(context: Any) -> Any:
            import mcp.types as types

            return types.ListRootsResult(roots=[types.Root(uri=u, name=n) for u, n in roots])

        return list_roots

    async def _on_server_message(self, message: Any) -> None:
        """A server's notification: a new list of tools (their approval hints included) is
        read before the next run (a run keeps the tools it was given)."""
        import mcp.types as types

        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed = True

    async def _start(self, session: ClientSession) -> list[mcp_types.Tool]:
        await session.initialize()
        tools = await self._list_tools(session)
        # Arguments are checked against the tools' schemas with jsonschema, whose first import
        # takes a second or more: made here, off the run's loop, not at the first call.
        await asyncio.to_thread(importlib.import_module, "jsonschema")
        return tools

    @staticmethod
    async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            if cursor is None:
                listing = await session.list_tools()
            else:
                import mcp.types as types

                listing = await session.list_tools(
                    params=types.PaginatedRequestParams(cursor=cursor)
                )
            tools.extend(listing.tools)
            cursor = listing.next_cursor
            if not cursor:
                return tools
            if cursor in seen:
                raise McpConnectionError(  # told as why the server could not start
                    f"its list of tools never ends (it named the page {cursor!r} again after "
                    f"{len(tools)} tools)"
                )
            seen.add(cursor)

    def _start_error(self, error: BaseException, errlog: StderrTail) -> McpConnectionError:
        """A clear error for a server that could not start: the command (or URL), what went
        wrong and the end of what it wrote to its standard error."""
        config = self.config
        inner = _flatten(error)
        where = config.describe()
        if isinstance(config, StdioServer):
            if isinstance(inner, FileNotFoundError) and (
                config.cwd is not None and not os.path.isdir(config.cwd)
            ):
                what = f"its working folder {config.cwd!r} does not exist"
            elif isinstance(inner, FileNotFoundError) and shutil.which(config.command) is None:
                what = f"the command {config.command!r} was not found"
            elif isinstance(inner, (asyncio.TimeoutError, TimeoutError)):
                what = (
                    f"it did not answer within {self._start_timeout:g} s (a server that takes "
                    "longer to start, such as one npx fetches the first time, needs a larger "
                    "timeout=)"
                )
            elif isinstance(inner, McpConnectionError):
                what = str(inner)
            elif isinstance(inner, ValidationError):
                what = _not_mcp(inner)
            elif _is_closed(inner):
                what = "it exited before the MCP session started"
            else:
                what = f"{type(inner).__name__}: {inner}"
            message = f"MCP server {config.name!r} could not start ({where}): {what}."
            tail = stderr_tail(errlog.text(wait=_LAST_WORDS))
            if tail:
                message += f"\nThe end of its standard error:\n{tail}"
            return McpConnectionError(message)
        if isinstance(inner, McpConnectionError):
            what = str(inner)
        elif isinstance(inner, ValidationError):
            what = _not_mcp(inner)
        else:
            what = f"{type(inner).__name__}: {inner}"
        what = what.replace(getattr(config, "url", where), where)  # (an error may quote the URL)
        return McpConnectionError(
            f"MCP server {config.name!r} could not be reached at {where}: {what}"
        )

    # -- calls -------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout: float,
        ask: ElicitFn | None = None,
    ) -> mcp_types.CallToolResult:
        """Call one tool. The time limit restarts at each progress notification; a call past
        it raises :class:`McpTimeoutError`; a session that broke raises
        :class:`~anvia_notebook.errors.McpConnectionError` (the next call reconnects)."""
        # A call that can ask someone runs alone on the session, so a server's question during
        # it is its own (see _call_slots); its time limit starts once it is admitted.
        async with self._slots.hold(exclusive=ask is not None):
            try:
                return await self._call_in_session(name, arguments, timeout, ask)
            except Exception as error:
                links = _links_required(error)
                if links is None:
                    raise
            # The server needs the person to open web pages first (a sign-in, say): each is
            # put to the person as a URL question; once all are done, the call is made again.
            await self._open_links(name, links, ask)
            return await self._call_in_session(name, arguments, timeout, ask)

    async def _open_links(self, name: str, links: list[Any], ask: ElicitFn | None) -> None:
        from ._elicit import elicit_result

        for link in links:
            where = f"{link.message} {link.url}"
            if ask is None:
                raise McpToolError(
                    f"MCP server {self.config.name!r} needs the person to open a web page before "
                    f"{name} can run ({where}), and this run has nobody to ask (no human input)."
                )
            result = await elicit_result(ask, link, self.config.name)
            if result.action != "accept":
                what = "declined" if result.action == "decline" else "did not finish"
                raise McpToolError(
                    f"MCP server {self.config.name!r} needs the person to open a web page before "
                    f"{name} can run ({where}), and the person {what}."
                )

    async def _call_in_session(
        self, name: str, arguments: dict[str, Any], timeout: float, ask: ElicitFn | None
    ) -> mcp_types.CallToolResult:
        try:
            return await self._call_admitted(name, arguments, timeout, ask)
        except _SessionUnknown:
            # As the MCP spec says: a new session. The server never saw this call.
            try:
                return await self._call_admitted(name, arguments, timeout, ask)
            except _SessionUnknown:
                raise McpConnectionError(
                    f"MCP server {self.config.name!r} did not know the session it had just "
                    f"opened, in the call of {name} (the next call opens another)."
                ) from None

    async def _call_admitted(
        self, name: str, arguments: dict[str, Any], timeout: float, ask: ElicitFn | None
    ) -> mcp_types.CallToolResult:
        session = await self.ensure_open()
        closing = self._closing  # (set when this session is closed on purpose)
        if self._abandoned_in is session:
            await self._fence(session, timeout)
        loop = asyncio.get_running_loop()
        last_progress = loop.time()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal last_progress
            last_progress = loop.time()

        task = loop.create_task(session.call_tool(name, arguments, progress_callback=on_progress))
        waiting = _PersonWait()
        self._calls.append((ask, waiting))
        try:
            while True:
                remaining: float | None = None  # no limit while a person is being asked
                if not waiting.count:
                    remaining = last_progress + timeout - loop.time()
                    if remaining <= 0:
                        self._abandoned_in = session
                        task.cancel()
                        with contextlib.suppress(BaseException):
                            await task
                        raise McpTimeoutError(
                            f"MCP tool {name} on server {self.config.name!r} gave no result "
                            f"within {timeout:g} s (the call's time limit; progress from the "
                            "server would have extended it)."
                        )
                change = loop.create_task(waiting.changed.wait())
                try:
                    done, _ = await asyncio.wait(
                        {task, change}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    change.cancel()
                if task in done:
                    break
                if change in done:  # a person began or ended answering: the clock restarts
                    last_progress = loop.time()
            try:
                return task.result()
            except ValidationError as error:
                raise McpMalformedResultError(
                    f"MCP server {self.config.name!r} answered the call of {name} with something "
                    f"that is not a valid MCP tool result ({describe_validation_error(error)})."
                ) from None
            except BaseException as error:
                if isinstance(self.config, HttpServer) and (
                    _session_unknown(error)
                    or (self._session_refused and _refused_post(error, self._refusals))
                ):
                    await self.close()
                    raise _SessionUnknown from None
                if _is_closed(error):
                    closed_here = closing is not None and closing.is_set()
                    await self.close()
                    again = "starts it" if isinstance(self.config, StdioServer) else "connects"
                    what = "was closed (close() or close_all())" if closed_here else "went away"
                    raise McpConnectionError(
                        f"MCP server {self.config.name!r} {what} during the call of {name} "
                        f"(the next call {again} again)."
                    ) from None
                raise
        except asyncio.CancelledError:
            if not task.done():
                self._abandoned_in = session
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        finally:
            self._calls.remove((ask, waiting))

    async def _fence(self, session: ClientSession, timeout: float) -> None:
        """Make sure a form the server sent for a call that ended without its answer is not
        put to the person of the next call. Over stdio and SSE a server's question names no
        call (the MCP SDK gives its callback nothing that does), and one sent just before the
        server read that the call was cancelled came while the next call was in progress, and
        was put to its person as if it were that call's. The server is pinged first: what it
        sent before it answered the ping is from before the next call, and is answered
        ``cancel`` (see :meth:`_on_elicit`). (Over streamable HTTP a call's questions come on
        its own request's stream, which ends with the call.) Any answer will do, an error too;
        a server that gives none within :data:`FENCE_PING_TIMEOUT` (or the call's time limit,
        if shorter) is waited on no longer, and the call goes on (a server gone is for the call
        to find). Either way the session is fenced once: the next calls ping no more (unless
        one of them ends without its answer). A call stopped while it waits leaves the fence
        to the next call."""
        if isinstance(self.config, HttpServer):
            self._abandoned_in = None
            return
        self._fences += 1
        try:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(session.send_ping(), min(timeout, FENCE_PING_TIMEOUT))
        finally:
            self._fences -= 1
        if self._abandoned_in is session:
            self._abandoned_in = None

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        """A server asks the person something during a call: the run of the call that can ask
        someone asks (such a call runs alone on the session, so it is the call that caused
        the question); the call's time limit is paused meanwhile. With only calls that have
        nobody to ask in flight, it is declined with a warning; with none, or while a call
        waits for the server to answer its ping (see :meth:`_fence`), it is cancelled (the call
        that asked has ended: stopped, or out of time; nobody declined anything)."""
        from mcp.types import ElicitResult

        from ._elicit import elicit_result

        if not self._calls or self._fences:
            return ElicitResult(action="cancel")
        asking = [(ask, waiting) for ask, waiting in self._calls if ask is not None]
        if not asking:
            return await elicit_result(None, params, self.config.name)
        [(ask, waiting)] = asking
        waiting.begin()
        try:
            return await elicit_result(ask, params, self.config.name)
        finally:
            waiting.end()


@contextlib.asynccontextmanager
async def _http_transport(url: str, client: Any) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams[0], streams[1]


@functools.cache
def _results_as_sent(session_type: type[Any]) -> type[Any]:
    """``session_type`` that hands a tool's result over as the server sent it. The SDK checks
    a result against the tool's ``outputSchema`` and raises when its structured content is
    missing or does not fit: the text the server sent (what the model reads) was lost."""

    class ResultsAsSent(session_type):  # type: ignore[misc]
        async def validate_tool_result(self, name: str, result: Any) -> None:
            return None

    return ResultsAsSent


_STARTING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _starting(loop: asyncio.AbstractEventLoop) -> asyncio.Lock:
    """The lock a stdio server's start holds on ``loop`` until the server is known."""
    lock = _STARTING.get(loop)
    if lock is None:
        lock = _STARTING[loop] = asyncio.Lock()
    return lock
