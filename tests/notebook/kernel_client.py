"""A small jupyter_client driver for the in-kernel widget tests.

It plays JupyterLab without a browser: cells are ``execute_request`` s, the widget's page is a
``comm_msg`` with ``{"method": "custom", "content": ...}`` sent to the widget's comm, and what
the kernel sends the page is read from IOPub.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[2]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def ipykernel6_python() -> Path | None:
    configured = os.environ.get("ANVIA_IPYKERNEL6_PYTHON")
    if configured:
        return Path(configured)
    candidate = ROOT / ".venvs" / "ipykernel6" / "bin" / "python"
    return candidate if candidate.exists() else None


class Kernel:
    def __init__(self, python: Path, specs: Path, name: str) -> None:
        spec_dir = specs / name
        spec_dir.mkdir(parents=True, exist_ok=True)
        env = {
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
        argv = [str(python), "-Xfrozen_modules=off", "-m", "ipykernel_launcher"]
        (spec_dir / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [*argv, "-f", "{connection_file}"],
                    "display_name": name,
                    "language": "python",
                    "env": env,
                }
            )
        )
        # ZeroMQ over local sockets in a short temporary folder: no TCP port that another
        # process could take between the choice of a free port and the kernel's bind.
        self._sockets = tempfile.mkdtemp(prefix="anvia-kernel-")
        self.km = KernelManager(
            kernel_name=name,
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]),
            transport="ipc",
            ip=os.path.join(self._sockets, "k"),
        )
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.iopub: list[dict[str, Any]] = []
        self.replies: dict[str, dict[str, Any]] = {}
        self._seen = 0

    def kill(self) -> None:
        """SIGKILL the kernel's process, as a crash would, and wait until it is gone."""
        os.kill(self.km.provisioner.process.pid, signal.SIGKILL)
        wait_for(lambda: not self.km.is_alive(), "the kernel to die", timeout=30)

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)
            shutil.rmtree(self._sockets, ignore_errors=True)

    def _drain(self, timeout: float) -> None:
        with contextlib.suppress(queue.Empty):
            self.iopub.append(self.kc.get_iopub_msg(timeout=timeout))
        with contextlib.suppress(queue.Empty):
            msg = self.kc.get_shell_msg(timeout=0)
            self.replies[msg["parent_header"].get("msg_id", "")] = msg

    def execute(self, code: str, stop_on_error: bool = True) -> str:
        """Send a cell. ``stop_on_error=True`` is what JupyterLab sends: when the cell fails,
        the kernel aborts what is queued behind it (on ipykernel 6, also what arrives in the
        moment after). A test that expects the cell to fail and then runs another passes False."""
        return str(self.kc.execute(code, allow_stdin=False, stop_on_error=stop_on_error))

    def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        index = 0
        while True:
            while index < len(self.iopub):
                if predicate(self.iopub[index]):
                    return self.iopub[index]
                index += 1
            if time.monotonic() > deadline:
                raise AssertionError("no matching IOPub message")
            self._drain(0.02)

    def reply(self, msg_id: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while msg_id not in self.replies:
            if time.monotonic() > deadline:
                raise AssertionError(f"no reply to {msg_id}")
            self._drain(0.02)
        return self.replies[msg_id]

    def run(self, code: str, timeout: float = 30) -> dict[str, Any]:
        msg_id = self.execute(code)
        reply = self.reply(msg_id, timeout)
        content = reply["content"]
        assert content["status"] == "ok", "\n".join(content.get("traceback", [])) or content
        return reply

    def stdout(self, msg_id: str) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.iopub
            if m["parent_header"].get("msg_id") == msg_id
            and m["msg_type"] == "stream"
            and m["content"]["name"] == "stdout"
        )

    def printed(self, msg_id: str, text: str, timeout: float = 30) -> str:
        """The cell ``msg_id``'s standard output once it holds ``text`` (its stream messages
        may come after its reply: they travel on another channel)."""
        deadline = time.monotonic() + timeout
        while text not in self.stdout(msg_id):
            if time.monotonic() > deadline:
                raise AssertionError(f"the cell did not print {text!r}")
            self._drain(0.02)
        return self.stdout(msg_id)

    # -- the widget ----------------------------------------------------------------------------

    def widget_id(self, cell: str) -> str:
        shown = self.wait(
            lambda m: (
                m["msg_type"] == "display_data"
                and m["parent_header"].get("msg_id") == cell
                and WIDGET_MIME in m["content"]["data"]
            )
        )
        return str(shown["content"]["data"][WIDGET_MIME]["model_id"])

    def to_page(self, model_id: str) -> list[dict[str, Any]]:
        """Every custom message the kernel sent to this widget so far."""
        return [
            m["content"]["data"]["content"]
            for m in self.iopub
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == model_id
            and m["content"]["data"].get("method") == "custom"
        ]

    def send_page(self, model_id: str, content: dict[str, Any]) -> None:
        msg = self.kc.session.msg(
            "comm_msg",
            {"comm_id": model_id, "data": {"method": "custom", "content": content}},
        )
        self.kc.shell_channel.send(msg)

    def page_request(self, model_id: str, content: dict[str, Any]) -> dict[str, Any]:
        self.send_page(model_id, content)
        request_id = content["request_id"]
        return self.wait(  # type: ignore[no-any-return]
            lambda m: (
                m["msg_type"] == "comm_msg"
                and m["content"]["data"].get("content", {}).get("request_id") == request_id
            )
        )["content"]["data"]["content"]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``condition`` until it gives a true value, which is returned (fails after
    ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def this_python() -> Path:
    """The Python of the "ipykernel7" kernels: this one, or ``ANVIA_IPYKERNEL7_PYTHON`` (CI points
    it at ipykernel 7.3, the newest for Python 3.10, whose display publisher differs from 7.4's)."""
    return Path(os.environ.get("ANVIA_IPYKERNEL7_PYTHON") or sys.executable)


#: The kernels each in-kernel test runs in: ipykernel 7 (this Python) and 6.17 (its own env).
KERNELS = ["ipykernel7", "ipykernel6"]


def started_kernel(which: str, folder: Path, setup: str) -> Iterator[Kernel]:
    """A kernel of ``which`` (one of ``KERNELS``) that has run ``setup``, closed after use:
    the body of a test module's ``kernel`` fixture. Skips when there is no ipykernel 6 env."""
    python = this_python() if which == "ipykernel7" else ipykernel6_python()
    if python is None:
        pytest.skip("no ipykernel 6 environment (tests/kernel/make_ipykernel6_env.sh)")
    kernel = Kernel(python, folder / "kernels", f"anvia-{which}")
    try:
        kernel.run(setup, timeout=60)
        yield kernel
    finally:
        kernel.close()
