"""The run store given hostile files and faults: another application's database, a damaged
page, a store locked or busy, odd run ids and limits. Errors are RunStoreError (the command line:
one line, a non-zero exit), never a raw driver error; a refused file is left as it was."""

from __future__ import annotations

import sqlite3

import pytest

from anvia_notebook import RunStore, RunStoreError


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
    ],
    ids=["other tables", "other application"],
)
def test_a_refused_file_is_left_byte_for_byte_as_it_was(tmp_path, statements):
    path = foreign_database(tmp_path / "app.sqlite", *statements)
    before = path.read_bytes()
    with pytest.raises(RunStoreError, match=r"not an anvia_notebook run store|another application"):
        RunStore(path)
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
