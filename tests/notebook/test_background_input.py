"""A tool that calls ``input()`` in a run started with ``show()`` (real kernels).

``show()`` returns the cell at once; the run goes on in the background, where ``input()`` has
nothing to read from (the kernel's standard input is closed once the cell has finished; while a
headless runner executes another cell, the kernel refuses the request). The tool still fails,
but its error says why and what to do instead, and still names the original error. In blocking
mode (``send_sync()``) in a cell that allows input, ``input()`` keeps working as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_client import KERNELS, Kernel, started_kernel

SETUP = r"""
import json
import threading
from pydantic import BaseModel
from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

class NoArgs(BaseModel):
    pass

gate = threading.Event()

def ask_sync(args, ctx):
    return "got " + input("Your name? ")

async def ask_async(args, ctx):
    return "got " + input("Your name? ")

def ask_later(args, ctx):
    gate.wait(60)  # until the next cell runs
    return "got " + input("Your name? ")

def other_eof(args, ctx):
    raise EOFError("Ran out of input")

TOOLS = [
    create_tool(name=f.__name__, description="Ask.", input=NoArgs, execute=f)
    for f in (ask_sync, ask_async, ask_later, other_eof)
]

def agent(name):
    model = QueueModel([
        ModelResponse(tool_calls=[ToolCall(id="c1", name=name, arguments={})]),
        "Finished asking.",
    ])
    return AgentBuilder("asker", model).tools(TOOLS).build()

def tool_results(response):
    return json.dumps([
        {"content": part.content, "is_error": part.is_error}
        for message in response.messages if message.role == "tool"
        for part in message.tool_results
    ])
"""


@pytest.fixture(params=KERNELS)
def kernel(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    yield from started_kernel(request.param, tmp_path, SETUP)


def printed_json(kernel: Kernel, cell: str) -> Any:
    reply = kernel.reply(cell)
    assert reply["content"]["status"] == "ok", reply["content"].get("traceback")
    return json.loads(kernel.printed(cell, "@@").split("@@", 1)[1])


def wait_for_the_end(kernel: Kernel, cell: str) -> None:
    """Until the run shown by ``cell`` has ended (its cell's output is updated to the end)."""
    kernel.wait(
        lambda m: (
            m["msg_type"] == "update_display_data"
            and m["parent_header"].get("msg_id") == cell
            and "Finished asking." in m["content"]["data"].get("text/html", "")
        )
    )


def assert_explains(result: dict[str, Any], original: str) -> None:
    text = result["content"]
    assert result["is_error"], result
    assert original in text, text  # the original error, its type named
    assert "input()" in text and "show()" in text, text  # what went wrong
    assert "ask_question" in text and "send_sync()" in text, text  # what to do instead


@pytest.mark.parametrize("tool", ["ask_sync", "ask_async"])
def test_input_after_the_cell_has_finished_says_what_to_do(kernel: Kernel, tool: str) -> None:
    cell = kernel.execute(f"h = agent({tool!r}).prompt('ask me').show()")
    assert kernel.reply(cell)["content"]["status"] == "ok"  # the cell returned at once
    wait_for_the_end(kernel, cell)  # the tool ran while no cell was executing
    check = kernel.execute(
        "print('@@', json.dumps([tool_results(h.result()), "
        "[e['result'] for e in h.transcript if e['kind'] == 'tool']]))"
    )
    results, transcript = printed_json(kernel, check)
    (result,) = json.loads(results)
    assert_explains(result, "EOFError: EOF when reading a line")
    assert transcript == [result["content"]]  # the transcript shows the same words


def test_input_while_another_cell_runs_without_input_says_what_to_do(kernel: Kernel) -> None:
    # A headless runner (nbclient) allows no input: the kernel refuses it while a cell runs.
    cell = kernel.execute("h = agent('ask_later').prompt('ask me').show()")
    assert kernel.reply(cell)["content"]["status"] == "ok"
    check = kernel.execute("gate.set()\nr = await h\nprint('@@', tool_results(r))")
    (result,) = printed_json(kernel, check)
    assert_explains(result, "StdinNotImplementedError")


def test_another_end_of_file_error_is_left_as_it_is(kernel: Kernel) -> None:
    cell = kernel.execute("h = agent('other_eof').prompt('ask me').show()")
    assert kernel.reply(cell)["content"]["status"] == "ok"
    wait_for_the_end(kernel, cell)
    check = kernel.execute("print('@@', tool_results(h.result()))")
    (result,) = printed_json(kernel, check)
    assert result == {"content": "ToolCallError: Ran out of input", "is_error": True}


@pytest.mark.parametrize("tool", ["ask_sync", "ask_async"])
def test_input_in_blocking_mode_still_reads_from_the_cell(kernel: Kernel, tool: str) -> None:
    cell = str(
        kernel.kc.execute(
            f"r = agent({tool!r}).prompt('ask me').send_sync()\nprint('@@', tool_results(r))",
            allow_stdin=True,
        )
    )
    request = kernel.kc.get_stdin_msg(timeout=30)
    assert request["msg_type"] == "input_request"
    assert request["content"]["prompt"] == "Your name? "
    assert request["parent_header"]["msg_id"] == cell
    kernel.kc.input("Ada")
    (result,) = printed_json(kernel, cell)
    assert result == {"content": "got Ada", "is_error": False}
