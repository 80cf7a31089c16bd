"""A trace as rows of the run store: one for the run, one per model call, one per tool call.

A model call's messages are stored as a count (the run's messages are stored already), and its
instructions, tools and settings only when they differ from the previous call's, so a long run's
trace stays small in the store. A long tool-call arguments text the stored messages hold already
(the model's response, a call's arguments) is left to them (see :mod:`._stored_once`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_json

from ._stored_once import MIN_SHARED, STORED, STORED_TEXT, KnownCalls, arguments_in
from ._util import decode_args
from .messages import Message
from .trace import ToolCallTrace, Trace, TurnRequest, TurnTrace

__all__ = ["decode_trace", "encode_call", "encode_run", "encode_turn"]

#: The request fields left out of a stored model call when they equal the previous call's.
_SHARED = ("instructions", "tools", "settings")
_RUN_FIELDS = {"run_id", "agent_id", "agent_name", "status", "error", "started_at", "duration_ms"}


def encode_run(trace: Trace) -> str:
    return trace.model_dump_json(include=_RUN_FIELDS)


def encode_turn(
    turn: TurnTrace, previous: TurnTrace | None, known: KnownCalls | None = None
) -> str:
    request = turn.request
    stored: dict[str, Any] = {"message_count": request.message_count}
    same: list[str] = []
    for name in _SHARED:
        value = getattr(request, name)
        if previous is not None and _same(value, getattr(previous.request, name)):
            same.append(name)
        else:
            stored[name] = value
    if same:
        stored["same_as_previous"] = same
    own = request.own_messages
    if own is not None:
        stored["messages"] = own
    # The turn without its request, then the request as stored, joined as text: each part is
    # turned into JSON once, by pydantic's serializer (no dict of the turn built in between).
    if known is not None:
        turn = _left_to_messages(turn, known, own, request.message_count)
    data = turn.model_dump_json(exclude={"request"})
    request_json = to_json(stored, fallback=str).decode()
    return f'{data[:-1]},"request":{request_json}}}'


def _left_to_messages(
    turn: TurnTrace, known: KnownCalls, own: Any, message_count: int
) -> TurnTrace:
    """The turn as stored: long texts that the stored messages hold (its response's tool-call
    arguments; its reply, the content of the message that answered it) left to them."""
    response = turn.response
    update: dict[str, Any] = {}
    calls = response.tool_calls
    if any(known.same(c.id, c.arguments) for c in calls):
        update["tool_calls"] = [
            c.model_copy(update={"arguments": STORED}) if known.same(c.id, c.arguments) else c
            for c in calls
        ]
    text = response.text
    history = turn.request.shared_history
    if (
        own is None
        and history is not None
        and len(text) >= MIN_SHARED
        and message_count < min(known.count, len(history))
    ):
        answer = history[message_count]
        if answer.role == "assistant" and (answer.content is text or answer.content == text):
            update["text"] = STORED_TEXT
    if not update:
        return turn
    return turn.model_copy(update={"response": response.model_copy(update=update)})


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def encode_call(call: ToolCallTrace, *, args_stored: bool = False) -> str:
    """The call; ``args_stored``: its arguments are the text of its call in the stored messages,
    decoded (left out, and decoded from there again when read)."""
    if args_stored:
        return call.model_copy(update={"args": STORED}).model_dump_json()
    return call.model_dump_json()


def decode_trace(
    run_id: str,
    agent_id: str,
    rows: Iterable[tuple[str, int, str]],
    messages: list[Message],
) -> Trace:
    """The trace from its stored rows (``messages``: the run's stored conversation)."""
    run: dict[str, Any] = {"run_id": run_id, "agent_id": agent_id}
    turns: dict[int, dict[str, Any]] = {}
    calls: dict[int, str] = {}
    for kind, index, text in rows:
        if kind == "run":
            run.update(json.loads(text))
        elif kind == "turn":
            turns[index] = json.loads(text)
        elif kind == "tool_call":
            calls[index] = text
    trace = Trace.model_validate(run)
    previous: TurnRequest | None = None
    for index in sorted(turns):
        data = turns[index]
        stored = data.pop("request")
        same = set(stored.pop("same_as_previous", ()))
        own = stored.pop("messages", None)
        for name in _SHARED:
            if name in same and previous is not None:
                stored[name] = getattr(previous, name)
        request = TurnRequest.model_validate(stored)
        if own is not None:
            request.use_messages(own=[Message.model_validate(m) for m in own])
        else:
            request.use_messages(history=messages)
        turn = TurnTrace.model_validate({**data, "request": request})
        trace.turns.append(turn)
        previous = request
    for index in sorted(calls):
        trace.tool_calls.append(ToolCallTrace.model_validate_json(calls[index]))
    _restore_arguments(trace, messages)
    return trace


def _restore_arguments(trace: Trace, messages: list[Message]) -> None:
    """Put back the arguments texts left to the stored messages."""
    arguments: dict[str, str] | None = None
    for turn in trace.turns:
        if turn.response.text == STORED_TEXT:
            count = turn.request.message_count
            turn.response.text = messages[count].content if count < len(messages) else ""
        for call in turn.response.tool_calls:
            if call.arguments == STORED:
                if arguments is None:
                    arguments = arguments_in(messages)
                call.arguments = arguments.get(call.id, "")
    for entry in trace.tool_calls:
        if isinstance(entry.args, str) and entry.args == STORED:
            if arguments is None:
                arguments = arguments_in(messages)
            entry.args = decode_args(arguments.get(entry.id, ""))
