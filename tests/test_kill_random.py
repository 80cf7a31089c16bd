"""SIGKILL at random points of 50 runs with approvals, then resume: no tool call executed twice,
no approved call lost, no call executed without an approve decision.

Five runs at a time, each in its own process and store; the test is the operator (it approves or
rejects at random through the store) and kills each process at a random moment.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import store_agents

from anvia_notebook import RunStore

TESTS = Path(__file__).parent
RUNS = 50
AT_ONCE = 5
pytestmark = pytest.mark.timeout(600)


def decide_some(store: RunStore, rng: random.Random, decisions: dict[str, bool]) -> None:
    for record in store.pending():
        if record.id in decisions or rng.random() < 0.3:
            continue  # leave some pending when the process dies
        approve = rng.random() < 0.7
        decisions[record.id] = approve
        try:
            if approve:
                store.approve(record.run_id, record.id)
            else:
                store.reject(record.run_id, record.id)
        except Exception:
            decisions.pop(record.id)


def one_life(folder: Path, rng: random.Random) -> tuple[RunStore, dict[str, bool]]:
    """Start a process, decide at random, kill it with SIGKILL at a random moment."""
    env = {
        **os.environ,
        "ANVIA_NOTEBOOK_STORE": str(folder / "runs.sqlite"),
        "ANVIA_TEST_EFFECTS": str(folder / "effects.txt"),
        "PYTHONPATH": str(TESTS),
    }
    child = subprocess.Popen(
        [sys.executable, "-c", "import store_agents; store_agents.run_stepper()"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout.readline().strip() == "started"
    decisions: dict[str, bool] = {}
    deadline = time.monotonic() + rng.uniform(0.0, 1.5)
    store = None
    while time.monotonic() < deadline and child.poll() is None:
        if store is None and (folder / "runs.sqlite").exists():
            store = RunStore(folder / "runs.sqlite")
        if store is not None:
            decide_some(store, rng, decisions)
        time.sleep(rng.uniform(0.0, 0.05))
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    child.stdout.close()
    return store or RunStore(folder / "runs.sqlite"), decisions


async def resume_and_finish(store: RunStore, rng: random.Random, decisions: dict[str, bool]):
    summaries = store.runs()
    if not summaries:
        return None  # killed before the run was even recorded
    [summary] = summaries
    if summary.status == "success":
        return store.get(summary.run_id)
    assert summary.status == "interrupted", summary
    run = store_agents.stepper().resume(summary.run_id, store).create_run()
    run.start()
    while not run.done:
        for record in run.interactions.pending:
            approve = rng.random() < 0.7
            decisions[record.id] = approve
            run.interactions.decide(record.id, approved=approve)
        await asyncio.sleep(0.01)
    await run.wait()
    return store.get(summary.run_id)


def check(folder: Path, state, decisions: dict[str, bool]) -> None:
    effects = folder / "effects.txt"
    executed = effects.read_text().split("\n")[:-1] if effects.exists() else []
    calls = [line.split()[1] for line in executed]
    assert len(calls) == len(set(calls)), f"a call ran twice: {executed}"
    if state is None:
        assert not calls
        return
    assert state.status == "success"
    results = [r for m in state.messages for r in m.tool_results]
    assert not any(r.content.startswith("ToolCallError") for r in results), results
    approved = {a.tool_call_id for a in state.approvals.values() if a.status == "approved"}
    for call_id in calls:
        assert call_id in approved, f"{call_id} ran without an approve decision"
    told = {r.tool_call_id: r.content for r in results}
    for call_id in approved:
        if call_id not in calls:
            # Killed between the write that records the call as started (made before the tool
            # runs, so that it never runs twice) and the tool's first line: resumed, the run
            # cannot know whether it ran and tells the model so, as it must. Anything else is
            # an approved call lost.
            assert told.get(call_id, "").startswith("ToolCallInterrupted"), (
                f"approved {call_id} never ran: {told.get(call_id)!r}"
            )
    for record in state.approvals.values():
        if record.id in decisions:  # what the operator decided is what was recorded
            expected = "approved" if decisions[record.id] else "rejected"
            assert record.status == expected, (record.id, record.status, expected)


def test_sigkill_at_random_points_of_50_runs(tmp_path, monkeypatch):
    rng = random.Random(20261130)
    for batch in range(RUNS // AT_ONCE):
        folders = [tmp_path / f"run{batch}-{i}" for i in range(AT_ONCE)]
        for folder in folders:
            folder.mkdir()
        lives = [one_life(folder, random.Random(rng.random())) for folder in folders]
        for folder, (store, decisions) in zip(folders, lives, strict=True):
            monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(folder / "effects.txt"))
            state = asyncio.run(resume_and_finish(store, rng, decisions))
            check(folder, state, decisions)
