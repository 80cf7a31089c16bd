"""The run store: write-through, decisions from anywhere (first one wins), listing, errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading

import pytest

import anvia_notebook as an
from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    DecisionRefusedError,
    RunStore,
    RunStoreError,
    StoreHumanInput,
    ToolApproval,
    ask_question,
)
from anvia_notebook.models import ModelResponse, QueueModel

from helpers import call, make_add_tool


def protected_agent(*responses, human=None):
    tool = make_add_tool(approval=ToolApproval(reason="check the sum"))
    model = QueueModel(list(responses))
    builder = AgentBuilder("adder", model).tools([tool])
    if human is not None:
        builder = builder.human_input(human)
    return builder.build(), tool, model


async def wait_pending(store: RunStore, run_id: str, kind=None):
    for _ in range(500):
        pending = [p for p in store.pending(run_id) if kind is None or type(p).__name__ == kind]
        if pending:
            return pending
        await asyncio.sleep(0.01)
    raise AssertionError("nothing became pending")


async def test_a_run_is_written_through_and_listed(store_location):
    agent, tool, _ = protected_agent(
        call("add", {"x": 2, "y": 3}), ModelResponse(text="5"), human=StoreHumanInput()
    )
    run = agent.prompt("add 2 and 3").start()
    reader = RunStore(store_location)  # another connection, as another process would have
    [approval] = await wait_pending(reader, run.run_id)
    [summary] = an.runs()
    assert summary.run_id == run.run_id
    assert summary.status == "waiting"
    assert summary.pending == 1
    assert summary.prompt == "add 2 and 3"
    # The stored state says so too, as the run's handle does (its row says it runs).
    assert reader.get(run.run_id).status == run.status == "waiting"
    reader.approve(run.run_id, approval.id, reason="fine")
    response = await asyncio.wait_for(run.wait(), 5)
    assert response.output == "5"
    assert tool.calls == [(2, 3)]
    state = reader.get(run.run_id)
    assert state.status == "success"
    assert state.approvals[approval.id].status == "approved"
    assert state.approvals[approval.id].decision_reason == "fine"
    assert [m.role for m in state.messages] == ["user", "assistant", "tool", "assistant"]
    assert an.runs()[0].status == "success"
    kinds = [e.type for e in reader.events(run.run_id)]
    assert kinds[-1] == "final"
    assert "tool_approval_result" in kinds


async def test_a_decision_from_another_connection_reaches_the_run_at_the_next_poll(
    store_location,
):
    """The run's store looks for decisions written elsewhere every ``POLL_INTERVAL`` (0.2 s):
    one written by another connection ends the wait at the watcher's next look (or the one
    after, for a PostgreSQL notification still on its way), as that decision, not a timeout."""
    agent, tool, _ = protected_agent(
        call("add", {"x": 1, "y": 1}), ModelResponse(text="2"), human=StoreHumanInput(timeout=600)
    )
    run = agent.prompt("go").start()
    other = RunStore(store_location)
    [approval] = await wait_pending(other, run.run_id)
    backend = run.interactions.store._backend  # the run's own store: its watcher polls this
    real_look = backend.data_version
    written = threading.Event()
    polls_after = [0]

    def counting_look():
        if written.is_set():
            polls_after[0] += 1
        return real_look()

    backend.data_version = counting_look
    try:
        # decide from another thread with its own connection, like another process
        await asyncio.to_thread(other.reject, run.run_id, approval.id, "no")
        written.set()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(run.wait()), 0)  # not yet seen synchronously
        await asyncio.wait_for(run.wait(), 10)
    finally:
        backend.data_version = real_look
    assert polls_after[0] <= 2
    assert tool.calls == []
    record = run.state.approvals[approval.id]
    assert (record.status, record.decision_reason) == ("rejected", "no")  # not timed out


async def test_a_second_decision_is_refused_everywhere(store_location):
    agent, tool, _ = protected_agent(
        call("add", {"x": 1, "y": 2}), ModelResponse(text="3"), human=StoreHumanInput()
    )
    run = agent.prompt("go").start()
    store = RunStore(store_location)
    [approval] = await wait_pending(store, run.run_id)
    run.interactions.decide(approval.id, approved=True)
    with pytest.raises(DecisionRefusedError, match="already approved"):
        store.reject(run.run_id, approval.id)
    with pytest.raises(DecisionRefusedError):
        run.interactions.decide(approval.id, approved=False)
    await asyncio.wait_for(run.wait(), 5)
    assert tool.calls == [(1, 2)]
    with pytest.raises(DecisionRefusedError, match="Unknown"):
        store.approve(run.run_id, "approval_nope")


async def test_the_handler_and_the_store_race_and_only_one_decision_counts(store_location):
    release = asyncio.Event()

    async def handler(request):
        await release.wait()
        return ApprovalDecision(approved=True)

    agent, tool, _ = protected_agent(call("add", {"x": 4, "y": 4}), ModelResponse(text="8"))
    run = agent.prompt("go").approvals(handler).start()
    store = RunStore(store_location)
    [approval] = await wait_pending(store, run.run_id)
    store.reject(run.run_id, approval.id, reason="the store was first")
    await asyncio.wait_for(run.wait(), 5)
    release.set()
    assert tool.calls == []
    assert run.state.approvals[approval.id].status == "rejected"
    assert run.state.approvals[approval.id].decision_reason == "the store was first"


async def test_questions_are_answered_through_the_store_and_checked(store_location):
    model = QueueModel(
        [
            call(
                "ask_question",
                {
                    "questions": [
                        {
                            "id": "priority",
                            "question": "Which priority?",
                            "choices": [{"label": "Low", "value": "low"}],
                        }
                    ]
                },
            ),
            ModelResponse(text="ok"),
        ]
    )
    agent = (
        AgentBuilder("asker", model).tools([ask_question]).human_input(StoreHumanInput()).build()
    )
    run = agent.prompt("go").start()
    store = RunStore(store_location)
    [question] = await wait_pending(store, run.run_id)
    with pytest.raises(DecisionRefusedError):
        store.answer(run.run_id, question.id, [{"questionId": "priority", "answer": "  "}])
    with pytest.raises(DecisionRefusedError):
        store.answer(
            run.run_id, question.id, [{"questionId": "priority", "answer": "x", "choice": "high"}]
        )
    with pytest.raises(DecisionRefusedError, match="cannot be declined"):
        store.decline(run.run_id, question.id)  # ask_question's questions are answered
    assert store.pending(run.run_id)[0].id == question.id  # refused answers change nothing
    store.answer(
        run.run_id, question.id, [{"questionId": "priority", "answer": "urgent", "custom": True}]
    )
    await asyncio.wait_for(run.wait(), 5)
    result = json.loads(model.requests[1].messages[-1].tool_results[0].content)
    assert result == {"answers": [{"questionId": "priority", "answer": "urgent", "custom": True}]}
    assert store.get(run.run_id).questions[question.id].status == "answered"


def test_text_deltas_are_coalesced_in_the_log_and_the_store(store_location):
    text = "".join(f"w{i} " for i in range(2000))
    agent = AgentBuilder("talker", QueueModel([ModelResponse(text=text)])).build()
    request = agent.prompt("talk")
    seen = []

    async def main():
        async for event in request.stream():
            seen.append(event)

    asyncio.run(main())
    deltas = [e for e in seen if e.type == "text_delta"]
    assert len(deltas) > 100  # streamed piece by piece
    run = request._run
    logged = [e for e in run.events if e.type == "text_delta"]
    assert len(logged) == 1 and logged[0].delta == text
    assert deltas[0].delta != text  # what subscribers got was not changed afterwards
    stored = [e for e in RunStore(store_location).events(run.run_id) if e.type == "text_delta"]
    assert [e.delta for e in stored] == [text]


class CountingStore(RunStore):
    """A run store that notes what each write of a run holds: (state, events, trace rows)."""

    def __init__(self, location):
        super().__init__(location)
        self.writes: list[tuple[bool, int, int]] = []

    def save_run(self, run_id, state, events, messages_from=0, trace_rows=()):
        self.writes.append((state is not None, len(events), len(trace_rows)))
        super().save_run(run_id, state, events, messages_from, trace_rows)


async def test_each_call_is_stored_before_it_runs_and_the_log_and_trace_are_not_rewritten_each_time(
    store_location, monkeypatch
):
    from anvia_notebook import run as run_module

    monkeypatch.setattr(run_module, "STORE_FLUSH_INTERVAL", 3600.0)  # no write falls due by time
    store = CountingStore(store_location)
    reader = RunStore(store_location)  # another connection, as a process resuming the run has
    found = []

    def execute(args, ctx):
        state = reader.get(ctx.run.run_id)  # what a crash now would leave
        progress = state.calls[ctx.tool_call_id]
        asked = state.messages[-1].tool_calls[0].id
        found.append((ctx.tool_call_id, progress.status, asked))
        return args.x + args.y

    from helpers import AddInput

    tool = an.create_tool(name="add", description="Add.", input=AddInput, execute=execute)
    steps = [call("add", {"x": i, "y": 1}, id=f"c{i}") for i in range(3)]
    agent = AgentBuilder("adder", QueueModel([*steps, ModelResponse(text="done")])).tool(tool)
    request = agent.build().prompt("count").store(store)
    response = await asyncio.wait_for(request.send(), 10)

    assert response.output == "done"
    assert found == [(f"c{i}", "started", f"c{i}") for i in range(3)]
    # The event log and the trace are written with each tool round's end and the run's end (or
    # once a second), not again with each call's start record: the write before a call holds
    # the state alone.
    logged = [w for w in store.writes if w[1]]
    assert len(logged) == 4 and logged[-1] == store.writes[-1]
    assert [w for w in store.writes if w[2]] == logged
    assert all(w == (True, 0, 0) for w in store.writes if not w[1])
    run = request._run
    assert [e.type for e in reader.events(response.run_id)] == [e.type for e in run.events]
    assert reader.trace(response.run_id).model_dump() == run.trace.model_dump()
    assert reader.get(response.run_id).status == "success"


def test_a_run_is_stored_whole_or_not_at_all(store_path):
    with sqlite3.connect(RunStore(store_path).location) as db:  # the conversation cannot be written
        db.execute(
            "CREATE TRIGGER no_messages BEFORE INSERT ON messages "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
    agent = AgentBuilder("a", QueueModel([ModelResponse(text="hi")])).build()
    # A long prompt: its run and its conversation are rows of two tables (a short one is kept in
    # the run's own row, one statement).
    long_prompt = "x" * 5000
    with pytest.warns(RuntimeWarning, match="disk full"):
        assert agent.prompt(long_prompt).store(store_path).send_sync().output == "hi"
    assert RunStore(store_path).runs() == []  # no run without its prompt


async def test_the_store_moves_its_log_into_the_database_file_itself(store_path, monkeypatch):
    from anvia_notebook.store import _store

    monkeypatch.setattr(_store, "POLL_INTERVAL", 0.01)
    store = RunStore(store_path)
    agent = AgentBuilder("a", QueueModel([ModelResponse(text="hi")])).build()
    await agent.prompt("x").store(store).send()

    def in_the_file() -> bool:  # every page is in the database file, not only in its log
        with contextlib.closing(sqlite3.connect(store_path)) as db:
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            size = db.execute("PRAGMA page_size").fetchone()[0]
        return store_path.stat().st_size >= pages * size

    for _ in range(500):  # by the store's background thread, long before the log is full
        if in_the_file():
            break
        await asyncio.sleep(0.01)
    assert in_the_file()
    assert store.runs()[0].status == "success"


def test_closing_a_store_stops_its_background_thread_before_its_connections_close(
    store_path, monkeypatch
):
    from anvia_notebook.store import _store

    monkeypatch.setattr(_store, "POLL_INTERVAL", 0.001)
    polled = threading.Event()
    store = RunStore(store_path)
    backend = store._backend
    original = backend.data_version

    def data_version() -> int:
        polled.set()
        return original()

    monkeypatch.setattr(backend, "data_version", data_version)
    store.watch("nothing-yet", lambda status, decision: None)
    assert polled.wait(10)  # the thread is polling the file
    watcher = store._watcher
    assert watcher is not None
    store.close()
    assert not watcher.is_alive()  # joined before the connections were closed
    store.watch("another", lambda status, decision: None)
    assert store._watcher is None  # a closed store starts no thread again


def test_runs_can_be_kept_in_memory_only(monkeypatch, store_path):
    an.set_store(None)
    try:
        agent = AgentBuilder("a", QueueModel([ModelResponse(text="hi")])).build()
        assert agent.prompt("x").send_sync().output == "hi"
        assert an.runs() == []
    finally:
        an.set_store(store_path)


def test_a_store_is_given_as_a_store_a_text_path_or_a_pathlib_path(tmp_path):
    agent = AgentBuilder("a", QueueModel(["one", "two"])).build()
    first = agent.prompt("x").store(tmp_path / "runs.sqlite").send_sync()
    second = agent.prompt("y").store(str(tmp_path / "runs.sqlite")).send_sync()
    stored = RunStore(tmp_path / "runs.sqlite")
    assert {r.run_id for r in stored.runs()} == {first.run_id, second.run_id}
    for wrong in (42, ["runs.sqlite"], b"runs.sqlite"):
        with pytest.raises(TypeError, match="RunStore, a file path or a postgresql"):
            agent.prompt("z").store(wrong)
        with pytest.raises(TypeError, match="RunStore, a file path or a postgresql"):
            an.set_store(wrong)
        with pytest.raises(TypeError, match="RunStore, a file path or a postgresql"):
            agent.resume("run_x", store=wrong)


def test_a_foreign_or_damaged_file_is_refused_clearly(tmp_path):
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunStoreError, match="damaged"):
        RunStore(damaged)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(RunStoreError, match="another application"):
        RunStore(foreign)
    assert sqlite3.connect(foreign).execute("SELECT name FROM sqlite_master").fetchall() == [
        ("customers",)
    ]


def test_a_store_of_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "runs.sqlite"
    RunStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(RunStoreError, match="newer"):
        RunStore(path)


def test_a_store_of_an_older_version_is_migrated(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as db:  # what the first release wrote before any table existed
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('application', 'anvia_notebook')")
        db.execute("INSERT INTO meta VALUES ('schema_version', '0')")
    store = RunStore(path)
    assert store.schema_version == an.store._store.SCHEMA_VERSION
    assert store.runs() == []


def test_a_read_only_folder_keeps_the_run_in_memory_with_one_warning(tmp_path, monkeypatch):
    import os

    if os.geteuid() == 0:
        # root ignores folder permissions: use a path whose parent is a file instead
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("x")
        location = blocker / "runs.sqlite"
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
        location = folder / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(location))
    an.store._reset_for_tests()
    try:
        agent = AgentBuilder(
            "a", QueueModel([ModelResponse(text="one"), ModelResponse(text="two")])
        ).build()
        with pytest.warns(RuntimeWarning, match="memory") as caught:
            assert agent.prompt("x").send_sync().output == "one"
        assert agent.prompt("y").send_sync().output == "two"  # no second warning
        assert len(caught) == 1
    finally:
        an.store._reset_for_tests()


def test_a_locked_database_makes_writers_wait_then_go_on(store_path):
    RunStore(store_path).close()
    blocker = sqlite3.connect(store_path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, lambda: blocker.execute("COMMIT"))
    released.start()
    try:
        agent = AgentBuilder("a", QueueModel([ModelResponse(text="ok")])).build()
        response = agent.prompt("x").send_sync()
    finally:
        released.join()
        blocker.close()
    assert response.output == "ok"
    assert RunStore(store_path).get(response.run_id).status == "success"


def test_a_store_locked_for_too_long_is_reported_as_locked(store_path, monkeypatch):
    from anvia_notebook.store import _sqlite

    RunStore(store_path).close()
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.05)
    blocker = sqlite3.connect(store_path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        store = RunStore(store_path)  # (opening a current store only reads it)
        assert store.runs() == []
        with pytest.raises(RunStoreError, match="locked"):
            store.save_session("s1", "agent", "a title", [])
        store.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_runs_display_as_a_table_and_a_dataframe(store_path):
    agent = AgentBuilder("shop", QueueModel([ModelResponse(text="ok")])).build()
    response = agent.prompt("<b>refund</b> please").send_sync()
    listed = an.runs()
    html = listed._repr_html_()
    assert response.run_id in html and "success" in html
    assert "&lt;b&gt;refund&lt;/b&gt;" in html and "<b>refund" not in html
    frame = listed.to_pandas()
    assert list(frame["run_id"]) == [response.run_id]
    assert list(frame["status"]) == ["success"]
    assert an.runs(status="waiting") == []
    assert an.runs(agent_id="other") == []


def test_a_status_no_run_can_have_is_an_error(store_location):
    """Before, ``runs(status="bogus")`` answered an empty list (a typo looked like "no runs")."""
    store = RunStore(store_location)
    agent, _, _ = protected_agent(ModelResponse(text="hi"))
    run_id = agent.prompt("hello").store(store).send_sync().run_id
    with pytest.raises(ValueError, match="'bogus' is not a run status: one of pending, running,"):
        store.runs(status="bogus")
    assert [s.run_id for s in store.runs(status="success")] == [run_id]
    assert store.runs(status="waiting") == []


@pytest.mark.parametrize(
    ("location", "error", "words"),
    [
        ("sqlite:///runs.db", an.RunStoreError, "not a sqlite:// address"),
        ("mysql://user@127.0.0.1/runs", an.RunStoreError, "not a mysql:// address"),
        ("  ", an.RunStoreError, "needs a location"),
        ("host=127.0.0.1 dbname=runs user=ana", an.RunStoreError, "connection keywords"),
        ("dbname=runs", an.RunStoreError, r"write them as an address, postgresql://USER"),
        (5, TypeError, "not int"),
        (None, TypeError, "not NoneType"),
    ],
)
def test_what_names_no_run_store_is_refused_and_nothing_is_made(
    location, error, words, tmp_path, monkeypatch
):
    """Before, ``RunStore("sqlite:///runs.db")`` made a folder named ``sqlite:`` and a store in
    it, and ``RunStore(5)`` raised Python's "expected str, bytes or os.PathLike object"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=words):
        RunStore(location)
    assert list(tmp_path.iterdir()) == []


