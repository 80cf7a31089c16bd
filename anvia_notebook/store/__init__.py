"""The run store: runs, approvals, questions and transcripts that outlive the kernel.

- :class:`RunStore` (``RunStore(path)`` for SQLite, ``RunStore("postgresql://...")`` for a team);
- :func:`set_store` / :func:`get_store`: the store new runs are written to (default
  ``.anvia/runs.sqlite`` in the working folder; ``ANVIA_NOTEBOOK_STORE`` picks another file, or
  ``none`` for memory only);
- :func:`runs`: the stored runs, newest first.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import (
    DecisionRefusedError,
    RunEndedError,
    RunNotFoundError,
    RunOwnedError,
    RunStoreError,
)
from ._errors import StoreFileGoneError
from ._location import is_postgres_address

if TYPE_CHECKING:
    from ._store import RunList, RunStore, RunSummary, StudioSession

__all__ = [
    "DEFAULT_STORE_PATH",
    "STORE_ENV",
    "DecisionRefusedError",
    "RunEndedError",
    "RunList",
    "RunNotFoundError",
    "RunOwnedError",
    "RunStore",
    "RunStoreError",
    "RunSummary",
    "StudioSession",
    "get_store",
    "runs",
    "set_store",
    "store_failed",
]

logger = logging.getLogger("anvia_notebook")

#: The environment variable that picks the store: a file, ``postgresql://...``, or ``none``.
STORE_ENV = "ANVIA_NOTEBOOK_STORE"
#: Where runs are stored by default, relative to the working folder (the notebook's folder).
DEFAULT_STORE_PATH = Path(".anvia") / "runs.sqlite"
_OFF = ("", "none", "off", "memory", "0", "false", "no")

#: Imported on first use (the store's module loads the runtime's records, events and traces;
#: the command line's ``steer`` needs none of them).
_FROM_STORE = ("RunList", "RunStore", "RunSummary", "StudioSession", "check_limit")


def __getattr__(name: str) -> Any:
    if name in _FROM_STORE:
        from . import _store

        value = getattr(_store, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_lock = threading.Lock()
_chosen: RunStore | bool | None = False  # False: not chosen yet (use the environment)
_opened: dict[str, RunStore | None] = {}
#: When a PostgreSQL store last could not be opened (monotonic), by its address.
_failed_at: dict[str, float] = {}
#: Seconds after which a PostgreSQL store that could not be opened is tried again.
REOPEN_SECONDS = 30.0
_warned: set[str] = set()


def as_store(store: str | os.PathLike[str] | RunStore | None) -> RunStore | None:
    """``store`` as a :class:`RunStore`: a store as is, a path (``str`` or ``pathlib.Path``) or
    ``postgresql://...`` opened, None kept; anything else is refused with a clear error."""
    from ._store import RunStore

    if store is None or isinstance(store, RunStore):
        return store
    if isinstance(store, (str, os.PathLike)):
        return RunStore(store)
    raise TypeError(
        "A run store is a RunStore, a file path or a postgresql:// address (or None for "
        f"none), not {type(store).__name__}."
    )


def set_store(store: str | os.PathLike[str] | RunStore | None) -> RunStore | None:
    """Store new runs in ``store`` (a path, ``postgresql://...`` or a :class:`RunStore`), or
    keep them in memory only with ``None``. Returns the store."""
    global _chosen
    chosen = as_store(store)
    with _lock:
        _chosen = chosen
    return chosen


def default_location() -> str | None:
    """Where new runs are stored unless :func:`set_store` chose: ``ANVIA_NOTEBOOK_STORE``'s
    value, else :data:`DEFAULT_STORE_PATH` in the working folder; None when the variable turns
    storing off (package-internal: the command line reads it too)."""
    value = os.environ.get(STORE_ENV)
    if value is None:
        return str(Path.cwd() / DEFAULT_STORE_PATH)
    if value.strip().lower() in _OFF:
        return None
    return value


