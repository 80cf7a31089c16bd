"""The Studio with the keyboard, in a real JupyterLab (and Notebook 7), in Chromium.

After a run, an agent change or a new session, the kernel redraws the Studio's output (a new
view replaces the one on the page): the control a person was using keeps the focus, so that
typing goes on where it was, never into the notebook.
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
from anvia_notebook import AgentBuilder, Studio
from anvia_notebook.models import QueueModel
"""

OLD = "data-e2e-old-view"


def start(page: Page, server: JupyterServer, app: App, name: str, studio: str) -> Locator:
    write_notebook(server.root_dir, name, [SETUP, studio])
    open_notebook(page, server, name, app=app)
    run_cell(page, 0)
    run_cell(page, 1)
    widget = cell_output(page, 1)
    expect(widget.get_by_placeholder("Message the agent")).to_be_visible()
    return widget


def mark_view(widget: Locator) -> None:
    """Mark the Studio's view now on the page, to tell it from the one the kernel redraws."""
    widget.locator(".anvia-root").evaluate(f"(root) => root.setAttribute('{OLD}', '')")


def redrawn(widget: Locator) -> None:
    """Wait for the kernel's redraw: the marked view gone, a new one in its place."""
    expect(widget.locator(f".anvia-root[{OLD}]")).to_have_count(0)
    expect(widget.locator(".anvia-root")).to_have_count(1)


def free(widget: Locator) -> None:
    """Wait until the Studio is free again (its agent picker on): the kernel redraws the output
    once per reply, before it says so; a key typed while a view is being replaced may go to the
    page instead."""
    expect(widget.get_by_role("combobox", name="Agent")).to_be_enabled()


def test_studio_prompt_box_keeps_focus_after_each_reply(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
):
    widget = start(
        page,
        jupyter_server,
        jupyter_app,
        notebook_name,
        'Studio([AgentBuilder("support", QueueModel(["First reply.", "Second reply."])).build()])',
    )
    prompt = widget.get_by_placeholder("Message the agent")
    prompt.click()
    mark_view(widget)
    page.keyboard.type("hello")
    page.keyboard.press("Enter")
    wait_for_text(widget, "First reply.")
    redrawn(widget)
    free(widget)
    expect(prompt).to_be_focused()
    # The person goes on typing, without clicking the box again.
    mark_view(widget)
    page.keyboard.type("and then")
    expect(prompt).to_have_value("and then")
    page.keyboard.press("Enter")
    wait_for_text(widget, "Second reply.")
    redrawn(widget)
    free(widget)
    expect(prompt).to_be_focused()
    expect(prompt).to_have_value("")


def test_studio_agent_picker_and_quick_prompt_with_the_keyboard(
    page: Page, jupyter_server: JupyterServer, jupyter_app: App, notebook_name: str
):
    widget = start(
        page,
        jupyter_server,
        jupyter_app,
        notebook_name,
        'support = AgentBuilder("support", QueueModel(["Order A1 has shipped."])).build()\n'
        'greeter = AgentBuilder("greeter", QueueModel(["Hello and welcome!"])).name("Greeter")'
        ".build()\n"
        'Studio([support, greeter], quick_prompts={"greeter": ["Hello!"]})',
    )
    picker = widget.get_by_role("combobox", name="Agent")
    expect(picker).to_have_value("support")  # the kernel has said which agents there are
    expect(picker).to_be_enabled()
    picker.focus()
    expect(picker).to_be_focused()
    mark_view(widget)
    page.keyboard.press("ArrowDown")  # the next agent: the greeter
    quick = widget.get_by_role("button", name="Hello!")
    expect(quick).to_be_visible()
    redrawn(widget)
    expect(picker).to_have_value("greeter")
    expect(picker).to_be_focused()

    quick.focus()
    mark_view(widget)
    page.keyboard.press("Enter")
    wait_for_text(widget, "Hello and welcome!")
    expect(quick).to_have_count(0)
    redrawn(widget)
    free(widget)
    prompt = widget.get_by_placeholder("Message the agent")
    expect(prompt).to_be_focused()
    page.keyboard.type("thanks")
    expect(prompt).to_have_value("thanks")