def test_a_default_store_address_of_another_kind_keeps_runs_in_memory_with_a_warning(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", "sqlite:///runs.db")
    an.store._reset_for_tests()
    try:
        agent = AgentBuilder("a", QueueModel([ModelResponse(text="one")])).build()
        with pytest.warns(RuntimeWarning, match="not a sqlite:// address"):
            assert agent.prompt("x").send_sync().output == "one"
        assert list(tmp_path.iterdir()) == []
    finally:
        an.store._reset_for_tests()


def test_a_store_used_in_a_with_block_is_closed_at_its_end(store_path):
    with RunStore(store_path) as store:
        agent = AgentBuilder("a", QueueModel([ModelResponse(text="one")])).build()
        run_id = agent.prompt("x").store(store).send_sync().run_id
        assert [run.run_id for run in store.runs()] == [run_id]
    assert store._closed


def test_reading_a_run_the_store_does_not_hold_is_an_error_not_an_empty_run(store_location):
    """A mistyped run id used to read as a run with no events, approvals or sub-agents."""
    store = RunStore(store_location)
    agent, _, _ = protected_agent(ModelResponse(text="hi"))
    run_id = agent.prompt("hello").store(store).send_sync().run_id
    assert store.interactions(run_id) == [] and store.pending(run_id) == []
    assert store.sub_runs(run_id) == [] and store.events(run_id)
    for read in (store.events, store.interactions, store.pending, store.sub_runs):
        with pytest.raises(an.RunNotFoundError, match="No stored run 'run_typo'"):
            read("run_typo")
    assert store.pending() == []  # every run's: none waits


async def test_declining_an_approval_is_refused_and_changes_nothing(store_location):
    """``decline`` is for a server's question: given an approval's id it used to write the
    approval cancelled (the run read it as a rejection), then fail on an assertion."""
    agent, tool, _ = protected_agent(
        call("add", {"x": 1, "y": 1}), ModelResponse(text="2"), human=StoreHumanInput(timeout=600)
    )
    run = agent.prompt("go").start()
    other = RunStore(store_location)
    [approval] = await wait_pending(other, run.run_id)
    with pytest.raises(DecisionRefusedError, match="is an approval, not a question"):
        other.decline(run.run_id, approval.id)
    with pytest.raises(DecisionRefusedError, match="is an approval, not a question"):
        other.answer(run.run_id, approval.id, [{"questionId": "q1", "answer": "x"}])
    assert [p.id for p in other.pending(run.run_id)] == [approval.id]
    assert other.get(run.run_id).approvals[approval.id].status == "pending"
    other.approve(run.run_id, approval.id)
    assert (await asyncio.wait_for(run.wait(), 10)).output == "2"
    assert len(tool.calls) == 1
