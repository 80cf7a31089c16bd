"""Safety paths of the widget's wire messages that mutation testing (scripts/mutation.py) found
untested, checked by what happens: which calls run, what stays pending, who decided.
"""

from __future__ import annotations

import logging

import pytest
from notebook_helpers import Page, finished, pending_approval, refund_tool, until

from anvia_notebook import AgentBuilder, RunStore, Studio, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner

from helpers import make_note_tool


def refund(call_id: str, order_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="issue_refund", arguments={"order_id": order_id, "amount": 1})


def approvals(page: Page) -> dict[str, dict]:
    """Each tool entry's approval, by the call's order id (refunds) or the tool's name."""
    shown = {}
    for entry in page.tools():
        approval = entry.get("approval")
        if approval:
            shown[approval["args"].get("order_id", entry["tool_name"])] = approval
    return shown


def note_tool():
    from anvia_notebook import ToolApproval

    return make_note_tool("write_note", "Write a note.", approval=ToolApproval())


async def test_always_allow_approves_the_other_pending_calls_of_that_tool_only():
    refunds, notes = refund_tool(), note_tool()
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    refund("c1", "A"),
                    refund("c2", "B"),
                    ToolCall(id="c3", name="write_note", arguments={"text": "hello"}),
                ]
            ),
            ModelResponse(tool_calls=[refund("c4", "C")]),
            "Done.",
        ]
    )
    agent = AgentBuilder("shop", model).tools([refunds, notes]).build()
    handle = runner.show(agent.prompt("refunds").with_tool_concurrency(3))
    page = Page(handle.widget)
    await page.sync()
    shown = await until(lambda: len(approvals(page)) == 3 and approvals(page), what="3 approvals")
    assert all(a["status"] == "pending" for a in shown.values())

    reply = await page.approve(shown["A"]["id"], always_allow=True)
    assert reply["ok"], reply
    await until(lambda: approvals(page)["B"]["status"] == "approved", what="B approved")
    decided = approvals(page)
    assert decided["A"]["decided_by"] == "human"
    assert decided["B"]["decided_by"] == "policy"
    assert decided["B"]["decision_reason"]  # the page says why it was approved unasked
    # Another tool is not covered by "Always allow issue_refund".
    assert decided["write_note"]["status"] == "pending"
    await until(lambda: len(refunds.calls) == 2, what="both refunds")
    assert notes.calls == []
    assert handle.status == "waiting"

    assert (await page.approve(decided["write_note"]["id"], approved=False))["ok"]
    await handle
    await finished(handle)
    assert sorted(c.order_id for c in refunds.calls) == ["A", "B", "C"]
    assert notes.calls == []
    later = approvals(page)["C"]
    assert (later["status"], later["decided_by"]) == ("approved", "policy")
    assert later["decision_reason"]


async def test_always_allow_leaves_a_call_another_process_just_rejected_rejected(store_path):
    refunds = refund_tool()
    model = QueueModel([ModelResponse(tool_calls=[refund("c1", "A"), refund("c2", "B")]), "Done."])
    agent = AgentBuilder("shop", model).tools([refunds]).build()
    handle = runner.show(agent.prompt("refunds").with_tool_concurrency(2))
    page = Page(handle.widget)
    await page.sync()
    shown = await until(lambda: len(approvals(page)) == 2 and approvals(page), what="approvals")

    # Another process rejects B through the run store; at once, the person approves A here
    # with "Always allow" ticked (before the run has heard of the rejection).
    RunStore(store_path).reject(handle.run_id, shown["B"]["id"], reason="no")
    reply = await page.approve(shown["A"]["id"], always_allow=True)
    assert reply["ok"], reply

    await handle
    await finished(handle)
    assert [c.order_id for c in refunds.calls] == ["A"]
    assert approvals(page)["B"]["status"] == "rejected"


