"""Sub-agents (``agent.as_tool``): Anvia's ``agent-tool.test.ts`` and the agent-tool part of its
``streaming.test.ts`` translated, then this project's contract (API.md section 14): the sub-run
as a run of its own, its failure as the tool's error result, the depth limit, Stop."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, MaxTurnsError, PromptCancelledError, create_tool
from anvia_notebook.errors import ModelError, SubAgentError
from anvia_notebook.models import (
    FunctionModel,
    ModelResponse,
    QueueModel,
    StreamingQueueModel,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from anvia_notebook.models.base import Finish
from anvia_notebook.subagents import path_label
from anvia_notebook.tools import ToolContext

from helpers import AddInput, call, make_add_tool, tool_results

# -- Anvia's agent-tool.test.ts ("Agent.asTool") ------------------------------------------------


def test_creates_a_tool_definition_from_an_agent() -> None:
    agent = (
        AgentBuilder("test-agent", QueueModel([])).description("Answer support questions.").build()
    )
    tool = agent.as_tool(name="ask_support")
    definition = tool.definition()
    assert definition.name == "ask_support"
    assert definition.description == "Answer support questions."
    schema = definition.parameters
    assert schema["required"] == ["prompt"]
    assert schema["properties"]["prompt"]["type"] == "string"
    assert schema["properties"]["prompt"]["description"] == "The prompt to send to the agent."
    assert schema["additionalProperties"] is False


def test_default_name_and_description() -> None:
    agent = AgentBuilder("analyst", QueueModel([])).build()
    tool = agent.as_tool()
    assert tool.name == "analyst"
    assert tool.description == "Prompt the analyst agent."
    assert agent.as_tool(name="ask").description == "Prompt the ask agent."
    assert agent.as_tool(description="Ask the data analyst.").description == (
        "Ask the data analyst."
    )


def test_bad_options_are_refused() -> None:
    agent = AgentBuilder("analyst", QueueModel([])).build()
    with pytest.raises(ValueError, match="max_depth"):
        agent.as_tool(max_depth=0)
    with pytest.raises(ValueError, match="max_turns"):
        agent.as_tool(max_turns=-1)


def _ctx() -> ToolContext:
    from anvia_notebook.run_info import RunInfo

    return ToolContext(
        tool_name="ask_agent",
        tool_call_id="c",
        internal_call_id="i",
        raw_args="{}",
        run=RunInfo(agent_id="x", run_id="r"),
    )


async def test_delegates_tool_calls_to_the_wrapped_agent() -> None:
    model = QueueModel(["delegated"])
    agent = AgentBuilder("test-agent", model).build()
    tool = agent.as_tool(name="ask_agent", description="Ask an agent.")
    result = await tool.call(tool.parse_args({"prompt": "do work"}), _ctx())
    assert result == "delegated"
    last = model.requests[0].messages[-1]
    assert last.role == "user" and last.content == "do work"


async def test_applies_max_turns_when_provided() -> None:
    model = QueueModel(
        [call("add", {"x": 1, "y": 1}, "call_1"), call("add", {"x": 2, "y": 2}, "call_2"), "done"]
    )
    agent = AgentBuilder("test-agent", model).tools([make_add_tool()]).default_max_turns(3)
    tool = agent.build().as_tool(name="ask_agent", max_turns=0)
    with pytest.raises(MaxTurnsError):
        await tool.call(tool.parse_args({"prompt": "loop"}), _ctx())


async def test_registers_multiple_wrapped_agents_as_distinct_tools() -> None:
    first = AgentBuilder("test-agent", QueueModel(["one"])).build().as_tool(name="ask_one")
    second = AgentBuilder("test-agent", QueueModel(["two"])).build().as_tool(name="ask_two")
    assert await first.call(first.parse_args({"prompt": "run"}), _ctx()) == "one"
    assert await second.call(second.parse_args({"prompt": "run"}), _ctx()) == "two"


def test_isolates_built_agents_from_later_builder_collection_changes() -> None:
    """agent-tool.test.ts: "isolates built agents from later builder collection changes" (its
    middlewares, observers and guardrails are hooks here; dynamic contexts have no counterpart).
    A built agent, and so its ``as_tool``, keeps what it was built with."""
    from anvia_notebook import create_hook

    builder = AgentBuilder("test-agent", QueueModel([])).context("initial context")
    agent = builder.build()
    tool = agent.as_tool(name="ask")
    builder.context("late context").tools([make_add_tool()]).hook(create_hook())
    builder.instructions("Late instructions.").approvals(lambda request: True)
    assert [doc.text for doc in agent.context_documents] == ["initial context"]
    assert agent.tools == {} and agent.hooks == ()
    assert agent.instruction_blocks == () and agent.approval_handler is None
    assert tool.name == "ask" and tool.description == "Prompt the ask agent."


# -- a sub-agent with an output type -------------------------------------------------------------


class _Finding(BaseModel):
    region: str
    change: int


def _typed_analyst(text: str = "Here is what I found.") -> AgentBuilder:
    model = QueueModel(
        [
            ModelResponse(
                text=text,
                tool_calls=[
                    ToolCall(
                        id="out", name="final_result", arguments={"region": "west", "change": 12}
                    )
                ],
            )
        ]
    )
    return AgentBuilder("analyst", model).output_type(_Finding)


async def test_a_typed_sub_agent_gives_the_parent_its_validated_value_as_json() -> None:
    """The parent's model reads the sub-agent's typed result, not the words it said with it."""
    parent_model = QueueModel([call("ask_analyst", {"prompt": "how is the west?"}), "noted"])
    analyst = _typed_analyst().build()
    parent = AgentBuilder("lead", parent_model).tool(analyst.as_tool(name="ask_analyst")).build()
    response = await parent.prompt("report").store(None).send()
    assert response.output == "noted"
    [result] = tool_results(parent_model.requests[1])
    assert not result.is_error
    assert json.loads(result.content) == {"region": "west", "change": 12}


async def test_a_typed_sub_agent_called_directly_answers_its_value_as_json() -> None:
    tool = _typed_analyst(text="").build().as_tool(name="ask_analyst")
    result = await tool.call(tool.parse_args({"prompt": "how is the west?"}), _ctx())
    assert json.loads(result) == {"region": "west", "change": 12}


async def test_a_typed_sub_agent_s_list_value_reaches_the_parent_whole() -> None:
    model = QueueModel(
        [
            ModelResponse(
                text="Two regions.",
                tool_calls=[
                    ToolCall(
                        id="out",
                        name="final_result",
                        arguments={"result": [{"region": "west", "change": 12}]},
                    )
                ],
            )
        ]
    )
    analyst = AgentBuilder("analyst", model).output_type(list[_Finding]).build()
    tool = analyst.as_tool(name="ask_analyst")
    result = await tool.call(tool.parse_args({"prompt": "regions"}), _ctx())
    assert json.loads(result) == [{"region": "west", "change": 12}]


# -- Anvia's streaming.test.ts, agent-tool part -------------------------------------------------


async def _collect(request):  # type: ignore[no-untyped-def]
    return [event async for event in request.stream()]


async def test_streams_child_agent_events_from_streaming_agent_tools() -> None:
    parent_model = StreamingQueueModel(
        [
            [ToolCall(id="call_child", name="ask_child", arguments={"prompt": "inspect"})],
            [TextDelta(delta="parent done")],
        ]
    )
    child_model = StreamingQueueModel([[TextDelta(delta="child "), TextDelta(delta="done")]])
    child = AgentBuilder("child", child_model).name("Child Agent").build()
    parent = (
        AgentBuilder("parent", parent_model)
        .tool(child.as_tool(name="ask_child", stream=True))
        .build()
    )

    events = await _collect(parent.prompt("delegate").store(None))
    child_events = [e for e in events if e.type == "agent_tool_event"]
    assert [e.event.type for e in child_events] == [
        "turn_start",
        "generation_start",
        "text_delta",
        "text_delta",
        "turn_end",
        "final",
    ]
    first_text = next(e for e in child_events if e.event.type == "text_delta")
    assert first_text.turn == 1
    assert first_text.tool_name == "ask_child"
    assert first_text.tool_call_id == "call_child"
    assert first_text.internal_call_id
    assert first_text.agent_id == "child"
    assert first_text.agent_name == "Child Agent"
    assert first_text.event.delta == "child "
    assert first_text.run_id == child_events[-1].event.run_id  # the sub-run's own id
    result = next(e for e in events if e.type == "tool_result")
    assert (result.tool_name, result.result) == ("ask_child", "child done")
    assert events[-1].type == "final" and events[-1].output == "parent done"
    assert first_text.internal_call_id == result.internal_call_id


async def test_propagates_child_tool_call_deltas_and_results() -> None:
    parent_model = StreamingQueueModel(
        [
            [ToolCall(id="call_child", name="ask_child", arguments={"prompt": "add"})],
            [TextDelta(delta="parent done")],
        ]
    )
    child_model = StreamingQueueModel(
        [
            [ToolCallDelta(id="call_add", name="add", arguments_delta='{"x":2,"y":5}')],
            [TextDelta(delta="7")],
        ]
    )
    child = AgentBuilder("child", child_model).tool(make_add_tool()).default_max_turns(2).build()
    parent = (
        AgentBuilder("parent", parent_model)
        .tool(child.as_tool(name="ask_child", stream=True))
        .build()
    )

    events = await _collect(parent.prompt("delegate").store(None))
    inner = [e.event for e in events if e.type == "agent_tool_event"]
    delta = next(e for e in inner if e.type == "tool_call_delta")
    assert (delta.turn, delta.id, delta.name, delta.arguments_delta) == (
        1,
        "call_add",
        "add",
        '{"x":2,"y":5}',
    )
    tool_call = next(e for e in inner if e.type == "tool_call")
    assert tool_call.tool_call.name == "add"
    assert json.loads(tool_call.tool_call.arguments_json()) == {"x": 2, "y": 5}
    child_result = next(e for e in inner if e.type == "tool_result")
    assert (child_result.tool_name, child_result.result) == ("add", "7")
    result = next(e for e in events if e.type == "tool_result")
    assert (result.tool_name, result.result) == ("ask_child", "7")


async def test_stream_false_sends_no_child_events_but_the_output() -> None:
    child = AgentBuilder("child", QueueModel(["quiet answer"])).build()
    parent = (
        AgentBuilder("parent", QueueModel([call("ask_child", {"prompt": "x"}), "parent done"]))
        .tool(child.as_tool(name="ask_child", stream=False))
        .build()
    )
    events = await _collect(parent.prompt("delegate").store(None))
    assert not [e for e in events if e.type == "agent_tool_event"]
    result = next(e for e in events if e.type == "tool_result")
    assert result.result == "quiet answer" and not result.is_error


# -- this project's contract --------------------------------------------------------------------


async def test_the_sub_run_is_a_run_of_its_own_with_its_parent(store_path) -> None:  # type: ignore[no-untyped-def]
    from anvia_notebook.store import get_store

    child = AgentBuilder("analyst", QueueModel(["the west grew fastest"])).build()
    lead_model = QueueModel([call("ask_analyst", {"prompt": "which region?"}), "West."])
    lead = (
        AgentBuilder("lead", lead_model)
        .tool(child.as_tool(name="ask_analyst", description="Ask the data analyst.", max_turns=5))
        .build()
    )
    events = await _collect(lead.prompt("Which region grew fastest?"))
    final = events[-1]
    assert final.type == "final" and final.output == "West."
    inner = [e for e in events if e.type == "agent_tool_event"]
    sub_run_id = inner[0].run_id
    assert sub_run_id != final.run_id
    store = get_store()
    assert store is not None
    state = store.get(sub_run_id)
    result = next(e for e in events if e.type == "tool_result")
    assert state.parent_run_id == final.run_id
    assert state.parent_call_id == result.internal_call_id
    assert state.parent_tool_call_id == "call_1"
    assert state.path == ["lead", "analyst"]
    assert state.status == "success" and state.output == "the west grew fastest"
    # runs() lists it under its parent
    listed = [(r.run_id, r.parent_run_id) for r in store.runs()]
    assert listed[:2] == [(final.run_id, None), (sub_run_id, final.run_id)]
    assert [s.run_id for s in store.sub_runs(final.run_id)] == [sub_run_id]


async def test_tools_of_the_sub_agent_see_its_run_with_the_path() -> None:
    seen = []

    def execute(args: AddInput, ctx: ToolContext) -> int:
        seen.append(ctx.run)
        return args.x + args.y

    add = create_tool(name="add", description="", input=AddInput, execute=execute)
    child = AgentBuilder("analyst", QueueModel([call("add", {"x": 1, "y": 2}), "3"])).tool(add)
    lead = AgentBuilder("lead", QueueModel([call("ask", {"prompt": "sum"}), "three"])).tool(
        child.build().as_tool(name="ask")
    )
    response = await lead.build().prompt("go").store(None).send()
    assert response.output == "three"
    assert seen[0].path == ("lead", "analyst")
    assert seen[0].parent_run_id == response.run_id
    assert seen[0].agent_id == "analyst"


async def test_a_sub_agent_whose_model_fails_mid_stream_is_the_tools_error_result() -> None:
    async def failing(request):  # type: ignore[no-untyped-def]
        yield TextDelta(delta="starting to ")
        raise ModelError("the provider hung up", status_code=400)

    child = AgentBuilder("analyst", FunctionModel(failing)).build()
    lead_model = QueueModel([call("ask", {"prompt": "go"}), "I could not ask the analyst."])
    lead = AgentBuilder("lead", lead_model).tool(child.as_tool(name="ask")).build()
    events = await _collect(lead.prompt("go").store(None))
    result = next(e for e in events if e.type == "tool_result")
    assert result.is_error
    assert result.result == "ToolCallError: the provider hung up"
    inner = [e.event.type for e in events if e.type == "agent_tool_event"]
    assert inner[-1] == "error" and "text_delta" in inner
    assert events[-1].type == "final" and events[-1].output == "I could not ask the analyst."
    # the parent's model read the error and went on
    tool_message = lead_model.requests[1].messages[-1]
    assert "the provider hung up" in tool_message.tool_results[0].content


async def test_a_sub_agent_called_without_a_prompt_gets_a_validation_result() -> None:
    child_model = QueueModel([])
    child = AgentBuilder("analyst", child_model).build()
    lead_model = QueueModel([call("ask", {"question": "?"}), "sorry"])
    lead = AgentBuilder("lead", lead_model).tool(child.as_tool(name="ask")).build()
    response = await lead.prompt("go").store(None).send()
    assert response.output == "sorry"
    content = response.messages[-2].tool_results[0].content
    assert content.startswith("Invalid arguments for tool ask:")
    assert "prompt" in content
    assert child_model.requests == []  # the sub-agent never ran


async def test_an_agent_that_lists_itself_as_a_tool_stops_at_max_depth() -> None:
    def respond(request):  # type: ignore[no-untyped-def]
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(text=f"gave up: {last.tool_results[0].content}")
        return ModelResponse(
            tool_calls=[ToolCall(id="c", name="self", arguments={"prompt": "again"})]
        )

    agent = AgentBuilder("loop", FunctionModel(respond)).build()
    agent.tools["self"] = agent.as_tool(name="self", max_depth=3)
    response = await asyncio.wait_for(agent.prompt("go").store(None).send(), 10)
    # the top-level run and three sub-agent levels ran; the fourth level's call was refused
    # and each level's answer came back up
    text = response.output
    for _ in range(4):
        assert text.startswith("gave up: ")
        text = text[len("gave up: ") :]
    assert text.startswith("ToolCallError: self was not run:")
    assert path_label(["loop"] * 5) in text
    assert "more than this tool allows (3)" in text


async def test_depth_error_type() -> None:
    assert issubclass(SubAgentError, Exception)


async def test_stop_while_the_sub_agent_streams_reaches_the_sub_run() -> None:
    streaming = asyncio.Event()
    closed = asyncio.Event()

    async def slow(request):  # type: ignore[no-untyped-def]
        try:
            yield TextDelta(delta="thinking")
            streaming.set()
            await asyncio.Event().wait()
            yield Finish(reason="stop")
        finally:
            closed.set()

    child = AgentBuilder("analyst", FunctionModel(slow)).build()
    lead = (
        AgentBuilder("lead", QueueModel([call("ask", {"prompt": "go"}), "unused"]))
        .tool(child.as_tool(name="ask"))
        .build()
    )
    run = lead.prompt("go").store(None).start()
    await asyncio.wait_for(streaming.wait(), 5)
    sub = run.children[0]
    assert run.cancel("Stopped in the test.")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    await asyncio.wait_for(closed.wait(), 5)
    assert sub.done and sub.state.status == "cancelled"
    assert sub.state.cancel_reason == "Stopped in the test."
    assert run.state.status == "cancelled"
    inner = [e.event.type for e in run.events if e.type == "agent_tool_event"]
    assert inner[-1] == "cancelled"


async def test_a_sub_agent_cancelled_by_its_own_hook_is_an_error_result_for_the_parent() -> None:
    from anvia_notebook import create_hook

    def on_tool_call(event):  # type: ignore[no-untyped-def]
        return event.tool.cancel("the analyst refused")

    child = (
        AgentBuilder("analyst", QueueModel([call("add", {"x": 1, "y": 1})]))
        .tool(make_add_tool())
        .hook(create_hook(on_tool_call=on_tool_call))
        .build()
    )
    lead = (
        AgentBuilder("lead", QueueModel([call("ask", {"prompt": "go"}), "ok"]))
        .tool(child.as_tool(name="ask"))
        .build()
    )
    response = await lead.prompt("go").store(None).send()
    assert response.output == "ok"
    part = response.messages[-2].tool_results[0]
    assert part.is_error and "the analyst refused" in part.content


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"name": 123}, TypeError, "A tool's name must be a text, not int."),
        ({"stream": "no"}, TypeError, "stream must be True or False, not 'no'."),
        ({"max_turns": True}, ValueError, "max_turns must be zero or more"),
        ({"max_turns": -1}, ValueError, "max_turns must be zero or more"),
        ({"max_depth": True}, ValueError, "max_depth must be a positive integer"),
    ],
)
def test_as_tool_refuses_options_it_cannot_use_naming_them(options, error, words):
    agent = AgentBuilder("helper", QueueModel([])).build()
    with pytest.raises(error) as raised:
        agent.as_tool(**options)
    assert words in str(raised.value)
    assert agent.as_tool(name=" ask_helper ", stream=False, max_turns=0).name == "ask_helper"


async def test_stream_false_still_sends_what_waits_for_a_person_at_any_depth() -> None:
    """A question two sub-agents down, through sub-agents called with ``stream=False``: it is
    decided on the top-level run, so the top-level stream (and so its cell) hears of it, of its
    answer and of its call's result, and of nothing else the sub-runs did."""
    from anvia_notebook import CallbackHumanInput, ask_question

    question = {"questions": [{"id": "p", "question": "Priority?", "choices": ["High"]}]}
    deep = AgentBuilder("deep", QueueModel([call("ask_question", question), "deep done"]))
    mid = AgentBuilder("mid", QueueModel([call("ask_deep", {"prompt": "x"}), "mid done"])).tool(
        deep.tool(ask_question).build().as_tool(name="ask_deep", stream=False)
    )
    top = (
        AgentBuilder("top", QueueModel([call("ask_mid", {"prompt": "y"}), "top done"]))
        .tool(mid.build().as_tool(name="ask_mid", stream=False))
        .human_input(
            CallbackHumanInput(ask=lambda request: [{"questionId": "p", "answer": "High"}])
        )
        .build()
    )
    events = await _collect(top.prompt("go").store(None))
    inner = []
    for event in events:
        if event.type == "agent_tool_event":
            assert event.agent_id == "mid"
            assert event.event.type == "agent_tool_event" and event.event.agent_id == "deep"
            inner.append(event.event.event)
    assert [e.type for e in inner] == [
        "tool_question_request",
        "tool_question_result",
        "tool_result",
    ]
    assert inner[1].question.path == ["top", "mid", "deep"]
    assert json.loads(inner[2].result)["answers"][0]["answer"] == "High"
    assert events[-1].type == "final" and events[-1].output == "top done"
