"""Steering: messages a person sends into a run while it goes (Anvia's ``PromptRequest.steer``).

Messages are queued in order and delivered as given (a string as a user message) after the
current turn's tool results, or, when the model answered without tool calls, before the run would
end, which then goes on with another turn. Once the run has completed, failed or been cancelled,
``steer`` returns False.

The queue lives in the run's state (``RunState.steering``), so a message steered while the run
waits for a person is stored with it: a resumed run delivers it exactly once. Messages sent from
another process (``RunStore.steer``, the command line) are rows of the store's ``steering`` table;
the run takes each row once (by its id, recorded in ``RunState.steered_ids``) and then marks it
taken.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ._util import check_steering_text, check_valid_text, new_id, quoted, running_loop
from .events import SteeringMessageEvent
from .messages import Message

if TYPE_CHECKING:
    from .run import AgentRun

__all__ = ["Steering", "SteeringItem", "steering_messages", "storable"]

logger = logging.getLogger("anvia_notebook")


class SteeringItem(BaseModel):
    """One queued steering message and its id (a store row's id when it came from the store)."""

    model_config = ConfigDict(defer_build=True)

    id: str
    message: Message


def steering_messages(value: Any) -> list[Message]:
    """What ``steer(value)`` delivers: a string as one user message, a Message, or a list of
    Messages as given. A blank string and anything else are refused with a clear error."""
    if isinstance(value, str):
        check_steering_text(value)
        return [Message.user(value)]
    if isinstance(value, Message):
        return _well_formed([storable(value)])
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("steer() was given an empty list: nothing to send into the run.")
        for number, item in enumerate(value, start=1):
            if not isinstance(item, Message):
                raise TypeError(
                    "steer() takes a str, a Message or a list of Messages; item "
                    f"{number} is {type(item).__name__}."
                )
        return _well_formed([storable(item) for item in value])
    raise TypeError(
        f"steer() takes a str, a Message or a list of Messages, not {type(value).__name__}."
    )


def _well_formed(messages: list[Message]) -> list[Message]:
    """``messages``, refused (``ValueError``) when a provider would refuse the conversation
    they make: a message with no text (and no tool calls), a tool call without its result (a
    tool message must answer the calls of a steered assistant message, in the same steer),
    a tool result of no steered call, tool calls or results on the wrong role."""
    waiting: list[str] = []  # the steered calls not answered yet
    for number, message in enumerate(messages, start=1):
        which = "The steered message" if len(messages) == 1 else f"Steered message {number}"
        if message.role == "tool":
            if not message.tool_results or message.tool_calls:
                raise ValueError(f"{which} is a tool message: it holds tool results only.")
            for result in message.tool_results:
                if result.tool_call_id not in waiting:
                    raise ValueError(
                        f"{which} holds the result of the tool call "
                        f"{quoted(result.tool_call_id)}, which no steered assistant message "
                        "before it made."
                    )
                waiting.remove(result.tool_call_id)
            continue
        if waiting:
            break
        if message.tool_results:
            raise ValueError(f"{which} holds tool results: only a tool message may.")
        if message.role == "user" and message.tool_calls:
            raise ValueError(f"{which} holds tool calls: only an assistant message may.")
        if not message.content.strip() and not message.tool_calls:
            raise ValueError(f"{which} needs some text; this one is empty.")
        waiting.extend(call.id for call in message.tool_calls)
    if waiting:
        raise ValueError(
            f"The steered tool call {quoted(waiting[0])} has no result: a steered assistant "
            "message's tool calls must be answered by a tool message right after it."
        )
    return messages


def storable(message: Message, what: str = "A steered message") -> Message:
    """``message``, refused when its texts are not valid text (the run's store could not keep
    it, and the run would go on unstored); ``what`` names it in the error."""
    try:
        message.model_dump_json()
    except Exception:
        for text in _texts(message.model_dump()):
            check_valid_text(text, what)
        raise
    return message


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _texts(item)]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _texts(item)]
    return []


def last_turn(max_turns: int) -> int:
    """The number of a run's last model call (as in Anvia, ``max_turns + 2`` calls at most)."""
    return max_turns + 2


def new_items(messages: Sequence[Message]) -> list[SteeringItem]:
    return [SteeringItem(id=new_id("steer"), message=message) for message in messages]


