"""The offline demo models of the tutorials: only offered tools, honest wording."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, CallbackHumanInput, ToolApproval, create_tool
from anvia_notebook.demos import greeter_demo, support_demo


class Query(BaseModel):
    order_id: str


def lookup(args: Query, ctx: object) -> dict[str, str]:
    return {"order_id": args.order_id, "status": "shipped"}


def test_the_demo_never_calls_a_tool_the_agent_does_not_have():
    other = create_tool(
        name="find_invoice", description="Find an invoice.", input=Query, execute=lookup
    )
    agent = AgentBuilder("billing", support_demo(delay=0)).tool(other).build()
    response = agent.prompt("Where is order A1001?").send_sync()
    assert "offline demo model" in response.output
    assert "`get_order_status`" in response.output
    assert [m.role for m in response.messages] == ["user", "assistant"]  # no tool call at all


def test_the_demo_calls_a_scripted_tool_the_agent_offers():
    status = create_tool(
        name="get_order_status", description="Status.", input=Query, execute=lookup
    )
    agent = AgentBuilder("support", support_demo(delay=0)).tool(status).build()
    response = agent.prompt("Where is order A1001?").send_sync()
    assert "A1001" in response.output and "shipped" in response.output
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_greeter_answers_as_the_greeter():
    agent = AgentBuilder("greeter", greeter_demo(delay=0)).build()
    output = agent.prompt("Hello!").send_sync().output
    assert "greeter" in output
    assert "support agent" not in output.lower().replace("**support agent**", "")


class Export(BaseModel):
    seconds: int


@pytest.mark.parametrize("decision", ["timeout", "reject"])
def test_a_call_that_did_not_run_is_not_reported_as_done(decision):
    ran: list[int] = []

    def export(args: Export, ctx: object) -> str:
        ran.append(args.seconds)
        return "all orders exported"

    async def never(request: object) -> bool:
        await asyncio.sleep(3600)
        return True

    async def no(request: object) -> bool:
        return False

    tool = create_tool(
        name="export_orders",
        description="Export.",
        input=Export,
        execute=export,
        approval=ToolApproval(reason="check"),
    )
    agent = AgentBuilder("exports", support_demo(delay=0)).tool(tool).build()
    human = CallbackHumanInput(approve=never if decision == "timeout" else no, timeout=0.05)
    output = agent.prompt("Export all orders").human_input(human).send_sync().output
    assert ran == []
    assert output.startswith("The export did not happen")
    assert "Export finished" not in output and "reviewer said" not in output
    if decision == "timeout":
        assert "nobody decided in time" in output
