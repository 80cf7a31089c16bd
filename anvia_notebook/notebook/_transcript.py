"""The transcript reducer: run events in, transcript entries and numbered-op material out.

A :class:`Transcript` keeps the state the page shows (entries and a status line, see
``docs/wire-protocol.md``) and reports every change as an op (a plain dict) to ``emit``. It is
not thread-safe: call it on the loop that runs the run.

Text deltas cost O(1): appended text is kept as a list of pieces and joined only when an entry
is read (a snapshot, or :attr:`Transcript.entries`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover - pydantic brings typing_extensions
    from typing_extensions import assert_never

from .._output_table import typed_result_markdown
from .._tool_exec import STOPPED_RUNNING
from .._tracing import OUTPUT_CUT
from ..decisions import Resolution, decided
from ..events import (
    AgentToolEvent,
    ApprovalRecord,
    CancelledEvent,
    ErrorEvent,
    FinalEvent,
    GenerationStartEvent,
    QuestionRecord,
    ReasoningDeltaEvent,
    RunEvent,
    SteeringMessageEvent,
    TextDeltaEvent,
    ToolApprovalRequestEvent,
    ToolApprovalResultEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolQuestionRequestEvent,
    ToolQuestionResultEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ..messages import Message
from ..trace import OUTPUT_LIMIT
from ._protocol import interaction_view

__all__ = ["AppendSink", "OpSink", "Transcript"]

OpSink = Callable[[dict[str, Any]], None]
#: ``append(entry_id, field, text)``: an ``append`` op without the dict (the per-delta path).
AppendSink = Callable[[str, str, str], None]

#: The status keys of a finished run's summary (absent while a run goes on).
SUMMARY_KEYS = ("first_token_ms", "duration_ms")
#: Tool statuses that mean "not finished yet".
_UNFINISHED = frozenset(("running", "approval_required", "input_required", "approved"))
#: Image types a tool's images are shown in (not SVG: it can carry scripts).
SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: Tool statuses a later ``tool_result`` keeps (the result then explains the outcome).
_STICKY = frozenset(("rejected", "timed_out", "cancelled"))
#: The tool status of an entry whose approval or question waits for a person.
_WAITING = {"approval": "approval_required", "question": "input_required"}
_AWAITING_PERSON = frozenset(_WAITING.values())
NO_ANSWERS = json.dumps({"answers": []})
#: The tool status an interaction's outcome gives its entry (anything else: cancelled).
_OUTCOMES = {
    "approval": {"approved": "approved", "rejected": "rejected", "timed_out": "timed_out"},
    "question": {"answered": "running", "timed_out": "timed_out"},
}
#: How the transcript closes an interaction a run's log leaves open (an older version's log,
#: or a run that did not finish): cancelled by the runtime.
_LEFT_OPEN = Resolution("cancelled", decided_by="runtime")


#: Appended pieces are joined into one string once this many have accumulated.
_JOIN_EVERY = 512


class _Entry:
    """One entry; appended fields are kept as pieces until read (or until there are many)."""

    __slots__ = ("fields", "id", "kind", "parts", "records")

    def __init__(self, kind: str, entry_id: str, fields: dict[str, Any]) -> None:
        self.kind = kind
        self.id = entry_id
        self.fields = fields
        self.parts: dict[str, list[str]] = {}
        #: A tool entry's interactions by field (``approval``, ``question``): the record whose
        #: view the field holds (a reference, to close it if the run's log ends with it open).
        self.records: dict[str, ApprovalRecord | QuestionRecord] = {}

    def append(self, name: str, text: str) -> bool:
        """Append ``text`` to a text field; True when the field had no pieces yet."""
        pieces = self.parts.get(name)
        if pieces is None:
            self.parts[name] = [self.fields[name], text]
            return True
        pieces.append(text)
        if len(pieces) >= _JOIN_EVERY:  # keep one string, not one object per delta
            pieces[:] = ["".join(pieces)]
        return False

    def get(self, name: str) -> Any:
        pieces = self.parts.pop(name, None)
        if pieces is not None:
            self.fields[name] = "".join(pieces)
        return self.fields.get(name)  # None for a field an entry has only sometimes (images)

    def set(self, name: str, value: Any) -> None:
        self.parts.pop(name, None)
        self.fields[name] = value

    def to_wire(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, **{k: self.get(k) for k in list(self.fields)}}


@dataclass
class _RunView:
    """Where the current run's events land."""

    run_id: str = ""
    agent_id: str = ""
    turn: int = 0
    assistant: dict[int, _Entry] = field(default_factory=dict)
    reasoning: dict[int, _Entry] = field(default_factory=dict)
    tool_by_call: dict[str, str] = field(default_factory=dict)
    tool_by_internal: dict[str, str] = field(default_factory=dict)
    tools: list[str] = field(default_factory=list)
    orphan_output: dict[str, list[str]] = field(default_factory=dict)
    #: How much of each tool entry's printed output is shown (at most OUTPUT_LIMIT, as kept).
    output_shown: dict[str, int] = field(default_factory=dict)
    #: By tool entry id: the start of a terminal control sequence that ended a piece of
    #: printed text (its rest comes with the next piece).
    output_held: dict[str, str] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    #: A sub-agent's run: the id of the tool entry its entries are drawn in (their ``parent``).
    parent_entry: str | None = None
    #: The sub-agents' runs started by this run's tool calls, by run id.
    children: dict[str, _RunView] = field(default_factory=dict)


