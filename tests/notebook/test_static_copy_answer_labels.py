"""The static copy a saved notebook keeps shows a picked choice by the label the person clicked
("Yes", "Use the default (3)"), not the value the model or the MCP server got ("true",
"(blank)"), as the live view does: both read the answer's ``label`` in the view made from the
record (one serialiser)."""

from __future__ import annotations

from anvia_notebook.notebook._protocol import interaction_view
from anvia_notebook.notebook._snapshot import render_html, render_text
from anvia_notebook.question_types import Answer, Choice, Question
from anvia_notebook.records import QuestionRecord


def transcript() -> dict:
    record = QuestionRecord(
        id="q_1",
        run_id="run_1",
        agent_id="ops",
        tool_name="ask_question",
        tool_call_id="c1",
        status="answered",
        questions=[
            Question(
                id="confirm",
                question="Delete the branch?",
                choices=[Choice(label="Yes", value="true"), Choice(label="No", value="false")],
            ),
            Question(
                id="retries",
                question="Retries",
                choices=[Choice(label="Use the default (3)", value="(blank)")],
            ),
            Question(id="note", question="Note", choices=[Choice(label="None", value="none")]),
        ],
        answers=[
            Answer(question_id="confirm", answer="true", choice="true"),
            Answer(question_id="retries", answer="(blank)", choice="(blank)"),
            Answer(question_id="note", answer="false", custom=True),
        ],
    )
    entry = {
        "id": "e1",
        "kind": "tool",
        "tool_name": "deploy",
        "arguments": "{}",
        "status": "done",
        "question": interaction_view(record),
    }
    return {"entries": [entry], "status": {"state": "success", "agent_id": "ops"}}


def test_picked_choices_are_shown_by_their_labels_and_custom_answers_as_typed():
    html = render_html(transcript())
    assert "Delete the branch? — Yes</li>" in html
    assert "Retries — Use the default (3)</li>" in html
    assert "Note — false</li>" in html
    text = render_text(transcript())
    assert "question: Delete the branch? — Yes\n" in text
    assert "question: Retries — Use the default (3)\n" in text
    assert "question: Note — false" in text
