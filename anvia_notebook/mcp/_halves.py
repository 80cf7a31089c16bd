"""Half of a UTF-16 pair escaped in JSON (``"\\ud83d"``) as U+FFFD, over streamable HTTP.

A JavaScript server whose text was cut in the middle of an emoji writes the half it kept as
an escape, and JavaScript reads it; the MCP SDK's JSON reader refuses the whole message. Over
stdio and SSE the SDK hands the session the error of such a message, which is read again
there (see :mod:`._lines`); over streamable HTTP the SDK reads the answer itself and fails
the request at once (its -32700, "Failed to parse"). So the answers of a streamable HTTP
server are mended before the SDK reads them: in a JSON body, and in the ``data:`` lines of
an event stream, each escape of a lone half is made the escape of U+FFFD (``\\ufffd``, as
long: a ``Content-Length`` still holds), which is what the other transports read it as. An
escaped backslash before ``ud83d`` is text, not an escape, and is left as it is; so is a
whole pair. A body in a content encoding (gzip) is left as it is.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["mend_halves"]

#: An escaped backslash, a high half (with the low half after it, when there is one), or a low
#: half: read from left to right, an escaped backslash is passed over whole, so what follows
#: it is never taken for an escape.
_ESCAPE = re.compile(
    rb"\\(?:\\|u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_LINE_ENDS = re.compile(rb"(\r\n|\r|\n)")
_REPLACEMENT = b"\\ufffd"


def _mend_escape(found: re.Match[bytes]) -> bytes:
    escape = found.group()
    return escape if len(escape) in (2, 12) else _REPLACEMENT


def _mend(text: bytes, events: bool) -> bytes:
    """``text`` (whole lines) with each escaped lone half as ``\\ufffd``: all of it for JSON,
    only its ``data:`` lines for an event stream (``events``)."""
    if b"\\u" not in text:
        return text
    if not events:
        return _ESCAPE.sub(_mend_escape, text)
    parts = _LINE_ENDS.split(text)
    for index in range(0, len(parts), 2):  # (the lines; the line ends between them)
        if parts[index].startswith(b"data:"):
            parts[index] = _ESCAPE.sub(_mend_escape, parts[index])
    return b"".join(parts)


@functools.cache
def _mended_type() -> type[Any]:
    """The stream type :func:`mend_halves` hands the HTTP client (made on first use: the HTTP
    client comes with the MCP SDK, which may not be installed)."""
    import httpx2

    class Mended(httpx2.AsyncByteStream):
        """A response's raw stream, mended line by line: no escape spans a line end (JSON
        writes none inside a text), so the text up to a piece's last line end is mended, the
        rest held for the next pieces, or for the end (a JSON body with no line end is mended
        whole at its end). Only a new piece is searched for a line end, and the pieces held
        are joined once: a long line (a JSON body, an event's ``data:``) costs time linear in
        its length, not in its length times its pieces."""

        def __init__(self, stream: Any, events: bool) -> None:
            self._stream = stream
            self._events = events

        async def __aiter__(self) -> AsyncIterator[bytes]:
            held: list[bytes] = []  # (since the last line end: no line end in them)
            async for piece in self._stream:
                end = max(piece.rfind(b"\n"), piece.rfind(b"\r")) + 1
                if not end:
                    held.append(piece)
                    continue
                held.append(piece[:end])
                yield _mend(b"".join(held), self._events)
                held = [piece[end:]]
            rest = b"".join(held)
            if rest:
                yield _mend(rest, self._events)

        async def aclose(self) -> None:
            await self._stream.aclose()

    return Mended


async def mend_halves(response: Any) -> None:
    """An HTTP client's response hook: the body of a JSON or event-stream response is mended
    as it is read (see the module's text)."""
    kind = response.headers.get("content-type", "").lower()
    events = kind.startswith("text/event-stream")
    if not (events or kind.startswith("application/json")):
        return
    if response.headers.get("content-encoding", "identity").lower() not in ("", "identity"):
        return
    response.stream = _mended_type()(response.stream, events)
