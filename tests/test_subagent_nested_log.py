"""A sub-run's entries in its parents' logs are built when a log is read: a log read while the
sub-agents still run (two levels down) holds every entry so far, built, each sharing the
sub-run's own entry; entries that come after the read are built at the next one; a subscriber
that joins then gets the same whole stream as one there from the start; the stored log holds one
reference per entry."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, create_tool
from anvia_notebook.events import AgentToolEvent
from anvia_notebook.models import (
    FunctionModel,
    ModelResponse,
    StreamingQueueModel,
    TextDelta,
    ToolCall,
)

pytestmark = pytest.mark.timeout(60)


class Empty(BaseModel):
    pass


def _asks(tool: str) -> FunctionModel:
    def respond(request: Any) -> ModelResponse:
        if request.messages[-1].role == "tool":
            return ModelResponse(text=f"{tool} done")
        return ModelResponse(
            tool_calls=[ToolCall(id=f"c_{tool}", name=tool, arguments={"prompt": "go"})]
        )

    return FunctionModel(respond)


def _innermost(event: Any) -> tuple[list[str], Any]:
    agents = []
    while event.type == "agent_tool_event":
        agents.append(event.agent_id)
        event = event.event
    return agents, event


def _texts(events: list[Any], agent: str) -> str:
    out = []
    for event in events:
        agents, inner = _innermost(event)
        if agents and agents[-1] == agent and inner.type == "text_delta":
            out.append(inner.delta)
    return "".join(out)


async def test_a_log_read_while_sub_agents_run_is_built_and_later_entries_follow(
    tmp_path: Any,
) -> None:
    seen: dict[str, Any] = {}
    late: list[Any] = []

    def peek(_args: Empty, _ctx: Any) -> str:
        run = seen["run"]
        seen["mid"] = list(run.events)  # read while two levels of sub-agents run
        run.subscribe(late.append)  # joins now: the log so far, then the rest live
        return "peeked"

    writer_model = StreamingQueueModel(
        [
            [
                TextDelta(delta="first "),
                TextDelta(delta="part"),
                ToolCall(id="p1", name="peek", arguments={}),
            ],
            [TextDelta(delta="second "), TextDelta(delta="part")],
        ]
    )
    peek_tool = create_tool(name="peek", description="Peek.", input=Empty, execute=peek)
    writer = AgentBuilder("writer", writer_model).tool(peek_tool).build()
    middle = (
        AgentBuilder("middle", _asks("ask_writer")).tool(writer.as_tool(name="ask_writer")).build()
    )
    lead = AgentBuilder("lead", _asks("ask_middle")).tool(middle.as_tool(name="ask_middle")).build()

    store = RunStore(str(tmp_path / "runs.sqlite"))
    run = lead.prompt("go").store(store).create_run()
    seen["run"] = run
    from_start: list[Any] = []
    run.subscribe(from_start.append)
    run.start()
    await run.wait()

    mid = seen["mid"]
    final = run.events
    assert all(type(event).__module__ != "anvia_notebook._sub_run_log" for event in final)
    nested = [event for event in final if event.type == "agent_tool_event"]
    assert nested and all(isinstance(event, AgentToolEvent) for event in nested)
    middle_run, writer_run = run.children[0], run.children[0].children[0]
    # One entry in the lead's log per entry of the middle's, which has one per writer's entry.
    assert len(nested) == len(middle_run.events)
    assert sum(1 for e in middle_run.events if e.type == "agent_tool_event") == len(
        writer_run.events
    )
    # Each shares the sub-run's own entry (its text as it grew).
    writer_entries = [_innermost(e)[1] for e in nested if _innermost(e)[0] == ["middle", "writer"]]
    assert [id(e) for e in writer_entries] == [id(e) for e in writer_run.events]
    # The read mid-run: every entry so far, built; the same objects as the log's at the end.
    assert mid and all(isinstance(e, AgentToolEvent) for e in mid if e.type == "agent_tool_event")
    assert _texts(mid, "writer") == "first part"
    assert [id(e) for e in mid] == [id(e) for e in final[: len(mid)]]
    # The subscriber that joined mid-run got the same whole text as the one there from the start.
    assert _texts(from_start, "writer") == _texts(final, "writer")
    assert _texts(late, "writer") == _texts(final, "writer")
    assert [_innermost(e)[1].type for e in late if e.type != "text_delta"][-1] == "final"
    # The stored log: one reference per nested entry, read back as the run had it.
    stored = store.events(run.run_id)
    assert [(_innermost(e)[0], _innermost(e)[1].type) for e in stored] == [
        (_innermost(e)[0], _innermost(e)[1].type) for e in final
    ]
    assert _texts(stored, "writer") == _texts(final, "writer")
    store.close()
