"""A server others publish on npm: ``@modelcontextprotocol/server-everything`` (the MCP
project's reference server), pinned in ``tests/mcp_servers/npm/package.json`` and installed by
``.ci/run`` with ``npm ci`` in that folder. It runs offline once installed.

Through the agent: approvals from the annotations it declares (read-only tools run without
approval, the others ask), its image shown in the transcript, its elicitation form asked as
questions, and no ``node`` process left once the session is closed or the interpreter exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import SERVERS, alive, listening, processes_running

from anvia_notebook import AgentBuilder, CallbackHumanInput, mcp
from anvia_notebook.models import QueueModel
from anvia_notebook.notebook._transcript import Transcript

from helpers import call, tool_results

NPM_FOLDER = SERVERS / "npm"
EVERYTHING = (
    NPM_FOLDER
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)


def _everything_script() -> str:
    """The installed server's entry point; missing: a failure in CI, else a skip saying how."""
    if EVERYTHING.is_file() and shutil.which("node"):
        return str(EVERYTHING)
    how = f"run `npm ci` in {NPM_FOLDER.relative_to(Path(__file__).parent.parent)} (.ci/run does)"
    if os.environ.get("CI"):
        pytest.fail(f"@modelcontextprotocol/server-everything is not installed: {how}")
    pytest.skip(f"@modelcontextprotocol/server-everything is not installed: {how}")


@pytest.fixture(scope="module")
def everything():
    script = _everything_script()
    yield mcp.stdio("everything", "node", [script, "stdio"])
    asyncio.run(mcp.close_all())


