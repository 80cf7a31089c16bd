"""The run store given hostile files and faults: another application's database, a damaged
page, a store locked or busy, odd run ids and limits. Errors are RunStoreError (the command line:
one line, a non-zero exit), never a raw driver error; a refused file is left as it was."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import anvia_notebook as an
from anvia_notebook import (
    AgentBuilder,
    PromptCancelledError,
    RunStore,
    RunStoreError,
    StoreHumanInput,
    ToolApproval,
)
from anvia_notebook.models import ModelResponse, QueueModel

from helpers import call, make_add_tool


def foreign_database(path, *tables_and_rows):
    with sqlite3.connect(path) as db:
        for sql in tables_and_rows:
            db.execute(sql)
    db.close()
    return path


@pytest.mark.parametrize(
    "statements",
    [
        ["CREATE TABLE customers (id INTEGER, name TEXT)", "INSERT INTO customers VALUES (1, 'a')"],
        [  # a meta table, but of another application
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "INSERT INTO meta VALUES ('application', 'ledger')",
        ],
        [  # a meta table of another shape (it gave "no such column: key")
            "CREATE TABLE meta (name TEXT, setting TEXT)",
            "INSERT INTO meta VALUES ('theme', 'dark')",
        ],
    ],
    ids=["other tables", "other application", "other meta table"],
)
def test_a_refused_file_is_left_byte_for_byte_as_it_was(tmp_path, statements):
    path = foreign_database(tmp_path / "app.sqlite", *statements)
    before = path.read_bytes()
    with pytest.raises(RunStoreError, match=r"not an anvia_notebook run store") as caught:
        RunStore(path)
    assert "choose another store (set_store(...) in a notebook, --store on the command" in str(
        caught.value
    )
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]  # no -wal, no -shm


def test_a_new_or_empty_file_becomes_a_store_in_write_ahead_log_mode(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for path in (tmp_path / "new.sqlite", empty):
        RunStore(path).close()
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert ("meta",) in db.execute("SELECT name FROM sqlite_master").fetchall()
        db.close()


def command_line(*args, env=None):
    """``python -m anvia_notebook ARGS`` in another process."""
    root = str(Path(an.__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": root, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "anvia_notebook", *args],
        capture_output=True,
        env=environment,
        timeout=120,
    )


def one_line_error(result) -> str:
    assert result.returncode == 1, result
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and result.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def test_a_damaged_page_is_a_store_error_from_runs_and_the_command_line(tmp_path):
    path = tmp_path / "runs.sqlite"
    agent = AgentBuilder("a", QueueModel(["ok"] * 20)).build()
    # One store, closed before the damage: no background thread of an open store may checkpoint
    # meanwhile (the TRUNCATE below then returns busy, and the page is read from the log).
    writer = RunStore(path)
    for i in range(20):  # enough runs for the table to fill pages of its own
        agent.prompt(f"question {i} " * 100).store(writer).send_sync()
    writer.close()
    an.store._reset_for_tests()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0  # not busy
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()
        (page_size,) = db.execute("PRAGMA page_size").fetchone()
    with path.open("r+b") as file:  # the table's first page, overwritten
        file.seek(page_size * (root - 1))
        file.write(b"\xff" * page_size)
    store = RunStore(path)  # (the schema's own pages are intact)
    with pytest.raises(RunStoreError, match=r"is damaged .*malformed.*Move the file away"):
        store.runs()
    store.close()
    err = one_line_error(command_line("runs", "--store", str(path)))
    assert "is damaged" in err and "malformed" in err


def write_locker(path):
    """Another connection that holds the store's write lock until ``release()``."""
    locker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    locker.execute("BEGIN IMMEDIATE")
    return locker


async def test_a_store_locked_by_another_writer_refuses_a_decision_clearly(store_path, monkeypatch):
    from anvia_notebook.store import _sqlite

    tool = make_add_tool(approval=ToolApproval(reason="check"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="3")])
    agent = AgentBuilder("a", model).tool(tool).human_input(StoreHumanInput()).build()
    run = agent.prompt("add").start()
    reader = RunStore(store_path)
    for _ in range(500):
        pending = reader.pending(run.run_id)
        if pending:
            break
        await asyncio.sleep(0.01)
    [approval] = pending
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.5)
    decider = RunStore(store_path)
    locker = write_locker(store_path)
    try:
        with pytest.raises(RunStoreError, match=r"locked by another program .*Try again"):
            decider.approve(run.run_id, approval.id)
        # The command line (its own default wait) prints one line and exits with status 1.
        result = command_line("approve", run.run_id, approval.id, "--store", str(store_path))
        assert "is locked by another program" in one_line_error(result)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    decider.approve(run.run_id, approval.id)  # once released, the decision goes through
    response = await asyncio.wait_for(run.wait(), 10)
    assert response.output == "3" and tool.calls == [(1, 2)]
    decider.close()
    reader.close()


