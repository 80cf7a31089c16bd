"""Typed output of pydantic ``RootModel`` types and of models with field aliases.

- A ``RootModel`` subclass is the output type: ``response.data`` is an instance of it in both
  modes (a root model of an object is not cut to its root), without serializer warnings.
- ``to_pandas()`` of a ``RootModel[list[Model]]`` has a row per model, as ``list[Model]`` has,
  and of a ``RootModel[dict[str, Model]]`` a row per key.
- The JSON form of the value (the final event's ``data``, the stored run's ``data``, the output
  text when the model wrote none) has the keys of the schema the model was given: aliases, so
  it validates as the type again.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from pydantic import BaseModel, Field, RootModel

from anvia_notebook import AgentBuilder, ExtractorBuilder, RunStore
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

pytestmark = pytest.mark.timeout(60)

MODES = ["tool", "native"]


class City(BaseModel):
    name: str
    population: int


class Wrapped(RootModel[City]):
    def describe(self) -> str:
        return f"{self.root.name} ({self.root.population})"


class Cities(RootModel[list[City]]):
    pass


class Index(RootModel[dict[str, City]]):
    pass


class Place(BaseModel):
    city_name: str = Field(alias="cityName")
    population: int


class Measured(BaseModel):
    name: str
    area: float


class Areas(RootModel[list[Measured]]):
    pass


PARIS = {"name": "P", "population": 1}
LYON = {"name": "L", "population": 2}


def answer(mode: str, arguments: Any, *, wrapped: bool = False) -> ModelResponse | str:
    """The model's answer giving ``arguments``: a ``final_result`` call, or the JSON text."""
    if mode == "tool":
        given = {"result": arguments} if wrapped else arguments
        return ModelResponse(
            tool_calls=[ToolCall(id="out_1", name="final_result", arguments=given)]
        )
    return json.dumps(arguments)


async def run(
    output_type: Any, mode: str, reply: ModelResponse | str, store: RunStore | None = None
) -> tuple[Any, list[Any], QueueModel]:
    """The run's response and events; serializer warnings are errors."""
    model = QueueModel([reply])
    agent = AgentBuilder("typed", model).output_type(output_type, mode).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        started = agent.prompt("go").store(store).start()
        response = await started.wait()
        events = list(started.events)
    return response, events, model


def final_event(events: list[Any]) -> Any:
    [event] = [e for e in events if e.type == "final"]
    return event


# -- a RootModel of an object ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_root_model_of_a_model_is_the_data_in_both_modes(mode: str) -> None:
    response, events, _ = await run(Wrapped, mode, answer(mode, PARIS))
    assert isinstance(response.data, Wrapped)
    assert response.data.root == City(**PARIS)
    assert response.data.describe() == "P (1)"
    assert final_event(events).data == PARIS
    assert response.to_pandas().to_dict("records") == [PARIS]


@pytest.mark.parametrize("mode", MODES)
async def test_a_root_model_of_a_dict_of_models_is_the_data_in_both_modes(mode: str) -> None:
    response, events, _ = await run(Index, mode, answer(mode, {"p": PARIS, "l": LYON}))
    assert isinstance(response.data, Index)
    assert response.data.root == {"p": City(**PARIS), "l": City(**LYON)}
    assert final_event(events).data == {"p": PARIS, "l": LYON}
    frame = response.to_pandas()
    assert list(frame.columns) == ["name", "population"]
    assert list(frame.index) == ["p", "l"]
    assert frame.to_dict("records") == [PARIS, LYON]


def test_send_sync_and_the_extractor_give_the_root_model() -> None:
    model = QueueModel([answer("tool", PARIS)])
    agent = AgentBuilder("typed", model).output_type(Wrapped).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        response = agent.prompt("go").store(None).send_sync()
    assert isinstance(response.data, Wrapped) and response.data.root == City(**PARIS)

    submit = ModelResponse(tool_calls=[ToolCall(id="s", name="submit", arguments=PARIS)])
    extractor = ExtractorBuilder(QueueModel([submit]), Wrapped).build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        extracted = extractor.extract_sync("Paris has 1 person.")
    assert isinstance(extracted, Wrapped) and extracted.root == City(**PARIS)


# -- to_pandas of a RootModel of a list -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_to_pandas_of_a_root_model_of_a_list_has_a_row_per_item(mode: str) -> None:
    response, events, _ = await run(Cities, mode, answer(mode, [PARIS, LYON], wrapped=True))
    assert isinstance(response.data, Cities)
    frame = response.to_pandas()
    assert list(frame.columns) == ["name", "population"]
    assert frame.to_dict("records") == [PARIS, LYON]
    assert final_event(events).data == [PARIS, LYON]
    # The same as list[City] gives.
    listed, _, _ = await run(list[City], mode, answer(mode, [PARIS, LYON], wrapped=True))
    assert listed.to_pandas().equals(frame)


@pytest.mark.parametrize("mode", MODES)
async def test_to_pandas_of_an_empty_root_model_list_has_the_item_columns(mode: str) -> None:
    response, _, _ = await run(Cities, mode, answer(mode, [], wrapped=True))
    frame = response.to_pandas()
    assert len(frame) == 0 and list(frame.columns) == ["name", "population"]


async def test_to_pandas_of_a_root_model_list_keeps_float_fields_float() -> None:
    rows = [{"name": "P", "area": 105}, {"name": "L", "area": 48}]
    response, _, _ = await run(Areas, "tool", answer("tool", rows, wrapped=True))
    frame = response.to_pandas()
    assert str(frame["area"].dtype) == "Float64"
    assert frame.to_dict("records") == rows


async def test_to_pandas_of_a_list_of_root_models_of_models() -> None:
    response, _, _ = await run(list[Wrapped], "tool", answer("tool", [PARIS, LYON], wrapped=True))
    assert all(isinstance(item, Wrapped) for item in response.data)
    frame = response.to_pandas()
    assert list(frame.columns) == ["name", "population"]
    assert frame.to_dict("records") == [PARIS, LYON]


# -- aliases --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_the_json_form_of_a_model_with_aliases_uses_the_schema_keys(
    mode: str, tmp_path: Any
) -> None:
    given = {"cityName": "P", "population": 1}
    store = RunStore(str(tmp_path / "runs.sqlite"))
    try:
        response, events, model = await run(Place, mode, answer(mode, given), store)
        if mode == "tool":
            schema = model.requests[0].tools[-1].parameters
        else:
            format_ = model.requests[0].response_format
            assert format_ is not None
            schema = format_.json_schema
        assert set(schema["properties"]) == {"cityName", "population"}
        assert response.data == Place(cityName="P", population=1)
        event = final_event(events)
        assert event.data == given
        assert Place.model_validate(event.data) == response.data
        if mode == "tool":  # the model wrote no text: the output is the value's compact JSON
            assert event.output == response.output == '{"cityName":"P","population":1}'
        else:
            assert response.output == json.dumps(given)
        stored = store.get(response.run_id)
        assert stored.data == given
        assert Place.model_validate(stored.data) == response.data
    finally:
        store.close()


async def test_the_json_form_of_a_list_of_models_with_aliases_round_trips() -> None:
    given = [{"cityName": "P", "population": 1}, {"cityName": "L", "population": 2}]
    response, events, _ = await run(list[Place], "tool", answer("tool", given, wrapped=True))
    event = final_event(events)
    assert event.data == given
    assert event.output == json.dumps(given, separators=(",", ":"))
    assert [Place.model_validate(item) for item in event.data] == response.data
