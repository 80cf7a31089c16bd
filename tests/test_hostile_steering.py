"""Steering with hostile input: text that is not valid Unicode (a lone surrogate, as a page's
JSON "\\ud800" or a bad paste gives), through ``steer``, ``RunStore.steer`` and a Message.

Such a text cannot be written to the run store: before, ``steer`` took it, the run's next write
failed and the run went on in memory only (its stored copy stayed "running" forever, not
resumable). Now it is refused with a clear error, and the run stays stored.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from anvia_notebook import AgentBuilder, Message, RunStore, create_tool
from anvia_notebook.models import QueueModel

from helpers import AddInput, call

pytestmark = pytest.mark.timeout(60)

LONE = "split it by region \ud800 please"


def blocking_agent(started: asyncio.Event, release: asyncio.Event, model: Any):
    async def work(args: AddInput, ctx: Any) -> int:
        started.set()
        await release.wait()
        return args.x + args.y

    tool = create_tool(name="work", description="Work a while.", input=AddInput, execute=work)
    return AgentBuilder("worker", model).tool(tool).build()


async def test_a_steered_text_that_is_not_valid_unicode_is_refused_and_the_run_stays_stored(
    store_location, recwarn
):
    started, release = asyncio.Event(), asyncio.Event()
    model = QueueModel([call("work", {"x": 1, "y": 1}), "ok"])
    run = blocking_agent(started, release, model).prompt("work").start()
    await started.wait()
    with pytest.raises(ValueError, match="not valid text"):
        run.steer(LONE)
    with pytest.raises(ValueError, match="not valid text"):
        run.steer(Message.user(LONE))
    with pytest.raises(ValueError, match="not valid text"):
        run.steer([Message.user("fine"), Message.user(LONE)])
    assert run.state.steering == []  # nothing queued, not even the valid message before it
    assert run.steer("by region, please")  # a valid message still goes in
    other = RunStore(store_location)
    try:
        with pytest.raises(ValueError, match="not valid text"):
            other.steer(run.run_id, LONE)
        assert other.queued_steering(run.run_id) == []
    finally:
        other.close()
    release.set()
    response = await run.wait()
    assert response.output == "ok"
    assert [m.content for m in model.requests[1].messages][-1] == "by region, please"
    assert not [w for w in recwarn if "run store" in str(w.message)]
    stored = RunStore(store_location)
    try:
        assert stored.status(run.run_id) == "success"  # not left "running" in the store
        assert stored.get(run.run_id).messages == response.messages
    finally:
        stored.close()


async def test_a_request_refuses_such_a_text_before_the_run_starts(store_path):
    model = QueueModel(["done"])
    request = AgentBuilder("a", model).build().prompt("hi")
    with pytest.raises(ValueError, match="not valid text"):
        request.steer(LONE)
    response = await request.send()
    assert [m.content for m in response.messages] == ["hi", "done"]
