"""A decision that lands from elsewhere (the widget, ``RunHandle``, another thread) at the moment
the run's human input or approval handler gives up (its time limit, a failure, "cannot take
this", unusable answers): the first of the two wins, and the run does what the record says.

Before, a decision that landed after the human input had given up but before the run woke up
was recorded (the question ``answered``, the approval ``approved``) while the run went on as if
the human input's outcome had won: the model was told the question timed out, or the run failed
with the approval recorded as approved and its tool never run.

Each case lets the decision land a few turns of the event loop after the human input gave up
(``hops``), so that every order of the two is met, whatever asyncio does inside.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    DecisionRefusedError,
    HumanInputTimeout,
    HumanInputUnavailable,
    ToolApproval,
    ask_question,
)
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool, tool_results

QUESTIONS = {
    "questions": [{"id": "p", "question": "P?", "choices": [{"label": "A", "value": "a"}]}]
}
ANSWERS = [{"questionId": "p", "answer": "a", "choice": "a"}]
HOPS = range(6)


def later(hops: int, action) -> None:
    """Run ``action`` after ``hops`` more turns of the running event loop."""
    loop = asyncio.get_running_loop()
    if hops == 0:
        loop.call_soon(action)
    else:
        loop.call_soon(later, hops - 1, action)


def deciding(decide):
    """``decide`` as a loop callback that keeps whether it was accepted or refused."""
    outcome: dict[str, object] = {}

    def act() -> None:
        try:
            decide()
            outcome["accepted"] = True
        except DecisionRefusedError as error:
            outcome["accepted"] = False
            outcome["refused"] = str(error)

    return act, outcome


def asking(holder: dict[str, object], human: CallbackHumanInput):
    """A started run whose model asks QUESTIONS (kept in ``holder["run"]``), and the model."""
    model = QueueModel([call("ask_question", QUESTIONS), "done"])
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    return started(holder, agent), model


def approving(holder: dict[str, object], human: CallbackHumanInput):
    """A started run whose model calls a protected ``add`` (kept in ``holder["run"]``), the
    tool and the model."""
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    return started(holder, agent), add, model


def started(holder: dict[str, object], agent):
    run = agent.prompt("go").create_run()
    holder["run"] = run
    run.start()
    return run


async def give_up(how: str):
    if how == "timeout":
        raise HumanInputTimeout(7)
    if how == "unavailable":
        raise HumanInputUnavailable("this input cannot take it")
    if how == "crash":
        raise RuntimeError("the input broke")
    return [{"questionId": "p", "answer": ""}]  # unusable answers


@pytest.mark.parametrize("how", ["timeout", "unavailable", "crash", "invalid"])
@pytest.mark.parametrize("hops", HOPS)
async def test_an_answer_that_lands_as_the_human_input_gives_up(how, hops):
    holder: dict[str, object] = {}

    async def ask(request):
        act, holder["outcome"] = deciding(
            lambda: holder["run"].interactions.answer(request.question_id, ANSWERS)
        )
        later(hops, act)
        return await give_up(how)

    run, model = asking(holder, CallbackHumanInput(ask=ask))
    try:
        await asyncio.wait_for(run.wait(), 10)
    except RuntimeError as error:
        assert how == "crash" and "the input broke" in str(error)
    [record] = run.state.questions.values()
    [result] = [e for e in run.events if e.type == "tool_question_result"]
    assert result.question.status == record.status
    outcome = holder["outcome"]
    if record.status == "answered":
        # The answer came first: it stands, and the model is given it.
        assert outcome == {"accepted": True}
        assert run.status == "success"
        [told] = tool_results(model.requests[-1])
        assert json.loads(told.content) == {"answers": ANSWERS}
        assert not told.is_error
    else:
        # The human input came first: the answer is refused, and the run goes on (or fails) as
        # the record says.
        assert outcome["accepted"] is False
        assert "already" in str(outcome["refused"])
        assert record.status == ("timed_out" if how == "timeout" else "cancelled")
        if how == "crash":
            assert run.status == "error"
        elif how != "unavailable":
            [told] = tool_results(model.requests[-1])
            assert told.is_error
            assert ("timed out" if how == "timeout" else "invalid answers") in told.content


@pytest.mark.parametrize("how", ["timeout", "unavailable", "crash"])
@pytest.mark.parametrize("hops", HOPS)
async def test_an_approval_that_lands_as_the_human_input_gives_up(how, hops):
    holder: dict[str, object] = {}

    async def approve(request):
        act, holder["outcome"] = deciding(
            lambda: holder["run"].interactions.decide(request.approval_id, approved=True)
        )
        later(hops, act)
        await give_up(how)

    run, add, _ = approving(holder, CallbackHumanInput(approve))
    failed: BaseException | None = None
    try:
        await asyncio.wait_for(run.wait(), 10)
    except Exception as error:
        failed = error
    [record] = run.state.approvals.values()
    [result] = [e for e in run.events if e.type == "tool_approval_result"]
    assert result.approval.status == record.status
    outcome = holder["outcome"]
    if record.status == "approved":
        # The approval came first: the tool runs with it, whatever the human input did after.
        assert outcome == {"accepted": True}
        assert failed is None and run.status == "success"
        assert add.calls == [(1, 2)]
    else:
        assert outcome["accepted"] is False
        assert add.calls == []
        assert record.status == ("timed_out" if how == "timeout" else "cancelled")
        assert (failed is None) == (how == "timeout")


class LandingTimeout(HumanInputTimeout):
    """A time limit whose length, read by the run as it records the timeout, first lets a
    decision land: as one from another thread (a click, the run store) can at that very moment,
    after the run woke up and before it recorded the timeout."""

    def __init__(self, land) -> None:
        self._land = land
        super().__init__(7)

    @property
    def timeout(self) -> float:
        self._land()
        return self._limit

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._limit = value


async def test_an_answer_that_lands_while_the_run_records_the_timeout_stands():
    holder: dict[str, object] = {}

    async def ask(request):
        act, holder["outcome"] = deciding(
            lambda: holder["run"].interactions.answer(request.question_id, ANSWERS)
        )
        raise LandingTimeout(act)

    run, model = asking(holder, CallbackHumanInput(ask=ask))
    await asyncio.wait_for(run.wait(), 10)
    [record] = run.state.questions.values()
    assert record.status == "answered" and holder["outcome"] == {"accepted": True}
    [told] = tool_results(model.requests[-1])
    assert json.loads(told.content) == {"answers": ANSWERS}


async def test_an_approval_that_lands_while_the_run_records_the_timeout_stands():
    holder: dict[str, object] = {}

    async def approve(request):
        act, holder["outcome"] = deciding(
            lambda: holder["run"].interactions.decide(request.approval_id, approved=True)
        )
        raise LandingTimeout(act)

    run, add, _ = approving(holder, CallbackHumanInput(approve))
    assert (await asyncio.wait_for(run.wait(), 10)).output == "done"
    assert run.state.approvals and add.calls == [(1, 2)]
    assert holder["outcome"] == {"accepted": True}
