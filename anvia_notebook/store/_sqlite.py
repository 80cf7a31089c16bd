"""The SQLite connection layer of the run store (stdlib ``sqlite3``, WAL mode).

One connection per thread (``sqlite3`` connections must stay on their thread). WAL lets a reader
(a notebook listing runs, the command line) read while a kernel writes; a second writer waits
instead of failing at once: as long as other connections keep committing (contention, bounded by
``CONTENDED_LIMIT``), but only the busy timeout once nobody commits (a lock that is not
released). ``PRAGMA data_version`` changes when another connection has committed: how a waiting
writer tells the two apart, and how a waiting run notices a decision cheaply.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ._errors import RunStoreError, StoreFileGoneError, not_text
from ._fork import SQLITE_CALLS, inherited, keep, process_id, reset_in_forked_copies

__all__ = ["BUSY_TIMEOUT", "CONTENDED_LIMIT", "SQLiteBackend"]

#: Seconds a writer waits for the write lock while nobody else commits (one program holding it,
#: a transaction left open) before giving up with "locked by another program".
BUSY_TIMEOUT = 5.0
#: Seconds a writer waits for the write lock at most while other connections keep committing
#: (contention: they take turns, and so will this writer, much sooner in practice).
CONTENDED_LIMIT = 30.0
#: Seconds of one wait inside SQLite (its busy handler) before this module looks again. Short:
#: SQLite's handler sleeps and retries, it does not queue, so a writer that looks rarely can
#: miss every moment the lock is free while another process writes without a pause.
_ATTEMPT = 0.01
#: Longest pause (seconds, drawn at random) between two looks at a busy lock.
_PAUSE = 0.002
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
        #: The file as this process opened it: a later change of folder (``%cd``) leaves it so.
        self._absolute = os.path.abspath(self.location)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RunStoreError(
                f"Cannot create the folder for the run store {self.location}: {error}"
            ) from None
        self.busy_timeout = BUSY_TIMEOUT
        self._busy_since = 0.0
        self._local = threading.local()
        #: Every thread's connection, for close(): a thread's own goes when the thread ends.
        self._all: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._lock = threading.Lock()
        #: Transactions committed by this process (the background thread checkpoints after).
        self.commits = 0
        #: False until the file is known to be a run store: nothing changes it before.
        self._writing = False
        #: Why this process can only read the file (None: it may write it), and how SQLite
        #: opens it then (see :func:`read_only_uri`).
        self.read_only = read_only_reason(self.path)
        self._uri = read_only_uri(self.path) if self.read_only else None
        #: ``(st_dev, st_ino)`` of the file this process opened (see :meth:`check_file`).
        self._file: tuple[int, int] | None = None
        reset_in_forked_copies(self)

    def after_fork(self) -> None:
        """In a forked copy of this process: its own connections from now on (the inherited
        ones are kept, untouched: see ``_fork``), and its own lock."""
        self._lock = threading.Lock()
        self._all = weakref.WeakSet()
        self._local = threading.local()

    def start_writing(self) -> None:
        """The file is a run store (or new): switch it to the write-ahead log (a setting kept
        in the file, so connections opened later find it on)."""
        if self.read_only:
            return
        self._writing = True
        self._run(lambda connection: connection.execute("PRAGMA journal_mode=WAL").fetchall())

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use; a driver error is raised as is)."""
        held: _Held | None = getattr(self._local, "held", None)
        connection = None if held is None else held.connection
        if connection is not None and self.read_only:
            connection = self._still_current(connection)
        if connection is None:
            if self.read_only:  # (how to open it depends on the log beside it now)
                self._uri = read_only_uri(self.path)
                self._local.stamp = _stamp(self.path)
            connection = sqlite3.connect(
                self._uri or self._absolute,
                timeout=min(_ATTEMPT, self.busy_timeout),
                isolation_level=None,
                check_same_thread=False,
                uri=self._uri is not None,
            )
            try:
                if self._writing:
                    connection.execute("PRAGMA journal_mode=WAL")
                connection.execute("PRAGMA synchronous=NORMAL")
                connection.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
            except sqlite3.Error:
                connection.close()
                raise
            if self._file is None:
                with contextlib.suppress(OSError):  # (not known now: taken at a later look)
                    self._file = _identity(self._absolute)
            held = _Held(connection)
            self._local.held = held
            with self._lock:
                self._all.add(held)
        return connection

    def _still_current(self, connection: sqlite3.Connection) -> sqlite3.Connection | None:
        """A read-only connection, or None when the file or its log changed since it was opened
        (another user wrote the store): a connection opened ``immutable`` would never see
        that, so it is opened anew."""
        if getattr(self._local, "stamp", None) == _stamp(self.path):
            return connection
        held = self._local.held
        with self._lock:
            self._all.discard(held)
        held.close()
        self._local.held = None
        return None

    def _run(self, action: Callable[[sqlite3.Connection], _T]) -> _T:
        """``action(connection)``, retried while the file is busy; a driver error becomes a
        :class:`RunStoreError`. A busy file is waited for as long as other connections keep
        committing (they take turns with this one: contention, up to :data:`CONTENDED_LIMIT`
        seconds), but only :attr:`busy_timeout` seconds once nobody commits (a lock held and
        not released: another program's open transaction)."""
        waiting: _Waiting | None = None
        while True:
            try:
                with SQLITE_CALLS:
                    return action(self._connection())
            except sqlite3.OperationalError as error:
                if not _busy(error) or getattr(self._local, "in_transaction", False):
                    raise self.error(error) from error
                if waiting is None:
                    waiting = _Waiting(self.busy_timeout, self._version())
                    logger.debug("The run store %s is busy; waiting for it", self.location)
                elif not waiting.goes_on(self._version()):
                    raise self.error(error, waited=waiting.waited()) from error
                time.sleep(random.uniform(0.0, _PAUSE))  # (at random: no lockstep with a loop)
            except sqlite3.Error as error:
                raise self.error(error) from error
            except UnicodeEncodeError as error:  # (a lone surrogate: bytes that were not UTF-8)
                raise not_text(self.location, error) from None

    def _version(self) -> int | None:
        """This thread's ``PRAGMA data_version`` (None when it cannot be read now)."""
        try:
            with SQLITE_CALLS:
                return int(self._connection().execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            return None

    def error(self, error: sqlite3.Error, *, waited: str | None = None) -> RunStoreError:
        """A driver error as a sentence for the person using the store (``waited``: how the
        wait for a busy file ended)."""
        text = str(error)
        if _busy(error):
            return RunStoreError(
                f"The run store {self.location} is locked by another program "
                f"({waited or f'waited {self.busy_timeout:g} s'}): {text}. Try again once that "
                "program has finished writing, or close it."
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
                f"The run store {self.location} is read-only ({self.read_only or text}): it can "
                "be read (runs, show) but not written, so nothing can be decided, steered or "
                "run in it. Make the file and its folder writable, or copy the store to a "
                "writable place and use the copy (--store, set_store(...))."
            )
        folder = os.path.dirname(self._absolute)
        if not os.path.exists(self._absolute) and not os.access(folder, os.W_OK):
            return RunStoreError(  # (SQLite says only "unable to open database file")
                f"The run store {self.location} cannot be created: its folder {folder} cannot "
                "be written. Make the folder writable, or choose another place for the store "
                "(set_store(...), --store, ANVIA_NOTEBOOK_STORE)."
            )
        if os.path.isdir(self.location):  # (e.g. --store notebooks/.anvia)
            inside = os.path.join(self.location, "runs.sqlite")
            return RunStoreError(
                f"The run store {self.location} is a folder, not a store file: pass the file "
                f"(a notebook keeps its runs in .anvia/runs.sqlite, e.g. {inside})."
            )
        return RunStoreError(f"The run store {self.location} failed: {text}.")

    def clock_offset(self) -> float:
        """The processes that share a SQLite file share this machine's clock."""
        return 0.0

    def gone(self) -> str | None:
        """How the store's file left its place while this process used it ("deleted (or moved
        away)", "replaced by another file"), or None while it is still there."""
        if self._file is None:
            return None
        try:
            now = _identity(self._absolute)
        except OSError:  # (a network folder's moment of EIO, a folder made unreadable: the
            return None  # file may well be there, so what waits on it is not dropped)
        if now == self._file:
            return None
        return "deleted (or moved away)" if now is None else "replaced by another file"

    def check_file(self) -> None:
        """Before a write: refuse it when the file is no longer where it was opened (a deleted
        file's writes would be lost with it; another file at its place holds other runs).
        One ``stat`` of the path (a microsecond or two)."""
        how = self.gone()
        if how is not None:
            raise StoreFileGoneError(
                f"The run store {self.location} was {how} while this process used it: it "
                "writes nothing more to it. Open the store again (RunStore(...), set_store(...))"
                " to use the file now there; a notebook's default store is opened anew for "
                "its next run."
                + (
                    " If the file now there is an earlier copy of this store, the runs this "
                    "process went on with are in it as they were then: resuming one from it "
                    "does again what the run did since."
                    if how == "replaced by another file"
                    else ""
                )
            )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if not sql.startswith(_READS) and not getattr(self._local, "in_transaction", False):
            self.check_file()
        values = tuple(params)

        def run(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
            cursor = connection.execute(sql, values)
            rows = cursor.fetchall()
            self._local.rowcount = cursor.rowcount
            return rows

        return self._run(run)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not getattr(self._local, "in_transaction", False):
            self.check_file()
        self._run(lambda connection: connection.executemany(sql, rows))

    @property
    def rowcount(self) -> int:
        return int(getattr(self._local, "rowcount", 0))

    @contextlib.contextmanager
    def transaction(self, *, yielding: bool = False) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (take the write lock now, waiting while another writer has it)
        ... ``COMMIT`` (or roll back).

        ``yielding``: a write that a script may repeat without a pause (a message steered into
        a run from another process; a decision is one statement, not a transaction). Before
        taking the lock again, it waits as long as this thread held it last time, so that it
        holds the lock at most about half the time and a run's writes, waiting, find it free."""
        if yielding:
            _yield_turn(self._local)
        self.check_file()
        with SQLITE_CALLS:  # (the whole transaction: a fork waits for its end)
            connection = self._run(_begin)
            taken = time.monotonic()
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
                if yielding:
                    released = time.monotonic()
                    self._local.turn = (released, released - taken)
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

    def cut_off(self, error: BaseException) -> bool:
        """A file's transaction is never cut off by a server (see the PostgreSQL backend)."""
        return False

    def refuses_writes(self, error: RunStoreError) -> bool:
        """``error`` (raised by this backend) says the file may not be written."""
        cause = error.__cause__
        return isinstance(cause, sqlite3.Error) and (
            getattr(cause, "sqlite_errorcode", 0) & 0xFF == 8  # SQLITE_READONLY (and extended)
            or "readonly" in str(cause)
        )

    def close(self) -> None:
        with self._lock:
            connections, self._all = list(self._all), weakref.WeakSet()
        for held in connections:
            held.close()
        self._local = threading.local()


class _Held:
    """One thread's connection, kept in that thread's local data: closed when the thread ends
    (``send_sync()`` runs each run on a thread of its own: a kernel must not keep a connection,
    and its files, open per run it ever ran) or when the store is closed; never in a forked
    copy of the process (see ``_fork``)."""

    __slots__ = ("__weakref__", "connection", "pid")
    # (also used at interpreter exit, when the module's names may be gone: bound here)
    _inherited = staticmethod(inherited)
    _keep = staticmethod(keep)
    _calls = SQLITE_CALLS

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.pid = process_id()

    def close(self) -> None:
        try:
            if self._inherited(self.pid):  # a forked copy's: another thread may be using it
                self._keep(self.connection)
                return
            with self._calls:
                self.connection.close()
        except Exception:
            pass

    __del__ = close


#: Statements that only read (no check that the file is still in its place before them).
_READS = ("SELECT", "PRAGMA data_version", "PRAGMA wal_checkpoint")


def _identity(location: str) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``location`` (None when there is none). Another
    failure to look at it (``EIO``, ``EACCES``, a stale network handle) is raised: it does not
    say the file left."""
    try:
        status = os.stat(location)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return status.st_dev, status.st_ino


def read_only_reason(path: Path) -> str | None:
    """Why this process may read the store file ``path`` but not write it (None when it may
    write it, or when there is no file yet: it is then created, or fails to be, as usual).

    Writing needs the file, and either its folder (SQLite creates the write-ahead log and its
    index, ``-wal`` and ``-shm``, beside it) or both of those files already there."""
    if not path.is_file():
        return None
    if not os.access(path, os.W_OK):
        return "the file cannot be written"
    if os.access(path.parent, os.W_OK):
        return None
    if all(os.access(f"{path}{suffix}", os.W_OK) for suffix in ("-wal", "-shm")):
        return None
    return "its folder cannot be written"


def _stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """What tells that the store file, or its write-ahead log, changed: size and mtime of each."""

    def of(name: str) -> tuple[int, int] | None:
        try:
            status = os.stat(name)
        except OSError:
            return None
        return status.st_size, status.st_mtime_ns

    return of(str(path)), of(f"{path}-wal")


def read_only_uri(path: Path) -> str:
    """How SQLite opens a store file it may only read: ``mode=ro``, and also ``immutable=1``
    when no write-ahead log is beside it (measured: a WAL-mode file whose folder cannot be
    written is refused even with ``mode=ro``, which would create the log's index; with no log,
    everything committed is in the file itself). A log left beside it (a process that was
    killed, or one writing now) is read through (``immutable`` would ignore it)."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    log = Path(f"{path}-wal")
    if not log.exists() or log.stat().st_size == 0:
        uri += "&immutable=1"
    return uri


def _yield_turn(local: threading.local) -> None:
    """Wait until this thread's last yielding transaction is as long past as it lasted."""
    released, held = getattr(local, "turn", (0.0, 0.0))
    rest = released + min(held, _PAUSE * 10) - time.monotonic()
    if rest > 0:
        time.sleep(rest)


def _begin(connection: sqlite3.Connection) -> sqlite3.Connection:
    connection.execute("BEGIN IMMEDIATE")
    return connection


def _busy(error: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds a lock (worth waiting for)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
    return "locked" in str(error) or "busy" in str(error)


class _Waiting:
    """How long a writer has waited for a busy file, and whether it should wait on: while
    other connections commit (``PRAGMA data_version`` changes), for at most
    :data:`CONTENDED_LIMIT` seconds; once nobody commits, for ``patience`` seconds."""

    __slots__ = ("last_commit", "patience", "since", "version")

    def __init__(self, patience: float, version: int | None) -> None:
        self.since = self.last_commit = time.monotonic()
        self.patience = max(patience - _ATTEMPT, 0.0)
        self.version = version

    def goes_on(self, version: int | None) -> bool:
        now = time.monotonic()
        if version is not None and version != self.version:
            self.version, self.last_commit = version, now
        return now - self.last_commit < self.patience and now - self.since < max(
            CONTENDED_LIMIT, self.patience
        )

    def waited(self) -> str:
        now = time.monotonic()
        if self.last_commit == self.since:
            return f"waited {now - self.since + _ATTEMPT:.1f} s"
        return (
            f"waited {now - self.since:.1f} s while other programs kept writing, the last "
            f"{now - self.last_commit:.1f} s without any of them finishing"
        )
