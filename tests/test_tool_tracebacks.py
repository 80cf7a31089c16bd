"""A tool that raises: the model is told only ``ToolCallError: <message>``, while the run's trace
keeps the exception's type and traceback (stored with the run), the Inspect view gets it, and it
is logged."""

from __future__ import annotations

import logging

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, create_tool
from anvia_notebook.models import QueueModel
from anvia_notebook.notebook._inspect import inspect_turn
from anvia_notebook.notebook._protocol import InspectToolCallView
from anvia_notebook.trace import TRACEBACK_LIMIT

from helpers import calls


class OrderInput(BaseModel):
    order_id: str


def _connect() -> None:
    raise ConnectionError("orders database is down")


def lookup(args: OrderInput, ctx: object) -> str:
    try:
        _connect()
    except ConnectionError as error:
        raise RuntimeError(f"could not look up {args.order_id}") from error
    return "never"


def agent(model: QueueModel, execute=lookup):
    tool = create_tool(
        name="lookup_order", description="Look up an order.", input=OrderInput, execute=execute
    )
    return AgentBuilder("shop", model).tools([tool]).build()


def failing_run():
    model = QueueModel([calls(("lookup_order", {"order_id": "A1"}, "c1")), "Sorry."])
    return agent(model).prompt("where is A1?").send_sync(), model


def test_the_model_sees_the_message_and_the_trace_keeps_the_traceback(store_path, caplog):
    caplog.set_level(logging.DEBUG, logger="anvia_notebook")
    response, model = failing_run()
    [result] = [m for m in model.requests[1].messages if m.role == "tool"][0].tool_results
    assert result.content == "ToolCallError: could not look up A1"  # no traceback for the model
    [call] = response.trace.tool_calls
    assert call.status == "error" and call.result == "ToolCallError: could not look up A1"
    assert call.traceback is not None
    assert call.traceback.startswith("Traceback (most recent call last):")
    assert "ConnectionError: orders database is down" in call.traceback  # the cause too
    assert 'in _connect\n    raise ConnectionError("orders database is down")' in call.traceback
    assert call.traceback.rstrip().endswith("RuntimeError: could not look up A1")
    # Stored with the run: a later process reads it from the store.
    [stored] = RunStore(store_path).trace(response.run_id).tool_calls
    assert stored.traceback == call.traceback
    # Logged: one warning line naming the type, then the traceback at debug level.
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "'lookup_order'" in warning.getMessage() and "RuntimeError" in warning.getMessage()
    [debug] = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert isinstance(debug.exc_info[1], RuntimeError)


def test_the_inspect_view_gets_the_traceback(store_path):
    response, _ = failing_run()
    _, turn = inspect_turn(response.trace, 0)
    [view] = turn["tool_calls"]
    InspectToolCallView.model_validate(view)  # the wire shape the page reads
    assert view["result"] == "ToolCallError: could not look up A1"
    assert view["traceback"] == response.trace.tool_calls[0].traceback


def test_a_call_that_could_not_run_has_no_traceback(store_path, caplog):
    """An unknown tool or bad arguments is the model's mistake, told in the result: no
    traceback, nothing logged."""
    model = QueueModel(
        [
            calls(("nope", {}, "c1"), ("lookup_order", {"order": 1}, "c2")),
            "Sorry.",
        ]
    )
    response = agent(model).prompt("where is A1?").send_sync()
    assert [c.traceback for c in response.trace.tool_calls] == [None, None]
    assert [c.status for c in response.trace.tool_calls] == ["error", "error"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_huge_traceback_is_cut_and_keeps_its_end(store_path):
    def deep(args: OrderInput, ctx: object) -> str:
        raise ValueError("x" * (3 * TRACEBACK_LIMIT) + " the end")

    model = QueueModel([calls(("lookup_order", {"order_id": "A1"}, "c1")), "Sorry."])
    response = agent(model, deep).prompt("where is A1?").send_sync()
    text = response.trace.tool_calls[0].traceback
    assert text is not None and len(text) < TRACEBACK_LIMIT + 100
    assert text.startswith("Traceback") and text.rstrip().endswith("the end")
    assert "characters left out" in text
