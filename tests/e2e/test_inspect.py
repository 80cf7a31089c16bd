"""The Inspect view in a real JupyterLab: a finished run's model calls opened one by one (the
request's tool schema, the usage, the timings), the run summary in the status line, and a
1,000-call trace opened at its latest call. With ANVIA_UPDATE_SCREENSHOTS=1 it saves the README's
picture, docs/images/inspect.png."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e_helpers import (
    REPO_ROOT,
    JupyterServer,
    cell_output,
    open_notebook,
    run_cell,
    wait_for_text,
    write_notebook,
)

pytestmark = pytest.mark.e2e

SETUP = """
from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.messages import Usage
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, ToolCall


class StockInput(BaseModel):
    sku: str = Field(description="The item's stock-keeping unit, e.g. A-7.")
    warehouse: str = Field("main", description="Which warehouse to look in.")


check_stock = create_tool(
    name="check_stock",
    description="How many of an item a warehouse holds.",
    input=StockInput,
    execute=lambda args, _ctx: {"sku": args.sku, "warehouse": args.warehouse, "in_stock": 12},
)


def stock_agent():
    model = QueueModel([
        ModelResponse(
            text="Let me check the stock of **A-7**.",
            tool_calls=[ToolCall(id="c1", name="check_stock", arguments={"sku": "A-7"})],
            usage=Usage(input_tokens=1240, output_tokens=36),
            cached_tokens=1024,
        ),
        ModelResponse(
            text="The main warehouse holds 12 of A-7.",
            usage=Usage(input_tokens=1302, output_tokens=14),
            cached_tokens=1024,
        ),
    ])
    return (
        AgentBuilder("inventory", model)
        .instructions("You answer stock questions with check_stock. Be brief.")
        .tool(check_stock)
        .build()
    )


def long_agent(calls):
    def respond(request):
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < calls - 1:
            return ModelResponse(
                text=f"Step {done + 1}.",
                tool_calls=[ToolCall(id=f"c{done}", name="check_stock", arguments={"sku": f"A-{done}"})],
            )
        return ModelResponse(text="All checked.")

    return AgentBuilder("long", FunctionModel(respond)).tool(check_stock).default_max_turns(calls + 5).build()
