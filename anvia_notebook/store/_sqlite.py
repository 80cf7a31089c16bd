"""The SQLite connection layer of the run store (stdlib ``sqlite3``, WAL mode).

One connection per thread (``sqlite3`` connections must stay on their thread). WAL lets a reader
(a notebook listing runs, the command line) read while a kernel writes; the busy timeout makes a
second writer wait instead of failing at once. ``PRAGMA data_version`` changes when another
connection has committed, which is how a waiting run notices a decision cheaply.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ._errors import RunStoreError, not_text

__all__ = ["BUSY_TIMEOUT", "SQLiteBackend"]

#: Seconds a writer waits for another writer's lock before giving up.
BUSY_TIMEOUT = 5.0
#: Seconds of one wait inside SQLite (its busy handler) before this module looks again.
_ATTEMPT = 0.25
logger = logging.getLogger("anvia_notebook")
_T = TypeVar("_T")
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
        self._busy_since = 0.0
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
        self._run(lambda connection: connection.execute("PRAGMA journal_mode=WAL").fetchall())

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use; a driver error is raised as is)."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self.location,
                timeout=min(_ATTEMPT, self.busy_timeout),
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                if self._writing:
                    connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            except sqlite3.Error:
                connection.close()
                raise
            self._local.connection = connection
            with self._lock:
                self._all.append(connection)
        return connection

    def _run(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        """``action(connection)``, retried while the file is busy (for at most
        :attr:`busy_timeout` seconds); a driver error becomes a :class:`RunStoreError`."""
        deadline: float | None = None
        while True:
            try:
                return action(self._connection())
            except sqlite3.OperationalError as error:
                if not _busy(error) or getattr(self._local, "in_transaction", False):
                    raise self.error(error) from error
                now = time.monotonic()
                if deadline is None:
                    deadline = now + max(self.busy_timeout - _ATTEMPT, 0.0)
                    logger.debug("The run store %s is busy; waiting for it", self.location)
                if now >= deadline:
                    raise self.error(error) from error
                time.sleep(min(0.02, deadline - now))
            except sqlite3.Error as error:
                raise self.error(error) from error
            except UnicodeEncodeError as error:  # (a lone surrogate: bytes that were not UTF-8)
                raise not_text(self.location, error) from None

    def error(self, error: sqlite3.Error) -> RunStoreError:
        """A driver error as a sentence for the person using the store."""
        text = str(error)
        if _busy(error):
            return RunStoreError(
                f"The run store {self.location} is locked by another program (waited "
                f"{self.busy_timeout:g} s): {text}. Try again once that program has finished "
                "writing, or close it."
            )
        if isinstance(error, sqlite3.DatabaseError) and any(
            word in text for word in ("malformed", "not a database", "corrupt")
        ):
            return RunStoreError(
                f"The run store {self.location} is damaged ({text}). Move the file away (a new "
                "store is created in its place) or choose another one with set_store(...) or "
                "--store."
            )
        if "readonly" in text or "read-only" in text:
            return RunStoreError(
                f"The run store {self.location} cannot be written ({text}): check the "
                "permissions of the file and its folder, or choose another store."
            )
        if os.path.isdir(self.location):  # (e.g. --store notebooks/.anvia)
            inside = os.path.join(self.location, "runs.sqlite")
            return RunStoreError(
                f"The run store {self.location} is a folder, not a store file: pass the file "
                f"(a notebook keeps its runs in .anvia/runs.sqlite, e.g. {inside})."
            )
        return RunStoreError(f"The run store {self.location} failed: {text}.")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        values = tuple(params)

        def run(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
            cursor = connection.execute(sql, values)
            rows = cursor.fetchall()
            self._local.rowcount = cursor.rowcount
            return rows

        return self._run(run)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._run(lambda connection: connection.executemany(sql, rows))

    @property
    def rowcount(self) -> int:
        return int(getattr(self._local, "rowcount", 0))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (take the write lock now, waiting while another writer has it)
        ... ``COMMIT`` (or roll back)."""
        connection = self._run(_begin)
        self._local.in_transaction = True
        try:
            yield
            try:
                connection.execute("COMMIT")
            except sqlite3.Error as error:
                raise self.error(error) from error
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
            raise
        finally:
            self._local.in_transaction = False
        self.commits += 1

    def checkpoint(self) -> None:
        """Copy what the write-ahead log holds into the database file, without waiting for
        readers or writers (called by the store's background thread, not by a run)."""
        self.execute("PRAGMA wal_checkpoint(PASSIVE)")

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


def _begin(connection: sqlite3.Connection) -> sqlite3.Connection:
    connection.execute("BEGIN IMMEDIATE")
    return connection


def _busy(error: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds a lock (worth waiting for)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
    return "locked" in str(error) or "busy" in str(error)
