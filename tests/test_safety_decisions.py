"""Decisions of approvals and questions as the run and the run store keep them: what the store
holds, who wins when two decide at once, a decision taken while no process ran the run, and
decisions from other threads (mutation testing, scripts/mutation.py, found these untested).
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from test_safety_mutants import (
    THREE_CHOICES,
    approval_and_question,
    store_agent,
)

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    DecisionRefusedError,
    RunStore,
    ToolApproval,
    create_question_tool,
)
from anvia_notebook.events import ApprovalRecord
from anvia_notebook.human import wait_for_a_decision
from anvia_notebook.interactions import Interactions
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool, pending_of, stored_decision, tool_results

SIZE_S = [{"questionId": "size", "answer": "s", "choice": "s"}]
SIZE_L = [{"questionId": "size", "answer": "l", "choice": "l"}]


# -- what the store holds ----------------------------------------------------------------------------


async def test_the_store_holds_decisions_taken_through_another_store(store_path: Path):
    run, other, approval, question, add = await approval_and_question(store_path)
    other.approve(run.run_id, approval.id, reason="ok", args={"x": 5, "y": 6}, via="cli")
    other.answer(run.run_id, question.id, SIZE_S)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == [(5, 6)]
    assert stored_decision(other, approval.id) == (
        "approved",
        {"approved": True, "reason": "ok", "args": {"x": 5, "y": 6}, "decided_by": "human"},
    )
    assert stored_decision(other, question.id) == (
        "answered",
        {"answers": SIZE_S, "decided_by": "human"},
    )
    assert [r.decided_via for r in other.interactions(run.run_id)] == ["cli", "store"]


async def test_the_store_holds_a_rejection_through_another_store_without_arguments(
    store_path: Path,
):
    run, other, approval, question, add = await approval_and_question(store_path)
    other.reject(run.run_id, approval.id, reason="no")
    other.answer(run.run_id, question.id, SIZE_S, decided_by="policy")
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == []
    assert stored_decision(other, approval.id) == (
        "rejected",
        {"approved": False, "reason": "no", "args": None, "decided_by": "human"},
    )
    assert stored_decision(other, question.id) == (
        "answered",
        {"answers": SIZE_S, "decided_by": "policy"},
    )


@pytest.mark.parametrize("approved", [True, False])
async def test_the_store_holds_decisions_taken_in_the_run(store_path: Path, approved: bool):
    run, other, approval, question, add = await approval_and_question(store_path)
    run.interactions.decide(approval.id, approved=approved, reason="why", args={"x": 3, "y": 4})
    run.interactions.answer(question.id, SIZE_S)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == ([(3, 4)] if approved else [])
    status, decision = stored_decision(other, approval.id)
    assert status == ("approved" if approved else "rejected")
    assert decision is not None
    assert (decision["approved"], decision["args"], decision["decided_by"]) == (
        approved,
        {"x": 3, "y": 4} if approved else None,
        "human",
    )
    assert stored_decision(other, question.id) == (
        "answered",
        {"answers": SIZE_S, "decided_by": "human"},
    )


@pytest.mark.parametrize("approved", [True, False])
async def test_the_store_holds_a_handler_s_decision(store_path: Path, approved: bool):
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    decision = ApprovalDecision(approved=approved, reason="rule 7", args={"x": 2, "y": 2})
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: decision).build()
    store = RunStore(store_path)
    await agent.prompt("go").store(store).send()
    [record] = store.interactions(store.runs()[0].run_id)
    status, stored = stored_decision(store, record.id)
    assert (status, stored["approved"], stored["args"], stored["decided_by"]) == (
        "approved" if approved else "rejected",
        approved,
        {"x": 2, "y": 2} if approved else None,
        "handler",
    )


async def test_the_store_holds_a_human_input_s_answers_as_a_person_s(store_path: Path):
    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    human = CallbackHumanInput(ask=lambda request: SIZE_L)
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(human).build()
    store = RunStore(store_path)
    await agent.prompt("go").store(store).send()
    [record] = store.interactions(store.runs()[0].run_id)
    assert stored_decision(store, record.id) == (
        "answered",
        {"answers": SIZE_L, "decided_by": "human"},
    )


# -- two deciders at once ------------------------------------------------------------------------------


class AnotherProcessIsFirst(RunStore):
    """A store where another process decides an interaction just before this process does."""

    first = None  # what the other process does first: first(its store, the record)

    def claim(self, record):
        if self.first is not None:
            first, self.first = self.first, None
            first(RunStore(self.location), record)
        return super().claim(record)


async def test_a_handler_that_decides_second_follows_the_first_decision(store_path: Path):
    store = AnotherProcessIsFirst(store_path)
    store.first = lambda other, r: other.reject(r.run_id, r.id, reason="not now", via="cli")
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: True).build()
    await agent.prompt("go").store(store).send()
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == "not now"
    [record] = store.interactions(store.runs()[0].run_id)
    assert (record.status, record.decided_by, record.decided_via) == ("rejected", "human", "cli")


async def test_a_second_decision_in_the_run_is_refused_when_the_store_had_one(store_path: Path):
    store = AnotherProcessIsFirst(store_path)
    request, add, _ = store_agent(call("add", {"x": 1, "y": 2}), "ok")
    run = request.store(store).start()
    [approval] = await pending_of(run)
    # (an approval without edits: one with edits is sent to this run, never recorded aside)
    store.first = lambda other, r: other.approve(r.run_id, r.id, reason="from elsewhere")
    with pytest.raises(DecisionRefusedError):
        run.interactions.decide(approval.id, approved=False)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == [(1, 2)]


async def test_a_second_answer_in_the_run_is_refused_when_the_store_had_one(store_path: Path):
    store = AnotherProcessIsFirst(store_path)
    request, _, model = store_agent(call("ask_question", THREE_CHOICES), "ok")
    run = request.store(store).start()
    [question] = await pending_of(run)
    store.first = lambda other, r: other.answer(r.run_id, r.id, SIZE_L)
    with pytest.raises(DecisionRefusedError):
        run.interactions.answer(question.id, SIZE_S)
    await asyncio.wait_for(run.wait(), 5)
    assert json.loads(tool_results(model.requests[1])[0].content) == {"answers": SIZE_L}


async def test_two_decisions_in_the_same_moment_the_second_is_refused():
    """No store: the interaction itself knows it is decided before the run has looked."""
    never = asyncio.Event()

    async def approve(request):
        await never.wait()

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).human_input(CallbackHumanInput(approve)).build()
    run = agent.prompt("go").store(None).create_run()
    run.start()
    [approval] = await pending_of(run)
    run.interactions.decide(approval.id, approved=False, reason="first")
    with pytest.raises(DecisionRefusedError):
        run.interactions.decide(approval.id, approved=True)
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == "first"


# -- decided while no process ran the run, or from elsewhere -----------------------------------------


def approval_record() -> ApprovalRecord:
    ids = {"id": "approval_1", "run_id": "run_1", "tool_call_id": "c1", "internal_call_id": "i1"}
    return ApprovalRecord(**ids, agent_id="a", tool_name="add", args={"x": 1, "y": 2})


def decide_as_an_older_version(path: Path, item_id: str, decision: dict) -> None:
    """What earlier versions wrote: the status and the decision, the record left pending."""
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE interactions SET status = 'approved', decision = ? WHERE id = ?",
            (json.dumps(decision), item_id),
        )


@pytest.mark.parametrize(
    ("older", "decided_by"),
    [
        (False, "handler"),
        (True, "policy"),  # an older writer's "auto"
    ],
)
async def test_an_approval_decided_in_the_store_while_no_process_ran_is_settled_on_reopening(
    tmp_path: Path, older: bool, decided_by: str
):
    store = RunStore(tmp_path / "runs.sqlite")
    record = approval_record()
    store.open_interaction(record)
    if older:
        decision = {"approved": True, "reason": "while away", "decided_by": "auto"}
        decide_as_an_older_version(tmp_path / "runs.sqlite", record.id, decision)
    else:
        RunStore(tmp_path / "runs.sqlite").approve(
            "run_1", record.id, reason="while away", decided_by="handler", via="cli"
        )

    interactions = Interactions("run_1", store)
    interaction = interactions.open(record)
    resolution = await asyncio.wait_for(
        interactions.wait(interaction, wait_for_a_decision(), "human", "widget"), 5
    )
    assert (resolution.status, resolution.reason, resolution.decided_by) == (
        "approved",
        "while away",
        decided_by,
    )
    assert interaction.record.status == "approved"
    with pytest.raises(DecisionRefusedError):
        interactions.decide(record.id, approved=False)


async def test_a_decision_written_just_before_its_watch_begins_reaches_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The store's watcher was already looking (for another approval) and saw the decision,
    written after the approval was opened and before its watch began, while nothing watched it;
    the store did not change again, and the run waited for ever."""
    from anvia_notebook.store import _store

    monkeypatch.setattr(_store, "POLL_INTERVAL", 0.01)
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    interactions = Interactions("run_1", store)
    interactions.open(approval_record().model_copy(update={"id": "approval_0"}))
    looks = threading.Semaphore(0)
    version = store._backend.data_version

    def counted() -> int:
        looks.release()
        return version()

    monkeypatch.setattr(store._backend, "data_version", counted)
    watch = store.watch

    def decided_first(item_id: str, *args: object, **kwargs: object) -> None:
        if item_id == "approval_1":
            RunStore(path).approve("run_1", item_id, reason="from the terminal", via="cli")
            while looks.acquire(blocking=False):
                pass  # (looks begun before the decision)
            for _ in range(2):  # a whole look began after it, and ended
                assert looks.acquire(timeout=5)
        watch(item_id, *args, **kwargs)

    monkeypatch.setattr(store, "watch", decided_first)
    interaction = interactions.open(approval_record())
    resolution = await asyncio.wait_for(
        interactions.wait(interaction, wait_for_a_decision(), "human", "widget"), 5
    )
    assert (resolution.status, resolution.reason) == ("approved", "from the terminal")