class Steering:
    """The steering side of one :class:`~anvia_notebook.run.AgentRun` (thread-safe where said)."""

    def __init__(self, run: AgentRun) -> None:
        self._run = run
        #: True once the run has decided to end (or has ended): ``steer`` returns False.
        self.closed = False
        self._watched: Any = None  # the store watched for rows (kept if the run drops it)
        self._closed_in_store = False  # the store refuses messages to this run already
        #: True once Stop was asked: the run will end without reading another message.
        self.stopping = False
        #: True once the run has ended: what is queued stays unread (said at its end).
        self.ended = False

    # -- queueing (any thread) -------------------------------------------------------------------

    def steer(self, value: Any) -> bool:
        """Queue ``value``; True when it will be delivered, False when the run has ended."""
        return self.queue(new_items(steering_messages(value)))

    def queue(self, items: Sequence[SteeringItem]) -> bool:
        run = self._run
        with run.lock:
            if self.closed or self.stopping or run.done:
                return False
            state = run.state
            known = set(state.steered_ids)
            added = [item for item in items if item.id not in known]
            state.steering.extend(added)
            state.steered_ids.extend(item.id for item in added)
        if added:
            # Stored before anything else happens to the run: a steer made while it waits
            # for a person outlives the kernel.
            self._on_loop(lambda: run.persist(durable=True))
        return True

    def _on_loop(self, action: Any) -> None:
        loop = self._run.loop
        if loop is None or self._run.done:
            return  # not started: the run's first write stores the state
        if running_loop() is loop:
            action()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(action)

    # -- from the run store ----------------------------------------------------------------------

    def start(self) -> None:
        """On the run's loop, as it starts: take what was sent to it through the store before,
        and watch for more."""
        run = self._run
        store = run.store
        if store is None:
            return
        try:
            store.watch_steering(run.run_id, self._from_watcher)
            self._watched = store
            self._take_stored(store.queued_steering(run.run_id))
        except Exception as error:
            run.store_failed(error)

    def stop(self) -> None:
        store, self._watched = self._watched, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.unwatch_steering(self._run.run_id)

    def _from_watcher(self, items: list[SteeringItem]) -> None:
        """Rows another process queued (called on the store's watcher thread)."""
        self._on_loop(lambda: self._take_stored(items))

    def _take_stored(self, items: Sequence[SteeringItem]) -> list[SteeringItem]:
        """Queue the rows this run has not taken yet, store the state, then mark every row
        taken (on the run's loop). Returns the rows newly queued."""
        run = self._run
        if not items or self.stopping or self.ended:  # (taken as unread by end)
            return []
        with run.lock:
            known = set(run.state.steered_ids)
        fresh = [item for item in items if item.id not in known]
        if fresh:
            with run.lock:
                self.closed = False  # (the run goes on: see before_end)
            self.queue(fresh)
        store = run.store
        if store is not None:
            try:
                store.steering_taken(run.run_id, [item.id for item in items])
            except Exception as error:
                run.store_failed(error)
        return fresh

    # -- delivering (the run's loop) -------------------------------------------------------------

    def deliver(self, turn: int) -> bool:
        """Put the queued messages into the conversation (``turn``: the model call that will
        first see them); True when there were any. When the turn limit leaves no such call, they
        stay queued: the run ends (``MaxTurnsError``) with them unread, as after a Stop."""
        run = self._run
        state = run.state
        with run.lock:
            if turn > last_turn(run.request.max_turn_count):
                return bool(state.steering)
            items, state.steering = list(state.steering), []
        for item in items:
            state.messages.append(item.message)
        if items:
            run.persist(durable=True)
            for item in items:
                run.emit(SteeringMessageEvent(turn=turn, message=item.message))
        return bool(items)

    def before_end(self, turn: int) -> bool:
        """The model answered without tool calls: deliver what is queued (True: the run goes
        on with another turn), or close the run to steering (False: it ends)."""
        self._close_unless_queued()
        return self.deliver(turn)

    def waits_at_end(self) -> bool:
        """A typed output's ``final_result`` is about to end the run: close the run to steering
        unless messages wait (True: the run goes on, and they are delivered after this round's
        tool results, as :meth:`before_end` would)."""
        return self._close_unless_queued()

    def _close_unless_queued(self) -> bool:
        """Close the run to steering when nothing is queued (in the store too, which may hand
        over what another process sent meanwhile); True when messages wait."""
        run = self._run
        with run.lock:
            if not run.state.steering:
                self.closed = True
        if self.closed and run.store is not None:
            self._close_in_store()
        with run.lock:
            return bool(run.state.steering)

    def _close_in_store(self) -> None:
        """Close the run to ``RunStore.steer``; what another process queued meanwhile is taken
        (and reopens the run)."""
        run = self._run
        store = run.store
        assert store is not None
        for _ in range(3):  # rows already taken are marked, then closing is tried again
            try:
                rows = store.close_steering(run.run_id)
            except Exception as error:
                run.store_failed(error)
                return
            if not rows:
                self._closed_in_store = True
                return
            if self._take_stored(rows):
                return

    def stop_asked(self) -> None:
        """Stop was asked (any thread): from now on ``steer`` returns False, and the store
        refuses ``RunStore.steer``, as they will once the run has ended cancelled (a message
        queued now would never be read)."""
        run = self._run
        with run.lock:
            self.stopping = True
        store = run.store
        if store is None or self._closed_in_store:
            return
        try:  # at once: a message sent through the store from now on is refused, not lost
            store.end_steering(run.run_id)
            self._closed_in_store = True
        except Exception as error:
            self._on_loop(lambda failed=error: run.store_failed(failed))

    def end(self) -> None:
        """The run has ended, or is ending (on any path: its error hooks may still run): no
        more steering, from this process or through the store. What was sent through the store
        and not taken joins the run's queue unread: the run's end says every message it never
        read (``RunState.steering``), wherever it came from."""
        run = self._run
        with run.lock:
            self.closed = self.ended = True
        self.stop()
        store = run.store
        if store is None:
            return
        try:
            if not self._closed_in_store:
                store.end_steering(run.run_id)
                self._closed_in_store = True
            left = store.queued_steering(run.run_id)  # (final: the store refuses more)
        except Exception as error:
            run.store_failed(error)
            return
        with run.lock:
            known = set(run.state.steered_ids)
            unread = [item for item in left if item.id not in known]
            run.state.steering.extend(unread)
            run.state.steered_ids.extend(item.id for item in unread)
