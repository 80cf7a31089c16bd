"""Edited arguments decided in another process (the command line, ``RunStore.approve``) while
the run's own process is alive are checked there, by the run, with the tool's own model (a rule
its JSON Schema cannot say, such as a validator), before anything is recorded: a refused edit
exits 1 with the run's words and leaves the approval pending, in the store and in the run; a
valid one is recorded once and the tool runs once, with it. When the run's process dies while
the decision waits for it, nothing is recorded: the edit waits for the run, which checks it when
it is resumed.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import confirm_agents
import pytest
from child_processes import child_environ, kill, start_python, stop_outside_a_write, wait_until

from anvia_notebook import RunStore

from helpers import ran_with

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(180)

REFUSED = "The edited arguments are not valid for pay: "
RULE = "the amount must be even"
TOLD_REJECTED = "Edited arguments were rejected"


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(path))
    return path


def command_line(location: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", location, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


async def waiting(store: RunStore, *, lead: bool = False) -> tuple[Any, Any]:
    """A run of this process waiting for the approval of ``pay`` (2), and that approval."""
    run = confirm_agents.agent(lead).prompt("pay 2").start()
    for _ in range(3000):
        if pending := store.pending(run.run_id):
            return run, pending[0]
        await asyncio.sleep(0.01)
    raise AssertionError("nothing pending")


def told_the_model(store: RunStore, run_id: str) -> list[str]:
    """Every tool result of the run and of its sub-agents' runs, as stored."""
    return [
        result.content
        for each in store.run_tree(run_id)
        for message in store.get(each).messages
        for result in message.tool_results
    ]


