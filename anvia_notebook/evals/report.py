"""The report of an evaluation: one :class:`CaseResult` per case, pass rate, mean scores.

While the evaluation runs the report fills in case by case (``report.status`` is
``"running"``); displayed in a notebook it is a live widget (progress, pass rate, one row per
case, Stop). ``report.cases`` holds the finished cases, in case order.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .. import request as _request
from .._util import running_loop
from ._table import (
    HTML_CASES,
    cell,
    esc,
    format_score,
    more_cases,
    needs_pandas,
    nullable_frame,
)
from .cases import Case
from .metrics import Metric, Score

if TYPE_CHECKING:
    from ..run import AgentRun

__all__ = ["BASE_COLUMNS", "CaseResult", "EvalReport", "STOP_REASON"]

logger = logging.getLogger("anvia_notebook")

#: The columns of ``to_pandas()`` before the metrics' (section 12 of the API).
BASE_COLUMNS = (
    "name",
    "input",
    "expected",
    "output",
    "passed",
    "status",
    "error",
    "duration_ms",
    "tokens",
    "run_id",
)
STOP_REASON = "The evaluation was stopped."

ReportStatus = Literal["pending", "running", "done", "stopped"]
Listener = Callable[[str, int], None]


@dataclass
class CaseResult:
    """One finished case: what was asked and answered, whether it passed, and each score.

    ``status`` is ``"success"`` (the run finished; its metrics decide ``passed``) or ``"error"``
    (the run failed: ``error`` says why, ``passed`` is False). ``scores`` maps each metric's
    name to its value (None when the metric failed: ``details[name].error`` says why, and so
    does ``error``, each such metric by name, so the case is not failed without a word);
    ``details`` keeps each :class:`Score` with its reason (an LLM judge's reasoning).
    """

    name: str
    input: str
    expected: Any
    output: str | None
    passed: bool
    status: Literal["success", "error"]
    error: str | None
    duration_ms: int
    tokens: int
    run_id: str | None
    scores: dict[str, bool | float | None] = field(default_factory=dict)
    details: dict[str, Score] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: An agent with an ``output_type``: the validated value (``output`` is its JSON, which the
    #: metrics score); None otherwise.
    data: Any = None

    def row(self) -> dict[str, Any]:
        """The case as a table row (``to_pandas`` columns)."""
        return {
            "name": self.name,
            "input": self.input,
            "expected": self.expected,
            "output": self.output,
            "passed": self.passed,
            "status": self.status,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "tokens": self.tokens,
            "run_id": self.run_id,
            **self.scores,
        }


#: Decimal places a mean score keeps: what floating point adds past them is noise
#: (``0.1, 0.2, 0.3`` average 0.2, not ``0.20000000000000004``).
MEAN_DECIMALS = 12


def _mean(values: list[float]) -> float | None:
    return round(math.fsum(values) / len(values), MEAN_DECIMALS) if values else None


class EvalReport:
    """The result of :func:`evals.evaluate`, filled in as cases finish."""

    def __init__(
        self,
        agent_id: str,
        cases: list[Case],
        metrics: list[Metric],
        *,
        eval_id: str,
        concurrency: int = 1,
    ) -> None:
        self.agent_id = agent_id
        self.eval_id = eval_id
        self.concurrency = concurrency
        self.case_list = cases
        self.metrics = metrics
        #: ``"pending"``, ``"running"``, ``"done"`` or ``"stopped"`` (Stop kept the finished cases).
        self.status: ReportStatus = "pending"
        self._results: list[CaseResult | None] = [None] * len(cases)
        #: The run of each case once it started (for its live transcript).
        self.runs: dict[int, AgentRun] = {}
        self._listeners: list[Listener] = []
        self._started: float | None = None
        self._ended: float | None = None
        self._stopping = False
        self._workers: list[asyncio.Task[None]] = []
        #: The loop the cases run on, while they run.
        self.loop: asyncio.AbstractEventLoop | None = None
        #: The live widget showing this report, when the notebook layer displayed it.
        self.view: Any = None
        #: (agent, approvals, max_turns): what each case runs with (set by ``prepare``).
        self.run_options: tuple[Any, Any, Any] | None = None

    # -- results -------------------------------------------------------------------------------

    @property
    def cases(self) -> list[CaseResult]:
        """The finished cases, in case order."""
        return [r for r in self._results if r is not None]

    def result(self, index: int) -> CaseResult | None:
        """The result of case ``index`` (0-based), None while it has not finished."""
        return self._results[index]

    @property
    def total(self) -> int:
        """How many cases were given."""
        return len(self.case_list)

    @property
    def finished(self) -> int:
        return sum(1 for r in self._results if r is not None)

    @property
    def not_run(self) -> list[str]:
        """The names of the cases that did not finish (after Stop)."""
        return [
            c.name or "" for c, r in zip(self.case_list, self._results, strict=True) if r is None
        ]

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @property
    def pass_rate(self) -> float:
        """The share of finished cases that passed (0.0 before any case finished)."""
        done = self.cases
        return sum(1 for c in done if c.passed) / len(done) if done else 0.0

    @property
    def mean_scores(self) -> dict[str, float | None]:
        """The mean score of each metric over the cases it scored (True counts 1, False 0;
        errors and failed runs are left out); None when it scored none."""
        means: dict[str, float | None] = {}
        for name in self.metric_names:
            values = [
                float(v)
                for c in self.cases
                if (v := c.scores.get(name)) is not None
                and not (isinstance(v, float) and math.isnan(v))
            ]
            means[name] = _mean(values)
        return means

    @property
    def errors(self) -> int:
        """How many finished cases' runs failed."""
        return sum(1 for c in self.cases if c.status == "error")

    @property
    def elapsed(self) -> float:
        """Seconds since the evaluation started (until it ended)."""
        if self._started is None:
            return 0.0
        return (self._ended or time.monotonic()) - self._started

    @property
    def eta(self) -> float | None:
        """Estimated seconds left, from the pace so far (None before the first case ends)."""
        done = self.finished
        if self.status != "running" or done == 0:
            return None
        return self.elapsed / done * (self.total - done)

    # -- running (what the evals runner calls) -------------------------------------------------

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was asked: no further case starts."""
        return self._stopping

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        """The cases start running on ``loop`` now."""
        self.loop = loop
        if self.view is not None and self.view.loop is None:  # shown before its loop existed
            self.view.set_loop(loop)
        self.status = "running"
        self._started = time.monotonic()

    def run_workers(self, workers: list[asyncio.Task[None]]) -> None:
        """The tasks that run the cases (cancelled by :meth:`stop`)."""
        self._workers = workers

    def case_started(self, index: int) -> None:
        self._notify("start", index)

    def case_ended(self, index: int, result: CaseResult | None = None) -> None:
        """Case ``index`` finished with ``result``, or (None) was cancelled before it did."""
        if result is not None:
            self._results[index] = result
        self._notify("case", index)

    def end(self, stopped: bool) -> None:
        """Every case has ended (``stopped``: Stop or a cancellation ended the evaluation)."""
        self._stopping = self._stopping or stopped
        self.status = "stopped" if self._stopping else "done"
        self._ended = time.monotonic()
        self._notify("end", -1)

    # -- control -------------------------------------------------------------------------------

    def stop(self) -> bool:
        """Cancel the cases not finished yet and keep the finished ones (thread-safe; asked
        before the evaluation began, no case starts). Returns False when it has ended, or
        was asked to stop already."""
        if self.status == "pending" and not self._stopping:
            self._stopping = True  # (Kernel > Interrupt as the cell began: nothing runs)
            return True
        if self.status != "running" or self._stopping:
            return False
        self._stopping = True
        loop = self.loop
        if loop is None:
            return False
        running = running_loop()
        for task in list(self._workers):
            if running is loop:
                task.cancel()
            else:
                loop.call_soon_threadsafe(task.cancel)
        return True

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """``listener(kind, index)`` on the evaluation's loop: ``"start"`` (a case's run
        started), ``"case"`` (a case finished or was cancelled), ``"end"`` (index -1)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, kind: str, index: int) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, index)
            except Exception:
                logger.exception("An evaluation listener failed")

    # -- output --------------------------------------------------------------------------------

    def to_pandas(self) -> Any:
        """The finished cases as a DataFrame: name, input, expected, output, passed, status,
        error, duration_ms, tokens, run_id, then one column per metric."""
        pandas = needs_pandas()
        columns = [*BASE_COLUMNS, *self.metric_names]
        rows = [c.row() for c in self.cases]
        return nullable_frame(
            pandas,
            rows,
            columns,
            ints=("duration_ms", "tokens"),
            texts=("name", "input", "output", "status", "error", "run_id"),
            scores=tuple(self.metric_names),
            as_given=("expected",),
        )

    def summary(self) -> str:
        """One line: cases, pass rate (``—`` until a case has finished) and the mean of each
        metric."""
        means = ", ".join(
            f"{name} {format_score(value)}" for name, value in self.mean_scores.items()
        )
        state = "" if self.status == "done" else f" ({self.status})"
        rate = f"{self.pass_rate:.0%}" if self.finished else "—"  # (as the widget: not known yet)
        return (
            f"{self.finished}/{self.total} cases{state}, pass rate {rate}"
            + (f", errors {self.errors}" if self.errors else "")
            + (f"; mean {means}" if means else "")
        )

    def __repr__(self) -> str:
        return f"EvalReport({self.agent_id!r}: {self.summary()})"

    def _repr_html_(self) -> str:
        """An escaped HTML table of the cases (what a saved notebook shows without a kernel)."""
        head = "".join(
            f"<th>{esc(c)}</th>"
            for c in ("case", "status", "passed", "output", *self.metric_names, "duration_ms")
        )
        rows = []
        shown = zip(self.case_list[:HTML_CASES], self._results[:HTML_CASES], strict=True)
        for case, result in shown:
            output: str | None = ""
            if result is None:
                status, passed, duration = "not run", "", ""
                scores = [""] * len(self.metrics)
            else:
                status = result.status
                passed = "✓" if result.passed else "✗"
                output = result.error if result.status == "error" else result.output
                scores = [format_score(result.scores.get(m)) for m in self.metric_names]
                duration = str(result.duration_ms)
            cells = [case.name, status, passed, output, *scores, duration]
            rows.append("<tr>" + "".join(cell(v) for v in cells) + "</tr>")
        return (
            f'<div class="anvia-eval-report"><p><strong>Evaluation of {esc(self.agent_id)}'
            f"</strong>: {esc(self.summary(), 400)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"{more_cases(len(self.case_list), 'report')}</div>"
        )

    def _ipython_display_(self) -> None:
        runner = _request.notebook_runner()
        if runner is None:  # IPython outside a kernel (a terminal): the one-line summary
            print(repr(self))
            return
        runner.show_evals_report(self)
