"""Stop in any state: pending approval, pending question, running tool, streaming model; timeouts."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from pydantic import BaseModel

import anvia_notebook.tools as tools_module
from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    PromptCancelledError,
    ToolApproval,
    ToolApprovalRequiredError,
    ask_question,
    create_hook,
    create_tool,
)
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, TextDelta, ToolCall

from helpers import Empty, call, make_add_tool, tool_results

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
    asked = asyncio.Event()

    async def approve(request):
        asked.set()
        await asyncio.Event().wait()  # never decided

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    human = CallbackHumanInput(approve=approve)
    request = AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go")
    task = asyncio.ensure_future(request.send())
    await asyncio.wait_for(asked.wait(), 5)  # the run waits for the approval
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    run = request._run
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 5)
    assert run.status == "cancelled"
    assert add.calls == []


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


class _Nothing(BaseModel):
    pass


def blocking_sync_tool(name="slow_sync", result="sent"):
    """A sync tool that signals ``started`` (a threading.Event) and waits for ``release``."""
    started, release, ran = threading.Event(), threading.Event(), []

    def execute(args, ctx):
        started.set()
        release.wait(30)
        ran.append(True)
        return result

    tool = create_tool(name=name, description="", input=_Nothing, execute=execute)
    return tool, started, release, ran


async def test_a_sync_tool_that_finishes_while_the_run_stops_reports_its_real_result(
    monkeypatch,
):
    # a long grace: the wait ends as soon as the tool returns
    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 30.0, raising=False)
    tool, started, release, ran = blocking_sync_tool(result="email sent")
    model = QueueModel([call("slow_sync"), "never"])
    run = AgentBuilder("a", model).tool(tool).build().prompt("go").start()
    try:
        assert await asyncio.to_thread(started.wait, 10)
        run.cancel("Stop")
        release.set()
        with pytest.raises(PromptCancelledError) as raised:
            await run.wait()
    finally:
        release.set()
    assert ran == [True]
    result = [e for e in run.events if e.type == "tool_result"]
    assert [(r.result, r.is_error) for r in result] == [("email sent", False)]
    part = raised.value.messages[-1].tool_results[0]
    assert (part.content, part.is_error) == ("email sent", False)
    [traced] = run.trace.tool_calls  # the trace says the tool ran and what it returned
    assert (traced.status, traced.result) == ("success", "email sent")


async def test_a_sync_tool_still_running_after_stop_is_reported_as_possibly_completed(
    monkeypatch,
):
    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 0.0, raising=False)
    tool, started, release, _ = blocking_sync_tool()
    model = QueueModel([call("slow_sync"), "never"])
    run = AgentBuilder("a", model).tool(tool).build().prompt("go").start()
    try:
        assert await asyncio.to_thread(started.wait, 10)
        run.cancel("Stop")
        with pytest.raises(PromptCancelledError) as raised:
            await run.wait()
    finally:
        release.set()
    part = raised.value.messages[-1].tool_results[0]
    assert part.is_error
    assert "stopped while slow_sync was still running; it may have completed" in part.content
    assert "ToolCallCancelled" not in part.content
    [event] = [e for e in run.events if e.type == "tool_result"]
    assert event.result == part.content
    [traced] = run.trace.tool_calls  # stopped while running: neither a success nor an error
    assert (traced.status, traced.result, traced.args) == ("cancelled", part.content, {})


async def test_stopped_sync_tools_do_not_starve_a_new_sync_tool(monkeypatch):
    """Fill as many sync workers as asyncio's default executor has, stop them, run another."""
    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 0.0, raising=False)
    workers = min(32, (os.cpu_count() or 1) + 4)
    release = threading.Event()
    loop = asyncio.get_running_loop()
    all_started = asyncio.Event()
    started: list[int] = []

    def stuck(args, ctx):
        started.append(1)
        if len(started) == workers:
            loop.call_soon_threadsafe(all_started.set)
        release.wait(60)
        return "late"

    stuck_tool = create_tool(name="stuck", description="", input=_Nothing, execute=stuck)
    quick_tool = create_tool(
        name="quick", description="", input=_Nothing, execute=lambda args, ctx: "quick done"
    )
    blocked = ModelResponse(
        tool_calls=[ToolCall(id=f"s{i}", name="stuck", arguments={}) for i in range(workers)]
    )
    agent = AgentBuilder("a", QueueModel([blocked, "never"])).tool(stuck_tool).build()
    run = agent.prompt("go").with_tool_concurrency(workers).start()
    try:
        await asyncio.wait_for(all_started.wait(), 10)
        run.cancel("Stop")
        with pytest.raises(PromptCancelledError):
            await run.wait()
        model = QueueModel([call("quick"), "done"])
        second = AgentBuilder("b", model).tool(quick_tool).build().prompt("go").start()
        response = await asyncio.wait_for(second.wait(), 5)
        assert response.output == "done"
        assert [part.content for part in tool_results(model.requests[1])] == ["quick done"]
    finally:
        release.set()


