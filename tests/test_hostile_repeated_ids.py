"""A model that gives every turn's call the same id, and a process killed with SIGKILL after
the first call was approved (with edited arguments) and before the second call's approval was
asked: on resume the second call is asked for afresh, never decided by the first call's
approval, and its own arguments are the ones run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import repeated_id_agents
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import RunStore

from helpers import ran_with

pytestmark = pytest.mark.timeout(120)


def test_a_later_call_with_the_same_id_is_not_decided_by_the_earlier_approval_on_resume(
    store_path: Path, tmp_path: Path
) -> None:
    held = tmp_path / "held"
    env = child_environ()
    env["ANVIA_TEST_HOLD"] = str(held)
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_python("import repeated_id_agents; repeated_id_agents.run()", env)
        [first] = wait_until(lambda: store.pending(), child, "the first approval")
        run_id = first.run_id
        store.approve(run_id, first.id, args={"x": 10, "y": 10})
        wait_until(held.exists, child, "the second call to be held")

        def second_turn_stored() -> bool:
            return len([m for m in store.get(run_id).messages if m.role == "assistant"]) == 2

        wait_until(second_turn_stored, child, "the second turn to be stored")
        kill(child)
        # ``show`` does not say the earlier turn's decision is used on resume (it said 'Approval
        # ... add {"x": 1, "y": 1} was approved (from the store): the call runs when the run
        # resumes.', of the first turn's call, which ran with the edit).
        shown = subprocess.run(
            [sys.executable, "-m", "anvia_notebook", "--store", location, "show", run_id],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert "interrupted" in shown.stdout
        assert "the call runs when the run resumes" not in shown.stdout
        asked: list[Any] = []

        def handler(request: Any) -> bool:
            asked.append(request.args)
            return True

        ran: list[tuple[int, int]] = []
        resumed = repeated_id_agents.agent(ran).resume(run_id).approvals(handler)
        response = resumed.send_sync()
        assert [(a.x, a.y) for a in asked] == [(2, 1)]  # asked afresh, with its own arguments
        assert ran == [(2, 1)]
        # (the first call's result says it ran with the arguments edited in the store)
        assert response.output == ran_with("add", {"x": 10, "y": 10}, "20") + " | 3"
    finally:
        store.close()
