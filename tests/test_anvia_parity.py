"""Behaviour that follows Anvia v0 (and its Studio) exactly, through the public API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    ToolApproval,
    create_hook,
    create_tool,
)
from anvia_notebook.models import ModelError, QueueModel, StreamingQueueModel, TextDelta

from helpers import call, make_add_tool, tool_results

# -- any tool named ask_question is intercepted --------------------------------------------------


class FreeFormInput(BaseModel):
    """An input model unlike ask_question's: the interception does not depend on it."""

    prompt: str = ""
    questions: list[dict[str, Any]] = []


def test_a_tool_of_your_own_named_ask_question_is_intercepted_by_a_human_input():
    executed: list[Any] = []
    own = create_tool(
        name="ask_question",
        description="My own question tool.",
        input=FreeFormInput,
        execute=lambda args, ctx: executed.append(args) or "from execute",
    )
    asked = []

    def ask(request):
        asked.append(request)
        return [{"questionId": "size", "answer": "m", "choice": "m"}]

    questions = {"questions": [{"id": "size", "question": "Size?", "choices": ["s", "m"]}]}
    model = QueueModel([call("ask_question", questions), "ok"])
    agent = AgentBuilder("a", model).tool(own).human_input(CallbackHumanInput(ask=ask)).build()
    agent.prompt("go").send_sync()
    assert executed == []
    [request] = asked
    assert [(c.label, c.value) for c in request.questions[0].choices] == [("s", "s"), ("m", "m")]
    result = tool_results(model.requests[1])[0]
    assert result.content == '{"answers":[{"questionId":"size","answer":"m","choice":"m"}]}'
    assert not result.is_error


def test_a_tool_of_your_own_named_ask_question_runs_its_execute_without_a_human_input():
    own = create_tool(
        name="ask_question",
        description="",
        input=FreeFormInput,
        execute=lambda args, ctx: "from execute",
    )
    model = QueueModel([call("ask_question", {"prompt": "hi"}), "ok"])
    AgentBuilder("a", model).tool(own).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == "from execute"


def test_a_tool_of_your_own_named_ask_question_falls_back_to_its_execute_with_its_own_args():
    """A human input that cannot ask (no ``ask``) leaves the call to the tool itself."""
    executed: list[Any] = []
    own = create_tool(
        name="ask_question",
        description="",
        input=FreeFormInput,
        execute=lambda args, ctx: executed.append(args) or "from execute",
    )
    questions = {"questions": [{"id": "size", "question": "Size?", "choices": ["s"]}]}
    model = QueueModel([call("ask_question", questions), "ok"])
    human = CallbackHumanInput(approve=lambda request: True)
    AgentBuilder("a", model).tool(own).human_input(human).build().prompt("go").send_sync()
    [args] = executed
    assert isinstance(args, FreeFormInput) and args.questions[0]["id"] == "size"
    assert tool_results(model.requests[1])[0].content == "from execute"


