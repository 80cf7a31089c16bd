"""A sync ``execute`` that is a generator function: its body runs when it is iterated, which
was on the event loop's thread while its result was written as JSON (the docs: a plain
``execute`` runs on a worker thread), and an exception it raised there was swallowed: the
model was told ``<generator object ...>`` as a success."""

from __future__ import annotations

import threading

from anvia_notebook import AgentBuilder, create_tool, tool
from anvia_notebook.models import QueueModel

from helpers import AddInput, call, tool_results


def _result(execute) -> tuple[str, bool]:
    probe = create_tool(name="probe", description="Probe.", input=AddInput, execute=execute)
    model = QueueModel([call("probe", {"x": 1, "y": 2}), "done"])
    AgentBuilder("a", model).tool(probe).build().prompt("go").send_sync()
    [result] = tool_results(model.requests[1])
    return result.content, result.is_error


def test_a_generator_tool_runs_on_a_worker_thread_and_its_items_are_the_result():
    def threads(args: AddInput, ctx: object):
        for _ in range(args.x + args.y):
            yield threading.current_thread() is threading.main_thread()

    assert _result(threads) == ("[false,false,false]", False)


def test_a_decorated_generator_function_runs_on_a_worker_thread():
    @tool
    def numbers(count: int):
        """Count."""
        for n in range(count):
            yield [n, threading.current_thread() is threading.main_thread()]

    model = QueueModel([call("numbers", {"count": 2}), "done"])
    AgentBuilder("a", model).tool(numbers).build().prompt("go").send_sync()
    assert tool_results(model.requests[1])[0].content == "[[0,false],[1,false]]"


def test_an_exception_a_generator_tool_raises_midway_is_a_failed_call():
    def reads(args: AddInput, ctx: object):
        yield "first page"
        raise ValueError("the disk is full")

    assert _result(reads) == ("ToolCallError: the disk is full", True)
