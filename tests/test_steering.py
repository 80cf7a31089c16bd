"""Steering a run while it goes: Anvia's ``PromptRequest.steer`` tests, translated, and ours.

Anvia's streaming tests pause its pulled event stream at ``turn_end`` and steer there; here
events are pushed, so the same moment is a subscriber (called synchronously as the event is
emitted) or an ``on_turn_end`` hook; and a reader of ``request.stream()`` that steers as it sees
``turn_end`` (the run lets its readers catch up before it decides to end).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    Message,
    PromptCancelledError,
    ToolApproval,
    create_hook,
)
from anvia_notebook.models import ModelError, QueueModel, StreamingQueueModel, TextDelta

from helpers import call, make_add_tool, make_gated_tool

pytestmark = pytest.mark.timeout(30)


def user_texts(request: Any) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


def conversation(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


#: The events of the turn a steered message adds, to the run's end.
ANOTHER_TURN = ["turn_start", "generation_start", "text_delta", "turn_end", "final"]


# -- Anvia's prompt-request.test.ts ---------------------------------------------------------------


async def test_send_consumes_steering_queued_before_no_tool_finalization():
    model = QueueModel(["first", "second"])
    steered: list[bool] = []
    request: Any = None

    def on_turn_end(event: Any) -> None:
        if event.turn == 1:
            steered.append(request.steer("revise"))

    agent = AgentBuilder("test-agent", model).hook(create_hook(on_turn_end=on_turn_end)).build()
    request = agent.prompt("hello").store(None)
    result = await request.send()

    assert steered == [True]
    assert result.output == "second"
    assert len(model.requests) == 2
    assert model.requests[1].messages[-1] == Message.user("revise")
    assert conversation(result.messages) == [
        ("user", "hello"),
        ("assistant", "first"),
        ("user", "revise"),
        ("assistant", "second"),
    ]


async def test_rejects_steering_after_final_error_and_cancel():
    final_model = QueueModel(["done"])
    final_request = AgentBuilder("test-agent", final_model).build().prompt("hello").store(None)
    result = await final_request.send()
    final_messages = list(result.messages)
    assert final_request.steer("late") is False
    assert result.messages == final_messages
    assert len(final_model.requests) == 1

    error_request = AgentBuilder("test-agent", QueueModel([])).build().prompt("hello").store(None)
    with pytest.raises(ModelError):
        await error_request.send()
    assert error_request.steer("late") is False

    cancel_agent = (
        AgentBuilder("test-agent", QueueModel([]))
        .hook(create_hook(on_run_start=lambda event: event.run.cancel("stop")))
        .build()
    )
    cancel_request = cancel_agent.prompt("hello").store(None)
    with pytest.raises(PromptCancelledError):
        await cancel_request.send()
    assert cancel_request.steer("late") is False


# -- Anvia's streaming.test.ts --------------------------------------------------------------------


async def test_continues_when_steering_arrives_before_a_no_tool_response_finalizes():
    model = StreamingQueueModel([[TextDelta(delta="first")], [TextDelta(delta="second")]])
    request = AgentBuilder("test-agent", model).build().prompt("hi").store(None)
    run = request.create_run()
    seen: list[Any] = []

    def on_event(event: Any) -> None:
        seen.append(event)
        if event.type == "turn_end" and event.turn == 1:
            assert request.steer("revise") is True

    run.subscribe(on_event)
    run.start()
    await run.wait()

    types = [event.type for event in seen]
    first_end = types.index("turn_end")
    assert types[: first_end + 1] == ["turn_start", "generation_start", "text_delta", "turn_end"]
    assert types[first_end + 1 :] == ["steering_message", *ANOTHER_TURN]
    steering = seen[first_end + 1]
    assert steering.turn == 2 and steering.message == Message.user("revise")
    assert seen[first_end + 2].turn == 2
    assert len(model.requests) == 2
    assert model.requests[1].messages[-1] == Message.user("revise")
    final = seen[-1]
    assert final.output == "second"
    assert conversation(final.messages) == [
        ("user", "hi"),
        ("assistant", "first"),
        ("user", "revise"),
        ("assistant", "second"),
    ]


async def test_appends_steering_after_tool_results_before_the_next_completion_turn():
    tool = make_gated_tool("slow_add", "Add slowly")
    started, release = tool.started, tool.release
    model = QueueModel([call("slow_add", {"x": 2, "y": 5}), "done"])
    request = AgentBuilder("test-agent", model).tool(tool).build().prompt("add").store(None)
    events: list[Any] = []

    async def collect() -> None:
        async for event in request.stream():
            events.append(event)

    task = asyncio.create_task(collect())
    await started.wait()
    assert request.steer("also explain") is True
    release.set()
    await task

    assert events[-1].type == "final" and events[-1].output == "done"
    assert len(model.requests) == 2
    last_three = model.requests[1].messages[-3:]
    assert [m.role for m in last_three] == ["assistant", "tool", "user"]
    assert last_three[0].tool_calls[0].name == "slow_add"
    assert last_three[1].tool_results[0].content == "7"
    assert last_three[2] == Message.user("also explain")
    # The event comes after the tool's result, before the next turn starts.
    types = [event.type for event in events]
    assert types.index("tool_result") < types.index("steering_message")
    assert types.index("steering_message") < types.index("turn_start", types.index("tool_result"))


async def test_consumes_multiple_steering_calls_in_fifo_order():
    model = StreamingQueueModel([[TextDelta(delta="base")], [TextDelta(delta="done")]])
    request = AgentBuilder("test-agent", model).build().prompt("start").store(None)
    first, second = Message.user("first steer"), Message.user("second steer")
    run = request.create_run()

    def on_event(event: Any) -> None:
        if event.type == "turn_end" and event.turn == 1:
            assert request.steer(first) is True
            assert request.steer([second]) is True

    run.subscribe(on_event)
    run.start()
    response = await run.wait()

    assert model.requests[1].messages[-3:] == [
        model.requests[1].messages[-3],
        first,
        second,
    ]
    assert model.requests[1].messages[-3].content == "base"
    assert conversation(response.messages) == [
        ("user", "start"),
        ("assistant", "base"),
        ("user", "first steer"),
        ("user", "second steer"),
        ("assistant", "done"),
    ]
    delivered = [e for e in run.events if e.type == "steering_message"]
    assert [e.message for e in delivered] == [first, second]
    assert {e.turn for e in delivered} == {2}


# -- ours -----------------------------------------------------------------------------------------


async def test_a_message_steered_before_the_run_starts_is_queued_and_delivered_in_order():
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "three"])
    request = AgentBuilder("a", model).tool(add).build().prompt("add 1 and 2").store(None)
    assert request.steer("one") is True
    assert request.steer([Message.user("two")]) is True
    response = await request.send()
    # The first model call sees the prompt only; the messages follow the first tool results.
    assert user_texts(model.requests[0]) == ["add 1 and 2"]
    assert [m.role for m in model.requests[1].messages] == [
        "user",
        "assistant",
        "tool",
        "user",
        "user",
    ]
    assert user_texts(model.requests[1]) == ["add 1 and 2", "one", "two"]
    assert response.output == "three"


async def test_agent_run_steer_is_the_same_queue_and_works_from_another_thread():
    tool = make_gated_tool("wait", "Wait")
    started, release = tool.started, tool.release
    model = QueueModel([call("wait", {"x": 0, "y": 0}), "ok"])
    run = AgentBuilder("a", model).tool(tool).build().prompt("go").store(None).start()
    await started.wait()
    assert await asyncio.to_thread(run.steer, "from a thread") is True
    release.set()
    await run.wait()
    assert user_texts(model.requests[1]) == ["go", "from a thread"]
    assert run.steer("after") is False


async def test_steering_before_the_end_goes_on_with_another_turn_that_may_call_tools():
    add = make_add_tool()
    model = QueueModel(["first answer", call("add", {"x": 2, "y": 3}), "five"])
    request: Any = None

    def on_turn_end(event: Any) -> None:
        if event.turn == 1:
            request.steer("now add 2 and 3")

    agent = AgentBuilder("a", model).tool(add).hook(create_hook(on_turn_end=on_turn_end)).build()
    request = agent.prompt("hi").store(None)
    response = await request.send()
    assert add.calls == [(2, 3)]
    assert response.output == "five"
    assert [m.role for m in response.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


async def test_blank_or_wrong_input_is_refused_and_queues_nothing():
    model = QueueModel(["done"])
    request = AgentBuilder("a", model).build().prompt("hi").store(None)
    with pytest.raises(ValueError, match="empty"):
        request.steer("")
    with pytest.raises(ValueError, match="empty"):
        request.steer("   \n")
    with pytest.raises(TypeError, match="str, a Message or a list of Messages"):
        request.steer(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str, a Message or a list of Messages"):
        request.steer(["text, not a Message"])  # type: ignore[list-item]
    response = await request.send()
    assert conversation(response.messages) == [("user", "hi"), ("assistant", "done")]
    with pytest.raises(ValueError, match="empty"):  # refused, not False, after the end too
        request.steer("")


async def test_steering_while_an_approval_waits_is_delivered_after_that_turns_tool_results():
    waiting, decide = asyncio.Event(), asyncio.Event()
    add = make_add_tool(approval=ToolApproval(reason="check"))

    async def handler(request: Any) -> ApprovalDecision:
        waiting.set()
        await decide.wait()
        return ApprovalDecision(approved=True)

    model = QueueModel([call("add", {"x": 4, "y": 4}), "eight"])
    request = AgentBuilder("a", model).tool(add).build().prompt("add").approvals(handler)
    request.store(None)
    run = request.start()
    await waiting.wait()
    assert run.status == "waiting"
    assert request.steer("and say it in words") is True
    assert run.state.steering[0].message == Message.user("and say it in words")
    decide.set()
    response = await run.wait()
    assert add.calls == [(4, 4)]
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert response.messages[3] == Message.user("and say it in words")
    assert sum(m.content == "and say it in words" for m in response.messages) == 1
    assert run.state.steering == []


async def test_steering_arriving_while_the_last_model_call_streams_keeps_the_run_going():
    """A steer during the final answer's stream is delivered before the run would end."""
    streaming, go_on = asyncio.Event(), asyncio.Event()
    answers = iter(["first", "second"])

    async def stream(request: Any):
        text = next(answers)
        yield TextDelta(delta=text[:2])
        if text == "first":
            streaming.set()
            await go_on.wait()
        yield TextDelta(delta=text[2:])

    from anvia_notebook.models import FunctionModel

    model = FunctionModel(stream)
    run = AgentBuilder("a", model).build().prompt("hi").store(None).start()
    await streaming.wait()
    assert run.steer("wait, one more thing") is True
    go_on.set()
    response = await run.wait()
    assert response.output == "second"
    assert user_texts(model.requests[1]) == ["hi", "wait, one more thing"]


