"""The repair of a typed output is an interaction like an approval: stored, and still pending
after the process that asked was killed; the resumed run takes the fix made in the store."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import pytest
import store_agents
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import ApprovalRecord, DecisionRefusedError, RunStore
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import FunctionModel

pytestmark = pytest.mark.timeout(120)


def start_child(kind: str = "run_typed") -> subprocess.Popen[str]:
    return start_python(f"import store_agents; store_agents.{kind}()", child_environ())


async def test_a_pending_repair_survives_a_kill_and_the_fix_ends_the_resumed_run(
    store_location, capsys
):
    store = RunStore(store_location)
    repair = killed_at_the_repair(store, "tool")
    assert "result.0.population" in (repair.reason or "")
    [summary] = store.runs()

    # The command line says how to fix it (approving needs the fixed arguments).
    assert cli(["--store", store_location, "show", summary.run_id]) == 0
    shown = capsys.readouterr().out
    assert "fix it: " in shown and f"approve {summary.run_id} {repair.id} --args" in shown
    assert cli(["--store", store_location, "approve", summary.run_id, repair.id]) == 1
    assert "edited arguments that fix the errors" in capsys.readouterr().err
    invalid = '{"result": [{"name": "P", "population": "x"}]}'
    args = ["--store", store_location, "approve", summary.run_id, repair.id, "--args", invalid]
    assert cli(args) == 1  # a fix that is itself invalid: refused with its errors
    assert "population" in capsys.readouterr().err
    assert [r.id for r in store.pending(summary.run_id)] == [repair.id]  # still to fix

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


FIXED = {"result": [{"name": "Paris", "population": 2}]}


def killed_at_the_repair(store: RunStore, mode: str, kind: str | None = None) -> ApprovalRecord:
    """A child process runs the typed agent of ``mode`` (or ``store_agents.<kind>``) until its
    repair waits, then is killed (SIGKILL): the repair stays pending in the store."""
    child = start_child(kind or ("run_native_typed" if mode == "native" else "run_typed"))
    try:
        [repair] = wait_until(lambda: store.pending(), child, "the repair")
    finally:
        kill(child)
    assert repair.tool_name == "final_result" and repair.fix_required
    assert "population" in (repair.reason or "")
    return repair


def _not_asked_again(request: Any) -> Any:
    raise AssertionError("the model was asked again instead of the person")


def resumable(mode: str) -> tuple[Any, FunctionModel]:
    """The agent of ``mode`` as the resuming process builds it, and its model, which must not
    be asked again (the run would fail): the person's fix is the output."""
    model = FunctionModel(_not_asked_again)
    if mode == "native":
        return store_agents.native_typed_agent(model), model
    return store_agents.typed_agent(model), model


def assert_fixed_once(
    response: Any, run_events: list[Any], mode: str, repair_id: str, seen: bool = True
) -> None:
    """The fix is the data, applied once: one decision (seen as it is made, when the run was
    waiting for it), one final event, the model's answer once in the history (and in tool mode
    one result of final_result, the fixed one)."""
    assert response.data == [store_agents.CityRow(name="Paris", population=2)]
    roles = [m.role for m in response.messages]
    assert roles == (["user", "assistant"] if mode == "native" else ["user", "assistant", "tool"])
    if mode == "tool":
        [part] = response.messages[-1].tool_results
        assert part.tool_name == "final_result" and not part.is_error
        assert part.content == "Final result accepted, as fixed by a person."
        results = [e for e in run_events if e.type == "tool_result"]
        assert [(e.tool_name, e.is_error) for e in results] == [("final_result", False)]
    decided = [
        e.approval.status
        for e in run_events
        if e.type == "tool_approval_result" and e.approval.id == repair_id
    ]
    assert decided == (["approved"] if seen else [])
    assert [e.type for e in run_events].count("final") == 1


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_repair_pending_at_a_kill_is_offered_again_on_resume(store_location, mode):
    """Resumed while the repair waits: the same repair is offered again (no new one, the model
    is not asked again), and the person's fix ends the run once."""
    store = RunStore(store_location)
    try:
        repair = killed_at_the_repair(store, mode)
        agent, model = resumable(mode)
        run = agent.resume(repair.run_id).start()
        for _ in range(1000):
            if run.status == "waiting":
                break
            await asyncio.sleep(0.01)
        assert run.status == "waiting"
        [pending] = store.pending(repair.run_id)
        assert pending.id == repair.id and pending.fix_required
        assert [r.id for r in run.state.approvals.values()] == [repair.id]
        store.approve(repair.run_id, repair.id, args=FIXED)
        response = await asyncio.wait_for(run.wait(), 30)
        assert model.requests == []
        assert_fixed_once(response, list(run.events), mode, repair.id)
        [stored] = store.interactions(repair.run_id)
        assert stored.id == repair.id and stored.status == "approved"
        assert stored.edited_args == FIXED
        assert store.runs()[0].status == "success"
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_a_repair_fixed_while_no_process_runs_the_run_ends_it_on_resume(store_location, mode):
    store = RunStore(store_location)
    try:
        repair = killed_at_the_repair(store, mode)
        store.approve(repair.run_id, repair.id, args=FIXED)
        agent, model = resumable(mode)
        run = agent.resume(repair.run_id).start()
        response = await asyncio.wait_for(run.wait(), 30)
        assert model.requests == []
        # (the fix waited for the run, which checked and recorded it when resumed: its events
        # show that decision)
        assert_fixed_once(response, list(run.events), mode, repair.id)
        [stored] = store.interactions(repair.run_id)
        assert stored.id == repair.id and stored.status == "approved"
    finally:
        store.close()


async def test_a_run_typed_by_its_request_is_resumed_only_with_an_output_type(store_location):
    """The output type was the request's, not the agent's: a resume that does not give it again
    (or gives another mode) is refused before anything runs, the fix made in the store stays
    queued, and the same request given the type ends the run with that fix."""
    store = RunStore(store_location)
    try:
        repair = killed_at_the_repair(store, "tool", kind="run_request_typed")
        store.approve(repair.run_id, repair.id, args=FIXED)
        model = FunctionModel(_not_asked_again)
        request = store_agents.untyped_agent(model).resume(repair.run_id)
        with pytest.raises(ValueError, match=r"output_type\(list\[CityRow\], mode=\"tool\"\)"):
            await request.send()
        native = store_agents.untyped_agent(model).resume(repair.run_id)
        native.output_type(list[store_agents.CityRow], mode="native", retries=0)
        with pytest.raises(ValueError, match='this resume has list\\[CityRow\\], mode="native"'):
            await native.send()
        [still] = store.interactions(repair.run_id)
        assert still.status == "pending" and store.runs()[0].status == "waiting"
        assert model.requests == []

        request.output_type(list[store_agents.CityRow], retries=0)
        response = await asyncio.wait_for(request.send(), 30)
        assert response.data == [store_agents.CityRow(name="Paris", population=2)]
        assert model.requests == []
        [stored] = store.interactions(repair.run_id)
        assert stored.status == "approved" and stored.edited_args == FIXED
    finally:
        store.close()
