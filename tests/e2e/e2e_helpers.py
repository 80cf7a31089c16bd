"""Helpers for end-to-end tests: a real Jupyter server driven through headless Chromium.

The fixtures live in ``conftest.py``; the functions here take a Playwright ``Page`` (sync API) and
the ``JupyterServer`` the ``jupyter_server`` fixture yields. Both front ends are supported:
``app="lab"`` (JupyterLab 4, ``/lab``) and ``app="notebook"`` (Notebook 7, ``/notebooks``). One
page shows one notebook at a time.

The page drives the front end through its own command registry (``window.jupyterapp``, exposed by
the server option ``expose_app_in_browser``, as JupyterLab's own Galata tests do): running cells
that way does not depend on menus, keyboard focus or where the mouse is.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent
from typing import Any, Literal
from urllib.parse import quote

import nbformat
from playwright.sync_api import Locator, Page, expect

REPO_ROOT = Path(__file__).resolve().parents[2]

App = Literal["lab", "notebook"]
APPS: tuple[App, ...] = ("lab", "notebook")

# Chromium as the machine has it (Debian's package); `playwright install` is not used.
CHROMIUM_ENV = "ANVIA_E2E_CHROMIUM"
CHROMIUM_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

# Settings that keep the UI quiet: no "receive official Jupyter news?" toast, no update check.
# Written as user settings, which JupyterLab and Notebook 7 both read.
QUIET_USER_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

# Which Pythons run the kernels and the server (default: the one running the tests). A kernel's
# Python gets a `python3` kernel spec in the server's own data folder, which the notebooks name:
# `ANVIA_E2E_KERNEL_PYTHON=.venvs/colab/bin/python` runs every notebook on Colab's packages.
# The server's Python decides the page's side: its JupyterLab, widget manager and anywidget.
KERNEL_PYTHON_ENV = "ANVIA_E2E_KERNEL_PYTHON"
SERVER_PYTHON_ENV = "ANVIA_E2E_SERVER_PYTHON"

SERVER_START_TIMEOUT = 90.0
NAVIGATION_TIMEOUT_MS = 90_000
KERNEL_READY_TIMEOUT_MS = 90_000
RUN_TIMEOUT_MS = 120_000
TEXT_TIMEOUT_MS = 30_000


def find_chromium() -> str:
    """The Chromium executable: $ANVIA_E2E_CHROMIUM, else `chromium` on PATH."""
    for candidate in (os.environ.get(CHROMIUM_ENV), "chromium", "chromium-browser"):
        if candidate and (path := shutil.which(candidate)):
            return path
    raise RuntimeError(
        "No Chromium found for the e2e tests: install Debian's `chromium` package "
        f"(as .ci/run does) or set {CHROMIUM_ENV} to a Chromium executable."
    )


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


# Requests to the local server never go through a proxy from the environment.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class JupyterServer:
    """A running ``jupyter lab`` server (which also serves Notebook 7 when it is installed)."""

    base_url: str
    """``http://127.0.0.1:<port>/``, with the trailing slash."""
    token: str
    root_dir: Path
    """The server's root: notebooks written here are served at their relative path."""
    log_path: Path
    """The server's (and its kernels') stdout and stderr."""
    process: subprocess.Popen[bytes] = field(repr=False)

    def url(self, path: str = "", **query: str) -> str:
        """An absolute URL of ``path`` with the token in the query string."""
        params = "&".join(f"{k}={quote(v)}" for k, v in {**query, "token": self.token}.items())
        return f"{self.base_url}{path.lstrip('/')}?{params}"

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        """Call the REST API (``path`` below ``/api/``); returns the decoded JSON, or None."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base_url}api/{path.lstrip('/')}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with _LOCAL.open(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def serves(self, path: str) -> bool:
        """Whether an authenticated GET of ``path`` answers 200 (e.g. ``tree`` for Notebook 7)."""
        try:
            with _LOCAL.open(self.url(path), timeout=10) as response:
                return bool(response.status == 200)
        except urllib.error.URLError:
            return False

    def shutdown_all_kernels(self) -> None:
        """Delete every session and kernel, so that one test's kernels do not outlive it."""
        for collection in ("sessions", "kernels"):  # a session's kernel goes with it
            for item in self.api("GET", collection):
                try:
                    self.api("DELETE", f"{collection}/{item['id']}", timeout=30)
                except urllib.error.HTTPError as error:
                    if error.code != 404:  # already gone
                        raise

    def log_tail(self, lines: int = 80) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_jupyter_server(
    workdir: Path, *, kernel_python: str | None = None, server_python: str | None = None
) -> JupyterServer:
    """Start ``jupyter lab`` on 127.0.0.1 in its own process group, isolated under ``workdir``.

    Configuration, runtime files, IPython profile, user settings and workspaces all live under
    ``workdir``; kernel specs are found as usual (so a kernel registered by the test setup is
    visible), except that ``kernel_python`` (default: $ANVIA_E2E_KERNEL_PYTHON), when set, is
    the ``python3`` kernel, and ``server_python`` (default: $ANVIA_E2E_SERVER_PYTHON, else this
    Python) runs the server. The repository is put first on the PYTHONPATH, so kernels import this working
    tree's ``anvia_notebook``. Widget state saving is left at its default (off).
    """
    root = workdir / "root"
    settings = workdir / "user-settings"
    for relative, values in QUIET_USER_SETTINGS.items():
        target = settings / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values, indent=2))
    for sub in ("root", "config", "runtime", "ipython", "workspaces", "data"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    jupyter_path = [str(workdir / "data")]
    if kernel_python := kernel_python or os.environ.get(KERNEL_PYTHON_ENV):
        _write_python3_kernel(workdir / "data", kernel_python)
    server_python = server_python or os.environ.get(SERVER_PYTHON_ENV) or sys.executable

    # Kernels import anvia_notebook from this working tree, installed or not.
    pythonpath = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "JUPYTER_CONFIG_DIR": str(workdir / "config"),
        "JUPYTER_RUNTIME_DIR": str(workdir / "runtime"),
        # Searched before the installed kernel specs: a `python3` here wins.
        "JUPYTER_PATH": os.pathsep.join(
            filter(None, [*jupyter_path, os.environ.get("JUPYTER_PATH")])
        ),
        "IPYTHONDIR": str(workdir / "ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(workdir / "workspaces"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "PYTHONUNBUFFERED": "1",
    }
    token = uuid.uuid4().hex
    log_path = workdir / "jupyter-server.log"

    last_error = "not started"
    for _attempt in range(3):  # a free port can be taken between the probe and the bind
        port = _free_port()
        command = [
            server_python,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={root}",
            f"--IdentityProvider.token={token}",
            "--ServerApp.allow_root=True",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",
        ]
        log = log_path.open("ab")
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        server = JupyterServer(
            base_url=f"http://127.0.0.1:{port}/",
            token=token,
            root_dir=root,
            log_path=log_path,
            process=process,
        )
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            try:
                server.api("GET", "status", timeout=2)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
                continue
            return server
        last_error = f"exit code {process.poll()}" if process.poll() is not None else "timeout"
        stop_jupyter_server(server)
    raise RuntimeError(f"jupyter lab did not start ({last_error}):\n{server.log_tail()}")


def _write_python3_kernel(data_dir: Path, python: str) -> None:
    """A ``python3`` kernel spec under ``data_dir`` that starts ``python``'s ipykernel, named as
    ipykernel names its own (what a notebook saved with it records)."""
    executable = shutil.which(python)
    if executable is None:
        raise RuntimeError(f"{KERNEL_PYTHON_ENV}={python} is not an executable Python")
    spec = data_dir / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(Path(executable).absolute()), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps(
            {"argv": argv, "display_name": "Python 3 (ipykernel)", "language": "python"},
            indent=2,
        )
    )


