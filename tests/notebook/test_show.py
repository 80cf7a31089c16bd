"""``request.show()``'s machinery: live transcript, snapshot + batches, views, cell outputs."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from notebook_helpers import (
    Page,
    finished,
    gated_model,
    pending_approval,
    refund_tool,
    sent,
    until,
)

from anvia_notebook import AgentBuilder, PromptCancelledError, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, TextDelta, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._handle import RunHandle


async def loop_idle(limit: int = 10_000) -> None:
    """Yield until nothing but this waits to run on the loop: whatever an earlier message set
    off there (a decision taken, the run moving on from it) has happened by then. (Work waiting
    for a timer, I/O or a thread is not waited for: a decision is taken on the loop.)"""
    loop = asyncio.get_running_loop()
    for _ in range(limit):
        await asyncio.sleep(0)
        if not loop._ready:  # type: ignore[attr-defined]  # the callbacks ready to run
            return
    raise AssertionError("the loop never became idle")


def refund_agent(model, tool=None):
    return AgentBuilder("shop", model).name("Shop").tools([tool or refund_tool()]).build()


def refund_model(final: str = "Refund issued.") -> QueueModel:
    return QueueModel(
        [
            ModelResponse(
                text="I'll issue the refund.",
                tool_calls=[
                    ToolCall(
                        id="c1", name="issue_refund", arguments={"order_id": "A-1", "amount": 25}
                    )
                ],
            ),
            final,
        ]
    )


async def test_show_returns_a_live_handle_and_snapshot_plus_batches_replay_the_final_state():
    agent = AgentBuilder("echo", QueueModel(["Hello **there**, a longer answer."])).build()
    handle = runner.show(agent.prompt("Hi"))
    assert isinstance(handle, RunHandle)
    assert handle.widget.mode == "transcript"
    page = Page(handle.widget)
    await page.sync()
    response = await handle
    await finished(handle)
    page.pump()
    assert response.output == "Hello **there**, a longer answer."
    assert handle.done and handle.status == "success"
    final = handle.session.state()
    assert page.state.gaps == 0
    assert page.state.transcript() == final
    kinds = [e["kind"] for e in final["entries"]]
    assert kinds == ["user", "assistant"]
    assert final["entries"][0]["text"] == "Hi"
    assert final["status"]["state"] == "success"
    assert handle.transcript == final["entries"]
    assert [e.type for e in handle.events][-1] == "final"


async def test_a_view_that_syncs_mid_run_ends_with_the_same_state():
    gate = asyncio.Event()

    async def stream(request):
        for index in range(50):
            yield TextDelta(delta=f"w{index} ")
            if index == 20:
                await gate.wait()

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    early = Page(handle.widget)
    await early.sync()
    await until(lambda: "w20" in json.dumps(handle.transcript), what="half the text")
    late = Page(handle.widget)  # joins now: it missed everything before
    await late.sync()
    assert late.state.seq == handle.session.batcher.seq
    gate.set()
    await finished(handle)
    early.pump()
    late.pump()
    final = handle.session.state()
    assert early.state.transcript() == final == late.state.transcript()
    assert early.state.gaps == 0 and late.state.gaps == 0
    assert final["entries"][1]["text"] == "".join(f"w{i} " for i in range(50))


async def test_approve_runs_the_tool_and_the_entry_goes_through_its_statuses():
    tool = refund_tool()
    handle = runner.show(refund_agent(refund_model(), tool).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    assert entry["status"] == "approval_required"
    assert entry["approval"]["reason"] == "Review refund of $25.0 for order A-1."
    assert entry["approval"]["args"] == {
        "order_id": "A-1",
        "amount": 25.0,
        "reason": "Damaged item",
    }
    assert handle.status == "waiting"
    assert page.state.status["state"] == "waiting"
    reply = await page.approve(entry["approval"]["id"])
    assert reply == {"type": "reply", "request_id": reply["request_id"], "ok": True, "error": None}
    response = await handle
    await finished(handle)
    page.pump()
    tool_entry = page.state.by_id(entry["id"])
    assert tool_entry["status"] == "done"
    assert tool_entry["approval"]["status"] == "approved"
    assert tool_entry["approval"]["decided_by"] == "human"
    assert tool_entry["approval"]["decided_at"]
    assert json.loads(tool_entry["result"])["refund_id"] == "rf_a-1"
    assert tool_entry["output"] == "refunding A-1\n"  # the tool's print
    assert len(tool.calls) == 1
    assert response.output == "Refund issued."
    assert page.state.transcript() == handle.session.state()


async def test_reject_with_a_reason_the_model_sees_it():
    model = refund_model("Okay, no refund.")
    tool = refund_tool()
    handle = runner.show(refund_agent(model, tool).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    reply = await page.approve(entry["approval"]["id"], approved=False, reason="Over budget")
    assert reply["ok"]
    await handle
    await finished(handle)
    page.pump()
    tool_entry = page.state.by_id(entry["id"])
    assert tool_entry["status"] == "rejected"
    assert tool_entry["approval"]["status"] == "rejected"
    assert tool_entry["approval"]["decision_reason"] == "Over budget"
    assert tool.calls == []
    last_tool_message = [m for m in model.requests[1].messages if m.role == "tool"][-1]
    assert last_tool_message.tool_results[0].content == "Over budget"
    assert tool_entry["result"] == "Over budget"


async def test_edited_arguments_invalid_are_refused_then_valid_ones_are_used():
    tool = refund_tool()
    handle = runner.show(refund_agent(refund_model(), tool).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    approval_id = entry["approval"]["id"]
    bad = await page.approve(approval_id, edited_args={"order_id": "A-1", "amount": "lots"})
    assert bad["ok"] is False
    assert "amount" in bad["error"] and "not valid" in bad["error"]
    await loop_idle()  # had the refused decision been taken, the run would have moved on
    handle.session.batcher.flush()  # and the page would see it now
    assert page.tools()[0]["approval"]["status"] == "pending"  # still pending
    assert handle.status == "waiting"
    assert tool.calls == []
    good = await page.approve(approval_id, edited_args={"order_id": "A-1", "amount": 10})
    assert good["ok"], good
    await handle
    await finished(handle)
    assert [c.amount for c in tool.calls] == [10.0]
    tool_entry = page.tools()[0]
    assert tool_entry["approval"]["edited_args"] == {"order_id": "A-1", "amount": 10}
    assert tool_entry["status"] == "done"


async def test_always_allow_approves_later_calls_of_that_tool_by_policy():
    tool = refund_tool()
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
                ]
            ),
            ModelResponse(
                tool_calls=[
                    ToolCall(id="c2", name="issue_refund", arguments={"order_id": "B", "amount": 2})
                ]
            ),
            "Both refunded.",
        ]
    )
    handle = runner.show(refund_agent(model, tool).prompt("two refunds"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    reply = await page.approve(entry["approval"]["id"], always_allow=True)
    assert reply["ok"]
    await handle
    await finished(handle)
    tools = page.tools()
    assert [t["approval"]["decided_by"] for t in tools] == ["human", "policy"]
    assert [t["status"] for t in tools] == ["done", "done"]
    assert [c.order_id for c in tool.calls] == ["A", "B"]
    approvals = [e for e in handle.events if e.type == "tool_approval_result"]
    assert [a.approval.decided_by for a in approvals] == ["human", "policy"]


async def test_forged_duplicate_and_late_messages_are_refused_and_change_nothing():
    handle = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    approval_id = entry["approval"]["id"]
    before = handle.session.state()

    forged = await page.approve("approval_forged")
    assert forged["ok"] is False and "Unknown approval" in forged["error"]
    wrong_kind = await page.answer(approval_id, [{"questionId": "q", "answer": "x"}])
    assert wrong_kind["ok"] is False
    malformed = await page.request("approval_decision", approval_id=approval_id, approved="yes")
    assert malformed["ok"] is False and "approved" in malformed["error"]
    unknown = await page.request("launch_missiles")
    assert unknown["ok"] is False and "Unknown message type" in unknown["error"]
    edited_not_object = await page.request(
        "approval_decision",
        approval_id=approval_id,
        approved=True,
        reason=None,
        edited_args=[1, 2],
        always_allow=False,
    )
    assert edited_not_object["ok"] is False
    handle.widget._handle_custom_msg("not an object", [])
    await until(lambda: sent(handle.widget)[-1]["type"] == "reply")
    assert sent(handle.widget)[-1]["ok"] is False
    await loop_idle()  # what any of them set off on the loop has happened
    assert handle.session.state() == before
    assert handle.status == "waiting"

    first = page.post(
        {
            "type": "approval_decision",
            "approval_id": approval_id,
            "approved": True,
            "reason": None,
            "edited_args": None,
            "always_allow": False,
        }
    )
    second = await page.approve(approval_id, approved=False)  # a double click
    assert (await page.reply_to(first))["ok"] is True
    assert second["ok"] is False and "already" in second["error"]
    await handle
    await finished(handle)
    late = await page.approve(approval_id)
    assert late["ok"] is False and "already approved" in late["error"]
    assert page.tools()[0]["approval"]["status"] == "approved"


async def test_stop_while_waiting_on_an_approval_cancels_everything():
    tool = refund_tool()
    handle = runner.show(refund_agent(refund_model(), tool).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    reply = await page.request("stop", reason="Changed my mind")
    assert reply["ok"]
    with pytest.raises(PromptCancelledError, match="Changed my mind"):
        await handle
    await finished(handle)
    page.pump()
    tool_entry = page.state.by_id(entry["id"])
    assert tool_entry["status"] == "cancelled"
    assert tool_entry["approval"]["status"] == "cancelled"
    assert tool.calls == []
    assert page.state.status["state"] == "cancelled"
    assert page.state.entries[-1] == {
        "kind": "notice",
        "id": page.state.entries[-1]["id"],
        "text": "Run cancelled: Changed my mind",
    }
    assert handle.status == "cancelled"
    again = await page.request("stop", reason=None)  # (a view that had not heard of it yet)
    assert again == {**again, "ok": True, "error": None}
    late = await page.approve(entry["approval"]["id"])
    assert late["ok"] is False


async def test_stop_in_a_second_view_after_the_first_stopped_the_run_is_no_error():
    # The same handle shown twice: Stop in one view, then in the other before its status said
    # so. The run's state already says it stopped: the second Stop is not refused.
    gate = asyncio.Event()
    handle = runner.show(AgentBuilder("a", gated_model(gate)).build().prompt("hi"))
    first, second = Page(handle.widget), Page(handle.widget)
    await first.sync()
    await second.sync()
    assert (await first.request("stop", reason=None))["ok"]
    await finished(handle)
    assert handle.status == "cancelled"
    reply = await second.request("stop", reason=None)
    assert (reply["ok"], reply["error"]) == (True, None)
    second.pump()
    assert second.state.status["state"] == "cancelled"
    assert [e["text"] for e in second.state.entries if e["kind"] == "notice"] == [
        "Run cancelled: Stopped by the user."
    ]


async def test_stop_after_the_run_finished_is_no_error():
    handle = runner.show(AgentBuilder("a", QueueModel(["done"])).build().prompt("hi"))
    page = Page(handle.widget)
    await page.sync()
    await finished(handle)
    assert handle.status == "success"
    reply = await page.request("stop", reason=None)
    assert (reply["ok"], reply["error"]) == (True, None)
    page.pump()
    assert page.state.status["state"] == "success"


async def test_stop_while_an_async_tool_runs_cancels_the_tool():
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(args, ctx):
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "finished"

    from pydantic import BaseModel

    class Empty(BaseModel):
        pass

    tool = create_tool(name="slow", description="Slow.", input=Empty, execute=slow)
    model = QueueModel([ModelResponse(tool_calls=[ToolCall(id="s1", name="slow")]), "never"])
    handle = runner.show(AgentBuilder("a", model).tools([tool]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await asyncio.wait_for(started.wait(), 5)
    assert page.tools()[0]["status"] == "running"
    assert handle.cancel("Stop pressed")
    with pytest.raises(PromptCancelledError):
        await handle
    await finished(handle)
    assert cancelled.is_set()
    tool_entry = page.tools()[0]
    assert tool_entry["status"] == "cancelled"
    assert page.state.status["state"] == "cancelled"


async def test_approval_timeout_is_recorded_and_the_model_is_told():
    from anvia_notebook.notebook._human_input import WidgetHumanInput

    model = refund_model("Timed out, sorry.")
    handle = runner.show(refund_agent(model).prompt("Refund A-1"), timeout=0.05)
    assert isinstance(handle.session.human_input, WidgetHumanInput)
    assert handle.session.human_input.timeout == 0.05
    page = Page(handle.widget)
    await page.sync()
    response = await handle
    await finished(handle)
    tool_entry = page.tools()[0]
    assert tool_entry["status"] == "timed_out"
    assert tool_entry["approval"]["status"] == "timed_out"
    assert tool_entry["approval"]["decided_by"] == "timeout"
    assert "timed out" in tool_entry["result"]
    assert response.output == "Timed out, sorry."
    late = await page.approve(tool_entry["approval"]["id"])
    assert late["ok"] is False and "timed out" in late["error"]


async def test_decisions_from_another_thread_are_handed_to_the_loop():
    handle = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    loop_thread = threading.get_ident()
    handler_threads: list[int] = []
    original = handle.session._dispatch

    def spy(message):
        handler_threads.append(threading.get_ident())
        original(message)

    handle.session._dispatch = spy  # type: ignore[method-assign]
    message = {
        "type": "approval_decision",
        "request_id": "from-subshell",
        "approval_id": entry["approval"]["id"],
        "approved": True,
        "reason": None,
        "edited_args": None,
        "always_allow": False,
    }
    thread = threading.Thread(target=handle.widget._handle_custom_msg, args=(message, []))
    thread.start()
    await asyncio.to_thread(thread.join)
    assert (await page.reply_to("from-subshell"))["ok"]
    await handle
    assert handler_threads == [loop_thread]  # state touched on the loop only


async def test_tool_output_from_a_sync_tool_thread_and_from_display_is_captured(capsys):
    from pydantic import BaseModel

    class Empty(BaseModel):
        pass

    def noisy(args, ctx):
        print("line one")
        print("to stderr", file=__import__("sys").stderr)
        return "ok"

    async def anoisy(args, ctx):
        print("async line")
        return "ok"

    tools = [
        create_tool(name="noisy", description="", input=Empty, execute=noisy),
        create_tool(name="anoisy", description="", input=Empty, execute=anoisy),
    ]
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[ToolCall(id="n1", name="noisy"), ToolCall(id="n2", name="anoisy")]
            ),
            "done",
        ]
    )
    handle = runner.show(AgentBuilder("a", model).tools(tools).build().prompt("go"))
    print("outside any tool")
    await handle
    await finished(handle)
    outputs = {e["tool_name"]: e["output"] for e in handle.transcript if e["kind"] == "tool"}
    assert outputs == {"noisy": "line one\nto stderr\n", "anoisy": "async line\n"}
    captured = capsys.readouterr()
    assert "outside any tool" in captured.out
    assert "line one" not in captured.out and "to stderr" not in captured.err
    import sys

    from anvia_notebook.notebook._capture import _StreamProxy

    assert not isinstance(sys.stdout, _StreamProxy)  # restored after the run


async def test_display_inside_a_tool_goes_to_its_entry():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from pydantic import BaseModel

    class Empty(BaseModel):
        pass

    class Shown:
        def __repr__(self) -> str:
            return "<a shown object>"

    def shows(args, ctx):
        display(Shown())
        return "ok"

    shell = InteractiveShell.instance()
    try:
        tool = create_tool(name="shows", description="", input=Empty, execute=shows)
        model = QueueModel([ModelResponse(tool_calls=[ToolCall(id="d1", name="shows")]), "done"])
        handle = runner.show(AgentBuilder("a", model).tools([tool]).build().prompt("go"))
        await handle
        await finished(handle)
        entry = next(e for e in handle.transcript if e["kind"] == "tool")
        assert entry["output"] == "<a shown object>\n"
        assert "publish" not in shell.display_pub.__dict__  # unwrapped again
    finally:
        InteractiveShell.clear_instance()


async def test_cell_output_gets_a_static_html_copy_at_the_end(outputs, cell):
    handle = runner.show(
        AgentBuilder("a", QueueModel(["<script>alert(1)</script> **bold**"]))
        .build()
        .prompt("Hi <b>")
    )
    assert len(outputs.shown()) == 1
    shown = outputs.shown()[0]
    assert "application/vnd.jupyter.widget-view+json" in shown["data"]
    await finished(handle)
    updates = outputs.updates()
    assert len(updates) == 1
    update = updates[0]
    assert update["display_id"] == shown["display_id"]
    assert update["parent"] == cell.parent()  # routed to the cell that showed the run
    html = update["data"]["text/html"]
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Hi &lt;b&gt;" in html
    # the final copy replaces the widget: a reopened notebook has no model to look for
    assert "application/vnd.jupyter.widget-view+json" not in update["data"]
    assert "Assistant: <script>" in update["data"]["text/plain"]


async def test_arguments_nested_too_deeply_to_lay_out_leave_the_run_and_its_copy_whole(
    outputs, cell
):
    """A model's arguments nested 3,000 levels deep (6 KB) made the saved copy raise
    RecursionError: ``await handle`` raised it although the run had succeeded, and the saved
    copy stayed "Running" with the user's message alone."""
    from pydantic import BaseModel

    class Payload(BaseModel):
        payload: object = None

    echo = create_tool(
        name="echo", description="Echo.", input=Payload, execute=lambda args, ctx: "ok"
    )
    deep = '{"payload": ' + "[" * 3000 + "]" * 3000 + "}"
    model = QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="echo", arguments=deep)]), "answered"]
    )
    handle = runner.show(AgentBuilder("deep", model).tool(echo).build().prompt("go"))
    response = await handle
    assert response.output == "answered"
    [update] = outputs.updates()
    assert "answered" in update["data"]["text/html"] and "Done" in update["data"]["text/plain"]
    assert "[[[[" in update["data"]["text/html"]  # the arguments, shown as sent