async def test_the_command_line_s_edit_the_tool_refuses_is_refused_in_the_run_s_words(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    run, approval = await waiting(store)
    refused = await asyncio.to_thread(
        command_line, store_location, "approve", run.run_id, approval.id, "--args", '{"amount": 3}'
    )
    assert (refused.returncode, refused.stdout) == (1, ""), refused.stderr
    assert REFUSED in refused.stderr and RULE in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert [p.id for p in store.pending(run.run_id)] == [approval.id]
    assert [p.id for p in run.interactions.pending] == [approval.id]
    approved = await asyncio.to_thread(
        command_line, store_location, "approve", run.run_id, approval.id, "--args", '{"amount": 4}'
    )
    assert approved.returncode == 0, approved.stderr
    assert f"Approved {approval.id}." in approved.stdout
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.output == f"told: {ran_with('pay', {'amount': 4}, 'paid 4')}"
    assert confirm_agents.effects() == ["paid 4"]
    [stored] = store.interactions(run.run_id)
    assert (stored.status, stored.edited_args, stored.decided_via) == (
        "approved",
        {"amount": 4},
        "cli",
    )
    assert run.state.approvals[approval.id] == stored
    assert not any(TOLD_REJECTED in text for text in told_the_model(store, run.run_id))
    store.close()


def decide_in_child(
    location: str, verb: str, run_id: str, item_id: str, go: Path | None = None, **given: Any
) -> subprocess.Popen[str]:
    """Another process deciding with ``RunStore.<verb>`` (once the file ``go`` exists, when
    given): it prints ``ok STATUS EDITED_ARGS`` or ``refused WORDS``."""
    code = f"""
import json, os, time
from anvia_notebook import DecisionRefusedError, RunStore
store = RunStore({location!r})
while {str(go) if go else ""!r} and not os.path.exists({str(go) if go else ""!r}):
    time.sleep(0.002)
try:
    record = getattr(store, {verb!r})({run_id!r}, {item_id!r}, **{given!r})
    print("ok", record.status, json.dumps(record.edited_args), flush=True)
except DecisionRefusedError as error:
    print("refused", error, flush=True)
"""
    return start_python(code, child_environ())


def said(child: subprocess.Popen[str]) -> str:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return out.strip()


async def test_run_store_approve_in_another_process_is_decided_by_the_run(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    run, approval = await waiting(store)
    refused = decide_in_child(
        store_location, "approve", run.run_id, approval.id, args={"amount": 3}
    )
    words = await asyncio.to_thread(said, refused)
    assert words.startswith(f"refused {REFUSED}") and RULE in words, words
    assert [p.id for p in store.pending(run.run_id)] == [approval.id]
    assert [p.id for p in run.interactions.pending] == [approval.id]
    approved = decide_in_child(
        store_location, "approve", run.run_id, approval.id, args={"amount": 6}
    )
    assert await asyncio.to_thread(said, approved) == 'ok approved {"amount": 6}'
    assert (
        await asyncio.wait_for(run.wait(), 30)
    ).output == f"told: {ran_with('pay', {'amount': 6}, 'paid 6')}"
    assert confirm_agents.effects() == ["paid 6"]
    assert not any(TOLD_REJECTED in text for text in told_the_model(store, run.run_id))
    store.close()


@pytest.mark.parametrize("head_start", [False, True])
async def test_an_edited_approval_racing_a_rejection_from_a_third_process_has_one_winner(
    store_location: str, effects: Path, tmp_path: Path, head_start: bool
) -> None:
    """Sent together (the rejection, which needs no run, mostly wins), or the rejection once
    the run has taken the approval (it meets the run's claim, which mostly wins)."""
    store = RunStore(store_location)
    run, approval = await waiting(store)
    go, then = tmp_path / "go", tmp_path / "then"
    approving = decide_in_child(
        store_location, "approve", run.run_id, approval.id, go, args={"amount": 8}
    )
    rejecting = decide_in_child(
        store_location, "reject", run.run_id, approval.id, then, reason="no"
    )
    go.touch()
    if head_start:
        taken = lambda: store._q("SELECT id FROM decision_requests WHERE status <> 'queued'")  # noqa: E731
        await asyncio.to_thread(wait_until, taken, approving, "the run to take the approval")
    then.touch()
    approved, rejected = await asyncio.gather(
        asyncio.to_thread(said, approving), asyncio.to_thread(said, rejecting)
    )
    response = await asyncio.wait_for(run.wait(), 30)
    [stored] = store.interactions(run.run_id)
    assert run.state.approvals[approval.id] == stored
    if stored.status == "approved":
        assert approved == 'ok approved {"amount": 8}'
        assert (
            rejected == "refused This approval is already approved; a second decision is refused."
        )
        assert confirm_agents.effects() == ["paid 8"]
        assert response.output == f"told: {ran_with('pay', {'amount': 8}, 'paid 8')}"
    else:
        assert stored.status == "rejected"
        assert rejected == "ok rejected null"
        assert (
            approved == "refused This approval is already rejected; a second decision is refused."
        )
        assert confirm_agents.effects() == []
        assert response.output == "told: no"
    store.close()


def start_owner(location: str, effects: Path, *, lead: bool = False) -> subprocess.Popen[str]:
    """Another process running the agent, until its approval waits."""
    environ = child_environ({**os.environ, "ANVIA_NOTEBOOK_STORE": location})
    environ["ANVIA_TEST_EFFECTS"] = str(effects)
    return start_python(f"import confirm_agents; confirm_agents.run(lead={lead})", environ)


def queued_requests(store: RunStore) -> list[tuple[Any, ...]]:
    return store._q("SELECT id, status FROM decision_requests WHERE status = 'queued'")


async def stopped_owner_with_a_queued_request(
    store: RunStore, location: str, effects: Path, monkeypatch: pytest.MonkeyPatch, amount: int
) -> tuple[subprocess.Popen[str], Any, asyncio.Future[Any]]:
    """A run whose process is stopped (SIGSTOP: alive, but it cannot answer) while an approval
    with ``amount`` sent by this process waits for it; the time limit is an hour, so only the
    check that the run's process is alive can end the wait."""
    from anvia_notebook.store import _confirm

    monkeypatch.setattr(_confirm, "CONFIRM_TIMEOUT", 3600.0)
    owner = start_owner(location, effects)
    [approval] = await asyncio.to_thread(wait_until, lambda: store.pending(), owner, "the approval")
    stop_outside_a_write(owner, location)
    deciding = asyncio.ensure_future(
        asyncio.to_thread(store.approve, approval.run_id, approval.id, args={"amount": amount})
    )
    try:
        await asyncio.to_thread(wait_until, lambda: queued_requests(store), owner, "the request")
    except BaseException:
        kill(owner)  # (not left stopped; the sender then ends too)
        raise
    return owner, approval, deciding


@pytest.mark.parametrize("amount", [4, 5])
async def test_the_run_s_process_killed_while_an_edit_waits_for_it_then_resumed(
    store_location: str, effects: Path, monkeypatch: pytest.MonkeyPatch, amount: int
) -> None:
    """The sender does not hang, and records nothing: its edit waits for the run, which
    applies it when resumed (4), or refuses it in its words (5, odd) and the approval waits
    on, for a decision it accepts; the model is never told of a rejection nobody made."""
    store = RunStore(store_location)
    owner, approval, deciding = await stopped_owner_with_a_queued_request(
        store, store_location, effects, monkeypatch, amount
    )
    kill(owner)
    waiting_edit = await asyncio.wait_for(deciding, 60)
    assert (waiting_edit.status, waiting_edit.decided_by) == ("pending", None)
    assert store.edit_requests(approval.id) == [("queued", {"amount": amount}, None)]
    assert confirm_agents.effects() == []
    resumed = confirm_agents.agent().resume(approval.run_id).start()
    if amount == 5:
        for _ in range(3000):
            if store.edit_requests(approval.id)[0][0] == "refused":
                break
            await asyncio.sleep(0.02)
        [(_, _, words)] = store.edit_requests(approval.id)
        assert words.startswith(REFUSED) and RULE in words
        assert [p.id for p in store.pending(approval.run_id)] == [approval.id]
        await asyncio.to_thread(store.approve, approval.run_id, approval.id, args={"amount": 6})
    response = await asyncio.wait_for(resumed.wait(), 60)
    [stored] = store.interactions(approval.run_id)
    paid = 4 if amount == 4 else 6
    assert response.output == f"told: {ran_with('pay', {'amount': paid}, f'paid {paid}')}"
    assert confirm_agents.effects() == [f"paid {paid}"]
    assert (stored.status, stored.edited_args, stored.decided_via) == (
        "approved",
        {"amount": paid},
        "store",
    )
    assert not any(TOLD_REJECTED in text for text in told_the_model(store, approval.run_id))
    store.close()


async def test_the_run_s_process_killed_after_it_recorded_the_edit_the_sender_is_told_it_won(
    store_location: str, effects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's process took the request and recorded the approval, then died before it
    answered: the sender finds its own decision recorded, not "already approved"."""
    from anvia_notebook.decisions import Resolution, decided

    store = RunStore(store_location)
    owner, approval, deciding = await stopped_owner_with_a_queued_request(
        store, store_location, effects, monkeypatch, 4
    )
    [(request_id, _)] = queued_requests(store)
    store._q("UPDATE decision_requests SET status = 'taken' WHERE id = ?", (request_id,))
    ours = Resolution.approval(True, args={"amount": 4}, decided_via="store")
    assert store.claim(decided(approval, ours))[0]  # as the run's process would have
    kill(owner)
    record = await asyncio.wait_for(deciding, 60)
    assert (record.status, record.edited_args, record.decided_via) == (
        "approved",
        {"amount": 4},
        "store",
    )
    response = await asyncio.wait_for(confirm_agents.agent().resume(approval.run_id).send(), 60)
    assert response.output == f"told: {ran_with('pay', {'amount': 4}, 'paid 4')}"
    assert confirm_agents.effects() == ["paid 4"]
    store.close()


async def test_a_sub_agent_s_approval_decided_given_the_top_level_run_id_is_checked_by_the_run(
    store_location: str, effects: Path
) -> None:
    store = RunStore(store_location)
    run, approval = await waiting(store, lead=True)
    assert approval.run_id != run.run_id  # the sub-agent's run
    args = ("approve", run.run_id, approval.id, "--args")
    refused = await asyncio.to_thread(command_line, store_location, *args, '{"amount": 7}')
    assert refused.returncode == 1 and REFUSED in refused.stderr and RULE in refused.stderr
    assert [p.id for p in store.pending(run.run_id)] == [approval.id]
    assert [p.id for p in run.interactions.pending] == [approval.id]
    approved = await asyncio.to_thread(command_line, store_location, *args, '{"amount": 10}')
    assert approved.returncode == 0, approved.stderr
    assert (
        await asyncio.wait_for(run.wait(), 30)
    ).output == f"lead told: {ran_with('pay', {'amount': 10}, 'paid 10')}"
    assert confirm_agents.effects() == ["paid 10"]
    assert not any(TOLD_REJECTED in text for text in told_the_model(store, run.run_id))
    store.close()
