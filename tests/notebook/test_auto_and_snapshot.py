"""The scripted operator (``ANVIA_NOTEBOOK_AUTO``) and the static copy of a transcript."""

from __future__ import annotations

import json

import pytest
from notebook_helpers import finished, refund_tool

from anvia_notebook import AgentBuilder, ask_question
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._human_input import AUTO_ENV, AutoOperator, WidgetHumanInput
from anvia_notebook.notebook._snapshot import render_html, render_text

QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "Priority?",
            "choices": [{"label": "Low", "value": "low"}, {"label": "High", "value": "high"}],
        },
        {
            "id": "channel",
            "question": "Channel?",
            "choices": [{"label": "Email", "value": "email"}],
        },
    ]
}


def scripted_agent():
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="q1", name="ask_question", arguments=QUESTIONS)]),
            ModelResponse(
                tool_calls=[
                    ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A", "amount": 1})
                ]
            ),
            "Done.",
        ]
    )
    tool = refund_tool()
    return AgentBuilder("shop", model).tools([ask_question, tool]).build(), tool


@pytest.mark.parametrize(
    ("value", "approved", "answers"),
    [
        ("approve", True, {"priority": "low", "channel": "email"}),
        ("first-choice", True, {"priority": "low", "channel": "email"}),
        ("reject", False, {"priority": "low", "channel": "email"}),
        (
            '{"approve": true, "answers": {"priority": "High"}, "default_answer": "first-choice"}',
            True,
            {"priority": "high", "channel": "email"},
        ),
        (
            '{"approve": {"issue_refund": false}, "answers": {"priority": "urgent"}}',
            False,
            {"priority": "urgent", "channel": "email"},
        ),
    ],
)
async def test_the_scripted_operator_decides_by_itself(monkeypatch, value, approved, answers):
    monkeypatch.setenv(AUTO_ENV, value)
    agent, tool = scripted_agent()
    handle = runner.show(agent.prompt("go"))
    response = await handle
    await finished(handle)
    assert response.output == "Done."
    question_entry, refund_entry = [e for e in handle.transcript if e["kind"] == "tool"]
    got = {a["questionId"]: a["answer"] for a in question_entry["question"]["answers"]}
    assert got == answers
    assert refund_entry["approval"]["decided_by"] == "policy"
    assert refund_entry["approval"]["status"] == ("approved" if approved else "rejected")
    assert refund_entry["status"] == ("done" if approved else "rejected")
    assert len(tool.calls) == (1 if approved else 0)
    if not approved:
        assert "scripted operator" in refund_entry["result"]
    # Shown first: the request events were emitted (and flushed) before the decision.
    types = [e.type for e in handle.events]
    assert types.index("tool_approval_request") < types.index("tool_approval_result")


def test_auto_rules_parse_and_refuse_nonsense(monkeypatch):
    assert AutoOperator.parse("") is None
    assert AutoOperator.parse("off") is None
    assert AutoOperator.parse("approve") == AutoOperator(approve=True, source=f"{AUTO_ENV}=approve")
    with pytest.raises(ValueError, match=AUTO_ENV):
        AutoOperator.parse("sometimes")
    with pytest.raises(ValueError, match="invalid JSON rule"):
        AutoOperator.parse('{"aprove": true}')
    monkeypatch.setenv(AUTO_ENV, "reject")
    assert WidgetHumanInput().auto is not None
    assert WidgetHumanInput(auto=False).auto is None
    monkeypatch.delenv(AUTO_ENV)
    assert WidgetHumanInput().auto is None
    assert WidgetHumanInput(auto="approve").auto is not None


def test_static_html_is_escaped_and_script_free():
    transcript = {
        "entries": [
            {"kind": "user", "id": "e1", "text": "<img src=x onerror=alert(1)>"},
            {"kind": "assistant", "id": "e2", "turn": 1, "text": "# Title\n<script>x()</script>"},
            {"kind": "reasoning", "id": "e3", "turn": 1, "text": "hmm & <b>"},
            {
                "kind": "tool",
                "id": "e4",
                "turn": 1,
                "tool_name": "run<script>",
                "tool_call_id": "c1",
                "arguments": json.dumps({"html": "<a href='javascript:x'>"}),
                "status": "done",
                "result": "<iframe>",
                "is_error": False,
                "output": "<style>body{}</style>",
                "approval": {
                    "id": "a1",
                    "status": "approved",
                    "reason": "<why>",
                    "args": {},
                    "decided_by": "human",
                    "decided_at": None,
                    "decision_reason": None,
                    "edited_args": None,
                },
                "question": None,
            },
            {"kind": "error", "id": "e5", "text": "<oops>"},
            {"kind": "notice", "id": "e6", "text": "Run cancelled: <x>"},
        ],
        "status": {
            "state": "success",
            "turn": 1,
            "input_tokens": 1,
            "output_tokens": 2,
            "error": None,
            "agent_id": "a<b>",
        },
        "seq": 3,
    }
    html = render_html(transcript)
    for bad in ("<script", "<img", "<iframe", "<style", "<a ", "<b>"):
        assert bad not in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html
    assert "<details" in html and "Done" in html
    text = render_text(transcript)
    assert "Tool run<script> [Done]" in text
    assert "You: <img src=x onerror=alert(1)>" in text
