"""A tool's input model whose own validator raises something other than ``ValueError`` (a
``KeyError`` from a lookup, a ``TypeError``, a ``ZeroDivisionError``: a bug in the validator,
found by arguments nobody tried).

pydantic turns only ``ValueError`` and ``AssertionError`` into a ``ValidationError``; anything
else comes out of ``model_validate`` as it is. Before, such arguments from the model ended the
whole run in error, and such edited arguments from a person or an approval handler did too.
Now, as in Anvia (whose tools parse their input inside the call):

- the model's call is a failed call, ``ToolCallError: <message>``, the model is told, the
  ``on_tool_error`` hooks see the exception, the tool does not run, and the run goes on;
- an edit is refused like any edit the tool does not accept, by every decider, saying which
  exception the check raised; nothing is recorded, and a later decision still counts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, field_validator
from test_hostile_edits import FRONTS, _approve, waiting_for_approval

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    DecisionRefusedError,
    ToolApproval,
    create_hook,
    create_tool,
)
from anvia_notebook.models import QueueModel

from helpers import call

pytestmark = pytest.mark.timeout(60)

RATES = {"EUR": 1.0, "USD": 1.1}


class Convert(BaseModel):
    currency: str
    amount: float

    @field_validator("currency")
    @classmethod
    def known(cls, value: str) -> str:
        RATES[value]  # a KeyError for a currency nobody thought of
        return value


class Split(BaseModel):
    total: float
    people: int

    @field_validator("people")
    @classmethod
    def share(cls, value: int) -> int:
        1 / value  # a ZeroDivisionError for zero people
        return value


class Tagged(BaseModel):
    tags: Any

    @field_validator("tags")
    @classmethod
    def sorted_tags(cls, value: Any) -> Any:
        return sorted(value)  # a TypeError for tags that do not compare


CASES = [
    (Convert, {"currency": "GBP", "amount": 5}, "ToolCallError: 'GBP'", KeyError),
    (Split, {"total": 9, "people": 0}, "ToolCallError: division by zero", ZeroDivisionError),
    (Tagged, {"tags": [1, "a"]}, "ToolCallError: '<' not supported", TypeError),
]


@pytest.mark.parametrize(("input_model", "args", "told", "raised"), CASES)
async def test_arguments_that_break_the_inputs_validator_are_a_failed_call(
    store_path: Path, input_model, args, told, raised
) -> None:
    ran: list[BaseModel] = []
    errors: list[BaseException] = []
    tool = create_tool(
        name="t", description="", input=input_model, execute=lambda a, c: ran.append(a) or "ran"
    )
    model = QueueModel([call("t", args), "The tool failed."])
    hook = create_hook(on_tool_error=lambda event: errors.append(event.error))
    agent = AgentBuilder("a", model).tool(tool).hook(hook).build()
    response = await agent.prompt("go").send()
    assert response.status == "success" and response.output == "The tool failed."
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.is_error and part.content.startswith(told), part.content
    assert ran == [] and [type(error) for error in errors] == [raised]


async def test_a_protected_tool_whose_validator_breaks_is_not_asked_about(store_path) -> None:
    asked: list[Any] = []
    tool = create_tool(
        name="t",
        description="",
        input=Convert,
        execute=lambda a, c: "ran",
        approval=ToolApproval(reason="Check it."),
    )
    model = QueueModel([call("t", {"currency": "GBP", "amount": 5}), "ok"])
    agent = AgentBuilder("a", model).tool(tool).approvals(lambda r: asked.append(r) or True)
    response = await agent.build().prompt("go").send()
    assert response.output == "ok" and asked == []
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.content == "ToolCallError: 'GBP'"


async def test_an_approval_handlers_edit_that_breaks_the_validator_rejects_the_call(
    store_path,
) -> None:
    ran: list[BaseModel] = []
    tool = create_tool(
        name="t",
        description="",
        input=Convert,
        execute=lambda a, c: ran.append(a) or "ran",
        approval=ToolApproval(reason="Check it."),
    )
    model = QueueModel([call("t", {"currency": "EUR", "amount": 5}), "ok"])
    edit = ApprovalDecision(approved=True, args={"currency": "GBP", "amount": 5})
    agent = AgentBuilder("a", model).tool(tool).approvals(lambda request: edit).build()
    response = await agent.prompt("go").send()
    assert response.status == "success" and ran == []
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.content.startswith("Edited arguments were rejected: ")
    assert "KeyError: 'GBP'" in part.content
    (record,) = response.trace.tool_calls[0:1]
    assert record.approval is not None and record.approval.status == "rejected"


@pytest.mark.parametrize("front", FRONTS)
async def test_a_persons_edit_that_breaks_the_validator_is_refused_and_changes_nothing(
    store_path: Path, front: str
) -> None:
    """The run's own deciders (the widget, ``RunHandle``) and the run store's (another process,
    the command line: the run checks the edit there and answers) refuse it alike."""
    run, store, approval, ran, _ = await waiting_for_approval(
        store_path, Convert, {"currency": "EUR", "amount": 5}
    )
    with pytest.raises(DecisionRefusedError) as refused:
        _approve(front, run, store)(approval.id, args={"currency": "GBP", "amount": 5})
    assert "not valid for t" in str(refused.value) and "KeyError: 'GBP'" in str(refused.value)
    assert [r.id for r in run.interactions.pending] == [approval.id]
    assert [r.id for r in store.pending(run.run_id)] == [approval.id]
    _approve(front, run, store)(approval.id, args={"currency": "USD", "amount": 5})
    assert (await asyncio.wait_for(run.wait(), 10)).output == "done"
    assert ran == [Convert(currency="USD", amount=5)]
