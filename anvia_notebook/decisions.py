"""Deciding an interaction: one check and one way to write the outcome into its record.

Whoever decides (an approval handler, a human input, a widget click, ``RunHandle``, ``RunStore``
in any process, the command line, a time limit, Stop, the end of a run) builds a
:class:`Resolution`; :func:`check_resolution` refuses what the run could not use (edited
arguments the tool's input does not accept, answers that break the question contract) before
anything is recorded, and :func:`decided` writes it into the record. The run and the store use
the same two functions, so they never disagree about what happened.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from ._schema_check import schema_problems
from ._util import error_text, quoted, valid_data
from .approvals import edited_args_data, normalize_decision
from .errors import DecisionRefusedError
from .output_types import format_errors
from .question_types import (
    READ_AS_QUESTIONS,
    Answer,
    QuestionInput,
    check_operator_answers,
    describe_validation_error,
    read_questions,
)
from .records import (
    DEFAULT_REJECT_MESSAGE,
    ApprovalRecord,
    DecidedBy,
    DecidedVia,
    QuestionRecord,
    decider,
    utc_now,
)

__all__ = [
    "RefusedFix",
    "Resolution",
    "Withdrawn",
    "answers_resolution",
    "check_kind",
    "check_resolution",
    "closed_for_edits",
    "decline_resolution",
    "decided",
    "refused_twice",
]

Record = ApprovalRecord | QuestionRecord
_BY: tuple[str, ...] = get_args(DecidedBy)
_VIA: tuple[str | None, ...] = (*get_args(DecidedVia), None)
Status = Literal["approved", "rejected", "answered", "cancelled", "timed_out"]


class Withdrawn(str):
    """The message of a cancelled wait for a decision when what asked withdrew its request (an
    MCP server that went away), not Stop: the interaction ends by the runtime, for this reason."""


@dataclass
class Resolution:
    """How an interaction ends: the status, who decided and from where, and the decision (the
    reason and edited arguments of an approval, the answers of a question)."""

    #: pydantic reads it too (a decision as stores of earlier versions kept it); a refused
    #: fix holds pydantic's error.
    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)

    status: Status
    decided_by: DecidedBy = "human"
    decided_via: DecidedVia | None = None
    reason: str | None = None
    args: dict[str, Any] | None = None
    answers: list[Answer] = field(default_factory=list)
    reject_message: str | None = None
    #: Set when the check turned a code decider's approval of a typed output's repair into
    #: this rejection (:func:`refusing_bad_edit`): the run ends with it.
    refused_fix: RefusedFix | None = None

    @classmethod
    def approval(
        cls,
        approved: bool,
        *,
        reason: str | None = None,
        args: Any = None,
        decided_by: DecidedBy = "human",
        decided_via: DecidedVia | None = None,
        reject_message: str | None = None,
        blank_reason_is_none: bool = True,
    ) -> Resolution:
        """Approving (with ``args``, edited arguments, if any) or rejecting. A blank reason (a
        person's empty box) is none, unless ``blank_reason_is_none`` is false: code's reason
        is kept as given, as Anvia tells the model a handler's ``reason: ""``."""
        if blank_reason_is_none and isinstance(reason, str):
            reason = reason.strip() or None
        return cls(
            "approved" if approved else "rejected",
            decided_by,
            decided_via,
            reason=reason,
            args=edited_args_data(args) if approved else None,
            reject_message=reject_message,
        )

    @classmethod
    def of_decision(cls, value: Any, decided_by: DecidedBy, decided_via: DecidedVia) -> Resolution:
        """What an approval handler or a human input returned (a bool, an
        ``ApprovalDecision`` or its dict form); its own ``decided_by`` (when it is known) and
        ``decided_via`` win."""
        decision = normalize_decision(value)
        return cls.approval(
            decision.approved,
            reason=decision.reason,
            args=decision.args,
            reject_message=decision.reject_message,
            decided_by=decider(decision.decided_by or decided_by, decided_by),
            decided_via=decision.decided_via or decided_via,
            blank_reason_is_none=False,
        )

    @classmethod
    def of_record(cls, record: Record) -> Resolution:
        """The decision a decided record holds (to apply a stored decision again)."""
        assert record.status != "pending"
        by: DecidedBy = record.decided_by or "human"
        if isinstance(record, ApprovalRecord):
            edited = record.edited_args if isinstance(record.edited_args, dict) else None
            return cls(record.status, by, record.decided_via, record.decision_reason, edited)
        reason, answers = record.decision_reason, list(record.answers)
        return cls(record.status, by, record.decided_via, reason, answers=answers)


@dataclass(frozen=True)
class RefusedFix:
    """A typed output's repair approved by code with a fix its output type refuses (``args``,
    with pydantic's ``error``), or with none (both None)."""

    args: dict[str, Any] | None = None
    error: ValidationError | None = None

    @property
    def reason(self) -> str:
        """What the rejected record says."""
        if self.error is None:
            return FIX_MISSING
        return f"The fix is not valid:\n{format_errors(self.error)}"


#: The longest reason (or reject message) a decision may give.
MAX_REASON = 20_000


def cut_reason(reason: str) -> str:
    """``reason`` cut to :data:`MAX_REASON` characters, saying so (a reason to stop, which no
    one may refuse, becomes the reason of every approval and question the stop closes)."""
    if len(reason) <= MAX_REASON:
        return reason
    note = f" … ({len(reason):,} characters, cut)"
    return reason[: MAX_REASON - len(note)] + note


def _check_values(resolution: Resolution) -> None:
    """Refuse a decider or a source the record has no word for, a reason or reject message
    that is not a text, and a decision holding text that is not valid Unicode (a lone surrogate
    such as ``\\ud800``): no store can keep it, and the run would go on unstored."""
    deciders = (("decided_by", resolution.decided_by, _BY), ("via", resolution.decided_via, _VIA))
    for name, value, known in deciders:
        if value not in known:
            words = ", ".join(map(repr, filter(None, known)))
            raise DecisionRefusedError(f"Unknown {name} {quoted(value)}: it is one of {words}.")
    for name in ("reason", "reject_message"):
        value, what = getattr(resolution, name), name.replace("_", " ")
        if value is not None and not isinstance(value, str):
            raise DecisionRefusedError(f"The {what} must be a text, not {type(value).__name__}.")
        if value is not None and len(value) > MAX_REASON:
            # (the model, the page, the trace and the store would each get a copy)
            raise DecisionRefusedError(
                f"The {what} is {len(value):,} characters long; at most {MAX_REASON:,} are "
                "kept: shorten it."
            )
    given = (resolution.reason, resolution.reject_message, resolution.args, resolution.answers)
    try:
        json.dumps(given, ensure_ascii=False, default=repr).encode("utf-8")
    except UnicodeEncodeError as error:
        raise DecisionRefusedError(
            "The decision is not valid text: it holds a character that is half of a surrogate "
            f"pair (or a byte that was not UTF-8), {error.object[error.start]!a}, which cannot "
            "be stored."
        ) from None
    except (TypeError, ValueError, RecursionError):
        return  # not JSON at all: the checks of the arguments and answers say why


def check_resolution(
    record: Record,
    resolution: Resolution,
    *,
    input_model: type[BaseModel] | None = None,
    args_schema: Mapping[str, Any] | None = None,
) -> None:
    """Refuse (``DecisionRefusedError``) what the run could not use; puts the resolution's
    answers in question order.

    Edited arguments (with an approval) must be a JSON object that fits the tool's JSON Schema
    ``args_schema`` (kept with the interaction) and, in the run's process, its input model
    ``input_model``; answers must answer each question exactly once; only a question that
    may be declined is declined by a person.
    """
    status = resolution.status
    if status in ("approved", "rejected", "answered"):
        check_kind(record, "question" if status == "answered" else "approval")
    if record.status != "pending":
        raise refused_twice(record)
    _check_values(resolution)
    if isinstance(record, ApprovalRecord):
        if status == "approved" and resolution.args is not None:
            _check_args(record.tool_name, resolution.args, input_model, args_schema)
        elif status == "approved" and record.fix_required:
            raise DecisionRefusedError(
                f"The {record.tool_name} arguments are not valid as they are: approve them with "
                "edited arguments that fix the errors, or reject them."
            )
    elif status == "cancelled" and resolution.decided_by == "human" and not record.declinable:
        raise DecisionRefusedError(
            f"The question {record.id!r} cannot be declined: answer it (or stop the run)."
        )
    elif status == "answered":
        checked = check_operator_answers(record.questions, resolution.answers)
        if isinstance(checked, str):
            raise DecisionRefusedError(checked)
        resolution.answers = checked


_A_KIND = {"approval": "an approval", "question": "a question"}


def check_kind(record: Record, kind: str) -> None:
    """Refuse the decision of a ``kind`` given the id of the other kind's ``record``."""
    if record.kind != kind:
        raise DecisionRefusedError(f"{record.id!r} is {_A_KIND[record.kind]}, not {_A_KIND[kind]}.")


#: How what the model is told of a call begins when its approval came with edited arguments
#: that do not fit the tool.
EDIT_REFUSED = "Edited arguments were rejected: "
#: What the model is told first in the result of a call approved with other arguments than it
#: sent: its call stays in the history as it made it, so it would say it did what it asked.
RAN_WITH_EDITS = "[Approved with changed arguments: {args}]\n"
#: What a typed output's repair approved by code without a fix is recorded with.
FIX_MISSING = "Approved without a fix."


def refusing_bad_edit(
    record: Record,
    resolution: Resolution,
    input_model: type[BaseModel] | None,
    args_schema: Mapping[str, Any] | None,
) -> Resolution:
    """An approval handler's or human input's ``resolution`` as it can be recorded: an approval
    whose edited arguments :func:`check_resolution` would refuse becomes the rejection of the
    call, saying why (code cannot be asked again, as a person is). A typed output's repair
    needs a fix its output type (``input_model``, as the run validates it) accepts: one
    missing or refused is a rejection that keeps what was refused (``refused_fix``), with which
    the run ends."""
    if resolution.status != "approved":
        return resolution
    by, via = resolution.decided_by, resolution.decided_via
    if isinstance(record, ApprovalRecord) and record.fix_required:
        refused = _refused_fix(resolution.args, input_model)
        if refused is None:
            return resolution
        return Resolution("rejected", by, via, reason=refused.reason, refused_fix=refused)
    if resolution.args is None:
        return resolution
    try:
        _check_args(record.tool_name, resolution.args, input_model, args_schema)
    except DecisionRefusedError as error:
        return Resolution("rejected", by, via, reason=f"{EDIT_REFUSED}{error}")
    return resolution


def _refused_fix(args: Any, input_model: type[BaseModel] | None) -> RefusedFix | None:
    """None when ``args`` is a fix the output type's model accepts, else what was refused."""
    if not isinstance(args, dict):
        return RefusedFix()
    try:
        if input_model is not None:
            input_model.model_validate(args)
    except ValidationError as error:
        return RefusedFix(args, error)
    return None


def answers_resolution(
    answers: Sequence[Any], *, decided_by: DecidedBy = "human", decided_via: DecidedVia | None
) -> Resolution:
    """A resolution answering a question with ``answers`` (checked by :func:`check_resolution`)."""
    if isinstance(answers, (str, bytes, Mapping)) or not isinstance(answers, Sequence):
        raise DecisionRefusedError(
            "Answers must be a list of {questionId, answer, choice?, custom?} objects."
        )
    return Resolution("answered", decided_by, decided_via, answers=list(answers))


def decline_resolution(decided_via: DecidedVia | None) -> Resolution:
    """A person declining a question that may be declined (checked by :func:`check_resolution`):
    it ends ``cancelled``, decided by the person, with no answers."""
    return Resolution("cancelled", decided_by="human", decided_via=decided_via)


def _check_args(
    tool_name: str,
    args: Any,
    input_model: type[BaseModel] | None,
    args_schema: Mapping[str, Any] | None,
) -> None:
    """Edited arguments must be a JSON object that fits the tool's JSON Schema (the same check
    in every process: the schema is kept with the interaction) and, in the run's process, that
    its input model accepts (a rule the schema cannot say, such as a validator)."""
    if not isinstance(args, dict):
        raise DecisionRefusedError("The edited arguments must be a JSON object.")
    not_json = _not_json(args)
    if not_json is not None:
        raise DecisionRefusedError(f"The edited arguments must be JSON: {not_json}.")
    problems = ""
    if args_schema is not None and not args_schema.get(READ_AS_QUESTIONS):
        problems = _unknown_keys(args_schema, args)
    if args_schema is not None and not problems:
        as_questions = bool(args_schema.get(READ_AS_QUESTIONS))
        read = read_questions(args) if as_questions else args
        problems = "; ".join(schema_problems(args_schema, read))
        if as_questions and input_model is None:  # (their own rules are known everywhere)
            input_model = QuestionInput
    if not problems and input_model is not None:
        try:
            input_model.model_validate(args)
        except ValidationError as error:
            problems = describe_validation_error(error)
        except Exception as error:  # a validator of the tool's that raised (a bug in it)
            problems = f"checking them raised {type(error).__name__}: {error_text(error)}"
    if problems:
        raise DecisionRefusedError(
            f"The edited arguments are not valid for {tool_name}: {problems}"
        )


def closed_for_edits(schema: dict[str, Any], input_model: type[BaseModel] | None) -> dict[str, Any]:
    """The JSON Schema edited arguments are checked against (and kept with the interaction, for
    every process): a tool's input model that drops keys it has no field of (pydantic's
    default) says so, ``additionalProperties: false``, so such an edit is refused, not recorded
    as what the tool ran with. A model that takes any key (an MCP tool's) leaves it open."""
    if input_model is None or input_model.model_config.get("extra") not in (None, "ignore"):
        return schema
    if not isinstance(schema.get("properties"), Mapping) or "additionalProperties" in schema:
        return schema
    return {**schema, "additionalProperties": False}


def _unknown_keys(schema: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    """Keys of edited arguments a schema closed to them (``additionalProperties: false``) has
    no property of, said as the tool's arguments it has."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or schema.get("additionalProperties") is not False:
        return ""
    unknown = [key for key in args if key not in properties]
    if not unknown:
        return ""
    named = ", ".join(repr(key) for key in unknown)
    known = ", ".join(properties) or "none"
    verb = "is" if len(unknown) == 1 else "are"
    return f"{named} {verb} not among its arguments ({known})"


#: How deep edited arguments may nest (the record that keeps them must be written as JSON).
MAX_ARGS_DEPTH = 100


def _not_json(args: dict[str, Any]) -> str | None:
    """Why ``args`` cannot be kept as the same JSON in every process (NaN or Infinity, which
    JSON has no numbers for; nesting deeper than :data:`MAX_ARGS_DEPTH`), or None."""
    level: list[Any] = [args]
    for _ in range(MAX_ARGS_DEPTH):
        inner: list[Any] = []
        seen: set[int] = set()  # (a container held many times is looked into once per level)
        for value in level:
            if isinstance(value, (dict, list, tuple)):
                if id(value) in seen:
                    continue
                seen.add(id(value))
            if isinstance(value, float) and not math.isfinite(value):
                return "NaN and Infinity are not JSON numbers"
            if not isinstance(value, (dict, list, tuple, str, int, float, bool, type(None))):
                return f"a value of type {type(value).__name__} has no JSON form"
            if isinstance(value, dict):
                if not all(isinstance(key, str) for key in value):
                    return "the keys of an object must be texts"
                inner.extend(value.values())
            elif isinstance(value, (list, tuple)):
                inner.extend(value)
        if not inner:
            return None
        level = inner
    return f"they are nested more than {MAX_ARGS_DEPTH} levels deep"


def refused_twice(record: Record) -> DecisionRefusedError:
    status = record.status.replace("_", " ")
    return DecisionRefusedError(
        f"This {record.kind} is already {status}; a second decision is refused."
    )


def rejection_text(resolution: Resolution, record: ApprovalRecord) -> str:
    """What the model is told of a rejected call: the first given of the decision's reject
    message, its reason, the request's reject message, and the default text. As in Anvia
    (``??``), only a missing text is passed over: an empty one is told as it is."""
    texts = (resolution.reject_message, resolution.reason, record.reject_message)
    return next((text for text in texts if text is not None), DEFAULT_REJECT_MESSAGE)


def decided(record: Record, resolution: Resolution) -> Record:
    """A copy of ``record`` with ``resolution`` written in: the status, who decided and from
    where, when, and the approval's reason and edited arguments or the question's answers."""
    now, status = utc_now(), resolution.status
    update: dict[str, Any] = {
        "status": status,
        "decided_by": resolution.decided_by,
        "decided_via": resolution.decided_via,
        "resolved_at": now,
    }
    if isinstance(record, ApprovalRecord):
        rejected = status == "rejected"
        update["decision_reason"] = (
            rejection_text(resolution, record) if rejected else resolution.reason
        )
        update["edited_args"] = resolution.args if status == "approved" else None
    else:
        answered = status == "answered"
        update["answers"] = list(resolution.answers) if answered else []
        update["decision_reason"] = None if answered else resolution.reason
        update["answered_at" if answered else "cancelled_at"] = now
    # What code decided (a handler, a human input, a hook, Stop) may hold a lone surrogate:
    # U+FFFD instead, as nothing could store it (a person's decision was refused above).
    return record.model_copy(update=valid_data(update), deep=True)
