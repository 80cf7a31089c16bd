"""A process forked while a store is in use (a notebook's ``!command``, ``os.fork()``,
multiprocessing's "fork" start) neither hangs nor harms the parent's connections.

Python lets go of the other threads' data as it forks: a SQLite connection another thread was
using was closed in the copy, which then waited for ever on that thread's lock (before it could
run the command: the cell of ``!python -m anvia_notebook ...`` never finished). Each scenario
forks a fresh process, as a kernel is, not the test process (what earlier tests left running
there is not what is tested)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from child_processes import child_environ

FORKS = """
import os, select, sys, threading
from anvia_notebook import RunStore
from anvia_notebook.models import QueueModel
from anvia_notebook import AgentBuilder

location, forks, child_uses_it = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "use"
store = RunStore(location)
AgentBuilder("a", QueueModel(["hello"])).build().prompt("hi").store(store).send_sync()
stop = threading.Event()

def reader():  # another thread of the kernel using the store as the fork comes
    while not stop.is_set():
        store.runs()

thread = threading.Thread(target=reader)
thread.start()
hung = failed = 0
for _ in range(forks):
    pid = os.fork()
    if pid == 0:
        if not child_uses_it:
            os._exit(0)  # as a command run by a notebook's ``!`` does, at once
        ok = [r.status for r in store.runs()] == ["success"]
        sys.exit(0 if ok else 3)  # (a normal exit: the interpreter shuts down)
    watch = os.pidfd_open(pid)
    if not select.select([watch], [], [], 20)[0]:
        hung += 1
        os.kill(pid, 9)
    os.close(watch)
    _, status = os.waitpid(pid, 0)
    failed += os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0
stop.set()
thread.join()
runs = [r.status for r in store.runs()]  # the parent's own connections still work
print(f"hung {hung} failed {failed} runs {runs}")
"""


def run_script(script: str, *args: str, timeout: float = 60) -> str:
    """What ``script`` prints, run in a fresh process (as a kernel is) with ``args``."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=child_environ(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def forked(location: str, child: str) -> str:
    """What the script above prints, forking 60 times while a thread reads the store."""
    return run_script(FORKS, location, "60", child, timeout=220)


@pytest.mark.timeout(240)
def test_a_command_run_while_another_thread_reads_the_store_starts(store_path):
    assert forked(str(store_path), "exits") == "hung 0 failed 0 runs ['success']"


@pytest.mark.timeout(240)
def test_a_forked_copy_uses_the_store_on_connections_of_its_own(store_location: str):
    """The copy reads the store and exits normally; the parent's connections still work (a
    PostgreSQL connection closed by the copy ends the parent's session)."""
    assert forked(store_location, "use") == "hung 0 failed 0 runs ['success']"


CLOSED_WHILE_FORKING = """
import os, sqlite3, sys
from anvia_notebook.store import _fork
from anvia_notebook.store._sqlite import SQLiteBackend

backend = SQLiteBackend(sys.argv[1])
backend.execute("SELECT 1")
[held] = list(backend._all)
# The garbage collector may free a store wherever Python runs: here, in the fork's own wait.
_fork.SQLITE_CALLS.before_fork()
held.close()
_fork.SQLITE_CALLS.after_fork_in_parent()
SQLiteBackend(sys.argv[1]).execute("SELECT 1")  # (and every call after it goes on)
print("closed")
"""

FORKED_IN_A_TRANSACTION = """
import os, sys, threading, time
from anvia_notebook.store import _sqlite
from anvia_notebook.store._errors import RunStoreError

_sqlite.BUSY_TIMEOUT = 2.0  # (the child's write fails this soon when the file stays locked)
backend = _sqlite.SQLiteBackend(sys.argv[1])
backend.start_writing()
backend.execute("CREATE TABLE IF NOT EXISTS t (x)")
inside, go_on = threading.Event(), threading.Event()

def writer():  # a run's write: statements, and the run's own work between them
    with backend.transaction():
        backend.execute("INSERT INTO t VALUES (1)")
        inside.set()
        go_on.wait(0.3)

thread = threading.Thread(target=writer)
thread.start()
inside.wait()
pid = os.fork()
if pid == 0:
    try:
        with backend.transaction():
            backend.execute("INSERT INTO t VALUES (2)")
        os._exit(0)
    except RunStoreError as error:
        print(error, flush=True)
        os._exit(3)
go_on.set()
thread.join()
_, status = os.waitpid(pid, 0)
print("child", os.WEXITSTATUS(status), backend.execute("SELECT count(*) FROM t")[0][0])
"""


def test_a_connection_closed_by_a_destructor_during_a_fork_does_not_hang_it(store_path):
    """The fork's wait held the lock of the calls under way; a connection the garbage
    collector closed right then (a store caught in a reference cycle) waited for that lock,
    held by its own thread, for ever, and every other thread's call after it."""
    assert run_script(CLOSED_WHILE_FORKING, str(store_path)) == "closed"


def test_a_fork_during_a_write_transaction_leaves_the_copy_able_to_write(store_path):
    """Forked between two statements of another thread's transaction, the copy found the
    file's write lock held for ever (kept by the connection it inherited): its writes failed
    as "locked by another program". A fork now waits for the transaction's end."""
    assert run_script(FORKED_IN_A_TRANSACTION, str(store_path)) == "child 0 2"
