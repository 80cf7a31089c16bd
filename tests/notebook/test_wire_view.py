"""The one serialiser of an interaction's wire view: ``ApprovalView`` / ``QuestionView`` made
from the record (``from_record``), dumped as the page gets it, and the transcript's views of
interactions a run's log leaves open made from their records too."""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from anvia_notebook.events import (
    ApprovalRecord,
    FinalEvent,
    QuestionRecord,
    ToolApprovalRequestEvent,
    ToolCallEvent,
    ToolQuestionRequestEvent,
)
from anvia_notebook.messages import Usage
from anvia_notebook.models import ToolCall
from anvia_notebook.notebook._protocol import (
    ApprovalView,
    QuestionView,
    interaction_view,
    parse_outbound,
    snapshot_message,
)
from anvia_notebook.notebook._transcript import Transcript
from anvia_notebook.question_types import Answer, Choice, Question

NOW = datetime(2026, 5, 1, 10, 0, tzinfo=timezone.utc)
BASE: dict[str, Any] = {
    "run_id": "r",
    "agent_id": "shop",
    "path": ["shop"],
    "tool_name": "issue_refund",
    "tool_call_id": "c1",
    "internal_call_id": "i1",
    "requested_at": NOW,
}
SIZE = Question(
    id="size",
    question="Which size?",
    choices=[Choice(label="Small", value="s"), Choice(label="Large", value="l")],
)

