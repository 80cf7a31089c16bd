"""A run's trace: what the model received and returned on each turn, and what each tool call did.

``response.trace`` (also ``handle.trace``, ``request.trace`` and ``run.trace``, for runs that
failed or were stopped too) is plain pydantic data:

- ``trace.turns[i]``: one model call: ``request`` (exactly what the model received: the
  instructions, the messages, the tools with their JSON schemas, the settings), ``response``
  (text, tool calls, finish reason), ``usage`` (input, output and cached tokens, as the provider
  reported them), ``started_at``, ``first_token_ms``, ``duration_ms`` and ``error``;
- ``trace.tool_calls[j]``: one tool call: ``name``, ``args``, ``result``, ``status``, ``turn``,
  ``started_at``, ``duration_ms``, and its ``approval`` and ``question`` records;
- ``trace.summary()`` and ``trace.turn_view(i)``: the same as JSON-ready dicts;
- ``trace.to_pandas()``: one row per model call and per tool call.

A stored run keeps its trace, and a resumed run continues it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field, model_validator

from .events import ApprovalRecord, QuestionRecord
from .messages import Message
from .models.base import ToolCall, ToolDefinition

__all__ = [
    "TOOL_CALL_STATUSES",
    "ToolCallStatus",
    "ToolCallTrace",
    "Trace",
    "TraceUsage",
    "TurnRequest",
    "TurnResponse",
    "TurnTrace",
]

ToolCallStatus = Literal[
    "success", "error", "rejected", "skipped", "cancelled", "timed_out", "interrupted"
]
#: Every status a finished tool call can have (``None`` while it is still running).
TOOL_CALL_STATUSES: tuple[str, ...] = (
    "success",
    "error",
    "rejected",
    "skipped",
    "cancelled",
    "timed_out",
    "interrupted",
)


#: How much of a tool call's printed output a trace keeps.
OUTPUT_LIMIT = 100_000
#: The most characters of a failed tool call's traceback a trace keeps.
TRACEBACK_LIMIT = 20_000


class TraceUsage(BaseModel):
    """Tokens of one model call. ``cached_tokens`` is None when the provider does not report it
    (the cached tokens are part of ``input_tokens``)."""

    model_config = ConfigDict(defer_build=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None


class TurnRequest(BaseModel):
    """What the model received on one turn."""

    model_config = ConfigDict(defer_build=True)

    instructions: str | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    #: The model and its settings: ``model``, and ``temperature``, ``max_tokens``,
    #: ``tool_choice`` and the model's own request options when they are set.
    settings: dict[str, Any] = Field(default_factory=dict)
    #: How many messages were sent (the conversation as it was at that turn).
    message_count: int = 0
    # The run's conversation; this request sent its first ``message_count`` messages. A request
    # whose messages were changed by a hook keeps its own list instead. Sharing the conversation
    # keeps a long trace small (no copy of the history per turn).
    # (Plain defaults, no factories: a private attribute with a factory costs an inspection of
    # the factory each time a request is made.)
    _history: list[Message] | None = PrivateAttr(default=None)
    _own: list[Message] | None = PrivateAttr(default=None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def messages(self) -> list[Message]:
        """The messages the model received, oldest first."""
        # (Read from the private values at once: each private attribute read through pydantic
        # costs more than the slice; this is read per model call when content is exported.)
        private = self.__pydantic_private__ or {}
        own = private.get("_own")
        if own is not None:
            return list(own)
        history = private.get("_history")
        return history[: self.message_count] if history is not None else []

    # Package-internal: how the trace recorder and the store keep a request's messages (the
    # private attributes above), without going through pydantic's slow private-attribute access.

    @staticmethod
    def private_values(
        *, history: list[Message] | None = None, own: list[Message] | None = None
    ) -> dict[str, Any]:
        """The private values of a request built without validation: sharing the run's
        conversation (``history``), or keeping the messages a hook changed (``own``)."""
        return {"_history": history, "_own": own}

    def use_messages(
        self, *, history: list[Message] | None = None, own: list[Message] | None = None
    ) -> None:
        """Share the run's conversation (``history``) or keep ``own`` messages (a request
        read back from the store)."""
        self._history = history
        self._own = own

    @property
    def shared_history(self) -> list[Message] | None:
        """The run's conversation this request shares (None when it keeps its own)."""
        history: list[Message] | None = (self.__pydantic_private__ or {}).get("_history")
        return history

    @property
    def own_messages(self) -> list[Message] | None:
        """The messages this request keeps because a hook changed them (None: it shares the
        run's conversation)."""
        own: list[Message] | None = (self.__pydantic_private__ or {}).get("_own")
        return own


