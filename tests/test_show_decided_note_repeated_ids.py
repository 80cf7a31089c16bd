"""``show`` of an interrupted run whose model gave the last turn's call the id of an earlier
turn's call (as some servers do): the earlier call's decision is not said to be used when the
run resumes (that call ran already; the resume asks for the last turn's call afresh)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import RunStore

pytestmark = pytest.mark.timeout(120)


def test_show_does_not_say_an_earlier_turn_s_decision_is_used_on_resume(
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
        shown = subprocess.run(
            [sys.executable, "-m", "anvia_notebook", "--store", location, "show", run_id],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        assert "interrupted" in shown.stdout
        # Before: 'Approval ... add {"x": 1, "y": 1} was approved (from the store): the call
        # runs when the run resumes.', of the first turn's call, which ran with the edit.
        assert "the call runs when the run resumes" not in shown.stdout
        assert first.id not in shown.stdout.split('-> add({"x":2')[-1]
    finally:
        store.close()
