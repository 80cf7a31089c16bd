"""The tutorials as a new user meets them: opened in JupyterLab, run, and clicked through."""

from __future__ import annotations

import pathlib
import shutil

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import JupyterServer, open_notebook, run_all_cells, wait_for_text

pytestmark = pytest.mark.e2e

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"


def copy_tutorial(server: JupyterServer, name: str) -> str:
    shutil.copy(NOTEBOOKS / name, pathlib.Path(server.root_dir) / name)
    return name


def code_cell_output(page: Page, source_start: str):
    """The output of the first cell whose source starts with ``source_start``."""
    cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text=source_start).first
    return cell.locator(".jp-OutputArea")


def test_quickstart(page: Page, jupyter_server: JupyterServer):
    name = copy_tutorial(jupyter_server, "01_quickstart.ipynb")
    open_notebook(page, jupyter_server, name)
    run_all_cells(page)
    widget = code_cell_output(page, 'handle = agent.prompt("Where is order A1001?").show()')
    wait_for_text(widget, "Where is order A1001?")
    expect(widget.locator(".anvia-entry-assistant").last).to_contain_text("A1001 is shipped")
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Done")
    printed = code_cell_output(page, "response = await handle")
    wait_for_text(printed, "Order **A1001** is *shipped*")


def test_tool_approval_tutorial_click_approve(page: Page, jupyter_server: JupyterServer):
    name = copy_tutorial(jupyter_server, "02_tool_approval.ipynb")
    open_notebook(page, jupyter_server, name)
    run_all_cells(page, wait=False)
    widget = code_cell_output(page, "handle = agent.prompt(")
    expect(widget.get_by_text("Review refund of $25.00 for order A1001.")).to_be_visible(
        timeout=60_000
    )
    widget.get_by_role("button", name="Approve").click()
    expect(widget.locator(".anvia-entry-assistant").last).to_contain_text("rf_a1001")
    printed = code_cell_output(page, "response = await handle")
    wait_for_text(printed, "Done: refund `rf_a1001` was issued for order A1001.", timeout=60_000)
