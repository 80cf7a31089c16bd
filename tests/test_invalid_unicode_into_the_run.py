"""Text that is not valid Unicode (a lone surrogate: a file name read with ``surrogateescape``, or
an emoji's halves cut apart in a model's stream) coming into a run from a tool or from the model
becomes U+FFFD where it enters: the run, its stored copy and what the user gets all hold valid
text, and the run is stored to its end (it went on unstored, or failed, before)."""

from __future__ import annotations

import asyncio
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


async def test_a_decision_holding_a_lone_surrogate_is_refused_and_the_approval_still_waits(
    store_path: Path,
) -> None:
    from anvia_notebook import DecisionRefusedError, StoreHumanInput, ToolApproval

    def model(request: Any) -> Any:
        if request.messages[-1].role == "user":
            return ModelResponse(
                tool_calls=[ToolCall(id="c1", name="ls", arguments={"folder": "."})]
            )
        return ModelResponse(text=request.messages[-1].tool_results[0].content)

    ls = create_tool(
        name="ls",
        description="List a folder.",
        input=Listing,
        execute=lambda a, c: f"listed {a.folder}",
        approval=ToolApproval(),
    )
    store = RunStore(store_path)
    agent = AgentBuilder("lister", FunctionModel(model)).tool(ls)
    run = agent.human_input(StoreHumanInput()).build().prompt("list").store(store).start()
    for _ in range(500):
        if run.interactions.pending:
            break
        await asyncio.sleep(0.01)
    [approval] = run.interactions.pending
    for bad in ({"reason": "fine \ud800"}, {"args": {"folder": "caf\udce9"}}):
        with pytest.raises(DecisionRefusedError, match="not valid text"):
            run.interactions.decide(approval.id, approved=True, **bad)
    assert [p.id for p in store.pending(run.run_id)] == [approval.id]
    run.interactions.decide(approval.id, approved=True, args={"folder": "docs"})
    assert (await asyncio.wait_for(run.wait(), 10)).output == "listed docs"
    assert store.runs()[0].status == "success"
    store.close()
