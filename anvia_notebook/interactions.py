"""Interactions: a run's approvals and questions, the one place that says "is it pending?".

Every approval and every ``ask_question`` call put to a person is one :class:`Interaction`,
owned by the run: its record (an :class:`~anvia_notebook.events.ApprovalRecord` or
:class:`~anvia_notebook.events.QuestionRecord`), the request it answers, and the future the run
awaits. Whoever decides it (an approval handler, a human input, a widget click,
``RunHandle.approve``, ``RunStore.approve`` in another process, the command line) goes through
:meth:`Interactions.resolve`: the first decision wins (in the run store when there is one, by a
conditional update, so across processes too) and every later one is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from .approvals import ApprovalDecision, ToolApprovalRequest, rejection_text
from .errors import DecisionRefusedError
from .events import ApprovalRecord, QuestionRecord, utc_now
from .question_types import Answer, check_operator_answers, describe_validation_error

if TYPE_CHECKING:
    from .questions import QuestionRequest
    from .store import RunStore

__all__ = [
    "DecisionRefusedError",
    "Interaction",
    "Interactions",
    "Resolution",
    "record_resolution",
]

logger = logging.getLogger("anvia_notebook")

Status = Literal["approved", "rejected", "answered", "cancelled", "timed_out"]


@dataclass
class Resolution:
    """How an interaction ended: the status, and the decision or the answers."""

    status: Status
    decided_by: str = "human"
    reason: str | None = None
    args: dict[str, Any] | None = None
    answers: list[Answer] = field(default_factory=list)
    reject_message: str | None = None

    @classmethod
    def from_decision(cls, decision: ApprovalDecision, decided_by: str) -> Resolution:
        return cls(
            status="approved" if decision.approved else "rejected",
            decided_by=decision.decided_by or decided_by,
            reason=decision.reason,
            args=decision.args if decision.approved else None,
            reject_message=decision.reject_message,
        )

    @property
    def approved(self) -> bool:
        """Whether this is an approval: the status says what was decided."""
        return self.status == "approved"

    def stored(self) -> dict[str, Any]:
        """The decision as the store keeps it (JSON)."""
        if self.status == "answered":
            return {"answers": [a.to_wire() for a in self.answers], "decided_by": self.decided_by}
        return {
            "approved": self.approved,
            "reason": self.reason,
            "args": self.args,
            "decided_by": self.decided_by,
            "reject_message": self.reject_message,
        }

    @classmethod
    def from_stored(cls, status: str, decision: dict[str, Any] | None) -> Resolution:
        data = decision or {}
        answers = [Answer.model_validate(a) for a in data.get("answers") or []]
        return cls(
            status=status,  # type: ignore[arg-type]
            decided_by=str(data.get("decided_by") or "human"),
            reason=data.get("reason"),
            args=data.get("args"),
            answers=answers,
            reject_message=data.get("reject_message"),
        )

    def decision(self) -> ApprovalDecision:
        return ApprovalDecision(
            approved=self.approved,
            reason=self.reason,
            args=self.args,
            reject_message=self.reject_message,
            decided_by=self.decided_by,
        )


def record_resolution(
    interaction: Interaction,
    resolution: Resolution,
    record: ApprovalRecord | QuestionRecord | None = None,
) -> ApprovalRecord | QuestionRecord:
    """Write ``resolution`` into the interaction's record (or into ``record``, a copy of it):
    the status, who decided, and for an approval the reason as the model is told it and the
    edited arguments, for a question the answers. Returns the record written."""
    record = interaction.record if record is None else record
    if isinstance(record, ApprovalRecord):
        record.status = resolution.status  # type: ignore[assignment]
        record.decided_by = resolution.decided_by
        if resolution.status == "rejected":
            # What the model is told (the tool result) is what the record says, as in Anvia.
            request = interaction.request
            assert isinstance(request, ToolApprovalRequest)
            record.decision_reason = rejection_text(resolution.decision(), request)
        else:
            record.decision_reason = resolution.reason
        if resolution.status == "approved":
            record.edited_args = resolution.args
        record.resolved_at = utc_now()
    else:
        record.status = resolution.status  # type: ignore[assignment]
        record.answers = list(resolution.answers) if resolution.status == "answered" else []
        if resolution.status == "answered":
            record.answered_at = utc_now()
        else:
            record.cancelled_at = utc_now()
    return record


@dataclass
class Interaction:
    """One pending (or decided) approval or question of a run."""

    record: ApprovalRecord | QuestionRecord
    request: ToolApprovalRequest | QuestionRequest | None
    future: asyncio.Future[Resolution]
    resolution: Resolution | None = None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def kind(self) -> Literal["approval", "question"]:
        return "approval" if isinstance(self.record, ApprovalRecord) else "question"

    @property
    def pending(self) -> bool:
        return self.resolution is None and self.record.status == "pending"


class Interactions:
    """The approvals and questions of one run (thread-safe; futures live on the run's loop)."""

    def __init__(self, run_id: str, store: RunStore | None = None) -> None:
        self.run_id = run_id
        self.store = store
        self._items: dict[str, Interaction] = {}
        self._lock = threading.RLock()

    # -- the run side ----------------------------------------------------------------------------

    def open(
        self,
        record: ApprovalRecord | QuestionRecord,
        request: ToolApprovalRequest | QuestionRequest | None,
    ) -> Interaction:
        """Register a pending interaction (call on the run's loop); persisted when stored.

        On resume the same record is opened again: a decision written to the store while no
        process owned the run resolves it at once.
        """
        future: asyncio.Future[Resolution] = asyncio.get_running_loop().create_future()
        interaction = Interaction(record, request, future)
        with self._lock:
            self._items[record.id] = interaction
        if self.store is not None:
            try:
                self.store.open_interaction(record)
                earlier = self.store.decision(record.id)
                if earlier is not None and earlier[0] != "pending":
                    self._settle(interaction, Resolution.from_stored(*earlier))
                else:
                    self.store.watch(record.id, lambda s, d: self._from_store(record.id, s, d))
            except Exception as error:
                self._store_failed(error)
        return interaction

    async def wait(
        self,
        interaction: Interaction,
        source: Awaitable[Any] | None,
        decided_by: str,
    ) -> Resolution:
        """Wait for the first decision: ``source`` (a handler's or human input's awaitable, whose
        result is an ``ApprovalDecision`` or a list of answers) or one from elsewhere.

        Exceptions of ``source`` propagate (after it lost no decision); cancellation cancels it.
        """
        if source is None:
            return await asyncio.shield(interaction.future)
        task = asyncio.ensure_future(source)
        try:
            await asyncio.wait({task, interaction.future}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if interaction.future.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            return interaction.future.result()
        value = task.result()  # raises the source's error
        if isinstance(value, Resolution):
            resolution = value
        elif interaction.kind == "approval":
            resolution = Resolution.from_decision(value, decided_by)
        else:
            resolution = Resolution("answered", decided_by=decided_by, answers=list(value))
        return self.resolve(interaction, resolution)

    def resolve(self, interaction: Interaction, resolution: Resolution) -> Resolution:
        """Decide ``interaction`` unless someone was first; returns the winning resolution."""
        with self._lock:
            if interaction.resolution is not None:
                return interaction.resolution
            if self.store is not None:
                try:
                    won, status, stored = self.store.claim(
                        interaction.id, resolution.status, resolution.stored()
                    )
                except Exception as error:
                    self._store_failed(error)
                else:
                    if not won and status is not None and status != "pending":
                        resolution = Resolution.from_stored(status, stored)
            self._settle(interaction, resolution)
            return resolution

    def close(self, interaction: Interaction) -> None:
        """The run has recorded the outcome: write the final record, stop watching."""
        if self.store is not None:
            try:
                self.store.unwatch(interaction.id)
                self.store.save_interaction(interaction.record)
            except Exception as error:
                self._store_failed(error)

    # -- deciding from outside (widget, handle, store) --------------------------------------------

    def get(self, item_id: str) -> Interaction | None:
        with self._lock:
            return self._items.get(item_id)

    @property
    def pending(self) -> list[ApprovalRecord | QuestionRecord]:
        with self._lock:
            return [i.record for i in self._items.values() if i.pending]

    def status(self, item_id: str) -> str | None:
        """``pending``, the final status, or None for an id this run never showed."""
        interaction = self.get(item_id)
        if interaction is None:
            return None
        if interaction.resolution is not None:
            return interaction.resolution.status
        return interaction.record.status

    def _claimable(self, item_id: str, kind: str) -> Interaction:
        interaction = self.get(item_id)
        if interaction is None or interaction.kind != kind:
            raise DecisionRefusedError(f"Unknown {kind} {item_id!r}.")
        if not interaction.pending:
            status = self.status(item_id) or "decided"
            raise DecisionRefusedError(
                f"This {kind} is already {status.replace('_', ' ')}; a second decision is refused."
            )
        return interaction

    def decide(
        self,
        approval_id: str,
        *,
        approved: bool,
        reason: str | None = None,
        args: dict[str, Any] | None = None,
        decided_by: str = "human",
    ) -> ApprovalRecord:
        """Approve or reject a pending approval (from any thread); raises when refused.

        Edited ``args`` (with an approval) must be a JSON object that the tool's input model
        accepts.
        """
        with self._lock:
            interaction = self._claimable(approval_id, "approval")
            request = interaction.request
            if approved and args is not None:
                if not isinstance(args, dict):
                    raise DecisionRefusedError("The edited arguments must be a JSON object.")
                model = getattr(request, "input_model", None)
                if model is not None:
                    try:
                        model.model_validate(args)
                    except ValidationError as error:
                        raise DecisionRefusedError(
                            f"The edited arguments are not valid for "
                            f"{interaction.record.tool_name}: {describe_validation_error(error)}"
                        ) from None
            reason = (reason or "").strip() or None
            resolution = Resolution(
                status="approved" if approved else "rejected",
                decided_by=decided_by,
                reason=reason,
                args=args if approved else None,
            )
            winner = self.resolve(interaction, resolution)
            if winner is not resolution:
                raise DecisionRefusedError(
                    f"This approval is already {winner.status.replace('_', ' ')}; a second "
                    "decision is refused."
                )
        decided = self._as_decided(interaction, resolution)
        assert isinstance(decided, ApprovalRecord)
        return decided

    def answer(
        self, question_id: str, answers: Sequence[Any], *, decided_by: str = "human"
    ) -> QuestionRecord:
        """Answer a pending question (each of its questions exactly once); raises when refused."""
        with self._lock:
            interaction = self._claimable(question_id, "question")
            assert isinstance(interaction.record, QuestionRecord)
            checked = check_operator_answers(interaction.record.questions, answers)
            if isinstance(checked, str):
                raise DecisionRefusedError(checked)
            resolution = Resolution("answered", decided_by=decided_by, answers=checked)
            winner = self.resolve(interaction, resolution)
            if winner is not resolution:
                raise DecisionRefusedError(
                    f"This question is already {winner.status.replace('_', ' ')}; a second "
                    "answer is refused."
                )
        decided = self._as_decided(interaction, resolution)
        assert isinstance(decided, QuestionRecord)
        return decided

    # -- internals -------------------------------------------------------------------------------

    @staticmethod
    def _as_decided(
        interaction: Interaction, resolution: Resolution
    ) -> ApprovalRecord | QuestionRecord:
        """The record as the decision leaves it. The run's own record changes when its loop
        takes the decision (at once when the decision is made on another thread): until then,
        a copy with the decision written in."""
        record = interaction.record
        if record.status != "pending":
            return record.model_copy(deep=True)
        return record_resolution(interaction, resolution, record.model_copy(deep=True))

    def _from_store(self, item_id: str, status: str, decision: dict[str, Any]) -> None:
        """A decision another process wrote to the store (called on the watcher thread)."""
        interaction = self.get(item_id)
        if interaction is None:
            return
        with self._lock:
            if interaction.resolution is None:
                self._settle(interaction, Resolution.from_stored(status, decision))

    def _settle(self, interaction: Interaction, resolution: Resolution) -> None:
        interaction.resolution = resolution
        future = interaction.future

        def apply() -> None:
            if not future.done():
                future.set_result(resolution)

        loop = future.get_loop()
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            apply()
        else:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(apply)

    def _store_failed(self, error: BaseException) -> None:
        from .store import store_failed

        store_failed(self.store, error)
        self.store = None
