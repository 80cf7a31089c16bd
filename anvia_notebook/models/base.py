"""The model contract: a completion request in, a stream of completion events out.

A model is any object with ``async def stream(request) -> AsyncIterator[CompletionEvent]``
(a plain ``str`` in the stream is a piece of text, as a ``TextDelta``). Providers and offline
models subclass :class:`CompletionModel`, which derives ``complete``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Container
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .._positional import PositionalFields
from .._util import (
    MAX_ARGUMENT_DEPTH,
    compact_json,
    paired_text,
    too_deep,
    valid_data,
    valid_text,
)
from ..errors import ModelError, is_retryable_status
from ..messages import Message, MessageToolCall, Usage

__all__ = [
    "CompletionAccumulator",
    "CompletionEvent",
    "CompletionModel",
    "CompletionRequest",
    "CompletionResponse",
    "Finish",
    "Model",
    "ModelError",
    "PositionalFields",
    "ProviderData",
    "ReasoningDelta",
    "ResponseFormat",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolDefinition",
    "UsageUpdate",
    "collect_completion",
    "is_retryable_status",
]


class ToolDefinition(BaseModel):
    """What the model is told about a tool: its name, description and JSON schema."""

    model_config = ConfigDict(defer_build=True)

    name: str
    description: str
    parameters: dict[str, Any]


class ResponseFormat(BaseModel):
    """A JSON Schema the model's answer must follow (the provider's structured-output format):
    ``name`` names it (letters, digits, ``_`` and ``-``), ``json_schema`` is the schema."""

    model_config = ConfigDict(defer_build=True)

    name: str
    json_schema: dict[str, Any]


class CompletionRequest(BaseModel):
    """Everything a model needs for one turn."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    instructions: str | None = None
    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: Any = None
    #: The JSON Schema the answer must follow (``output_type(..., mode="native")``), or None.
    response_format: ResponseFormat | None = None


class TextDelta(PositionalFields):
    """A piece of assistant text."""

    model_config = ConfigDict(defer_build=True)
    positional = ("delta",)

    type: Literal["text_delta"] = "text_delta"
    delta: str

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(self, delta: str, *, type: Literal["text_delta"] = ...) -> None: ...


class ReasoningDelta(BaseModel):
    """A piece of the model's reasoning (shown collapsed, never sent back as text)."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["reasoning_delta"] = "reasoning_delta"
    delta: str


class ToolCallDelta(BaseModel):
    """A fragment of a tool call being streamed; ``id`` ties the fragments together."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["tool_call_delta"] = "tool_call_delta"
    id: str
    name: str | None = None
    arguments_delta: str = ""


class ToolCall(PositionalFields):
    """A complete tool call. ``arguments`` may be a dict or the raw JSON text."""

    model_config = ConfigDict(defer_build=True)
    positional = ("id", "name", "arguments")

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _json_arguments(cls, value: dict[str, Any] | str) -> dict[str, Any] | str:
        """Arguments given as data hold only what JSON can (a date, a Decimal, a set... as
        pydantic writes them), so that every event, trace and store can keep them; data nested
        deeper than any tool takes is kept as its JSON text (the call is refused, saying why)."""
        if isinstance(value, str):
            return value
        if too_deep(value):
            try:
                return compact_json(value)
            except (TypeError, ValueError, RecursionError):
                return f"(arguments nested more than {MAX_ARGUMENT_DEPTH} levels deep)"
        try:
            compact_json(value)
            return value
        except TypeError:
            try:
                return cast(dict[str, Any], to_jsonable_python(value))
            except PydanticSerializationError as error:
                raise ValueError(f"the arguments have no JSON form: {error}") from None

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(
            self,
            id: str,
            name: str,
            arguments: dict[str, Any] | str = ...,
            *,
            type: Literal["tool_call"] = ...,
        ) -> None: ...

    def arguments_json(self) -> str:
        """The arguments as JSON text (a string is passed through untouched, even if invalid)."""
        if isinstance(self.arguments, str):
            return self.arguments
        return compact_json(self.arguments)

    def to_message_call(self) -> MessageToolCall:
        return MessageToolCall(id=self.id, name=self.name, arguments=self.arguments_json())


class UsageUpdate(PositionalFields):
    """Token usage reported by the provider (added up over a turn).

    ``cached_tokens``: how many of the input tokens the provider served from its prompt cache
    (added up too); None when the provider does not say.
    """

    model_config = ConfigDict(defer_build=True)
    positional = ("usage", "cached_tokens")

    type: Literal["usage"] = "usage"
    usage: Usage
    cached_tokens: int | None = None

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(
            self, usage: Usage, cached_tokens: int | None = None, *, type: Literal["usage"] = ...
        ) -> None: ...


class ProviderData(BaseModel):
    """Opaque data the provider wants back with this turn's message on later turns."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["provider_data"] = "provider_data"
    data: dict[str, Any]


class Finish(PositionalFields):
    """The provider's reason for ending the completion."""

    model_config = ConfigDict(defer_build=True)
    positional = ("reason",)

    type: Literal["finish"] = "finish"
    reason: str = "stop"

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(self, reason: str = "stop", *, type: Literal["finish"] = ...) -> None: ...


CompletionEvent = Annotated[
    TextDelta | ReasoningDelta | ToolCallDelta | ToolCall | UsageUpdate | ProviderData | Finish,
    Field(discriminator="type"),
]


class CompletionResponse(BaseModel):
    """One turn's answer, assembled from its events."""

    model_config = ConfigDict(defer_build=True)

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    #: Input tokens served from the provider's prompt cache (None when it does not say).
    cached_tokens: int | None = None
    finish_reason: str | None = None
    provider_data: dict[str, Any] | None = None

    def to_message(self) -> Message:
        return Message.assistant(
            self.text,
            [call.to_message_call() for call in self.tool_calls],
            self.reasoning or None,
            self.provider_data,
        )


