"""``handle = agent.prompt(...).show(); handle.output``: reading a response's field on the
handle says how to get the response (before: a bare ``AttributeError``), and nothing else
about attribute lookups changes."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder
from anvia_notebook.models import QueueModel
from anvia_notebook.notebook import _runner as runner


def shown():
    """``agent.prompt("Hi").show()``, as a kernel runs it."""
    return runner.show(AgentBuilder("a", QueueModel(["Hello."])).build().prompt("Hi"))


@pytest.mark.parametrize("name", ["output", "data", "messages", "usage"])
async def test_a_response_field_on_the_handle_says_how_to_get_the_response(name):
    handle = shown()
    with pytest.raises(AttributeError, match="await handle") as caught:
        getattr(handle, name)
    message = str(caught.value)
    assert f"A RunHandle has no `{name}`" in message
    assert "handle.result()" in message and f"response.{name}" in message
    assert caught.value.name == name
    assert not hasattr(handle, name)
    # what the message says works
    response = await handle
    assert handle.done and getattr(handle.result(), name) == getattr(response, name)
    assert handle.result().output == "Hello."


async def test_other_missing_attributes_are_the_usual_error():
    handle = shown()
    with pytest.raises(AttributeError, match=r"^'RunHandle' object has no attribute 'outptu'$"):
        handle.outptu  # noqa: B018
    assert getattr(handle, "_repr_html_", None) is None  # IPython's look-ups
    assert not hasattr(handle, "_ipython_canary_method_should_not_exist_")
    assert getattr(handle, "__setstate__", None) is None  # pickle's and copy's
    await handle
