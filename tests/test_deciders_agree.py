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
from test_safety_mutants import approval_and_question

from anvia_notebook import DecisionRefusedError

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
    if given == {"x": 1}:
        # The run checks edited arguments with the tool's input model, another process with its
        # JSON Schema: the same refusal, the problem in each one's words.
        assert [text.split(": ")[0] for text in said] == [
            "The edited arguments are not valid for add"
        ] * 2
        assert all("y" in text.split(": ", 1)[1] for text in said)
    else:
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
