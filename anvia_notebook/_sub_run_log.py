"""A sub-agent's events in its parent's event log, held once.

A sub-agent's run (``agent.as_tool(stream=True)``) keeps its own event log and, with a run
store, stores it. Its events also reach the parent's stream as ``agent_tool_event``. The
parent's log does not keep one of those per streamed delta: it keeps one per entry of the
sub-run's own log, sharing that entry (so its text grows as the sub-run's does). Until someone
reads the parent's log, such an entry is the sub-run's :class:`NestLink` (the same object for
each of its entries, the entry's place in the sub-run's log kept aside by the parent): the
``agent_tool_event`` is built when the log is read, and an event for subscribers only when the
parent (or a run above it) has one. The store keeps, for each of them, only a reference
(:class:`SubRunEventRef`: the sub-run and the entry's place in its log); reading the parent's
log puts the sub-run's stored entries back in their place. A sub-agent that streams a long
answer so has its text and its messages stored once, with its own run, not a second time with
the parent's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict

from ._stored_once import MERGED_FIELD
from .events import AgentToolCall, AgentToolEvent, text_delta_event

if TYPE_CHECKING:
    from .run import AgentRun

__all__ = [
    "NestLink",
    "SubRunEventRef",
    "built",
    "expand_sub_run_refs",
    "innermost",
    "innermost_run_id",
    "stored_refs",
    "with_text",
    "wrap_event",
]

#: The fields an ``agent_tool_event`` shares with its reference.
_CALL_FIELDS = tuple(name for name in AgentToolCall.model_fields if name != "type")


class SubRunEventRef(AgentToolCall):
    """What the store holds for an ``agent_tool_event`` of the parent's log: the call's fields
    and the place (``index``) of the event in the sub-run's own stored log."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    type: Literal["sub_run_event"] = "sub_run_event"
    index: int


def innermost(event: Any) -> Any:
    """The sub-run's own event inside (possibly nested) ``agent_tool_event`` wrappers."""
    while event.type == "agent_tool_event":
        event = event.event
    return event


def innermost_run_id(event: Any) -> str:
    """The run whose own event is inside the ``agent_tool_event`` wrappers of ``event``."""
    run_id: str = event.run_id
    event = event.event
    while event.type == "agent_tool_event":
        run_id, event = event.run_id, event.event
    return run_id


_new = object.__new__
_set = object.__setattr__
#: The fields set of every wrapper built here (all of them): one set, shared (pydantic adds a
#: field's name to it on assignment, a name it already holds).
_FIELDS_SET = {*_CALL_FIELDS, "event"}


def wrap_event(fields: dict[str, Any], event: Any) -> AgentToolEvent:
    """``AgentToolEvent(**fields, event=event)`` for values known valid (the parent's call and
    the sub-run's own event), built without validation, as ``model_construct`` would: one per
    event of a sub-run, so the cheapest way."""
    wrapped = _new(AgentToolEvent)
    values = fields.copy()
    values["event"] = event
    _set(wrapped, "__dict__", values)
    _set(wrapped, "__pydantic_fields_set__", _FIELDS_SET)
    _set(wrapped, "__pydantic_extra__", None)
    _set(wrapped, "__pydantic_private__", None)
    return wrapped


def with_text(event: Any, text: str) -> Any:
    """A copy of ``event`` (a growing event, possibly inside ``agent_tool_event`` wrappers)
    whose innermost event holds ``text``: the wrappers are copied, the logged ones untouched."""
    if event.type != "agent_tool_event":
        return event.model_copy(update={MERGED_FIELD[event.type]: text})
    fields = {"type": "agent_tool_event", **{name: getattr(event, name) for name in _CALL_FIELDS}}
    return wrap_event(fields, with_text(event.event, text))


class NestLink:
    """A sub-run's link to its parent's log (``agent.as_tool(stream=True)``): the fields of the
    parent's ``agent_tool_event`` for it, and the sub-run's log entry the parent's log shares
    last. In the parent's log it stands for an ``agent_tool_event`` not built yet (its ``type``
    says so); the entry's place in the sub-run's log is the parent's to keep."""

    __slots__ = ("fields", "keep", "parent", "run", "shared")

    #: What the parent's log entry it stands for is.
    type = "agent_tool_event"

    def __init__(
        self,
        parent: AgentRun,
        run: AgentRun,
        fields: dict[str, Any],
        keep: InteractionsOnly | None = None,
    ) -> None:
        self.parent = parent
        self.run = run
        #: ``AgentToolEvent``'s fields but ``event`` (with its ``type``).
        self.fields = fields
        #: Which of the sub-run's events go up (None: all of them).
        self.keep = keep
        #: The sub-run's log entry the parent's log has an entry for last.
        self.shared: Any = None


