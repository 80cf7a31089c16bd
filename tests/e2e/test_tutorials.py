"""The tutorials as a new user meets them: opened in JupyterLab, run, and clicked through."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import (
    JupyterServer,
    cell_output,
    open_notebook,
    run_all_cells,
    run_cell,
    wait_for_text,
)

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


def cell_index(name: str, source_start: str) -> int:
    """The index of the cell of tutorial ``name`` whose source starts with ``source_start``."""
    cells = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]
    [index] = [i for i, c in enumerate(cells) if "".join(c["source"]).startswith(source_start)]
    return index


def test_steer_and_typed_results_tutorial_by_hand(page: Page, jupyter_server: JupyterServer):
    """Tutorial 13 clicked through as its text says: a message typed in the box while the query
    waits for approval makes the agent query by region; the invalid result is fixed in the form,
    and the cell that would fix it from code then finds nothing left to fix."""
    name = copy_tutorial(jupyter_server, "13_steer_and_typed_results.ipynb")
    open_notebook(page, jupyter_server, name)
    for start in ("# In Colab", "import asyncio", "from anvia_notebook import ToolApproval"):
        run_cell(page, cell_index(name, start))
    widget = cell_output(page, cell_index(name, "from anvia_notebook import ToolApproval"))
    expect(widget.get_by_role("button", name="Approve")).to_be_visible()
    box = widget.get_by_placeholder("Message the agent while it works (Enter to send)")
    box.fill("also split it by region")
    box.press("Enter")
    expect(box).to_have_value("")
    widget.get_by_role("button", name="Approve").click()
    expect(widget.get_by_text("Run this query? select region")).to_be_visible(timeout=30_000)
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "west: $1.2M (+12%), east: $0.9M (+4%), north: $0.7M (-1%).")
    expect(widget.locator(".anvia-entry-user.anvia-steered")).to_contain_text(
        "also split it by region"
    )

    for start in ("class RegionSales", "from anvia_notebook import StoreHumanInput"):
        run_cell(page, cell_index(name, start))
    widget = cell_output(page, cell_index(name, "from anvia_notebook import StoreHumanInput"))
    editor = widget.locator(".anvia-approval-editor")
    expect(editor).to_be_visible()
    assert json.loads(editor.input_value())["result"][0]["growth_pct"] == "about twelve"
    editor.fill(json.dumps({"result": [{"region": "west", "sales_musd": 1.2, "growth_pct": 12}]}))
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "Result (1 row)")
    index = cell_index(name, "from anvia_notebook import DecisionRefusedError")
    run_cell(page, index)
    printed = cell_output(page, index)
    wait_for_text(printed, "[RegionSales(region='west', sales_musd=1.2, growth_pct=12.0)]")
    expect(printed.get_by_text("refused")).to_have_count(0)  # nothing was left to fix
