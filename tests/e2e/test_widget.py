"""The transcript widget in a real JupyterLab (and Notebook 7), clicked through in Chromium.

Each test writes a notebook whose agent runs on a QueueModel, so what the model "says" is fixed,
clicks the widget's controls by their labels, then runs a later cell that prints what the kernel
saw (tool executions, the results the model got) and checks that output.
"""

from __future__ import annotations

import json

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

SETUP = """
import json

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, Message, Studio, ToolApproval, ask_question, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


class RefundInput(BaseModel):
    order_id: str
    amount: float


executed = []


def refund(args, ctx):
    executed.append(args.model_dump())
    print("refunding", args.order_id)
    return {"refund_id": "rf_" + args.order_id.lower(), "amount": args.amount}


issue_refund = create_tool(
    name="issue_refund",
    description="Issue a refund.",
    input=RefundInput,
    execute=refund,
    approval=ToolApproval(reason="Review this refund."),
)


def refund_call(amount=5):
    return ModelResponse(
        text="Refunding now.",
        tool_calls=[ToolCall(id="c1", name="issue_refund", arguments={"order_id": "A1", "amount": amount})],
    )


def agent_for(*responses):
    model = QueueModel(list(responses))
    agent = AgentBuilder("support", model).tools([issue_refund, ask_question]).build()
    return agent, model


def last_result(model):
    return model.requests[-1].messages[-1].tool_results[0].content
"""


def start(
    page: Page,
    server: JupyterServer,
    name: str,
    cells: list[str],
    app: App = "lab",
    *,
    run: int = 1,
) -> None:
    """Write and open the notebook, then run the setup cell and the first ``run`` cells.

    Later cells are checks, run by the test once it has clicked.
    """
    write_notebook(server.root_dir, name, [SETUP, *cells])
    open_notebook(page, server, name, app=app)
    for index in range(run + 1):
        run_cell(page, index)


def check(page: Page, index: int, text: str) -> None:
    """Run the cell at ``index`` and wait for ``text`` in its output."""
    run_cell(page, index)
    wait_for_text(cell_output(page, index), text)


def open_tool_entry(widget) -> None:
    """Unfold the first tool entry. The next cell's run redraws this output (its live view moves
    to the new slot), so a click that lands during the move is made again on the moved view."""
    entry = widget.locator("details.anvia-entry-tool").first
    for _ in range(5):
        if entry.get_attribute("open") is None:
            entry.locator(".anvia-tool-summary").click()
        try:
            expect(entry).to_have_attribute("open", "", timeout=3000)
            return
        except AssertionError:
            continue
    expect(entry).to_have_attribute("open", "")


def test_approve(page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "Refund done.")\n'
            'handle = agent.prompt("Refund A1").show()',
            'print("EXECUTED", executed, "RESULT", last_result(model), handle.status)',
        ],
        jupyter_app,
    )
    widget = cell_output(page, 1)
    approve = widget.get_by_role("button", name="Approve")
    expect(widget.get_by_text("Review this refund.")).to_be_visible()
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Approval required")
    if jupyter_app == "lab":  # the README's picture: test-results/widget-approval.png
        widget.locator(".anvia-root").screenshot(path="test-results/widget-approval.png")
    approve.click()
    wait_for_text(widget, "Refund done.")
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Done")
    open_tool_entry(widget)  # finished entries start folded
    wait_for_text(widget, "refunding A1")  # the tool's print, inside its entry
    check(page, 2, "EXECUTED [{'order_id': 'A1', 'amount': 5.0}]")
    wait_for_text(cell_output(page, 2), "success")


def test_reject_with_a_typed_reason(page: Page, jupyter_server: JupyterServer, notebook_name: str):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "OK, no refund.")\n'
            'handle = agent.prompt("Refund A1").show()',
            'print("EXECUTED", executed, "RESULT", last_result(model))',
        ],
    )
    widget = cell_output(page, 1)
    widget.get_by_placeholder("Reason (optional)").fill("Too expensive for a scratch")
    widget.get_by_role("button", name="Reject").click()
    wait_for_text(widget, "OK, no refund.")
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Rejected")
    check(page, 2, "EXECUTED [] RESULT Too expensive for a scratch")