def test_read_only_tools_run_without_approval_and_the_others_ask(everything):
    asked = []
    model = QueueModel(
        [
            call("get-sum", {"a": 2, "b": 3}, id="c1"),
            call("toggle-simulated-logging", {}, id="c2"),
            call("toggle-simulated-logging", {}, id="c3"),
            "done",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([everything])
        .approvals(lambda request: asked.append(request.reason) or True)
        .build()
    )
    assert agent.prompt("go").send_sync().output == "done"
    assert tool_results(model.requests[1])[0].content == "The sum of 2 and 3 is 5."
    assert "Started simulated" in tool_results(model.requests[2])[0].content
    assert "Stopped simulated" in tool_results(model.requests[3])[0].content
    # get-sum declares readOnlyHint: true; toggle-simulated-logging declares readOnlyHint: false.
    assert (
        asked
        == [
            "toggle-simulated-logging from the MCP server 'everything' (declares: not read-only, "
            "not destructive, not idempotent, closed world)"
        ]
        * 2
    )


def test_its_image_is_shown_in_the_transcript_and_the_model_reads_a_placeholder(everything):
    model = QueueModel([call("get-tiny-image", {}), "done"])
    agent = AgentBuilder("a", model).mcp([everything]).build()

    async def collect():
        return [e async for e in agent.prompt("draw").stream()]

    events = asyncio.run(collect())
    [result] = [e for e in events if e.type == "tool_result"]
    [image] = result.parts
    assert (image["type"], image["media_type"]) == ("image", "image/png")
    assert image["data"].startswith("iVBOR") and image["data"] not in result.result
    seen = tool_results(model.requests[1])[0].content
    assert seen.startswith("Here's the image you requested:\n[image image/png, ")
    assert seen.endswith(", shown to the user]\nThe image above is the MCP logo.")

    transcript = Transcript("a", emit=lambda op: None)
    transcript.begin_run("r1", "a", "draw")
    for event in events:
        transcript.apply(event)
    [tool] = [e for e in transcript.state(1)["entries"] if e["kind"] == "tool"]
    assert tool["images"] == [{"media_type": "image/png", "data": image["data"]}]


def test_its_elicitation_form_is_asked_as_questions_and_the_answers_reach_it(everything):
    requests = []

    def ask(request):
        requests.append(request)
        answers = {
            "name": {"answer": "Ada Lovelace", "custom": True},
            "check": {"answer": "true", "choice": "true"},
            "integer": {"answer": "7", "custom": True},
            "untitledSingleSelectEnum": {"answer": "Joey", "choice": "Joey"},
            "titledSingleSelectEnum": {"answer": "hero-3", "choice": "hero-3"},
            "legacyTitledEnum": {"answer": "pet-2", "choice": "pet-2"},
        }
        return [
            {"questionId": q.id, **answers.get(q.id, {"answer": "(blank)", "choice": "(blank)"})}
            for q in request.questions
        ]

    model = QueueModel([call("trigger-elicitation-request", {}), "done"])
    agent = (
        AgentBuilder("a", model)
        .mcp([everything])
        .approvals(lambda request: True)  # the tool declares readOnlyHint: false
        .human_input(CallbackHumanInput(ask=ask))
        .build()
    )
    with pytest.warns(UserWarning, match="untitledMultipleSelectEnum, titledMultipleSelectEnum"):
        response = agent.prompt("ask me").send_sync()
    [request] = requests
    questions = {q.id: q for q in request.questions}
    # Multi-select lists (optional) cannot be asked: left out, with the warning above.
    assert list(questions) == [
        "name",
        "check",
        "firstLine",
        "email",
        "homepage",
        "birthdate",
        "integer",
        "number",
        "untitledSingleSelectEnum",
        "titledSingleSelectEnum",
        "legacyTitledEnum",
    ]
    assert questions["name"].choices == []  # required: a custom answer only
    assert [c.label for c in questions["titledSingleSelectEnum"].choices] == [
        "Superman",
        "Green Lantern",
        "Wonder Woman",
        "Use the default (Superman)",
    ]
    assert [c.label for c in questions["legacyTitledEnum"].choices][:2] == ["Cats", "Dogs"]
    assert questions["integer"].answer_schema == {"type": "integer", "minimum": 1, "maximum": 100}
    seen = tool_results(model.requests[1])[0].content
    assert "✅ User provided the requested information!" in seen
    for line in (
        '"name": "Ada Lovelace"',
        '"check": true',
        '"integer": 7',
        '"untitledSingleSelectEnum": "Joey"',
        '"titledSingleSelectEnum": "hero-3"',
        '"legacyTitledEnum": "pet-2"',
    ):
        assert line in seen, seen
    assert '"email"' not in seen  # left blank: not sent
    assert response.trace.tool_calls[0].question.status == "answered"


def _node_processes() -> list[int]:
    return processes_running(str(EVERYTHING))


def _gone(pids: list[int], within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_closing_the_session_leaves_no_node_process():
    script = _everything_script()
    before = set(_node_processes())
    server = mcp.stdio("everything-closed", "node", [script, "stdio"])
    model = QueueModel([call("echo", {"message": "hi"}), "done"])
    AgentBuilder("a", model).mcp([server]).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == "Echo: hi"
    started = [pid for pid in _node_processes() if pid not in before]
    assert len(started) == 1
    asyncio.run(mcp.close_all())
    assert _gone(started)


_CHILD = """
import asyncio, sys
sys.path[:0] = {paths!r}
from anvia_notebook import mcp
async def main():
    connected = await mcp.connect(mcp.stdio("everything", "node", [{script!r}, "stdio"]))
    echo = next(t for t in connected.tools if t.name == "echo")
    print(await echo.call(echo.parse_args({{"message": "up"}}), None), flush=True)
asyncio.run(main())  # the interpreter exits with the session open
"""


def test_an_interpreter_that_exits_leaves_no_node_process():
    script = _everything_script()
    before = set(_node_processes())
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(paths=sys.path, script=script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "Echo: up"
    assert child.wait(timeout=60) == 0
    assert _gone([pid for pid in _node_processes() if pid not in before])
    assert [pid for pid in _node_processes() if pid not in before] == []


async def test_an_edit_on_approval_is_checked_against_the_published_servers_own_schema(
    store_path,
):
    """Edited arguments of a published server's tool are checked against the schema that
    server declares, by the run and by another process alike, before anything is recorded;
    an edit that fits reaches the server."""
    from test_safety_mutants import pending_in

    from anvia_notebook import DecisionRefusedError, StoreHumanInput
    from anvia_notebook.store import RunStore

    script = _everything_script()
    server = mcp.stdio("everything-asks", "node", [script, "stdio"], approval="always")
    try:
        model = QueueModel([call("get-sum", {"a": 2, "b": 3}), "done"])
        agent = AgentBuilder("a", model).mcp([server]).human_input(StoreHumanInput()).build()
        run = agent.prompt("go").start()
        store = RunStore(store_path)
        [approval] = await pending_in(store, run.run_id)
        assert approval.args == {"a": 2, "b": 3}
        refusals = []
        for decide in (
            lambda args: run.interactions.decide(approval.id, approved=True, args=args),
            lambda args: store.approve(run.run_id, approval.id, args=args),
        ):
            with pytest.raises(DecisionRefusedError) as refused:
                decide({"a": "2", "b": 3})
            refusals.append(str(refused.value))
        assert refusals[0] == refusals[1]
        assert refusals[0].startswith("The edited arguments are not valid for get-sum: a: '2' is")
        store.approve(run.run_id, approval.id, args={"a": 20, "b": 3})
        assert (await asyncio.wait_for(run.wait(), 30)).output == "done"
        assert "23" in tool_results(model.requests[1])[0].content
    finally:
        await mcp.close_all()


def _start_everything_over_http(script: str, port: int) -> subprocess.Popen:
    """The server over streamable HTTP on 127.0.0.1's ``port``, once it listens."""
    process = subprocess.Popen(
        ["node", "-r", str(NPM_FOLDER / "listen_on_loopback.cjs"), script, "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return listening(process, port, "server-everything")


def test_a_restarted_http_server_that_refuses_the_old_session_with_400_gets_a_new_one(
    caplog,
):
    """The TypeScript SDK's servers answer a session they do not know with HTTP 400 ("No
    valid session ID provided"), not the spec's 404: every later call failed with "error
    -32603: Server returned an error response" until mcp.close_all(), and closing then logged
    "Session termination failed: 400"."""
    from mcp_helpers import _free_port

    script = _everything_script()
    port = _free_port()
    server = mcp.http("everything-http", f"http://127.0.0.1:{port}/mcp", allow_private_network=True)
    model = QueueModel(
        [
            call("echo", {"message": "one"}, id="c1"),
            "first",
            call("echo", {"message": "two"}, id="c2"),
            call("echo", {"message": "three"}, id="c3"),
            "second",
        ]
    )
    agent = AgentBuilder("a", model).mcp([server]).build()
    processes = [_start_everything_over_http(script, port)]
    try:
        assert agent.prompt("go").send_sync().output == "first"
        processes[0].terminate()
        processes[0].wait(timeout=10)
        processes.append(_start_everything_over_http(script, port))  # the same address
        assert agent.prompt("again").send_sync().output == "second"
        asyncio.run(mcp.close_all())
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
    told = [tool_results(model.requests[i])[0].content for i in (1, 3, 4)]
    assert told == ["Echo: one", "Echo: two", "Echo: three"]
    assert agent.get_tool("echo").connection.opened == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "Session" in r.msg]


async def test_an_http_server_that_dies_during_a_call_went_away_it_did_not_answer():
    """Over streamable HTTP, the MCP SDK tells of a call whose response stream broke (the
    server died mid-call) with a JSON-RPC error it makes up itself (-32000, "SSE stream ended
    and reconnection attempts were exhausted"): the model was told that the server "answered
    the call ... with error -32000", and the broken session was kept, so the next call failed
    on it too. Over stdio and SSE the same death is said as the server having gone away."""
    from mcp_helpers import _free_port

    script = _everything_script()
    port = _free_port()
    server = mcp.http(
        "everything-http-dies", f"http://127.0.0.1:{port}/mcp", allow_private_network=True
    )
    model = QueueModel(
        [call("trigger-long-running-operation", {"duration": 60, "steps": 60}), "done"]
    )
    agent = AgentBuilder("a", model).mcp([server]).build()
    process = _start_everything_over_http(script, port)
    try:
        run = agent.prompt("go").start()
        async for event in run.stream():
            if event.type == "tool_call":
                break
        await asyncio.sleep(2.5)  # (the call is under way: its progress events have ids)
        process.kill()
        process.wait(timeout=10)
        assert (await asyncio.wait_for(run.wait(), 60)).output == "done"
    finally:
        process.kill()
        process.wait(timeout=10)
        await mcp.close_all()
    told = tool_results(model.requests[1])[0]
    assert told.is_error
    assert told.content == (
        "ToolCallError: MCP server 'everything-http-dies' went away during the call of "
        "trigger-long-running-operation (the next call connects again)."
    )
    assert agent.get_tool("trigger-long-running-operation").connection.session is None


async def test_an_http_server_that_dies_while_its_question_waits_fills_no_cell_with_tracebacks(
    caplog,
):
    """The server asked the person to open a page and died before the answer: the SDK then
    failed to send the answer (or the call's cancellation) and logged "Error in post_writer"
    with the traceback of an exception group around the refused connection, in the notebook
    cell (the filter that makes such records one INFO line did not look inside groups). The
    question is closed with its call, as withdrawn."""
    from mcp_helpers import _free_port

    caplog.set_level(logging.DEBUG, logger="mcp.client")
    script = _everything_script()
    port = _free_port()
    server = mcp.http(
        "everything-http-asks", f"http://127.0.0.1:{port}/mcp", allow_private_network=True
    )
    asked = asyncio.Event()

    async def ask(request):
        asked.set()
        await asyncio.sleep(3600)

    model = QueueModel(
        [call("trigger-url-elicitation", {"url": "https://example.com/sign-in"}), "done"]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([server])
        .approvals(lambda request: True)
        .human_input(CallbackHumanInput(ask=ask))
        .build()
    )
    process = _start_everything_over_http(script, port)
    try:
        run = agent.prompt("go").start()
        await asyncio.wait_for(asked.wait(), 60)
        process.kill()
        process.wait(timeout=10)
        response = await asyncio.wait_for(run.wait(), 60)
        await mcp.close_all()
    finally:
        process.kill()
        process.wait(timeout=10)
        await mcp.close_all()
    [traced] = response.trace.tool_calls
    assert "went away during the call of trigger-url-elicitation" in traced.result
    assert (traced.question.status, traced.question.decided_by) == ("cancelled", "runtime")
    assert "withdrew this request" in traced.question.decision_reason
    logged = [r for r in caplog.records if r.name.startswith("mcp.client")]
    shown = [r for r in logged if r.levelno >= logging.WARNING or (r.exc_info and r.levelno > 10)]
    assert not shown, [r.getMessage() for r in logged]
