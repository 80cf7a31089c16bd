"""Edited arguments decided through the run store, checked and recorded by the run's process.

``RunStore.approve(..., args=...)`` and ``python -m anvia_notebook approve --args`` check an edit
against the tool's JSON Schema, kept with the interaction; only the run, in the process that runs
it, has the tool's model, which may refuse more (a validator). So such an approval is never
claimed by the store: it is queued in ``decision_requests`` for the run, which takes it through
the one check and claim (``Interactions.resolve``: first decision wins) and marks the request
``done``, or ``refused`` with the run's words (nothing is recorded: the approval still waits).

While the run's process is alive (another process, or this one), its store watcher takes the
request and the sender waits for that answer (polling, within :data:`CONFIRM_TIMEOUT`). When no
process runs the run, or it dies or does not answer in time, the request stays queued and the
sender is told so: the run takes it when it is resumed (:meth:`DecisionRequests.take_queued`,
before anything else decides the approval), or, alive but slow, when it gets to it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from .._util import error_text, new_id
from ..decisions import Resolution, refused_twice
from ..errors import DecisionRefusedError
from ..records import ApprovalRecord, QuestionRecord, utc_now
from ._owner import owner_alive, store_clock

__all__ = ["CONFIRM_TIMEOUT", "ConfirmCallback", "DecisionRequests", "same_decision"]

logger = logging.getLogger("anvia_notebook")

Record = ApprovalRecord | QuestionRecord
#: Seconds a sender waits for a live run's process to answer (then its request stays queued).
CONFIRM_TIMEOUT = 30.0
#: Decides the interaction with the resolution in the run's process; raises
#: ``DecisionRefusedError`` (with the run's words) when the run refuses it (what it returns is
#: not used).
ConfirmCallback = Callable[[Resolution], object]
#: What is sent of an approval, and what a record holds of a decision.
_SENT = ("reason", "args", "decided_by", "decided_via")
_DECIDED = {"status", "decided_by", "decided_via", "decision_reason", "edited_args"}


class DecisionRequests:
    """The decision requests of :class:`~anvia_notebook.store.RunStore` (a mixin: it uses the
    store's ``_q``, ``_backend``, ``_owner_of``, ``record`` and its watcher)."""

    _q: Callable[..., list[tuple[Any, ...]]]
    _backend: Any
    _owner_of: Callable[[str], tuple[Any, ...]]
    record: Callable[[str], Record | None]

    # -- the sender --------------------------------------------------------------------------

    def _send_to_run(
        self, owner_run: str, record: Record, resolution: Resolution, poll: float
    ) -> Record:
        """Queue the approval of ``record`` with ``resolution`` (edited arguments) for the run
        of ``owner_run``; while its process is alive, wait for its answer (looking every
        ``poll`` seconds). Returns the record as stored then: decided (by this decision, or an
        earlier one), or still pending with the request queued for the run (no live process,
        or none that answered in time). Raises ``DecisionRefusedError`` with the run's words
        when the run refused it."""
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
            owner = self._owner_of(owner_run)
            alive = owner_alive(*owner, now=store_clock(self._backend))
            # (read last: what the run's process did before it answered or died is in it)
            stored = self.record(record.id)
            assert stored is not None
            if status == "done":
                return stored
            if not stored.pending:
                # Decided, and not (yet) said to be by this request: only "done" says it is.
                if status == "queued" and not self._move(request_id, "withdrawn"):
                    continue  # the run's process took it meanwhile: its answer comes
                if status == "taken":
                    if time.monotonic() <= deadline and (alive or not owner[1]):
                        # Being checked (the run may have ended since: its process still
                        # answers): the answer says whose decision this is.
                        time.sleep(poll)
                        continue
                    # Its taker died (or does not answer): what was recorded is all there is
                    # to go by (the caller tells the sender it won when it holds its edit),
                    # unless another request is said to have made that decision.
                    if self._done_by_another(record.id, request_id):
                        raise refused_twice(stored)
                    return stored
                # Another decision came first (the same edit sent by someone else, maybe): this
                # one was never applied, so its sender is told it was refused.
                raise refused_twice(stored)
            if not alive and status == "taken":
                self._move(request_id, "queued", "taken")  # its taker died before deciding
            if not alive or time.monotonic() > deadline:
                return stored
            time.sleep(poll)

    def _done_by_another(self, item_id: str, request_id: str) -> bool:
        """Whether the run answered another request for ``item_id`` that it made the decision
        (the same edit sent by two people: the run's process, ending, may never answer the
        second one it took)."""
        return bool(
            self._q(
                "SELECT 1 FROM decision_requests WHERE interaction_id = ? AND id <> ? "
                "AND status = 'done'",
                (item_id, request_id),
            )
        )

    def _move(self, request_id: str, status: str, only_from: str = "queued") -> bool:
        """Set a request's ``status`` if it is ``only_from`` (``withdrawn``: the sender takes
        back a request the run's process has not taken); whether it was."""
        self._q(
            "UPDATE decision_requests SET status = ? WHERE id = ? AND status = ?",
            (status, request_id, only_from),
        )
        return bool(self._backend.rowcount == 1)

    def close_requests(self, item_id: str, why: str) -> None:
        """Another decision was recorded first: the edits still queued for ``item_id`` are
        refused (``why``), never applied."""
        self._q(
            "UPDATE decision_requests SET status = 'refused', answer = ? "
            "WHERE interaction_id = ? AND status = 'queued'",
            (why, item_id),
        )

    def edit_requests(self, item_id: str) -> list[tuple[str, dict[str, Any], str | None]]:
        """The edits sent for approval ``item_id`` that the run has not recorded: ``(status,
        the edited arguments, the run's words when it refused them)``, oldest first; status
        ``queued`` (waiting for the run) or ``refused``."""
        rows = self._q(
            "SELECT status, decision, answer FROM decision_requests WHERE interaction_id = ? "
            "AND status IN ('queued', 'taken', 'refused') ORDER BY created_at",
            (item_id,),
        )
        return [
            ("refused" if status == "refused" else "queued", json.loads(text)["args"], answer)
            for status, text, answer in rows
        ]

    # -- the run's process -------------------------------------------------------------------

    def take_queued(self, item_id: str, confirm: ConfirmCallback) -> list[str]:
        """On resume, before anything else may decide approval ``item_id``: hand the edits
        queued for it while no process ran the run to ``confirm`` (the run's one check and
        claim), oldest first. Returns the run's words for each one it refused.

        A request a process had taken and not answered when it died (this process runs the run
        now) is queued again first, or it would wait for ever, said to wait for the run.

        Looked for first: a run with nothing sent for it (the usual case) writes nothing here."""
        open_requests = self._q(
            "SELECT status FROM decision_requests "
            "WHERE interaction_id = ? AND status IN ('queued', 'taken')",
            (item_id,),
        )
        if not open_requests:
            return []
        if any(status == "taken" for (status,) in open_requests):
            self._q(
                "UPDATE decision_requests SET status = 'queued' "
                "WHERE interaction_id = ? AND status = 'taken'",
                (item_id,),
            )
        return self._deliver_requests({item_id: confirm})

    def _deliver_requests(self, confirming: dict[str, ConfirmCallback]) -> list[str]:
        """Hand the queued requests for interactions this process runs to their run (on the
        watcher thread) and write the answer; returns the refusals' words."""
        marks = ", ".join("?" * len(confirming))
        rows = self._q(
            "SELECT id, interaction_id, decision FROM decision_requests "
            f"WHERE interaction_id IN ({marks}) AND status = 'queued' ORDER BY created_at",
            list(confirming),
        )
        refusals: list[str] = []
        for request_id, item_id, text in rows:
            if not self._move(request_id, "taken"):
                continue  # withdrawn by its sender
            refused: str | None = None
            try:
                confirming[item_id](Resolution.approval(True, **json.loads(text)))
            except DecisionRefusedError as error:
                refused = str(error)
            except Exception as error:  # the approval still waits; the edit is not applied
                logger.exception("Deciding an approval sent by another process failed")
                refused = f"The run could not take this decision: {error_text(error)}"
            self._q(
                "UPDATE decision_requests SET status = ?, answer = ? WHERE id = ?",
                ("refused" if refused is not None else "done", refused, request_id),
            )
            if refused is not None:
                refusals.append(refused)
        return refusals


def same_decision(stored: Record, ours: Record) -> bool:
    """Whether ``stored`` holds the decision ``ours`` holds (when it was made aside)."""
    return stored.model_dump(mode="json", include=_DECIDED) == ours.model_dump(
        mode="json", include=_DECIDED
    )
