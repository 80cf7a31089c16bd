"""Real kernels for the blocking-wait tests: ipykernel 7 (this interpreter) and ipykernel 6.

Each test gets a fresh kernel started by jupyter_client on 127.0.0.1 from a kernelspec written
to a temporary folder, with the repository on its PYTHONPATH. The ipykernel 6 kernel runs in the
virtualenv made by ``tests/kernel/make_ipykernel6_env.sh`` (``.venvs/ipykernel6`` in the
repository, or the Python named by ``ANVIA_IPYKERNEL6_PYTHON``); its tests skip when it is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IPYKERNEL6_ENV = "ANVIA_IPYKERNEL6_PYTHON"


def ipykernel6_python() -> Path | None:
    configured = os.environ.get(IPYKERNEL6_ENV)
    if configured:
        return Path(configured)
    bindir = "Scripts" if os.name == "nt" else "bin"
    candidate = (
        ROOT / ".venvs" / "ipykernel6" / bindir / ("python.exe" if os.name == "nt" else "python")
    )
    return candidate if candidate.exists() else None


def _kernel_version(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-c", "import ipykernel; print(ipykernel.__version__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


class KernelHandle:
    """A started kernel and a blocking client, with IOPub and shell replies sorted by parent."""

    def __init__(self, km: KernelManager, version: str) -> None:
        self.km = km
        self.version = version
        self.kc = km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.iopub: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.replies: dict[str, dict[str, Any]] = {}
        info = self.request_kernel_info()
        self.features: list[str] = info["content"].get("supported_features", [])

    @property
    def version_info(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.version.split(".")[:3] if part.isdigit())

    @property
    def major(self) -> int:
        return self.version_info[0]

    # -- reading -------------------------------------------------------------------------------

    def _read_iopub(self, timeout: float) -> bool:
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except Exception:  # queue.Empty
            return False
        self.iopub[msg["parent_header"].get("msg_id", "")].append(msg)
        return True

    def _read_shell(self, timeout: float) -> bool:
        try:
            msg = self.kc.get_shell_msg(timeout=timeout)
        except Exception:
            return False
        self.replies[msg["parent_header"].get("msg_id", "")] = msg
        return True

    def wait_reply(self, msg_id: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while msg_id not in self.replies:
            self._read_iopub(0)  # keep IOPub drained meanwhile
            if time.monotonic() > deadline:
                raise AssertionError(f"no reply to {msg_id} in {timeout} s")
            self._read_shell(0.02)
        return self.replies[msg_id]

    def wait_iopub(self, predicate: Any, timeout: float = 30) -> dict[str, Any]:
        """The first IOPub message (already read or arriving) for which ``predicate`` is true."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            every = [m for msgs in list(self.iopub.values()) for m in msgs]
            for msg in every[seen:]:
                if predicate(msg):
                    return msg
            seen = len(every)
            if time.monotonic() > deadline:
                raise AssertionError(f"no matching IOPub message in {timeout} s")
            self._read_iopub(0.02)

    def wait_idle(self, msg_id: str, timeout: float = 30) -> None:
        self.wait_iopub(
            lambda m: (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            ),
            timeout,
        )

    def stdout(self, msg_id: str) -> str:
        return "".join(
            m["content"]["text"]
            for m in self.iopub.get(msg_id, [])
            if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
        )

    def wait_output(self, msg_id: str, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.stdout(msg_id):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not printed by {msg_id}: {self.stdout(msg_id)!r}")
            self._read_iopub(0.02)

    # -- sending -------------------------------------------------------------------------------

    def execute(self, code: str, subshell_id: str | None = None) -> str:
        msg = self.kc.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def run(self, code: str, timeout: float = 30) -> str:
        """Execute, wait for the reply and for idle, fail on error; return what it printed."""
        msg_id = self.execute(code)
        reply = self.wait_reply(msg_id, timeout)
        self.wait_idle(msg_id, timeout)
        content = reply["content"]
        assert content["status"] == "ok", "\n".join(content.get("traceback", [])) or content
        return self.stdout(msg_id)

    def run_json(self, expr: str) -> Any:
        out = self.run(f"print('@@' + __import__('json').dumps({expr}))")
        return json.loads(out.rsplit("@@", 1)[1])

    def send_comm(
        self, msg_type: str, content: dict[str, Any], subshell_id: str | None = None
    ) -> tuple[str, float]:
        """Send a comm message the way JupyterLab does; returns its id and the send time."""
        msg = self.kc.session.msg(msg_type, content)
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        sent = time.time()
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"]), sent

    def control(self, msg_type: str, content: dict[str, Any], timeout: float = 10) -> Any:
        msg = self.kc.session.msg(msg_type, content)
        self.kc.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.kc.get_control_msg(timeout=max(0.01, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]

    def request_kernel_info(self) -> dict[str, Any]:
        msg_id = self.kc.kernel_info()
        return self.wait_reply(msg_id)

    def create_subshell(self) -> str:
        content = self.control("create_subshell_request", {})
        assert content["status"] == "ok", content
        return str(content["subshell_id"])

    def shutdown(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)
            shutil.rmtree(os.path.dirname(self.km.ip), ignore_errors=True)


def _start(python: Path, specs: Path, name: str) -> KernelHandle:
    spec_dir = specs / name
    spec_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # quiet debugpy's frozen-modules note
    }
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    str(python),
                    "-Xfrozen_modules=off",
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": name,
                "language": "python",
                "env": env,
            }
        )
    )
    # ZeroMQ over local sockets in a short temporary folder (removed at shutdown): no TCP port
    # that another process could take between the choice of a free port and the kernel's bind.
    sockets = tempfile.mkdtemp(prefix="anvia-kernel-")
    km = KernelManager(
        kernel_name=name,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]),
        transport="ipc",
        ip=os.path.join(sockets, "k"),
    )
    km.start_kernel()
    return KernelHandle(km, _kernel_version(python))


@pytest.fixture(params=["ipykernel7", "ipykernel6"])
def kernel(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KernelHandle]:
    """A fresh kernel of each kind: this interpreter's ipykernel (7.x), then ipykernel 6."""
    if request.param == "ipykernel6":
        python = ipykernel6_python()
        if python is not None and not python.exists():
            pytest.fail(f"{IPYKERNEL6_ENV}={python} does not exist")
        if python is None:
            pytest.skip(
                "no ipykernel 6 environment: run tests/kernel/make_ipykernel6_env.sh "
                f"(or set {IPYKERNEL6_ENV} to a Python with ipykernel 6)"
            )
    else:  # this interpreter's, or ANVIA_IPYKERNEL7_PYTHON's (CI runs ipykernel 7.3 there too)
        python = Path(os.environ.get("ANVIA_IPYKERNEL7_PYTHON") or sys.executable)
    handle = _start(python, tmp_path / "kernels", f"anvia-{request.param}")
    expected_major = 7 if request.param == "ipykernel7" else 6
    try:
        assert handle.major == expected_major, f"{request.param} kernel is {handle.version}"
        yield handle
    finally:
        handle.shutdown()
