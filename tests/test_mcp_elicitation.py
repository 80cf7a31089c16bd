"""MCP elicitation as questions (section 5) in the one interaction record: one question per
field, enum -> choices, boolean -> Yes/No, numbers and strings a checked custom answer sent with
its JSON type, optional fields may be left blank; Stop or a timeout answers ``cancel``; a run
with nobody to ask answers ``decline`` with a warning."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp_helpers import toolbox

from anvia_notebook import AgentBuilder, CallbackHumanInput, mcp
from anvia_notebook.models import QueueModel

from helpers import call, pending_of, tool_results


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


SERVER = toolbox("booker")


def _agent(model, human_input):
    return AgentBuilder("a", model).mcp([SERVER]).human_input(human_input).build()


def test_each_field_is_a_question_and_the_answers_reach_the_server_typed():
    asked = []

    def ask(request):
        asked.append(request)
        return [
            {"questionId": "size", "answer": "large", "choice": "large"},
            {"questionId": "outdoor", "answer": "true", "choice": "true"},
            {"questionId": "guests", "answer": "4", "custom": True},
            {"questionId": "note", "answer": "(blank)", "choice": "(blank)"},
        ]

    model = QueueModel([call("book_table", {}), "done"])
    response = _agent(model, CallbackHumanInput(ask=ask)).prompt("book").send_sync()
    [request] = asked
    questions = {q.id: q for q in request.questions}
    assert list(questions) == ["size", "outdoor", "guests", "note"]
    assert questions["size"].question.startswith("How should the table be booked?\n\n")
    assert [c.value for c in questions["size"].choices] == ["small", "large"]
    assert [(c.label, c.value) for c in questions["outdoor"].choices] == [
        ("Yes", "true"),
        ("No", "false"),
    ]
    assert questions["guests"].choices == []  # a custom answer only
    assert questions["guests"].answer_schema == {"type": "integer", "minimum": 1, "maximum": 12}
    assert [c.label for c in questions["note"].choices] == ["Leave blank"]  # optional
    # Only their choices answer the fields of fixed values (the page shows no custom box).
    assert {q.id: q.allows_custom for q in request.questions} == {
        "size": False,
        "outdoor": False,
        "guests": True,
        "note": True,
    }
    assert tool_results(model.requests[1])[0].content == (
        "accept size='large' outdoor=True guests=4 note=None"
    )
    record = response.trace.tool_calls[0].question
    assert record.status == "answered" and record.tool_name == "book_table"


def test_a_custom_answer_that_does_not_fit_the_field_is_refused():
    def ask(request):
        return [
            {"questionId": "size", "answer": "small", "choice": "small"},
            {"questionId": "outdoor", "answer": "false", "choice": "false"},
            {"questionId": "guests", "answer": "40", "custom": True},
            {"questionId": "note", "answer": "by the window", "custom": True},
        ]

    model = QueueModel([call("book_table", {}), "done"])
    response = _agent(model, CallbackHumanInput(ask=ask)).prompt("book").send_sync()
    record = response.trace.tool_calls[0].question
    assert record.status == "cancelled"
    # (before: decided by the runtime with no reason, nowhere said why the form was cancelled)
    assert record.decided_by == "runtime"
    assert record.decision_reason.startswith("The human input returned invalid answers:")
    assert "guests" in record.decision_reason
    # The refused answers answer the server "cancel"; the model reads what the server said.
    assert tool_results(model.requests[1])[0].content == "cancel"


@pytest.mark.parametrize(
    ("field", "typed", "choices"),
    [("outdoor", "yes", "Yes, No"), ("size", "medium", "small, large")],
)
def test_a_custom_answer_to_a_field_of_fixed_values_is_refused(field, typed, choices):
    """A custom answer to a Yes/No or an enum field (the page shows these without a custom
    box, but a human input or a forged message may send one) is refused (before: "yes"
    reached the server as outdoor=False, and "medium" outside the enum was sent as it was);
    typing one of the values is that value."""
    answers = {
        "size": {"questionId": "size", "answer": "small", "choice": "small"},
        "outdoor": {"questionId": "outdoor", "answer": "true", "choice": "true"},
        "guests": {"questionId": "guests", "answer": "2", "custom": True},
        "note": {"questionId": "note", "answer": "(blank)", "choice": "(blank)"},
    }
    refusals = []

    def ask(request):
        from anvia_notebook.question_types import check_operator_answers

        mistyped = {**answers, field: {"questionId": field, "answer": typed, "custom": True}}
        refusals.append(check_operator_answers(request.questions, list(mistyped.values())))
        exact = answers["outdoor"]["answer"] if field == "outdoor" else "small"
        typed_value = {**answers, field: {"questionId": field, "answer": exact, "custom": True}}
        return list(typed_value.values())

    model = QueueModel([call("book_table", {}), "done"])
    _agent(model, CallbackHumanInput(ask=ask)).prompt("book").send_sync()
    assert refusals == [
        f"The answer to question {field!r} must be one of its choices ({choices}): this field "
        f"takes no other answer; got {typed!r}."
    ]
    assert tool_results(model.requests[1])[0].content == (
        "accept size='small' outdoor=True guests=2 note=None"
    )


def test_the_console_asks_a_field_of_fixed_values_for_a_choice_number_only():
    """On a terminal, a Yes/No or an enum field takes a choice's number, value or label (any
    other text is asked again, rather than sent and refused with the whole form); the others
    a text too."""
    import io

    from anvia_notebook import ConsoleHumanInput

    lines = iter(["medium", "LARGE", "maybe", "yes", "4", "1"])
    prompts = []

    def read(prompt):
        prompts.append(prompt)
        return next(lines)

    out = io.StringIO()
    model = QueueModel([call("book_table", {}), "done"])
    _agent(model, ConsoleHumanInput(input_fn=read, output=out)).prompt("book").send_sync()
    assert tool_results(model.requests[1])[0].content == (
        "accept size='large' outdoor=True guests=4 note=None"
    )
    assert prompts == [
        "Choice number: ",
        "Choice number: ",
        "Choice number: ",
        "Choice number: ",
        "Choice number or a custom answer: ",
        "Choice number or a custom answer: ",
    ]
    assert out.getvalue().count("Please pick a choice by its number (1-2).") == 2


def test_a_number_answer_that_is_not_a_number_is_refused_with_a_reason():
    from anvia_notebook.question_types import Question, check_operator_answers

    question = Question(
        id="guests",
        question="How many?",
        choices=[],
        answer_schema={"type": "integer", "minimum": 1},
    )
    refused = check_operator_answers(
        [question], [{"questionId": "guests", "answer": "four", "custom": True}]
    )
    assert refused == "The answer to question 'guests' must be a whole number; got 'four'."
    refused = check_operator_answers(
        [question], [{"questionId": "guests", "answer": "0", "custom": True}]
    )
    assert "does not fit: 0 is less than the minimum of 1" in refused
    [ok] = check_operator_answers(
        [question], [{"questionId": "guests", "answer": "3", "custom": True}]
    )
    assert ok.answer == "3"


def test_a_question_timeout_answers_cancel():
    async def never(request):
        await asyncio.Event().wait()

    model = QueueModel([call("book_table", {}), "done"])
    response = _agent(model, CallbackHumanInput(ask=never, timeout=0.3)).prompt("book").send_sync()
    record = response.trace.tool_calls[0].question
    assert record.status == "timed_out"
    assert tool_results(model.requests[1])[0].content == "cancel"


def test_stop_while_a_person_is_asked_cancels_the_elicitation_and_the_run():
    async def main():
        started = asyncio.Event()

        async def ask(request):
            started.set()
            await asyncio.Event().wait()

        model = QueueModel([call("book_table", {}), "done"])
        run = _agent(model, CallbackHumanInput(ask=ask)).prompt("book").start()
        await asyncio.wait_for(started.wait(), 60)
        run.cancel("stopped by the test")
        with pytest.raises(Exception, match="stopped by the test"):
            await asyncio.wait_for(run.wait(), 60)
        questions = [e.question for e in run.events if e.type == "tool_question_result"]
        assert [q.status for q in questions] == ["cancelled"], [
            (e.type, getattr(getattr(e, "question", None), "decided_by", None)) for e in run.events
        ]
        assert questions[0].decided_by == "stop"

    asyncio.run(main())


def test_nobody_to_ask_declines_with_a_warning():
    model = QueueModel([call("book_table", {}), "done"])
    agent = AgentBuilder("a", model).mcp([SERVER]).build()
    with pytest.warns(UserWarning, match="'booker' asked for input"):
        agent.prompt("book").send_sync()
    assert tool_results(model.requests[1])[0].content == "decline"


def test_the_call_timeout_does_not_run_while_a_person_answers():
    server = toolbox("booker-quick", timeout=0.5)

    async def slow_person(request):
        await asyncio.sleep(1.5)
        return [
            {"questionId": "size", "answer": "small", "choice": "small"},
            {"questionId": "outdoor", "answer": "false", "choice": "false"},
            {"questionId": "guests", "answer": "2", "custom": True},
            {"questionId": "note", "answer": "quiet", "custom": True},
        ]

    model = QueueModel([call("book_table", {}), "done"])
    agent = (
        AgentBuilder("a", model)
        .mcp([server])
        .human_input(CallbackHumanInput(ask=slow_person))
        .build()
    )
    agent.prompt("book").send_sync()
    assert tool_results(model.requests[1])[0].content == (
        "accept size='small' outdoor=False guests=2 note='quiet'"
    )


def test_declining_the_form_answers_the_server_decline():
    """The person's Decline (the form's button, the handle, the store all close the one record
    the same way: ``cancelled`` decided by the person) reaches the server as ``decline``."""

    async def main():
        async def ask(request):
            await asyncio.Event().wait()  # the person declines from the record instead

        model = QueueModel([call("book_table", {}), "done"])
        run = _agent(model, CallbackHumanInput(ask=ask)).prompt("book").start()
        [record] = await pending_of(run)
        assert record.declinable
        declined = run.interactions.decline(record, via="widget")
        assert (declined.status, declined.decided_by) == ("cancelled", "human")
        await asyncio.wait_for(run.wait(), 60)
        assert tool_results(model.requests[1])[0].content == "decline"

    asyncio.run(main())


@pytest.mark.parametrize(("choice", "said"), [("accept", "wiped"), ("decline", "decline")])
def test_a_form_with_no_field_asks_the_person_to_accept_or_decline(choice, said):
    """A server's confirmation ("Delete every note?", a form with no field) was accepted for
    the person, who was never asked."""
    asked = []

    def ask(request):
        asked.append(request)
        return [{"questionId": "confirm", "answer": choice, "choice": choice}]

    model = QueueModel([call("wipe_notes", {}), "done"])
    _agent(model, CallbackHumanInput(ask=ask)).prompt("clean up").send_sync()
    [request] = asked
    [question] = request.questions
    assert question.question == "Delete every note? This cannot be undone."
    assert [(c.label, c.value) for c in question.choices] == [
        ("Accept", "accept"),
        ("Decline", "decline"),
    ]
    assert tool_results(model.requests[1])[0].content == said


def test_a_form_with_no_field_and_nobody_to_ask_is_declined():
    model = QueueModel([call("wipe_notes", {}), "done"])
    AgentBuilder("a", model).mcp([SERVER]).build().prompt("clean up").send_sync()
    assert tool_results(model.requests[1])[0].content == "decline"


@pytest.mark.parametrize(("choice", "action"), [("done", "accept"), ("decline", "decline")])
def test_a_url_elicitation_shows_the_link_and_answers_what_the_person_says(choice, action):
    asked = []

    def ask(request):
        asked.append(request)
        return [{"questionId": "confirm", "answer": choice, "choice": choice}]

    model = QueueModel([call("connect_account", {}), "done"])
    response = _agent(model, CallbackHumanInput(ask=ask)).prompt("sign in").send_sync()
    [request] = asked
    [question] = request.questions
    assert "Sign in to the booking service." in question.question
    assert "https://example.com/sign-in?code=42" in question.question
    assert [(c.label, c.value) for c in question.choices] == [
        ("Done", "done"),
        ("Decline", "decline"),
    ]
    assert tool_results(model.requests[1])[0].content == action
    assert response.trace.tool_calls[0].question.status == "answered"


def test_a_url_elicitation_declined_in_the_form_or_timed_out():
    async def never(request):
        await asyncio.Event().wait()

    model = QueueModel([call("connect_account", {}), "done"])
    _agent(model, CallbackHumanInput(ask=never, timeout=0.3)).prompt("sign in").send_sync()
    assert tool_results(model.requests[1])[0].content == "cancel"

    async def main():
        model = QueueModel([call("connect_account", {}), "done"])
        run = _agent(model, CallbackHumanInput(ask=never)).prompt("sign in").start()
        run.interactions.decline((await pending_of(run))[0], via="handle")
        await asyncio.wait_for(run.wait(), 60)
        assert tool_results(model.requests[1])[0].content == "decline"

    asyncio.run(main())


async def test_the_command_line_declines_a_question_a_server_asked(store_location, capsys):
    from anvia_notebook import RunStore, StoreHumanInput
    from anvia_notebook.__main__ import main

    model = QueueModel([call("book_table", {}), "done"])
    run = _agent(model, StoreHumanInput()).prompt("book").start()
    [record] = await pending_of(run)
    store = RunStore(store_location)
    assert main(["show", run.run_id, "--store", store_location]) == 0
    assert f"decline {run.run_id} {record.id}" in capsys.readouterr().out
    assert main(["decline", run.run_id, record.id, "--store", store_location]) == 0
    assert f"Declined {record.id}." in capsys.readouterr().out
    await asyncio.wait_for(run.wait(), 60)
    assert tool_results(model.requests[1])[0].content == "decline"
    stored = store.get(run.run_id).questions[record.id]
    assert (stored.status, stored.decided_by, stored.decided_via) == ("cancelled", "human", "cli")


def _files_agent(model, server: str, human_input=None):
    """An agent on a server of its own (its first call of list_files asks for a sign-in)."""
    builder = AgentBuilder("a", model).mcp([toolbox(server)])
    return (builder if human_input is None else builder.human_input(human_input)).build()


def test_a_server_that_answers_that_a_web_page_must_be_opened_first_asks_the_person_then_calls():
    """The server's error -32042 (URL elicitation required): the person is shown the page, and
    once done the call is made again. Before, the model read the error, without the link."""
    asked = []

    def ask(request):
        asked.append(request)
        return [{"questionId": "confirm", "answer": "done", "choice": "done"}]

    model = QueueModel([call("list_files", {}), "done"])
    _files_agent(model, "files-done", CallbackHumanInput(ask=ask)).prompt("my files").send_sync()
    [question] = asked[0].questions
    assert "Sign in to read your files." in question.question
    assert "https://example.com/files/sign-in?state=7" in question.question
    result = tool_results(model.requests[1])[0]
    assert (result.is_error, result.content) == (False, "a.txt, b.txt")


@pytest.mark.parametrize("person", ["declines", "nobody"])
def test_a_page_the_person_declines_or_nobody_can_open_is_an_error_naming_it(person):
    def ask(request):
        return [{"questionId": "confirm", "answer": "decline", "choice": "decline"}]

    human = CallbackHumanInput(ask=ask) if person == "declines" else None
    model = QueueModel([call("list_files", {}), "done"])
    _files_agent(model, f"files-{person}", human).prompt("my files").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert "needs the person to open a web page before list_files can run" in result.content
    assert "https://example.com/files/sign-in?state=7" in result.content
    why = "the person declined" if person == "declines" else "nobody to ask (no human input)"
    assert why in result.content


def test_every_question_of_one_call_is_kept_in_its_trace(tmp_path):
    """A tool that asked twice kept only its last question in the trace (and Inspect)."""
    from anvia_notebook import RunStore

    names = iter(["Ada", "Grace"])

    def ask(request):
        return [{"questionId": "name", "answer": next(names), "custom": True}]

    model = QueueModel([call("ask_two_names", {}), "done"])
    store = RunStore(tmp_path / "runs.sqlite")
    agent = _agent(model, CallbackHumanInput(ask=ask))
    response = agent.prompt("names").store(store).send_sync()
    assert tool_results(model.requests[1])[0].content == "Ada and Grace"
    assert store.trace(response.run_id).tool_calls == response.trace.tool_calls
    [traced] = response.trace.tool_calls
    asked = [(q.questions[0].question, q.answers[0].answer) for q in traced.questions]
    assert asked == [
        ("Which first name?\n\nName: A name", "Ada"),
        ("Which second name?\n\nName: A name", "Grace"),
    ]
    assert traced.question == traced.questions[-1]
    from anvia_notebook.notebook._inspect import inspect_turn

    _, view = inspect_turn(response.trace, 0)
    shown = json.loads(view["tool_calls"][0]["question"])
    assert [record["answers"][0]["answer"] for record in shown] == ["Ada", "Grace"]
    assert all(q.status == "answered" for q in traced.questions)


def test_a_server_tool_named_ask_question_is_sent_to_the_server(tmp_path):
    """Before, a server's ``ask_question`` (a ticket system's, say) was approved by the person
    and then never called: the person was asked its questions instead, and the model read the
    answers as the server's result."""
    log = tmp_path / "toolbox.log"
    server = toolbox("tickets", env={"TOOLBOX_ASK_QUESTION": "1", "TOOLBOX_LOG": str(log)})
    questions = [{"id": "q1", "question": "Archive?", "choices": ["yes", "no"]}]
    model = QueueModel([call("ask_question", {"questions": questions}), "done"])
    asked = []
    human = CallbackHumanInput(approve=lambda request: True, ask=asked.append)
    agent = AgentBuilder("a", model).mcp([server]).human_input(human).build()
    response = agent.prompt("archive").send_sync()
    assert asked == []
    assert tool_results(model.requests[1])[0].content == "archived"
    assert log.read_text() == "archived 1\n"
    assert response.trace.tool_calls[0].approval.status == "approved"  # (a destructive tool)
