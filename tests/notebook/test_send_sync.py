"""``request.send_sync()`` in a cell: a worker-thread run, a blocked caller, a live widget."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from notebook_helpers import Page, pending_approval, refund_tool, until

from anvia_notebook import AgentBuilder, PromptCancelledError
from anvia_notebook.models import FunctionModel, ModelError, ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._session import TranscriptSession


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[TranscriptSession]:
    made: list[TranscriptSession] = []
    original = TranscriptSession.__init__

    def init(self: TranscriptSession, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(TranscriptSession, "__init__", init)
    return made


def refund_agent() -> Any:
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(
                        id="c1", name="issue_refund", arguments={"order_id": "A-1", "amount": 5}
                    )
                ]
            ),
            "Refund issued.",
        ]
    )
    return AgentBuilder("shop", model).tools([refund_tool()]).build()


def operator(sessions: list[TranscriptSession], act: Callable[[Page], Any]) -> threading.Thread:
    """A page in another thread (like a kernel subshell) that acts once the widget exists."""

    def main() -> None:
        async def go() -> None:
            await until(lambda: sessions, what="the widget")
            page = Page(sessions[0].widget, from_start=True)
            await page.sync()
            await act(page)

        asyncio.run(go())

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    return thread


def test_send_sync_returns_the_response_and_updates_the_cell_output(outputs, sessions):
    agent = AgentBuilder("a", QueueModel(["All good."])).build()
    response = runner.send_sync(agent.prompt("hi"))
    assert response.output == "All good."
    assert len(outputs.shown()) == 1
    assert len(outputs.updates()) == 1
    html = outputs.updates()[0]["data"]["text/html"]
    assert "All good." in html and "hi" in html
    session = sessions[0]
    assert session.loop is None  # the worker loop is gone; the session answers inline now
    page = Page(session.widget)
    asyncio.run(page.sync())
    assert page.state.transcript() == session.state()


def test_send_sync_approval_clicked_from_another_thread(sessions):
    async def act(page: Page) -> None:
        entry = await pending_approval(page)
        reply = await page.approve(entry["approval"]["id"])
        assert reply["ok"], reply

    thread = operator(sessions, act)
    response = runner.send_sync(refund_agent().prompt("refund"))
    thread.join(5)
    assert response.output == "Refund issued."
    tool = next(e for e in sessions[0].transcript.entries if e["kind"] == "tool")
    assert tool["status"] == "done"
    assert tool["output"] == "refunding A-1\n"


def test_send_sync_stop_from_the_widget_raises_prompt_cancelled(sessions):
    async def act(page: Page) -> None:
        await pending_approval(page)
        assert (await page.request("stop", reason="No thanks"))["ok"]

    thread = operator(sessions, act)
    with pytest.raises(PromptCancelledError, match="No thanks"):
        runner.send_sync(refund_agent().prompt("refund"))
    thread.join(5)
    tool = next(e for e in sessions[0].transcript.entries if e["kind"] == "tool")
    assert tool["status"] == "cancelled"
    assert tool["approval"]["status"] == "cancelled"


def test_send_sync_interrupt_cancels_the_run_and_waits_for_the_record(monkeypatch, sessions):
    real_wait = runner._wait
    calls = 0

    def wait(future: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            deadline = time.monotonic() + 5
            while sessions[0].run is None or sessions[0].run.status != "waiting":
                assert time.monotonic() < deadline
                time.sleep(0.002)
            raise KeyboardInterrupt
        return real_wait(future)

    monkeypatch.setattr(runner, "_wait", wait)
    with pytest.raises(PromptCancelledError) as raised:
        runner.send_sync(refund_agent().prompt("refund"))
    assert raised.value.reason == runner.INTERRUPT_REASON
    run = sessions[0].run
    assert run is not None and run.done and run.status == "cancelled"
    assert [e.type for e in run.events][-1] == "cancelled"
    tool = next(e for e in sessions[0].transcript.entries if e["kind"] == "tool")
    assert tool["approval"]["status"] == "cancelled"
    assert sessions[0].transcript.status["state"] == "cancelled"


def test_send_sync_reraises_the_run_error():
    async def broken(request: Any) -> Any:
        raise ModelError("no key")
        yield  # pragma: no cover

    agent = AgentBuilder("a", FunctionModel(broken)).build()
    with pytest.raises(ModelError, match="no key"):
        runner.send_sync(agent.prompt("hi"))


async def test_send_sync_inside_a_running_loop_blocks_it_without_deadlock(sessions):
    # A cell on ipykernel 7 runs inside the kernel's loop: send_sync blocks that thread while the
    # run goes on in its own thread; widget messages come from other threads meanwhile.
    async def act(page: Page) -> None:
        entry = await pending_approval(page)
        assert (await page.approve(entry["approval"]["id"]))["ok"]

    thread = operator(sessions, act)
    response = runner.send_sync(refund_agent().prompt("refund"))
    thread.join(5)
    assert response.output == "Refund issued."
