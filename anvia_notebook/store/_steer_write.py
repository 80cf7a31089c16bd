"""Writing a steering message into the run store, with nothing of the runtime loaded.

:meth:`RunStore.steer <anvia_notebook.store.RunStore.steer>` and ``python -m anvia_notebook steer``
both end in :func:`write_steering`. The command line calls :func:`steer_stored`, which opens only
the store's connection (no pydantic, no run loop, no records: a terminal's message reaches a
waiting or working run well within a second even on a busy machine); when the file is not a run
store of this very schema version, it uses a full :class:`RunStore` (which creates, checks and
migrates the schema) instead.

A row holds the message as JSON: ``{"role": "user", "content": text}``, which reads back as
``Message.user(text)`` (the fields left out are the message's defaults).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .._util import check_steering_text, new_id
from ._errors import RunEndedError, RunNotFoundError
from ._location import is_postgres_address, postgres_address
from ._owner import owner_alive, store_clock
from ._schema import APPLICATION, SCHEMA_VERSION

__all__ = ["steer_stored", "top_run", "write_steering"]

#: A run in one of these (stored) states takes messages, unless it has decided to end.
ACTIVE = ("pending", "running", "waiting")


def write_steering(
    backend: Any, sql: Callable[[str], str], location: str, run_id: str, text: str
) -> tuple[str, str]:
    """Queue ``text`` for the run ``run_id`` in one transaction; returns the message's id and
    the run's status (``interrupted`` when its process is gone: the message waits for the run
    to be resumed). Refuses an unknown run (:class:`RunNotFoundError`), one that has ended or
    decided to end in a live process (:class:`RunEndedError`), a text that is not a ``str``
    (``TypeError``) and a blank or invalid one (``ValueError``). ``sql`` puts a statement in the
    backend's placeholder style."""
    if not isinstance(text, str):
        kind = type(text).__name__
        raise TypeError(f"RunStore.steer() takes the message's text, not {kind}.")
    check_steering_text(text)
    item_id = new_id("steer")
    message = json.dumps({"role": "user", "content": text}, ensure_ascii=False)
    with backend.transaction(yielding=True):  # (a script may send many, without a pause)
        rows = backend.execute(
            sql(
                "SELECT status, steering_closed, owner_host, owner_pid, owner_started, "
                "heartbeat_at FROM runs WHERE run_id = ?"
            ),
            (run_id,),
        )
        if not rows:
            raise RunNotFoundError(f"No stored run {run_id!r} in {location}.")
        status, closed, *owner = rows[0]
        alive = owner_alive(*owner, now=store_clock(backend))
        # A run closed to steering whose process died before it was stored as ended is
        # interrupted: resuming it reopens it, so the message waits for that.
        if status not in ACTIVE or (closed and alive):
            ended = status if status not in ACTIVE else "ending"
            raise RunEndedError(
                f"Run {run_id!r} has already ended ({ended}); a message can no longer be "
                f"sent to it. {_how_to_go_on(backend, sql, run_id)}"
            )
        seq = backend.execute(
            sql("SELECT COALESCE(MAX(seq), 0) FROM steering WHERE run_id = ?"), (run_id,)
        )
        backend.execute(
            sql(
                "INSERT INTO steering (id, run_id, seq, message, status, created_at) "
                "VALUES (?, ?, ?, ?, 'queued', ?)"
            ),
            (
                item_id,
                run_id,
                int(seq[0][0]) + 1,
                message,
                datetime.now(timezone.utc).isoformat(),
            ),
        )
    return item_id, str(status) if alive else "interrupted"


def _how_to_go_on(backend: Any, sql: Callable[[str], str], run_id: str) -> str:
    """What the refusal of a message to the ended run ``run_id`` advises: a sub-agent's run
    whose top-level run still takes messages is reached through that run (a new run of the
    sub-agent would not be the run the person works with)."""
    top = top_run(backend, sql, run_id)
    if top is not None:
        rows = backend.execute(
            sql("SELECT status, steering_closed FROM runs WHERE run_id = ?"), (top[0],)
        )
        if rows and rows[0][0] in ACTIVE and not rows[0][1]:
            return (
                f"It was a sub-agent's run inside run {top[0]!r} (agent {top[1]!r}), which has "
                f"not ended: send the message to that run instead (store.steer({top[0]!r}, "
                f"text), or python -m anvia_notebook steer {top[0]} TEXT in a terminal, with "
                "--store if the run's store is not the default one)."
            )
    return "Start a new run with its history to go on."


def top_run(backend: Any, sql: Callable[[str], str], run_id: str) -> tuple[str, str] | None:
    """The top-level run (its id and agent) of ``run_id`` when that is a sub-agent's run (what
    is resumed to go on with it), else None."""
    top: tuple[str, str] | None = None
    seen = {run_id}
    parent = _parent(backend, sql, run_id)
    while parent is not None and parent not in seen:  # (a loop of parents ends the walk)
        seen.add(parent)
        rows = backend.execute(
            sql("SELECT agent_id, parent_run_id FROM runs WHERE run_id = ?"), (parent,)
        )
        if not rows:
            break
        top = (parent, str(rows[0][0]))
        parent = rows[0][1]
    return top


def _parent(backend: Any, sql: Callable[[str], str], run_id: str) -> str | None:
    rows = backend.execute(sql("SELECT parent_run_id FROM runs WHERE run_id = ?"), (run_id,))
    return rows[0][0] if rows and rows[0][0] else None


def steer_stored(
    location: str, run_id: str, text: str
) -> tuple[str, str, tuple[str, str] | None] | None:
    """:func:`write_steering` into the store at ``location`` (a file or ``postgresql://...``),
    opening only its connection, and the run's :func:`top_run`; None (nothing written) when it
    is not a run store of this very schema version: :class:`RunStore` then makes or migrates
    the schema, or says what is wrong."""
    check_steering_text(text)  # (before any file is opened)
    backend = _open_backend(location)
    try:
        if not _current(backend):
            return None
        sql = _placeholders(backend)
        item_id, status = write_steering(backend, sql, backend.location, run_id, text)
        return item_id, status, top_run(backend, sql, run_id)
    finally:
        backend.close()


def _open_backend(location: str) -> Any:
    if is_postgres_address(location):
        from ._postgres import PostgresBackend

        return PostgresBackend(postgres_address(location))
    from ._sqlite import SQLiteBackend

    return SQLiteBackend(os.fspath(location))


def _placeholders(backend: Any) -> Callable[[str], str]:
    if backend.placeholder == "?":
        return lambda statement: statement
    return lambda statement: statement.replace("?", backend.placeholder)


def _current(backend: Any) -> bool:
    """True when the store is a run store of exactly this schema version (read only)."""
    try:
        if "meta" not in backend.table_names():
            return False
        meta = dict(backend.execute("SELECT key, value FROM meta"))
    except Exception:  # a file that is not a database, a locked one...: RunStore says so
        return False
    return bool(
        meta.get("application") == APPLICATION and meta.get("schema_version") == str(SCHEMA_VERSION)
    )
