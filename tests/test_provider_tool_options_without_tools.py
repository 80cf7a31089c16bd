"""A model given options that go only with tools (``parallel_tool_calls=False``, a
``tool_choice``), used by an agent without tools (an LLM judge, a summariser on the same
model): both APIs refuse them without tools ("'parallel_tool_calls' is only allowed when
'tools' are specified"), so every run of that agent failed with a 400. They are left out of a
request without tools. Through the SDKs' real HTTP path with a mock transport; never the
network."""

from __future__ import annotations

import anthropic
import httpx
import openai
from anthropic import _base_client as anthropic_base_client
from openai import _base_client as openai_base_client

from anvia_notebook import AgentBuilder
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

from provider_replay import Recorded, Server, weather_agent

OPENAI = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
ANTHROPIC = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)


def test_openai_leaves_them_out_only_without_tools(monkeypatch):
    server = Server(OPENAI.sse("openai_text.sse"), OPENAI.sse("openai_text.sse"))
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
    model = OpenAIModel(
        "gpt-4o", api_key="sk-test", parallel_tool_calls=False, tool_choice="required"
    )
    assert AgentBuilder("judge", model).build().prompt("Grade it.").send_sync().output
    assert weather_agent(model).prompt("Weather in Paris?").send_sync().output
    alone, with_tools = server.body(0), server.body(1)
    assert "parallel_tool_calls" not in alone and "tool_choice" not in alone
    assert with_tools["parallel_tool_calls"] is False and with_tools["tool_choice"] == "required"


def test_anthropic_leaves_it_out_only_without_tools(monkeypatch):
    server = Server(ANTHROPIC.sse("anthropic_text.sse"), ANTHROPIC.sse("anthropic_text.sse"))
    ANTHROPIC.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", tool_choice=choice)
    assert AgentBuilder("judge", model).build().prompt("Grade it.").send_sync().output
    assert weather_agent(model).prompt("Weather in Paris?").send_sync().output
    assert "tool_choice" not in server.body(0)
    assert server.body(1)["tool_choice"] == choice