def stop_jupyter_server(server: JupyterServer) -> None:
    """Shut the kernels down, then the server; kill its process group if it lingers."""
    process = server.process
    if process.poll() is None:
        with contextlib.suppress(OSError):  # URLError, ConnectionError and TimeoutError included
            server.shutdown_all_kernels()
            server.api("POST", "shutdown")
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)  # what the server started in its group, if still there
        except ProcessLookupError:
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


# --------------------------------------------------------------------------------------------
# Notebooks
# --------------------------------------------------------------------------------------------


def write_notebook(
    root: Path, name: str, cells: Sequence[str], *, kernel_name: str = "python3"
) -> Path:
    """Write a notebook of code cells (each dedented) at ``root / name``; returns its path."""
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(dedent(source).strip("\n")) for source in cells],
        metadata={
            "kernelspec": {"name": kernel_name, "display_name": kernel_name, "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


# In-page helpers, defined once per page load. `__anviaE2E.panel(path)` finds the notebook panel
# showing `path` among the main area's widgets (JupyterLab and Notebook 7 shells both list them).
_PAGE_HELPERS = """
() => {
  if (window.__anviaE2E) return;
  const panel = (path) => {
    const app = window.jupyterapp;
    if (!app || !app.shell) return null;
    for (const w of app.shell.widgets("main")) {
      if (w && w.context && w.context.path === path && w.content && w.sessionContext) return w;
    }
    return null;
  };
  const errors = (path) => {
    const w = panel(path);
    const found = [];
    if (!w || !w.content.model) return found;
    const cells = w.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells.get(i);
      if (cell.type !== "code") continue;
      for (const out of cell.outputs.toJSON()) {
        if (out.output_type === "error") {
          const trace = (out.traceback || []).join("\\n").replace(/\\u001b\\[[0-9;]*m/g, "");
          found.push(`cell ${i}: ${out.ename}: ${out.evalue}\\n${trace}`);
        }
      }
    }
    return found;
  };
  window.__anviaE2E = { panel, errors, runs: {} };
}
"""


def _notebook_path(page: Page) -> str:
    path = page.evaluate("() => window.__anviaE2E && window.__anviaE2E.current")
    if not path:
        raise RuntimeError("no notebook opened on this page: call open_notebook first")
    return str(path)


def open_notebook(
    page: Page,
    server: JupyterServer,
    name: str,
    *,
    app: App = "lab",
    timeout: float = KERNEL_READY_TIMEOUT_MS,
) -> None:
    """Open ``name`` (relative to the server's root) and wait until its kernel is idle.

    ``app="lab"`` opens it in JupyterLab, in a workspace of its own (so no earlier test's tabs are
    restored); ``app="notebook"`` opens it in Notebook 7.
    """
    encoded = quote(name)
    if app == "lab":
        url = server.url(f"lab/workspaces/e2e-{uuid.uuid4().hex[:12]}/tree/{encoded}")
    elif app == "notebook":
        url = server.url(f"notebooks/{encoded}")
    else:
        raise ValueError(f"unknown app {app!r}: expected one of {APPS}")
    page.goto(url, timeout=NAVIGATION_TIMEOUT_MS, wait_until="domcontentloaded")
    page.wait_for_function(
        "() => !!(window.jupyterapp && window.jupyterapp.shell)", timeout=timeout
    )
    page.evaluate(_PAGE_HELPERS)
    page.evaluate("(path) => { window.__anviaE2E.current = path; }", name)
    page.wait_for_function(
        """(path) => {
          const w = window.__anviaE2E.panel(path);
          if (!w || !w.context.isReady || !w.sessionContext.isReady) return false;
          const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
          return !!kernel && kernel.connectionStatus === "connected" && kernel.status === "idle";
        }""",
        arg=name,
        timeout=timeout,
        polling=100,
    )


def notebook_errors(page: Page) -> list[str]:
    """The error outputs of the open notebook, one string per error (traceback without colours)."""
    return list(page.evaluate("(path) => window.__anviaE2E.errors(path)", _notebook_path(page)))


def _run_command(
    page: Page, command: str, *, wait: bool, timeout: float, check: bool, cell: int | None = None
) -> None:
    run_id = uuid.uuid4().hex
    page.evaluate(
        """([path, command, runId, cell]) => {
          const e2e = window.__anviaE2E;
          const w = e2e.panel(path);
          if (!w) throw new Error(`notebook ${path} is not open`);
          window.jupyterapp.shell.activateById(w.id);
          if (cell !== null) {
            w.content.deselectAll();
            w.content.activeCellIndex = cell;
          }
          e2e.runs[runId] = { done: false, error: null };
          Promise.resolve(window.jupyterapp.commands.execute(command)).then(
            () => { e2e.runs[runId].done = true; },
            (err) => { e2e.runs[runId] = { done: true, error: String(err) }; },
          );
        }""",
        [_notebook_path(page), command, run_id, cell],
    )
    if not wait:
        return
    page.wait_for_function(
        "(runId) => window.__anviaE2E.runs[runId].done", arg=run_id, timeout=timeout, polling=100
    )
    error = page.evaluate("(runId) => window.__anviaE2E.runs[runId].error", run_id)
    if error:
        raise AssertionError(f"{command} failed in the page: {error}")
    if check and (errors := notebook_errors(page)):
        raise AssertionError("the notebook has error outputs:\n" + "\n\n".join(errors))


def run_all_cells(
    page: Page, *, wait: bool = True, timeout: float = RUN_TIMEOUT_MS, check: bool = True
) -> None:
    """Run all cells of the open notebook (the command behind Run > Run All Cells).

    With ``wait`` it returns once every cell's execution has replied (a cell that blocks, waiting
    for a click, keeps it waiting: pass ``wait=False`` then); with ``check`` it raises when a
    cell has an error output.
    """
    _run_command(page, "notebook:run-all-cells", wait=wait, timeout=timeout, check=check)


def run_cell(
    page: Page,
    index: int,
    *,
    wait: bool = True,
    timeout: float = RUN_TIMEOUT_MS,
    check: bool = True,
) -> None:
    """Run the code cell at ``index`` (0-based) alone, as Ctrl+Enter does; see ``run_all_cells``."""
    _run_command(page, "notebook:run-cell", wait=wait, timeout=timeout, check=check, cell=index)


def cell(page: Page, index: int) -> Locator:
    """The ``index``-th cell (0-based) of the notebook on the page."""
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def cell_output(page: Page, index: int) -> Locator:
    """The output area of the ``index``-th cell (0-based): widgets render inside it."""
    return cell(page, index).locator(".jp-OutputArea")


def wait_for_text(
    scope: Page | Locator, text: str, *, timeout: float = TEXT_TIMEOUT_MS, exact: bool = False
) -> Locator:
    """Wait until ``text`` is visible in ``scope`` (a page or a locator such as a cell output)."""
    locator = scope.get_by_text(text, exact=exact).first
    expect(locator).to_be_visible(timeout=timeout)
    return locator
