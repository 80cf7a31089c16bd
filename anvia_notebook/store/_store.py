"""``RunStore``: runs, their approvals and questions, and their event logs, in a database.

The store is the single source of truth for an interaction: an approval or question is decided by
one conditional update (``... WHERE status = 'pending'``), so the first decision wins whichever
process writes it (a widget click, ``RunHandle.approve``, ``RunStore.approve`` in another kernel,
the command line) and every later one is refused.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence, Sized
from datetime import datetime
from typing import Annotated, Any, Concatenate, Literal, ParamSpec, TypeVar, Union, cast, get_args

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from .._stored_once import (
    MERGED_FIELD,
    MIN_SHARED,
    STORED,
    STORED_COMPACT,
    STORED_TEXT,
    KnownCalls,
    arguments_in,
    expand_events,
    is_last_reply,
    last_reply,
    restore,
)
from .._sub_run_log import SubRunEventRef, expand_sub_run_refs
from .._util import error_text, quoted
from ..decisions import (
    Resolution,
    answers_resolution,
    check_kind,
    check_resolution,
    decided,
    decline_resolution,
    refused_twice,
)
from ..events import RunEvent
from ..messages import Message
from ..question_types import describe_validation_error
from ..records import (
    ApprovalRecord,
    DecidedBy,
    DecidedVia,
    QuestionRecord,
    RecordT,
    decider,
    id_of,
    utc_now,
)
from ..run_state import RUN_STATUSES, RunState, RunStatus
from ..trace import Trace
from ._confirm import ConfirmCallback, DecisionRequests, same_decision
from ._errors import (
    DecisionRefusedError,
    DecisionRunNotFoundError,
    RunNotFoundError,
    RunOwnedError,
    RunStoreError,
    RunTakenOverError,
    StoreFileGoneError,
)
from ._fork import reset_in_forked_copies
from ._location import is_postgres_address, location_problem, postgres_address
from ._owner import (
    HEARTBEAT_INTERVAL,
    Owner,
    give_back_dropped,
    owner_alive,
    running_here,
    shown_host,
    store_clock,
    this_process,
)
from ._schema import APPLICATION, MIGRATIONS, SCHEMA_VERSION
from ._steer_write import top_run
from ._steering import SteeringCallback, SteeringRows

__all__ = ["RunList", "RunStore", "RunSummary", "StudioSession"]

logger = logging.getLogger("anvia_notebook")

InteractionKind = Literal["approval", "question"]
Record = ApprovalRecord | QuestionRecord
ACTIVE = ("pending", "running", "waiting")
#: What a location that is not a run store is told to do.
_CHOOSE_ANOTHER = (
    "choose another store (set_store(...) in a notebook, --store on the command line)."
)
#: How often the watcher looks for decisions written by other processes (seconds).
POLL_INTERVAL = 0.2
PROMPT_PREVIEW = 200
#: Characters of JSON a run's recent messages may reach in its row (see :class:`_Recent`)
#: before a write moves them to the ``messages`` table.
RECENT_LIMIT = 2000

#: A stored event: a run's event, or a reference to a sub-run's (see ``_sub_run_log``).
_STORED_KINDS = (*get_args(get_args(RunEvent)[0]), SubRunEventRef)
_STORED_EVENT: Any = Annotated[Union[_STORED_KINDS], Field(discriminator="type")]  # noqa: UP007
_EVENT: TypeAdapter[Any] = TypeAdapter(_STORED_EVENT)
_EVENTS: TypeAdapter[list[Any]] = TypeAdapter(list[_STORED_EVENT])


class _Recent:
    """What this process wrote of a run it owns: ``stored`` messages are rows of ``messages``,
    ``texts`` the JSON of the next ones, kept in the run's row (``recent_messages``).

    The write before each tool call is then a single ``UPDATE`` of one row (its state and these
    messages), the cheapest durable write; the next full write moves them to ``messages``.
    """

    __slots__ = ("size", "stored", "texts")

    def __init__(self, stored: int, texts: list[str] | None = None) -> None:
        self.stored = stored
        self.texts: list[str] = texts or []
        self.size = sum(len(t) for t in self.texts)

    def add(self, messages: Sequence[Message]) -> None:
        for message in messages[self.stored + len(self.texts) :]:
            text = message.model_dump_json()
            self.texts.append(text)
            self.size += len(text)

    def row(self) -> str | None:
        if not self.texts:
            return None
        return f'{{"from":{self.stored},"messages":[{",".join(self.texts)}]}}'

    def moved(self) -> None:
        self.stored += len(self.texts)
        self.texts = []
        self.size = 0


class RunSummary(BaseModel):
    """One line of :meth:`RunStore.runs`."""

    run_id: str
    agent_id: str
    status: str
    prompt: str
    created_at: datetime
    updated_at: datetime
    pending: int = 0
    session_id: str | None = None
    #: A sub-agent's run (``agent.as_tool``): the run that called it (listed under it), and
    #: the internal id of the call in it that runs the sub-agent (the latest, once resumed).
    parent_run_id: str | None = None
    parent_call_id: str | None = None


class RunList(list[RunSummary]):
    """A list of :class:`RunSummary` that displays as a table in a notebook."""

    def _repr_html_(self) -> str:
        from html import escape

        if not self:
            return "<p><em>No stored runs.</em></p>"
        head = "".join(
            f"<th style='text-align:left'>{h}</th>"
            for h in ("run_id", "agent", "status", "pending", "prompt", "updated")
        )
        rows = []
        for run in self:
            cells = (
                run.run_id,
                run.agent_id,
                run.status,
                str(run.pending),
                run.prompt[:80],
                run.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
            )
            rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def to_pandas(self) -> Any:
        import importlib

        try:
            pd = importlib.import_module("pandas")
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("RunList.to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame([r.model_dump() for r in self])


class StudioSession(BaseModel):
    """A stored Studio conversation."""

    session_id: str
    agent_id: str
    title: str
    messages: list[Any]
    created_at: datetime
    updated_at: datetime


def check_limit(limit: int | None) -> int | None:
    """``limit`` (how many to list) if it is a whole number, 0 or more, or None (all of them);
    else a clear error."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit is a whole number of runs, not {type(limit).__name__}.")
    if limit < 0:
        raise ValueError(f"limit is the number of runs to list: 0 or more, not {limit}.")
    return limit


def _no_such_column(error: RunStoreError) -> bool:
    """Whether the statement named a column its table does not have (SQLite's "no such column",
    PostgreSQL's SQLSTATE 42703)."""
    cause = error.__cause__
    return getattr(cause, "sqlstate", None) == "42703" or "no such column" in str(cause)


def _now() -> str:
    return utc_now().isoformat()


def _marks(items: Sized) -> str:
    """One SQL placeholder for each of ``items`` (``?, ?, ?``)."""
    return ", ".join("?" * len(items))


_T = TypeVar("_T")
_P = ParamSpec("_P")


