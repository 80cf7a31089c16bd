"""The SQLite connection layer of the run store (stdlib ``sqlite3``, WAL mode).

One connection per thread (``sqlite3`` connections must stay on their thread). WAL lets a reader
(a notebook listing runs, the command line) read while a kernel writes; the busy timeout makes a
second writer wait instead of failing at once. ``PRAGMA data_version`` changes when another
connection has committed, which is how a waiting run notices a decision cheaply.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._errors import RunStoreError

__all__ = ["BUSY_TIMEOUT", "SQLiteBackend"]

#: Seconds a writer waits for another writer's lock before giving up.
BUSY_TIMEOUT = 5.0
#: Pages the write-ahead log may hold before a commit copies them into the database file itself
#: (SQLite's default is 1,000). The store's background thread does that copy (and its ``fsync``)
#: soon after each write, so a run's own commits seldom have to; this is the limit if it cannot.
WAL_PAGES = 4000


class SQLiteBackend:
    """Connections to one SQLite file; ``execute`` and ``transaction`` on the calling thread."""

    kind = "sqlite"
    placeholder = "?"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunStoreError(
                f"Cannot create the folder for the run store {self.location}: {error}"
            ) from None
        self.busy_timeout = BUSY_TIMEOUT
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        #: Transactions committed by this process (the background thread checkpoints after).
        self.commits = 0
        #: False until the file is known to be a run store: nothing changes it before.
        self._writing = False

    def start_writing(self) -> None:
        """The file is a run store (or new): switch it to the write-ahead log (a setting kept
        in the file, so connections opened later find it on)."""
        self._writing = True
        try:
            self._connection().execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as error:
            raise RunStoreError(f"Cannot open the run store {self.location}: {error}") from None

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            try:
                connection = sqlite3.connect(
                    self.location,
                    timeout=self.busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
                if self._writing:
                    connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            except sqlite3.Error as error:
                raise RunStoreError(f"Cannot open the run store {self.location}: {error}") from None
            self._local.connection = connection
            with self._lock:
                self._all.append(connection)
        return connection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._connection().execute(sql, tuple(params))
        rows = cursor.fetchall()
        self._local.rowcount = cursor.rowcount
        return rows

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._connection().executemany(sql, rows)

    @property
    def rowcount(self) -> int:
        return int(getattr(self._local, "rowcount", 0))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (take the write lock now) ... ``COMMIT`` (or roll back)."""
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        self.commits += 1

    def checkpoint(self) -> None:
        """Copy what the write-ahead log holds into the database file, without waiting for
        readers or writers (called by the store's background thread, not by a run)."""
        self._connection().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def table_names(self) -> set[str]:
        rows = self.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(r[0]) for r in rows}

    def data_version(self) -> int:
        """Changes whenever another connection has committed to this file."""
        rows = self.execute("PRAGMA data_version")
        return int(rows[0][0])

    def is_error(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.Error)

    def close(self) -> None:
        with self._lock:
            connections, self._all = self._all, []
        for connection in connections:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
        self._local = threading.local()
