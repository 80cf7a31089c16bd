"""Code a run calls that raises ``SystemExit`` (``sys.exit()``, ``exit()``, a command-line
library's ``parser.error``) ends neither the Python process nor the kernel.

Before, ``SystemExit`` left the run's task and asyncio let it through the event loop: in a
notebook the kernel died (tests/notebook/test_exits_in_kernel.py); in a script, the run's task was
cancelled on the way out and asyncio printed an "unhandled exception during asyncio.run()
shutdown" about it. Now:

- a tool's ``SystemExit`` (the model chose the call, and a tool that runs code the model wrote
  can call ``exit()``) is a failed call the model is told of, and the run goes on;
- anywhere else (a hook, an approval handler, the model's own code) the run ends in error,
  recorded as such, and whoever waits on the run gets ``RunExitedError`` (an ``AnviaError``,
  with the exit ``code``; its cause is the ``SystemExit``). Not the ``SystemExit`` itself: the
  notebook's own waits run in tasks of an event loop, which it would end.
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    RunExitedError,
    RunStore,
    ToolApproval,
    create_hook,
    create_tool,
)
from anvia_notebook.models import FunctionModel, QueueModel

from helpers import call

pytestmark = pytest.mark.timeout(60)


class Code(BaseModel):
    source: str


def _sync_exits(args, ctx):
    sys.exit(3)


async def _async_exits(args, ctx):
    await asyncio.sleep(0)
    raise SystemExit("usage: report [--month M]")


def _runs_the_models_code(args, ctx):
    exec(args.source, {"sys": sys})  # a tool that runs what the model wrote
    return "ran"


@pytest.mark.parametrize(
    ("execute", "source", "told"),
    [
        (_sync_exits, "", "ToolCallError: SystemExit: 3"),
        (_async_exits, "", "ToolCallError: SystemExit: usage: report [--month M]"),
        (_runs_the_models_code, "sys.exit()", "ToolCallError: SystemExit: None"),
    ],
)
def test_a_tool_that_exits_is_a_failed_call_and_the_run_goes_on(
    store_path, execute, source, told
) -> None:
    tool = create_tool(name="python", description="Run code.", input=Code, execute=execute)
    model = QueueModel([call("python", {"source": source}), "The code tried to exit."])
    response = AgentBuilder("a", model).tool(tool).build().prompt("go").send_sync()
    assert response.status == "success" and response.output == "The code tried to exit."
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.is_error and part.content.startswith(told), part.content
    assert "the tool tried to end the Python process" in part.content
    assert RunStore(store_path).get(response.run_id).status == "success"


async def test_the_tools_error_hooks_are_told_of_the_exit(store_path) -> None:
    seen: list[BaseException] = []
    hook = create_hook(on_tool_error=lambda event: seen.append(event.error))
    tool = create_tool(name="python", description="", input=Code, execute=_sync_exits)
    model = QueueModel([call("python", {"source": ""}), "ok"])
    agent = AgentBuilder("a", model).tool(tool).hook(hook).build()
    assert (await agent.prompt("go").send()).output == "ok"
    assert [type(error) for error in seen] == [SystemExit]


def _exits_from_a_hook():
    return create_hook(on_tool_call=lambda event: sys.exit(4))


def _exits_from_the_model():
    return FunctionModel(lambda request: sys.exit(4))


def _agent(where: str):
    tool = create_tool(
        name="python",
        description="",
        input=Code,
        execute=lambda args, ctx: "ran",
        approval=ToolApproval(reason="Check it.") if where == "approval handler" else None,
    )
    model = (
        _exits_from_the_model()
        if where == "model"
        else QueueModel([call("python", {"source": "1"}), "ok"])
    )
    builder = AgentBuilder("a", model).tool(tool)
    if where == "hook":
        builder = builder.hook(_exits_from_a_hook())
    if where == "approval handler":
        builder = builder.approvals(lambda request: sys.exit(4))
    return builder.build()


WHERE = ["hook", "approval handler", "model"]


@pytest.mark.parametrize("where", WHERE)
async def test_an_exit_elsewhere_ends_the_run_in_error_and_reaches_the_caller(
    store_path, where: str
) -> None:
    run = _agent(where).prompt("go").start()
    with pytest.raises(RunExitedError) as raised:
        await run.wait()
    assert raised.value.code == 4 and isinstance(raised.value.__cause__, SystemExit)
    with pytest.raises(RunExitedError):
        run.result()
    assert run.status == "error"
    stored = RunStore(store_path).get(run.run_id)
    # (a hook's exit is named, as any error a hook raises: see test_hooks_that_raise.py)
    named = "\n(raised by the on_tool_call hook " if where == "hook" else ""
    assert stored.status == "error" and stored.error.startswith(str(raised.value) + named)
    assert stored.error.startswith("SystemExit: 4: ")
    # The event loop goes on: the exit did not escape into it.
    await asyncio.sleep(0)
    assert (await _agent_that_answers().prompt("again").send()).output == "fine"


def _agent_that_answers():
    return AgentBuilder("b", QueueModel(["fine"])).build()


@pytest.mark.parametrize("where", WHERE)
def test_send_sync_raises_run_exited_without_asyncio_noise(
    store_path, where: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RunExitedError) as raised:
        _agent(where).prompt("go").send_sync()
    assert raised.value.code == 4
    captured = capfd.readouterr()
    assert "unhandled exception" not in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize("callback", ["on_tool_result", "on_tool_error"])
async def test_an_exit_from_a_hook_told_of_a_result_is_logged_like_its_other_failures(
    store_path, callback: str
) -> None:
    """Such a hook's failure is logged and the run goes on (the call has its result already):
    an exit from it too, as for any other exception it raises."""
    execute = _sync_exits if callback == "on_tool_error" else (lambda args, ctx: "ran")
    tool = create_tool(name="python", description="", input=Code, execute=execute)
    model = QueueModel([call("python", {"source": "1"}), "ok"])
    hook = create_hook(**{callback: lambda event: sys.exit(5)})
    response = await AgentBuilder("a", model).tool(tool).hook(hook).build().prompt("go").send()
    assert response.status == "success" and response.output == "ok"
    assert RunStore(store_path).get(response.run_id).status == "success"


def test_a_done_callback_that_exits_is_logged_and_the_event_loop_goes_on(
    store_path, caplog: pytest.LogCaptureFixture
) -> None:
    """A done callback runs on the run's event loop (in a notebook, the kernel's): before, an
    exit from it went through the loop and ended ``asyncio.run`` (in a kernel, the kernel)."""

    def callback(run) -> None:
        sys.exit(6)

    async def main() -> str:
        run = AgentBuilder("a", QueueModel(["done"])).build().prompt("go").start()
        run.add_done_callback(callback)
        response = await run.wait()
        await asyncio.sleep(0)  # the loop runs the run's done callbacks
        return response.output

    assert asyncio.run(main()) == "done"
    assert "A run done-callback failed" in caplog.text
