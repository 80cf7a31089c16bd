"""A forked copy of a process with a store open leaves the connections it inherited alone.

A notebook's ``!command``, ``os.fork()`` and multiprocessing's "fork" start copy the process,
its database connections included, in whatever state its other threads had them. SQLite and
libpq both say such a connection must not be used in the copy, nor closed: closing a SQLite
connection another thread was using waits for ever on that thread's lock (the copy never got
to run the command, and the cell waited for ever), and closing a PostgreSQL one ends the
parent's session with the server. So a copy keeps what it inherited, untouched, for as long as
it lives (:func:`keep`), and a store used in the copy opens connections of its own
(:func:`reset_in_forked_copies`).

The connections of other threads are let go by Python itself as it forks, before any of the
hooks of ``os.register_at_fork`` run: each holder checks :func:`inherited` when it is let go.

SQLite also has locks of its own for the whole process (one per open file): a copy made while
another thread was inside a SQLite call finds them held for ever, and its first SQLite call
(a new connection) waits for ever. So a fork waits until no SQLite call is under way in this
process (:data:`SQLITE_CALLS`, at most :data:`FORK_WAIT` seconds: calls are short, a busy
file is waited for between attempts, outside of them).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
import time
import weakref
from types import TracebackType
from typing import Any, Protocol

__all__ = ["FORK_WAIT", "SQLITE_CALLS", "inherited", "keep", "process_id", "reset_in_forked_copies"]

#: Seconds a fork waits at most for the SQLite calls under way in other threads to end.
FORK_WAIT = 10.0


class _Resettable(Protocol):
    def after_fork(self) -> None: ...


_backends: weakref.WeakSet[Any] = weakref.WeakSet()
_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_incref.restype = None


def process_id() -> int:
    """This process's id (what :func:`inherited` compares with)."""
    return os.getpid()


def inherited(pid: int) -> bool:
    """Whether what process ``pid`` made is held by a forked copy of it (this process)."""
    return os.getpid() != pid


def keep(connection: object) -> None:
    """Never close nor free ``connection`` in this process (a forked copy's inheritance): not
    even when the interpreter shuts down, when freeing a SQLite connection closes it."""
    _incref(connection)


def reset_in_forked_copies(backend: _Resettable) -> None:
    """Call ``backend.after_fork()`` in every forked copy of this process, first thing (it
    drops the parent's connections, kept, and its locks, which another thread may have held)."""
    _backends.add(backend)


def _after_fork_in_child() -> None:
    for backend in list(_backends):
        with contextlib.suppress(Exception):  # (a copy about to run a program must go on)
            backend.after_fork()


class _CallsUnderWay:
    """``with SQLITE_CALLS:`` around each call into SQLite (and each transaction: a copy made
    in one would find the file's write lock held for ever); a fork waits until no other thread
    is inside one, and no call starts until the fork is made.

    The lock is re-entrant, and a thread that forks or is inside goes on: the garbage collector
    may run a destructor that closes a connection wherever the lock is held, the fork's own
    wait included."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._inside: dict[int, int] = {}  # thread id: calls it is inside (they may nest)
        self._forking: dict[int, bool] = {}  # thread id: whether it holds the lock for its fork

    def __enter__(self) -> None:
        me = threading.get_ident()
        with self._changed:
            while self._forking and me not in self._inside and me not in self._forking:
                self._changed.wait()
            self._inside[me] = self._inside.get(me, 0) + 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        me = threading.get_ident()
        with self._changed:
            left = self._inside.pop(me, 1) - 1
            if left > 0:
                self._inside[me] = left
            if self._forking:
                self._changed.notify_all()

    def before_fork(self) -> None:
        me = threading.get_ident()
        self._lock.acquire()  # (held through the fork: released in both processes after it)
        self._forking[me] = True
        try:
            deadline = time.monotonic() + FORK_WAIT
            while [thread for thread in self._inside if thread != me]:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
        except BaseException:  # (a Ctrl-C while it waits: the fork goes on, nothing held)
            self._done_forking(me)
            raise

    def after_fork_in_parent(self) -> None:
        self._done_forking(threading.get_ident())

    def _done_forking(self, me: int) -> None:
        if self._forking.pop(me, False):
            self._changed.notify_all()
            self._lock.release()

    def after_fork_in_child(self) -> None:
        self.__init__()  # type: ignore[misc]  # (the one thread left is the one that forked)


#: Around every call into SQLite (see the module's text).
SQLITE_CALLS = _CallsUnderWay()

os.register_at_fork(
    before=SQLITE_CALLS.before_fork,
    after_in_parent=SQLITE_CALLS.after_fork_in_parent,
    after_in_child=SQLITE_CALLS.after_fork_in_child,
)
os.register_at_fork(after_in_child=_after_fork_in_child)
