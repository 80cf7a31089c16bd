"""Steering from the widget, kernel side without a browser: the page's ``steer`` message, the
steered message as a user bubble where the run delivered it, and the static copy's label."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from anvia_notebook import AgentBuilder, PromptCancelledError, ToolApproval
from anvia_notebook.models import QueueModel
from anvia_notebook.notebook._protocol import parse_outbound
from anvia_notebook.notebook._session import TranscriptSession
from anvia_notebook.notebook._snapshot import USER_LABEL_STEERED, render_html, render_text

from helpers import call, make_add_tool, make_gated_tool

pytestmark = pytest.mark.timeout(30)


def session_on_this_loop() -> tuple[TranscriptSession, list[dict[str, Any]]]:
    session = TranscriptSession(agent_id="a", loop=asyncio.get_running_loop())
    sent: list[dict[str, Any]] = []
    session._send = sent.append  # type: ignore[method-assign]
    return session, sent


def replies(sent: list[dict[str, Any]]) -> list[tuple[str, bool, str | None]]:
    return [(m["request_id"], m["ok"], m["error"]) for m in sent if m["type"] == "reply"]


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def kinds(session: TranscriptSession) -> list[tuple[str, str, bool]]:
    return [
        (e["kind"], e.get("text") or e.get("tool_name", ""), bool(e.get("steered")))
        for e in session.state()["entries"]
    ]


async def test_a_message_from_the_box_is_steered_into_the_run_and_shown_where_delivered():
    tool = make_gated_tool("work", "Work.")
    started, release = tool.started, tool.release
    model = QueueModel([call("work", {"x": 1, "y": 1}), "Two, split by region."])
    session, sent = session_on_this_loop()
    run = AgentBuilder("a", model).tool(tool).build().prompt("sum it").store(None).create_run()
    session.attach(run)
    run.start()
    await started.wait()
    session.handle_message({"type": "steer", "request_id": "p1", "text": "split it by region"})
    await settle()
    assert replies(sent) == [("p1", True, None)]
    release.set()
    await run.wait()
    await settle()
    assert model.requests[1].messages[-1].content == "split it by region"
    assert kinds(session) == [
        ("user", "sum it", False),
        ("tool", "work", False),
        ("user", "split it by region", True),
        ("assistant", "Two, split by region.", False),
    ]
    state = session.state()
    parse_outbound({"type": "snapshot", "seq": state["seq"], "transcript": state})
    assert f"{USER_LABEL_STEERED}: split it by region" in render_text(state)
    assert f"<strong>{USER_LABEL_STEERED}</strong>" in render_html(state)
    assert "You: sum it" in render_text(state)


async def test_a_steered_message_while_an_approval_waits_follows_that_turns_tool_result():
    add = make_add_tool(approval=ToolApproval(reason="check"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "3"])
    session, sent = session_on_this_loop()
    asked = asyncio.Event()

    async def handler(request: Any) -> bool:
        asked.set()
        await decided.wait()
        return True

    decided = asyncio.Event()
    request = AgentBuilder("a", model).tool(add).build().prompt("add").approvals(handler)
    run = request.store(None).create_run()
    session.attach(run)
    run.start()
    await asked.wait()
    session.handle_message({"type": "steer", "request_id": "p1", "text": "and in words"})
    await settle()
    assert replies(sent) == [("p1", True, None)]
    assert [k for k in kinds(session) if k[2]] == []  # not shown before it is delivered
    decided.set()
    await run.wait()
    await settle()
    assert kinds(session)[-2:] == [("user", "and in words", True), ("assistant", "3", False)]
    assert [e for e in run.events if e.type == "steering_message"][0].turn == 2


async def test_the_box_is_refused_for_a_blank_text_without_a_run_and_after_the_end():
    session, sent = session_on_this_loop()
    session.handle_message({"type": "steer", "request_id": "p1", "text": "hello"})
    await settle()
    run = AgentBuilder("a", QueueModel(["done"])).build().prompt("hi").store(None).create_run()
    session.attach(run)
    run.start()
    session.handle_message({"type": "steer", "request_id": "p2", "text": "  "})
    await run.wait()
    await settle()
    session.handle_message({"type": "steer", "request_id": "p3", "text": "too late"})
    session.handle_message({"type": "steer", "request_id": "p4"})  # breaks the protocol
    await settle()
    refused = "No run in progress: the message was not sent."
    answered = {request_id: (ok, error) for request_id, ok, error in replies(sent)}
    assert answered["p1"] == (False, refused)
    assert answered["p2"] == (False, "The message is empty.")
    assert answered["p3"] == (False, refused)
    ok, error = answered["p4"]  # refused at once, before it reaches the run
    assert not ok and "text" in (error or "")
    assert [k for k in kinds(session) if k[2]] == []


async def test_the_handle_steers_the_run_and_refuses_once_it_has_ended():
    """``RunHandle.steer`` (what ``show()`` returns) is ``request.steer``: True while the run
    goes, the message delivered after the turn's tool results; False once it has ended."""
    from notebook_helpers import finished

    from anvia_notebook.notebook import _runner as runner

    tool = make_gated_tool("work", "Work a while.")
    started, release = tool.started, tool.release
    model = QueueModel([call("work", {"x": 1, "y": 2}), "3, in words: three"])
    handle = runner.show(AgentBuilder("a", model).tool(tool).build().prompt("go").store(None))
    await started.wait()
    assert handle.steer("and in words") is True
    with pytest.raises(ValueError, match="empty"):
        handle.steer(" ")
    release.set()
    response = await handle
    await finished(handle)
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert model.requests[1].messages[-1].content == "and in words"
    assert handle.steer("too late") is False
    steered = [e for e in handle.transcript if e["kind"] == "user" and e.get("steered")]
    assert [e["text"] for e in steered] == ["and in words"]