def test_edit_arguments_then_approve(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(amount=500), "Refunded a smaller amount.")\n'
            'handle = agent.prompt("Refund A1").show()',
            'print("EXECUTED", executed)',
        ],
        jupyter_app,
    )
    widget = cell_output(page, 1)
    widget.get_by_role("button", name="Edit arguments").click()
    editor = widget.locator(".anvia-approval-editor")
    editor.fill("{not json")
    widget.get_by_role("button", name="Approve").click()
    expect(widget.locator(".anvia-error-text").first).to_be_visible()
    # Typed over lines: Enter is a new line in the editor (JupyterLab cancelled it in a cell).
    editor.fill("{")
    editor.press("End")
    editor.press("Enter")
    editor.press_sequentially('"order_id": "A1",')
    editor.press("Shift+Enter")
    editor.press_sequentially('"amount": 50}')
    expect(editor).to_have_value('{\n"order_id": "A1",\n"amount": 50}')
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "Refunded a smaller amount.")
    check(page, 2, "EXECUTED [{'order_id': 'A1', 'amount': 50.0}]")


QUESTIONS = {
    "questions": [
        {
            "id": "priority",
            "question": "What priority?",
            "choices": [{"label": "High", "value": "high"}, {"label": "Low", "value": "low"}],
        },
        {
            "id": "note",
            "question": "Any note?",
            "choices": [{"label": "No note", "value": "none"}],
        },
    ]
}


def test_two_questions_one_choice_one_custom(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            "agent, model = agent_for(\n"
            f'    ModelResponse(tool_calls=[ToolCall(id="q1", name="ask_question", arguments={QUESTIONS!r})]),\n'
            '    "Escalated.",\n'
            ")\n"
            'handle = agent.prompt("Escalate").show()',
            'print("RESULT", last_result(model))',
        ],
    )
    widget = cell_output(page, 1)
    wait_for_text(widget, "Question 1 of 2")
    submit = widget.get_by_role("button", name="Submit answers")
    expect(submit).to_be_disabled()
    widget.get_by_role("button", name="High").click()
    wait_for_text(widget, "Question 2 of 2")
    wait_for_text(widget, "1/2 answered")
    widget.get_by_role("button", name="Back").click()
    wait_for_text(widget, "Question 1 of 2")
    widget.get_by_role("button", name="Next").click()
    widget.get_by_placeholder("Type a custom answer").fill("Call the customer first")
    expect(submit).to_be_enabled()
    submit.click()
    wait_for_text(widget, "Escalated.")
    run_cell(page, 2)
    output = cell_output(page, 2)
    wait_for_text(output, "RESULT")
    printed = output.inner_text().split("RESULT", 1)[1].strip()
    assert json.loads(printed) == {
        "answers": [
            {"questionId": "priority", "answer": "high", "choice": "high"},
            {"questionId": "note", "answer": "Call the customer first", "custom": True},
        ]
    }


def test_stop_while_waiting(page: Page, jupyter_server: JupyterServer, notebook_name: str):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "never")\n'
            'handle = agent.prompt("Refund A1").show()',
            'print("STATUS", handle.status, "EXECUTED", executed)',
        ],
    )
    widget = cell_output(page, 1)
    expect(widget.get_by_role("button", name="Approve")).to_be_visible()
    widget.get_by_role("button", name="Stop").click()
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Cancelled")
    expect(widget.get_by_role("button", name="Stop")).to_be_disabled()
    check(page, 2, "STATUS cancelled EXECUTED []")


def test_send_sync_click_while_the_cell_blocks(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "Blocking run done.")\n'
            'response = agent.prompt("Refund A1").send_sync()\n'
            'print("SYNC OUTPUT", response.output)',
            'print("AFTER", executed)',
        ],
        run=0,
    )
    run_all_cells(page, wait=False)
    widget = cell_output(page, 1)
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "SYNC OUTPUT Blocking run done.", timeout=60_000)
    # the cell queued behind the blocked one ran afterwards, in order
    wait_for_text(cell_output(page, 2), "AFTER [{'order_id': 'A1', 'amount': 5.0}]")


def test_second_view_of_a_pending_run(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "Approved from the second view.")\n'
            'handle = agent.prompt("Refund A1").show()',
            "handle",
        ],
        run=2,
    )
    first, second = cell_output(page, 1), cell_output(page, 2)
    expect(first.get_by_role("button", name="Approve")).to_be_visible()
    expect(second.get_by_role("button", name="Approve")).to_be_visible()
    expect(second.get_by_text("Review this refund.")).to_be_visible()
    second.get_by_role("button", name="Approve").click()
    wait_for_text(first, "Approved from the second view.")
    wait_for_text(second, "Approved from the second view.")
    expect(first.get_by_role("button", name="Approve")).to_have_count(0)


