"""Which process owns a run, and whether that process is still alive.

A run is owned by the process that runs it. The owner is written as ``host``, ``pid`` and the
process's start time (so a recycled pid is not mistaken for the owner), plus a heartbeat that a
background thread renews. On the same host the pid decides; from another host, the heartbeat.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HEARTBEAT_INTERVAL",
    "LEASE_SECONDS",
    "Owner",
    "made_here",
    "owner_alive",
    "give_back_dropped",
    "resume_claimed",
    "running_here",
    "shown_host",
    "store_clock",
    "this_process",
]

logger = logging.getLogger("anvia_notebook")

#: How often a live owner renews its heartbeat (seconds).
HEARTBEAT_INTERVAL = 5.0
#: An owner on another host whose heartbeat is older than this is considered gone.
LEASE_SECONDS = 30.0


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    started: str

    @property
    def token(self) -> str:
        return f"{self.host}:{self.pid}:{self.started}"


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (Linux), or [] where unknown:
    ``[0]`` is the process state, ``[19]`` its start time."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return []
    # The command name (field 2) may contain spaces and parentheses: split after the last ")".
    return text.rsplit(")", 1)[-1].split()


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), or "" where unknown."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else ""


def _machine() -> str:
    """What tells this machine's processes from another's of the same host name (default
    names such as "MacBook-Pro", containers on the host's network): this boot of its kernel
    and the namespace its process ids are counted in (Linux), or "" where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            booted = boot.read().strip()
        counted = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{booted}/{counted}"


def shown_host(host: object) -> str:
    """A stored owner's host as a person knows it (its host name, without the machine's mark)."""
    return str(host).split(_MARK, 1)[0]


#: Between the host name and the machine's mark in a stored owner's host.
_MARK = "#"

_THIS: Owner | None = None

#: The stored runs this process has made a run object for (a new run, or one resumed), by id.
_MADE: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def made_here(run_id: str, run: Any) -> None:
    """``run`` (an ``AgentRun``) runs the stored run ``run_id`` in this process."""
    _MADE[run_id] = run


#: How many resume requests of each run this process holds that made no run object yet.
_UNSTARTED: Counter[str] = Counter()
_UNSTARTED_LOCK = threading.Lock()
#: Resume requests dropped without a run, ``(store, run id)``: a finalizer only appends here
#: (it may run at any allocation, on any thread, even one holding a store lock), and
#: :func:`give_back_dropped` does the store work later, from a safe place.
_DROPPED: deque[tuple[Any, str]] = deque()


def resume_claimed(request: object, store: Any, run_id: str) -> Callable[[], None]:
    """A resume ``request`` claimed ``run_id`` in ``store``. If the request is dropped without
    making a run (a request never sent, a cell that failed on an option once its traceback
    is gone), the claim is given back when the last such request of the run goes and no run
    object of it lives here (within a heartbeat), so other processes may resume it. Returns
    what the request calls when it makes its run."""
    with _UNSTARTED_LOCK:
        _UNSTARTED[run_id] += 1
    dropped = weakref.finalize(request, _DROPPED.append, (store, run_id))
    dropped.atexit = False  # (at exit the process is gone: the claim ends with it)

    def made() -> None:
        if dropped.detach() is not None:
            _count_down(run_id)

    return made


def _count_down(run_id: str) -> int:
    with _UNSTARTED_LOCK:
        _UNSTARTED[run_id] -= 1
        left = _UNSTARTED[run_id]
        if left <= 0:
            del _UNSTARTED[run_id]
        return left


def give_back_dropped() -> None:
    """Give back the claims of dropped resume requests (see :func:`resume_claimed`); called by
    the store's background thread and by a new resume, holding no lock."""
    while _DROPPED:
        try:
            store, run_id = _DROPPED.popleft()
        except IndexError:  # (another thread took the last one)
            return
        if _count_down(run_id) > 0 or running_here(run_id):
            continue
        try:
            store.release_run(run_id)
        except Exception:  # (a store closed meanwhile: the claim ends with this process)
            logger.debug("A dropped resume of %s could not give its claim back", run_id)


def running_here(run_id: str) -> bool:
    """Whether this process has a run object for ``run_id`` that has not ended. A run claimed
    by a resume that was never made into a run (its request was dropped, or an option raised)
    does not count: it may be resumed again here."""
    run = _MADE.get(run_id)
    return run is not None and not run.done


def this_process() -> Owner:
    """This process as an owner (computed again after a fork). Its host is the host name and
    a mark of the machine (see :func:`_machine`): the process id of an owner of the same host
    name is judged only on the machine that counts it."""
    global _THIS
    pid = os.getpid()
    if _THIS is None or _THIS.pid != pid:
        machine = _machine()
        mark = _MARK + hashlib.sha256(machine.encode()).hexdigest()[:12] if machine else ""
        _THIS = Owner(socket.gethostname() + mark, pid, _start_time(pid))
    return _THIS


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    fields = _stat(pid)
    return not fields or fields[0] != "Z"  # (a zombie has ended: only its parent has not seen)


def store_clock(backend: Any) -> float:
    """Now, in seconds since the epoch, by the clock every process using ``backend`` shares:
    a PostgreSQL server's (this machine's clock corrected by its offset to the server's), so
    machines whose clocks differ judge each other's heartbeats alike; a SQLite file's readers
    share this machine's clock."""
    return time.time() + float(backend.clock_offset())


def owner_alive(
    host: str | None,
    pid: int | None,
    started: str | None,
    heartbeat_at: float | None,
    *,
    now: float | None = None,
) -> bool:
    """Whether the recorded owner still runs (no owner recorded: not alive). ``now``: by the
    clock the heartbeat was written with (:func:`store_clock`)."""
    if not host or not pid:
        return False
    me = this_process()
    if host == me.host:
        if pid == me.pid:
            return started in (None, "", me.started)
        if not _pid_alive(pid):
            return False
        if started:
            current = _start_time(pid)
            if current and current != started:
                return False  # the pid was recycled by another process
        return True
    if heartbeat_at is None:
        return False
    return (now if now is not None else time.time()) - heartbeat_at < LEASE_SECONDS
