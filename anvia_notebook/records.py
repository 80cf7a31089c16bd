"""Interaction records: every approval and every question put to a person, as one record.

An :class:`ApprovalRecord` or a :class:`QuestionRecord` is the single source of truth about one
interaction: the run, the widget, ``RunHandle``, the run store, the command line and the trace
all read it. :data:`Interaction` is their union, discriminated by ``kind``. How a record goes
from ``pending`` to its outcome is :func:`decided` (one function for every decider).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .errors import DecisionRefusedError
from .question_types import Answer, Question

__all__ = [
    "DEFAULT_REJECT_MESSAGE",
    "PATH_SEPARATOR",
    "ApprovalRecord",
    "ApprovalStatus",
    "DecidedBy",
    "DecidedVia",
    "Interaction",
    "InteractionBase",
    "QuestionRecord",
    "QuestionStatus",
    "RecordT",
    "approval_scope",
    "decider",
    "id_of",
    "path_label",
    "utc_now",
]

DEFAULT_REJECT_MESSAGE = "Tool approval was rejected."

ApprovalStatus = Literal["pending", "approved", "rejected", "cancelled", "timed_out"]
QuestionStatus = Literal["pending", "answered", "cancelled", "timed_out"]
#: Who decided: a person, an approval handler, a rule (always allow, the scripted operator),
#: the time limit, Stop, or the runtime itself (e.g. the run ended with it still open).
DecidedBy = Literal["human", "handler", "policy", "timeout", "stop", "runtime"]
#: Where a decision came from: the widget's buttons, ``RunHandle``, ``RunStore`` (code in any
#: process), the command line, the run's approval handler, or its human input.
DecidedVia = Literal["widget", "handle", "store", "cli", "handler", "human_input"]

_DECIDED_BY: tuple[str, ...] = DecidedBy.__args__  # type: ignore[attr-defined]


def decider(value: Any, default: DecidedBy = "runtime") -> DecidedBy:
    """``value`` as a :data:`DecidedBy`: records and decisions of earlier versions said
    ``"auto"`` for the scripted operator (a rule: ``"policy"``); anything else unknown is
    ``default``."""
    if value in _DECIDED_BY:
        return value  # type: ignore[no-any-return]
    return "policy" if value == "auto" else default


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class InteractionBase(BaseModel):
    """What an approval and a question have in common."""

    model_config = ConfigDict(defer_build=True)

    id: str
    run_id: str
    agent_id: str
    #: The agents from the top-level run down to the one that asked (one name for a plain run).
    path: list[str] = Field(default_factory=list)
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str = ""
    requested_at: datetime = Field(default_factory=utc_now)
    resolved_at: datetime | None = None
    #: When a pending interaction times out, if it has a time limit.
    expires_at: datetime | None = None
    #: (An unknown decider of an earlier version is read as :func:`decider` reads it.)
    decided_by: Annotated[
        DecidedBy | None, BeforeValidator(lambda value: None if value is None else decider(value))
    ] = None
    decided_via: DecidedVia | None = None

    @property
    def pending(self) -> bool:
        return self.status == "pending"  # type: ignore[attr-defined,no-any-return]


class ApprovalRecord(InteractionBase):
    """One approval: asked for a tool call, then decided (or cancelled, or timed out)."""

    kind: Literal["approval"] = "approval"
    args: Any
    reason: str | None = None
    #: What the model is told if the call is rejected and the decision gives no text.
    reject_message: str | None = None
    status: ApprovalStatus = "pending"
    #: The reason given with the decision; for a rejection, exactly what the model was told.
    decision_reason: str | None = None
    edited_args: Any = None
    #: The call's arguments failed validation (a typed output the model could not get right):
    #: approving it needs edited arguments that validate, the fix.
    fix_required: bool = False


class QuestionRecord(InteractionBase):
    """One ``ask_question`` call put to a person, and what became of it."""

    kind: Literal["question"] = "question"
    questions: list[Question]
    status: QuestionStatus = "pending"
    answers: list[Answer] = Field(default_factory=list)
    answered_at: datetime | None = None
    cancelled_at: datetime | None = None
    #: Why it closed without answers, when something said so (Stop's reason, its time limit,
    #: the end of the run, an MCP server that withdrew it); None when answered or declined.
    decision_reason: str | None = None
    #: The person may decline it instead of answering (a question an MCP server asked during a
    #: call): declining closes it ``cancelled``, decided by the person, and the server is told
    #: ``decline``. ``ask_question``'s own questions cannot be declined.
    declinable: bool = False


Interaction = Annotated[ApprovalRecord | QuestionRecord, Field(discriminator="kind")]
#: One kind of record (what deciding an approval or a question returns).
RecordT = TypeVar("RecordT", ApprovalRecord, QuestionRecord)


def id_of(item: str | ApprovalRecord | QuestionRecord) -> str:
    """The id of an interaction given by its id or its record (``DecisionRefusedError`` for
    anything else)."""
    if isinstance(item, (ApprovalRecord, QuestionRecord)):
        return item.id
    if not isinstance(item, str):
        raise DecisionRefusedError(
            "An approval or a question is given by its id (a text) or its record, "
            f"not {type(item).__name__}."
        )
    return item


#: Between the agents of a path as people read it (a single right-pointing angle quote).
PATH_SEPARATOR = " \u203a "


def approval_scope(path: Sequence[str], tool_name: str) -> str:
    """What an "Always allow" covers: the tool on its path of agents only, as
    :func:`path_label` writes it (allowing ``run_sql`` for the analyst under the lead allows it
    there only, not for the lead's own ``run_sql``, another path's, or another agent's tool of
    the same name in the same Studio)."""
    return path_label(path, tool_name) if path else tool_name


def path_label(path: Sequence[str], tool_name: str | None = None) -> str:
    """The agents from the top-level run down, then the tool, as people read them (e.g.
    ``lead``, ``analyst``, ``run_sql`` joined by :data:`PATH_SEPARATOR`)."""
    return PATH_SEPARATOR.join([*path, *([tool_name] if tool_name else [])])
