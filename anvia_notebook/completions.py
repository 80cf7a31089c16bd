"""Direct completions that return validated data, as Anvia's ``createParsedCompletion``.

``await create_parsed_completion(model, prompt, schema)`` sends one completion request (no agent,
no tools run) whose ``response_format`` is ``schema``'s JSON Schema, and validates the answer's
text with pydantic: :class:`ParsedCompletion` holds the value (``data``), the ``text``, the
``usage`` and the whole ``response``. Text that is not JSON, or JSON that does not validate, raises
:class:`~anvia_notebook.errors.OutputValidationError` with pydantic's errors and the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from ._option_checks import checked_max_tokens, checked_temperature, checked_tool_choice
from .errors import OutputValidationError
from .messages import Message, Usage
from .models.base import (
    CompletionRequest,
    CompletionResponse,
    Model,
    ToolDefinition,
    collect_completion,
)
from .output_types import error_list, format_errors, output_spec

__all__ = ["ParsedCompletion", "create_parsed_completion"]

T = TypeVar("T")


@dataclass(frozen=True)
class ParsedCompletion(Generic[T]):
    """A completion's validated ``data``, its ``text``, ``usage`` and the whole ``response``."""

    data: T
    text: str
    usage: Usage
    response: CompletionResponse


async def create_parsed_completion(
    model: Model,
    prompt: str | Message | Sequence[Message] | None,
    schema: type[T] | Any,
    *,
    messages: Sequence[Message] | None = None,
    instructions: str | None = None,
    tools: Sequence[ToolDefinition] | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    tool_choice: Any = None,
) -> ParsedCompletion[T]:
    """One completion of ``model`` whose answer must be a ``schema`` (a pydantic model or any
    type pydantic can validate), sent as the provider's JSON-schema response format.

    ``messages`` come before ``prompt`` (a text, a message or a list of messages); one of them
    is needed. A type pydantic cannot validate is a ``TypeError`` before anything is sent.
    """
    spec = output_spec(schema, "native", 0)
    history = _messages(messages, "messages") + _messages(prompt, "prompt")
    if not history:
        raise ValueError("create_parsed_completion needs a prompt or messages.")
    request = CompletionRequest(
        instructions=instructions or None,
        messages=history,
        tools=list(tools or []),
        temperature=checked_temperature(temperature),
        max_tokens=checked_max_tokens(max_tokens),
        tool_choice=checked_tool_choice(tool_choice),
        response_format=spec.response_format(),
    )
    response = await collect_completion(model.stream(request))
    text = response.text
    try:
        data: T = spec.validate_text(text)
    except ValidationError as error:
        errors = error_list(error)
        if errors and errors[0].get("type") == "json_invalid":
            message = "create_parsed_completion expected the model response to be valid JSON."
        else:
            message = f"The model's response is not a valid {spec.name}:\n{format_errors(error)}"
        raise OutputValidationError(
            message, errors=errors, output=text, output_type=schema
        ) from None
    return ParsedCompletion(data=data, text=text, usage=response.usage, response=response)


def _messages(value: str | Message | Sequence[Message] | None, name: str) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message.user(value)]
    if isinstance(value, Message):
        return [value]
    items = list(value)
    if not all(isinstance(item, Message) for item in items):
        raise TypeError(f"{name} must be a str, a Message or a list of Messages.")
    return items
