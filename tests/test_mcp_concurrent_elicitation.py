"""Concurrent calls on one MCP session: each server question (elicitation) reaches the call that
caused it, on stdio, streamable HTTP and SSE.

The ``mcp`` SDK does not say which call an elicitation belongs to, so a call that can ask someone
runs alone on its session (``anvia_notebook/mcp/_call_slots.py``); calls with nobody to ask run
alongside each other.
"""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace

import pytest
from mcp_helpers import TOOLBOX, serve_toolbox

from anvia_notebook import AgentBuilder, CallbackHumanInput, mcp
from anvia_notebook.mcp._call_slots import CallSlots
from anvia_notebook.mcp._connection import Connection
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

from helpers import call, tool_results


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    asyncio.run(mcp.close_all())


@pytest.fixture(scope="module")
def http_url():
    yield from serve_toolbox("http")


@pytest.fixture(scope="module")
def sse_url():
    yield from serve_toolbox("sse")


def _server(transport: str, request: pytest.FixtureRequest, name: str = "names"):
    if transport == "stdio":
        return mcp.stdio(name, sys.executable, [TOOLBOX])
    url = request.getfixturevalue(f"{transport}_url")
    factory = mcp.http if transport == "http" else mcp.sse
    return factory(name, url, allow_private_network=True)


def _person(name: str, asked: list[str]):
    """Someone who answers every question with ``name`` (and notes who was asked)."""

    async def ask(questions):
        asked.append(name)
        answer = SimpleNamespace(question_id=questions[0].id, choice=None, answer=name)
        return SimpleNamespace(status="answered", answers=[answer])

    return ask


@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
def test_two_calls_made_together_each_get_their_own_persons_answer(transport, request):
    """Both calls are made at once, each with its own person to ask: each server question
    reaches the person of the call that asked it (before, both went to the later call's)."""
    config = _server(transport, request)

    async def main():
        connection = Connection(config)
        asked: list[str] = []
        try:
            first, second = await asyncio.wait_for(
                asyncio.gather(
                    connection.call_tool("ask_name", {"label": "first"}, 30, _person("Ada", asked)),
                    connection.call_tool("ask_name", {"label": "second"}, 30, _person("Bob", asked)),
                ),
                60,
            )
        finally:
            await connection.close()
        assert first.content[0].text == "first: Ada"
        assert second.content[0].text == "second: Bob"
        assert asked == ["Ada", "Bob"]  # one after the other, in the order they were made

    asyncio.run(main())


def test_two_runs_on_one_server_each_answer_their_own_question():
    """Two agents share one session (one server per kernel); each run's person is asked its
    own call's question, and each record is on its own run and call."""
    server = mcp.stdio("shared-names", sys.executable, [TOOLBOX])

    def agent(label: str, name: str):
        model = QueueModel([call("ask_name", {"label": label}, id=f"call-{label}"), "done"])

        def ask(request):
            assert request.tool_call_id == f"call-{label}"
            return [{"questionId": "name", "answer": name, "custom": True}]

        built = AgentBuilder(label, model).mcp([server]).human_input(CallbackHumanInput(ask=ask)).build()
        return built, model

    (first, first_model), (second, second_model) = agent("first", "Ada"), agent("second", "Bob")

    async def main():
        return await asyncio.wait_for(
            asyncio.gather(first.prompt("go").send(), second.prompt("go").send()), 120
        )

    first_response, second_response = asyncio.run(main())
    assert tool_results(first_model.requests[1])[0].content == "first: Ada"
    assert tool_results(second_model.requests[1])[0].content == "second: Bob"
    for response, label in ((first_response, "first"), (second_response, "second")):
        record = response.trace.tool_calls[0].question
        assert (record.status, record.tool_call_id) == ("answered", f"call-{label}")


def test_calls_with_nobody_to_ask_still_run_together():
    """Calls whose questions would be declined anyway are not made to wait for each other."""
    config = mcp.stdio("sleepers", sys.executable, [TOOLBOX])

    async def main():
        connection = Connection(config)
        try:
            calls = asyncio.gather(*(connection.call_tool("slow", {"seconds": 1.0}, 30) for _ in range(3)))
            most = 0
            while not calls.done():  # how many are with the server at once
                most = max(most, len(connection._calls))
                await asyncio.sleep(0.01)
            results = await asyncio.wait_for(calls, 60)
        finally:
            await connection.close()
        assert [r.content[0].text for r in results] == ["slept 1 s"] * 3
        assert most == 3  # together, not one after the other

    asyncio.run(main())


