"""The official SDK's log records that would fill a notebook cell with tracebacks, rewritten
by filters on its loggers (the records are the SDK's):

- a stdio server that prints to its standard output (a banner, a progress line) breaks no call:
  the SDK skips the line, but logs it as an error with a full traceback, once per line. Such a
  record becomes one short warning naming what the server wrote;
- an HTTP or SSE server that goes away (stopped, restarted, its connection dropped): the SDK
  logs the broken connection with a traceback of four chained errors. The session notices the
  end itself and the next call reports it or connects again, so the record becomes one line at
  the INFO level (not shown unless logging is set up to show it); so does the SDK's warning
  that such a server did not end the session it had forgotten.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ._lines import read_again

__all__ = ["quiet_sdk_logs"]

#: The SDK's logger of the stdio transport, and the message it logs for a line it skipped.
SDK_LOGGER = "mcp.client.stdio"
SDK_MESSAGE = "Failed to parse JSONRPC message from server"
#: At most this many characters of the line are shown.
MAX_SHOWN = 200


class _StrayLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != SDK_MESSAGE or not record.exc_info:
            return True
        if read_again(record.exc_info[1]) is not record.exc_info[1]:
            return False  # (read as a message after all: nothing was skipped)
        line = _line_of(record.exc_info[1])
        record.msg = (
            "An MCP server wrote a line that is not an MCP message to its standard output "
            "(servers must write only MCP messages there); the line was skipped: %r"
        )
        record.args = (line if len(line) <= MAX_SHOWN else f"{line[:MAX_SHOWN]}…",)
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _line_of(error: Any) -> str:
    """The text the SDK could not read (pydantic's error keeps it as its input: the line, or
    the JSON it held when it was JSON but no MCP message)."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            found = errors()
        except Exception:  # pragma: no cover - not a pydantic error after all
            found = []
        # The line itself, else the message read from it (an error of one of its own fields:
        # a value deeper in it may be a text, which is not what the server wrote)
        for item in found:
            if item.get("type") == "json_invalid" and isinstance(item.get("input"), str):
                return str(item["input"])
        for item in found:
            if len(item.get("loc", ())) <= 2 and isinstance(item.get("input"), (dict, list)):
                return json.dumps(item["input"], ensure_ascii=False, default=str)
        for item in found:
            if isinstance(item.get("input"), str):
                return str(item["input"])
    return str(error)


#: The SDK's loggers of the HTTP transports, and the messages they log for a broken
#: connection.
HTTP_LOGGERS = ("mcp.client.sse", "mcp.client.streamable_http")
HTTP_MESSAGES = frozenset({"Error in sse_reader", "Error in post_writer"})
#: Where the errors of a dropped connection come from (the HTTP stack, anyio's streams).
_CONNECTION_MODULES = ("httpx", "httpcore", "h11", "anyio")


class _DroppedConnection(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg not in HTTP_MESSAGES or not record.exc_info:
            return True
        error = record.exc_info[1]
        if error is None or not _connection_error(error):
            return True
        error = _first(error)
        record.msg = "An MCP server's connection ended (%s: %s)"
        record.args = (type(error).__name__, str(error)[:MAX_SHOWN])
        record.exc_info = None
        record.exc_text = None
        record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _connection_error(error: BaseException | None) -> bool:
    inner = getattr(error, "exceptions", None)  # an exception group (anyio's task groups)
    if isinstance(inner, (list, tuple)) and inner:
        return all(isinstance(e, BaseException) and _connection_error(e) for e in inner)
    if isinstance(error, OSError):
        return True
    module = type(error).__module__ if error is not None else ""
    return module.split(".", 1)[0].startswith(_CONNECTION_MODULES)


def _first(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups, or ``error``."""
    while isinstance(getattr(error, "exceptions", None), (list, tuple)) and error.exceptions:  # type: ignore[attr-defined]
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return error


class _EndNotTaken(logging.Filter):
    """The SDK's warning that the server did not end a session when it was closed (it logs
    "Session termination failed: 400" for a server that had forgotten it): nothing is left to
    do, so the record becomes one line at the INFO level."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Session termination failed"):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


_FILTERS: list[tuple[str, logging.Filter]] = [(SDK_LOGGER, _StrayLine())]
_FILTERS += [(name, _DroppedConnection()) for name in HTTP_LOGGERS]
_FILTERS += [("mcp.client.streamable_http", _EndNotTaken())]


def quiet_sdk_logs() -> None:
    """Put the filters on the SDK's loggers (once)."""
    for name, log_filter in _FILTERS:
        logger = logging.getLogger(name)
        if not any(type(f) is type(log_filter) for f in logger.filters):
            logger.addFilter(log_filter)