def _again_if_cut_off(
    write: Callable[Concatenate[RunStore, _P], _T],
) -> Callable[Concatenate[RunStore, _P], _T]:
    """A write of the run store made again, once, when the server ended the connection in the
    middle of its transaction (a restart of a PostgreSQL server, an admin's
    pg_terminate_backend, a failover): nothing of it was committed. (Else the run that wrote
    left its store for good, and what it waited for could not be decided through it.) Only for
    writes that begin their own transaction, never one inside another's."""

    @functools.wraps(write)
    def again(self: RunStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return write(self, *args, **kwargs)
        except RunStoreError as error:
            if not self._backend.cut_off(error):
                raise
            logger.debug("A write to the run store was cut off; made again: %s", error)
        return write(self, *args, **kwargs)

    return again


def _open_backend(location: str | os.PathLike[str]) -> Any:
    if not isinstance(location, (str, os.PathLike)):
        raise TypeError(
            f"A run store is a file path or a postgresql:// address, not {type(location).__name__}."
        )
    text = os.fspath(location)
    if not isinstance(text, str):
        raise TypeError("A run store is a file path or a postgresql:// address, not bytes.")
    problem = location_problem(text)
    if problem is not None:
        raise RunStoreError(problem)
    if is_postgres_address(text):
        from ._postgres import PostgresBackend

        return PostgresBackend(postgres_address(text))
    from ._sqlite import SQLiteBackend

    return SQLiteBackend(text)


def empty_database(location: str) -> bool:
    """Whether the PostgreSQL database at ``location`` has no tables at all: a command that
    only reads or decides must not make it a run store (ten tables in a mistyped database),
    as it makes no file where there is none."""
    backend = _open_backend(location)
    try:
        return not backend.table_names()
    finally:
        backend.close()


class RunStore(SteeringRows, DecisionRequests):
    """Runs that outlive the kernel: a SQLite file (default) or ``postgresql://...``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._backend = _open_backend(path)
        self.location: str = self._backend.location
        self._watch_lock = threading.Lock()
        self._watched: dict[str, Callable[[Record], None]] = {}
        #: The run's check of an approval with edited arguments sent through a store (by id).
        self._confirming: dict[str, ConfirmCallback] = {}
        #: Told (by id) when the store's file leaves its place while the item is watched.
        self._lost: dict[str, Callable[[RunStoreError], None]] = {}
        #: Runs this process runs, watched for messages steered into them (by run id).
        self._steering_watched: dict[str, SteeringCallback] = {}
        self._owned: set[str] = set()
        #: Runs of this process that went on without the store (a write failed): the text
        #: their row is to be marked ended with, the next try's time and the wait after it.
        self._left: dict[str, tuple[str, float, float]] = {}
        #: Watched interactions whose stored decision could not be read (said once).
        self._unreadable: set[str] = set()
        #: Bumped whenever something starts being watched: the watcher then looks at once,
        #: though the store has not changed since its last look (a decision written just
        #: before the watch began was seen by that look, for nothing watched it yet).
        self._watch_generation = 0
        #: Runs this process owns and writes: what of their messages is where.
        self._recent: dict[str, _Recent] = {}
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False
        self._checkpointed = 0  # the backend's commit count at the last checkpoint
        reset_in_forked_copies(self)
        self._prepare()

    def after_fork(self) -> None:
        """In a forked copy of this process: nothing watched (the runs that watched are the
        parent's, and so is the background thread), and its own lock."""
        self._watch_lock = threading.Lock()
        self._watched, self._confirming, self._steering_watched = {}, {}, {}
        self._lost = {}
        self._owned = set()
        self._left = {}
        self._recent = {}
        self._watcher = None
        self._stop = threading.Event()

    def __repr__(self) -> str:
        return f"RunStore({self.location!r})"

    # -- schema ----------------------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return sql if self._backend.placeholder == "?" else sql.replace("?", "%s")

    def _q(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._backend.execute(self._sql(sql), params)  # type: ignore[no-any-return]

    def _prepare(self) -> None:
        """Check that this is a run store (or empty), refuse newer schemas, migrate older ones.

        The check reads only: a file that is refused is left exactly as it was (SQLite's
        write-ahead log is switched on only once the file is known to be a run store). A store
        whose schema is current is not written at all: it may be one this process can only
        read (an archived project, a role that may only SELECT), whose writes are refused
        when they come."""
        try:
            tables = self._backend.table_names()
            version = self._check(tables)
            if tables and version == SCHEMA_VERSION:
                if not self._backend.read_only:
                    self._backend.start_writing()
                return
            if tables and self._backend.read_only:
                raise self._not_migrated(version, self._backend.read_only)
            self._backend.start_writing()
            try:
                self._migrate()
            except RunStoreError as error:
                if tables and self._backend.refuses_writes(error):
                    raise self._not_migrated(version, str(error.__cause__ or error)) from None
                raise
        except RunStoreError:
            self._backend.close()
            raise
        except Exception as error:
            self._backend.close()
            if self._backend.is_error(error) and "locked" in str(error):
                raise RunStoreError(
                    f"The run store {self.location} is locked by another program (waited "
                    f"{self._backend.busy_timeout:g} s): {error}."
                ) from None
            if self._backend.is_error(error):
                raise RunStoreError(
                    f"Cannot use the run store {self.location}: {error}. If the file is "
                    "damaged, move it away (a new store is created) or choose another file."
                ) from None
            raise

    def _not_migrated(self, version: int, why: str) -> RunStoreError:
        """A store of an older schema that cannot be brought up to date (``why``)."""
        return RunStoreError(
            f"The run store {self.location} has schema {version}, older than this "
            f"anvia_notebook's ({SCHEMA_VERSION}), and cannot be brought up to date: it is "
            f"read-only here ({why.rstrip('.')}). Open it once where it can be written (as its "
            "owner), or read it with the anvia_notebook version that wrote it."
        )

    def _migrate(self) -> None:
        """Create the tables of a new store, or bring an older one up to date, in one
        transaction (another process may be doing the same: the first one does it)."""
        with self._backend.transaction():
            tables = self._backend.table_names()
            if not tables:
                self._q("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self._q("INSERT INTO meta VALUES ('application', ?)", (APPLICATION,))
                self._q("INSERT INTO meta VALUES ('schema_version', '0')")
                tables = {"meta"}
            version = self._check(tables)
            for target, statements in MIGRATIONS:
                if target > version:
                    for statement in statements:
                        self._q(statement)
                    version = target
            self._q("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))

    def _check(self, tables: set[str]) -> int:
        """The schema version of a run store with these tables (0 when empty); refuses a
        database of another application and one written by a newer version."""
        if not tables:
            return 0
        other = RunStoreError(
            f"{self.location} is a database of another application, not an anvia_notebook "
            f"run store; {_CHOOSE_ANOTHER}"
        )
        if "meta" not in tables:
            raise other
        try:
            meta = dict(self._q("SELECT key, value FROM meta"))
        except RunStoreError as error:
            if _no_such_column(error):  # a meta table of another shape
                raise other from None
            raise  # (a role without the right to read it is told so, and the like)
        if meta.get("application") != APPLICATION:
            raise RunStoreError(
                f"{self.location} is not an anvia_notebook run store "
                f"(application {meta.get('application')!r}); {_CHOOSE_ANOTHER}"
            )
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise RunStoreError(
                f"The run store {self.location} was written by a newer anvia_notebook "
                f"(schema {version}; this version reads up to {SCHEMA_VERSION}). "
                "Upgrade anvia_notebook to use it."
            )
        return version

    def file_gone(self) -> bool:
        """The store's file was deleted or replaced while this object used it (SQLite; its
        writes are refused then, see ``StoreFileGoneError``)."""
        return self._backend.gone() is not None

    @property
    def schema_version(self) -> int:
        rows = self._q("SELECT value FROM meta WHERE key = 'schema_version'")
        return int(rows[0][0])

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """``with RunStore(path) as store:`` closes it at the end of the block."""
        self.close()

    def close(self) -> None:
        """Stop the background thread, then close every connection (none is closed while that
        thread may still be using it)."""
        self._closed = True
        self._stop.set()
        with self._watch_lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=10)
        self._backend.close()

    # -- reading ---------------------------------------------------------------------------------

    def runs(
        self,
        status: str | None = None,
        agent_id: str | None = None,
        limit: int | None = 50,
        *,
        session_id: str | None = None,
    ) -> RunList:
        """Runs, newest first; ``interrupted`` when the process that ran it is gone. At most
        ``limit`` of them (None: all). ``session_id``: only the runs of that session (e.g. a
        Studio conversation)."""
        out = RunList()
        if status is not None and status not in RUN_STATUSES:
            raise ValueError(f"{status!r} is not a run status: one of {', '.join(RUN_STATUSES)}.")
        if check_limit(limit) == 0:
            return out
        sql = (
            "SELECT r.run_id, r.agent_id, r.session_id, r.status, r.prompt, r.created_at, "
            "r.updated_at, r.owner_host, r.owner_pid, r.owner_started, r.heartbeat_at, "
            "(SELECT COUNT(*) FROM interactions i WHERE i.run_id = r.run_id "
            "AND i.status = 'pending'), r.parent_run_id, r.parent_call_id FROM runs r"
        )
        where: list[str] = []
        params: list[Any] = []
        if agent_id is not None:
            where.append("r.agent_id = ?")
            params.append(agent_id)
        if session_id is not None:
            where.append("r.session_id = ?")
            params.append(session_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.created_at DESC, r.run_id DESC"
        summaries: list[RunSummary] = []
        rows = self._q(sql, params)
        nested = self._nested_pending() if rows else {}
        for row in rows:
            # A run's pending count includes its sub-agents' (they wait on it).
            pending = int(row[11]) + nested.get(row[0], 0)
            summary = RunSummary(
                run_id=row[0],
                agent_id=row[1],
                session_id=row[2],
                status=self._effective_status(row[3], row[7:11], pending),
                prompt=row[4],
                created_at=datetime.fromisoformat(row[5]),
                updated_at=datetime.fromisoformat(row[6]),
                pending=pending,
                parent_run_id=row[12],
                parent_call_id=row[13] if row[12] is None or row[13] else self._parent_call(row[0]),
            )
            if status is not None and summary.status != status:
                continue
            summaries.append(summary)
        for summary in _under_parents(summaries):
            out.append(summary)
            if limit is not None and len(out) >= limit:
                break
        return out

    def _nested_pending(self) -> dict[str, int]:
        """For each run with sub-agents' runs: how many interactions are pending below it."""
        rows = self._q(
            "SELECT r.run_id, r.parent_run_id, (SELECT COUNT(*) FROM interactions i "
            "WHERE i.run_id = r.run_id AND i.status = 'pending') FROM runs r "
            "WHERE r.parent_run_id IS NOT NULL"
        )
        parent_of = {row[0]: row[1] for row in rows}
        below: dict[str, int] = {}
        for run_id, _, count in rows:
            if not count:
                continue
            seen: set[str] = set()
            parent = parent_of.get(run_id)
            while parent is not None and parent not in seen:
                seen.add(parent)
                below[parent] = below.get(parent, 0) + int(count)
                parent = parent_of.get(parent)
        return below

    def sub_runs(self, run_id: str) -> list[RunState]:
        """The stored runs of the sub-agents that ``run_id``'s tool calls started (one level
        down), oldest first."""
        rows = self._q(
            "SELECT run_id FROM runs WHERE parent_run_id = ? ORDER BY created_at, run_id",
            (run_id,),
        )
        if not rows:
            self._known(run_id)
        return [self.get(row[0]) for row in rows]

    def _known(self, run_id: str) -> None:
        """Raise :class:`RunNotFoundError` when no run ``run_id`` is stored (a read that found
        nothing says a mistyped id, rather than looking like a run with nothing in it)."""
        if not self._q("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
            raise RunNotFoundError(f"No stored run {run_id!r} in {self.location}.")

    def run_tree(self, run_id: str) -> list[str]:
        """``run_id`` and the runs of its sub-agents at every depth (parents first);
        :class:`RunNotFoundError` when no run ``run_id`` is stored."""
        tree = self._tree(run_id)
        if len(tree) == 1:
            self._known(run_id)
        return tree

    def _tree(self, run_id: str) -> list[str]:
        """:meth:`run_tree`, without asking whether ``run_id`` is stored (``[run_id]`` when it
        is not)."""
        tree = [run_id]
        level = [run_id]
        while level:
            rows = self._q(
                f"SELECT run_id FROM runs WHERE parent_run_id IN ({_marks(level)}) "
                "ORDER BY created_at, run_id",
                level,
            )
            level = [row[0] for row in rows if row[0] not in tree]
            tree.extend(level)
        return tree

    def top_run(self, run_id: str) -> tuple[str, str] | None:
        """``(run id, agent id)`` of the top-level run above ``run_id`` when that is a
        sub-agent's run (the run to resume to go on with it), else None (a top-level run);
        :class:`RunNotFoundError` when no run ``run_id`` is stored."""
        top = top_run(self._backend, self._sql, run_id)
        if top is None:
            self._known(run_id)
        return top

    def _effective_status(self, status: str, owner: Sequence[Any], pending: int) -> str:
        if status in ACTIVE:
            if not self._alive(owner):
                return "interrupted"
            return "waiting" if pending else "running"
        return status

    def status(self, run_id: str) -> str:
        """The run's status as :meth:`runs` reports it (``interrupted`` if its owner is gone)."""
        rows = self._q(
            "SELECT status, owner_host, owner_pid, owner_started, heartbeat_at FROM runs "
            "WHERE run_id = ?",
            (run_id,),
        )
        if not rows:
            raise RunNotFoundError(f"No stored run {run_id!r} in {self.location}.")
        return self._status_of(run_id, rows[0][0], rows[0][1:5])

    def _status_of(self, run_id: str, status: str, owner: Sequence[Any]) -> str:
        """``status`` as :meth:`runs` reports it: an active run's sub-agents' pending
        interactions count as its own."""
        pending = 0
        if status in ACTIVE and self._alive(owner):
            tree = self._tree(run_id)
            pending = int(
                self._q(
                    f"SELECT COUNT(*) FROM interactions WHERE run_id IN ({_marks(tree)}) "
                    "AND status = 'pending'",
                    tree,
                )[0][0]
            )
        return self._effective_status(status, owner, pending)

    def _parent_call(self, run_id: str) -> str | None:
        """A sub-agent's run's ``parent_call_id`` read from its state: a run that a store of an
        earlier version wrote has none in its row (until it is written again)."""
        rows = self._q("SELECT state FROM runs WHERE run_id = ?", (run_id,))
        try:
            value = json.loads(rows[0][0]).get("parent_call_id") if rows else None
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None

    def get(self, run_id: str) -> RunState:
        """The stored :class:`RunState` (history, turn, usage, approvals, questions). Its
        ``status`` is the one :meth:`runs` reports: ``waiting`` while the run waits for a person
        (as its handle says), ``interrupted`` when the process that ran it is gone."""
        rows = self._q(
            "SELECT state, owner_host, owner_pid, owner_started, heartbeat_at FROM runs "
            "WHERE run_id = ?",
            (run_id,),
        )
        if not rows:
            raise RunNotFoundError(f"No stored run {run_id!r} in {self.location}.")
        try:
            state = RunState.model_validate_json(rows[0][0])
        except ValidationError as error:
            raise RunStoreError(
                f"The stored state of run {run_id!r} in {self.location} could not be read "
                f"(was it changed by hand?): {describe_validation_error(error)}"
            ) from None
        state.messages = self._messages(run_id)
        if state.output == STORED_TEXT:
            state.output = last_reply(state.messages)
        if any(progress.args in (STORED, STORED_COMPACT) for progress in state.calls.values()):
            arguments = arguments_in(state.messages)
            for progress in state.calls.values():
                if progress.args in (STORED, STORED_COMPACT):
                    progress.args = restore(progress.args, arguments, progress.tool_call_id)
        for record in self._run_records(run_id):
            state.hold(record)
        state.status = cast(RunStatus, self._status_of(run_id, state.status, rows[0][1:5]))
        return state

    def interactions(self, run_id: str) -> list[Record]:
        """The run's approvals and questions, decided or not, in the order they were asked."""
        records = self._run_records(run_id)
        if not records:
            self._known(run_id)
        return records

    def _run_records(self, run_id: str) -> list[Record]:
        records = self._records("run_id = ? ORDER BY updated_at, id", (run_id,))
        return sorted(records, key=lambda r: r.requested_at)

    def pending(self, run_id: str | None = None) -> list[Record]:
        """Pending approvals and questions (of one run and its sub-agents' runs at every
        depth, or of every run)."""
        tree = [] if run_id is None else self._tree(run_id)
        where = f" AND run_id IN ({_marks(tree)})" if tree else ""
        records = self._records(f"status = 'pending'{where} ORDER BY id", tree)
        if run_id is not None and not records:
            self._known(run_id)
        return records

    def _records(self, where: str, params: Sequence[Any] = ()) -> list[Record]:
        """The stored records of the interactions ``where`` (an SQL condition) selects."""
        sql = f"SELECT kind, status, record, decision FROM interactions WHERE {where}"
        return [_row_record(*row) for row in self._q(sql, params)]

    def trace(self, run_id: str, *, messages: list[Message] | None = None) -> Trace:
        """The run's stored trace (every model call and tool call so far).

        ``messages``: the run's conversation when the caller has it already (else it is read).
        """
        from .._trace_store import decode_trace

        rows = self._q("SELECT agent_id FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise RunNotFoundError(f"No stored run {run_id!r} in {self.location}.")
        if messages is None:
            messages = self._messages(run_id)
        entries = self._q(
            "SELECT kind, idx, entry FROM trace_entries WHERE run_id = ? ORDER BY kind, idx",
            (run_id,),
        )
        try:
            trace = decode_trace(run_id, rows[0][0], entries, messages)
        except (ValidationError, ValueError) as error:
            raise RunStoreError(
                f"The stored trace of run {run_id!r} could not be read: {error}"
            ) from None
        if trace.status in ("running", "waiting") and self.status(run_id) == "interrupted":
            trace.status = "interrupted"  # (its process ended: the run and its trace agree)
        return trace

    def _messages(self, run_id: str) -> list[Message]:
        """The run's conversation: the rows of ``messages``, then its recent messages (those
        written since its last full write, kept in its row)."""
        by_index = dict(
            self._q("SELECT idx, message FROM messages WHERE run_id = ? ORDER BY idx", (run_id,))
        )
        recent = self._q("SELECT recent_messages FROM runs WHERE run_id = ?", (run_id,))
        try:
            if recent and recent[0][0]:
                data = json.loads(recent[0][0])
                start = int(data["from"])
                for offset, message in enumerate(data["messages"]):
                    by_index[start + offset] = message
            return [
                Message.model_validate_json(text)
                if isinstance(text, str)
                else Message.model_validate(text)
                for _, text in sorted(by_index.items())
            ]
        except ValidationError as error:
            why = describe_validation_error(error)
        except (ValueError, TypeError, KeyError) as error:
            why = error_text(error)
        raise RunStoreError(
            f"The stored conversation of run {run_id!r} in {self.location} could not be read "
            f"(was it changed by hand?): {why}"
        )

    def events(self, run_id: str) -> list[Any]:
        """The run's stored event log (consecutive text deltas already merged).

        A row holds one event, or a JSON array of consecutive events from its ``seq`` on; a
        later row rewrites the events from its ``seq`` on (the last one of a row may have grown
        since)."""
        rows = self._q("SELECT seq, event FROM events WHERE run_id = ? ORDER BY seq", (run_id,))
        if not rows:
            self._known(run_id)
        log: list[Any] = []
        for seq, text in rows:
            del log[seq:]
            if text.startswith("["):
                log.extend(_EVENTS.validate_json(text))
            else:
                log.append(_EVENT.validate_json(text))
        parts = self._q(
            "SELECT seq, text FROM event_parts WHERE run_id = ? ORDER BY seq, offset_chars",
            (run_id,),
        )
        for seq, text in parts:
            event = log[seq] if 0 <= seq < len(log) else None
            field = MERGED_FIELD.get(event.type) if event is not None else None
            if field is not None:
                setattr(event, field, getattr(event, field) + text)
        log = expand_events(log, lambda: self._messages(run_id))
        if any(event.type == "sub_run_event" for event in log):
            log = expand_sub_run_refs(log, self.events)
        return log

    # -- decisions (any process) -----------------------------------------------------------------

    def approve(
        self,
        run_id: str,
        approval_id: str | ApprovalRecord,
        reason: str | None = None,
        args: dict[str, Any] | None = None,
        *,
        decided_by: DecidedBy = "human",
        via: DecidedVia = "store",
    ) -> ApprovalRecord:
        """Approve a pending approval; the first decision wins.

        ``args`` replace the call's arguments. They are checked against the tool's JSON Schema
        here; while the run's process is alive (another process, or this one), the approval is sent
        to the run, which checks them with the tool's own input model too (a validator) and records
        the approval, or refuses it with ``DecisionRefusedError`` in the words the run gives a
        refused edit (nothing is recorded: the approval still waits). When that process is gone, or
        dies before it answers, the edit waits in the store (the record returned is still
        pending) and the run checks it when it is resumed: the first edit it accepts is the
        decision; one it refuses is listed by ``show`` and the approval waits for another."""
        resolution = Resolution.approval(
            True, decided_by=decided_by, decided_via=via, reason=reason, args=args
        )
        return self._decide(run_id, approval_id, ApprovalRecord, resolution)

    def reject(
        self,
        run_id: str,
        approval_id: str | ApprovalRecord,
        reason: str | None = None,
        *,
        decided_by: DecidedBy = "human",
        via: DecidedVia = "store",
    ) -> ApprovalRecord:
        """Reject a pending approval; the tool does not run."""
        resolution = Resolution.approval(
            False, decided_by=decided_by, decided_via=via, reason=reason
        )
        return self._decide(run_id, approval_id, ApprovalRecord, resolution)

    def answer(
        self,
        run_id: str,
        question_id: str | QuestionRecord,
        answers: Sequence[Any],
        *,
        decided_by: DecidedBy = "human",
        via: DecidedVia = "store",
    ) -> QuestionRecord:
        """Answer a pending question (each of its questions exactly once); first one wins."""
        resolution = answers_resolution(answers, decided_by=decided_by, decided_via=via)
        return self._decide(run_id, question_id, QuestionRecord, resolution)

    def decline(
        self, run_id: str, question_id: str | QuestionRecord, *, via: DecidedVia = "store"
    ) -> QuestionRecord:
        """Decline a pending question that may be declined (one an MCP server asked; the server
        is told ``decline``); ``ask_question``'s questions are refused. First decision wins."""
        return self._decide(run_id, question_id, QuestionRecord, decline_resolution(via))

    def _decide(
        self, run_id: str, item: str | Record, kind: type[RecordT], resolution: Resolution
    ) -> RecordT:
        """Check ``resolution`` against the stored record, then claim it (the whole record).
        An approval with edited arguments is not claimed here: it is sent to the run, which
        checks it with the tool's own model before it is recorded (``_confirm``); the record is
        returned as it is then, still pending when no process runs the run (the edit waits for
        its resume). ``run_id``: the interaction's run, or a run above it (a sub-agent's
        interaction is decided given the top-level run's id too)."""
        item_id, name = id_of(item), "approval" if kind is ApprovalRecord else "question"
        unknown = DecisionRefusedError(f"Unknown {name} {quoted(item_id)} in run {quoted(run_id)}.")
        rows = self._q(
            "SELECT run_id, args_schema, kind, status, record, decision FROM interactions "
            "WHERE id = ?",
            (item_id,),
        )
        if not rows or (rows[0][0] != run_id and rows[0][0] not in self._tree(run_id)):
            if not self._q("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)):
                raise DecisionRunNotFoundError(f"No stored run {run_id!r} in {self.location}.")
            raise unknown
        owner_run, schema, *row = rows[0]
        record = _row_record(*row)
        check_kind(record, name)  # (``decline`` of an approval cancelled it, then failed)
        check_resolution(record, resolution, args_schema=json.loads(schema) if schema else None)
        late = self.too_late(owner_run, record)
        if late is not None:
            raise DecisionRefusedError(late)
        ours = decided(record, resolution)
        current: Record | None
        if resolution.status == "approved" and resolution.args is not None:
            current = self._send_to_run(owner_run, record, resolution, POLL_INTERVAL)
            if current.pending:
                logger.info("%s", self.edit_waits(owner_run, item_id))
            elif not same_decision(current, ours):
                raise refused_twice(current)
        else:
            won, current = self.claim(ours)
            if not won:  # (no row: never, as interactions are not deleted)
                raise unknown if current is None else refused_twice(current)
            if kind is ApprovalRecord:
                self.close_requests(item_id, str(refused_twice(ours)))
            waits = self.decision_waits(owner_run)
            if waits is not None:
                logger.info("%s", waits)
        assert isinstance(current, kind)
        return current

    def too_late(self, run_id: str, record: Record) -> str | None:
        """Why a decision on pending ``record`` of run ``run_id`` is refused as too late, or
        None: its time limit passed while no process ran the run (the run asks again when
        resumed; while a process runs it, that run's timer decides), or it is an MCP server's
        question, whose call ended with the run's process (the answer could never reach the
        server: on resume the call is reported interrupted, or made again and asked anew)."""
        asked_by_a_server = getattr(record, "declinable", False)
        passed = record.expires_at is not None and utc_now() >= record.expires_at
        if not record.pending or not (asked_by_a_server or passed):
            return None
        if self._alive(self._owner_of(run_id)):
            return None
        if asked_by_a_server:
            return (
                f"Too late: question {record.id} was asked by an MCP server during a call that "
                "ended with the run's process, so no answer can reach the server; when the run "
                f"resumes (agent.resume({self._resumed_as(run_id)!r})) that call is reported "
                "interrupted, or, for a tool the server says can be repeated, made again."
            )
        assert record.expires_at is not None
        passed_at = (
            f"Too late: the time limit of {record.kind} {record.id} passed at "
            f"{record.expires_at:%Y-%m-%d %H:%M:%S} UTC, while no process ran the run"
        )
        resume = f"agent.resume({self._resumed_as(run_id)!r})"
        if record.kind == "approval" and any(
            status == "queued" for status, _, _ in self.edit_requests(record.id)
        ):
            # (sent in time: the run checks them before anything else decides it)
            return (
                f"{passed_at}; the edited arguments sent for it before then decide it when the "
                f"run resumes ({resume}), unless the run refuses them: then it is asked again, "
                "with a new time limit."
            )
        return (
            f"{passed_at}; it is asked again, with a new time limit, when the run resumes "
            f"({resume})."
        )

    def _resumed_as(self, run_id: str) -> str:
        """The run to resume for ``run_id`` to go on: itself, or a sub-agent's top-level run."""
        return (top_run(self._backend, self._sql, run_id) or (run_id,))[0]

    def decision_waits(self, run_id: str) -> str | None:
        """What to tell of a decision recorded for run ``run_id`` while no process runs it
        (None while one does): it is used when the run is resumed."""
        resumed = self._resumed_as(run_id)
        if any(self._alive(self._owner_of(run)) for run in {run_id, resumed}):
            return None  # (a sub-agent's run is run by whatever runs its top-level run)
        ended = self._q("SELECT status FROM runs WHERE run_id = ?", (resumed,))
        if ended and ended[0][0] not in ACTIVE:
            return None  # it took the decision, then ended (an edit is recorded by the run)
        where = run_id if resumed == run_id else f"{resumed} (in its sub-agent's run {run_id})"
        return (
            f"Run {where} is not running anywhere now: the decision is used when it is resumed "
            f"(agent.resume({resumed!r}))."
        )

    def edit_waits(self, run_id: str, approval_id: str) -> str:
        """What to tell of an approval with edited arguments that waits for its run."""
        resumed = self._resumed_as(run_id)
        alive = any(self._alive(self._owner_of(run)) for run in {run_id, resumed})
        if resumed != run_id:
            run_id = f"{resumed} (in its sub-agent's run {run_id})"
        if alive:
            return (
                f"The edited arguments for approval {approval_id} are sent to run {run_id}, "
                "which has not answered yet: it checks them against the tool's own rules and "
                "records the approval, or refuses them, when it gets to them."
            )
        return (
            f"The edited arguments for approval {approval_id} wait for run {run_id}, which "
            f"nothing runs now: they are checked against the tool's own rules, and the approval "
            f"recorded, when the run is resumed (agent.resume({resumed!r})). Until then the "
            "approval is still pending."
        )

    def claim(self, record: Record) -> tuple[bool, Record | None]:
        """Write ``record`` (decided) if its interaction is still pending: the status and the
        whole record in one conditional update. Returns ``(won, record now stored)``; when
        another decision was there first, ``won`` is False and the stored record is the
        winner's (None when there is no such interaction)."""
        if self._write_decided(record, if_pending=True):
            return True, record
        return False, self.record(record.id)

    def _write_decided(self, record: Record, *, if_pending: bool) -> bool:
        """Write ``record`` (only if its interaction is still pending); whether it was written."""
        only = " AND status = 'pending'" if if_pending else ""
        self._q(
            "UPDATE interactions SET status = ?, record = ?, updated_at = ? "
            f"WHERE id = ? AND run_id = ?{only}",
            _columns(record),
        )
        return bool(self._backend.rowcount == 1)

    def record(self, item_id: str) -> Record | None:
        """The stored record of one interaction (None when there is none)."""
        return next(iter(self._records("id = ?", (item_id,))), None)

    # -- writing (the owning process) ------------------------------------------------------------

    def _alive(self, owner: Sequence[Any]) -> bool:
        """Whether the owner (host, pid, start time, heartbeat) of a run still runs."""
        return owner_alive(*owner, now=store_clock(self._backend))

    def _owner_of(self, run_id: str) -> tuple[Any, ...]:
        rows = self._q(
            "SELECT owner_host, owner_pid, owner_started, heartbeat_at FROM runs WHERE run_id = ?",
            (run_id,),
        )
        return tuple(rows[0]) if rows else (None, None, None, None)

    @_again_if_cut_off
    def create_run(self, state: RunState, prompt: str) -> None:
        """Record a new run, owned by this process (the run and its prompt in one write: one
        statement when the conversation is short, as it is kept in the run's row)."""
        me = this_process()
        now = _now()
        recent = _Recent(0)
        recent.add(state.messages)
        if recent.size <= RECENT_LIMIT:
            self._create_run(state, prompt, me, now, recent.row())
        else:
            with self._backend.transaction():
                self._create_run(state, prompt, me, now, None)
                self._insert_messages(state.run_id, 0, recent.texts)
            recent.moved()
        self._recent[state.run_id] = recent
        self._own(state.run_id)

    def _create_run(
        self, state: RunState, prompt: str, me: Owner, now: str, recent: str | None
    ) -> None:
        self._q(
            "INSERT INTO runs (run_id, agent_id, session_id, status, prompt, created_at, "
            "updated_at, owner_host, owner_pid, owner_started, heartbeat_at, state, "
            "recent_messages, parent_run_id, parent_call_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                state.run_id,
                state.agent_id,
                state.session_id,
                state.status,
                prompt[:PROMPT_PREVIEW],
                now,
                now,
                me.host,
                me.pid,
                me.started,
                store_clock(self._backend),
                _state_json(state),
                recent,
                state.parent_run_id,
                state.parent_call_id,
            ),
        )

    def _live_owner(self, run_id: str, owner: Sequence[Any], me: Any) -> str | None:
        """Where a live process other than this one runs ``run_id`` (or this kernel, while it
        runs it here); None when no live process does."""
        here = owner[1] == me.pid and owner[0] == me.host
        if self._alive(owner) and (not here or running_here(run_id)):
            return "this kernel" if here else f"process {owner[1]} on {shown_host(owner[0])}"
        return None

    def _owned_elsewhere(self, run_id: str, owner: Sequence[Any], me: Any) -> str | None:
        """Why ``run_id`` cannot be resumed here: a live process runs it, the run above it, or
        a run of its sub-agents resumed on its own; None when nothing does."""
        where = self._live_owner(run_id, owner, me)
        if where is not None:
            return (
                f"Run {run_id!r} is still running in {where}; decide its pending interactions "
                "there (or with RunStore.approve / the command line) instead of resuming it."
            )
        above = self._parent_running_elsewhere(run_id, me)
        if above is not None:
            return (
                f"Run {run_id!r} is a sub-agent's run of {above[0]!r}, which is running in "
                f"{above[1]}: that run goes on with it (decide its pending interactions there, "
                "or with RunStore.approve / the command line by either run's id)."
            )
        busy = self._sub_run_running(run_id, me)
        if busy is not None:
            return (
                f"Run {run_id!r} cannot be resumed while the run of its sub-agent {busy[0]!r} "
                f"is still running in {busy[1]} (it was resumed there): the call that started "
                "it would be made again beside it. Let it end (or stop it there), then resume "
                "this run."
            )
        return None

    def _parent_running_elsewhere(self, run_id: str, me: Any) -> tuple[str, str] | None:
        """A run above ``run_id`` (its parent, at any height) that has not ended and that a live
        process other than this one runs, with where; None when there is none (a parent that
        runs here may take its sub-run up again)."""
        seen = {run_id}
        parent = self._q("SELECT parent_run_id FROM runs WHERE run_id = ?", (run_id,))
        above = parent[0][0] if parent else None
        while above is not None and above not in seen:
            seen.add(above)
            rows = self._q(
                "SELECT status, owner_host, owner_pid, owner_started, heartbeat_at, "
                "parent_run_id FROM runs WHERE run_id = ?",
                (above,),
            )
            if not rows:
                return None
            status, *owner, next_above = rows[0]
            here = owner[1] == me.pid and owner[0] == me.host
            if status in ACTIVE and not here and self._alive(owner):
                return above, f"process {owner[1]} on {shown_host(owner[0])}"
            above = next_above
        return None

    def _sub_run_running(self, run_id: str, me: Any) -> tuple[str, str] | None:
        """A sub-agent's run below ``run_id`` (at any depth) that has not ended and that a live
        process runs (one resumed on its own), with where; None when there is none."""
        level = [run_id]
        while level:
            marks = ", ".join("?" for _ in level)
            rows = self._q(
                "SELECT run_id, status, owner_host, owner_pid, owner_started, heartbeat_at "
                f"FROM runs WHERE parent_run_id IN ({marks})",
                tuple(level),
            )
            for sub_run, status, *owner in rows:
                if status in ACTIVE:
                    where = self._live_owner(sub_run, owner, me)
                    if where is not None:
                        return sub_run, where
            level = [row[0] for row in rows]
        return None

    def claim_run(self, run_id: str) -> RunState:
        """Take ownership of a stored run to resume it; raises when a live process owns it."""
        me = this_process()
        with self._backend.transaction():
            rows = self._q(
                "SELECT status, owner_host, owner_pid, owner_started, heartbeat_at "
                "FROM runs WHERE run_id = ?",
                (run_id,),
            )
            if not rows:
                raise RunNotFoundError(f"No stored run {run_id!r} in {self.location}.")
            status, *owner = rows[0]
            if status not in ACTIVE:
                raise RunStoreError(
                    f"Run {run_id!r} has already ended ({status}); there is nothing to resume. "
                    "To go on from where it ended, start a new run with its history: "
                    f"{_history_hint(self, run_id)}."
                )
            refused = self._owned_elsewhere(run_id, owner, me)
            if refused is not None:
                raise RunOwnedError(refused)
            self._q(
                "UPDATE runs SET owner_host = ?, owner_pid = ?, owner_started = ?, "
                "heartbeat_at = ?, updated_at = ?, steering_closed = NULL WHERE run_id = ?",
                (me.host, me.pid, me.started, store_clock(self._backend), _now(), run_id),
            )
            # The recent messages of the last owner become rows: this process starts from a
            # run whose whole conversation is in the table.
            recent = self._q("SELECT recent_messages FROM runs WHERE run_id = ?", (run_id,))
            if recent[0][0]:
                data = json.loads(recent[0][0])
                self._insert_messages(
                    run_id, int(data["from"]), [json.dumps(m) for m in data["messages"]]
                )
                self._q("UPDATE runs SET recent_messages = NULL WHERE run_id = ?", (run_id,))
        state = self.get(run_id)
        self._recent[run_id] = _Recent(len(state.messages))
        self._own(run_id)
        return state

    def _taken_over(self, run_id: str) -> RunTakenOverError:
        """A run this process runs is no longer its own: another process resumed it."""
        self._disown(run_id)
        rows = self._q("SELECT owner_host, owner_pid FROM runs WHERE run_id = ?", (run_id,))
        where = "elsewhere"
        if rows and rows[0][1]:
            where = f"process {rows[0][1]} on {shown_host(rows[0][0])}"
        return RunTakenOverError(
            f"Run {run_id!r} was resumed by {where}, which judged this process gone (asleep, "
            "or its clock far off); it goes on there, and stopped here before doing more."
        )

    def release_run(self, run_id: str) -> None:
        """Give up ownership of a run this process claimed but will not run."""
        self._recent.pop(run_id, None)
        me = this_process()
        self._q(
            "UPDATE runs SET owner_host = NULL, owner_pid = NULL, owner_started = NULL "
            "WHERE run_id = ? AND owner_host = ? AND owner_pid = ?",
            (run_id, me.host, me.pid),
        )
        self._disown(run_id)

    @_again_if_cut_off
    def open_interaction(
        self, record: Record, *, args_schema: dict[str, Any] | None = None
    ) -> Record | None:
        """Record a new pending approval or question, or reopen one on resume (a decision
        written meanwhile is kept). Returns the record as stored."""
        with self._backend.transaction():
            self._open_row(record, args_schema)
            return self.record(record.id)

    def _open_row(self, record: Record, args_schema: dict[str, Any] | None) -> None:
        """Insert a pending record's row, or write it again while it is pending (a decision
        stored meanwhile is kept), with the JSON Schema of edited arguments (in a transaction).
        """
        schema = json.dumps(args_schema) if args_schema is not None else None
        self._q(
            "INSERT INTO interactions (status, record, updated_at, id, run_id, kind, "
            "args_schema) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "record = excluded.record, updated_at = excluded.updated_at, "
            "args_schema = excluded.args_schema WHERE interactions.status = 'pending'",
            (*_columns(record), record.kind, schema),
        )

    def save_interaction(self, record: Record) -> None:
        """Write a record as it is (the owning run correcting what it recorded)."""
        self._write_decided(record, if_pending=False)

    @_again_if_cut_off
    def save_run(
        self,
        run_id: str,
        state: RunState | None,
        events: Sequence[tuple[int, str]],
        messages_from: int = 0,
        trace_rows: Sequence[tuple[str, int, str]] = (),
        parts: Sequence[tuple[int, int, str]] = (),
        opening: Sequence[tuple[Record, dict[str, Any] | None]] = (),
    ) -> list[Record | None]:
        """Write the run's state (when given: its messages from index ``messages_from`` on,
        the earlier ones are stored already), ``(seq, JSON)`` rows of its event log (one event,
        or a JSON array of consecutive events from ``seq`` on) and the changed ``(kind, index,
        JSON)`` rows of its trace, all or nothing. ``parts``: ``(seq, offset, text)``, text
        streamed into the stored event at ``seq`` from character ``offset`` on. ``opening``:
        ``(record, args_schema)``, interactions the run opens, written in the same transaction
        as :meth:`open_interaction` writes one (so the conversation that asked and what it asked
        are stored together or not at all). Returns their records as stored, read in the same
        transaction.

        The state alone, of a run this process created or claimed and that has not ended, is
        one ``UPDATE`` of the run's row, its new messages kept in the row until the next full
        write (while they are short): the write before each tool call costs one row."""
        recent = self._recent.get(run_id) if state is not None else None
        if state is not None and recent is not None:
            recent.add(state.messages)
            if (
                not events
                and not trace_rows
                and not parts
                and not opening
                and state.status in ACTIVE
                and recent.size <= RECENT_LIMIT
            ):
                me = this_process()
                self._q(
                    "UPDATE runs SET status = ?, state = ?, recent_messages = ?, "
                    "parent_call_id = ? WHERE run_id = ? AND owner_host = ? AND owner_pid = ?",
                    (
                        state.status,
                        _state_json(state),
                        recent.row(),
                        state.parent_call_id,
                        run_id,
                        me.host,
                        me.pid,
                    ),
                )
                if not self._backend.rowcount:
                    raise self._taken_over(run_id)
                return []
        with self._backend.transaction():
            if run_id in self._recent:  # (a run this process runs: still its own?)
                me = this_process()
                self._q(
                    "UPDATE runs SET updated_at = ? WHERE run_id = ? AND owner_host = ? "
                    "AND owner_pid = ?",
                    (_now(), run_id, me.host, me.pid),
                )
                if not self._backend.rowcount:
                    raise self._taken_over(run_id)
            if state is not None:
                if state.status not in ACTIVE:
                    self._close_left_open(run_id, state)
                    if state.parent_run_id is None:
                        self._end_sub_runs(run_id)
                if recent is not None:
                    self._q(
                        "UPDATE runs SET status = ?, state = ?, updated_at = ?, "
                        "recent_messages = NULL, parent_call_id = ? WHERE run_id = ?",
                        (state.status, _state_json(state), _now(), state.parent_call_id, run_id),
                    )
                    self._insert_messages(run_id, recent.stored, recent.texts)
                else:
                    self._q(
                        "UPDATE runs SET status = ?, state = ?, updated_at = ?, "
                        "parent_call_id = ? WHERE run_id = ?",
                        (state.status, _state_json(state), _now(), state.parent_call_id, run_id),
                    )
                    self._insert_messages(
                        run_id,
                        messages_from,
                        [m.model_dump_json() for m in state.messages[messages_from:]],
                    )
            for record, args_schema in opening:
                self._open_row(record, args_schema)
            # (as stored: a decision written meanwhile, on resume, is kept; read in the write,
            # so a failing read cannot leave a row the run does not watch)
            opened = [self.record(record.id) for record, _ in opening]
            self._insert_events(run_id, events)
            if parts:
                self._backend.executemany(
                    self._sql(
                        "INSERT INTO event_parts (run_id, seq, offset_chars, text) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT (run_id, seq, offset_chars) "
                        "DO UPDATE SET text = excluded.text"
                    ),
                    [(run_id, seq, offset, text) for seq, offset, text in parts],
                )
            if trace_rows:
                self._backend.executemany(
                    self._sql(
                        "INSERT INTO trace_entries (run_id, kind, idx, entry) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (run_id, kind, idx) DO UPDATE SET entry = excluded.entry"
                    ),
                    [(run_id, kind, idx, text) for kind, idx, text in trace_rows],
                )
        if recent is not None:
            recent.moved()
        if state is not None and state.status not in ACTIVE:
            self._disown(run_id)
        return opened

    def _close_left_open(
        self, run_id: str, state: RunState, undecided: Resolution | None = None
    ) -> None:
        """In the write that ends a run: every interaction of it the store still holds as
        pending is closed, as the run closed it (its record in ``state``) or else as cancelled
        by the runtime. A decision that reached the store first stands, and the state's copy
        of that record becomes the stored one, so the two never disagree."""
        for closed in self._records("run_id = ?", (run_id,)):
            ours = state.record(closed.id)
            if closed.pending:
                closing = undecided or _ENDED_UNDECIDED
                closed = ours if ours and not ours.pending else decided(closed, closing)
                self._write_decided(closed, if_pending=True)
            if ours is not None and ours.status != closed.status:
                state.hold(closed)

    def _end_sub_runs(self, run_id: str, *, leave_ours: bool = False) -> None:
        """In the write that ends a top-level run: its sub-agents' runs left unfinished (one
        whose call was not taken up again after a resume, before the run was stopped) end with
        it, cancelled by the runtime, and what they left open is closed (else it would wait,
        and be decided, for ever). A sub-agent's run that another live process runs (resumed
        on its own) is left to it."""
        below = self._tree(run_id)[1:]
        if not below:
            return
        rows = self._q(
            "SELECT run_id, state, owner_host, owner_pid, owner_started, heartbeat_at FROM runs "
            f"WHERE run_id IN ({_marks(below)}) AND status IN ('pending', 'running', 'waiting')",
            below,
        )
        me = this_process()
        for sub_id, text, *owner in rows:
            ours = (owner[0], owner[1]) == (me.host, me.pid)
            elsewhere = owner[0] is not None and not ours
            if (elsewhere and self._alive(owner)) or (leave_ours and ours):
                continue  # (``leave_ours``: this process's go on, its top-level run with them)
            try:
                data = json.loads(text)
            except ValueError:  # (damaged: its status only)
                self._q(
                    "UPDATE runs SET status = 'cancelled', updated_at = ? WHERE run_id = ?",
                    (_now(), sub_id),
                )
                continue
            data["status"] = "cancelled"
            data["cancel_reason"] = data.get("cancel_reason") or SUB_RUN_ENDED
            self._close_left_open(sub_id, RunState.model_validate(data))
            self._q(
                "UPDATE runs SET status = 'cancelled', state = ?, updated_at = ?, "
                "owner_host = NULL, owner_pid = NULL, owner_started = NULL WHERE run_id = ?",
                (json.dumps(data), _now(), sub_id),
            )

    def _insert_messages(self, run_id: str, start: int, texts: Sequence[str]) -> None:
        if texts:
            self._backend.executemany(
                self._sql(
                    "INSERT INTO messages (run_id, idx, message) VALUES (?, ?, ?) "
                    "ON CONFLICT (run_id, idx) DO UPDATE SET message = excluded.message"
                ),
                [(run_id, start + i, text) for i, text in enumerate(texts)],
            )

    def _insert_events(self, run_id: str, rows: Sequence[tuple[int, str]]) -> None:
        if rows:
            # (text streamed into the events these rows replace is in the rows)
            self._q(
                "DELETE FROM event_parts WHERE run_id = ? AND seq >= ?",
                (run_id, min(seq for seq, _ in rows)),
            )
            self._backend.executemany(
                self._sql(
                    "INSERT INTO events (run_id, seq, event) VALUES (?, ?, ?) "
                    "ON CONFLICT (run_id, seq) DO UPDATE SET event = excluded.event"
                ),
                [(run_id, seq, text) for seq, text in rows],
            )

    def save_events(self, run_id: str, items: Iterable[tuple[int, str]]) -> None:
        """Insert or replace ``(seq, event JSON)`` rows of the run's event log."""
        rows = list(items)  # (taken once: the write may be made twice)
        if rows:
            self._save_events(run_id, rows)

    @_again_if_cut_off
    def _save_events(self, run_id: str, rows: list[tuple[int, str]]) -> None:
        with self._backend.transaction():
            self._insert_events(run_id, rows)

    # -- Studio sessions -------------------------------------------------------------------------

    def save_session(
        self, session_id: str, agent_id: str, title: str, messages: Sequence[BaseModel]
    ) -> None:
        data = json.dumps([m.model_dump(mode="json") for m in messages])
        now = _now()
        self._q(
            "INSERT INTO studio_sessions (session_id, agent_id, title, messages, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
            "title = excluded.title, messages = excluded.messages, "
            "updated_at = excluded.updated_at",
            (session_id, agent_id, title[:PROMPT_PREVIEW], data, now, now),
        )

    def sessions(self, agent_id: str | None = None, limit: int = 50) -> list[StudioSession]:
        """Stored Studio conversations (of one agent, or of every agent), newest first."""
        sql = (
            "SELECT session_id, agent_id, title, messages, created_at, updated_at "
            "FROM studio_sessions"
        )
        params: tuple[Any, ...] = ()
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            params = (agent_id,)
        rows = self._q(sql + " ORDER BY updated_at DESC LIMIT ?", (*params, limit))
        return [_studio_session(r) for r in rows]

    def session(self, session_id: str) -> StudioSession | None:
        """One stored Studio conversation, or None when there is none with that id."""
        rows = self._q(
            "SELECT session_id, agent_id, title, messages, created_at, updated_at "
            "FROM studio_sessions WHERE session_id = ?",
            (session_id,),
        )
        return _studio_session(rows[0]) if rows else None

    # -- watching for decisions from elsewhere, heartbeats ---------------------------------------

    def watch(
        self,
        item_id: str,
        callback: Callable[[Record], None],
        confirm: ConfirmCallback | None = None,
        lost: Callable[[RunStoreError], None] | None = None,
    ) -> None:
        """Call ``callback(record)`` (on a background thread) once ``item_id`` is decided in the
        store by anyone; :meth:`unwatch` stops watching. ``confirm(resolution)`` (the run's
        process) decides an approval with edited arguments sent through a store. ``lost(error)``
        instead, when the store's file is deleted or replaced while ``item_id`` waits: a
        decision in the file now at its place is not this run's to act on (the run could not
        record what it did, and a resume from that file would do it again)."""
        with self._watch_lock:
            self._watched[item_id] = callback
            if confirm is not None:
                self._confirming[item_id] = confirm
            if lost is not None:
                self._lost[item_id] = lost
            self._watch_generation += 1
        self._ensure_watcher()

    def unwatch(self, item_id: str) -> Callable[[Record], None] | None:
        """Stop watching ``item_id``; returns the callback it had (None if it was not watched)."""
        with self._watch_lock:
            self._confirming.pop(item_id, None)
            self._lost.pop(item_id, None)
            return self._watched.pop(item_id, None)

    def _own(self, run_id: str) -> None:
        with self._watch_lock:
            self._owned.add(run_id)
        self._ensure_watcher()

    def _disown(self, run_id: str) -> None:
        self._recent.pop(run_id, None)
        with self._watch_lock:
            self._owned.discard(run_id)

    def _ensure_watcher(self) -> None:
        with self._watch_lock:
            if self._closed or (self._watcher is not None and self._watcher.is_alive()):
                return
            self._stop.clear()
            self._watcher = threading.Thread(
                target=self._watch_loop, name="anvia-run-store", daemon=True
            )
            self._watcher.start()

    def _watch_loop(self) -> None:
        last_version: int | None = None
        last_generation = -1
        last_beat = 0.0
        idle_since: float | None = None
        while not self._stop.wait(POLL_INTERVAL):
            give_back_dropped()  # (before any lock: it writes to the store)
            with self._watch_lock:
                watched = dict(self._watched)
                confirming = dict(self._confirming)
                steered = dict(self._steering_watched)
                owned = set(self._owned)
                left = dict(self._left)
                generation = self._watch_generation
            if self._backend.commits != self._checkpointed:
                # The log written since is copied into the database file here, off the run's
                # thread (SQLite; PostgreSQL has nothing to do).
                self._checkpointed = self._backend.commits
                try:
                    self._backend.checkpoint()
                except Exception as error:  # a locked or vanished store: try again next time
                    logger.debug("Run store checkpoint: %s", error)
            if left:
                self._mark_left(left)
            if not watched and not owned and not steered and not left:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > 2.0:
                    with self._watch_lock:
                        if not (
                            self._watched or self._owned or self._steering_watched or self._left
                        ):
                            self._watcher = None
                            return
                continue
            idle_since = None
            try:
                now = time.monotonic()
                if (watched or steered) and self._file_left(watched):
                    continue  # (nothing is read from another file at the store's place)
                if owned and now - last_beat >= HEARTBEAT_INTERVAL:
                    last_beat = now
                    self._beat(owned)
                if watched or steered:
                    version = self._backend.data_version()
                    if version != last_version or generation != last_generation:
                        if confirming:
                            self._deliver_requests(confirming)
                        if watched:
                            self._deliver(watched)
                        if steered:
                            self._deliver_steering(steered)
                        # (only once all was looked at: a look that failed is made again)
                        last_version, last_generation = version, generation
            except Exception as error:  # a locked or vanished store: try again next time
                logger.debug("Run store watcher: %s", error)

    def left_behind(self, run_id: str, text: str) -> None:
        """A run of this process could not be written here and goes on without this store
        (package-internal): its row is marked ended, ``error`` with ``text``, as soon as the
        store can be written again (tried in the background). Left as it was, it would be
        listed as interrupted once this process ends, and resuming it would do again what it
        did since (a tool that needed approval run twice)."""
        with self._watch_lock:
            self._left[run_id] = (text, 0.0, 0.5)
        self._ensure_watcher()

    def _mark_left(self, left: dict[str, tuple[str, float, float]]) -> None:
        me = this_process()
        for run_id, (text, next_try, wait) in left.items():
            now = time.monotonic()
            if now < next_try:
                continue
            try:
                with self._backend.transaction():
                    rows = self._q(
                        "SELECT status, state, owner_host, owner_pid, agent_id FROM runs "
                        "WHERE run_id = ?",
                        (run_id,),
                    )
                    ours = bool(rows) and (rows[0][2], rows[0][3]) == (me.host, me.pid)
                    if ours and rows[0][0] in ACTIVE:
                        try:
                            state = json.loads(rows[0][1])
                            state.update(status="error", error=text)
                        except (ValueError, AttributeError):  # (damaged: the status only)
                            state = None
                        if state is None:
                            self._q(
                                "UPDATE runs SET status = 'error', updated_at = ? WHERE run_id = ?",
                                (_now(), run_id),
                            )
                        else:
                            self._q(
                                "UPDATE runs SET status = 'error', state = ?, updated_at = ? "
                                "WHERE run_id = ?",
                                (json.dumps(state), _now(), run_id),
                            )
                        self._end_left(run_id, state, rows[0][4])
            except Exception as error:  # still not writable: later, less and less often
                logger.debug("Run store: marking run %s ended: %s", run_id, error)
                with self._watch_lock:
                    if run_id in self._left:
                        self._left[run_id] = (text, now + wait, min(wait * 2, 30.0))
                continue
            with self._watch_lock:
                self._left.pop(run_id, None)
                self._owned.discard(run_id)
            self._recent.pop(run_id, None)

    def _end_left(self, run_id: str, state: dict[str, Any] | None, agent_id: str) -> None:
        """In the write that marks a run left behind ended: what it left open in the store is
        closed, as when a run ends (a decision for it was taken, and said to wait for a resume
        that is refused), saying that how it was decided is not stored; so are its sub-agents'
        runs that an earlier process left (those this process runs go on: each is marked so if
        its own writes fail). What cannot be read is left as it is."""
        try:
            left = RunState(run_id=run_id, agent_id=agent_id, status="error")
            with contextlib.suppress(ValidationError):
                left = RunState.model_validate(state)
            self._close_left_open(run_id, left, _LEFT_UNDECIDED)
            if left.parent_run_id is None:
                self._end_sub_runs(run_id, leave_ours=True)
        except (ValidationError, RunStoreError, ValueError) as error:
            logger.debug("Run store: closing what run %s left open: %s", run_id, error)

    def _beat(self, owned: set[str]) -> None:
        me: Owner = this_process()
        for run_id in owned:
            self._q(
                "UPDATE runs SET heartbeat_at = ? WHERE run_id = ? AND owner_pid = ? "
                "AND owner_host = ?",
                (store_clock(self._backend), run_id, me.pid, me.host),
            )

    def _file_left(self, watched: Iterable[str]) -> bool:
        """True when the store's file was deleted or replaced (SQLite): the file now at its
        place (a restored copy, say) may hold decisions and messages for these runs, but they
        cannot record there what they do, so what it holds is not delivered. What was watched
        is dropped, each ``lost`` callback told why."""
        if self._backend.gone() is None:  # (always, for PostgreSQL)
            return False
        try:
            self._backend.check_file()
        except StoreFileGoneError as error:
            gone = error
        else:
            return False  # (back in its place meanwhile)
        with self._watch_lock:
            told = [self._lost.pop(i) for i in watched if i in self._lost]
            for item_id in watched:
                self._watched.pop(item_id, None)
                self._confirming.pop(item_id, None)
        for lost in told:
            try:
                lost(gone)
            except Exception:
                logger.exception("Telling a run that its store's file left failed")
        return True

    def _deliver(self, watched: dict[str, Callable[[Record], None]]) -> None:
        rows = self._q(
            "SELECT id, kind, status, record, decision FROM interactions "
            f"WHERE id IN ({_marks(watched)}) AND status <> 'pending'",
            list(watched),
        )
        for item_id, *row in rows:
            try:
                record = _row_record(*row)
            except RunStoreError as error:
                # One that cannot be read holds up no other (looked at again when the store
                # changes: it may be written again); said once.
                if item_id not in self._unreadable:
                    self._unreadable.add(item_id)
                    logger.warning("The decision of %s in %s: %s", item_id, self.location, error)
                continue
            callback = self.unwatch(record.id)
            try:
                if callback is not None:
                    callback(record)
            except Exception:
                logger.exception("Delivering a stored decision failed")


def _history_hint(store: RunStore, run_id: str) -> str:
    """The code that starts a new run with the history of ``run_id``, as it runs in a notebook
    (the store by its address; nothing is opened: this runs while ``store`` is in a
    transaction)."""
    return (
        "from anvia_notebook import Message, RunStore; "
        f"agent.prompt([*{store!r}.get({run_id!r}).messages, "
        'Message.user("your next message")])'
    )


def _under_parents(summaries: list[RunSummary]) -> list[RunSummary]:
    """Top-level runs in the order given, each followed by its sub-agents' runs (oldest first,
    depth first); a sub-run whose parent is not in the list keeps its place."""
    listed = {summary.run_id for summary in summaries}
    children: dict[str, list[RunSummary]] = {}
    for summary in reversed(summaries):  # oldest first under each parent
        if summary.parent_run_id is not None and summary.parent_run_id in listed:
            children.setdefault(summary.parent_run_id, []).append(summary)
    out: list[RunSummary] = []

    def add(summary: RunSummary) -> None:
        out.append(summary)
        for child in children.get(summary.run_id, ()):
            add(child)

    for summary in summaries:
        if summary.parent_run_id is None or summary.parent_run_id not in listed:
            add(summary)
    return out


def _studio_session(row: Sequence[Any]) -> StudioSession:
    return StudioSession(
        session_id=row[0],
        agent_id=row[1],
        title=row[2],
        messages=json.loads(row[3]),
        created_at=datetime.fromisoformat(row[4]),
        updated_at=datetime.fromisoformat(row[5]),
    )


def _state_json(state: RunState) -> str:
    """The state without what has tables of its own (messages, approvals, questions); a call's
    long arguments text and a long output, written with the messages, are left to them."""
    if is_last_reply(state.output, state.messages):
        state = state.model_copy(update={"output": STORED_TEXT})
    calls = state.calls
    if calls and any(p.args is not None and len(p.args) >= MIN_SHARED for p in calls.values()):
        known = KnownCalls()
        known.update(state.messages, len(state.messages))
        left = {}
        for key, progress in calls.items():
            marker = known.marker(progress.tool_call_id, progress.args)
            left[key] = progress if marker is None else progress.model_copy(update={"args": marker})
        state = state.model_copy(update={"calls": left})
    return state.model_dump_json(exclude={"approvals", "questions", "messages"})


#: How the end of a run closes what it left open.
#: Why a sub-agent's run left unfinished ends with its top-level run (see ``_end_sub_runs``).
SUB_RUN_ENDED = "The run that started this sub-agent's run ended before it did."

_ENDED_UNDECIDED = Resolution(
    "cancelled", decided_by="runtime", reason="The run ended before this was decided."
)
#: What a run that went on without its store left open there is closed with (it may well have
#: been decided where the run went on).
_LEFT_UNDECIDED = Resolution(
    "cancelled",
    decided_by="runtime",
    reason="The run went on without the run store: what became of this is not stored.",
)


@functools.cache
def _legacy_decision() -> TypeAdapter[Resolution]:
    """Reads a decision as stores of earlier versions kept it, beside the record (built when
    first needed: it costs tens of milliseconds)."""
    return TypeAdapter(Resolution)


def _columns(record: Record) -> tuple[str, str, str, str, str]:
    """A record's row: ``status, record, updated_at, id, run_id``."""
    return record.status, record.model_dump_json(), _now(), record.id, record.run_id


def _row_record(kind: str, status: str, text: str, legacy: str | None = None) -> Record:
    """A stored record. Stores written by earlier versions kept a decision beside a record
    still saying ``pending`` (``legacy``: its ``approved``, ``reason``, ``args`` and
    ``decided_by``, or ``answers``): the decision is written into the record here."""
    model = ApprovalRecord if kind == "approval" else QuestionRecord
    try:
        record: Record = model.model_validate_json(text)
        if record.status == "pending" and status != "pending":
            data = json.loads(legacy or "{}")
            data.update(status=status, decided_by=decider(data.get("decided_by")))
            record = decided(record, _legacy_decision().validate_python(data))
    except ValidationError as error:
        raise RunStoreError(
            f"A stored {kind} could not be read: {describe_validation_error(error)}"
        ) from None
    return record
