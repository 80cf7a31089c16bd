"""The live widget of an evaluation report (``mode="evals"``): progress, rows, Stop, transcripts.

One :class:`EvalsSession` per report, built on :class:`TranscriptSession` (one widget, its
transcript for the case a person opened, the page's requests). The report's table goes to the
page as ``evals`` (whole state, after ``sync``) and numbered ``evals_update`` messages: the new
summary and the rows that changed, at most one message per :data:`UPDATE_INTERVAL` however fast
cases finish. ``evals_open_case`` shows a case's run in the widget's transcript (live while the
case runs); ``stop`` stops the evaluation (finished cases are kept).

Everything runs on the loop that runs the evaluation; handlers from other threads are handed
over by the session (see ``_session.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import math
import os
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from .._util import running_loop
from ..errors import EvaluationStoppedError
from ..evals._table import preview
from . import _display
from ._blocking import wait_for_future
from ._loop_thread import LoopThread
from ._session import LIVE_SLOT_CLASS, TranscriptSession

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from ..evals.report import EvalReport
    from ..run import AgentRun
    from ._protocol import EvalsOpenCaseMsg

__all__ = ["PREVIEW", "UPDATE_INTERVAL", "EvalsSession", "evaluate_blocking", "show_report"]

#: Seconds between two ``evals_update`` messages at most one of which is sent.
UPDATE_INTERVAL = 0.05
#: Characters of an output (or input, or error) a row carries; the report keeps everything.
PREVIEW = 300


def _preview(value: Any, limit: int = PREVIEW) -> str:
    return preview(value, limit)


def _markdown_preview(value: str | None, limit: int = PREVIEW) -> str:
    """An output as the page renders it (Markdown): its line breaks kept, so that lists and
    paragraphs stay what they are; cut at ``limit`` characters."""
    if value is None:
        return ""
    text = value.replace("\r\n", "\n").strip()
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _number(value: Any) -> Any:
    """A score as the wire carries it: bool, finite number, or None."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return None if math.isnan(value) or math.isinf(value) else value
    return None


