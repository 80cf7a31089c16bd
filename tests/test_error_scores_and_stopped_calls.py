"""Evals and traces as a data scientist reads them: the numbers a report or a trace gives must be
the ones its parts add up to, and a score that says it is an error must count as one."""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel

pytestmark = pytest.mark.timeout(60)


def agent(answer: str = "7"):
    return AgentBuilder("grader-demo", FunctionModel(lambda request: answer)).build()


def test_a_score_that_carries_an_error_fails_its_case_and_has_no_value(store_path):
    """A metric may say itself that it could not grade (``Score(..., error=...)``): that is a
    metric error (API docs, Evals: "`scores` None, `details[name].error` says why, and fails the
    case"). It passed the case, so a grader that was down gave a pass rate of 100%."""

    def grader_down(case, output):
        return evals.Score(None, True, error="grading service unavailable")

    def flagged(case, output):
        return evals.Score(0.9, True, error="rubric missing")

    report = asyncio.run(evals.evaluate(agent(), [{"input": "q"}], [grader_down, flagged]))
    [case] = report.cases
    assert case.passed is False
    assert report.pass_rate == 0.0
    assert case.scores == {"grader_down": None, "flagged": None}
    assert case.details["grader_down"].error == "grading service unavailable"
    assert case.details["flagged"].error == "rubric missing"
    assert case.details["flagged"].passed is False
    assert case.error == "grader_down: grading service unavailable; flagged: rubric missing"
    assert report.mean_scores == {"grader_down": None, "flagged": None}


def _start_child(kind: str):
    """A process that runs one of the store agents (tests/store_agents.py) on the test's store."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    environ = dict(os.environ)
    tests = str(Path(__file__).parent)
    environ["PYTHONPATH"] = os.pathsep.join([tests, environ.get("PYTHONPATH", "")])
    code = f"import store_agents; store_agents.run({kind!r}, 'send 5 to a1')"
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a_call_taken_up_again_on_resume_keeps_when_it_began(
    store_path, tmp_path, monkeypatch
):
    """A call whose approval waited while the kernel died began in that kernel: its approval
    was asked then. Resumed, the call's ``started_at`` moved to the resume, after its own
    approval's ``requested_at``, and its ``duration_ms`` left out the wait (the trace's
    ``duration_ms`` includes "the time between", API docs, Traces)."""
    import signal
    import time

    import store_agents

    from anvia_notebook import RunStore

    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    child = _start_child("approval")
    store = RunStore(store_path)
    try:
        deadline = time.monotonic() + 30
        while not store.pending():
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never asked for the approval"
            await asyncio.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        if child.stderr:
            child.stderr.close()
    [summary] = store.runs()
    [before] = store.trace(summary.run_id).tool_calls
    assert before.started_at is not None
    await asyncio.sleep(0.3)  # the kernel is gone a while
    run = store_agents.agent("approval").resume(summary.run_id).start()
    for _ in range(500):
        if run.status == "waiting":
            break
        await asyncio.sleep(0.01)
    [approval] = store.pending(summary.run_id)
    store.approve(summary.run_id, approval.id)
    response = await asyncio.wait_for(run.wait(), 10)
    [after] = response.trace.tool_calls
    assert after.status == "success"
    assert after.started_at == before.started_at
    assert after.started_at <= after.approval.requested_at
    assert after.duration_ms >= 300
