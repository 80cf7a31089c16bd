"""Steering from outside the process: ``RunStore.steer`` and ``python -m anvia_notebook steer``,
on SQLite and PostgreSQL. A second ``RunStore`` (its own connections) stands for another process;
one test kills a real child process while its run waits for an approval, then resumes it.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
import store_agents
from child_processes import child_environ
from pydantic import BaseModel
from test_resume import kill, start_child, wait_until

from anvia_notebook import (
    AgentBuilder,
    AnviaError,
    MaxTurnsError,
    Message,
    PromptCancelledError,
    RunEndedError,
    RunNotFoundError,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    create_tool,
)
from anvia_notebook.__main__ import main as cli
from anvia_notebook.models import (
    FunctionModel,
    ModelError,
    ModelResponse,
    QueueModel,
    TextDelta,
)
from anvia_notebook.notebook._session import TranscriptSession
from anvia_notebook.notebook._snapshot import render_text

from helpers import AddInput, call, calls, make_add_tool

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def env(store_location, tmp_path, monkeypatch):
    """The environment of a child process that runs an agent against the test's store."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.delenv("ANVIA_TEST_BLOCK_TOOL", raising=False)
    return child_environ()


def blocking_agent(started: asyncio.Event, release: asyncio.Event, model: Any):
    async def work(args: AddInput, ctx: Any) -> int:
        started.set()
        await release.wait()
        return args.x + args.y

    tool = create_tool(name="work", description="Work a while.", input=AddInput, execute=work)
    return AgentBuilder("worker", model).tool(tool).build()


async def taken(run: Any, count: int = 1, within: float = 10.0) -> float:
    """Seconds until the run has taken ``count`` steered messages (polls its state). How fast
    that is (the target: within a second) is measured by benchmarks/steer_bench.py."""
    start = time.monotonic()
    while len(run.state.steered_ids) < count:
        if time.monotonic() - start > within:
            raise AssertionError(f"the run took {run.state.steered_ids} within {within} s")
        await asyncio.sleep(0.01)
    return time.monotonic() - start


async def test_a_message_from_another_process_reaches_a_working_run(
    store_location,
):
    started, release = asyncio.Event(), asyncio.Event()
    model = QueueModel([call("work", {"x": 1, "y": 1}), "ok"])
    run = blocking_agent(started, release, model).prompt("work").start()
    await started.wait()
    other = RunStore(store_location)  # another process's view of the same store
    try:
        other.steer(run.run_id, "also split it by region")
        await taken(run)
        assert [item.message for item in run.state.steering] == [
            Message.user("also split it by region")
        ]
        release.set()
        response = await run.wait()
    finally:
        other.close()
    assert [m.role for m in model.requests[1].messages] == ["user", "assistant", "tool", "user"]
    assert model.requests[1].messages[-1] == Message.user("also split it by region")
    assert response.output == "ok"
    stored = RunStore(store_location)
    try:
        messages = stored.get(run.run_id).messages
        assert [m.content for m in messages].count("also split it by region") == 1
        assert stored.queued_steering(run.run_id) == []
        [event] = [e for e in stored.events(run.run_id) if e.type == "steering_message"]
        assert event.turn == 2 and event.message.content == "also split it by region"
    finally:
        stored.close()


async def test_the_command_line_steers_a_run_waiting_for_an_approval(store_location, capsys):
    add = make_add_tool(approval=ToolApproval(reason="check"))
    model = QueueModel([call("add", {"x": 2, "y": 2}), "four, by region"])
    agent = AgentBuilder("adder", model).tool(add).human_input(StoreHumanInput()).build()
    run = agent.prompt("add").start()
    store = RunStore(store_location)
    try:
        for _ in range(500):
            if store.pending(run.run_id):
                break
            await asyncio.sleep(0.01)
        [approval] = store.pending(run.run_id)
        assert store.status(run.run_id) == "waiting"
        code = await asyncio.to_thread(
            cli, ["--store", store_location, "steer", run.run_id, "split it by region"]
        )
        assert code == 0
        assert "Sent to run" in capsys.readouterr().out
        await taken(run)
        assert run.status == "waiting"  # still waiting: the message waits for the tool results
        assert await asyncio.to_thread(store.approve, run.run_id, approval.id)
        response = await asyncio.wait_for(run.wait(), 10)
    finally:
        store.close()
    assert add.calls == [(2, 2)]
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert response.messages[3] == Message.user("split it by region")


