"""A tool (or an output type) with a parameter whose default is ``math.inf`` (``max_price: float =
math.inf``): its JSON schema holds a number JSON has not, which neither SDK can send ("Out of
range float values are not JSON compliant": every run of the agent failed with that bare
ValueError, before any request). The schema is sent without it. Through the SDKs' real HTTP path
with a mock transport; never the network."""

from __future__ import annotations

import math

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from openai import _base_client as openai_base_client
from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder, OutputValidationError, tool
from anvia_notebook.models._json_schema import finite_numbers_only
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.openai import OpenAIModel

from provider_replay import Recorded, Server

OPENAI = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
ANTHROPIC = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)


@tool
def search(query: str, max_price: float = math.inf) -> str:
    """Search the catalogue."""
    return "Nothing found."


SENT_PRICE = {"title": "Max Price", "type": "number"}


def test_openai_sends_the_tool_without_the_infinite_default(monkeypatch):
    server = Server(OPENAI.sse("openai_text.sse"))
    OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
    agent = AgentBuilder("a", OpenAIModel("gpt-4o", api_key="sk-test")).tools([search]).build()
    assert agent.prompt("Find a lamp.").send_sync().output
    [sent] = server.body(0)["tools"]
    assert sent["function"]["parameters"]["properties"]["max_price"] == SENT_PRICE


def test_anthropic_sends_the_tool_without_the_infinite_default(monkeypatch):
    server = Server(ANTHROPIC.sse("anthropic_text.sse"))
    ANTHROPIC.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    agent = AgentBuilder("a", model).tools([search]).build()
    assert agent.prompt("Find a lamp.").send_sync().output
    [sent] = server.body(0)["tools"]
    assert sent["input_schema"]["properties"]["max_price"] == SENT_PRICE


class Budget(BaseModel):
    item: str
    limit: float = Field(default=math.inf, le=math.inf)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_native_output_type_is_sent_without_it(monkeypatch, provider):
    if provider == "openai":
        server = Server(OPENAI.sse("openai_text.sse"))
        OPENAI.route(monkeypatch, openai, "AsyncOpenAI", server)
        model: object = OpenAIModel("gpt-4o", api_key="sk-test")
    else:
        server = Server(ANTHROPIC.sse("anthropic_text.sse"))
        ANTHROPIC.route(monkeypatch, anthropic, "AsyncAnthropic", server)
        model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test")
    agent = AgentBuilder("a", model).output_type(Budget, mode="native", retries=0).build()
    with pytest.raises(OutputValidationError):  # (the recorded answer is not a Budget)
        agent.prompt("A lamp under 20.").send_sync()
    body = server.body(0)
    schema = (
        body["response_format"]["json_schema"]["schema"]
        if provider == "openai"
        else body["output_config"]["format"]["schema"]
    )
    assert "default" not in schema["properties"]["limit"]


def test_a_schema_without_such_numbers_is_sent_as_it_is():
    schema = {"type": "object", "properties": {"n": {"type": "number", "default": 1.5}}}
    assert finite_numbers_only(schema) is schema
    assert finite_numbers_only({"enum": [1.0, math.nan], "maximum": -math.inf}) == {"enum": [1.0]}
