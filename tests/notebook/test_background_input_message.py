"""The words a tool's failed ``input()`` gets in a run ``show()`` or the Studio started (no
kernel).

Only the run ``show()`` started explains the failure (its task's context); the cell's context,
other runs and other errors are left as they are. The real kernels are in
test_background_input.py.
"""

from __future__ import annotations

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner as runner
from anvia_notebook.notebook._background_input import (
    INPUT_ADVICE,
    STUDIO_INPUT_ADVICE,
    explain_tool_error,
)
from anvia_notebook.tools import EXPLAIN_TOOL_ERROR


class NoArgs(BaseModel):
    pass


def no_input(args: NoArgs) -> str:
    raise EOFError("EOF when reading a line")  # what input() raises with nothing to read


def asking_agent(execute=no_input):
    tool = create_tool(name="ask", description="Ask.", input=NoArgs, execute=execute)
    model = QueueModel(
        [ModelResponse(tool_calls=[ToolCall(id="c1", name="ask", arguments={})]), "Done."]
    )
    return AgentBuilder("asker", model).tools([tool]).build()


def tool_results(response):
    return [part.content for m in response.messages for part in m.tool_results]


def test_input_failures_keep_their_type_and_name_it():
    explained = explain_tool_error(EOFError("EOF when reading a line"))
    assert type(explained) is EOFError
    assert str(explained) == f"EOFError: EOF when reading a line. {INPUT_ADVICE}"

    from IPython.core.error import StdinNotImplementedError

    refusal = StdinNotImplementedError(
        "raw_input was called, but this frontend does not support input requests."
    )
    explained = explain_tool_error(refusal)
    assert type(explained) is StdinNotImplementedError
    assert str(explained) == (
        "StdinNotImplementedError: raw_input was called, but this frontend does not support "
        f"input requests. {INPUT_ADVICE}"
    )


def test_other_errors_are_left_alone():
    class OwnEOF(EOFError):
        pass

    for error in (
        EOFError("Ran out of input"),  # (pickle)
        EOFError(),
        OwnEOF("EOF when reading a line"),
        ValueError("EOF when reading a line"),
        NotImplementedError("raw_input was called"),
    ):
        assert explain_tool_error(error) is None, error


def test_the_advice_names_the_blocking_mode_and_the_question_tool():
    assert "show()" in INPUT_ADVICE and "send_sync()" in INPUT_ADVICE
    assert "ask_question" in INPUT_ADVICE


async def test_only_the_shown_run_explains_and_the_cell_keeps_nothing():
    handle = runner.show(asking_agent().prompt("ask me"))
    assert EXPLAIN_TOOL_ERROR.get() is None  # nothing left in the cell's context
    response = await handle.wait()
    assert tool_results(response) == [
        f"ToolCallError: EOFError: EOF when reading a line. {INPUT_ADVICE}"
    ]
    # The same failure in a run started otherwise is the tool's own error.
    response = await asking_agent().prompt("ask me").send()
    assert tool_results(response) == ["ToolCallError: EOF when reading a line"]


async def test_a_failing_explanation_keeps_the_tools_own_error():
    def broken(error: Exception) -> Exception | None:
        raise RuntimeError("bug")

    token = EXPLAIN_TOOL_ERROR.set(broken)
    try:
        response = await asking_agent().prompt("ask me").send()
    finally:
        EXPLAIN_TOOL_ERROR.reset(token)
    assert tool_results(response) == ["ToolCallError: EOF when reading a line"]


async def test_a_studio_run_explains_with_the_studios_advice():
    """A Studio run goes on in the background as a shown one does: its tool's input() failed
    with the bare "EOF when reading a line"."""
    from anvia_notebook.notebook import Studio

    studio = Studio([asking_agent()])
    run = studio.send("ask me")
    assert EXPLAIN_TOOL_ERROR.get() is None  # nothing left in the cell's context
    response = await run.wait()
    assert tool_results(response) == [
        f"ToolCallError: EOFError: EOF when reading a line. {STUDIO_INPUT_ADVICE}"
    ]
    assert "show()" not in STUDIO_INPUT_ADVICE and "ask_question" in STUDIO_INPUT_ADVICE