async def test_a_message_sent_while_the_final_answer_streams_keeps_the_run_going(store_location):
    streaming, go_on = asyncio.Event(), asyncio.Event()
    answers = iter(["first", "second"])

    async def stream(request: Any):
        text = next(answers)
        if text == "first":
            streaming.set()
            await go_on.wait()
        yield TextDelta(delta=text)

    model = FunctionModel(stream)
    run = AgentBuilder("a", model).build().prompt("hi").start()
    await streaming.wait()
    other = RunStore(store_location)
    try:
        other.steer(run.run_id, "one more thing")
        go_on.set()  # at once: the run's closing finds the message if its watcher has not yet
        response = await asyncio.wait_for(run.wait(), 10)
    finally:
        other.close()
    assert response.output == "second"
    assert [m.content for m in model.requests[1].messages] == ["hi", "first", "one more thing"]


@pytest.mark.parametrize("ending", ["success", "error", "cancelled"])
async def test_a_run_that_has_ended_refuses_a_message(store_location, ending, capsys):
    if ending == "success":
        request = AgentBuilder("a", QueueModel(["done"])).build().prompt("hi")
        await request.send()
    elif ending == "error":
        request = AgentBuilder("a", QueueModel([])).build().prompt("hi")
        with pytest.raises(ModelError):
            await request.send()
    else:
        started, release = asyncio.Event(), asyncio.Event()
        request = blocking_agent(started, release, QueueModel([call("work", {"x": 1, "y": 1})]))
        request = request.prompt("hi")
        run = request.start()
        await started.wait()
        run.cancel("stop")
        with pytest.raises(AnviaError):
            await run.wait()
    assert request.steer("late") is False
    run_id = request._run.run_id
    store = RunStore(store_location)
    try:
        with pytest.raises(RunEndedError, match=f"has already ended \\({ending}\\)"):
            store.steer(run_id, "late")
        assert store.queued_steering(run_id) == []
    finally:
        store.close()
    code = cli(["--store", store_location, "steer", run_id, "late"])
    assert code == 1
    assert "has already ended" in capsys.readouterr().err


