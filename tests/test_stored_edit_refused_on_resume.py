"""A stored approval whose edited arguments the resumed tool no longer accepts.

An edit is checked by the run before it is recorded, whoever sends it; but a row can still hold
an approved edit the tool refuses when the run is resumed: the tool's input model gained a rule
between a crash and the resume (or the row was written by a version before that check). The
resumed run must not run the tool with them: the call is rejected, saying why, the record says
so in the store and the model is told (before this test, the path was never run by the suite).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
import store_agents
from child_processes import child_environ, kill, start_python, wait_until
from pydantic import BaseModel, field_validator
from store_agents import effects

from anvia_notebook import AgentBuilder, RunStore, ToolApproval, ask_question, create_tool
from anvia_notebook.models import FunctionModel

pytestmark = pytest.mark.timeout(120)


class StricterTransferInput(BaseModel):
    """The transfer tool's input after the crash: at most 100 at a time."""

    account: str
    amount: int

    @field_validator("amount")
    @classmethod
    def _at_most_100(cls, amount: int) -> int:
        if amount > 100:
            raise ValueError("transfers above 100 need a second signature")
        return amount


def _stricter_agent():
    transfer = create_tool(
        name="transfer",
        description="Send money.",
        input=StricterTransferInput,
        execute=store_agents._transfer,
        approval=ToolApproval(reason="Money leaves the account."),
    )
    tools = [transfer, ask_question]
    return AgentBuilder("banker", FunctionModel(store_agents._script)).tools(tools).build()


async def test_an_approved_edit_the_resumed_tool_refuses_rejects_the_call(tmp_path, monkeypatch):
    location = tmp_path / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(location))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    child = start_python("import store_agents; store_agents.run('approval')", child_environ())
    try:
        [pending] = wait_until(lambda: RunStore(location).pending(), child, "the approval")
    finally:
        kill(child)
    # The row as an approval with an edit the tool took then (no rule above 100 yet).
    edited = {"account": "a1", "amount": 500}
    record = RunStore(location).record(pending.id)
    assert record is not None
    decided = record.model_copy(
        update={"status": "approved", "decided_by": "human", "edited_args": edited}
    )
    with sqlite3.connect(location) as db:
        db.execute(
            "UPDATE interactions SET status = 'approved', record = ? WHERE id = ?",
            (decided.model_dump_json(), pending.id),
        )

    response = await asyncio.wait_for(_stricter_agent().resume(pending.run_id).send(), 60)

    assert effects() == []  # the transfer never ran
    told = response.output
    assert "Edited arguments were rejected" in told and "second signature" in told
    stored = RunStore(location).record(pending.id)
    assert stored is not None
    assert stored.status == "rejected" and stored.edited_args is None
    assert "second signature" in (stored.decision_reason or "")
    [call] = response.trace.tool_calls
    assert call.approval is not None and call.approval.status == "rejected"
    assert json.dumps(edited) not in told
