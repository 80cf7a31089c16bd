"""Runs as OpenTelemetry spans, following the GenAI semantic conventions.

Imported only by ``anvia_notebook.instrument()``: when instrumentation is off, OpenTelemetry is
never imported. Per run: a root ``invoke_agent {agent}`` span, one ``chat {model}`` span per
model call (per attempt) and one ``execute_tool {tool}`` span per tool call, both children of the
root; approvals and questions are events on their tool call's span; errors are recorded on the
span where they happened (status ERROR and an exception event). Message content, tool arguments
and results, and free-text reasons are attached only with ``capture_content=True``.
"""

from __future__ import annotations

import functools
import json
import logging
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from pydantic_core import to_json

from ._util import error_text
from ._version import __version__
from .errors import McpToolError

if TYPE_CHECKING:
    from ._tracing import TraceRecorder
    from .events import ApprovalRecord, QuestionRecord
    from .messages import Message
    from .trace import ToolCallTrace, TurnTrace

__all__ = ["OTelExporter"]

OPERATION = "gen_ai.operation.name"
_UNKNOWN = object()
logger = logging.getLogger("anvia_notebook")
_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(method: _F) -> _F:
    """Every call into the OpenTelemetry SDK goes through one of these methods: an exception
    from it (a span processor or exporter that raises in ``on_start``/``on_end``, a broken
    provider) is logged, once per ``instrument()``, and never reaches the run."""

    @functools.wraps(method)
    def call(self: RunSpans, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception:
            self.exporter.failed(self.recorder.trace.run_id)
            return None

    return cast(_F, call)


class OTelExporter:
    """Makes the spans of each run (``instrument()`` keeps one)."""

    def __init__(self, tracer_provider: Any = None, capture_content: bool = False) -> None:
        self.tracer = otel_trace.get_tracer(
            "anvia_notebook", __version__, tracer_provider=tracer_provider
        )
        self.capture_content = capture_content
        self._warned = False

    def failed(self, run_id: str) -> None:
        """The SDK raised (call from an ``except`` block): a warning the first time only."""
        if self._warned:
            logger.debug("OpenTelemetry failed again (run %s)", run_id, exc_info=True)
            return
        self._warned = True
        logger.warning(
            "Exporting OpenTelemetry spans failed (run %s); the run goes on, but its spans may "
            "be incomplete. Check the span processors and exporters given to instrument(). "
            "Further failures are logged at DEBUG level only.",
            run_id,
            exc_info=True,
        )

    def run_spans(
        self,
        recorder: TraceRecorder,
        *,
        agent_id: str,
        resumed: bool,
        session_id: str | None = None,
    ) -> RunSpans:
        return RunSpans(self, recorder, agent_id=agent_id, resumed=resumed, session_id=session_id)


class RunSpans:
    """The spans of one run. Created and used on the run's task, so that the root span is the
    current span while the run runs (spans made by hooks, tools and provider SDKs nest in it)."""

    def __init__(
        self,
        exporter: OTelExporter,
        recorder: TraceRecorder,
        *,
        agent_id: str,
        resumed: bool,
        session_id: str | None = None,
    ) -> None:
        self.exporter = exporter
        self.tracer = exporter.tracer
        self.content = exporter.capture_content
        self.recorder = recorder
        trace = recorder.trace
        name = trace.agent_name or agent_id
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.agent.id": agent_id,
            "gen_ai.provider.name": recorder.provider,
            "gen_ai.request.model": recorder.model_name,
            "anvia.run_id": trace.run_id,
        }
        if session_id:  # a conversation of several runs (a Studio session, a chat)
            attributes["gen_ai.conversation.id"] = session_id
        if resumed:
            attributes["anvia.resumed"] = True
            # (the part of the total made before the resume: the earlier process's root, if
            # it ended at all, as when another process took the run over, counted it)
            before = trace.summary()
            attributes["anvia.resumed.input_tokens"] = before["input_tokens"]
            attributes["anvia.resumed.output_tokens"] = before["output_tokens"]
        self.root = self.tracer.start_span(
            f"invoke_agent {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        #: False when the sampler dropped the run (or the provider records nothing): the
        #: recorder then makes no chat or tool spans, whose parent would drop them anyway.
        self.recording = self.root.is_recording()
        self.root_context = otel_trace.set_span_in_context(self.root)
        # Current even when not recording, so that spans made by tools, hooks and provider SDKs
        # inherit the sampler's decision instead of starting traces of their own.
        self._token = otel_context.attach(self.root_context)
        #: The open ``execute_tool`` spans, by ``id()`` of their trace entry.
        self._tools: dict[int, Any] = {}
        # The attributes every chat span starts with, made once per run (each span gets its
        # own copy, which it then adds to).
        self._model = (recorder.model_name, recorder.provider)
        self._chat_name = f"chat {recorder.model_name}"
        self._chat_base: dict[str, Any] = {
            OPERATION: "chat",
            "gen_ai.provider.name": recorder.provider or "",
            "gen_ai.request.model": recorder.model_name,
        }
        # With capture_content: each message, tool definition and instructions text is turned
        # into JSON once per run, not once per model call that sends it again.
        self._message_json: dict[int, tuple[Message, str]] = {}
        self._tool_json: dict[int, tuple[Any, str]] = {}
        self._instructions_json: tuple[str, str] | None = None
        #: The arguments each tool span was given (set again at the end only if they changed).
        self._tool_args: dict[int, Any] = {}
        #: The exception each failed tool span recorded, by name (its ``error.type``).
        self._tool_errors: dict[int, str] = {}

    # -- the run ---------------------------------------------------------------------------------

    @_guarded
    def run_ended(self, status: str, error: BaseException | None) -> None:
        root = self.root
        otel_context.detach(self._token)
        if not self.recording:
            self._end(root)
            return
        try:
            summary = self.recorder.trace.summary()
            root.set_attributes(
                {
                    "gen_ai.usage.input_tokens": summary["input_tokens"],
                    "gen_ai.usage.output_tokens": summary["output_tokens"],
                    "anvia.run.status": status,
                }
            )
            if status == "cancelled":
                attributes = {"reason": str(error)} if self.content and error is not None else {}
                root.add_event("cancelled", attributes)
            elif error is not None:
                _record_error(root, error)
        finally:  # every span ends, whatever one of them raises
            for span in self._tools.values():  # calls the run did not finish
                self._end(span)
            self._tools.clear()
            self._tool_args.clear()
            self._tool_errors.clear()
            self._message_json.clear()
            self._tool_json.clear()
            self._end(root)

    @_guarded
    def _end(self, span: Any) -> None:
        span.end()

    # -- model calls -----------------------------------------------------------------------------

    @_guarded
    def chat_started(self, entry: TurnTrace) -> tuple[Any, Any]:
        request = entry.request
        if (entry.model, entry.provider) == self._model:  # (always, for calls of this run)
            attributes = {**self._chat_base, "anvia.turn": entry.turn}
            name = self._chat_name
        else:
            attributes = {
                OPERATION: "chat",
                "gen_ai.provider.name": entry.provider or "",
                "gen_ai.request.model": entry.model,
                "anvia.turn": entry.turn,
            }
            name = f"chat {entry.model}"
        settings = request.settings
        if len(settings) > 1:  # more than the model's name
            temperature = settings.get("temperature")
            if isinstance(temperature, (int, float)):
                attributes["gen_ai.request.temperature"] = temperature
            max_tokens = settings.get("max_tokens")
            if isinstance(max_tokens, int):
                attributes["gen_ai.request.max_tokens"] = max_tokens
        if entry.attempts > 1:
            attributes["anvia.attempt"] = entry.attempts
        if self.content:
            if request.instructions:
                attributes["gen_ai.system_instructions"] = self._instructions(request.instructions)
            attributes["gen_ai.input.messages"] = self._messages(request.messages)
            if request.tools:
                attributes["gen_ai.tool.definitions"] = self._definitions(request.tools)
        span = self.tracer.start_span(
            name, context=self.root_context, kind=SpanKind.CLIENT, attributes=attributes
        )
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        return span, token

    def _instructions(self, text: str) -> str:
        cached = self._instructions_json
        if cached is None or cached[0] != text:
            cached = self._instructions_json = (
                text,
                _dumps([{"type": "text", "content": _kept(text)}]),
            )
        return cached[1]

    def _messages(self, messages: list[Message]) -> str:
        cache = self._message_json
        parts: list[str] = []
        for message in messages:
            known = cache.get(id(message))
            if known is None or known[0] is not message:
                known = cache[id(message)] = (message, _dumps(_message(message)))
            parts.append(known[1])
        return "[" + ",".join(parts) + "]"

    def _definitions(self, tools: list[Any]) -> str:
        cache = self._tool_json
        parts: list[str] = []
        for tool in tools:
            known = cache.get(id(tool))
            if known is None or known[0] is not tool:
                definition = {"type": "function", **tool.model_dump(mode="json")}
                known = cache[id(tool)] = (tool, _dumps(definition))
            parts.append(known[1])
        return "[" + ",".join(parts) + "]"

    @_guarded
    def chat_retried(
        self, entry: TurnTrace, started: tuple[Any, Any], error: BaseException, sent: bool
    ) -> None:
        """A request within the call failed and is to be tried again (see
        ``TraceRecorder.retried``): a ``retry`` event on the call's span, with the attempt it
        is to be; once it is sent, the span's ``anvia.attempt`` counts it."""
        span = started[0]
        if sent:
            span.set_attribute("anvia.attempt", entry.attempts)
        else:
            attempt = entry.attempts + 1
            span.add_event("retry", {"error.type": type(error).__name__, "anvia.attempt": attempt})

    @_guarded
    def chat_ended(
        self,
        entry: TurnTrace,
        started: tuple[Any, Any] | None,
        error: BaseException | None,
        stopped: str | None = None,
    ) -> None:
        if started is None:  # the span could not be started
            return
        span, token = started
        otel_context.detach(token)
        usage = entry.usage
        attributes: dict[str, Any] = {}
        if (error is None and stopped is None) or usage.input_tokens or usage.output_tokens:
            # (a call that failed or was stopped after the provider told its usage: the run's
            # total has those tokens, and the chat spans add up to it)
            attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
            if usage.cached_tokens is not None:
                attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
        if error is not None:
            _record_error(span, error)
        elif stopped is not None:
            span.add_event("cancelled", {"reason": stopped} if self.content else {})
        else:
            response = entry.response
            if response.finish_reason:
                # (a list: the SDK checks it faster than a tuple, and exports it as a tuple)
                attributes["gen_ai.response.finish_reasons"] = [response.finish_reason]
            if self.content:
                parts: list[dict[str, Any]] = []
                if response.text:
                    parts.append({"type": "text", "content": _kept(response.text)})
                parts.extend(
                    {
                        "type": "tool_call",
                        "id": call.id,
                        "name": call.name,
                        "arguments": _kept_arguments(call.arguments),
                    }
                    for call in response.tool_calls
                )
                output = {
                    "role": "assistant",
                    "parts": parts,
                    "finish_reason": response.finish_reason or "",
                }
                attributes["gen_ai.output.messages"] = _dumps([output])
        span.set_attributes(attributes)
        span.end()

    # -- tool calls ------------------------------------------------------------------------------

    @_guarded
    def tool_started(self, entry: ToolCallTrace) -> None:
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            "gen_ai.tool.name": entry.name,
            "gen_ai.tool.call.id": entry.id,
            "gen_ai.tool.type": "function",
            "anvia.turn": entry.turn,
        }
        if entry.mcp_server is not None:  # a tool of an MCP server: which one, and how called
            attributes["anvia.mcp.server"] = entry.mcp_server
            attributes["mcp.method.name"] = "tools/call"
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = _kept(self._arguments(entry))
            self._tool_args[id(entry)] = entry.args
        previous = self._tools.pop(id(entry), None)
        if previous is not None:
            self._end(previous)
        self._tools[id(entry)] = self.tracer.start_span(
            f"execute_tool {entry.name}",
            context=self.root_context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )

    def _arguments(self, entry: ToolCallTrace) -> str:
        """The call's arguments as JSON: the model's own text when it sent valid JSON."""
        raw = self.recorder.raw_args(entry)
        if isinstance(raw, str) and raw.strip() and not isinstance(entry.args, str):
            return raw  # (decoded into entry.args, so it is JSON)
        return _json(entry.args)

    @_guarded
    def activate_tool(self, entry: ToolCallTrace) -> Any:
        span = self._tools.get(id(entry))
        if span is None:
            return None
        return otel_context.attach(otel_trace.set_span_in_context(span))

    @_guarded
    def deactivate(self, token: Any) -> None:
        otel_context.detach(token)

    @_guarded
    def tool_exception(self, entry: ToolCallTrace, error: BaseException) -> None:
        span = self._tools.get(id(entry))
        if span is not None:
            _record_exception(span, error)
            # (an MCP server's error answer: "tool_error", or its JSON-RPC error code, as the
            # MCP semantic conventions name it)
            named = error.error_type if isinstance(error, McpToolError) else None
            self._tool_errors[id(entry)] = named or type(error).__name__

    @_guarded
    def interaction(
        self, entry: ToolCallTrace, record: ApprovalRecord | QuestionRecord, resolved: bool
    ) -> None:
        kind, content = record.kind, self.content
        shown: dict[str, Any] = {"id": record.id, "status": record.status}
        if record.kind == "approval":
            shown["decided_by"] = record.decided_by
            if content:
                shown.update(reason=record.reason, decision_reason=record.decision_reason)
        else:
            shown["count"] = len(record.questions)
            if content:
                shown["questions"] = _dumps([q.model_dump(mode="json") for q in record.questions])
            if content and resolved:
                shown["answers"] = _dumps([a.to_wire() for a in record.answers])
        # (an approval's texts and decider only when it has them)
        attributes = {f"anvia.{kind}.{k}": v for k, v in shown.items() if v not in (None, "")}
        name = f"tool_{kind}_result" if resolved else f"tool_{kind}_request"
        self._span_of(entry).add_event(name, attributes)

    def _span_of(self, entry: ToolCallTrace) -> Any:
        return self._tools.get(id(entry)) or self.root

    @_guarded
    def tool_ended(self, entry: ToolCallTrace) -> None:
        span = self._tools.pop(id(entry), None)
        raised = self._tool_errors.pop(id(entry), None)
        if span is None:  # the call never began: nothing ran
            return
        status = entry.status or ""
        if not self.content and status != "error":  # the usual case: one attribute
            span.set_attribute("anvia.tool.status", status)
            span.end()
            return
        attributes: dict[str, Any] = {"anvia.tool.status": status}
        if self.content:
            began_with = self._tool_args.pop(id(entry), _UNKNOWN)
            if began_with is not entry.args and began_with != entry.args:  # edited on approval
                attributes["gen_ai.tool.call.arguments"] = _kept(_json(entry.args))
            attributes["gen_ai.tool.call.result"] = _kept(entry.result or "")
        if status == "error":
            # (the exception's class, as on the other spans; "tool_error" when none was raised)
            attributes["error.type"] = raised or "tool_error"
            span.set_status(Status(StatusCode.ERROR, "The tool call failed."))
        span.set_attributes(attributes)
        span.end()