# -- model output normalised as Anvia's Studio does ----------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # plain-string choices (trimmed; blank ones dropped)
        (
            {"questions": [{"id": "a", "question": "A?", "choices": [" low ", "", "high"]}]},
            [("a", [("low", "low"), ("high", "high")])],
        ),
        # a missing, blank or non-string value takes the label
        (
            {
                "questions": [
                    {
                        "id": "a",
                        "question": "A?",
                        "choices": [{"label": "One"}, {"label": "Two", "value": "  "}],
                    },
                    {"id": "b", "question": "B?", "choices": [{"label": "Three", "value": 3}]},
                ]
            },
            [("a", [("One", "One"), ("Two", "Two")]), ("b", [("Three", "Three")])],
        ),
        # a missing, blank or non-string id is filled from the position
        (
            {
                "questions": [
                    {"question": "A?", "choices": ["x"]},
                    {"id": " ", "question": "B?", "choices": ["y"]},
                    {"id": 7, "question": "C?", "choices": ["z"]},
                    {"id": " d ", "question": "D?", "choices": ["w"]},
                ]
            },
            [("q1", [("x", "x")]), ("q2", [("y", "y")]), ("q3", [("z", "z")]), ("d", [("w", "w")])],
        ),
        # choices without a usable label are dropped, as are keys Anvia does not know
        (
            {
                "questions": [
                    {
                        "id": "a",
                        "question": "A?",
                        "type": "single",
                        "choices": [{"value": "v"}, 5, {"label": "Ok", "hint": "x"}],
                    }
                ]
            },
            [("a", [("Ok", "Ok")])],
        ),
        # one question given without the "questions" list
        ({"question": "Only?", "choices": ["yes"]}, [("q1", [("yes", "yes")])]),
    ],
)
def test_model_output_is_normalised_as_anvia_studio_does(raw, expected):
    asked = []

    def ask(request):
        asked.append(request)
        return [{"questionId": q.id, "answer": q.choices[0].value} for q in request.questions]

    model = QueueModel([call("ask_question", raw), "ok"])
    from anvia_notebook import ask_question

    agent = (
        AgentBuilder("a", model).tool(ask_question).human_input(CallbackHumanInput(ask=ask)).build()
    )
    agent.prompt("go").send_sync()
    [request] = asked
    assert [(q.id, [(c.label, c.value) for c in q.choices]) for q in request.questions] == expected


def test_a_question_left_without_any_usable_choice_is_still_refused():
    raw = {"questions": [{"id": "a", "question": "A?", "choices": ["", {"value": "v"}]}]}
    model = QueueModel([call("ask_question", raw), "ok"])
    asked = []
    from anvia_notebook import ask_question

    human = CallbackHumanInput(ask=lambda r: asked.append(r) or [])
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert asked == [] and not result.is_error  # skipped, as in Anvia's Studio
    assert "choices" in result.content


# -- a rejected approval records the text the model is told ------------------------------------


@pytest.mark.parametrize(
    ("decision", "policy_reject", "expected"),
    [
        (ApprovalDecision(approved=False, reason="r", reject_message="m"), None, "m"),
        (ApprovalDecision(approved=False, reason="r"), "policy says no", "r"),
        (ApprovalDecision(approved=False), "policy says no", "policy says no"),
        (False, None, "Tool approval was rejected."),
    ],
)
@pytest.mark.parametrize("decider", ["handler", "human"])
def test_a_rejected_approval_records_the_rejection_text_as_its_reason(
    decision, policy_reject, expected, decider
):
    add = make_add_tool(approval=ToolApproval(reject_message=policy_reject))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    builder = AgentBuilder("a", model).tool(add)
    if decider == "handler":
        builder = builder.approvals(lambda request: decision)
    else:
        builder = builder.human_input(CallbackHumanInput(approve=lambda request: decision))
    agent = builder.build()

    async def events():
        return [e async for e in agent.prompt("go").stream()]

    [result] = [e for e in asyncio.run(events()) if e.type == "tool_approval_result"]
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == expected
    assert (result.approval.status, result.approval.decision_reason) == ("rejected", expected)


# -- completion retries -----------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, "yes", 1])
def test_should_retry_that_is_not_callable_raises_type_error(value):
    model = StreamingQueueModel([[TextDelta(delta="ok")]])
    request = AgentBuilder("a", model).build().prompt("go")
    with pytest.raises(TypeError, match="should_retry"):
        request.with_completion_retries(should_retry=value)


def _raised_from(cause: BaseException, *, implicit: bool) -> BaseException:
    """A provider error raised while handling ``cause`` (``from`` it, or implicitly)."""
    try:
        try:
            raise cause
        except BaseException as inner:
            if implicit:
                raise RuntimeError("the stream broke")  # noqa: B904
            raise ModelError("provider failed") from inner
    except BaseException as outer:
        return outer


