"""Code a run calls that raises ``SystemExit`` does not end the kernel (ipykernel 7, and 6 when
its env exists), nor does one that raises ``KeyboardInterrupt``.

Before, a tool that called ``sys.exit()`` (or ran code the model wrote that called ``exit()``)
in a run shown with ``show()`` ended the kernel: the exit left the run's task and asyncio let it
through the kernel's event loop. Now the call fails, the model is told, and the kernel goes on;
an exit from a hook or an approval handler ends only the run, in error. The runtime's side is in
tests/test_code_that_exits.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_client import KERNELS, Kernel, started_kernel

pytestmark = pytest.mark.timeout(180)

SETUP = r"""
import sys
from pydantic import BaseModel
from anvia_notebook import AgentBuilder, create_hook, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

class Code(BaseModel):
    source: str

def run_code(args, ctx):
    exec(args.source, {"sys": sys})
    return "ran"

python = create_tool(name="python", description="Run code.", input=Code, execute=run_code)

def agent(source, *, hook=None):
    model = QueueModel([
        ModelResponse(tool_calls=[ToolCall(id="c1", name="python", arguments={"source": source})]),
        "The code tried to exit.",
    ])
    builder = AgentBuilder("coder", model).tool(python)
    if hook is not None:
        builder = builder.hook(hook)
    return builder.build()

# How the shown run ended: its status, the error's type and text, and the tools' results.
async def ended(handle):
    try:
        await handle
        error = None
    except Exception as failure:
        error = [type(failure).__name__, str(failure)]
    tools = [entry for entry in handle.transcript if entry["kind"] == "tool"]
    return [handle.status, error, [entry.get("result") for entry in tools]]
"""


@pytest.fixture(params=KERNELS)
def kernel(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    yield from started_kernel(request.param, tmp_path, SETUP)


def _printed(kernel: Kernel, code: str) -> object:
    """Run ``code`` (which prints ``@@`` and JSON) in a new cell and return the JSON's value."""
    cell = kernel.execute(code)
    reply = kernel.reply(cell, timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"].get("traceback")
    return json.loads(kernel.printed(cell, "@@").split("@@", 1)[1])


def _ended(kernel: Kernel) -> list:
    """How the run shown as ``h`` ended (waited for in the kernel): see SETUP's ``ended``."""
    return _printed(kernel, "import json; print('@@', json.dumps(await ended(h)))")


def test_a_tool_that_calls_exit_in_a_shown_run_leaves_the_kernel_running(kernel: Kernel) -> None:
    cell = kernel.execute("h = agent('exit(3)').prompt('run it').show()")
    assert kernel.reply(cell)["content"]["status"] == "ok"
    status, error, (told,) = _ended(kernel)
    assert status == "success" and error is None
    assert told.startswith("ToolCallError: SystemExit: 3 (the tool tried to end"), told
    assert kernel.km.is_alive()


@pytest.mark.parametrize("mode", ["show", "send_sync"])
def test_a_hook_that_calls_exit_ends_only_the_run(kernel: Kernel, mode: str) -> None:
    hook = "create_hook(on_tool_call=lambda event: sys.exit(4))"
    if mode == "show":
        cell = kernel.execute(f"h = agent('1', hook={hook}).prompt('run it').show()")
        assert kernel.reply(cell)["content"]["status"] == "ok"
        status, error, _results = _ended(kernel)
        assert status == "error" and error[0] == "RunExitedError"
        assert error[1].startswith("SystemExit: 4: ")
    else:
        _send_sync_fails_with(kernel, f"agent('1', hook={hook})", "RunExitedError")
    _answers_later_cells(kernel)


@pytest.mark.parametrize("mode", ["show", "send_sync"])
def test_a_tool_that_raises_keyboard_interrupt_stops_only_the_run(
    kernel: Kernel, mode: str
) -> None:
    """Before, the interrupt left the shown run's task and ended the kernel's event loop: no
    later cell was answered (tests/test_code_that_interrupts.py has the runtime's side)."""
    source = "raise KeyboardInterrupt"
    if mode == "show":
        cell = kernel.execute(f"h = agent({source!r}).prompt('run it').show()")
        assert kernel.reply(cell)["content"]["status"] == "ok"
        status, error, (told,) = _ended(kernel)
        assert status == "cancelled" and error[0] == "PromptCancelledError"
        assert "KeyboardInterrupt was raised inside the run" in error[1]
        assert told.startswith("ToolCallStopped"), told
    else:
        _send_sync_fails_with(kernel, f"agent({source!r})", "PromptCancelledError")
    _answers_later_cells(kernel)


def _send_sync_fails_with(kernel: Kernel, agent: str, error: str) -> None:
    """A cell ``<agent>.prompt('run it').send_sync()`` fails with ``error`` (the kernel lives)."""
    cell = kernel.execute(f"{agent}.prompt('run it').send_sync()", stop_on_error=False)
    reply = kernel.reply(cell, timeout=60)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == error


def _answers_later_cells(kernel: Kernel) -> None:
    assert _printed(kernel, "print('@@', 1 + 1)") == 2
    assert kernel.km.is_alive()
