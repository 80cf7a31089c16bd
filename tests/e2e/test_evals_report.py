"""An evaluation report's live widget in a real JupyterLab, in Chromium: progress, a row that
opens its case's transcript (live while the case runs), and Stop keeping the finished cases.

The cell is the one a user writes, ``report = await evals.evaluate(...)``: it blocks until the
report is complete while the widget keeps working (the kernel serves the widget's messages
during a cell's top-level await).
"""

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
import asyncio

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel, TextDelta

QUICK = {"q1", "q2"}


async def answer(request):
    prompt = request.messages[-1].content
    yield TextDelta(delta=f"thinking about {prompt}. ")
    if prompt not in QUICK:
        await asyncio.sleep(600)  # still running when the test clicks Stop
    yield TextDelta(delta=f"echo: {prompt}")


agent = AgentBuilder("echo", FunctionModel(answer)).build()
cases = [{"input": f"q{i}"} for i in range(1, 7)]
"""

EVALUATE = "report = await evals.evaluate(agent, cases, [evals.contains('echo')], concurrency=2)"
CHECK = 'print("STATUS", report.status, [c.name for c in report.cases], report.not_run)'


def test_progress_a_row_opens_its_transcript_and_stop(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    write_notebook(jupyter_server.root_dir, notebook_name, [SETUP, EVALUATE, CHECK])
    open_notebook(page, jupyter_server, notebook_name)
    run_cell(page, 0)
    run_cell(page, 1, wait=False)  # blocks until the evaluation ends
    widget = cell_output(page, 1).locator(".anvia-evals-mode")  # the live view, not the static copy

    # progress: the two quick cases finish, two slow ones run, two wait
    expect(widget.locator(".anvia-eval-count")).to_have_text("2 of 6 cases")
    expect(widget.locator("progress")).to_have_attribute("value", "2")
    expect(widget.locator(".anvia-eval-timing")).to_contain_text("elapsed")
    expect(widget.locator(".anvia-eval-pass-rate")).to_have_text("Pass rate 100%")
    rows = widget.locator(".anvia-eval-tbody [role=row]")
    expect(rows).to_have_count(6)
    expect(rows.nth(0).locator(".anvia-eval-status")).to_have_text("Passed")
    expect(rows.nth(2).locator(".anvia-eval-status")).to_have_text("Running")
    expect(rows.nth(5).locator(".anvia-eval-status")).to_have_text("Pending")

    # a finished row opens its transcript below the table
    widget.get_by_role("button", name="Open the transcript of case-1").click()
    panel = widget.locator(".anvia-eval-panel")
    expect(panel.locator(".anvia-eval-panel-title")).to_have_text("Transcript of case-1")
    wait_for_text(panel, "echo: q1")
    # a running case opens live
    widget.get_by_role("button", name="Open the transcript of case-3").click()
    expect(panel.locator(".anvia-eval-panel-title")).to_have_text("Transcript of case-3")
    wait_for_text(panel, "thinking about q3.")
    expect(panel.get_by_text("echo: q3")).to_have_count(0)
    # a case that has not started cannot be opened
    expect(widget.get_by_role("button", name="Open the transcript of case-6")).to_be_disabled()

    # Stop: the running and pending cases are cancelled, the finished ones kept
    widget.get_by_role("button", name="Stop").click()
    expect(widget.locator(".anvia-eval-count")).to_have_text("2 of 6 cases · stopped")
    expect(rows.nth(2).locator(".anvia-eval-status")).to_have_text("Not run")
    expect(widget.get_by_role("button", name="Stop")).to_be_disabled()
    run_cell(page, 2)
    wait_for_text(
        cell_output(page, 2),
        "STATUS stopped ['case-1', 'case-2'] ['case-3', 'case-4', 'case-5', 'case-6']",
    )
    # The report's cell shows one table: the live one stands in for the static copy (what a
    # saved notebook keeps), as a transcript's live view does, and not above it.
    output = cell_output(page, 1)
    expect(output.locator(".anvia-live-slot .anvia-evals-mode")).to_have_count(1)
    expect(output.locator(".anvia-eval-report")).to_have_count(0)
    expect(output.locator(".anvia-evals-mode")).to_have_count(1)


EVALUATE_SYNC = (
    "report = evals.evaluate_sync(agent, cases, [evals.contains('echo')], concurrency=2)"
)


def test_evaluate_sync_blocks_the_cell_and_stop_still_works(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    write_notebook(jupyter_server.root_dir, notebook_name, [SETUP, EVALUATE_SYNC, CHECK])
    open_notebook(page, jupyter_server, notebook_name)
    run_cell(page, 0)
    run_cell(page, 1, wait=False)  # a synchronous cell, blocked until the evaluation ends
    widget = cell_output(page, 1).locator(".anvia-evals-mode")
    expect(widget.locator(".anvia-eval-count")).to_have_text("2 of 6 cases")
    widget.get_by_role("button", name="Open the transcript of case-2").click()
    wait_for_text(widget.locator(".anvia-eval-panel"), "echo: q2")
    widget.get_by_role("button", name="Stop").click()
    expect(widget.locator(".anvia-eval-count")).to_have_text("2 of 6 cases · stopped")
    run_cell(page, 2)
    wait_for_text(
        cell_output(page, 2),
        "STATUS stopped ['case-1', 'case-2'] ['case-3', 'case-4', 'case-5', 'case-6']",
    )
