"""A run store kept busy by other processes never makes a run give up on it.

A child process steers (``RunStore.steer``) into another run and decides (``RunStore.approve``)
the run's approvals in a tight loop, while a run in this process goes through many turns with tool
calls and approvals. The run must be stored to its end, with no "Could not write to the run
store" warning: contention is waited out, only a real failure (a store locked and left locked, a
damaged or vanished file) makes a run go on unstored. On SQLite the run's process waits a short
busy timeout here (0.5 s instead of 5 s), so a starved writer shows at once.
"""

from __future__ import annotations

import warnings

import pytest
from child_processes import child_environ, kill, start_python

from anvia_notebook import AgentBuilder, RunStore, StoreHumanInput, ToolApproval, create_tool
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
