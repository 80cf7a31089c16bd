"""OpenAI's strict mode takes no keyword beside a ``$ref`` ("$ref cannot have keywords
{'description'}"), which pydantic writes for a field of a model type given a description: the
output type's schema is sent with that ref made the definition it names, and strict."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai import _base_client as openai_base_client
from pydantic import BaseModel, Field

from anvia_notebook import AgentBuilder
from anvia_notebook.models._json_schema import refs_alone
from anvia_notebook.models.base import ResponseFormat
from anvia_notebook.models.openai import OpenAIModel, to_openai_response_format

from provider_replay import Recorded, Server

openai_http = Recorded(getattr(openai_base_client, "httpx2", None) or httpx)


class Address(BaseModel):
    city: str
    street: str


class Delivery(BaseModel):
    address: Address = Field(description="Where the parcel goes.")
    note: str


class Node(BaseModel):
    value: int
    child: Node | None = Field(description="The next node, if any.")
    twin: Node | None


def refs_with_keywords(schema: Any) -> list[Any]:
    """Every schema in ``schema`` that has a ``$ref`` and another keyword (``$defs`` aside)."""
    found: list[Any] = []
    if isinstance(schema, list):
        for item in schema:
            found += refs_with_keywords(item)
    elif isinstance(schema, dict):
        if "$ref" in schema and set(schema) - {"$ref", "$defs"}:
            found.append(schema)
        for value in schema.values():
            found += refs_with_keywords(value)
    return found


CLOSED_ADDRESS = {
    "properties": {
        "city": {"title": "City", "type": "string"},
        "street": {"title": "Street", "type": "string"},
    },
    "required": ["city", "street"],
    "title": "Address",
    "type": "object",
    "additionalProperties": False,
}


def test_a_described_model_field_is_sent_strict_as_the_model_it_names() -> None:
    schema = Delivery.model_json_schema()
    assert refs_with_keywords(schema)  # (what pydantic writes: the case)

    sent = to_openai_response_format(ResponseFormat(name="Delivery", json_schema=schema))

    assert sent["json_schema"]["strict"] is True
    sent_schema = sent["json_schema"]["schema"]
    assert refs_with_keywords(sent_schema) == []
    assert sent_schema["properties"]["address"] == {
        **CLOSED_ADDRESS,
        "description": "Where the parcel goes.",
    }
    assert sent_schema["required"] == ["address", "note"]


def test_a_recursive_model_keeps_a_bare_ref_to_itself() -> None:
    """Made alone, a ref to a definition it is inside keeps only the ref (a description beside
    it is dropped), so the schema stays finite."""
    schema = {
        "$defs": {"Node": Node.model_json_schema()["$defs"]["Node"]},
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node", "description": "The first node."}},
        "required": ["node"],
    }
    schema["$defs"]["Node"]["properties"]["same"] = {"$ref": "#/$defs/Node", "description": "x"}
    alone = refs_alone(schema)
    assert refs_with_keywords(alone) == []
    node = alone["properties"]["node"]
    assert node["description"] == "The first node." and node["title"] == "Node"
    assert node["properties"]["same"] == {"$ref": "#/$defs/Node"}
    assert refs_alone({"type": "string"}) == {"type": "string"}


def test_a_ref_beside_a_limit_strict_mode_refuses_is_still_sent_not_strict() -> None:
    schema = {
        "$defs": {"Name": {"type": "string", "minLength": 1}},
        "type": "object",
        "properties": {"name": {"$ref": "#/$defs/Name", "description": "A name."}},
        "required": ["name"],
    }
    sent = to_openai_response_format(ResponseFormat(name="Named", json_schema=schema))
    assert sent["json_schema"]["strict"] is False
    assert sent["json_schema"]["schema"]["properties"]["name"] == {
        "$ref": "#/$defs/Name",
        "description": "A name.",
    }


def chunks(text: str) -> Any:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}],
    }
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
    return openai_http.http.Response(
        200, headers={"content-type": "text/event-stream"}, content=body
    )


async def test_a_described_model_field_goes_strict_through_the_sdk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = {"address": {"city": "Paris", "street": "Rue de Rivoli"}, "note": "Ring twice."}
    server = Server(chunks(json.dumps(answer)))
    openai_http.route(monkeypatch, openai, "AsyncOpenAI", server)
    agent = AgentBuilder("courier", OpenAIModel("gpt-4o-mini", api_key="sk-test"))
    response = (
        await agent.output_type(Delivery, mode="native").build().prompt("Where?").store(None).send()
    )

    assert response.data == Delivery.model_validate(answer)
    sent = server.body(0)["response_format"]["json_schema"]
    assert sent["strict"] is True and sent["name"] == "Delivery"
    assert refs_with_keywords(sent["schema"]) == []
    assert sent["schema"]["properties"]["address"]["description"] == "Where the parcel goes."
