"""``RunHandle``: what ``request.show()`` returns: control of a live run and its transcript."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from . import _display
from .session import TranscriptSession

if TYPE_CHECKING:
    from ..events import RunEvent
    from ..run import AgentRun
    from ..run_state import PromptResponse
    from .widget import AnviaWidget

__all__ = ["RunHandle"]


class RunHandle:
    """A shown run: ``cancel()``, ``done``, ``status``, ``result()``, ``await handle``, ``events``,
    ``transcript``.

    Displaying the handle (in another cell) shows a second live view of the same run; when the
    run ends, every view's cell output also gets a static HTML copy of the final transcript.
    """

    def __init__(self, run: AgentRun, session: TranscriptSession) -> None:
        self._run = run
        self._session = session

    # -- the run -------------------------------------------------------------------------------

    @property
    def run(self) -> AgentRun:
        return self._run

    @property
    def run_id(self) -> str:
        return self._run.run_id

    def cancel(self, reason: str | None = None) -> bool:
        """Stop the run (from any thread). Returns False when it had already ended."""
        return self._run.cancel(reason)

    @property
    def done(self) -> bool:
        return self._run.done

    @property
    def status(self) -> str:
        """``running``, ``waiting`` (for a person), ``success``, ``error`` or ``cancelled``."""
        status = self._run.status
        return "running" if status == "pending" else status

    def result(self) -> PromptResponse:
        """The response of the finished run (raises its error, or if it is still running)."""
        return self._run.result()

    async def wait(self) -> PromptResponse:
        """Wait for the end; returns the response or raises the run's error."""
        return await self._run.wait()

    def __await__(self) -> Generator[Any, None, PromptResponse]:
        return self._run.wait().__await__()

    @property
    def events(self) -> list[RunEvent]:
        """The run's events so far."""
        return list(self._run.events)

    # -- the transcript ------------------------------------------------------------------------

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The transcript entries now, as plain data (the wire ``Entry`` dicts)."""
        return self._session.transcript.entries

    @property
    def transcript_status(self) -> dict[str, Any]:
        """The transcript's status line now."""
        return dict(self._session.transcript.status)

    @property
    def widget(self) -> AnviaWidget:
        return self._session.widget

    @property
    def session(self) -> TranscriptSession:
        return self._session

    # -- display -------------------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        # ``request.show()`` as a cell's last line returns this handle: its view is already in
        # this cell, so only another cell gets a second view.
        here = _display.current_message_id()
        if here is not None and here in self._session.displayed_in:
            return
        self._session.display()

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._session.bundle()

    def __repr__(self) -> str:
        return f"RunHandle(run_id={self.run_id!r}, status={self.status!r})"
