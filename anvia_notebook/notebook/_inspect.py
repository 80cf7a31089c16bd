"""The Inspect view's data: one model call of a run's trace, bounded for the wire.

The page asks for one model call at a time (``inspect`` -> ``inspect_reply``), only when a person
opens the Inspect view, so that streaming and the snapshot carry none of it. Every text is cut at
:data:`MAX_FIELD` characters (with a note, like the static copy), a name or id (chosen by the
model, so of any length) at :data:`MAX_NAME`, and the request's conversation to its last
:data:`MAX_MESSAGES` messages; the page shows all of it as text, folded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..run import AgentRun
    from ..trace import ToolCallTrace, Trace, TurnTrace

__all__ = [
    "MAX_FIELD",
    "MAX_MESSAGES",
    "MAX_NAME",
    "MAX_SUB_CALLS",
    "SubRun",
    "inspect_turn",
    "stored_run",
    "sub_runs_of",
]

#: The most characters of one text the Inspect view gets (the rest is cut, with a note).
MAX_FIELD = 20_000
#: The most characters of a tool's name or a call's id (shown on one line).
MAX_NAME = 2_000
#: The most messages of a request it gets (the last ones; the count says how many there were).
MAX_MESSAGES = 200
#: The most model calls of a sub-agent's run shown under the tool call that ran it (the first
#: ones; the count says how many there were).
MAX_SUB_CALLS = 50
#: The most sub-agents' model calls one reply shows in all, at every depth (a turn that ran
#: twenty sub-agents of fifty calls each was a 20 MB reply), each with at most
#: :data:`MAX_SUB_TEXT` characters of its answer; the counts say how many there were.
MAX_SUB_CALLS_IN_ALL = 200
MAX_SUB_TEXT = 4_000


class _Budget:
    """What one reply may still show of sub-agents' model calls."""

    def __init__(self) -> None:
        self.calls = MAX_SUB_CALLS_IN_ALL


#: Finds the sub-agent's run a tool call ran, by the tool call's id and turn.
SubRunFinder = Callable[[str | None, int], "SubRun | None"]


@dataclass(frozen=True)
class SubRun:
    """A sub-agent's run that a tool call ran: who, its trace, and its own sub-runs."""

    agent_id: str
    agent_name: str | None
    run_id: str
    trace: Trace
    #: The sub-runs of its own tool calls, by the tool call's id and turn.
    sub_runs: SubRunFinder


def _none(tool_call_id: str | None, turn: int) -> SubRun | None:
    return None


def _by_call(
    items: Iterable[Any], state_of: Callable[[Any], Any]
) -> Callable[[str | None, int], Any]:
    """Look ``items`` (sub-runs, or their stored states) up by the parent's tool call id and
    turn: a model may give calls of two turns one id. A sub-run stored before the turn was
    kept (``parent_turn`` None) is found by the id alone."""
    found: dict[tuple[str, int | None], Any] = {}
    for item in items:
        state = state_of(item)
        if state.parent_tool_call_id:
            found[(state.parent_tool_call_id, state.parent_turn)] = item
    return lambda call_id, turn: (
        None if call_id is None else found.get((call_id, turn), found.get((call_id, None)))
    )


def sub_runs_of(run: AgentRun) -> SubRunFinder:
    """The sub-agents' runs of ``run``'s tool calls, by the tool call's id and turn: the runs in
    memory (this process started them), else the ones in the run store (a stored or resumed
    run)."""
    live = _by_call(run.children, lambda child: child.state)
    store = run.store
    stored: Callable[[str | None, int], Any] | None = None

    def find(tool_call_id: str | None, turn: int) -> SubRun | None:
        nonlocal stored
        child = live(tool_call_id, turn)
        if child is not None:
            agent = child.request.agent
            return SubRun(
                child.state.agent_id, agent.name, child.run_id, child.trace, sub_runs_of(child)
            )
        if store is None:
            return None
        if stored is None:
            stored = _by_call(store.sub_runs(run.run_id), lambda state: state)
        state = stored(tool_call_id, turn)
        return None if state is None else _stored_sub_run(store, state)

    return find


def stored_run(store: Any, run_id: str) -> SubRun:
    """The stored run ``run_id`` as the Inspect view reads it: its trace and its sub-runs."""
    return _stored_sub_run(store, store.get(run_id))


def _stored_sub_run(store: Any, state: Any) -> SubRun:
    by_call = _by_call(store.sub_runs(state.run_id), lambda sub: sub)

    def find(tool_call_id: str | None, turn: int) -> SubRun | None:
        found = by_call(tool_call_id, turn)
        return None if found is None else _stored_sub_run(store, found)

    trace = store.trace(state.run_id, messages=state.messages)
    return SubRun(state.agent_id, None, state.run_id, trace, find)


def _cut(text: str, limit: int = MAX_FIELD, sep: str = "\n") -> str:
    if len(text) <= limit:
        return text
    left = len(text) - limit
    return f"{text[:limit]}{sep}… ({left:,} more character{'' if left == 1 else 's'})"


def _name(text: str) -> str:
    return _cut(text, MAX_NAME, " ")


def _json(value: Any) -> str:
    """``value`` as pretty JSON text (a string that holds JSON is pretty-printed too; JSON
    nested too deeply to lay out is shown as it is)."""
    text = value if isinstance(value, str) else None
    try:
        if text is not None:
            value = json.loads(text)
        return _cut(json.dumps(value, indent=2, ensure_ascii=False, default=str))
    except ValueError:
        return _cut(text if text is not None else str(value))
    except RecursionError:
        return _cut(text) if text is not None else "(nested too deeply to show)"


