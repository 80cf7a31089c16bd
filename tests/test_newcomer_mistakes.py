"""Mistakes a new user makes in their first cells, each said where it is made, in words that
say what to do (not an AttributeError at the first model call)."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from anvia_notebook import AgentBuilder, ToolContext, tool
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel


def test_a_queue_model_given_one_response_instead_of_a_list_says_so():
    for given in (ModelResponse(text="hi"), "hi", 3):
        with pytest.raises(TypeError, match=r"QueueModel takes a list of responses"):
            QueueModel(given)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"response 1 is a int; each is a text or a ModelResponse"):
        QueueModel(["hi", 3])  # type: ignore[list-item]


def test_a_function_model_given_no_function_says_so():
    with pytest.raises(TypeError, match="FunctionModel takes a function of the request"):
        FunctionModel("x")  # type: ignore[arg-type]


def test_a_tool_without_type_hints_or_docstring_is_warned_about_where_it_is_made():
    with pytest.warns(UserWarning, match="@tool: add") as caught:

        @tool
        def add(x, y):
            return x + y

    told = [str(w.message) for w in caught]
    assert told == [
        "@tool: add's parameters x, y have no type hint, so the model may send any JSON for "
        "them and nothing is checked or converted. Annotate them (x: int), or x: Any to take "
        "anything.",
        "@tool: add has no docstring, so the model reads no description of what it does. Add a "
        "docstring, or @tool(description=...).",
    ]
    assert {w.filename for w in caught} == {__file__}
    with pytest.warns(UserWarning, match=r"parameter ctx has .*ctx: ToolContext is the run's"):

        @tool(description="Halve a number.")
        def halve(x: int, ctx) -> float:
            return x / 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def double(x: int, ctx: ToolContext) -> int:
            """Double a number."""
            return 2 * x


def test_a_studio_of_one_agent_needs_no_list():
    from anvia_notebook.notebook import Studio

    agent = AgentBuilder("helper", QueueModel(["hi"])).build()
    assert list(Studio(agent).agents) == ["helper"]
    with pytest.raises(TypeError, match=r"Studio takes a list of built agents"):
        Studio(3)  # type: ignore[arg-type]


def test_cached_tokens_are_none_when_no_provider_reported_them():
    response = AgentBuilder("a", QueueModel(["hi"])).build().prompt("hello").send_sync()
    assert response.trace.summary()["cached_tokens"] is None


async def test_the_result_of_a_run_still_going_says_to_wait_for_it():
    release = asyncio.Event()

    async def slow(request):
        await release.wait()
        return ModelResponse(text="done")

    run = AgentBuilder("a", FunctionModel(slow)).build().prompt("hello").start()
    with pytest.raises(asyncio.InvalidStateError, match=r"await run.wait\(\)"):
        run.result()
    release.set()
    assert (await run.wait()).output == "done"


def test_a_tool_name_the_providers_refuse_is_warned_about_where_it_is_made():
    from pydantic import BaseModel as Input

    from anvia_notebook import create_tool

    class Args(Input):
        x: int

    with pytest.warns(UserWarning, match=r"Tool name 'my tool!'.* e.g. 'my_tool'") as caught:
        create_tool(name="my tool!", description="d", input=Args, execute=lambda a, c: a.x)
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning, match=r"Tool name 'get.weather'.* e.g. 'get_weather'"):

        @tool(name="get.weather")
        def weather(city: str) -> str:
            """The weather in a city."""
            return city

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        create_tool(name="get_weather-2", description="d", input=Args, execute=lambda a, c: 1)


def test_a_timeout_given_to_send_sync_outside_a_notebook_is_said_to_do_nothing():
    """Before, ``send_sync(timeout=30)`` in a script was taken and ignored: an approval waited
    for ever."""
    agent = AgentBuilder("a", QueueModel(["done"])).build()
    with pytest.warns(UserWarning, match=r"outside a notebook it does nothing.*StoreHumanInput"):
        response = agent.prompt("hi").store(None).send_sync(timeout=30)
    assert response.output == "done"
