"""A run store that may only be read: an archived project (a folder or file without write
permission), a PostgreSQL role that may only SELECT. Reading works (``runs``, ``show``, the
Python API); what must write is refused with a RunStoreError that says the store is read-only
(or names the missing privilege), never a raw driver error.

Root ignores file permissions, so as root the reading process runs without the capabilities
that let it (``setpriv``, part of util-linux, which every Debian system has)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest
from child_processes import child_environ, kill, start_python, wait_until

from anvia_notebook import RunStore, RunStoreError
from anvia_notebook.store._schema import SCHEMA_VERSION

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parent.parent


def without_write_permission() -> list[str]:
    """The prefix that runs a command subject to file permissions (as root: without the
    capabilities that override them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to drop root's file-permission override"
    return [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]


def as_reader(*args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a process that file permissions apply to."""
    env = child_environ({**os.environ, "PYTHONPATH": str(ROOT)})
    env.pop("ANVIA_NOTEBOOK_STORE", None)
    return subprocess.run(
        [*without_write_permission(), sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def command_line(*args: str) -> subprocess.CompletedProcess[str]:
    return as_reader("-m", "anvia_notebook", *args)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr and result.stdout == "", result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    return result.stderr


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """A store as a project leaves it: a finished run, and a run whose process was killed while
    its approval waited (interrupted, the approval pending). Returns (path, pending record)."""
    path = tmp_path / "archive" / "runs.sqlite"
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", str(path))
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    env = child_environ()
    finished = start_python("import store_agents; store_agents.run('plain')", env)
    assert finished.wait(60) == 0, finished.stderr.read()  # type: ignore[union-attr]
    finished.stdout.close(), finished.stderr.close()  # type: ignore[union-attr,func-returns-value]
    child = start_python("import store_agents; store_agents.run('approval')", env)
    store = RunStore(path)
    [pending] = wait_until(lambda: store.pending(), child, "the approval")
    store.close()
    kill(child)
    yield path, pending
    for folder in (path.parent,):
        folder.chmod(0o755)
        for file in folder.iterdir():
            file.chmod(0o644)


def closed_cleanly(path: Path) -> None:
    """As the last process using it leaves a store: no write-ahead log beside it."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("SELECT 1 FROM meta").fetchall()  # (the last connection to close removes
        # the write-ahead log and its index)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def make_read_only(path: Path, case: str) -> None:
    if case == "folder":  # the file itself writable, but no -wal/-shm can be created
        closed_cleanly(path)
        path.parent.chmod(0o555)
    elif case == "file":  # the folder writable (the log files may be made), the file not
        closed_cleanly(path)
        path.chmod(0o444)
    else:  # "folder and files, log left": a killed run's -wal and -shm beside it, all read-only
        assert (path.parent / (path.name + "-wal")).exists()
        for file in path.parent.iterdir():
            file.chmod(0o444)
        path.parent.chmod(0o555)


CASES = ["folder", "file", "folder and files, log left"]


@pytest.mark.parametrize("case", CASES)
def test_runs_and_show_read_a_store_that_cannot_be_written(archive, case):
    path, pending = archive
    make_read_only(path, case)
    before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    listed = command_line("--store", str(path), "runs")
    assert listed.returncode == 0, listed.stderr
    assert pending.run_id in listed.stdout and "interrupted" in listed.stdout
    assert len([line for line in listed.stdout.splitlines() if "run_" in line]) == 2
    shown = command_line("--store", str(path), "show", pending.run_id)
    assert shown.returncode == 0, shown.stderr
    assert pending.id in shown.stdout
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == before  # nothing written


@pytest.mark.parametrize("case", CASES)
def test_the_python_api_reads_and_every_write_is_refused_as_read_only(archive, case):
    path, pending = archive
    make_read_only(path, case)
    script = textwrap.dedent(
        f"""
        import json, warnings
        import store_agents
        from anvia_notebook import RunStore, RunStoreError
        store = RunStore({str(path)!r})
        out = {{
            "runs": len(store.runs()),
            "messages": len(store.get({pending.run_id!r}).messages),
            "interactions": [r.id for r in store.interactions({pending.run_id!r})],
            "pending": [r.id for r in store.pending()],
        }}
        for name, write in [
            ("approve", lambda: store.approve({pending.run_id!r}, {pending.id!r})),
            ("reject", lambda: store.reject({pending.run_id!r}, {pending.id!r})),
            ("steer", lambda: store.steer({pending.run_id!r}, "stop")),
        ]:
            try:
                write()
                out[name] = "written"
            except RunStoreError as error:
                out[name] = str(error)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reply = store_agents.agent("plain").prompt("send 5 to a1").store(store).send_sync()
        out["run"] = [reply.output, [str(w.message) for w in caught]]
        print(json.dumps(out))
        """
    )
    result = as_reader("-c", script)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["runs"] == 2 and out["messages"] >= 2
    assert out["interactions"] == out["pending"] == [pending.id]
    for name in ("approve", "reject", "steer"):
        assert "is read-only" in out[name] and "can be read" in out[name], out[name]
    output, warned = out["run"]
    assert output.startswith("Result:")  # the run goes on in memory, as with any failing store
    assert len(warned) == 1 and "is read-only" in warned[0], warned
    err = one_line_error(command_line("--store", str(path), "approve", pending.run_id, pending.id))
    assert "is read-only" in err


def test_a_store_that_cannot_be_created_in_its_folder_says_why(tmp_path):
    """A new store (a notebook's first run) in a folder that cannot be written: the error, and
    the warning of a run that goes on in memory, said only "failed: unable to open database
    file" (SQLite's words), not which folder to make writable."""
    folder = tmp_path / "archive"
    folder.mkdir()
    path = folder / "runs.sqlite"
    script = textwrap.dedent(
        f"""
        from anvia_notebook import RunStore, RunStoreError
        try:
            RunStore({str(path)!r})
        except RunStoreError as error:
            print(error)
        """
    )
    folder.chmod(0o555)
    try:
        result = as_reader("-c", script)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"The run store {path} cannot be created: its folder {folder} cannot be written. Make "
        "the folder writable, or choose another place for the store (set_store(...), --store, "
        "ANVIA_NOTEBOOK_STORE)."
    )
    assert not path.exists()


def test_an_older_store_that_cannot_be_written_says_it_cannot_be_brought_up_to_date(archive):
    path, _ = archive
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION - 1),)
        )
    make_read_only(path, "folder")
    err = one_line_error(command_line("--store", str(path), "runs"))
    assert "older" in err and "read-only" in err and "cannot be brought up to date" in err, err


