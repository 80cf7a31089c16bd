"""``asyncio.run()`` for what a script runs to the end (``send_sync()``, ``extract_sync()``,
``evaluate_sync()``), with Ctrl-C told the same way on every Python the package supports."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_in_script"]

T = TypeVar("T")


def run_in_script(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``. Python 3.11 and later make a Ctrl-C cancel ``main``'s task (which
    then stops its run and records why) and raise ``KeyboardInterrupt`` once it has ended;
    Python 3.10 raised the ``KeyboardInterrupt`` wherever the loop happened to be: outside
    ``main``, or inside a step of the run, which then ended as failed by it. Done here as 3.11
    does it, on 3.10's main thread while Python's own Ctrl-C handler is in place."""
    if (
        sys.version_info >= (3, 11)
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        return asyncio.run(main)
    state: dict[str, Any] = {"task": None, "loop": None, "interrupted": False}

    async def tracked() -> T:
        state["task"], state["loop"] = asyncio.current_task(), asyncio.get_running_loop()
        return await main

    def on_ctrl_c(signum: int, frame: Any) -> None:
        task = state["task"]
        if state["interrupted"] or task is None or task.done():
            raise KeyboardInterrupt  # (a second Ctrl-C, or none of main is running)
        state["interrupted"] = True
        task.cancel()
        state["loop"].call_soon_threadsafe(lambda: None)  # (wakes the loop's wait)

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        return asyncio.run(tracked())
    except asyncio.CancelledError:
        if state["interrupted"]:
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
