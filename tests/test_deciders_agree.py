"""The two places that decide an interaction agree: the run's own (``run.interactions``, behind
``RunHandle`` and the widget) and the run store's (``RunStore`` in any process, behind the command
line). The same decision gives the same record; the same bad decision is refused with the same
words and changes nothing.
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field
from test_hostile_edits import waiting_for_approval
from test_safety_mutants import (
    THREE_CHOICES,
    approval_and_question,
    guarded_ask_question,
    pending_in,
)

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    DecisionRefusedError,
    StoreHumanInput,
    ToolApproval,
)
from anvia_notebook.models import QueueModel
from anvia_notebook.store import RunStore

from helpers import call, make_add_tool, tool_results

SIZE_M = [{"questionId": "size", "answer": "m", "choice": "m"}]
FRONTS = ["run", "store"]


def _front(name: str, run: Any, store: Any) -> dict[str, Any]:
    """approve / reject / answer / decline, as the run or as another store object offers them."""
    if name == "run":
        interactions = run.interactions
        return {
            "approve": partial(interactions.decide, approved=True),
            "reject": partial(interactions.decide, approved=False),
            "answer": interactions.answer,
            "decline": interactions.decline,
        }
    return {
        verb: partial(getattr(store, verb), run.run_id)
        for verb in ("approve", "reject", "answer", "decline")
    }


def _decision(record: Any) -> tuple[Any, ...]:
    """What a decided record says, except from where it came and when."""
    if record.kind == "approval":
        return (record.status, record.decided_by, record.decision_reason, record.edited_args)
    return (record.status, record.decided_by, [a.to_wire() for a in record.answers])


@pytest.mark.parametrize("front", FRONTS)
async def test_the_same_decisions_give_the_same_records(store_path: Path, front: str):
    run, store, approval, question, add = await approval_and_question(store_path)
    decide = _front(front, run, store)
    approved = decide["approve"](approval, reason=" checked ", args={"x": 7, "y": 8})
    answered = decide["answer"](question.id, SIZE_M, decided_by="policy")
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == [(7, 8)]
    assert _decision(approved) == ("approved", "human", "checked", {"x": 7, "y": 8})
    assert _decision(answered) == ("answered", "policy", SIZE_M)
    kept = store.get(run.run_id)
    assert _decision(kept.approvals[approval.id]) == _decision(approved)
    assert _decision(kept.questions[question.id]) == _decision(answered)
    assert [approved.decided_via, answered.decided_via] == (
        [None, None] if front == "run" else ["store", "store"]
    )


@pytest.mark.parametrize("front", FRONTS)
async def test_a_rejection_without_a_reason_tells_the_default_text(store_path: Path, front: str):
    run, store, approval, question, add = await approval_and_question(store_path)
    decide = _front(front, run, store)
    rejected = decide["reject"](approval.id)
    decide["answer"](question, SIZE_M)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == []
    assert _decision(rejected) == ("rejected", "human", "Tool approval was rejected.", None)
    assert _decision(store.get(run.run_id).approvals[approval.id]) == _decision(rejected)


REFUSED = [
    ("answer", "question", []),
    ("answer", "question", [{"questionId": "size", "answer": "xl", "choice": "xl"}]),
    ("answer", "question", {"size": "m"}),
    ("answer", "question", "m"),
    ("decline", "question", None),
    ("approve", "approval", ["x"]),
    ("approve", "approval", {"x": 1}),
    ("approve", "approval", {"x": "5", "y": 1}),
    ("approve", "question", None),
    ("answer", "approval", SIZE_M),
]


async def _refusal(store_path: Path, front: str, verb: str, target: str, given: Any) -> str:
    """The words refusing a bad decision, after checking that it changed nothing."""
    run, store, approval, question, add = await approval_and_question(store_path)
    decide = _front(front, run, store)
    item = approval if target == "approval" else question
    extra = {"args": given} if verb == "approve" and given is not None else {}
    positional = (given,) if verb == "answer" else ()
    with pytest.raises(DecisionRefusedError) as refused:
        decide[verb](item.id, *positional, **extra)
    assert sorted(r.id for r in store.pending(run.run_id)) == sorted([approval.id, question.id])
    assert [r.id for r in run.interactions.pending] == [r.id for r in store.pending(run.run_id)]
    run.cancel("done")
    await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 5)
    assert add.calls == []
    # The store names the run it looked in; the run does not need to.
    return str(refused.value).replace(f" in run {run.run_id!r}", "").replace(item.id, "ID")


@pytest.mark.parametrize(("verb", "target", "given"), REFUSED)
async def test_the_same_bad_decision_is_refused_with_the_same_words(
    store_path: Path, verb: str, target: str, given: Any
):
    said = [await _refusal(store_path, front, verb, target, given) for front in FRONTS]
    # Edited arguments are checked against the tool's JSON Schema in every process: the same
    # words, also for a string where the tool's model would have read a number.
    assert said[0] == said[1]


@pytest.mark.parametrize("front", FRONTS)
async def test_a_second_decision_is_refused_with_the_same_words(store_path: Path, front: str):
    run, store, approval, question, _ = await approval_and_question(store_path)
    decide = _front(front, run, store)
    decide["reject"](approval.id, reason="no")
    decide["answer"](question.id, SIZE_M)
    with pytest.raises(DecisionRefusedError, match="This approval is already rejected; a second"):
        decide["approve"](approval.id)
    with pytest.raises(DecisionRefusedError, match="This question is already answered; a second"):
        decide["answer"](question.id, SIZE_M)
    await asyncio.wait_for(run.wait(), 5)


async def test_a_handlers_edit_that_does_not_fit_is_refused_as_a_persons_is_before_it_is_recorded(
    store_path: Path,
):
    """Code deciding (an approval handler) cannot be asked again: its edit that the others
    would refuse rejects the call, with their words, and the record says so from the start."""
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = (
        AgentBuilder("a", model)
        .tool(add)
        .approvals(lambda r: ApprovalDecision(approved=True, args={"x": "5", "y": 1}))
        .build()
    )
    events = [e async for e in agent.prompt("go").stream()]
    assert add.calls == []
    [result] = tool_results(model.requests[1])
    assert result.is_error
    assert result.content == (
        "Edited arguments were rejected: The edited arguments are not valid for add: x: '5' is "
        "not of type 'integer'"
    )
    decided = [e.approval for e in events if e.type == "tool_approval_result"]
    assert [(a.status, a.decided_by, a.edited_args) for a in decided] == [
        ("rejected", "handler", None)
    ]
    assert decided[0].decision_reason == result.content
    run, store, approval, _, _ = await approval_and_question(store_path)
    with pytest.raises(DecisionRefusedError) as refused:
        store.approve(run.run_id, approval.id, args={"x": "5", "y": 1})
    assert f"Edited arguments were rejected: {refused.value}" == result.content
    run.cancel("done")
    await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 5)


@pytest.mark.parametrize("front", FRONTS)
async def test_questions_edited_with_plain_choices_are_read_as_the_run_reads_them(
    store_path: Path, front: str
):
    """An approval-guarded ask_question: its edited questions may give choices as plain strings
    (as the model may); the run and another process read them the same way."""
    own = guarded_ask_question()
    model = QueueModel([call("ask_question", THREE_CHOICES), "done"])
    agent = AgentBuilder("a", model).tool(own).human_input(StoreHumanInput()).build()
    run = agent.prompt("go").start()
    store = RunStore(store_path)
    [approval] = await pending_in(store, run.run_id)
    decide = _front(front, run, store)
    with pytest.raises(DecisionRefusedError, match=r"questions\.0\.choices: "):
        decide["approve"](approval.id, args={"questions": [{"question": "Size?", "choices": []}]})
    edited = {"questions": [{"id": "fit", "question": "Fit, really?", "choices": ["s", "m"]}]}
    decide["approve"](approval.id, args=edited)
    [question] = await pending_in(store, run.run_id)
    assert [(q.id, q.question, [c.value for c in q.choices]) for q in question.questions] == [
        ("fit", "Fit, really?", ["s", "m"])
    ]
    store.answer(run.run_id, question.id, [{"questionId": "fit", "answer": "m", "choice": "m"}])
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"


class Refund(BaseModel):
    order_id: str = Field(alias="orderId")
    amount: int


@pytest.mark.parametrize("front", FRONTS)
async def test_the_arguments_shown_are_the_ones_sent_and_an_edit_of_them_is_accepted(
    store_path: Path, front: str
):
    """A tool whose input has aliases: the approval shows the arguments as the model sent them
    (the names its JSON Schema gives), so a person edits those and the edit fits, from anywhere."""
    run, store, approval, refunds, _ = await waiting_for_approval(
        store_path, Refund, {"orderId": "A1", "amount": 5}
    )
    assert approval.args == {"orderId": "A1", "amount": 5}
    _front(front, run, store)["approve"](approval.id, args={**approval.args, "amount": 3})
    assert (await asyncio.wait_for(run.wait(), 5)).output == "done"
    assert refunds == [Refund(orderId="A1", amount=3)]