async def test_a_look_at_the_store_that_failed_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A look that failed (the store locked for a moment) was taken as made: the decision it
    missed reached the run only when the store changed again."""
    import sqlite3

    from anvia_notebook.store import _store

    monkeypatch.setattr(_store, "POLL_INTERVAL", 0.01)
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    deliver = store._deliver
    failed: list[str] = []

    def locked_once(watched: dict) -> None:
        decided = store.record("approval_1")
        if not failed and decided is not None and not decided.pending:  # the look that sees it
            failed.append("approval_1")
            raise sqlite3.OperationalError("database is locked")
        deliver(watched)

    monkeypatch.setattr(store, "_deliver", locked_once)
    interactions = Interactions("run_1", store)
    interaction = interactions.open(approval_record())
    RunStore(path).approve("run_1", "approval_1", reason="from the terminal", via="cli")
    resolution = await asyncio.wait_for(
        interactions.wait(interaction, wait_for_a_decision(), "human", "widget"), 5
    )
    assert failed == ["approval_1"]
    assert (resolution.status, resolution.reason) == ("approved", "from the terminal")


def test_a_decision_after_the_run_s_loop_closed_is_taken_without_an_error():
    interactions = Interactions("run_1")
    record = approval_record()

    async def open_it():
        return interactions.open(record)

    asyncio.run(open_it())  # the run's loop is gone
    assert interactions.decide(record.id, approved=True).id == record.id
    assert interactions.get(record.id).record.status == "approved"


async def test_a_decision_from_another_thread_reaches_the_waiting_run_safely():
    asyncio.get_running_loop().set_debug(True)  # a loop call from another thread raises
    interactions = Interactions("run_1")
    record = approval_record()
    interaction = interactions.open(record)
    waiting = asyncio.ensure_future(
        interactions.wait(interaction, wait_for_a_decision(), "human", "human_input")
    )
    await asyncio.sleep(0)  # the run awaits the decision
    errors: list[BaseException] = []

    def click() -> None:
        try:
            interactions.decide(record.id, approved=True, via="widget")
        except BaseException as error:  # reported below
            errors.append(error)

    thread = threading.Thread(target=click)
    thread.start()
    resolution = await asyncio.wait_for(waiting, 5)
    thread.join(5)
    assert errors == []
    assert (resolution.status, resolution.decided_via) == ("approved", "widget")
