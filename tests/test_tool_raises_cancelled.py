"""A tool that raises ``CancelledError`` on its own has failed; the run was not stopped.

A tool that awaits something another piece of code cancelled (a future of a library, a task it
started) gets ``asyncio.CancelledError`` although nobody stopped the run. Before, the run ended
as "Stopped by the user." The model is now told the tool failed, and the run goes on; a real
Stop while a tool runs still stops the run (``test_cancel_and_timeouts.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, PromptCancelledError, create_tool
from anvia_notebook.models import QueueModel

from helpers import call

pytestmark = pytest.mark.timeout(60)


class Nothing(BaseModel):
    pass


async def _awaits_a_cancelled_future(args, ctx):
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    return await future


async def _awaits_a_cancelled_task(args, ctx):
    task = asyncio.ensure_future(asyncio.sleep(30))
    await asyncio.sleep(0)
    task.cancel()
    return await task


def _sync_raises(args, ctx):
    raise concurrent.futures.CancelledError()


def _sync_raises_asyncio_error(args, ctx):
    raise asyncio.CancelledError()


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="before Python 3.11 a task cannot tell who cancelled it"
)
@pytest.mark.parametrize(
    "execute",
    [
        _awaits_a_cancelled_future,
        _awaits_a_cancelled_task,
        _sync_raises,
        _sync_raises_asyncio_error,
    ],
)
async def test_the_model_is_told_the_tool_failed_and_the_run_goes_on(execute):
    tool = create_tool(name="fetch", description="", input=Nothing, execute=execute)
    model = QueueModel([call("fetch"), "The fetch failed."])
    response = await AgentBuilder("a", model).tool(tool).build().prompt("go").send()
    assert response.status == "success" and response.output == "The fetch failed."
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.is_error and part.content.startswith("ToolCallError: ")


async def test_a_stop_while_the_tool_awaits_still_stops_the_run():
    started = asyncio.Event()

    async def waits(args, ctx):
        started.set()
        await asyncio.Event().wait()

    tool = create_tool(name="fetch", description="", input=Nothing, execute=waits)
    run = AgentBuilder("a", QueueModel([call("fetch"), "never"])).tool(tool).build()
    run = run.prompt("go").start()
    await asyncio.wait_for(started.wait(), 5)
    run.cancel("enough")
    with pytest.raises(PromptCancelledError, match="enough"):
        await run.wait()
    assert run.status == "cancelled"


async def test_a_sync_call_stopped_while_it_waited_for_a_thread_is_not_said_to_have_run(
    monkeypatch,
):
    """Two sync calls, one worker thread, Stop while the second waits for it: the model was
    told the second "was running" and might have done things, though it never ran."""
    import threading

    from anvia_notebook import tool
    from anvia_notebook import tools as tools_module
    from anvia_notebook._sync_pool import SyncToolExecutor
    from anvia_notebook.models import ModelResponse, ToolCall

    monkeypatch.setattr(tools_module, "SYNC_TOOL_EXECUTOR", SyncToolExecutor(max_workers=1))
    # (a grace for the first: it stays its thread's while the second's Stop is handled)
    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 0.05)
    started, release = threading.Event(), threading.Event()
    ran = []

    @tool
    def blocker(n: int) -> str:
        """Block."""
        ran.append(n)
        started.set()
        release.wait(30)
        return "done"

    both = ModelResponse(
        tool_calls=[
            ToolCall(id="c1", name="blocker", arguments={"n": 1}),
            ToolCall(id="c2", name="blocker", arguments={"n": 2}),
        ]
    )
    agent = AgentBuilder("a", QueueModel([both, "never"])).tool(blocker).build()
    run, told = await _stopped_while_held(agent, started, release)
    assert ran == [1]
    assert told["c1"].startswith("ToolCallStopped: ")  # it ran, and may have done things
    assert told["c2"] == "ToolCallCancelled: the run was stopped before this tool call finished."
    assert [e.tool_call_id for e in run.events if e.type == "tool_result"] == ["c1"]


async def test_an_async_tool_stopped_while_a_tool_it_called_waited_for_a_thread_ran(monkeypatch):
    """The async tool had done things, then awaited a sync tool's ``call`` still waiting for a
    worker thread: the model was told it never finished (as if it had not run)."""
    import threading

    from anvia_notebook import tool
    from anvia_notebook import tools as tools_module
    from anvia_notebook._sync_pool import SyncToolExecutor
    from anvia_notebook.models import ModelResponse, ToolCall

    monkeypatch.setattr(tools_module, "SYNC_TOOL_EXECUTOR", SyncToolExecutor(max_workers=1))
    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 0.05)
    started, release = threading.Event(), threading.Event()
    logging = asyncio.Event()
    effects = []

    @tool
    def blocker() -> str:
        """Hold the only worker thread."""
        started.set()
        release.wait(30)
        return "done"

    @tool
    def write_log(text: str) -> str:
        """Write a line."""
        return "ok"

    @tool
    async def transfer(amount: int) -> str:
        """Move money, then log it."""
        effects.append(f"moved {amount}")
        logging.set()  # (the log's call is queued before this task next gives way)
        return await write_log.call({"text": "moved"})

    both = ModelResponse(
        tool_calls=[
            ToolCall(id="c1", name="blocker", arguments={}),
            ToolCall(id="c2", name="transfer", arguments={"amount": 5}),
        ]
    )
    agent = AgentBuilder("a", QueueModel([both, "never"])).tools([blocker, transfer]).build()
    _, told = await _stopped_while_held(agent, started, release, logging)
    assert effects == ["moved 5"]
    assert told["c2"].startswith(
        "ToolCallStopped: the run was stopped while transfer was running; it was cancelled"
    )


async def _stopped_while_held(
    agent: Any, started: Any, release: Any, *also: asyncio.Event
) -> tuple[Any, dict[str, str]]:
    """Run ``agent`` (two calls at once) until ``started`` (a ``threading.Event`` its blocking
    tool sets) and ``also`` are set, Stop it, then ``release`` the tool: the run, and what its
    model was told of each call by id."""
    run = agent.prompt("go").store(None).with_tool_concurrency(2).start()
    try:
        assert await asyncio.to_thread(started.wait, 30)
        for event in also:
            await asyncio.wait_for(event.wait(), 30)
        run.cancel("Stop")
        with pytest.raises(PromptCancelledError):
            await run.wait()
    finally:
        release.set()
    told = {r.tool_call_id: r.content for m in run.state.messages for r in m.tool_results}
    return run, told
