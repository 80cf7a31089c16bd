"""Steering a run from the widget's message box, in a real JupyterLab, clicked in Chromium.

The scripted model calls a tool that needs an approval, then streams an answer naming every
message steered into the run. A message typed in the box (Enter) while the run waits must reach
the model's next request, and show as a user bubble where the run delivered it (after the tool).
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

from anvia_notebook import AgentBuilder, Studio, ToolApproval, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, TextDelta, ToolCall
from pydantic import BaseModel


class SumInput(BaseModel):
    region: str


def total(args, ctx):
    return {"region": args.region, "total": 42}


sales_total = create_tool(
    name="sales_total",
    description="Total sales of a region.",
    input=SumInput,
    execute=total,
    approval=ToolApproval(reason="Check the region."),
)
seen = []


async def script(request):
    users = [m.content for m in request.messages if m.role == "user"]
    seen.append(users)
    if not any(m.role == "tool" for m in request.messages):
        yield ToolCall(id="c1", name="sales_total", arguments={"region": "all"})
        return
    for word in ("Total ", "is ", "42; ", "you ", "asked: "):
        yield TextDelta(delta=word)
    yield TextDelta(delta=" / ".join(users[1:]) or "nothing more")


def agent():
    return AgentBuilder("analyst", FunctionModel(script)).tools([sales_total]).build()
"""


def start(page: Page, server: JupyterServer, name: str, cells: list[str]) -> None:
    write_notebook(server.root_dir, name, [SETUP, *cells])
    open_notebook(page, server, name)
    run_cell(page, 0)
    run_cell(page, 1)


def test_the_show_view_box_steers_a_waiting_run_and_the_model_sees_it(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'handle = agent().prompt("Sum the sales").show()',
            'print("SEEN", seen[-1], handle.status)',
        ],
    )
    widget = cell_output(page, 1)
    expect(widget.get_by_role("button", name="Approve")).to_be_visible()
    box = widget.get_by_placeholder("Message the agent while it works (Enter to send)")
    expect(box).to_be_visible()
    # Shift+Enter types a new line (JupyterLab, told of an Enter in a cell, cancelled it).
    box.fill("also split it")
    box.press("Shift+Enter")
    box.press_sequentially("by region")
    expect(box).to_have_value("also split it\nby region")
    box.press("Enter")
    expect(box).to_have_value("")
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "you asked: also split it by region")
    steered = widget.locator(".anvia-entry-user.anvia-steered")
    expect(steered).to_have_count(1)
    expect(steered).to_contain_text("You (during the run)")
    expect(steered).to_contain_text("also split it by region")
    # Where the run delivered it: after the tool, before the final answer.
    kinds = widget.locator(".anvia-transcript > .anvia-entry").evaluate_all(
        "els => els.map(e => e.classList.contains('anvia-steered') ? 'steered' : e.className)"
    )
    assert kinds.index("steered") == len(kinds) - 2, kinds
    expect(box).to_be_hidden()  # the run has ended: the box goes
    run_cell(page, 2)
    wait_for_text(
        cell_output(page, 2), "SEEN ['Sum the sales', 'also split it\\nby region'] success"
    )


def test_the_studio_box_steers_while_a_run_goes_then_starts_the_next_one(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            "Studio([agent()])",
            'print("SEEN", seen)',
        ],
    )
    widget = cell_output(page, 1)
    expect(widget.get_by_role("combobox", name="Agent")).to_have_value("analyst")  # connected
    prompt = widget.get_by_placeholder("Message the agent")
    prompt.fill("Sum the")
    prompt.press("Shift+Enter")
    prompt.press_sequentially("sales")
    expect(prompt).to_have_value("Sum the\nsales")
    prompt.fill("Sum the sales")
    prompt.press("Enter")
    expect(widget.get_by_role("button", name="Approve")).to_be_visible()
    prompt.fill("only Europe")
    prompt.press("Enter")
    expect(prompt).to_have_value("")
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "you asked: only Europe")
    expect(widget.locator(".anvia-entry-user.anvia-steered")).to_have_text(
        "You (during the run)only Europe"
    )
    run_cell(page, 2)
    wait_for_text(cell_output(page, 2), "['Sum the sales', 'only Europe']")


STREAMING = """
import asyncio

from anvia_notebook import AgentBuilder
from anvia_notebook.models import FunctionModel, TextDelta

heard = []
steered = asyncio.Event()  # set when the run takes a message from the box


async def streaming(request):
    users = [m.content for m in request.messages if m.role == "user"]
    heard.append(users)
    if len(heard) == 1:
        yield TextDelta(delta="Adding up the sales ")
        await steered.wait()  # the answer is still streaming when the message comes
        yield TextDelta(delta="of every region.")
        return
    yield TextDelta(delta="Also heard: " + " / ".join(users[1:]))


handle = AgentBuilder("analyst", FunctionModel(streaming)).build().prompt("Sum the sales").show()
take = handle.run.steer


def steer_and_tell(message):
    taken = take(message)
    steered.set()
    return taken


handle.run.steer = steer_and_tell
"""


def test_the_box_steers_a_run_while_its_answer_streams_and_the_model_sees_it(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    write_notebook(
        jupyter_server.root_dir,
        notebook_name,
        [STREAMING, 'print("HEARD", heard, handle.status)'],
    )
    open_notebook(page, jupyter_server, notebook_name)
    run_cell(page, 0)
    widget = cell_output(page, 0)
    wait_for_text(widget, "Adding up the sales")
    box = widget.get_by_placeholder("Message the agent while it works (Enter to send)")
    expect(box).to_be_visible()
    box.fill("split it by region")
    box.press("Enter")
    wait_for_text(widget, "Also heard: split it by region")
    steered = widget.locator(".anvia-entry-user.anvia-steered")
    expect(steered).to_have_count(1)
    expect(steered).to_contain_text("split it by region")
    # Delivered after the streamed answer, before the turn that read it.
    kinds = widget.locator(".anvia-transcript > .anvia-entry").evaluate_all(
        "els => els.map(e => e.classList.contains('anvia-steered') ? 'steered' : e.className)"
    )
    assert kinds.index("steered") == len(kinds) - 2, kinds
    run_cell(page, 1)
    wait_for_text(
        cell_output(page, 1),
        "HEARD [['Sum the sales'], ['Sum the sales', 'split it by region']] success",
    )
