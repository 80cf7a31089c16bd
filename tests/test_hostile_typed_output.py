"""Typed output as a hostile model would drive it: a model that gives its ``final_result``
calls of two turns the same id (some servers repeat ids) must not have the later call told,
traced or shown with the earlier call's decision."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, field_serializer

from anvia_notebook import AgentBuilder, OutputValidationError, RunStore
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


def final(arguments: Any) -> ModelResponse:
    return ModelResponse(
        tool_calls=[ToolCall(id="call_0", name="final_result", arguments=arguments)]
    )


async def test_an_accepted_result_is_not_marked_with_an_earlier_turns_rejection() -> None:
    model = QueueModel(
        [final({"name": "Oslo", "population": 0}), final({"name": "Oslo", "population": 7})]
    )
    request = (
        AgentBuilder("a", model)
        .output_type(City, retries=0)
        .approvals(lambda r: False)  # the repair of the first value is rejected
        .build()
        .prompt("which city?")
    )
    response = await request.send()
    assert response.data == City(name="Oslo", population=7)
    statuses = [call.status for call in response.trace.tool_calls]
    assert statuses == ["rejected", "success"]


class _Secretive(BaseModel):
    name: str

    @field_serializer("name")
    def _hide(self, value: str) -> str:
        raise RuntimeError("cannot show names")


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_type_whose_serializer_raises_ends_the_run_with_an_error_saying_so(
    mode: str, store_location: str
) -> None:
    """Before: pydantic's bare PydanticSerializationError, from inside the run."""
    answer = final({"name": "P"}) if mode == "tool" else ModelResponse(text='{"name": "P"}')
    model = QueueModel([answer])
    store = RunStore(store_location)
    request = AgentBuilder("t", model).output_type(_Secretive, mode).build().prompt("go")
    with pytest.raises(OutputValidationError) as raised:
        await request.store(store).send()
    message = str(raised.value)
    assert "could not be turned into JSON" in message and "cannot show names" in message
    assert raised.value.output_type is _Secretive
    [run] = store.runs()
    assert run.status == "error"
    kinds = [event.type for event in store.events(run.run_id)]
    assert kinds[-1] == "error" and kinds.count("tool_call") == kinds.count("tool_result")
    store.close()