async def test_show_does_not_say_a_message_waits_for_a_run_that_ended(store_location, capsys):
    """A message steered through the store just before Stop: ``show`` said it waited for the
    run to take it, which a cancelled run never does."""
    started, release = asyncio.Event(), asyncio.Event()
    run = blocking_agent(started, release, QueueModel([call("work", {"x": 1, "y": 1}), "ok"]))
    run = run.prompt("work").start()
    await started.wait()
    store = RunStore(store_location)
    try:
        store.steer(run.run_id, "also split it by region")
        run.cancel("Stop")
        with pytest.raises(PromptCancelledError):
            await run.wait()
    finally:
        store.close()
    capsys.readouterr()
    assert cli(["--store", store_location, "show", run.run_id]) == 0
    shown = capsys.readouterr().out
    assert "waiting for the run to take it" not in shown
    # (said whether or not the run took the message before the Stop)
    assert "the run never read: it ended first" in shown
    assert "also split it by region" in shown
    assert cli(["--store", store_location, "show", run.run_id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "queued_steering" not in data
    assert [m["text"] for m in data["unread_steering"]] == ["also split it by region"]


class Answer(BaseModel):
    city: str


ENDINGS = ["stop", "model error", "max turns", "typed output at the turn limit"]


@pytest.mark.parametrize("ending", ENDINGS)
async def test_every_message_a_run_ended_before_reading_is_said_at_its_end(
    store_location, ending, capsys
):
    """Messages steered from this process and through the store just before the run ends
    (Stop, a model error, the turn limit, a typed result at the turn limit): the run's end says
    each was not delivered, in the transcript and its saved copy, and ``show`` lists them. Before,
    at the turn limit the model never read the message the transcript showed as delivered, and a
    message sent through the store was said by ``show`` only."""
    waiting, release = asyncio.Event(), asyncio.Event()

    async def work(args: AddInput, ctx: Any) -> int:
        if args.x == 2:  # the run waits here while the messages are sent
            waiting.set()
            await release.wait()
        return args.x + args.y

    async def failing(request: Any) -> ModelResponse:
        waiting.set()
        await release.wait()
        raise ModelError("The provider is down.")

    first, last = call("work", {"x": 1, "y": 1}, "c1"), call("work", {"x": 2, "y": 1}, "c2")
    replies: dict[str, Any] = {
        "stop": QueueModel([last]),
        "model error": FunctionModel(failing),
        "max turns": QueueModel([first, last]),
        "typed output at the turn limit": QueueModel(
            [
                first,
                calls(("work", {"x": 2, "y": 1}, "c2"), ("final_result", {"city": "Oslo"}, "f")),
            ]
        ),
    }
    model = replies[ending]
    tool = create_tool(name="work", description="Work a while.", input=AddInput, execute=work)
    agent = AgentBuilder("a", model).tool(tool)
    if ending.startswith("typed"):
        agent = agent.output_type(Answer)
    run = agent.build().prompt("hi").max_turns(0).create_run()
    session = TranscriptSession(agent_id="a", loop=asyncio.get_running_loop())
    session._send = lambda message: None  # type: ignore[method-assign]
    session.attach(run)
    run.start()
    await waiting.wait()
    other = RunStore(store_location)  # another process's view of the same store
    try:
        assert run.steer("in this process") is True
        other.steer(run.run_id, "through the store")
        if ending == "stop":
            run.cancel("Stop")
        release.set()
        with pytest.raises((PromptCancelledError, ModelError, MaxTurnsError)) as raised:
            await run.wait()
    finally:
        other.close()
    if isinstance(raised.value, MaxTurnsError):  # (last in its messages, as in Anvia)
        texts = [m.content for m in raised.value.messages]
        assert texts[-2:] == ["in this process", "through the store"]
        assert [m.content for m in run.state.messages] == texts[:-2]
    sent = [m.content for request in model.requests for m in request.messages]
    assert "in this process" not in sent and "through the store" not in sent
    entries = session.state()["entries"]
    assert not [e for e in entries if e.get("steered")]  # (no bubble: never delivered)
    said = [e["text"] for e in entries if e["kind"] == "notice"][-2:]
    assert said == [
        "Not delivered, the run ended first: in this process",
        "Not delivered, the run ended first: through the store",
    ]
    assert all(line in render_text(session.state()) for line in said)
    capsys.readouterr()
    assert cli(["--store", store_location, "show", run.run_id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    unread = [m["text"] for m in data["unread_steering"]]
    assert unread == ["in this process", "through the store"]


async def test_an_unknown_run_and_a_blank_message_are_refused(store_location, capsys):
    store = RunStore(store_location)
    try:
        with pytest.raises(RunNotFoundError, match="No stored run 'run_nope'"):
            store.steer("run_nope", "hello")
        started, release = asyncio.Event(), asyncio.Event()
        run = blocking_agent(started, release, QueueModel([call("work", {"x": 1, "y": 1}), "ok"]))
        run = run.prompt("hi").start()
        await started.wait()
        with pytest.raises(ValueError, match="empty"):
            store.steer(run.run_id, "  ")
        with pytest.raises(TypeError, match="text"):
            store.steer(run.run_id, Message.user("x"))  # type: ignore[arg-type]
        assert store.queued_steering(run.run_id) == []
        assert cli(["--store", store_location, "steer", run.run_id, ""]) == 1
        assert "empty" in capsys.readouterr().err
        release.set()
        response = await run.wait()
        assert [m.role for m in response.messages] == ["user", "assistant", "tool", "assistant"]
    finally:
        store.close()
    assert cli(["--store", store_location, "steer", "run_nope", "hello"]) == 1
    assert "No stored run 'run_nope'" in capsys.readouterr().err


@pytest.mark.parametrize("left_queued", [False, True])
async def test_steered_while_waiting_then_killed_is_delivered_once_after_resume(
    env, store_location, capsys, left_queued
):
    """One message taken by the run before its process died, one sent while no process ran it:
    after the resume both are delivered after the tool results, once each, in order. Also when
    the process died after storing the taken message in its state but before marking its row
    taken (``left_queued``): the resumed run finds the row again and skips it."""
    child = start_child(env, "steerable")
    store = RunStore(store_location)
    try:
        [approval] = wait_until(lambda: store.pending(), child, "the approval")
        run_id = approval.run_id
        store.steer(run_id, "first: by region")
        # The run stores the message in its state, then marks the row taken (a row still
        # queued at a kill between the two is not delivered twice: its id is in the state).
        wait_until(
            lambda: store.get(run_id).steered_ids and not store.queued_steering(run_id),
            child,
            "the run to take the message",
        )
        kill(child)
        if left_queued:
            store._q("UPDATE steering SET status = 'queued' WHERE run_id = ?", (run_id,))
            assert len(store.queued_steering(run_id)) == 1
        assert store.status(run_id) == "interrupted"
        assert cli(["--store", store_location, "steer", run_id, "second: in euros"]) == 0
        assert "resumed" in capsys.readouterr().out
        # ``show`` lists both messages the run has not read, each once: the one it took before
        # its process died (before, left out: nothing said it would still be delivered), and
        # the one that waits; then the code that resumes the run
        assert cli(["--store", store_location, "show", run_id]) == 0
        shown = capsys.readouterr().out
        taken, waiting = shown.split("taken by the run and not read yet", 1)[1].split(
            "waiting for the run to take it", 1
        )
        assert "  first: by region" in taken and "  second: in euros" in waiting
        assert shown.count("by region") == shown.count("in euros") == 1
        resume = shown.rstrip().rsplit("\n", 1)[1]
        assert resume.endswith(f"agent.resume({run_id!r}, store={store_location!r})") or (
            "postgresql" in store_location and f"agent.resume({run_id!r}, store=" in resume
        )
        assert "with agent 'banker'" in shown
        assert cli(["--store", store_location, "show", run_id, "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)["queued_steering"]
        assert [item["text"] for item in listed] == ["first: by region", "second: in euros"]
        request = store_agents.agent("steerable").resume(run_id)
        run = request.start()
        for _ in range(1000):
            if store.pending(run_id) and run.status == "waiting":
                break
            await asyncio.sleep(0.01)
        store.approve(run_id, approval.id)
        response = await asyncio.wait_for(run.wait(), 20)
    finally:
        store.close()
    contents = [m.content for m in response.messages if m.role == "user"]
    assert contents == ["send 5 to a1", "first: by region", "second: in euros"]
    assert [m.role for m in response.messages] == [
        "user",
        "assistant",
        "tool",
        "user",
        "user",
        "assistant",
    ]
    assert response.output == "Done; steered: ['first: by region', 'second: in euros']"
    assert store_agents.effects() == ["started a1 5", "done a1 5"]


def test_the_command_line_steers_only_into_a_run_store_of_its_version(tmp_path, capsys):
    """The steer command opens only the store's connection when the file is a run store of this
    version; any other file goes through RunStore: an older store is migrated first, a newer,
    foreign or damaged one is refused as RunStore refuses it, and left as it was."""
    import sqlite3

    from anvia_notebook.store._store import SCHEMA_VERSION

    older = tmp_path / "older.sqlite"
    with sqlite3.connect(older) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('application', 'anvia_notebook')")
        db.execute("INSERT INTO meta VALUES ('schema_version', '0')")
    assert cli(["--store", str(older), "steer", "run_nope", "hello"]) == 1
    assert "No stored run 'run_nope'" in capsys.readouterr().err
    with sqlite3.connect(older) as db:
        [(version,)] = db.execute("SELECT value FROM meta WHERE key = 'schema_version'")
    assert version == str(SCHEMA_VERSION)

    newer = tmp_path / "newer.sqlite"
    RunStore(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    assert cli(["--store", str(newer), "steer", "run_x", "hello"]) == 1
    assert "newer anvia_notebook" in capsys.readouterr().err

    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE customers (id INTEGER)")
    assert cli(["--store", str(foreign), "steer", "run_x", "hello"]) == 1
    assert "another application" in capsys.readouterr().err
    with sqlite3.connect(foreign) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("customers",)]

    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    assert cli(["--store", str(damaged), "steer", "run_x", "hello"]) == 1
    assert "damaged" in capsys.readouterr().err
    assert damaged.read_bytes() == b"this is not a database" * 100


async def test_a_message_from_the_command_line_reads_back_as_the_person_wrote_it(
    store_location, capsys
):
    """The row the command writes (without loading the runtime) is ``Message.user(text)``,
    non-ASCII text and all."""
    started, release = asyncio.Event(), asyncio.Event()
    model = QueueModel([call("work", {"x": 1, "y": 1}), "ok"])
    run = blocking_agent(started, release, model).prompt("hi").start()
    await started.wait()
    text = 'par région, en € — "quoted"\nand a second line'
    code = await asyncio.to_thread(cli, ["--store", store_location, "steer", run.run_id, text])
    assert code == 0
    await taken(run)
    release.set()
    response = await asyncio.wait_for(run.wait(), 10)
    assert response.messages[3] == Message.user(text)
    assert model.requests[1].messages[-1] == Message.user(text)


async def test_a_typed_run_reminded_to_give_its_result_still_takes_a_message(store_location):
    """A typed run whose model answered without its result goes on (it is reminded): the run
    store does not refuse a message sent then as if the run were ending, and the model sees it
    before the run ends with the result."""
    from pydantic import BaseModel

    from anvia_notebook.models import ModelResponse, ToolCall

    class City(BaseModel):
        name: str

    asked_again, go_on = asyncio.Event(), asyncio.Event()
    seen: list[list[str]] = []

    async def script(request: Any) -> ModelResponse:
        seen.append([m.content for m in request.messages if m.role == "user"])
        if len(seen) == 1:
            return ModelResponse(text="It is Paris.")  # no final_result: reminded
        if len(seen) == 2:
            asked_again.set()
            await go_on.wait()
        name = "Lyon" if "Lyon, please." in seen[-1] else "Paris"
        call = ToolCall(id=f"f{len(seen)}", name="final_result", arguments={"name": name})
        return ModelResponse(tool_calls=[call])

    agent = AgentBuilder("typed", FunctionModel(script)).output_type(City, retries=1).build()
    run = agent.prompt("Which city?").start()
    await asyncio.wait_for(asked_again.wait(), 10)
    other = RunStore(store_location)
    try:
        other.steer(run.run_id, "Lyon, please.")
        go_on.set()
        response = await asyncio.wait_for(run.wait(), 10)
    finally:
        other.close()
    assert response.data == City(name="Lyon")
    assert seen[-1][-1] == "Lyon, please."
