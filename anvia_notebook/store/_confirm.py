"""Edited arguments decided through the run store, checked and recorded by the run's process.

``RunStore.approve(..., args=...)`` and ``python -m anvia_notebook approve --args`` check an edit
against the tool's JSON Schema, kept with the interaction; only the run, in the process that runs
it, has the tool's model, which may refuse more (a validator). So while that process is alive
(another process, or this one), the approval is not claimed by the store: it is queued in
``decision_requests``; the run's store watcher hands it to the run (``Interactions.resolve``: the
one check, then the claim, first decision wins) and marks the request ``done``, or ``refused`` with
the run's words (nothing is recorded: the approval still waits). The sender waits for that answer
(polling, within :data:`CONFIRM_TIMEOUT`). When the run's process dies first, or does not take the
request in time, the sender withdraws it and claims the approval itself, as without a live process:
the run then checks the edit when it is resumed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from .._util import new_id
from ..decisions import Resolution
from ..errors import DecisionRefusedError
from ..records import ApprovalRecord, QuestionRecord, utc_now
from ._owner import owner_alive

__all__ = ["CONFIRM_TIMEOUT", "ConfirmCallback", "DecisionRequests", "same_decision"]

logger = logging.getLogger("anvia_notebook")

Record = ApprovalRecord | QuestionRecord
#: Seconds a sender waits for a live run's process to take its decision before deciding alone.
CONFIRM_TIMEOUT = 30.0
#: Decides the interaction with the resolution in the run's process; raises
#: ``DecisionRefusedError`` (with the run's words) when the run refuses it.
ConfirmCallback = Callable[[Resolution], None]
#: What is sent of an approval, and what a record holds of a decision.
_SENT = ("reason", "args", "decided_by", "decided_via")
_DECIDED = {"status", "decided_by", "decided_via", "decision_reason", "edited_args"}


class DecisionRequests:
    """The decision requests of :class:`~anvia_notebook.store.RunStore` (a mixin: it uses the
    store's ``_q``, ``_backend``, ``_owner_of``, ``record`` and its watcher)."""

    _q: Callable[..., list[tuple[Any, ...]]]
    _backend: Any

    def _owner_of(self, run_id: str) -> tuple[Any, ...]:  # pragma: no cover - RunStore's
        raise NotImplementedError

    def record(self, item_id: str) -> Record | None:  # pragma: no cover - RunStore's
        raise NotImplementedError

    # -- the sender --------------------------------------------------------------------------

    def _decided_by_owner(
        self, owner_run: str, record: Record, resolution: Resolution, poll: float
    ) -> Record | None:
        """Send the approval of ``record`` with ``resolution`` (edited arguments) to the live
        process of ``owner_run``; wait for it (looking every ``poll`` seconds). Returns the
        record as that process left it (decided there, by this decision or an earlier one;
        pending if it died before deciding), or None when no other process is alive to ask or
        it did not take the request (then the caller claims it). Raises
        ``DecisionRefusedError`` with the run's words when it refused."""
        owner = self._owner_of(owner_run)
        if not owner_alive(*owner):
            return None
        request_id = new_id("decide")
        decision = {key: getattr(resolution, key) for key in _SENT}
        self._q(
            "INSERT INTO decision_requests (id, interaction_id, decision, status, created_at) "
            "VALUES (?, ?, ?, 'queued', ?)",
            (request_id, record.id, json.dumps(decision), utc_now().isoformat()),
        )
        deadline = time.monotonic() + CONFIRM_TIMEOUT
        while True:
            [(status, answer)] = self._q(
                "SELECT status, answer FROM decision_requests WHERE id = ?", (request_id,)
            )
            if status == "refused":
                raise DecisionRefusedError(answer)
            alive = owner_alive(*self._owner_of(owner_run))
            late = time.monotonic() - deadline
            # (read last: what the run's process did before it answered or died is in it)
            stored = self.record(record.id)
            if status == "done" or (status == "taken" and (not alive or late > CONFIRM_TIMEOUT)):
                return stored
            if status == "queued" and (not alive or late > 0 or not (stored and stored.pending)):
                if self._withdraw(request_id):
                    return None
                continue  # taken meanwhile: wait for the answer
            time.sleep(poll)

    def _withdraw(self, request_id: str) -> bool:
        """Take back a request the run's process has not taken; whether it was taken back."""
        self._q(
            "UPDATE decision_requests SET status = 'withdrawn' WHERE id = ? AND status = 'queued'",
            (request_id,),
        )
        return bool(self._backend.rowcount == 1)

    # -- the run's process -------------------------------------------------------------------

    def _deliver_requests(self, confirming: dict[str, ConfirmCallback]) -> None:
        """Hand the queued requests for interactions this process runs to their run (on the
        watcher thread) and write the answer."""
        marks = ", ".join("?" * len(confirming))
        rows = self._q(
            "SELECT id, interaction_id, decision FROM decision_requests "
            f"WHERE interaction_id IN ({marks}) AND status = 'queued' ORDER BY created_at",
            list(confirming),
        )
        for request_id, item_id, text in rows:
            self._q(
                "UPDATE decision_requests SET status = 'taken' WHERE id = ? AND status = 'queued'",
                (request_id,),
            )
            if self._backend.rowcount != 1:
                continue  # withdrawn by its sender
            refused: str | None = None
            try:
                confirming[item_id](Resolution.approval(True, **json.loads(text)))
            except DecisionRefusedError as error:
                refused = str(error)
            except Exception:  # the sender finds the approval pending and decides it alone
                logger.exception("Deciding an approval sent by another process failed")
            self._q(
                "UPDATE decision_requests SET status = ?, answer = ? WHERE id = ?",
                ("refused" if refused is not None else "done", refused, request_id),
            )


def same_decision(stored: Record, ours: Record) -> bool:
    """Whether ``stored`` holds the decision ``ours`` holds (when it was made aside)."""
    return stored.model_dump(mode="json", include=_DECIDED) == ours.model_dump(
        mode="json", include=_DECIDED
    )
