"""Recording a run's trace as it runs, and handing it to OpenTelemetry when instrumented.

The run loop and the tool executor tell the :class:`TraceRecorder` when a model call or a tool
call starts and ends; the recorder fills the run's :class:`~anvia_notebook.trace.Trace` (a few
objects per call, nothing per streamed delta) and marks what changed for the run store. When
``anvia_notebook.instrument()`` is on, it also drives the run's OpenTelemetry spans; when it is
off, nothing of OpenTelemetry is imported and each notification costs one ``None`` check.
"""

from __future__ import annotations

import contextvars
import logging
import operator
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from ._util import decode_args, error_text, shown_options
from .errors import (
    McpToolError,
    OutputValidationError,
    SubAgentError,
    ToolArgumentsError,
    ToolNotFoundError,
)
from .events import ApprovalRecord, QuestionRecord, utc_now
from .messages import Message
from .trace import (
    INTERRUPTED,
    OUTPUT_LIMIT,
    STOPPED,
    TRACEBACK_LIMIT,
    ToolCallStatus,
    ToolCallTrace,
    Trace,
    TraceUsage,
    TurnRequest,
    TurnResponse,
    TurnTrace,
)

if TYPE_CHECKING:
    from ._stored_once import KnownCalls
    from .models.base import CompletionRequest, CompletionResponse, ToolCall

__all__ = ["TraceRecorder", "clock", "decode_args"]

_M = TypeVar("_M", bound=BaseModel)

logger = logging.getLogger("anvia_notebook")


class ToolErrorsLogged:
    """Tool failures of many runs logged as one: an evaluation's cases may each fail the same
    way, and a notebook cell would show one warning per case. The first is logged (saying the
    others are not), the others at the debug level; each stays in its run's trace."""

    def __init__(self) -> None:
        self.logged = False


#: Set (in a context its runs inherit) by whoever runs many runs at once: an evaluation.
tool_errors_logged: contextvars.ContextVar[ToolErrorsLogged | None] = contextvars.ContextVar(
    "tool_errors_logged", default=None
)

#: The clock timings are read from (seconds, monotonic). Tests replace it with a fake clock.
clock: Callable[[], float] = time.perf_counter

#: The OpenTelemetry exporter that ``instrument()`` set (None: off). Read once per run.
exporter: Any = None

#: Ends a tool's output that was cut at OUTPUT_LIMIT.
OUTPUT_CUT = "\n[... more output not kept]"

#: The request settings a trace shows (when set).
_SETTINGS = ("temperature", "max_tokens", "tool_choice")


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


#: Per model class, in field order: each field's name, default factory and default.
_FIELDS: dict[type[BaseModel], tuple[tuple[str, Any, Any], ...]] = {}
_REQUIRED = object()


def _build(cls: type[_M], private: dict[str, Any] | None = None, /, **values: Any) -> _M:
    """A trace model from values the recorder knows to be of the right types, without
    validating them again: a few of these are made per model call and per tool call, and
    pydantic's validation (or ``model_construct``) would cost more than everything else the
    recorder does. Fields not given get their defaults, as with validation."""
    spec = _FIELDS.get(cls)
    if spec is None:
        spec = _FIELDS[cls] = tuple(
            (name, field.default_factory, _REQUIRED if field.is_required() else field.default)
            for name, field in cls.model_fields.items()
        )
    fields: dict[str, Any] = {}
    for name, factory, default in spec:
        if name in values:
            fields[name] = values[name]
        elif factory is not None:
            fields[name] = factory()
        elif default is _REQUIRED:
            raise TypeError(f"{cls.__name__} needs {name}")
        else:
            fields[name] = default
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", fields)
    object.__setattr__(model, "__pydantic_fields_set__", set(fields))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", private)
    return model


#: What a model call that has not ended shows; replaced (never changed) when it ends.
#: (Built without validation: importing the package does not build these models' validators.)
_NOTHING_YET = TurnResponse.model_construct()
_NO_TOKENS_YET = TraceUsage.model_construct()


