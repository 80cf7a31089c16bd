"""Texts from the page that are too long, contradict themselves, or show nothing: a Stop's
reason and an answer are bounded as a decision's reason is, an answer marked "not custom" must
be one of the choices, and a message made of invisible characters is no message."""

from __future__ import annotations

import asyncio

from notebook_helpers import (
    Page,
    finished,
    gated_model,
    pending_approval,
    pending_question,
    refund_tool,
)

from anvia_notebook import AgentBuilder, RunStore, Studio, ask_question
from anvia_notebook.decisions import MAX_REASON
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.question_types import MAX_ANSWER

CHOICES = [{"label": label, "value": label.lower()} for label in ("High", "Low")]
PRIORITY = {"questions": [{"id": "priority", "question": "Which priority?", "choices": CHOICES}]}


def asking() -> object:
    model = QueueModel([ModelResponse(tool_calls=[ToolCall("q1", "ask_question", PRIORITY)]), "ok"])
    return AgentBuilder("support", model).tools([ask_question]).build().prompt("triage")


async def test_a_stop_with_a_reason_of_megabytes_stops_and_keeps_a_reason_s_length(store_path):
    call = ToolCall("c1", "issue_refund", {"order_id": "A", "amount": 1})
    model = QueueModel([ModelResponse(tool_calls=[call]), "Done."])
    handle = runner.show(AgentBuilder("shop", model).tools([refund_tool()]).build().prompt("x"))
    page = Page(handle.widget)
    await page.sync()
    approval_id = (await pending_approval(page))["approval"]["id"]
    reply = await page.request("stop", reason="R" * 3_000_000)
    assert reply["ok"], reply  # a Stop is never refused
    await finished(handle)
    stored = RunStore(store_path).get(handle.run_id)
    assert stored.status == "cancelled"
    kept = stored.approvals[approval_id].decision_reason
    assert kept is not None and len(kept) <= MAX_REASON
    assert kept.startswith("RRRR") and kept.endswith("(3,000,000 characters, cut)")
    assert stored.cancel_reason == kept


async def test_an_answer_longer_than_an_answer_may_be_is_refused_and_the_question_still_waits():
    handle = runner.show(asking())
    page = Page(handle.widget)
    await page.sync()
    question_id = (await pending_question(page))["question"]["id"]
    long = [{"questionId": "priority", "answer": "x" * (MAX_ANSWER + 1), "custom": True}]
    reply = await page.answer(question_id, long)
    assert not reply["ok"]
    assert f"{MAX_ANSWER + 1:,} characters long; at most {MAX_ANSWER:,}" in reply["error"]
    fits = [{"questionId": "priority", "answer": "x" * MAX_ANSWER, "custom": True}]
    assert (await page.answer(question_id, fits))["ok"]
    await finished(handle)
    assert handle.run.state.status == "success"


async def test_an_answer_marked_not_custom_that_is_no_choice_is_refused():
    handle = runner.show(asking())
    page = Page(handle.widget)
    await page.sync()
    question_id = (await pending_question(page))["question"]["id"]
    reply = await page.answer(
        question_id, [{"questionId": "priority", "answer": "medium", "custom": False}]
    )
    assert not reply["ok"]
    assert "marked as not custom, but 'medium' is not one of its choices" in reply["error"]
    # A choice's value without ``choice`` is still that choice; a custom text is still custom.
    reply = await page.answer(
        question_id, [{"questionId": "priority", "answer": "low", "custom": False}]
    )
    assert reply["ok"], reply
    await finished(handle)


async def test_a_message_of_invisible_characters_starts_no_studio_run_and_steers_nothing():
    gate = asyncio.Event()
    studio = Studio([AgentBuilder("a", gated_model(gate)).build()])
    page = Page(studio.widget)
    await page.sync()
    invisible = "\u200b\u2060\ufeff \u200b"
    reply = await page.request("studio_send", agent_id="a", text=invisible)
    assert (reply["ok"], reply["error"]) == (False, "Type a message first.")
    assert not studio.busy
    assert (await page.request("studio_send", agent_id="a", text="hello"))["ok"]
    reply = await page.request("steer", text=invisible)
    assert (reply["ok"], reply["error"]) == (False, "The message is empty.")
    studio.stop()
    gate.set()
