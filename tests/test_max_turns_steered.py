"""A message steered into a run during its last round, which the turn limit leaves no model call
to read: as in Anvia (whose run drains it into the conversation after the round's tool results,
or after the answer it would have ended with, then fails with ``MaxTurnsError``), the error's
``messages`` end with it, so ``agent.prompt(error.messages)`` goes on with it as the prompt; the
``on_run_error`` hooks get the same list. The run itself stays truthful: its messages do not
hold it, and its end says it was not delivered. Before, the error's messages left it out."""

from __future__ import annotations

from typing import Any

import pytest

from anvia_notebook import AgentBuilder, MaxTurnsError, PromptCancelledError, create_hook
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool

pytestmark = pytest.mark.timeout(30)


def roles_and_texts(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def sent_texts(model: QueueModel) -> list[str]:
    return [m.content for request in model.requests for m in request.messages]


async def test_a_message_steered_in_the_last_tool_round_ends_the_error_s_messages() -> None:
    model = QueueModel([call("add", {"x": 1, "y": 2}, "c1"), call("add", {"x": 3, "y": 4}, "c2")])
    run: Any = None
    seen: list[Any] = []

    def on_tool_result(event: Any) -> None:
        if event.tool_call_id == "c2":  # the last round (max_turns(0): two model calls)
            assert run.steer("also split it by region") is True

    hook = create_hook(on_tool_result=on_tool_result, on_run_error=seen.append)
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    run = agent.prompt("hi").max_turns(0).store(None).create_run()
    run.start()
    with pytest.raises(MaxTurnsError) as raised:
        await run.wait()
    error = raised.value
    assert roles_and_texts(error.messages) == [
        ("user", "hi"),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", ""),
        ("tool", ""),
        ("user", "also split it by region"),
    ]
    assert error.messages[4].tool_results[0].content == "7"
    assert error.prompt is error.messages[2]  # the last model call's prompt, as before
    assert "also split it by region" not in sent_texts(model)  # no model call read it
    assert run.state.messages == error.messages[:-1]  # the run's own conversation: unread
    assert [item.message.content for item in run.state.steering] == ["also split it by region"]
    [event] = seen
    assert event.error is error and event.messages == error.messages


async def test_a_message_steered_after_the_last_answer_ends_the_error_s_messages() -> None:
    """The model answered on the last turn, and a message came before the run could end:
    Anvia's run drains it after the answer and fails at the limit; so does ours."""
    model = QueueModel(["a", "b", "c"])
    request: Any = None

    def on_turn_end(event: Any) -> None:
        assert request.steer(f"more {event.turn}") is True

    agent = AgentBuilder("a", model).hook(create_hook(on_turn_end=on_turn_end)).build()
    request = agent.prompt("hi").max_turns(0).store(None)
    with pytest.raises(MaxTurnsError) as raised:
        await request.send()
    assert roles_and_texts(raised.value.messages) == [
        ("user", "hi"),
        ("assistant", "a"),
        ("user", "more 1"),
        ("assistant", "b"),
        ("user", "more 2"),
    ]
    assert "more 2" not in sent_texts(model) and len(model.requests) == 2


async def test_going_on_with_the_error_s_messages_gives_the_model_the_steered_message() -> None:
    model = QueueModel([call("add", {"x": 1, "y": 2}, "c1"), call("add", {"x": 3, "y": 4}, "c2")])
    request: Any = None

    def on_tool_result(event: Any) -> None:
        if event.tool_call_id == "c2":
            request.steer("now answer")

    hook = create_hook(on_tool_result=on_tool_result)
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    request = agent.prompt("hi").max_turns(0).store(None)
    with pytest.raises(MaxTurnsError) as raised:
        await request.send()
    follow = QueueModel(["10"])
    again = AgentBuilder("a", follow).tool(make_add_tool()).build()
    response = await again.prompt(raised.value.messages).store(None).send()
    assert response.output == "10"
    assert follow.requests[0].messages[-1].content == "now answer"


async def test_a_hook_that_cancels_at_the_turn_limit_keeps_the_steered_message() -> None:
    """An ``on_run_error`` hook that answers the limit with ``run.cancel(reason)``: the run
    ends cancelled, and the error's ``messages`` are the limit's, the unread message last (as
    in Anvia, where it is in the conversation by then), so going on with them gives it to the
    model. Before, they left it out."""
    model = QueueModel([call("add", {"x": 1, "y": 2}, "c1"), call("add", {"x": 3, "y": 4}, "c2")])
    run: Any = None

    def on_tool_result(event: Any) -> None:
        if event.tool_call_id == "c2":
            assert run.steer("also split it by region") is True

    def on_run_error(event: Any) -> Any:
        return event.run.cancel("limit reached: stopping here")

    hook = create_hook(on_tool_result=on_tool_result, on_run_error=on_run_error)
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    run = agent.prompt("hi").max_turns(0).store(None).create_run()
    run.start()
    with pytest.raises(PromptCancelledError) as raised:
        await run.wait()
    assert raised.value.reason == "limit reached: stopping here"
    assert roles_and_texts(raised.value.messages)[-1] == ("user", "also split it by region")
    assert run.state.messages == raised.value.messages[:-1]
