"""A model's tool call whose argument text is not JSON as Anvia reads it (``JSON.parse``): NaN
and Infinity, or nesting too deep to read. The call is invalid (the model is told so and may
call again); no approval is asked for arguments a person would be shown otherwise than the tool
gets them (the stored approval said ``null`` where the tool then got NaN)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, CallbackHumanInput, ToolApproval, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

from helpers import tool_results


class Limits(BaseModel):
    limit: float | None = None
    note: Any = None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"limit": NaN}', "NaN"),
        ('{"limit": Infinity}', "Infinity"),
        ('{"limit": -Infinity}', "-Infinity"),
        ('{"note": ' + "[" * 5000 + "]" * 5000 + "}", "nested too deeply"),
    ],
    ids=["nan", "infinity", "minus-infinity", "deep"],
)
def test_arguments_that_are_not_json_make_an_invalid_call(text: str, words: str):
    ran: list[Limits] = []
    asked: list[Any] = []
    tool = create_tool(
        name="t",
        description="A protected tool.",
        input=Limits,
        execute=lambda args, ctx: ran.append(args) or "ran",
        approval=ToolApproval(),
    )
    human = CallbackHumanInput(approve=lambda request: asked.append(request) or True)
    model = QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="t", arguments=text)]), "done"]
    )
    agent = AgentBuilder("a", model).tool(tool).human_input(human).build()
    assert agent.prompt("go").send_sync().output == "done"
    assert (ran, asked) == ([], [])
    [result] = tool_results(model.requests[1])
    assert result.is_error
    assert result.content.startswith("Invalid arguments for tool t: not valid JSON (")
    assert words in result.content


def nested(levels: int) -> dict[str, Any]:
    """``{"note": {"c": {"c": ... 1}}}``: objects ``levels`` deep."""
    value: Any = 1
    for _ in range(levels - 1):
        value = {"c": value}
    return {"note": value}


@pytest.mark.parametrize("as_text", [False, True], ids=["data", "text"])
def test_arguments_nested_deeper_than_a_tool_takes_make_an_invalid_call(store_path, as_text):
    """300 levels of objects: the tool ran, then the run could not store, trace or show them
    ("Circular reference detected (depth exceeded)"), failed, and stayed "running" in the
    store for ever."""
    from anvia_notebook import RunStore

    ran: list[Limits] = []
    tool = create_tool(
        name="t", description="A tool.", input=Limits, execute=lambda a, c: ran.append(a) or "ran"
    )
    deep, fits = nested(300), nested(100)
    arguments: Any = json.dumps(deep) if as_text else deep
    calls = [ToolCall(id="c1", name="t", arguments=arguments), ToolCall("c2", "t", fits)]
    model = QueueModel([ModelResponse(tool_calls=calls), "done"])
    store = RunStore(store_path)
    response = AgentBuilder("a", model).tool(tool).build().prompt("go").store(store).send_sync()
    assert response.output == "done"
    refused, accepted = tool_results(model.requests[1])
    assert refused.is_error
    assert refused.content == (
        "Invalid arguments for tool t: nested more than 100 levels deep. Call the tool again "
        "with flatter arguments."
    )
    assert (accepted.is_error, accepted.content) == (False, "ran")
    assert len(ran) == 1
    assert store.get(response.run_id).status == "success"