async def test_the_tool_calls_of_a_steered_turn_still_count_towards_max_turns():
    from anvia_notebook import MaxTurnsError

    model = QueueModel(["a", "b", "c", "d"])
    request: Any = None

    def on_turn_end(event: Any) -> None:
        request.steer(f"more {event.turn}")

    agent = AgentBuilder("a", model).hook(create_hook(on_turn_end=on_turn_end)).build()
    request = agent.prompt("hi").max_turns(0).store(None)
    with pytest.raises(MaxTurnsError):
        await request.send()
    assert len(model.requests) == 2  # max_turns + 2 model calls, as in Anvia
    assert request.steer("late") is False


# streaming.test.ts: "continues when steering arrives before a no-tool response finalizes" and
# "consumes multiple steering calls in FIFO order", read through request.stream()
async def test_a_stream_reader_that_steers_at_turn_end_gets_another_turn():
    """Before, the run ended as the reader saw ``turn_end``: ``steer()`` returned False."""
    model = StreamingQueueModel([[TextDelta(delta="first")], [TextDelta(delta="second")]])
    request = AgentBuilder("test-agent", model).build().prompt("hi").store(None)
    seen: list[Any] = []
    async for event in request.stream():
        seen.append(event.type)
        if event.type == "turn_end" and event.turn == 1:
            assert request.steer("first steer") is True
            assert request.steer([Message.user("second steer")]) is True
    assert seen[seen.index("turn_end") + 1 :] == ["steering_message"] * 2 + ANOTHER_TURN
    assert user_texts(model.requests[1])[-2:] == ["first steer", "second steer"]


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_stream_reader_steers_at_the_turn_end_of_a_typed_result(mode: str):
    """A typed output given as a ``final_result`` call: the run decided to end before the
    reader saw that turn's ``turn_end`` (``steer()`` False, the stale value kept), while text
    and native answers let it steer there."""
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        population: int

    def answer(population: int) -> Any:
        value = {"name": "Paris", "population": population}
        if mode == "native":
            return json.dumps(value)
        return call("final_result", value, id=f"out_{population}")

    model = QueueModel([answer(2_100_000), answer(7_000_000)])
    request = (
        AgentBuilder("a", model).output_type(City, mode=mode).build().prompt("Paris?").store(None)
    )
    steered, final = None, None
    async for event in request.stream():
        if event.type == "turn_end" and event.turn == 1:
            steered = request.steer("Use the metro population")
        if event.type == "final":
            final = event
    assert steered is True
    assert user_texts(model.requests[1])[-1] == "Use the metro population"
    assert final is not None and final.data == {"name": "Paris", "population": 7_000_000}


