"""A typed output's repair decided by code (an approval handler, a human input such as
``CallbackHumanInput``) is checked before it is recorded: a fix that is missing or does not
validate is recorded and announced once, already rejected, and the run ends with the same
``OutputValidationError`` as ever. Only a fix written by another process (the run store, the
command line), which cannot run the output type's own rules, is found wrong by the run after it
was recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, field_validator
from test_typed_output_hooks import City, final

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    DecisionRefusedError,
    OutputValidationError,
    RunStore,
    StoreHumanInput,
    create_hook,
)
from anvia_notebook.models import QueueModel

from helpers import tool_results

pytestmark = pytest.mark.timeout(60)


BAD_CITY = {"name": "Paris", "population": "many"}
INVALID_FIX = {"name": "Paris", "population": -1}


def decided_events(run: Any) -> list[Any]:
    return [e.approval for e in run.events if e.type == "tool_approval_result"]


async def repaired_by(decider: str, decision: Any, store_path: Path) -> tuple[Any, Any]:
    """Run a typed output whose repair ``decision`` decides (returned by an approval handler or
    a ``CallbackHumanInput``), stored: the run and what it ended with."""
    model = QueueModel([final(BAD_CITY)])
    agent = AgentBuilder("typed", model).output_type(City, retries=0)
    if decider == "handler":
        agent = agent.approvals(lambda request: decision)
    else:
        agent = agent.human_input(CallbackHumanInput(lambda request: decision))
    run = agent.build().prompt("Paris?").store(RunStore(store_path)).start()
    with pytest.raises(OutputValidationError) as caught:
        await asyncio.wait_for(run.wait(), 30)
    return run, caught.value


@pytest.mark.parametrize("decider", ["handler", "human_input"])
async def test_an_invalid_fix_is_announced_once_already_rejected(
    decider: str, store_path: Path
) -> None:
    decision = ApprovalDecision(approved=True, args=INVALID_FIX)
    run, error = await repaired_by(decider, decision, store_path)
    # The run ends as it always did: the fix's own errors.
    assert str(error).startswith("The fix is not a valid City:\n- population: ")
    assert error.errors[0]["type"] == "greater_than" and error.errors[0]["loc"] == ("population",)
    [decided] = decided_events(run)
    assert decided.status == "rejected" and decided.edited_args is None
    assert decided.decided_by == ("handler" if decider == "handler" else "human")
    assert "The fix is not valid" in (decided.decision_reason or "")
    assert "population: Input should be greater than 0" in (decided.decision_reason or "")
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored == decided == run.state.approvals[decided.id]


@pytest.mark.parametrize("decider", ["handler", "human_input"])
async def test_an_approval_without_a_fix_is_announced_once_already_rejected(
    decider: str, store_path: Path
) -> None:
    run, error = await repaired_by(decider, True, store_path)
    assert str(error).startswith(
        "The model's City was approved without a fix, and it is not valid:\n- population: "
    )
    assert error.errors[0]["type"] == "int_parsing"  # the model's own value's errors
    [decided] = decided_events(run)
    assert (decided.status, decided.decision_reason) == ("rejected", "Approved without a fix.")
    assert decided.edited_args is None
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored == decided == run.state.approvals[decided.id]


async def test_a_native_answers_invalid_fix_is_announced_once_already_rejected(
    store_path: Path,
) -> None:
    model = QueueModel(['{"name": "Paris", "population": "many"}'])
    decision = ApprovalDecision(approved=True, args=INVALID_FIX)
    agent = (
        AgentBuilder("typed", model)
        .output_type(City, mode="native", retries=0)
        .approvals(lambda request: decision)
        .build()
    )
    run = agent.prompt("Paris?").store(RunStore(store_path)).start()
    with pytest.raises(OutputValidationError, match="The fix is not a valid City"):
        await asyncio.wait_for(run.wait(), 30)
    [decided] = decided_events(run)
    assert decided.status == "rejected" and decided.fix_required
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored == decided


async def test_a_valid_fix_is_announced_once_approved(store_path: Path) -> None:
    fix = {"name": "Paris", "population": 2}
    model = QueueModel([final(BAD_CITY)])
    agent = (
        AgentBuilder("typed", model)
        .output_type(City, retries=0)
        .approvals(lambda request: ApprovalDecision(approved=True, args=fix))
        .build()
    )
    run = agent.prompt("Paris?").store(RunStore(store_path)).start()
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.data == City(**fix)
    [decided] = decided_events(run)
    assert decided.status == "approved" and decided.edited_args == fix


async def test_a_hooks_approval_with_an_edit_that_does_not_validate_is_announced_once(
    store_path: Path,
) -> None:
    """A hook puts a valid value to the approval handler, whose edit does not validate: the
    model is told, and the approval is recorded once, rejected."""

    ask_first = create_hook(
        on_tool_call=lambda event: event.tool.request_approval(reason="Check it.")
    )
    asked: list[Any] = []

    def approvals(request: Any) -> Any:
        asked.append(request)
        if len(asked) == 1:
            return ApprovalDecision(approved=True, args=INVALID_FIX)
        return True

    good = {"name": "Paris", "population": 7}
    model = QueueModel([final(good, "a"), final(good, "b")])
    agent = AgentBuilder("typed", model).output_type(City).approvals(approvals).hook(ask_first)
    run = agent.build().prompt("Paris?").store(RunStore(store_path)).start()
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.data == City(**good)
    [told] = tool_results(model.requests[1])
    assert told.content.startswith("Edited arguments were rejected")
    first, second = decided_events(run)
    assert (first.status, first.decision_reason) == ("rejected", told.content)
    assert second.status == "approved"
    stored = {r.id: r for r in RunStore(store_path).interactions(run.run_id)}
    assert stored[first.id] == first


class EvenCity(BaseModel):
    name: str
    population: int

    @field_validator("population")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("the population must be even")
        return value


async def test_a_stored_fix_only_the_output_types_own_rule_refuses_is_refused_before_it_is_recorded(
    store_path: Path,
) -> None:
    """The run store checks a fix against the output type's JSON Schema; a rule the schema
    cannot say (a validator) is the run's: the fix is sent to the run, which refuses it
    (nothing recorded, the repair still waits); a valid fix then ends the run with it."""
    model = QueueModel([final({"name": "Paris", "population": "many"})])
    agent = (
        AgentBuilder("typed", model)
        .output_type(EvenCity, retries=0)
        .human_input(StoreHumanInput())
        .build()
    )
    run = agent.prompt("Paris?").create_run()
    asked = asyncio.Event()
    run.subscribe(lambda event: asked.set() if event.type == "tool_approval_request" else None)
    run.start()
    await asyncio.wait_for(asked.wait(), 30)
    [pending] = run.interactions.pending
    store = RunStore(store_path)
    odd, even = {"name": "Paris", "population": 3}, {"name": "Paris", "population": 4}
    with pytest.raises(DecisionRefusedError, match="the population must be even"):
        await asyncio.to_thread(store.approve, run.run_id, pending.id, args=odd)
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored.status == "pending" and run.state.approvals[pending.id].status == "pending"
    await asyncio.to_thread(store.approve, run.run_id, pending.id, args=even)
    result = await asyncio.wait_for(run.wait(), 30)
    assert result.data == EvenCity(name="Paris", population=4)
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored.status == "approved" and stored.edited_args == even
    assert run.state.approvals[pending.id] == stored
    assert decided_events(run)[-1] == stored  # what the page shows last is what happened
