"""The PostgreSQL team store's connections, as a server others run treats them: a listening
connection the server ends (a restart, an idle timeout, a failover) is opened again and a
waiting run still hears a decision; an idle connection the server ended is replaced before it
is used; a thread's connection outlives the thread only as one for the next thread (a kernel
doing one run after another used one more connection per run); a lock another program holds is
waited for 5 s, as a SQLite store waits, then named; a password is never repeated from the
driver's messages."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import store_agents
from postgres_server import fresh_database, running_postgres, start_server, stop_server

from anvia_notebook import RunStore, RunStoreError
from anvia_notebook import store as store_module
from anvia_notebook.store import _postgres

from helpers import pending_of

psycopg = pytest.importorskip("psycopg")
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def team_store(request, tmp_path, monkeypatch):
    """A fresh database on the test server, the default store; and the server's admin URL."""
    server = request.getfixturevalue("postgres_server")
    location, name = fresh_database(server)
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", location)
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    store_module._reset_for_tests()
    yield location, server, name
    store_module._reset_for_tests()


def _end_backends(server: str, database: str, like: str = "%") -> int:
    """End the database's server processes whose last statement is ``like`` (as an admin's
    pg_terminate_backend, an idle timeout or a failover does)."""
    with psycopg.connect(server, autocommit=True) as db:
        [(count,)] = db.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid() AND query LIKE %s",
            (database, like),
        ).fetchall()
    return int(count)


def _connections(server: str, database: str) -> int:
    with psycopg.connect(server, autocommit=True) as db:
        [(count,)] = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
    return int(count)


async def test_a_decision_reaches_a_run_whose_listening_connection_the_server_ended(team_store):
    location, server, database = team_store
    run = store_agents.agent("approval").prompt("send 5 to a1").start()
    [waiting] = await pending_of(run)
    store = store_module.get_store()
    assert store is not None

    store._backend.data_version()  # (its listening connection is open)
    assert _end_backends(server, database, "LISTEN%") == 1
    await approved_from_the_command_line(location, run, waiting)
    assert store_agents.effects() == ["started a1 5", "done a1 5"]


async def test_a_run_whose_connections_the_server_ended_goes_on_being_stored(team_store):
    """A server restart (or an admin's pg_terminate_backend) while a run waits: the run's next
    write failed with "terminating connection due to administrator command", the run went on in
    memory only, the store kept it as interrupted, and resuming that copy ran the approved tool
    a second time. The statement the server never ran is run again on a new connection."""
    location, server, database = team_store
    run = store_agents.agent("approval").prompt("send 5 to a1").start()
    [waiting] = await pending_of(run)
    assert _end_backends(server, database) >= 1  # the run's connections
    await approved_from_the_command_line(location, run, waiting)
    store = RunStore(location)
    [stored] = store.runs()
    assert stored.status == "success", stored
    store.close()
    assert store_agents.effects() == ["started a1 5", "done a1 5"]


@contextlib.contextmanager
def ended_inside_a_write(
    backend: Any, server: str, at: Callable[[str], bool] = lambda sql: True
) -> Iterator[list[str]]:
    """The server ends ``backend``'s connection inside a write's transaction, once, just before
    the first statement ``at`` picks is sent (it then fails): the statement, in the list."""
    real_execute = backend.execute
    ended: list[str] = []

    def execute(sql: str, params: Any = ()) -> Any:
        connection = backend._connection()
        if not ended and at(sql) and not backend._alone(connection):
            ended.append(sql)
            with psycopg.connect(server, autocommit=True) as db:  # (waits until it is gone)
                db.execute("SELECT pg_terminate_backend(%s, 30000)", (connection.info.backend_pid,))
        return real_execute(sql, params)

    backend.execute = execute
    try:
        yield ended
    finally:
        del backend.execute


