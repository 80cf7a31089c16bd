"""Stop in any state: pending approval, pending question, running tool, streaming model; timeouts."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    PromptCancelledError,
    ToolApproval,
    ask_question,
    create_tool,
)
from anvia_notebook.models import FunctionModel, QueueModel, TextDelta

from helpers import call, make_add_tool

QUESTIONS = {
    "questions": [{"id": "p", "question": "P?", "choices": [{"label": "A", "value": "a"}]}]
}


async def start_and_wait_for(agent, event_type, prompt="go"):
    run = agent.prompt(prompt).start()
    seen = asyncio.Event()
    run.subscribe(lambda e: seen.set() if e.type == event_type else None)
    await asyncio.wait_for(seen.wait(), 5)
    return run


def agent_waiting_for_approval():
    """An agent whose protected call waits for an approval that never comes."""

    async def approve(request):
        await asyncio.Event().wait()

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    human = CallbackHumanInput(approve=approve)
    return AgentBuilder("a", model).tool(add).human_input(human).build(), add


async def test_cancel_while_an_approval_is_pending():
    agent, add = agent_waiting_for_approval()
    run = await start_and_wait_for(agent, "tool_approval_request")
    assert run.status == "waiting"
    assert run.cancel("Operator pressed Stop")
    with pytest.raises(PromptCancelledError, match="Operator pressed Stop"):
        await run.wait()
    assert add.calls == []
    assert run.status == "cancelled"
    approval = [e for e in run.events if e.type == "tool_approval_result"][0].approval
    assert approval.status == "cancelled"
    assert approval.decision_reason == "Operator pressed Stop"
    assert run.events[-1].type == "cancelled"
    assert run.events[-1].reason == "Operator pressed Stop"
    assert not [e for e in run.events if e.type == "tool_result"]
    # history stays valid: the pending call has a result
    assert run.state.messages[-1].role == "tool"
    assert run.state.messages[-1].tool_results[0].is_error
    assert not run.cancel("again")


async def test_cancel_while_a_question_is_pending():
    forever = asyncio.Event()

    async def ask(request):
        await forever.wait()

    model = QueueModel([call("ask_question", QUESTIONS), "never"])
    agent = (
        AgentBuilder("a", model).tool(ask_question).human_input(CallbackHumanInput(ask=ask)).build()
    )
    run = await start_and_wait_for(agent, "tool_question_request")
    run.cancel()
    with pytest.raises(PromptCancelledError):
        await run.wait()
    question = [e for e in run.events if e.type == "tool_question_result"][0].question
    assert question.status == "cancelled"
    assert question.answers == []
    assert question.cancelled_at is not None
    assert run.state.cancel_reason == "Stopped by the user."


async def test_cancel_while_an_async_tool_runs_cancels_the_tool():
    started, finished, cancelled = asyncio.Event(), [], []

    class Nothing(BaseModel):
        pass

    async def slow(args, ctx):
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        finished.append(True)

    tool = create_tool(name="slow", description="", input=Nothing, execute=slow)
    model = QueueModel([call("slow"), "never"])
    run = AgentBuilder("a", model).tool(tool).build().prompt("go").start()
    await asyncio.wait_for(started.wait(), 5)
    run.cancel("enough")
    with pytest.raises(PromptCancelledError):
        await run.wait()
    assert cancelled == [True]
    assert finished == []
    assert run.status == "cancelled"


async def test_cancel_while_the_model_streams_keeps_the_partial_text():
    async def endless(request):
        yield TextDelta(delta="Hello ")
        await asyncio.sleep(30)
        yield TextDelta(delta="never")

    run = AgentBuilder("a", FunctionModel(endless)).build().prompt("go").start()
    for _ in range(100):
        await asyncio.sleep(0.01)
        if any(e.type == "text_delta" for e in run.events):
            break
    run.cancel()
    with pytest.raises(PromptCancelledError):
        await run.wait()
    assert run.state.messages[-1].content == "Hello "


async def test_cancel_from_another_thread():
    agent, _ = agent_waiting_for_approval()
    run = await start_and_wait_for(agent, "tool_approval_request")
    await asyncio.to_thread(run.cancel, "from a thread")
    with pytest.raises(PromptCancelledError, match="from a thread"):
        await run.wait()


async def test_cancelling_the_caller_of_send_cancels_the_run():
    agent, _ = agent_waiting_for_approval()
    request = agent.prompt("go")
    task = asyncio.ensure_future(request.send())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    run = request._run
    for _ in range(100):
        if run.done:
            break
        await asyncio.sleep(0.01)
    assert run.status == "cancelled"


async def test_approval_timeout_counts_as_rejection_with_a_clear_message():
    async def approve(request):
        await asyncio.sleep(10)

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = CallbackHumanInput(approve=approve, timeout=0.05)
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    events = [e async for e in agent.prompt("go").stream()]
    approval = [e for e in events if e.type == "tool_approval_result"][0].approval
    assert approval.status == "timed_out"
    result = [e for e in events if e.type == "tool_result"][0]
    assert (
        result.result
        == "Tool approval timed out after 0.05 s without a decision; add was not executed."
    )
    assert add.calls == []
    assert events[-1].type == "final"


async def test_question_timeout():
    async def ask(request):
        await asyncio.sleep(10)

    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = CallbackHumanInput(ask=ask, timeout=0.05)
    agent = AgentBuilder("a", model).tool(ask_question).human_input(human).build()
    events = [e async for e in agent.prompt("go").stream()]
    question = [e for e in events if e.type == "tool_question_result"][0].question
    assert question.status == "timed_out"
    result = [e for e in events if e.type == "tool_result"][0]
    assert result.is_error
    assert "did not answer within 0.05 s (timed out)" in result.result


def test_callback_human_input_validates_timeout():
    with pytest.raises(ValueError, match="positive"):
        CallbackHumanInput(timeout=0)