# -- PostgreSQL: roles that may only read, or not even that ------------------------------------


@pytest.fixture
def team_store(postgres_server):
    """A fresh database whose store the server's superuser made, and two roles: ``reader``
    (SELECT on every table), ``stranger`` (no grant on them; it may create tables)."""
    import store_agents  # noqa: F401 - (the agents' module, imported as the test suite does)

    name = f"ro_{os.getpid()}"
    with psycopg.connect(postgres_server, autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {name}")
        db.execute(f"CREATE DATABASE {name}")
        for role in ("reader", "stranger"):
            db.execute(f"DROP ROLE IF EXISTS {role}")
            db.execute(f"CREATE ROLE {role} LOGIN")
    base = postgres_server.rsplit("/", 1)[0]
    owner_url = f"{base}/{name}"
    store = RunStore(owner_url)
    store.close()
    with psycopg.connect(owner_url, autocommit=True) as db:
        db.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
        db.execute("GRANT CREATE ON SCHEMA public TO stranger")  # (no grant on the tables)
    host = base.split("@", 1)[1]
    yield owner_url, f"postgresql://reader@{host}/{name}", f"postgresql://stranger@{host}/{name}"
    with psycopg.connect(postgres_server, autocommit=True) as db:
        db.execute(f"DROP DATABASE {name} WITH (FORCE)")
        db.execute("DROP ROLE reader")
        db.execute("DROP ROLE stranger")


def test_a_select_only_role_reads_and_a_decision_names_the_missing_privilege(
    team_store, tmp_path, monkeypatch
):
    owner_url, reader_url, _ = team_store
    monkeypatch.setenv("ANVIA_NOTEBOOK_STORE", owner_url)
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    child = start_python("import store_agents; store_agents.run('approval')", child_environ())
    owner = RunStore(owner_url)
    try:
        [pending] = wait_until(lambda: owner.pending(), child, "the approval")
        reader = RunStore(reader_url)
        assert [r.run_id for r in reader.runs()] == [pending.run_id]
        assert [r.id for r in reader.pending()] == [pending.id]
        assert reader.get(pending.run_id).messages
        with pytest.raises(RunStoreError) as refused:
            reader.approve(pending.run_id, pending.id)
        text = str(refused.value)
        assert "UPDATE" in text and "interactions" in text and "reader" in text, text
        reader.close()
        listed = command_line("--store", reader_url, "runs")
        assert listed.returncode == 0 and pending.run_id in listed.stdout, listed.stderr
        assert owner.pending() == [pending]  # still pending
    finally:
        owner.close()
        kill(child)


def test_a_role_without_any_grant_is_told_which_privilege_it_lacks(team_store):
    _, _, stranger_url = team_store
    with pytest.raises(RunStoreError) as refused:
        RunStore(stranger_url)
    text = str(refused.value)
    assert "already exists" not in text
    assert "SELECT" in text and "meta" in text and "stranger" in text, text


def test_an_older_store_a_read_only_role_cannot_migrate_says_so(team_store):
    owner_url, reader_url, _ = team_store
    with psycopg.connect(owner_url, autocommit=True) as db:
        db.execute(
            "UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION - 1),)
        )
    with pytest.raises(RunStoreError) as refused:
        RunStore(reader_url)
    text = str(refused.value)
    assert "older" in text and "cannot be brought up to date" in text, text


def test_a_reader_of_a_store_it_cannot_write_sees_what_its_owner_writes_later(archive):
    """Opened while no write-ahead log was beside it (read as a file nobody writes), then the
    owner of the project runs more: the reader lists them too (before: the count it saw when it
    opened, for as long as it kept the store open)."""
    path, _ = archive
    make_read_only(path, "folder")
    reader = textwrap.dedent(
        f"""
        import sys
        from anvia_notebook import RunStore
        store = RunStore({str(path)!r})
        print(len(store.runs()), flush=True)
        sys.stdin.readline()
        print(len(store.runs()), flush=True)
        """
    )
    env = child_environ({**os.environ, "PYTHONPATH": str(ROOT)})
    env.pop("ANVIA_NOTEBOOK_STORE", None)
    child = subprocess.Popen(
        [*without_write_permission(), sys.executable, "-c", reader],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "2"
        import store_agents

        store_agents.agent("plain").prompt("one more").store(RunStore(path)).send_sync()
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "3", child.stderr.read()
    finally:
        child.kill()
        child.communicate(timeout=30)