async def test_a_question_times_out_when_the_run_also_has_an_approval_handler():
    """The handler decides approvals only: the human input that answers questions keeps its
    time limit (the question waited for ever)."""

    async def ask(request):
        await asyncio.sleep(10)

    model = QueueModel([call("ask_question", QUESTIONS), "ok"])
    human = CallbackHumanInput(ask=ask, timeout=0.05)
    agent = (
        AgentBuilder("a", model)
        .tool(ask_question)
        .approvals(lambda request: True)
        .human_input(human)
        .build()
    )
    response = await asyncio.wait_for(agent.prompt("go").send(), 5)
    [result] = tool_results(model.requests[1])
    assert result.is_error
    assert "did not answer within 0.05 s (timed out)" in result.content
    assert response.output == "ok"


async def test_a_run_stopped_before_its_task_began_ends_as_stopped(store_path):
    """``start()`` then ``cancel()`` at once, on the loop (before the task's first step): the
    run ends as any stopped run, stored and told (before: a bare ``CancelledError``, the run
    left ``pending`` in the store)."""
    from anvia_notebook import PromptCancelledError, RunStore

    model = QueueModel(["hi"])
    run = AgentBuilder("a", model).build().prompt("x").start()
    assert run.cancel("Stopped at once.")
    with pytest.raises(PromptCancelledError, match="Stopped at once"):
        await asyncio.wait_for(run.wait(), 10)
    assert run.status == "cancelled" and [e.type for e in run.events] == ["cancelled"]
    assert model.requests == []
    stored = RunStore(store_path)
    try:
        assert stored.status(run.run_id) == "cancelled"
        assert stored.get(run.run_id).cancel_reason == "Stopped at once."
    finally:
        stored.close()


async def test_stop_asked_as_the_handler_decides_wins_over_its_decision(monkeypatch):
    """Stop is the first decider: Stop clicked (on the shell's thread) just as the run takes
    in its approval handler's answer, before recording it, wins: the answer is not recorded
    and the tool does not run (before: recorded as approved by the handler, and the tool ran).
    The click is made to land in that moment by the check every decision goes through."""
    import anvia_notebook.decisions as decisions
    from anvia_notebook import PromptCancelledError

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: True).build()
    run = agent.prompt("go").store(None).start()
    checked = decisions.refusing_bad_edit

    def stop_lands_now(*args, **kwargs):
        click = threading.Thread(target=run.cancel, args=("Stop clicked.",))
        click.start()
        click.join()
        return checked(*args, **kwargs)

    monkeypatch.setattr(decisions, "refusing_bad_edit", stop_lands_now)
    with pytest.raises(PromptCancelledError, match="Stop clicked"):
        await asyncio.wait_for(run.wait(), 10)
    [approval] = run.state.approvals.values()
    assert (approval.status, approval.decided_by) == ("cancelled", "stop")
    assert add.calls == []


async def test_a_run_stopped_before_it_starts_ends_cancelled_as_it_begins():
    """Stop between creating a run and starting it is not lost: the model is never called."""
    model = QueueModel(["never asked"])
    run = AgentBuilder("a", model).build().prompt("go").create_run()
    assert run.cancel("Stopped before the start")
    assert run.cancel() is True  # still not ended: asking again is harmless
    run.start()
    with pytest.raises(PromptCancelledError, match="Stopped before the start"):
        await run.wait()
    assert run.status == "cancelled"
    assert [e.type for e in run.events][-1] == "cancelled"
    assert run.cancel() is False  # ended now
    assert len(model.requests) == 0


