"""Sub-agents as a hostile user would try them: three levels deep, the process killed with
SIGKILL while the deepest one waits for an approval, decided from the command line of another
process, then resumed: nothing runs twice and no level starts again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import subagent_agents
import subagent_deep_agents
from child_processes import agents_environ, kill, start_python, wait_until

from anvia_notebook import RunStore
from anvia_notebook.__main__ import main as cli


@pytest.fixture
def env(store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return agents_environ(tmp_path, monkeypatch)


def _another(store: RunStore, run_id: str, seen: str) -> Any:
    """A pending approval of the run's tree other than ``seen`` (None while there is none)."""
    waiting = [p for p in store.pending(run_id) if p.id != seen]
    return waiting[0] if waiting else None


def _top(store: RunStore) -> Any:
    tops = [run for run in store.runs() if run.parent_run_id is None]
    return tops[0] if tops else None


def _killed_at_the_second_approval(store: RunStore, code: str, env: dict[str, str]) -> Any:
    """Run ``code`` in a child process, approve the first analyst's call, and kill the child
    once the second analyst waits (the first has run its query once): the lead's run and the
    second approval."""
    child = start_python(code, env)
    top = wait_until(lambda: _top(store), child, "the lead's run")
    [first] = wait_until(lambda: store.pending(top.run_id), child, "the first approval")
    store.approve(top.run_id, first.id)
    later = wait_until(
        lambda: _another(store, top.run_id, first.id), child, "the second analyst's approval"
    )
    assert subagent_agents.effects() == ["started select 1", "done select 1"]
    kill(child)
    return top, later


def test_three_levels_killed_at_the_deepest_approval_then_decided_and_resumed(
    env: dict[str, str],
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        code = "import subagent_deep_agents; subagent_deep_agents.run('select')"
        child = start_python(code, env)
        top = wait_until(lambda: _top(store), child, "the lead's run")
        [pending] = wait_until(lambda: store.pending(top.run_id), child, "the deepest approval")
        assert pending.path == ["lead", "manager", "analyst"]
        kill(child)
        assert sorted(r.status for r in store.runs()) == ["interrupted"] * 3
        assert cli(["--store", location, "approve", top.run_id, pending.id]) == 0
        resumed = subagent_deep_agents.lead().resume(top.run_id).approvals(lambda r: True)
        response = resumed.send_sync()
        assert response.output == (
            "lead: manager: analyst: west +12% (select 1) | analyst: west +12% (select 2)"
        )
        assert subagent_agents.effects() == [
            "started select 1",
            "done select 1",
            "started select 2",
            "done select 2",
        ]
        tree = [store.get(run_id) for run_id in store.run_tree(top.run_id)]
        assert sorted(state.agent_id for state in tree) == [
            "analyst",
            "analyst",
            "lead",
            "manager",
        ]
        assert {state.status for state in tree} == {"success"}
    finally:
        store.close()


def test_killed_between_two_sub_agent_calls_of_one_turn_the_finished_one_is_not_run_again(
    env: dict[str, str],
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        code = "import subagent_deep_agents; subagent_deep_agents.run('select')"
        top, later = _killed_at_the_second_approval(store, code, env)
        store.approve(later.run_id, later.id)  # given the sub-run's id this time
        response = subagent_deep_agents.lead().resume(top.run_id).send_sync()
        assert response.output == (
            "lead: manager: analyst: west +12% (select 1) | analyst: west +12% (select 2)"
        )
        assert subagent_agents.effects() == [
            "started select 1",
            "done select 1",
            "started select 2",
            "done select 2",
        ]
        assert len(store.run_tree(top.run_id)) == 4
    finally:
        store.close()


def test_a_sub_agent_call_with_an_earlier_turn_s_call_id_is_taken_up_not_answered_from_it(
    env: dict[str, str],
) -> None:
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_python(
            "import subagent_deep_agents; subagent_deep_agents.run_repeating()", env
        )
        top = wait_until(lambda: _top(store), child, "the lead's run")
        [first] = wait_until(lambda: store.pending(top.run_id), child, "the first approval")
        store.approve(top.run_id, first.id)

        later = wait_until(
            lambda: _another(store, top.run_id, first.id), child, "the second turn's approval"
        )
        kill(child)
        store.approve(top.run_id, later.id)
        response = subagent_deep_agents.repeating_lead().resume(top.run_id).send_sync()
        assert response.output == (
            "lead: analyst: west +12% (turn 1) | analyst: west +12% (turn 2)"
        )
        assert subagent_agents.effects() == [
            "started turn 1",
            "done turn 1",
            "started turn 2",
            "done turn 2",
        ]
        assert len(store.run_tree(top.run_id)) == 3
    finally:
        store.close()


def test_a_typed_sub_agent_that_had_finished_gives_its_value_again_after_a_resume(
    env: dict[str, str],
) -> None:
    """Killed while the second of two typed sub-agent calls waits: on resume, the finished one
    answers from the store with its validated value as JSON, as it did the first time."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        code = "import subagent_agents; subagent_agents.run('east and west', typed=True)"
        top, later = _killed_at_the_second_approval(store, code, env)
        store.approve(top.run_id, later.id)
        response = subagent_agents.lead(typed=True).resume(top.run_id).send_sync()
        finding = '{"query":"west +12% (select 1)","rows":3}'
        assert response.output == f"lead: {finding} | {finding}"
        assert subagent_agents.effects() == [
            "started select 1",
            "done select 1",
            "started select 1",
            "done select 1",
        ]
    finally:
        store.close()


def test_a_typed_sub_agent_whose_value_was_none_gives_null_again_after_a_resume(
    env: dict[str, str],
) -> None:
    """An output type that allows None, and the finished sub-agent's value was None: on resume
    it answers ``null`` from the store, as it did the first time (not the words said with it)."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        code = "import subagent_agents; subagent_agents.run('east and west', typed='optional')"
        top, later = _killed_at_the_second_approval(store, code, env)
        store.approve(top.run_id, later.id)
        response = subagent_agents.lead(typed="optional").resume(top.run_id).send_sync()
        assert response.output == "lead: null | null", subagent_agents.effects()
        assert subagent_agents.effects() == ["started select 1", "done select 1"] * 2
    finally:
        store.close()


def test_a_typed_sub_agent_that_ended_with_none_just_before_the_kill_gives_null_on_resume(
    env: dict[str, str],
) -> None:
    """Killed after the sub-agent's run ended with the value None but before the lead took in
    its result: on resume the call answers from the sub-run's stored value, ``null`` (not the
    words the sub-agent said with it), and the sub-agent is not run again."""
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        code = "import subagent_agents; subagent_agents.run('west', typed='optional')"
        child = start_python(code, {**env, "ANVIA_TEST_HOLD_RESULT": "1"})
        top = wait_until(lambda: _top(store), child, "the lead's run")
        [first] = wait_until(lambda: store.pending(top.run_id), child, "the analyst's approval")
        store.approve(top.run_id, first.id)

        def sub_run_ended() -> bool:
            return [store.get(sub).status for sub in store.run_tree(top.run_id)[1:]] == ["success"]

        wait_until(sub_run_ended, child, "the analyst's run to end")
        kill(child)
        response = subagent_agents.lead(typed="optional").resume(top.run_id).send_sync()
        assert response.output == "lead: null"
        assert subagent_agents.effects() == ["started select 1", "done select 1"]
    finally:
        store.close()
