"""The static copy a saved notebook keeps shows a picked choice by the label the person clicked
("Yes", "Use the default (3)"), not the value the model or the MCP server got ("true",
"(blank)"), as the live view does."""

from __future__ import annotations

from anvia_notebook.notebook._snapshot import render_html, render_text


def transcript() -> dict:
    question = {
        "id": "q_1",
        "status": "answered",
        "questions": [
            {
                "id": "confirm",
                "question": "Delete the branch?",
                "choices": [{"label": "Yes", "value": "true"}, {"label": "No", "value": "false"}],
            },
            {
                "id": "retries",
                "question": "Retries",
                "choices": [{"label": "Use the default (3)", "value": "(blank)"}],
            },
            {"id": "note", "question": "Note", "choices": []},
        ],
        "answers": [
            {"questionId": "confirm", "answer": "true", "choice": "true"},
            {"questionId": "retries", "answer": "(blank)", "choice": "(blank)"},
            {"questionId": "note", "answer": "false", "custom": True},
        ],
    }
    entry = {
        "id": "e1",
        "kind": "tool",
        "tool_name": "deploy",
        "arguments": "{}",
        "status": "done",
        "question": question,
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