def test_a_store_that_is_only_busy_never_fails_a_run(store_path, recwarn):
    """Another writer holds the lock past SQLite's own wait: the run's writer waits and retries
    (it says so at DEBUG level, which is what releases the lock here), and the run is stored."""
    RunStore(store_path).close()
    waiting = threading.Event()

    class Busy(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "is busy" in record.getMessage():
                waiting.set()

    handler = Busy(logging.DEBUG)
    logger = logging.getLogger("anvia_notebook")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    locker = write_locker(store_path)

    def release() -> None:
        waiting.wait(timeout=60)
        locker.execute("COMMIT")

    releaser = threading.Thread(target=release)
    releaser.start()
    try:
        agent = AgentBuilder("a", QueueModel([ModelResponse(text="ok")])).build()
        response = agent.prompt("x").send_sync()
    finally:
        waiting.set()
        releaser.join()
        locker.close()
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert response.output == "ok"
    assert not [w for w in recwarn if "run store" in str(w.message)]
    assert RunStore(store_path).get(response.run_id).status == "success"


def test_show_with_a_run_id_that_is_not_utf8_prints_a_clean_error(store_path):
    AgentBuilder("a", QueueModel(["ok"])).build().prompt("x").send_sync()
    result = command_line("show", os.fsdecode(b"run_\xff\xfe"), "--store", str(store_path))
    assert result.returncode == 2
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert (
        err
        == "error: The run id 'run_\\xff\\xfe' is not valid UTF-8 text; check how it was typed.\n"
    )


def test_a_limit_of_zero_lists_no_run_and_a_negative_limit_is_refused(store_path):
    agent = AgentBuilder("a", QueueModel(["one", "two", "three"])).build()
    for prompt in ("a", "b", "c"):
        agent.prompt(prompt).send_sync()
    store = RunStore(store_path)
    assert store.runs(limit=0) == [] and an.runs(limit=0) == []
    assert [r.prompt for r in store.runs(limit=1)] == ["c"]
    assert len(store.runs(limit=3)) == 3
    assert len(store.runs(limit=None)) == 3 == len(an.runs(limit=None))  # (all of them)
    for refused in (store.runs, an.runs):
        with pytest.raises(ValueError, match="0 or more, not -1"):
            refused(limit=-1)
        with pytest.raises(TypeError, match="whole number"):
            refused(limit=1.5)
    store.close()
    listed = command_line("runs", "--limit", "0", "--json", "--store", str(store_path))
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    listed = command_line("runs", "--limit", "2", "--json", "--store", str(store_path))
    assert [r["prompt"] for r in json.loads(listed.stdout)] == ["c", "b"]
    for wrong in ("-1", "two"):
        refused = command_line("runs", "--limit", wrong, "--store", str(store_path))
        err = refused.stderr.decode()
        assert refused.returncode == 2 and "Traceback" not in err
        assert "is not a number of runs (0 or more)" in err


def test_text_with_nul_characters_is_stored_and_read_back_exactly(store_location, recwarn):
    """PostgreSQL's text columns cannot hold NUL: the run was kept in memory only there."""
    nul = "before\x00after \ue000 \ue0001"  # (and the character that escapes it there)
    tool = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}, id=f"c{nul}"), ModelResponse(text=nul)])
    agent = AgentBuilder("a", model).tool(tool).build()
    response = agent.prompt(f"prompt {nul}").session(f"s{nul}").send_sync()
    assert response.output == nul
    assert not [w for w in recwarn if "run store" in str(w.message)]
    store = RunStore(store_location)
    [summary] = store.runs(session_id=f"s{nul}")
    assert summary.prompt == f"prompt {nul}" and summary.session_id == f"s{nul}"
    assert summary.status == "success"
    state = store.get(response.run_id)
    assert [m.content for m in state.messages if m.role != "tool"] == [f"prompt {nul}", "", nul]
    assert state.messages[1].tool_calls[0].id == f"c{nul}"
    trace = store.trace(response.run_id)
    assert trace.tool_calls[0].id == f"c{nul}" and trace.turns[-1].response.text == nul
    assert [e for e in store.events(response.run_id) if e.type == "final"][0].output == nul
    store.save_session(f"s{nul}", "a", f"title {nul}", [])
    assert store.session(f"s{nul}").title == f"title {nul}"
    store.close()


