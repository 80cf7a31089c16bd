"""Stop while an ``on_tool_result`` or ``on_tool_error`` hook still awaits: the tool had run
(its effect happened), yet the model, the ``tool_result`` events and the trace were told
"ToolCallCancelled: the run was stopped before this tool call finished", and the event log
had no result for it. A hook's own ``run.cancel(...)`` there reports the call's real result
(``test_hooks.py``); a Stop at the same point does the same now."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, PromptCancelledError, create_hook, create_tool
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool


class Nothing(BaseModel):
    pass


def _failing_tool():
    calls: list[int] = []

    def execute(args: Nothing, ctx: object) -> str:
        calls.append(1)
        raise ValueError("the refund was sent, but its receipt could not be written")

    failing = create_tool(name="refund", description="Refund.", input=Nothing, execute=execute)
    failing.calls = calls  # type: ignore[attr-defined]
    return failing


@pytest.mark.parametrize("hook", ["on_tool_result", "on_tool_error"])
async def test_stop_while_a_result_hook_awaits_reports_what_the_tool_did(hook: str) -> None:
    ran = make_add_tool() if hook == "on_tool_result" else _failing_tool()
    arguments = {"x": 1, "y": 2} if hook == "on_tool_result" else {}
    in_hook = asyncio.Event()

    async def audit(event: object) -> None:
        in_hook.set()
        await asyncio.Event().wait()  # (an audit store that does not answer)

    model = QueueModel([call(ran.name, arguments), "never"])
    agent = AgentBuilder("a", model).tool(ran).hook(create_hook(**{hook: audit})).build()
    run = agent.prompt("go").store(None).start()
    await asyncio.wait_for(in_hook.wait(), 30)
    run.cancel("stop")
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)
    assert len(ran.calls) == 1  # it ran
    said, is_error, status = (
        ("3", False, "success")
        if hook == "on_tool_result"
        else (
            "ToolCallError: the refund was sent, but its receipt could not be written",
            True,
            "error",
        )
    )
    [part] = [r for m in run.state.messages for r in m.tool_results]
    assert (part.content, part.is_error) == (said, is_error)
    [event] = [e for e in run.events if e.type == "tool_result"]
    assert (event.result, event.is_error) == (said, is_error)
    assert run.trace.tool_calls[0].status == status
