"""An event loop on a virtual clock, for tests about intervals (batches, update messages).

``loop.time()`` stands still while there is work to do and, when the loop has nothing to do
but wait for its next timer, jumps to that timer instead of sleeping. ``asyncio.sleep``,
``call_later`` and anything that reads ``loop.time()`` (pass it as a ``clock=``) see the same
clock: a test about "one batch every 50 ms" asserts exact figures, takes no wall-clock time
waiting, and gives the same result on a loaded machine as on an idle one.

Only for code that does its work on the loop: a worker thread's work takes no virtual time,
so the clock may jump past a timer while a thread still works (a thread's wake-up is not
waited for while a timer is pending). The tests that use it run no threads.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: Where the virtual clock starts (any value: only differences matter).
START = 1_000.0


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose clock moves only when the loop would wait for a timer."""

    def __init__(self) -> None:
        super().__init__()
        self._now = START
        selector = self._selector  # type: ignore[attr-defined]  # the loop's selector
        real_select = selector.select

        def select(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            ready: list[tuple[selectors.SelectorKey, int]] = real_select(0)
            if ready or timeout == 0:
                return ready
            if timeout is None:  # no timer: only I/O or another thread can wake the loop
                return real_select(None)  # type: ignore[no-any-return]
            self._now += timeout  # idle until the next timer: it is due now
            return []

        selector.select = select

    def time(self) -> float:
        return self._now


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main()`` to completion on a new :class:`VirtualTimeLoop`, then close it."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(_main(main))
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


async def _main(main: Callable[[], Awaitable[T]]) -> T:
    return await main()
