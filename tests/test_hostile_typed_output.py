"""Typed output as a hostile model would drive it: a model that gives its ``final_result``
calls of two turns the same id (some servers repeat ids) must not have the later call told,
traced or shown with the earlier call's decision."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder
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