def test_a_run_id_that_is_not_utf8_is_a_store_error_from_the_api(store_location):
    store = RunStore(store_location)
    with pytest.raises(RunStoreError, match=r"cannot take 'run_\\xff': it is not valid UTF-8"):
        store.get(os.fsdecode(b"run_\xff"))
    store.close()


def test_a_run_state_changed_by_hand_is_a_store_error_from_get_resume_and_show(tmp_path):
    """A damaged ``runs.state`` was a bare pydantic ``ValidationError`` from ``get`` and
    ``resume``, and ``show`` printed "1 validation error for RunState" with pydantic's link."""
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    agent = AgentBuilder("a", QueueModel(["ok"])).build()
    run_id = agent.prompt("hi").store(store).send_sync().run_id
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "UPDATE runs SET state = '{not json', status = 'running' WHERE run_id = ?", (run_id,)
        )
    said = (
        rf"The stored state of run '{run_id}' in .* could not be read \(was it changed by hand\?\)"
    )
    with pytest.raises(RunStoreError, match=said):
        store.get(run_id)
    with pytest.raises(RunStoreError, match=said):
        agent.resume(run_id, store)
    store.close()
    err = one_line_error(command_line("show", run_id, "--store", str(path)))
    assert "could not be read (was it changed by hand?)" in err
    assert "pydantic" not in err and "validation error for" not in err


def test_a_conversation_changed_by_hand_is_a_store_error_from_get_and_show(tmp_path):
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    agent = AgentBuilder("a", QueueModel(["ok"])).build()
    run_id = agent.prompt("hi").store(store).send_sync().run_id
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE messages SET message = '{\"role\": 7}' WHERE run_id = ?", (run_id,))
        db.execute("UPDATE runs SET recent_messages = NULL WHERE run_id = ?", (run_id,))
    said = rf"The stored conversation of run '{run_id}' in .* could not be read"
    with pytest.raises(RunStoreError, match=said):
        store.get(run_id)
    store.close()
    err = one_line_error(command_line("show", run_id, "--store", str(path)))
    assert "could not be read (was it changed by hand?)" in err and "pydantic" not in err


async def test_a_decision_that_cannot_be_read_holds_up_no_other_run(store_path, caplog):
    """Two runs of this process wait for a decision through the store; one's stored decision
    is damaged (changed by hand): the other's decision was never delivered either (the watcher's
    whole look failed, and was made again every 0.2 s)."""
    tool = make_add_tool(approval=ToolApproval(reason="check"))
    runs = []
    for _ in range(2):
        model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="3")])
        agent = AgentBuilder("a", model).tool(tool).human_input(StoreHumanInput()).build()
        runs.append(agent.prompt("add").start())
    decider = RunStore(store_path)
    pending = []
    for run in runs:
        for _ in range(1000):
            pending = decider.pending(run.run_id)
            if pending:
                break
            await asyncio.sleep(0.01)
        assert pending
    damaged, fine = (decider.pending(run.run_id)[0] for run in runs)
    with contextlib.closing(sqlite3.connect(store_path)) as db, db:
        db.execute(
            "UPDATE interactions SET status = 'approved', record = '{not json' WHERE id = ?",
            (damaged.id,),
        )
    with caplog.at_level(logging.WARNING, logger="anvia_notebook"):
        decider.approve(runs[1].run_id, fine.id)
        response = await asyncio.wait_for(runs[1].wait(), 10)
    assert response.output == "3"
    assert any(
        damaged.id in r.getMessage() and "could not be read" in r.getMessage()
        for r in caplog.records
    )
    runs[0].cancel()  # (closing the damaged one, the run cannot read it either: it says so)
    said = pytest.warns(RuntimeWarning, match="could not be read")
    with said, pytest.raises(PromptCancelledError):
        await asyncio.wait_for(runs[0].wait(), 10)
    decider.close()
