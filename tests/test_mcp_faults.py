"""MCP faults, each with a clear message: a server that cannot start, one that dies during a
call, a call past its time limit (progress extends it), a malformed result, a refused private
address; and how results map (text, structured content, images, resources, isError)."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import SERVERS, TOOLBOX, _free_port, start_toolbox, toolbox

from anvia_notebook import AgentBuilder, mcp
from anvia_notebook.errors import McpConnectionError, McpPrivateNetworkError
from anvia_notebook.models import QueueModel

from helpers import call, tool_results


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


def _results(server, *calls_and_final):
    model = QueueModel([*calls_and_final])
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda r: True).build()
    response = agent.prompt("go").send_sync()
    return model, response


def test_a_command_that_does_not_exist_is_named():
    model = QueueModel(["never asked"])
    agent = AgentBuilder("a", model).mcp([mcp.stdio("ghost", "no-such-mcp-server-cmd")]).build()
    with pytest.raises(McpConnectionError) as caught:
        agent.prompt("go").send_sync()
    assert "'ghost' could not start" in str(caught.value)
    assert "the command 'no-such-mcp-server-cmd' was not found" in str(caught.value)
    assert model.requests == []


def test_a_server_that_exits_at_once_shows_the_end_of_its_stderr():
    script = "import sys; sys.stderr.write('line one\\nbad config: missing TOKEN\\n'); sys.exit(2)"
    server = mcp.stdio("quitter", sys.executable, ["-c", script])
    with pytest.raises(McpConnectionError) as caught:
        asyncio.run(mcp.connect(server))
    text = str(caught.value)
    assert "'quitter' could not start" in text and sys.executable in text
    assert "it exited before the MCP session started" in text
    assert text.endswith("line one\nbad config: missing TOKEN")


def test_a_server_that_dies_mid_call_fails_that_call_and_the_next_call_reconnects():
    server = toolbox("crashy")
    model, response = _results(
        server,
        call("pid", {}, id="c1"),
        call("crash", {}, id="c2"),
        call("pid", {}, id="c3"),
        "still here",
    )
    assert response.output == "still here"
    crashed = tool_results(model.requests[2])[0]
    assert crashed.is_error
    assert "'crashy' went away during the call of crash" in crashed.content
    before = tool_results(model.requests[1])[0].content
    after = tool_results(model.requests[3])[0]
    assert not after.is_error and after.content != before  # a new server process


def test_a_stdio_server_that_dies_between_calls_is_started_again_by_the_next_call():
    """Killed while no call was in flight (a crash, the system's memory killer): before, the
    next call failed ("went away during the call"), though the server never saw it."""
    import os
    import signal
    import time

    from anvia_notebook.mcp._connection import Connection

    async def main():
        connection = Connection(toolbox("dies-idle"))
        try:
            first = int((await connection.call_tool("pid", {}, 30)).content[0].text)
            os.kill(first, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while not connection._holder.done():  # the session notices the server went away
                assert time.monotonic() < deadline, "the session did not notice"
                await asyncio.sleep(0.02)
            second = await connection.call_tool("pid", {}, 30)
            return first, second, connection.opened
        finally:
            await connection.close()

    first, second, opened = asyncio.run(main())
    assert not second.is_error and int(second.content[0].text) != first
    assert opened == 2


@pytest.mark.parametrize("transport", ["http", "http-400"])
def test_an_http_server_restarted_between_calls_gets_a_new_session_and_the_call_is_made(
    transport,
):
    """A server that no longer knows the session answers HTTP 404 (or 400 with a JSON-RPC
    error, as the TypeScript SDK's servers do); as the MCP spec says, the client starts a new
    session (it had not seen the call, which is made on it). Before, every later call failed
    with "Session not found" (or "Bad Request: No valid session ID provided") for good."""
    port = _free_port()
    server = mcp.http("restarted", f"http://127.0.0.1:{port}/mcp", allow_private_network=True)
    processes = [start_toolbox(transport, port)]
    model = QueueModel(
        [call("pid", {}, id="c1"), "first", call("pid", {}, id="c2"), call("pid", {}, id="c3"), "x"]
    )
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda request: True).build()
    try:
        agent.prompt("go").send_sync()
        processes[0].terminate()
        processes[0].wait(timeout=10)
        processes.append(start_toolbox(transport, port))  # restarted, on the same address
        agent.prompt("again").send_sync()
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
    before = tool_results(model.requests[1])[0]
    after, again = tool_results(model.requests[3])[0], tool_results(model.requests[4])[0]
    assert not after.is_error, after.content
    assert after.content == again.content != before.content  # the new server process
    assert agent.get_tool("pid").connection.opened == 2


def test_a_call_past_its_timeout_is_an_error_result_and_progress_extends_it():
    # (a time limit far above the time between two progress notices: a CI run under load once
    # delayed one past a limit of 0.6 s, with notices every 0.2 s)
    server = toolbox("slowpoke", timeout=2.0)
    model, _ = _results(
        server,
        call("slow", {"seconds": 4}, id="c1"),
        call("slow", {"seconds": 3, "progress_every": 0.2}, id="c2"),
        "done",
    )
    late = tool_results(model.requests[1])[0]
    assert late.is_error
    assert "gave no result within 2 s" in late.content
    kept_going = tool_results(model.requests[2])[0]
    assert not kept_going.is_error and kept_going.content == "slept 3 s"


def test_a_malformed_result_is_an_error_result_saying_so():
    server = mcp.stdio("malformed", sys.executable, [str(SERVERS / "malformed.py")])
    model, _ = _results(server, call("broken", {}), "done")
    result = tool_results(model.requests[1])[0]
    assert result.is_error
    assert (
        "'malformed' answered the call of broken with something that is not a valid"
        in result.content
    )
    assert "content" in result.content


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/mcp",
        "http://localhost:8000/mcp",
        "http://[::1]:8000/mcp",
        "http://10.1.2.3/mcp",
        "http://192.168.0.10/mcp",
        "http://172.16.5.4/mcp",
        "http://169.254.169.254/latest",
        "https://0.0.0.0/mcp",
    ],
)
def test_private_and_loopback_addresses_are_refused_unless_allowed(url):
    for make in (mcp.http, mcp.sse):
        with pytest.raises(McpPrivateNetworkError, match="allow_private_network=True"):
            make("internal", url)
        assert make("internal", url, allow_private_network=True).url == url


def test_public_addresses_and_bad_urls():
    assert mcp.http("public", "https://93.184.215.14/mcp").url  # not connected here
    with pytest.raises(ValueError, match="is not an http:// or https:// URL"):
        mcp.http("ftp", "ftp://93.184.215.14/mcp")


def test_result_mapping_text_structured_resources_images_and_errors():
    model, _ = _results(
        mcp.stdio("toolbox", sys.executable, [TOOLBOX]),
        call("only_structured", {}, id="c1"),
        call("resources", {}, id="c2"),
        call("picture", {}, id="c3"),
        call("fails", {}, id="c4"),
        "done",
    )
    structured, resources, picture, fails = (
        tool_results(model.requests[i])[0] for i in (1, 2, 3, 4)
    )
    assert structured.content == '{"rows": 3, "ok": true}'
    assert resources.content == (
        "MCP resource link (file:///data/report.csv; text/csv): report.csv\n"
        "MCP resource (file:///data/notes.txt; text/plain; text)\nline one"
    )
    assert picture.content == "a red dot\n[image image/png, 70 bytes, shown to the user]"
    assert "iVBOR" not in picture.content  # never base64 to the model
    assert fails.is_error and fails.content == "ToolCallError: disk quota exceeded"


def test_images_travel_in_the_tool_result_events_parts_not_in_the_text():
    PNG = _toolbox_png()

    model = QueueModel(
        [call("picture", {}), call("read_note", {"key": "greeting"}, id="c2"), "done"]
    )
    agent = AgentBuilder("a", model).mcp([mcp.stdio("toolbox", sys.executable, [TOOLBOX])]).build()

    async def collect():
        return [e async for e in agent.prompt("go").stream()]

    results = [e for e in asyncio.run(collect()) if e.type == "tool_result"]
    assert results[0].parts == [{"type": "image", "media_type": "image/png", "data": PNG}]
    assert PNG not in results[0].result
    assert results[1].parts == []


def _toolbox_png() -> str:
    """The toolbox's picture (loading its module defines the server without running it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("toolbox_module", SERVERS / "toolbox.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.PNG)


def test_stop_during_a_call_ends_the_run_and_the_session_stays_usable():
    server = toolbox("stoppable")

    async def main():
        started = asyncio.Event()

        def on_tool_call(event):
            started.set()

        from anvia_notebook import create_hook

        model = QueueModel([call("slow", {"seconds": 30}), "never"])
        hook = create_hook(on_tool_call=on_tool_call)
        agent = AgentBuilder("a", model).mcp([server]).hook(hook).build()
        run = agent.prompt("go").start()
        await asyncio.wait_for(started.wait(), 60)
        await asyncio.sleep(0.3)  # the call is with the server
        run.cancel("enough")
        with pytest.raises(Exception, match="enough"):
            await asyncio.wait_for(run.wait(), 30)
        [result] = [r for m in run.state.messages if m.role == "tool" for r in m.tool_results]
        assert result.is_error and result.content.startswith(
            "ToolCallStopped: the run was stopped while slow was running"
        )
        connected = await mcp.connect(server)  # the same session still answers
        note = next(t for t in connected.tools if t.name == "read_note")
        assert (
            await asyncio.wait_for(note.call(note.parse_args({"key": "greeting"}), None), 30)
            == "hello"
        )

    asyncio.run(main())


def test_close_all_during_a_run_leaves_no_session_it_cannot_close():
    """``mcp.close_all()`` while a run uses a server (a tool of the run's own, or another
    cell): the run's next call opens a session again; before, the registry no longer knew it,
    so a later ``close_all()`` left that server process running until the kernel exited."""
    from mcp_helpers import alive
    from pydantic import BaseModel

    from anvia_notebook import create_tool

    class NoArgs(BaseModel):
        pass

    async def close_everything(args: NoArgs) -> str:
        await mcp.close_all()
        return "closed"

    closer = create_tool(
        name="close_everything", description="", input=NoArgs, execute=close_everything
    )
    model = QueueModel(
        [
            call("pid", {}, id="c1"),
            call("close_everything", {}, id="c2"),
            call("pid", {}, id="c3"),
            "done",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .tool(closer)
        .mcp([toolbox("closed-mid-run")])
        .approvals(lambda request: True)
        .build()
    )
    agent.prompt("go").send_sync()
    first = int(tool_results(model.requests[1])[0].content)
    second = int(tool_results(model.requests[3])[0].content)
    assert first != second and not alive(first)  # closed, then opened again by the call
    asyncio.run(mcp.close_all())
    deadline = time.monotonic() + 30
    while alive(second):
        assert time.monotonic() < deadline, "close_all() did not stop the server the run reopened"
        time.sleep(0.05)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_an_http_server_that_goes_away_fills_no_cell_with_tracebacks(transport, caplog):
    """The SDK logged a dropped SSE stream as an error with four chained tracebacks (shown in
    the notebook cell); it is one INFO line now, and the call's own error says what happened
    (an HTTP server is connected to again, not started)."""
    import logging

    caplog.set_level(logging.DEBUG, logger="mcp.client")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    make = mcp.http if transport == "http" else mcp.sse
    server = make(f"gone-{transport}", url, allow_private_network=True)
    process = start_toolbox(transport, port)
    model = QueueModel([call("pid", {}, id="c1"), "first", call("pid", {}, id="c2"), "x"])
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda request: True).build()
    try:
        agent.prompt("go").send_sync()
    finally:
        process.kill()
        process.wait(timeout=10)
    try:
        agent.prompt("again").send_sync()
    except McpConnectionError as error:  # SSE: the session saw its stream end; reconnecting fails
        assert f"'gone-{transport}' could not be reached" in str(error)
    else:
        # The call finds out: its session broke under it (streamable HTTP), or the session saw
        # its stream end only after the run began and the call's new connection failed (SSE,
        # when the kill is noticed late). Either way the model is told, and nothing is started.
        failed = tool_results(model.requests[-1])[0]
        assert failed.is_error, failed
        went = "went away during the call of pid (the next call connects again)"
        unreachable = f"'gone-{transport}' could not be reached at http://127.0.0.1:{port}/"
        assert went in failed.content or unreachable in failed.content, failed.content
        assert "start" not in failed.content, failed.content
    logged = [r for r in caplog.records if r.name.startswith("mcp.client")]
    shown = [r for r in logged if r.levelno >= logging.WARNING or (r.exc_info and r.levelno > 10)]
    assert not shown, [r.getMessage() for r in logged]
    if transport == "sse":
        assert any("An MCP server's connection ended" in r.getMessage() for r in logged)


def test_a_question_whose_server_dies_while_it_waits_is_closed_by_the_runtime():
    """The server asked a question (elicitation) and died before it was answered: the question
    ends withdrawn by the runtime, not as a Stop nobody pressed (before: ``decided_by="stop"``),
    and the run goes on with the call's error."""
    import os
    import signal

    from anvia_notebook import CallbackHumanInput

    server = toolbox("dies-asking")
    model = QueueModel([call("pid", {}, id="p1"), call("ask_name", {"label": "L"}, id="q1"), "ok"])

    async def kill_the_server_then_wait(request):
        os.kill(int(tool_results(model.requests[1])[0].content), signal.SIGKILL)
        await asyncio.Event().wait()  # (nobody answers: the server's side withdraws it)

    human = CallbackHumanInput(ask=kill_the_server_then_wait)
    agent = AgentBuilder("a", model).mcp([server]).human_input(human).approvals(lambda r: True)
    agent = agent.build()
    response = agent.prompt("go").store(None).send_sync()
    assert response.output == "ok"
    asked = response.trace.tool_calls[1]
    assert asked.status == "error" and "went away" in (asked.result or "")
    question = asked.question
    assert (question.status, question.decided_by) == ("cancelled", "runtime")
    assert "withdrew this request" in (question.decision_reason or "")


def test_a_result_that_does_not_follow_the_tool_s_output_schema_still_reaches_the_model():
    """The SDK's check of a result against the tool's outputSchema raised a RuntimeError: the
    model read that instead of the text the server sent."""
    server = mcp.stdio("schemas", sys.executable, [str(SERVERS / "output_schema.py")])
    model, _ = _results(server, call("weather", {}, id="c1"), call("forecast", {}, id="c2"), "ok")
    first = tool_results(model.requests[1])[0]
    second = tool_results(model.requests[2])[0]
    assert (first.is_error, first.content) == (False, "Sunny, 21 C")
    assert (second.is_error, second.content) == (False, "Warm")


async def test_tools_from_connect_stay_beside_the_agent_s_own_servers():
    """Tools from mcp.connect() given with .tools(...) were dropped when the agent also had
    servers of its own (.mcp([...])): the model was told "Tool not found"."""
    schemas = mcp.stdio(
        "schemas", sys.executable, [str(SERVERS / "output_schema.py")], approval="never"
    )
    connected = await mcp.connect(schemas)
    model = QueueModel([call("weather", {}, id="c1"), "ok", "again"])
    agent = AgentBuilder("a", model).tools(connected.tools).mcp([toolbox("box")]).build()
    await agent.prompt("go").store(None).send()
    offered = {tool.name for tool in model.requests[0].tools}
    assert {"weather", "forecast", "read_note"} <= offered
    assert tool_results(model.requests[1])[0].content == "Sunny, 21 C"
    await agent.prompt("again").store(None).send()  # (a later run lists them again)
    assert {"weather", "read_note"} <= {tool.name for tool in model.requests[2].tools}


def test_a_server_s_new_list_of_tools_is_read_before_the_next_run():
    """notifications/tools/list_changed was ignored: a new tool was "not found", and a tool now
    declared destructive kept running without approval."""
    server = mcp.stdio("changing", sys.executable, [str(SERVERS / "changing_tools.py")])
    asked: list[str] = []
    model = QueueModel(
        [
            call("probe", {}, id="c1"),
            "one",
            call("added", {}, id="c2"),
            call("probe", {}, id="c3"),
            "two",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([server])
        .approvals(lambda request: asked.append(request.tool_name) or True)
        .build()
    )
    agent.prompt("first").store(None).send_sync()
    assert asked == []  # read-only then
    agent.prompt("second").store(None).send_sync()
    assert "added" in {tool.name for tool in model.requests[2].tools}
    assert tool_results(model.requests[3])[0].content == "ran added"
    assert asked == ["probe"]  # destructive now: asked


def test_images_with_wrapped_base64_or_an_odd_media_type_are_sent_as_providers_take_them():
    """MIME-style encoders wrap base64 in lines of 76 (providers refuse the line breaks) and
    some servers write the media type in capitals, with parameters, or as image/jpg."""
    import base64

    from anvia_notebook.mcp._content import map_result

    raw = bytes(range(256)) * 2
    wrapped = base64.encodebytes(raw).decode()
    assert "\n" in wrapped
    for declared, expected in [
        ("IMAGE/PNG", "image/png"),
        ("image/png; charset=binary", "image/png"),
        ("image/jpg", "image/jpeg"),
        ("Image/WebP", "image/webp"),
    ]:
        result = map_result({"content": [{"type": "image", "mimeType": declared, "data": wrapped}]})
        (part,) = result.media
        assert part.media_type == expected
        assert part.data == base64.b64encode(raw).decode()
        assert part.size == len(raw)
        assert result.text == f"[image {expected}, 512 bytes, shown to the user]"


def test_a_chatty_server_s_standard_error_is_kept_only_at_its_end():
    """A server's standard error went to a temporary file that grew for the whole session; only
    its end is kept now, and a start error still shows its last lines."""
    from anvia_notebook.mcp._stderr import KEPT_BYTES, StderrTail

    chatty = "import sys\nfor i in range(40000): print('log line', i, file=sys.stderr)\n"
    tail = StderrTail()
    subprocess.run([sys.executable, "-c", chatty], stderr=tail.writer, check=True, timeout=60)
    text = tail.text(wait=30)
    assert len(text.encode()) <= KEPT_BYTES and text.endswith("log line 39999\n")

    quits = chatty + "print('bad config: missing TOKEN', file=sys.stderr); sys.exit(2)\n"
    with pytest.raises(McpConnectionError) as caught:
        asyncio.run(mcp.connect(mcp.stdio("chatty", sys.executable, ["-c", quits])))
    assert str(caught.value).endswith("log line 39999\nbad config: missing TOKEN")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_connected_server_s_standard_error_takes_no_growing_file():
    import os

    writes = f"import runpy, sys; sys.stderr.write('x' * 5_000_000); runpy.run_path({TOOLBOX!r}, run_name='__main__')"

    def open_files() -> dict[tuple[int, int], int]:
        """This process's open temporary files (regular, with no name left: the standard error
        was written to one): (device, inode) -> size."""
        found = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                info = os.stat(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 0:
                found[(info.st_dev, info.st_ino)] = info.st_size
        return found

    before = open_files()  # (other tests' own)

    async def connected() -> list[int]:
        server = await mcp.connect(mcp.stdio("chatty", sys.executable, ["-c", writes]))
        try:
            assert server.tools
            return [size for key, size in open_files().items() if key not in before]
        finally:
            await server.close()

    assert max(asyncio.run(connected()), default=0) < 1_000_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_what_a_stdio_server_started_ends_with_its_session(tmp_path):
    """A server that started a helper process (a worker, a language server) left it running
    after close(): the SDK stops the server, not what it started."""
    import os
    import signal

    helper_pid = tmp_path / "helper.pid"
    server = tmp_path / "server.py"
    server.write_text(
        "import runpy, subprocess, sys\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(helper_pid)!r}, 'w').write(str(helper.pid))\n"
        f"runpy.run_path({TOOLBOX!r}, run_name='__main__')\n"
    )

    async def session() -> None:
        connected = await mcp.connect(mcp.stdio("with-helper", sys.executable, [str(server)]))
        assert connected.tools
        await connected.close()

    asyncio.run(session())
    pid = int(helper_pid.read_text())
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    if state not in ("gone", "Z"):  # (a zombie is ended, waiting for its parent to read it)
        os.kill(pid, signal.SIGKILL)
    assert state in ("gone", "Z"), f"the server's helper {pid} is still running ({state})"


def test_a_servers_error_answer_is_not_logged_as_a_tool_that_raised(caplog):
    """Before, each error a server answered with (a file it may not read, an unknown time
    zone) was logged as "Tool 'fails' raised McpToolError ... The traceback is in the run's
    trace": the package's own raise, and the model is told the server's whole text."""
    with caplog.at_level("WARNING", logger="anvia_notebook"):
        model, response = _results(toolbox("failing"), call("fails", {}, id="c1"), "done")
    assert tool_results(model.requests[1])[0].content == "ToolCallError: disk quota exceeded"
    assert [r.getMessage() for r in caplog.records if "raised" in r.getMessage()] == []
    assert response.trace.tool_calls[0].traceback is None


def test_a_tool_name_openai_and_anthropic_refuse_is_warned_about_when_listed():
    """Before, an MCP tool named ``files.read`` was given to the model with no warning (the
    same name in ``@tool`` warns): with OpenAI or Anthropic every request would fail."""
    server = toolbox("dotted", env={"TOOLBOX_DOTTED": "1"})
    with pytest.warns(UserWarning, match=r"MCP server 'dotted' offers a tool named 'files\.read'"):
        connected = asyncio.run(mcp.connect(server))
    assert "files.read" in [tool.name for tool in connected.tools]


#: A process that forks a child which stays a copy of it for a moment, then becomes the
#: command, and prints whether ``started_server_soon`` told that child (prints ``found pid``).
BECOMING = """
import asyncio, os, signal, sys, time
from anvia_notebook.mcp._guard import child_processes, started_server_soon

args = ["-c", "import time; time.sleep(60)"]
before = child_processes()
pid = os.fork()
if pid == 0:  # the child: becomes the command a moment later, as a slow start would
    try:
        time.sleep(0.2)
        os.execv(sys.executable, [sys.executable, *args])
    finally:
        os._exit(1)
try:
    print(asyncio.run(started_server_soon(before, sys.executable, args)), pid)
finally:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_server_still_becoming_its_command_is_waited_for_to_be_known():
    """The server was looked for once, at once: a child still a copy of this process, or in the
    middle of becoming the server (its command line reads empty then), was not known, so what
    it started was left running after close() (seen once in fifteen runs under load).

    The fork is made in a fresh process, as a kernel is: a fork of the test process itself runs
    the fork handlers of everything the earlier tests loaded and left running, and its copy was
    sometimes still not the command after a second (twice in full runs, never alone)."""
    from child_processes import child_environ

    done = subprocess.run(
        [sys.executable, "-c", BECOMING],
        env=child_environ(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found, pid = done.stdout.split()
    assert found == pid


def test_a_server_that_becomes_its_command_between_two_looks_is_found(monkeypatch):
    """The wait for a new server looked for it, then looked whether a child was still between
    two programs: a child that became the server in between was in neither look, the server
    was taken for not found, and what it started was left running after close() (a CI run
    failed the test above on it). The order is played here, look by look."""
    from anvia_notebook.mcp import _guard

    became = iter([None, 4242])  # not the command yet; then it is
    monkeypatch.setattr(_guard, "started_server", lambda *args: next(became))
    monkeypatch.setattr(_guard, "_any_changing", lambda before, ours: False)  # (it became it)
    assert asyncio.run(_guard.started_server_soon(set(), "server", [])) == 4242


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_child_exiting_meanwhile_does_not_hide_another_from_the_children_found():
    """The children were read from the kernel's per-thread lists, which skip a live child when
    the one before it is reaped during the read (proc(5)): a server hidden so was not found,
    and what it started was left running after close() (seen in a CI run, where earlier
    tests' servers were being reaped by asyncio's watcher threads)."""
    import subprocess
    import threading

    from anvia_notebook.mcp._guard import child_processes

    missed = 0
    for _ in range(10):  # (the old reading missed a child in about one round of three)
        dying: list[subprocess.Popen[bytes]] = []
        kept: list[subprocess.Popen[bytes]] = []
        try:
            for _ in range(200):  # each kept child right after one that dies while we read
                dying.append(subprocess.Popen(["sleep", "60"]))
                kept.append(subprocess.Popen(["sleep", "60"]))
            live = {child.pid for child in kept}

            def reap(children: list[subprocess.Popen[bytes]] = dying) -> None:
                for child in children:
                    child.kill()
                    child.wait()

            reaper = threading.Thread(target=reap)
            reaper.start()
            while reaper.is_alive():
                missed += not live <= child_processes()
            reaper.join()
        finally:
            for child in dying + kept:
                child.kill()
                child.wait()
    assert missed == 0


async def test_a_session_closed_during_a_call_says_it_was_closed(tmp_path):
    """``close_all()`` during a call told the model (and the cell's warning) that the server
    "went away", as if it had crashed: it says the session was closed."""
    started = tmp_path / "started.txt"
    server = toolbox("closable", env={"TOOLBOX_STARTED": str(started)})
    model = QueueModel([call("slow", {"seconds": 60}, id="c1"), "done"])
    agent = AgentBuilder("a", model).mcp([server]).approvals(lambda request: True).build()
    run = agent.prompt("go").start()
    deadline = time.monotonic() + 60
    while not started.exists():  # (the server writes it as the call begins)
        assert time.monotonic() < deadline, "the call did not begin"
        await asyncio.sleep(0.05)
    await mcp.close_all()
    response = await asyncio.wait_for(run.wait(), 60)
    assert response.output == "done"
    failed = tool_results(model.requests[1])[0]
    assert failed.is_error
    assert (
        "'closable' was closed (close() or close_all()) during the call of slow "
        "(the next call starts it again)." in failed.content
    ), failed.content


def test_a_call_the_server_ran_then_failed_with_400_is_not_made_again(tmp_path, monkeypatch):
    """A server that answers a tool's failure with HTTP 400 and an error of its own that names a
    session ("Browser session expired"): that is no refused MCP session, and the call, which ran,
    is not made again on a new one (a note was written twice)."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("TOOLBOX_LOG", str(log))
    port = _free_port()
    server = mcp.http("failing", f"http://127.0.0.1:{port}/mcp", allow_private_network=True)
    process = start_toolbox("http-failing", port)
    try:
        model, _ = _results(server, call("write_note", {"key": "k", "text": "v"}), "done")
    finally:
        process.terminate()
        process.wait(timeout=10)
    [result] = tool_results(model.requests[1])
    assert result.is_error and "Browser session expired" in result.content
    assert len(log.read_text().splitlines()) == 1


@pytest.fixture(params=["json", "sse"])
def cut_http_server(request):
    """The hand-written streamable HTTP server of ``cut_http.py``: its answers as JSON, or as
    an event stream sent in pieces that cut the escape of the half in two; yields its URL."""
    from mcp_helpers import listening

    port = _free_port()
    command = [sys.executable, str(SERVERS / "cut_http.py"), request.param, str(port)]
    process = listening(subprocess.Popen(command), port, "the cut HTTP server")
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        ({}, "Weekly report \ufffd"),  # (half of the emoji's pair)
        ({"whole": True}, "Weekly report \U0001f600"),
        ({"slash": True}, "C:\\ud83d"),  # (an escaped backslash: text, not an escape)
    ],
)
async def test_an_http_answer_with_half_of_a_pair_is_read_as_over_stdio(
    cut_http_server, arguments, told
):
    """A JavaScript server that cut a text inside an emoji writes half of its pair
    (``"\\ud83d"``): over stdio and SSE the answer is read (the half as U+FFFD); over
    streamable HTTP the call failed at once with the SDK's -32700 ("Failed to parse")."""
    server = mcp.http("cut-http", cut_http_server, allow_private_network=True, timeout=30)
    connected = await mcp.connect(server)
    try:
        [tool] = connected.tools
        assert await tool.call(tool.parse_args(arguments), None) == told
    finally:
        await connected.close()


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (rb'"a\ud83d"', rb'"a\ufffd"'),
        (rb'"\ude00\ud83d\ud83d\ude00"', rb'"\ufffd\ufffd\ud83d\ude00"'),
        (rb'"\\\ud83d \\ud83d \\\\ud83d"', rb'"\\\ufffd \\ud83d \\\\ud83d"'),
        (rb'"\u00e9\uD83D"', rb'"\u00e9\ufffd"'),
    ],
)
def test_only_escapes_of_lone_halves_are_mended(written, read):
    from anvia_notebook.mcp._halves import _mend

    assert _mend(written, events=False) == read
    event = b"id: " + written + b"\r\ndata: " + written + b"\n\n"
    assert _mend(event, events=True) == b"id: " + written + b"\r\ndata: " + read + b"\n\n"


async def test_an_escape_cut_between_two_pieces_of_a_stream_is_mended_whole():
    from anvia_notebook.mcp._halves import _mended_type

    async def pieces():
        for piece in [b'data: {"t": "a\\ud8', b'3d"}\r', b'\ndata: {"t": "\\ud83d', b"\\ude00"]:
            yield piece

    read = [piece async for piece in _mended_type()(pieces(), True)]
    assert b"".join(read) == b'data: {"t": "a\\ufffd"}\r\ndata: {"t": "\\ud83d\\ude00'


@pytest.mark.parametrize("events", [False, True])
async def test_a_long_body_without_a_line_end_is_read_once_not_once_a_piece(events):
    """A body with no line end (a JSON answer, or one long ``data:`` line) was held as one text
    grown by each piece and searched whole for a line end at each: time quadratic in its
    size, on the MCP loop (a 20 MB body in 16 KB pieces took seconds). Counted here, not timed:
    the bytes of the texts whose methods the mending calls (its searches) stay within a few
    times the body's size."""
    import sys

    from anvia_notebook.mcp._halves import _mended_type

    start = b'data: {"t": "' if events else b'{"t": "'
    body = start + b"x" * 199_990 + b'a\\ud83d \\\\ud83d \\ud83d\\ude00"}'
    size = 64
    pieces = [body[at : at + size] for at in range(0, len(body), size)]

    async def stream():
        for piece in pieces:
            yield piece

    scanned = 0

    def count(frame: object, event: str, called: object) -> None:
        nonlocal scanned
        text = getattr(called, "__self__", None)
        if event == "c_call" and isinstance(text, (bytes, bytearray)):
            scanned += len(text)

    sys.setprofile(count)
    try:
        read = [piece async for piece in _mended_type()(stream(), events)]
    finally:
        sys.setprofile(None)
    assert b"".join(read) == body.replace(b"a\\ud83d", b"a\\ufffd")
    assert scanned <= 4 * len(body)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13])
