"""Text that is not valid Unicode (a lone surrogate such as ``\\ud800``: a bad paste, JSON's
``"\\ud800"``, half of an emoji cut between two stream chunks, a file name read with
``surrogateescape``) on the notebook path.

- From the page: a decision or answer holding one is refused as bad input (no store can keep it,
  so accepting it would leave the run unstored); the item stays pending and decidable.
- To the page and into the saved copy: the kernel's message serialiser (jupyter_client's, UTF-8
  strict) cannot send it, so what would hold it goes out with U+FFFD in its place instead of
  being lost (a lost batch leaves the view stale; a lost copy leaves the saved notebook empty).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from jupyter_client.session import json_packer
from notebook_helpers import (
    Page,
    finished,
    pending_approval,
    pending_question,
    record_send,
    refund_tool,
    sent,
)

from anvia_notebook import AgentBuilder, ask_question
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._markdown import render_markdown
from anvia_notebook.notebook._session import TranscriptSession
from anvia_notebook.notebook._snapshot import render_html, render_text
from anvia_notebook.notebook._widget import AnviaWidget
from anvia_notebook.store import RunStore

BAD = "\ud800"
QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "Which priority?",
            "choices": [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}],
        }
    ]
}


def refund(call_id: str, order_id: str) -> ModelResponse:
    return ModelResponse(
        tool_calls=[
            ToolCall(id=call_id, name="issue_refund", arguments={"order_id": order_id, "amount": 1})
        ]
    )


@pytest.mark.parametrize(
    "decision",
    [
        {"approved": False, "reason": f"no {BAD} way"},
        {"approved": True, "edited_args": {"order_id": f"A{BAD}", "amount": 1}},
        {"approved": True, "edited_args": {f"order{BAD}": "A", "amount": 1}},
    ],
    ids=["reason", "edited-value", "edited-key"],
)
async def test_a_decision_holding_a_lone_surrogate_is_refused_and_the_run_stays_stored(
    store_path: Any, decision: dict[str, Any], caplog: pytest.LogCaptureFixture
):
    tool = refund_tool()
    agent = AgentBuilder("shop", QueueModel([refund("c1", "A"), "Done."])).tools([tool]).build()
    handle = runner.show(agent.prompt("refund"))
    page = Page(handle.widget)
    await page.sync()
    approval_id = (await pending_approval(page))["approval"]["id"]
    caplog.set_level(logging.ERROR)

    reply = await page.request(
        "approval_decision",
        approval_id=approval_id,
        reason=decision.get("reason"),
        edited_args=decision.get("edited_args"),
        approved=decision["approved"],
        always_allow=False,
    )
    assert reply["ok"] is False
    assert "not valid text" in reply["error"] and "\\ud800" in reply["error"], reply
    assert not reply["error"].startswith("Internal error")
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert page.tools()[0]["approval"]["status"] == "pending"

    assert (await page.approve(approval_id))["ok"]
    await handle
    await finished(handle)
    assert [c.order_id for c in tool.calls] == ["A"]
    store = RunStore(store_path)
    try:  # the run was stored to its end, not left "in memory only" by the bad text
        assert store.status(handle.run_id) == "success"
    finally:
        store.close()


async def test_an_answer_holding_a_lone_surrogate_is_refused_and_the_question_stays_open(
    store_path: Any,
):
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="q1", name="ask_question", arguments=QUESTIONS)]),
            "Escalated.",
        ]
    )
    handle = runner.show(AgentBuilder("support", model).tools([ask_question]).build().prompt("go"))
    page = Page(handle.widget)
    await page.sync()
    question_id = (await pending_question(page))["question"]["id"]
    reply = await page.answer(
        question_id, [{"questionId": "priority", "answer": f"hi{BAD}gh", "custom": True}]
    )
    assert reply["ok"] is False and "not valid text" in reply["error"], reply
    reply = await page.answer(question_id, [{"questionId": "priority", "answer": "high"}])
    assert reply["ok"], reply
    await handle
    await finished(handle)
    store = RunStore(store_path)
    try:
        assert store.status(handle.run_id) == "success"
    finally:
        store.close()


def strict_send(widget: AnviaWidget, content: Any, buffers: Any = None) -> None:
    """``AnviaWidget.send`` as the kernel's comm serialises it (UTF-8, strict)."""
    json_packer(content)
    record_send(widget, content, buffers)


async def test_text_with_a_lone_surrogate_still_reaches_the_page(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(AnviaWidget, "send", strict_send)
    session = TranscriptSession(agent_id="agent", loop=asyncio.get_running_loop())
    session.transcript.begin_run("run_1", "agent", f"list {BAD} files \udcff.csv")
    session.send_snapshot()
    [snapshot] = [m for m in sent(session.widget) if m["type"] == "snapshot"]
    [user] = snapshot["transcript"]["entries"]
    assert user["text"] == "list \ufffd files \ufffd.csv"  # one character for one, in place


def hostile_transcript() -> dict[str, Any]:
    tool = {
        "kind": "tool",
        "id": "e3",
        "turn": 1,
        "tool_name": f"ls{BAD}",
        "tool_call_id": "c1",
        "arguments": json.dumps({"path": f"a{BAD}"}, ensure_ascii=False),
        "status": "approval_required",
        "result": f"file \udcff.csv {BAD}",
        "is_error": False,
        "output": f"printed {BAD}",
        "approval": {
            "id": "approval_1",
            "status": "pending",
            "reason": f"why {BAD}",
            "args": {"path": f"a{BAD}"},
            "decided_by": None,
            "decided_at": None,
            "decision_reason": None,
            "edited_args": None,
        },
        "question": None,
    }
    return {
        "entries": [
            {"kind": "user", "id": "e1", "text": f"go {BAD}"},
            {"kind": "assistant", "id": "e2", "turn": 1, "text": f"**Sure** \ud83d {BAD}"},
            tool,
        ],
        "status": {
            "state": "waiting",
            "turn": 1,
            "input_tokens": 1,
            "output_tokens": 1,
            "error": None,
            "agent_id": f"agent{BAD}",
            "run_id": "run_1",
        },
        "seq": 3,
    }


def test_markdown_with_a_lone_surrogate_renders():
    assert render_markdown(f"**a** {BAD} b") == "<p><strong>a</strong> \ufffd b</p>\n"


def test_a_static_copy_of_text_with_lone_surrogates_can_be_saved():
    for html in (
        render_html(hostile_transcript(), f"Run {BAD}"),
        render_text(hostile_transcript()),
    ):
        json_packer({"text/html": html})  # what the kernel sends as the cell's output
        assert BAD not in html and "\ufffd" in html
