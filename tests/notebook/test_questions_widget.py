"""Questions (``ask_question``) answered, refused, stopped and timed out from the widget."""

from __future__ import annotations

import json

import pytest
from notebook_helpers import Page, finished, pending_question

from anvia_notebook import AgentBuilder, PromptCancelledError, ask_question
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._human_input import WidgetHumanInput

QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "Which priority?",
            "choices": [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}],
        },
        {
            "id": "note",
            "question": "Operator note?",
            "choices": [{"label": "None", "value": "none"}],
        },
    ]
}


def question_model(final: str = "Escalated.") -> QueueModel:
    return QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="q1", name="ask_question", arguments=QUESTIONS)]),
            final,
        ]
    )


def agent(model: QueueModel):
    return AgentBuilder("support", model).tools([ask_question]).build()


async def test_answers_with_a_choice_and_a_custom_text_resume_the_same_tool_call():
    model = question_model()
    handle = runner.show(agent(model).prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    assert entry["status"] == "input_required"
    assert [q["id"] for q in entry["question"]["questions"]] == ["priority", "note"]
    assert page.state.status["state"] == "waiting"
    reply = await page.answer(
        entry["question"]["id"],
        [
            {"questionId": "note", "answer": "Customer is a VIP", "custom": True},
            {"questionId": "priority", "answer": "high", "choice": "high"},
        ],
    )
    assert reply["ok"], reply
    response = await handle
    await finished(handle)
    page.pump()
    tool_entry = page.state.by_id(entry["id"])
    assert tool_entry["status"] == "done"
    assert tool_entry["question"]["status"] == "answered"
    expected = {
        "answers": [
            {"questionId": "priority", "answer": "high", "choice": "high"},
            {"questionId": "note", "answer": "Customer is a VIP", "custom": True},
        ]
    }
    assert json.loads(tool_entry["result"]) == expected
    labels = [a.pop("label") for a in tool_entry["question"]["answers"]]
    assert labels == ["High", "Customer is a VIP"]  # (the words shown for each answer)
    assert tool_entry["question"]["answers"] == expected["answers"]
    # The same tool call (id q1) got the answers; no new user message was added.
    tool_message = [m for m in model.requests[1].messages if m.role == "tool"][-1]
    assert tool_message.tool_results[0].tool_call_id == "q1"
    assert json.loads(tool_message.tool_results[0].content) == expected
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "assistant"]
    assert len([e for e in page.state.entries if e["kind"] == "tool"]) == 1


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        ([{"questionId": "priority", "answer": "high"}], "missing: 'note'"),
        (
            [
                {"questionId": "priority", "answer": "high"},
                {"questionId": "priority", "answer": "low"},
                {"questionId": "note", "answer": "x"},
            ],
            "more than once",
        ),
        (
            [{"questionId": "priority", "answer": "   "}, {"questionId": "note", "answer": "x"}],
            "empty",
        ),
        (
            [
                {"questionId": "priority", "answer": "high"},
                {"questionId": "note", "answer": "x"},
                {"questionId": "ghost", "answer": "boo"},
            ],
            "Unknown question",
        ),
        (
            [
                {"questionId": "priority", "answer": "urgent", "choice": "urgent"},
                {"questionId": "note", "answer": "x"},
            ],
            "not a choice",
        ),
        (
            [
                {"questionId": "priority", "answer": "wire $1M to acct 42", "choice": "low"},
                {"questionId": "note", "answer": "x"},
            ],
            "must be that choice's value",
        ),
        (
            [
                {"questionId": "priority", "answer": "low", "choice": "low", "custom": True},
                {"questionId": "note", "answer": "x"},
            ],
            "not both",
        ),
    ],
)
async def test_invalid_answers_are_refused_and_the_question_stays_pending(answers, error):
    handle = runner.show(agent(question_model()).prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    reply = await page.answer(entry["question"]["id"], answers)
    assert reply["ok"] is False
    assert error in reply["error"]
    assert page.tools()[0]["question"]["status"] == "pending"
    assert handle.status == "waiting"
    good = await page.answer(
        entry["question"]["id"],
        [{"questionId": "priority", "answer": "low"}, {"questionId": "note", "answer": "n"}],
    )
    assert good["ok"]
    await handle
    duplicate = await page.answer(
        entry["question"]["id"],
        [{"questionId": "priority", "answer": "low"}, {"questionId": "note", "answer": "n"}],
    )
    assert duplicate["ok"] is False and "already answered" in duplicate["error"]


async def test_stop_while_a_question_waits_resolves_it_with_no_answers():
    handle = runner.show(agent(question_model()).prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    assert (await page.request("stop", reason=None))["ok"]
    with pytest.raises(PromptCancelledError) as raised:
        await handle
    await finished(handle)
    page.pump()
    tool_entry = page.state.by_id(entry["id"])
    assert tool_entry["status"] == "cancelled"
    assert tool_entry["question"]["status"] == "cancelled"
    assert tool_entry["question"]["answers"] == []
    assert json.loads(tool_entry["result"]) == {"answers": []}
    assert page.state.status["state"] == "cancelled"
    # The conversation kept for a next turn says the same.
    tool_message = [m for m in raised.value.messages if m.role == "tool"][-1]
    assert json.loads(tool_message.tool_results[0].content) == {"answers": []}
    results = [e for e in handle.events if e.type == "tool_question_result"]
    assert results[-1].question.status == "cancelled"
    late = await page.answer(
        entry["question"]["id"],
        [{"questionId": "priority", "answer": "low"}, {"questionId": "note", "answer": "n"}],
    )
    assert late["ok"] is False


async def test_a_question_times_out():
    request = agent(question_model("No answer then.")).prompt("escalate")
    request.human_input(WidgetHumanInput(timeout=0.05))
    handle = runner.show(request)
    page = Page(handle.widget)
    await page.sync()
    response = await handle
    await finished(handle)
    tool_entry = page.tools()[0]
    assert tool_entry["status"] == "timed_out"
    assert tool_entry["question"]["status"] == "timed_out"
    assert "timed out" in tool_entry["result"]
    assert response.output == "No answer then."


async def test_a_run_waiting_on_the_store_can_be_answered_from_its_widget_too():
    """With ``StoreHumanInput`` the questions still show live controls, and they work."""
    from anvia_notebook import StoreHumanInput

    model = question_model()
    request = agent(model).prompt("escalate").human_input(StoreHumanInput(timeout=30))
    handle = runner.show(request)
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    reply = await page.answer(
        entry["question"]["id"],
        [
            {"questionId": "priority", "answer": "low", "choice": "low"},
            {"questionId": "note", "answer": "none", "choice": "none"},
        ],
    )
    assert reply["ok"], reply
    response = await handle
    assert response.output == "Escalated."
    assert handle.pending == []


async def test_answers_for_a_question_this_run_never_asked_are_refused():
    """A forged id, and an approval's id given as a question's: refused, nothing answered; the
    real question is still pending and takes its answers afterwards."""
    model = question_model()
    handle = runner.show(agent(model).prompt("escalate"))
    page = Page(handle.widget)
    await page.sync()
    entry = await pending_question(page)
    answers = [
        {"questionId": "priority", "answer": "high", "choice": "high"},
        {"questionId": "note", "answer": "none", "choice": "none"},
    ]
    for forged in ("question_forged", "approval_1", ""):
        reply = await page.answer(forged, answers)
        assert reply["ok"] is False, forged
    assert len(model.requests) == 1  # the model was told nothing
    assert (await pending_question(page))["status"] == "input_required"
    assert (await page.answer(entry["question"]["id"], answers))["ok"]
    response = await handle
    assert response.output == "Escalated."
    [result] = [m for m in model.requests[1].messages if m.role == "tool"][0].tool_results
    assert json.loads(result.content)["answers"][0]["answer"] == "high"
