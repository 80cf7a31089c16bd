"""``ExtractorBuilder`` and ``create_parsed_completion``, Anvia's extractor and parsed-completion
tests translated (``packages/core/test/extractor.test.ts`` and the parsed-completion cases of
``completion-capabilities.test.ts``), with pydantic models in place of zod schemas."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

import anvia_notebook
from anvia_notebook import (
    ExtractionError,
    ExtractorBuilder,
    Message,
    OutputValidationError,
    Usage,
    create_parsed_completion,
)
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall


def submit(arguments: Any, id: str = "submit_1", usage: Usage | None = None) -> ModelResponse:
    return ModelResponse(
        tool_calls=[ToolCall(id=id, name="submit", arguments=arguments)], usage=usage
    )


class Value(BaseModel):
    value: int


def test_uses_a_fixed_internal_extractor_agent_id() -> None:
    class Text(BaseModel):
        value: str

    extractor = ExtractorBuilder(QueueModel([]), Text).build()
    assert extractor.get_inner().id == "extractor"


async def test_generates_a_submit_tool_from_the_model_schema() -> None:
    class Person(BaseModel):
        name: str = Field(description="Full name")
        age: float | None = None

    model = QueueModel([submit({"name": "Ada", "age": 36})])
    await ExtractorBuilder(model, Person).build().extract("Ada is 36")

    (tool,) = model.requests[0].tools
    assert tool.name == "submit"
    assert tool.description == "Submit the structured data extracted from the provided text."
    assert tool.parameters == Person.model_json_schema()
    assert tool.parameters["required"] == ["name"]
    assert tool.parameters["properties"]["name"]["description"] == "Full name"
    assert model.requests[0].tool_choice == "required"


async def test_returns_submitted_data_and_usage() -> None:
    class Sentiment(BaseModel):
        sentiment: Literal["positive", "negative"]

    model = QueueModel(
        [submit({"sentiment": "positive"}, usage=Usage(input_tokens=5, output_tokens=3))]
    )
    result = await ExtractorBuilder(model, Sentiment).retries(1).build().extract_with_usage("great")

    assert result.data == Sentiment(sentiment="positive")
    assert result.usage.total_tokens == 8
    assert any(message.role == "assistant" for message in result.messages)


async def test_retries_when_no_submit_tool_call_is_produced() -> None:
    model = QueueModel(
        [
            ModelResponse(text="not json", usage=Usage(input_tokens=1, output_tokens=1)),
            submit({"value": 1}),
        ]
    )
    result = await ExtractorBuilder(model, Value).retries(1).build().extract_with_usage("one")

    assert result.data == Value(value=1)
    assert result.usage.total_tokens == 2
    assert len(model.requests) == 2


async def test_retries_when_submitted_data_fails_validation() -> None:
    model = QueueModel(
        [
            submit({"value": "one"}, "submit_1", Usage(input_tokens=1, output_tokens=1)),
            submit({"value": 1}, "submit_2", Usage(input_tokens=2, output_tokens=1)),
        ]
    )
    result = await ExtractorBuilder(model, Value).retries(1).build().extract_with_usage("one")

    assert result.data == Value(value=1)
    assert result.usage.total_tokens == 5
    assert len(model.requests) == 2


async def test_uses_the_last_submit_call_when_multiple_are_present() -> None:
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(id="submit_1", name="submit", arguments={"value": 1}),
                    ToolCall(id="submit_2", name="submit", arguments={"value": 2}),
                ]
            )
        ]
    )
    assert await ExtractorBuilder(model, Value).build().extract("two") == Value(value=2)


async def test_passes_history_and_builder_options_to_the_request() -> None:
    class Text(BaseModel):
        value: str

    model = QueueModel([submit({"value": "ok"})])
    await (
        ExtractorBuilder(model, Text)
        .instructions("Prefer concise values.")
        .context("Static facts", "facts")
        .temperature(0.1)
        .max_tokens(100)
        .build()
        .extract_with_history("extract", [Message.user("previous")])
    )

    request = model.requests[0]
    assert request.temperature == 0.1 and request.max_tokens == 100
    assert request.instructions is not None
    assert "Prefer concise values." in request.instructions
    assert '<context id="facts">\nStatic facts\n</context>' in request.instructions
    assert request.instructions.startswith("You are an AI assistant whose purpose is to extract")
    assert request.messages[0] == Message.user("previous")
    assert request.messages[1] == Message.user("extract")


def test_does_not_export_a_custom_schema_helper() -> None:
    assert not hasattr(anvia_notebook, "schema")


# -- beyond Anvia's tests: what this port adds or must say ------------------------------------------


async def test_no_data_after_the_retries_is_an_extraction_error_caused_by_the_last_failure() -> (
    None
):
    model = QueueModel([submit({"value": "one"}), ModelResponse(text="no call")])
    extractor = ExtractorBuilder(model, Value).retries(1).build()
    with pytest.raises(ExtractionError, match="No data extracted") as caught:
        await extractor.extract("one")
    assert isinstance(caught.value.cause, ExtractionError)
    assert "did not call the submit tool" in str(caught.value.cause)
    assert caught.value.__cause__ is caught.value.cause
    assert isinstance(caught.value, anvia_notebook.AnviaError)


async def test_a_list_is_submitted_wrapped_as_result() -> None:
    model = QueueModel([submit({"result": [{"value": 1}, {"value": 2}]})])
    data = await ExtractorBuilder(model, list[Value]).build().extract("1 and 2")
    assert data == [Value(value=1), Value(value=2)]
    assert model.requests[0].tools[0].parameters["required"] == ["result"]


def test_negative_retries_are_zero_and_bad_types_are_refused() -> None:
    model = QueueModel([ModelResponse(text="no"), submit({"value": 1})])
    with pytest.raises(ExtractionError):
        ExtractorBuilder(model, Value).retries(-3).build().extract_sync("x")
    assert len(model.requests) == 1

    class Opaque:
        pass

    with pytest.raises(TypeError, match="pydantic cannot validate"):
        ExtractorBuilder(model, Opaque)


# -- create_parsed_completion (completion-capabilities.test.ts) -------------------------------------


class Ticket(BaseModel):
    title: str
    priority: Literal["low", "medium", "high"]


async def test_creates_a_parsed_completion_with_schema_validation() -> None:
    model = QueueModel(['{"title":"Checkout failure","priority":"high"}'])

    response = await create_parsed_completion(
        model,
        "Acme has an urgent checkout failure.",
        Ticket,
        messages=[Message.user("Extract ticket fields.")],
        instructions="Return only structured ticket data.",
    )

    assert response.data == Ticket(title="Checkout failure", priority="high")
    assert response.text == '{"title":"Checkout failure","priority":"high"}'
    (request,) = model.requests
    assert request.messages == [
        Message.user("Extract ticket fields."),
        Message.user("Acme has an urgent checkout failure."),
    ]
    assert request.instructions == "Return only structured ticket data."
    assert request.tools == []
    assert request.response_format is not None
    assert request.response_format.name == "Ticket"
    assert request.response_format.json_schema == {
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "priority": {"enum": ["low", "medium", "high"], "title": "Priority", "type": "string"},
        },
        "required": ["title", "priority"],
        "title": "Ticket",
        "type": "object",
    }


async def test_rejects_a_parsed_completion_when_the_text_is_not_json() -> None:
    model = QueueModel(["not json"])
    with pytest.raises(
        OutputValidationError,
        match=r"create_parsed_completion expected the model response to be valid JSON\.",
    ) as caught:
        await create_parsed_completion(model, "hello", Ticket)
    assert caught.value.output == "not json"


async def test_json_that_fails_the_schema_raises_with_pydantics_errors() -> None:
    model = QueueModel(['{"title": "x", "priority": "urgent"}'])
    with pytest.raises(OutputValidationError, match="not a valid Ticket") as caught:
        await create_parsed_completion(model, "hello", Ticket)
    assert caught.value.errors[0]["loc"] == ("priority",)


async def test_a_parsed_completion_needs_a_prompt_or_messages() -> None:
    with pytest.raises(ValueError, match="needs a prompt or messages"):
        await create_parsed_completion(QueueModel([]), None, Ticket)
    with pytest.raises(TypeError, match="must be a str, a Message or a list of Messages"):
        await create_parsed_completion(QueueModel([]), [{"role": "user"}], Ticket)  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("text", "error", "words"),
    [
        (None, TypeError, "takes a str or a Message, not NoneType"),
        (5, TypeError, "not int"),
        (b"a ticket", TypeError, "not bytes"),
        ("\ud800", ValueError, "not valid text"),
    ],
)
async def test_what_is_not_a_text_is_refused_at_once_not_retried_into_no_data(
    text: Any, error: type[Exception], words: str
) -> None:
    """Before: ``ExtractionError("No data extracted")`` after every retry, the model asked for
    nothing each time."""
    model = QueueModel([submit({"value": 1})] * 3)
    extractor = ExtractorBuilder(model, Value).retries(2).build()
    with pytest.raises(error, match=words):
        await extractor.extract(text)
    assert model.requests == []


async def test_a_history_that_is_not_a_list_of_messages_is_refused_at_once() -> None:
    model = QueueModel([submit({"value": 1})] * 3)
    extractor = ExtractorBuilder(model, Value).retries(2).build()
    with pytest.raises(TypeError, match="history must be a list of Messages, not str"):
        await extractor.extract_with_history("text", "earlier text")
    with pytest.raises(TypeError, match="item 2 is dict"):
        await extractor.extract_with_history("text", [Message.user("a"), {"role": "user"}])
    assert model.requests == []
    assert (await extractor.extract_with_history("text", [Message.user("a")])).value == 1
