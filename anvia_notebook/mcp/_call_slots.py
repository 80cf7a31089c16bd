"""Which calls may be in flight together on one MCP session, so that a server's question
(elicitation) always reaches the call that caused it.

The ``mcp`` SDK hands the client's elicitation callback the server's request and its own id,
not the call it belongs to: on stdio and SSE nothing on the wire relates the two, and over
streamable HTTP the client transport knows which call's response stream the request came on but
does not pass that on. So the link is made by admission: a call that can ask someone (its run
has human input) runs alone on its session, and an elicitation then belongs to it; calls with
nobody to ask (their elicitations are declined, whichever call caused them) run alongside each
other. Waiting is first come, first served.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

__all__ = ["CallSlots"]


class CallSlots:
    """Admission to one session: alone (``exclusive``) or alongside other shared calls."""

    def __init__(self) -> None:
        self._shared = 0
        self._exclusive = False
        self._waiting: deque[tuple[bool, asyncio.Future[None]]] = deque()

    def _fits(self, exclusive: bool) -> bool:
        if exclusive:
            return not self._exclusive and self._shared == 0
        return not self._exclusive

    def _take(self, exclusive: bool) -> None:
        if exclusive:
            self._exclusive = True
        else:
            self._shared += 1

    def _release(self, exclusive: bool) -> None:
        if exclusive:
            self._exclusive = False
        else:
            self._shared -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting:
            exclusive, admitted = self._waiting[0]
            if admitted.done():  # given up while waiting
                self._waiting.popleft()
                continue
            if not self._fits(exclusive):
                return
            self._waiting.popleft()
            self._take(exclusive)
            admitted.set_result(None)

    @contextlib.asynccontextmanager
    async def hold(self, exclusive: bool) -> AsyncIterator[None]:
        """Wait for a slot (behind those already waiting), hold it for the ``with`` block."""
        if not self._waiting and self._fits(exclusive):
            self._take(exclusive)
        else:
            admitted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append((exclusive, admitted))
            try:
                await admitted
            except asyncio.CancelledError:
                if admitted.done() and not admitted.cancelled():
                    self._release(exclusive)  # admitted just as it was cancelled
                else:
                    admitted.cancel()
                    self._admit()
                raise
        try:
            yield
        finally:
            self._release(exclusive)