class TurnResponse(BaseModel):
    """What the model returned (so far, when the call failed or was stopped)."""

    model_config = ConfigDict(defer_build=True)

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None


class TurnTrace(BaseModel):
    """One model call."""

    model_config = ConfigDict(defer_build=True)

    #: The position in ``trace.turns`` (0 for the first call).
    index: int
    #: The run's turn number (1 for the first turn), as in the events and ``tool_calls[j].turn``.
    turn: int
    model: str = ""
    provider: str | None = None
    request: TurnRequest
    response: TurnResponse = Field(default_factory=TurnResponse)
    usage: TraceUsage = Field(default_factory=TraceUsage)
    started_at: datetime
    #: Milliseconds from the call to the first text, reasoning or tool call (None if none came).
    first_token_ms: float | None = None
    #: Milliseconds the call took (None while it runs).
    duration_ms: float | None = None
    #: Why the call failed or ended early (None when it succeeded).
    error: str | None = None
    #: How many times the call was made (more than 1 after retried failures, a retried
    #: continuation of a paused answer included).
    attempts: int = 1


class ToolCallTrace(BaseModel):
    """One tool call the model asked for."""

    model_config = ConfigDict(defer_build=True)

    id: str
    name: str
    #: The arguments the tool ran with (decoded JSON; the raw text when it was not JSON).
    args: Any = None
    #: The result text the model was given (None while the call runs).
    result: str | None = None
    #: ``success``, ``error``, ``rejected``, ``skipped``, ``cancelled``, ``timed_out`` or
    #: ``interrupted``; None while the call runs.
    status: ToolCallStatus | None = None
    turn: int
    #: When the call began (its hooks, approval and question included); None if it never began.
    started_at: datetime | None = None
    duration_ms: float | None = None
    approval: ApprovalRecord | None = None
    #: The call's last question (an MCP tool may ask several during one call: ``questions``).
    question: QuestionRecord | None = None
    #: Every question the call asked, in the order asked (``question`` is the last).
    questions: list[QuestionRecord] = Field(default_factory=list)
    #: What the tool printed or displayed while it ran, as a notebook view showed it (the first
    #: :data:`OUTPUT_LIMIT` characters).
    output: str = ""
    #: When the tool raised: the exception's type, message and traceback, as Python prints them
    #: (at most :data:`TRACEBACK_LIMIT` characters, the end kept). The model is told only
    #: ``result`` (``ToolCallError: <message>``).
    traceback: str | None = None
    #: The MCP server whose tool this is (``anvia_notebook.mcp``), else None.
    mcp_server: str | None = None

    @model_validator(mode="after")
    def _question_listed(self) -> ToolCallTrace:
        """A call stored before ``questions`` was kept has its one question listed."""
        if self.question is not None and not self.questions:
            self.questions = [self.question]
        return self