class EvalsSession(TranscriptSession):
    """The kernel side of one report's widget."""

    def __init__(
        self,
        report: EvalReport,
        *,
        loop: asyncio.AbstractEventLoop | None,
        interval: float = UPDATE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            agent_id=report.agent_id,
            loop=loop,
            mode="evals",
            title=f"Evaluation of {report.agent_id}",
        )
        self.report = report
        self.update_interval = interval
        self._clock = clock
        self.update_seq = 0
        self._dirty: set[int] = set()
        self._summary_dirty = False
        self._timer: asyncio.TimerHandle | None = None
        self._last_update = float("-inf")
        #: How many ``evals_update`` messages were sent (tests and benchmarks).
        self.updates_sent = 0
        self._running: set[int] = set()
        self._cancelled: set[int] = set()
        self.open_index: int | None = None
        self._open_unsubscribe: Callable[[], None] | None = None
        # Cases take nothing from a person: no message into a case's run, no decision (an
        # eval's protected calls are decided by its approvals= handler or rejected).
        for steering_or_deciding in (
            "steer",
            "approval_decision",
            "question_answers",
            "question_decline",
        ):
            del self.handlers[steering_or_deciding]
        self.handlers["sync"] = self._on_sync_evals
        self.handlers["stop"] = self._on_stop_evals
        self.handlers["evals_open_case"] = self._on_open_case
        #: False when the cell's thread refreshes the displays itself (``evaluate_blocking``).
        self.refresh_on_finish = True
        self._unsubscribe_report = report.subscribe(self._on_report)

    # -- state on the wire ---------------------------------------------------------------------

    def row(self, index: int) -> dict[str, Any]:
        case = self.report.case_list[index]
        result = self.report.result(index)
        if result is None:
            status = (
                "running"
                if index in self._running
                else "cancelled"
                if index in self._cancelled
                else "pending"
            )
            run = self.report.runs.get(index)
            return {
                "index": index,
                "name": case.name or "",
                "input": _preview(case.input),
                "status": status,
                "passed": None,
                "output": "",
                "error": None,
                "duration_ms": None,
                "tokens": None,
                "run_id": run.run_id if run is not None else None,
                "scores": [],
            }
        return {
            "index": index,
            "name": result.name,
            "input": _preview(result.input),
            "status": result.status,
            "passed": result.passed,
            "output": _markdown_preview(result.output),
            "error": _preview(result.error) if result.error else None,
            "duration_ms": max(0, result.duration_ms),
            "tokens": max(0, result.tokens),
            "run_id": result.run_id,
            "scores": [
                {
                    "metric": name,
                    "value": _number(score.value),
                    "passed": score.passed if score.error is None else None,
                    "error": _preview(score.error) if score.error else None,
                    "reason": _preview(score.reason) if score.reason else None,
                }
                for name, score in result.details.items()
            ],
        }

    def summary(self) -> dict[str, Any]:
        report = self.report
        eta = report.eta
        return {
            "title": self.title,
            "status": report.status,
            "total": report.total,
            "finished": report.finished,
            "errors": report.errors,
            "elapsed_ms": round(report.elapsed * 1000),
            "eta_ms": round(eta * 1000) if eta is not None else None,
            "pass_rate": report.pass_rate if report.finished else None,
            "metrics": [
                {"name": name, "mean": _number(mean)} for name, mean in report.mean_scores.items()
            ],
            "open": self.open_index,
        }

    def evals_message(self) -> dict[str, Any]:
        """The whole report, as ``evals`` (what a freshly drawn view starts from)."""
        self._cancel_timer()
        self._dirty.clear()
        self._summary_dirty = False
        return {
            "type": "evals",
            "seq": self.update_seq,
            "report": {
                "summary": self.summary(),
                "rows": [self.row(i) for i in range(self.report.total)],
            },
        }

    # -- batching ------------------------------------------------------------------------------

    def _mark(self, index: int | None = None) -> None:
        if index is not None:
            self._dirty.add(index)
        self._summary_dirty = True
        if self.loop is None:  # the evaluation is over and its loop gone: nothing to batch
            self.flush_updates()
        else:
            self._schedule()

    def _schedule(self) -> None:
        loop = self.loop
        if self._timer is not None or loop is None or loop.is_closed():
            return
        delay = max(0.0, self._last_update + self.update_interval - self._clock())
        # A hair more than the wait: the loop's timers may fire up to its clock resolution early.
        self._timer = loop.call_later(
            delay + 0.001 if delay else 0.0, self._on_timer, context=contextvars.Context()
        )

    def _on_timer(self) -> None:
        self._timer = None
        if self._last_update + self.update_interval > self._clock():
            self._schedule()  # the loop's timers may fire a hair early: never under the interval
            return
        self.flush_updates()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush_updates(self) -> bool:
        """Send what changed as one ``evals_update`` now; False when nothing had."""
        self._cancel_timer()
        if not self._summary_dirty and not self._dirty:
            return False
        rows = [self.row(i) for i in sorted(self._dirty)]
        self._dirty.clear()
        self._summary_dirty = False
        self.update_seq += 1
        message = {
            "type": "evals_update",
            "seq": self.update_seq,
            "summary": self.summary(),
            "rows": rows,
        }
        self._last_update = self._clock()  # the interval counts from the send itself
        self.updates_sent += 1
        self._send(message)
        return True

    # -- the report's progress (on its loop) -----------------------------------------------------

    def _on_report(self, kind: str, index: int) -> None:
        if kind == "start":
            self._running.add(index)
            self._mark(index)
        elif kind == "case":
            self._running.discard(index)
            if self.report.result(index) is None:
                self._cancelled.add(index)
            self._mark(index)
        elif kind == "end":
            for pending in range(self.report.total):
                if self.report.result(pending) is None and pending not in self._cancelled:
                    self._cancelled.add(pending)
                    self._dirty.add(pending)
            self._mark()

    async def finish(self) -> None:
        """The evaluation is over (called on its loop): the last update goes out when the
        interval allows, then the cell's static copy is refreshed (what a saved notebook shows)
        unless :meth:`evaluate_blocking` does that on the cell's thread."""
        while self._dirty or self._summary_dirty:
            wait = self._last_update + self.update_interval - self._clock()
            if wait <= 0:
                self.flush_updates()
                break
            await asyncio.sleep(wait)
        if self.refresh_on_finish:
            self.refresh_displays()

    # -- requests from the page ------------------------------------------------------------------

    def _on_sync_evals(self, _message: Any) -> str | None:
        self._send(self.evals_message())
        self.send_snapshot()
        return None

    def _on_stop_evals(self, _message: Any) -> str | None:
        if self.report.status in ("stopped", "done"):
            return None  # (Stop in a second view, after the first's): its summary says it ended
        if self.report.status != "running":
            return "The evaluation is not running."
        self.report.stop()
        self._mark()
        return None

    def _on_open_case(self, message: EvalsOpenCaseMsg) -> str | None:
        return self.open_case(message.index)

    def open_case(self, index: int) -> str | None:
        """Show case ``index``'s run in the widget's transcript; an error text when it cannot."""
        if not 0 <= index < self.report.total:
            return f"There is no case {index + 1}."
        run = self.report.runs.get(index)
        if run is None:
            return "This case has not started yet."
        self._show_run(run)
        self.open_index = index
        self.batcher.flush()
        self.send_snapshot()
        self._mark()
        return None

    def _show_run(self, run: AgentRun) -> None:
        if self._open_unsubscribe is not None:
            self._open_unsubscribe()
            self._open_unsubscribe = None
        transcript = self.transcript
        transcript.reset(run.request.agent.id)
        transcript.begin_run(run.run_id, run.request.agent.id, run.request.prompt_message.content)
        self.run = run
        unsubscribe = run.subscribe(self._on_event, replay=True)
        if run.done:
            unsubscribe()
        else:
            self._open_unsubscribe = unsubscribe

    # -- cell output ---------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """A report's view stays a widget: its rows open the cases' transcripts."""
        return True

    def static_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        slot = (
            f'<div class="{LIVE_SLOT_CLASS} anvia-key-{self.widget.anvia_key} '
            'tex2jax_ignore mathjax_ignore">'
        )
        return {
            "text/plain": repr(self.report),
            "text/html": f"{slot}{self.report._repr_html_()}</div>",
        }, {}


