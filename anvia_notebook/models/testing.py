"""Offline models for tests, tutorials and demos: no network, no key."""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from ..messages import Usage
from .base import (
    CompletionModel,
    CompletionRequest,
    Finish,
    ModelError,
    PositionalFields,
    TextDelta,
    ToolCall,
    UsageUpdate,
)

__all__ = ["FunctionModel", "ModelResponse", "QueueModel", "StreamingQueueModel", "split_text"]

_CHUNK = re.compile(r"\S+\s*|\s+")


def split_text(text: str) -> list[str]:
    """Split text into word-sized deltas, the way a provider streams it."""
    return _CHUNK.findall(text)


class ModelResponse(PositionalFields):
    """One model turn: text and/or tool calls, and optionally the usage to report."""

    model_config = ConfigDict(defer_build=True)
    positional = ("text", "tool_calls", "usage")

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    #: Input tokens to report as served from a prompt cache (with ``usage``).
    cached_tokens: int | None = None

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(
            self,
            text: str = "",
            tool_calls: list[ToolCall] = ...,
            usage: Usage | None = None,
            *,
            cached_tokens: int | None = None,
        ) -> None: ...

    async def events(self, delay: float = 0.0) -> AsyncIterator[Any]:
        """This response as completion events (text streamed word by word)."""
        for piece in split_text(self.text):
            if delay:
                await asyncio.sleep(delay)
            yield TextDelta(delta=piece)
        for call in self.tool_calls:
            yield call
        if self.usage is not None:
            yield UsageUpdate(usage=self.usage, cached_tokens=self.cached_tokens)
        yield Finish(reason="tool_calls" if self.tool_calls else "stop")


def _queued(response: Any, position: int) -> ModelResponse:
    if isinstance(response, str):
        return ModelResponse(text=response)
    if not hasattr(response, "events"):
        raise TypeError(
            f"QueueModel: response {position} is a {type(response).__name__}; each is a text "
            "or a ModelResponse(text=..., tool_calls=[...])."
        )
    return response  # type: ignore[no-any-return]


class QueueModel(CompletionModel):
    """Answers each request with the next queued response and records the requests it got."""

    name = "queue-model"
    provider = "offline"

    def __init__(self, responses: Sequence[ModelResponse | str], *, delay: float = 0.0) -> None:
        if isinstance(responses, (str, ModelResponse)) or not isinstance(responses, Iterable):
            raise TypeError(
                "QueueModel takes a list of responses, one per model call (texts or "
                f'ModelResponse), such as QueueModel(["Hello!"]); got a {type(responses).__name__}.'
            )
        self._responses = [_queued(r, i) for i, r in enumerate(responses)]
        self._given = 0
        self.delay = delay
        self.requests: list[CompletionRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._responses) - self._given

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        if self._given >= len(self._responses):
            raise ModelError(
                f"QueueModel ran out of responses: it was given {len(self._responses)} and was "
                f"asked for response {self._given + 1}."
            )
        response = self._responses[self._given]
        self._given += 1
        async for event in response.events(self.delay):
            yield event


class StreamingQueueModel(CompletionModel):
    """Replays exact completion-event lists, one list per request."""

    name = "streaming-queue-model"
    provider = "offline"

    def __init__(self, turns: Sequence[Sequence[Any]]) -> None:
        self._turns = [list(turn) for turn in turns]
        self._given = 0
        self.requests: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        if self._given >= len(self._turns):
            raise ModelError(
                f"StreamingQueueModel ran out of turns: it was given {len(self._turns)}."
            )
        events = self._turns[self._given]
        self._given += 1
        for event in events:
            if isinstance(event, BaseException):
                raise event
            yield event


class FunctionModel(CompletionModel):
    """A model backed by your function.

    ``fn(request)`` returns a :class:`ModelResponse` (or a ``str``), sync or async; or ``fn`` is
    an async generator yielding completion events (``TextDelta``, ``ToolCall``, ...). A plain
    ``str`` yielded is a piece of text, as ``TextDelta(delta=...)`` (as in pydantic-ai's
    ``FunctionModel``), and the cheapest way to stream many small pieces.
    """

    name = "function-model"
    provider = "offline"

    def __init__(self, fn: Callable[[CompletionRequest], Any], *, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(
                "FunctionModel takes a function of the request that returns the answer (a text "
                f"or a ModelResponse), or an async generator of events; got a {type(fn).__name__}."
            )
        self.fn = fn
        if name:
            self.name = name
        self.requests: list[CompletionRequest] = []

    def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        if inspect.isasyncgenfunction(self.fn):
            # The function's own stream, not wrapped in another generator: one step per event.
            stream: AsyncIterator[Any] = self.fn(request)
            return stream
        return self._respond(request)

    async def _respond(self, request: CompletionRequest) -> AsyncIterator[Any]:
        value = self.fn(request)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, str):
            value = ModelResponse(text=value)
        if not isinstance(value, ModelResponse):
            raise ModelError(
                "FunctionModel's function must return a ModelResponse or str, "
                f"not {type(value).__name__}"
            )
        async for event in value.events():
            yield event
