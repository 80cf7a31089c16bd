"""Edited approvals sent through the run store (``approve --args``), which the run's process
checks with the tool's own model before anything is recorded: what happens when that process
dies while checking one, and when several people send the same edit at once. And how the
command line shows arguments written in any script, and an empty ``--store``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
import store_agents
from child_processes import agents_environ, kill, start_python, wait_until
from pydantic import BaseModel
from store_agents import effects

from anvia_notebook import (
    AgentBuilder,
    DecisionRefusedError,
    PromptCancelledError,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    create_tool,
)
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import QueueModel

from helpers import call

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def env(store_location, tmp_path, monkeypatch):
    return agents_environ(tmp_path, monkeypatch)


def waiting_child(env, **extra):
    code = "import store_agents; store_agents.run('approval', 'send 5 to a1')"
    return start_python(code, {**env, **extra})


async def test_an_edit_taken_by_a_process_that_died_is_checked_when_the_run_resumes(
    env, store_location
):
    """The run's process took the edit and was checking it when it died, and so did the
    process that sent it: the request stayed "taken" for ever, the resumed run never looked at
    it, ``show`` said it waited for the run to check it, and the approval waited for ever."""
    store = RunStore(store_location)
    child = waiting_child(env, ANVIA_TEST_BLOCK_CHECK="1")
    [approval] = wait_until(store.pending, child, "the approval")
    edit = json.dumps({"account": "slow1", "amount": 7})
    sender = start_python(
        "import sys; from anvia_notebook.__main__ import main; "
        f"sys.exit(main(['--store', {store_location!r}, 'approve', {approval.run_id!r}, "
        f"{approval.id!r}, '--args', {edit!r}]))",
        env,
    )
    wait_until(lambda: "checking slow1" in effects(), child, "the run to check the edit")
    kill(sender)
    kill(child)
    run = store_agents.agent("approval").resume(approval.run_id).start()
    response = await asyncio.wait_for(run.wait(), 30)
    assert effects() == ["checking slow1", "started slow1 7", "done slow1 7"]
    assert "sent" in response.output
    record = store.record(approval.id)
    assert record is not None and record.status == "approved"
    assert record.edited_args == {"account": "slow1", "amount": 7}


async def test_of_people_sending_the_same_edit_at_once_one_is_told_it_approved(env, store_location):
    """The others were told "Approved" too (exit 0) when their request, still queued, was
    withdrawn because the same decision had been recorded: they are refused, as plain approvals
    racing are."""
    store = RunStore(store_location)
    child = waiting_child(env)
    try:
        [approval] = wait_until(store.pending, child, "the approval")
        senders = 6
        ready = threading.Barrier(senders)
        told: list[Any] = [None] * senders

        def send(index: int) -> None:
            own = RunStore(store_location)
            try:
                ready.wait()
                own.approve(approval.run_id, approval.id, args={"account": "b2", "amount": 9})
                told[index] = "approved"
            except DecisionRefusedError as error:
                told[index] = str(error)
            finally:
                own.close()

        threads = [threading.Thread(target=send, args=(i,)) for i in range(senders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert told.count("approved") == 1, told
        refused = [t for t in told if t != "approved"]
        assert all("already approved" in t for t in refused), told
        wait_until(lambda: "done b2 9" in effects(), child, "the edited call")
        assert effects() == ["started b2 9", "done b2 9"]
    finally:
        kill(child)


class Payment(BaseModel):
    payee: str
    memo: str


def test_an_edit_the_run_was_checking_when_another_decided_is_not_told_it_approved(tmp_path):
    """Of the same edit sent twice at once, both senders were told "Approved" (a CI run): the
    second one's request was being checked by the run's process when the first one's decision
    was recorded and the run ended (its process no longer the run's owner), and the sender,
    finding the run over and the approval approved with its very arguments, took that for its
    own decision. Only the run's answer ("done") says a request made the decision."""
    import sqlite3

    from anvia_notebook.decisions import Resolution, decided
    from anvia_notebook.records import ApprovalRecord
    from anvia_notebook.run_state import RunState

    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    store.create_run(RunState(run_id="run_1", agent_id="a", status="running"), "send")
    ids = {"id": "approval_1", "run_id": "run_1", "tool_call_id": "c1", "internal_call_id": "i1"}
    record = ApprovalRecord(**ids, agent_id="a", tool_name="send", args={"account": "a1"})
    store.open_interaction(record)
    edit = {"account": "b2"}
    told: list[Any] = []
    sender = RunStore(path)
    looks = [0]  # how often the sender has read the approval (once a round of its wait)
    read = sender.record

    def counted(item_id: str) -> Any:
        looks[0] += 1
        return read(item_id)

    sender.record = counted  # type: ignore[method-assign]

    def send() -> None:
        try:
            told.append(sender.approve("run_1", "approval_1", args=edit).status)
        except DecisionRefusedError as error:
            told.append(str(error))

    thread = threading.Thread(target=send)
    thread.start()
    try:
        with sqlite3.connect(path) as db:
            wait_until(lambda: db.execute("SELECT 1 FROM decision_requests").fetchall(), None, "it")
            # The run's process takes it to check it; meanwhile another's same edit is recorded
            # and the run ends.
            db.execute("UPDATE decision_requests SET status = 'taken'")
        first = Resolution.approval(True, args=edit, decided_via="store")
        assert store.claim(decided(record, first))[0]
        with sqlite3.connect(path) as db:
            db.execute("UPDATE runs SET owner_host = NULL, owner_pid = NULL")
        seen = looks[0]
        # (a whole round of the sender's wait since)
        wait_until(lambda: looks[0] >= seen + 2 or not thread.is_alive(), None, "a round")
        assert told == []  # (it was told "approved" here)
        with sqlite3.connect(path) as db:  # the run's answer: refused, as it came second
            db.execute(
                "UPDATE decision_requests SET status = 'refused', answer = ?",
                ("This approval is already approved; a second decision is refused.",),
            )
    finally:
        thread.join(30)
        sender.close()
        store.close()
    assert told == ["This approval is already approved; a second decision is refused."]


def test_an_edit_taken_by_a_run_that_ended_unanswered_is_not_told_it_approved(tmp_path):
    """The same edit sent by two people: the run's process took both, answered the first
    ("done": it made the decision) and ended before answering the second; its sender, once no
    process ran the run, took the recorded decision, its very edit, for its own (a CI run:
    two of six senders told "approved")."""
    import sqlite3

    from anvia_notebook.decisions import Resolution, decided
    from anvia_notebook.records import ApprovalRecord
    from anvia_notebook.run_state import RunState

    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    store.create_run(RunState(run_id="run_1", agent_id="a", status="running"), "send")
    ids = {"id": "approval_1", "run_id": "run_1", "tool_call_id": "c1", "internal_call_id": "i1"}
    record = ApprovalRecord(**ids, agent_id="a", tool_name="send", args={"account": "a1"})
    store.open_interaction(record)
    edit = {"account": "b2"}
    with sqlite3.connect(path) as db:  # the first sender's, answered: it made the decision
        db.execute(
            "INSERT INTO decision_requests (id, interaction_id, decision, status, created_at) "
            "VALUES ('decide_first', 'approval_1', ?, 'done', '2026-01-01T00:00:00+00:00')",
            (json.dumps({"approved": True, "args": edit}),),
        )
    told: list[Any] = []
    sender = RunStore(path)

    def send() -> None:
        try:
            told.append(sender.approve("run_1", "approval_1", args=edit).status)
        except DecisionRefusedError as error:
            told.append(str(error))

    thread = threading.Thread(target=send)
    thread.start()
    try:
        with sqlite3.connect(path) as db:
            second = "SELECT 1 FROM decision_requests WHERE id <> 'decide_first'"
            wait_until(lambda: db.execute(second).fetchall(), None, "the second request")
            db.execute("UPDATE decision_requests SET status = 'taken' WHERE status = 'queued'")
        first = Resolution.approval(True, args=edit, decided_via="store")
        assert store.claim(decided(record, first))[0]
        with sqlite3.connect(path) as db:  # the run's process has ended
            db.execute("UPDATE runs SET owner_pid = 999999999")
    finally:
        thread.join(60)
        sender.close()
        store.close()
    assert told == ["This approval is already approved; a second decision is refused."]


async def test_show_prints_arguments_as_written(store_location, capsys):
    """Arguments in Cyrillic or Chinese were printed as \\u escapes: an operator could not check
    a payee before approving."""
    pay = create_tool(
        name="pay",
        description="Pay someone.",
        input=Payment,
        execute=lambda args, ctx: "paid",
        approval=ToolApproval(reason="Money leaves."),
    )
    arguments = {"payee": "Ирина Петрова", "memo": "租金 😀"}
    agent = (
        AgentBuilder("payer", QueueModel([call("pay", arguments), "Paid."]))
        .tools([pay])
        .human_input(StoreHumanInput())
        .build()
    )
    run = agent.prompt("pay the rent").store(store_location).start()
    store = RunStore(store_location)
    try:
        for _ in range(500):
            if store.pending(run.run_id):
                break
            await asyncio.sleep(0.01)
        assert cli(["--store", store_location, "show", run.run_id]) == 0
        shown = capsys.readouterr().out
        assert 'pay {"payee": "Ирина Петрова", "memo": "租金 😀"}' in shown
        assert "\\u" not in shown
    finally:
        run.cancel("done looking")
        with pytest.raises(PromptCancelledError):
            await asyncio.wait_for(run.wait(), 10)
        store.close()


@pytest.mark.parametrize("command", [["runs"], ["show", "run_x"], ["approve", "run_x", "a_1"]])
def test_an_empty_store_location_is_refused(store_location, monkeypatch, capsys, command):
    """``--store "$TEAM_STORE"`` with the variable unset acted on the default store."""
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", store_location)
    assert cli(["--store", "", *command]) == 2
    assert "--store was given an empty location" in capsys.readouterr().err
