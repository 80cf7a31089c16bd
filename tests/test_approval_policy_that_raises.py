"""A function of a tool's ``ToolApproval`` that raises fails the run, as in Anvia, with an error
that names the tool and the function (it was the bare exception: ``ZeroDivisionError: division
by zero``, no tool named), what it raised kept as the cause."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, AnviaError, ToolApproval
from anvia_notebook.errors import ToolApprovalPolicyError
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
def test_a_policy_function_that_raises_names_the_tool_and_the_function(part):
    add = make_add_tool(approval=ToolApproval(**{part: broken}))
    agent = AgentBuilder("a", model()).tool(add).approvals(lambda request: True).build()
    with pytest.raises(ToolApprovalPolicyError) as raised:
        agent.prompt("go").send_sync()
    error = raised.value
    assert isinstance(error, AnviaError)
    assert error.tool_name == "add" and error.part == part
    assert isinstance(error.__cause__, ZeroDivisionError)
    assert str(error) == (
        f"The approval policy of the tool 'add' failed: its {part}= function raised "
        f"ZeroDivisionError: division by zero. Fix the function given to ToolApproval({part}=...)."
    )
    assert add.calls == []


async def test_an_async_policy_function_that_raises_is_named_too():
    add = make_add_tool(approval=ToolApproval(when=broken_async))
    agent = AgentBuilder("a", model()).tool(add).approvals(lambda request: True).build()
    with pytest.raises(ToolApprovalPolicyError, match=r"'add' .* when= .*KeyError: 'threshold'"):
        await agent.prompt("go").send()
