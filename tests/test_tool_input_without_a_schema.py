"""A tool whose input model has no JSON Schema (a field of an arbitrary class): its schema is
made at the run's start, which raised pydantic's error outside the run's error handling: the
run stayed "running" in the store, with no ``error`` event and no ``on_run_error``, and the
error did not say which tool it was."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, PydanticUserError

from anvia_notebook import AgentBuilder, RunStore, create_hook, create_tool
from anvia_notebook.models import QueueModel


class Connection:
    """Not something JSON Schema can describe."""


class QueryInput(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    sql: str
    connection: Connection | None = None


async def test_a_tool_without_a_schema_fails_the_run_naming_the_tool(store_path) -> None:
    query = create_tool(
        name="run_query", description="Run SQL.", input=QueryInput, execute=lambda a, c: "rows"
    )
    failed: list[BaseException] = []
    agent = (
        AgentBuilder("a", QueueModel(["hi"]))
        .tool(query)
        .hook(create_hook(on_run_error=lambda event: failed.append(event.error)))
        .build()
    )
    run = agent.prompt("go").start()
    events: list = []
    run.subscribe(events.append)
    with pytest.raises(PydanticUserError) as raised:
        await run.wait()
    said = str(raised.value) + "".join(getattr(raised.value, "__notes__", []))
    assert "run_query" in said and "QueryInput" in said
    assert run.status == "error" and failed == [raised.value]
    assert events[-1].type == "error" and "run_query" in events[-1].error
    assert RunStore(store_path).get(run.run_id).status == "error"
