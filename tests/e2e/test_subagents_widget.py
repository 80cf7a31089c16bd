"""A sub-agent's approval in the lead's cell, in a real JupyterLab clicked through in Chromium:
the analyst's block inside the lead's tool call, its approval named with the path (lead, analyst, run_sql),
Approve clicked there; and Stop of the lead while the nested approval waits."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import (
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

from anvia_notebook import AgentBuilder, ToolApproval, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


class SqlInput(BaseModel):
    sql: str


executed = []


def run_sql(args, ctx):
    executed.append(args.sql)
    return "rows for " + args.sql


sql_tool = create_tool(
    name="run_sql",
    description="Run SQL.",
    input=SqlInput,
    execute=run_sql,
    approval=ToolApproval(reason="Runs a query on the warehouse."),
)


def lead_agent():
    analyst = AgentBuilder(
        "analyst",
        QueueModel([
            ModelResponse(tool_calls=[ToolCall(id="s1", name="run_sql", arguments={"sql": "select 1"})]),
            "analyst: rows for select 1",
        ]),
    ).tool(sql_tool).build()
    return AgentBuilder(
        "lead",
        QueueModel([
            ModelResponse(tool_calls=[ToolCall(id="a1", name="ask_analyst", arguments={"prompt": "which?"})]),
            "lead heard the analyst",
        ]),
    ).tool(analyst.as_tool(name="ask_analyst")).build()
"""

PATH = "lead \u203a analyst \u203a run_sql"


def start(page: Page, server: JupyterServer, name: str, cells: list[str]) -> None:
    write_notebook(server.root_dir, name, [SETUP, *cells])
    open_notebook(page, server, name)
    for index in range(2):
        run_cell(page, index)


def test_a_nested_approval_is_approved_in_the_lead_s_cell(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
) -> None:
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'handle = lead_agent().prompt("Which region?").show()',
            'print("EXECUTED", executed, handle.status)',
        ],
    )
    widget = cell_output(page, 1)
    dialog = widget.get_by_role("alertdialog", name=f"Approval required for {PATH}")
    expect(dialog).to_be_visible()
    shown = widget.locator(".anvia-subagent:not([hidden]) > .anvia-subagent-summary")
    expect(shown).to_have_text("Sub-agent analyst")
    expect(dialog).to_contain_text("Runs a query on the warehouse.")
    dialog.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "lead heard the analyst")
    run_cell(page, 2)
    wait_for_text(cell_output(page, 2), "EXECUTED ['select 1'] success")


def test_stop_of_the_lead_cancels_the_nested_approval(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
) -> None:
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'handle = lead_agent().prompt("Which region?").show()',
            'print("STATUS", handle.status, "EXECUTED", executed, "SUB", handle.run.children[0].status)',
        ],
    )
    widget = cell_output(page, 1)
    dialog = widget.get_by_role("alertdialog", name=f"Approval required for {PATH}")
    expect(dialog).to_be_visible()
    widget.get_by_role("button", name="Stop").click()
    expect(widget.get_by_role("button", name="Stop")).to_be_disabled()
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Cancelled")
    run_cell(page, 2)
    wait_for_text(cell_output(page, 2), "STATUS cancelled EXECUTED [] SUB cancelled")
