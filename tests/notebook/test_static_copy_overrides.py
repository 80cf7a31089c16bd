"""The static copy a saved notebook keeps shows each direction override in model-written prose (an
approval's reason, its decision's, a question, an answer) as its escape, as the live view does: U+202E would
show "Delete report\u202etxt.exe" as "Delete reportexe.txt", to a reviewer reading the saved
notebook on GitHub too."""

from __future__ import annotations

import pytest

from anvia_notebook.notebook._snapshot import render_html, render_text

OVERRIDES = [
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
]


def transcript(char: str) -> dict:
    approval = {
        "id": "approval_1",
        "status": "approved",
        "decided_by": "human",
        "decided_via": "widget",
        "reason": f"Delete report{char}txt.exe",
        "decision_reason": f"Fine{char}enif",
    }
    question = {
        "id": "q_1",
        "status": "answered",
        "questions": [{"id": "p", "question": f"Keep{char} it?", "choices": []}],
        "answers": [
            {"questionId": "p", "answer": f"no{char}pe", "custom": True, "label": f"no{char}pe"}
        ],
    }
    entries = [
        {"id": "e1", "kind": "tool", "tool_name": "delete", "arguments": "{}", "status": "done"},
        {
            "id": "e2",
            "kind": "tool",
            "tool_name": "ask_question",
            "arguments": "{}",
            "status": "done",
        },
    ]
    entries[0]["approval"] = approval
    entries[1]["question"] = question
    return {"entries": entries, "status": {"state": "success", "agent_id": "ops"}}


@pytest.mark.parametrize("char", OVERRIDES, ids=[f"U+{ord(c):04X}" for c in OVERRIDES])
def test_direction_overrides_in_reasons_decisions_questions_and_answers_show_as_escapes(char: str):
    escape = f"\\u{ord(char):04x}"
    for copy in (render_html(transcript(char)), render_text(transcript(char))):
        assert char not in copy
        assert f"Delete report{escape}txt.exe" in copy
        assert f"Keep{escape} it?" in copy
        assert f"no{escape}pe" in copy
        assert f"Fine{escape}enif" in copy


def test_right_to_left_prose_and_its_marks_are_kept():
    hebrew = "\u05e9\u05dc\u05d5\u05dd\u200f world"
    data = transcript("")
    data["entries"][0]["approval"]["reason"] = hebrew
    assert hebrew in render_html(data) and hebrew in render_text(data)