@pytest.mark.parametrize("ending", ["a hook cancels", "a call needs an approval nobody gives"])
async def test_an_async_tool_cut_short_as_the_run_ends_gets_its_result_event(ending):
    """Another call in the same turn ends the run while an async tool awaits: the model and
    the event stream were told nothing of it but "cancelled before this tool call finished"
    (no ``tool_result``), though it had started and may have done things; a sync one was."""
    started = asyncio.Event()

    async def waits(args, ctx):
        started.set()
        await asyncio.Event().wait()

    async def after_it(args, ctx):
        await started.wait()
        return "done"

    def cancel_after(event):
        return event.run.cancel("enough") if event.tool_name == "after_it" else None

    slow = create_tool(name="slow", description="", input=Empty, execute=waits)
    protected = ending != "a hook cancels"
    other = create_tool(
        name="after_it",
        description="",
        input=Empty,
        execute=after_it,
        approval=ToolApproval(when=True) if protected else None,
    )
    both = ModelResponse(
        tool_calls=[
            ToolCall(id="c1", name="slow", arguments={}),
            ToolCall(id="c2", name="after_it", arguments={}),
        ]
    )
    builder = AgentBuilder("a", QueueModel([both, "never"])).tools([slow, other])
    if not protected:
        builder = builder.hook(create_hook(on_tool_result=cancel_after))
    run = builder.build().prompt("go").store(None).with_tool_concurrency(2).start()
    with pytest.raises((PromptCancelledError, ToolApprovalRequiredError)):
        await asyncio.wait_for(run.wait(), 10)
    said = "ToolCallStopped: the run was stopped while slow was running; it was cancelled"
    status = "cancelled"
    if protected:  # (an error ended the run: it is named, and the call is no stop)
        said = (
            "ToolCallStopped: the run ended on an error (ToolApprovalRequiredError: Tool "
            "approval required for after_it"
        )
        status = "error"
    told = {r.tool_call_id: r.content for r in tool_results(run.state)}
    assert told["c1"].startswith(said)
    assert "it was cancelled before it finished" in told["c1"]
    (event,) = [e for e in run.events if e.type == "tool_result" and e.tool_call_id == "c1"]
    assert event.is_error and event.result == told["c1"]
    assert run.trace.tool_calls[0].status == status


async def test_a_sync_tool_running_as_an_error_ends_the_run_is_told_that_error(monkeypatch):
    """As for an async tool (above): a sync tool still running when another call's error ended
    the run was told "the run was stopped", and its trace said cancelled; the error is named
    and the call is no stop."""
    monkeypatch.setattr(tools_module, "SYNC_TOOL_STOP_GRACE", 0.0, raising=False)
    started, release = threading.Event(), threading.Event()

    def blocks(args, ctx):
        started.set()
        release.wait(30)
        return "done"

    async def once_it_runs(event):  # (the approval nobody can give comes after it started)
        if event.tool_name == "after_it":
            await asyncio.to_thread(started.wait, 10)

    slow = create_tool(name="slow", description="", input=Empty, execute=blocks)
    other = create_tool(
        name="after_it",
        description="",
        input=Empty,
        execute=lambda args, ctx: "never",
        approval=ToolApproval(when=True),
    )
    both = ModelResponse(
        tool_calls=[
            ToolCall(id="c1", name="slow", arguments={}),
            ToolCall(id="c2", name="after_it", arguments={}),
        ]
    )
    agent = AgentBuilder("a", QueueModel([both, "never"])).tools([slow, other])
    agent = agent.hook(create_hook(on_tool_call=once_it_runs)).build()
    run = agent.prompt("go").store(None).with_tool_concurrency(2).start()
    try:
        with pytest.raises(ToolApprovalRequiredError):
            await asyncio.wait_for(run.wait(), 10)
    finally:
        release.set()
    told = {r.tool_call_id: r.content for r in tool_results(run.state)}
    assert told["c1"].startswith(
        "ToolCallStopped: the run ended on an error (ToolApprovalRequiredError: Tool approval "
        "required for after_it"
    )
    assert "while slow was running; it may have completed" in told["c1"]
    assert run.trace.tool_calls[0].status == "error"
