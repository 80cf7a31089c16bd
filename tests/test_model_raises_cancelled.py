"""A model whose call raises ``CancelledError`` on its own has failed; the run was not stopped.

A provider's client that awaits something another piece of code cancelled (a future of a shared
connection pool, a task it started) raises ``asyncio.CancelledError`` although nobody stopped
the run. Before, the run ended as "Stopped by the user." with no error anywhere. It now fails
with a ``ModelError`` that says so (the call is not tried again: nothing says it would go
better), traced and stored as a failure; a real Stop while the model streams still stops the
run (``test_cancel_and_timeouts.py``).
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from anvia_notebook import AgentBuilder, ModelError, PromptCancelledError, RunStore
from anvia_notebook.models import FunctionModel, TextDelta

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(
        sys.version_info < (3, 11), reason="before Python 3.11 a task cannot tell who cancelled it"
    ),
]


async def _awaits_a_cancelled_future(request):
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    return await future


async def _streams_then_awaits_a_cancelled_task(request):
    yield TextDelta(delta="Looking")
    task = asyncio.ensure_future(asyncio.sleep(30))
    await asyncio.sleep(0)
    task.cancel()
    await task


@pytest.mark.parametrize(
    "respond", [_awaits_a_cancelled_future, _streams_then_awaits_a_cancelled_task]
)
async def test_the_run_fails_with_a_model_error_not_a_stop(respond, tmp_path):
    agent = AgentBuilder("a", FunctionModel(respond)).build()
    run = agent.prompt("hi").store(tmp_path / "runs.db").create_run()
    run.start()
    with pytest.raises(ModelError, match="CancelledError") as raised:
        await run.wait()
    assert not isinstance(raised.value, PromptCancelledError)
    assert raised.value.retryable is False
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    assert run.state.status == "error"
    assert run.state.cancel_reason is None
    assert [e.type for e in run.events][-1] == "error"
    assert run.trace.status == "error"
    [call] = run.trace.turns
    assert "CancelledError" in (call.error or "") and call.attempts == 1
    assert len(agent.model.requests) == 1  # not tried again
    stored = RunStore(tmp_path / "runs.db").get(run.run_id)
    assert stored.status == "error" and "CancelledError" in (stored.error or "")


async def test_the_caller_s_stop_while_the_model_streams_still_stops_the_run():
    started = asyncio.Event()

    async def slow(request):
        started.set()
        await asyncio.sleep(30)
        return "late"

    run = AgentBuilder("a", FunctionModel(slow)).build().prompt("hi").store(None).create_run()
    run.start()
    await started.wait()
    run.cancel("Stop clicked.")
    with pytest.raises(PromptCancelledError, match="Stop clicked"):
        await run.wait()
    assert run.state.status == "cancelled"
