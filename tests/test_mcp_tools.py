"""MCP servers' tools in an agent: connecting, one session per server, closing, approvals
from the server's annotations, hooks and traces (against tests/mcp_servers/toolbox.py)."""

from __future__ import annotations

import asyncio
import json
import os
from functools import partial

import pytest
from mcp_helpers import alive, toolbox

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    ToolApproval,
    create_hook,
    mcp,
)
from anvia_notebook.errors import McpToolNameClashError
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool, ran_with, tool_results


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


#: One toolbox for the tests that need no process of their own (one session per server).
TOOLBOX = toolbox()


def _run(agent, prompt="go"):
    return agent.prompt(prompt).send_sync()


async def _server_pid(server) -> int:
    connected = await mcp.connect(server)
    tool = next(t for t in connected.tools if t.name == "pid")
    return int(await tool.call(tool.parse_args({}), None))


def test_connect_lists_the_tools_with_their_schema_and_hints():
    async def main():
        connected = await mcp.connect(toolbox())
        by_name = {t.name: t for t in connected.tools}
        assert connected.name == "toolbox"
        assert {"read_note", "write_note", "set_flag", "pid", "book_table"} <= set(by_name)
        definition = by_name["write_note"].definition()
        assert definition.parameters["required"] == ["key", "text"]
        assert definition.description == "Write (or overwrite) a note."
        assert by_name["read_note"].approval is None  # readOnlyHint: true
        assert by_name["write_note"].approval is not None
        assert by_name["pid"].approval is not None  # no hints: approval
        assert by_name["set_flag"].idempotent and not by_name["write_note"].idempotent
        await connected.close()

    asyncio.run(main())


def test_one_session_per_server_per_process_and_close_stops_the_process():
    server = toolbox()

    async def main():
        first = await _server_pid(server)
        again = await _server_pid(mcp.stdio(server.name, server.command, list(server.args)))
        assert first == again  # the same server, described again: the same session
        other = await _server_pid(toolbox("toolbox-2"))
        assert other != first
        connected = await mcp.connect(server)
        await connected.close()
        assert not alive(first)
        assert alive(other)
        await mcp.close_all()
        assert not alive(other)
        reopened = await _server_pid(server)  # a call after close opens a new session
        assert reopened != first

    asyncio.run(main())


def test_an_agent_runs_again_after_every_session_was_closed():
    """``mcp.close_all()`` between two runs: the agent's tools from the closed session were
    taken for its own tools, and every later run failed, each with "the agent already has a
    tool of that name" (and a new server process left running)."""
    read = call("read_note", {"key": "greeting"})
    model = QueueModel([read, "one", read, "two"])
    agent = AgentBuilder("a", model).mcp([toolbox("toolbox-reopened")]).build()
    assert _run(agent).output == "one"
    asyncio.run(mcp.close_all())
    assert _run(agent).output == "two"
    assert tool_results(model.requests[-1])[0].content == "hello"


def test_one_server_given_twice_is_said_to_be_given_twice():
    """Two servers of one name in ``.mcp([...])``: the error said the server offered each of its
    tool names twice, as if the server were at fault."""
    model = QueueModel(["never"])
    agent = AgentBuilder("a", model).mcp([toolbox("toolbox-twice"), toolbox("toolbox-twice")])
    with pytest.raises(McpToolNameClashError) as clash:
        _run(agent.build())
    assert str(clash.value).startswith(
        "The MCP server 'toolbox-twice' is given to this agent twice"
    )
    assert model.requests == []


def test_agent_connects_on_first_run_and_read_only_tools_need_no_approval():
    model = QueueModel([call("read_note", {"key": "greeting"}), "done"])
    agent = AgentBuilder("a", model).mcp([TOOLBOX]).build()
    assert "read_note" not in agent.tools  # nothing is connected before the first run
    response = _run(agent)
    assert response.output == "done"
    assert tool_results(model.requests[1])[0].content == "hello"
    assert {t.name for t in model.requests[0].tools} >= {"read_note", "write_note"}


def test_annotations_policy_asks_for_destructive_tools_and_reason_names_server_tool_hints():
    seen = []
    model = QueueModel([call("write_note", {"key": "k", "text": "v"}), "done"])
    agent = (
        AgentBuilder("a", model)
        .mcp([TOOLBOX])
        .approvals(lambda request: seen.append(request) or False)
        .build()
    )
    _run(agent)
    assert len(seen) == 1
    reason = seen[0].reason
    assert "write_note" in reason and "'toolbox'" in reason
    assert "not read-only" in reason and "destructive" in reason and "not idempotent" in reason
    assert seen[0].args.model_dump() == {"key": "k", "text": "v"}
    assert tool_results(model.requests[1])[0].content == "Tool approval was rejected."