@runtime_checkable
class Model(Protocol):
    """Anything that streams completion events for a request."""

    def stream(self, request: CompletionRequest) -> AsyncIterator[Any]: ...


class CompletionAccumulator:
    """Folds completion events, one at a time, into a :class:`CompletionResponse`.

    Tool calls streamed only as deltas are assembled from their fragments; a complete
    :class:`ToolCall` with the same id replaces them.
    """

    def __init__(self) -> None:
        #: The text deltas so far: appending a ``str`` here is ``add(TextDelta(delta=...))``
        #: without the checks (the run loop's per-delta path).
        self.text_parts: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[str, ToolCall | None] = {}
        self._partial: dict[str, tuple[list[str], list[str]]] = {}
        self._usage = Usage()
        self._cached: int | None = None
        self._finish: str | None = None
        self._provider_data: dict[str, Any] | None = None

    def add(self, event: Any) -> Any:
        """Fold ``event`` in; returns it as kept: a whole tool call with a unique id (and the
        arguments that streamed before it, if it came without), lone surrogates as U+FFFD."""
        if type(event) is str:  # a plain string is a piece of text
            self.text_parts.append(event)
            return event
        kind = getattr(event, "type", None)
        if kind == "text_delta":
            self.text_parts.append(event.delta)
        elif kind == "reasoning_delta":
            self._reasoning.append(event.delta)
        elif kind == "tool_call_delta":
            self._calls.setdefault(event.id, None)
            names, args = self._partial.setdefault(event.id, ([], []))
            if event.name:
                names.append(event.name)
            args.append(event.arguments_delta)
        elif kind == "tool_call":
            if self._calls.get(event.id) is not None:  # a second whole call with one id:
                event = event.model_copy(update={"id": unique_call_id(event.id, self._calls)})
            partial = self._partial.get(event.id)
            if partial is not None and _blank(event.arguments) and "".join(partial[1]).strip():
                # A complete call without arguments after streamed ones: keep what streamed.
                names, args = partial
                event = ToolCall(
                    id=event.id,
                    name=event.name or (names[-1] if names else ""),
                    arguments="".join(args),
                )
            event = self._calls[event.id] = valid_call(event)
        elif kind == "usage":
            self._usage = self._usage + event.usage
            if event.cached_tokens is not None:
                self._cached = (self._cached or 0) + event.cached_tokens
        elif kind == "provider_data":
            self._provider_data = {**(self._provider_data or {}), **event.data}
        elif kind == "finish":
            self._finish = event.reason
        else:
            raise ModelError(f"The model produced an unknown completion event: {event!r}")
        return event

    def response(self) -> CompletionResponse:
        calls: list[ToolCall] = []
        for call_id, call in self._calls.items():
            if call is None:
                names, args = self._partial[call_id]
                call = valid_call(
                    ToolCall(id=call_id, name=names[-1] if names else "", arguments="".join(args))
                )
            calls.append(call)
        return CompletionResponse(
            text=paired_text("".join(self.text_parts)),
            reasoning=paired_text("".join(self._reasoning)),
            tool_calls=calls,
            usage=self._usage,
            cached_tokens=self._cached,
            finish_reason=self._finish,
            provider_data=self._provider_data,
        )


def valid_call(call: ToolCall) -> ToolCall:
    """``call`` with each lone surrogate in its id, name or arguments (also one written as
    JSON's ``"\\ud800"`` escape) as U+FFFD: no store could keep it, nor the tool use it;
    ``call`` itself when it has none."""
    arguments: Any = call.arguments
    if isinstance(arguments, str):
        arguments = valid_text(arguments)
        if "\\u" in arguments:  # (an escaped surrogate shows only once decoded)
            try:
                decoded = compact_json(json.loads(arguments))
                decoded.encode("utf-8")
            except UnicodeEncodeError:
                arguments = valid_text(decoded)
            except (ValueError, RecursionError):
                pass  # not JSON: the run tells the model so
    else:
        try:
            compact_json(arguments).encode("utf-8")
        except UnicodeEncodeError:
            arguments = valid_data(arguments)
        except (TypeError, ValueError):
            pass  # (not JSON data: as it came)
    fixed = {"id": valid_text(call.id), "name": valid_text(call.name), "arguments": arguments}
    if all(value is getattr(call, key) for key, value in fixed.items()):
        return call
    return call.model_copy(update=fixed)


def unique_call_id(call_id: str, taken: Container[str]) -> str:
    """``call_id``, made unique in a response that gave it to another call already (some
    servers repeat an id: each call must keep its own result, none may replace another)."""
    number = 2
    while f"{call_id}_{number}" in taken:
        number += 1
    return f"{call_id}_{number}"


def _blank(arguments: Any) -> bool:
    """No arguments at all: an empty object, or an empty or blank text."""
    if isinstance(arguments, str):
        return not arguments.strip()
    return bool(arguments == {})


async def collect_completion(events: AsyncIterator[Any]) -> CompletionResponse:
    """Fold a whole stream of completion events into a :class:`CompletionResponse`."""
    accumulator = CompletionAccumulator()
    async for event in events:
        accumulator.add(event)
    return accumulator.response()


class CompletionModel:
    """Base class for models: subclasses implement :meth:`stream`; :meth:`complete` is derived."""

    #: A short name shown in ``generation_start`` events and the transcript.
    name: str = "model"
    #: Who serves the model (``"openai"``, ``"anthropic"``, ``"offline"``), as traces report it.
    provider: str | None = None

    def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        raise NotImplementedError

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        return await collect_completion(self.stream(request))
