"""A long text is written to the run store once or twice, not at every place that repeats it.

A tool call's arguments are repeated by the assistant message that made the call, the
``tool_call`` and ``tool_result`` events (the latter in compact form), the ``final`` event's
conversation, the trace's model response and tool call, and the progress of a started call in
the run's state; a long reply by its message, the event log, the ``final`` event, the run's
``output`` and the trace. Each of those rows but the message (and, for a reply, the event log,
which a transcript replays) stores a marker (:data:`STORED`, :data:`STORED_COMPACT`,
:data:`STORED_TEXT`) in its place when the text is long (:data:`MIN_SHARED` characters or more)
and the very same text is in the messages written by the same write or an earlier one; reading
the row puts the text back from the messages. A run with a 5 MB argument so writes it once
instead of seven times, a 5 MB reply twice instead of six (``benchmarks/store_size_bench.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._util import compact_arguments
from .messages import Message

__all__ = [
    "MERGED_FIELD",
    "MIN_SHARED",
    "STORED",
    "STORED_COMPACT",
    "STORED_TEXT",
    "KnownCalls",
    "arguments_in",
    "compact_events",
    "expand_events",
    "restore",
]

#: The text field of each event type that grows while a model streams (consecutive deltas are
#: merged into one event of the log).
MERGED_FIELD = {
    "text_delta": "delta",
    "reasoning_delta": "delta",
    "tool_call_delta": "arguments_delta",
}
#: Shorter texts are stored where they are used (a reference would save little).
MIN_SHARED = 1024
#: What a row holds instead of an arguments text kept in the run's messages. (It starts with
#: NUL, which no JSON text and no model's arguments in practice start with.)
STORED = "\x00anvia:in-messages"
#: The same, for the compact form of that text (``compact_arguments``: what hooks, tools and
#: the ``tool_result`` event are given).
STORED_COMPACT = "\x00anvia:in-messages:compact"
_MARKERS = (STORED, STORED_COMPACT)
#: What a row holds instead of a long reply text that is an assistant message's ``content`` in
#: the stored messages (the last one, for the run's output; the one answering a model call, for
#: the trace).
STORED_TEXT = "\x00anvia:in-messages:content"


class KnownCalls:
    """The long arguments of the tool calls in a run's stored messages, by call id (grown as
    more of the messages are stored)."""

    __slots__ = ("args", "compact", "count")

    def __init__(self) -> None:
        self.args: dict[str, str] = {}
        #: The compact forms asked for so far (made once each).
        self.compact: dict[str, str] = {}
        #: How many of the run's messages were looked at.
        self.count = 0

    def update(self, messages: Sequence[Message], count: int) -> None:
        """The first ``count`` of ``messages`` are stored."""
        if count < self.count:  # (the history was replaced: start again)
            self.args.clear()
            self.compact.clear()
            self.count = 0
        for message in messages[self.count : count]:
            for call in message.tool_calls:
                text = call.arguments
                if isinstance(text, str) and len(text) >= MIN_SHARED:
                    self.args[call.id] = text
        self.count = count

    def same(self, call_id: str | None, text: Any) -> bool:
        """Whether ``text`` is the stored arguments text of call ``call_id``."""
        return self.marker(call_id, text, compact=False) is not None

    def marker(self, call_id: str | None, text: Any, *, compact: bool = True) -> str | None:
        """What to store instead of ``text``, the arguments of call ``call_id`` (or their
        compact form, with ``compact``): :data:`STORED`, :data:`STORED_COMPACT`, or None when
        ``text`` is to be stored as it is."""
        if call_id is None or not isinstance(text, str) or len(text) < MIN_SHARED:
            return None
        known = self.args.get(call_id)
        if known is None:
            return None
        if known is text or known == text:
            return STORED
        if not compact:
            return None
        form = self.compact.get(call_id)
        if form is None:
            form = self.compact[call_id] = compact_arguments(known)
        return STORED_COMPACT if form is text or form == text else None


def restore(marker: str, arguments: dict[str, str], call_id: str | None) -> str:
    """The text a stored marker stands for (``arguments``: the stored messages' by call id)."""
    text = arguments.get(call_id or "", "")
    return compact_arguments(text) if marker == STORED_COMPACT else text


def arguments_in(messages: Sequence[Message]) -> dict[str, str]:
    """Every tool call's arguments text in ``messages``, by call id (the latest one wins)."""
    return {
        call.id: call.arguments
        for message in messages
        for call in message.tool_calls
        if isinstance(call.arguments, str)
    }


def compact_events(events: list[Any], known: KnownCalls, messages: Sequence[Message]) -> list[Any]:
    """``events`` as the store keeps them (copies where a text is left to the messages).
    ``known`` and ``messages``: what of the run's conversation is stored (``known.count``)."""
    out: list[Any] | None = None
    for index, event in enumerate(events):
        kind = event.type
        if kind == "tool_call":
            call = event.tool_call
            if not known.same(call.id, call.arguments):
                continue
            stored = call.model_copy(update={"arguments": STORED})
            event = event.model_copy(update={"tool_call": stored})
        elif kind == "tool_result":
            marker = known.marker(event.tool_call_id, event.args)
            if marker is None:
                continue
            event = event.model_copy(update={"args": marker})
        elif kind == "final":
            sent = event.messages
            count = known.count
            if (
                not sent
                or len(sent) != count
                or not all(a is b for a, b in zip(sent, messages[:count], strict=True))
            ):
                continue
            update: dict[str, Any] = {"messages": []}  # all of them are stored
            if is_last_reply(event.output, sent):
                update["output"] = STORED_TEXT
            event = event.model_copy(update=update)
        else:
            continue
        if out is None:
            out = list(events)
        out[index] = event
    return events if out is None else out


def _left_out(kind: str, event: Any) -> bool:
    """Whether a stored event left a text to the messages."""
    if kind == "tool_call":
        return bool(event.tool_call.arguments == STORED)
    if kind == "tool_result":
        return event.args in _MARKERS
    return kind == "final" and not event.messages


def expand_events(log: list[Any], messages: Callable[[], list[Message]]) -> list[Any]:
    """The events as they were, from the stored ones (``messages()``: the run's messages)."""
    conversation: list[Message] | None = None
    arguments: dict[str, str] = {}
    for index, event in enumerate(log):
        kind = event.type
        if not _left_out(kind, event):
            continue
        if conversation is None:
            conversation = messages()
            arguments = arguments_in(conversation)
        if kind == "tool_call":
            text = arguments.get(event.tool_call.id, "")
            call = event.tool_call.model_copy(update={"arguments": text})
            log[index] = event.model_copy(update={"tool_call": call})
        elif kind == "tool_result":
            text = restore(event.args, arguments, event.tool_call_id)
            log[index] = event.model_copy(update={"args": text})
        else:
            restored: dict[str, Any] = {"messages": list(conversation)}
            if event.output == STORED_TEXT:
                restored["output"] = last_reply(conversation)
            log[index] = event.model_copy(update=restored)
    return log


def is_last_reply(text: str | None, messages: Sequence[Message]) -> bool:
    """Whether ``text`` is long and the content of the last message, the assistant's."""
    if text is None or len(text) < MIN_SHARED or not messages:
        return False
    last = messages[-1]
    return last.role == "assistant" and (last.content is text or last.content == text)


def last_reply(messages: Sequence[Message]) -> str:
    """The content of the last message (what :data:`STORED_TEXT` stands for in the output)."""
    return messages[-1].content if messages else ""
