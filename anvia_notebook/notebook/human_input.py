"""``WidgetHumanInput``: approvals and questions decided by the person at the widget.

``approve`` and ``ask`` wait on asyncio futures keyed by the approval / question id that the
run already emitted (``tool_approval_request`` / ``tool_question_request``); the widget's
``approval_decision`` and ``question_answers`` messages resolve them through :meth:`decide` and
:meth:`answer`, which refuse (return an error text, change nothing) unknown or already decided
ids, edited arguments that the tool's input model rejects, and answers that do not answer each
question exactly once with a non-empty text. "Always allow <tool> in this session" approves
later calls of that tool through the same input with ``decided_by="policy"`` without asking.

The scripted operator (for headless runs, e.g. nbclient executing the tutorial notebooks): when
the environment variable ``ANVIA_NOTEBOOK_AUTO`` is set, the input decides by itself, right after
the request is shown, with ``decided_by="auto"``:

- ``approve``: approve every call; answer every question with its first choice;
- ``reject``: reject every call (the model is told the scripted operator rejected it); answer
  questions with their first choice;
- ``first-choice``: the same as ``approve``;
- a JSON rule, e.g. ``{"approve": true, "answers": {"priority": "high"},
  "default_answer": "first-choice"}``: ``approve`` is a bool or a map from tool name to bool
  (``"*"`` for the others, default true); ``answers`` maps a question id to a choice value or
  label (that choice is picked) or any other text (a custom answer); ``default_answer`` is
  ``"first-choice"`` (the default) or a text used as a custom answer; ``reason`` is an optional
  text recorded with each decision.

``WidgetHumanInput(auto=False)`` ignores the variable; ``auto="approve"`` (or an
:class:`AutoOperator`) sets the rule in code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..approvals import ApprovalDecision, ToolApprovalRequest
from ..human import with_timeout
from ..question_types import Answer, Question, check_operator_answers, describe_validation_error
from ..questions import QuestionRequest

__all__ = ["AUTO_ENV", "AutoOperator", "WidgetHumanInput"]

#: The environment variable that turns on the scripted operator.
AUTO_ENV = "ANVIA_NOTEBOOK_AUTO"
FIRST_CHOICE = "first-choice"
ALWAYS_ALLOWED_REASON = "Always allowed in this session."

T = TypeVar("T")


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    approve: bool | dict[str, bool] = True
    answers: dict[str, str] = {}
    default_answer: str = FIRST_CHOICE
    reason: str | None = None


@dataclass(frozen=True)
class AutoOperator:
    """A scripted operator: how to decide approvals and answer questions without a person."""

    approve: bool | Mapping[str, bool] = True
    answers: Mapping[str, str] = field(default_factory=dict)
    default_answer: str = FIRST_CHOICE
    reason: str | None = None
    source: str = "code"

    @classmethod
    def parse(cls, text: str) -> AutoOperator | None:
        """Read a rule (``approve``, ``reject``, ``first-choice`` or JSON); blank means none."""
        value = text.strip()
        if not value or value.lower() in ("0", "off", "false", "no", "none"):
            return None
        source = f"{AUTO_ENV}={value}" if not value.startswith("{") else AUTO_ENV
        if value.lower() in ("approve", "first-choice", "1", "true", "yes"):
            return cls(approve=True, source=source)
        if value.lower() == "reject":
            return cls(approve=False, source=source)
        try:
            rule = _Rule.model_validate(json.loads(value))
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{AUTO_ENV} must be approve, reject, first-choice or a JSON rule; got {value!r} "
                f"({error.msg})."
            ) from None
        except ValidationError as error:
            raise ValueError(
                f"{AUTO_ENV} has an invalid JSON rule: {describe_validation_error(error)}"
            ) from None
        return cls(
            approve=rule.approve,
            answers=dict(rule.answers),
            default_answer=rule.default_answer,
            reason=rule.reason,
            source=source,
        )

    @classmethod
    def from_env(cls) -> AutoOperator | None:
        return cls.parse(os.environ.get(AUTO_ENV, ""))

    def approves(self, tool_name: str) -> bool:
        if isinstance(self.approve, bool):
            return self.approve
        return bool(self.approve.get(tool_name, self.approve.get("*", True)))

    def decide(self, request: ToolApprovalRequest) -> ApprovalDecision:
        approved = self.approves(request.tool_name)
        verb = "Approved" if approved else "Rejected"
        reason = self.reason or f"{verb} by the scripted operator ({self.source})."
        return ApprovalDecision(approved=approved, reason=reason, decided_by="auto")

    def answer(self, questions: Sequence[Question]) -> list[Answer]:
        answers = []
        for question in questions:
            wanted = self.answers.get(question.id, self.default_answer)
            if wanted == FIRST_CHOICE:
                wanted = question.choices[0].value
            choice = next((c for c in question.choices if wanted in (c.value, c.label)), None)
            if choice is not None:
                answers.append(
                    Answer(question_id=question.id, answer=choice.value, choice=choice.value)
                )
            else:
                answers.append(Answer(question_id=question.id, answer=wanted, custom=True))
        return answers


@dataclass
class _Pending(Generic[T]):
    request: Any
    future: asyncio.Future[T]


def _settle(future: asyncio.Future[T], value: T) -> None:
    """Resolve ``future`` from any thread; harmless when it is already done or its loop closed."""

    def apply() -> None:
        if not future.done():
            future.set_result(value)

    loop = future.get_loop()
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        apply()
        return
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
        loop.call_soon_threadsafe(apply)


class WidgetHumanInput:
    """A :class:`~anvia_notebook.HumanInput` answered from the notebook widget.

    ``timeout`` (seconds) applies to each approval and question; ``auto`` is a scripted operator
    rule (default: the ``ANVIA_NOTEBOOK_AUTO`` variable, ``False``: never).
    """

    def __init__(
        self,
        timeout: float | None = None,
        *,
        auto: AutoOperator | str | Literal[False] | None = None,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        self.timeout = timeout
        if auto is None:
            self.auto = AutoOperator.from_env()
        elif auto is False:
            self.auto = None
        elif isinstance(auto, str):
            self.auto = AutoOperator.parse(auto)
        else:
            self.auto = auto
        #: Tools approved for the rest of this session ("Always allow").
        self.always_allowed: set[str] = set()
        self._approvals: dict[str, _Pending[ApprovalDecision]] = {}
        self._questions: dict[str, _Pending[list[Answer]]] = {}
        self._closed: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"WidgetHumanInput(timeout={self.timeout!r}, auto={self.auto is not None})"

    # -- what a run awaits ---------------------------------------------------------------------

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision:
        if request.tool_name in self.always_allowed:
            return ApprovalDecision(
                approved=True, reason=ALWAYS_ALLOWED_REASON, decided_by="policy"
            )
        if self.auto is not None:
            await asyncio.sleep(0)
            return self.auto.decide(request)
        return await self._wait(self._approvals, request.approval_id, request)

    async def ask(self, request: QuestionRequest) -> list[Answer]:
        if self.auto is not None:
            await asyncio.sleep(0)
            return self.auto.answer(request.questions)
        return await self._wait(self._questions, request.question_id, request)

    async def _wait(self, table: dict[str, _Pending[T]], key: str, request: Any) -> T:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._lock:
            table[key] = _Pending(request, future)
        try:
            result: T = await with_timeout(future, self.timeout)
            return result
        finally:
            with self._lock:
                table.pop(key, None)
                self._closed.add(key)

    # -- what the widget calls -----------------------------------------------------------------

    @property
    def pending_approval_ids(self) -> list[str]:
        with self._lock:
            return [k for k, p in self._approvals.items() if not p.future.done()]

    @property
    def pending_question_ids(self) -> list[str]:
        with self._lock:
            return [k for k, p in self._questions.items() if not p.future.done()]

    def _claim(self, table: dict[str, _Pending[T]], key: str, what: str) -> _Pending[T] | str:
        pending = table.get(key)
        if pending is None or pending.future.done():
            if key in self._closed or pending is not None:
                return f"This {what} is already decided."
            return f"Unknown {what} {key!r}."
        return pending

    def decide(
        self,
        approval_id: str,
        *,
        approved: bool,
        reason: str | None = None,
        edited_args: dict[str, Any] | None = None,
        always_allow: bool = False,
    ) -> str | None:
        """Decide a pending approval; returns an error text (and changes nothing) if refused."""
        with self._lock:
            pending = self._claim(self._approvals, approval_id, "approval")
            if isinstance(pending, str):
                return pending
            request: ToolApprovalRequest = pending.request
            args: dict[str, Any] | None = None
            if approved and edited_args is not None:
                if not isinstance(edited_args, dict):
                    return "The edited arguments must be a JSON object."
                if request.input_model is not None:
                    try:
                        request.input_model.model_validate(edited_args)
                    except ValidationError as error:
                        return (
                            f"The edited arguments are not valid for {request.tool_name}: "
                            f"{describe_validation_error(error)}"
                        )
                args = edited_args
            reason = (reason or "").strip() or None
            decision = ApprovalDecision(approved=approved, reason=reason, args=args)
            del self._approvals[approval_id]
            self._closed.add(approval_id)
            others: list[_Pending[ApprovalDecision]] = []
            if approved and always_allow:
                self.always_allowed.add(request.tool_name)
                for key, other in list(self._approvals.items()):
                    if other.request.tool_name == request.tool_name and not other.future.done():
                        others.append(other)
                        del self._approvals[key]
                        self._closed.add(key)
        _settle(pending.future, decision)
        policy = ApprovalDecision(approved=True, reason=ALWAYS_ALLOWED_REASON, decided_by="policy")
        for other in others:
            _settle(other.future, policy)
        return None

    def answer(self, question_id: str, answers: Sequence[Mapping[str, Any] | Any]) -> str | None:
        """Answer a pending question; returns an error text (and changes nothing) if refused."""
        with self._lock:
            pending = self._claim(self._questions, question_id, "question")
            if isinstance(pending, str):
                return pending
            request: QuestionRequest = pending.request
            checked = check_answers(request.questions, answers)
            if isinstance(checked, str):
                return checked
            del self._questions[question_id]
            self._closed.add(question_id)
        _settle(pending.future, checked)
        return None


check_answers = check_operator_answers
