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


class Refund(BaseModel):
    order_id: str
    amount: float
    reason: str


def refund_output(execute, approve=True):
    tool = create_tool(
        name="issue_refund",
        description="Refund.",
        input=Refund,
        execute=execute,
        approval=ToolApproval(reason="check"),
    )

    async def decide(request: object) -> bool:
        return approve

    agent = AgentBuilder("refunds", support_demo(delay=0)).tool(tool).build()
    human = CallbackHumanInput(approve=decide)
    return agent.prompt("Refund order A1001").human_input(human).send_sync().output


@pytest.mark.parametrize(
    "result",
    [
        {"refund_id": "rf_1", "amount": 25.0},
        {"refund_id": "rf_1", "status": "issued"},
        {"refund_id": "rf_1", "status": "pending"},
    ],
)
def test_a_refund_with_an_id_is_reported_as_done(result):
    output = refund_output(lambda args, ctx: result)
    assert output == "Done: refund `rf_1` was issued for order A1001."


def test_a_refund_approved_with_changed_arguments_is_reported_as_done():
    """Tutorial 02's Edit arguments: the result the model reads starts with a note saying so,
    and the demo quoted the whole result as "not confirmed" (the refund had been issued)."""
    decision = {"approved": True, "args": {"order_id": "A1001", "amount": 3.5, "reason": "edited"}}
    seen = []

    def issue(args, ctx):
        seen.append(args.amount)
        return {"refund_id": "rf_1", "status": "issued"}

    assert refund_output(issue, approve=decision) == (
        "Done: refund `rf_1` was issued for order A1001 (with the arguments you changed)."
    )
    assert seen == [3.5]

    def decline(args, ctx):
        raise RuntimeError("card declined")

    failed = refund_output(decline, approve=decision)
    assert failed.startswith("The refund did not happen") and "card declined" in failed
    assert "Approved with changed arguments" not in failed  # (the note is not the tool's)


def test_a_refund_object_without_an_id_is_done_too():
    output = refund_output(lambda args, ctx: {"amount": 25.0})
    assert output == "Done: the refund for order A1001 was issued."


@pytest.mark.parametrize(
    "result",
    [
        {"refund_id": "rf_1", "status": "failed"},
        {"refund_id": "rf_1", "status": "Declined"},
        {"refund_id": "rf_1", "ok": False},
        {"success": False, "message": "card expired"},
    ],
)
def test_a_refund_with_a_failure_status_did_not_happen(result):
    output = refund_output(lambda args, ctx: result)
    assert output.startswith("The refund did not happen.")
    assert '"refund_id":"rf_1"' in output or "card expired" in output  # the result, as JSON
    assert "Done" not in output


def test_a_refund_that_raised_or_was_rejected_did_not_happen():
    def gateway_down(args: Refund, ctx: object) -> dict[str, str]:
        raise RuntimeError("payment gateway down")

    output = refund_output(gateway_down)
    assert output.startswith("The refund did not happen.") and "payment gateway down" in output
    ran: list[str] = []
    output = refund_output(lambda args, ctx: ran.append(args.order_id), approve=False)
    assert ran == []
    assert output == "The refund did not happen. Tool approval was rejected."


def test_a_refund_answered_with_other_text_is_quoted_not_claimed():
    output = refund_output(lambda args, ctx: "queued for the finance team")
    assert "Done" not in output and "did not happen" not in output
    assert output == "The refund for order A1001 was not confirmed: queued for the finance team"


@pytest.mark.parametrize(
    "note",
    [
        "The customer's first request was denied; this one was approved.",
        "Customer wrote: the card showed an error at checkout.",
        "Previous refund rejected, timed out and declined by the bank.",
    ],
)
def test_a_refund_object_is_done_whatever_its_note_says(note):
    output = refund_output(lambda args, ctx: {"refund_id": "rf_1", "note": note})
    assert output == "Done: refund `rf_1` was issued for order A1001."


@pytest.mark.parametrize(
    "message", ["Refund rf_1 issued for order A1001", "refund_id rf_1, status: issued"]
)
def test_a_refund_that_raised_is_not_done_whatever_its_message_says(message):
    """The result is marked as an error: that decides, not the wording of the exception."""

    def raises(args: Refund, ctx: object) -> dict[str, str]:
        raise RuntimeError(message)

    output = refund_output(raises)
    assert output.startswith("The refund did not happen.") and message in output
    assert "Done" not in output and "not confirmed" not in output
