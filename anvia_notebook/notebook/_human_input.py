"""``WidgetHumanInput``: approvals and questions decided by the person at the widget.

The run owns each pending approval and question (``run.interactions``, persisted in the run
store); the widget's ``approval_decision`` and ``question_answers`` messages decide them there
(the session calls ``interactions.decide`` / ``interactions.answer``), which refuses unknown or
already decided ids, edited arguments that the tool's input model rejects, and answers that do
not answer each question exactly once. This input only waits (up to ``timeout``), approves the
tools the person chose to "Always allow" in this session, or lets the scripted operator decide.

The scripted operator (for headless runs, e.g. nbclient executing the tutorial notebooks): when
the environment variable ``ANVIA_NOTEBOOK_AUTO`` is set, the input decides by itself, right after
the request is shown, as a rule (``decided_by="policy"``, ``decided_via="human_input"``):

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
import copy
import json
import os
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..approvals import ApprovalDecision, ToolApprovalRequest
from ..human import HumanInputUnavailable, StoreHumanInput
from ..question_types import Answer, Question, describe_validation_error
from ..questions import QuestionRequest
from ..records import approval_scope

__all__ = ["AUTO_ENV", "AutoOperator", "WidgetHumanInput"]

#: The environment variable that turns on the scripted operator.
AUTO_ENV = "ANVIA_NOTEBOOK_AUTO"
FIRST_CHOICE = "first-choice"
ALWAYS_ALLOWED_REASON = "Always allowed in this session."


class _Rule(BaseModel):
    """A scripted operator's rule as written (in ``ANVIA_NOTEBOOK_AUTO`` or in code)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    approve: bool | dict[str, bool] = True
    answers: dict[str, str] = {}
    default_answer: str = FIRST_CHOICE
    reason: str | None = None


class AutoOperator(_Rule):
    """A scripted operator: how to decide approvals and answer questions without a person."""

    #: Where the rule came from (named in the reason of each decision).
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
        return cls(**dict(rule), source=source)

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
        return ApprovalDecision(approved=approved, reason=reason, decided_by="policy")

    def answer(self, questions: Sequence[Question]) -> list[Answer]:
        return [self._answer(question) for question in questions]

    def _answer(self, question: Question) -> Answer:
        wanted = self.answers.get(question.id, self.default_answer)
        if wanted == FIRST_CHOICE:
            wanted = question.choices[0].value
        choice = next((c for c in question.choices if wanted in (c.value, c.label)), None)
        return Answer.picking(question, choice, wanted)


class WidgetHumanInput(StoreHumanInput):
    """A :class:`~anvia_notebook.HumanInput` answered from the notebook widget.

    It asks nothing itself: each approval and question waits, as the run's pending interaction,
    for the widget's buttons (or ``RunHandle.approve``, the run store, the command line), which
    decide it through the run's interactions. ``timeout`` (seconds) applies to each approval and
    question; ``auto`` is a scripted operator rule (default: the ``ANVIA_NOTEBOOK_AUTO``
    variable, ``False``: never). Tools in :attr:`always_allowed` are approved without asking.
    """

    #: Decisions come from the page too: a run without a store can still be decided.
    decided_through_the_store_only = False

    def __init__(
        self,
        timeout: float | None = None,
        *,
        auto: AutoOperator | str | Literal[False] | None = None,
    ) -> None:
        super().__init__(timeout)
        if auto is None:
            auto = AutoOperator.from_env()
        elif isinstance(auto, str):
            auto = AutoOperator.parse(auto)
        self.auto = auto or None
        #: Tools approved for the rest of this session ("Always allow"), each on its path of
        #: agents, as ``subagents.approval_scope`` writes it (the agents, then the tool).
        self.always_allowed: set[str] = set()

    def __repr__(self) -> str:
        return f"WidgetHumanInput(timeout={self.timeout!r}, auto={self.auto is not None})"

    def for_session(self) -> WidgetHumanInput:
        """This human input for one widget session (a ``show()``, a Studio session): the same
        time limit and operator rule and the tools allowed so far, while "Always allow" clicked
        there is kept in the copy only (an agent's own human input would carry it into every
        later session, New session included)."""
        clone = copy.copy(self)
        clone.always_allowed = set(self.always_allowed)
        return clone

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision:
        if request.fix_required:
            # A typed output's fix is written by a person: "Always allow" approves nothing
            # here (it would approve no fix), and a scripted operator has none to give.
            if self.auto is not None:
                raise HumanInputUnavailable("A scripted operator cannot write a fix.")
            return await super().approve(request)
        if approval_scope(request.run.path, request.tool_name) in self.always_allowed:
            return ApprovalDecision(
                approved=True,
                reason=ALWAYS_ALLOWED_REASON,
                decided_by="policy",
                decided_via="widget",  # (ticked there: 'Approved by "Always allow"')
            )
        if self.auto is not None:
            await asyncio.sleep(0)
            return self.auto.decide(request)
        return await super().approve(request)

    async def ask(self, request: QuestionRequest) -> list[Answer]:
        if self.auto is not None:
            await asyncio.sleep(0)
            return self.auto.answer(request.questions)
        return await super().ask(request)
