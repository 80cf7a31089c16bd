"""A thinking block's signature, as the SDK's own accumulator keeps it: a ``signature_delta``
replaces what the block's start gave, it is not appended to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook.messages import Message, ToolResultPart
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import CompletionRequest

from provider_replay import FIXTURES, TIME, WEATHER, Recorded, Server

http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
SIGNED = (
    "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds7f2e4kxmhbh0zLcLBy4HHFEC2vB"
    "TXQRZqMGOM3pTCIlBHG8sEl2GQNoOvQzKQ=="
)


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


async def test_a_signature_delta_replaces_the_one_the_block_started_with(
    serve: Callable[..., Server],
) -> None:
    """A gateway that gives a signature in ``content_block_start`` and the whole one again in
    ``signature_delta``: the block went back with both joined, which the API refuses."""
    text = (FIXTURES / "anthropic_thinking_parallel_tools.sse").read_text()
    started = text.replace('"thinking":"","signature":""', '"thinking":"","signature":"partial"')
    assert started != text
    server = serve(
        http.Response(200, headers={"content-type": "text/event-stream"}, content=started.encode()),
        recorded.sse("anthropic_text.sse"),
    )
    model = AnthropicModel(
        "claude-sonnet-4-6", api_key="sk-ant-test", thinking={"type": "adaptive"}
    )
    question = Message.user("Weather and time in Paris?")

    first = await model.complete(CompletionRequest(messages=[question], tools=[WEATHER, TIME]))
    results = Message.tool(
        [
            ToolResultPart(tool_call_id=call.id, tool_name=call.name, content="ok")
            for call in first.tool_calls
        ]
    )
    await model.complete(
        CompletionRequest(messages=[question, first.to_message(), results], tools=[WEATHER, TIME])
    )

    assert server.body(1)["messages"][1]["content"][0]["signature"] == SIGNED
