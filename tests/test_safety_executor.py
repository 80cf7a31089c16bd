"""The tool executor's approval, question and hook paths as the people and code around a run see
them: what a human input, an approval predicate and hooks are told about a call, who the store
says ended a question, and which call runs (mutation testing, scripts/mutation.py, found these
untested).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from test_safety_decisions import AnotherProcessIsFirst
from test_safety_mutants import THREE_CHOICES, pending_in, store_agent

from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    PromptCancelledError,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    create_hook,
    create_question_tool,
    create_tool,
)
from anvia_notebook._tool_exec import CURRENT_TOOL_CALL, CurrentToolCall
from anvia_notebook.models import QueueModel

from helpers import NoteInput, call, calls, make_add_tool, pending_of, stored_decision, tool_results


async def finished_run(request):
    """Run ``request`` to its end; returns the run (its id and events)."""
    run = request.create_run()
    run.start()
    await asyncio.wait_for(run.wait(), 5)
    return run


def result_event(run):
    [event] = [e for e in run.events if e.type == "tool_result"]
    return event


# -- what people and code are told about a call --------------------------------------------------------


async def test_what_the_human_input_is_told_about_a_question():
    asked = []

    def ask(request):
        asked.append(request)
        return [{"questionId": "size", "answer": "s", "choice": "s"}]

    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    human = CallbackHumanInput(ask=ask)
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(human).build()
    run = await finished_run(agent.prompt("go"))
    [request] = asked
    [record] = [e.question for e in run.events if e.type == "tool_question_request"]
    internal_id = result_event(run).internal_call_id
    assert (request.tool_name, request.tool_call_id, request.internal_call_id) == (
        "ask_question",
        "call_1",
        internal_id,
    )
    assert request.run.run_id == run.run_id
    assert (
        record.question_id if hasattr(record, "question_id") else record.id
    ) == request.question_id
    assert record.internal_call_id == internal_id


async def test_what_an_approval_predicate_and_the_hooks_are_told_about_a_call():
    contexts, decisions, results = [], [], []

    def when(ctx):
        contexts.append(ctx)
        return True

    add = make_add_tool(approval=ToolApproval(when=when))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    hook = create_hook(
        on_tool_call=lambda event: decisions.append(event),
        on_tool_result=lambda event: results.append(event),
    )
    approve = lambda request: {"approved": True, "args": {"x": 5, "y": 6}}  # noqa: E731
    agent = AgentBuilder("a", model).tool(add).hook(hook).approvals(approve).build()
    run = await finished_run(agent.prompt("go"))
    event = result_event(run)
    assert (event.tool_call_id, event.args) == ("call_1", '{"x":5,"y":6}')
    [ctx], [decision], [result] = contexts, decisions, results
    assert (ctx.tool_call_id, ctx.internal_call_id, ctx.run.run_id) == (
        "call_1",
        event.internal_call_id,
        run.run_id,
    )
    assert (decision.tool_call_id, decision.internal_call_id) == ("call_1", event.internal_call_id)
    assert (result.internal_call_id, result.args) == (event.internal_call_id, event.args)


async def test_hooks_are_asked_in_order_until_one_decides():
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    passes = create_hook(on_tool_call=lambda event: None)
    skips = create_hook(on_tool_call=lambda event: event.tool.skip("not today"))
    agent = AgentBuilder("a", model).tool(add).hook(passes).hook(skips).build()
    run = await finished_run(agent.prompt("go"))
    assert add.calls == []
    assert result_event(run).skipped is True


async def test_the_run_records_how_far_each_call_got_for_a_resume():
    """While a later call runs, the earlier one of the turn is recorded as done, with its
    arguments and result (a resumed run returns that result instead of running it again), the
    running one as started, and the running tool knows which call it is (its output goes there)."""
    seen = []
    runs = []

    def peek(args: NoteInput, ctx) -> str:
        calls_so_far = runs[0].state.calls
        seen.append((calls_so_far["c0"], calls_so_far["c1"], calls_so_far["c2"]))
        seen.append(CURRENT_TOOL_CALL.get())
        return "peeked"

    add = make_add_tool()
    peeker = create_tool(name="peek", description="", input=NoteInput, execute=peek)
    model = QueueModel(
        [
            calls(
                ("add", {"x": "one"}, "c0"),  # refused arguments: an error result
                ("add", {"x": 1, "y": 2}, "c1"),
                ("peek", {"text": "?"}, "c2"),
            ),
            "ok",
        ]
    )
    agent = AgentBuilder("a", model).tools([add, peeker]).build()
    run = agent.prompt("go").with_tool_concurrency(1).create_run()
    runs.append(run)
    run.start()
    await asyncio.wait_for(run.wait(), 5)
    [(failed, done, started), current] = seen
    assert (failed.status, failed.is_error) == ("done", True)
    assert (done.status, done.args, done.result, done.is_error) == (
        "done",
        '{"x":1,"y":2}',
        "3",
        False,
    )
    assert (started.status, started.args) == ("started", '{"text":"?"}')
    peeked = [e for e in run.events if e.type == "tool_result" and e.tool_name == "peek"]
    assert current == CurrentToolCall(run.run_id, peeked[0].internal_call_id, "peek", "c2")


# -- which call runs, and what the model is told -------------------------------------------------------


async def test_a_call_id_used_again_in_a_later_turn_is_asked_about_again():
    asked, answers = [], [True, False]

    def approve(request):
        asked.append(request.args.x)
        return answers.pop(0)

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), call("add", {"x": 3, "y": 4}), "ok"])
    human = CallbackHumanInput(approve=approve)
    await finished_run(AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go"))
    assert asked == [1, 3]
    assert add.calls == [(1, 2)]


async def test_a_rejected_call_is_no_error_and_an_unknown_tool_is_one():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), call("subtract", {}), "ok"])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda request: False).build()
    await finished_run(agent.prompt("go"))
    assert [r.is_error for r in tool_results(model.requests[1])] == [False]
    assert [r.is_error for r in tool_results(model.requests[2])] == [True]
    assert add.calls == []


async def test_an_approval_cancelled_elsewhere_without_a_reason_is_a_rejection(store_path: Path):
    request, add, model = store_agent(call("add", {"x": 1, "y": 2}), "ok")
    run = request.start()
    other = RunStore(store_path)
    [approval] = await pending_in(other, run.run_id)
    record = other.record(approval.id)
    won, _ = other.claim(
        record.model_copy(
            update={"status": "cancelled", "decided_by": "human", "decided_via": "cli"}
        )
    )
    assert won
    await asyncio.wait_for(run.wait(), 5)
    assert add.calls == []
    [result] = tool_results(model.requests[1])
    assert result.is_error is False
    assert result.content  # the tool's reject message (or the default one)
    [record] = other.get(run.run_id).approvals.values()
    assert (record.status, record.decided_by, record.decided_via) == ("cancelled", "human", "cli")


async def test_an_approval_decided_elsewhere_as_it_times_out_follows_that_decision(
    store_path: Path,
):
    store = AnotherProcessIsFirst(store_path)
    store.first = lambda other, r: other.approve(r.run_id, r.id)
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    human = StoreHumanInput(timeout=0.05)
    agent = AgentBuilder("a", model).tool(add).human_input(human).build()
    await finished_run(agent.prompt("go").store(store))
    assert add.calls == [(1, 2)]


# -- questions the runtime ends ----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["stop", "no ask function", "timeout", "invalid answers"])
async def test_a_question_the_runtime_ends_is_stored_as_ended_by_the_runtime(
    store_path: Path, how: str
):
    store = RunStore(store_path)
    model = QueueModel([call("ask_question", THREE_CHOICES), "ok"])
    human = {
        "stop": StoreHumanInput(),
        "no ask function": CallbackHumanInput(approve=lambda request: True),
        "timeout": StoreHumanInput(timeout=0.05),
        "invalid answers": CallbackHumanInput(ask=lambda r: [{"questionId": "x", "answer": "y"}]),
    }[how]
    agent = AgentBuilder("a", model).tool(create_question_tool()).human_input(human).build()
    run = agent.prompt("go").store(store).create_run()
    run.start()
    if how == "stop":
        await pending_of(run)
        run.cancel()
        with pytest.raises(PromptCancelledError):
            await asyncio.wait_for(run.wait(), 5)
    else:
        await asyncio.wait_for(run.wait(), 5)
    [record] = store.interactions(run.run_id)
    status, decision = stored_decision(store, record.id)
    assert status == ("timed_out" if how == "timeout" else "cancelled")
    assert decision is not None and decision["decided_by"] == {
        "timeout": "timeout",
        "stop": "stop",
    }.get(how, "runtime")


# -- resuming after a crash in the middle of a turn ----------------------------------------------------


async def test_a_resumed_run_neither_repeats_a_finished_call_nor_reruns_an_interrupted_one(
    tmp_path: Path,
):
    from test_safety_mutants import DiesAfterADecision

    path = tmp_path / "runs.sqlite"
    store = DiesAfterADecision(path)
    store.moment = "never"
    add = make_add_tool()

    async def dies(args: NoteInput, ctx) -> str:
        store.die()  # the process dies while this tool runs
        await asyncio.Event().wait()
        return "never"

    crashing = create_tool(name="crash", description="", input=NoteInput, execute=dies)
    model = QueueModel([calls(("add", {"x": 1, "y": 2}, "c1"), ("crash", {"text": "?"}, "c2"))])
    agent = AgentBuilder("a", model).tools([add, crashing]).build()
    run = agent.prompt("go").store(store).with_tool_concurrency(1).create_run()
    store.on_death = lambda: run.cancel("the process died")
    run.start()
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 5)
    RunStore(path).release_run(run.run_id)

    after = QueueModel(["done"])
    again = AgentBuilder("a", after).tools([add, crashing]).build()
    resumed = again.resume(run.run_id, RunStore(path)).create_run()
    resumed.start()
    await asyncio.wait_for(resumed.wait(), 10)
    assert add.calls == [(1, 2)]
    finished, interrupted = tool_results(after.requests[0])
    assert (finished.content, finished.is_error) == ("3", False)
    assert interrupted.is_error is True
    results = {e.tool_call_id: e for e in resumed.events if e.type == "tool_result"}
    assert (results["c2"].turn, results["c2"].is_error) == (results["c1"].turn, True)


async def test_a_question_stopped_by_the_run_is_left_without_answers_in_the_conversation(
    store_path: Path,
):
    request, _, _ = store_agent(call("ask_question", THREE_CHOICES), "ok")
    run = request.start()
    await pending_of(run)
    run.cancel()
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 5)
    [result] = run.state.messages[-1].tool_results
    assert (json.loads(result.content), result.is_error) == ({"answers": []}, False)
