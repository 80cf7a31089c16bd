"""A stdio server that prints to its standard output (a banner, a progress line) breaks no
call: the official SDK skips the line, but logs it as an error with a full traceback, once per
line, in the notebook cell. Here such a log record becomes one short warning naming what the
server wrote (the record is the SDK's, rewritten by a filter on its logger)."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["quiet_stray_output"]

#: The SDK's logger of the stdio transport, and the message it logs for a line it skipped.
SDK_LOGGER = "mcp.client.stdio"
SDK_MESSAGE = "Failed to parse JSONRPC message from server"
#: At most this many characters of the line are shown.
MAX_SHOWN = 200


class _StrayLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != SDK_MESSAGE or not record.exc_info:
            return True
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
    """The text the SDK could not read (pydantic's error keeps it as its input)."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            found = errors()
        except Exception:  # pragma: no cover - not a pydantic error after all
            found = []
        for item in found:
            if isinstance(item.get("input"), str):
                return str(item["input"])
    return str(error)


_FILTER = _StrayLine()


def quiet_stray_output() -> None:
    """Put the filter on the SDK's logger (once)."""
    logger = logging.getLogger(SDK_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
