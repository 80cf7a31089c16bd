"""Coalescing ops into numbered ``batch`` messages, at most one every ~50 ms.

The Jupyter server drops widget messages above about 1000/s, and ZMQ drops bursts, so the page
gets one ``batch`` per interval instead of one message per token (see the kernel notes). A
consecutive run of ``append`` ops to the same entry field becomes one op, and consecutive
``status`` ops keep only the last. Not thread-safe: use it on the loop it is bound to.

A batch goes out from a loop timer, or from the push that finds the oldest waiting op an
interval old: a producer that never yields to the loop (a tight synchronous stream) still
streams at the same pace.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from typing import Any

from ._protocol import batch_message

__all__ = ["DEFAULT_INTERVAL", "Batcher"]

#: Seconds between two batches while a run streams: 20 updates a second read as smooth
#: streaming, and the page gets as few messages as a hand-written 50 ms batcher sends (see the
#: browser benchmarks). Buttons and the end of a run do not wait for it (``FLUSH_NOW``).
DEFAULT_INTERVAL = 0.05

_NEVER = float("inf")


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
        #: The text pieces of the last op while it is an ``append`` (joined when it goes out),
        #: and that op's entry id and field.
        self._pieces: list[str] | None = None
        self._open_id: str | None = None
        self._open_field = ""
        #: When the oldest op now waiting has waited an interval (infinity: nothing waits, or
        #: no loop): a push from then on sends the batch.
        self._due = _NEVER
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
        self._due = _NEVER
        if self._ops:
            self._pushed()

    def append(self, entry_id: str, field: str, text: str) -> None:
        """Buffer ``text`` appended to an entry's field: the per-delta path, O(1), with no op
        built when it continues the last op."""
        if self._open_id == entry_id and self._open_field == field:
            self._pieces.append(text)  # type: ignore[union-attr]  # set with _open_id
            if self._clock() >= self._due:
                self._flush_late()
        else:
            self.push({"op": "append", "id": entry_id, "field": field, "text": text})

    def push(self, op: dict[str, Any]) -> None:
        """Buffer one op (O(1)); a flush is scheduled within the interval."""
        kind = op["op"]
        if kind == "append" and self._open_id == op["id"] and self._open_field == op["field"]:
            self._pieces.append(op["text"])  # type: ignore[union-attr]  # set with _open_id
        else:
            self._close_pieces()
            if kind == "status" and self._ops and self._ops[-1]["op"] == "status":
                self._ops[-1] = op
            else:
                self._ops.append(op)
                if kind == "append":
                    self._pieces = [op["text"]]
                    self._open_id = op["id"]
                    self._open_field = op["field"]
        self._pushed()

    def _pushed(self) -> None:
        """An op is waiting: send the batch if the oldest waiting op is an interval old (the
        loop may be too busy to run the timer), else make sure the timer is set."""
        if self._loop is None:
            return
        now = self._clock()
        if self._due == _NEVER:
            self._due = now + self.interval
        elif now >= self._due:
            self._flush_late()
            return
        if self._timer is None:
            self._schedule()

    def _flush_late(self) -> None:
        # As from the timer: not as part of whatever pushed the op (a tool call, say).
        contextvars.Context().run(self.flush)

    def _close_pieces(self) -> None:
        pieces = self._pieces
        if pieces is not None:
            if len(pieces) > 1:
                self._ops[-1] = {**self._ops[-1], "text": "".join(pieces)}
            self._pieces = None
            self._open_id = None

    def _schedule(self) -> None:
        loop = self._loop
        if self._timer is not None or loop is None or loop.is_closed():
            return
        delay = max(0.0, self._last_flush + self.interval - self._clock())
        # An empty context: a flush must not run as part of the tool call that pushed the op.
        self._timer = loop.call_later(delay, self._on_timer, context=contextvars.Context())

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def absorb(self) -> None:
        """The ops waiting are already in a snapshot about to go out (every page gets it): count
        them as a batch sent, so the seq moves on, without sending them."""
        self._cancel_timer()
        self._close_pieces()
        self._due = _NEVER
        if self._ops:
            self._ops = []
            self.seq += 1
            self._last_flush = self._clock()

    def flush(self) -> bool:
        """Send what is buffered now, as one batch; False when there was nothing."""
        self._cancel_timer()
        self._close_pieces()
        self._due = _NEVER
        if not self._ops:
            return False
        ops, self._ops = self._ops, []
        self.seq += 1
        self._last_flush = self._clock()
        self.batches_sent += 1
        self._send(batch_message(self.seq, ops))
        return True
