"""MCP over streamable HTTP (the toolbox on 127.0.0.1), a server others publish
(``mcp-server-time`` from PyPI, installed with the dev extra), and no server process outliving
the process that started it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
from mcp_helpers import TOOLBOX, alive, processes_running, serve_toolbox

from anvia_notebook import AgentBuilder, mcp
from anvia_notebook.models import QueueModel

from helpers import call, tool_results


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


def _serve(transport: str):
    yield from serve_toolbox(transport)


@pytest.fixture(scope="module")
def http_toolbox():
    yield from _serve("http")


@pytest.fixture(scope="module")
def sse_toolbox():
    yield from _serve("sse")


def test_streamable_http_server_with_private_network_allowed(http_toolbox):
    server = mcp.http("web", http_toolbox, allow_private_network=True)
    seen = []
    model = QueueModel(
        [
            call("read_note", {"key": "greeting"}, id="c1"),
            call("write_note", {"key": "k", "text": "over http"}, id="c2"),
            call("read_note", {"key": "k"}, id="c3"),
            "done",
        ]
    )
    agent = (
        AgentBuilder("a", model)
        .mcp([server])
        .approvals(lambda r: seen.append(r.reason) or True)
        .build()
    )
    assert agent.prompt("go").send_sync().output == "done"
    assert [tool_results(model.requests[i])[0].content for i in (1, 2, 3)] == [
        "hello",
        "wrote k",
        "over http",
    ]
    assert len(seen) == 1 and "'web'" in seen[0] and "write_note" in seen[0]


def test_sse_server_with_private_network_allowed(sse_toolbox):
    server = mcp.sse("events", sse_toolbox, allow_private_network=True)
    model = QueueModel(
        [call("read_note", {"key": "greeting"}), call("picture", {}, id="c2"), "done"]
    )
    agent = AgentBuilder("a", model).mcp([server]).build()
    assert agent.prompt("go").send_sync().output == "done"
    assert tool_results(model.requests[1])[0].content == "hello"
    assert tool_results(model.requests[2])[0].content.startswith("a red dot\n[image image/png")


def test_a_published_server_mcp_server_time():
    import importlib.util

    if importlib.util.find_spec("mcp_server_time") is None:
        missing = "mcp-server-time is not installed (the dev extra installs it)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    server = mcp.stdio("time", sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])
    model = QueueModel(
        [
            call(
                "convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                id="c1",
            ),
            call("get_current_time", {"timezone": "Mars/Base"}, id="c2"),
            "done",
        ]
    )
    # Its tools declare readOnlyHint: true, so no approval is needed (none could be given).
    agent = AgentBuilder("a", model).mcp([server]).build()
    agent.prompt("go").send_sync()
    assert {t.name for t in model.requests[0].tools} == {"get_current_time", "convert_time"}
    converted = json.loads(tool_results(model.requests[1])[0].content)
    assert converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
    assert converted["time_difference"] == "+9.0h"
    failed = tool_results(model.requests[2])[0]
    assert failed.is_error and "Invalid timezone" in failed.content


_CHILD = """
import asyncio, os, sys
sys.path[:0] = {paths!r}
from anvia_notebook import mcp
async def main():
    server = mcp.stdio("toolbox", {command!r}, {args!r}, env={{"TOOLBOX_TAG": {tag!r}, "TOOLBOX_STARTED": {started!r}}}, cwd={cwd!r})
    connected = await mcp.connect(server)
    pid_tool = next(t for t in connected.tools if t.name == "pid")
    print(await pid_tool.call(pid_tool.parse_args({{}}), None), flush=True)
    {ending}
