"""What the run store writes, and when: the write before each tool call is one row, the event
log is one row per write, the recent messages move to their table, and a crash at any tool call
leaves a run that resumes whole."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import warnings

import pytest

import anvia_notebook as an
from anvia_notebook import AgentBuilder, DecisionRefusedError, RunStore
from anvia_notebook.events import TextDeltaEvent, TurnStartEvent
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, TextDelta, ToolCall
from anvia_notebook.store import _store

from helpers import AddInput, call


@pytest.fixture
def no_timed_writes(monkeypatch):
    """No write falls due by time: what is written is what the run's own steps write."""
    from anvia_notebook import run as run_module

    monkeypatch.setattr(run_module, "STORE_FLUSH_INTERVAL", 3600.0)


def adder(execute, turns: int):
    tool = an.create_tool(name="add", description="Add.", input=AddInput, execute=execute)
    steps = [call("add", {"x": i, "y": 1}, id=f"c{i}") for i in range(turns)]
    model = QueueModel([*steps, ModelResponse(text="done")])
    return AgentBuilder("adder", model).tool(tool).build()


async def test_the_write_before_each_tool_call_is_one_statement_on_the_runs_row(
    store_path, no_timed_writes
):
    store = RunStore(store_path)
    statements: list[str] = []
    # The run's writes are made on this thread's connection (the run runs on this loop).
    store._backend._connection().set_trace_callback(statements.append)
    reader = RunStore(store_path)
    seen = []

    def execute(args, ctx):
        statements.append("-- the tool runs")
        state = reader.get(ctx.run.run_id)  # what a crash now would leave
        seen.append((state.calls[ctx.tool_call_id].status, state.messages[-1].tool_calls[0].id))
        return args.x + args.y

    response = await asyncio.wait_for(adder(execute, 4).prompt("count").store(store).send(), 10)
    assert response.output == "done"
    assert seen == [("started", f"c{i}") for i in range(4)]
    marks = [i for i, s in enumerate(statements) if s == "-- the tool runs"]
    assert len(marks) == 4
    for before, after in itertools.pairwise(marks):
        writes = [
            s
            for s in statements[before + 1 : after]
            if not s.lstrip().upper().startswith(("SELECT", "PRAGMA"))
        ]
        # The round's end (its results and events, one transaction), then the write before
        # the call: no BEGIN and COMMIT, no row of another table, one UPDATE of the run's row.
        assert commits_of(writes) == 2, writes
        assert writes[-2].upper() == "COMMIT", writes
        assert writes[-1].startswith("UPDATE runs SET status"), writes


def commits_of(statements: list[str]) -> int:
    """Commits in a connection's statement trace: each COMMIT, and each write outside one."""
    count, open_transaction = 0, False
    for statement in statements:
        word = statement.lstrip().split(None, 1)[0].upper()
        if word == "BEGIN":
            open_transaction = True
        elif word in ("COMMIT", "END", "ROLLBACK"):
            count += word != "ROLLBACK"
            open_transaction = False
        elif word in ("INSERT", "UPDATE", "DELETE", "REPLACE") and not open_transaction:
            count += 1
    return count


@pytest.mark.parametrize("turns", [1, 3])
async def test_a_turn_with_an_approved_call_commits_four_times(store_path, no_timed_writes, turns):
    """The approval opened with the state that asked for it (one transaction), its decision,
    the call marked started, the round's end: nothing more (an approval nobody sent a decision
    for writes nothing when it is opened again). ``benchmarks/store_commits_bench.py`` prints
    the figures."""

    async def commits_of_a_run(turns: int) -> int:
        store = RunStore(store_path)
        statements: list[str] = []
        store._backend._connection().set_trace_callback(statements.append)
        agent = approved_adder(turns)
        response = await asyncio.wait_for(agent.prompt("count").store(store).send(), 10)
        assert response.output == "done"
        store.close()
        return commits_of(statements)

    base = await commits_of_a_run(0)  # the run's creation and its end
    assert (await commits_of_a_run(turns)) - base == 4 * turns


def approved_adder(turns: int = 1):
    """An agent that adds ``turns`` times with a tool needing approval, each approved."""
    protected = an.create_tool(
        name="add",
        description="Add.",
        input=AddInput,
        execute=lambda args, ctx: args.x + args.y,
        approval=an.ToolApproval(),
    )
    steps = [call("add", {"x": i, "y": 1}, id=f"c{i + 1}") for i in range(turns)]
    model = QueueModel([*steps, ModelResponse(text="done")])
    return AgentBuilder("adder", model).tool(protected).approvals(lambda r: True).build()


