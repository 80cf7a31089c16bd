"""More runs exported as OpenTelemetry spans, in situations ``test_otel.py`` does not cover:
sub-agents, a run resumed from the store, model call retries, Stop while an approval waits,
steering and typed output, and MCP tools (checked with the SDK's in-memory exporter)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    PromptCancelledError,
    RunStore,
    ToolApproval,
    Usage,
    mcp,
)
from anvia_notebook.models import FunctionModel, ModelError, ModelResponse, QueueModel, TextDelta

from helpers import call, calls, make_add_tool

OTEL_TYPES = (str, bool, int, float)


def parent_name(span, finished) -> str | None:
    if span.parent is None:
        return None
    [parent] = [s for s in finished if s.context.span_id == span.parent.span_id]
    return parent.name


def assert_attributes_are_otel_values(finished) -> None:
    for span in finished:
        values = [*span.attributes.values()]
        values += [v for event in span.events for v in event.attributes.values()]
        for value in values:
            if isinstance(value, tuple):
                assert all(isinstance(v, OTEL_TYPES) for v in value), (span.name, value)
            else:
                assert isinstance(value, OTEL_TYPES), (span.name, value)


def never_answers(asked: asyncio.Event):
    """A human input whose approvals wait until the run stops them (``asked`` set first)."""

    async def approve(request):
        asked.set()
        await asyncio.Event().wait()

    return CallbackHumanInput(approve=approve)


# -- sub-agents --------------------------------------------------------------------------------


def test_a_sub_agent_run_nests_under_its_call_with_its_approval_on_its_own_tool(spans) -> None:
    add = make_add_tool(approval=ToolApproval(reason="Check it."))
    # (the same call id in both runs: each run's spans are its own)
    helper = (
        AgentBuilder("helper", QueueModel([call("add", {"x": 1, "y": 2}, id="c1"), "three"]))
        .name("Helper")
        .tool(add)
        .build()
    )
    boss = AgentBuilder("boss", QueueModel([call("helper", {"prompt": "1 + 2?"}, id="c1"), "3"]))
    response = boss.tool(helper.as_tool()).approvals(lambda r: True).build().prompt("go")
    response = response.session("chat-9").send_sync()
    assert response.output == "3"
    finished = spans.get_finished_spans()
    named = {s.name: s for s in finished}
    sub_root = named["invoke_agent Helper"]
    assert parent_name(sub_root, finished) == "execute_tool helper"
    assert parent_name(named["execute_tool helper"], finished) == "invoke_agent boss"
    assert sub_root.context.trace_id == named["invoke_agent boss"].context.trace_id
    assert sub_root.attributes["gen_ai.agent.name"] == "Helper"
    assert sub_root.attributes["gen_ai.agent.id"] == "helper"
    assert sub_root.attributes["gen_ai.conversation.id"] == "chat-9"
    assert sub_root.attributes["anvia.run_id"] != response.run_id
    # The approval the parent's handler decided is on the sub-agent's tool span only.
    sub_tool = named["execute_tool add"]
    assert parent_name(sub_tool, finished) == "invoke_agent Helper"
    assert [e.name for e in sub_tool.events] == ["tool_approval_request", "tool_approval_result"]
    assert sub_tool.events[1].attributes["anvia.approval.status"] == "approved"
    assert not named["execute_tool helper"].events
    sub_chats = [s for s in finished if parent_name(s, finished) == "invoke_agent Helper"]
    assert sorted(s.name for s in sub_chats) == ["chat queue-model"] * 2 + ["execute_tool add"]
    assert_attributes_are_otel_values(finished)


async def test_stop_while_a_sub_agent_s_approval_waits_ends_every_span(spans) -> None:
    asked = asyncio.Event()
    add = make_add_tool(approval=ToolApproval())
    helper = (
        AgentBuilder("helper", QueueModel([call("add", {"x": 1, "y": 2}, id="s1"), "never"]))
        .tool(add)
        .build()
    )
    boss = AgentBuilder("boss", QueueModel([call("helper", {"prompt": "1 + 2?"}, id="p1"), "x"]))
    run = boss.tool(helper.as_tool()).human_input(never_answers(asked)).build().prompt("go")
    run = run.start()
    await asyncio.wait_for(asked.wait(), 5)
    run.cancel("Stop pressed")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    named = {s.name: s for s in spans.get_finished_spans()}
    assert set(named) == {
        "invoke_agent boss",
        "chat queue-model",
        "execute_tool helper",
        "invoke_agent helper",
        "execute_tool add",
    }
    result = named["execute_tool add"].events[-1]
    assert result.name == "tool_approval_result"
    assert result.attributes["anvia.approval.status"] == "cancelled"
    assert result.attributes["anvia.approval.decided_by"] == "stop"
    for name in ("invoke_agent boss", "invoke_agent helper"):
        assert named[name].attributes["anvia.run.status"] == "cancelled"
        assert named[name].status.status_code == StatusCode.UNSET
    for name in ("execute_tool helper", "execute_tool add"):
        assert named[name].attributes["anvia.tool.status"] == "cancelled"


# -- Stop while an approval waits --------------------------------------------------------------


async def test_stop_while_an_approval_waits_says_so_on_the_tool_span(spans) -> None:
    asked = asyncio.Event()
    add = make_add_tool(approval=ToolApproval())
    agent = AgentBuilder("a", QueueModel([call("add", {"x": 1, "y": 2}, id="c1"), "never"]))
    run = agent.tool(add).human_input(never_answers(asked)).build().prompt("go").start()
    await asyncio.wait_for(asked.wait(), 5)
    run.cancel("Stop pressed")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    named = {s.name: s for s in spans.get_finished_spans()}
    assert set(named) == {"invoke_agent a", "chat queue-model", "execute_tool add"}
    tool = named["execute_tool add"]
    assert [e.name for e in tool.events] == ["tool_approval_request", "tool_approval_result"]
    assert tool.events[1].attributes["anvia.approval.status"] == "cancelled"
    assert tool.attributes["anvia.tool.status"] == "cancelled"
    assert named["invoke_agent a"].attributes["anvia.run.status"] == "cancelled"
    assert add.calls == []


# -- a run resumed from the store --------------------------------------------------------------


async def test_a_resumed_run_is_a_new_invoke_agent_span_with_the_call_decided_after(
    spans, tmp_path
) -> None:
    """The first lifetime waits on an approval; the store as it was then (its owner gone, as
    after a kernel restart) is resumed, and the call is approved there."""
    path, copy = tmp_path / "runs.sqlite", tmp_path / "after-restart.sqlite"
    asked = asyncio.Event()
    first_model = QueueModel(
        [
            ModelResponse(
                tool_calls=call("add", {"x": 1, "y": 2}, id="c1").tool_calls,
                usage=Usage(input_tokens=30, output_tokens=5),
            )
        ]
    )
    agent = AgentBuilder("a", first_model).tool(make_add_tool(approval=ToolApproval()))
    run = agent.human_input(never_answers(asked)).build().prompt("go").session("chat-1")
    first_store = RunStore(path)
    run = run.store(first_store).start()
    await asyncio.wait_for(asked.wait(), 5)
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    run.cancel("Stop pressed")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    first_store.close()
    first = spans.get_finished_spans()
    assert len(first) == 3  # (every span of the first lifetime ended)
    spans.clear()

    restarted = RunStore(copy)
    restarted._q(
        "UPDATE runs SET owner_host = 'gone', owner_pid = 1, heartbeat_at = 0 WHERE run_id = ?",
        (run.run_id,),
    )
    add = make_add_tool(approval=ToolApproval())
    second_model = QueueModel(
        [ModelResponse(text="3", usage=Usage(input_tokens=50, output_tokens=4))]
    )
    resumed = AgentBuilder("a", second_model).tool(add).approvals(lambda r: True).build()
    response = await resumed.resume(run.run_id, restarted).send()
    assert response.output == "3" and add.calls == [(1, 2)]
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == ["execute_tool add", "chat queue-model", "invoke_agent a"]
    tool, chat, root = finished
    assert root.parent is None
    assert root.context.trace_id != first[-1].context.trace_id
    assert root.attributes["anvia.run_id"] == run.run_id
    assert root.attributes["gen_ai.conversation.id"] == "chat-1"
    assert root.attributes["anvia.resumed"] is True
    assert root.attributes["anvia.run.status"] == "success"
    for child in (tool, chat):
        assert child.parent.span_id == root.context.span_id
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.attributes["anvia.tool.status"] == "success"
    assert tool.events[-1].attributes["anvia.approval.status"] == "approved"
    assert chat.attributes["anvia.turn"] == 2
    assert chat.attributes["gen_ai.usage.input_tokens"] == 50
    # The resumed root reports the whole run's tokens, the earlier process's model calls
    # included: a run is most often resumed after its process died, whose own root span never
    # ended (nor was exported), so this is the one root with the run's total, which its chat
    # spans, in both lifetimes, add up to. The earlier part is said apart: where the earlier
    # root was exported too (here, stopped; or a run another process took over), a sum of
    # roots subtracts it.
    tokens = (
        root.attributes["gen_ai.usage.input_tokens"],
        root.attributes["gen_ai.usage.output_tokens"],
    )
    assert tokens == (30 + 50, 5 + 4)
    assert root.attributes["anvia.resumed.input_tokens"] == 30
    assert root.attributes["anvia.resumed.output_tokens"] == 5
    restarted.close()


# -- model call retries ------------------------------------------------------------------------


def test_each_attempt_of_a_retried_model_call_is_a_chat_span(spans) -> None:
    attempts = 0

    async def flaky(request):
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ModelError("overloaded", status_code=529)
        yield TextDelta(delta="ok")

    request = AgentBuilder("r", FunctionModel(flaky)).build().prompt("go")
    request.with_completion_retries(max_attempts=3, initial_delay=0, max_delay=0).send_sync()
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == ["chat function-model"] * 3 + ["invoke_agent r"]
    *failed, last, root = finished
    for number, span in enumerate(failed, 1):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "ModelError"
        assert [e.name for e in span.events] == ["exception"]
        assert span.attributes.get("anvia.attempt", 1) == number
    assert last.status.status_code == StatusCode.UNSET and not last.events
    assert last.attributes["anvia.attempt"] == 3
    assert root.status.status_code == StatusCode.UNSET
    assert root.attributes["anvia.run.status"] == "success"


# -- steering and typed output -----------------------------------------------------------------


class Answer(BaseModel):
    n: int


def test_steering_and_a_typed_output_make_ordinary_spans(content_spans) -> None:
    model = QueueModel(
        [
            "thinking",
            call("final_result", {"n": "three"}, id="f0"),
            call("final_result", {"n": 3}, id="f1"),
        ]
    )
    request = AgentBuilder("t", model).output_type(Answer).build().prompt("go")
    request.steer("Answer as a number.")
    assert request.send_sync().data == Answer(n=3)
    finished = content_spans.get_finished_spans()
    assert_attributes_are_otel_values(finished)
    assert [s.name for s in finished] == [
        "chat queue-model",
        "chat queue-model",
        "execute_tool final_result",
        "chat queue-model",
        "execute_tool final_result",
        "invoke_agent t",
    ]
    steered = finished[1].attributes["gen_ai.input.messages"]
    assert "Answer as a number." in steered
    invalid, valid = finished[2], finished[4]
    assert invalid.attributes["anvia.tool.status"] == "error"
    assert invalid.attributes["error.type"] == "OutputValidationError"
    assert valid.attributes["anvia.tool.status"] == "success"
    assert finished[-1].attributes["anvia.run.status"] == "success"


# -- MCP tools ---------------------------------------------------------------------------------


@pytest.fixture
def close_mcp():
    yield
    asyncio.run(mcp.close_all())


def test_an_mcp_tool_span_names_its_server_and_an_is_error_answer_is_a_tool_error(
    spans, close_mcp
) -> None:
    """The MCP semantic conventions name an answer marked ``isError`` ``tool_error``; it was
    named after the package's own exception class (``McpToolError``)."""
    mcp_helpers = pytest.importorskip("mcp_helpers")
    model = QueueModel([calls(("read_note", {"key": "k"}, "r1"), ("fails", {}, "f1")), "done"])
    agent = AgentBuilder("m", model).mcp([mcp_helpers.toolbox("toolbox-otel")]).build()
    assert agent.prompt("go").send_sync().output == "done"
    named = {s.name: s for s in spans.get_finished_spans()}
    read, failed = named["execute_tool read_note"], named["execute_tool fails"]
    for span in (read, failed):
        assert span.attributes["anvia.mcp.server"] == "toolbox-otel"
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert read.attributes["anvia.tool.status"] == "success"
    assert read.status.status_code == StatusCode.UNSET
    assert failed.attributes["anvia.tool.status"] == "error"
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes["error.type"] == "tool_error"


def test_an_mcp_server_s_json_rpc_error_is_its_code(spans, close_mcp) -> None:
    """The MCP semantic conventions name a JSON-RPC error answer by its code."""
    from mcp_helpers import SERVERS

    server = mcp.stdio(
        "hostile-otel", sys.executable, [str(SERVERS / "hostile.py"), "server_error"]
    )
    model = QueueModel([call("read_file", {"fail": True}, "c1"), "ok"])
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda r: True).build()
    agent.prompt("go").send_sync()
    tool = {s.name: s for s in spans.get_finished_spans()}["execute_tool read_file"]
    assert tool.attributes["anvia.tool.status"] == "error"
    assert tool.attributes["error.type"] == "-32000"
    assert tool.status.status_code == StatusCode.ERROR
