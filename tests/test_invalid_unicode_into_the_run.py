"""Text that is not valid Unicode (a lone surrogate: a file name read with ``surrogateescape``, or
an emoji's halves cut apart in a model's stream) coming into a run from a tool or from the model
becomes U+FFFD where it enters: the run, its stored copy and what the user gets all hold valid
text, and the run is stored to its end (it went on unstored, or failed, before)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ReasoningDelta, ToolCall

pytestmark = pytest.mark.timeout(60)


class Listing(BaseModel):
    folder: str


def _model(request: Any) -> Any:
    if request.messages[-1].role == "user":
        return ModelResponse(tool_calls=[ToolCall(id="c1", name="ls", arguments={"folder": "."})])
    return ModelResponse(text="Found \ud83d.")


async def _streamed(request: Any) -> Any:
    yield ReasoningDelta(delta="thinking \udc80")
    yield "Done \ud800"
    yield " and more."


def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def test_a_tool_result_and_the_model_s_text_with_a_lone_surrogate_are_stored_as_valid_text(
    store_path: Path,
) -> None:
    ls = create_tool(
        name="ls", description="List a folder.", input=Listing, execute=lambda a, c: "caf\udce9.txt"
    )
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(_model)).tool(ls).build()
    response = await agent.prompt("list").store(store).send()
    assert response.output == "Found \ufffd."
    [result] = [r for m in response.messages for r in m.tool_results]
    assert result.content == "caf\ufffd.txt"
    assert store.runs()[0].status == "success"
    stored = store.get(response.run_id).messages
    assert [m.content for m in stored][-1] == "Found \ufffd."
    assert [r.content for m in stored for r in m.tool_results] == ["caf\ufffd.txt"]
    assert store.trace(response.run_id).tool_calls[0].result == "caf\ufffd.txt"
    store.close()


async def test_streamed_text_and_reasoning_with_a_lone_surrogate_are_stored_as_valid_text(
    store_path: Path,
) -> None:
    store = RunStore(store_path)
    agent = AgentBuilder("writer", FunctionModel(_streamed)).build()
    run = agent.prompt("write").store(store).start()
    response = await run.wait()
    assert response.output == "Done \ufffd and more."
    assert store.runs()[0].status == "success"
    assert all(_valid(getattr(e, "delta", "")) for e in run.events)
    assert store.get(response.run_id).messages[-1].content == "Done \ufffd and more."
    store.close()