def _keep_end(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: its start and its end (where a traceback
    names the exception), with a note of what was left out between them."""
    if len(text) <= limit:
        return text
    head = limit // 10
    left = len(text) - limit
    return f"{text[:head]}\n… ({left:,} characters left out) …\n{text[len(text) - limit + head :]}"


def _set(model: BaseModel, **values: Any) -> None:
    """Update fields of a trace model the recorder made (values of the right types)."""
    model.__dict__.update(values)


class TraceRecorder:
    """Fills one run's trace. Used on the run's event loop only."""

    def __init__(self, trace: Trace, *, model: Any = None, agent_name: str | None = None) -> None:
        self.trace = trace
        self.model_name = str(getattr(model, "name", type(model).__name__))
        self.provider = getattr(model, "provider", None) or type(model).__name__
        options = getattr(model, "request_options", None)
        # (a gateway's key header or an api_key in extra_body: not kept in the trace)
        self._model_options = shown_options(options) if isinstance(options, dict) else {}
        if agent_name is not None:
            trace.agent_name = agent_name
        self._clock0 = clock()
        self._wall0 = utc_now()
        self._turn_t0: dict[int, float] = {}
        self._call_t0: dict[int, float] = {}
        #: The latest tool call of each tool call id (a resumed run finds its calls again).
        self._calls: dict[str, ToolCallTrace] = {call.id: call for call in trace.tool_calls}
        self._call_index: dict[int, int] = {id(c): i for i, c in enumerate(trace.tool_calls)}
        self._dirty_turns: set[int] = set()
        #: The arguments text each running call started with (decoded once if unchanged).
        self._raw_args: dict[int, Any] = {}
        #: The same, kept while the call's arguments stay the ones the model sent (a stored
        #: trace row then leaves them to the run's stored messages).
        self._sent_args: dict[int, Any] = {}
        self._dirty_calls: set[int] = set()
        self._run_dirty = False
        #: This run's OpenTelemetry spans (None when instrumentation is off).
        self._run_spans: Any = None
        #: The same, for the spans of each call (None also when the run is not recorded).
        self.spans: Any = None

    # -- time ----------------------------------------------------------------------------------

    def _wall(self, at: float) -> datetime:
        return self._wall0 + timedelta(seconds=at - self._clock0)

    # -- the run -------------------------------------------------------------------------------

    def run_started(self, *, agent_id: str, resumed: bool, session_id: str | None = None) -> None:
        now = clock()
        trace = self.trace
        trace.status = "running"
        trace.error = None
        trace.duration_ms = None
        if trace.started_at is None:
            trace.started_at = self._wall(now)
        if resumed:
            self._close_interrupted()
        self._run_dirty = True
        if exporter is not None:
            try:
                spans = exporter.run_spans(
                    self, agent_id=agent_id, resumed=resumed, session_id=session_id
                )
            except Exception:  # exporting must never stop a run (a warning, once)
                exporter.failed(trace.run_id)
            else:
                self._run_spans = spans
                # A run the sampler dropped makes no spans per call (each costs the SDK's
                # span handling and would be dropped with its parent): one None check each.
                self.spans = spans if spans.recording else None

    def _close_interrupted(self) -> None:
        """A resumed run: model calls the stopped kernel left open were interrupted."""
        for turn in self.trace.turns:
            if turn.duration_ms is None:
                turn.error = turn.error or (
                    f"{INTERRUPTED}the kernel stopped during this model call; the resumed run "
                    "made it again."
                )
                self._dirty_turns.add(turn.index)

    def run_ended(self, status: str, error: BaseException | None = None) -> None:
        now = clock()
        trace = self.trace
        trace.status = status
        if error is not None:
            trace.error = error_text(error) or type(error).__name__
        if trace.started_at is not None:
            ended = self._wall(now)
            trace.duration_ms = _ms((ended - trace.started_at).total_seconds())
        self._run_dirty = True
        if self._run_spans is not None:
            self._run_spans.run_ended(status, error)

    # -- model calls ---------------------------------------------------------------------------

    def model_call(
        self, turn: int, request: CompletionRequest, history: list[Message]
    ) -> TurnTrace:
        """A model call begins on ``turn`` with ``request`` (``history``: the run's messages)."""
        now = clock()
        sent = request.messages
        if len(sent) <= len(history) and all(map(operator.is_, sent, history)):
            private = TurnRequest.private_values(history=history)
        else:  # a hook changed the messages: keep what was really sent
            private = TurnRequest.private_values(own=list(sent))
        turn_request = _build(
            TurnRequest,
            private,
            instructions=request.instructions,
            tools=request.tools,
            settings=self._settings(request),
            message_count=len(sent),
        )
        entry = _build(
            TurnTrace,
            index=len(self.trace.turns),
            turn=turn,
            model=self.model_name,
            provider=self.provider,
            request=turn_request,
            response=_NOTHING_YET,
            usage=_NO_TOKENS_YET,
            started_at=self._wall(now),
        )
        self.trace.turns.append(entry)
        self._turn_t0[entry.index] = now
        self._dirty_turns.add(entry.index)
        return entry

    def _settings(self, request: CompletionRequest) -> dict[str, Any]:
        settings: dict[str, Any] = {"model": self.model_name, **self._model_options}
        for name in _SETTINGS:
            value = getattr(request, name)
            if value is not None:
                settings[name] = value
        return settings

    def attempt(self, entry: TurnTrace, attempt: int) -> Any:
        """Attempt ``attempt`` (1, 2, ...) of the call starts. Returns the token that the call's
        end (:meth:`model_call_done`, ``_failed``, ``_stopped``) takes back: the chat span,
        current while the model streams (None when not instrumented)."""
        if attempt != entry.attempts:
            entry.attempts = attempt
        if self.spans is not None:
            return self.spans.chat_started(entry)
        return None

    def retried(self, entry: TurnTrace, token: Any, error: BaseException, sent: bool) -> None:
        """A request the model sent within the call (a continuation of a paused answer)
        failed and is to be tried again (a ``retry`` event on the call's span, before the
        wait), then is sent again (``sent``, after it): one more attempt of the call."""
        if sent:
            entry.attempts += 1
            self._dirty_turns.add(entry.index)
        if self.spans is not None and token is not None:
            self.spans.chat_retried(entry, token, error, sent)

    def first_token(self, entry: TurnTrace) -> None:
        if entry.first_token_ms is None:
            started = self._turn_t0.get(entry.index, self._clock0)
            _set(entry, first_token_ms=_ms(clock() - started))

    def model_call_done(self, entry: TurnTrace, response: CompletionResponse, token: Any) -> None:
        self._finish_turn(entry, response)
        if self.spans is not None:
            self.spans.chat_ended(entry, token, None)

    def model_call_failed(
        self,
        entry: TurnTrace,
        error: BaseException,
        partial: CompletionResponse,
        token: Any,
        *,
        retrying: bool = False,
    ) -> None:
        if not retrying:
            text = error_text(error)
            entry.error = f"{type(error).__name__}: {text}" if text else type(error).__name__
            self._finish_turn(entry, partial)
        if self.spans is not None and token is not None:
            self.spans.chat_ended(entry, token, error)

    def model_call_stopped(
        self, entry: TurnTrace, reason: str, partial: CompletionResponse, token: Any
    ) -> None:
        entry.error = f"{STOPPED}{reason}"
        self._finish_turn(entry, partial)
        if self.spans is not None and token is not None:
            self.spans.chat_ended(entry, token, None, stopped=reason)

    def _finish_turn(self, entry: TurnTrace, response: CompletionResponse) -> None:
        _set(
            entry,
            duration_ms=_ms(clock() - self._turn_t0.pop(entry.index, self._clock0)),
            response=_build(
                TurnResponse,
                text=response.text,
                reasoning=response.reasoning,
                tool_calls=response.tool_calls,
                finish_reason=response.finish_reason,
            ),
            usage=_build(
                TraceUsage,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                cached_tokens=response.cached_tokens,
            ),
        )
        self._dirty_turns.add(entry.index)

    # -- tool calls ----------------------------------------------------------------------------

    def tool_call(
        self, call: ToolCall, turn: int, *, started: bool = True, mcp_server: str | None = None
    ) -> ToolCallTrace:
        """A tool call begins (or, with ``started=False``, is recorded without having begun);
        ``mcp_server`` names the MCP server of the call's tool, if it has one."""
        now = clock()
        entry = self._calls.get(call.id)
        if entry is not None and entry.turn == turn:
            if entry.status is None and started:  # a resumed run takes the call up again
                if entry.started_at is None:
                    entry.started_at = self._wall(now)
                    self._call_t0[id(entry)] = now
                else:  # it began in the earlier process (its approval was asked then): its
                    # time runs from then, the time between included, as the run's does
                    waited = (self._wall(now) - entry.started_at).total_seconds()
                    self._call_t0[id(entry)] = now - max(waited, 0.0)
                self._mark(entry)
                if self.spans is not None:
                    self.spans.tool_started(entry)
            return entry
        raw = call.arguments
        entry = _build(
            ToolCallTrace,
            id=call.id,
            name=call.name,
            args=decode_args(raw),
            turn=turn,
            started_at=self._wall(now) if started else None,
            mcp_server=mcp_server,
        )
        self._call_index[id(entry)] = len(self.trace.tool_calls)
        self.trace.tool_calls.append(entry)
        self._calls[call.id] = entry
        self._mark(entry)
        self._raw_args[id(entry)] = raw
        self._sent_args[id(entry)] = raw
        if started:
            self._call_t0[id(entry)] = now
            if self.spans is not None:
                self.spans.tool_started(entry)
        return entry

    def raw_args(self, entry: ToolCallTrace) -> Any:
        """The arguments a running call was made with, as the model sent them (None if unknown)."""
        return self._raw_args.get(id(entry))

    def entry(self, call_id: str | None) -> ToolCallTrace | None:
        return self._calls.get(call_id) if call_id is not None else None

    def interaction(
        self, record: ApprovalRecord | QuestionRecord, *, resolved: bool = False
    ) -> None:
        """An approval or a question was opened (or, ``resolved``, decided) for one of the calls:
        its ``approval`` or ``question`` is the record this event carried (the trace is the
        run's log of what happened; the run's state holds the live record)."""
        entry = self.entry(record.tool_call_id)
        if entry is None:
            return
        entry.__dict__[record.kind] = record  # its ``approval`` or ``question`` (as ``_set``)
        if record.kind == "question":  # every question of the call, each as it is now
            asked = {question.id: question for question in entry.questions}
            asked[record.id] = record  # (in its place, or last when it is new)
            entry.__dict__["questions"] = list(asked.values())
        self._mark(entry)
        if self.spans is not None:
            self.spans.interaction(entry, record, resolved)

    def tool_error(self, call_id: str, error: BaseException) -> None:
        """The call failed with ``error`` (its result tells the model so). When its tool raised
        it, the trace keeps the traceback, and it is logged."""
        entry = self.entry(call_id)
        if entry is None:
            return
        # (A sub-agent call refused by its depth limit is a rule, not a failure of the tool; a
        # typed output that fails validation is the model's to fix, or the person's.)
        # An MCP server's error answer is the server's result, not an exception of a tool.
        refused = (
            ToolArgumentsError,
            ToolNotFoundError,
            SubAgentError,
            OutputValidationError,
            McpToolError,
        )
        if not isinstance(error, refused):
            text = "".join(traceback.format_exception(error))
            _set(entry, traceback=_keep_end(text, TRACEBACK_LIMIT))
            self._mark(entry)
            shared = tool_errors_logged.get()
            if shared is None or not shared.logged:
                said = error_text(error).rstrip()
                logger.warning(
                    "Tool %r (call %s) raised %s: %s The model is told only the message. The "
                    "traceback is in the run's trace (trace.tool_calls[...].traceback) and its "
                    "Inspect view.%s",
                    entry.name,
                    call_id,
                    type(error).__name__,
                    said if said.endswith((".", "!", "?")) else f"{said}.",
                    ""
                    if shared is None
                    else " Further tool errors of this evaluation are not logged: each is in "
                    "its case's trace.",
                )
                if shared is not None:
                    shared.logged = True
            else:
                logger.debug("Tool %r (call %s) raised %s", entry.name, call_id, error)
            logger.debug("Traceback of tool call %s", call_id, exc_info=error)
        if self.spans is not None:
            self.spans.tool_exception(entry, error)

    def activate(self, entry: ToolCallTrace) -> Any:
        """While the tool executes, its span is the current one (None when not instrumented)."""
        if self.spans is not None:
            return self.spans.activate_tool(entry)
        return None

    def deactivate(self, token: Any) -> None:
        if token is not None and self.spans is not None:
            self.spans.deactivate(token)

    def tool_call_done(
        self, entry: ToolCallTrace, args: Any, result: str, status: ToolCallStatus
    ) -> None:
        """The call ended with ``result`` (what the model is told) and ``status``."""
        if entry.status is not None:
            return
        if args != self._raw_args.pop(id(entry), None):  # edited on approval, or not JSON
            decoded = decode_args(args)
            if decoded != entry.args:  # (not the same data written another way)
                _set(entry, args=decoded)
                self._sent_args.pop(id(entry), None)
        started = self._call_t0.pop(id(entry), None)
        duration = _ms(clock() - started) if started is not None else entry.duration_ms
        _set(entry, result=result, status=status, duration_ms=duration)
        self._mark(entry)
        if self.spans is not None:
            self.spans.tool_ended(entry)

    def tool_output(self, call_id: str | None, text: str) -> None:
        """The tool printed (or displayed) ``text`` while it ran; kept up to OUTPUT_LIMIT."""
        entry = self.entry(call_id)
        if entry is None or not text:
            return
        if entry.output.endswith(OUTPUT_CUT):
            return  # cut already
        room = OUTPUT_LIMIT - len(entry.output)
        entry.output += text if len(text) <= room else text[: max(room, 0)] + OUTPUT_CUT
        self._mark(entry)

    def _mark(self, entry: ToolCallTrace) -> None:
        self._dirty_calls.add(self._call_index[id(entry)])

    # -- the run store -------------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        return self._run_dirty or bool(self._dirty_turns) or bool(self._dirty_calls)

    def take_rows(self, known: KnownCalls | None = None) -> list[tuple[str, int, str]]:
        """``(kind, index, JSON)`` rows of what changed since the last call, for the store
        (``known``: the long arguments texts the store has with the messages)."""
        from ._trace_store import encode_call, encode_run, encode_turn

        rows: list[tuple[str, int, str]] = []
        trace = self.trace
        if self._run_dirty:
            rows.append(("run", 0, encode_run(trace)))
        for index in sorted(self._dirty_turns):
            previous = trace.turns[index - 1] if index > 0 else None
            rows.append(("turn", index, encode_turn(trace.turns[index], previous, known)))
        for index in sorted(self._dirty_calls):
            call = trace.tool_calls[index]
            stored = known is not None and known.same(call.id, self._sent_args.get(id(call)))
            rows.append(("tool_call", index, encode_call(call, args_stored=stored)))
        self._run_dirty = False
        self._dirty_turns.clear()
        self._dirty_calls.clear()
        return rows
