"""Views that outlive their kernel, in a real JupyterLab (and Notebook 7).

- A finished run's cell is saved as its static copy (covered by a live view while the run's model
  is in the page): the notebook, saved, closed, its kernel shut down and reopened, shows the
  transcript, and "Error displaying widget" nowhere.
- A live view whose kernel restarts or dies says so at once, turns its buttons off and names
  ``agent.resume("<run_id>")``.
"""

from __future__ import annotations

import os
import re
import signal
import time

import nbformat
import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import (
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

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

SETUP = """
import os

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, ToolApproval, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


class OrderInput(BaseModel):
    order_id: str


def lookup(args, ctx):
    print("looking up", args.order_id)
    return {"order_id": args.order_id, "status": "shipped"}


lookup_order = create_tool(
    name="lookup_order", description="Look an order up.", input=OrderInput, execute=lookup
)
issue_refund = create_tool(
    name="issue_refund",
    description="Issue a refund.",
    input=OrderInput,
    execute=lambda args, ctx: {"refund_id": "rf_1"},
    approval=ToolApproval(reason="Review this refund."),
)


def call(name, order_id="A1"):
    return ModelResponse(tool_calls=[ToolCall(id="c1", name=name, arguments={"order_id": order_id})])
"""

FINISHED_RUN = [
    SETUP,
    'agent = AgentBuilder("support", QueueModel([call("lookup_order"), "Order A1 has shipped."]))'
    ".tools([lookup_order]).build()\n"
    'handle = agent.prompt("Where is order A1?").show()',
    'response = await handle\nprint("OUTPUT", response.output)',
]


#: A cell whose output asks for a widget no kernel has: once the page's widget manager has
#: restored, it shows "Error displaying widget: model not found" there. The signal that an output
#: of ours still asking for a widget would show that error by then too.
DANGLING_WIDGET = (
    "from IPython.display import display\n"
    f"display({{{WIDGET_MIME!r}: "
    '{"version_major": 2, "version_minor": 0, "model_id": "no-such-widget"}}, raw=True)'
)
WIDGET_ERROR = "Error displaying widget"


def widget_manager_restored(page: Page, control: int) -> None:
    """Wait until the dangling widget's cell (index ``control``) shows its error, then check that
    no other output shows one."""
    expect(cell_output(page, control)).to_contain_text(
        f"{WIDGET_ERROR}: model not found", timeout=60_000
    )
    expect(page.get_by_text(WIDGET_ERROR)).to_have_count(1)  # that one only
    for index in range(control):
        assert WIDGET_ERROR not in cell_output(page, index).inner_text(), index


def static_copy(page: Page, index: int):
    return cell_output(page, index).locator(".anvia-static-transcript")


def save(page: Page) -> None:
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


def test_a_reopened_notebook_shows_the_finished_transcript(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
) -> None:
    cells = [*FINISHED_RUN, DANGLING_WIDGET]
    path = write_notebook(jupyter_server.root_dir, notebook_name, cells)
    open_notebook(page, jupyter_server, notebook_name, app=jupyter_app)
    run_all_cells(page)
    wait_for_text(cell_output(page, 2), "OUTPUT Order A1 has shipped.")
    # The cell's output is the static copy, which the live view stands in for while the run's
    # model is in this page.
    output = cell_output(page, 1)
    expect(static_copy(page, 1)).to_have_count(0)
    live = output.locator(".anvia-live-view .anvia-root")
    expect(live.locator(".anvia-status-label")).to_have_text("Done")
    expect(live.locator(".anvia-entry-assistant")).to_contain_text("Order A1 has shipped.")
    save(page)

    # Close it, shut its kernel down, reopen it: a new kernel knows nothing of the old widget.
    page.goto("about:blank")
    jupyter_server.shutdown_all_kernels()
    saved = nbformat.read(path, as_version=4)
    [output] = saved.cells[1].outputs
    assert WIDGET_MIME not in output.data
    assert "Order A1 has shipped." in output.data["text/html"]

    open_notebook(page, jupyter_server, notebook_name, app=jupyter_app)
    copy = static_copy(page, 1)
    expect(copy).to_be_visible()
    expect(copy).to_contain_text("Where is order A1?")
    expect(copy).to_contain_text("Order A1 has shipped.")
    expect(copy).to_contain_text("lookup_order")
    copy.locator("summary").first.click()  # a tool call opens, as in the widget
    expect(copy).to_contain_text("looking up A1")
    widget_manager_restored(page, len(cells) - 1)
    expect(cell_output(page, 1).locator(".anvia-root")).to_have_count(0)  # no widget ran


PENDING_RUN = [
    SETUP,
    'agent = AgentBuilder("support", QueueModel([call("issue_refund"), "never"]))'
    ".tools([issue_refund]).build()\n"
    'handle = agent.prompt("Refund A1").show()',
    'print("RUN", handle.run_id, "PID", os.getpid())',
]


def _restart_in_page(page: Page, _server: JupyterServer, _pid: int) -> None:
    # What Kernel > Restart does once its dialog is confirmed.
    page.evaluate(
        """(path) => {
          const w = window.__anviaE2E.panel(path);
          void w.sessionContext.restartKernel();
        }""",
        page.evaluate("() => window.__anviaE2E.current"),
    )


def _restart_through_the_server(page: Page, server: JupyterServer, _pid: int) -> None:
    path = page.evaluate("() => window.__anviaE2E.current")
    [kernel_id] = [s["kernel"]["id"] for s in server.api("GET", "sessions") if s["path"] == path]
    server.api("POST", f"kernels/{kernel_id}/restart", timeout=60)


def _kill(_page: Page, _server: JupyterServer, pid: int) -> None:
    os.kill(pid, signal.SIGKILL)  # the server notices, and starts a new kernel


def _page_kernel_is_up(page: Page, _server: JupyterServer) -> None:
    page.wait_for_function(
        """(path) => {
          const kernel = window.__anviaE2E.panel(path).sessionContext.session?.kernel;
          return !!kernel && kernel.status === "idle";
        }""",
        arg=page.evaluate("() => window.__anviaE2E.current"),
        timeout=60_000,
    )


def _server_kernel_is_up(_page: Page, server: JupyterServer) -> None:
    # JupyterLab shows "Starting" after a restart it did not ask for; the server knows better.
    deadline = time.monotonic() + 60
    states: list[str] = []
    while time.monotonic() < deadline:
        states = [k.get("execution_state") for k in server.api("GET", "kernels")]
        if states and all(state in ("idle", "busy") for state in states):
            return
        time.sleep(0.2)
    raise AssertionError(f"the kernel did not come back: {states}")


#: How the kernel stops, and how to know the new one is up (so the teardown can shut it down).
STOPS = {
    "restart": (_restart_in_page, _page_kernel_is_up),
    "server-restart": (_restart_through_the_server, _server_kernel_is_up),
    "crash": (_kill, _page_kernel_is_up),
}


@pytest.mark.parametrize("how", list(STOPS))
def test_a_view_whose_kernel_stopped_says_so_and_turns_its_buttons_off(
    page: Page, jupyter_server: JupyterServer, notebook_name: str, how: str
) -> None:
    write_notebook(jupyter_server.root_dir, notebook_name, [*PENDING_RUN, PENDING_RUN[1]])
    open_notebook(page, jupyter_server, notebook_name)
    for index in range(3):
        run_cell(page, index)
    printed = wait_for_text(cell_output(page, 2), "RUN").inner_text()
    match = re.search(r"RUN (\S+) PID (\d+)", printed)
    assert match, printed
    run_id, pid = match.group(1), int(match.group(2))
    widget = cell_output(page, 1)
    approve = widget.get_by_role("button", name="Approve")
    expect(approve).to_be_enabled()

    stop, kernel_is_up = STOPS[how]
    stop(page, jupyter_server, pid)

    notice = widget.locator(".anvia-kernel-stopped-notice")
    expect(notice).to_be_visible(timeout=10_000)
    expect(notice).to_contain_text("Kernel stopped.")
    expect(notice).to_contain_text(f'agent.resume("{run_id}")')
    expect(approve).to_be_disabled()
    for label in ("Reject", "Stop"):
        expect(widget.get_by_role("button", name=label)).to_be_disabled()
    expect(widget.get_by_placeholder("Reason (optional)")).to_be_disabled()
    expect(widget.locator(".anvia-status-label")).to_have_text("Kernel stopped")
    # The new kernel comes up (then the test's teardown can shut it down); the view stays as is.
    kernel_is_up(page, jupyter_server)
    expect(approve).to_be_disabled()
    expect(notice).to_be_visible()
    # A run shown by the new kernel, next to the stopped view, is live.
    run_cell(page, 0)
    run_cell(page, 3)
    again = cell_output(page, 3)
    expect(again.get_by_role("button", name="Approve")).to_be_enabled()
    expect(again.locator(".anvia-status-label")).not_to_have_text("Kernel stopped")
    expect(again.locator(".anvia-kernel-stopped-notice")).to_be_hidden()
    expect(notice).to_be_visible()


LIVE_VIEWS = [
    SETUP + "\nfrom anvia_notebook import Studio",
    'agent = AgentBuilder("support", QueueModel([call("issue_refund"), "never"]))'
    ".tools([issue_refund]).build()\n"
    'handle = agent.prompt("Refund A1").show()',
    'Studio([AgentBuilder("helper", QueueModel(["Hello from the Studio."])).build()])',
]


def test_a_reopened_notebook_shows_a_studio_and_an_unfinished_run_as_copies(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
) -> None:
    cells = [*LIVE_VIEWS, DANGLING_WIDGET]
    path = write_notebook(jupyter_server.root_dir, notebook_name, cells)
    open_notebook(page, jupyter_server, notebook_name, app=jupyter_app)
    run_all_cells(page)
    run, studio = cell_output(page, 1), cell_output(page, 2)
    expect(run.get_by_role("button", name="Approve")).to_be_enabled()
    prompt = studio.get_by_placeholder("Message the agent")
    prompt.fill("Hi there")
    prompt.press("Enter")
    wait_for_text(studio, "Hello from the Studio.")
    # The reply is there once the run has ended and the Studio takes the next message: its
    # status says Done and its agent picker is usable again (the text alone shows earlier, with
    # the end of its turn). A notebook saved then keeps that reply.
    expect(studio.locator(".anvia-status-label")).to_have_text("Done")
    expect(studio.get_by_role("combobox", name="Agent")).to_be_enabled()
    save(page)

    # Both are still live in the page, yet the notebook on disk holds only their static copies.
    saved = nbformat.read(path, as_version=4)
    for index in (1, 2):
        [output] = saved.cells[index].outputs
        assert WIDGET_MIME not in output.data, index
    assert "Hello from the Studio." in saved.cells[2].outputs[0].data["text/html"]

    page.goto("about:blank")
    jupyter_server.shutdown_all_kernels()
    open_notebook(page, jupyter_server, notebook_name, app=jupyter_app)
    expect(static_copy(page, 1)).to_contain_text("Refund A1")
    expect(static_copy(page, 2)).to_contain_text("Hi there")
    expect(static_copy(page, 2)).to_contain_text("Hello from the Studio.")
    widget_manager_restored(page, len(cells) - 1)
