"""A throwaway PostgreSQL server for the tests: initdb in a temporary folder, a free port on
127.0.0.1, stopped and deleted at the end. Uses Debian's ``postgresql`` package (which
``.ci/run`` installs); as root, the server runs as the ``postgres`` user (initdb refuses root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["fresh_database", "postgres_bin", "running_postgres", "start_server", "stop_server"]


def postgres_bin() -> Path | None:
    """The folder with initdb and pg_ctl (the newest installed version), or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running_postgres() -> Iterator[str]:
    """Start a server; yields its URL (database ``postgres``, user ``postgres``, trust auth)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install -y postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="anvia-pg-"))
    as_root = os.geteuid() == 0
    prefix: list[str] = ["runuser", "-u", "postgres", "--"] if as_root else []
    if as_root:
        shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"
    port = _free_port()
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    run = lambda *args: subprocess.run(  # noqa: E731
        [*prefix, *args], check=True, capture_output=True, text=True, timeout=120
    )
    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
        run(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        _CONTROL[url] = (run, [str(bin_dir / "pg_ctl"), "-D", str(data)], options, folder)
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError((folder / "log").read_text())
            time.sleep(0.05)
        yield url
    finally:
        _CONTROL.pop(f"postgresql://postgres@127.0.0.1:{port}/postgres", None)
        with contextlib.suppress(Exception):
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


#: How to stop and start each server :func:`running_postgres` runs, by its URL.
_CONTROL: dict[str, tuple[Any, list[str], str, Path]] = {}


def stop_server(url: str) -> None:
    """Stop the server at ``url`` (started by :func:`running_postgres`) as an admin's restart
    does (``pg_ctl stop -m fast``: connections are ended, the server is gone until started)."""
    run, pg_ctl, _, _ = _CONTROL[url]
    run(*pg_ctl, "-m", "fast", "-w", "stop")


def start_server(url: str) -> None:
    """Start again the server :func:`stop_server` stopped, and wait until it takes connections."""
    run, pg_ctl, options, folder = _CONTROL[url]
    run(*pg_ctl, "-o", options, "-l", str(folder / "log"), "-w", "-t", "60", "start")


_DATABASES: list[str] = []


def fresh_database(server: str) -> tuple[str, str]:
    """Create a new, empty database on the test PostgreSQL ``server`` (its admin URL): its URL
    and its name."""
    import psycopg

    name = f"t_{os.getpid()}_{len(_DATABASES)}"
    _DATABASES.append(name)
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return server.rsplit("/", 1)[0] + "/" + name, name