def _session_for(report: EvalReport, loop: asyncio.AbstractEventLoop | None) -> EvalsSession:
    view = report.view
    if view is None:
        view = EvalsSession(report, loop=loop)
        report.view = view
    return view  # type: ignore[no-any-return]


def show_report(report: EvalReport) -> EvalsSession:
    """Display ``report``'s widget in the current cell (live while it runs), unless it is the
    cell's result and the cell shows it already: ``report = await evals.evaluate(...)`` shows
    it live, and a ``report`` line after it would show a second copy (``display(report)``
    always shows it)."""
    loop = report.loop if report.status == "running" else None
    session = _session_for(report, loop or running_loop())
    here = _display.current_message_id()
    if here is None or here not in session.displayed_in or not _the_cell_s_result():
        session.display()
    return session


def _the_cell_s_result() -> bool:
    """Whether IPython's display hook (which shows a cell's last expression) is the caller."""
    frame: FrameType | None = inspect.currentframe()
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__call__" and code.co_filename.endswith(_DISPLAY_HOOK):
            return True
        frame = frame.f_back
    return False


#: The file of IPython's display hook (its ``__call__``), as the frames name it.
_DISPLAY_HOOK = os.path.join("IPython", "core", "displayhook.py")


def _wait(future: concurrent.futures.Future[EvalReport]) -> EvalReport:
    """Block the cell until ``future`` is done, still dispatching the widget's messages."""
    # Frames: wait_for_future, _wait, evaluate_blocking, _runner.evaluate_blocking,
    # evals.evaluate_sync, the cell.
    return wait_for_future(future, warn_stacklevel=6)


def evaluate_blocking(
    report: EvalReport,
    run: Callable[[EvalReport], Coroutine[Any, Any, EvalReport]],
    *,
    show: bool = True,
) -> EvalReport:
    """Run ``report`` (``run(report)``, the evals runner's, handed in so that this view imports
    nothing of the runtime that would import it back) on a worker thread's loop and block the
    cell until it ends, its widget (Stop, opening a case) working meanwhile; Kernel > Interrupt
    stops it and raises ``EvaluationStoppedError`` (with the report).

    Called by ``_runner.evaluate_blocking`` for ``evals.evaluate_sync`` in a cell."""
    worker = LoopThread(name="anvia-evals")
    session: EvalsSession | None = None
    if show:
        session = _session_for(report, worker.loop)
        session.refresh_on_finish = False
        session.display()
    future: concurrent.futures.Future[EvalReport] = asyncio.run_coroutine_threadsafe(
        run(report), worker.loop
    )
    future.add_done_callback(lambda _f: worker.stop())
    try:
        try:
            return _wait(future)
        except KeyboardInterrupt:
            # Kernel > Interrupt: like Stop, the finished cases are kept, and the cell fails (as
            # an interrupted cell does: Run All goes no further with a part of the report).
            report.stop()
            try:
                done = _wait(future)
            except KeyboardInterrupt:  # (a second one: the same, without waiting longer)
                raise EvaluationStoppedError(report) from None
            if done.status != "stopped":  # (it had not begun, or had just ended: nothing stopped)
                return done
            raise EvaluationStoppedError(report) from None
    finally:
        if session is not None and future.done():
            worker.join(5)
            session.set_loop(None)  # frozen: later requests are answered in their thread
            session.refresh_displays()
