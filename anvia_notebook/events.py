"""Run events: what ``PromptRequest.stream()`` yields, discriminated by ``type``.

The approval and question records that some of them carry live in :mod:`.records` (imported
here too, for code that reads them from this module).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .messages import Message, Usage
from .models.base import ToolCall
from .records import ApprovalRecord, ApprovalStatus, QuestionRecord, QuestionStatus, utc_now

__all__ = [
    "AgentToolEvent",
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
    "SteeringMessageEvent",
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
    #: Media the tool returned besides its text (an MCP tool's images): each
    #: ``{"type": "image", "media_type": ..., "data": <base64>}``. The model reads only a short
    #: placeholder for each in ``result``.
    parts: list[dict[str, Any]] = Field(default_factory=list)


class TurnEndEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["turn_end"] = "turn_end"
    turn: int
    usage: Usage


class SteeringMessageEvent(BaseModel):
    """A message steered into the run (``request.steer(...)``, ``RunStore.steer``, the widget's
    message box) has joined the conversation; ``turn`` is the model call that first sees it."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["steering_message"] = "steering_message"
    turn: int
    message: Message


class FinalEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["final"] = "final"
    run_id: str
    output: str
    usage: Usage
    messages: list[Message]
    #: The validated value of a run with an ``output_type``, as JSON data (None without one).
    data: Any = None
    #: The output type maps keys to records (``dict[str, Model]``): the value is a table of a
    #: row per key, as ``PromptResponse.to_pandas()`` makes it (one record is one row).
    keyed: bool = False


class CancelledEvent(BaseModel):
    model_config = ConfigDict(defer_build=True)
    type: Literal["cancelled"] = "cancelled"
    run_id: str
    reason: str
    #: The tokens the run used until it was cancelled (as Anvia's terminal events carry them).
    usage: Usage = Field(default_factory=Usage)


class ErrorEvent(BaseModel):
    """The run failed; ``error`` is the message (the exception itself is raised after it)."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["error"] = "error"
    run_id: str
    error: str
    error_type: str = "Exception"
    #: The tokens the run used until it failed (a failed model call's own included, once).
    usage: Usage = Field(default_factory=Usage)


class AgentToolCall(BaseModel):
    """The fields of an ``agent_tool_event`` that say which tool call of the parent run runs
    which sub-agent's run (the store's reference to such an event has them too)."""

    model_config = ConfigDict(defer_build=True)

    type: str
    #: The parent's turn, and its tool call that runs the sub-agent.
    turn: int
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    #: The sub-agent and its run.
    agent_id: str
    agent_name: str | None = None
    run_id: str


class AgentToolEvent(AgentToolCall):
    """An event of a sub-agent's run (``agent.as_tool(stream=True)``), passed on in the stream
    of the run whose tool call started it; ``event`` may itself be one, a level further down."""

    type: Literal["agent_tool_event"] = "agent_tool_event"
    event: RunEvent


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
    | SteeringMessageEvent
    | FinalEvent
    | CancelledEvent
    | ErrorEvent
    | AgentToolEvent,
    Field(discriminator="type"),
]
