"""An evaluation report's text before any case has finished: its pass rate is not known yet
(``—``, as the widget shows it), not ``0%``."""

from __future__ import annotations

import asyncio

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel


def agent_answering(answer: str, started: asyncio.Event | None = None):
    """An agent answering ``answer``; with ``started``, it sets it and never answers."""

    async def respond(request):
        if started is not None:
            started.set()
            await asyncio.Event().wait()
        return answer

    return AgentBuilder("evals-text", FunctionModel(respond)).build()


CASES = [{"input": "a", "name": "one"}, {"input": "b", "name": "two"}]


def test_a_report_before_it_runs_has_no_pass_rate_yet():
    report = evals.runner.prepare(agent_answering("ok"), CASES, [evals.contains("ok")])
    assert report.summary() == "0/2 cases (pending), pass rate —; mean contains —"
    assert repr(report) == (
        "EvalReport('evals-text': 0/2 cases (pending), pass rate —; mean contains —)"
    )
    assert "pass rate —" in report._repr_html_()


async def test_a_report_stopped_before_any_case_finished_has_no_pass_rate():
    started = asyncio.Event()
    report = evals.runner.prepare(agent_answering("ok", started), CASES, [evals.contains("ok")])
    task = asyncio.ensure_future(evals.runner.run_report(report))
    await asyncio.wait_for(started.wait(), 5)
    assert report.summary() == "0/2 cases (running), pass rate —; mean contains —"
    assert report.stop() is True
    await asyncio.wait_for(task, 5)
    assert report.summary() == "0/2 cases (stopped), pass rate —; mean contains —"


def test_a_finished_case_that_failed_is_a_pass_rate_of_zero():
    report = evals.evaluate_sync(agent_answering("no"), CASES, [evals.contains("ok")], show=False)
    assert report.summary() == "2/2 cases, pass rate 0%; mean contains 0.00"


def test_a_comparison_with_a_report_that_has_not_run_has_no_pass_rate_for_it():
    """Before: "pass rate 0% -> 100%" and "+100 pts" against a report nothing had run in."""
    done = evals.evaluate_sync(agent_answering("ok"), CASES, [evals.contains("ok")])
    pending = evals.runner.prepare(agent_answering("ok"), CASES, [evals.contains("ok")])
    comparison = evals.compare(pending, done)
    assert "pass rate — -> 100%" in comparison.summary()
    html = comparison._repr_html_()
    assert "+100 pts" not in html and "<td>—</td>" in html
