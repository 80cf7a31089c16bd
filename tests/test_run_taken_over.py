"""A run that another machine resumed while its owner still lived (the owner slept past its
lease, or the other machine's clock ran ahead): the owner must stop, not run the tool too.

Before, both processes went on: one approval, and the tool ran twice (once in each)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket

import pytest
import store_agents
from child_processes import child_environ, kill, start_python, wait_until
from store_agents import effects

from anvia_notebook import RunStore
from anvia_notebook.store import _owner

pytestmark = pytest.mark.timeout(120)


async def test_an_owner_whose_run_another_machine_resumed_stops_and_the_tool_runs_once(
    store_location, tmp_path, monkeypatch
):
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    env = child_environ()
    store = RunStore(store_location)
    child = start_python("import store_agents; store_agents.run('approval')", env)
    try:
        [pending] = wait_until(lambda: store.pending(), child, "the approval")
        os.kill(child.pid, signal.SIGSTOP)  # the owner's machine sleeps...
        # ...past its lease, as another machine sees it (its last heartbeat is long ago)
        store._q("UPDATE runs SET heartbeat_at = 0 WHERE run_id = ?", (pending.run_id,))
        monkeypatch.setattr(socket, "gethostname", lambda: "another-machine")
        monkeypatch.setattr(_owner, "_THIS", None)
        run = store_agents.agent("approval").resume(pending.run_id).start()
        os.kill(child.pid, signal.SIGCONT)  # the owner wakes up
        store.approve(pending.run_id, pending.id)
        response = await asyncio.wait_for(run.wait(), 60)
        _, err = await asyncio.to_thread(child.communicate, timeout=60)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            kill(child)
    assert response.output.startswith("Result:")
    assert effects() == ["started a1 5", "done a1 5"]  # once, here
    assert child.returncode != 0
    assert f"Run '{pending.run_id}' was resumed by process {os.getpid()} on another-machine" in err
