"""A started run: its task, its state, its events, and how to cancel or await it."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from .errors import PromptCancelledError
from .events import RunEvent
from .run_state import PromptResponse, RunState, RunStatus

if TYPE_CHECKING:
    from .request import PromptRequest

__all__ = ["AgentRun", "DEFAULT_CANCEL_REASON"]

logger = logging.getLogger("anvia_notebook")

DEFAULT_CANCEL_REASON = "Stopped by the user."

Subscriber = Callable[[Any], None]


class AgentRun:
    """One run of a :class:`~anvia_notebook.request.PromptRequest`.

    Events are recorded in :attr:`events` and pushed to subscribers synchronously, on the loop
    that runs the run. :meth:`cancel` may be called from any thread.
    """

    def __init__(self, request: PromptRequest, state: RunState) -> None:
        self.request = request
        self.state = state
        self.events: list[RunEvent] = []
        self._subscribers: list[Subscriber] = []
        self._task: asyncio.Task[PromptResponse] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done_callbacks: list[Callable[[AgentRun], None]] = []
        self._lock = threading.Lock()

    # -- identity and status -------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def status(self) -> RunStatus:
        """``running``, ``waiting`` (for a person), ``success``, ``error`` or ``cancelled``."""
        status = self.state.status
        if status == "running" and (
            self.state.pending_approvals() or self.state.pending_questions()
        ):
            return "waiting"
        return status

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    # -- events --------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber, *, replay: bool = True) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (first the past ones when ``replay``).

        Returns a function that unsubscribes. A subscriber that raises is logged and kept.
        """
        with self._lock:
            past = list(self.events) if replay else []
            self._subscribers.append(callback)
        for event in past:
            self._deliver(callback, event)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def emit(self, event: Any) -> None:
        with self._lock:
            self.events.append(event)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            self._deliver(callback, event)

    @staticmethod
    def _deliver(callback: Subscriber, event: Any) -> None:
        try:
            callback(event)
        except Exception:
            logger.exception("An event subscriber failed on %s", getattr(event, "type", event))

    async def stream(self) -> AsyncIterator[RunEvent]:
        """All events of this run, past ones first, until it ends."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        end = object()

        def push(event: Any) -> None:
            if self._loop is loop or self._loop is None:
                queue.put_nowait(event)
            else:
                loop.call_soon_threadsafe(queue.put_nowait, event)

        unsubscribe = self.subscribe(push)
        self.add_done_callback(lambda _: push(end))
        try:
            while True:
                item = await queue.get()
                if item is end:
                    return
                yield item
        finally:
            unsubscribe()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> AgentRun:
        """Start the run as a task on ``loop`` (default: the running loop)."""
        from ._loop import run_loop

        if self._task is not None:
            raise RuntimeError("This run has already started.")
        self._loop = loop or asyncio.get_running_loop()
        self._task = self._loop.create_task(run_loop(self), name=f"anvia-run-{self.run_id}")
        self._task.add_done_callback(self._finished)
        return self

    def _finished(self, task: asyncio.Task[PromptResponse]) -> None:
        if not task.cancelled():
            task.exception()  # mark retrieved: the error is re-raised by wait()/result()
        for callback in list(self._done_callbacks):
            try:
                callback(self)
            except Exception:
                logger.exception("A run done-callback failed")

    def add_done_callback(self, callback: Callable[[AgentRun], None]) -> None:
        """Call ``callback(run)`` once the run has ended (at once if it already has)."""
        if self.done:
            callback(self)
        else:
            self._done_callbacks.append(callback)

    def cancel(self, reason: str | None = None) -> bool:
        """Stop the run (thread-safe). Returns False when it had already ended."""
        if self._task is None or self._task.done():
            return False
        if self.state.cancel_reason is None:
            self.state.cancel_reason = reason or DEFAULT_CANCEL_REASON
        loop = self._loop
        assert loop is not None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._task.cancel()
        else:
            loop.call_soon_threadsafe(self._task.cancel)
        return True

    async def wait(self) -> PromptResponse:
        """Wait for the end; returns the response or raises the run's error."""
        if self._task is None:
            raise RuntimeError("This run has not started.")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            # Shield: cancelling the waiter must not cancel the run itself.
            return await asyncio.shield(self._task)
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(_await(self._task), self._loop)
        return await asyncio.wrap_future(future)

    def result(self) -> PromptResponse:
        """The response of a finished run; raises its error (``InvalidStateError`` if running)."""
        if self._task is None or not self._task.done():
            raise asyncio.InvalidStateError("The run has not finished yet.")
        if self._task.cancelled():
            raise PromptCancelledError(self.state.cancel_reason or DEFAULT_CANCEL_REASON)
        return self._task.result()

    def __await__(self) -> Any:
        return self.wait().__await__()


async def _await(task: asyncio.Task[PromptResponse]) -> PromptResponse:
    return await asyncio.shield(task)
