"""A ``tool_choice`` given to AnthropicModel as an option is sent as Anthropic's, as the request's
own is: an OpenAI-style one (``"required"``, a tool's name, ``{"type": "function", ...}``) went
as it was, and the API refused the request (400), while OpenAIModel takes an Anthropic-style
option."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook.models.anthropic import AnthropicModel

from provider_replay import TIME, WEATHER, Recorded, Server, ask, events_of

#: The HTTP library the installed SDK is built on (httpx2 for the 2.x SDK, httpx before).
http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx
recorded = Recorded(http)


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


@pytest.mark.parametrize(
    ("tool_choice", "sent"),
    [
        ("required", {"type": "any"}),
        ("any", {"type": "any"}),
        ("auto", {"type": "auto"}),
        ("get_time", {"type": "tool", "name": "get_time"}),
        (
            {"type": "function", "function": {"name": "get_time"}},
            {"type": "tool", "name": "get_time"},
        ),
        ({"type": "tool", "name": "get_time"}, {"type": "tool", "name": "get_time"}),
    ],
)
async def test_a_tool_choice_option_is_sent_as_anthropics(
    serve: Callable[..., Server], tool_choice: Any, sent: Any
) -> None:
    server = serve(recorded.sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tool_choice=tool_choice)

    await events_of(model, ask(tools=[WEATHER, TIME]))

    assert server.body(0)["tool_choice"] == sent


def test_an_openai_style_tool_choice_without_a_name_is_refused_where_the_model_is_made() -> None:
    with pytest.raises(ValueError, match="needs the name of the tool"):
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tool_choice={"type": "function"})


@pytest.mark.parametrize(
    ("tool_choice", "sent"),
    [
        (None, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", {"type": "any", "disable_parallel_tool_use": True}),
        ("get_time", {"type": "tool", "name": "get_time", "disable_parallel_tool_use": True}),
        ("none", {"type": "none"}),  # (no tool is called: the API takes nothing more)
        (  # (one that says it itself is left as it is)
            {"type": "auto", "disable_parallel_tool_use": False},
            {"type": "auto", "disable_parallel_tool_use": False},
        ),
    ],
)
async def test_openai_s_parallel_tool_calls_false_is_sent_in_the_tool_choice(
    serve: Callable[..., Server], tool_choice: Any, sent: Any
) -> None:
    """``parallel_tool_calls=False`` (as an OpenAI model takes it) was refused where the model
    was made ("AnthropicModel has no option"): it is the tool choice's
    ``disable_parallel_tool_use``, sent only with tools, as the tool choice is."""
    server = serve(*[recorded.sse("anthropic_text.sse") for _ in range(3)])
    chosen = {} if tool_choice is None else {"tool_choice": tool_choice}
    model = AnthropicModel(
        "claude-sonnet-4-6", api_key="sk-ant-test", parallel_tool_calls=False, **chosen
    )

    await events_of(model, ask(tools=[WEATHER, TIME]))
    await events_of(model, ask())  # (an agent without tools: nothing of it is sent)
    await events_of(model, ask(tools=[WEATHER, TIME], tool_choice={"type": "tool", "name": "x"}))

    assert server.body(0)["tool_choice"] == sent
    assert "tool_choice" not in server.body(1)
    assert server.body(2)["tool_choice"] == {
        "type": "tool",
        "name": "x",
        "disable_parallel_tool_use": True,
    }
    assert all("parallel_tool_calls" not in server.body(index) for index in range(3))


async def test_parallel_tool_calls_true_sends_nothing_more(serve: Callable[..., Server]) -> None:
    server = serve(recorded.sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", parallel_tool_calls=True)
    await events_of(model, ask(tools=[WEATHER, TIME]))
    assert "tool_choice" not in server.body(0) and "parallel_tool_calls" not in server.body(0)


def test_parallel_tool_calls_that_is_not_a_boolean_is_refused_where_the_model_is_made() -> None:
    with pytest.raises(TypeError, match="parallel_tool_calls must be True or False"):
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", parallel_tool_calls="no")
