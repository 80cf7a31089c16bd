"""System blocks given to AnthropicModel (``system=[...]``, for prompt caching) are sent with
the agent's instructions: the instructions replaced them, and their ``cache_control`` with them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.models.anthropic import AnthropicModel

from provider_replay import Recorded, Server, ask, events_of

#: The HTTP library the installed SDK is built on (httpx2 for the 2.x SDK, httpx before).
http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
DOCUMENT = {"type": "text", "text": "A long document.", "cache_control": {"type": "ephemeral"}}


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


async def test_system_blocks_are_sent_then_the_instructions(
    serve: Callable[..., Server],
) -> None:
    server = serve(recorded.sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", system=[DOCUMENT])
    agent = AgentBuilder("reader", model).instructions("Be brief.").build()

    await agent.prompt("Hi").send()

    assert server.body()["system"] == [DOCUMENT, {"type": "text", "text": "Be brief."}]


@pytest.mark.parametrize(
    ("system", "instructions", "sent"),
    [
        ("You are terse.", "Be brief.", "You are terse.\n\nBe brief."),
        ([DOCUMENT], None, [DOCUMENT]),
        ("You are terse.", None, "You are terse."),
        (None, "Be brief.", "Be brief."),
    ],
)
async def test_a_system_option_and_instructions(
    serve: Callable[..., Server], system: Any, instructions: Any, sent: Any
) -> None:
    server = serve(recorded.sse("anthropic_text.sse"))
    options = {} if system is None else {"system": system}
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", **options)

    await events_of(model, ask(instructions=instructions))

    assert server.body()["system"] == sent
