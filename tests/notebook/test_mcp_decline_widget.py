"""An MCP server's elicitation in the widget: its question offers Decline, and the form's
Decline reaches the server as ``decline``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp_helpers import toolbox
from notebook_helpers import Page, finished, pending_question

from anvia_notebook import AgentBuilder, mcp
from anvia_notebook.models import QueueModel
from anvia_notebook.notebook import _runner as runner

from helpers import call, tool_results


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


async def _booking_form(server: str) -> tuple[QueueModel, Any, Page, dict[str, Any]]:
    """A run shown in the widget whose tool asks for the booking form of the test server
    ``server``: its model, handle, page and the form's pending entry."""
    model = QueueModel([call("book_table", {}), "done"])
    agent = AgentBuilder("a", model).mcp([toolbox(server)]).build()
    handle = runner.show(agent.prompt("book"))
    page = Page(handle.widget)
    await page.sync()
    return model, handle, page, await pending_question(page, timeout=60)


async def test_decline_in_the_form_answers_the_server_decline():
    model, handle, page, entry = await _booking_form("booker-widget")
    question = entry["question"]
    assert question["declinable"] is True
    assert [q["id"] for q in question["questions"]] == ["size", "outdoor", "guests", "note"]
    reply = await page.request("question_decline", question_id=question["id"])
    assert reply["ok"], reply
    await asyncio.wait_for(handle.wait(), 60)
    await finished(handle)
    assert tool_results(model.requests[1])[0].content == "decline"
    page.pump()
    shown = page.state.by_id(entry["id"])["question"]
    assert (shown["status"], shown["decided_by"], shown["decided_via"]) == (
        "cancelled",
        "human",
        "widget",
    )
    await mcp.close_all()


async def test_the_form_s_fields_of_fixed_values_take_no_custom_answer():
    """The page's view says which questions only their choices answer (``allowCustom:
    false``: the enum and the Yes/No field), so that the form shows them without a custom
    answer box; a custom text sent for one anyway is refused, and the question stays open."""
    model, handle, page, entry = await _booking_form("booker-closed")
    question = entry["question"]
    allow = {q["id"]: q.get("allowCustom") for q in question["questions"]}
    # Absent where a custom answer may answer it, as before the field (a page without it).
    assert allow == {"size": False, "outdoor": False, "guests": None, "note": None}
    answers = [
        {"questionId": "size", "answer": "medium", "custom": True},
        {"questionId": "outdoor", "answer": "true", "choice": "true"},
        {"questionId": "guests", "answer": "4", "custom": True},
        {"questionId": "note", "answer": "by the window", "custom": True},
    ]
    reply = await page.answer(question["id"], answers)
    assert not reply["ok"]
    assert reply["error"] == (
        "The answer to question 'size' must be one of its choices (small, large): this field "
        "takes no other answer; got 'medium'."
    )
    page.pump()
    assert page.state.by_id(entry["id"])["question"]["status"] == "pending"
    answers[0] = {"questionId": "size", "answer": "large", "choice": "large"}
    reply = await page.answer(question["id"], answers)
    assert reply["ok"], reply
    await asyncio.wait_for(handle.wait(), 60)
    await finished(handle)
    assert tool_results(model.requests[1])[0].content == (
        "accept size='large' outdoor=True guests=4 note='by the window'"
    )
    await mcp.close_all()
