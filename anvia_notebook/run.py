"""A started run: its task, its state, its events, and how to cancel or await it."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from pydantic_core import SchemaSerializer, to_json

from ._loop import run_loop
from ._steering import Steering
from ._stored_once import MERGED_FIELD, KnownCalls, compact_events
from ._sub_run_log import (
    InteractionsOnly,
    NestLink,
    built,
    innermost_run_id,
    stored_refs,
    with_text,
    wrap_event,
)
from ._tracing import TraceRecorder
from ._util import valid_text
from .decisions import Resolution, cut_reason
from .errors import DEFAULT_CANCEL_REASON, PromptCancelledError, RunTakenOverError
from .events import RunEvent, text_delta_event
from .hooks import HOOK_TURN
from .human import through_the_store_only, warn_store_gone
from .interactions import Interactions, Opening, Record
from .records import DecidedBy
from .retry import CALL_RETRIES
from .run_state import PromptResponse, RunState, RunStatus
from .trace import Trace

if TYPE_CHECKING:
    from .request import PromptRequest
    from .store import RunStore

__all__ = ["AgentRun", "DEFAULT_CANCEL_REASON"]

logger = logging.getLogger("anvia_notebook")

Subscriber = Callable[[Any], None]
#: A subscriber's fast path for text deltas: ``on_text(turn, delta)``, no event object built.
TextSubscriber = Callable[[int, str], None]

#: Event types whose consecutive events (same turn, same call) merge into one in the log.
_MERGED_FIELD = MERGED_FIELD
#: Streamed text reaches the store at least this often (seconds).
STORE_FLUSH_INTERVAL = 1.0
#: Text deltas that come fast (:data:`_FAST` apart or less) are looked at every this many for
#: a store write that is due (a producer that never yields to the loop keeps the write timer
#: from running); slower ones each. A look per delta would cost more than the rest of a fast
#: delta's way through the run.
_DELTAS_PER_CLOCK = 64
_FAST = 0.01 / _DELTAS_PER_CLOCK
#: The clock of the store's writes (tests replace it).
_clock = time.monotonic
#: Events that end a run: what the store holds is brought up to date at once.
_RUN_ENDS = frozenset(("final", "cancelled", "error"))


@functools.cache
def _takes_opening(store_type: Any) -> bool:
    """Whether ``save_run`` of a run store type takes ``opening`` (a subclass's written before
    it did may not: the interactions are then written on their own, as they were)."""
    try:
        parameters = inspect.signature(store_type.save_run).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "opening" or p.kind is p.VAR_KEYWORD for p in parameters)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


#: Event classes whose serializer is built (their models defer building it until first used),
#: and ``dict`` (a sub-run's entry stored as a reference, see ``stored_refs``).
_BUILT: set[type] = {dict}


def _events_json(events: list[Any]) -> str:
    """``events`` as one JSON array, in one call to pydantic's serializer."""
    for cls in {type(event) for event in events} - _BUILT:
        if not isinstance(cls.__pydantic_serializer__, SchemaSerializer):
            cls.model_rebuild(force=True)
        _BUILT.add(cls)
    return to_json(events).decode()


def _mergeable(last: Any, event: Any) -> bool:
    kind = event.type
    return (
        kind in _MERGED_FIELD
        and last is not None
        and last.type == kind
        and last.turn == event.turn
        and (kind != "tool_call_delta" or (last.id == event.id and event.name in (None, last.name)))
    )


#: A subscriber: its callback, and its text-delta fast path (or None).
_Subscription: TypeAlias = "tuple[Subscriber, TextSubscriber | None]"


class _CatchUp:
    """What subscribers added from another thread missed: the run's own streaming text (its
    turn, and each subscriber's missing text), and sub-runs' text (events, one a subscriber)."""

    __slots__ = ("events", "texts", "turn")

    def __init__(self, turn: int | None) -> None:
        self.turn = turn
        self.texts: list[tuple[_Subscription, str]] = []
        self.events: list[tuple[_Subscription, Any]] = []


class _SharedText:
    """A sub-run's text that an ``agent_tool_event`` of the log shares and that was still
    growing when a replay from another thread copied it: the sub-run that streams it
    (``owner``, the innermost), its own log entry (``inner``), the log's event (``logged``) and
    how many characters the replay held."""

    __slots__ = ("inner", "length", "logged", "owner")

    def __init__(self, owner: AgentRun, inner: Any, logged: Any, length: int) -> None:
        self.owner = owner
        self.inner = inner
        self.logged = logged
        self.length = length

    def missed(self) -> str:
        """On the loop thread: the text streamed since the replay (a delta being passed on
        now included: the subscriber gets it here, not with the others)."""
        owner = self.owner
        with owner._lock:
            owner._join_parts()
            text: str = getattr(self.inner, _MERGED_FIELD[self.inner.type])
        return text[self.length :]


