"""A stdio MCP server's standard error, of which only the end is kept (in memory, bounded).

The server writes into a pipe; a daemon thread reads it and keeps the last ``limit`` bytes, so
a chatty server running all day costs a few kilobytes, not a file that grows for the whole
session. The end is what a start error shows ("could not start ... the end of its standard
error").
"""

from __future__ import annotations

import os
import threading
from typing import IO

__all__ = ["StderrTail"]

#: Bytes of a server's standard error kept (its last lines).
KEPT_BYTES = 64 * 1024
_CHUNK = 8192


class StderrTail:
    """Give :attr:`writer` to the process as its standard error, call :meth:`started` once it
    runs (the process holds its own copy of the pipe), and read :meth:`text` at any time."""

    def __init__(self, limit: int = KEPT_BYTES) -> None:
        read_fd, write_fd = os.pipe()
        self._limit = limit
        self._kept = bytearray()
        self._lock = threading.Lock()
        #: The pipe's writing end, a file object as ``subprocess`` takes it.
        self.writer: IO[str] = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._reader = threading.Thread(
            target=self._read, args=(read_fd,), name="mcp-server-stderr", daemon=True
        )
        self._reader.start()

    def _read(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(_CHUNK):
                with self._lock:
                    self._kept += chunk
                    if len(self._kept) > self._limit:
                        del self._kept[: len(self._kept) - self._limit]

    def started(self) -> None:
        """Close this process's copy of the writing end: the reader ends when the server
        (and whatever it started that shares its standard error) has exited."""
        if not self.writer.closed:
            self.writer.close()

    def text(self, wait: float = 0.0) -> str:
        """What is kept, as text; after waiting up to ``wait`` seconds for the server's last
        words (when it has exited, the reader soon reaches the pipe's end)."""
        self.started()
        if wait > 0:
            self._reader.join(wait)
        with self._lock:
            return self._kept.decode("utf-8", errors="replace")
