"""The repair of a typed output in a real JupyterLab, clicked through in Chromium: the model's
invalid value opens the approval's edit form with pydantic's errors; a fix that is itself
invalid is refused with the errors and the form stays; a valid fix ends the run with it, shown
as a table in the cell."""

from __future__ import annotations

import json

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
from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


bad = {"result": [{"name": "Paris", "population": "many"}]}
model = QueueModel(
    [ModelResponse(tool_calls=[ToolCall(id="out_1", name="final_result", arguments=bad)])]
)
agent = AgentBuilder("typed", model).output_type(list[City], retries=0).build()
"""


def test_repair_an_invalid_output_in_the_cell(
    page: Page, jupyter_server: JupyterServer, notebook_name: str
):
    write_notebook(
        jupyter_server.root_dir,
        notebook_name,
        [
            SETUP,
            'handle = agent.prompt("Cities?").show()',
            "print('DATA', (await handle).data, 'REQUESTS', len(model.requests))",
        ],
    )
    open_notebook(page, jupyter_server, notebook_name)
    run_cell(page, 0)
    run_cell(page, 1)
    widget = cell_output(page, 1)
    expect(widget.get_by_text("Approval required for")).to_be_visible()
    expect(
        widget.get_by_text("result.0.population: Input should be a valid integer")
    ).to_be_visible()
    editor = widget.locator(".anvia-approval-editor")
    expect(editor).to_be_visible()  # opened on the model's value, no "Edit arguments" click
    assert json.loads(editor.input_value()) == {"result": [{"name": "Paris", "population": "many"}]}
    expect(widget.get_by_text("Always allow")).to_be_hidden()

    editor.fill(json.dumps({"result": [{"name": "Paris", "population": 0}]}))
    widget.get_by_role("button", name="Approve").click()
    # (the words of the JSON Schema check, the same in every process)
    expect(
        widget.get_by_text("result.0.population: 0 is less than or equal to the minimum of 0")
    ).to_be_visible()
    expect(editor).to_be_visible()  # the form stays

    editor.fill(json.dumps({"result": [{"name": "Paris", "population": 2100000}]}))
    widget.get_by_role("button", name="Approve").click()
    wait_for_text(widget, "Result (1 row)")
    expect(widget.locator("table td").first).to_have_text("Paris")
    run_cell(page, 2)
    wait_for_text(cell_output(page, 2), "DATA [City(name='Paris', population=2100000)] REQUESTS 1")
