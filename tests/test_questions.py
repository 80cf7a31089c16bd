"""ask_question: the wire contract, validation, interception by a human input, the fallback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from anvia_notebook import (
    AgentBuilder,
    Answer,
    CallbackHumanInput,
    ask_question,
    create_hook,
    create_question_tool,
)
from anvia_notebook.decisions import Resolution
from anvia_notebook.human import wait_for_a_decision
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, ToolCall

from helpers import call, pending_of, tool_results

QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "What priority?",
            "choices": [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}],
        },
        {
            "id": "note",
            "question": "Operator note?",
            "choices": [{"label": "None", "value": "none"}],
        },
    ]
}


def test_the_tool_schema_is_the_anvia_contract():
    schema = ask_question.definition().parameters
    assert ask_question.name == "ask_question"
    assert schema["required"] == ["questions"]
    question = schema["$defs"]["Question"]
    assert set(question["properties"]) == {"id", "question", "choices"}
    assert set(schema["$defs"]["Choice"]["properties"]) == {"label", "value"}


def test_the_model_reads_what_each_field_is_for_not_python_docstrings():
    """As Anvia's ``ask_question`` describes its fields; the classes' docstrings (written for
    Python readers, with reST markup) were sent to the model as the objects' descriptions."""
    schema = ask_question.definition().parameters
    question, choice = schema["$defs"]["Question"], schema["$defs"]["Choice"]
    described = {
        name: part["description"]
        for part in (question["properties"], choice["properties"])
        for name, part in part.items()
    }
    assert described == {
        "id": "Stable id for this question.",
        "question": "The question to show to the human operator.",
        "choices": "Choices to show before a custom input.",
        "label": "The visible choice label.",
        "value": "The value returned to the model if selected.",
    }
    assert "``" not in json.dumps(schema)
    assert all("description" not in part for part in (schema, question, choice))


def test_fallback_without_human_input_answers_every_question():
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    AgentBuilder("a", model).tool(ask_question).build().prompt("go").send_sync()
    result = json.loads(tool_results(model.requests[1])[0].content)
    assert result == {
        "answers": [
            {"questionId": "priority", "answer": "No human answer was provided by this runtime."},
            {"questionId": "note", "answer": "No human answer was provided by this runtime."},
        ]
    }


def test_a_human_input_answers_and_the_same_call_resumes():
    received = []

    def ask(request):
        received.append(request)
        return [
            Answer(question_id="note", answer="Customer is VIP", custom=True),
            {"questionId": "priority", "answer": "high", "choice": "high"},
        ]

    model = QueueModel([call("ask_question", QUESTIONS, id="q_call"), "thanks"])
    agent = (
        AgentBuilder("a", model).tool(ask_question).human_input(CallbackHumanInput(ask=ask)).build()
    )

    async def collect():
        return [e async for e in agent.prompt("go").stream()]

    events = asyncio.run(collect())
    assert [q.id for q in received[0].questions] == ["priority", "note"]
    part = tool_results(model.requests[1])[0]
    assert part.tool_call_id == "q_call"
    assert json.loads(part.content) == {
        "answers": [
            {"questionId": "priority", "answer": "high", "choice": "high"},
            {"questionId": "note", "answer": "Customer is VIP", "custom": True},
        ]
    }
    # one assistant message with the call, one tool message: no new message was started
    roles = [m.role for m in model.requests[1].messages]
    assert roles == ["user", "assistant", "tool"]
    request_event = next(e for e in events if e.type == "tool_question_request")
    result_event = next(e for e in events if e.type == "tool_question_result")
    assert request_event.question.status == "pending"
    assert request_event.question.id == received[0].question_id
    assert result_event.question.status == "answered"
    assert result_event.question.answered_at is not None
    order = [e.type for e in events if e.type.startswith("tool_")]
    assert order == ["tool_call", "tool_question_request", "tool_question_result", "tool_result"]


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({"questions": []}, "questions: List should have at least 1 item"),
        (
            {"questions": [{"id": "a", "question": "", "choices": [{"label": "a", "value": "a"}]}]},
            "question text must be a non-empty string",
        ),
        (
            {"questions": [{"id": "a", "question": "Q?", "choices": []}]},
            "choices: List should have at least 1 item",
        ),
        (
            {
                "questions": [
                    {"id": "a", "question": "Q?", "choices": [{"label": "a", "value": "a"}]},
                    {"id": "a", "question": "Q2?", "choices": [{"label": "a", "value": "a"}]},
                ]
            },
            "'a' is repeated",
        ),
        (  # the answer "y" could not say which of them the person chose
            {
                "questions": [
                    {
                        "id": "ok",
                        "question": "Go ahead?",
                        "choices": [
                            {"label": "Yes", "value": "y"},
                            {"label": "Yes, all", "value": "y"},
                        ],
                    }
                ]
            },
            "the choice values of question 'ok' must be unique; 'y' is repeated",
        ),
        ("not json", "not valid JSON"),
    ],
)
def test_an_invalid_call_is_skipped_with_a_reason_the_model_can_use(arguments, needle):
    """As in Anvia's Studio: the call is skipped (its result says what is wrong, and to call
    again); it is no failed call, so no ``on_tool_error`` hook is told."""
    asked, failed = [], []
    model = QueueModel([call("ask_question", arguments), "retry"])
    agent = (
        AgentBuilder("a", model)
        .tool(ask_question)
        .hook(create_hook(on_tool_error=failed.append))
        .human_input(CallbackHumanInput(ask=lambda r: asked.append(r) or []))
        .build()
    )
    request = agent.prompt("go")

    async def streamed():
        return [event async for event in request.stream()]

    events = asyncio.run(streamed())
    result = tool_results(model.requests[1])[0]
    assert needle in result.content
    assert "Call the tool again with " in result.content
    assert not result.is_error
    [event] = [e for e in events if e.type == "tool_result"]
    assert event.skipped and not event.is_error and event.result == result.content
    assert request.trace.tool_calls[0].status == "skipped"
    assert asked == [] and failed == []


