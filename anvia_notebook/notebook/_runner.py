"""Running a request in a notebook cell: ``show`` (background) and ``send_sync`` (blocking).

This module is the runtime's one way into the notebook layer: ``request.notebook_runner()``
returns it inside a kernel (and None elsewhere). Evals reach their report's widget through it
too (:func:`show_evals_report`, :func:`evaluate_blocking`), so no runtime module imports the
notebook layer itself.

- :func:`show` displays the transcript widget and starts the run as a background task on the
  kernel's own event loop; the cell returns at once, the widget stays live.
- :func:`send_sync` displays the same widget, runs the run on a worker thread with its own event
  loop, and blocks the cell with ``_blocking.wait_for_future`` (which keeps dispatching the
  widget's messages); Kernel > Interrupt cancels the run and raises ``PromptCancelledError``.

Both attach a :class:`WidgetHumanInput` unless the request already has a human input (a
request with only an approval handler still gets one, for its questions; its approvals stay
with the handler).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import PromptCancelledError
from ..tools import EXPLAIN_TOOL_ERROR
from . import _display
from ._background_input import explain_tool_error
from ._blocking import await_serving_widgets, wait_for_future
from ._handle import RunHandle
from ._human_input import WidgetHumanInput
from ._loop_thread import LoopThread
from ._session import TranscriptSession

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from ..evals.report import EvalReport
    from ..request import PromptRequest
    from ..run import AgentRun
    from ..run_state import PromptResponse

__all__ = [
    "CELL_RERUN_REASON",
    "INTERRUPT_REASON",
    "STATIC_COPY_DELAY",
    "await_serving_widgets",
    "evaluate_blocking",
    "send_sync",
    "show",
    "show_evals_report",
]

logger = logging.getLogger("anvia_notebook")

INTERRUPT_REASON = "Interrupted (Kernel > Interrupt)."
CELL_RERUN_REASON = (
    "The cell that showed this run was run again; this run was stopped so that it does not "
    "wait for an approval or an answer nobody can see."
)

#: Seconds between the end of a background run and the update of its cell's output to the
#: static copy (a page draws the last text first).
STATIC_COPY_DELAY = 0.2

T = TypeVar("T")


def _attach_human_input(
    request: PromptRequest, timeout: float | None = None
) -> WidgetHumanInput | None:
    """The widget's human input for this request (attached now, with ``timeout``, if none; the
    request's or agent's own, as this session's copy)."""
    current = request.active_human_input
    if isinstance(current, WidgetHumanInput):
        session_input = current.for_session()
        request.human_input(session_input)
        return session_input
    if current is not None:
        return None
    human = WidgetHumanInput(timeout=timeout)
    request.human_input(human)
    return human


def _session(
    request: PromptRequest,
    loop: asyncio.AbstractEventLoop | None,
    human: WidgetHumanInput | None,
) -> TranscriptSession:
    agent = request.agent
    return TranscriptSession(
        agent_id=agent.id, loop=loop, human_input=human, title=agent.display_name
    )


class _RunsByCell:
    """The unfinished runs ``show()`` started from each cell (by the front end's cell id).

    Running a cell again clears its output, live transcript included: the runs it showed before
    are stopped then (their transcript says why), rather than left waiting unseen.
    """

    def __init__(self) -> None:
        self._runs: dict[str, list[tuple[str | None, AgentRun]]] = {}
        self._lock = threading.Lock()

    def add(self, cell_id: str | None, message_id: str | None, run: AgentRun) -> None:
        if cell_id is None:
            return
        with self._lock:
            runs = [(m, r) for m, r in self._runs.get(cell_id, []) if not r.done]
            runs.append((message_id, run))
            self._runs[cell_id] = runs

    def cell_started(self, cell_id: str) -> None:
        """A cell starts executing: stop what an earlier execution of it showed."""
        now = _display.current_message_id()
        with self._lock:
            runs = self._runs.pop(cell_id, [])
            keep = [(m, r) for m, r in runs if m == now and now is not None and not r.done]
            if keep:
                self._runs[cell_id] = keep
        for message_id, run in runs:
            if (message_id != now or now is None) and not run.done:
                try:
                    run.cancel(CELL_RERUN_REASON)
                except RuntimeError:  # its event loop is gone: nothing is waiting any more
                    logger.debug("could not cancel run %s", run.run_id, exc_info=True)


_runs_by_cell = _RunsByCell()
_display.add_cell_start_listener(_runs_by_cell.cell_started)


def stop_when_this_cell_reruns(runs: Any) -> None:
    """Stop what ``runs`` runs (an object with ``done`` and ``cancel(reason)``, such as a
    Studio's current run) when the cell executing now is run again and its output cleared."""
    _runs_by_cell.add(_display.current_cell_id(), _display.current_message_id(), runs)