async def test_an_approval_is_stored_in_the_write_of_the_state_that_asked_for_it(
    store_location, no_timed_writes
):
    """The state that asked and the approval's row are committed together: before that write
    a reader sees neither, after it both (a kill between the two cannot leave one alone)."""
    reader = RunStore(store_location)
    seen = []

    class Watched(RunStore):
        def save_run(self, run_id, state, *args, **kwargs):
            opening = kwargs.get("opening", ())
            ids = [record.id for record, _ in opening]
            before = [(reader.record(i), i in reader.get(run_id).approvals) for i in ids]
            super().save_run(run_id, state, *args, **kwargs)
            after = [(reader.record(i).status, reader.get(run_id).approvals[i].status) for i in ids]
            if ids:
                seen.append((before, after))

    store = Watched(store_location)
    response = await asyncio.wait_for(approved_adder().prompt("add").store(store).send(), 10)
    assert response.output == "done"
    assert seen == [([(None, False)], [("pending", "pending")])]
    [record] = reader.interactions(response.run_id)
    assert record.status == "approved"


async def test_a_failing_write_of_an_approval_stores_neither_it_nor_the_state_that_asked(
    store_location, no_timed_writes
):
    """The approval's row cannot be written: the state that asked is not written either (one
    transaction), and the run goes on in memory, warned once."""

    class FailsToOpen(RunStore):
        def _q(self, sql, params=()):
            if sql.lstrip().startswith("INSERT INTO interactions"):
                raise OSError("disk I/O error")
            return super()._q(sql, params)

    request = approved_adder().prompt("add").store(FailsToOpen(store_location))
    with pytest.warns(RuntimeWarning, match="disk I/O error"):
        response = await asyncio.wait_for(request.send(), 10)
    assert response.output == "done"
    reader = RunStore(store_location)
    assert reader.interactions(response.run_id) == []
    stored = reader.get(response.run_id)
    assert stored.approvals == {} and stored.status != "success"
    assert [m.role for m in stored.messages] == ["user"]  # (not the call that asked)


async def test_a_failing_read_of_the_approval_as_stored_leaves_no_row_the_run_does_not_watch(
    store_location, no_timed_writes
):
    """The approval's row read back after it was committed failed: the row stayed pending with
    no process watching it, and a decision written to it (accepted) was never acted on. It is
    read in the same transaction now: nothing is stored, and the store refuses a decision."""

    class ReadFails(RunStore):
        def record(self, item_id):
            raise OSError("disk I/O error")

    store = ReadFails(store_location)
    request = approved_adder().prompt("add").store(store)
    with pytest.warns(RuntimeWarning, match="disk I/O error"):
        response = await asyncio.wait_for(request.send(), 10)
    assert response.output == "done"
    reader = RunStore(store_location)
    assert reader.interactions(response.run_id) == []
    with pytest.raises(DecisionRefusedError, match="Unknown approval"):
        reader.approve(response.run_id, "c1")


async def test_a_store_whose_save_run_takes_no_opening_still_stores_the_approval(
    store_location, no_timed_writes
):
    """A store class that extends ``save_run`` as it was (without ``opening``) lost every run
    that asked for an approval: "save_run() got an unexpected keyword argument", the run
    leaving its store. Its state and the approval are written one after the other, as before."""

    class Counting(RunStore):
        writes = 0

        def save_run(self, run_id, state, events, messages_from=0, trace_rows=()):
            Counting.writes += 1
            super().save_run(run_id, state, events, messages_from, trace_rows)

    store = Counting(store_location)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        response = await asyncio.wait_for(approved_adder().prompt("add").store(store).send(), 10)
    assert response.output == "done" and Counting.writes
    reader = RunStore(store_location)
    assert reader.get(response.run_id).status == "success"
    [record] = reader.interactions(response.run_id)
    assert record.status == "approved" and record.decided_by == "handler"


async def test_the_event_log_is_one_row_per_write(store_location, no_timed_writes):
    def execute(args, ctx):
        return args.x + args.y

    request = adder(execute, 3).prompt("count")
    response = await asyncio.wait_for(request.send(), 10)
    store = RunStore(store_location)
    rows = store._q("SELECT COUNT(*) FROM events WHERE run_id = ?", (response.run_id,))
    # Written at each tool round's end and at the run's end: one row each, not one per event.
    assert rows[0][0] == 4
    logged = request._run.events
    assert len(logged) > 10
    stored = store.events(response.run_id)
    assert [e.model_dump() for e in stored] == [e.model_dump() for e in logged]


async def test_a_log_written_while_text_streams_reads_back_whole(store_location, monkeypatch):
    """Every event is a write: each row starts with the last event of the row before it (the
    streamed text that grew since), and the stored log is the run's log."""
    from anvia_notebook import run as run_module

    monkeypatch.setattr(run_module, "STORE_FLUSH_INTERVAL", 0.0)
    pieces = [f"word{i} " for i in range(30)]

    async def model(_request):
        for piece in pieces:
            yield TextDelta(delta=piece)

    request = AgentBuilder("streamer", FunctionModel(model)).build().prompt("talk")
    response = await asyncio.wait_for(request.send(), 10)
    store = RunStore(store_location)
    stored = store.events(response.run_id)
    assert [e.model_dump() for e in stored] == [e.model_dump() for e in request._run.events]
    assert [e.delta for e in stored if e.type == "text_delta"] == ["".join(pieces)]