async def test_stop_without_a_reason_cancels_with_the_same_reason_as_cancel():
    reasons = []
    for stop in ("page", "handle"):
        model = QueueModel([ModelResponse(tool_calls=[refund("c1", "A")]), "Done."])
        agent = AgentBuilder("shop", model).tools([refund_tool()]).build()
        handle = runner.show(agent.prompt("refund"))
        page = Page(handle.widget)
        await page.sync()
        await pending_approval(page)
        if stop == "page":
            assert (await page.request("stop", reason=None))["ok"]
        else:
            handle.cancel()
        await finished(handle)
        assert handle.status == "cancelled"
        reasons.append([e.reason for e in handle.events if e.type == "cancelled"])
    assert reasons[0] == reasons[1] and len(reasons[0]) == 1 and reasons[0][0]


@pytest.mark.parametrize("kind", ["question_answers", "approval_decision"])
async def test_a_decision_sent_before_any_run_is_refused_cleanly(
    kind: str, caplog: pytest.LogCaptureFixture
):
    studio = Studio([AgentBuilder("support", QueueModel(["Hi."])).build()])
    page = Page(studio.widget)
    await page.sync()
    caplog.set_level(logging.ERROR)
    if kind == "question_answers":
        reply = await page.answer("question_1", [{"questionId": "q", "answer": "x"}])
    else:
        reply = await page.approve("approval_1")
    assert reply["ok"] is False
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_message_this_widget_does_not_handle_is_refused():
    model = QueueModel([ModelResponse(tool_calls=[refund("c1", "A")]), "Done."])
    handle = runner.show(AgentBuilder("shop", model).tools([refund_tool()]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await pending_approval(page)
    reply = await page.request("studio_send", agent_id="shop", text="hello")
    assert reply["ok"] is False
    handle.cancel()
    await finished(handle)


async def test_a_failure_while_handling_a_decision_is_a_refusal_and_changes_nothing():
    from pydantic import BaseModel, field_validator

    from anvia_notebook import ToolApproval

    class PickyInput(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def _not_thirteen(cls, value: int) -> int:
            if value == 13:
                raise TypeError("unlucky")  # not a validation error: the check itself fails
            return value

    ran: list[int] = []
    tool = create_tool(
        name="picky",
        description="",
        input=PickyInput,
        execute=lambda args, ctx: ran.append(args.n) or "ok",
        approval=ToolApproval(),
    )
    model = QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="picky", arguments={"n": 1})]), "Done."]
    )
    handle = runner.show(AgentBuilder("a", model).tools([tool]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    approval_id = entry["approval"]["id"]
    reply = await page.approve(approval_id, edited_args={"n": 13})
    assert reply["ok"] is False
    assert ran == [] and handle.status == "waiting"
    assert (await page.approve(approval_id, edited_args={"n": 2}))["ok"]
    await handle
    await finished(handle)
    assert ran == [2]


@pytest.mark.parametrize("request_id", [5, True, ["r"], ""])
async def test_a_malformed_message_with_an_odd_request_id_gets_a_valid_refusal(
    request_id, caplog: pytest.LogCaptureFixture
):
    from notebook_helpers import sent

    model = QueueModel(["Hi."])
    handle = runner.show(AgentBuilder("a", model).build().prompt("go"))
    await finished(handle)
    caplog.set_level(logging.ERROR)
    before = len(sent(handle.widget))
    handle.widget._handle_custom_msg({"type": "approval_decision", "request_id": request_id}, [])
    replies = [m for m in sent(handle.widget)[before:] if m["type"] == "reply"]
    assert len(replies) == 1
    assert replies[0]["ok"] is False  # a valid reply (the recorder checks every message)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_what_a_running_tool_prints_shows_in_its_entry_while_it_runs():
    import asyncio

    from pydantic import BaseModel

    class In(BaseModel):
        pass

    go_on = asyncio.Event()

    async def execute(args: In, ctx) -> str:
        print("working on it")
        await go_on.wait()
        return "done"

    tool = create_tool(name="slow", description="", input=In, execute=execute)
    model = QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="slow", arguments={})]), "Done."]
    )
    handle = runner.show(AgentBuilder("a", model).tools([tool]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await until(
        lambda: any("working on it" in t["output"] for t in page.tools()), what="live output"
    )
    assert page.tools()[0]["status"] == "running"
    go_on.set()
    await handle
    await finished(handle)


async def test_work_handed_to_the_session_s_loop_runs_outside_the_caller_s_tool_call():
    """What a tool's thread hands to the session (its output, say) is not the tool's again."""
    import asyncio
    import threading

    from anvia_notebook._tool_exec import CURRENT_TOOL_CALL, CurrentToolCall
    from anvia_notebook.notebook._session import TranscriptSession

    session = TranscriptSession(agent_id="a", loop=asyncio.get_running_loop())
    seen: list = []
    done = asyncio.Event()

    def on_the_loop() -> None:
        seen.append(CURRENT_TOOL_CALL.get())
        done.set()

    def in_a_tool_call() -> None:
        CURRENT_TOOL_CALL.set(CurrentToolCall("run_1", "call_1", "add", "c1"))
        session.call_soon(on_the_loop)

    thread = threading.Thread(target=in_a_tool_call)
    thread.start()
    thread.join(5)
    await asyncio.wait_for(done.wait(), 5)
    assert seen == [None]


async def test_a_refused_always_allow_decision_allows_nothing():
    """An "Always allow" decision the run refuses (edited arguments its tool rejects) is the
    reply, and leaves the tool asked again: not the other waiting call, not a later one."""
    refunds = refund_tool()
    model = QueueModel(
        [
            ModelResponse(tool_calls=[refund("c1", "A"), refund("c2", "B")]),
            ModelResponse(tool_calls=[refund("c3", "C")]),
            "Done.",
        ]
    )
    agent = AgentBuilder("shop", model).tools([refunds]).build()
    handle = runner.show(agent.prompt("refunds").with_tool_concurrency(2))
    page = Page(handle.widget)
    await page.sync()
    shown = await until(lambda: len(approvals(page)) == 2 and approvals(page), what="approvals")

    bad = {"order_id": "A", "amount": "not a number"}
    reply = await page.approve(shown["A"]["id"], edited_args=bad, always_allow=True)
    assert not reply["ok"] and "amount" in reply["error"], reply
    human = handle.session.human_input
    assert human is not None and human.always_allowed == set()
    assert (await page.approve(shown["A"]["id"]))["ok"]
    await until(lambda: len(refunds.calls) == 1, what="A refunded")
    assert approvals(page)["B"]["status"] == "pending"

    assert (await page.approve(shown["B"]["id"]))["ok"]
    later = await until(lambda: approvals(page).get("C"), what="C asked")
    assert later["status"] == "pending"
    assert (await page.approve(later["id"], approved=False))["ok"]
    await handle
    await finished(handle)
    assert [c.order_id for c in refunds.calls] == ["A", "B"]


async def test_a_tool_printing_in_a_loop_shows_what_the_run_keeps_then_a_note():
    """Before, every print went to the page: a tool printing 30 MB grew the cell by 30 MB (and
    the saved notebook with it), while the run's trace kept the first 100,000 characters."""
    from pydantic import BaseModel

    from anvia_notebook.trace import OUTPUT_LIMIT

    class In(BaseModel):
        pass

    def execute(args: In, ctx) -> str:
        for n in range(3_000):
            print(f"{n:06d} " + "x" * 93)  # 101 characters a line with its end: 303,000
        return "done"

    tool = create_tool(name="loud", description="", input=In, execute=execute)
    model = QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="loud", arguments={})]), "Done."]
    )
    handle = runner.show(AgentBuilder("a", model).tools([tool]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await handle
    await finished(handle)
    page.pump()
    shown = page.tools()[0]["output"]
    kept = handle.run.trace.tool_calls[0].output
    assert shown == kept
    assert shown.startswith("000000 xxx") and shown.endswith("[... more output not kept]")
    assert OUTPUT_LIMIT < len(shown) < OUTPUT_LIMIT + 100
