"""Safety paths outside the notebook, checked by what happens (not by wording)."""

from __future__ import annotations

import io

import pytest

from anvia_notebook import AgentBuilder, ConsoleHumanInput, ToolApproval
from anvia_notebook.models import QueueModel

from helpers import call, make_add_tool, tool_results


def scripted_input(lines: list[str]):
    """An ``input`` that answers with ``lines`` in turn (and records the prompts it got)."""
    answers = iter(lines)
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    read.prompts = prompts  # type: ignore[attr-defined]
    return read


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_an_empty_line_at_the_console_approval_prompt_is_not_a_yes(blank: str):
    add = make_add_tool(approval=ToolApproval(reason="Check the sum"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    # An empty line, then "n" and an empty (optional) reason.
    read = scripted_input([blank, "n", ""])
    human = ConsoleHumanInput(input_fn=read, output=io.StringIO())
    AgentBuilder("a", model).tool(add).human_input(human).build().prompt("go").send_sync()
    assert add.calls == []
    result = tool_results(model.requests[1])[0]
    assert result.content != "3"
    # The empty line was asked again rather than taken as a decision.
    assert len(read.prompts) == 3  # type: ignore[attr-defined]
    assert read.prompts[0] == read.prompts[1]  # type: ignore[attr-defined]