@pytest.mark.parametrize(
    ("approval", "asked"),
    [
        ("always", {"read_note", "write_note"}),
        ("never", set()),
        ("annotations", {"write_note"}),
        ({"write_*": "never", "*": "always"}, {"read_note"}),
        ({"read_*": "always"}, {"read_note", "write_note"}),  # no match: annotations
        (ToolApproval(when=lambda ctx: ctx.args.model_dump().get("text") == "v"), {"write_note"}),
    ],
)
def test_approval_settings(approval, asked):
    seen = []
    model = QueueModel(
        [
            call("read_note", {"key": "k"}, id="c1"),
            call("write_note", {"key": "k", "text": "v"}, id="c2"),
            "done",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([toolbox(approval=approval)])
        .approvals(lambda request: seen.append(request.tool_name) or True)
        .build()
    )
    _run(agent)
    assert set(seen) == asked


def test_dict_policy_first_matching_pattern_wins():
    seen = []
    model = QueueModel([call("write_note", {"key": "k", "text": "v"}), "done"])
    agent = (
        AgentBuilder("a", model)
        .mcp([toolbox(approval={"write_*": "always", "*": "never"})])
        .approvals(lambda request: seen.append(request.tool_name) or True)
        .build()
    )
    _run(agent)
    assert seen == ["write_note"]


def test_approved_call_with_edited_arguments_reaches_the_server():
    model = QueueModel(
        [
            call("write_note", {"key": "k", "text": "v"}),
            call("read_note", {"key": "k2"}, id="c2"),
            "done",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([TOOLBOX])
        .approvals(lambda r: ApprovalDecision(approved=True, args={"key": "k2", "text": "edited"}))
        .build()
    )
    _run(agent)
    edited = {"key": "k2", "text": "edited"}
    assert tool_results(model.requests[1])[0].content == ran_with("write_note", edited, "wrote k2")
    assert tool_results(model.requests[2])[0].content == "edited"


def test_hooks_see_mcp_calls_and_can_skip_them():
    seen = []

    def on_tool_call(event):
        seen.append((event.tool_name, json.loads(event.args)))
        return event.tool.skip("not today") if event.tool_name == "write_note" else None

    model = QueueModel(
        [
            call("read_note", {"key": "greeting"}),
            call("write_note", {"key": "k", "text": "v"}, id="c2"),
            "done",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([TOOLBOX])
        .hook(create_hook(on_tool_call=on_tool_call))
        .approvals(lambda r: pytest.fail("a skipped call is not approved"))
        .build()
    )
    _run(agent)
    assert seen == [("read_note", {"key": "greeting"}), ("write_note", {"key": "k", "text": "v"})]
    assert tool_results(model.requests[2])[0].content == "not today"


def test_invalid_arguments_are_checked_against_the_servers_schema():
    model = QueueModel([call("read_note", {"key": 5}), "done"])
    agent = AgentBuilder("a", model).mcp([TOOLBOX]).build()
    _run(agent)
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert "Invalid arguments for tool read_note" in result.content and "key" in result.content


def test_every_invalid_argument_is_named_at_once():
    """As a Python tool's refusal names each argument that is wrong (pydantic's errors), so
    does an MCP tool's: the model fixes them in one call, not one call each."""
    model = QueueModel([call("write_note", {"key": 5, "text": ["v"]}), "done"])
    _run(AgentBuilder("a", model).mcp([TOOLBOX]).build())
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert result.content == (
        "Invalid arguments for tool write_note: key: 5 is not of type 'string'; "
        "text: ['v'] is not of type 'string'. Call the tool again with corrected arguments."
    )


def test_name_clash_with_an_agent_tool_is_an_error_before_any_model_call():
    model = QueueModel(["never asked"])
    agent = (
        AgentBuilder("a", model)
        .tool(make_add_tool())
        .mcp([toolbox("clashing", env={"TOOLBOX_CLASH": "1"})])
        .build()
    )
    with pytest.raises(McpToolNameClashError, match="'clashing' offers a tool named 'add'"):
        _run(agent)
    assert model.requests == []


def test_name_clash_between_two_servers_is_an_error_before_any_model_call():
    model = QueueModel(["never asked"])
    agent = AgentBuilder("a", model).mcp([toolbox("one"), toolbox("two")]).build()
    with pytest.raises(McpToolNameClashError, match="by the MCP servers 'one' and 'two'"):
        _run(agent)
    assert model.requests == []


def test_a_run_on_another_event_loop_uses_the_same_session():
    server = TOOLBOX
    model = QueueModel([call("pid", {}), "done", call("pid", {}, id="c2"), "done"])
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda r: True).build()
    _run(agent)  # send_sync: a loop of its own
    first = tool_results(model.requests[1])[0].content

    async def again():
        return await agent.prompt("again").send()

    asyncio.run(again())
    assert tool_results(model.requests[3])[0].content == first


def test_trace_and_otel_span_name_the_server_and_the_store_keeps_the_call(tmp_path):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from anvia_notebook import instrument
    from anvia_notebook.store import RunStore

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    try:
        store = RunStore(tmp_path / "runs.db")
        model = QueueModel([call("write_note", {"key": "t", "text": "traced"}), "done"])
        agent = AgentBuilder("a", model).mcp([TOOLBOX]).approvals(lambda r: True).build()
        request = agent.prompt("go").store(store)
        response = request.send_sync()
    finally:
        instrument(False)
    span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool write_note")
    assert span.attributes["anvia.mcp.server"] == "toolbox"
    assert span.attributes["mcp.method.name"] == "tools/call"
    entry = response.trace.tool_calls[0]
    assert entry.mcp_server == "toolbox" and entry.status == "success"
    assert entry.approval is not None and entry.approval.status == "approved"
    stored = store.get(response.run_id)
    results = [r for m in stored.messages if m.role == "tool" for r in m.tool_results]
    assert [r.content for r in results] == ["wrote t"]
    assert [a.status for a in stored.approvals.values()] == ["approved"]


def test_no_roots_are_declared_unless_given(tmp_path):
    async def listed(server):
        connected = await mcp.connect(server)
        tool = next(t for t in connected.tools if t.name == "roots")
        return await tool.call(tool.parse_args({}), None)

    assert asyncio.run(listed(TOOLBOX)) == "no roots declared"
    assert (
        asyncio.run(listed(toolbox("rooted", roots=[str(tmp_path)]))) == tmp_path.resolve().as_uri()
    )


def test_a_handlers_edit_that_breaks_the_servers_schema_never_reaches_the_server():
    """Edited arguments are checked against the server's own input schema, as the model's are:
    an approval handler's that do not fit reject the call before the server is called."""
    model = QueueModel([call("write_note", {"key": "k", "text": "v"}), "done"])
    agent = (
        AgentBuilder("a", model)
        .mcp([TOOLBOX])
        .approvals(lambda r: ApprovalDecision(approved=True, args={"key": "edited-k", "text": 5}))
        .build()
    )
    response = _run(agent)
    [result] = tool_results(model.requests[1])
    assert result.is_error
    assert result.content == (
        "Edited arguments were rejected: The edited arguments are not valid for write_note: "
        "text: 5 is not of type 'string'"
    )
    [approval] = [entry.approval for entry in response.trace.tool_calls]
    assert approval is not None and approval.status == "rejected"
    read = QueueModel([call("read_note", {"key": "edited-k"}), "done"])
    _run(AgentBuilder("a", read).mcp([TOOLBOX]).build())
    assert tool_results(read.requests[1])[0].content == "no note named edited-k"


@pytest.mark.parametrize("front", ["run", "store"])
async def test_an_edit_that_breaks_the_servers_schema_is_refused_the_same_way_from_anywhere(
    store_path, front
):
    from test_safety_mutants import pending_in

    from anvia_notebook import DecisionRefusedError, StoreHumanInput
    from anvia_notebook.store import RunStore

    model = QueueModel([call("write_note", {"key": "k", "text": "v"}), "done"])
    agent = AgentBuilder("a", model).mcp([TOOLBOX]).human_input(StoreHumanInput()).build()
    run = agent.prompt("go").start()
    store = RunStore(store_path)
    [approval] = await pending_in(store, run.run_id)
    approve = {
        "run": partial(run.interactions.decide, approved=True),
        "store": partial(store.approve, run.run_id),
    }[front]
    with pytest.raises(DecisionRefusedError) as refused:
        approve(approval.id, args={"key": "k"})
    assert str(refused.value) == (
        "The edited arguments are not valid for write_note: 'text' is a required property"
    )
    assert [r.id for r in store.pending(run.run_id)] == [approval.id]
    run.cancel("done")
    await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 5)


def test_the_schema_checker_is_loaded_when_the_server_connects_not_at_the_first_call():
    """Its import (a second or more) ran on the run's loop at the first call of a tool, so a
    notebook's kernel stood still then: the first call's arguments are checked at once now."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import asyncio, sys\n"
        "from mcp_helpers import toolbox\n"
        "from anvia_notebook import mcp\n"
        "async def main():\n"
        "    await mcp.connect(toolbox('tb'))\n"
        "    print('jsonschema' in sys.modules)\n"
        "    await mcp.close_all()\n"
        "asyncio.run(main())\n"
    )
    tests = Path(__file__).parent
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": f"{tests.parent}{os.pathsep}{tests}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip() == "True", done.stderr


def test_a_huge_invalid_argument_is_named_without_being_repeated_whole():
    """A schema problem quotes the value it refuses: a 20,000-character text given for a
    number was repeated whole to the model, once per such argument."""
    model = QueueModel([call("write_note", {"key": 5, "text": ["v" * 20_000]}), "done"])
    _run(AgentBuilder("a", model).mcp([TOOLBOX]).build())
    result = tool_results(model.requests[1])[0]
    assert result.is_error and len(result.content) < 1_000
    assert "key: 5 is not of type 'string'; text: ['vvv" in result.content
    assert "vvv'] is not of type 'string'. Call the tool again" in result.content