def test_rows_of_one_event_and_rows_of_many_read_as_one_log(store_path):
    """A store written before logs were stored in rows of many events still reads; a later row
    rewrites the events from its position on."""
    store = RunStore(store_path)
    start = TurnStartEvent(turn=1)
    early = TextDeltaEvent(turn=1, delta="Hel")
    grown = TextDeltaEvent(turn=1, delta="Hello")
    more = TurnStartEvent(turn=2)
    store.save_events("run_x", [(0, start.model_dump_json()), (1, early.model_dump_json())])
    assert store.events("run_x") == [start, early]
    grown_and_more = f"[{grown.model_dump_json()},{more.model_dump_json()}]"
    store.save_events("run_x", [(1, grown_and_more)])
    assert store.events("run_x") == [start, grown, more]


async def test_recent_messages_move_to_their_table_and_the_run_reads_whole_at_every_call(
    store_path, no_timed_writes, monkeypatch
):
    monkeypatch.setattr(_store, "RECENT_LIMIT", 600)  # a few messages
    reader = RunStore(store_path)
    moved = []

    def execute(args, ctx):
        run_id = ctx.run.run_id
        messages = reader.get(run_id).messages  # what a crash now would leave
        # The prompt, each earlier call and its result, and the call now running.
        assert [m.role for m in messages] == ["user", *["assistant", "tool"] * args.x, "assistant"]
        assert messages[-1].tool_calls[0].id == ctx.tool_call_id
        in_table = reader._q("SELECT COUNT(*) FROM messages WHERE run_id = ?", (run_id,))
        moved.append(in_table[0][0])
        return args.x + args.y

    response = await asyncio.wait_for(adder(execute, 12).prompt("count").send(), 10)
    assert len(moved) == 12  # every call ran and found its run whole
    assert moved[0] == 0  # the prompt and the first call are in the run's row
    assert max(moved) > 0  # the row grew past the limit: its messages moved to the table
    rows = reader._q(
        "SELECT recent_messages, (SELECT COUNT(*) FROM messages m WHERE m.run_id = r.run_id) "
        "FROM runs r WHERE run_id = ?",
        (response.run_id,),
    )
    assert rows == [(None, len(response.messages))]  # at the end, all in the table
    stored = reader.get(response.run_id).messages
    assert [m.model_dump() for m in stored] == [m.model_dump() for m in response.messages]


async def test_a_crash_at_a_tool_call_resumes_with_the_whole_conversation(
    store_path, tmp_path, no_timed_writes
):
    """The store as a crash would leave it while the fourth call runs (a copy of the database
    taken then): resumed, the three finished calls are not run again, the fourth is reported
    interrupted, and the run ends with every message."""
    copy = tmp_path / "after-crash.sqlite"
    ran: list[str] = []

    def execute(args, ctx):
        ran.append(ctx.tool_call_id)
        if ctx.tool_call_id == "c3":
            with sqlite3.connect(store_path) as source, sqlite3.connect(copy) as target:
                source.backup(target)
        return args.x + args.y

    first = await asyncio.wait_for(adder(execute, 5).prompt("count").send(), 10)
    assert ran == [f"c{i}" for i in range(5)]
    crashed = RunStore(copy)
    crashed._q(
        "UPDATE runs SET owner_host = 'gone', owner_pid = 1, heartbeat_at = 0 WHERE run_id = ?",
        (first.run_id,),
    )
    assert crashed.status(first.run_id) == "interrupted"
    ran.clear()

    def model_after(request):
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < 5:
            return ModelResponse(
                tool_calls=[ToolCall(id=f"c{done}", name="add", arguments={"x": done, "y": 1})]
            )
        return ModelResponse(text="done")

    tool = an.create_tool(name="add", description="Add.", input=AddInput, execute=execute)
    agent = AgentBuilder("adder", FunctionModel(model_after)).tool(tool).build()
    resumed = await asyncio.wait_for(agent.resume(first.run_id, crashed).send(), 10)
    assert resumed.output == "done"
    assert ran == ["c4"]  # c3 had started: not run again
    results = [r for m in resumed.messages for r in m.tool_results]
    assert [r.tool_call_id for r in results] == [f"c{i}" for i in range(5)]
    assert "interrupted" in str(results[3].content).lower()
    stored = RunStore(copy).get(first.run_id)
    assert [m.model_dump() for m in stored.messages] == [m.model_dump() for m in resumed.messages]
