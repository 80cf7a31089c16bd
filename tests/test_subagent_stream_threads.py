"""A sub-agent's streamed text reaches a subscriber of the top-level run that joins from another
thread (a notebook view, ``RunHandle``) whole: its replay holds the sub-agent's text so far, the
rest reaches it live, nothing lost and nothing twice, at any depth."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest

from anvia_notebook import AgentBuilder
from anvia_notebook.models import FunctionModel, ModelResponse, TextDelta, ToolCall

pytestmark = pytest.mark.timeout(120)

PIECES = [f"w{i} " for i in range(6_000)]
WHOLE = "".join(PIECES)


async def _write(_request: object) -> Any:
    for index, piece in enumerate(PIECES):
        yield TextDelta(delta=piece)
        if index % 200 == 0:
            await asyncio.sleep(0)


def _asks(tool: str) -> FunctionModel:
    """Calls ``tool`` once, then answers with what it said."""

    def respond(request: Any) -> ModelResponse:
        last = request.messages[-1]
        if last.role == "tool":
            return ModelResponse(text="ok")
        return ModelResponse(tool_calls=[ToolCall(id="c1", name=tool, arguments={"prompt": "go"})])

    return FunctionModel(respond)


def _lead(depth: int) -> Any:
    agent = AgentBuilder("writer", FunctionModel(_write)).build()
    for level in range(depth - 1):
        agent = AgentBuilder(f"middle{level}", _asks("ask")).tool(agent.as_tool(name="ask")).build()
    return AgentBuilder("lead", _asks("ask")).tool(agent.as_tool(name="ask")).build()


def _nested_text(log: list[Any]) -> str:
    """The writer's text in ``log`` (inside one or more ``agent_tool_event`` wrappers)."""
    out = []
    for event in log:
        agent = None
        while event.type == "agent_tool_event":
            agent, event = event.agent_id, event.event
        if agent == "writer" and event.type == "text_delta":
            out.append(event.delta)
    return "".join(out)


@pytest.mark.parametrize("depth", [1, 2])
async def test_subscribers_joining_from_a_thread_get_the_sub_agent_s_text_once(depth: int) -> None:
    """Many subscribers join from another thread while the sub-agent streams flat out. A race
    here shows only now and then, so this guard can pass on broken code; it never fails on
    sound code."""
    run = _lead(depth).prompt("go").store(None).create_run()
    logs: list[list[Any]] = []
    stop = threading.Event()
    started = threading.Event()

    def join() -> None:
        started.wait(10)
        while not stop.is_set() and len(logs) < 300:
            log: list[Any] = []
            if len(logs) % 2:
                run.subscribe(log.append)
            else:
                run.subscribe(log.append, on_text=lambda _turn, _delta: None)
            logs.append(log)

    def on_event(event: Any) -> None:
        if event.type == "agent_tool_event":
            started.set()

    run.subscribe(on_event)
    joiner = threading.Thread(target=join)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads take turns as often as they can
    joiner.start()
    try:
        run.start()
        await run.wait()
    finally:
        stop.set()
        joiner.join(10)
        sys.setswitchinterval(switch)
    words = sorted(WHOLE.split())
    checked = 0
    for log in logs:
        if not log:  # subscribed after the run's last event
            continue
        text = _nested_text(log)
        assert sorted(text.split()) == words, (len(text), len(WHOLE))
        checked += 1
    assert checked
