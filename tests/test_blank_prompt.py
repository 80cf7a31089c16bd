"""A blank prompt is refused before anything is sent, whatever the provider: Anthropic's model
sent no message at all (``messages: []``, which the API refuses), or, after a history, ended
the request on the model's own answer, which it then continued; OpenAI's sent it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import _base_client as anthropic_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Message
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import CompletionRequest, ModelError
from anvia_notebook.models.openai import OpenAIModel

from provider_replay import Recorded, Server, events_of

#: The HTTP library the installed SDK is built on (httpx2 for the 2.x SDK, httpx before).
http: Any = getattr(anthropic_base_client, "httpx2", None) or httpx
recorded = Recorded(http)
HISTORY = [Message.user("What is 2 + 2?"), Message.assistant("4.")]


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    return recorded.serving(monkeypatch, anthropic, "AsyncAnthropic")


def models() -> list[Any]:
    return [
        AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test"),
        OpenAIModel("gpt-4o", api_key="sk-test"),
    ]


@pytest.mark.parametrize("model", models(), ids=["anthropic", "openai"])
@pytest.mark.parametrize(
    "prompt",
    ["   ", "", "\u200b\n", Message.user(" "), [*HISTORY, Message.user("\t")]],
    ids=["spaces", "empty", "invisible", "message", "after-history"],
)
def test_a_blank_prompt_is_refused_before_sending(model: Any, prompt: Any) -> None:
    agent = AgentBuilder("helper", model).instructions("Be brief.").build()

    with pytest.raises(ValueError, match="needs some text; this prompt is blank"):
        agent.prompt(prompt)


def test_a_prompt_with_text_after_a_blank_message_is_taken() -> None:
    agent = AgentBuilder("helper", OpenAIModel("gpt-4o", api_key="sk-test")).build()

    request = agent.prompt([Message.user(" "), *HISTORY, Message.user("And 3 + 3?")])

    assert request.prompt_message.content == "And 3 + 3?"


async def test_the_anthropic_model_does_not_send_a_request_ending_on_a_blank_user_message(
    serve: Callable[..., Server],
) -> None:
    server = serve(recorded.sse("anthropic_text.sse"))
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")

    for messages in ([Message.user("  ")], [*HISTORY, Message.user("")], []):
        with pytest.raises(ModelError, match="needs a prompt with some text") as raised:
            await events_of(model, CompletionRequest(messages=messages))
        assert not raised.value.retryable

    assert server.requests == []
