"""Interactions: a run's approvals and questions, the one holder of "is it pending?".

Every approval and every ``ask_question`` call put to a person is one record (an
:class:`~anvia_notebook.records.ApprovalRecord` or
:class:`~anvia_notebook.records.QuestionRecord`), opened here by the run, which then awaits its
outcome. Whoever decides it (an approval handler, a human input, a widget click,
``RunHandle.approve``, ``RunStore.approve`` in another process, the command line, its time
limit, Stop, the end of the run) goes through :meth:`Interactions.resolve`: one check
(:func:`~anvia_notebook.decisions.check_resolution`), then the first decision wins (in the run
store when there is one, by a conditional update that writes the whole record, so across
processes too) and every later one is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from . import decisions, records
from ._util import error_text, quoted, valid_data
from .decisions import Resolution
from .errors import DecisionRefusedError, HumanInputUnavailable
from .records import ApprovalRecord, DecidedBy, DecidedVia, QuestionRecord, RecordT, id_of
from .run_state import RunState

if TYPE_CHECKING:
    from .store import RunStore

__all__ = [
    "DecisionRefusedError",
    "Interactions",
    "OpenInteraction",
    "Resolution",
]

Record = ApprovalRecord | QuestionRecord
#: An interaction the run opens, stored with the run's state in one write (package-internal):
#: its record and the JSON Schema of edited arguments (``RunStore.save_run``'s ``opening``).
Opening = tuple[Record, dict[str, Any] | None]
logger = logging.getLogger("anvia_notebook")


@dataclass
class OpenInteraction:
    """One interaction the run has opened: the future the run awaits and what checks a
    decision. Its record is read from the run's state, the one copy in this process."""

    id: str
    state: RunState
    future: asyncio.Future[Resolution]
    #: The tool's input model and JSON Schema, to check edited arguments (approvals).
    input_model: type[BaseModel] | None = None
    args_schema: dict[str, Any] | None = None
    timer: asyncio.TimerHandle | None = None

    @property
    def record(self) -> Record:
        """The record as it is now (pending, or decided)."""
        record = self.state.record(self.id)
        assert record is not None
        return record


