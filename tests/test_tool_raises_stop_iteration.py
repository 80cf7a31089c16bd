"""A tool that raises ``StopIteration`` (a ``next()`` that found nothing left) has failed.

A sync tool's ``StopIteration`` never reached the run (asyncio refuses to put one in a future),
so the run waited for ever; an async tool's came as "coroutine raised StopIteration", without
its message. The model is now told the tool's error, and ``on_tool_error`` gets it.
"""

from __future__ import annotations

import asyncio

import pytest

from anvia_notebook import AgentBuilder, create_hook, tool
from anvia_notebook.models import QueueModel

from helpers import call

pytestmark = pytest.mark.timeout(60)

ORDERS = [{"id": "A1", "status": "shipped"}]


@tool
def find_order(order_id: str) -> str:
    """Look up an order's status."""
    return next(o for o in ORDERS if o["id"] == order_id)["status"]


@tool
async def find_order_async(order_id: str) -> str:
    """Look up an order's status."""
    return next(o for o in ORDERS if o["id"] == order_id)["status"]


@tool
def said_why(order_id: str) -> str:
    """Look up an order's status."""
    raise StopIteration(f"no order {order_id}")


@tool
async def said_why_async(order_id: str) -> str:
    """Look up an order's status."""
    raise StopIteration(f"no order {order_id}")


@pytest.mark.parametrize(
    ("lookup", "told"),
    [
        (find_order, "ToolCallError: StopIteration"),
        (find_order_async, "ToolCallError: StopIteration"),
        (said_why, "ToolCallError: no order ZZ"),
        (said_why_async, "ToolCallError: no order ZZ"),
    ],
)
async def test_a_tool_that_raises_stop_iteration_fails_and_the_run_goes_on(lookup, told):
    errors = []
    model = QueueModel([call(lookup.name, {"order_id": "ZZ"}), "No such order."])
    hook = create_hook(on_tool_error=lambda event: errors.append(event.error))
    agent = AgentBuilder("a", model).tool(lookup).hook(hook).build()
    response = await asyncio.wait_for(agent.prompt("status of ZZ?").store(None).send(), 30)
    assert response.output == "No such order."
    [result] = [r for m in response.messages if m.role == "tool" for r in m.tool_results]
    assert (result.content, result.is_error) == (told, True)
    [error] = errors
    assert type(error) is StopIteration