@pytest.mark.parametrize("implicit", [False, True])
@pytest.mark.parametrize(
    "cause", [ConnectionResetError("reset"), TimeoutError("slow"), ConnectionRefusedError()]
)
def test_an_error_caused_by_a_connection_error_is_retried(cause, implicit):
    error = _raised_from(cause, implicit=implicit)
    model = StreamingQueueModel([[error], [TextDelta(delta="ok")]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("go")
        .with_completion_retries(initial_delay=0, max_delay=0)
    )
    assert request.send_sync().output == "ok"
    assert len(model.requests) == 2


def test_a_status_in_the_chain_decides_before_a_connection_error():
    """As in Anvia: the first status code found in the chain decides (400: no retry)."""
    error = _raised_from(ConnectionResetError("reset"), implicit=False)
    outer = ModelError("bad request", status_code=400)
    outer.__cause__ = error
    model = StreamingQueueModel([[outer], [TextDelta(delta="ok")]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("go")
        .with_completion_retries(initial_delay=0, max_delay=0)
    )
    with pytest.raises(ModelError, match="bad request"):
        request.send_sync()
    assert len(model.requests) == 1


def test_an_error_without_a_connection_cause_is_not_retried():
    error = _raised_from(ValueError("bad"), implicit=True)
    model = StreamingQueueModel([[error], [TextDelta(delta="ok")]])
    request = (
        AgentBuilder("a", model)
        .build()
        .prompt("go")
        .with_completion_retries(initial_delay=0, max_delay=0)
    )
    with pytest.raises(RuntimeError, match="the stream broke"):
        request.send_sync()
    assert len(model.requests) == 1


# -- on_tool_error for calls that never reach execute -------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "error_type", "result_start"),
    [
        ("nope", {"x": 1}, "ToolNotFoundError", "ToolNotFoundError: Tool not found: nope"),
        ("add", {"x": "one", "y": 2}, "ToolArgumentsError", "Invalid arguments for tool add"),
        ("add", '{"x": 1, "y": ', "ToolArgumentsError", "Invalid arguments for tool add"),
    ],
)
def test_on_tool_error_fires_for_unknown_tools_and_bad_arguments(
    name, arguments, error_type, result_start
):
    seen = []
    hook = create_hook(on_tool_error=seen.append)
    add = make_add_tool()
    model = QueueModel([call(name, arguments), "ok"])
    AgentBuilder("a", model).tool(add).hook(hook).build().prompt("go").send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error and result.content.startswith(result_start)
    [event] = seen
    assert type(event.error).__name__ == error_type
    assert (event.tool_name, event.tool_call_id) == (name, "call_1")
    assert event.internal_call_id
    assert add.calls == []


def test_on_tool_error_can_stop_the_run_for_an_unknown_tool():
    from anvia_notebook import PromptCancelledError

    hook = create_hook(on_tool_error=lambda event: event.run.cancel("no such tool"))
    model = QueueModel([call("nope", {}), "ok"])
    with pytest.raises(PromptCancelledError, match="no such tool"):
        AgentBuilder("a", model).hook(hook).build().prompt("go").send_sync()


# -- compact argument JSON ----------------------------------------------------------------------


def test_hooks_tools_and_results_get_compact_argument_json():
    seen: dict[str, str] = {}

    def execute(args, ctx):
        seen["ctx"] = ctx.raw_args
        return {"sum": args.x + args.y, "note": "é"}

    class AddInput(BaseModel):
        x: int
        y: int

    add = create_tool(name="add", description="", input=AddInput, execute=execute)
    hook = create_hook(
        on_tool_call=lambda e: seen.__setitem__("call", e.args),
        on_tool_result=lambda e: seen.__setitem__("result", e.args),
    )
    model = QueueModel(
        [call("add", {"x": 2, "y": 5}), call("add", '{ "x" : 2,\n "y": 5 }', id="c2"), "ok"]
    )
    agent = AgentBuilder("a", model).tool(add).hook(hook).build()

    async def events():
        return [e async for e in agent.prompt("go").stream()]

    results = [e for e in asyncio.run(events()) if e.type == "tool_result"]
    assert [r.args for r in results] == ['{"x":2,"y":5}', '{"x":2,"y":5}']
    assert seen == {"call": '{"x":2,"y":5}', "result": '{"x":2,"y":5}', "ctx": '{"x":2,"y":5}'}
    assert results[0].result == '{"sum":7,"note":"é"}'
    assert json.loads(tool_results(model.requests[1])[0].content) == {"sum": 7, "note": "é"}


# -- one check of the operator's answers, whoever brings them -----------------------------------

SIZE_AND_COLOUR = {
    "questions": [
        {"id": "size", "question": "Size?", "choices": ["s", "m"]},
        {"id": "colour", "question": "Colour?", "choices": ["red"]},
    ]
}
M = {"questionId": "size", "answer": "m", "choice": "m"}
RED = {"questionId": "colour", "answer": "red", "choice": "red"}


@pytest.mark.parametrize(
    "answers",
    [
        [M, RED],
        [RED, {"question_id": "size", "answer": " custom ", "custom": True}],
        [M],  # one question left unanswered
        [M, RED, M],
        [M, {"questionId": "nope", "answer": "x"}],
        [M, {"questionId": "colour", "answer": "  "}],
        [M, {"questionId": "colour", "answer": "blue", "choice": "red"}],
        [M, {"questionId": "colour", "answer": "red", "choice": "red", "custom": True}],
    ],
)
async def test_a_human_input_and_the_run_store_judge_answers_alike(answers, tmp_path):
    from anvia_notebook import (
        DecisionRefusedError,
        PromptCancelledError,
        RunStore,
        StoreHumanInput,
        ask_question,
    )

    # Through a human input: refused answers become the call's error result.
    model = QueueModel([call("ask_question", SIZE_AND_COLOUR), "ok"])
    human = CallbackHumanInput(ask=lambda request: answers)
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    await agent.prompt("go").store(None).send()
    first = tool_results(model.requests[1])[0]

    # Through the run store (a widget, a handle, another process): refused with a reason.
    model = QueueModel([call("ask_question", SIZE_AND_COLOUR), "ok"])
    agent = AgentBuilder("b", model).tool(ask_question).human_input(StoreHumanInput()).build()
    store = RunStore(tmp_path / "runs.sqlite")
    run = agent.prompt("go").store(store).start()
    asked = asyncio.Event()
    run.subscribe(lambda event: event.type == "tool_question_request" and asked.set())
    await asyncio.wait_for(asked.wait(), 30)
    [pending] = run.state.pending_questions()
    try:
        RunStore(tmp_path / "runs.sqlite").answer(run.run_id, pending.id, answers)
    except DecisionRefusedError as refused:
        run.cancel()
        with pytest.raises(PromptCancelledError):
            await run.wait()
        assert first.is_error
        assert (
            first.content == f"ToolCallError: the human input returned invalid answers: {refused}"
        )
    else:
        await asyncio.wait_for(run.wait(), 30)
        second = tool_results(model.requests[1])[0]
        assert not first.is_error
        assert json.loads(first.content) == json.loads(second.content)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        # every choice dropped: the model is told which choice it wrote was unusable
        (
            {"questions": [{"id": "a", "question": "A?", "choices": ["", {"value": "v"}, 5]}]},
            [
                "questions.0.choices.0.label: Value error, choice label and value must be a non-empty",
                "questions.0.choices.1.label: Field required",
                "questions.0.choices.2: Input should be a valid dictionary",
            ],
        ),
        # a "questions" that is not a list is named, not read as one question without text
        ({"questions": "hi"}, ["questions: Input should be a valid list"]),
    ],
)
def test_a_question_the_run_cannot_ask_is_refused_naming_what_the_model_wrote(raw, words):
    model = QueueModel([call("ask_question", raw), "ok"])
    from anvia_notebook import ask_question

    human = CallbackHumanInput(ask=lambda request: pytest.fail("asked"))
    AgentBuilder("a", model).tool(ask_question).human_input(human).build().prompt("go").send_sync()
    content = tool_results(model.requests[1])[0].content
    assert content.startswith("Invalid arguments for tool ask_question: ")
    for text in words:
        assert text in content
    assert "not 0" not in content and "questions.0.question" not in content