class Interactions:
    """The approvals and questions of one run (thread-safe; futures live on the run's loop).

    The records are the run state's (``state.approvals`` and ``state.questions``): this keeps
    only what waits on them (a future, a timer, the tool's input model), by id."""

    def __init__(
        self, run_id: str, store: RunStore | None = None, state: RunState | None = None
    ) -> None:
        self.run_id = run_id
        self.store = store
        #: Why the run left its store (a write failed: the error's words); None while it has
        #: it, or had none.
        self.store_lost: str | None = None
        #: What waits for a decision made through the store only (see :meth:`unless_store_lost`).
        self._through_the_store: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.state = state if state is not None else RunState(run_id=run_id, agent_id="")
        self._items: dict[str, OpenInteraction] = {}
        #: The interactions of the sub-agents' runs this run started: shown and decided here
        #: too (by id), so a nested approval surfaces on the top-level run.
        self._children: list[Interactions] = []
        #: The interactions of the run that started this sub-agent's run (None at the top).
        self._parent: Interactions | None = None
        self._lock = threading.RLock()
        #: How what the run leaves open ends, once Stop (or the runtime) asked the run to stop:
        #: Stop is a decider, and it came first, so a decision that arrives after it is refused
        #: (a click) or not recorded (a handler's, which ends as the Stop says).
        self.stopping: Resolution | None = None

    def adopt(self, child: Interactions) -> None:
        """A sub-agent's run started by this run: its interactions are listed and decided here."""
        with self._lock:
            self._children.append(child)
        child._parent = self

    def stopped_by(self) -> Resolution | None:
        """How what is left open ends when Stop reached this run or a run above it (a parent's
        Stop comes first here too, before it cancels this run, one level at a time), else None."""
        level: Interactions | None = self
        while level is not None:
            if level.stopping is not None:
                return level.stopping
            level = level._parent
        return None

    def _levels(self) -> Iterator[Interactions]:
        """These interactions, then those of the sub-agents' runs below (depth first)."""
        yield self
        with self._lock:
            children = list(self._children)
        for child in children:
            yield from child._levels()

    def _owner(self, item_id: str) -> tuple[Interactions, OpenInteraction] | None:
        """The interaction ``item_id`` of this run or of a sub-agent's run below it, with the
        interactions that hold it."""
        for level in self._levels():
            with level._lock:
                if item_id in level._items:
                    return level, level._items[item_id]
        return None

    # -- the run side ----------------------------------------------------------------------------

    def open(
        self,
        record: Record,
        *,
        input_model: type[BaseModel] | None = None,
        args_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        timeout_reason: str = "",
        save: Callable[[Sequence[Opening]], Sequence[Record | None] | None] | None = None,
    ) -> OpenInteraction:
        """Register a pending interaction (call on the run's loop); persisted when stored.

        ``input_model`` and ``args_schema`` (by default the model's) check edited arguments;
        the schema is stored with the record, for deciders in other processes.
        ``timeout`` (seconds) arms the record's time limit (``expires_at``): then it is decided
        ``timed_out`` with ``timeout_reason``. On resume the same record is opened again: a
        decision written to the store meanwhile decides it at once.

        ``save``: the run's write of its state (the conversation that asked), first, before
        the interaction is registered; given the ``(record, args_schema)`` to store in the
        same transaction (``RunStore.save_run``'s ``opening``) while this has a store, and
        nothing when it has none; it returns the records as stored, or None when it did not
        write them (then the record is written on its own, as without ``save``). Its failure
        is the run's (it leaves the store, these with it); what it raises propagates.
        """
        loop = asyncio.get_running_loop()
        # (its clock; none when reopened without a limit: an earlier run's would refuse every
        # decision once it passed)
        record.expires_at = (
            None if timeout is None else records.utc_now() + timedelta(seconds=timeout)
        )
        if args_schema is None and input_model is not None:
            args_schema = _model_schema(input_model)
        written: Sequence[Record | None] | None = None
        if save is not None:
            opening = [(record, args_schema)] if self.store is not None else []
            written = save(opening)
        interaction = OpenInteraction(
            record.id, self.state, loop.create_future(), input_model, args_schema
        )
        with self._lock:
            self.state.hold(record)
            self._items[record.id] = interaction
        if self.store is not None:
            with self._storing():
                if written:  # (stored with the run's state, as the store has it now)
                    stored = written[0]
                else:  # (not written with the run's state: on its own)
                    stored = self.store.open_interaction(record, args_schema=args_schema)
                if stored is not None and stored.status != "pending":
                    self._settle(interaction, stored, Resolution.of_record(stored))
                    return interaction
                # An edit sent through the store for this run to check (on the watcher thread):
                # decided as any decider's here, refused with the run's words when the check
                # refuses it or another decision came first (see store/_confirm.py).
                confirm = functools.partial(self._decide, record.id, ApprovalRecord)
                if stored is not None and record.kind == "approval":
                    # Edits sent while no process ran the run are checked (and recorded, or
                    # refused) first, then whatever else decides it.
                    for refused in self.store.take_queued(record.id, confirm):
                        logger.warning(
                            "The edited arguments sent for approval %s were not applied: %s",
                            record.id,
                            refused,
                        )
                    if not interaction.record.pending:
                        return interaction
                self.store.watch(
                    record.id,
                    self._from_store,
                    confirm,
                    # (its file deleted or replaced meanwhile: left as when a write fails; the
                    # file now there is not read, and the run's next write reports it)
                    lost=self._left,
                )
        if timeout is not None:
            timed_out = Resolution("timed_out", decided_by="timeout", reason=timeout_reason)
            interaction.timer = loop.call_later(
                timeout, lambda: self.resolve(interaction, timed_out)
            )
        return interaction

    async def wait(
        self,
        interaction: OpenInteraction,
        source: Awaitable[Any],
        decided_by: DecidedBy,
        decided_via: DecidedVia,
    ) -> Resolution:
        """Wait for the first decision: ``source`` (a handler's or human input's awaitable, whose
        result is an ``ApprovalDecision`` or a list of answers; one that never completes to take
        only the others) or one from elsewhere.

        Exceptions of ``source`` propagate (after it lost no decision); cancellation cancels it;
        answers that break the question contract raise ``ValueError``.
        """
        task = asyncio.ensure_future(source)
        try:
            await asyncio.wait({task, interaction.future}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not interaction.record.pending:
            # Decided elsewhere first (its wake-up may still be on its way): that decision
            # stands, whatever the source did after it (a result, a time limit, a failure).
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            future = interaction.future
            return future.result() if future.done() else Resolution.of_record(interaction.record)
        value = task.result()  # raises the source's error
        if interaction.record.kind == "approval":
            # Edited arguments are checked as any decider's are, before anything is recorded:
            # a handler's or human input's that do not fit reject the call.
            resolution = decisions.refusing_bad_edit(
                interaction.record,
                Resolution.of_decision(value, decided_by, decided_via),
                interaction.input_model,
                interaction.args_schema,
            )
            return self.resolve(interaction, resolution, check=False)
        try:
            answers = valid_data(value)  # (a lone surrogate in them: U+FFFD)
            answered = decisions.answers_resolution(
                answers, decided_by=decided_by, decided_via=decided_via
            )
            return self.resolve(interaction, answered)
        except RecursionError:
            raise ValueError(
                "Answers must be JSON data; these nest without end (they hold themselves)."
            ) from None
        except DecisionRefusedError as error:
            raise ValueError(str(error)) from None

    def resolve(
        self,
        interaction: OpenInteraction,
        resolution: Resolution,
        *,
        check: bool = True,
        claim: bool = True,
    ) -> Resolution:
        """Decide ``interaction``: checked, then the first decision wins; returns the winner.

        Raises ``DecisionRefusedError`` for a decision the check refuses. A decision that comes
        second is not an error here: the winner is returned (``decide`` and ``answer`` refuse
        it). ``claim=False``: decided here only (the run's end, which the store writes with
        the run's last state).
        """
        with self._lock:
            record = interaction.record
            if record.status != "pending":
                return Resolution.of_record(record)
            stopping = self.stopped_by()
            if stopping is not None and resolution.status != "cancelled":
                resolution = stopping  # Stop came first: a later decision is not taken
                check = False
            if check:
                decisions.check_resolution(
                    record,
                    resolution,
                    input_model=interaction.input_model,
                    args_schema=interaction.args_schema,
                )
            new = decisions.decided(record, resolution)
            if claim and self.store is not None:
                with self._storing():
                    won, current = self.store.claim(new)
                    if not won and current is not None and current.status != "pending":
                        new, resolution = current, Resolution.of_record(current)
            self._settle(interaction, new, resolution)
            return resolution

    def close_all(self, reason: str) -> list[Record]:
        """The run ends: every record of its state still pending (opened here or not) is
        closed as cancelled by the runtime. Returns the records as closed.

        Only here, in memory: the store closes them in the run's last write, the same
        transaction that ends the run (``RunStore.save_run``)."""
        closed: list[Record] = []
        for record in self.state.pending():
            interaction = self.held(record)
            resolution = Resolution("cancelled", decided_by="runtime", reason=reason)
            self.resolve(interaction, resolution, check=False, claim=False)
            self.finish(interaction)
            closed.append(interaction.record)
        return closed

    def held(self, record: Record) -> OpenInteraction:
        """The open interaction of ``record``, a record the run's state holds (call on the
        run's loop): the one opened here, or one made for it (a record stored before a resume
        that this run has not asked again)."""
        future = asyncio.get_running_loop().create_future()
        with self._lock:
            opened = OpenInteraction(record.id, self.state, future)
            return self._items.setdefault(record.id, opened)

    def correct(self, record: Record) -> None:
        """The run found a stored decision it cannot carry out: it writes what it did."""
        with self._lock:
            self.state.hold(record)
        if self.store is not None:
            with self._storing():
                self.store.save_interaction(record)

    def leave_store(self, error: BaseException) -> None:
        """The run goes on without its store (a write failed with ``error``): what it watched
        there is watched no more. The store then records what the run left open as closed,
        which is not the run's decision."""
        store = self.store
        if store is None:
            return
        self._left(error)
        with self._lock:
            watched = list(self._items)
        for item_id in watched:
            with contextlib.suppress(Exception):
                store.unwatch(item_id)

    def _left(self, error: BaseException) -> None:
        """The run has no store from now on, because of ``error`` (a write failed, or its file
        was deleted or replaced while a decision was awaited through it): what waits for a
        decision made through it only is woken, told why (see :meth:`unless_store_lost`)."""
        with self._lock:
            self.store = None
            self.store_lost = error_text(error) or type(error).__name__
            waiting, self._through_the_store = self._through_the_store, []
        for loop, lost in waiting:
            with contextlib.suppress(RuntimeError):  # (its loop has closed)
                loop.call_soon_threadsafe(_set_unless_done, lost)

    def store_lost_text(self) -> str:
        """Why no decision made through the store can reach the run (it left its store)."""
        lost = (self.store_lost or "").rstrip(". ")
        return (
            f"The run store could not be written ({lost}), so no decision made through it "
            "can reach this run."
        )

    async def unless_store_lost(self, source: Awaitable[Any]) -> Any:
        """``source`` (a wait for a decision made through the store only: ``StoreHumanInput``),
        unless the run leaves its store first: then :class:`HumanInputUnavailable`, saying why
        (a script waited for ever for a decision nobody could send it any more)."""
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self.store is None and self.store_lost is not None:  # (left meanwhile)
                if asyncio.iscoroutine(source):
                    source.close()  # (never awaited: no warning of it)
                raise HumanInputUnavailable(self.store_lost_text())
            self._through_the_store.append((loop, lost))
        task = asyncio.ensure_future(source)
        try:
            await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            with self._lock, contextlib.suppress(ValueError):
                self._through_the_store.remove((loop, lost))
            if not task.done():
                task.cancel()
        if lost.done() and not task.done():
            raise HumanInputUnavailable(self.store_lost_text())
        return task.result()

    def finish(self, interaction: OpenInteraction) -> None:
        """The run has taken the outcome: stop its timer and stop watching the store."""
        if interaction.timer is not None:
            interaction.timer.cancel()
        if self.store is not None:
            with contextlib.suppress(Exception):
                self.store.unwatch(interaction.id)

    # -- deciding from outside (widget, handle, store) --------------------------------------------

    def get(self, item_id: str) -> OpenInteraction | None:
        """The interaction ``item_id`` of this run, or of a sub-agent's run below it."""
        owned = self._owner(item_id)
        return None if owned is None else owned[1]

    @property
    def pending(self) -> list[Record]:
        """The pending approvals and questions of this run and of its sub-agents' runs, as
        copies (editing one, e.g. its ``args`` before approving with them, changes nothing of
        what the run holds)."""
        copies: list[Record] = []
        for level in self._levels():
            with level._lock:
                held = [i.record for i in level._items.values() if i.record.pending]
                copies += [record.model_copy(deep=True) for record in held]
        return copies

    def decide(
        self,
        approval_id: str | ApprovalRecord,
        *,
        approved: bool,
        reason: str | None = None,
        args: dict[str, Any] | None = None,
        decided_by: DecidedBy = "human",
        via: DecidedVia | None = None,
    ) -> ApprovalRecord:
        """Approve or reject a pending approval (from any thread); raises when refused."""
        resolution = Resolution.approval(
            approved, reason=reason, args=args, decided_by=decided_by, decided_via=via
        )
        return self._decide(approval_id, ApprovalRecord, resolution)

    def answer(
        self,
        question_id: str | QuestionRecord,
        answers: Sequence[Any],
        *,
        decided_by: DecidedBy = "human",
        via: DecidedVia | None = None,
    ) -> QuestionRecord:
        """Answer a pending question (each of its questions exactly once); raises when refused."""
        resolution = decisions.answers_resolution(answers, decided_by=decided_by, decided_via=via)
        return self._decide(question_id, QuestionRecord, resolution)

    def decline(
        self, question_id: str | QuestionRecord, *, via: DecidedVia | None = None
    ) -> QuestionRecord:
        """Decline a pending question that may be declined (one an MCP server asked): it ends
        ``cancelled``, decided by the person, and the server is told ``decline``. Raises when
        refused (an ``ask_question`` question, one already settled)."""
        return self._decide(question_id, QuestionRecord, decisions.decline_resolution(via))

    def _decide(self, item: str | Record, kind: type[RecordT], resolution: Resolution) -> RecordT:
        """Decide ``item`` of this run or below it; a decision that is not the first is refused."""
        item_id, name = id_of(item), "approval" if kind is ApprovalRecord else "question"
        owned = self._owner(item_id)
        if owned is None:
            # A record no interaction holds: decided before this process took the run up.
            for level in self._levels():
                settled = level.state.record(item_id)
                if settled is not None:
                    decisions.check_kind(settled, name)
                    raise decisions.refused_twice(settled)
            raise DecisionRefusedError(f"Unknown {name} {quoted(item_id)}.")
        owner, interaction = owned
        decisions.check_kind(interaction.record, name)
        with owner._lock:
            stopping = owner.stopped_by()
            if stopping is not None and interaction.record.pending:
                raise DecisionRefusedError(
                    f"The run is being stopped ({(stopping.reason or 'Stop').rstrip('.')}): "
                    f"this {interaction.record.kind} ends with it, undecided."
                )
            if owner.resolve(interaction, resolution) is not resolution:
                raise decisions.refused_twice(interaction.record)
            return cast(RecordT, interaction.record.model_copy(deep=True))

    # -- internals -------------------------------------------------------------------------------

    def _from_store(self, record: Record) -> None:
        """A decision another process wrote to the store (called on the watcher thread)."""
        with self._lock:
            interaction = self._items.get(record.id)
            if interaction is not None and interaction.record.pending:
                self._settle(interaction, record, Resolution.of_record(record))

    def _settle(self, interaction: OpenInteraction, record: Record, resolution: Resolution) -> None:
        """Write the decided ``record`` into the run's state, then wake the run (on its loop)."""
        self.state.hold(record)
        future = interaction.future
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            future.get_loop().call_soon_threadsafe(_set_unless_done, future, resolution)

    @contextlib.contextmanager
    def _storing(self) -> Iterator[None]:
        """A failing store is reported once and left: the run goes on without it."""
        try:
            yield
        except Exception as error:
            from .store import store_failed

            store_failed(self.store, error)
            # (what it watched there is left as it is: this may run under the lock a watcher's
            # delivery waits for)
            self._left(error)


@functools.lru_cache(maxsize=256)
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a tool's input model (made once per model), closed to keys it has no
    field of when it drops them (see :func:`decisions.closed_for_edits`)."""
    return decisions.closed_for_edits(model.model_json_schema(), model)


def _set_unless_done(future: asyncio.Future[Any], result: Any = None) -> None:
    if not future.done():
        future.set_result(result)
