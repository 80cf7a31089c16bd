"""A run store kept busy by other processes never makes a run give up on it.

A child process steers (``RunStore.steer``) into another run and decides (``RunStore.approve``)
the run's approvals in a tight loop, while a run in this process goes through many turns with tool
calls and approvals. The run must be stored to its end, with no "Could not write to the run
store" warning: contention is waited out, only a real failure (a store locked and left locked, a
damaged or vanished file) makes a run go on unstored. On SQLite the run's process waits a short
busy timeout here (0.5 s instead of 5 s), so a starved writer shows at once.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sqlite3
import threading
import time
import warnings
from typing import Any

import pytest
from child_processes import child_environ, kill, start_python

from anvia_notebook import (
    AgentBuilder,
    DecisionRefusedError,
    RunStore,
    RunStoreError,
    StoreHumanInput,
    ToolApproval,
    create_tool,
)
from anvia_notebook.models import ModelResponse, QueueModel
from anvia_notebook.run_state import RunState
from anvia_notebook.store import _sqlite

from helpers import AddInput, call, make_add_tool

pytestmark = pytest.mark.timeout(120)

TURNS = 24
#: Every this many turns, the call needs an approval (decided by the child).
PROTECTED_EVERY = 6

#: The child: steers into ``target`` without a pause; every few messages, approves whatever
#: approval is pending in the store. It says "ready" once it has written (the loop is on).
CHILD = """
import sys
from anvia_notebook import DecisionRefusedError, RunStore

store = RunStore({location!r})
store.steer({target!r}, "one more thing")
print("ready", flush=True)
count = 0
while True:
    store.steer({target!r}, "one more thing")
    count += 1
    if count % 8 == 0:
        for record in store.pending():
            try:
                store.approve(record.run_id, record.id)
            except DecisionRefusedError:
                pass
"""


def an_interrupted_run(location: str) -> str:
    """A stored run whose process is gone: it keeps the messages steered into it."""
    store = RunStore(location)
    store.create_run(RunState(run_id="run_elsewhere", agent_id="other", status="running"), "x")
    store.release_run("run_elsewhere")
    store.close()
    return "run_elsewhere"


def many_turns_agent():
    def pay(args: AddInput, ctx: object) -> int:
        paid.append((args.x, args.y))
        return args.x + args.y

    paid: list[tuple[int, int]] = []
    protected = create_tool(
        name="pay",
        description="Pay a sum.",
        input=AddInput,
        execute=pay,
        approval=ToolApproval(reason="money"),
    )
    add = make_add_tool()
    replies = [
        call("pay" if turn % PROTECTED_EVERY == 0 else "add", {"x": turn, "y": 1}, id=f"c{turn}")
        for turn in range(TURNS)
    ]
    model = QueueModel([*replies, ModelResponse(text="all done")])
    agent = (
        AgentBuilder("busy", model)
        .tool(add)
        .tool(protected)
        .human_input(StoreHumanInput(timeout=15))
        .default_max_turns(TURNS + 5)
        .build()
    )
    return agent, add, paid


def test_a_run_is_stored_to_its_end_while_another_process_writes_without_pause(
    store_location, monkeypatch
):
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.5)
    target = an_interrupted_run(store_location)
    child = start_python(
        CHILD.format(location=store_location, target=target), child_environ(), stdin=None
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.stderr.read()  # type: ignore[union-attr]
        store = RunStore(store_location)
        agent, add, paid = many_turns_agent()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            response = agent.prompt("work").store(store).send_sync()
        steered_meanwhile = len(store.queued_steering(target))
        assert child.poll() is None, child.stderr.read()  # type: ignore[union-attr]
    finally:
        kill(child)
    assert response.output == "all done"
    assert len(add.calls) + len(paid) == TURNS
    assert len(paid) == TURNS // PROTECTED_EVERY
    assert [str(w.message) for w in caught if "run store" in str(w.message)] == []
    assert steered_meanwhile > TURNS  # the child wrote all along
    stored = store.get(response.run_id)
    assert stored.status == "success" and stored.output == "all done"
    assert [r.status for r in stored.approvals.values()] == ["approved"] * len(paid)
    assert all(r.decided_via == "store" for r in stored.approvals.values())
    assert [e.type for e in store.events(response.run_id)][-1] == "final"
    assert store.status(response.run_id) == "success"
    store.close()


def committing_locker(path, every: float):
    """Another program that keeps the write lock, committing every ``every`` seconds and taking
    it again at once, until ``stop()``; it has the lock when this returns."""
    locker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")
    stopped = threading.Event()

    def hold() -> None:
        count = 0
        while not stopped.wait(every):
            count += 1
            locker.execute("INSERT OR REPLACE INTO meta VALUES ('other_program', ?)", (str(count),))
            locker.execute("COMMIT")
            locker.execute("BEGIN IMMEDIATE")
        locker.execute("COMMIT")
        locker.close()

    thread = threading.Thread(target=hold)
    thread.start()

    def stop() -> None:
        stopped.set()
        thread.join()

    return stop


def test_a_writer_waits_past_its_busy_timeout_while_other_programs_keep_committing(
    store_path, monkeypatch
):
    """The lock is never free for long, but others finish writing: that is contention, waited
    out (the busy timeout, 0.3 s here, only bounds a wait during which nobody commits)."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.3)
    store = RunStore(store_path)
    stop = committing_locker(store_path, every=0.1)
    releaser = threading.Timer(1.0, stop)  # (the other program stops after ten commits)
    releaser.start()
    try:
        store.save_session("s1", "agent", "written while another program writes", [])
    finally:
        releaser.join()
        stop()
    assert store.session("s1").title == "written while another program writes"
    store.close()


