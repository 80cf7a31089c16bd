"""The PostgreSQL connection layer of the run store (psycopg 3, extra ``postgres``).

Same tables and SQL as SQLite (``?`` placeholders become ``%s``). One connection per thread, in
autocommit mode; ``transaction()`` opens a real transaction. Decisions are announced with
``NOTIFY anvia_notebook_decisions`` so a waiting run hears them at once; the watcher also polls.

PostgreSQL's text columns cannot hold the NUL character, which SQLite stores as any other: text
going in has it escaped (NUL becomes U+E000 ``0``, U+E000 itself U+E000 ``1``) and text coming out
is unescaped, so every text reads back exactly as it was written. JSON columns need none of it
(JSON writes NUL as ``\u0000``), but go through the same two checks.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import socket
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from .._util import shown_url
from ._errors import RunStoreError, not_text
from ._fork import inherited, keep, process_id, reset_in_forked_copies

logger = logging.getLogger("anvia_notebook")

__all__ = ["PostgresBackend"]

CHANNEL = "anvia_notebook_decisions"
_ESCAPE = "\ue000"  # a private-use character: text seldom holds it
_ESCAPED = re.compile(_ESCAPE + "[01]")
#: SQLSTATE of "permission denied" (and "must be owner of ...").
_INSUFFICIENT_PRIVILEGE = "42501"


#: Writes that a watcher in another process must hear of at once (a decision, a steered message,
#: a decision sent to the run's process to check).
_ANNOUNCED = ("UPDATE INTERACTIONS", "INSERT INTO STEERING", "INSERT INTO DECISION_REQUESTS")


def _put(value: Any) -> Any:
    """A parameter as PostgreSQL can store it (text with NUL escaped)."""
    if isinstance(value, str) and ("\x00" in value or _ESCAPE in value):
        return value.replace(_ESCAPE, _ESCAPE + "1").replace("\x00", _ESCAPE + "0")
    return value


def _unescape(match: re.Match[str]) -> str:
    return _ESCAPE if match.group()[1] == "1" else "\x00"


def _get(value: Any) -> Any:
    """A value read back: the text as it was written."""
    if isinstance(value, str) and _ESCAPE in value:
        return _ESCAPED.sub(_unescape, value)
    return value


def _psycopg() -> Any:
    try:
        return importlib.import_module("psycopg")
    except ImportError:
        raise RunStoreError(
            'A PostgreSQL run store needs psycopg 3: pip install "anvia_notebook[postgres]"'
        ) from None


#: How long a measured offset between this machine's clock and the server's is used.
CLOCK_CHECK_SECONDS = 60.0
#: Seconds to connect when the address does not say (``?connect_timeout=N`` does).
CONNECT_TIMEOUT = 10
#: A connection idle this long (seconds) is asked whether it still works before it is used:
#: an idle timeout, a failover or a restarted server ends connections nobody was using.
IDLE_CHECK_SECONDS = 10.0
#: The watcher looks at the store at least this often (seconds) even when no announcement came
#: (a listening connection a firewall dropped without a word hears nothing).
LOOK_ANYWAY_SECONDS = 5.0
#: SQLSTATE of "no schema has been selected to create in" (no schema of the search_path is
#: there: one project's schema of a database that several share, mistyped or not created).
_NO_SCHEMA = "3F000"
#: SQLSTATE of "lock not available" (``lock_timeout`` passed).
_LOCK_NOT_AVAILABLE = "55P03"
#: Seconds a store whose server was reached waits for it to take connections again (a restart
#: of the server: connections refused, or "the database system is starting up").
RECONNECT_SECONDS = 10.0
#: SQLSTATE of "the database system is starting up" (or shutting down).
_CANNOT_CONNECT_NOW = "57P03"
#: The longest one statement of the store may run (seconds): the server's ``statement_timeout``
#: for the store's connections, unless the address or the server sets one (``options=-c
#: statement_timeout=...`` in the address, ``ALTER ROLE ... SET``, postgresql.conf).
STATEMENT_SECONDS = 30.0
#: How much longer than the statement may run the store waits for the server to answer at all
#: (seconds): then it closes the connection, and the statement fails with a ``RunStoreError``.
#: A server that hangs (stopped, overloaded, its machine gone from the network) held the store's
#: call for ever: a run's write, and the kernel's event loop with it (the Stop button too).
ANSWER_GRACE_SECONDS = 5.0
#: A transaction of the store left open this long (seconds) is ended by the server (its
#: ``idle_in_transaction_session_timeout``, unless the address or the server sets one): a
#: process frozen in the middle of a write (stopped, a laptop's lid closed) held the store's
#: writer lock, and every other process's writes failed meanwhile.
IDLE_IN_TRANSACTION_SECONDS = 30.0
#: TCP keepalives and ``tcp_user_timeout`` for the store's connections, unless the address sets
#: them: a connection whose server's machine left the network (a connection nobody answers)
#: fails within about a minute instead of never (the listening connection, an idle one).
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10}
KEEPALIVES_COUNT = 3


#: How libpq says a server is not taking connections now (it gives no SQLSTATE for them):
#: stopped, starting, shutting down, recovering.
_NOT_NOW = (
    "refused",
    "is the server running",
    "starting up",
    "shutting down",
    "not yet accepting connections",
    "not accepting connections",
    "in recovery mode",
)


def _not_taking_connections(error: BaseException) -> bool:
    """Whether a failed connection says the server is not taking connections now (stopped, or
    starting), rather than refusing these (a password, a database that is not there)."""
    code = getattr(error, "sqlstate", None)
    said = str(error).lower()
    return code == _CANNOT_CONNECT_NOW or (code is None and any(s in said for s in _NOT_NOW))


def _how_to_connect(error: BaseException) -> str:
    """What to change when the server refused a connection, as a sentence after its message
    (or nothing): the message alone said what went wrong, not where to look."""
    said = str(error)
    lower = said.lower()
    missing = re.search(r'(database|role) "([^"]*)" does not exist', said)
    if missing is not None and missing[1] == "database":
        return (
            f" Create the database (CREATE DATABASE {missing[2]}, or createdb {missing[2]}) or "
            "correct its name at the end of the address."
        )
    if missing is not None:
        return " Correct the user name in the address, or create that role on the server."
    if "password authentication failed" in lower or "no password supplied" in lower:
        return (
            " Correct the user name or password in the address (postgresql://USER:PASSWORD@"
            "HOST:PORT/DBNAME; percent-encode @ : / ? # % in a password, @ as %40)."
        )
    if "no pg_hba.conf entry" in lower:
        return (
            " The server's pg_hba.conf lets no such connection in: ask its administrator to "
            "allow this user, database and address."
        )
    if "resolve host" in lower or "translate host name" in lower:
        return " Correct the host name in the address."
    if "timeout expired" in lower or "timed out" in lower:
        return (
            " Check the host and port in the address, that no firewall stops the "
            "connection, and that the server answers (a server that is stopped or overloaded "
            "takes no connection); ?connect_timeout=N in the address waits longer."
        )
    if _not_taking_connections(error):
        return (
            " Check the host and port in the address, and that the PostgreSQL server runs "
            "there and listens on that address (listen_addresses, port)."
        )
    return ""


#: The server ended the connection (a restart or shutdown, an admin's pg_terminate_backend,
#: another backend's crash, the server's idle_session_timeout on a connection kept open
#: between statements, its idle_in_transaction_session_timeout or (PostgreSQL 17)
#: transaction_timeout on a process frozen inside a write): a statement met with this never
#: ran (or was rolled back).
_ENDED_BY_SERVER = frozenset({"57P01", "57P02", "57P05", "25P03", "25P04"})


def _ended(error: BaseException) -> bool:
    """Whether ``error`` says the server ended the connection (see :data:`_ENDED_BY_SERVER`)."""
    code = getattr(error, "sqlstate", None)
    # (older psycopg, 3.2.1 for one, reads the server's farewell without its SQLSTATE)
    farewell = code is None and "terminating connection" in str(error)
    return code in _ENDED_BY_SERVER or farewell


def _secrets(url: str) -> list[str]:
    """The secrets an address holds (its password, raw and decoded, and values of parameters
    named like secrets), for taking out of the driver's messages, which may repeat them."""
    from urllib.parse import unquote

    found = [url]
    rest = url.split("://", 1)[-1]
    credentials = rest.rpartition("@")[0]
    if ":" in credentials:
        password = credentials.split(":", 1)[1]
        found += [password, unquote(password)]
        # (libpq reads a password with / ? # @ or : in it, not percent-encoded, as other parts
        # of the address, and may quote a piece of it)
        found += re.split(r"[/?#@:]", password)
    found += re.findall(r"(?:password|sslpassword)=([^&\s]+)", url, flags=re.IGNORECASE)
    return sorted({text for text in found if len(text) >= 3}, key=len, reverse=True)