def test_studio_quick_prompt_then_a_typed_prompt(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for("Hello from the quick prompt.", "You said: second message.")\n'
            'Studio([agent], quick_prompts={"support": ["Say hello"]})',
            'print("HISTORY", [m.content for m in model.requests[-1].messages])',
        ],
    )
    widget = cell_output(page, 1)
    widget.get_by_role("button", name="Say hello").click()
    wait_for_text(widget, "Hello from the quick prompt.")
    expect(widget.get_by_role("button", name="Say hello")).to_have_count(0)
    prompt = widget.get_by_placeholder("Message the agent")
    prompt.fill("second message")
    prompt.press("Enter")
    wait_for_text(widget, "You said: second message.")
    check(
        page,
        2,
        "HISTORY ['Say hello', 'Hello from the quick prompt.', 'second message']",
    )


def test_studio_each_agent_has_its_own_conversation(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for("Order A1 has shipped.")\n'
            'greeter = AgentBuilder("greeter", QueueModel(["Hello and welcome!"])).name("Greeter")'
            ".build()\n"
            'Studio([agent, greeter], quick_prompts={"support": ["Where is A1?"], '
            '"greeter": ["Hello!"]})',
        ],
    )
    widget = cell_output(page, 1)
    widget.get_by_role("button", name="Where is A1?").click()
    wait_for_text(widget, "Order A1 has shipped.")
    widget.get_by_label("Agent", exact=True).select_option("greeter")
    # the greeter's own (empty) conversation, with its quick prompts; not the support one
    widget.get_by_role("button", name="Hello!").click()
    wait_for_text(widget, "Hello and welcome!")
    expect(widget.get_by_text("Order A1 has shipped.")).to_have_count(0)
    expect(widget.locator(".anvia-entry-assistant .anvia-role")).to_have_text(["Greeter"])
    # back: the support conversation as it was
    widget.get_by_label("Agent", exact=True).select_option("support")
    wait_for_text(widget, "Order A1 has shipped.")
    expect(widget.get_by_text("Hello and welcome!")).to_have_count(0)
    expect(widget.locator(".anvia-entry-assistant .anvia-role")).to_have_text(["support"])


def test_studio_opens_an_earlier_session_in_a_new_studio(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'first = AgentBuilder("recall", QueueModel(["Noted: blue."])).build()\nStudio([first])',
            'later_model = QueueModel(["Your colour is blue."])\n'
            'Studio([AgentBuilder("recall", later_model).build()])',
            'print("HISTORY", [m.content for m in later_model.requests[-1].messages])',
        ],
    )
    first = cell_output(page, 1)
    expect(first.get_by_role("combobox", name="Earlier sessions")).to_be_hidden()
    prompt = first.get_by_placeholder("Message the agent")
    prompt.fill("My colour is blue")
    prompt.press("Enter")
    wait_for_text(first, "Noted: blue.")

    run_cell(page, 2)  # a new Studio, as after a restart: the session is offered
    later = cell_output(page, 2)
    picker = later.get_by_role("combobox", name="Earlier sessions")
    expect(picker).to_contain_text("My colour is blue")
    expect(later.locator(".anvia-entry")).to_have_count(0)
    later.get_by_role("button", name="Open").click()
    wait_for_text(later, "Noted: blue.")
    expect(later.get_by_role("combobox", name="Earlier sessions")).to_be_hidden()
    prompt = later.get_by_placeholder("Message the agent")
    prompt.fill("What is my colour?")
    prompt.press("Enter")
    wait_for_text(later, "Your colour is blue.")
    check(page, 3, "HISTORY ['My colour is blue', 'Noted: blue.', 'What is my colour?']")


XSS_TEXT = (
    'Look: <img src="x" onerror="window.__xss = 1"> <script>window.__xss = 2</script> '
    "[click me](javascript:window.__xss=3) "
    '<a href="#" data-commandlinker-command="help:open" data-commandlinker-args="{}">cmd</a> '
    "**bold stays**"
)


def test_model_text_stays_inert(page: Page, jupyter_server: JupyterServer, notebook_name: str):
    start(
        page,
        jupyter_server,
        notebook_name,
        [f"agent, model = agent_for({XSS_TEXT!r})\nhandle = agent.prompt('hi').show()"],
    )
    widget = cell_output(page, 1)
    wait_for_text(widget, "bold stays")
    root = widget.locator(".anvia-root")
    expect(root.locator("strong", has_text="bold stays")).to_have_count(1)
    expect(root.locator("script")).to_have_count(0)
    expect(root.locator("[onerror]")).to_have_count(0)
    expect(root.locator("[data-commandlinker-command]")).to_have_count(0)
    expect(root.locator('a[href^="javascript"]')).to_have_count(0)
    link = root.get_by_text("cmd")
    if link.count():
        link.first.click()
    # A broken image of our own, added now: once its onerror has run, one the widget put in the
    # page earlier (even for a moment) would have run its handler too.
    page.evaluate(
        """() => {
          const img = document.createElement("img");
          img.onerror = () => { window.__brokenImageSeen = true; img.remove(); };
          img.src = "x";
          document.body.appendChild(img);
        }"""
    )
    page.wait_for_function("() => window.__brokenImageSeen === true")
    assert page.evaluate("window.__xss") is None


