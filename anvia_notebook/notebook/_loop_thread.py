"""A daemon thread running its own event loop: where ``send_sync()`` runs a run and
``evaluate_sync()`` an evaluation while the cell waits."""

from __future__ import annotations

import asyncio
import contextlib
import threading

__all__ = ["LoopThread"]


class LoopThread:
    """A daemon thread running its own event loop until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
            # Run what was handed over just before the stop (late widget requests).
            for _ in range(3):
                self.loop.run_until_complete(asyncio.sleep(0))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):  # already closed
            self.loop.call_soon_threadsafe(self.loop.stop)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
