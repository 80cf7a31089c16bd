"""Answers of the wrong shape, as a person types them from a terminal or code sends them: each
is refused with words that say what is wrong (not "empty" for a number, not "Unknown question
None" for a bare text), the same from the run and from the store, and the question still waits.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_safety_mutants import approval_and_question

from anvia_notebook import DecisionRefusedError

WRONG = [
    ([{"questionId": "size", "answer": 5}], "The answer to question 'size' must be a text, not 5."),
    (
        ["m"],
        "Each answer is an object with a questionId and an answer (and choice or custom); got 'm'.",
    ),
    (
        [None],
        "Each answer is an object with a questionId and an answer (and choice or custom); "
        "got None.",
    ),
]


@pytest.mark.parametrize("front", ["run", "store"])
@pytest.mark.parametrize(("answers", "words"), WRONG)
async def test_answers_of_the_wrong_shape_are_refused_saying_what_is_wrong(
    store_path: Path, front: str, answers: list[Any], words: str
):
    run, store, _, question, add = await approval_and_question(store_path)
    answer = (
        run.interactions.answer
        if front == "run"
        else (lambda item, given: store.answer(run.run_id, item, given))
    )
    with pytest.raises(DecisionRefusedError) as refused:
        answer(question.id, answers)
    assert str(refused.value) == words
    assert question.id in [p.id for p in store.pending(run.run_id)]
    run.cancel("done")
    await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 5)
    assert add.calls == []


@pytest.mark.timeout(30)
def test_answers_from_code_that_hold_themselves_are_refused_and_the_run_goes_on():
    """Before, the run ended with RecursionError."""
    from anvia_notebook import AgentBuilder, CallbackHumanInput, ask_question
    from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

    from helpers import tool_results

    questions = [{"id": "q", "question": "Which?", "choices": ["a", "b"]}]
    looped: list[Any] = []
    looped.extend([looped] * 8)
    asked = ModelResponse(
        tool_calls=[ToolCall(id="a", name="ask_question", arguments={"questions": questions})]
    )
    model = QueueModel([asked, "done"])
    human = CallbackHumanInput(ask=lambda request: looped)
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    assert agent.prompt("go").store(None).send_sync().output == "done"
    [result] = tool_results(model.requests[1])
    assert result.is_error and "they hold themselves" in result.content
