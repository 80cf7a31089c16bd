"""Run events: what ``PromptRequest.stream()`` yields, discriminated by ``type``.

Also the approval and question records that those events carry. Every record is plain
pydantic data so that a pending interaction can be stored and shown again later.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .messages import Message, Usage
from .models.base import ToolCall
from .question_types import Answer, Question

__all__ = [
    "ApprovalRecord",
    "ApprovalStatus",
    "CancelledEvent",
    "ErrorEvent",
    "FinalEvent",
    "GenerationStartEvent",
    "QuestionRecord",
    "QuestionStatus",
    "ReasoningDeltaEvent",
    "RunEvent",
    "TextDeltaEvent",
    "ToolApprovalRequestEvent",
    "ToolApprovalResultEvent",
    "ToolCallDeltaEvent",
    "ToolCallEvent",
    "ToolQuestionRequestEvent",
    "ToolQuestionResultEvent",
    "ToolResultEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "utc_now",
]

ApprovalStatus = Literal["pending", "approved", "rejected", "cancelled", "timed_out"]
QuestionStatus = Literal["pending", "answered", "cancelled", "timed_out"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class ApprovalRecord(BaseModel):
    """One approval: asked for a tool call, then decided (or cancelled, or timed out)."""

    model_config = ConfigDict(defer_build=True)

    id: str
    run_id: str
    agent_id: str
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    args: Any
    reason: str | None = None
    status: ApprovalStatus = "pending"
    requested_at: datetime = Field(default_factory=utc_now)
    resolved_at: datetime | None = None
    decision_reason: str | None = None
    edited_args: Any = None
    #: Who decided: ``"handler"``, ``"human"``, ``"policy"`` (e.g. always-allow) or ``"runtime"``.
    decided_by: str | None = None


class QuestionRecord(BaseModel):
    """One ``ask_question`` call put to a person, and what became of it."""

    model_config = ConfigDict(defer_build=True)

    id: str
    run_id: str
    agent_id: str
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str = ""
    questions: list[Question]
    status: QuestionStatus = "pending"
    answers: list[Answer] = Field(default_factory=list)
    requested_at: datetime = Field(default_factory=utc_now)
    answered_at: datetime | None = None
    cancelled_at: datetime | None = None


class TurnStartEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["turn_start"] = "turn_start"
    turn: int


class GenerationStartEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["generation_start"] = "generation_start"
    turn: int
    model: str


class TextDeltaEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["text_delta"] = "text_delta"
    turn: int
    delta: str


_new = object.__new__
_set = object.__setattr__


def text_delta_event(turn: int, delta: str) -> TextDeltaEvent:
    """``TextDeltaEvent(turn=turn, delta=delta)`` for values already known valid (an ``int``
    turn and a model's validated ``str`` delta): the same instance, built without validation,
    as ``model_construct`` would build it, for the per-delta path."""
    event = _new(TextDeltaEvent)
    _set(event, "__dict__", {"type": "text_delta", "turn": turn, "delta": delta})
    _set(event, "__pydantic_fields_set__", {"turn", "delta"})
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


class ReasoningDeltaEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["reasoning_delta"] = "reasoning_delta"
    turn: int
    delta: str


class ToolCallDeltaEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_call_delta"] = "tool_call_delta"
    turn: int
    id: str
    name: str | None = None
    arguments_delta: str = ""


class ToolCallEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_call"] = "tool_call"
    turn: int
    tool_call: ToolCall


class ToolApprovalRequestEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_approval_request"] = "tool_approval_request"
    approval: ApprovalRecord


class ToolApprovalResultEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_approval_result"] = "tool_approval_result"
    approval: ApprovalRecord


class ToolQuestionRequestEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_question_request"] = "tool_question_request"
    question: QuestionRecord


class ToolQuestionResultEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_question_result"] = "tool_question_result"
    question: QuestionRecord


class ToolResultEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["tool_result"] = "tool_result"
    turn: int
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    args: str
    result: str
    is_error: bool = False
    #: True when a hook's ``tool.skip(reason)`` decided the result (the tool did not execute).
    skipped: bool = False


class TurnEndEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["turn_end"] = "turn_end"
    turn: int
    usage: Usage


class FinalEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["final"] = "final"
    run_id: str
    output: str
    usage: Usage
    messages: list[Message]


class CancelledEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["cancelled"] = "cancelled"
    run_id: str
    reason: str


class ErrorEvent(BaseModel):
    """The run failed; ``error`` is the message (the exception itself is raised after it)."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["error"] = "error"
    run_id: str
    error: str
    error_type: str = "Exception"


RunEvent = Annotated[
    TurnStartEvent
    | GenerationStartEvent
    | TextDeltaEvent
    | ReasoningDeltaEvent
    | ToolCallDeltaEvent
    | ToolCallEvent
    | ToolApprovalRequestEvent
    | ToolApprovalResultEvent
    | ToolQuestionRequestEvent
    | ToolQuestionResultEvent
    | ToolResultEvent
    | TurnEndEvent
    | FinalEvent
    | CancelledEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