class Trace(BaseModel):
    """Every model call and tool call of one run."""

    model_config = ConfigDict(defer_build=True)

    run_id: str
    agent_id: str
    agent_name: str | None = None
    #: The run's status: ``running``, ``success``, ``error`` or ``cancelled``; a stored trace
    #: whose run's process ended before it did is ``interrupted``.
    status: str = "pending"
    error: str | None = None
    started_at: datetime | None = None
    #: Milliseconds from the start to the end (for a resumed run, the time between included);
    #: None while it runs.
    duration_ms: float | None = None
    turns: list[TurnTrace] = Field(default_factory=list)
    tool_calls: list[ToolCallTrace] = Field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"Trace(run_id={self.run_id!r}, status={self.status!r}, turns={len(self.turns)}, "
            f"tool_calls={len(self.tool_calls)})"
        )

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """In a notebook: the summary, then one row per model call and tool call (escaped)."""
        from html import escape

        summary = self.summary()
        if summary["input_tokens"] or summary["output_tokens"]:
            tokens = f"{summary['input_tokens']} tokens in / {summary['output_tokens']} out"
            if summary["cached_tokens"]:
                tokens += f" ({summary['cached_tokens']} cached)"
        else:  # the model reported no usage (an offline one): no count to show
            tokens = "no token counts"
        head = (
            f"<p><b>Trace</b> of run <code>{escape(_preview(self.run_id))}</code> "
            f"({escape(self.status)}): {_count(summary['turns'], 'model call')}, "
            f"{_count(summary['tool_calls'], 'tool call')}, {tokens}, first token "
            f"{_ms_text(summary['first_token_ms'])}, total {_ms_text(summary['duration_ms'])}</p>"
        )
        rows = self.rows()
        shown = rows[:HTML_ROWS]
        cells = []
        for row in shown:
            tokens = (
                f"{row['input_tokens']} / {row['output_tokens']}"
                if row["kind"] == "model" and (row["input_tokens"] or row["output_tokens"])
                else ""
            )
            values = (
                row["kind"],
                str(row["turn"]),
                _preview(str(row["name"])),  # (a model may choose a name of any length)
                _preview(str(row["status"])),
                _ms_text(row["duration_ms"]),
                tokens,
                _preview(str(row["error"] or row["result"] or "")),
            )
            cells.append("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in values) + "</tr>")
        titles = ("kind", "turn", "name", "status", "duration", "tokens in / out", "result")
        header = "".join(f"<th style='text-align:left'>{t}</th>" for t in titles)
        more = (
            f"<p>And {len(rows) - len(shown)} more: <code>trace.to_pandas()</code> has every "
            "row.</p>"
            if len(rows) > len(shown)
            else ""
        )
        return (
            f"{head}<table><thead><tr>{header}</tr></thead>"
            f"<tbody>{''.join(cells)}</tbody></table>{more}"
        )

    # -- views ---------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The run in numbers: turns, tokens, time to the first token, total time, tool calls."""
        input_tokens = output_tokens = 0
        cached_tokens: int | None = None  # (None: no call's provider reported it)
        first_token_ms: float | None = None
        for turn in self.turns:
            input_tokens += turn.usage.input_tokens
            output_tokens += turn.usage.output_tokens
            if turn.usage.cached_tokens is not None:
                cached_tokens = (cached_tokens or 0) + turn.usage.cached_tokens
            if first_token_ms is None and turn.first_token_ms is not None:
                first_token_ms = turn.first_token_ms
        return {
            "turns": len(self.turns),
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cached_tokens": cached_tokens,
            "first_token_ms": first_token_ms,
            "duration_ms": self.duration_ms,
            "tool_calls": len(self.tool_calls),
        }

    def calls_of(self, turn: TurnTrace | int) -> list[ToolCallTrace]:
        """The tool calls asked for by one model call (a :class:`TurnTrace` or its index)."""
        entry = turn if isinstance(turn, TurnTrace) else self.turns[self._index(turn)]
        last = self._last_of_turn().get(entry.turn)
        if last is not None and last.index != entry.index:
            return []  # (cut short by a stopped process, then made again: the new one asked)
        return [call for call in self.tool_calls if call.turn == entry.turn]

    def _last_of_turn(self) -> dict[int, TurnTrace]:
        """The last model call of each turn: a turn's calls are its. (A turn has two when a
        resumed run made again a model call that a stopped process cut short.)"""
        return {entry.turn: entry for entry in self.turns}

    def turn_view(self, index: int) -> dict[str, Any]:
        """Model call ``index`` (0 for the first) as a JSON-ready dict, with its tool calls."""
        turn = self.turns[self._index(index)]
        return {
            "index": turn.index,
            "turn": turn.turn,
            "model": turn.model,
            "provider": turn.provider,
            "request": turn.request.model_dump(mode="json", exclude={"message_count"}),
            "response": turn.response.model_dump(mode="json"),
            "usage": turn.usage.model_dump(mode="json"),
            "started_at": turn.model_dump(mode="json", include={"started_at"})["started_at"],
            "first_token_ms": turn.first_token_ms,
            "duration_ms": turn.duration_ms,
            "error": turn.error,
            "attempts": turn.attempts,
            "tool_calls": [call.model_dump(mode="json") for call in self.calls_of(turn)],
        }

    def _index(self, index: int) -> int:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"A turn is chosen by its index (an int), not {index!r}.")
        if not 0 <= index < len(self.turns):
            if not self.turns:
                raise IndexError(f"This trace has no model calls yet; there is no turn {index}.")
            raise IndexError(
                f"This trace has {_count(len(self.turns), 'model call')} "
                f"(0 to {len(self.turns) - 1}); "
                f"there is no turn {index}."
            )
        return index

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` with one row per model call and per tool call, in run order."""
        import importlib

        try:
            pd = importlib.import_module("pandas")
        except ImportError:
            raise ImportError(
                "Trace.to_pandas() needs pandas, which is not installed: pip install pandas"
            ) from None
        # Nullable types: token counts stay integers, and a missing value is <NA> in every
        # column (not NaN in some and None in others).
        return pd.DataFrame(self.rows(), columns=ROW_COLUMNS).astype(ROW_TYPES)

    def rows(self) -> list[dict[str, Any]]:
        """The rows of :meth:`to_pandas` as plain dicts (no pandas needed)."""
        rows: list[dict[str, Any]] = []
        calls_by_turn: dict[int, list[ToolCallTrace]] = {}
        for call in self.tool_calls:
            calls_by_turn.setdefault(call.turn, []).append(call)
        last = self._last_of_turn()
        for turn in self.turns:
            rows.append(_model_row(turn))
            if last[turn.turn] is turn:
                rows.extend(_tool_row(call) for call in calls_by_turn.pop(turn.turn, ()))
        for calls in calls_by_turn.values():  # calls whose model call is not in the trace
            rows.extend(_tool_row(call) for call in calls)
        return rows


#: How many rows a trace shows in a notebook (``to_pandas()`` has them all).
HTML_ROWS = 200


def _preview(text: str, limit: int = 80) -> str:
    """The start of ``text`` for one cell of the table (the whole of it is in the trace)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _count(count: int, noun: str) -> str:
    """``count`` and its noun, in the singular for one ("1 tool call", "2 tool calls")."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _ms_text(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} ms"


ROW_COLUMNS = [
    "kind",
    "turn",
    "name",
    "status",
    "started_at",
    "duration_ms",
    "first_token_ms",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "finish_reason",
    "tool_call_id",
    "args",
    "result",
    "error",
]

#: The pandas types of ``to_pandas()``'s columns (all but ``started_at``): nullable ones.
ROW_TYPES = {
    "kind": "string",
    "name": "string",
    "status": "string",
    "finish_reason": "string",
    "tool_call_id": "string",
    "args": "string",
    "result": "string",
    "error": "string",
    "turn": "Int64",
    "duration_ms": "Float64",
    "first_token_ms": "Float64",
    "input_tokens": "Int64",
    "output_tokens": "Int64",
    "cached_tokens": "Int64",
}


#: How the error of a model call that Stop ended begins (the run was stopped; the call did
#: not fail), and of one a stopped kernel cut off (a resumed run made it again).
STOPPED = "Stopped: "
INTERRUPTED = "Interrupted: "


def _model_row(turn: TurnTrace) -> dict[str, Any]:
    if turn.error is not None:
        # (as a tool call's row says it: only a call that failed is an error)
        if turn.error.startswith(STOPPED):
            status = "cancelled"
        elif turn.error.startswith(INTERRUPTED):
            status = "interrupted"
        else:
            status = "error"
    elif turn.duration_ms is None:
        status = "running"
    else:
        status = "success"
    return {
        "kind": "model",
        "turn": turn.turn,
        "name": turn.model,
        "status": status,
        "started_at": turn.started_at,
        "duration_ms": turn.duration_ms,
        "first_token_ms": turn.first_token_ms,
        "input_tokens": turn.usage.input_tokens,
        "output_tokens": turn.usage.output_tokens,
        "cached_tokens": turn.usage.cached_tokens,
        "finish_reason": turn.response.finish_reason,
        "tool_call_id": None,
        "args": None,
        "result": turn.response.text,
        "error": turn.error,
    }


def _tool_row(call: ToolCallTrace) -> dict[str, Any]:
    return {
        "kind": "tool",
        "turn": call.turn,
        "name": call.name,
        "status": call.status or "running",
        "started_at": call.started_at,
        "duration_ms": call.duration_ms,
        "first_token_ms": None,
        "input_tokens": None,
        "output_tokens": None,
        "cached_tokens": None,
        "finish_reason": None,
        "tool_call_id": call.id,
        "args": call.args
        if isinstance(call.args, str)
        else json.dumps(call.args, ensure_ascii=False),
        "result": call.result,
        "error": call.result if call.status == "error" else None,
    }