class FakeClock:
    """``time`` for the store's SQLite module: each pause between two looks at the busy file
    moves the clock on by half a second, at once."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += 0.5


@pytest.mark.parametrize("others_commit", [False, True], ids=["lock held", "contention"])
def test_giving_up_on_a_busy_store_says_what_happened(store_path, monkeypatch, others_commit):
    """A lock held by a program that never finishes (no commit for the whole busy timeout), or
    contention past its limit: the error says which, and how long it waited."""
    store = RunStore(store_path)
    clock = FakeClock()
    versions = itertools.count()
    monkeypatch.setattr(_sqlite, "time", clock)
    monkeypatch.setattr(_sqlite, "CONTENDED_LIMIT", 30.0)
    if others_commit:  # (each look at the file finds that another connection has committed)
        monkeypatch.setattr(_sqlite.SQLiteBackend, "_version", lambda self: next(versions))
    locker = sqlite3.connect(store_path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(RunStoreError) as raised:
            store.save_session("s1", "agent", "title", [])
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    text = str(raised.value)
    assert text.startswith(f"The run store {store.location} is locked by another program (waited ")
    if others_commit:
        assert re.search(
            r"\(waited 30\.\d s while other programs kept writing, the last 0\.\d s", text
        )
    else:
        assert re.search(r"\(waited 5\.\d s\): database is locked\. Try again", text), text
    store.save_session("s1", "agent", "title", [])  # (free again)
    store.close()


def test_a_lock_that_is_never_released_makes_the_run_go_on_unstored_and_say_so(
    store_path, monkeypatch
):
    """A real failure, not contention: another program takes the write lock while the tool runs
    and keeps it (no commit for the whole busy timeout, 0.3 s here). The run ends in memory and
    its one warning says why and what the store keeps."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.3)
    store = RunStore(store_path)
    locker = sqlite3.connect(store_path, isolation_level=None, check_same_thread=False)

    def lock_the_store(args: AddInput, ctx: object) -> int:
        locker.execute("BEGIN IMMEDIATE")
        return args.x + args.y

    tool = create_tool(name="add", description="Add.", input=AddInput, execute=lock_the_store)
    model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="3")])
    agent = AgentBuilder("a", model).tool(tool).build()
    response, warning = run_warned(agent.prompt("add").store(store), locker)
    assert response.output == "3"
    assert warning.startswith(
        f"Could not write to the run store {store.location}: The run store {store.location} "
        "is locked by another program (waited 0.3 s): database is locked. Try again once that "
        "program has finished writing, or close it. This run goes on in memory only: nothing "
        "it does from here on is stored."
    ), warning
    assert "lists it as failed once it can be written again" in warning
    # The lock given back, the run's row is marked ended: left "running" as before the tool
    # ran, it was listed as interrupted once this process ended, and a resume ran the tool
    # (in a probe, a transfer that needed approval) a second time.
    deadline = time.monotonic() + 30
    while (state := store.get(response.run_id)).status != "error":
        assert state.status == "running" and time.monotonic() < deadline
        time.sleep(0.05)
    assert state.error is not None and state.error.startswith(
        "The run store could not be written during the run (The run store "
    )
    assert "resuming it from here would do that again" in state.error
    with pytest.raises(RunStoreError, match="has already ended \\(error\\)"):
        agent.resume(response.run_id)
    assert [run.status for run in store.runs()] == ["error"]
    store.close()


