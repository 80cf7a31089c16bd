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
