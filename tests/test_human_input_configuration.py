"""The shipped human inputs: the terminal's answers to questions (a blank line asks again, a
number beside a choice picks it, anything else, a number no choice has included, is the person's
own answer), the time limit every waiting input checks, and the widget's input as the waiting
input configured with a scripted operator rule."""

from __future__ import annotations

import io
import json
import math

import pytest

from anvia_notebook import AgentBuilder, create_question_tool
from anvia_notebook.human import CallbackHumanInput, ConsoleHumanInput, StoreHumanInput
from anvia_notebook.models import QueueModel

from helpers import call, tool_results

SIZES = [{"label": label, "value": label[0].lower()} for label in ("Small", "Medium", "Large")]
QUESTIONS = {
    "questions": [
        {"id": "size", "question": "Which size?", "choices": SIZES},
        {"id": "note", "question": "Anything else?", "choices": SIZES},
    ]
}


def answered(lines: list[str]) -> tuple[list[dict[str, object]], str]:
    typed = iter(lines)
    out = io.StringIO()
    human = ConsoleHumanInput(input_fn=lambda prompt: next(typed), output=out)
    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(human).build()
    agent.prompt("go").send_sync()
    return json.loads(tool_results(model.requests[1])[0].content)["answers"], out.getvalue()


def test_a_blank_line_asks_again_and_a_number_picks_its_choice():
    answers, shown = answered(["", "  ", "2", "gift wrap"])
    assert shown.count("Please pick a choice or type an answer.") == 2
    assert answers == [
        {"questionId": "size", "answer": "m", "choice": "m"},
        {"questionId": "note", "answer": "gift wrap", "custom": True},
    ]


@pytest.mark.parametrize("typed", ["0", "4", "12"])
def test_a_number_no_choice_has_is_the_persons_own_answer(typed: str):
    answers, _ = answered([typed, "1"])
    assert answers == [
        {"questionId": "size", "answer": typed, "custom": True},
        {"questionId": "note", "answer": "s", "choice": "s"},
    ]


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_a_time_limit_that_is_not_positive_is_refused(timeout: float):
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        StoreHumanInput(timeout=timeout)
    assert repr(StoreHumanInput(timeout=2)) == "StoreHumanInput(timeout=2)"


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_a_console_input_refuses_a_time_limit_that_is_not_positive(timeout: float):
    """It was taken: each request then timed out at once, before the person could answer."""
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        ConsoleHumanInput(timeout=timeout)
    assert ConsoleHumanInput(timeout=2.5).timeout == 2.5


def test_a_widget_input_given_a_rule_that_is_off_ignores_the_environment(monkeypatch):
    from anvia_notebook.notebook._human_input import AUTO_ENV, WidgetHumanInput

    monkeypatch.setenv(AUTO_ENV, "approve")
    assert WidgetHumanInput().auto is not None
    assert WidgetHumanInput(auto="off").auto is None
    assert WidgetHumanInput(auto=False).auto is None
    assert isinstance(WidgetHumanInput(timeout=3), StoreHumanInput)


def _inputs():
    from anvia_notebook import CallbackHumanInput
    from anvia_notebook.notebook._human_input import WidgetHumanInput

    return {
        "callback": lambda timeout: CallbackHumanInput(approve=lambda r: True, timeout=timeout),
        "console": lambda timeout: ConsoleHumanInput(timeout=timeout),
        "store": lambda timeout: StoreHumanInput(timeout=timeout),
        "widget": lambda timeout: WidgetHumanInput(timeout=timeout),
    }


@pytest.mark.parametrize("kind", ["callback", "console", "store", "widget"])
@pytest.mark.parametrize("timeout", [math.nan, 1e300, 10**30, "5", True, [1]])
def test_a_time_limit_that_is_no_usable_number_is_refused(kind: str, timeout: object):
    """NaN, a time too far off to be a date, a text, a bool: each was taken, and the run then
    failed when it asked (OverflowError, ValueError) with the approval left waiting."""
    with pytest.raises((TypeError, ValueError), match="timeout must be"):
        _inputs()[kind](timeout)


def test_an_infinite_time_limit_is_no_time_limit():
    """``timeout=math.inf`` reads as "wait as long as it takes": the run failed with
    OverflowError when it asked."""
    from anvia_notebook import CallbackHumanInput, ToolApproval

    from helpers import make_add_tool

    for make in _inputs().values():
        assert make(math.inf).timeout is None
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    human = CallbackHumanInput(approve=lambda request: True, timeout=math.inf)
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    assert agent.prompt("go").send_sync().output == "done"
    assert add.calls == [(1, 2)]


def test_a_human_input_of_your_own_with_an_infinite_time_limit_waits_without_one():
    from anvia_notebook import ToolApproval

    from helpers import make_add_tool

    class Approver:
        timeout = math.inf

        async def approve(self, request):
            return True

        async def ask(self, request):
            return []

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    agent = AgentBuilder("a", model).tool(add).human_input(Approver()).build()
    response = agent.prompt("go").send_sync()
    assert response.output == "done" and add.calls == [(1, 2)]


def test_a_time_limit_given_as_another_kind_of_number_is_taken():
    """numpy's numbers (a pandas cell, a config) and fractions are seconds too."""
    from fractions import Fraction

    import numpy as np

    assert StoreHumanInput(timeout=np.int64(30)).timeout == 30.0
    assert ConsoleHumanInput(timeout=Fraction(1, 2)).timeout == 0.5
    assert StoreHumanInput(timeout=np.float64("inf")).timeout is None


@pytest.mark.parametrize(("field", "value"), [("approve", 5), ("ask", "yes"), ("approve", True)])
def test_a_callback_human_input_refuses_what_is_not_a_function_when_made(field, value):
    """Before, ``CallbackHumanInput(approve=5)`` was taken, and the run failed at its first
    approval with Python's "'int' object is not callable"."""
    with pytest.raises(TypeError, match=f"CallbackHumanInput\\({field}=...\\) takes a function"):
        CallbackHumanInput(**{field: value})
