"""A run that another machine resumed while its owner still lived (the owner slept past its
lease, or the other machine's clock ran ahead): the owner must stop, not run the tool too.

Before, both processes went on: one approval, and the tool ran twice (once in each)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time

import pytest
import store_agents
from child_processes import child_environ, kill, start_python, stop_outside_a_write, wait_until
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
        stop_outside_a_write(child, store_location)  # the owner's machine sleeps...
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


async def another_machine_leaves_the_live_run(store_location, tmp_path, monkeypatch, pretend):
    """A run of another process waits for its approval; ``pretend`` makes this process look
    like another machine: it sees the run waiting, cannot resume it, and its approval is carried
    out by the owner (the tool runs once)."""
    from anvia_notebook import RunOwnedError

    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    child = start_python("import store_agents; store_agents.run('approval')", child_environ())
    try:
        [pending] = wait_until(lambda: RunStore(store_location).pending(), child, "the approval")
        pretend()
        monkeypatch.setattr(_owner, "_THIS", None)
        store = RunStore(store_location)  # (opened on "this machine")
        [summary] = store.runs()
        assert summary.status == "waiting"
        with pytest.raises(RunOwnedError):
            store_agents.agent("approval").resume(pending.run_id).start()
        store.approve(pending.run_id, pending.id)
        out, err = await asyncio.to_thread(child.communicate, timeout=60)
    finally:
        kill(child)
    assert child.returncode == 0, err
    assert "output: Result:" in out
    assert effects() == ["started a1 5", "done a1 5"]


@pytest.mark.parametrize("store_location", ["postgresql"], indirect=True)
@pytest.mark.parametrize("ahead", [120.0, -120.0])
async def test_a_machine_whose_clock_differs_does_not_take_a_live_run(
    store_location, tmp_path, monkeypatch, ahead
):
    """Machines sharing a PostgreSQL store judge heartbeats by the server's clock: one whose
    clock runs two minutes ahead of the owner's (or the owner's behind) sees a live owner, not
    a gone one (before: the run was taken from its live owner, which then stopped)."""

    def pretend():
        real_time = time.time
        monkeypatch.setattr(time, "time", lambda: real_time() + ahead)
        monkeypatch.setattr(socket, "gethostname", lambda: "another-machine")

    await another_machine_leaves_the_live_run(store_location, tmp_path, monkeypatch, pretend)


@pytest.mark.parametrize("store_location", ["postgresql"], indirect=True)
async def test_a_machine_with_the_same_host_name_does_not_take_a_live_run(
    store_location, tmp_path, monkeypatch
):
    """Two machines (or containers with their own process ids) of one host name sharing a
    team store (default names such as "MacBook-Pro", "jupyter", containers on the host's
    network): the other machine judged the owner by its process id, not alive there, and took
    the live run from it; with the same process id it took the run for its own."""

    def pretend():  # the same host name, its own processes (none of this one's ids runs)
        monkeypatch.setattr(_owner, "_machine", lambda: "another machine", raising=False)
        monkeypatch.setattr(_owner, "_pid_alive", lambda pid: False)

    await another_machine_leaves_the_live_run(store_location, tmp_path, monkeypatch, pretend)


@pytest.mark.parametrize("store_location", ["postgresql"], indirect=True)
def test_a_step_of_this_machine_s_clock_is_measured_again_at_once(store_location, monkeypatch):
    """The offset to the server's clock is kept a minute, unless this machine's clock was set
    or stepped meanwhile (NTP correcting it): then heartbeats would be written that far off."""
    import psycopg

    store = RunStore(store_location)
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 120.0)
    assert abs(_owner.store_clock(store._backend) - real_time()) < 5
    monkeypatch.setattr(time, "time", real_time)  # the clock is corrected, by 120 s
    with psycopg.connect(store_location) as db:
        [(server,)] = db.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8")
    assert abs(_owner.store_clock(store._backend) - server) < 5
    store.close()
