"""Evals and traces probed as a data scientist would: numbers a report or trace gives must be
the ones its parts add up to, and a score that says it is an error must count as one."""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel

pytestmark = pytest.mark.timeout(60)


def agent(answer: str = "7"):
    return AgentBuilder("evals-probe", FunctionModel(lambda request: answer)).build()


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