async def test_a_message_steered_from_a_thread_while_the_run_is_made_is_delivered():
    """``request.steer`` from another thread while the request made its run: True, and the
    message was added to the list the run had already taken (never delivered)."""
    import threading

    inside, proceed = threading.Event(), threading.Event()

    class Slow(list):
        def extend(self, items):  # the steering thread is here when the run is made
            inside.set()
            proceed.wait(10)
            super().extend(items)

    model = QueueModel(["ok", "read it"])
    request = AgentBuilder("a", model).build().prompt("go").store(None)
    request._steering = Slow()
    steered: list[bool] = []
    steering = threading.Thread(target=lambda: steered.append(request.steer("also do X")))
    steering.start()
    await asyncio.to_thread(inside.wait, 10)
    making = threading.Thread(target=request.create_run)
    making.start()
    # The run is made meanwhile, or waits to take the messages until the steer is done (no
    # event tells a thread waits on a lock: whichever, the message must be delivered).
    await asyncio.to_thread(making.join, 0.5)
    proceed.set()
    await asyncio.to_thread(making.join, 10)
    await asyncio.to_thread(steering.join, 10)
    assert steered == [True]
    run = request._run
    assert run is not None
    response = await run.start().wait()
    assert user_texts(model.requests[-1]) == ["go", "also do X"]
    assert response.output == "read it"
