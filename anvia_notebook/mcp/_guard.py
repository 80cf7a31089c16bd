"""A server process that ends with the process that started it, however that one ends.

A stdio server whose kernel was killed (SIGKILL, an out-of-memory kill, a crash) learns of it
when it next reads its standard input and finds it closed; a server busy in a long call that
reads nothing meanwhile (a synchronous tool computing) would keep running until that call
ends, an orphan. On Linux the server is started through a few lines of Python that ask the
kernel of the operating system to send it ``SIGTERM`` when its parent goes
(``PR_SET_PDEATHSIG``, which outlives ``exec``), then become the server (same process id, same
standard streams). Elsewhere, or when the command is not found (the start error is then the
one the server's own command gives), the server is started as given. Once the server is
known, a watcher (below), a child of this process collected when the session ends, ends what
the server left in its process group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

__all__ = [
    "child_processes",
    "end_group",
    "end_watcher",
    "guarded_command",
    "start_watcher",
    "started_server",
]

#: Run with ``python -I -S -c``: asks for SIGTERM when the parent (argv[1], its process id)
#: goes, gives up if it went already, then becomes the server (argv[2:]).
#: (A Python without ``ctypes`` starts the server unguarded.)
_GUARD = (
    "import os, signal, sys\n"
    "try:\n"
    "    import ctypes\n"
    "    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(0)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)

#: The watcher, run with ``python -I -S -c`` by this process (see :func:`start_watcher`) once
#: a stdio server is known (argv[1], its process id, also its process group's), in a session
#: of its own and holding none of the server's streams: when the server ends, it ends the rest
#: of the server's group. A server started through a program that starts the real one
#: (``npx``, ``uv run``, ``bash -c``) is only that program, which SIGTERM ends, and the real
#: server, busy in a long call that reads nothing, would be left running. Its command line
#: names no server (a count of a server's processes by its command does not see it). It also
#: watches the process that started it (argv[2]): once that one is gone (a kernel killed),
#: the group is ended even if the server is not (one that ignores SIGTERM, or a wrapper that
#: waits for its child before its trap of SIGTERM runs): SIGTERM, then SIGKILL. It is this
#: process's child, not the server's: a child of the server, once the server ended, went to
#: the init process, and where none collects ended orphans (a container's) each start of a
#: server left one ended process for good.
_WATCHER = (
    "import os, select, signal, sys, time\n"
    "server, owner = int(sys.argv[1]), int(sys.argv[2])\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "def state(pid):\n"
    "    try:\n"
    "        with open('/proc/%d/stat' % pid, 'rb') as stat:\n"
    "            return stat.read().rpartition(b')')[2].split()[0]\n"
    "    except (OSError, IndexError):\n"
    "        return b'Z'\n"
    "def pidfd(pid):\n"
    "    try:\n"
    "        return os.pidfd_open(pid)  # (readable once the process has ended)\n"
    "    except ProcessLookupError:\n"
    "        return -1\n"
    "    except (AttributeError, OSError):\n"
    "        return None\n"
    "server_fd, owner_fd = pidfd(server), pidfd(owner)\n"
    "if server_fd is not None and owner_fd is not None:\n"
    "    if server_fd >= 0 and owner_fd >= 0:\n"
    "        select.select([server_fd, owner_fd], [], [])\n"
    "else:\n"
    "    while state(server) != b'Z' and os.getppid() == owner:\n"
    "        time.sleep(0.5)\n"
    "me = os.getpid()\n"
    "def others():\n"
    "    for name in os.listdir('/proc'):\n"
    "        try:\n"
    "            with open('/proc/' + name + '/stat', 'rb') as stat:\n"
    "                fields = stat.read().rpartition(b')')[2].split()\n"
    "            if int(name) != me and fields[0] != b'Z' and int(fields[2]) == server:\n"
    "                return True\n"
    "        except (OSError, ValueError, IndexError):\n"
    "            continue\n"
    "    return False\n"
    "if others():\n"
    "    os.killpg(server, signal.SIGTERM)\n"
    "    deadline = time.monotonic() + 2.0\n"
    "    while others() and time.monotonic() < deadline:\n"
    "        time.sleep(0.05)\n"
    "    if others():\n"
    "        os.killpg(server, signal.SIGKILL)\n"
)


def guarded_command(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> tuple[str, list[str]]:
    """``(command, args)`` that start the server ``command args`` (in the folder ``cwd``, else
    this process's) so that it ends when this process ends (see the module's text); unchanged
    where that cannot be done."""
    path = (env or {}).get("PATH") or os.environ.get("PATH")
    if not sys.platform.startswith("linux") or not sys.executable:
        return command, list(args)
    if os.sep in command and not os.path.isabs(command):
        # (relative to the server's working folder, where the guard runs it from too)
        found = os.path.join(cwd or os.getcwd(), command)
        if not (os.path.isfile(found) and os.access(found, os.X_OK)):
            return command, list(args)
    elif shutil.which(command, path=path) is None:
        return command, list(args)
    return sys.executable, ["-I", "-S", "-c", _GUARD, str(os.getpid()), command, *args]


def start_watcher(server: int) -> subprocess.Popen[bytes] | None:
    """Start the watcher (see :data:`_WATCHER`) of the server ``server`` when it leads a
    process group of its own (Linux only); None when it is not started. The caller collects it
    with :func:`end_watcher` once the server has ended."""
    if not sys.platform.startswith("linux") or not sys.executable:
        return None
    try:
        if os.getpgid(server) != server:
            return None
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHER, str(server), str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # (out of the server's group and of this one's)
        )
    except OSError:
        return None


async def end_watcher(watcher: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Collect the watcher once its server has ended (it ends at once then, or once it has
    ended what the server left, within about two seconds); one still running after ``grace``
    seconds is killed."""
    import asyncio

    try:
        await asyncio.to_thread(watcher.wait, grace)
    except subprocess.TimeoutExpired:
        watcher.kill()
        await asyncio.to_thread(watcher.wait)