#: How much of an error's message a span keeps (its status, its ``exception`` event), and of
#: its stack trace: a provider's 200 KB error body is not exported three times per span.
MAX_ERROR_MESSAGE = 4_000
MAX_STACKTRACE = 8_000


#: How much of each text a span keeps with ``capture_content`` (a message's text, a tool call's
#: arguments or result): a 10 MB tool result was exported in full on its tool span, its chat
#: span and every later chat span (OTLP exporters refuse messages past a few MB).
MAX_CONTENT = 20_000


def _kept(text: str) -> str:
    return _bounded(text, MAX_CONTENT)


def _kept_arguments(arguments: Any) -> Any:
    """A tool call's arguments as data (the JSON text a message of the history keeps them as
    is read: one shape for a call in the answer and in the next request), unless their JSON is
    longer than :data:`MAX_CONTENT`: then that JSON, cut short. Text that is no JSON object
    stays text."""
    if isinstance(arguments, str):
        try:
            data = json.loads(arguments) if len(arguments) <= MAX_CONTENT else None
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            return _kept(arguments)
        arguments = data
    text = _dumps(arguments)
    return arguments if len(text) <= MAX_CONTENT else _kept(text)


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2  # (a trace's start and its end, where the error is said)
    return f"{text[:half]}\n[... {len(text) - limit:,} characters not kept ...]\n{text[-half:]}"


