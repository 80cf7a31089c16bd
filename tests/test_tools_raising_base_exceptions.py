"""What is not an ``Exception`` but is raised by the run's user code (a ``GeneratorExit``, a
library's own ``BaseException`` subclass): a tool's is a failed call the model is told of, as
any exception of a tool's is (API.md section 1: nothing a tool does fails the run); a hook's or
an approval policy's ends the run in error, with its ``error`` event and its stored end, as
any other error of theirs does (it was left "running", with no ``error`` event)."""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder, RunStore, ToolApproval, create_hook, create_tool
from anvia_notebook.models import QueueModel

from helpers import AddInput, call, tool_results


class Aborted(BaseException):
    """A library's own BaseException (as trio's Cancelled or gevent's GreenletExit are)."""


def _raises(error: BaseException, is_async: bool):
    def execute(args: AddInput, ctx: object) -> int:
        raise error

    async def execute_async(args: AddInput, ctx: object) -> int:
        raise error

    return execute_async if is_async else execute


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    "error", [Aborted("the worker went away"), GeneratorExit("the worker went away")]
)
async def test_a_tool_raising_a_base_exception_is_a_failed_call_the_model_is_told_of(
    store_path, error: BaseException, is_async: bool
) -> None:
    failing = create_tool(
        name="add", description="Add.", input=AddInput, execute=_raises(error, is_async)
    )
    seen: list[BaseException] = []
    model = QueueModel([call("add", {"x": 1, "y": 2}), "sorry"])
    agent = (
        AgentBuilder("a", model)
        .tool(failing)
        .hook(create_hook(on_tool_error=lambda event: seen.append(event.error)))
        .build()
    )
    events = []
    async for event in agent.prompt("go").stream():
        events.append(event)
    told = "ToolCallError: the worker went away"
    assert [r.content for r in tool_results(model.requests[1])] == [told]
    assert tool_results(model.requests[1])[0].is_error
    [result] = [e for e in events if e.type == "tool_result"]
    assert result.result == told and result.is_error
    assert events[-1].type == "final" and seen == [error]


def _boom(*_: object) -> None:
    raise Aborted("the audit log went away")


WHERE = ["on_tool_call", "on_tool_result", "on_turn_start", "approval when", "approval handler"]


def _agent(where: str):
    add = create_tool(
        name="add",
        description="Add.",
        input=AddInput,
        execute=lambda args, ctx: args.x + args.y,
        approval=(
            ToolApproval(when=_boom)
            if where == "approval when"
            else ToolApproval()
            if where == "approval handler"
            else None
        ),
    )
    builder = AgentBuilder("a", QueueModel([call("add", {"x": 1, "y": 2}), "3"])).tool(add)
    if where.startswith("on_"):
        builder = builder.hook(create_hook(**{where: _boom}))
    builder = builder.approvals(_boom if where == "approval handler" else lambda request: True)
    return builder.build()


@pytest.mark.parametrize("where", WHERE)
async def test_a_base_exception_elsewhere_ends_the_run_in_error(store_path, where: str) -> None:
    run = _agent(where).prompt("go").start()
    events: list = []
    run.subscribe(events.append)
    with pytest.raises(Aborted):
        await asyncio.wait_for(run.wait(), 60)
    assert run.status == "error"
    assert events[-1].type == "error" and "the audit log went away" in events[-1].error
    stored = RunStore(store_path).get(run.run_id)
    assert stored.status == "error" and "the audit log went away" in (stored.error or "")
    # Every call of the turn has its result in the conversation (a provider refuses it else).
    calls = [c.id for m in run.state.messages for c in m.tool_calls]
    answered = [r.tool_call_id for m in run.state.messages for r in m.tool_results]
    assert calls == answered
