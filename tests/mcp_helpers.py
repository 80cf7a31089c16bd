"""Helpers for the MCP tests: the toolbox server (tests/mcp_servers) and process checks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from anvia_notebook import mcp

SERVERS = Path(__file__).parent / "mcp_servers"
TOOLBOX = str(SERVERS / "toolbox.py")


def toolbox(name: str = "toolbox", env: dict[str, str] | None = None, **options):
    """The toolbox as a stdio server (a fresh process per distinct ``env``)."""
    return mcp.stdio(name, sys.executable, [TOOLBOX], env=env, **options)


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie, dead but not yet reaped, does not count)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def processes_running(script: str) -> list[int]:
    """Process ids whose command line names ``script`` (from the process list)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().decode(errors="replace")
        except OSError:
            continue
        if script in cmdline and alive(int(entry)):
            found.append(int(entry))
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_toolbox(transport: str, port: int) -> subprocess.Popen:
    """Start the toolbox over HTTP (``"http"``: streamable HTTP, or ``"sse"``) on 127.0.0.1's
    ``port`` and wait until it listens."""
    process = subprocess.Popen(
        [sys.executable, TOOLBOX, transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return listening(process, port, "the HTTP toolbox")


def listening(process: subprocess.Popen, port: int, what: str) -> subprocess.Popen:
    """``process`` once it listens on 127.0.0.1's ``port`` (``what`` names it in a failure)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            assert process.poll() is None, f"{what} exited"
            assert time.monotonic() < deadline, f"{what} did not start listening"
            time.sleep(0.1)


def serve_toolbox(transport: str):
    """Run the toolbox over HTTP (``"http"``: streamable HTTP, or ``"sse"``) on 127.0.0.1;
    yields its URL, stops it after (a generator for a fixture)."""
    port = _free_port()
    process = start_toolbox(transport, port)
    path = "/mcp" if transport == "http" else "/sse"
    yield f"http://127.0.0.1:{port}{path}"
    process.terminate()
    process.wait(timeout=10)
