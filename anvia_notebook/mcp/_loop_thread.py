"""The one event loop, on a thread of its own, that holds every MCP session of this process.

A session belongs to the loop it was opened on; runs use several loops (the kernel's, and a
fresh one for each ``send_sync``), so sessions live on this loop and every run reaches them
through :func:`run_on_mcp_loop`. One session per server per process follows, and the sessions
are closed when the interpreter exits (``atexit``), so no server process is left behind.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["mcp_loop", "run_on_mcp_loop", "on_exit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_exit_callbacks: list[Callable[[], Coroutine[Any, Any, None]]] = []
#: Seconds the interpreter waits at exit for the sessions to close (each server then gets the
#: SDK's own grace before it is terminated).
EXIT_WAIT = 10.0


def mcp_loop() -> asyncio.AbstractEventLoop:
    """The MCP loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                try:
                    loop.run_forever()
                finally:  # (stopped at exit: closed, or Python warns of an unclosed loop)
                    loop.close()

            _thread = threading.Thread(target=serve, name="anvia-mcp", daemon=True)
            _thread.start()
            ready.wait()
            _loop = loop
            atexit.register(_close_at_exit)
        return _loop


async def run_on_mcp_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine`` on the MCP loop from any loop; cancelling the caller cancels it."""
    loop = mcp_loop()
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover - always called from a coroutine
        current = None
    if current is loop:
        return await coroutine
    future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, loop)
    return await asyncio.wrap_future(future)


def on_exit(callback: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``callback()`` on the MCP loop when the interpreter exits."""
    _exit_callbacks.append(callback)


def _close_at_exit() -> None:
    loop = _loop
    if loop is None or loop.is_closed() or not loop.is_running():
        return

    async def close_everything() -> None:
        for callback in list(_exit_callbacks):
            with contextlib.suppress(Exception):  # best effort at exit
                await callback()

    future = asyncio.run_coroutine_threadsafe(close_everything(), loop)
    with contextlib.suppress(Exception):  # best effort at exit
        future.result(timeout=EXIT_WAIT)
    loop.call_soon_threadsafe(loop.stop)
    if _thread is not None:  # until the loop has stopped and is closed
        _thread.join(timeout=EXIT_WAIT)
