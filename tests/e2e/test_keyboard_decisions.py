"""Deciding an approval with the keyboard, in a real JupyterLab (and Notebook 7), in Chromium.

The kernel redraws the cell's output as an approval is decided (a notebook saved then shows what
was decided) and again when the run ends: the view holding the Approve button just pressed is
replaced by a new one. The focus went to the page, where the next key acts on the notebook (a
keyboard user had to find the widget again, and ``d d`` would delete the cell); it goes to the
new view's transcript.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from e2e_helpers import (
    App,
    JupyterServer,
    cell_output,
    open_notebook,
    run_cell,
    wait_for_text,
    write_notebook,
)

pytestmark = pytest.mark.e2e

SETUP = """
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, Studio, ToolApproval, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


class Path(BaseModel):
    path: str


delete_file = create_tool(
    name="delete_file",
    description="Delete a file.",
    input=Path,
    execute=lambda args, ctx: "deleted",
    approval=ToolApproval(reason="Deletes a file."),
)


def agent():
    call = ToolCall(id="c1", name="delete_file", arguments={"path": "old.csv"})
    model = QueueModel([ModelResponse(text="Deleting it.", tool_calls=[call]), "Deleted old.csv."])
    return AgentBuilder("ops", model).tools([delete_file]).build()
"""


def cell_count(page: Page) -> int:
    return page.evaluate(
        "() => window.__anviaE2E.panel(window.__anviaE2E.current).content.model.cells.length"
    )


def focus_in_transcript(widget: Locator) -> None:
    """Wait until the focus is in a transcript of this cell's output (not on the page). (Looked
    up anew each time: the page replaces the output's elements as the kernel redraws it.)"""
    expect(widget.locator(".anvia-transcript:focus")).to_have_count(1)


def approve_with_keys(page: Page, widget: Locator) -> None:
    approve = widget.get_by_role("button", name="Approve")
    expect(approve).to_be_enabled()
    approve.focus()  # as Tab reaches it
    page.keyboard.press("Enter")


@pytest.mark.parametrize("how", ["show", "studio"])
def test_the_focus_stays_in_the_widget_after_approving_with_the_keyboard(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str, how: str
):
    cell = 'agent().prompt("Delete old.csv").show()' if how == "show" else "Studio([agent()])"
    write_notebook(jupyter_server.root_dir, notebook_name, [SETUP, cell])
    open_notebook(page, jupyter_server, notebook_name, app=jupyter_app)
    run_cell(page, 0)
    run_cell(page, 1)
    widget = cell_output(page, 1)
    if how == "studio":
        prompt = widget.get_by_placeholder("Message the agent")
        expect(prompt).to_be_visible()
        prompt.focus()
        page.keyboard.type("Delete old.csv")
        page.keyboard.press("Enter")
    approve_with_keys(page, widget)
    wait_for_text(widget, "Deleted old.csv.")
    if how == "studio":  # free again: the kernel has redrawn the output for the last time
        expect(widget.get_by_role("combobox", name="Agent")).to_be_enabled()
    else:
        expect(widget.locator(".anvia-live-slot .anvia-transcript")).to_have_count(1)
    focus_in_transcript(widget)
    cells = cell_count(page)
    page.keyboard.press("d")
    page.keyboard.press("d")
    page.keyboard.press("Home")
    assert cell_count(page) == cells
    focus_in_transcript(widget)
