"""Smoke test of the e2e harness: a notebook with an inline anywidget, in JupyterLab and Notebook 7.

The widget's button sends a custom message to the kernel; the Python handler counts it and sets
a synced trait that the page shows, with the kernel's pid, which only the kernel knows.
"""

from __future__ import annotations

import os
import re
import shutil
import sys

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import (
    KERNEL_PYTHON_ENV,
    App,
    JupyterServer,
    cell_output,
    open_notebook,
    run_all_cells,
    run_cell,
    wait_for_text,
    write_notebook,
)

pytestmark = pytest.mark.e2e

CELLS = [
    """
    import os, sys
    print("smoke value", 6 * 7, "kernel pid", os.getpid(), "python", sys.executable)
    """,
    '''
    import os

    import anywidget
    import traitlets


    class Smoke(anywidget.AnyWidget):
        _esm = """
        function render({ model, el }) {
          const button = document.createElement("button");
          button.textContent = "Ping kernel";
          button.addEventListener("click", () => model.send({ kind: "ping" }));
          const status = document.createElement("span");
          status.className = "smoke-status";
          const show = () => { status.textContent = model.get("status"); };
          model.on("change:status", show);
          show();
          el.append(button, status);
        }
        export default { render };
        """
        status = traitlets.Unicode("waiting").tag(sync=True)
        pings = 0

        def __init__(self) -> None:
            super().__init__()
            self.on_msg(self._on_msg)

        def _on_msg(self, widget, content, buffers) -> None:
            if content.get("kind") == "ping":
                self.pings += 1
                self.status = f"pong {self.pings} pid={os.getpid()}"


    smoke = Smoke()
    smoke
    ''',
    """
    print("kernel sees", smoke.status)
    """,
]


def test_widget_round_trip(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
) -> None:
    write_notebook(jupyter_server.root_dir, notebook_name, CELLS)
    open_notebook(page, jupyter_server, notebook_name, app=jupyter_app)
    run_all_cells(page)

    printed = wait_for_text(cell_output(page, 0), "smoke value 42").inner_text()
    match = re.search(r"kernel pid (\d+)", printed)
    assert match, printed
    pid = match.group(1)
    # The notebooks' `python3` kernel is the chosen Python's (ANVIA_E2E_KERNEL_PYTHON), if any.
    chosen = os.environ.get(KERNEL_PYTHON_ENV)
    expected = os.path.abspath(shutil.which(chosen) or chosen) if chosen else sys.executable
    assert printed.split("python ", 1)[1].strip() == expected, printed

    widget = cell_output(page, 1)
    status = widget.locator(".smoke-status")
    expect(status).to_have_text("waiting")
    button = widget.get_by_role("button", name="Ping kernel")
    button.click()
    expect(status).to_have_text(f"pong 1 pid={pid}")
    button.click()
    expect(status).to_have_text(f"pong 2 pid={pid}")

    run_cell(page, 2)
    wait_for_text(cell_output(page, 2), f"kernel sees pong 2 pid={pid}")
