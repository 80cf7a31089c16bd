"""Coalescing ops into numbered ``batch`` messages, at most one every ~50 ms.

The Jupyter server drops widget messages above about 1000/s, and ZMQ drops bursts, so the page
gets one ``batch`` per interval instead of one message per token (see the kernel notes). A
consecutive run of ``append`` ops to the same entry field becomes one op, and consecutive
``status`` ops keep only the last. Not thread-safe: use it on the loop it is bound to.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from typing import Any

from .protocol import batch_message

__all__ = ["DEFAULT_INTERVAL", "Batcher"]

#: Seconds between two batches while a run streams: 20 updates a second read as smooth
#: streaming, and the page gets as few messages as a hand-written 50 ms batcher sends (see the
#: browser benchmarks). Buttons and the end of a run do not wait for it (``FLUSH_NOW``).
DEFAULT_INTERVAL = 0.05


class Batcher:
    """Buffers ops and sends them as ``{"type": "batch", "seq", "ops"}`` messages."""

    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        *,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self.interval = interval
        self._clock = clock
        #: The seq of the last batch sent (a snapshot taken now carries it).
        self.seq = 0
        self._ops: list[dict[str, Any]] = []
        self._pieces: list[str] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_flush = float("-inf")
        #: How many batch messages were sent (for tests and benchmarks).
        self.batches_sent = 0

    @property
    def pending(self) -> int:
        """How many ops wait for the next batch."""
        return len(self._ops)

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Schedule flushes on ``loop`` from now on (``None``: only explicit flushes)."""
        self._cancel_timer()
        self._loop = loop
        if self._ops:
            self._schedule()

    def push(self, op: dict[str, Any]) -> None:
        """Buffer one op (O(1)); a flush is scheduled within the interval."""
        last = self._ops[-1] if self._ops else None
        kind = op["op"]
        if (
            kind == "append"
            and last is not None
            and self._pieces is not None
            and last["id"] == op["id"]
            and last["field"] == op["field"]
        ):
            self._pieces.append(op["text"])
        else:
            self._close_pieces()
            if kind == "status" and last is not None and last["op"] == "status":
                self._ops[-1] = op
            else:
                self._ops.append(op)
                if kind == "append":
                    self._pieces = [op["text"]]
        self._schedule()

    def _close_pieces(self) -> None:
        if self._pieces is not None:
            if len(self._pieces) > 1:
                self._ops[-1] = {**self._ops[-1], "text": "".join(self._pieces)}
            self._pieces = None

    def _schedule(self) -> None:
        if self._timer is not None or self._loop is None or self._loop.is_closed():
            return
        delay = max(0.0, self._last_flush + self.interval - self._clock())
        # An empty context: a flush must not run as part of the tool call that pushed the op.
        self._timer = self._loop.call_later(delay, self._on_timer, context=contextvars.Context())

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> bool:
        """Send what is buffered now, as one batch; False when there was nothing."""
        self._cancel_timer()
        self._close_pieces()
        if not self._ops:
            return False
        ops, self._ops = self._ops, []
        self.seq += 1
        self._last_flush = self._clock()
        self.batches_sent += 1
        self._send(batch_message(self.seq, ops))
        return True

    def close(self) -> None:
        """Flush and stop scheduling (the run is over)."""
        self.flush()
        self._loop = None