def test_a_run_marked_failed_closes_what_it_left_open_in_the_store(store_path, monkeypatch):
    """Its approval was decided while another program held the store (the decision could not
    be written): marked failed, the run kept that approval pending in the store, listed it as
    waiting, and took a decision for it from the command line."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.3)
    store = RunStore(store_path)
    locker = sqlite3.connect(store_path, isolation_level=None, check_same_thread=False)

    def decide_while_locked(request: object) -> bool:
        locker.execute("BEGIN IMMEDIATE")
        return True

    tool = make_add_tool(approval=ToolApproval(reason="check"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="3")])
    agent = AgentBuilder("a", model).tool(tool).approvals(decide_while_locked).build()
    response, warning = run_warned(agent.prompt("add").store(store), locker)
    assert response.output == "3" and tool.calls == [(1, 2)]
    assert "This run goes on in memory only" in warning
    deadline = time.monotonic() + 30
    while store.get(response.run_id).status != "error":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    [approval] = store.interactions(response.run_id)
    assert (approval.status, approval.decided_by) == ("cancelled", "runtime")
    # (it was approved where the run went on: the record does not say it never was)
    assert approval.decision_reason == (
        "The run went on without the run store: what became of this is not stored."
    )
    assert store.pending(response.run_id) == []
    assert [(run.status, run.pending) for run in store.runs()] == [("error", 0)]
    with pytest.raises(DecisionRefusedError):
        store.approve(response.run_id, approval.id)
    store.close()


def test_a_run_marked_failed_leaves_its_sub_agents_runs_to_this_process(store_path):
    """A sub-agent's run still going on here was cancelled with its top-level run's marking
    (its next write then said another process had taken it over), and a damaged one stopped
    the marking for good; a damaged top-level state is marked too."""
    from anvia_notebook.messages import Message

    store = RunStore(store_path)
    top = RunState(run_id="run_top", agent_id="lead", status="running", messages=[])
    sub = RunState(
        run_id="run_sub",
        agent_id="helper",
        status="running",
        messages=[Message.user("go")],
        parent_run_id="run_top",
        parent_call_id="c1",
        path=["lead", "helper"],
    )
    broken = RunState(run_id="run_broken", agent_id="other", status="running", messages=[])
    for state in (top, sub, broken):
        store.create_run(state, "go")
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE runs SET state = '{damaged' WHERE run_id = 'run_broken'")
    store.left_behind("run_top", "the store failed")
    store.left_behind("run_broken", "the store failed")
    deadline = time.monotonic() + 30
    while {run.run_id: run.status for run in store.runs()} != {
        "run_top": "error",
        "run_sub": "running",
        "run_broken": "error",
    }:
        assert time.monotonic() < deadline, store.runs()
        time.sleep(0.05)
    sub.messages.append(Message.assistant("still working"))
    store.save_run("run_sub", sub, [], 0, [])  # (no RunTakenOverError)
    assert store.get("run_sub").status == "running"
    store.close()


async def test_a_run_going_on_without_its_store_keeps_its_approval_waiting(store_path):
    """The store's marking of the run as failed closed the approval left open there, and the
    run, still watching the store, took that for a decision: its approval was cancelled while
    it waited in memory, and an approval given afterwards ran nothing."""
    store = RunStore(store_path)
    go = asyncio.Event()

    async def decide_later(request: object) -> bool:
        await go.wait()
        return True

    tool = make_add_tool(approval=ToolApproval(reason="check"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="3")])
    agent = AgentBuilder("a", model).tool(tool).approvals(decide_later).build()
    run = agent.prompt("add").store(store).start()
    deadline = time.monotonic() + 30
    while not run.interactions.pending:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    with pytest.warns(RuntimeWarning, match="goes on in memory only"):
        run.store_failed(RunStoreError("the store is locked by another program"))
    while store.get(run.run_id).status != "error":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    [closed] = store.interactions(run.run_id)
    assert closed.status == "cancelled"  # (in the store)
    ends = time.monotonic() + 1.5  # (the watcher's rounds: 0.2 s each)
    while time.monotonic() < ends:
        assert [r.status for r in run.interactions.pending] == ["pending"]
        await asyncio.sleep(0.05)
    go.set()
    response = await asyncio.wait_for(run.wait(), 10)
    assert response.output == "3" and tool.calls == [(1, 2)]
    store.close()


def test_a_run_marked_failed_ends_sub_agents_runs_an_earlier_process_left(store_path):
    """Its sub-agent's run left by an earlier process (not taken up again) stayed listed, with
    an approval that took decisions, under a run that can no longer be resumed; a damaged run
    state kept its approvals open too."""
    from anvia_notebook.messages import Message
    from anvia_notebook.records import ApprovalRecord

    store = RunStore(store_path)
    top = RunState(run_id="run_top", agent_id="lead", status="running", messages=[])
    sub = RunState(
        run_id="run_sub",
        agent_id="helper",
        status="waiting",
        messages=[Message.user("go")],
        parent_run_id="run_top",
        parent_call_id="c1",
        path=["lead", "helper"],
    )
    broken = RunState(run_id="run_broken", agent_id="other", status="running", messages=[])
    for state in (top, sub, broken):
        store.create_run(state, "go")
    for run_id, agent_id in (("run_sub", "helper"), ("run_broken", "other")):
        ids = {"run_id": run_id, "tool_call_id": "c9", "internal_call_id": f"i_{run_id}"}
        store.open_interaction(
            ApprovalRecord(
                id=f"approval_{run_id}", **ids, agent_id=agent_id, tool_name="send", args={}
            )
        )
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE runs SET owner_pid = 999999999 WHERE run_id = 'run_sub'")
        db.execute("UPDATE runs SET state = '{damaged' WHERE run_id = 'run_broken'")
    store.left_behind("run_top", "the store failed")
    store.left_behind("run_broken", "the store failed")
    deadline = time.monotonic() + 30
    while {run.run_id: run.status for run in store.runs()} != {
        "run_top": "error",
        "run_sub": "cancelled",
        "run_broken": "error",
    }:
        assert time.monotonic() < deadline, store.runs()
        time.sleep(0.05)
    assert store.pending() == []
    for run_id in ("run_sub", "run_broken"):
        with pytest.raises(DecisionRefusedError, match="already cancelled"):
            store.reject(run_id, f"approval_{run_id}")
    store.close()


def run_warned(request: Any, locker: sqlite3.Connection) -> tuple[Any, str]:
    """``request`` sent (``locker``'s lock given back and closed after it), and the one warning
    about the run store it gave."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            response = request.send_sync()
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    [warning] = [str(w.message) for w in caught if "run store" in str(w.message)]
    return response, warning


def test_a_run_the_store_could_not_even_record_is_said_to_be_stored_not_at_all(
    store_path, monkeypatch
):
    """The store locked by another program from before the run began: the warning said the
    store kept the run "as it was before (listed as running while this kernel lives ...)";
    nothing of it was ever written."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.3)
    store = RunStore(store_path)
    locker = sqlite3.connect(store_path, isolation_level=None, check_same_thread=False)
    agent = AgentBuilder("a", QueueModel([ModelResponse(text="hello")])).build()
    locker.execute("BEGIN IMMEDIATE")
    response, warning = run_warned(agent.prompt("hi").store(store), locker)
    assert response.output == "hello"
    assert warning.endswith("Nothing of it is stored: the store does not list it."), warning
    assert "as it was before" not in warning
    assert store.runs() == []
    store.close()


def test_a_run_recorded_before_its_store_failed_is_not_said_to_be_stored_not_at_all(
    store_path, monkeypatch
):
    """The run's row was written, then the store failed (its background thread could not
    start): the warning said the store did not list a run it listed."""
    store = RunStore(store_path)

    def no_thread(run_id: str) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(store, "_own", no_thread)
    agent = AgentBuilder("a", QueueModel([ModelResponse(text="hello")])).build()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        response = agent.prompt("hi").store(store).send_sync()
    assert response.output == "hello"
    [warning] = [str(w.message) for w in caught if "run store" in str(w.message)]
    assert "Nothing of it is stored" not in warning
    assert "The store keeps it as it was before" in warning
    assert [run.run_id for run in store.runs()] == [response.run_id]
    store.close()
