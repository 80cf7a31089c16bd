"""An Anthropic-style ``tool_choice`` given to OpenAIModel (as an option, or as the agent's) is
sent as OpenAI's: it went as it was, and OpenAI refused the request (400)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import _base_client as openai_base_client

from anvia_notebook.models.openai import OpenAIModel

from provider_replay import TIME, WEATHER, Recorded, Server, ask, events_of

#: The HTTP library the installed SDK is built on (httpx2 for the 3.x SDK, httpx before).
http: Any = getattr(openai_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
FUNCTION = {"type": "function", "function": {"name": "get_time"}}


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, openai, "AsyncOpenAI")


@pytest.mark.parametrize(
    ("tool_choice", "sent"),
    [
        ({"type": "tool", "name": "get_time"}, FUNCTION),
        ({"type": "any"}, "required"),
        ({"type": "auto"}, "auto"),
        ({"type": "none"}, "none"),
        (FUNCTION, FUNCTION),
    ],
)
async def test_an_anthropic_style_tool_choice_is_sent_as_openais(
    serve: Callable[..., Server], tool_choice: Any, sent: Any
) -> None:
    server = serve(recorded.sse("openai_text.sse"), recorded.sse("openai_text.sse"))

    as_option = OpenAIModel("gpt-4o", api_key="sk-test", tool_choice=tool_choice)
    await events_of(as_option, ask(tools=[WEATHER, TIME]))
    as_request = OpenAIModel("gpt-4o", api_key="sk-test")
    await events_of(as_request, ask(tools=[WEATHER, TIME], tool_choice=tool_choice))

    assert server.body(0)["tool_choice"] == sent
    assert server.body(1)["tool_choice"] == sent


def test_an_anthropic_style_tool_choice_without_a_name_is_refused_where_the_model_is_made() -> None:
    with pytest.raises(ValueError, match="needs the name of the tool"):
        OpenAIModel("gpt-4o", api_key="sk-test", tool_choice={"type": "tool"})


@pytest.mark.parametrize("choice_type", ["any", "auto", "tool"])
async def test_an_anthropic_style_choice_without_parallel_calls_sends_parallel_tool_calls_false(
    serve: Callable[..., Server], choice_type: str
) -> None:
    """Its ``disable_parallel_tool_use`` was dropped: the model could call several tools at
    once, as the choice said it must not. Sent only with tools, as any tool option."""
    server = serve(*[recorded.sse("openai_text.sse") for _ in range(4)])
    choice = {"type": choice_type, "name": "get_time", "disable_parallel_tool_use": True}
    if choice_type != "tool":
        del choice["name"]

    as_option = OpenAIModel("gpt-4o", api_key="sk-test", tool_choice=choice)
    await events_of(as_option, ask(tools=[WEATHER, TIME]))
    await events_of(as_option, ask())  # (an agent without tools: neither is sent)
    as_request = OpenAIModel("gpt-4o", api_key="sk-test")
    await events_of(as_request, ask(tools=[WEATHER, TIME], tool_choice=choice))
    explicit = OpenAIModel(
        "gpt-4o", api_key="sk-test", tool_choice=choice, parallel_tool_calls=True
    )
    await events_of(explicit, ask(tools=[WEATHER, TIME]))  # (the option given wins)

    sent = {"any": "required", "auto": "auto", "tool": FUNCTION}[choice_type]
    for index in (0, 2):
        body = server.body(index)
        assert (body["tool_choice"], body["parallel_tool_calls"]) == (sent, False)
    assert "tool_choice" not in server.body(1) and "parallel_tool_calls" not in server.body(1)
    assert server.body(3)["parallel_tool_calls"] is True


async def test_a_choice_that_allows_parallel_calls_sends_no_parallel_tool_calls(
    serve: Callable[..., Server],
) -> None:
    server = serve(recorded.sse("openai_text.sse"))
    choice = {"type": "any", "disable_parallel_tool_use": False}
    await events_of(OpenAIModel("gpt-4o", api_key="k", tool_choice=choice), ask(tools=[TIME]))
    assert server.body(0)["tool_choice"] == "required"
    assert "parallel_tool_calls" not in server.body(0)
