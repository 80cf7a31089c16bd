"""``output_type(..., mode="native")`` with the real provider models on recorded HTTP (never the
network): the schema goes in the request as the provider's JSON-schema response format, and the
streamed text is validated (and, when invalid, sent back with pydantic's errors)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import anthropic
import httpx
import openai
import pytest
from anthropic import _base_client as anthropic_base_client
from openai import _base_client as openai_base_client
from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder, OutputValidationError
from anvia_notebook.models.anthropic import AnthropicModel
from anvia_notebook.models.base import ResponseFormat
from anvia_notebook.models.openai import OpenAIModel, to_openai_response_format

from provider_replay import Recorded, Server

openai_http = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)
anthropic_http = Recorded(getattr(anthropic_base_client, "httpx2", None) or httpx)


class Verdict(BaseModel):
    score: float = Field(ge=0.5, le=1)
    reasoning: str


class Loose(BaseModel):
    score: float
    note: str = ""


def openai_model(server: Server, monkeypatch: pytest.MonkeyPatch) -> OpenAIModel:
    openai_http.route(monkeypatch, openai, "AsyncOpenAI", server)
    return OpenAIModel("gpt-4o-mini", api_key="sk-test")


def anthropic_model(server: Server, monkeypatch: pytest.MonkeyPatch) -> AnthropicModel:
    anthropic_http.route(monkeypatch, anthropic, "AsyncAnthropic", server)
    return AnthropicModel(
        "claude-sonnet-4-6", api_key="sk-ant-test", output_config={"effort": "low"}
    )


CLOSED_VERDICT = {
    "properties": {
        "score": {"maximum": 1, "minimum": 0.5, "title": "Score", "type": "number"},
        "reasoning": {"title": "Reasoning", "type": "string"},
    },
    "required": ["score", "reasoning"],
    "title": "Verdict",
    "type": "object",
    "additionalProperties": False,
}


async def test_openai_gets_a_strict_json_schema_and_the_text_is_the_data(monkeypatch):
    server = Server(openai_http.sse("openai_judge_verdict.sse"))
    agent = AgentBuilder("judge", openai_model(server, monkeypatch)).output_type(
        Verdict, mode="native"
    )
    response = await agent.build().prompt("Grade it.").store(None).send()

    assert response.data == Verdict(
        score=0.8, reasoning="Names Paris, the capital of France, as asked."
    )
    assert response.output.startswith('{"score": 0.8')
    assert server.body(0)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": CLOSED_VERDICT, "strict": True},
    }
    assert "tools" not in server.body(0)


def test_openai_strict_only_when_every_property_is_required():
    schema = Loose.model_json_schema()
    sent = to_openai_response_format(ResponseFormat(name="Loose", json_schema=schema))
    assert sent["json_schema"]["strict"] is False
    assert sent["json_schema"]["schema"] == {**schema, "additionalProperties": False}


class Named(BaseModel):
    name: str = Field(min_length=1)


class Cat(BaseModel):
    kind: Literal["cat"]


class Dog(BaseModel):
    kind: Literal["dog"]


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Where(BaseModel):
    address: Named = Field(description="Where it goes.")


class Anything(BaseModel):
    note: Any


@pytest.mark.parametrize("model", [Named, Pet, Where, Anything])
def test_openai_strict_only_with_the_keywords_strict_mode_takes(model):
    """A length limit (also in a model a described field names), a oneOf with a discriminator,
    an untyped field: OpenAI's strict mode refuses the request (every property is required, yet
    it is not strict)."""
    schema = model.model_json_schema()
    sent = to_openai_response_format(ResponseFormat(name=model.__name__, json_schema=schema))
    assert sent["json_schema"]["strict"] is False
    assert sent["json_schema"]["schema"]["additionalProperties"] is False  # (closed all the same)


async def test_anthropic_gets_the_output_format_beside_its_own_output_config(monkeypatch):
    """The recorded verdict's score (0.3) is below the type's minimum: it goes back to the model
    with pydantic's errors, then, with nobody to fix it, the run raises."""
    server = Server(
        anthropic_http.sse("anthropic_judge_verdict.sse"),
        anthropic_http.sse("anthropic_judge_verdict.sse"),
    )
    agent = (
        AgentBuilder("judge", anthropic_model(server, monkeypatch))
        .output_type(Verdict, mode="native", retries=1)
        .build()
    )
    with pytest.raises(OutputValidationError) as caught:
        await agent.prompt("Grade it.").store(None).send()

    first = server.body(0)
    # As the SDK's transform_schema makes it: the limits the API does not take, described (an
    # SDK without it, the lowest this package takes: the objects closed).
    score = {"type": "number", "title": "Score", "description": "{maximum: 1, minimum: 0.5}"}
    verdict = {**CLOSED_VERDICT, "properties": {**CLOSED_VERDICT["properties"], "score": score}}
    if not hasattr(anthropic, "transform_schema"):
        verdict = CLOSED_VERDICT
    assert first["output_config"] == {
        "effort": "low",
        "format": {"type": "json_schema", "schema": verdict},
    }
    retry = server.body(1)["messages"][-1]
    assert retry["role"] == "user"
    sent = str(retry["content"])
    assert "score: Input should be greater than or equal to 0.5" in sent
    assert caught.value.errors[0]["type"] == "greater_than_equal"
    assert '"score": 0.3' in (caught.value.output or "")


async def test_no_response_format_without_an_output_type(monkeypatch):
    server = Server(openai_http.sse("openai_judge_verdict.sse"))
    agent = AgentBuilder("judge", openai_model(server, monkeypatch)).build()
    await agent.prompt("Grade it.").store(None).send()
    assert "response_format" not in server.body(0)


class Counts(BaseModel):
    counts: dict[str, int]


def test_anthropic_keeps_a_dict_field_open():
    """The SDK's transform_schema closes every object: a dict field held to
    ``{"properties": {}, "additionalProperties": false}`` could only be answered ``{}``, which
    validates, so the result was silently empty."""
    from anvia_notebook.models.anthropic import to_anthropic_output_format

    schema = Counts.model_json_schema()
    sent = to_anthropic_output_format(ResponseFormat(name="Counts", json_schema=schema))
    field = sent["schema"]["properties"]["counts"]
    assert field["additionalProperties"] == {"type": "integer"}
    assert sent["schema"]["additionalProperties"] is False