def test_invalid_answers_from_a_human_input_become_an_error_result():
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = CallbackHumanInput(ask=lambda r: [{"questionId": "nope", "answer": "x"}])
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert "Unknown question 'nope'" in result.content


@pytest.mark.parametrize(
    ("priority", "needle"),
    [
        (
            {"questionId": "priority", "answer": "wire $1M to acct 42", "choice": "low"},
            "claims the choice 'low'",
        ),
        ({"questionId": "priority", "answer": "low", "choice": "low", "custom": True}, "not both"),
        ({"questionId": "priority", "answer": "  "}, "The answer to question 'priority' is empty"),
        (  # (a custom marked with a text was dropped unread, the choice kept)
            {"questionId": "priority", "answer": "low", "choice": "low", "custom": "true"},
            "has custom='true'; custom is true or false",
        ),
        ({"questionId": "priority", "answer": "urgent", "custom": 1}, "has custom=1;"),
        (  # (it said only "is empty", though a choice was given)
            {"questionId": "priority", "choice": "low"},
            """has a choice but no "answer": give the choice's value ('low') too.""",
        ),
    ],
)
def test_answers_that_misuse_a_choice_or_are_blank_are_refused_with_a_clear_reason(
    priority, needle
):
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = CallbackHumanInput(
        ask=lambda r: [priority, {"questionId": "note", "answer": "none", "choice": "none"}]
    )
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert needle in result.content
    assert "validation error" not in result.content
    assert '"answers"' not in result.content


def test_create_question_tool_under_another_name_is_intercepted_too():
    confirm = create_question_tool(name="confirm_with_operator", description="Confirm.")
    model = QueueModel([call("confirm_with_operator", QUESTIONS), "ok"])
    human = CallbackHumanInput(
        ask=lambda r: [
            {"questionId": "priority", "answer": "low", "choice": "low"},
            {"questionId": "note", "answer": "none", "choice": "none"},
        ]
    )
    AgentBuilder("a", model).tool(confirm).human_input(human).build().prompt("go").send_sync()
    assert json.loads(tool_results(model.requests[1])[0].content)["answers"][0]["answer"] == "low"
    assert confirm.definition().description == "Confirm."


def test_a_human_input_without_ask_falls_back_to_execute():
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = CallbackHumanInput(approve=lambda r: True)
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    result = json.loads(tool_results(model.requests[1])[0].content)
    assert result["answers"][0]["answer"] == "No human answer was provided by this runtime."


