"""A tool call's ``extra_content`` goes back with the call (Gemini's OpenAI-compatible API sends
a Gemini 3 call's thought signature there, and refuses the next request of the run when the
call comes back without it: "Function call is missing a thought_signature"). Through the SDK's
real HTTP path with a mock transport; never the network."""

from __future__ import annotations

import httpx
import openai
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.messages import Message, MessageToolCall, ToolResultPart
from anvia_notebook.models.openai import EXTRA_CONTENT_KEY, OpenAIModel, to_openai_messages

from provider_replay import Recorded, Server, weather_agent

OPENAI = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
GEMINI = "https://generativelanguage.googleapis.com/v1beta/openai/"
SIGNED = {
    "google": {"thought_signature": "CtYBAdHtim8vQ2xXq3Lk9Rz0fWq7Yb1uN5mJ8sPdE4hGc6VwT2aKx0="}
}


def test_the_thought_signature_goes_back_with_its_call(monkeypatch):
    server = Server(
        OPENAI.sse("openai_gemini_thought_signature.sse"), OPENAI.sse("openai_text.sse")
    )
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
    model = OpenAIModel("gemini-3-pro-preview", api_key="test-key", base_url=GEMINI)
    response = weather_agent(model).prompt("Weather and time in Paris?").send_sync()
    assert response.output
    calls = server.body(1)["messages"][2]["tool_calls"]
    assert [call["id"] for call in calls] == [
        "function-call-6042817339054672871",
        "function-call-6042817339054672872",
    ]
    assert calls[0]["extra_content"] == SIGNED
    assert "extra_content" not in calls[1]  # (only the call that came with it)
    # The history keeps it: a conversation continued later sends it too.
    assistant = response.messages[1]
    assert assistant.provider_data == {
        EXTRA_CONTENT_KEY: {"function-call-6042817339054672871": SIGNED}
    }


def test_calls_without_extra_content_are_sent_as_before():
    history = [
        Message.user("Hi"),
        Message.assistant(tool_calls=[MessageToolCall(id="c1", name="f", arguments="{}")]),
    ]
    sent = to_openai_messages(None, history)
    assert sent[1]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]


def test_a_gemini_history_sent_to_openai_goes_without_extra_content(monkeypatch):
    """OpenAI's and Azure's APIs refuse a message field they do not know ("Additional
    properties are not allowed ... - 'messages.1'"): a conversation begun with Gemini and
    continued with GPT-4o failed (400) for the signature only Gemini reads."""
    history = [
        Message.user("Weather in Paris?"),
        Message.assistant(
            tool_calls=[MessageToolCall(id="c1", name="get_weather", arguments="{}")],
            provider_data={EXTRA_CONTENT_KEY: {"c1": SIGNED}},
        ),
        Message.tool([ToolResultPart(tool_call_id="c1", tool_name="get_weather", content="Sunny")]),
        Message.user("And tomorrow?"),
    ]
    server = Server(OPENAI.sse("openai_text.sse"), OPENAI.sse("openai_text.sse"))
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
    gpt = OpenAIModel("gpt-4o", api_key="sk-test")
    assert AgentBuilder("a", gpt).build().prompt(history).send_sync().output
    assert "extra_content" not in server.body(0)["messages"][1]["tool_calls"][0]
    gemini = OpenAIModel("gemini-3-pro-preview", api_key="test-key", base_url=GEMINI)
    assert AgentBuilder("a", gemini).build().prompt(history).send_sync().output
    assert server.body(1)["messages"][1]["tool_calls"][0]["extra_content"] == SIGNED
