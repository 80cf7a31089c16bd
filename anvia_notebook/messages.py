"""Conversation messages and token usage: plain pydantic data, safe to persist and replay."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Message", "MessageToolCall", "ToolResultMedia", "ToolResultPart", "Usage"]


class Usage(BaseModel):
    """Token counts of one completion or of a whole run."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class MessageToolCall(BaseModel):
    """A tool call the assistant made; ``arguments`` is the raw JSON text the model produced."""

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON (raises ``ValueError`` when they are not JSON)."""
        if self.arguments.strip() == "":
            return {}
        return json.loads(self.arguments)


class ToolResultMedia(BaseModel):
    """An image (or audio clip) a tool returned besides its text (an MCP tool's): its media
    type and base64 data. Providers that take images in tool results send them with the
    result; the others read only the short placeholder in the result's text."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    type: Literal["image", "audio"]
    media_type: str
    data: str = Field(repr=False)

    @classmethod
    def from_parts(cls, parts: list[dict[str, Any]]) -> list[ToolResultMedia]:
        """The images and audio among a ``tool_result`` event's ``parts``."""
        return [
            cls(type=part["type"], media_type=str(part["media_type"]), data=str(part["data"]))
            for part in parts
            if part.get("type") in ("image", "audio") and part.get("data")
        ]


class ToolResultPart(BaseModel):
    """The result of one tool call, as the model sees it on the next turn: ``content`` is its
    text; ``media`` the images (or audio) it returned besides, each also named in the text."""

    model_config = ConfigDict(defer_build=True)

    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool = False
    media: list[ToolResultMedia] = Field(default_factory=list)


class Message(BaseModel):
    """One message of a conversation.

    ``role`` is ``"user"``, ``"assistant"`` or ``"tool"``. An assistant message may carry
    ``tool_calls`` and ``reasoning``; a tool message carries the ``tool_results`` of one turn,
    in call order.
    """

    model_config = ConfigDict(defer_build=True)

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[MessageToolCall] = Field(default_factory=list)
    tool_results: list[ToolResultPart] = Field(default_factory=list)
    reasoning: str | None = None
    #: Opaque data a provider needs back on later turns, e.g. Anthropic's signed thinking blocks
    #: under ``"anthropic_thinking"``; kept with the message so a saved history stays complete.
    provider_data: dict[str, Any] | None = None

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls,
        content: str = "",
        tool_calls: list[MessageToolCall] | None = None,
        reasoning: str | None = None,
        provider_data: dict[str, Any] | None = None,
    ) -> Message:
        return cls(
            role="assistant",
            content=content,
            tool_calls=tool_calls or [],
            reasoning=reasoning,
            provider_data=provider_data,
        )

    @classmethod
    def tool(cls, results: list[ToolResultPart]) -> Message:
        return cls(role="tool", tool_results=results)
