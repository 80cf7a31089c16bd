"""``RunHandle`` and ``Studio`` from a cell, as a hostile (or hurried) user calls them: records
handed out that are edited, arguments of the wrong kind, a decision the widget would refuse."""

from __future__ import annotations

import pytest
from notebook_helpers import Page, finished, refund_tool, until

from anvia_notebook import AgentBuilder, DecisionRefusedError, Studio
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner


def _refund(amount: int) -> QueueModel:
    call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": amount})
    return QueueModel([ModelResponse(tool_calls=[call]), "Refunded."])


async def test_editing_a_pending_record_changes_nothing_the_run_holds():
    """``args = handle.pending[0].args; args["amount"] = 10; handle.approve(id, args=args)``:
    before, the edit rewrote the run's record of what the model asked (500), everywhere."""
    tool = refund_tool()
    handle = runner.show(AgentBuilder("shop", _refund(500)).tools([tool]).build().prompt("go"))
    await until(lambda: handle.pending, what="the approval")
    pending = handle.pending[0]
    args = pending.args
    args["amount"] = 10
    pending.status = "approved"  # (nothing the run holds either)
    held = handle.run.state.approvals[pending.id]
    assert held.args["amount"] == 500 and held.status == "pending"
    handle.approve(pending.id, args=args)
    await handle.wait()
    await finished(handle)
    record = handle.run.state.approvals[pending.id]
    assert (record.args["amount"], record.edited_args["amount"]) == (500, 10)
    assert [call.amount for call in tool.calls] == [10]


async def test_the_handle_refuses_an_approval_the_run_s_handler_decides_as_the_widget_does():
    decided = []

    async def handler(request):
        await until(lambda: decided, timeout=30, what="the cell's attempt")
        return False

    tool = refund_tool()
    agent = AgentBuilder("shop", _refund(5)).tools([tool]).approvals(handler).build()
    handle = runner.show(agent.prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    [pending] = await until(lambda: handle.pending, what="the approval")
    refused = await page.approve(pending.id)
    assert refused["ok"] is False and "approval handler" in refused["error"]
    with pytest.raises(DecisionRefusedError, match="decided by its approval handler"):
        handle.approve(pending.id)
    with pytest.raises(DecisionRefusedError, match="decided by its approval handler"):
        handle.reject(pending)
    decided.append(True)
    await handle.wait()
    await finished(handle)
    assert tool.calls == []  # the handler's rejection stands


async def test_a_reason_to_stop_that_is_not_a_text_is_refused_and_the_run_goes_on():
    tool = refund_tool()
    handle = runner.show(AgentBuilder("shop", _refund(5)).tools([tool]).build().prompt("go"))
    await until(lambda: handle.pending, what="the approval")
    with pytest.raises(TypeError, match="reason to stop must be a text or None, not int"):
        handle.cancel(5)
    assert not handle.done
    assert handle.cancel("enough") is True
    await finished(handle)
    assert handle.status == "cancelled"


async def test_studio_refuses_a_message_or_a_limit_of_the_wrong_kind_and_keeps_storing(
    store_path,
):
    """Before: ``send(None)`` raised "'NoneType' object has no attribute 'strip'", and
    ``sessions(limit=2.5)`` turned the Studio's storing off for good."""
    studio = Studio([AgentBuilder("a", QueueModel(["One.", "Two."])).build()])
    page = Page(studio.widget)
    await page.sync()
    for message in (None, b"hi", 123):
        with pytest.raises(TypeError, match="takes the message as a text"):
            studio.send(message)
    for limit in (2.5, "x", -1, True):
        with pytest.raises(ValueError, match="limit is the number of sessions"):
            studio.sessions(limit=limit)
    studio.send("first")
    await until(lambda: not studio.busy, what="the reply")
    assert [s.title for s in Studio([AgentBuilder("a", QueueModel([])).build()]).sessions()] == [
        "first"
    ]
    history = studio.history()
    history[0].content = "redacted"
    assert studio.history()[0].content == "first"


async def test_steered_messages_are_shown_as_what_they_are():
    """Before, an assistant's steered message and a tool message were user bubbles (the tool
    message an empty one)."""
    from anvia_notebook import Message
    from anvia_notebook.messages import MessageToolCall, ToolResultPart

    model = QueueModel(["First.", "Then."])
    request = AgentBuilder("a", model).build().prompt("go")
    call = MessageToolCall(id="s1", name="lookup", arguments='{"q":"west"}')
    result = ToolResultPart(tool_call_id="s1", tool_name="lookup", content="west +12%")
    request.steer(
        [
            Message(role="assistant", content="Earlier I looked it up.", tool_calls=[call]),
            Message(role="tool", tool_results=[result]),
            Message.user("So?"),
        ]
    )
    handle = runner.show(request)
    page = Page(handle.widget)
    await page.sync()
    await handle.wait()
    await finished(handle)
    page.pump()
    shown = [(e["kind"], e.get("text"), e.get("steered", False)) for e in page.state.entries]
    assert shown == [
        ("user", "go", False),
        ("assistant", "First.", False),
        ("assistant", "Earlier I looked it up.", False),
        ("notice", 'Sent into the run: a call of lookup ({"q":"west"})', False),
        ("notice", "Sent into the run: the result of lookup: west +12%", False),
        ("user", "So?", True),
        ("assistant", "Then.", False),
    ]
