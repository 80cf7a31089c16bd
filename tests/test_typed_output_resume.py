"""The repair of a typed output is an interaction like an approval: stored, and still pending
after the process that asked was killed; the resumed run takes the fix made in the store."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import store_agents

from anvia_notebook import DecisionRefusedError, RunStore
from anvia_notebook.__main__ import main as cli

TESTS = Path(__file__).parent
pytestmark = pytest.mark.timeout(120)


def wait_until(condition, child, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if child.poll() is not None:
            raise AssertionError(f"the child ended before {what}: {child.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def start_child() -> subprocess.Popen[str]:
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join([str(TESTS), environ.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-c", "import store_agents; store_agents.run_typed()"],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a_pending_repair_survives_a_kill_and_the_fix_ends_the_resumed_run(
    store_location, capsys
):
    child = start_child()
    store = RunStore(store_location)
    try:
        [repair] = wait_until(lambda: store.pending(), child, "the repair")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        child.stderr.close()
    assert repair.tool_name == "final_result" and repair.fix_required
    assert "result.0.population" in (repair.reason or "")
    [summary] = store.runs()

    # The command line says how to fix it (approving needs the fixed arguments).
    assert cli(["--store", store_location, "show", summary.run_id]) == 0
    shown = capsys.readouterr().out
    assert "fix it: " in shown and f"approve {summary.run_id} {repair.id} --args" in shown
    assert cli(["--store", store_location, "approve", summary.run_id, repair.id]) == 1
    assert "edited arguments that fix the errors" in capsys.readouterr().err

    # Decided while no process runs the run: checked against the stored schema first.
    with pytest.raises(DecisionRefusedError, match="population"):
        store.approve(
            summary.run_id, repair.id, args={"result": [{"name": "P", "population": "x"}]}
        )
    with pytest.raises(DecisionRefusedError, match="edited arguments that fix"):
        store.approve(summary.run_id, repair.id)
    fixed = {"result": [{"name": "Paris", "population": 2}]}
    store.approve(summary.run_id, repair.id, args=fixed)

    response = await asyncio.wait_for(store_agents.typed_agent().resume(summary.run_id).send(), 30)
    assert response.data == [store_agents.CityRow(name="Paris", population=2)]
    assert store.runs()[0].status == "success"
    [stored] = [r for r in store.interactions(summary.run_id) if r.id == repair.id]
    assert stored.status == "approved" and stored.edited_args == fixed