asyncio.run(main())
"""


#: Shells that start the server and stay its parent, as ``npx`` does: one that SIGTERM ends,
#: and one whose trap of SIGTERM waits until its child (the server, busy) has ended.
WRAPPERS = {
    "shell": "{server}; true",
    "trap": "trap 'echo cleaning up >&2' TERM; {server}",
}


def _child(
    tag: str, ending: str, started: str = "", wrapper: str | None = None
) -> tuple[subprocess.Popen[str], int]:
    """A Python process connected to the toolbox server (``started``: the file its long calls
    say they began in; ``wrapper``: a shell of :data:`WRAPPERS` starts it, or ``"relative"``:
    a script starting Python in ``started``'s folder, given relative to it), and the server's
    process id."""
    command, args, cwd = sys.executable, [TOOLBOX], None
    if wrapper == "relative":  # (a command given relative to the server's working folder)
        cwd = os.path.dirname(started) if started else None
        assert cwd is not None
        os.makedirs(os.path.join(cwd, "bin"), exist_ok=True)
        script = os.path.join(cwd, "bin", "py")  # (a script: a link to a virtualenv's Python
        with open(script, "w") as file:  # would run outside that environment)
            file.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        os.chmod(script, 0o755)
        command = os.path.join("bin", "py")
    elif wrapper is not None:
        server = f"{shlex.quote(sys.executable)} {shlex.quote(TOOLBOX)}"
        command, args = "bash", ["-c", WRAPPERS[wrapper].format(server=server)]
    code = _CHILD.format(
        paths=sys.path,
        command=command,
        args=args,
        tag=tag,
        ending=ending,
        started=started,
        cwd=cwd,
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip().isdigit(), f"the child printed {line!r}"
    return child, int(line)


def _gone(pid: int, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_no_server_process_outlives_an_interpreter_that_exits():
    child, server_pid = _child("exit", "pass  # the interpreter exits with the session open")
    assert child.wait(timeout=60) == 0
    assert _gone(server_pid)
    assert processes_running(TOOLBOX) == [] or server_pid not in processes_running(TOOLBOX)


def test_at_exit_the_mcp_loop_is_closed_after_its_sessions():
    """(Left open, Python sometimes warned "unclosed event loop" as the interpreter ended.)"""
    ending = (
        "from anvia_notebook.mcp import _loop_thread\n"
        "    loop = _loop_thread.mcp_loop()\n"
        "    await asyncio.to_thread(_loop_thread._close_at_exit)  # as atexit calls it\n"
        "    print(loop.is_closed(), flush=True)"
    )
    child, server_pid = _child("closed", ending)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "True"
    assert child.wait(timeout=60) == 0
    assert _gone(server_pid)


@pytest.mark.parametrize(
    ("tool", "wrapper"),
    [("slow", None), ("busy", None), ("busy", "shell"), ("busy", "trap"), ("busy", "relative")],
)
def test_no_busy_server_process_outlives_a_killed_kernel(tool: str, wrapper: str | None, tmp_path):
    """Killed (SIGKILL) while its server runs a long call, one that awaits (``slow``) or one
    that computes and reads nothing meanwhile (``busy``): the server ends with it, not when
    the call ends (an hour later); also a server started by a program that stays its parent
    (``npx``, ``bash -c``), which alone was told (the server kept running), one whose trap of
    SIGTERM waits for the server (neither ended), and one given by a path relative to its
    working folder (started unguarded)."""
    ending = (
        f"tool = next(t for t in connected.tools if t.name == {tool!r})\n"
        "    await tool.call(tool.parse_args({'seconds': 3600}), None)"
    )
    started = tmp_path / "started"
    child, server_pid = _child(f"killed-{tool}", ending, str(started), wrapper)
    try:
        deadline = time.monotonic() + 30
        while not (started.exists() and tool in started.read_text()):  # the call began
            assert time.monotonic() < deadline, "the server never began the call"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert _gone(server_pid), "the server process outlived the killed kernel"
    finally:  # (only if the test failed: nothing is left running)
        child.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(server_pid, signal.SIGKILL)


def test_no_server_process_outlives_a_killed_kernel():
    child, server_pid = _child("killed", "await asyncio.Event().wait()")
    assert alive(server_pid)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert _gone(server_pid)  # its standard input closed: the server ends
    assert server_pid not in processes_running(TOOLBOX)


def test_a_server_command_not_found_is_started_as_given():
    """So that its start error is the one the command itself gives (no guard in between); a
    command relative to the server's working folder is left as given too."""
    from anvia_notebook.mcp._guard import guarded_command

    assert guarded_command("no-such-server-xyz", ["--port", "1"]) == (
        "no-such-server-xyz",
        ["--port", "1"],
    )
    assert guarded_command("./serve.sh", []) == ("./serve.sh", [])
    folder, name = os.path.split(sys.executable)  # (a command found on the server's PATH)
    command, args = guarded_command(name, ["-m", "srv"], {"PATH": folder})
    if sys.platform.startswith("linux"):
        assert command == sys.executable
        assert args[-4:] == [str(os.getpid()), name, "-m", "srv"]
    else:
        assert (command, args) == (name, ["-m", "srv"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_group_left_with_only_an_ended_process_is_not_waited_for():
    """The guard's watcher, once it has ended the server's group, is left for the init
    process to collect; where none does (a container's), closing a server waited the whole
    grace (2 s) for that ended process, at every close."""
    from anvia_notebook.mcp._guard import _group_runs, end_group

    ended = subprocess.Popen(["true"], start_new_session=True)
    deadline = time.monotonic() + 30
    while True:  # ended, not yet waited for
        with open(f"/proc/{ended.pid}/stat", "rb") as stat:
            if stat.read().rpartition(b")")[2].split()[0] == b"Z":
                break
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        os.killpg(ended.pid, 0)  # (the group still exists: the ended process is in it)
        assert not _group_runs(ended.pid)
        asyncio.run(asyncio.wait_for(end_group(ended.pid, grace=60), 30))
    finally:
        ended.wait()


async def test_closing_one_of_two_servers_started_together_leaves_the_other_running():
    """Two servers of the same command connected at once: each was told from the other
    children by its command line, so closing one could end the other's process group (its
    call in progress failed), in about half the tries."""
    for _ in range(5):
        first, second = await asyncio.gather(
            mcp.connect(mcp.stdio("first", sys.executable, [TOOLBOX])),
            mcp.connect(mcp.stdio("second", sys.executable, [TOOLBOX])),
        )
        pids = []
        for connected in (first, second):
            pid_tool = next(t for t in connected.tools if t.name == "pid")
            pids.append(int(await pid_tool.call(pid_tool.parse_args({}), None)))
        slow = next(t for t in second.tools if t.name == "slow")
        going = asyncio.ensure_future(slow.call(slow.parse_args({"seconds": 0.5}), None))
        await first.close()
        await going  # (a server gone during the call raises)
        assert alive(pids[1]) and _gone(pids[0])
        await second.close()
        assert _gone(pids[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_the_watcher_beside_a_server_is_out_of_its_process_group():
    """Where no init process collects ended orphans, the watcher's ended process kept the
    server's group in being, and closing a server busy in a call waited the MCP SDK's whole
    time limit for that group to end (about 2 s more). The watcher is this process's child
    (see the next test), in a group of its own, and collected at close()."""
    before = set(_children_of(os.getpid()))
    connected = await mcp.connect(mcp.stdio("watched", sys.executable, [TOOLBOX]))
    pid_tool = next(t for t in connected.tools if t.name == "pid")
    server = int(await pid_tool.call(pid_tool.parse_args({}), None))
    assert _children_of(server) == []  # (the toolbox starts no process of its own)
    [(watcher, group)] = [
        c for c in _children_of(os.getpid()) if c not in before and c[0] != server
    ]
    assert group == watcher != server
    await connected.close()
    assert _gone(server)
    assert watcher not in dict(_children_of(os.getpid()))  # (ended and collected)


#: A process that collects orphans (a child subreaper, as a container's init process may be
#: though it never collects them), starts and closes a stdio server three times, then prints
#: its children that are left (process id and state: ``Z``, ended and never collected).
SUBREAPER = """
import asyncio, ctypes, os, sys
sys.path[:] = {paths!r}
from anvia_notebook import mcp
from anvia_notebook.mcp._guard import child_processes

assert ctypes.CDLL(None).prctl(36, 1) == 0  # PR_SET_CHILD_SUBREAPER

async def main():
    for n in range(3):
        connected = await mcp.connect(mcp.stdio(f"s{{n}}", sys.executable, [{toolbox!r}]))
        await connected.close()
    left = []
    for pid in sorted(child_processes()):
        try:
            with open(f"/proc/{{pid}}/stat", "rb") as stat:
                left.append((pid, stat.read().rpartition(b")")[2].split()[0].decode()))
        except OSError:
            pass
    print(left, flush=True)

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_starting_and_closing_servers_leaves_no_ended_process_behind():
    """The watcher was a child of the server: once the server ended it went to the init
    process (or the nearest subreaper), and where that one does not collect ended orphans (a
    container whose first process is the notebook server, say), each start of a stdio server
    left one ended process (a zombie) for good."""
    code = SUBREAPER.format(paths=sys.path, toolbox=TOOLBOX)
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


def _children_of(pid: int) -> list[tuple[int, int]]:
    """The processes whose parent is ``pid``: each one's id and process group."""
    children = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
                if int(fields[1]) == pid:
                    children.append((int(name), int(fields[2])))
    return children
