"""Child Python processes that run a test agent against the test's run store, to be killed
(SIGKILL) at a chosen point and resumed here: shared by the tests of runs that outlive their
process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent


def child_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (this process's environment by default) with the tests folder first on
    ``PYTHONPATH``, so a child can import the test agents."""
    child = dict(os.environ if environ is None else environ)
    child["PYTHONPATH"] = os.pathsep.join([str(TESTS), child.get("PYTHONPATH", "")])
    return child


#: What the test agents read from the environment to block or hurry (cleared for each test).
TEST_SWITCHES = (
    "ANVIA_TEST_BLOCK_TOOL",
    "ANVIA_TEST_FAST",
    "ANVIA_TEST_BLOCK_CHECK",
    "ANVIA_TEST_BLOCK_MODEL",
)


def agents_environ(tmp_path: Path, monkeypatch: Any) -> dict[str, str]:
    """The environment of a child that runs the test agents (``store_agents``): their tools
    write what they did to ``effects.txt`` in ``tmp_path``, and nothing blocks or hurries them."""
    monkeypatch.setenv("ANVIA_TEST_EFFECTS", str(tmp_path / "effects.txt"))
    for name in TEST_SWITCHES:
        monkeypatch.delenv(name, raising=False)
    return child_environ()


def start_python(code: str, env: Mapping[str, str], **popen: Any) -> subprocess.Popen[str]:
    """``python -c code`` with ``env``, its output read through pipes (unless ``popen`` says
    otherwise)."""
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}
    return subprocess.Popen([sys.executable, "-c", code], env=env, text=True, **options)


def wait_until(
    condition: Callable[[], Any],
    child: subprocess.Popen[str] | None,
    what: str,
    timeout: float = 60.0,
) -> Any:
    """Poll ``condition`` until it gives a true value, which is returned; fail when the child
    (if any) ends first (with its error output) or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if child is not None and child.poll() is not None:
            raise AssertionError(f"the child ended before {what}: {child.stderr.read()}")  # type: ignore[union-attr]
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def kill(child: subprocess.Popen[str]) -> None:
    """SIGKILL the child, wait for it, close its pipes."""
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def stop_outside_a_write(child: subprocess.Popen[str], location: str) -> None:
    """SIGSTOP the child at a moment it holds no write lock on the SQLite store at ``location``
    (stopped inside a write, its heartbeat's say, it would hold the lock for as long as it is
    stopped, and every write of the test would wait on it). Stopped inside one, it is let go
    on and stopped again once the write has ended. A PostgreSQL store's rows lock no other
    row's write: the child is stopped as it is."""
    import sqlite3

    while True:
        child.send_signal(signal.SIGSTOP)
        if location.startswith(("postgresql://", "postgres://")):
            return
        probe = sqlite3.connect(location, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:  # ("database is locked": the child is in a write)
            child.send_signal(signal.SIGCONT)
            time.sleep(0.01)
        finally:
            probe.close()