class _Watched:
    """A statement waiting for the server's answer (see :class:`_Deadlines`)."""

    def __init__(self, connection: Any, deadline: float) -> None:
        self.socket = int(connection.pgconn.socket)
        self.deadline = deadline
        self.cut = False
        self.closed = False  # (its connection closed by another thread: never shut again)


class _Deadlines:
    """Closes the connection under a statement the server has not answered in time (its socket
    shut down: the statement's thread, waiting in the driver, then fails at once). The driver
    has no time limit of its own: a server that stopped answering, a TCP connection whose
    packets nobody answers, held the thread for ever. One thread for the process, started when
    first needed (again in a forked copy of the process)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._watched: list[_Watched] = []
        self._running = False
        self._wakes_at: float | None = None  # (when the thread looks next: None, when notified)
        reset_in_forked_copies(self)

    def after_fork(self) -> None:
        """In a forked copy of the process: no thread yet (the lock may have been held by a
        thread not copied)."""
        self._changed = threading.Condition()
        self._watched = []
        self._running = False
        self._wakes_at = None

    @contextlib.contextmanager
    def watch(self, connection: Any, seconds: float) -> Iterator[_Watched]:
        watched = _Watched(connection, time.monotonic() + seconds)
        with self._changed:
            if not self._running:
                self._running = True
                name = "anvia-store-deadlines"
                threading.Thread(target=self._run, name=name, daemon=True).start()
            # (a deadline after the one the thread waits for need not wake it)
            if self._wakes_at is None or watched.deadline < self._wakes_at:
                self._changed.notify()
            self._watched.append(watched)
        try:
            yield watched
        finally:
            with self._changed:
                self._watched.remove(watched)

    def close(self, connection: Any) -> None:
        """Close ``connection``, which another thread may be waiting on. Then its socket is
        only shut down, under the watcher's lock (the waiting thread fails now, and closes the
        connection itself, see ``_answered``): closed here, the number of its socket went back
        to the system while still watched, and the next socket opened got it (shut down by the
        watcher at the deadline, and waited on by that thread instead of its own)."""
        with self._changed:
            with contextlib.suppress(Exception):
                fileno = int(connection.pgconn.socket)
                waiting = [w for w in self._watched if w.socket == fileno]
                if waiting:
                    for w in waiting:
                        w.cut = w.closed = True
                    _shut(fileno)
                    return
            connection.close()

    def _run(self) -> None:
        changed = self._changed
        with changed:
            while changed is self._changed:
                now = time.monotonic()
                for late in [w for w in self._watched if not w.cut and w.deadline <= now]:
                    late.cut = True
                    _shut(late.socket)
                pending = [w.deadline for w in self._watched if not w.cut]
                self._wakes_at = min(pending) if pending else None
                changed.wait(self._wakes_at - now if self._wakes_at is not None else None)


def _shut(fileno: int) -> None:
    """Shut down the socket ``fileno`` (a connection's, still in use: not closed here)."""
    with contextlib.suppress(OSError, ValueError):
        cut = socket.socket(fileno=fileno)
        try:
            cut.shutdown(socket.SHUT_RDWR)
        finally:
            cut.detach()


_DEADLINES = _Deadlines()


class _Held:
    """A thread's connection: given back to the backend when the thread ends (its
    ``threading.local`` goes), for the next thread, instead of staying open unused. It does not
    keep the backend alive: a store let go closes its connections at once (see ``_close_all``).
    In a forked copy of the process it is left alone (see ``_fork``)."""

    def __init__(self, backend: PostgresBackend, connection: Any) -> None:
        self.backend = weakref.ref(backend)
        self.connection = connection
        self.used = time.monotonic()
        self.pid = process_id()

    def __del__(self) -> None:
        if inherited(self.pid):  # (the backend's lock may be held by a thread not copied)
            keep(self.connection)
            return
        backend = self.backend()
        if backend is not None:
            backend._give_back(self.connection)


class _Timed:
    """A transaction whose BEGIN and COMMIT (or ROLLBACK) wait for the server's answer at most
    as long as a statement (see :meth:`PostgresBackend._answered`)."""

    def __init__(self, transaction: Any, connection: Any, backend: PostgresBackend) -> None:
        self.transaction = transaction
        self.connection = connection
        self.backend = backend

    def __enter__(self) -> Any:
        with self.backend._answered(self.connection, sql="BEGIN"):
            return self.transaction.__enter__()

    def __exit__(self, *exc_info: Any) -> bool:
        ending = "ROLLBACK" if exc_info[0] is not None else "COMMIT"
        with self.backend._answered(self.connection, sql=ending):
            return bool(self.transaction.__exit__(*exc_info))


def _close_all(connections: list[Any]) -> None:
    """Close a backend's connections (when it is closed, or let go)."""
    for connection in list(connections):
        try:  # noqa: SIM105 (also at interpreter exit, when contextlib may be gone)
            _DEADLINES.close(connection)  # (one another thread waits on: see there)
        except Exception:
            pass
    connections.clear()


class PostgresBackend:
    """Connections to one PostgreSQL database (a ``postgresql://`` URL)."""

    kind = "postgresql"
    placeholder = "%s"
    busy_timeout = 5.0
    #: How long the store waits for the server to answer a statement (seconds; None: for ever),
    #: from the ``statement_timeout`` its first connection found (see :meth:`_set_timeouts`).
    answer_seconds: float | None = None

    def __init__(self, url: str) -> None:
        self._psycopg = _psycopg()
        self.url = url
        self.location = shown_url(url)  # (without its password)
        self._local = threading.local()
        self._all: list[Any] = []  # (every connection opened, the listener's too)
        # A store no longer referenced closes its connections as it goes (a script polling with
        # RunStore(url).pending() held one of the server's connections per poll until Python's
        # cycle collector ran).
        weakref.finalize(self, _close_all, self._all)
        self._idle: list[Any] = []  # connections of threads that ended, for the next thread
        # (reentrant: a thread's connection is given back from a finalizer, which may run in a
        # thread that holds it)
        self._lock = threading.RLock()
        self._version = 0
        self._listener: Any = None
        self._looked = 0.0  # when the watcher was last told to look (monotonic)
        self._listen_again_at = 0.0  # a listening connection that could not open waits (monotonic)
        self._secrets = _secrets(url)
        #: The connection parameters the address gives (an address libpq cannot read: none,
        #: and connecting says what is wrong with it).
        self._given: set[str] = set()
        with contextlib.suppress(Exception):
            self._given = set(self._psycopg.conninfo.conninfo_to_dict(url))
        #: A connection was made once: the server is there (see :meth:`_connect`).
        self._reached = False
        self.commits = 0
        #: The server's clock minus this machine's, when it was measured (monotonic), and this
        #: machine's clock minus its monotonic clock then (a step of the clock measures again).
        self._clock: tuple[float, float, float] | None = None
        reset_in_forked_copies(self)

    def after_fork(self) -> None:
        """In a forked copy of this process: its own connections from now on (the inherited
        ones are kept, untouched: closing one would end the parent's session), and its own
        lock. (The lists stay the same objects: the finalizer holds the first.)"""
        for connection in [*self._all, *self._idle, self._listener]:
            if connection is not None:
                keep(connection)
        self._all.clear()
        self._idle.clear()
        self._listener = None
        self._lock = threading.RLock()
        self._local = threading.local()

    def _connection(self) -> Any:
        held: _Held | None = getattr(self._local, "held", None)
        now = time.monotonic()
        if held is not None and now - held.used > IDLE_CHECK_SECONDS:
            self._check(held.connection)
        if held is None or held.connection.closed:
            held = _Held(self, self._idle_connection() or self._connect())
            self._local.held = held
        held.used = now
        return held.connection

    def _connect(self) -> Any:
        """A new connection, in autocommit mode, waiting at most 5 s for a lock (as a SQLite
        store waits for a busy file) and ``connect_timeout`` seconds to connect. Once the
        server was reached, one that refuses connections for a while (a restart) is waited
        for, up to :data:`RECONNECT_SECONDS`: a run that wrote in that moment left its store
        for good, and a decision then sent through the store never reached it."""
        options: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in self.url:
            options["connect_timeout"] = CONNECT_TIMEOUT
        network: dict[str, int] = {**KEEPALIVES, "keepalives_count": KEEPALIVES_COUNT}
        if self._psycopg.pq.version() >= 120000:  # (an older libpq refuses the option)
            network["tcp_user_timeout"] = int((STATEMENT_SECONDS + ANSWER_GRACE_SECONDS) * 1000)
        # (the address's own settings are kept: a keyword argument would replace them)
        options.update({k: v for k, v in network.items() if k not in self._given})
        deadline = time.monotonic() + RECONNECT_SECONDS
        pause = 0.05
        while True:
            try:
                connection = self._psycopg.connect(self.url, **options)
                with self._answered(connection, STATEMENT_SECONDS + ANSWER_GRACE_SECONDS):
                    self._set_timeouts(connection)
                break
            except self._psycopg.Error as error:
                left = deadline - time.monotonic()
                if not (self._reached and _not_taking_connections(error) and left > 0):
                    # (a server still down after the wait is not waited for again, until it
                    # is reached: every write would hold the run that long)
                    self._reached = False
                    told = self._told(error)
                    told += "" if told.endswith((".", "?", "!")) else "."
                    raise RunStoreError(
                        f"Cannot connect to the run store {self.location}: {told}"
                        + _how_to_connect(error)
                    ) from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, 1.0)
        self._reached = True
        with self._lock:
            self._all[:] = [c for c in self._all if not c.closed]
            self._all.append(connection)
        return connection

    def _set_timeouts(self, connection: Any) -> None:
        """Wait at most :attr:`busy_timeout` for a lock; and, unless the address or the server
        sets them, at most :data:`STATEMENT_SECONDS` for a statement and
        :data:`IDLE_IN_TRANSACTION_SECONDS` for a transaction left open. The store then waits
        for the server's answer as long as a statement may run, and a little longer."""
        connection.execute(f"SET lock_timeout = '{int(self.busy_timeout * 1000)}ms'")
        ours = {
            "statement_timeout": STATEMENT_SECONDS,
            "idle_in_transaction_session_timeout": IDLE_IN_TRANSACTION_SECONDS,
        }
        rows = connection.execute(
            "SELECT name, setting, source FROM pg_catalog.pg_settings WHERE name = ANY(%s)",
            (list(ours),),
        ).fetchall()
        settings = {str(name): (int(setting), str(source)) for name, setting, source in rows}
        for name, seconds in ours.items():
            if name in settings and settings[name][1] == "default":  # (9.5 and older: no idle_)
                connection.execute(f"SET {name} = '{int(seconds * 1000)}ms'")
                settings[name] = (int(seconds * 1000), "session")
        statement = settings.get("statement_timeout", (0, ""))[0]
        # (a statement_timeout of 0 set on purpose: statements may run for ever, and are waited
        # for as long)
        self.answer_seconds = statement / 1000 + ANSWER_GRACE_SECONDS if statement else None

    @contextlib.contextmanager
    def _answered(
        self, connection: Any, seconds: float | None = None, sql: str = "SELECT"
    ) -> Iterator[None]:
        """Statements on ``connection`` answered within ``seconds`` (by default
        :attr:`answer_seconds`): else the connection is closed under them, and they fail with a
        :class:`RunStoreError` saying that the server did not answer."""
        seconds = self.answer_seconds if seconds is None else seconds
        if seconds is None or connection.closed:
            yield
            return
        with _DEADLINES.watch(connection, seconds) as watched:
            try:
                yield
            except self._psycopg.Error as error:
                if not watched.cut:
                    raise
                error_seen: BaseException | None = error
            else:
                error_seen = None
        if watched.cut:  # (or answered just as it was cut: the connection is closed anyway)
            with contextlib.suppress(Exception):
                connection.close()
            if error_seen is not None and watched.closed:
                raise RunStoreError(f"The run store {self.location} was closed.") from error_seen
            if error_seen is not None:
                raise self._no_answer(seconds, sql) from error_seen

    def _no_answer(self, seconds: float, sql: str) -> RunStoreError:
        """The server did not answer ``sql`` in time (see :meth:`_answered`)."""
        # (nothing is written by these: a transaction rolled back is not stored)
        read = sql.lstrip().upper().startswith(("SELECT", "BEGIN", "ROLLBACK"))
        return RunStoreError(
            f"The run store {self.location} did not answer within {seconds:g} s, so its "
            "connection was closed: the PostgreSQL server may be stopped, overloaded or "
            "unreachable. Check that the server runs and answers (psql with the same address) "
            "and the network to it."
            + ("" if read else " What was being written may or may not be stored.")
        )

    def _idle_connection(self) -> Any:
        """A connection a thread that ended gave back, if one still works."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                connection = self._idle.pop()
            if not connection.closed and self._works(connection):
                return connection
            connection.close()

    def _give_back(self, connection: Any) -> None:
        with contextlib.suppress(Exception), self._lock:  # (at exit, anything may be gone)
            if not connection.closed and any(c is connection for c in self._all):
                self._idle.append(connection)

    def _check(self, connection: Any) -> None:
        """Close ``connection`` when it no longer works (then a new one is made)."""
        if not connection.closed and not self._works(connection):
            connection.close()

    def _works(self, connection: Any) -> bool:
        try:
            with self._answered(connection):
                connection.execute("SELECT 1")
        except (self._psycopg.Error, RunStoreError):
            return False
        return True

    def _told(self, error: BaseException) -> str:
        """The driver's message on one line, without the address's secrets (libpq repeats the
        text it could not read, a password included): the server's own message, without the
        statement it quotes, its caret line and its context lines."""
        primary = getattr(getattr(error, "diag", None), "message_primary", None)
        text = primary if isinstance(primary, str) and primary.strip() else str(error)
        text = " ".join(line.strip() for line in text.splitlines() if line.strip())
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    #: Why this process can only read the store: never known before a write is refused.
    read_only: str | None = None

    def error(self, error: BaseException, sql: str = "") -> RunStoreError:
        """A driver error as a sentence for the person using the store (``sql``: the statement
        that failed; a privilege the role lacks is named from it)."""
        if getattr(error, "sqlstate", None) == _INSUFFICIENT_PRIVILEGE:
            return self._not_allowed(error, sql)
        if getattr(error, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
            return RunStoreError(
                f"The run store {self.location} is locked by another program (waited "
                f"{self.busy_timeout:g} s): {self._told(error).rstrip('.')}. Try again once "
                "that program has finished writing, or end its transaction."
            )
        told = self._told(error)
        if getattr(error, "sqlstate", None) == _NO_SCHEMA:
            return RunStoreError(
                f"The run store {self.location} failed: {told.rstrip('.')}: the schemas its "
                "search_path names (options=-csearch_path=NAME in the address) are not in the "
                "database. Create the schema (CREATE SCHEMA NAME) or correct its name."
            )
        return RunStoreError(f"The run store {self.location} failed: {told}".rstrip(".") + ".")

    def _not_allowed(self, error: BaseException, sql: str) -> RunStoreError:
        """The role lacks a privilege: which, on what, and what to ask for."""
        diag = getattr(error, "diag", None)
        refused = (getattr(diag, "message_primary", None) or str(error)).rstrip(".")
        words = sql.split(None, 1)
        needs = words[0].upper() if words else ""
        if needs in ("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER"):
            refused += f" (this needs {needs} on it)" if needs != "ALTER" else " (ALTER TABLE)"
        role = self._role()
        return RunStoreError(
            f"The run store {self.location} refused the role {role!r}: {refused}. Reading the "
            "store (runs, show) needs SELECT on its tables; deciding, steering and running "
            "also need INSERT, UPDATE and DELETE (GRANT SELECT, INSERT, UPDATE, DELETE ON ALL "
            f"TABLES IN SCHEMA ... TO {role}); creating or upgrading it needs its owner's role."
        )

    def _role(self) -> str:
        held = getattr(self._local, "held", None)
        with contextlib.suppress(Exception):
            if held is not None:
                return str(held.connection.info.user)
        return "?"

    def clock_offset(self) -> float:
        """How far the server's clock is ahead of this machine's (seconds), measured again
        after :data:`CLOCK_CHECK_SECONDS`: heartbeats are written and judged by the server's
        clock, so a machine whose clock runs ahead does not take a live run from another."""
        measured = self._clock
        # (this machine's clock minus its monotonic one moves when the clock is set or stepped)
        stepped = time.time() - time.monotonic()
        if (
            measured is not None
            and time.monotonic() - measured[1] < CLOCK_CHECK_SECONDS
            and abs(stepped - measured[2]) < 1.0
        ):
            return measured[0]
        self._connection()  # (connected first: the offset is not off by half the connect time)
        before = time.time()
        [(server,)] = self.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8")
        offset = float(server) - (before + time.time()) / 2
        self._clock = (offset, time.monotonic(), time.time() - time.monotonic())
        return offset

    def gone(self) -> None:
        """A database does not leave its place as a file can (see the SQLite backend)."""
        return

    def refuses_writes(self, error: RunStoreError) -> bool:
        """``error`` (raised by this backend) says the role may not write (or alter) it."""
        return getattr(error.__cause__, "sqlstate", None) == _INSUFFICIENT_PRIVILEGE

    def _ended_by_server(self, error: BaseException, connection: Any, alone: bool) -> bool:
        """Whether ``error`` says the server had ended ``connection`` (see
        :data:`_ENDED_BY_SERVER`), for a statement run ``alone`` (not in a transaction begun
        before it): then it runs again on a new connection."""
        return alone and _ended(error) and bool(connection.closed)

    def cut_off(self, error: BaseException) -> bool:
        """Whether ``error``, raised out of :meth:`transaction`, says the server ended this
        thread's connection in the middle of the transaction (a restart, an admin's
        pg_terminate_backend, a failover): none of it was committed, and the whole write may
        be made again on a new connection."""
        held = getattr(self._local, "held", None)
        cause = error.__cause__
        return held is not None and cause is not None and _ended(cause) and held.connection.closed

    def _alone(self, connection: Any) -> bool:
        """Whether ``connection`` is in no transaction (a statement on it commits on its own)."""
        return bool(connection.info.transaction_status == self._psycopg.pq.TransactionStatus.IDLE)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        for again in (False, True):
            connection = self._connection()
            alone = self._alone(connection)
            try:
                with self._answered(connection, sql=sql):
                    cursor = connection.execute(sql, tuple(map(_put, params)))
                    self._local.rowcount = cursor.rowcount
                    rows = cursor.fetchall() if cursor.description is not None else []
            except self._psycopg.Error as error:
                if not again and self._ended_by_server(error, connection, alone):
                    continue
                raise self.error(error, sql) from error
            except UnicodeEncodeError as error:
                raise not_text(self.location, error) from None
            if sql.lstrip().upper().startswith(_ANNOUNCED) and cursor.rowcount:
                self._announce(connection, alone)
            return [tuple(map(_get, r)) for r in rows]
        raise AssertionError("unreachable")  # pragma: no cover

    def _announce(self, connection: Any, alone: bool) -> None:
        """Tell the listening watchers that a decision (or a message) was written. The write
        has run: when the server ended the connection just after it, the announcement is lost
        (watchers look every :data:`LOOK_ANYWAY_SECONDS` anyway), the write is not undone."""
        try:
            with self._answered(connection, sql="NOTIFY"):
                connection.execute(f"NOTIFY {CHANNEL}")
        except self._psycopg.Error as error:
            if not self._ended_by_server(error, connection, alone):
                raise self.error(error, "NOTIFY") from error
            logger.debug("The run store's announcement was lost: %s", error)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        for again in (False, True):
            connection = self._connection()
            alone = self._alone(connection)
            try:
                with self._answered(connection, sql=sql), connection.cursor() as cursor:
                    cursor.executemany(sql, [tuple(map(_put, row)) for row in rows])
            except self._psycopg.Error as error:
                if not again and self._ended_by_server(error, connection, alone):
                    continue
                raise self.error(error, sql) from error
            return

    @property
    def rowcount(self) -> int:
        return int(getattr(self._local, "rowcount", 0))

    @contextlib.contextmanager
    def transaction(self, *, yielding: bool = False) -> Iterator[None]:
        """A transaction that takes the store's one writer lock. (``yielding`` is for SQLite:
        the server queues the writers waiting for this lock, so a run's writes get their turn
        however often another process writes.)"""
        try:
            with contextlib.ExitStack() as stack:
                stack.enter_context(self._begun())
                yield
        except self._psycopg.Error as error:
            raise self.error(error) from error

    def _begun(self) -> contextlib.AbstractContextManager[Any]:
        """A transaction begun and holding the store's writer lock (one writer at a time for
        schema changes and ownership claims, as SQLite does); begun again on a new connection
        when the server had ended the thread's (nothing of it ran)."""
        for again in (False, True):
            connection = self._connection()
            alone = self._alone(connection)
            try:
                with contextlib.ExitStack() as attempt:
                    attempt.enter_context(_Timed(connection.transaction(), connection, self))
                    with self._answered(connection):
                        connection.execute("SELECT pg_advisory_xact_lock(7426001)")
                    return attempt.pop_all()
            except self._psycopg.Error as error:
                if again or not self._ended_by_server(error, connection, alone):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def start_writing(self) -> None:
        """Nothing to switch on (SQLite turns on its write-ahead log here)."""

    def checkpoint(self) -> None:
        """Nothing to do: the server writes its own log to its files."""

    def table_names(self) -> set[str]:
        # (pg_tables lists every table; information_schema only those the role has a grant on)
        rows = self.execute(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
        )
        return {str(r[0]) for r in rows}

    def data_version(self) -> int:
        """Grows when a decision was announced (``NOTIFY``), and every
        :data:`LOOK_ANYWAY_SECONDS`; the watcher then looks. A listening connection that broke
        (a restarted server, an idle timeout) is opened again, and the watcher looks at once
        (what was announced meanwhile was not heard)."""
        now = time.monotonic()
        try:
            if self._listener is not None and self._listener.closed:
                self._listener = None
            if self._listener is None and now >= self._listen_again_at:
                self._listen(now)
            if self._listener is not None:
                for _ in self._listener.notifies(timeout=0.0, stop_after=100):
                    self._version += 1
        except (self._psycopg.Error, RunStoreError):
            listener, self._listener = self._listener, None
            if listener is not None:
                with contextlib.suppress(Exception):
                    listener.close()
            raise
        finally:
            if now - self._looked >= LOOK_ANYWAY_SECONDS:
                self._looked = now
                self._version += 1
        return self._version

    def _listen(self, now: float) -> None:
        """Open the listening connection. One that cannot open (the server's or the role's
        connection limit reached, the server restarting) is tried again after
        :data:`LOOK_ANYWAY_SECONDS`; meanwhile the watcher looks that often without it (it
        did not look at all: a waiting run never heard a decision)."""
        try:
            self._listener = self._connect()
            with self._answered(self._listener):
                self._listener.execute(f"LISTEN {CHANNEL}")
        except (self._psycopg.Error, RunStoreError) as error:
            listener, self._listener = self._listener, None
            if listener is not None:
                with contextlib.suppress(Exception):
                    listener.close()
            self._listen_again_at = now + LOOK_ANYWAY_SECONDS
            logger.debug("The run store's listening connection could not open: %s", error)
            return
        self._version += 1  # look once after subscribing

    def is_error(self, error: BaseException) -> bool:
        return isinstance(error, self._psycopg.Error)

    def close(self) -> None:
        with self._lock:  # (the lists stay the same objects: the finalizer holds the first)
            connections = list(self._all)
            self._all.clear()
            self._idle.clear()
        if self._listener is not None:
            connections.append(self._listener)
            self._listener = None
        for connection in connections:
            with contextlib.suppress(Exception):
                _DEADLINES.close(connection)
        self._local = threading.local()