async def test_a_run_whose_connection_the_server_ended_inside_a_write_goes_on_being_stored(
    team_store,
):
    """The server ended the run's connection in the middle of a write's transaction (a
    restart or an admin's pg_terminate_backend while the run wrote): the run left its store
    for good ("goes on in memory only"), and the approval it waited for could no longer be
    decided through the store. Nothing of that transaction was committed: it is written
    again, whole, on a new connection."""
    location, server, _ = team_store
    run = store_agents.agent("approval").prompt("send 5 to a1").start()
    [waiting] = await pending_of(run)
    store = store_module.get_store()
    assert store is not None
    with ended_inside_a_write(store._backend, server) as ended:
        run.persist()  # (the state changed: written with the run's next checkpoint)
        run.checkpoint()
    assert ended
    assert run.store is store
    await approved_from_the_command_line(location, run, waiting)
    [stored] = RunStore(location).runs()
    assert stored.status == "success", stored
    assert store_agents.effects() == ["started a1 5", "done a1 5"]


async def test_a_connection_the_server_ended_while_an_approval_opened_stores_both_again(
    team_store,
):
    """The server ended the run's connection inside the write that stores the state that asked
    for an approval with the approval's row (one transaction): nothing of it was committed, and
    the whole write is made again on a new connection (the state and the row both), so the
    approval is decided through the store."""
    location, server, _ = team_store
    store = store_module.get_store()
    assert store is not None
    opening = lambda sql: sql.lstrip().startswith("INSERT INTO interactions")  # noqa: E731
    with ended_inside_a_write(store._backend, server, opening) as ended:
        run = store_agents.agent("approval").prompt("send 5 to a1").start()
        [waiting] = await pending_of(run)
    assert ended
    assert run.store is store
    reader = RunStore(location)
    assert reader.record(waiting.id).status == "pending"
    assert reader.get(run.run_id).approvals[waiting.id].status == "pending"
    await approved_from_the_command_line(location, run, waiting)
    assert store_agents.effects() == ["started a1 5", "done a1 5"]


def test_a_statement_on_a_connection_the_server_ended_runs_on_a_new_one(team_store):
    """An operator's first command after a server restart failed ("terminating connection
    due to administrator command") and the next one worked: it works the first time."""
    location, server, database = team_store
    store = RunStore(location)
    assert store.runs() == []
    assert _end_backends(server, database) >= 1
    assert store.runs() == []
    assert _end_backends(server, database) >= 1
    with store._backend.transaction():  # (a write's transaction, begun on a new connection)
        assert store._backend.execute("SELECT count(*) FROM runs") == [(0,)]
    store.close()


async def test_a_waiting_run_that_cannot_listen_still_hears_a_decision(team_store, monkeypatch):
    """The listening connection could not open again once the server ended it (the role's or
    the server's connection limit reached meanwhile): the watcher never looked again, and the
    run waited for ever for a decision made long before. It looks every few seconds without
    it, and tries to listen again that often."""
    location, _, _ = team_store
    monkeypatch.setattr(_postgres, "LOOK_ANYWAY_SECONDS", 0.5)
    run = store_agents.agent("approval").prompt("send 5 to a1").start()
    [waiting] = await pending_of(run)
    store = store_module.get_store()
    assert store is not None
    backend = store._backend
    backend.data_version()  # (its listening connection is open)
    connect = backend._connect
    refused: list[int] = []

    def connect_unless_listening() -> object:
        if sys._getframe(1).f_code.co_name in ("_listen", "data_version"):  # (others open)
            refused.append(1)
            raise RunStoreError("Cannot connect to the run store: too many clients already")
        return connect()

    monkeypatch.setattr(backend, "_connect", connect_unless_listening)
    backend._listener.close()  # (the server ended it, and the watcher noticed)
    other = RunStore(location)
    await asyncio.to_thread(other.approve, run.run_id, waiting.id)
    other.close()
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.output.startswith("Result:")
    assert refused  # (it tried to listen again, and could not)


def test_an_idle_connection_the_server_ended_is_replaced_before_it_is_used(team_store, monkeypatch):
    location, server, database = team_store
    store = RunStore(location)
    assert store.runs() == []
    monkeypatch.setattr(_postgres, "IDLE_CHECK_SECONDS", 0.0)  # (any idle time is long enough)
    assert _end_backends(server, database) >= 1
    assert store.runs() == []  # not "server closed the connection unexpectedly"
    store.close()


def test_threads_that_end_leave_no_connection_open_behind_them(team_store):
    """The store's background thread ends when idle and a new one starts with the next run:
    each kept a connection open until the store closed (a kernel's default store never does)."""
    location, server, database = team_store
    store = RunStore(location)
    store.runs()
    for _ in range(6):
        worker = threading.Thread(target=store.runs)
        worker.start()
        worker.join(30)
    assert _settled_connections(server, database, 2) <= 2  # this thread's, the threads' one
    store.close()
    assert _settled_connections(server, database, 0) == 0


