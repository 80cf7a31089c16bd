"""A sub-agent with its own approval handler: its approvals are that handler's to decide, so
the top-level run's widget refuses a click on them (as it does for the top-level run's own
handler) and the call runs only with the handler's decision."""

from __future__ import annotations

import asyncio
from typing import Any

from notebook_helpers import Page, finished, refund_tool, until

from anvia_notebook import AgentBuilder, ApprovalDecision
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner


async def test_the_widget_refuses_a_click_on_a_sub_agent_s_approval_its_handler_decides():
    gate = asyncio.Event()
    asked: list[Any] = []

    async def handler(request: Any) -> ApprovalDecision:
        asked.append(request)
        await gate.wait()
        return ApprovalDecision(approved=False, reason="The handler said no.")

    refund = refund_tool()
    call = ToolCall(id="r1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
    clerk = (
        AgentBuilder("clerk", QueueModel([ModelResponse(tool_calls=[call]), "clerk done"]))
        .tools([refund])
        .approvals(handler)
        .build()
    )
    ask = ToolCall(id="a1", name="ask_clerk", arguments={"prompt": "refund A"})
    lead = (
        AgentBuilder("lead", QueueModel([ModelResponse(tool_calls=[ask]), "lead done"]))
        .tool(clerk.as_tool(name="ask_clerk"))
        .build()
    )
    handle = runner.show(lead.prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await until(lambda: asked, what="the clerk's handler is asked")
    [pending] = handle.pending
    reply = await page.approve(pending.id)
    assert reply["ok"] is False, reply
    assert refund.calls == []
    gate.set()
    await handle
    await finished(handle)
    assert refund.calls == []
    [record] = list(handle.run.children[0].state.approvals.values())
    assert (record.status, record.decided_by) == ("rejected", "handler")
