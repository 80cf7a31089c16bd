"""A PostgreSQL run store's password never reaches a message, a warning or the command line.

PostgreSQL takes a password before the host (``postgresql://bob:secret@host/db``) and as a
parameter after ``?`` (``?password=secret``, ``?sslpassword=secret``, a name that may be
percent-encoded). A notebook prints what a store says, and a saved notebook keeps it: none of
these may show the secret, whichever way it was written.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import pytest

import anvia_notebook as an
from anvia_notebook.errors import RunStoreError

pytest.importorskip("psycopg")

ROOT = Path(__file__).resolve().parent.parent
SECRET = "Sup3r-secret"


def _closed_port() -> int:
    """A port on this machine that nothing listens on (the connection is refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _addresses(host: str) -> list[str]:
    """The ways a PostgreSQL address carries a password, for a server at ``host``."""
    return [
        f"postgresql://bob:{SECRET}@{host}/postgres",
        f"postgres://bob@{host}/postgres?password={SECRET}&connect_timeout=5",
        f"postgresql://bob@{host}/postgres?application_name=nb&pass%77ord={SECRET}",
        f"postgresql://bob@{host}/postgres?sslmode=disable&sslpassword={SECRET}",
        f"postgresql://bob:{SECRET}@{host},{host}/postgres?password={SECRET}",
    ]


def _everything_said(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


@pytest.mark.parametrize("index", range(5))
def test_a_store_that_cannot_connect_names_it_without_its_password(index: int) -> None:
    address = _addresses(f"127.0.0.1:{_closed_port()}")[index]
    with pytest.raises(RunStoreError) as caught:
        an.RunStore(address)
    message = str(caught.value)
    assert message.startswith("Cannot connect to the run store postgres"), message
    assert "bob" in message and "@127.0.0.1" in message, message
    assert SECRET not in _everything_said(caught.value)


@pytest.mark.parametrize(
    "password",
    ["ab/cdSECRETx", "x?SECRETy", "Summer#SECRET24", "p@SECRETword", "p@ss:w/SECRETrd?#% é"],
)
def test_a_password_written_with_url_delimiters_is_not_shown(password: str) -> None:
    """Not percent-encoded, a password with ``/ ? # @`` ended the host part where it has one
    (libpq reads it so too): "Cannot connect to the run store postgresql://alice:ab/cd..." showed
    it whole, or a piece of it, as a path, a query, a fragment or a host the driver quoted."""
    address = f"postgresql://alice:{password}@127.0.0.1:{_closed_port()}/teamdb"
    with pytest.raises(RunStoreError) as caught:
        an.RunStore(address)
    said = _everything_said(caught.value)
    assert "SECRET" not in said, said
    assert "Cannot connect to the run store postgresql://alice:***@127.0.0.1:" in said, said


def test_the_default_store_warns_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from anvia_notebook import store as store_module

    address = _addresses(f"127.0.0.1:{_closed_port()}")[1]
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", address)
    store_module._reset_for_tests()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert store_module.get_store() is None
    finally:
        store_module._reset_for_tests()
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and "Runs stay in memory only" in said[0], said
    assert SECRET not in said[0] and "bob@127.0.0.1" in said[0], said


def test_an_open_store_and_the_command_line_never_show_its_password(
    postgres_server: str,
) -> None:
    host = postgres_server.split("@", 1)[1].split("/", 1)[0]
    # The test server trusts every connection from this machine: a password is not checked.
    for address in _addresses(host):
        address = address.replace("bob", "postgres")
        store = an.RunStore(address)
        try:
            assert SECRET not in repr(store) and SECRET not in store.location
            assert store.runs() == []
        finally:
            store.close()
        listed = subprocess.run(
            [sys.executable, "-m", "anvia_notebook", "runs", "--store", address],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert listed.returncode == 0, listed.stderr
        assert f"@{host}" in listed.stdout, listed.stdout
        assert SECRET not in listed.stdout + listed.stderr
        missing = subprocess.run(
            [sys.executable, "-m", "anvia_notebook", "show", "run_missing", "--store", address],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert missing.returncode != 0
        assert "run_missing" in missing.stdout + missing.stderr
        assert SECRET not in missing.stdout + missing.stderr


@pytest.mark.parametrize("scheme", ["PostgreSQL", "POSTGRES"])
def test_an_address_with_its_scheme_in_capitals_is_a_team_store(
    scheme: str, postgres_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PostgreSQL://...`` was taken for a file path: a folder named ``PostgreSQL:`` with a
    SQLite file named after the password, and the team never saw the runs. It is the server."""
    monkeypatch.chdir(tmp_path)
    refused = f"{scheme}://bob:{SECRET}@127.0.0.1:{_closed_port()}/teamdb"
    with pytest.raises(RunStoreError) as caught:
        an.RunStore(refused)
    assert str(caught.value).startswith("Cannot connect to the run store postgres"), caught.value
    assert SECRET not in _everything_said(caught.value)
    scheme_end = postgres_server.index("://")
    address = scheme + postgres_server[scheme_end:]
    store = an.RunStore(address)
    try:
        assert store.location.startswith("postgres"), store.location
        assert store.runs() == []
    finally:
        store.close()
    listed = subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "runs", "--store", refused],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert listed.returncode != 0 and "Cannot connect" in listed.stderr, listed
    assert SECRET not in listed.stdout + listed.stderr
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
