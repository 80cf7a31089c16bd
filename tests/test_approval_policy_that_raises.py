"""A function of a tool's ``ToolApproval`` that raises fails the run with what it raised, as in
Anvia (a parity test pins the type), and the run's error says where it came from: it was the
bare ``division by zero``, no tool named."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, ToolApproval
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

from helpers import make_add_tool


def broken(ctx):
    return 1 / 0


async def broken_async(ctx):
    raise KeyError("threshold")


def model():
    call = ToolCall(id="c1", name="add", arguments={"x": 1, "y": 2})
    return QueueModel([ModelResponse(tool_calls=[call]), "done"])


@pytest.mark.parametrize("part", ["when", "reason", "reject_message"])
async def test_a_policy_function_that_raises_is_named_in_the_run_s_error(part):
    add = make_add_tool(approval=ToolApproval(**{part: broken}))
    agent = AgentBuilder("a", model()).tool(add).approvals(lambda request: True).build()
    run = agent.prompt("go").store(None).create_run()
    run.start()
    with pytest.raises(ZeroDivisionError) as raised:
        await run.wait()
    said = (
        f"(raised by the {part}= function of the approval policy of the tool 'add': "
        f"ToolApproval({part}=...))"
    )
    assert said in getattr(raised.value, "__notes__", [])  # (a traceback shows it)
    assert run.state.status == "error"
    assert run.state.error == f"division by zero\n{said}"
    assert add.calls == []


async def test_an_async_policy_function_that_raises_is_named_too():
    add = make_add_tool(approval=ToolApproval(when=broken_async))
    agent = AgentBuilder("a", model()).tool(add).approvals(lambda request: True).build()
    run = agent.prompt("go").store(None).create_run()
    run.start()
    with pytest.raises(KeyError):
        await run.wait()
    assert "the when= function of the approval policy of the tool 'add'" in run.state.error