def _record_error(span: Any, error: BaseException) -> None:
    _record_exception(span, error)
    span.set_attribute("error.type", type(error).__name__)
    message = _bounded(error_text(error), MAX_ERROR_MESSAGE)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {message}"))


def _record_exception(span: Any, error: BaseException) -> None:
    """The span's ``exception`` event (as the SDK's ``record_exception`` makes it), its message
    and stack trace bounded, also for an exception whose message cannot be read."""
    try:
        stacktrace = "".join(traceback.format_exception(error))
    except Exception:  # (its message cannot be read)
        stacktrace = f"{type(error).__name__}: {error_text(error)}"
    span.add_event(
        "exception",
        {
            "exception.type": type(error).__name__,
            "exception.message": _bounded(error_text(error), MAX_ERROR_MESSAGE),
            "exception.stacktrace": _bounded(stacktrace, MAX_STACKTRACE),
            "exception.escaped": "False",
        },
    )


def _dumps(value: Any) -> str:
    """``value`` as JSON text (compact; pydantic's serializer, several times faster than the
    ``json`` module's for these small objects; anything it cannot write becomes its ``str``)."""
    return to_json(value, fallback=str).decode()


def _json(value: Any) -> str:
    return value if isinstance(value, str) else _dumps(value)


def _message(message: Message) -> dict[str, Any]:
    """A message in the GenAI conventions' shape: a role and typed parts."""
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": _kept(message.content)})
    parts.extend(
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": _kept_arguments(c.arguments)}
        for c in message.tool_calls
    )
    parts.extend(
        {"type": "tool_call_response", "id": r.tool_call_id, "response": _kept(r.content)}
        for r in message.tool_results
    )
    return {"role": message.role, "parts": parts}