#: Records, and the exact view the page got for each before the views came from the models
#: (but for arguments that are not JSON, never a model's: a time is now written as pydantic's
#: JSON writes it, ISO, and NaN as null, where ``str()`` and ``NaN`` went before).
CASES: dict[str, tuple[ApprovalRecord | QuestionRecord, dict[str, Any]]] = {
    "pending": (
        ApprovalRecord(
            id="ap1", args={"order_id": "A-1", "amount": 5}, reason="Refunds need a person.", **BASE
        ),
        {
            "id": "ap1",
            "status": "pending",
            "decided_by": None,
            "decided_via": None,
            "reason": "Refunds need a person.",
            "args": {"order_id": "A-1", "amount": 5},
            "decided_at": None,
            "decision_reason": None,
            "edited_args": None,
        },
    ),
    "pending, expiring, a sub-agent's, to fix": (
        ApprovalRecord(
            id="ap2",
            args={"amount": "five"},
            fix_required=True,
            expires_at=NOW + timedelta(minutes=5),
            **{**BASE, "path": ["lead", "analyst"]},
        ),
        {
            "id": "ap2",
            "status": "pending",
            "decided_by": None,
            "decided_via": None,
            "expires_at": "2026-05-01T10:05:00+00:00",
            "path": ["lead", "analyst"],
            "reason": None,
            "args": {"amount": "five"},
            "decided_at": None,
            "decision_reason": None,
            "edited_args": None,
            "fix_required": True,
        },
    ),
    "approved with edits (no expiry once decided)": (
        ApprovalRecord(
            id="ap3",
            args={"order_id": "A-1", "amount": 5},
            status="approved",
            decided_by="human",
            decided_via="widget",
            resolved_at=NOW,
            decision_reason="Checked",
            edited_args={"order_id": "A-1", "amount": 4},
            expires_at=NOW,
            **BASE,
        ),
        {
            "id": "ap3",
            "status": "approved",
            "decided_by": "human",
            "decided_via": "widget",
            "reason": None,
            "args": {"order_id": "A-1", "amount": 5},
            "decided_at": "2026-05-01T10:00:00+00:00",
            "decision_reason": "Checked",
            "edited_args": {"order_id": "A-1", "amount": 4},
        },
    ),
    "rejected, odd arguments": (
        ApprovalRecord(
            id="ap4",
            args=("a", 1, NOW, {1: float("nan")}),
            status="rejected",
            decided_by="handler",
            decided_via="handler",
            resolved_at=NOW,
            decision_reason="No.",
            edited_args=["not", "a", "dict"],
            **BASE,
        ),
        {
            "id": "ap4",
            "status": "rejected",
            "decided_by": "handler",
            "decided_via": "handler",
            "reason": None,
            "args": ["a", 1, "2026-05-01T10:00:00Z", {"1": None}],
            "decided_at": "2026-05-01T10:00:00+00:00",
            "decision_reason": "No.",
            "edited_args": None,
        },
    ),
    "approved with edits given from code with a key that is no string": (
        ApprovalRecord(
            id="ap5",
            args={},
            status="approved",
            decided_by="human",
            decided_via="handle",
            resolved_at=NOW,
            edited_args={1: {2: "x"}},
            **BASE,
        ),
        {
            "id": "ap5",
            "status": "approved",
            "decided_by": "human",
            "decided_via": "handle",
            "reason": None,
            "args": {},
            "decided_at": "2026-05-01T10:00:00+00:00",
            "decision_reason": None,
            "edited_args": {"1": {"2": "x"}},
        },
    ),
    "question pending, expiring": (
        QuestionRecord(id="q1", questions=[SIZE], expires_at=NOW + timedelta(seconds=30), **BASE),
        {
            "id": "q1",
            "status": "pending",
            "decided_by": None,
            "decided_via": None,
            "expires_at": "2026-05-01T10:00:30+00:00",
            "questions": [
                {
                    "id": "size",
                    "question": "Which size?",
                    "choices": [
                        {"label": "Small", "value": "s"},
                        {"label": "Large", "value": "l"},
                    ],
                }
            ],
            "answers": [],
        },
    ),
    "question answered, declinable, a sub-agent's, no answer_schema": (
        QuestionRecord(
            id="q2",
            declinable=True,
            questions=[
                Question(
                    id="email", question="Your email?", choices=[], answer_schema={"type": "string"}
                )
            ],
            status="answered",
            answers=[Answer(question_id="email", answer="a@b.c", custom=True)],
            decided_by="human",
            decided_via="cli",
            resolved_at=NOW,
            **{**BASE, "path": ["lead", "mcp"]},
        ),
        {
            "id": "q2",
            "status": "answered",
            "decided_by": "human",
            "decided_via": "cli",
            "path": ["lead", "mcp"],
            "questions": [{"id": "email", "question": "Your email?", "choices": []}],
            "answers": [
                {"questionId": "email", "answer": "a@b.c", "custom": True, "label": "a@b.c"}
            ],
            "declinable": True,
        },
    ),
    "question of an MCP server's form: fields of fixed values take no custom answer": (
        QuestionRecord(
            id="q4",
            declinable=True,
            questions=[
                Question(
                    id="size",
                    question="Which size?",
                    choices=[Choice(label="Small", value="s"), Choice(label="Large", value="l")],
                    answer_schema={"enum": ["s", "l"]},
                ),
                Question(
                    id="guests", question="How many?", choices=[], answer_schema={"type": "integer"}
                ),
                Question(
                    id="kind",
                    question="Which kind?",
                    choices=[Choice(label="A", value="a"), Choice(label="Leave blank", value="-")],
                    answer_schema={"type": "string", "enum": ["a"]},
                ),
            ],
            **BASE,
        ),
        {
            "id": "q4",
            "status": "pending",
            "decided_by": None,
            "decided_via": None,
            "questions": [
                {
                    "id": "size",
                    "question": "Which size?",
                    "choices": [
                        {"label": "Small", "value": "s"},
                        {"label": "Large", "value": "l"},
                    ],
                    "allowCustom": False,
                },
                {"id": "guests", "question": "How many?", "choices": []},
                {
                    "id": "kind",
                    "question": "Which kind?",
                    "choices": [
                        {"label": "A", "value": "a"},
                        {"label": "Leave blank", "value": "-"},
                    ],
                    "allowCustom": False,
                },
            ],
            "answers": [],
            "declinable": True,
        },
    ),
    "question answered by a choice": (
        QuestionRecord(
            id="q3",
            questions=[SIZE],
            status="answered",
            answers=[Answer(question_id="size", answer="Small", choice="s")],
            decided_by="policy",
            decided_via="human_input",
            resolved_at=NOW,
            **BASE,
        ),
        {
            "id": "q3",
            "status": "answered",
            "decided_by": "policy",
            "decided_via": "human_input",
            "questions": [SIZE.model_dump(exclude={"answer_schema"})],
            "answers": [{"questionId": "size", "answer": "Small", "choice": "s", "label": "Small"}],
        },
    ),
    "question answered by the words clicked, not the value sent (one label for both views)": (
        QuestionRecord(
            id="q5",
            questions=[
                Question(
                    id="go",
                    question="Delete the branch?",
                    choices=[
                        Choice(label="Yes", value="true"),
                        Choice(label="No", value="false"),
                        Choice(label="Sure", value="true"),
                    ],
                ),
                Question(id="note", question="Note?", choices=[Choice(label="No", value="false")]),
                Question(id="size", question="Size?", choices=[Choice(label="Small", value="s")]),
            ],
            status="answered",
            answers=[
                Answer(question_id="go", answer="true", choice="true"),
                Answer(question_id="note", answer="false", custom=True),
                Answer(question_id="size", answer="l", choice="l"),
            ],
            decided_by="human",
            decided_via="widget",
            resolved_at=NOW,
            **BASE,
        ),
        {
            "id": "q5",
            "status": "answered",
            "decided_by": "human",
            "decided_via": "widget",
            "questions": [
                {
                    "id": "go",
                    "question": "Delete the branch?",
                    "choices": [
                        {"label": "Yes", "value": "true"},
                        {"label": "No", "value": "false"},
                        {"label": "Sure", "value": "true"},
                    ],
                },
                {"id": "note", "question": "Note?", "choices": [{"label": "No", "value": "false"}]},
                {"id": "size", "question": "Size?", "choices": [{"label": "Small", "value": "s"}]},
            ],
            "answers": [
                {"questionId": "go", "answer": "true", "choice": "true", "label": "Yes"},
                {"questionId": "note", "answer": "false", "custom": True, "label": "false"},
                {"questionId": "size", "answer": "l", "choice": "l", "label": "l"},
            ],
        },
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_view_is_the_json_the_page_got(name: str) -> None:
    record, expected = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no serialisation warning of a model_construct'ed view
        view = interaction_view(record)
    assert view == expected


@pytest.mark.parametrize("name", list(CASES))
def test_the_view_validates_and_round_trips_through_its_model(name: str) -> None:
    record, _ = CASES[name]
    model = QuestionView if isinstance(record, QuestionRecord) else ApprovalView
    view = interaction_view(record)
    assert model.model_validate(view).wire() == view
    # What is absent on the wire is what the record left unset in the model.
    assert model.from_record(record).model_fields_set == set(view)  # type: ignore[arg-type]


def test_the_view_is_a_fresh_copy_of_the_record_s_values() -> None:
    record, _ = CASES["approved with edits (no expiry once decided)"]
    view = interaction_view(record)
    view["args"]["amount"] = 99
    view["edited_args"]["amount"] = 99
    assert (record.args["amount"], record.edited_args["amount"]) == (5, 4)


def test_a_log_that_ends_with_interactions_open_closes_them_from_their_records() -> None:
    """An older version's log (or a run that did not finish) ends with an approval and a
    question still open: the transcript closes them as the run's end does, cancelled by the
    runtime, through the same serialiser (the time of the decision is not known)."""
    ops: list[dict[str, Any]] = []
    t = Transcript("shop", emit=ops.append)
    t.begin_run("r", "shop", "go")
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c1", name="issue_refund")))
    t.apply(ToolCallEvent(turn=1, tool_call=ToolCall(id="c2", name="ask_question")))
    approval, _ = CASES["pending, expiring, a sub-agent's, to fix"]
    question = QuestionRecord(
        id="q1",
        questions=[SIZE],
        expires_at=NOW,
        **{**BASE, "tool_name": "ask_question", "tool_call_id": "c2", "internal_call_id": "i2"},
    )
    t.apply(ToolApprovalRequestEvent(approval=approval))  # type: ignore[arg-type]
    t.apply(ToolQuestionRequestEvent(question=question))
    t.apply(FinalEvent(run_id="r", output="", usage=Usage(), messages=[]))
    parse_outbound(snapshot_message(t.state(0)))
    tools = [e for e in t.entries if e["kind"] == "tool"]
    assert [e["status"] for e in tools] == ["cancelled", "cancelled"]
    closed_approval = approval.model_copy(
        update={"status": "cancelled", "decided_by": "runtime", "resolved_at": None}
    )
    assert tools[0]["approval"] == interaction_view(closed_approval)
    assert tools[0]["approval"]["decided_at"] is None
    assert "expires_at" not in tools[0]["approval"]
    assert tools[1]["question"] == {
        "id": "q1",
        "status": "cancelled",
        "decided_by": "runtime",
        "decided_via": None,
        "questions": [SIZE.model_dump(exclude={"answer_schema"})],
        "answers": [],
    }
    assert tools[1]["result"] == '{"answers": []}'
    # The entries' records are the closed ones: a second end closes nothing again.
    ops.clear()
    t.apply(FinalEvent(run_id="r", output="", usage=Usage(), messages=[]))
    assert not [op for op in ops if op["op"] == "patch"]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "protocol"


def _views(node: Any) -> list[tuple[str, dict[str, Any]]]:
    """The approval and question views anywhere in a fixture."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("approval", "question") and isinstance(value, dict):
                found.append((key, value))
            found += _views(value)
    elif isinstance(node, list):
        for value in node:
            found += _views(value)
    return found


def test_the_shared_fixtures_views_are_views_the_serialiser_makes() -> None:
    """Each approval and question view in the valid wire fixtures is one the serialiser could
    have made: unchanged through its model, and absent what it leaves out (``expires_at`` once
    decided, ``path`` of the run's own, ``fix_required`` and ``declinable`` when false, a
    question's ``allowCustom`` when true)."""
    views = [
        view
        for path in sorted(FIXTURES.glob("*.json"))
        for view in _views(json.loads(path.read_text(encoding="utf-8")))
    ]
    assert {kind for kind, _ in views} == {"approval", "question"}
    for kind, view in views:
        model = ApprovalView if kind == "approval" else QuestionView
        assert model.model_validate(view).wire() == view
        if view["status"] != "pending":
            assert "expires_at" not in view, view
        assert len(view.get("path", [0, 0])) > 1, view
        assert view.get("fix_required", True) is True, view
        assert view.get("declinable", True) is True, view
        assert "answer_schema" not in str(view.get("questions", "")), view
        for item in view.get("questions", []):
            assert item.get("allowCustom", False) is False, item  # absent but when false
    # A question that takes only its choices is among them (the page hides its custom box).
    assert any(
        item.get("allowCustom") is False
        for kind, view in views
        for item in view.get("questions", [])
    )
