"""A run's state as plain pydantic data: history, turn, usage, approvals and questions.

Everything a UI needs to show a run, and everything needed to persist a pending interaction,
lives here; it is updated by the run loop only.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from ._steering import SteeringItem
from .events import ApprovalRecord, QuestionRecord
from .messages import Message, Usage
from .trace import Trace

__all__ = ["OutputTypeInfo", "PromptResponse", "RunState", "RunStatus", "ToolCallProgress"]

RunStatus = Literal["pending", "running", "waiting", "success", "error", "cancelled", "interrupted"]
#: Every status a run may have, as ``RunStore.runs(status=...)`` takes it
#: (``interrupted``: the process that ran it is gone).
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)


class PromptResponse(BaseModel):
    """What a run that succeeded returns. ``messages`` is the whole conversation, history
    included. ``status`` is always ``"success"``: a run that fails or is stopped raises its
    error (``PromptCancelledError`` when stopped) instead of returning a response."""

    model_config = ConfigDict(defer_build=True)

    output: str
    usage: Usage
    messages: list[Message]
    run_id: str
    status: Literal["success"] = "success"
    #: What the model received and returned on each turn, and what each tool call did.
    trace: Trace | None = Field(default=None, exclude=True, repr=False)
    #: The validated value of a run with an ``output_type`` (``output`` stays the text); None
    #: without one.
    data: Any = None
    #: The run's ``output_type`` (None without one); an empty list's table has its columns.
    output_type: Any = Field(default=None, exclude=True, repr=False)

    def to_pandas(self) -> Any:
        """The typed result as a pandas ``DataFrame``: a row per item of a list (of models,
        dataclasses or dicts), one row for a single model; an empty list has the item type's
        columns. Needs pandas."""
        from ._output_table import to_pandas

        return to_pandas(self.data, self.output_type)


class ToolCallProgress(BaseModel):
    """How far one tool call of the current turn got (what a resumed run must not repeat)."""

    model_config = ConfigDict(defer_build=True)

    tool_call_id: str
    tool_name: str
    turn: int
    #: ``started``: ``execute`` began (it may have had side effects); ``done``: ``result`` is final.
    status: Literal["started", "done"]
    result: str | None = None
    is_error: bool = False
    args: str | None = None


class OutputTypeInfo(BaseModel):
    """What a stored run records of its ``output_type``."""

    model_config = ConfigDict(defer_build=True)

    name: str
    mode: Literal["tool", "native"]


class RunState(BaseModel):
    model_config = ConfigDict(defer_build=True)
    run_id: str
    agent_id: str
    session_id: str | None = None
    status: RunStatus = "pending"
    turn: int = 0
    #: The last turn whose model call completed (its answer is in ``messages``): below
    #: ``turn`` when the run stopped while the model answered, so that a resumed run makes
    #: that call again as the same turn. None in a run stored by an earlier version.
    answered_turn: int | None = None
    usage: Usage = Field(default_factory=Usage)
    messages: list[Message] = Field(default_factory=list)
    approvals: dict[str, ApprovalRecord] = Field(default_factory=dict)
    questions: dict[str, QuestionRecord] = Field(default_factory=dict)
    output: str | None = None
    #: The validated value of a run with an ``output_type`` that succeeded, as JSON data
    #: (what ``PromptResponse.data`` held; a sub-agent's stored result on resume).
    data: Any = None
    error: str | None = None
    cancel_reason: str | None = None
    #: Where the prompt is in ``messages`` (what came before it is the history).
    prompt_index: int = 0
    #: The tool calls of the turn in progress, by tool call id.
    calls: dict[str, ToolCallProgress] = Field(default_factory=dict)
    #: A sub-agent's run (``agent.as_tool``): the run that called it, the internal id of that
    #: tool call and its tool call id; the agents from the top-level run down to this one.
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    parent_tool_call_id: str | None = None
    #: The parent's turn that made that call (a model may give calls of two turns one id).
    parent_turn: int | None = None
    path: list[str] = Field(default_factory=list)
    #: Steering messages queued and not delivered yet, in order (``request.steer(...)``).
    steering: list[SteeringItem] = Field(default_factory=list)
    #: The id of every steering message the run has taken: one sent through the run store is
    #: taken once, even when the run is resumed.
    steered_ids: list[str] = Field(default_factory=list)
    #: How many outputs in a row failed validation (a run with an ``output_type``).
    output_failures: int = 0
    #: The run's ``output_type`` (its name and mode), or None for text: a resumed run must be
    #: given one too (its ``final_result`` calls and their fixes mean nothing without it).
    output_type: OutputTypeInfo | None = None
    #: How many tool calls of a turn run at once (``with_tool_concurrency``): a resumed run
    #: goes on as it was set (two sub-agents that waited side by side wait side by side again).
    tool_concurrency: int = 1

    def record(self, item_id: str) -> ApprovalRecord | QuestionRecord | None:
        """The approval or question ``item_id`` of this run (None when it has none)."""
        return self.approvals.get(item_id) or self.questions.get(item_id)

    def hold(self, record: ApprovalRecord | QuestionRecord) -> None:
        """Keep ``record`` as this run's approval or question (by id): the one copy a run
        holds, which the run, its interactions, the store and the views read."""
        if isinstance(record, ApprovalRecord):
            self.approvals[record.id] = record
        else:
            self.questions[record.id] = record

    def pending(self) -> list[ApprovalRecord | QuestionRecord]:
        """The approvals and questions of this run still waiting for a decision."""
        return [*self.pending_approvals(), *self.pending_questions()]

    def pending_approvals(self) -> list[ApprovalRecord]:
        return [a for a in self.approvals.values() if a.status == "pending"]

    def pending_questions(self) -> list[QuestionRecord]:
        return [q for q in self.questions.values() if q.status == "pending"]