async def test_a_message_box_text_that_is_not_valid_unicode_is_told_not_an_internal_error():
    tool = make_gated_tool("work", "Work.")
    model = QueueModel([call("work", {"x": 1, "y": 1}), "Two."])
    session, sent = session_on_this_loop()
    run = AgentBuilder("a", model).tool(tool).build().prompt("sum it").store(None).create_run()
    session.attach(run)
    run.start()
    await tool.started.wait()
    session.handle_message({"type": "steer", "request_id": "p1", "text": "by region \ud800"})
    session.handle_message({"type": "steer", "request_id": "p2", "text": "by region"})
    await settle()
    [(_, ok, error), second] = replies(sent)
    assert not ok and error is not None and "not valid text" in error
    assert not error.startswith("Internal error")
    assert second == ("p2", True, None)
    tool.release.set()
    await run.wait()
    assert [m.content for m in model.requests[1].messages][-1] == "by region"


async def test_a_message_the_run_never_read_because_stop_came_first_is_said_not_lost():
    tool = make_gated_tool("work", "Work.")
    model = QueueModel([call("work", {"x": 1, "y": 1}), "never"])
    session, sent = session_on_this_loop()
    run = AgentBuilder("a", model).tool(tool).build().prompt("sum it").store(None).create_run()
    session.attach(run)
    run.start()
    await tool.started.wait()
    session.handle_message({"type": "steer", "request_id": "p1", "text": "split it by region"})
    session.handle_message({"type": "stop", "request_id": "p2", "reason": None})
    await settle()
    assert sorted(replies(sent)) == [("p1", True, None), ("p2", True, None)]
    with pytest.raises(PromptCancelledError, match="Stopped by the user"):
        await run.wait()
    await settle()
    assert len(model.requests) == 1
    notices = [e["text"] for e in session.state()["entries"] if e["kind"] == "notice"]
    assert notices == [
        "Run cancelled: Stopped by the user.",
        "Not delivered, the run ended first: split it by region",
    ]
    assert "Not delivered, the run ended first: split it by region" in render_text(session.state())