def _message_text(message: Any) -> str:
    parts = [message.content] if message.content else []
    if message.reasoning:
        parts.append(f"Reasoning: {message.reasoning}")
    for call in message.tool_calls:
        parts.append(f"Tool call {call.name} ({call.id}): {call.arguments}")
    for result in message.tool_results:
        error = " (error)" if result.is_error else ""
        parts.append(
            f"Result of {result.tool_name} ({result.tool_call_id}){error}: {result.content}"
        )
    return _cut("\n".join(parts))


def _record(record: Any) -> str | None:
    return None if record is None else _json(record.model_dump(mode="json"))


def _questions(call: ToolCallTrace) -> str | None:
    """The call's question record, or the list of them when it asked several (an MCP tool)."""
    if len(call.questions) > 1:
        return _json([record.model_dump(mode="json") for record in call.questions])
    return _record(call.question)


def _sub_turn(
    trace: Trace, index: int, turn: TurnTrace, sub: SubRun, budget: _Budget
) -> dict[str, Any]:
    return {
        "index": index,
        "turn": turn.turn,
        "model": _name(turn.model) or None,
        "duration_ms": turn.duration_ms,
        "error": None if turn.error is None else _cut(turn.error),
        "input_tokens": turn.usage.input_tokens,
        "output_tokens": turn.usage.output_tokens,
        "cached_tokens": turn.usage.cached_tokens,
        "finish_reason": turn.response.finish_reason,
        "response_text": _cut(turn.response.text, MAX_SUB_TEXT),
        "tool_calls": [
            {
                "name": _name(call.name),
                "status": call.status,
                "duration_ms": call.duration_ms,
                "sub_agent": _sub_agent(sub.sub_runs(call.id, call.turn), budget),
            }
            for call in trace.calls_of(turn)
        ],
    }


def _sub_agent(sub: SubRun | None, budget: _Budget) -> dict[str, Any] | None:
    """The sub-agent's run a tool call ran, for the Inspect view (None: it ran none)."""
    if sub is None:
        return None
    turns = sub.trace.turns
    shown = turns[: max(0, min(MAX_SUB_CALLS, budget.calls))]
    budget.calls -= len(shown)
    return {
        "agent_id": _name(sub.agent_id),
        "agent_name": None if sub.agent_name is None else _name(sub.agent_name),
        "run_id": sub.run_id,
        "model_calls": [
            _sub_turn(sub.trace, index, turn, sub, budget) for index, turn in enumerate(shown)
        ],
        "model_call_count": len(turns),
    }


def _tool_call(call: ToolCallTrace, sub_runs: SubRunFinder, budget: _Budget) -> dict[str, Any]:
    return {
        "id": _name(call.id),
        "name": _name(call.name),
        "status": call.status,
        "args": _json(call.args),
        "result": None if call.result is None else _json(call.result),
        "duration_ms": call.duration_ms,
        "approval": _record(call.approval),
        "question": _questions(call),
        "traceback": None if call.traceback is None else _cut(call.traceback),
        "sub_agent": _sub_agent(sub_runs(call.id, call.turn), budget),
    }


def inspect_turn(
    trace: Trace,
    index: int | None,
    sub_runs: SubRunFinder = _none,
) -> tuple[int, dict[str, Any]]:
    """How many model calls ``trace`` has, and call ``index`` (None: the latest) as the wire's
    ``InspectTurnView``; a tool call that ran a sub-agent (``sub_runs``: by the tool call's id
    and turn, see :func:`sub_runs_of`) has the sub-agent's model calls under it. Raises
    IndexError when there is no such call."""
    count = len(trace.turns)
    if index is None:
        index = count - 1
    if not 0 <= index < count:
        if count == 0:
            raise IndexError("This run has made no model call yet.")
        calls = "1 model call" if count == 1 else f"{count} model calls"
        raise IndexError(f"This run made {calls}; there is no call {index + 1}.")
    turn = trace.turns[index]
    request = turn.request
    messages = request.messages
    shown = messages[-MAX_MESSAGES:]
    started = turn.started_at
    budget = _Budget()
    return count, {
        "index": index,
        "turn": turn.turn,
        "model": _name(turn.model) or None,
        "provider": turn.provider,
        "started_at": None if started is None else started.isoformat().replace("+00:00", "Z"),
        "first_token_ms": turn.first_token_ms,
        "duration_ms": turn.duration_ms,
        "attempts": turn.attempts,
        "error": None if turn.error is None else _cut(turn.error),
        "input_tokens": turn.usage.input_tokens,
        "output_tokens": turn.usage.output_tokens,
        "cached_tokens": turn.usage.cached_tokens,
        "instructions": None if request.instructions is None else _cut(request.instructions),
        "tools": [
            {
                "name": _name(tool.name),
                "description": _cut(tool.description),
                "parameters": _json(tool.parameters),
            }
            for tool in request.tools
        ],
        "settings": _json(request.settings),
        "messages": [{"role": m.role, "text": _message_text(m)} for m in shown],
        "message_count": len(messages),
        "response_text": _cut(turn.response.text),
        "reasoning": _cut(turn.response.reasoning),
        "finish_reason": turn.response.finish_reason,
        "response_tool_calls": _json(
            [call.model_dump(mode="json") for call in turn.response.tool_calls]
        ),
        "tool_calls": [_tool_call(call, sub_runs, budget) for call in trace.calls_of(turn)],
    }