def get_store() -> RunStore | None:
    """The store new runs are written to, opened on first use; None when runs stay in memory.

    A store that cannot be opened (a read-only folder, a damaged file, one written by a newer
    version) gives one warning and runs stay in memory. A PostgreSQL store is tried again
    :data:`REOPEN_SECONDS` after it could not be (its server may have been down a moment: every
    later run of the kernel stayed in memory, without a word).
    """
    with _lock:
        if _chosen is not False:
            return _chosen  # type: ignore[return-value]
        location = default_location()
        if location is None:
            return None
        opened = _opened.get(location)
        again = location in _failed_at and time.monotonic() - _failed_at[location] >= REOPEN_SECONDS
        if location not in _opened or again or (opened is not None and opened.file_gone()):
            # (a store whose file was deleted or replaced is left to the runs that use it)
            from ._store import RunStore

            try:
                _opened[location] = RunStore(location)
                _failed_at.pop(location, None)
            except RunStoreError as error:
                _opened[location] = None
                if is_postgres_address(location):
                    _failed_at[location] = time.monotonic()
                warn_once(location, f"{error} Runs stay in memory only (nothing is stored).")
        return _opened[location]


def required_store() -> RunStore:
    """:func:`get_store` for what cannot go on without a store (a resume): why there is none,
    as an error (a store that cannot be opened says why, not that runs are not stored)."""
    store = get_store()
    if store is not None:
        return store
    with _lock:
        location = default_location() if _chosen is False else None
    if location is None:
        raise RunStoreError(
            "Runs are not stored (ANVIA_NOTEBOOK_STORE is off, or set_store(None) was "
            "called), so there is no run to resume."
        )
    from ._store import RunStore

    store = RunStore(location)  # (raises why it cannot be opened)
    with _lock:
        _opened[location] = store
        _failed_at.pop(location, None)
    return store


def store_failed(
    store: RunStore | None, error: BaseException, *, nothing_stored: bool = False
) -> None:
    """A write to ``store`` failed during a run (``nothing_stored``: its first, the run's
    creation): one warning, and the run goes on in memory."""
    location = store.location if store is not None else "the run store"
    reason = str(error).rstrip(". ")
    if nothing_stored:
        kept = "Nothing of it is stored: the store does not list it."
    elif isinstance(error, StoreFileGoneError):
        kept = "What it wrote before went with that file."
    else:
        kept = (
            "The store keeps it as it was before and lists it as failed once it can be "
            "written again (resuming it from there would do again what it did since)."
        )
    warn_once(
        f"write:{location}",
        f"Could not write to the run store {location}: {reason}. This run goes on in memory "
        f"only: nothing it does from here on is stored. {kept}",
    )


def left_behind_text(error: BaseException) -> str:
    """The error a run's row is marked with when the run went on without the store after
    ``error``."""
    reason = str(error).rstrip(". ")
    return (
        f"The run store could not be written during the run ({reason}), so the run went on "
        "without it in the process that ran it: what it did from there on is not stored, and "
        "resuming it from here would do that again. See the outcome where it ran."
    )


def warn_once(key: str, message: str) -> None:
    """Warn with ``message`` the first time for ``key``, log it at debug level afterwards
    (package-internal: Studio warns this way when it cannot store its sessions)."""
    if key in _warned:
        logger.debug("%s", message)
        return
    _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def runs(status: str | None = None, agent_id: str | None = None, limit: int | None = 50) -> RunList:
    """The stored runs, newest first (an empty list when runs are not stored); at most
    ``limit`` of them (0 or more; None: all of them)."""
    from ._store import RunList, check_limit

    check_limit(limit)
    store = get_store()
    if store is None:
        return RunList()
    return store.runs(status=status, agent_id=agent_id, limit=limit)


def _reset_for_tests() -> Any:  # pragma: no cover - used by the test suite
    global _chosen
    with _lock:
        _chosen = False
        for store in _opened.values():
            if store is not None:
                store.close()
        _opened.clear()
        _failed_at.clear()
        _warned.clear()
