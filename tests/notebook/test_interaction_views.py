"""What the widget and the saved copy say of an interaction, read from its one record: who
decided and from where, the reason typed before Approve, a record given to ``RunHandle``, and
the refusals the wire protocol and the session owe a page.
"""

from __future__ import annotations

import asyncio

from notebook_helpers import Page, finished, pending_approval, refund_tool, until

from anvia_notebook import AgentBuilder, RunStore
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._snapshot import render_html


def refund_model() -> QueueModel:
    arguments = {"order_id": "A-1", "amount": 5}
    return QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="c1", name="issue_refund", arguments=arguments)]),
            "Refund **issued**.",
        ]
    )


async def test_a_reason_typed_before_approve_is_recorded(store_path):
    tool = refund_tool()
    handle = runner.show(AgentBuilder("shop", refund_model()).tools([tool]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    approval_id = entry["approval"]["id"]
    assert (await page.approve(approval_id, reason=" Checked the order "))["ok"]
    await handle
    await finished(handle)
    [record] = RunStore(store_path).get(handle.run_id).approvals.values()
    assert (record.status, record.decision_reason) == ("approved", "Checked the order")
    assert (record.decided_by, record.decided_via) == ("human", "widget")
    page.pump()
    approval = page.tools()[0]["approval"]
    assert (approval["decision_reason"], approval["decided_via"]) == ("Checked the order", "widget")


async def test_a_decision_from_the_terminal_shows_as_such_in_the_widget(store_path):
    tool = refund_tool()
    handle = runner.show(AgentBuilder("shop", refund_model()).tools([tool]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    RunStore(store_path).approve(handle.run_id, entry["approval"]["id"], via="cli")
    await asyncio.wait_for(handle.wait(), 10)
    await finished(handle)
    page.pump()
    approval = page.tools()[0]["approval"]
    assert (approval["status"], approval["decided_by"], approval["decided_via"]) == (
        "approved",
        "human",
        "cli",
    )
    assert "Approval: approved from the terminal" in render_html(page.state.transcript())


async def test_the_handle_decides_a_record_it_lists():
    tool = refund_tool()
    agent = AgentBuilder("shop", refund_model()).tools([tool]).build()
    handle = runner.show(agent.prompt("go").store(None))
    await until(lambda: handle.pending, what="the approval")
    decided = handle.approve(handle.pending[0], reason="fine")
    assert (decided.status, decided.decided_via) == ("approved", "handle")
    await handle
    assert [c.order_id for c in tool.calls] == ["A-1"]


async def test_the_widget_refuses_a_decision_while_the_approval_handler_decides():
    handler_may_answer = asyncio.Event()

    async def handler(request):
        await handler_may_answer.wait()
        return False

    tool = refund_tool()
    agent = AgentBuilder("shop", refund_model()).tools([tool]).approvals(handler).build()
    handle = runner.show(agent.prompt("go").store(None))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    reply = await page.approve(entry["approval"]["id"])
    assert not reply["ok"] and "approval handler" in reply["error"]
    handler_may_answer.set()
    await handle
    assert tool.calls == []
    [record] = handle.run.state.approvals.values()
    assert (record.status, record.decided_by, record.decided_via) == (
        "rejected",
        "handler",
        "handler",
    )


async def test_an_approval_decision_without_always_allow_is_refused_by_the_protocol():
    tool = refund_tool()
    agent = AgentBuilder("shop", refund_model()).tools([tool]).build()
    handle = runner.show(agent.prompt("go").store(None))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    request_id = page.post(
        {
            "type": "approval_decision",
            "approval_id": entry["approval"]["id"],
            "approved": True,
            "reason": None,
            "edited_args": None,
        }
    )
    reply = await page.reply_to(request_id)
    assert not reply["ok"] and "always_allow" in reply["error"]
    assert handle.status == "waiting" and tool.calls == []
    assert (await page.approve(entry["approval"]["id"]))["ok"]  # a whole message still works
    await handle
    assert [c.order_id for c in tool.calls] == ["A-1"]


def test_the_model_s_markdown_is_rendered_in_the_static_copy_as_on_the_page():
    text = (
        "Refund **issued**. See [the policy](https://example.org/p) and "
        "![chart](https://example.org/c.png) [x](javascript:alert(1)) <b onclick=x>raw</b>"
    )
    transcript = {
        "status": {"state": "success", "turn": 1, "agent_id": "shop"},
        "entries": [{"kind": "assistant", "id": "a1", "turn": 1, "text": text}],
    }
    html = render_html(transcript)
    assert "Refund <strong>issued</strong>" in html
    assert '<a href="https://example.org/p"' in html
    assert "<img" not in html and '<a href="https://example.org/c.png"' in html  # as a link
    assert 'href="javascript' not in html  # shown as text, never a link
    assert "<b" not in html.replace("<br", "") and "&lt;b onclick=x&gt;" in html
