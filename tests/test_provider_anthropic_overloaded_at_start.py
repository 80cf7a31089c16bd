"""An Anthropic stream that answers 200, sends ``message_start`` and then an ``error`` event
(``overloaded_error``, common when the API is busy) before any of the answer: the request is
tried again, as a 529 status would be. Once the answer has begun, it is not (as in Anvia)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Usage
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import ModelError

from provider_replay import Recorded, Server, anthropic_start

http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
START = anthropic_start(25)
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


def stream(*events: dict[str, Any]) -> Any:
    return recorded.events(*events)


def request_of(model: AnthropicModel) -> Any:
    agent = AgentBuilder("a", model).build()
    # (no wait between the attempts: the test stays quick and deterministic)
    return agent.prompt("Hi").store(None).with_completion_retries(initial_delay=0, max_delay=0)


async def test_overloaded_right_after_message_start_is_tried_again(
    serve: Callable[..., Server],
) -> None:
    server = serve(stream(START, {"type": "ping"}, OVERLOADED), recorded.sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    request = request_of(model)

    response = await request.send()

    assert len(server.requests) == 2
    assert response.output == "Hello! How can I help you today?"
    # (the usage of the answer given; the failed attempt reported none of its own)
    assert response.usage == Usage(input_tokens=25, output_tokens=12)
    assert request.trace.turns[0].attempts == 2


async def test_overloaded_once_the_answer_began_is_not_tried_again(
    serve: Callable[..., Server],
) -> None:
    server = serve(recorded.sse("anthropic_overloaded_midstream.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    with pytest.raises(ModelError, match="Overloaded") as caught:
        await request_of(model).send()

    assert len(server.requests) == 1  # ("Let me" had been streamed)
    assert caught.value.status_code == 529 and caught.value.retryable is True
