"""Steering with hostile input: text that is not valid Unicode (a lone surrogate, as a page's
JSON "\\ud800" or a bad paste gives), through ``steer``, ``RunStore.steer`` and a Message.

Such a text cannot be written to the run store: before, ``steer`` took it, the run's next write
failed and the run went on in memory only (its stored copy stayed "running" forever, not
resumable). Now it is refused with a clear error, and the run stays stored.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import hostile_steer_agents
import pytest
import store_agents
import subagent_agents
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import (
    AgentBuilder,
    Message,
    PromptCancelledError,
    RunEndedError,
    RunStore,
    create_hook,
    create_tool,
)
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, ToolCall

from helpers import AddInput, call, wait_on_events

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


def test_a_prompt_that_is_not_valid_unicode_is_refused_before_any_run_is_made(store_path):
    agent = AgentBuilder("a", QueueModel(["done"])).build()
    for prompt in (LONE, Message.user(LONE), [Message.user(LONE), Message.user("fine")]):
        with pytest.raises(ValueError, match=r"The prompt is not valid text.*\\ud800"):
            agent.prompt(prompt)
    store = RunStore(store_path)
    try:
        assert store.runs() == []  # nothing started unstored
    finally:
        store.close()


# -- a sub-agent's run, its process killed with SIGKILL -------------------------------------------


def test_a_message_to_a_killed_sub_agent_s_run_says_to_resume_the_top_level_run(
    tmp_path, store_path, monkeypatch, capsys
):
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
    env = child_environ()
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_python("import subagent_agents; subagent_agents.run('which region?')", env)
        top = wait_until(
            lambda: next((r for r in store.runs() if r.parent_run_id is None), None),
            child,
            "the lead's run",
        )
        [pending] = wait_until(lambda: store.pending(top.run_id), child, "the nested approval")
        kill(child)
        sub_id = pending.run_id
        assert sub_id != top.run_id
        capsys.readouterr()
        assert cli(["--store", location, "steer", sub_id, "only the west, please"]) == 0
        said = capsys.readouterr().out
        # Resuming the sub-agent's run alone would answer nobody: the lead's run is resumed.
        assert f"agent.resume({sub_id!r})" not in said
        assert f"resume({top.run_id!r})" in said and "'lead'" in said
        store.approve(top.run_id, pending.id)
        request = subagent_agents.lead().resume(top.run_id).approvals(lambda request: True)
        response = request.send_sync()
        assert response.output == "lead: analyst: west +12% (select 1)"
        messages = [m.content for m in store.get(sub_id).messages]
        assert messages.count("only the west, please") == 1
        assert store.queued_steering(sub_id) == []
    finally:
        store.close()


def test_a_run_killed_as_it_ended_takes_a_message_and_reads_it_once_resumed(
    tmp_path, store_path, monkeypatch, capsys
):
    """Killed after it closed itself to steering (in its on_run_end hook), before it was stored
    as ended: the run is interrupted and resumable, so a message is queued for it (it was refused
    as if the run had ended, with the advice to start a new run)."""
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(effects))
    env = {**child_environ(), "ANVIA_TEST_BLOCK_END": "1"}
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_python("import hostile_steer_agents as a; a.run('hello')", env)
        wait_until(effects.exists, child, "the run's end")
        [summary] = store.runs()
        kill(child)
        assert store.runs()[0].status == "interrupted"
        capsys.readouterr()
        assert cli(["--store", location, "steer", summary.run_id, "one more thing"]) == 0
        assert "Its process is gone" in capsys.readouterr().out
        agent, model = hostile_steer_agents.closer("second answer")
        response = agent.resume(summary.run_id).send_sync()
        assert response.output == "second answer"
        assert model.requests[-1].messages[-1].content == "one more thing"
        assert [m.content for m in response.messages].count("one more thing") == 1
        assert store.status(summary.run_id) == "success"
    finally:
        store.close()


def test_a_run_killed_as_it_ended_ends_with_its_answer_once_resumed(
    tmp_path, store_path, monkeypatch
):
    """Killed in its on_run_end hook, after the model's final answer was stored: resuming it
    asked the model again (a second answer, paid for, in place of the first)."""
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(effects))
    env = {**child_environ(), "ANVIA_TEST_BLOCK_END": "1"}
    store = RunStore(env["ANVIA_NOTEBOOK_STORE"])
    try:
        child = start_python("import hostile_steer_agents as a; a.run('hello')", env)
        wait_until(effects.exists, child, "the run's end")
        [summary] = store.runs()
        kill(child)
        effects.unlink()
        agent, model = hostile_steer_agents.closer("second answer")
        response = agent.resume(summary.run_id).send_sync()
        assert response.output == "first answer"
        assert model.requests == []
        assert effects.read_text() == "ending\n"  # its on_run_end hook ran to its end this time
        assert [m.content for m in response.messages] == ["hello", "first answer"]
        assert store.status(summary.run_id) == "success"
        assert store.get(summary.run_id).output == "first answer"
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["tool", "native"])
def test_a_typed_run_killed_as_it_ended_ends_with_its_result_once_resumed(
    tmp_path, store_path, monkeypatch, mode
):
    """The same with a typed result: in tool mode the history ends with the accepted
    ``final_result`` (no answer to check again), and the resumed run asked the model again,
    ending with another value than the one it had accepted."""
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(effects))
    env = {**child_environ(), "ANVIA_TEST_BLOCK_END": "1"}
    store = RunStore(env["ANVIA_NOTEBOOK_STORE"])
    try:
        child = start_python(f"import hostile_steer_agents as a; a.run_typed({mode!r})", env)
        wait_until(effects.exists, child, "the run's end")
        [summary] = store.runs()
        kill(child)
        effects.unlink()
        lyon = {"name": "Lyon", "population": 2}
        other = (
            ModelResponse(tool_calls=[ToolCall(id="c2", name="final_result", arguments=lyon)])
            if mode == "tool"
            else json.dumps(lyon)
        )
        agent, model = hostile_steer_agents.typed_closer(mode, other)
        response = agent.resume(summary.run_id).send_sync()
        assert response.data == hostile_steer_agents.City(name="Paris", population=1)
        assert model.requests == []
        assert effects.read_text() == "ending\n"
        assert store.status(summary.run_id) == "success"
        assert store.get(summary.run_id).data == {"name": "Paris", "population": 1}
    finally:
        store.close()


# -- from another process, while the run is being stopped or is failing ------------------------


@pytest.mark.parametrize("ending", ["stopped", "failed"])
async def test_a_message_sent_while_the_run_ends_by_stop_or_failure_is_refused_not_dropped(
    store_location, ending
):
    """The run's on_run_error hook runs after it has decided to end (stopped, or failed) and
    before it is stored as ended: a message from another process then was accepted ("Sent to
    run") and never read. It is refused as for a run that has ended, as ``run.steer`` is."""
    in_error_hook, release = asyncio.Event(), asyncio.Event()

    async def on_run_error(event: Any) -> None:
        in_error_hook.set()
        await release.wait()

    async def respond(request: Any) -> str:
        if ending == "failed":
            raise RuntimeError("the model broke")
        await asyncio.Event().wait()  # until stopped
        return "never"

    agent = (
        AgentBuilder("ender", FunctionModel(respond))
        .hook(create_hook(on_run_error=on_run_error))
        .build()
    )
    run = agent.prompt("go").start()
    if ending == "stopped":
        await wait_on_events(run, lambda: run.state.turn >= 1)
        run.cancel()
    await asyncio.wait_for(in_error_hook.wait(), 10)
    assert run.steer("too late") is False  # in this process: refused
    other = RunStore(store_location)
    try:
        with pytest.raises(RunEndedError, match="has already ended"):
            await asyncio.to_thread(other.steer, run.run_id, "too late")
        assert other.queued_steering(run.run_id) == []
    finally:
        other.close()
    release.set()
    with pytest.raises((PromptCancelledError, RuntimeError)):
        await asyncio.wait_for(run.wait(), 10)


async def test_a_message_sent_through_the_store_after_stop_is_refused_while_a_tool_winds_down(
    store_location,
):
    """Stop, while a tool takes its time to wind down: ``run.steer`` said False, but the store
    took a message from another process ("Sent to run") that the run, ending cancelled, never
    read (and a cancelled run cannot be resumed). The store refuses it from the Stop on."""
    started, winding_down, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def work(args: AddInput, ctx: Any) -> int:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:  # cleaning up after the Stop takes a while
            winding_down.set()
            await release.wait()
        return 0

    tool = create_tool(name="work", description="Work a while.", input=AddInput, execute=work)
    model = QueueModel([call("work", {"x": 1, "y": 1}), "ok"])
    run = AgentBuilder("worker", model).tool(tool).build().prompt("work").start()
    await started.wait()
    assert run.cancel("stop") is True
    assert run.steer("in this process") is False
    other = RunStore(store_location)
    try:
        await asyncio.wait_for(winding_down.wait(), 10)
        with pytest.raises(RunEndedError, match="has already ended"):
            await asyncio.to_thread(other.steer, run.run_id, "from the terminal")
        release.set()
        with pytest.raises(PromptCancelledError):
            await asyncio.wait_for(run.wait(), 10)
        assert other.queued_steering(run.run_id) == []
        assert other.get(run.run_id).status == "cancelled"
    finally:
        other.close()


def test_steered_while_a_tool_runs_then_killed_is_read_once_after_the_interrupted_call(
    tmp_path, store_path, monkeypatch, capsys
):
    """A message taken while the tool ran, and one sent from the terminal once the process was
    gone: after the resume the call is reported interrupted (never run twice) and both messages
    follow its result, once each."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    env = {**child_environ(), "ANVIA_TEST_BLOCK_TOOL": "1"}
    location = env["ANVIA_NOTEBOOK_STORE"]
    store = RunStore(location)
    try:
        child = start_python("import store_agents; store_agents.run('steerable')", env)
        [approval] = wait_until(lambda: store.pending(), child, "the approval")
        run_id = approval.run_id
        store.approve(run_id, approval.id)
        wait_until(lambda: store_agents.effects() == ["started a1 5"], child, "the tool")
        assert cli(["--store", location, "steer", run_id, "first: by region"]) == 0
        wait_until(
            lambda: store.get(run_id).steered_ids and not store.queued_steering(run_id),
            child,
            "the run to take the message",
        )
        kill(child)
        assert cli(["--store", location, "steer", run_id, "second: in euros"]) == 0
        assert "Its process is gone" in capsys.readouterr().out
        monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
        response = store_agents.agent("steerable").resume(run_id).send_sync()
    finally:
        store.close()
    assert store_agents.effects() == ["started a1 5"]  # not run again
    roles = [m.role for m in response.messages]
    assert roles == ["user", "assistant", "tool", "user", "user", "assistant"]
    assert "interrupted" in response.messages[2].tool_results[0].content.lower()
    assert response.output == "Done; steered: ['first: by region', 'second: in euros']"


def _assistant_calling(call_id: str = "c9") -> Message:
    from anvia_notebook.messages import MessageToolCall

    return Message(
        role="assistant", tool_calls=[MessageToolCall(id=call_id, name="add", arguments="{}")]
    )


def _tool_result(call_id: str = "c9") -> Message:
    from anvia_notebook.messages import ToolResultPart

    return Message(
        role="tool",
        tool_results=[ToolResultPart(tool_call_id=call_id, tool_name="add", content="3")],
    )


@pytest.mark.parametrize(
    ("steered", "words"),
    [
        (Message.user(""), "needs some text"),
        (Message.user("  \n"), "needs some text"),
        ([Message.user("ok"), Message(role="assistant")], "Steered message 2 needs some text"),
        (_assistant_calling(), "'c9' has no result"),
        ([_assistant_calling(), Message.user("and?")], "'c9' has no result"),
        (_tool_result(), "which no steered assistant message before it made"),
        ([_assistant_calling("a"), _tool_result("b")], "'b', which no steered"),
        (Message(role="tool"), "holds tool results only"),
        (
            Message(role="user", content="x", tool_results=_tool_result().tool_results),
            "only a tool",
        ),
        (
            Message(role="user", content="x", tool_calls=_assistant_calling().tool_calls),
            "only an assistant message",
        ),
    ],
)
async def test_steered_messages_a_provider_would_refuse_are_refused_and_nothing_is_queued(
    steered: Any, words: str
):
    """Before, an empty user message, or an assistant's tool call with no result, went into the
    conversation, and the next model call failed at the provider."""
    model = QueueModel(["done"])
    request = AgentBuilder("a", model).build().prompt("hi").store(None)
    with pytest.raises(ValueError, match=words):
        request.steer(steered)
    response = await request.send()
    assert [m.content for m in response.messages] == ["hi", "done"]


async def test_a_steered_tool_call_with_its_result_is_delivered_as_given():
    model = QueueModel(["done", "after the steer"])
    request = AgentBuilder("a", model).build().prompt("hi").store(None)
    steered = [_assistant_calling(), _tool_result(), Message.user("so?")]
    assert request.steer(steered) is True
    response = await request.send()
    assert response.messages[2:5] == steered  # (after the first answer, which would end the run)
    assert response.output == "after the steer"
