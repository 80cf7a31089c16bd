"""A PostgreSQL team store whose server stops answering (stopped with SIGSTOP here, as a server
that hangs, is overloaded, or whose machine left the network): the store's calls held their
thread for ever (a run's write held the kernel's event loop, and the widget's Stop button with
it; ``runs()`` and ``show`` never returned). A statement not answered within the store's time
fails with a RunStoreError that says so; once the server answers again, the store is used
again. The store's connections get a statement_timeout, an idle_in_transaction timeout and TCP
keepalives, unless the address or the server sets them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from postgres_server import _CONTROL, fresh_database, running_postgres
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, RunStoreError, create_tool
from anvia_notebook import store as store_module
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall
from anvia_notebook.store import _postgres

psycopg = pytest.importorskip("psycopg")
pytestmark = pytest.mark.timeout(120)

#: The longest a test waits for a call while the server is stopped: the old store's call
#: returned only once the server went on, after it.
STOPPED_FOR = 20.0


@pytest.fixture(scope="module")
def own_server() -> Iterator[str]:
    """A server of this module's own: all its processes are stopped, which another test's
    server should not be."""
    with running_postgres() as server:
        yield server


@pytest.fixture
def short_waits(monkeypatch):
    """Statements answered within 1 + 1 s (30 + 5 s by default)."""
    monkeypatch.setattr(_postgres, "STATEMENT_SECONDS", 1.0)
    monkeypatch.setattr(_postgres, "ANSWER_GRACE_SECONDS", 1.0)


def _server_processes(server: str) -> list[int]:
    """The postmaster of ``server`` (started by running_postgres) and its children."""
    folder: Path = _CONTROL[server][3]
    postmaster = int((folder / "data" / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            # (the command may hold spaces and parentheses: the fields after its last ")")
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                children.append(int(stat.parent.name))
    return [postmaster, *children]


def _signal_server(server: str, which: signal.Signals) -> None:
    for pid in _server_processes(server):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, which)


@contextlib.contextmanager
def _stopped(server: str) -> Iterator[threading.Timer]:
    """The server's processes stopped (SIGSTOP), as a server that hangs; they go on (SIGCONT)
    after :data:`STOPPED_FOR` seconds at the latest (a call the store never gave up on then
    returns, and the test fails instead of hanging), and when the block ends."""
    _signal_server(server, signal.SIGSTOP)
    going_on = threading.Timer(STOPPED_FOR, _signal_server, (server, signal.SIGCONT))
    going_on.start()
    try:
        yield going_on
    finally:
        going_on.cancel()
        _signal_server(server, signal.SIGCONT)


def test_a_read_from_a_server_that_stopped_answering_fails_in_time_then_works_again(
    own_server, short_waits
):
    """A connection made before: one made while the server is stopped waits ``connect_timeout``
    (10 s), as before."""
    location, _ = fresh_database(own_server)
    store = RunStore(location)
    with ThreadPoolExecutor(1) as reader:  # (one thread: the store's connection is its own)
        assert reader.submit(store.runs).result(60) == []  # (connected while the server answers)
        with _stopped(own_server) as going_on:
            started = time.monotonic()
            reading = reader.submit(_outcome, store.runs)
            error = reading.result(STOPPED_FOR + 30)
            waited = time.monotonic() - started
            assert going_on.is_alive(), f"returned only once the server went on: {error}"
    assert isinstance(error, RunStoreError), error
    said = str(error)
    assert said.startswith(f"The run store {location} did not answer within 2 s"), said
    assert said.endswith(
        "Check that the server runs and answers (psql with the same address) and the network to it."
    ), said
    assert waited < 10, waited
    assert store.runs() == []  # (the server answers again)
    store.close()


def test_a_store_closed_while_a_read_waits_leaves_other_sockets_alone(own_server, short_waits):
    """``RunStore.close()`` (a ``with`` block's end) while another thread waited for a server
    that stopped answering closed that thread's connection under it: the number of its socket
    went to the next socket the process opened (a model's HTTP connection, say), which the
    store then shut down at the read's deadline. The waiting read fails at once instead."""
    import socket

    location, _ = fresh_database(own_server)
    store = RunStore(location)
    with ThreadPoolExecutor(1) as reader:
        assert reader.submit(store.runs).result(60) == []
        with _stopped(own_server) as going_on:
            reading = reader.submit(_outcome, store.runs)
            while not _postgres._DEADLINES._watched:  # (the read is under way)
                time.sleep(0.01)
            store.close()
            mine, theirs = socket.socketpair()  # (it got the number of the read's socket)
            with mine, theirs:
                error = reading.result(STOPPED_FOR + 30)
                assert not _postgres._DEADLINES._watched  # (nothing to shut down any more)
                theirs.sendall(b"still here")
                assert mine.recv(10) == b"still here"
            assert going_on.is_alive()
    assert isinstance(error, RunStoreError), error
    assert str(error) == f"The run store {location} was closed.", error


def _outcome(call):
    try:
        return call()
    except Exception as error:
        return error


class _Step(BaseModel):
    n: int


async def test_a_run_whose_server_stopped_answering_goes_on_unstored_and_stops(
    own_server, short_waits, monkeypatch
):
    """The run's write after its tool held the event loop until the server went on (a notebook
    froze: no other cell, no Stop button). It fails in time: the run says it goes on in memory
    only, and ends; once the server answers, the store lists the run as failed."""
    location, _ = fresh_database(own_server)
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", location)
    store_module._reset_for_tests()
    in_tool, go_on = threading.Event(), threading.Event()

    def step(args: _Step, ctx: object) -> str:
        in_tool.set()
        go_on.wait(60)
        return "stepped"

    def script(request):
        if not any(m.role == "tool" for m in request.messages):
            return ModelResponse(tool_calls=[ToolCall(id="s1", name="step", arguments={"n": 1})])
        return ModelResponse(text="all done")

    tool = create_tool(name="step", description="A step.", input=_Step, execute=step)
    agent = AgentBuilder("stepper", FunctionModel(script)).tool(tool).build()
    try:
        run = agent.prompt("go").start()
        assert await asyncio.to_thread(in_tool.wait, 60)
        with _stopped(own_server) as going_on:
            started = time.monotonic()
            go_on.set()  # (the run writes next: the server does not answer)
            with pytest.warns(RuntimeWarning, match="goes on in memory only") as warned:
                response = await asyncio.wait_for(run.wait(), STOPPED_FOR + 30)
            waited = time.monotonic() - started
            assert going_on.is_alive(), "the run ended only once the server went on"
        assert response.output == "all done"
        assert waited < 10, waited
        said = str(warned[0].message)
        assert f"Could not write to the run store {location}: The run store" in said, said
        assert "did not answer within 2 s" in said and "Check that the server runs" in said, said
        store = RunStore(location)
        deadline = time.monotonic() + 30
        while (state := store.get(run.run_id)).status != "error":  # (marked in the background)
            assert state.status == "running" and time.monotonic() < deadline, state.status
            await asyncio.sleep(0.05)
        assert "did not answer within 2 s" in str(state.error)
        store.close()
    finally:
        go_on.set()
        store_module._reset_for_tests()


def _settings(store: RunStore) -> dict[str, str]:
    backend = store._backend
    connection = backend._connection()
    shown = {
        name: str(connection.execute(f"SHOW {name}").fetchone()[0])
        for name in ("statement_timeout", "idle_in_transaction_session_timeout", "lock_timeout")
    }
    parameters = connection.info.get_parameters()
    for name in ("keepalives", "keepalives_idle", "keepalives_count", "tcp_user_timeout"):
        shown[name] = parameters.get(name, "")
    shown["answer_seconds"] = str(backend.answer_seconds)
    return shown


def test_timeouts_and_keepalives_are_set_unless_the_address_or_server_sets_them(
    postgres_server,
):
    location, name = fresh_database(postgres_server)
    with RunStore(location) as store:
        assert _settings(store) == {
            "statement_timeout": "30s",
            "idle_in_transaction_session_timeout": "30s",
            "lock_timeout": "5s",
            "keepalives": "1",
            "keepalives_idle": "30",
            "keepalives_count": "3",
            "tcp_user_timeout": "35000",
            "answer_seconds": "35.0",
        }
    # The address's own (statement_timeout 0: statements may run, and are waited for, for
    # ever), and the server's (a setting of the database).
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name} SET idle_in_transaction_session_timeout = '7s'")
    own = "?keepalives_idle=77&tcp_user_timeout=9000&options=-c%20statement_timeout%3D0"
    with RunStore(location + own) as store:
        settings = _settings(store)
    assert settings["statement_timeout"] == "0" and settings["answer_seconds"] == "None"
    assert settings["idle_in_transaction_session_timeout"] == "7s"
    assert settings["keepalives_idle"] == "77" and settings["tcp_user_timeout"] == "9000"
    assert settings["keepalives"] == "1" and settings["keepalives_count"] == "3"
    with RunStore(location + "?options=-c%20statement_timeout%3D4s") as store:
        assert _settings(store)["answer_seconds"] == "9.0"  # (4 s, and 5 s more)


def test_an_older_libpq_is_not_given_tcp_user_timeout(postgres_server, monkeypatch):
    """libpq before 12 has no tcp_user_timeout: given it, it refused every connection."""
    location, _ = fresh_database(postgres_server)
    given: list[dict[str, object]] = []

    class OlderPq:
        def version(self) -> int:
            return 110022

        def __getattr__(self, name: str) -> object:
            return getattr(psycopg.pq, name)

    class Driver:
        pq = OlderPq()

        def __getattr__(self, name: str) -> object:
            return getattr(psycopg, name)

        def connect(self, *args: object, **options: object) -> object:
            given.append(options)
            return psycopg.connect(*args, **options)

    with RunStore(location) as store:
        backend = store._backend
        monkeypatch.setattr(backend, "_psycopg", Driver())
        backend._local.held.connection.close()  # (connected again, by the older driver)
        assert store.runs() == []
    [options] = given
    assert "tcp_user_timeout" not in options and options["keepalives"] == 1, options