async def test_a_saved_copy_that_cannot_be_made_is_said_and_the_run_goes_on(
    outputs, cell, monkeypatch, caplog
):
    from anvia_notebook.notebook import _session

    def broken(*args, **kwargs):
        raise RuntimeError("cannot lay this out")

    monkeypatch.setattr(_session, "render_html", broken)
    handle = runner.show(AgentBuilder("a", QueueModel(["fine"])).build().prompt("Hi"))
    assert (await handle).output == "fine"
    [update] = outputs.updates()
    assert "this saved copy could not be made" in update["data"]["text/html"]
    assert "cannot lay this out" in caplog.text


async def test_displaying_the_handle_in_another_cell_shows_a_second_live_view(outputs, cell):
    gate = asyncio.Event()

    async def stream(request):
        yield TextDelta(delta="part one, ")
        await gate.wait()
        yield TextDelta(delta="part two")

    handle = runner.show(AgentBuilder("a", FunctionModel(stream)).build().prompt("go"))
    handle._ipython_display_()  # `request.show()` as the last line of the same cell
    assert len(outputs.shown()) == 1
    cell.msg_id = "cell-2"
    handle._ipython_display_()
    assert len(outputs.shown()) == 2
    second = outputs.shown()[1]
    assert second["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] == (
        handle.widget.model_id
    )
    first_view = Page(handle.widget, from_start=True)
    second_view = Page(handle.widget)
    await second_view.sync()
    gate.set()
    await finished(handle)
    first_view.pump()
    second_view.pump()
    final = handle.session.state()
    assert second_view.state.transcript() == final
    assert first_view.state.transcript() == final
    updates = outputs.updates()
    assert {u["display_id"] for u in updates} == {c["display_id"] for c in outputs.shown()}
    assert {u["parent"]["header"]["msg_id"] for u in updates} == {"cell-1", "cell-2"}
    data, _ = handle._repr_mimebundle_()
    assert "part one, part two" in data["text/html"]