class _Joining:
    """A subscriber added from another thread, the length of the streaming text its replay
    held (None: no text was streaming), and the sub-runs' growing texts it held."""

    __slots__ = ("entry", "shared", "text_length")

    def __init__(
        self, entry: _Subscription, text_length: int | None, shared: list[_SharedText]
    ) -> None:
        self.entry = entry
        self.text_length = text_length
        self.shared = shared


class AgentRun:
    """One run of a :class:`~anvia_notebook.request.PromptRequest`.

    Events are pushed to subscribers synchronously, on the loop that runs the run, and kept in
    :attr:`events` as a coalesced log (consecutive text deltas of a turn merged into one event).
    With a run store the state, the interactions and the log are written through as the run
    goes. :meth:`cancel` may be called from any thread.
    """

    def __init__(
        self,
        request: PromptRequest,
        state: RunState,
        *,
        store: RunStore | None = None,
        events: list[Any] | None = None,
        resumed: bool = False,
        trace: Trace | None = None,
    ) -> None:
        self.request = request
        self.state = state
        self.store = store
        self.resumed = resumed
        #: What the model received and returned on each turn, and what each tool call did.
        self.trace = trace or Trace(run_id=state.run_id, agent_id=state.agent_id)
        agent = request.agent
        self.tracer = TraceRecorder(self.trace, model=agent.model, agent_name=agent.display_name)
        self.interactions = Interactions(state.run_id, store, state)
        #: A sub-agent's run: the run whose tool call started it (set before it starts).
        self.parent: AgentRun | None = None
        #: The sub-agents' runs this run started (``agent.as_tool``), in order.
        self.children: list[AgentRun] = []
        #: Who ended the run early: a person's Stop (``cancel()``), or the runtime (a
        #: sub-agent's call cut short by another call's failure: :meth:`cut_short`).
        self._cancelled_by: DecidedBy = "stop"
        #: Readers of :meth:`stream` (see :meth:`let_streams_catch_up`).
        self._streams = 0
        #: Set when another process resumed this run: it stops here (see :meth:`store_failed`).
        self._taken_over: RunTakenOverError | None = None
        #: The turn a resumed run took up (its interrupted sub-agent calls resume their runs).
        self.resumed_turn: int | None = state.turn if resumed else None
        #: Messages steered into the run while it goes (see :meth:`steer`).
        self.steering = Steering(self)
        self._events: list[Any] = list(events or [])
        #: Parts of the last (mergeable) event not yet joined into it.
        self._parts: list[str] = []
        self._saved_upto = len(self._events)
        #: The growing (mergeable) event the store has, and how many characters of its text:
        #: a later write adds the rest as a part instead of writing the event again.
        self._stored_growing: tuple[int, int] | None = None
        last = self._events[-1] if self._events else None
        if last is not None and last.type in _MERGED_FIELD:
            self._stored_growing = (
                len(self._events) - 1,
                len(getattr(last, _MERGED_FIELD[last.type])),
            )
        self._last_flush = _clock()
        self._flush_timer: asyncio.TimerHandle | None = None
        #: Text deltas until the next look for a store write (0: at the next one), how many
        #: there were to count down from at the last look, and when that was.
        self._store_countdown = self._store_countdown_was = 0
        self._store_looked = float("-inf")
        self._state_dirty = False
        #: Messages already in the store (they are appended, never changed).
        self._saved_messages = len(state.messages)
        #: The long tool-call arguments of the stored messages (not stored again).
        self._known = KnownCalls()
        #: A sub-agent's run whose events reach its parent's log and stream: its link there.
        self._nest: NestLink | None = None
        #: The entries of the log that stand for a sub-run's log entries: the entry's place in
        #: the sub-run's log, by the place in this log (the store keeps a reference).
        self._nested: dict[int, int] = {}
        #: The first place of the log that may hold a :class:`NestLink` (an ``agent_tool_event``
        #: not built yet), or None.
        self._unbuilt_from: int | None = None
        #: Subscribers with their text-delta fast path (or None), copied on change, never on
        #: an event (the per-delta path iterates the tuple as it is).
        self._subscribers: tuple[_Subscription, ...] = ()
        #: The ``on_text`` of the only subscriber when it has one (the per-delta fan-out of a
        #: run with one view), else None.
        self._one_text: TextSubscriber | None = None
        #: Subscribers added from another thread while the run goes on, with where their replay
        #: left the streaming text: the loop thread adds them before its next event.
        self._joining: list[_Joining] = []
        #: The turn whose ``text_delta`` is the log's last event, to which a text delta of that
        #: turn is one list append (set and cleared on the loop thread only, under the lock).
        self._text_turn: int | None = None
        #: ``_text_turn`` while no subscriber waits to be added, else None: the per-delta path
        #: checks this one attribute (a subscriber from another thread clears it).
        self._fast_turn: int | None = None
        self._task: asyncio.Task[_Outcome] | None = None
        #: The task has begun running the loop (a task cancelled before that would end with a
        #: bare ``CancelledError``, the run neither stored nor told as stopped).
        self._began = False
        #: Stop was asked before the task began: the loop stops as it begins.
        self.stopped_before_start = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done_callbacks: list[Callable[[AgentRun], None]] = []
        self._lock = threading.RLock()

    # -- identity and status -------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def path(self) -> tuple[str, ...]:
        """The agents from the top-level run down to this one."""
        return tuple(self.state.path) or (self.state.agent_id,)

    @property
    def depth(self) -> int:
        """0 for a top-level run, 1 for a sub-agent it called, and so on."""
        return len(self.path) - 1

    def adopt(self, child: AgentRun) -> None:
        """``child`` is a sub-agent's run started by one of this run's tool calls: its
        approvals and questions are this run's to show and decide too."""
        child.parent = self
        self.children.append(child)
        self.interactions.adopt(child.interactions)

    @property
    def status(self) -> RunStatus:
        """``running``, ``waiting`` (for a person), ``success``, ``error`` or ``cancelled``."""
        status = self.state.status
        if status == "running" and self._waits_for_person():
            return "waiting"
        return status

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    @property
    def lock(self) -> threading.RLock:
        """The lock that guards the run's state and log (package-internal: the run's steering
        takes it to queue and deliver messages)."""
        return self._lock

    def nest_in(
        self, parent: AgentRun, fields: dict[str, Any], keep: InteractionsOnly | None = None
    ) -> None:
        """This sub-agent's run passes its events (those ``keep`` keeps; all by default) on to
        ``parent``'s log and stream as ``agent_tool_event`` with ``fields`` (package-internal:
        :mod:`~anvia_notebook.subagents` calls it before the run starts)."""
        self._nest = NestLink(parent, self, fields, keep)

    # -- events --------------------------------------------------------------------------------

    def subscribe(
        self,
        callback: Subscriber,
        *,
        replay: bool = True,
        on_text: TextSubscriber | None = None,
    ) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (first the past ones when ``replay``).

        ``on_text(turn, delta)``, when given, is called instead of ``callback`` for a model's
        text deltas as they stream (no event object is built for it). Returns a function that
        unsubscribes. A subscriber that raises is logged and kept.
        """
        entry = (callback, on_text)
        if replay:
            self._join_children()
        with self._lock:
            self._join_parts()
            if replay:
                self._build_nested()
            past = list(self._events) if replay else []
            if past and past[-1].type in _MERGED_FIELD:
                # The log's last event still grows; the subscriber gets it as it is now, and
                # what follows as deltas of its own (the same object would hold them twice).
                past[-1] = past[-1].model_copy()
            shared: list[_SharedText] = []
            if self._nested and past:
                # So may a sub-run's text that an ``agent_tool_event`` of the log shares.
                self._freeze_shared(past, shared)
            if self._owns_log():
                self._install((*self._subscribers, entry))
            else:
                # The loop thread appends text deltas without the lock (and passes on the
                # sub-runs' without it): it adds this subscriber itself, with the text appended
                # after this replay (nothing twice, nothing lost).
                last = self._events[-1] if self._text_turn is not None else None
                length = None if last is None else len(last.delta)
                self._joining.append(_Joining(entry, length, shared))
                self._fast_turn = None
        for event in past:
            self._deliver(callback, event)

        def unsubscribe() -> None:
            with self._lock:
                self._joining = [joining for joining in self._joining if joining.entry != entry]
                subscribers = list(self._subscribers)
                if entry in subscribers:
                    subscribers.remove(entry)
                    self._install(tuple(subscribers))

        return unsubscribe

    def _freeze_shared(self, past: list[Any], shared: list[_SharedText]) -> None:
        """Replace in ``past`` each ``agent_tool_event`` whose sub-run's text still grows by a
        copy holding the text as it is now, and list those texts in ``shared``."""
        for position, event in enumerate(past):
            if event.type != "agent_tool_event":
                continue
            inner = event.event
            while inner.type == "agent_tool_event":
                inner = inner.event
            field = _MERGED_FIELD.get(inner.type)
            if field is None:
                continue
            owner = self._descendant(innermost_run_id(event))
            # The entry grows while it is its run's last (looked at before its text is read:
            # an entry that is no longer the last holds its whole text).
            if owner is None or not owner._events or owner._events[-1] is not inner:
                continue
            text = getattr(inner, field)
            past[position] = with_text(event, text)
            shared.append(_SharedText(owner, inner, event, len(text)))

    def _descendant(self, run_id: str) -> AgentRun | None:
        """The sub-run ``run_id`` among the sub-runs this run started, at any depth."""
        for child in list(self.children):
            if child.run_id == run_id:
                return child
            found = child._descendant(run_id)
            if found is not None:
                return found
        return None

    def _owns_log(self) -> bool:
        """True on the thread that appends to the log (the run's loop), or when no thread
        does (not started, or ended)."""
        loop = self._loop
        return loop is None or self.done or _running_loop() is loop

    def _install(self, subscribers: tuple[_Subscription, ...]) -> None:
        self._subscribers = subscribers
        self._one_text = subscribers[0][1] if len(subscribers) == 1 else None

    def _adopt_joining(self) -> None:
        """Add the subscribers that joined from another thread (on the loop thread, before a
        text delta): each first gets the text streamed since its replay, as one delta."""
        with self._lock:
            catch_up = self._take_joining()
        self._catch_up(catch_up)

    def _take_joining(self) -> _CatchUp | None:
        """Under the lock: add the joining subscribers, and say what text each missed (of this
        run's streaming text, and of the sub-runs' texts its replay held)."""
        joining, self._joining = self._joining, []
        self._join_parts()
        turn = self._text_turn
        missed = _CatchUp(turn)
        for item in joining:
            if item.text_length is not None and turn is not None:
                # The text event of the replay is still the last (events are appended under
                # the lock, after the joining subscribers are added).
                text = self._events[-1].delta[item.text_length :]
                if text:
                    missed.texts.append((item.entry, text))
            for shared in item.shared:
                text = shared.missed()
                if text:
                    missed.events.append((item.entry, with_text(shared.logged, text)))
            self._install((*self._subscribers, item.entry))
        self._fast_turn = turn
        if not missed.texts and not missed.events:
            return None
        return missed

    def _catch_up(self, catch_up: _CatchUp | None) -> None:
        if catch_up is not None:
            for (callback, _), event in catch_up.events:
                self._deliver(callback, event)
            turn = catch_up.turn
            if turn is not None:
                for entry, text in catch_up.texts:
                    self._fan_out_text((entry,), turn, text)

    @property
    def events(self) -> list[RunEvent]:
        """The event log so far (consecutive deltas merged)."""
        self._join_children()
        with self._lock:
            self._join_parts()
            self._build_nested()
            return self._events

    def _build_nested(self) -> None:
        """Build the ``agent_tool_event``s that the log holds as a sub-run's
        :class:`NestLink` (under the lock): each shares the sub-run's log entry (built first,
        when it stands for one of its own sub-runs' entries)."""
        start = self._unbuilt_from
        if start is None:
            return
        events = self._events
        nested = self._nested
        for position in range(start, len(events)):
            link = events[position]
            if type(link) is not NestLink:
                continue
            sub = link.run
            index = nested[position]
            entry = sub._events[index]
            if type(entry) is NestLink:
                with sub._lock:
                    sub._build_nested()
                entry = sub._events[index]
            events[position] = wrap_event(link.fields, entry)
        self._unbuilt_from = None

    def _join_children(self) -> None:
        """Join the sub-runs' streamed text into their logs' entries (which ``agent_tool_event``
        entries of this log share)."""
        for child in self.children:
            child.events  # noqa: B018 (joins, under the child's lock)

    def _join_parts(self) -> None:
        """Join the last event's parts into it (under the lock). In place: a text delta that
        the loop thread appends meanwhile (it takes no lock) stays, after the joined text."""
        parts = self._parts
        count = len(parts)
        if count > 1:
            last = self._events[-1]
            joined = "".join(parts[:count])
            parts[:count] = [joined]
            setattr(last, _MERGED_FIELD[last.type], joined)

    def share_text(self, turn: int, text: str) -> None:
        """The turn's streamed text is now also the assistant message's ``text``: keep one
        string for both (a finished run holds its text once in the log and the history)."""
        with self._lock:
            self._join_parts()
            for event in reversed(self._events):
                if event.type == "text_delta" and event.turn == turn:
                    if event.delta == text:
                        event.delta = text
                        if self._parts and self._events[-1] is event:
                            self._parts[:] = [text]
                    return
                if event.type == "turn_start":
                    return

    def emit(self, event: Any) -> None:
        with self._lock:
            # Under the lock: a subscriber from another thread has either replayed this event
            # or is added now, before it goes out.
            catch_up = self._take_joining() if self._joining else None
            last = self._events[-1] if self._events else None
            if _mergeable(last, event):
                self._parts.append(getattr(event, _MERGED_FIELD[event.type]))
                self._saved_upto = min(self._saved_upto, len(self._events) - 1)
            else:
                self._join_parts()
                if event.type in _MERGED_FIELD:
                    stored = event.model_copy()
                    self._parts = [getattr(stored, _MERGED_FIELD[event.type])]
                else:
                    stored, self._parts = event, []
                self._events.append(stored)
            self._text_turn = self._fast_turn = event.turn if event.type == "text_delta" else None
            subscribers = self._subscribers
        self._catch_up(catch_up)
        for callback, _ in subscribers:
            self._deliver(callback, event)
        nest = self._nest
        if nest is not None and (nest.keep is None or nest.keep(event)):
            # A sub-agent's run: on to its parent's log (an entry for a new one of this log's)
            # and stream. (Only the loop thread appends to the log: its last entry is this
            # event's.)
            events = self._events
            entry = events[-1]
            if entry is nest.shared:
                nest.parent.nested_event(nest, event, -1)
            else:
                nest.shared = entry
                nest.parent.nested_event(nest, event, len(events) - 1)
        if self.store is not None:
            self._record(event.type)

    def nested_event(self, link: NestLink, event: Any, index: int) -> None:
        """A sub-run's event (``link``: the sub-run's link to this run), on the loop thread.

        ``index``: the place in the sub-run's log of the entry the event added, which this
        log gets an entry for (``link`` itself, standing for its ``agent_tool_event`` until
        the log is read), or -1 when it only added to the last one (whose text grows, shared).
        Subscribers get it as an ``agent_tool_event`` (built only when there is one); so does
        this run's parent when this run is a sub-agent's (``event`` may stand for what is not
        built yet: see ``built``)."""
        up = self._nest
        if up is not None and up.keep is not None and not up.keep(event):
            up = None  # (this run is a sub-agent's whose events do not go up: not this one)
        if index < 0:
            subscribers = self._subscribers
            if self._joining:
                # The sub-run's text holds this delta already: a subscriber that joined from
                # another thread gets it with what it missed since its replay, not twice.
                self._adopt_joining()
            if not subscribers and up is None:
                return
            position = -1
        else:
            with self._lock:
                # Under the lock: a subscriber from another thread has either replayed this
                # entry or is added now, before the event goes out.
                catch_up = self._take_joining() if self._joining else None
                if self._parts:  # the log's last event is done growing
                    if len(self._parts) > 1:
                        self._join_parts()
                    self._parts = []
                events = self._events
                position = len(events)
                events.append(link)
                self._nested[position] = index
                if self._unbuilt_from is None:
                    self._unbuilt_from = position
                self._text_turn = self._fast_turn = None
                subscribers = self._subscribers
            if catch_up is not None:
                self._catch_up(catch_up)
        wrapped = None
        if subscribers:
            wrapped = wrap_event(link.fields, built(event))
            for callback, _ in subscribers:
                self._deliver(callback, wrapped)
        if up is not None:
            up.parent.nested_event(
                up, (link.fields, event) if wrapped is None else wrapped, position
            )
        if position >= 0 and self.store is not None:
            self._record("agent_tool_event")

    def nested_text(self, link: NestLink, turn: int, delta: str) -> None:
        """``nested_event`` for a text delta that continues a sub-run's streaming text (its
        per-delta path): the event is built only when a subscriber takes it."""
        subscribers = self._subscribers
        if self._joining:
            self._adopt_joining()  # (as in nested_event)
        up = self._nest
        if up is not None and up.keep is not None:
            up = None  # (text goes up only from a sub-agent's run that streams)
        if subscribers:
            wrapped = wrap_event(link.fields, text_delta_event(turn, delta))
            for callback, _ in subscribers:
                self._deliver(callback, wrapped)
            if up is not None:
                up.parent.nested_event(up, wrapped, -1)
        elif up is not None:
            up.parent.nested_event(up, (link.fields, (turn, delta)), -1)

    def emit_text(self, turn: int, delta: str) -> None:
        """``emit(TextDeltaEvent(turn=turn, delta=delta))`` for a model's validated text delta,
        on the run's loop thread: the per-delta path. A delta that continues the logged text of
        its turn is one list append, with no lock (the loop thread is the only one to append;
        readers join the parts under the lock, in place); subscribers with a text fast path
        get ``(turn, delta)``, the others one event built without validation."""
        if turn != self._fast_turn:
            if self._joining:
                self._adopt_joining()
            if turn != self._text_turn:
                self.emit(text_delta_event(turn, delta))
                return
        self._parts.append(delta)
        fast = self._one_text
        if fast is not None:
            try:
                fast(turn, delta)
            except Exception:
                logger.exception("An event subscriber failed on text_delta")
        elif self._subscribers:
            self._fan_out_text(self._subscribers, turn, delta)
        nest = self._nest
        if nest is not None and nest.keep is None:  # a sub-agent's: on to its parent's stream
            parent = nest.parent
            if parent._subscribers or parent._joining or parent._nest is not None:
                parent.nested_text(nest, turn, delta)
        if self.store is not None:
            countdown = self._store_countdown
            if countdown:
                self._store_countdown = countdown - 1
            else:  # a look at the clock: a write to set up, or one that is due
                self._text_recorded()

    def _text_recorded(self) -> None:
        """A text delta, and a look at the clock: set up the next store write, or make the one
        that is due; look again at the next delta, or at the 64th when deltas come fast (a
        write is then late by at most 63 deltas, under 10 ms unless the producer slows down
        sharply)."""
        now = _clock()
        fast = (now - self._store_looked) / (self._store_countdown_was + 1) <= _FAST
        self._store_countdown = self._store_countdown_was = _DELTAS_PER_CLOCK - 1 if fast else 0
        self._store_looked = now
        if self._flush_timer is None or now - self._last_flush >= STORE_FLUSH_INTERVAL:
            self._schedule_checkpoint()

    def _fan_out_text(
        self,
        subscribers: tuple[_Subscription, ...],
        turn: int,
        delta: str,
    ) -> None:
        event = None
        for callback, on_text in subscribers:
            if on_text is not None:
                try:
                    on_text(turn, delta)
                except Exception:
                    logger.exception("An event subscriber failed on text_delta")
            else:
                if event is None:
                    event = text_delta_event(turn, delta)
                self._deliver(callback, event)

    # -- the run store ---------------------------------------------------------------------------

    def _record(self, kind: str) -> None:
        if kind in _RUN_ENDS:
            self.checkpoint()
        elif self._flush_timer is None or _clock() - self._last_flush >= STORE_FLUSH_INTERVAL:
            self._schedule_checkpoint()
        # else: a write is already due within the interval; nothing to do for this event

    def _schedule_checkpoint(self) -> None:
        """Write what changed within :data:`STORE_FLUSH_INTERVAL` (streamed text included)."""
        if _clock() - self._last_flush >= STORE_FLUSH_INTERVAL:
            self.checkpoint()
        elif self._flush_timer is None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                self._flush_timer = self._loop.call_later(STORE_FLUSH_INTERVAL, self.checkpoint)

    def persist(
        self, *, durable: bool = False, logged: bool = False, opening: Sequence[Opening] = ()
    ) -> list[Record | None] | None:
        """The run's state changed. ``durable``: write it to the store before returning, as
        before a tool executes; otherwise within a second, in one write.

        A durable write holds what a resumed run needs so that nothing runs twice (the state
        and the conversation); the event log and the trace follow within a second, or at once
        when the run now waits for a person or a write is due anyway. ``logged`` (with
        ``durable``): they come in the same write, as at the end of a tool round (its results
        are then stored, and the transcript of a resumed run shows the round). ``opening``
        (with ``durable``): the interactions the run opens now, written in that same
        transaction (see :meth:`Interactions.open`); their records as stored are returned
        (None: they were not written, see :meth:`checkpoint`)."""
        opened: list[Record | None] | None = None
        if self.store is None:
            if durable and self._taken_over is not None:
                raise self._taken_over  # (no tool runs in a run another process took up)
            return opened
        self._state_dirty = True
        if not durable:
            self._schedule_checkpoint()
        elif opening:
            opened = self.checkpoint(opening)
        elif (
            logged
            or self._waits_for_person()
            or (_clock() - self._last_flush >= STORE_FLUSH_INTERVAL)
        ):
            self.checkpoint()
        else:
            self._save_state()
            self._schedule_checkpoint()
        if self._taken_over is not None:
            raise self._taken_over
        return opened

    def _waits_for_person(self) -> bool:
        """The state has an interaction pending (it is put there just before it opens)."""
        waiting = (c._waits_for_person() for c in self.children if not c.done)
        return bool(self.state.pending()) or any(waiting)

    def _save_state(self) -> None:
        """Write the state and the new messages (not the events, not the trace) at once."""
        store = self.store
        if store is None:
            return
        with self._lock:
            state = self.state
            self._state_dirty = False
            messages_from = self._saved_messages
            self._saved_messages = len(state.messages)
        try:
            store.save_run(self.run_id, state, (), messages_from)
        except Exception as error:
            self.store_failed(error)

    def checkpoint(self, opening: Sequence[Opening] = ()) -> list[Record | None] | None:
        """Write the changed state, the events and the trace not yet stored, and the
        interactions ``opening`` (see :meth:`persist`), all or nothing; their records as
        stored. None when they were not written: the write failed (the run left its store), or
        the store's ``save_run`` (a subclass's) takes no ``opening`` (then the caller writes
        them on their own, after this write)."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        self._last_flush = _clock()
        store = self.store
        if store is None:
            return None
        if opening and not _takes_opening(cast(Any, type(store))):
            opening = ()
        with self._lock:
            self._join_parts()
            start = self._saved_upto
            # The events not yet stored as one row (a JSON array from ``start`` on), turned
            # into JSON in one call, not one row and one call per event.
            events = self._events[start:]
            parts: list[tuple[int, int, str]] = []
            growing = self._stored_growing
            if growing is not None and growing[0] == start and events:
                # Text streamed into an event the store has: only what is new.
                offset = growing[1]
                text = getattr(events[0], _MERGED_FIELD[events[0].type])
                if len(text) > offset:
                    parts.append((start, offset, text[offset:]))
                start += 1
                events = events[1:]
            last = self._events[-1] if self._events else None
            if last is not None and last.type in _MERGED_FIELD:
                self._saved_upto = len(self._events) - 1
                field = getattr(last, _MERGED_FIELD[last.type])
                self._stored_growing = (self._saved_upto, len(field))
            else:
                self._saved_upto = len(self._events)
                self._stored_growing = None
            state = self.state if self._state_dirty else None
            self._state_dirty = False
            messages_from = self._saved_messages
            if state is not None:
                self._saved_messages = len(state.messages)
            # A long arguments text stored with the messages is not stored again (by the
            # events and the trace): what is stored by now, this write included.
            known = self._known
            conversation = self.state.messages
            known.update(conversation, self._saved_messages)
            if events:
                events = compact_events(events, known, conversation)
                if self._nested:
                    events = stored_refs(events, start, self._nested)
                rows = [(start, _events_json(events))]
            else:
                rows = []
            trace_rows = self.tracer.take_rows(known) if self.tracer.dirty else []
        if state is None and not rows and not trace_rows and not parts and not opening:
            return None
        try:
            if opening:  # (interactions opened: stored with the state, or not at all)
                opened = store.save_run(
                    self.run_id, state, rows, messages_from, trace_rows, parts, opening=opening
                )
                # (a subclass's save_run that returns nothing: read them again on their own)
                return opened if isinstance(opened, list) else None
            if parts:
                store.save_run(self.run_id, state, rows, messages_from, trace_rows, parts=parts)
            else:  # (the usual call, as a store that extends save_run expects it)
                store.save_run(self.run_id, state, rows, messages_from, trace_rows)
        except Exception as error:
            self.store_failed(error)
        return None

    def record_output(self, tool_call_id: str | None, text: str) -> None:
        """Text a tool printed or displayed while it ran (as a notebook view captured it): kept
        with the call in :attr:`trace`, and so in the store, for views drawn later. Any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and _running_loop() is not loop:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._record_output, tool_call_id, text)
            return
        self._record_output(tool_call_id, text)

    def _record_output(self, tool_call_id: str | None, text: str) -> None:
        self.tracer.tool_output(tool_call_id, text)
        if self.store is not None and self.tracer.dirty:
            self._schedule_checkpoint()

    def store_failed(self, error: BaseException) -> None:
        """A write to the run's store failed: one warning, and the run goes on in memory
        (package-internal: the run's steering calls it too). When another process resumed
        the run meanwhile, the run stops instead (it writes nothing more there): see
        :class:`~anvia_notebook.errors.RunTakenOverError`."""
        store, self.store = self.store, None
        self.interactions.leave_store(error)
        if isinstance(error, RunTakenOverError):
            logger.warning("%s", error)
            self._taken_over = error
            self.cut_short(str(error))
            return
        from .store import left_behind_text, store_failed
        from .store._errors import StoreFileGoneError

        store_failed(store, error)
        if store is not None and not isinstance(error, StoreFileGoneError):
            store.left_behind(self.run_id, left_behind_text(error))
        if through_the_store_only(self.request.active_human_input):
            # What waits for a decision made through the store cannot get one now (this run's
            # own end, saying so: see Interactions.unless_store_lost; its sub-agents' runs keep
            # their store until a write of theirs fails).
            for record in self.interactions.pending:
                if record.run_id != self.run_id:
                    warn_store_gone(record)

    @staticmethod
    def _deliver(callback: Subscriber, event: Any) -> None:
        try:
            callback(event)
        except Exception:
            logger.exception("An event subscriber failed on %s", getattr(event, "type", event))

    async def stream(self) -> AsyncIterator[RunEvent]:
        """All events of this run, past ones first, until it ends."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        end = object()

        def push(event: Any) -> None:
            if self._loop is loop or self._loop is None:
                queue.put_nowait(event)
            else:
                loop.call_soon_threadsafe(queue.put_nowait, event)

        unsubscribe = self.subscribe(push)
        self.add_done_callback(lambda _: push(end))
        self._streams += 1
        try:
            while True:
                item = await queue.get()
                if item is end:
                    return
                yield item
        finally:
            self._streams -= 1
            unsubscribe()

    async def let_streams_catch_up(self) -> None:
        """Before the run decides to end: when :meth:`stream` has readers, one pass of the
        event loop, so that a reader on this loop takes the events so far (``turn_end``) and may
        steer there, as Anvia's pulled stream lets it, before the run ends."""
        if self._streams:
            await asyncio.sleep(0)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> AgentRun:
        """Start the run as a task on ``loop`` (default: the running loop)."""
        if self._task is not None:
            raise RuntimeError("This run has already started.")
        self._loop = loop or asyncio.get_running_loop()
        self._task = self._loop.create_task(_outcome_of(self), name=f"anvia-run-{self.run_id}")
        self._task.add_done_callback(self._finished)
        return self

    def _finished(self, task: asyncio.Task[_Outcome]) -> None:
        for callback in list(self._done_callbacks):
            try:
                callback(self)
            except (Exception, SystemExit):  # (an exit would end the loop: the kernel's)
                logger.exception("A run done-callback failed")

    def add_done_callback(self, callback: Callable[[AgentRun], None]) -> None:
        """Call ``callback(run)`` once the run has ended (at once if it already has)."""
        if self.done:
            callback(self)
        else:
            self._done_callbacks.append(callback)

    def cut_short(self, reason: str | None) -> bool:
        """End the run because the runtime cut it short, not a person: a sub-agent's run whose
        call another call of the parent's turn ended (a failure, a hook's cancel), or a run
        another process took over. As :meth:`cancel`, but what it leaves open is closed by the
        runtime, saying why."""
        if not self.done and self.state.cancel_reason is None:
            self._cancelled_by = "runtime"
        return self.cancel(reason)

    def cancelled_as(self) -> Resolution:
        """How an approval or question the run's cancellation leaves open ends."""
        reason = self.state.cancel_reason or DEFAULT_CANCEL_REASON
        return Resolution("cancelled", decided_by=self._cancelled_by, reason=reason)

    def cancel(self, reason: str | None = None) -> bool:
        """Stop the run (thread-safe). Returns False when it had already ended; a run not
        started yet ends cancelled as soon as it starts. A reason longer than a decision's
        may be is cut (the stop is never refused for it)."""
        if reason is not None and not isinstance(reason, str):
            raise TypeError(
                f"The reason to stop must be a text or None, not {type(reason).__name__}."
            )
        if self._task is not None and self._task.done():
            return False
        if self.state.cancel_reason is None:
            # A lone surrogate in the reason becomes U+FFFD: the store keeps the run's end.
            self.state.cancel_reason = _at_most_a_reason(valid_text(reason or ""))
        self.interactions.stopping = self.cancelled_as()  # (decisions after it: refused)
        self.steering.stop_asked()
        loop = self._loop
        if self._task is None or loop is None:
            self.stopped_before_start = True  # not started yet: it ends cancelled as it begins
            return True
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop and not self._began:
            self.stopped_before_start = True  # the loop stops as it begins
        elif running is loop:
            self._task.cancel()
        else:
            loop.call_soon_threadsafe(self._task.cancel)
        return True

    def steer(self, message: Any) -> bool:
        """Send ``message`` (a str, a Message or a list of Messages) into the run (any thread).

        As Anvia's ``PromptRequest.steer``: queued in order (also before the run starts) and
        delivered after the current turn's tool results, or, when the model answered without
        tool calls, before the run would end, which then goes on with another turn. True when
        queued; False once the run has completed, failed or been cancelled. A blank string is
        refused (``ValueError``).
        """
        return self.steering.steer(message)

    async def wait(self) -> PromptResponse:
        """Wait for the end; returns the response or raises the run's error."""
        if self._task is None:
            raise RuntimeError("This run has not started.")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            # Shield: cancelling the waiter must not cancel the run itself.
            return (await asyncio.shield(self._task)).response()
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(_await(self._task), self._loop)
        return (await asyncio.wrap_future(future)).response()

    def result(self) -> PromptResponse:
        """The response of a finished run; raises its error (``InvalidStateError`` if running)."""
        if self._task is None or not self._task.done():
            raise asyncio.InvalidStateError(
                "The run has not finished yet: wait for it first (await handle in a notebook, "
                "await run.wait() elsewhere)."
            )
        if self._task.cancelled():
            raise PromptCancelledError(self.state.cancel_reason or DEFAULT_CANCEL_REASON)
        return self._task.result().response()

    async def ended(self) -> None:
        """Wait until the run has ended, whatever it ended with (a second Stop does not cut
        the wait short); at once when it has not started."""
        task = self._task
        if task is None:
            return
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                continue

    def __await__(self) -> Any:
        return self.wait().__await__()


