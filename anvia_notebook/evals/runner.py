"""Running an agent over the cases: concurrently, each case a normal stored run, nobody asked.

``evaluate`` checks everything first (cases, metrics, concurrency), then runs up to
``concurrency`` cases at a time. A case whose run fails is ``status="error"`` and the others go
on. Protected tool calls are decided by ``approvals=`` (a handler as for
``PromptRequest.approvals``; without it, by the agent's own approval handler if it has one) or
rejected with a message that no reviewer is present (a case that then reaches its turn limit says
how many were); a typed result a hook puts to a person for sign-off ends its case at once;
questions (``ask_question``) get no answer.
No case ever waits for a person: a human input attached to the agent is not used. An agent with
an ``output_type`` is scored on its validated value, as JSON (``CaseResult.data`` holds it).

The live report is shown through the notebook runner (``request.notebook_runner()``, the
runtime's one way into the notebook layer, which exists only inside a kernel): nothing here
imports the notebook layer or Jupyter.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from .. import request as _request
from .._script_loop import run_in_script
from .._tracing import ToolErrorsLogged, tool_errors_logged
from .._util import error_text, new_id, running_loop
from ..approvals import ApprovalDecision, ApprovalHandler, ToolApprovalRequest
from ..errors import EvaluationStoppedError, MaxTurnsError, PromptCancelledError
from ..human import HumanInputUnavailable
from ..output_types import FINAL_RESULT
from .cases import Case, normalize_cases
from .metrics import Metric, Score, normalize_metrics
from .report import BASE_COLUMNS, STOP_REASON, CaseResult, EvalReport

if TYPE_CHECKING:
    from ..agent import Agent
    from ..question_types import Answer
    from ..questions import QuestionRequest
    from ..run import AgentRun

__all__ = [
    "NO_REVIEWER_MESSAGE",
    "NoReviewer",
    "evaluate",
    "evaluate_sync",
    "prepare",
    "run_report",
]

logger = logging.getLogger("anvia_notebook")

NO_REVIEWER_MESSAGE = (
    "No reviewer is present in an evaluation, so this call was rejected without running "
    "(pass approvals= to evals.evaluate to decide protected calls)."
)


#: Why a case whose typed result a hook puts to a person for sign-off ends at once.
RESULT_NEEDS_REVIEWER = (
    "the agent's result needs a person's sign-off (a hook asks for approval of its "
    f"{FINAL_RESULT} call), and no reviewer is present in an evaluation. To evaluate this "
    "agent, pass approvals= to evals.evaluate (approvals=lambda request: True accepts every "
    "result) or give the agent an approval handler."
)


class NoReviewer:
    """The human input of every eval case: nobody is there, so nothing waits.

    Approvals (that no ``approvals=`` handler decides) are rejected with
    :data:`NO_REVIEWER_MESSAGE`; questions get the tool's "no human answer" fallback. The fix of
    a typed output that stayed invalid is not taken (nobody can write it): the case ends with
    ``OutputValidationError``, as a run with nobody attached does (a rejection would send the
    model round again, until the turn limit). Nor is the sign-off a hook asks for a typed output's
    valid ``final_result`` call: the case ends with ``ToolApprovalRequiredError`` saying so (a
    rejection would refuse every result the model can give, until the turn limit).
    """

    def __init__(self) -> None:
        #: The case's run (set once it is made): which of its runs have a typed output.
        self.case_run: AgentRun | None = None

    def _gives_typed_result(self, run_id: str) -> bool:
        """Whether the run ``run_id`` (the case's, or a sub-agent's) has a typed output whose
        ``final_result`` tool gives the result."""
        runs = [self.case_run] if self.case_run is not None else []
        while runs:
            run = runs.pop()
            if run.run_id == run_id:
                output = run.state.output_type
                return output is not None and output.mode == "tool"
            runs.extend(run.children)
        return False

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision:
        if request.fix_required:
            raise HumanInputUnavailable("No reviewer is present in an evaluation.")
        if request.tool_name == FINAL_RESULT and self._gives_typed_result(request.run.run_id):
            raise HumanInputUnavailable(RESULT_NEEDS_REVIEWER)
        return ApprovalDecision(
            approved=False,
            reason="No reviewer is present in an evaluation.",
            reject_message=NO_REVIEWER_MESSAGE,
            decided_by="runtime",
        )

    async def ask(self, request: QuestionRequest) -> list[Answer]:
        raise HumanInputUnavailable("No reviewer is present in an evaluation.")


def _check_options(agent: Any, concurrency: Any, approvals: Any, max_turns: Any) -> None:
    from ..agent import Agent

    if not isinstance(agent, Agent):
        raise TypeError(
            "evaluate() takes a built agent (AgentBuilder(...).build()), not "
            f"{type(agent).__name__}."
        )
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an integer of 1 or more, not {concurrency!r}.")
    if approvals is not None and not callable(approvals):
        raise TypeError(
            "approvals must be a handler (request) -> bool | ApprovalDecision, as for "
            "PromptRequest.approvals."
        )
    if max_turns is not None and (
        isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 0
    ):
        raise ValueError(f"max_turns must be zero or more, not {max_turns!r}.")


def prepare(
    agent: Agent,
    cases: Any,
    metrics: Any,
    concurrency: int = 1,
    approvals: ApprovalHandler | None = None,
    max_turns: int | None = None,
) -> EvalReport:
    """Check every argument (nothing runs) and return the empty report."""
    _check_options(agent, concurrency, approvals, max_turns)
    checked_cases = normalize_cases(cases)
    checked_metrics = normalize_metrics(metrics)
    clash = [m.name for m in checked_metrics if m.name in BASE_COLUMNS]
    if clash:
        raise ValueError(
            f"A metric is named {clash[0]!r}, like a column of the report; give it another "
            "name (name=...)."
        )
    report = EvalReport(
        agent.id,
        checked_cases,
        checked_metrics,
        eval_id=new_id("eval"),
        concurrency=concurrency,
    )
    report.run_options = (agent, approvals, max_turns)
    return report


def _scored_text(data: Any) -> str:
    """A typed output's value as its metrics read it: as JSON (``{"value":7}``), but a text
    (a ``Literal`` label, a ``str`` enum) as itself, ``positive`` and not ``"positive"``, which
    no ``exact_match("positive")`` would match."""
    text = to_json(data).decode()
    value = json.loads(text)
    return value if isinstance(value, str) else text


def _tokens(run: AgentRun) -> int:
    """The tokens a case's run used, its sub-agents' runs (at every depth) included."""
    return run.state.usage.total_tokens + sum(_tokens(child) for child in run.children)


def _rejected_note(run: AgentRun) -> str:
    """Why a case that reached its turn limit may have: the protected calls it kept making,
    each rejected for want of a reviewer (its sub-agents' runs included)."""
    rejected, runs = 0, [run]
    while runs:
        one = runs.pop()
        runs.extend(one.children)
        rejected += sum(
            record.decision_reason == NO_REVIEWER_MESSAGE for record in one.state.approvals.values()
        )
    if not rejected:
        return ""
    calls = "call was" if rejected == 1 else "calls were"
    return (
        f" ({rejected} tool {calls} rejected because they need approval and no reviewer is "
        "present in an evaluation: pass approvals= to evals.evaluate to decide them)"
    )


async def _score(metrics: list[Metric], case: Case, output: str) -> dict[str, Score]:
    if len(metrics) == 1:
        return {metrics[0].name: await metrics[0].score(case, output)}
    scores = await asyncio.gather(*(m.score(case, output) for m in metrics))
    return {m.name: s for m, s in zip(metrics, scores, strict=True)}


async def _run_case(report: EvalReport, index: int) -> None:
    assert report.run_options is not None
    agent, approvals, max_turns = report.run_options
    case = report.case_list[index]
    reviewer = NoReviewer()
    request = agent.prompt(case.input).human_input(reviewer)
    request.session(report.eval_id, {"eval_case": case.name})
    if approvals is not None:
        request.approvals(approvals)
    if max_turns is not None:
        request.max_turns(max_turns)
    started = time.perf_counter()
    run = request.create_run()
    reviewer.case_run = run
    report.runs[index] = run
    run.start()
    report.case_started(index)
    output: str | None = None
    data: Any = None
    error: str | None = None
    try:
        response = await run.wait()
        output, data = response.output, response.data
        if request.active_output_type is not None:  # scored as its validated value's JSON
            output = _scored_text(data)
    except asyncio.CancelledError:
        run.cancel(STOP_REASON)
        raise
    except PromptCancelledError as cancelled:
        if report.stopping:
            raise asyncio.CancelledError() from None
        error = f"PromptCancelledError: {cancelled.reason}"
    except Exception as failure:
        text = error_text(failure)
        error = f"{type(failure).__name__}: {text}" if text else type(failure).__name__
        if isinstance(failure, MaxTurnsError):
            error += _rejected_note(run)
    duration_ms = round((time.perf_counter() - started) * 1000)  # the run's, not its scoring
    details: dict[str, Score] = {}
    if error is None:
        assert output is not None
        details = await _score(report.metrics, case, output)
    # A metric that could not score the case fails it: the table's error column says why.
    unscored = "; ".join(f"{name}: {s.error}" for name, s in details.items() if s.error)
    assert case.name is not None
    result = CaseResult(
        name=case.name,
        input=case.input,
        expected=case.expected,
        output=output if error is None else run.state.output,
        passed=error is None and all(s.passed for s in details.values()),
        status="success" if error is None else "error",
        error=error or unscored or None,
        duration_ms=duration_ms,
        tokens=_tokens(run),
        run_id=run.run_id,
        scores={name: s.value for name, s in details.items()},
        details=details,
        metadata=dict(case.metadata),
        data=data,
    )
    report.case_ended(index, result)


async def run_report(report: EvalReport) -> EvalReport:
    """Run the prepared ``report``'s cases (at most ``concurrency`` at a time) to the end, or
    until :meth:`EvalReport.stop`. Cancelling the caller cancels every case."""
    if report.status != "pending":
        raise RuntimeError("This evaluation has already run.")
    report.begin(asyncio.get_running_loop())
    next_index = iter(range(report.total))

    async def worker() -> None:
        for index in next_index:
            if report.stopping:
                return
            try:
                await _run_case(report, index)
            except asyncio.CancelledError:
                report.case_ended(index)  # the row shows it was not finished
                raise

    # The workers' runs inherit it (the caller's context is left as it was): one warning for the
    # evaluation's tool errors, not one a case.
    shared = tool_errors_logged.set(ToolErrorsLogged())
    try:
        workers = [
            asyncio.ensure_future(worker()) for _ in range(min(report.concurrency, report.total))
        ]
    finally:
        tool_errors_logged.reset(shared)
    report.run_workers(workers)
    try:
        await asyncio.gather(*workers, return_exceptions=True)
    except asyncio.CancelledError:
        report.stop()  # no further case starts
        for task in workers:
            task.cancel()
        await _settle(report)
        report.end(stopped=True)
        await _finish_view(report)
        raise
    await _settle(report)
    for task in workers:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    report.end(stopped=False)
    await _finish_view(report)
    return report


async def _finish_view(report: EvalReport) -> None:
    """Let a displayed report's widget send its last update (it is made by the notebook layer,
    never imported here)."""
    view = report.view
    if view is not None:
        try:
            await view.finish()
        except Exception:
            logger.exception("The report's widget could not show the end of the evaluation")


async def _settle(report: EvalReport) -> None:
    """Wait for cancelled runs to record their end (each is stored as cancelled)."""
    unfinished = [run for run in report.runs.values() if not run.done]
    for run in unfinished:
        run.cancel(STOP_REASON)
    for run in unfinished:
        with contextlib.suppress(BaseException):  # each ends cancelled: nothing to report
            await run.wait()


async def evaluate(
    agent: Agent,
    cases: Any,
    metrics: Any,
    concurrency: int = 1,
    approvals: ApprovalHandler | None = None,
    max_turns: int | None = None,
    *,
    show: bool | None = None,
) -> EvalReport:
    """Run ``agent`` on each case and score its output with ``metrics``; returns the report.

    ``cases``: :class:`Case` objects, dicts, or a pandas DataFrame (``input``, optional
    ``expected``, ``name``, ``metadata``). ``metrics``: ``exact_match()``, ``contains()``,
    ``matches(regex)``, ``json_valid(schema)``, ``llm_judge(model, rubric)`` or plain functions
    ``(case, output) -> bool | float``. Up to ``concurrency`` cases run at once; ``approvals``
    decides protected tool calls (otherwise they are rejected: no reviewer is present);
    ``max_turns`` overrides the agent's default. Every case is a stored run (``run_id``).

    In a notebook (``show`` None or True) the live report is displayed in the cell at once:
    progress, pass rate, one row per case, Stop; ``show=False`` displays nothing (outside a
    notebook there is nothing to display it in). Bad arguments raise before any case runs.
    """
    report = prepare(agent, cases, metrics, concurrency, approvals, max_turns)
    runner = _request.notebook_runner() if show is not False else None
    if runner is not None:
        runner.show_evals_report(report)
        evaluation = asyncio.ensure_future(run_report(report))
        with _noting_interrupts() as interrupted:
            try:
                # ipykernel < 7.4 (Colab's 6.17.1) runs no widget message while a cell awaits.
                return await runner.await_serving_widgets(evaluation)  # type: ignore[no-any-return]
            except (asyncio.CancelledError, KeyboardInterrupt) as error:
                # Kernel > Interrupt (ipykernel 7.4 cancels the cell, earlier ones raise
                # KeyboardInterrupt): the finished cases are kept, the others stopped, and the
                # cell fails saying so, not with a bare CancelledError, the report out of reach.
                # Another cancellation (asyncio.timeout, wait_for) stays one.
                evaluation.cancel()
                with contextlib.suppress(BaseException):  # (a second interrupt ends only this)
                    await evaluation
                if report.status != "stopped":
                    raise
                if isinstance(error, asyncio.CancelledError) and not interrupted:
                    raise
                raise EvaluationStoppedError(report) from None
    return await run_report(report)


@contextlib.contextmanager
def _noting_interrupts() -> Iterator[list[int]]:
    """While the block runs (on the main thread), the SIGINTs that came, in a list that is
    true once one did; each is still handled as before (by the kernel: it cancels the cell)."""
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # (SIG_IGN, SIG_DFL, or set outside Python: left alone)
        yield noted
        return

    def note(signum: int, frame: Any) -> Any:
        noted.append(signum)
        return previous(signum, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield noted
    finally:
        if signal.getsignal(signal.SIGINT) is note:
            signal.signal(signal.SIGINT, previous)


def evaluate_sync(
    agent: Agent,
    cases: Any,
    metrics: Any,
    concurrency: int = 1,
    approvals: ApprovalHandler | None = None,
    max_turns: int | None = None,
    *,
    show: bool | None = None,
) -> EvalReport:
    """:func:`evaluate` for scripts: blocks until the report is complete.

    In a script (no event loop running) it runs on its own loop. In a notebook cell it shows
    the live report (unless ``show=False``), runs the cases on a worker thread and blocks the
    cell while Stop keeps working. Elsewhere inside a running event loop it raises: use
    ``await evals.evaluate(...)``.
    """
    report = prepare(agent, cases, metrics, concurrency, approvals, max_turns)
    runner = _request.notebook_runner()
    if running_loop() is None:  # a script, or a thread of the kernel
        if show and runner is not None:
            runner.show_evals_report(report)
        return run_in_script(run_report(report))
    if runner is None:
        raise RuntimeError(
            "evaluate_sync() cannot block the event loop running in this thread; use "
            "`await evals.evaluate(...)` instead."
        )
    return runner.evaluate_blocking(report, run_report, show=show is not False)  # type: ignore[no-any-return]
