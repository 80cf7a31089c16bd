"""Evals, through the public API: a typed result that a hook puts to a person for sign-off ends
its case at once, saying why (it was rejected for want of a reviewer, every valid result
refused, until the turn limit), and a case that reaches its turn limit after protected calls
were rejected says so."""

from __future__ import annotations

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, ToolApproval, create_hook, create_tool, evals
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

from helpers import AddInput, make_add_tool, tool_results


class Value(BaseModel):
    value: int


def signing_off(event):
    """A hook asking a person to sign off every result."""
    if event.tool_name == "final_result":
        return event.tool.request_approval("A person signs results off.")
    return event.tool.run()


def result_giver(calls: list[int]):
    """A model that gives the result 7 each time it is asked (``calls`` counts them)."""

    def respond(request):
        calls.append(1)
        call = ToolCall(id=f"o{len(calls)}", name="final_result", arguments={"value": 7})
        return ModelResponse(tool_calls=[call])

    return FunctionModel(respond)


def signed_off_agent(calls: list[int], name: str = "signed-off"):
    return (
        AgentBuilder(name, result_giver(calls))
        .output_type(Value)
        .hook(create_hook(on_tool_call=signing_off))
        .build()
    )


async def test_a_result_needing_sign_off_ends_the_case_at_once_saying_why(store_path):
    calls: list[int] = []
    report = await evals.evaluate(
        signed_off_agent(calls), [{"input": "seven"}], [evals.contains("7")]
    )
    (case,) = report.cases
    assert len(calls) == 1  # (was 22: every result rejected, until MaxTurnsError)
    assert case.status == "error" and not case.passed
    assert case.error.startswith("ToolApprovalRequiredError: ")
    assert "sign-off" in case.error and "no reviewer" in case.error
    assert "approvals=" in case.error


async def test_a_result_needing_sign_off_is_decided_by_approvals(store_path):
    calls: list[int] = []
    report = await evals.evaluate(
        signed_off_agent(calls),
        [{"input": "seven"}],
        [evals.contains("7")],
        approvals=lambda request: True,
    )
    (case,) = report.cases
    assert case.status == "success" and case.passed and case.data == Value(value=7)
    assert len(calls) == 1


async def test_a_sub_agents_result_needing_sign_off_fails_its_call_at_once(store_path):
    analyst_calls: list[int] = []
    analyst = signed_off_agent(analyst_calls, "analyst")

    def lead(request):
        if request.messages[-1].role == "user":
            call = ToolCall("p1", "ask_analyst", {"prompt": "seven"})
            return ModelResponse(tool_calls=[call])
        return "gave up"

    agent = AgentBuilder("lead", FunctionModel(lead)).tool(analyst.as_tool(name="ask_analyst"))
    report = await evals.evaluate(agent.build(), [{"input": "go"}], [evals.contains("7")])
    assert len(analyst_calls) == 1
    assert report.cases[0].output == "gave up"


async def test_an_ordinary_tool_named_final_result_is_still_rejected_for_the_model(store_path):
    """Without an output type, a tool of the agent's own named ``final_result`` is an ordinary
    protected call: rejected, the model told why, and the case goes on."""

    def execute(args: AddInput, ctx) -> int:
        raise AssertionError("a rejected call does not run")

    tool = create_tool(
        name="final_result",
        description="Add two numbers.",
        input=AddInput,
        execute=execute,
        approval=ToolApproval(),
    )
    seen = []

    def respond(request):
        seen.append(request)
        if len(seen) == 1:
            call = ToolCall(id="c1", name="final_result", arguments={"x": 1, "y": 2})
            return ModelResponse(tool_calls=[call])
        return "done"

    agent = AgentBuilder("a", FunctionModel(respond)).tool(tool).build()
    report = await evals.evaluate(agent, [{"input": "add"}], [evals.contains("done")])
    assert report.cases[0].passed
    assert tool_results(seen[1])[0].content == evals.NO_REVIEWER_MESSAGE


async def test_a_turn_limit_after_rejected_calls_says_they_were_rejected(store_path):
    add = make_add_tool(approval=ToolApproval())
    count: list[int] = []

    def respond(request):
        count.append(1)
        call = ToolCall(id=f"c{len(count)}", name="add", arguments={"x": 1, "y": 2})
        return ModelResponse(tool_calls=[call])

    agent = AgentBuilder("a", FunctionModel(respond)).tool(add).build()
    report = await evals.evaluate(agent, [{"input": "add"}], [evals.contains("3")], max_turns=1)
    error = report.cases[0].error
    assert error.startswith("MaxTurnsError: ")
    assert f"{len(count)} tool calls were rejected" in error
    assert "no reviewer" in error and "approvals=" in error
    assert add.calls == []
