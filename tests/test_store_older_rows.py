"""Interaction rows written by earlier versions: the status and a decision beside a record still
saying ``pending``. Every reader of the store (``record``, ``decision``, ``interactions``,
``pending``) shows the decision written into the record."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from anvia_notebook.errors import DecisionRefusedError, RunStoreError
from anvia_notebook.question_types import Choice, Question
from anvia_notebook.records import ApprovalRecord, QuestionRecord
from anvia_notebook.store import RunStore

from helpers import stored_decision

IDS = {"run_id": "run_1", "agent_id": "a", "tool_call_id": "c1"}


def as_an_older_version(path: Path, item_id: str, status: str, decision: dict | None) -> None:
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE interactions SET status = ?, decision = ? WHERE id = ?",
            (status, None if decision is None else json.dumps(decision), item_id),
        )


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    store = RunStore(tmp_path / "runs.sqlite")
    store.open_interaction(ApprovalRecord(id="ap", **IDS, tool_name="add", args={"x": 1}))
    question = Question(
        id="size",
        question="Which size?",
        choices=[Choice(value="s", label="Small"), Choice(value="l", label="L")],
    )
    store.open_interaction(QuestionRecord(id="qu", **IDS, tool_name="ask", questions=[question]))
    yield store
    store.close()


def test_an_older_approval_reads_with_its_decision_and_edited_arguments(store: RunStore):
    decision = {"approved": True, "reason": "ok", "args": {"x": 2}, "decided_by": "auto"}
    as_an_older_version(Path(store.location), "ap", "approved", decision)
    record = store.record("ap")
    assert isinstance(record, ApprovalRecord)
    assert (record.status, record.decided_by, record.decision_reason, record.edited_args) == (
        "approved",
        "policy",  # "auto" of earlier versions: a rule
        "ok",
        {"x": 2},
    )
    assert stored_decision(store, "ap") == (
        "approved",
        {"approved": True, "reason": "ok", "args": {"x": 2}, "decided_by": "policy"},
    )
    assert store.pending("run_1") == [store.record("qu")]
    with pytest.raises(DecisionRefusedError, match="already approved"):
        store.reject("run_1", "ap")


def test_an_older_rejection_tells_the_model_its_reject_message(store: RunStore):
    decision = {"approved": False, "reason": "no", "args": {"x": 9}, "reject_message": "Stop."}
    as_an_older_version(Path(store.location), "ap", "rejected", decision)
    [record] = [r for r in store.interactions("run_1") if r.id == "ap"]
    assert isinstance(record, ApprovalRecord)
    # no decider named: the runtime; a rejection keeps no edited arguments
    assert (record.status, record.decided_by, record.decision_reason, record.edited_args) == (
        "rejected",
        "runtime",
        "Stop.",
        None,
    )


def test_an_older_answer_and_a_decision_left_empty(store: RunStore):
    answers = [{"questionId": "size", "answer": "s", "choice": "s"}]
    as_an_older_version(Path(store.location), "qu", "answered", {"answers": answers})
    as_an_older_version(Path(store.location), "ap", "cancelled", None)
    question = store.record("qu")
    assert isinstance(question, QuestionRecord)
    assert question.status == "answered" and question.answered_at is not None
    assert [a.to_wire() for a in question.answers] == answers
    approval = store.record("ap")
    assert approval is not None
    assert (approval.status, approval.decided_by, approval.resolved_at is not None) == (
        "cancelled",
        "runtime",
        True,
    )
    assert store.pending() == []


def test_an_unreadable_stored_record_is_a_clear_error(store: RunStore):
    with sqlite3.connect(store.location) as db:
        db.execute("UPDATE interactions SET record = '{\"id\": 1}' WHERE id = 'ap'")
    with pytest.raises(RunStoreError, match="A stored approval could not be read"):
        store.record("ap")