def _idle_status(agent_id: str) -> dict[str, Any]:
    return {
        "state": "idle",
        "turn": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "error": None,
        "agent_id": agent_id,
    }


class Transcript:
    """Entries and status of one transcript (a run, or a Studio session of several runs)."""

    def __init__(
        self, agent_id: str = "", emit: OpSink | None = None, append: AppendSink | None = None
    ) -> None:
        """``emit`` gets every op; ``append``, when given, gets the ``append`` ops instead, as
        arguments (a :class:`~.batcher.Batcher`'s ``append``: no dict per text delta)."""
        self._emit: OpSink = emit or (lambda op: None)
        self._emit_append: AppendSink = append or self._append_op
        self._entries: list[_Entry] = []
        self._by_id: dict[str, _Entry] = {}
        self._counter = 0
        #: Entries with appended pieces not yet joined.
        self._growing: set[_Entry] = set()
        self.status: dict[str, Any] = _idle_status(agent_id)
        self._run = _RunView(agent_id=agent_id)
        #: The top-level run's view (``_run`` is a sub-agent's while its event is folded in).
        self._top = self._run
        #: The assistant entry the last text delta grew: its turn (None: none), its pieces and
        #: its id. The next delta of that turn is a list append with no lookup; whatever joins
        #: or replaces pieces, or starts a run, forgets it (:meth:`_cool`).
        self._hot_turn: int | None = None
        self._hot_pieces: list[str] = []
        self._hot_id = ""
        #: A notice to draw above the top-level run's first tool entry of one of these calls
        #: (see :meth:`notice_before`), and its text.
        self._notice_before: tuple[set[str | None], str] | None = None

    # -- reading -------------------------------------------------------------------------------

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The entries as plain data (fresh dicts)."""
        self._cool()
        return [entry.to_wire() for entry in self._entries]

    def _cool(self) -> None:
        """Forget the entry that text deltas grow (its pieces are about to be joined)."""
        self._hot_turn = None

    def state(self, seq: int) -> dict[str, Any]:
        """The wire ``Transcript``: entries, status and ``seq``."""
        return {"entries": self.entries, "status": dict(self.status), "seq": seq}

    def __len__(self) -> int:
        return len(self._entries)

    # -- building blocks -----------------------------------------------------------------------

    def _add(self, kind: str, **fields: Any) -> _Entry:
        self._counter += 1
        if self._run.parent_entry is not None:  # a sub-agent's entry, inside its tool call's
            fields["parent"] = self._run.parent_entry
        entry = _Entry(kind, f"e{self._counter}", fields)
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        self._emit({"op": "add", "entry": entry.to_wire()})
        return entry

    def _append_op(self, entry_id: str, name: str, text: str) -> None:
        self._emit({"op": "append", "id": entry_id, "field": name, "text": text})

    def _append(self, entry: _Entry, name: str, text: str) -> None:
        if not text:
            return
        if entry.append(name, text):
            self._growing.add(entry)
        self._emit_append(entry.id, name, text)

    def _compact(self) -> None:
        """Join the pieces appended to entries into one string each (at turn ends)."""
        self._cool()
        for entry in self._growing:
            for name in list(entry.parts):
                entry.get(name)
        self._growing.clear()

    def _patch(self, entry: _Entry, **changes: Any) -> None:
        self._cool()
        changes = {k: v for k, v in changes.items() if entry.get(k) != v}
        if not changes:
            return
        for key, value in changes.items():
            entry.set(key, value)
        self._emit({"op": "patch", "id": entry.id, "changes": changes})

    def _set_status(self, *, whole_run: bool = False, **changes: Any) -> None:
        """Change the status line (``whole_run``: a state of the whole run, sub-agents' runs
        included, such as waiting for a person)."""
        if self._run is not self._top and not whole_run:
            return  # a sub-agent's turns, tokens and end are not the status line's
        status = {**self.status, **changes}
        if status != self.status:
            self.status = status
            self._emit({"op": "status", "status": dict(status)})

    def notice(self, text: str) -> None:
        self._add("notice", text=text)

    def notice_before(self, call_ids: set[str | None], text: str) -> None:
        """Draw the notice ``text`` above the first tool entry of one of ``call_ids`` (calls of
        the top-level run) drawn from now on, else at :meth:`place_notice`; at once when one of
        them has no id (above whatever comes next)."""
        self._notice_before = (call_ids, text)
        if None in call_ids:
            self.place_notice()

    def place_notice(self) -> None:
        """Draw the notice :meth:`notice_before` keeps now, unless it is drawn already."""
        if self._notice_before is not None:
            text = self._notice_before[1]
            self._notice_before = None
            self.notice(text)

    # -- runs ----------------------------------------------------------------------------------

    def begin_run(self, run_id: str, agent_id: str, prompt: str) -> None:
        """A new run starts: the user's prompt, and the status line goes to ``running``."""
        self._cool()
        self._run = self._top = _RunView(run_id=run_id, agent_id=agent_id)
        self._add("user", text=prompt)
        for key in SUMMARY_KEYS:  # the last run's summary goes with it
            self.status.pop(key, None)
        self._set_status(
            state="running",
            turn=0,
            input_tokens=0,
            output_tokens=0,
            error=None,
            agent_id=agent_id,
            run_id=run_id,
        )

    def run_summary(self, first_token_ms: float | None, duration_ms: float | None) -> None:
        """The run has ended: its time to the first token and its whole time join the status
        line (from the run's trace; the turn and the tokens are there already)."""
        self._set_status(first_token_ms=first_token_ms, duration_ms=duration_ms)

    def reset(self, agent_id: str | None = None) -> None:
        """Clear the entries (a new Studio session); the status line goes back to idle."""
        agent = self.status["agent_id"] if agent_id is None else agent_id
        self._cool()
        self._entries.clear()
        self._by_id.clear()
        self._growing.clear()
        self._run = self._top = _RunView(agent_id=agent)
        self.status = _idle_status(agent)
        self._emit({"op": "reset"})

    def set_agent(self, agent_id: str) -> None:
        """The agent the status line names (Studio's picker, while idle)."""
        self._set_status(agent_id=agent_id)

    def text_delta(self, turn: int, delta: str) -> None:
        """Fold ``TextDeltaEvent(turn=turn, delta=delta)`` in (a run's ``on_text`` fast path:
        more text for the entry the last delta grew is a list append and an append to the
        batch)."""
        if turn == self._hot_turn:
            # (No join every _JOIN_EVERY pieces here: the run holds the turn's pieces anyway,
            # until the turn's end, where the transcript joins them too.)
            if delta:
                self._hot_pieces.append(delta)
                self._emit_append(self._hot_id, "text", delta)
            return
        self._text_entry(self._run.assistant, "assistant", turn, delta)
        entry = self._run.assistant.get(turn)
        grown = entry.parts.get("text") if entry is not None else None
        if entry is not None and grown is not None:
            self._hot_turn, self._hot_pieces, self._hot_id = turn, grown, entry.id

    def apply(self, event: RunEvent) -> None:
        """Fold one run event into the transcript."""
        if type(event) is TextDeltaEvent:  # the per-delta path
            self.text_delta(event.turn, event.delta)
            return
        match event:
            case TextDeltaEvent():  # the most frequent first
                self._text_entry(self._run.assistant, "assistant", event.turn, event.delta)
            case ReasoningDeltaEvent():
                self._text_entry(self._run.reasoning, "reasoning", event.turn, event.delta)
            case ToolCallDeltaEvent():
                self._on_tool_call_delta(event)
            case ToolCallEvent():
                self._on_tool_call(event)
            case TurnStartEvent():
                run = self._run
                run.turn = event.turn
                # (a turn made again, its model call cut short by a stopped process: its text
                # is new entries, after what the first try showed)
                run.assistant.pop(event.turn, None)
                run.reasoning.pop(event.turn, None)
                self._cool()
                self._set_status(turn=event.turn)
            case TurnEndEvent():
                self._on_turn_end(event)
            case ToolApprovalRequestEvent() | ToolApprovalResultEvent():
                self._on_interaction(event.approval)
            case ToolQuestionRequestEvent() | ToolQuestionResultEvent():
                self._on_interaction(event.question)
            case ToolResultEvent():
                self._on_tool_result(event)
            case FinalEvent():
                self._on_final(event)
            case CancelledEvent():
                self._on_cancelled(event)
            case ErrorEvent():
                self._on_error(event)
            case SteeringMessageEvent():
                self._cool()
                self._on_steered(event.message)
            case GenerationStartEvent():
                pass  # nothing to show: the turn's text and calls follow
            case AgentToolEvent():
                self._on_agent_tool_event(event)
            case _:
                assert_never(event)

    def _on_steered(self, message: Message) -> None:
        """A message steered into the run, shown as what it is where the run delivered it: a
        user's as the person's (marked as sent during the run), an assistant's as a reply, the
        tool calls and results it holds as notices (a long result cut short)."""
        if message.role == "user":
            self._add("user", text=message.content, steered=True)
            return
        if message.role == "assistant" and message.content:
            self._add("assistant", turn=self._run.turn, text=message.content)
        for call in message.tool_calls:
            self._add("notice", text=f"Sent into the run: a call of {call.name} ({call.arguments})")
        for result in message.tool_results:
            self._add(
                "notice",
                text=f"Sent into the run: the result of {result.tool_name}: "
                f"{_shortened(result.content)}",
            )

    def undelivered(self, messages: list[Message]) -> None:
        """Messages sent into the run that it ended before reading: each said, not lost
        without a word (the message box was emptied when it was sent)."""
        for message in messages:
            text = message.content or "a message of tool calls or results"
            self._add("notice", text=f"Not delivered, the run ended first: {_shortened(text)}")

    def _on_agent_tool_event(self, event: AgentToolEvent) -> None:
        """A sub-agent's event: folded into the sub-agent's own view, whose entries are drawn
        inside the tool call's entry (their ``parent``); the tool entry names the sub-agent."""
        outer = self._run
        child = outer.children.get(event.run_id)
        if child is None:
            tool = self._link(event.tool_call_id, event.internal_call_id, event.tool_name)
            child = _RunView(run_id=event.run_id, agent_id=event.agent_id, parent_entry=tool.id)
            outer.children[event.run_id] = child
            self._patch(
                tool,
                sub_agent={
                    "agent_id": event.agent_id,
                    "agent_name": event.agent_name,
                    "run_id": event.run_id,
                },
            )
        self._cool()  # text deltas of another run grow another entry
        self._run = child
        try:
            self.apply(event.event)
        finally:
            self._cool()
            self._run = outer

    def _activity(self) -> None:
        """Waiting while a tool entry of the top-level run or of a sub-agent's run below it
        shows an open approval or question (the entries are what the page shows: no second
        set of pending ids)."""
        self._set_status(state="waiting" if self._waits(self._top) else "running", whole_run=True)

    def _waits(self, view: _RunView) -> bool:
        return any(
            (entry := self._by_id.get(entry_id)) is not None
            and entry.get("status") in _AWAITING_PERSON
            for entry_id in view.tools
        ) or any(self._waits(child) for child in view.children.values())

    def _text_entry(self, index: dict[int, _Entry], kind: str, turn: int, delta: str) -> None:
        if not delta:
            return
        entry = index.get(turn)
        if entry is None:
            index[turn] = self._add(kind, turn=turn, text=delta)
            return
        if entry.append("text", delta):
            self._growing.add(entry)
        self._emit_append(entry.id, "text", delta)

    def _tool_entry(self, turn: int, call_id: str, name: str, arguments: str) -> _Entry:
        before = self._notice_before
        if before is not None and call_id in before[0] and self._run is self._top:
            self.place_notice()
        entry = self._add(
            "tool",
            turn=turn,
            tool_name=name,
            tool_call_id=call_id,
            arguments=arguments,
            status="running",
            result=None,
            is_error=False,
            output="",
            approval=None,
            question=None,
        )
        self._run.tool_by_call[call_id] = entry.id
        self._run.tools.append(entry.id)
        return entry

    def _current_tool(self, call_id: str | None, turn: int | None = None) -> _Entry | None:
        entry_id = self._run.tool_by_call.get(call_id or "")
        if entry_id is None:
            return None
        entry = self._by_id.get(entry_id)
        if entry is None or (turn is not None and entry.get("turn") != turn):
            return None
        return entry

    def _on_tool_call_delta(self, event: ToolCallDeltaEvent) -> None:
        entry = self._current_tool(event.id, event.turn)
        if entry is None:
            entry = self._tool_entry(event.turn, event.id, event.name or "", "")
        elif event.name and entry.get("tool_name") != event.name:
            self._patch(entry, tool_name=event.name)
        self._append(entry, "arguments", event.arguments_delta)

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        call = event.tool_call
        arguments = call.arguments_json()
        entry = self._current_tool(call.id, event.turn)
        if entry is None:
            self._tool_entry(event.turn, call.id, call.name, arguments)
        else:
            self._patch(entry, tool_name=call.name, arguments=arguments)

    def _on_turn_end(self, event: TurnEndEvent) -> None:
        self._compact()
        run = self._run
        run.input_tokens += event.usage.input_tokens
        run.output_tokens += event.usage.output_tokens
        self._set_status(input_tokens=run.input_tokens, output_tokens=run.output_tokens)

    def _link(self, call_id: str | None, internal_id: str, name: str) -> _Entry:
        """The tool entry of a call, by its internal id (made now if the model never showed it)."""
        run = self._run
        entry_id = run.tool_by_internal.get(internal_id)
        entry = self._by_id.get(entry_id) if entry_id else None
        if entry is None:
            entry = self._current_tool(call_id)
            if entry is None:
                entry = self._tool_entry(run.turn, call_id or internal_id, name, "")
            run.tool_by_internal[internal_id] = entry.id
            orphan = run.orphan_output.pop(internal_id, None)
            if orphan:
                self._printed(run, entry, "".join(orphan))
        return entry

    def _on_interaction(self, record: ApprovalRecord | QuestionRecord) -> None:
        """An approval or a question opened or was decided: its tool entry shows the record."""
        entry = self._link(record.tool_call_id, record.internal_call_id, record.tool_name)
        kind, view = record.kind, interaction_view(record)
        entry.records[kind] = record
        # (The ops as they always were: the status first while it waits, the view first after.)
        changes: dict[str, Any]
        if record.status == "pending":
            changes = {"status": _WAITING[kind], kind: view}
        else:  # anything but an outcome is cancelled (Stop, the end of the run, ...)
            changes = {kind: view, "status": _OUTCOMES[kind].get(record.status, "cancelled")}
        if changes["status"] == "cancelled" and kind == "question":
            changes["result"] = NO_ANSWERS
        self._patch(entry, **changes)
        self._activity()

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        entry = self._link(event.tool_call_id, event.internal_call_id, event.tool_name)
        current = entry.get("status")
        done = "skipped" if event.skipped else "error" if event.is_error else "done"
        if event.is_error and event.result.startswith(STOPPED_RUNNING):
            done = "cancelled"  # (stopped while its tool ran: it may have completed, as traced)
        status = current if current in _STICKY else done
        images = [
            {"media_type": str(part.get("media_type")), "data": str(part.get("data"))}
            for part in event.parts
            if part.get("type") == "image" and str(part.get("media_type")) in SHOWN_IMAGE_TYPES
        ]
        extra: dict[str, Any] = {"images": images} if images else {}
        self._patch(entry, status=status, result=event.result, is_error=event.is_error, **extra)

    def _finish_unfinished(self) -> None:
        self._compact()
        for entry_id in self._run.tools:
            entry = self._by_id.get(entry_id)
            if entry is None or entry.get("status") not in _UNFINISHED:
                continue
            changes: dict[str, Any] = {"status": "cancelled"}
            for kind, record in entry.records.items():
                if not record.pending:
                    continue
                # Closed as the run's end closes it, from its record; when is not known.
                closed = decided(record, _LEFT_OPEN).model_copy(update={"resolved_at": None})
                changes[kind] = interaction_view(closed)
                if kind == "question":
                    changes["result"] = NO_ANSWERS
            self._patch(entry, **changes)

    def _on_final(self, event: FinalEvent) -> None:
        self._finish_unfinished()
        if event.data is not None:  # a typed result: shown as a table (or its JSON)
            text = typed_result_markdown(event.data, event.keyed)
            self._add("assistant", turn=self._run.turn, text=text)
        self._set_status(
            state="success",
            input_tokens=event.usage.input_tokens,
            output_tokens=event.usage.output_tokens,
            error=None,
        )

    def _on_cancelled(self, event: CancelledEvent) -> None:
        self._finish_unfinished()
        self.notice(f"Run cancelled: {event.reason}")
        self._set_status(state="cancelled")

    def _on_error(self, event: ErrorEvent) -> None:
        self._finish_unfinished()
        self._add("error", text=event.error)
        self._set_status(state="error", error=event.error)

    # -- captured tool output ------------------------------------------------------------------

    def tool_output(
        self, run_id: str, tool_call_id: str | None, internal_id: str, text: str
    ) -> None:
        """Text a tool printed (or displayed) while it ran: appended to its entry's ``output``."""
        run = self._run
        if not text or run_id != run.run_id:
            return
        entry_id = run.tool_by_internal.get(internal_id)
        if entry_id is None and tool_call_id is not None:
            entry_id = run.tool_by_call.get(tool_call_id)
            if entry_id is not None:
                run.tool_by_internal[internal_id] = entry_id
        entry = self._by_id.get(entry_id) if entry_id else None
        if entry is None:
            run.orphan_output.setdefault(internal_id, []).append(text)
            return
        self._printed(run, entry, text)

    def _printed(self, run: _RunView, entry: _Entry, text: str) -> None:
        """``text`` a tool printed, appended to its ``entry``'s output as the page shows it."""
        # Without terminal colours and cursor moves, which would show as "[31m" (the run keeps
        # the text as printed).
        text = run.output_held.pop(entry.id, "") + text
        cut = _CONTROL_CUT.search(text)
        if cut is not None and len(text) - cut.start() <= _HELD_AT_MOST:
            run.output_held[entry.id], text = text[cut.start() :], text[: cut.start()]
        text = _TERMINAL_CONTROL.sub("", text)
        if not text:
            return
        # Shown as the run keeps it (the trace, the store): the first OUTPUT_LIMIT characters,
        # then a note; a tool printing in a loop must not grow the page without end.
        shown = run.output_shown.get(entry.id, 0)
        if shown > OUTPUT_LIMIT:
            return
        if shown + len(text) > OUTPUT_LIMIT:
            text = text[: OUTPUT_LIMIT - shown] + OUTPUT_CUT
        run.output_shown[entry.id] = shown + len(text)
        self._append(entry, "output", text)


#: Terminal control sequences in text a tool printed (colours from a logging or testing library,
#: cursor moves): CSI (``ESC [`` ... a final letter), OSC (``ESC ]`` ... BEL or ``ESC \``, a
#: title or a link) and the other escapes (``ESC``, intermediate bytes, a final byte).
_TERMINAL_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-Z\\^-~]"
)
#: The start of one at the very end of a piece of printed text.
_CONTROL_CUT = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[ -/]+)?$")
#: A longer unfinished sequence is no control sequence: shown as it is.
_HELD_AT_MOST = 256


def _shortened(text: str, limit: int = 2_000) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"
