"""A team store that cannot connect says what went wrong and what to change: the driver's
message alone ("database "runz" does not exist", "password authentication failed", "Connection
refused") left a person guessing which part of the address to fix, or where."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from anvia_notebook import RunStore, RunStoreError
from anvia_notebook.store import _postgres

psycopg = pytest.importorskip("psycopg")
pytestmark = pytest.mark.timeout(60)

SECRET = "Sup3r-secret"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _refused(address: str) -> str:
    with pytest.raises(RunStoreError) as caught:
        RunStore(address)
    said = str(caught.value)
    assert said.startswith("Cannot connect to the run store postgresql://"), said
    assert SECRET not in said, said
    return said


def test_a_database_that_is_not_there_is_named_with_how_to_create_it(postgres_server):
    address = postgres_server.rsplit("/", 1)[0].replace("://postgres@", f"://postgres:{SECRET}@")
    said = _refused(address + "/runz")
    assert 'database "runz" does not exist' in said, said
    assert "CREATE DATABASE runz" in said and "correct its name" in said, said
    command = [sys.executable, "-m", "anvia_notebook", "--store", address + "/runz", "runs"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "CREATE DATABASE runz" in done.stderr and SECRET not in done.stderr, done.stderr


def test_a_user_that_is_not_there_is_said_to_be_corrected(postgres_server):
    address = postgres_server.replace("://postgres@", f"://nobody:{SECRET}@")
    said = _refused(address)
    assert 'role "nobody" does not exist' in said, said
    assert "Correct the user name in the address" in said, said


def test_a_server_that_is_not_there_is_said_to_be_looked_for(monkeypatch):
    said = _refused(f"postgresql://bob:{SECRET}@127.0.0.1:{_closed_port()}/teamdb")
    assert "Check the host and port in the address" in said, said


def test_a_wrong_password_is_said_to_be_corrected_without_showing_it(monkeypatch):
    """(The test server trusts every connection: libpq's words for a refused password.)"""

    def connect(*args: object, **options: object) -> object:
        raise psycopg.OperationalError(
            'connection failed: connection to server at "127.0.0.1", port 5432 failed: '
            'FATAL:  password authentication failed for user "bob"'
        )

    class Driver:
        def __getattr__(self, name: str) -> object:
            return connect if name == "connect" else getattr(psycopg, name)

    monkeypatch.setattr(_postgres, "_psycopg", lambda: Driver())
    said = _refused(f"postgresql://bob:{SECRET}@127.0.0.1:5432/teamdb")
    assert 'password authentication failed for user "bob"' in said, said
    assert "Correct the user name or password in the address" in said, said


def test_a_project_s_schema_that_is_not_there_is_said_to_be_created(postgres_server):
    """Projects sharing one database each in its own schema (the address's search_path): a
    schema not created yet (or mistyped) said only "no schema has been selected to create in"."""
    from postgres_server import fresh_database

    location, _ = fresh_database(postgres_server)
    with pytest.raises(RunStoreError) as caught:
        RunStore(location + "?options=-csearch_path%3Dproject_b")
    said = str(caught.value)
    assert "no schema has been selected to create in" in said, said
    assert "CREATE SCHEMA" in said and "search_path" in said, said
    with psycopg.connect(location, autocommit=True) as db:
        db.execute("CREATE SCHEMA project_a")
        db.execute("CREATE SCHEMA project_b")
    a = RunStore(location + "?options=-csearch_path%3Dproject_a")
    b = RunStore(location + "?options=-csearch_path%3Dproject_b")
    assert a.runs() == [] and b.runs() == []
    a.close()
    b.close()