def child_processes() -> set[int]:
    """The process ids of this process's children (Linux; elsewhere none are known): each
    process whose ``/proc/<pid>/stat`` names this one as its parent. (Not the kernel's
    per-thread ``children`` lists: a child exiting while they are read can hide another one
    from them, as proc(5) warns, and a server hidden so was left running after ``close()``.)"""
    own = os.getpid()
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if name.isdigit() and _parent_of(name) == own:
            found.add(int(name))
    return found


def _parent_of(pid: str) -> int | None:
    """The parent's process id of ``pid`` (None once it is gone): the field after its state
    in ``/proc/<pid>/stat``, read after the program's name, which may hold any character."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def started_server(
    before: set[int],
    command: str,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> int | None:
    """Which new child (not in ``before``) is the server ``command args`` (by its command line:
    the guard's while it starts, the server's once the guard became it), or None when that
    cannot be told."""
    guard_command, guard_args = guarded_command(command, args, env, cwd)
    forms = [[os.path.basename(command), *args], [os.path.basename(guard_command), *guard_args]]
    for pid in child_processes() - before:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                argv = [part.decode(errors="replace") for part in cmdline.read().split(b"\0")[:-1]]
        except OSError:
            continue
        if argv and [os.path.basename(argv[0]), *argv[1:]] in forms:
            return pid
    return None


async def started_server_soon(
    before: set[int],
    command: str,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> int | None:
    """:func:`started_server`, once the new child is no longer between two programs: just
    started, it may still be a copy of this process, and while the guard becomes the server
    (``exec``) its command line reads empty; neither tells it apart. Waited for at most a
    second."""
    import asyncio

    ours = _own_command_line()
    for _ in range(100):
        found = started_server(before, command, args, env, cwd)
        if found is not None:
            return found
        if not _any_changing(before, ours):
            # (one may have become the server between the two looks: a last look says)
            return started_server(before, command, args, env, cwd)
        await asyncio.sleep(0.01)
    return started_server(before, command, args, env, cwd)


def _own_command_line() -> bytes:
    """This process's command line as Linux keeps it (empty elsewhere)."""
    try:
        with open("/proc/self/cmdline", "rb") as own:
            return own.read()
    except OSError:
        return b""


def _any_changing(before: set[int], ours: bytes) -> bool:
    """Whether a new child is between two programs: its command line is still this process's
    (forked, not yet changed) or reads empty (in the middle of ``exec``)."""
    for pid in child_processes() - before:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if cmdline.read() in (ours, b""):
                    return True
        except OSError:
            continue
    return False


async def end_group(group: int, grace: float = 2.0) -> None:
    """Stop what is left of a server's process group once the server has ended (processes it
    started, which the SDK's stopping of the server itself leaves running): SIGTERM, then
    SIGKILL after ``grace`` seconds. The SDK starts each server as the leader of a group of its
    own (its process id is the group's)."""
    import asyncio
    import signal

    try:
        os.killpg(group, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return  # nothing is left of it
    deadline = asyncio.get_running_loop().time() + grace
    while asyncio.get_running_loop().time() < deadline:
        if not _group_runs(group):
            return
        await asyncio.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _group_runs(group: int) -> bool:
    """Whether a process of ``group`` still runs: one that ended and that nobody has waited for
    yet (a zombie, such as an orphan where no init process collects them) runs
    nothing. Where ``/proc`` cannot tell, whether the group has any process at all."""
    try:
        os.killpg(group, 0)  # (no signal: only whether the group exists)
    except (ProcessLookupError, PermissionError):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
            if int(fields[2]) == group and fields[0] != b"Z":
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False
