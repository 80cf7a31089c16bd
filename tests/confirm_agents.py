"""An agent whose protected tool has a rule its JSON Schema cannot say (a validator: the amount
must be even), for the tests of edited arguments decided in another process: used by a child
process and by the test alike.

The child runs ``python -c "import confirm_agents; confirm_agents.run()"`` with
``ANVIA_NOTEBOOK_STORE`` set (``confirm_agents.run(lead=True)``: the tool is a sub-agent's);
every execution of ``pay`` appends ``paid AMOUNT`` to the file named by ``ANVIA_TEST_EFFECTS``.
The model calls ``pay`` with 2, then answers with what the tool result said.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, field_validator

from anvia_notebook import AgentBuilder, StoreHumanInput, ToolApproval, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


class EvenAmount(BaseModel):
    amount: int

    @field_validator("amount")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("the amount must be even")
        return value


def effects() -> list[str]:
    path = Path(os.environ["ANVIA_TEST_EFFECTS"])
    return path.read_text().splitlines() if path.exists() else []


def _pay(args: EvenAmount, ctx: Any) -> str:
    with Path(os.environ["ANVIA_TEST_EFFECTS"]).open("a") as out:
        out.write(f"paid {args.amount}\n")
    return f"paid {args.amount}"


def _payer(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(tool_calls=[ToolCall(id="p1", name="pay", arguments={"amount": 2})])
    return ModelResponse(text=f"told: {last.tool_results[0].content}")


def _lead(request: Any) -> ModelResponse:
    last = request.messages[-1]
    if last.role == "user":
        return ModelResponse(
            tool_calls=[ToolCall(id="l1", name="ask_payer", arguments={"prompt": last.content})]
        )
    return ModelResponse(text=f"lead {last.tool_results[0].content}")


def payer(human: bool = True) -> Any:
    pay = create_tool(
        name="pay",
        description="Pay an amount.",
        input=EvenAmount,
        execute=_pay,
        approval=ToolApproval(reason="Money leaves the account."),
    )
    builder = AgentBuilder("payer", FunctionModel(_payer)).tool(pay)
    return builder.human_input(StoreHumanInput()) if human else builder


def agent(lead: bool = False, human: bool = True) -> Any:
    """``human=False``: no human input (a script that resumes the run decides nothing)."""
    if not lead:
        return payer(human).build()
    builder = AgentBuilder("lead", FunctionModel(_lead)).tool(
        payer(human).build().as_tool(name="ask_payer")
    )
    return (builder.human_input(StoreHumanInput()) if human else builder).build()


def run(lead: bool = False) -> None:
    print("started", flush=True)
    try:
        response = agent(lead).prompt("pay 2").send_sync()
    except Exception as error:  # pragma: no cover - shown in the test's failure output
        print(f"error: {error!r}", file=sys.stderr, flush=True)
        raise
    print(f"output: {response.output}", flush=True)