"""

#: The index of the first entry in view in a transcript list, and how far above the top it starts.
FIRST_IN_VIEW = """
(list) => {
  const top = list.getBoundingClientRect().top;
  const rows = [...list.children];
  const index = rows.findIndex((row) => row.getBoundingClientRect().bottom > top);
  return [index, Math.round(rows[index].getBoundingClientRect().top - top)];
}
"""


def open_notebook_with(page: Page, server: JupyterServer, name: str, cells: list[str]) -> None:
    write_notebook(server.root_dir, name, [SETUP, *cells])
    open_notebook(page, server, name)
    for index in range(len(cells) + 1):
        run_cell(page, index)


def test_inspect_shows_the_request_tool_schema_usage_and_timings(
    page: Page, jupyter_server: JupyterServer, notebook_name: str, tmp_path: Path
):
    open_notebook_with(
        page,
        jupyter_server,
        notebook_name,
        ['handle = stock_agent().prompt("How many A-7 do we have?").show()'],
    )
    widget = cell_output(page, 1)
    wait_for_text(widget, "The main warehouse holds 12 of A-7.")
    meta = widget.locator(".anvia-status-meta")
    expect(meta).to_contain_text("2,542 in / 50 out tokens")
    expect(meta).to_contain_text("first token after")
    expect(meta).to_contain_text("in all")

    toggle = widget.get_by_role("button", name="Inspect")
    toggle.click()
    panel = widget.locator(".anvia-inspect")
    expect(panel.locator(".anvia-inspect-where")).to_have_text("Model call 2 of 2 (turn 2)")
    panel.get_by_role("button", name="Previous call").click()
    expect(panel.locator(".anvia-inspect-where")).to_have_text("Model call 1 of 2 (turn 1)")

    expect(panel.locator(".anvia-inspect-tool code")).to_have_text("check_stock")
    schema = panel.locator(".anvia-inspect-schema")
    expect(schema).to_contain_text('"sku"')
    expect(schema).to_contain_text("The item's stock-keeping unit, e.g. A-7.")
    expect(schema).to_contain_text('"required"')
    usage = panel.locator(".anvia-inspect-facts dd").nth(4)
    expect(usage).to_have_text("1,240 in / 36 out tokens (1,024 cached)")
    expect(panel.locator(".anvia-inspect-response")).to_have_text(
        "Let me check the stock of **A-7**."
    )

    # The README's picture: the whole widget, status line included (a page tall enough for it).
    page.set_viewport_size({"width": 1100, "height": 1800})
    panel.locator(".anvia-inspect-instructions-section > summary").click()
    expect(panel.locator(".anvia-inspect-instructions")).to_contain_text("Be brief.")
    # Written into the docs only when asked (ANVIA_UPDATE_SCREENSHOTS=1), so a test run leaves
    # the checkout as it was; otherwise the picture is still taken, into the test's folder.
    if os.environ.get("ANVIA_UPDATE_SCREENSHOTS") == "1":
        images = REPO_ROOT / "docs" / "images"
    else:
        images = tmp_path
    images.mkdir(parents=True, exist_ok=True)
    root = widget.locator(".anvia-root")
    root.scroll_into_view_if_needed()
    root.screenshot(path=str(Path(images / "inspect.png")))
    assert (images / "inspect.png").stat().st_size > 10_000


def test_a_1000_call_trace_opens_at_its_latest_call(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    # How fast it opens is measured by benchmarks/inspect_bench.py --browser.
    open_notebook_with(
        page,
        jupyter_server,
        notebook_name,
        ['handle = long_agent(1000).prompt("Check every item.").show()\nawait handle'],
    )
    widget = cell_output(page, 1)
    wait_for_text(widget, "All checked.", timeout=120_000)
    # The page has 2,000 entries to draw and lay out: what a person waits for is "Done".
    expect(widget.locator(".anvia-status-label")).to_have_text("Done", timeout=120_000)
    widget.get_by_role("button", name="Inspect").click(timeout=120_000)
    # The latest call: 1,999 messages in its request, the last 200 sent.
    expect(widget.locator(".anvia-inspect-where")).to_have_text(
        "Model call 1000 of 1000 (turn 1000)"
    )
    messages = widget.locator(".anvia-inspect-messages")
    expect(messages.locator("summary")).to_have_text("Messages (the last 200 of 1999)")


def test_the_view_keeps_inspect_open_and_its_place_when_the_next_cell_runs(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    # The finished run's output is drawn again when the next cell starts (the kernel sends its
    # final copy once more, for headless runners): the live view moves over, as it was.
    open_notebook_with(
        page,
        jupyter_server,
        notebook_name,
        ['handle = long_agent(60).prompt("Check every item.").show()\nawait handle', "1 + 1"],
    )
    widget = cell_output(page, 1)
    wait_for_text(widget, "All checked.")
    widget.get_by_role("button", name="Inspect").click()
    expect(widget.locator(".anvia-inspect-where")).to_have_text("Model call 60 of 60 (turn 60)")
    transcript = widget.locator(".anvia-transcript")
    # Scrolled up (no longer following the end), then two frames for the view to note its place.
    transcript.evaluate(
        """async (list) => {
          list.scrollTop = 400;
          for (let i = 0; i < 2; i++) await new Promise((r) => requestAnimationFrame(r));
        }"""
    )
    before = transcript.evaluate(FIRST_IN_VIEW)
    view = widget.locator(".anvia-live-view").element_handle()
    run_cell(page, 2)
    wait_for_text(cell_output(page, 2), "2")
    expect(widget.locator(".anvia-inspect-where")).to_have_text("Model call 60 of 60 (turn 60)")
    assert (
        widget.locator(".anvia-live-view")
        .element_handle()
        .evaluate("(el, old) => el === old", view)
    )
    # Still where the person left it (content-visibility lets entries above settle their size,
    # so a couple of entries' worth of drift is allowed), not back at the top or the bottom.
    after = transcript.evaluate(FIRST_IN_VIEW)
    assert abs(after[0] - before[0]) <= 3, (before, after)
    top, height, shown = transcript.evaluate("(l) => [l.scrollTop, l.scrollHeight, l.clientHeight]")
    assert top > 0 and top + shown < height - 32, (top, height, shown)
