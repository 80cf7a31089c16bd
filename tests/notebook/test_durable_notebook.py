"""The notebook side of durable runs: RunHandle decisions, one source of truth shared with the
widget and the store, and a resumed run shown with its earlier transcript."""

from __future__ import annotations

import asyncio

import pytest
from notebook_helpers import Page, finished, pending_approval, refund_tool, until

from anvia_notebook import AgentBuilder, DecisionRefusedError, RunStore
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner


def refund_model() -> QueueModel:
    return QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(
                        id="c1", name="issue_refund", arguments={"order_id": "A-1", "amount": 25}
                    )
                ]
            ),
            "Refund issued.",
        ]
    )


def agent(model, tool=None):
    return AgentBuilder("shop", model).tools([tool or refund_tool()]).build()


async def test_the_handle_decides_and_the_widget_then_refuses(store_path):
    tool = refund_tool()
    handle = runner.show(agent(refund_model(), tool).prompt("refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    [record] = handle.pending
    assert record.id == entry["approval"]["id"]
    assert handle.status == "waiting"
    with pytest.raises(DecisionRefusedError, match="not valid"):
        handle.approve(record.id, args={"order_id": "A-1", "amount": "lots"})
    assert handle.pending == [record]  # a refused edit changes nothing
    handle.approve(record.id, reason="checked", args={"order_id": "A-1", "amount": 20})
    reply = await page.approve(record.id, approved=False)
    assert reply["ok"] is False and "already approved" in reply["error"]
    response = await handle
    assert response.output == "Refund issued."
    assert [(c.order_id, c.amount) for c in tool.calls] == [("A-1", 20.0)]
    assert handle.pending == []
    stored = RunStore(store_path).get(handle.run_id).approvals[record.id]
    assert stored.status == "approved" and stored.edited_args == {"order_id": "A-1", "amount": 20}


async def test_a_store_decision_reaches_a_shown_run_and_its_widget(store_path):
    tool = refund_tool()
    handle = runner.show(agent(refund_model(), tool).prompt("refund A-1"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    approval_id = entry["approval"]["id"]
    await asyncio.to_thread(RunStore(store_path).reject, handle.run_id, approval_id, "not today")
    await asyncio.wait_for(handle.wait(), 5)
    await finished(handle)
    page.pump()
    [tool_entry] = page.tools()
    assert tool_entry["status"] == "rejected"
    assert tool_entry["approval"]["decision_reason"] == "not today"
    assert tool.calls == []
    late = await page.approve(approval_id, approved=True)
    assert late["ok"] is False


async def test_answers_through_the_handle_are_checked(store_path):
    from anvia_notebook import ask_question

    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(
                        id="q1",
                        name="ask_question",
                        arguments={
                            "questions": [
                                {"id": "p", "question": "Priority?", "choices": ["low", "high"]}
                            ]
                        },
                    )
                ]
            ),
            "noted",
        ]
    )
    handle = runner.show(AgentBuilder("q", model).tools([ask_question]).build().prompt("go"))
    await until(lambda: handle.pending, what="the question")
    [question] = handle.pending
    with pytest.raises(DecisionRefusedError):
        handle.answer(question.id, [{"questionId": "p", "answer": "wire money", "choice": "low"}])
    handle.answer(question.id, [{"questionId": "p", "answer": "high", "choice": "high"}])
    assert (await handle).output == "noted"


async def test_a_resumed_run_shows_its_earlier_transcript_and_its_pending_approval(
    store_path, tmp_path, monkeypatch
):
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import store_agents

    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    tests = Path(__file__).parent.parent
    child = subprocess.Popen(  # noqa: ASYNC220 - the child starts at once; nothing awaits it
        [sys.executable, "-c", "import store_agents; store_agents.run('approval')"],
        env={**os.environ, "PYTHONPATH": str(tests)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store = RunStore(store_path)
    try:
        [approval] = await until(lambda: store.pending(), timeout=30, what="the child's approval")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    [summary] = store.runs()
    assert summary.status == "interrupted"
    handle = runner.show(store_agents.agent("approval").resume(summary.run_id))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    assert entry["approval"]["id"] == approval.id
    kinds = [e["kind"] for e in page.state.transcript()["entries"]]
    assert kinds[0] == "user" and kinds.count("tool") == 1 and "notice" in kinds
    assert kinds.index("notice") < kinds.index("tool")  # the note comes before what it announces
    reply = await page.approve(approval.id, approved=True)
    assert reply["ok"] is True
    assert "sent" in (await handle).output
    assert store_agents.effects() == ["started a1 5", "done a1 5"]


async def test_what_a_tool_printed_is_stored_with_its_call_and_shown_by_later_views(store_path):
    from anvia_notebook.notebook._session import TranscriptSession

    handle = runner.show(agent(refund_model()).prompt("Refund A-1").store(store_path))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_approval(page)
    assert (await page.approve(entry["approval"]["id"]))["ok"]
    await handle
    await finished(handle)
    [call] = RunStore(store_path).trace(handle.run_id).tool_calls
    assert call.output == "refunding A-1\n"  # in the store, with the call
    # Another view of the run (as a resumed run is drawn) shows it without the tool running again.
    later = TranscriptSession(agent_id="shop", loop=asyncio.get_running_loop())
    later.attach(handle.run)
    [tool] = [e for e in later.state()["entries"] if e["kind"] == "tool"]
    assert tool["output"] == "refunding A-1\n"