async def _await(task: asyncio.Task[_Outcome]) -> _Outcome:
    return await asyncio.shield(task)


class _Outcome:
    """How a run's task ended: its response, or the error ``wait()`` and ``result()`` raise.

    The task returns this rather than raising the run's error: a run still ending when its event
    loop closes (a script's ``asyncio.run()`` returned while the run was being stopped) is then
    not reported by asyncio as an "unhandled exception" (its end is recorded all the same)."""

    __slots__ = ("_error", "_response", "_traceback")

    def __init__(self, response: PromptResponse | None, error: BaseException | None) -> None:
        self._response = response
        self._error = error
        # (raised again from where it was first raised, each time: no frames pile up)
        self._traceback = error.__traceback__ if error is not None else None

    def response(self) -> PromptResponse:
        if self._error is not None:
            raise self._error.with_traceback(self._traceback)
        assert self._response is not None
        return self._response


async def _outcome_of(run: AgentRun) -> _Outcome:
    """The run's task: the run loop, its error caught as the outcome."""
    run._began = True
    # (the run's own task: a hook's turn or a model call's retries of the code that started it
    # are not this run's)
    HOOK_TURN.set(None)
    CALL_RETRIES.set(None)
    try:
        return _Outcome(await run_loop(run), None)
    except (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as error:  # (a library's own BaseException: the run's error too)
        return _Outcome(None, error)


def _at_most_a_reason(reason: str) -> str:
    """The reason to stop as the run keeps it: the default when blank, else cut to a
    decision's reason's length (:func:`~anvia_notebook.decisions.cut_reason`)."""
    return cut_reason(reason) if reason else DEFAULT_CANCEL_REASON
