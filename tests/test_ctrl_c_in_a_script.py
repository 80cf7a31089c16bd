"""Ctrl-C in a script stops the run that ``send_sync()`` waits for, cleanly.

Before, the script's ``KeyboardInterrupt`` came with asyncio's "unhandled exception during
asyncio.run() shutdown" and a ``PromptCancelledError`` traceback on the error output, and the
run was recorded as stopped because "The caller was cancelled." Now the run ends (recorded as
interrupted with Ctrl-C) before ``send_sync()`` raises ``KeyboardInterrupt``, as a script's
Ctrl-C does, and nothing else is printed.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from child_processes import child_environ

from anvia_notebook import RunStore

pytestmark = pytest.mark.timeout(60)

SCRIPT = r"""
import asyncio, sys, threading
from pydantic import BaseModel
from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

class Order(BaseModel):
    order_id: str

never = threading.Event()

def sync_work(args, ctx):
    print("working", flush=True)
    never.wait(120)
    return "done"

async def async_work(args, ctx):
    print("working", flush=True)
    await asyncio.sleep(120)
    return "done"

work = {"sync": sync_work, "async": async_work}[sys.argv[1]]
tool = create_tool(name="work", description="Work.", input=Order, execute=work)
model = QueueModel([ModelResponse(tool_calls=[ToolCall(id="c1", name="work", arguments={"order_id": "A-1"})]), "ok"])
agent = AgentBuilder("a", model).tool(tool).build()
try:
    agent.prompt("go").send_sync()
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    raise
"""


@pytest.mark.parametrize("tool", ["sync", "async"])
def test_ctrl_c_stops_the_run_and_says_nothing_more(store_path, tool: str) -> None:
    env = child_environ()
    env["ANVIA_NOTEBOOK_STORE"] = str(store_path)
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, tool],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # (a child of a process that ignores Ctrl-C would ignore it too)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "working\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert child.returncode != 0
    assert out == "KeyboardInterrupt\n"
    assert "unhandled exception" not in err and "PromptCancelledError" not in err, err
    assert err.rstrip().endswith("KeyboardInterrupt"), err
    (run,) = RunStore(store_path).runs()
    assert run.status == "cancelled"
    assert RunStore(store_path).get(run.run_id).cancel_reason == "Interrupted (Ctrl-C)."


async def test_a_cancelled_send_waits_for_the_runs_end_but_not_twice(store_path) -> None:
    """``await request.send()`` cancelled (a timeout, Ctrl-C) returns once the run has recorded
    its end; cancelled again while the run's end hangs in user code, it does not wait."""
    import asyncio

    from anvia_notebook import AgentBuilder, create_hook
    from anvia_notebook.models import FunctionModel

    started = asyncio.Event()
    ending = asyncio.Event()
    release = asyncio.Event()

    async def slow(request):
        started.set()
        await asyncio.Event().wait()

    async def hangs(event):
        ending.set()
        await release.wait()

    agent = AgentBuilder("a", FunctionModel(slow)).hook(create_hook(on_run_error=hangs)).build()
    request = agent.prompt("go")
    sending = asyncio.ensure_future(request.send())
    await started.wait()
    sending.cancel()
    await ending.wait()
    assert not sending.done()  # the run is ending (its error hook runs): the caller waits
    sending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sending
    release.set()
    run = request._run
    await run.ended()
    assert run.status == "cancelled"


def test_a_run_left_running_when_a_script_ends_says_nothing_more(store_path) -> None:
    """A script that stops reading ``stream()`` (``break``) and ends: asyncio.run() stops the
    run that was still ending. Before, it printed "unhandled exception during asyncio.run()
    shutdown" with the run's PromptCancelledError; now the run is recorded as stopped, quietly."""
    script = r'''
import asyncio
from anvia_notebook import AgentBuilder
from anvia_notebook.models import FunctionModel

async def slow(request):
    await asyncio.Event().wait()

agent = AgentBuilder("a", FunctionModel(slow)).build()

async def main():
    async for event in agent.prompt("go").stream():
        break
    print("left the stream", flush=True)

asyncio.run(main())
'''
    env = child_environ()
    env["ANVIA_NOTEBOOK_STORE"] = str(store_path)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "left the stream\n"
    assert done.stderr == ""
    (run,) = RunStore(store_path).runs()
    assert run.status == "cancelled"