def show(request: PromptRequest, *, timeout: float | None = None) -> RunHandle:
    """Display the live transcript and start the run on the kernel's loop; returns at once.

    ``timeout`` (seconds) limits how long the widget's approvals and questions wait.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "show() needs a running event loop (a Jupyter kernel cell); use send_sync() or "
            "`await request.send()` elsewhere."
        ) from None
    human = _attach_human_input(request, timeout)
    run = request.create_run()
    session = _session(request, loop, human)
    handle = RunHandle(run, session)
    session.attach(run)

    def finished(_run: AgentRun) -> None:
        session.set_loop(None)  # the state is frozen: later requests are answered inline
        # The page first draws the run's last batch: the static copy's update makes it draw the
        # cell's output again, which would hold that text back. Awaiting the handle sends it
        # at once (a cell that awaits the run ends with the copy in place).
        session.refresh_displays_later(loop, STATIC_COPY_DELAY)

    session.add_done_listener(finished)
    session.display()
    # The run's task copies this context: its tool calls say what to do when input() fails.
    explaining = EXPLAIN_TOOL_ERROR.set(explain_tool_error)
    try:
        run.start(loop)
    finally:
        EXPLAIN_TOOL_ERROR.reset(explaining)
    _runs_by_cell.add(_display.current_cell_id(), _display.current_message_id(), run)
    return handle


# -- send_sync -------------------------------------------------------------------------------


def _wait(future: concurrent.futures.Future[T]) -> T:
    """Block the cell until ``future`` is done, still dispatching the widget's messages."""
    # Frames: wait_for_future, _wait, send_sync, PromptRequest.send_sync, the cell.
    return wait_for_future(future, warn_stacklevel=5)


async def _drive(run: AgentRun, session: TranscriptSession) -> PromptResponse:
    session.attach(run)
    run.start(asyncio.get_running_loop())
    response = await run.wait()
    await asyncio.sleep(0)  # let the run's done callbacks (last batch) go first
    return response


def _cancel(run: AgentRun, future: concurrent.futures.Future[Any]) -> bool:
    """Cancel ``run`` (waiting a moment if its task is only about to start)."""
    deadline = time.monotonic() + 2.0
    while not future.done():
        if run.cancel(INTERRUPT_REASON):
            return True
        if time.monotonic() > deadline:
            break
        time.sleep(0.005)
    return False


def send_sync(request: PromptRequest, *, timeout: float | None = None) -> PromptResponse:
    """Display the widget, run on a worker thread and block until the end; returns the response.

    Raises the run's error; ``PromptCancelledError`` after Stop or Kernel > Interrupt.
    ``timeout`` (seconds) limits how long the widget's approvals and questions wait.
    """
    human = _attach_human_input(request, timeout)
    run = request.create_run()  # raises before any thread starts if the request was used
    worker = LoopThread(name="anvia-run")
    session = _session(request, worker.loop, human)
    session.add_done_listener(lambda _run: session.set_loop(None))
    session.display()
    future = asyncio.run_coroutine_threadsafe(_drive(run, session), worker.loop)
    future.add_done_callback(lambda _f: worker.stop())
    try:
        try:
            return _wait(future)
        except KeyboardInterrupt:
            if not _cancel(run, future) and future.done() and future.exception() is None:
                return future.result()  # it had just ended
            try:
                _wait(future)
            except KeyboardInterrupt:
                pass  # a second interrupt: stop waiting for the cancellation to be recorded
            except Exception:
                pass  # the expected PromptCancelledError, or whatever ended the run first
            reason = run.state.cancel_reason or INTERRUPT_REASON
            raise PromptCancelledError(reason, list(run.state.messages)) from None
    finally:
        if future.done():
            session.refresh_displays()


# -- evals -----------------------------------------------------------------------------------
# The evals widget (``_evals_view``) is imported only when a report is shown: showing a run
# never loads the evals package.


def show_evals_report(report: EvalReport) -> None:
    """Display ``report``'s live widget in the current cell (what ``evals.evaluate`` and a
    displayed ``EvalReport`` call inside a kernel)."""
    from ._evals_view import show_report

    show_report(report)


def evaluate_blocking(
    report: EvalReport,
    run: Callable[[EvalReport], Coroutine[Any, Any, EvalReport]],
    *,
    show: bool = True,
) -> EvalReport:
    """Run the prepared ``report`` with ``run`` on a worker thread and block the cell until it
    ends (what ``evals.evaluate_sync`` calls inside a kernel); ``show`` displays its widget
    first."""
    from . import _evals_view

    return _evals_view.evaluate_blocking(report, run, show=show)
