"""A tutorial whose widget waits for someone to approve a tool call says, where it first waits,
how it runs unattended (``ANVIA_NOTEBOOK_AUTO=approve``), as tutorial 02 does."""

from __future__ import annotations

import json
import pathlib

import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.parametrize(
    "name",
    ["02_tool_approval", "03_hook_approval", "08_restart_and_resume", "11_sub_agents"],
)
def test_the_text_before_the_first_shown_run_says_how_to_run_it_unattended(name):
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = ["".join(cell["source"]) for cell in cells]
    first_show = next(
        i
        for i, (cell, source) in enumerate(zip(cells, sources, strict=True))
        if cell["cell_type"] == "code" and ".show(" in source
    )
    before = next(
        sources[i] for i in range(first_show - 1, -1, -1) if cells[i]["cell_type"] == "markdown"
    )
    assert "runs unattended" in before and "`ANVIA_NOTEBOOK_AUTO=approve`" in before
