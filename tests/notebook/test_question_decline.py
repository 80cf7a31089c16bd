"""Declining a question from the widget (the form's Decline): only for a question a running
tool put to the person (an MCP server's elicitation); ``ask_question``'s are refused."""

from __future__ import annotations

import asyncio

import pytest
from notebook_helpers import Page, finished, pending_question
from pydantic import BaseModel
from test_questions_widget import agent, question_model

from anvia_notebook import AgentBuilder, Tool
from anvia_notebook._tool_exec import TOOL_CALL_QUESTIONS
from anvia_notebook.errors import DecisionRefusedError
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._snapshot import render_html
from anvia_notebook.question_types import Choice, Question

seen: list[tuple[str, str | None, str | None]] = []


class NoArgs(BaseModel):
    pass


async def _confirm(args: NoArgs, ctx: object) -> str:
    ask = TOOL_CALL_QUESTIONS.get()
    assert ask is not None
    question = Question(
        id="go", question="Go ahead?", choices=[Choice(label="Yes", value="yes")]
    )
    record = await ask([question])
    assert record is not None
    seen.append((record.status, record.decided_by, record.decided_via))
    return "declined" if record.status == "cancelled" else "answered"


def asking_agent(model: QueueModel):
    tool = Tool(name="confirm", description="Asks the person.", input=NoArgs, execute=_confirm)
    return AgentBuilder("ops", model).tools([tool]).build()


def confirm_model() -> QueueModel:
    return QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="confirm", arguments={})]), "ok"]
    )


async def test_a_question_a_tool_asks_is_declinable_and_decline_closes_it_for_the_person():
    seen.clear()
    model = confirm_model()
    handle = runner.show(asking_agent(model).prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    assert entry["question"]["declinable"] is True
    reply = await page.request("question_decline", question_id=entry["question"]["id"])
    assert reply["ok"], reply
    await handle
    await finished(handle)
    page.pump()
    question = page.state.by_id(entry["id"])["question"]
    assert question["status"] == "cancelled"
    assert (question["decided_by"], question["decided_via"]) == ("human", "widget")
    assert seen == [("cancelled", "human", "widget")]
    assert "Go ahead? — <em>declined</em>" in render_html(page.state.transcript())
    assert model.requests[1].messages[-1].tool_results[0].content == "declined"
    # Declined once: a second decline (or an answer) is refused.
    again = await page.request("question_decline", question_id=entry["question"]["id"])
    assert not again["ok"]


async def test_the_handle_declines_too():
    seen.clear()
    handle = runner.show(asking_agent(confirm_model()).prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    await pending_question(page)
    [record] = handle.pending
    declined = handle.decline(record)
    assert (declined.status, declined.decided_by, declined.decided_via) == ("cancelled", "human", "handle")
    await handle
    assert seen == [("cancelled", "human", "handle")]


async def test_ask_question_cannot_be_declined_and_stays_pending():
    handle = runner.show(agent(question_model()).prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    assert "declinable" not in entry["question"]
    reply = await page.request("question_decline", question_id=entry["question"]["id"])
    assert not reply["ok"]
    assert "cannot be declined" in reply["error"]
    with pytest.raises(DecisionRefusedError, match="cannot be declined"):
        handle.decline(entry["question"]["id"])
    await asyncio.sleep(0)
    page.pump()
    assert page.state.by_id(entry["id"])["question"]["status"] == "pending"
    handle.cancel("done with the test")
    await finished(handle)


async def test_declining_an_unknown_question_is_refused():
    handle = runner.show(agent(question_model()).prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    await pending_question(page)
    reply = await page.request("question_decline", question_id="q_nope")
    assert not reply["ok"] and "Unknown question" in reply["error"]
    handle.cancel("done with the test")
    await finished(handle)