async def test_an_error_ends_the_transcript_with_an_error_entry():
    from anvia_notebook.models import ModelError

    async def broken(request):
        yield TextDelta(delta="thinking")
        raise ModelError("provider exploded")

    handle = runner.show(AgentBuilder("a", FunctionModel(broken)).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    with pytest.raises(ModelError):
        await handle
    await finished(handle)
    page.pump()
    assert page.state.entries[-1]["kind"] == "error"
    assert page.state.entries[-1]["text"] == "provider exploded"
    assert page.state.status["state"] == "error"
    assert page.state.status["error"] == "provider exploded"
    assert handle.status == "error"


async def test_show_attaches_no_widget_input_when_the_request_has_its_own():
    from anvia_notebook import CallbackHumanInput

    request = (
        refund_agent(refund_model())
        .prompt("Refund A-1")
        .human_input(CallbackHumanInput(approve=lambda r: True))
    )
    handle = runner.show(request)
    page = Page(handle.widget)
    await page.sync()
    await handle
    await finished(handle)
    tool_entry = page.tools()[0]
    assert tool_entry["approval"]["status"] == "approved"
    refused = await page.approve(tool_entry["approval"]["id"])
    assert refused["ok"] is False


async def test_interrupting_the_cell_that_awaits_the_handle_stops_the_run():
    tool = refund_tool()
    handle = runner.show(refund_agent(refund_model(), tool).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()

    entered = asyncio.Event()

    async def cell_body():
        entered.set()
        return await handle  # `await handle` in a cell; Kernel > Interrupt cancels this task

    awaiting = asyncio.ensure_future(cell_body())
    entry = await pending_approval(page)
    await entered.wait()
    awaiting.cancel()
    with pytest.raises(PromptCancelledError, match="interrupted") as raised:
        await awaiting
    assert handle.done and handle.status == "cancelled"
    assert raised.value.messages[-1].role == "tool"
    page.pump()
    assert page.state.by_id(entry["id"])["approval"]["status"] == "cancelled"
    notice = page.state.entries[-1]["text"]
    assert notice.startswith("Run cancelled: ") and "interrupted" in notice
    assert tool.calls == []


async def test_running_a_cell_again_stops_the_run_it_showed_before(cell):
    cell.cell_id = "cell-a"
    old = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
    old_page = Page(old.widget)
    await old_page.sync()
    await pending_approval(old_page)
    cell.msg_id, cell.cell_id = "cell-2", "cell-b"  # another cell shows another run
    other = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
    other_page = Page(other.widget)
    await other_page.sync()
    await pending_approval(other_page)

    cell.msg_id, cell.cell_id = "cell-3", "cell-a"
    cell.run_again("cell-4")  # the first cell runs again
    with pytest.raises(PromptCancelledError, match="was run again"):
        await asyncio.wait_for(old.wait(), 10)
    old_page.pump()
    notice = old_page.state.entries[-1]["text"]
    assert notice.startswith("Run cancelled: ") and "was run again" in notice
    assert old_page.tools()[0]["approval"]["status"] == "cancelled"
    again = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
    again_page = Page(again.widget)
    await again_page.sync()
    await pending_approval(again_page)  # the run shown by this execution is left alone
    assert other.status == "waiting" and again.status == "waiting"
    other.cancel()
    again.cancel()
    await finished(other)
    await finished(again)


async def test_a_waiting_approval_carries_its_deadline_for_the_countdown(monkeypatch):
    from datetime import datetime, timedelta, timezone

    from anvia_notebook import records

    now = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
    monkeypatch.setattr(records, "utc_now", lambda: now)  # the records' clock, stopped
    handle = runner.show(refund_agent(refund_model()).prompt("Refund A-1"), timeout=120)
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    expires = datetime.fromisoformat(entry["approval"]["expires_at"])
    assert expires == now + timedelta(seconds=120)  # asked at `now`, 120 s to decide
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await finished(handle)
    page.pump()
    assert "expires_at" not in page.tools()[0]["approval"]  # decided: no countdown any more


async def test_without_a_time_limit_there_is_no_deadline():
    handle = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    assert entry["approval"].get("expires_at") is None
    handle.cancel()
    await finished(handle)


@pytest.mark.parametrize("page", ["no page shows it", "a page shows it"])
def test_a_run_waiting_where_no_page_shows_its_widget_says_how_to_go_on(capfd, monkeypatch, page):
    """A notebook run unattended (nbconvert, papermill) without ANVIA_NOTEBOOK_AUTO waited at its
    approval until the cell timed out, with no word on what to do: the kernel's own error output
    (the terminal that runs them) says it once, on a virtual clock here."""
    import virtual_time

    from anvia_notebook.notebook import _session

    monkeypatch.delenv("ANVIA_NOTEBOOK_AUTO", raising=False)

    async def main() -> str:
        handle = runner.show(refund_agent(refund_model()).prompt("Refund A-1"))
        if page == "a page shows it":
            await Page(handle.widget).sync()
        await until(lambda: handle.pending, 10, "the approval")
        await asyncio.sleep(_session.UNSEEN_SECONDS + 1)
        said = capfd.readouterr().err
        handle.cancel("done")
        with pytest.raises(PromptCancelledError):
            await handle
        return said

    said = virtual_time.run(main)
    hints = [line for line in said.splitlines() if "no page shows" in line]
    if page == "a page shows it":
        assert hints == []
        return
    [waiting] = hints
    assert "waits for a person to decide approval approval_" in waiting
    assert "Set ANVIA_NOTEBOOK_AUTO=approve (or reject)" in waiting
    assert " -m anvia_notebook --store " in waiting and " show run_" in waiting