def test_reloaded_page_shows_the_pending_run(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "Approved after a reload.")\n'
            'handle = agent.prompt("Refund A1").show()',
        ],
    )
    expect(cell_output(page, 1).get_by_role("button", name="Approve")).to_be_visible()
    # Save first: a reload shows the notebook as saved on disk, then the live kernel's widgets.
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty")
    page.reload()
    widget = cell_output(page, 1)
    expect(widget.get_by_text("Review this refund.")).to_be_visible(timeout=60_000)
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "Approved after a reload.")


def test_kernel_interrupt_stops_a_blocking_run(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    start(
        page,
        jupyter_server,
        notebook_name,
        [
            'agent, model = agent_for(refund_call(), "never")\n'
            'response = agent.prompt("Refund A1").send_sync()',
            'print("EXECUTED", executed)',
        ],
        run=0,
    )
    run_cell(page, 1, wait=False)
    widget = cell_output(page, 1)
    expect(widget.get_by_role("button", name="Approve")).to_be_visible()
    page.evaluate("window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
    wait_for_text(widget, "PromptCancelledError")
    expect(widget.locator(".anvia-tool-status").first).to_have_text("Cancelled")
    run_cell(page, 2, check=False)  # cell 1's PromptCancelledError is expected
    wait_for_text(cell_output(page, 2), "EXECUTED []")


def _cell_count(page: Page) -> int:
    return page.evaluate(
        "() => window.__anviaE2E.panel(window.__anviaE2E.current).content.model.cells.length"
    )


def _settled(page: Page, index: int) -> None:
    """Wait until cell ``index`` holds the final copy of its finished run: the kernel's last
    update of the output, whose static copy says the run is done (the page drops the widget's
    mimetype from every copy as soon as it draws the view, outputs.ts, so its absence alone
    says nothing). That update redraws the output, and the live view moves into its place:
    keys pressed before it would be lost with the scroll it cancels."""
    page.wait_for_function(
        """(index) => {
          const cell = window.__anviaE2E.panel(window.__anviaE2E.current).content.model.cells.get(index);
          const data = cell.outputs.toJSON().map((out) => out.data || {});
          const html = (d) => [].concat(d["text/html"] || []).join("");
          return data.length > 0 && data.every(
            (d) => !("application/vnd.jupyter.widget-view+json" in d))
            && data.some((d) => html(d).includes("</strong> \u2014 Done"));
        }""",
        arg=index,
    )


def test_keys_pressed_in_the_widget_stay_in_it(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
):
    """Notebook shortcuts matched the focused transcript or button itself: ``d d`` pressed
    while reading the transcript deleted the widget's cell, and the arrows moved between cells
    instead of scrolling it."""
    long_text = "\\n\\n".join(f"Paragraph {i}: " + "lorem ipsum " * 30 for i in range(40))
    start(
        page,
        jupyter_server,
        notebook_name,
        [f'agent, model = agent_for("{long_text}")\nhandle = agent.prompt("Write").show()'],
        jupyter_app,
    )
    widget = cell_output(page, 1)
    wait_for_text(widget, "Paragraph 39")
    _settled(page, 1)
    cells = _cell_count(page)
    # The live view drawn in the final copy's place (the one before it may still be on the
    # page for a moment after the outputs changed: keys pressed there would be lost with it).
    transcript = widget.locator(".anvia-live-slot .anvia-transcript")
    expect(transcript).to_have_count(1)
    expect(widget.locator(".anvia-transcript")).to_have_count(1)
    transcript.focus()  # as Tab reaches it, to read it with the keys
    page.keyboard.press("d")
    page.keyboard.press("d")
    page.keyboard.press("Home")
    page.wait_for_function("el => el.scrollTop === 0", arg=transcript.element_handle())
    page.keyboard.press("ArrowDown")
    page.wait_for_function("el => el.scrollTop > 0", arg=transcript.element_handle())
    assert _cell_count(page) == cells