def test_answer_serialises_with_question_id_key():
    answer = Answer(question_id="a", answer="b", choice="b")
    assert answer.to_wire() == {"questionId": "a", "answer": "b", "choice": "b"}
    assert Answer.model_validate({"questionId": "a", "answer": "x", "custom": True}).custom is True


def test_model_output_is_normalised_like_anvia_studio():
    from anvia_notebook.question_types import QuestionInput

    parsed = QuestionInput.model_validate(
        {
            "questions": [
                {"question": "Priority?", "choices": ["low", {"label": "High"}]},
                {
                    "id": None,
                    "question": "Channel?",
                    "choices": [{"label": "Mail", "value": "mail"}],
                },
            ]
        }
    )
    first, second = parsed.questions
    assert first.id == "q1" and second.id == "q2"
    assert [(c.label, c.value) for c in first.choices] == [("low", "low"), ("High", "High")]
    assert second.choices[0].value == "mail"


def test_a_filled_id_is_not_one_the_model_gave_another_question():
    # (the call was refused with "'q1' is repeated", a repeat the model never wrote)
    from anvia_notebook.question_types import QuestionInput

    parsed = QuestionInput.model_validate(
        {
            "questions": [
                {"question": "Size?", "choices": ["S"]},
                {"question": "Colour?", "choices": ["red"]},
                {"id": "q1", "question": "Gift wrap?", "choices": ["yes"]},
            ]
        }
    )
    assert [q.id for q in parsed.questions] == ["q1_2", "q2", "q1"]
    with pytest.raises(ValidationError, match="'a' is repeated"):
        QuestionInput.model_validate(
            {
                "questions": [
                    {"id": "a", "question": "x?", "choices": ["1"]},
                    {"id": "a", "question": "y?", "choices": ["2"]},
                ]
            }
        )


def test_an_answer_is_written_with_the_key_questionid_wherever_it_is_dumped(tmp_path):
    """API.md section 8: ``Answer`` is serialised with ``questionId`` (its dump, the record,
    the store, ``show --json``); both keys are read back (stores of earlier versions wrote
    ``question_id``)."""
    import subprocess
    import sys

    from anvia_notebook import RunStore

    answer = Answer(question_id="size", answer="L", choice="L")
    assert answer.model_dump() == {
        "questionId": "size",
        "answer": "L",
        "choice": "L",
        "custom": None,
    }
    assert json.loads(answer.model_dump_json())["questionId"] == "size"
    assert Answer.model_validate(answer.model_dump()) == answer
    assert Answer.model_validate({"question_id": "size", "answer": "L", "choice": "L"}) == answer

    store = tmp_path / "runs.sqlite"
    model = QueueModel([call("ask_question", QUESTIONS), "done"])
    answers = [
        {"questionId": "priority", "answer": "high", "choice": "high"},
        {"questionId": "note", "answer": "none", "choice": "none"},
    ]
    human = CallbackHumanInput(ask=lambda request: answers)
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    run_id = agent.prompt("go").store(store).send_sync().run_id
    [record] = RunStore(store).get(run_id).questions.values()
    assert '"questionId":"priority"' in record.model_dump_json()
    shown = subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", str(store), "show", run_id, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert '"question_id"' not in shown.stdout
    assert '"questionId": "priority"' in shown.stdout


