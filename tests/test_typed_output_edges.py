"""Typed output at its edges: types that are not objects in native mode, answers in a code
block, a validator that raises its own exception, the call that ends a run with an invalid
value, the table of an empty list, and the offline models' classes built by position."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, model_validator
from typing_extensions import TypedDict

from anvia_notebook import AgentBuilder, OutputValidationError, RunStore
from anvia_notebook.models import (
    Finish,
    ModelResponse,
    QueueModel,
    TextDelta,
    ToolCall,
)
from anvia_notebook.models.openai import to_openai_response_format

pytestmark = pytest.mark.timeout(60)


class City(BaseModel):
    name: str
    population: int


def final(arguments: Any, id: str = "out_1") -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=id, name="final_result", arguments=arguments)])


async def native(output_type: Any, *answers: str) -> tuple[Any, QueueModel]:
    model = QueueModel(list(answers))
    agent = AgentBuilder("typed", model).output_type(output_type, "native", retries=1).build()
    response = await agent.prompt("go").store(None).send()
    return response.data, model


async def test_native_mode_asks_for_an_object_when_the_type_is_not_one() -> None:
    """Providers take only an object as a response format: a list or a number is asked for as
    ``{"result": ...}``, and that answer, or the bare value, is the data."""
    data, model = await native(list[City], json.dumps({"result": [{"name": "P", "population": 1}]}))
    assert data == [City(name="P", population=1)]
    sent = model.requests[0].response_format
    assert sent is not None and sent.json_schema["type"] == "object"
    assert sent.json_schema["required"] == ["result"]
    assert sent.json_schema["properties"]["result"]["type"] == "array"
    openai = to_openai_response_format(sent)["json_schema"]
    assert openai["schema"]["type"] == "object" and openai["strict"] is True

    data, _ = await native(list[City], json.dumps([{"name": "P", "population": 1}]))
    assert data == [City(name="P", population=1)]
    data, model = await native(int, '{"result": 42}')
    assert data == 42 and model.requests[0].response_format.json_schema["type"] == "object"
    data, _ = await native(int, " 42\n")
    assert data == 42


async def test_native_mode_reads_json_in_a_code_block_and_a_text_type_as_text() -> None:
    data, _ = await native(City, '```json\n{"name": "P", "population": 1}\n```')
    assert data == City(name="P", population=1)
    data, _ = await native(str, "hello world")
    assert data == "hello world"
    data, _ = await native(str, '"quoted"')
    assert data == "quoted"
    # Text around the JSON is still not JSON: the model is told and answers again.
    data, model = await native(City, 'Here: {"name": "P"}', '{"name": "P", "population": 3}')
    assert data == City(name="P", population=3)
    assert "Invalid JSON" in model.requests[1].messages[-1].content


class Renamed(BaseModel):
    name: str

    @model_validator(mode="before")
    @classmethod
    def from_full_name(cls, data: Any) -> Any:
        return {"name": data["full_name"]}  # a KeyError when the model uses another key


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_validator_that_raises_its_own_exception_fails_the_value(mode: str) -> None:
    """A ``KeyError`` out of a validator is the value's error: the model is told it and tries
    again (before: the run ended with the bare ``KeyError``)."""
    if mode == "tool":
        answers: list[Any] = [final({"name": "x"}, "a"), final({"full_name": "Ada"}, "b")]
    else:
        answers = ['{"name": "x"}', '{"full_name": "Ada"}']
    model = QueueModel(answers)
    agent = AgentBuilder("typed", model).output_type(Renamed, mode, retries=1).build()
    response = await agent.prompt("go").store(None).send()
    assert isinstance(response.data, Renamed) and response.data.name == "Ada"
    told = model.requests[1].messages[-1]
    text = told.tool_results[0].content if mode == "tool" else told.content
    assert "A validator raised KeyError: 'full_name'" in text

    model = QueueModel([final({"name": "x"}, "a")])
    agent = AgentBuilder("typed", model).output_type(Renamed, retries=0).build()
    with pytest.raises(OutputValidationError, match="KeyError") as caught:
        await agent.prompt("go").store(None).send()
    assert caught.value.errors[0]["type"] == "validator_raised"


async def test_the_final_result_call_that_ends_the_run_says_why(store_location) -> None:
    """An invalid value nobody can fix ends the run: its ``final_result`` call is stored,
    traced and shown as failed with the error, not as a call stopped by the user."""
    store = RunStore(store_location)
    try:
        model = QueueModel([final({"name": "P", "population": "many"}, "a")])
        agent = AgentBuilder("typed", model).output_type(City, retries=0).build()
        request = agent.prompt("go").store(store)
        events: list[Any] = []
        with pytest.raises(OutputValidationError):
            async for event in request.stream():
                events.append(event)
        [result] = [e for e in events if e.type == "tool_result"]
        assert result.is_error and result.result.startswith("OutputValidationError: ")
        assert "population" in result.result
        [entry] = request.trace.tool_calls
        assert entry.status == "error" and entry.result == result.result
        [summary] = store.runs()
        stored = store.get(summary.run_id)
        [part] = stored.messages[-1].tool_results
        assert part.is_error and part.content == result.result
        [traced] = store.trace(summary.run_id).tool_calls
        assert traced.status == "error"
    finally:
        store.close()


@dataclass
class Row:
    city: str
    rank: int


class Item(TypedDict):
    sku: str
    count: int


@pytest.mark.parametrize(
    ("output_type", "columns"),
    [
        (list[City], ["name", "population"]),
        (list[Row], ["city", "rank"]),
        (list[Item], ["sku", "count"]),
    ],
)
async def test_an_empty_list_is_a_table_with_the_item_type_columns(output_type, columns) -> None:
    pytest.importorskip("pandas")
    model = QueueModel([final({"result": []})])
    agent = AgentBuilder("typed", model).output_type(output_type).build()
    response = await agent.prompt("go").store(None).send()
    table = response.to_pandas()
    assert table.shape == (0, len(columns)) and list(table.columns) == columns


def test_the_offline_models_classes_take_their_fields_by_position() -> None:
    """As the docs write them: ``ToolCall(id, name, arguments)``, ``TextDelta(delta)``."""
    assert ToolCall("c1", "add", {"x": 1}) == ToolCall(id="c1", name="add", arguments={"x": 1})
    assert ToolCall("c1", "add", '{"x": 1}').arguments_json() == '{"x": 1}'
    assert ToolCall("c1", "add").arguments == {}
    assert TextDelta("7") == TextDelta(delta="7")
    assert ModelResponse("hi") == ModelResponse(text="hi")
    assert Finish("length").reason == "length"
    with pytest.raises(TypeError, match=r"at most 1 positional argument \(delta\), not 2"):
        TextDelta("a", "b")
    with pytest.raises(TypeError, match="'id' both by position and by name"):
        ToolCall("c1", "add", id="c2")
    # Keywords and validation from data work as for any pydantic model.
    assert ToolCall.model_validate({"id": "c", "name": "n"}).arguments == {}


class Node(BaseModel):
    """A model that refers to itself: its schema is a ``$ref`` at the top."""

    name: str
    children: list[Node] = []


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_model_that_refers_to_itself_is_asked_for_as_the_object_it_is(mode: str) -> None:
    tree = {"name": "root", "children": [{"name": "leaf"}]}
    answer = final(tree) if mode == "tool" else json.dumps(tree)
    model = QueueModel([answer])
    agent = AgentBuilder("typed", model).output_type(Node, mode).build()
    response = await agent.prompt("a tree").store(None).send()
    assert response.data == Node(name="root", children=[Node(name="leaf")])
    request = model.requests[0]
    if mode == "tool":
        [schema] = [t.parameters for t in request.tools if t.name == "final_result"]
    else:
        schema = request.response_format.json_schema
    assert schema["type"] == "object" and "$ref" not in schema
    assert list(schema["properties"]) == ["name", "children"]
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"]["properties"]["name"] == {"title": "Name", "type": "string"}


@pytest.mark.parametrize(
    ("finish", "text", "said"),
    [
        ("length", '{"name": "Par', "it was cut off at the token limit"),
        ("content_filter", "I can't help with that.", "the model refused to answer"),
    ],
)
async def test_a_native_answer_cut_at_the_limit_or_refused_is_not_asked_for_again(
    finish: str, text: str, said: str
) -> None:
    """Both were sent back as invalid JSON ("answer again with only JSON"), twice, each call
    paid for and ending the same way, and the error then spoke of JSON only."""
    from anvia_notebook.models import StreamingQueueModel

    model = StreamingQueueModel([[text, Finish(reason=finish)]] * 3)
    agent = AgentBuilder("a", model).output_type(City, mode="native").build()
    with pytest.raises(OutputValidationError, match=said) as raised:
        await agent.prompt("Where?").store(None).send()
    assert len(model.requests) == 1
    assert raised.value.output == text and raised.value.errors


async def test_to_pandas_of_a_list_of_numbers_says_what_the_items_are():
    """The refusal named only ``list`` ("needs a list of models; this response's data is a
    list"), which reads as what was asked for: it names the items' type."""
    call = ToolCall("f1", "final_result", {"result": [1, 2]})
    model = QueueModel([ModelResponse(tool_calls=[call])])
    agent = AgentBuilder("numbers", model).output_type(list[int]).build()
    response = await agent.prompt("a").store(None).send()
    with pytest.raises(TypeError, match=r"this response's data is a list of int\.$"):
        response.to_pandas()