class InteractionsOnly:
    """Which events of a sub-agent's run called with ``stream=False`` go up to its parent all
    the same: its approvals and questions (at any depth), which are decided on the top-level
    run and shown in its cell, and the result of each call that had one (so its entry does
    not stay open)."""

    __slots__ = ("_asked",)

    def __init__(self) -> None:
        self._asked: set[str] = set()

    def __call__(self, event: Any) -> bool:
        inner = _innermost(event)
        kind = getattr(inner, "type", None)
        if kind in ("tool_approval_request", "tool_approval_result"):
            self._asked.add(inner.approval.internal_call_id)
            return True
        if kind in ("tool_question_request", "tool_question_result"):
            self._asked.add(inner.question.internal_call_id)
            return True
        return kind == "tool_result" and inner.internal_call_id in self._asked


def _innermost(event: Any) -> Any:
    """The sub-run's own event inside ``agent_tool_event`` wrappers, built or not (see
    ``built``); None for a text delta not built yet."""
    while True:
        if type(event) is tuple:
            first, inner = event
            if type(first) is not dict:
                return None
            event = inner
        elif getattr(event, "type", None) == "agent_tool_event":
            event = event.event
        else:
            return event


def built(event: Any) -> Any:
    """The event a sub-run's event passed up its parents stands for: ``event`` itself, or, for
    what is not built yet, ``(fields, inner)`` (an ``agent_tool_event`` with ``fields`` around
    ``inner``, itself one of these) or ``(turn, delta)`` (a text delta)."""
    if type(event) is not tuple:
        return event
    first, inner = event
    if type(first) is dict:
        return wrap_event(first, built(inner))
    return text_delta_event(first, inner)


def stored_refs(events: list[Any], start: int, nested: dict[int, int]) -> list[Any]:
    """``events`` (the log's from place ``start`` on) with each entry that stands for a
    sub-run's log entry (``nested``: that entry's place in the sub-run's log, by the place in
    this log) replaced by its reference, as what the store's JSON holds (a dict)."""
    out: list[Any] | None = None
    for offset, event in enumerate(events):
        if event.type != "agent_tool_event":
            continue
        index = nested.get(start + offset)
        if index is None:
            continue
        if out is None:
            out = list(events)
        out[offset] = _ref(event, index)
    return events if out is None else out


def _ref(event: Any, index: int) -> dict[str, Any]:
    """``SubRunEventRef(**the call's fields of event, index=index)`` as the store's JSON holds
    it: a dict, built from the fields of a :class:`NestLink` or of a wrapper built from them."""
    if type(event) is NestLink:
        values = event.fields.copy()
    else:
        values = event.__dict__.copy()  # the call's fields (its ``type`` replaced), no event
        del values["event"]
    values["type"] = "sub_run_event"
    values["index"] = index
    return values


def expand_sub_run_refs(log: list[Any], events_of: Callable[[str], list[Any]]) -> list[Any]:
    """The stored log with each reference replaced by the sub-run's stored event it stands for
    (``events_of(run_id)``: a sub-run's stored log), wrapped as the parent's stream had it. One
    event for one reference (later writes place events by their position in the log)."""
    logs: dict[str, list[Any]] = {}
    seen: set[tuple[str, int]] = set()
    for position, item in enumerate(log):
        if item.type != "sub_run_event":
            continue
        sub_log = logs.get(item.run_id)
        if sub_log is None:
            sub_log = logs[item.run_id] = events_of(item.run_id)
        fields = {name: getattr(item, name) for name in _CALL_FIELDS}
        key = (item.run_id, item.index)
        if 0 <= item.index < len(sub_log) and key not in seen:
            seen.add(key)
            event = sub_log[item.index]
        else:
            # Not stored by the sub-run (its write came later than the parent's), or a second
            # reference to a text it holds once: an empty text in its place.
            event = _empty_like(sub_log[item.index] if 0 <= item.index < len(sub_log) else None)
            if event is None:
                event = text_delta_event(item.turn, "")
        log[position] = AgentToolEvent.model_construct(**fields, event=event)
    return log


def _empty_like(event: Any) -> Any:
    if event is None:
        return None
    inner = innermost(event)
    field = MERGED_FIELD.get(inner.type)
    if field is None:
        return None
    return inner.model_copy(update={field: ""})