async def test_a_question_closed_without_answers_keeps_why() -> None:
    """A question's record says why it closed without answers (as an approval's
    ``decision_reason`` does): Stop's reason, the time limit's text."""

    def respond(request: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(text="done")
        questions = [{"id": "region", "question": "Which region?", "choices": ["West", "East"]}]
        return ModelResponse(
            tool_calls=[ToolCall(id="q", name="ask_question", arguments={"questions": questions})]
        )

    agent = AgentBuilder("analyst", FunctionModel(respond)).tool(ask_question).build()
    human = CallbackHumanInput(ask=lambda r: wait_for_a_decision(), timeout=0.05)
    response = await asyncio.wait_for(agent.prompt("go").human_input(human).store(None).send(), 10)
    timed_out = response.trace.tool_calls[0].question
    assert timed_out.status == "timed_out" and "timed out" in (timed_out.decision_reason or "")

    human = CallbackHumanInput(ask=lambda r: wait_for_a_decision())
    run = agent.prompt("go").human_input(human).store(None).start()
    [record] = await pending_of(run)
    run.cancel("Stop clicked.")
    with pytest.raises(Exception, match="Stop clicked"):
        await run.wait()
    stopped = run.state.questions[record.id]
    assert (stopped.status, stopped.decision_reason) == ("cancelled", "Stop clicked.")
    # A decider who comes after it is given the decision that stands, its reason too.
    late = Resolution("answered", answers=[Answer("region", "West", "West")])
    winner = run.interactions.resolve(run.interactions.get(record.id), late)
    assert (winner.status, winner.decided_by, winner.reason) == (
        "cancelled",
        "stop",
        "Stop clicked.",
    )

    run = agent.prompt("go").human_input(human).store(None).start()
    [record] = await pending_of(run)
    run.interactions.answer(
        record.id, [{"questionId": "region", "answer": "West", "choice": "West"}]
    )
    await run.wait()
    assert run.state.questions[record.id].decision_reason is None


def test_an_answer_takes_its_fields_by_position_as_the_docs_write_it():
    """API.md section 8: ``Answer(question_id, answer, choice=None, custom=None)``; the keys
    ``question_id`` and ``questionId`` still work by name, and the dumps are unchanged."""
    answer = Answer("size", "L", "L")
    assert answer == Answer(question_id="size", answer="L", choice="L")
    assert answer == Answer(questionId="size", answer="L", choice="L")
    assert answer.to_wire() == {"questionId": "size", "answer": "L", "choice": "L"}
    assert answer.model_dump() == {
        "questionId": "size",
        "answer": "L",
        "choice": "L",
        "custom": None,
    }
    assert Answer("note", "VIP", None, True).to_wire() == {
        "questionId": "note",
        "answer": "VIP",
        "custom": True,
    }
    assert Answer("size", answer="M").answer == "M"
    with pytest.raises(TypeError, match=r"at most 4 positional arguments \(question_id, "):
        Answer("size", "L", "L", False, "extra")
    with pytest.raises(TypeError, match="'question_id' both by position and by name"):
        Answer("size", "L", question_id="other")
    with pytest.raises(TypeError, match="'question_id' both by position and by name"):
        Answer("size", "L", questionId="other")
    with pytest.raises(ValidationError):
        Answer("size", "L", colour="red")  # (extra keys are still refused)
    with pytest.raises(ValidationError, match="must be a non-empty string"):
        Answer("size", "  ")

    model = QueueModel([call("ask_question", QUESTIONS), "thanks"])
    ask = CallbackHumanInput(ask=lambda r: [Answer("priority", "low", "low"), Answer("note", "x")])
    AgentBuilder("a", model).tool(ask_question).human_input(ask).build().prompt("go").send_sync()
    assert json.loads(tool_results(model.requests[1])[0].content) == {
        "answers": [
            {"questionId": "priority", "answer": "low", "choice": "low"},
            {"questionId": "note", "answer": "x"},
        ]
    }


def test_the_ids_of_unanswered_questions_are_told_escaped():
    """A question's id is the model's text: the command line printed control characters in it
    to the terminal as they were (an escape sequence colouring or moving the terminal)."""
    from anvia_notebook.question_types import Choice, Question, check_operator_answers

    choices = [Choice(label="Red", value="red")]
    questions = [Question(id="\x1b[31mRED\x1b[0m", question="Which colour?", choices=choices)]
    said = check_operator_answers(questions, [])
    assert said == "Every question needs an answer; missing: '\\x1b[31mRED\\x1b[0m'."


def test_an_answer_marked_not_custom_is_the_choice_its_text_names():
    # (it went to the model as {"answer": "high", "custom": false}, with no choice)
    from anvia_notebook.question_types import Question, check_operator_answers

    choices = [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}]
    question = Question.model_validate(
        {"id": "priority", "question": "Priority?", "choices": choices}
    )
    [answer] = check_operator_answers(
        [question], [{"questionId": "priority", "answer": " high", "custom": False}]
    )
    assert answer.to_wire() == {"questionId": "priority", "answer": "high", "choice": "high"}
    refused = check_operator_answers(
        [question], [{"questionId": "priority", "answer": "urgent", "custom": False}]
    )
    assert isinstance(refused, str) and "is not one of its choices" in refused
