"""A model that gives two calls of one turn the same id (some OpenAI-compatible servers do):
each call runs and keeps its own result (a sub-agent called twice runs twice); none replaces
the other."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel
from test_provider_openai import chunk_stream, serve  # noqa: F401 - the fixture

from anvia_notebook import AgentBuilder
from anvia_notebook.models import QueueModel
from anvia_notebook.models.base import ToolCall
from anvia_notebook.models.openai import OpenAIModel

from helpers import calls, make_add_tool, tool_results
from provider_replay import TIME, WEATHER, Server, ask, events_of


async def test_two_sub_agent_calls_with_one_id_both_run_with_their_own_results() -> None:
    analyst = AgentBuilder("analyst", QueueModel(["north", "south"])).build()
    lead_model = QueueModel(
        [calls(("analyst", {"prompt": "1"}, "c"), ("analyst", {"prompt": "2"}, "c")), "done"]
    )
    lead = AgentBuilder("lead", lead_model).tool(analyst.as_tool()).build()
    response = await lead.prompt("compare").with_tool_concurrency(2).send()
    assert response.output == "done"
    results = tool_results(lead_model.requests[1])
    assert sorted(part.content for part in results) == ["north", "south"]
    asked = [m for m in lead_model.requests[1].messages if m.role == "assistant"][-1]
    ids = [call.id for call in asked.tool_calls]
    assert len(set(ids)) == 2 and ids[0] == "c"
    assert sorted(part.tool_call_id for part in results) == sorted(ids)


async def test_two_tool_calls_with_one_id_each_run_once_in_order() -> None:
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 1}, "c"), ("add", {"x": 2, "y": 2}, "c")), "ok"]
    )
    add = make_add_tool()
    await AgentBuilder("a", model).tool(add).build().prompt("add").send()
    assert add.calls == [(1, 1), (2, 2)]
    assert [part.content for part in tool_results(model.requests[1])] == ["2", "4"]


async def test_a_typed_runs_final_result_with_another_calls_id_keeps_both() -> None:
    class Count(BaseModel):
        n: int

    model = QueueModel([calls(("add", {"x": 1, "y": 1}, "c"), ("final_result", {"n": 2}, "c"))])
    add = make_add_tool()
    response = (
        await AgentBuilder("a", model).tool(add).output_type(Count).build().prompt("x").send()
    )
    assert response.data == Count(n=2) and add.calls == [(1, 1)]
    [message] = [m for m in response.messages if m.role == "tool"]
    assert [part.content for part in message.tool_results] == ["2", "Final result accepted."]


async def test_an_openai_compatible_server_repeating_an_id_across_indexes(
    serve: Callable[..., Server],  # noqa: F811
) -> None:
    serve(
        chunk_stream(
            {"tool_calls": [{"index": 0, "id": "call_0", "function": {"name": "get_weather"}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Oslo"}'}}]},
            {"tool_calls": [{"index": 1, "id": "call_0", "function": {"name": "get_time"}}]},
            {"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]},
        )
    )
    model = OpenAIModel("local", base_url="http://localhost:1234/v1")
    events = await events_of(model, ask(tools=[WEATHER, TIME]))
    whole = [event for event in events if isinstance(event, ToolCall)]
    assert whole == [
        ToolCall(id="call_0", name="get_weather", arguments='{"city": "Oslo"}'),
        ToolCall(id="call_0_2", name="get_time", arguments="{}"),
    ]


pytestmark = pytest.mark.timeout(60)


async def test_two_whole_calls_with_one_id_are_each_announced_once() -> None:
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 1}, "c"), ("add", {"x": 2, "y": 2}, "c")), "ok"]
    )
    request = AgentBuilder("a", model).tool(make_add_tool()).build().prompt("add")
    announced = [event.tool_call async for event in request.stream() if event.type == "tool_call"]
    assert [(call.id, call.arguments) for call in announced] == [
        ("c", {"x": 1, "y": 1}),
        ("c_2", {"x": 2, "y": 2}),
    ]