async def test_call_slots_admit_first_come_first_served():
    slots = CallSlots()
    order: list[str] = []
    release = {name: asyncio.Event() for name in ("s1", "s2", "x1", "s3", "x2")}

    async def hold(name: str, exclusive: bool):
        async with slots.hold(exclusive):
            order.append(name)
            await release[name].wait()

    async def settle():
        for _ in range(5):
            await asyncio.sleep(0)

    tasks = {}
    for name, exclusive in (("s1", False), ("s2", False), ("x1", True), ("s3", False), ("x2", True)):
        tasks[name] = asyncio.ensure_future(hold(name, exclusive))
        await settle()
    assert order == ["s1", "s2"]  # shared calls together; x1 waits, and s3 waits behind it
    release["s1"].set()
    await settle()
    assert order == ["s1", "s2"]
    release["s2"].set()
    await settle()
    assert order == ["s1", "s2", "x1"]  # alone
    tasks["x2"].cancel()  # given up while waiting: leaves the queue
    await settle()
    release["x1"].set()
    await settle()
    assert order == ["s1", "s2", "x1", "s3"]
    release["s3"].set()
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    assert tasks["x2"].cancelled()
    async with slots.hold(True):  # nothing is left held
        pass


def _ask_name_agent(server, label: str, ask):
    model = QueueModel([call("ask_name", {"label": label}, id=f"call-{label}"), "done"])
    agent = AgentBuilder(label, model).mcp([server]).human_input(CallbackHumanInput(ask=ask)).build()
    return agent, model


async def _queued(connection: Connection, count: int = 1) -> None:
    """Until ``count`` calls wait for their turn on the connection."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while len(connection._slots._waiting) < count:
        assert loop.time() < deadline, "no call waited for its turn"
        await asyncio.sleep(0.01)


def test_a_call_waiting_its_turn_has_no_time_limit_yet_and_stop_ends_the_wait():
    server = mcp.stdio("turns", sys.executable, [TOOLBOX], timeout=0.3)

    async def main():
        connection = (await mcp.connect(server))._connection
        assert connection is not None
        first_asked, go_on = asyncio.Event(), asyncio.Event()

        async def first_person(request):
            first_asked.set()
            await go_on.wait()
            return [{"questionId": "name", "answer": "Ada", "custom": True}]

        def second_person(request):
            return [{"questionId": "name", "answer": "Bob", "custom": True}]

        first, first_model = _ask_name_agent(server, "first", first_person)
        second, second_model = _ask_name_agent(server, "second", second_person)
        third, _ = _ask_name_agent(server, "third", second_person)
        first_run = first.prompt("go").start()
        await asyncio.wait_for(first_asked.wait(), 60)
        second_run, third_run = second.prompt("go").start(), third.prompt("go").start()
        await _queued(connection, 2)
        third_run.cancel("not now")  # Stop while it waits for its turn
        with pytest.raises(Exception, match="not now"):
            await asyncio.wait_for(third_run.wait(), 30)
        await asyncio.sleep(0.6)  # longer than the time limit, while the second waits its turn
        go_on.set()
        await asyncio.wait_for(asyncio.gather(first_run.wait(), second_run.wait()), 60)
        assert tool_results(first_model.requests[1])[0].content == "first: Ada"
        assert tool_results(second_model.requests[1])[0].content == "second: Bob"
        assert not connection._slots._waiting and not connection._calls

    asyncio.run(main())


def test_a_runs_calls_with_nobody_to_ask_run_together():
    """Through a run with no human input (before, the run always offered a way to ask, so its
    calls on one server went one at a time)."""
    server = mcp.stdio("run-sleepers", sys.executable, [TOOLBOX])
    slow = [ToolCall(id=f"c{i}", name="slow", arguments={"seconds": 1.0}) for i in range(3)]
    agent = AgentBuilder("a", QueueModel([ModelResponse(tool_calls=slow), "done"])).mcp([server])
    built = agent.build()

    async def main():
        run = built.prompt("go").with_tool_concurrency(3).store(None).start()
        most = 0
        while not run.done:  # how many are with the server at once (connected on the run)
            tool = built.get_tool("slow")
            most = max(most, len(tool.connection._calls) if tool is not None else 0)
            await asyncio.sleep(0.01)
        await asyncio.wait_for(run.wait(), 60)
        return most

    assert asyncio.run(main()) == 3