@pytest.mark.parametrize("events", [False, True])
async def test_a_stream_in_pieces_of_any_size_is_mended_as_it_is_whole(events, size):
    """Escapes, runs of backslashes and line ends (``\\r\\n`` too) cut anywhere between pieces."""
    from anvia_notebook.mcp._halves import _mend, _mended_type

    body = (
        b'data: {"t": "a\\ud83d \\\\\\ud83d \\\\ud83d\\ude00"}\r\n\r\n'
        b'id: \\ud83d\rdata: {"t": "\\ud83d\\ude00\\ude00 \\\\\\\\\\uDC00"}\n'
        b'data: {"t": "\\ud83d'
    )

    async def stream():
        for at in range(0, len(body), size):
            yield body[at : at + size]

    read = [piece async for piece in _mended_type()(stream(), events)]
    assert b"".join(read) == _mend(body, events)


@pytest.mark.parametrize(
    ("message", "lost"),
    [
        ("Connection closed", True),
        ("SSE stream ended without a response", True),
        ("SSE stream ended and reconnection attempts were exhausted", True),
        # A stream the SDK could not read, from a server still there: its answer was larger
        # than the SDK reads in one event (it was told as the server going away, and a
        # healthy session was dropped at each call).
        ("SSE stream failed: Server-sent event exceeded the 1048576 byte limit", False),
        ("Upstream: SSE stream ended without a response", False),
    ],
)
def test_only_the_sdks_own_words_for_a_lost_connection_say_the_server_went_away(message, lost):
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    from anvia_notebook.mcp._connection import _is_closed

    assert _is_closed(MCPError(CONNECTION_CLOSED, message)) is lost
    assert _is_closed(MCPError(CONNECTION_CLOSED, message, data={"server": "said"})) is False