def _settled_connections(server: str, database: str, at_most: int) -> int:
    """:func:`_connections` once the server has let go of connections closed just now: a
    server process leaves ``pg_stat_activity`` a moment after its client has gone (a CI run
    counted one right after ``close()``). Waits at most 10 s for ``at_most``."""
    deadline = time.monotonic() + 10
    while (count := _connections(server, database)) > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def test_a_lock_another_program_holds_is_waited_for_then_named(team_store):
    """A transaction left open on the interactions (an admin's psql, a process stopped mid-
    write) made the command line wait for ever; a SQLite store says so after 5 s."""
    location, _, _ = team_store
    RunStore(location).close()  # (the tables made)
    with psycopg.connect(location, autocommit=True) as blocker, blocker.transaction():
        blocker.execute("LOCK TABLE runs, interactions IN ACCESS EXCLUSIVE MODE")
        command = [sys.executable, "-m", "anvia_notebook", "--store", location, "runs"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout
    assert "is locked by another program (waited 5 s)" in done.stderr
    # On one line: the server's message, not the statement it quoted nor its caret line.
    [line] = done.stderr.strip().splitlines()
    assert "LINE 1" not in line and "SELECT" not in line, line


def test_a_password_the_driver_repeats_is_not_shown():
    for url in [
        "postgresql://bob:50%off-Sup3r@127.0.0.1:1/db",
        "postgresql://bob:Sup3r-secret@[::1:5432/db",
    ]:
        with pytest.raises(RunStoreError) as caught:
            RunStore(url)
        assert "Sup3r" not in str(caught.value), str(caught.value)


def test_an_empty_team_store_lists_no_runs_without_advice_about_notebook_files(team_store):
    """Before, it said a notebook keeps its runs in .anvia/runs.sqlite: pass that file."""
    location, _, _ = team_store
    command = [sys.executable, "-m", "anvia_notebook", "--store", location, "runs"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "No stored runs: there is no run store in postgresql://" in done.stdout
    assert "runs.sqlite" not in done.stdout
    for args in (["show", "nope"], ["approve", "nope", "approval_x"]):
        told = subprocess.run([*command[:-1], *args], capture_output=True, text=True, timeout=60)
        assert told.returncode == 1 and "No stored run 'nope'" in told.stderr, told.stderr
        assert "runs.sqlite" not in told.stderr, told.stderr


def test_a_store_let_go_closes_its_connections_at_once(team_store):
    """``RunStore(url).pending()`` in a loop (a script polling for approvals) left each store's
    connection open until Python's cycle collector ran, and psycopg warned of each one then:
    with the collector off, 30 polls held 30 of the server's connections. A store no longer
    referenced closes them as it goes."""
    import gc
    import warnings

    location, server, name = team_store
    RunStore(location).pending()  # (the schema made once)
    gc.collect()
    before = _connections(server, name)
    gc.disable()
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always", ResourceWarning)
            for _ in range(30):
                RunStore(location).pending()
            held = _connections(server, name) - before
    finally:
        gc.enable()
    assert held <= 1, f"{held} connections still open"
    assert not [w for w in warned if issubclass(w.category, ResourceWarning)]


class _RefusalsSeen:
    """The driver module as a backend uses it, its ``connect`` telling when one was refused."""

    def __init__(self) -> None:
        self.refused = threading.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(psycopg, name)

    def connect(self, *args: object, **kwargs: object) -> object:
        try:
            return psycopg.connect(*args, **kwargs)
        except psycopg.OperationalError:
            self.refused.set()
            raise


async def test_a_run_that_writes_while_its_server_restarts_waits_for_it(tmp_path, monkeypatch):
    """The server restarted while a run waited for an approval, and the run wrote in that
    moment: the connection was refused once, and the run left its store for good ("goes on in
    memory only"); the store marked it failed, an approval then sent with the command line was
    refused (or said "Approved" and never reached it), and the run waited for ever. The run
    waits for the server to take connections again."""
    # (a machine under load may take longer to start a server than a person's would)
    monkeypatch.setattr(_postgres, "RECONNECT_SECONDS", 120.0)
    with running_postgres() as server:  # (its own server: this one is stopped and started)
        location, _ = fresh_database(server)
        monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", location)
        monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
        store_module._reset_for_tests()
        try:
            run = store_agents.agent("approval").prompt("send 5 to a1").start()
            [waiting] = await pending_of(run)
            store = store_module.get_store()
            assert store is not None
            seen = _RefusalsSeen()
            monkeypatch.setattr(store._backend, "_psycopg", seen)
            stop_server(server)
            restart = threading.Thread(
                target=lambda: seen.refused.wait(30) and start_server(server)
            )
            restart.start()
            try:
                run.checkpoint()  # (a write while the server is down: refused, then waited for)
            finally:
                restart.join(90)
            assert seen.refused.is_set()
            await approved_from_the_command_line(location, run, waiting)
            assert store_agents.effects() == ["started a1 5", "done a1 5"]
            [stored] = RunStore(location).runs()
            assert stored.status == "success", stored
        finally:
            store_module._reset_for_tests()


def test_a_team_store_that_could_not_be_opened_is_tried_again_and_resume_says_why(
    request, monkeypatch
):
    """The store could not be opened once (its database not there yet, its server down a
    moment): every later run of the process stayed in memory, without a word; and resuming
    said "Runs are not stored (ANVIA_NOTEBOOK_STORE is off ...)", hiding why."""
    from anvia_notebook import AgentBuilder
    from anvia_notebook.models import FunctionModel

    server = request.getfixturevalue("postgres_server")
    name = f"later_{threading.get_ident()}"
    location = server.rsplit("/", 1)[0] + "/" + name
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", location)
    monkeypatch.setattr(store_module, "REOPEN_SECONDS", 0.0)
    store_module._reset_for_tests()
    agent = AgentBuilder("k", FunctionModel(lambda request: "ok")).build()
    try:
        with pytest.warns(RuntimeWarning, match="Runs stay in memory only"):
            agent.prompt("while there is no database").send_sync()
        with pytest.raises(RunStoreError, match=f'database "{name}" does not exist'):
            agent.resume("run_0123456789abcdef0123")
        with psycopg.connect(server, autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        agent.prompt("once it is there").send_sync()
        store = RunStore(location)
        assert [run.prompt for run in store.runs()] == ["once it is there"]
        store.close()
    finally:
        store_module._reset_for_tests()


def test_reading_a_database_with_no_tables_leaves_it_so(request, capsys):
    """``runs`` and ``show`` on a PostgreSQL database with no tables (a mistyped name on a
    server with many) made it a run store of ten tables; a missing or empty file is not made
    one. It is said there is no run store there."""
    from anvia_notebook.__main__ import main as cli

    location, _ = fresh_database(request.getfixturevalue("postgres_server"))
    assert cli(["--store", location, "runs"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("No stored runs: there is no run store in postgresql://")
    assert cli(["--store", location, "runs", "--json"]) == 0
    assert capsys.readouterr().out == "[]\n"
    for command in (
        ["show", "run_x"],
        ["approve", "run_x", "approval_x"],
        ["steer", "run_x", "hi"],
    ):
        assert cli(["--store", location, *command]) == 1
        assert "error: No stored run 'run_x': there is no run store in" in capsys.readouterr().err
    with psycopg.connect(location, autocommit=True) as db:
        assert db.execute(
            "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public'"
        ).fetchall() == [(0,)]


@pytest.mark.parametrize(
    "said",
    [
        "FATAL:  the database system is starting up",
        "FATAL:  the database system is shutting down",
        "FATAL:  the database system is not yet accepting connections",
        "FATAL:  the database system is in recovery mode",
    ],
)
def test_a_server_restarting_is_waited_for_then_a_server_down_is_not(team_store, monkeypatch, said):
    """libpq gives no SQLSTATE for a server starting or shutting down: such a refusal left
    the store at once (only "Connection refused" was waited for). And a server still down when
    the wait ran out was waited for again at every write, each holding the run 10 s."""
    location, _, _ = team_store
    store = RunStore(location)
    backend = store._backend
    real_connect = psycopg.connect
    refusals = [said, "connection to server failed: Connection refused"]
    attempts: list[str] = []

    def connect(*args: object, **options: object) -> object:
        attempts.append("tried")
        if refusals:
            raise psycopg.OperationalError(f"connection failed: {refusals.pop(0)}")
        return real_connect(*args, **options)

    class Driver:
        def __getattr__(self, name: str) -> object:
            return connect if name == "connect" else getattr(psycopg, name)

    monkeypatch.setattr(backend, "_psycopg", Driver())
    monkeypatch.setattr(_postgres.time, "sleep", lambda seconds: None)
    backend._local.held.connection.close()  # (the server ended it)
    assert store.runs() == []  # (waited for, then reached)
    assert len(attempts) == 3
    monkeypatch.setattr(_postgres, "RECONNECT_SECONDS", 0.0)  # (a wait that runs out)
    refusals[:] = ["Connection refused"] * 3
    backend._local.held.connection.close()
    with pytest.raises(RunStoreError, match="Cannot connect"):
        store.runs()
    monkeypatch.setattr(_postgres, "RECONNECT_SECONDS", 60.0)
    attempts.clear()
    with pytest.raises(RunStoreError, match="Cannot connect"):
        store.runs()  # (not waited for: at once)
    assert attempts == ["tried"]
    store.close()


async def approved_from_the_command_line(location: str, run: Any, waiting: Any) -> None:
    """Approve ``waiting`` with ``python -m anvia_notebook approve`` from another process;
    the run then ends with its result (a warning would fail the test)."""
    command = [sys.executable, "-m", "anvia_notebook", "--store", location, "approve"]
    approve = await asyncio.create_subprocess_exec(
        *command, run.run_id, waiting.id, stderr=asyncio.subprocess.PIPE
    )
    _, said = await asyncio.wait_for(approve.communicate(), 60)
    assert approve.returncode == 0, said
    response = await asyncio.wait_for(run.wait(), 30)
    assert response.output.startswith("Result:")


def _gone(server: str, pids: set[int]) -> None:
    """Wait until the server has ended the processes ``pids`` (its own timeouts end them)."""
    with psycopg.connect(server, autocommit=True) as db:
        for _ in range(600):
            rows = db.execute("SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s)", (list(pids),))
            if not rows.fetchall():
                return
            time.sleep(0.05)
    raise AssertionError(f"the server did not end {pids}")


def test_a_statement_after_the_server_s_idle_session_timeout_runs_on_a_new_one(team_store):
    """A server whose administrator sets a short ``idle_session_timeout`` ends a connection
    left unused that long: the first command after a pause shorter than the store's own check
    of an idle connection (10 s; a longer pause was caught by it) failed with "terminating
    connection due to idle-session timeout"; it runs on a new connection."""
    location, server, database = team_store
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(f'ALTER DATABASE "{database}" SET idle_session_timeout = 200')
    store = RunStore(location)
    assert store.runs() == []
    connection = store._backend._connection()
    _gone(server, {connection.info.backend_pid})
    assert store.runs() == []
    store.close()


def test_a_write_held_open_past_the_server_s_idle_transaction_limit_is_made_again(team_store):
    """The process froze inside a write's transaction (a laptop asleep, a debugger) longer
    than the server's ``idle_in_transaction_session_timeout``: the server ended the connection
    and rolled the transaction back; the write failed ("terminating connection due to
    idle-in-transaction timeout"). Nothing of it was committed: it is made again, whole."""
    location, server, database = team_store
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(f'ALTER DATABASE "{database}" SET idle_in_transaction_session_timeout = 200')
    store = RunStore(location)
    backend = store._backend
    real_execute = backend.execute
    froze: list[str] = []

    def execute(sql: str, params: Any = ()) -> Any:
        connection = backend._connection()
        if not froze and not backend._alone(connection):
            froze.append(sql)  # (the transaction has begun: the process freezes in it)
            _gone(server, {connection.info.backend_pid})
        return real_execute(sql, params)

    backend.execute = execute
    try:
        response = store_agents.agent("plain").prompt("send 5 to a1").store(store).send_sync()
    finally:
        del backend.execute
    assert froze
    [stored] = RunStore(location).runs()
    assert stored.status == "success" and stored.run_id == response.run_id
    store.close()
