"""Executing one turn's tool calls: hooks, approval, questions, execute, results in call order."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import numbers
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel

from ._sync_pool import GeneratorExitRaised, StopIterationRaised
from ._tracing import TraceRecorder
from ._util import (
    cancelled_from_outside,
    compact_arguments,
    compact_json,
    decode_args,
    error_text,
    maybe_await,
    new_id,
    valid_data,
    valid_text,
)
from .approvals import (
    ApprovalContext,
    ApprovalHandler,
    RunInfo,
    ToolApprovalRequest,
)
from .decisions import (
    EDIT_REFUSED,
    RAN_WITH_EDITS,
    RefusedFix,
    Resolution,
    Withdrawn,
    closed_for_edits,
    cut_reason,
)
from .errors import (
    INTERRUPTED_REASON,
    PromptCancelledError,
    RunExitedError,
    ToolApprovalRequiredError,
    ToolArgumentsError,
    ToolNotFoundError,
)
from .events import (
    ToolApprovalRequestEvent,
    ToolApprovalResultEvent,
    ToolQuestionRequestEvent,
    ToolQuestionResultEvent,
    ToolResultEvent,
)
from .hooks import (
    RUN_CONTROL,
    TOOL_CALL_CONTROL,
    Hook,
    HookAction,
    ToolCallDecision,
    ToolCallHookEvent,
    ToolErrorEvent,
    ToolResultHookEvent,
    call_hook,
    call_hooks,
)
from .human import (
    HumanInput,
    HumanInputTimeout,
    HumanInputUnavailable,
    positive_timeout,
    through_the_store_only,
    warn_store_gone,
)
from .interactions import Interactions, Opening, OpenInteraction
from .messages import ToolResultMedia, ToolResultPart
from .models.base import ToolCall
from .question_types import Question, QuestionInput, question_args_schema
from .questions import QuestionRequest, QuestionTool
from .records import (
    DEFAULT_REJECT_MESSAGE,
    ApprovalRecord,
    DecidedBy,
    DecidedVia,
    QuestionRecord,
    RecordT,
)
from .run_state import ToolCallProgress
from .tools import SyncToolAbandoned, SyncToolNotStarted, Tool, ToolContext, parse_arguments
from .trace import ToolCallStatus, ToolCallTrace, Trace

if TYPE_CHECKING:
    from .agent import Agent
    from .run_state import RunState

__all__ = [
    "CURRENT_TOOL_CALL",
    "ApprovalOutcome",
    "CurrentToolCall",
    "INTERACTION_EVENTS",
    "ToolExecutor",
    "interaction_event",
]


@dataclass(frozen=True)
class CurrentToolCall:
    """Which tool call is executing in this context (used to route captured output)."""

    run_id: str
    internal_call_id: str
    tool_name: str
    tool_call_id: str | None = None
    #: Should the call be cancelled: how what it left open ends (by Stop, or by the runtime
    #: when another call of the turn failed). A sub-agent's call ends its run the same way.
    cut_short: Callable[[], Resolution] | None = field(default=None, compare=False, repr=False)


#: Set while a tool's ``execute`` runs (also inside worker threads running sync tools).
CURRENT_TOOL_CALL: contextvars.ContextVar[CurrentToolCall | None] = contextvars.ContextVar(
    "anvia_current_tool_call", default=None
)

#: Set while a tool's ``execute`` runs: puts questions to the person for this call, through
#: the run's one interaction record (a ``QuestionRecord`` of the call), and returns the decided
#: record, or None when nobody can answer. MCP elicitation uses it.
TOOL_CALL_QUESTIONS: contextvars.ContextVar[
    Callable[[list[Question]], Awaitable[QuestionRecord | None]] | None
] = contextvars.ContextVar("anvia_tool_call_questions", default=None)

#: Set while a tool's ``execute`` runs: media the tool returns besides its text (an MCP tool's
#: images) are appended here; they travel in the ``tool_result`` event's ``parts``.
TOOL_CALL_PARTS: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar(
    "anvia_tool_call_parts", default=None
)

INTERRUPTED_RESULT = (
    "ToolCallInterrupted: the run was interrupted (its kernel stopped) while {name} was running; "
    "it may or may not have completed. Check its effect before calling it again."
)
CANCELLED_RESULT = "ToolCallCancelled: the run was stopped before this tool call finished."
#: The result of a call the run's error ended (``{error}``: the error's type and message).
FAILED_RESULT = (
    "ToolCallCancelled: the run ended on an error before this tool call finished: {error}"
)
#: At most this much of the error's message is in such a result (the run's error has it whole).
FAILED_RESULT_CHARS = 2_000
#: What the model is told of a call a hook skipped without a reason (an empty one is kept, as in
#: Anvia, whose ``skip(reason)`` result is the reason as given).
SKIPPED_RESULT = "Tool call skipped."
#: How the result of a call whose tool was still running when the run stopped begins.
STOPPED_RUNNING = "ToolCallStopped: "
STOPPED_RUNNING_RESULT = STOPPED_RUNNING + (
    "the run was stopped while {name} was still running; it may have completed "
    "(its effects may have happened) but its result was not received. Check before calling it "
    "again."
)
#: The same for an async tool, which Stop cancelled where it awaited.
STOPPED_AWAITING_RESULT = STOPPED_RUNNING + (
    "the run was stopped while {name} was running; it was cancelled before it finished, but "
    "what it did until then may have happened. Check before calling it again."
)
#: What a call whose tool was running is told when the run's error ended it (not "stopped").
ENDED_RUNNING_RESULT = STOPPED_RUNNING + (
    "the run ended on an error ({error}) while {name} was running; {how}, but what it did "
    "until then may have happened. Check before calling it again."
)


def _raised_by_the_tool(error: Exception) -> BaseException:
    """What a tool raised: a ``StopIteration`` comes wrapped in a ``RuntimeError`` (Python's
    own for a coroutine, the worker thread's for a sync tool), which would hide its message; a
    sync tool's ``GeneratorExit`` in the worker thread's."""
    cause = error.__cause__
    if isinstance(error, GeneratorExitRaised) and isinstance(cause, GeneratorExit):
        return cause
    if isinstance(cause, StopIteration) and (
        isinstance(error, StopIterationRaised)
        or (type(error) is RuntimeError and str(error).endswith("raised StopIteration"))
    ):
        return cause
    return error


@dataclass(frozen=True)
class ApprovalOutcome:
    """How one approval ended, as the run carries it out."""

    approved: bool
    #: What the model is told of a call that was not approved.
    told: str = ""
    #: The edited arguments it was approved with, if any.
    edited: dict[str, Any] | None = None
    #: A typed output's repair that code approved with a fix missing or refused: recorded as
    #: rejected, and the run ends with it.
    refused_fix: RefusedFix | None = None


@dataclass
class _Outcome:
    """One call's result; ``None`` fields mean the call has not finished."""

    part: ToolResultPart | None = None


class ToolExecutor:
    """Runs the tool calls of one turn for a run; emits events through ``emit``."""

    def __init__(
        self,
        *,
        agent: Agent,
        state: RunState,
        run_info: RunInfo,
        hooks: Sequence[Hook],
        approval_handler: ApprovalHandler | None,
        human_input: HumanInput | None,
        concurrency: int,
        emit: Callable[[Any], None],
        stopped: Callable[[], Resolution],
        interactions: Interactions | None = None,
        persist: Callable[[bool], object] | None = None,
        persist_opening: Callable[[Sequence[Opening]], Sequence[Any] | None] | None = None,
        resuming: bool = False,
        trace: TraceRecorder | None = None,
        logged_results: Collection[tuple[int, str]] = (),
        ended_calls: Collection[str] = (),
        logged_decisions: Collection[str] = (),
    ) -> None:
        self.agent = agent
        self.state = state
        self.run_info = run_info
        self.hooks = hooks
        self.approval_handler = approval_handler
        self.human_input = human_input
        self.concurrency = max(1, concurrency)
        self.emit = emit
        #: How an interaction a Stop (or ``cancel()``) leaves open ends.
        self.stopped = stopped
        self.interactions = interactions or Interactions(run_info.run_id, state=state)
        self.persist = persist or (lambda durable: None)
        #: The durable write of the run's state with the interactions it opens, in one
        #: transaction (see :meth:`Interactions.open`'s ``save``); None: the state is written,
        #: then each interaction on its own.
        self.persist_opening = persist_opening
        #: True while the first turn of a resumed run re-runs its interrupted tool calls.
        self.resuming = resuming
        #: Tool call ids whose result the stored event log of a resumed run already holds.
        self.logged_results = frozenset(logged_results)
        #: Internal ids of the calls whose result that log holds (their interactions are done).
        self.ended_calls = frozenset(ended_calls)
        #: Ids of the interactions whose decision that log holds (a decision made while no
        #: process ran the run is told when the resumed run reaches it).
        self.logged_decisions = set(logged_decisions)
        #: Results for calls interrupted by a cancellation (by tool call id), this turn.
        self._interrupted: dict[str, str] = {}
        #: What really happened to calls whose tool ran before the run was cancelled (by tool
        #: call id): content, is_error, args. Used instead of "cancelled" for those calls.
        self._landed: dict[str, tuple[str, bool, str]] = {}
        #: How calls that ended without executing their tool ended (rejected, timed out,
        #: cancelled), by tool call id, this turn; for the trace.
        self._ended: dict[str, ToolCallStatus] = {}
        #: What ended this turn's calls early when it was not Stop: another call's failure or
        #: a hook's ``tool.cancel`` (the interactions it leaves open say so).
        self._ending: BaseException | None = None
        #: Media the calls' tools returned besides their text, by tool call id (see
        #: :data:`TOOL_CALL_PARTS`).
        self._parts: dict[str, list[dict[str, Any]]] = {}
        self.trace = trace or TraceRecorder(Trace(run_id=run_info.run_id, agent_id=agent.id))

    async def run_calls(
        self,
        calls: list[ToolCall],
        turn: int,
        on_interrupted: Callable[[list[ToolResultPart]], None],
    ) -> list[ToolResultPart]:
        """Run ``calls`` (at most ``concurrency`` at once) and return results in call order.

        On cancellation (Stop, ``cancel()`` or a hook) or a failure, every call still gets a
        result, handed to ``on_interrupted`` so the conversation stays valid for a provider;
        then the exception propagates.
        """
        outcomes = [_Outcome() for _ in calls]
        self._interrupted = {}
        self._landed = {}
        self._ended = {}
        self._ending = None
        semaphore = asyncio.Semaphore(self.concurrency)
        ended = False

        async def one(index: int) -> None:
            nonlocal ended
            async with semaphore:
                if ended:
                    # A call before it failed or cancelled the run: this one never starts (as
                    # in Anvia). The semaphore hands over before the failure reaches the tasks.
                    return
                try:
                    with _user_code_edge():
                        outcomes[index].part = await self._run_call(calls[index], turn)
                except BaseException:
                    ended = True
                    raise

        tasks = [asyncio.ensure_future(one(index)) for index in range(len(calls))]
        try:
            await asyncio.gather(*tasks)
        except BaseException as error:
            if not isinstance(error, asyncio.CancelledError):
                self._ending = error  # (a Stop cancels the run's task: the CancelledError)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            stopped = isinstance(error, (asyncio.CancelledError, PromptCancelledError))
            status: ToolCallStatus = "cancelled" if stopped else "error"
            parts: list[ToolResultPart] = []  # every call gets a result
            for call, outcome in zip(calls, outcomes, strict=True):
                part = outcome.part
                landed = self._landed.get(call.id)
                if part is None and landed is not None:
                    # The tool ran (or was still running) when the run was cancelled: say so.
                    part = result_part(call, landed[0], landed[1])
                if part is None:
                    # A question cancelled by Stop resolves with no answers, as in Anvia.
                    content = self._interrupted.get(call.id)
                    said = CANCELLED_RESULT if stopped else _failed_result(error)
                    part = result_part(call, said if content is None else content, content is None)
                parts.append(part)
                # The trace ends each call still open (one that never began is recorded too).
                entry = self.trace.tool_call(call, turn, started=False)
                self.trace.tool_call_done(
                    entry, compact_arguments(call.arguments_json()), part.content, status
                )
            on_interrupted(parts)
            raise
        return [o.part for o in outcomes if o.part is not None]

    # -- one call ------------------------------------------------------------------------------

    async def _run_call(self, call: ToolCall, turn: int) -> ToolResultPart:
        internal_id = new_id("call")
        server = getattr(self.agent.get_tool(call.name), "server_name", None)
        entry = self.trace.tool_call(
            call, turn, mcp_server=server if isinstance(server, str) else None
        )
        resumed = self._resumed_result(call, turn, internal_id, entry)
        if resumed is not None:
            return resumed
        raw_args = compact_arguments(call.arguments_json())
        effective_args = raw_args
        is_error = False
        tool = self.agent.get_tool(call.name)
        decision = await self._tool_call_decision(call, internal_id, raw_args)
        if decision.type in ("run", "approval_request"):
            decision = self._unaskable(tool, call, raw_args) or decision

        if decision.type == "cancel":
            raise PromptCancelledError(decision.reason or "Cancelled by a hook.")
        if decision.type == "skip":
            result = SKIPPED_RESULT if decision.reason is None else decision.reason
        else:
            try:
                result, is_error, effective_args = await self._checked_call(
                    tool, call, internal_id, raw_args, decision
                )
            except BaseException:
                self._report_landed(call, turn, internal_id)
                raise

        try:
            # (a lone surrogate, as a file name read with surrogateescape has: U+FFFD instead,
            # or neither the store nor the page could keep the result)
            result = valid_text(await self._after_result(call, internal_id, effective_args, result))
        except (PromptCancelledError, asyncio.CancelledError):
            # A hook ended the run, or Stop came while it ran, after the result was known.
            self._landed[call.id] = (valid_text(result), is_error, effective_args)
            self._report_landed(call, turn, internal_id)
            raise
        returned = self._parts.get(call.id, [])  # the tool's media (popped by the event)
        self.emit_result(
            call,
            turn,
            internal_id,
            effective_args,
            result,
            is_error,
            skipped=decision.type == "skip",
        )
        self.trace.tool_call_done(
            entry, effective_args, result, self._status(call, decision, is_error)
        )
        self._progress(call, turn, "done", effective_args, result, is_error)
        media = [] if is_error else ToolResultMedia.from_parts(returned)
        told = _told(tool, call, effective_args, result, raw_args)
        return result_part(call, told, is_error, media=media)

    def emit_result(
        self,
        call: ToolCall,
        turn: int,
        internal_id: str,
        args: str,
        result: str,
        is_error: bool,
        skipped: bool = False,
    ) -> None:
        """Emit the ``tool_result`` event of ``call`` (with the media its tool returned)."""
        self.emit(
            ToolResultEvent(
                turn=turn,
                **call_fields(call, internal_id),
                args=args,
                result=result,
                is_error=is_error,
                skipped=skipped,
                parts=self._parts.pop(call.id, []),
            )
        )

    def _status(self, call: ToolCall, decision: ToolCallDecision, is_error: bool) -> ToolCallStatus:
        """How a call that got its result ended, for the trace."""
        ended = self._ended.get(call.id)
        if ended is not None:
            return ended
        if decision.type == "skip":
            return "skipped"
        return "error" if is_error else "success"

    def _report_landed(self, call: ToolCall, turn: int, internal_id: str) -> None:
        """The run is ending while this call's tool had run: record what really happened."""
        landed = self._landed.get(call.id)
        if landed is None:
            return
        result, is_error, args = landed
        entry = self.trace.entry(call.id)
        if entry is not None:
            stopped = result in (
                STOPPED_RUNNING_RESULT.format(name=call.name),
                STOPPED_AWAITING_RESULT.format(name=call.name),
            )
            status: ToolCallStatus = "cancelled" if stopped else "error" if is_error else "success"
            self.trace.tool_call_done(entry, args, result, status)
        self.emit_result(call, turn, internal_id, args, result, is_error)

    # -- progress, for resuming ----------------------------------------------------------------

    def _progress(
        self,
        call: ToolCall,
        turn: int,
        status: Literal["started", "done"],
        args: str,
        result: str | None = None,
        is_error: bool = False,
    ) -> None:
        """Record how far a call got: a resumed run never repeats it. ``started`` is stored
        before the tool executes (with the conversation that asked for it)."""
        self.state.calls[call.id] = ToolCallProgress(
            tool_call_id=call.id,
            tool_name=call.name,
            turn=turn,
            status=status,
            args=args,
            result=result,
            is_error=is_error,
        )
        self.persist(status == "started")

    def _resumed_result(
        self, call: ToolCall, turn: int, internal_id: str, entry: ToolCallTrace
    ) -> ToolResultPart | None:
        """On resume: the stored result of a call that finished, the interrupted notice for one
        that had started (unless its tool is idempotent), else None (run it now)."""
        progress = self.state.calls.get(call.id) if self.resuming else None
        if progress is None:
            return None
        if progress.status == "done":
            args = progress.args or compact_arguments(call.arguments_json())
            if (turn, call.id) not in self.logged_results:
                # The call ended after the last write of the event log: the transcript of the
                # resumed run shows its result as the store recorded it.
                self.emit_result(
                    call, turn, internal_id, args, progress.result or "", progress.is_error
                )
            self.trace.tool_call_done(
                entry, args, progress.result or "", "error" if progress.is_error else "success"
            )
            result = progress.result or ""
            tool = self.agent.get_tool(call.name)
            told = _told(tool, call, progress.args, result) if progress.args else result
            return result_part(call, told, progress.is_error)
        tool = self.agent.get_tool(call.name)
        if tool is not None and tool.idempotent:
            return None
        result = INTERRUPTED_RESULT.format(name=call.name)
        args = progress.args or compact_arguments(call.arguments_json())
        # What the call asked while it ran (an MCP server's form) ended with it.
        ended = Resolution("cancelled", "runtime", reason=INTERRUPTED_QUESTION)
        for record in self.state.pending():
            if record.tool_call_id == call.id:
                self._finish(self.interactions.held(record), ended)
        self.emit_result(call, turn, internal_id, args, result, True)
        self.trace.tool_call_done(entry, args, result, "interrupted")
        self._progress(call, turn, "done", args, result, True)
        told = _told(tool, call, args, result) if progress.args else result
        return result_part(call, told, True)

    async def _tool_call_decision(
        self, call: ToolCall, internal_id: str, raw_args: str
    ) -> ToolCallDecision:
        """Hooks in order; the first decision other than ``run()`` wins."""
        event = ToolCallHookEvent(
            **call_fields(call, internal_id),
            args=raw_args,
            tool=TOOL_CALL_CONTROL,
        )
        for hook in self.hooks:
            value = await call_hook(hook, "on_tool_call", event)
            if isinstance(value, HookAction):  # run.cancel(...) ends the run, as in Anvia
                if value.type == "cancel":
                    return ToolCallDecision("cancel", reason=value.reason)
                continue
            if value is None:
                continue
            if not isinstance(value, ToolCallDecision):
                raise TypeError(
                    "on_tool_call must return tool.run(), tool.skip(...), tool.cancel(...), "
                    f"tool.request_approval(...) or None, not {value!r}"
                )
            if value.type != "run":
                return value
        return ToolCallDecision("run")

    def _intercepted(self, tool: Tool, call: ToolCall) -> bool:
        """With a human input, a call named ``ask_question`` (whatever tool of the agent's own
        has that name, as in Anvia; an MCP server's is sent to the server) or of a question
        tool is put to the person instead of executed; on resume, one asked before too (its
        stored answers stand)."""
        if not (isinstance(tool, QuestionTool) or call.name == "ask_question"):
            return False
        if getattr(tool, "server_name", None) is not None:
            return False  # an MCP server's tool of that name: the server answers it
        # On resume, a question asked before is answered by its stored answers, if any.
        return self.human_input is not None or self._earlier(self.state.questions, call.id)

    def _unaskable(self, tool: Tool | None, call: ToolCall, raw: str) -> ToolCallDecision | None:
        """A call to be put to a person (:meth:`_intercepted`) whose questions are not valid is
        skipped, as Anvia does: its result says what is wrong, so that the model can call
        again; it is no failed call (no ``on_tool_error``)."""
        if tool is None or not self._intercepted(tool, call):
            return None
        try:
            parse_arguments(tool.name, QuestionInput, raw)
        except ToolArgumentsError as error:
            return ToolCallDecision("skip", reason=str(error))
        return None

    async def _checked_call(
        self,
        tool: Tool | None,
        call: ToolCall,
        internal_id: str,
        raw_args: str,
        decision: ToolCallDecision,
    ) -> tuple[str, bool, str]:
        """The tool exists and its arguments are valid (else ``on_tool_error`` hooks are told, as
        in Anvia, and the result says what is wrong); then approval, questions, ``execute``.
        A tool the agent does not have is asked for first, if a hook requested it (as Anvia
        asks before it calls the tool, which is only then found missing)."""
        if tool is None:
            asked = await self._unknown_tool_approval(call, internal_id, raw_args, decision)
            if isinstance(asked, tuple):  # rejected: told so, never found missing
                return asked
            raw_args = asked
            missing = ToolNotFoundError(call.name)
            result = f"{type(missing).__name__}: {missing}"
            return (
                await self._tool_error(call, internal_id, raw_args, missing, result),
                True,
                raw_args,
            )
        intercepted = self._intercepted(tool, call)
        try:
            args = _parsed(tool, raw_args, intercepted)
        except Exception as error:
            told = _unparsed_text(error)
            return await self._tool_error(call, internal_id, raw_args, error, told), True, raw_args
        return await self._approved_call(
            tool, call, internal_id, raw_args, args, decision, intercepted
        )

    async def _unknown_tool_approval(
        self, call: ToolCall, internal_id: str, raw_args: str, decision: ToolCallDecision
    ) -> tuple[str, bool, str] | str:
        """The approval a hook requested for a call of a tool the agent does not have, put to
        the handler or the human input as any other, its arguments as the model sent them: the
        arguments (edited, if they were) when approved, else what the model is told. Only a
        hook's request is asked, as in Anvia (an approval asked before a resume, of a tool the
        agent no longer has, is closed by the run instead)."""
        if decision.type != "approval_request":
            return raw_args
        texts = decision.reason, decision.reject_message
        request = ToolApprovalRequest(
            **call_fields(call, internal_id),
            args=decode_args(raw_args),
            raw_args=raw_args,
            run=self.run_info,
        )
        request.reason, request.reject_message = valid_data(texts)  # (code wrote them)
        outcome = await self.approve(request)
        if not outcome.approved:
            return outcome.told, outcome.told.startswith(EDIT_REFUSED), raw_args
        return raw_args if outcome.edited is None else compact_json(outcome.edited)

    async def _approved_call(
        self,
        tool: Tool,
        call: ToolCall,
        internal_id: str,
        raw_args: str,
        args: BaseModel,
        decision: ToolCallDecision,
        intercepted: bool,
    ) -> tuple[str, bool, str]:
        """Approval (hook request or policy), then the question flow or ``execute``."""
        # An intercepted call's arguments are questions, whatever the tool's own input.
        input_model = QuestionInput if intercepted else tool.input
        context = ApprovalContext(
            **call_fields(call, internal_id), args=args, raw_args=raw_args, run=self.run_info
        )
        texts: tuple[str | None, str | None] | None = None  # the reason and reject message
        if decision.type == "approval_request":
            texts = decision.reason, decision.reject_message
        elif tool.approval is not None and await tool.approval.required(context):
            texts = await tool.approval.texts(context)
        elif (earlier := self._earlier(self.state.approvals, call.id)) is not None:
            # Asked before a resume: that approval stands, whatever the policy says now.
            texts = earlier.reason, earlier.reject_message
        if texts is not None:
            schema = (
                question_args_schema()
                if intercepted
                else closed_for_edits(tool.definition().parameters, input_model)
            )
            request = ToolApprovalRequest(
                **vars(context), input_model=input_model, args_schema=schema
            )
            request.reason, request.reject_message = valid_data(texts)  # (code wrote them)
            outcome = await self.approve(request)
            if not outcome.approved:  # (edited arguments that did not fit: an error)
                return outcome.told, outcome.told.startswith(EDIT_REFUSED), raw_args
            if (edited := outcome.edited) is not None:
                try:
                    args = _parsed(tool, edited, intercepted)
                except ToolArgumentsError as error:
                    text = f"{EDIT_REFUSED}{error}"
                    self.refuse_edit(request.approval_id, text)
                    return text, True, raw_args
                raw_args = compact_json(edited)
        if intercepted:
            asked = await self._ask(call, internal_id, args)
            if asked is not None:
                return asked[0], asked[1], raw_args
            if not isinstance(args, tool.input):  # the fallback is the tool's own execute
                try:
                    args = tool.parse_args(raw_args)
                except Exception as error:
                    told = _unparsed_text(error)
                    result = await self._tool_error(call, internal_id, raw_args, error, told)
                    return result, True, raw_args
        result, is_error = await self._execute(tool, call, internal_id, raw_args, args)
        return result, is_error, raw_args

    # -- approvals and questions ---------------------------------------------------------------

    def _earlier(self, table: dict[str, Any], call_id: str | None) -> Any:
        """On resume: the stored approval / question of this call, if it had one (the latest:
        some servers reuse a tool call id in a later turn, whose call is asked afresh: an
        interaction of a call that ended is never another call's)."""
        if not self.resuming or call_id is None:
            return None
        records = (r for r in table.values() if r.internal_call_id not in self.ended_calls)
        return latest_record(records, call_id)

    def _human_timeout(self, kind: str) -> float | None:
        """The time limit of the human input that decides a ``kind`` record (``approval`` or
        ``question``), if any (none for an approval the run's handler decides)."""
        if self.human_input is None or (kind == "approval" and self.approval_handler is not None):
            return None
        timeout = getattr(self.human_input, "timeout", None)  # (checked as ours are)
        usable = isinstance(timeout, numbers.Real) and not isinstance(timeout, bool)
        checked = positive_timeout(timeout) if usable else None
        return None if checked is None else float(checked)

    async def approve(self, request: ToolApprovalRequest) -> ApprovalOutcome:
        """Decide one approval through the run's one interaction record (as for a tool call):
        the handler, else the human input, or a decision from elsewhere (widget,
        ``RunHandle.approve``, the run store, a decision stored before a resume). Returns
        whether it was approved, what the model is told otherwise, and edited arguments."""
        record = self._earlier(self.state.approvals, request.tool_call_id)
        if record is None and self.approval_handler is None and self.human_input is None:
            raise ToolApprovalRequiredError(request)  # nothing can decide it (as in Anvia)
        args = _shown_args(request.args, request.raw_args)
        record, told = await self._interact(ApprovalRecord, request, record, args=args)
        if told is _UNAVAILABLE:
            raise ToolApprovalRequiredError(request, record.decision_reason)
        if record.status == "approved":
            edited = record.edited_args
            return ApprovalOutcome(True, edited=edited if isinstance(edited, dict) else None)
        self._ended[record.tool_call_id or ""] = _ended_status(record)
        told_model = record.decision_reason
        if told_model is None or (not told_model and record.status != "rejected"):
            told_model = DEFAULT_REJECT_MESSAGE  # (a rejection's empty text is told as it is)
        refused = told if isinstance(told, RefusedFix) else None
        return ApprovalOutcome(False, told_model, refused_fix=refused)

    # The hooks of a call the run handles itself (a typed output's ``final_result``), in the
    # order a tool's call meets them: on_tool_call, then on_tool_error (a value that failed
    # validation) and on_tool_result.

    async def call_decision(self, call: ToolCall, internal_id: str, raw_args: str) -> Any:
        """``on_tool_call`` of every hook: the first decision other than ``run()``."""
        return await self._tool_call_decision(call, internal_id, raw_args)

    async def call_failed(
        self, call: ToolCall, internal_id: str, raw_args: str, error: BaseException, result: str
    ) -> str:
        """``on_tool_error`` of every hook (after the trace notes the error)."""
        return await self._tool_error(call, internal_id, raw_args, error, result)

    async def call_result(self, call: ToolCall, internal_id: str, args: str, result: str) -> str:
        """``on_tool_result`` of every hook."""
        return await self._after_result(call, internal_id, args, result)

    def refuse_edit(self, approval_id: str, text: str) -> None:
        """An approved decision the run cannot carry out, found after it was recorded: edited
        arguments that the tool's own model refuses (a rule its JSON Schema cannot say, such as
        a validator), in a store written by an older version of this package (which recorded an
        edit from the run store or the command line while no process ran the run, checked
        against the schema only). The record says the call was rejected, and the rejection is
        announced after the approval. Every decider now has its edit checked by the run before
        it is recorded (:func:`~anvia_notebook.decisions.check_resolution`; the run store sends
        it to the run: ``store/_confirm.py``), so this is for such older rows only."""
        fixed = self.state.approvals[approval_id].model_copy(
            update={"status": "rejected", "decision_reason": text, "edited_args": None}
        )
        self.interactions.correct(fixed)
        self.trace.interaction(fixed, resolved=True)
        self.emit(interaction_event(fixed, decided=True))

    async def _ask(
        self, call: ToolCall, internal_id: str, args: BaseModel
    ) -> tuple[str, bool] | None:
        """Put the questions to a person; ``None`` means fall back to ``execute``. (``args``
        are the call's, read as questions: see :func:`_parsed`.)"""
        questions = cast(QuestionInput, args).questions
        earlier = self._earlier(self.state.questions, call.id)
        # A question decided before a resume is told as it was then (no time limit known).
        timeout = self._human_timeout("question") if earlier is None or earlier.pending else None
        request = QuestionRequest(
            question_id="", **call_fields(call, internal_id), questions=questions, run=self.run_info
        )
        try:
            record, told = await self._interact(QuestionRecord, request, earlier)
        except asyncio.CancelledError:
            self._interrupted[call.id] = compact_json({"answers": []})
            raise
        if told is _UNAVAILABLE:
            return None
        if told is None and record.status == "answered":
            return compact_json({"answers": [a.to_wire() for a in record.answers]}), False
        self._ended[call.id] = _ended_status(record)
        if isinstance(told, str) or record.status == "timed_out":
            return told if isinstance(told, str) else _timed_out_text(record, timeout), True
        return compact_json({"answers": []}), False

    # -- one interaction, approval or question ---------------------------------------------------

    async def _interact(
        self,
        kind: type[RecordT],
        request: ToolApprovalRequest | QuestionRequest,
        earlier: RecordT | None,
        **fields: Any,
    ) -> tuple[RecordT, object]:
        """Open the ``kind`` record of ``request`` (``earlier``'s, asked before a resume, else a
        new one made of the request's fields, a new id, this run and its agent, then
        ``fields``), stored with the conversation that asked first, with the human input's time
        limit; emit its request and wait for its outcome (see :meth:`_wait`). A record decided
        already (before a resume) is only traced. Returns the record as it ended and what
        :meth:`_wait` returned (None when it did not wait)."""
        record = earlier
        if record is None:  # (what is not a record's field, e.g. the input model, is left out)
            info = self.run_info
            own = {
                "id": new_id(kind.model_fields["kind"].default),  # approval_... or question_...
                "run_id": info.run_id,
                "agent_id": info.agent_id,
                "path": list(info.path) or [info.agent_id],
            }
            record = kind.model_validate({**vars(request), **own, **fields})
        setattr(request, f"{record.kind}_id", record.id)
        told: object = None
        if not record.pending:  # decided before the interruption, or meanwhile
            self.trace.interaction(record, resolved=True)
            if record.id not in self.logged_decisions:  # (decided while no process ran it)
                self.logged_decisions.add(record.id)
                self.emit(interaction_event(record, decided=True))
            return record, told
        self.state.hold(record)
        self.trace.interaction(record)
        # The conversation that asked is stored with the interaction (one write), or before it.
        if self.persist_opening is None:
            self.persist(True)
        timeout = self._human_timeout(record.kind)
        interaction = self.interactions.open(
            record,
            input_model=getattr(request, "input_model", None),
            args_schema=getattr(request, "args_schema", None),
            timeout=timeout,
            timeout_reason=_timed_out_text(record, timeout),
            save=self.persist_opening,
        )
        self.emit(interaction_event(record, decided=False))
        if interaction.record.pending:
            told = await self._wait(interaction, request)
        else:  # a decision stored before a resume
            self._finish(interaction, None)
        return cast(RecordT, interaction.record), told

    async def _wait(
        self, interaction: OpenInteraction, request: ToolApprovalRequest | QuestionRequest
    ) -> object:
        """Ask whoever decides here (an approval's handler, else the human input) and wait for
        the first decision, theirs or one from elsewhere; record it (the record is then
        decided). Returns ``_UNAVAILABLE`` when nobody here can take this kind of request, the
        text the model is told when it timed out or a question's answers were unusable, the
        :class:`RefusedFix` of a typed output's repair the check turned into a rejection, else
        None; Stop and failures propagate."""
        approval = isinstance(interaction.record, ApprovalRecord)
        human = self.human_input
        asker: tuple[Callable[[Any], Any], DecidedBy, DecidedVia] | None = None  # as recorded
        if approval and self.approval_handler is not None:
            asker = self.approval_handler, "handler", "handler"
        elif human is not None:
            asker = (human.approve if approval else human.ask), "human", "human_input"
        try:
            if asker is None:
                raise HumanInputUnavailable  # nobody here can take it
            ask, by, via = asker
            source = _asked(ask, request)
            if by == "human" and through_the_store_only(human):
                interactions = self.interactions
                if interactions.store is None and interactions.store_lost is None:
                    warn_store_gone(interaction.record)  # (set_store(None): only this process)
                # Unavailable once the run left its store (a script waited for ever).
                source = interactions.unless_store_lost(source)
            resolution = await self.interactions.wait(interaction, source, by, via)
        except asyncio.CancelledError as cancelled:
            self._finish(interaction, self._cut_short(cancelled))
            raise
        except HumanInputUnavailable as error:
            why = error_text(error) or None  # (the human input's own words, when it said why)
            unavailable = Resolution("cancelled", decided_by="runtime", reason=why)
            return self._gave_up(interaction, unavailable, _UNAVAILABLE)
        except HumanInputTimeout as timeout:
            text = _timed_out_text(interaction.record, timeout.timeout)
            timed_out = Resolution("timed_out", decided_by="timeout", reason=text)
            return self._gave_up(interaction, timed_out, text)
        except BaseException as error:  # (a ValidationError is a ValueError)
            if interaction.record.kind == "question" and isinstance(error, ValueError):
                invalid = error_text(error)
                told = f"ToolCallError: the human input returned invalid answers: {invalid}"
                # (said on the record too: an MCP server's form is only told "cancel")
                why = f"The human input returned invalid answers: {invalid}"
                invalid_answers = Resolution("cancelled", "runtime", reason=why)
                return self._gave_up(interaction, invalid_answers, told)
            reason = None
            if not isinstance(error, (ToolApprovalRequiredError, PromptCancelledError)):
                reason = f"Approval failed: {error_text(error)}"
            failed = Resolution("cancelled", decided_by="runtime", reason=reason)
            if self._gave_up(interaction, failed, error) is error:
                raise
            return None
        self._finish(interaction, resolution)
        return resolution.refused_fix

    def _gave_up(
        self, interaction: OpenInteraction, resolution: Resolution, told: object
    ) -> object:
        """The human input (or handler) gave up: decide the interaction with ``resolution`` and
        return ``told`` (what :meth:`_wait` returns then), unless a decision from elsewhere came
        first (returns None: that decision stands)."""
        self._finish(interaction, resolution)
        return told if interaction.record.decided_by == resolution.decided_by else None

    def _cut_short(self, cancelled: asyncio.CancelledError | None = None) -> Resolution:
        """How an interaction whose wait was cancelled ends: by Stop (``cancel()``, Stop, an
        interrupt), or by the runtime, saying why, when another call of the turn failed or a
        hook cancelled the run, or when what asked withdrew it (an MCP server that went away
        cancels its question with a :class:`Withdrawn` reason)."""
        ending = self._ending
        withdrawn = cancelled.args[0] if cancelled is not None and cancelled.args else None
        if ending is None and self.state.cancel_reason is None and isinstance(withdrawn, Withdrawn):
            return Resolution("cancelled", decided_by="runtime", reason=str(withdrawn))
        if ending is None or self.state.cancel_reason is not None:
            return self.stopped()
        if isinstance(ending, PromptCancelledError):
            reason = cut_reason(ending.reason) if isinstance(ending.reason, str) else None
        else:
            what = error_text(ending)
            failure = f"{type(ending).__name__}: {what}" if what else type(ending).__name__
            reason = f"The run failed in another tool call: {failure}"
        return Resolution("cancelled", decided_by="runtime", reason=reason)

    def _finish(self, interaction: OpenInteraction, resolution: Resolution | None) -> None:
        """Decide the interaction with ``resolution`` unless someone was first (None: it is
        decided), then record and emit its outcome once."""
        if resolution is not None:  # (a decided one stays as it is)
            self.interactions.resolve(interaction, resolution, check=False)
        record = interaction.record
        self.trace.interaction(record, resolved=True)
        self.emit(interaction_event(record, decided=True))
        self.interactions.finish(interaction)

    # -- execute -------------------------------------------------------------------------------

    async def _execute(
        self, tool: Tool, call: ToolCall, internal_id: str, raw_args: str, args: BaseModel
    ) -> tuple[str, bool]:
        ctx = ToolContext(
            **call_fields(call, internal_id),
            raw_args=raw_args,
            run=self.run_info,
        )
        self._progress(call, self.state.turn, "started", raw_args)
        token = CURRENT_TOOL_CALL.set(
            CurrentToolCall(self.run_info.run_id, internal_id, call.name, call.id, self._cut_short)
        )
        # (None when nobody can answer: an MCP server's calls need not then wait for each other)
        asker = functools.partial(self._ask_during_call, call, internal_id)
        asking = TOOL_CALL_QUESTIONS.set(asker if self.human_input is not None else None)
        parts: list[dict[str, Any]] = []
        media = TOOL_CALL_PARTS.set(parts)
        entry = self.trace.entry(call.id)
        active = self.trace.activate(entry) if entry is not None else None
        try:
            try:
                return await tool.call(args, ctx), False
            finally:
                if parts:
                    self._parts[call.id] = parts
        except (SyncToolAbandoned, KeyboardInterrupt):
            # (an interrupt stops the run: the call is not a failure the model is told of)
            self._landed[call.id] = (self._cut_text(call, sync=True), True, raw_args)
            raise
        except Exception as error:
            raised = _raised_by_the_tool(error)
            result = f"ToolCallError: {error_text(raised) or type(raised).__name__}"
            return await self._tool_error(call, internal_id, raw_args, raised, result), True
        except SystemExit as error:
            # (``exit()`` in code the model wrote, a command-line parser's error): the call
            # failed; neither the process nor the kernel ends.
            result = f"ToolCallError: SystemExit: {error.code} ({EXIT_REFUSED})"
            return await self._tool_error(call, internal_id, raw_args, error, result), True
        except asyncio.CancelledError as error:
            if cancelled_from_outside():
                # (Stop, or the run ending as another call failed or a hook cancelled it; a
                # sync tool that waited for a worker thread never ran: nothing to report but
                # that it was cancelled)
                if not isinstance(error, SyncToolNotStarted):
                    self._landed[call.id] = (self._cut_text(call, sync=False), True, raw_args)
                raise  # Stop, cancel() or a hook
            # The tool itself raised it (it awaited something that was cancelled): it failed.
            result = f"ToolCallError: {error_text(error) or 'the tool was cancelled'}"
            return await self._tool_error(call, internal_id, raw_args, error, result), True
        except BaseException as error:
            # (a GeneratorExit, a library's own BaseException: the call failed, as for any
            # exception; let through, it left the run's task with no end recorded)
            result = f"ToolCallError: {error_text(error) or type(error).__name__}"
            return await self._tool_error(call, internal_id, raw_args, error, result), True
        finally:
            self.trace.deactivate(active)
            TOOL_CALL_QUESTIONS.reset(asking)
            TOOL_CALL_PARTS.reset(media)
            CURRENT_TOOL_CALL.reset(token)

    def _cut_text(self, call: ToolCall, *, sync: bool) -> str:
        """What a call whose tool was running when the run ended is told: stopped (Stop, a
        hook's cancel), or ended by the run's error, which it names."""
        ending = self._ending
        if ending is None or isinstance(ending, PromptCancelledError):
            said = STOPPED_RUNNING_RESULT if sync else STOPPED_AWAITING_RESULT
            return said.format(name=call.name)
        how = "it may have completed" if sync else "it was cancelled before it finished"
        return ENDED_RUNNING_RESULT.format(error=_failure(ending), name=call.name, how=how)

    async def _ask_during_call(
        self, call: ToolCall, internal_id: str, questions: list[Question]
    ) -> QuestionRecord | None:
        """Questions a running tool puts to the person (see :data:`TOOL_CALL_QUESTIONS`): the
        same record, events, store and UI as ``ask_question``, but the person may also decline
        them (``declinable``). Returns the decided record, or None when no human input can take
        questions (nothing was asked)."""
        request = QuestionRequest(
            question_id="", **call_fields(call, internal_id), questions=questions, run=self.run_info
        )
        record, told = await self._interact(QuestionRecord, request, None, declinable=True)
        return None if told is _UNAVAILABLE else record

    async def _tool_error(
        self, call: ToolCall, internal_id: str, raw_args: str, error: BaseException, result: str
    ) -> str:
        """A call that failed (its tool raised, or it could not execute: unknown tool, bad
        arguments): the ``on_tool_error`` hooks are told, as in Anvia; returns the call's result."""
        self.trace.tool_error(call.id, error)
        event = ToolErrorEvent(
            **call_fields(call, internal_id),
            args=raw_args,
            error=error,
            run=RUN_CONTROL,
        )
        try:  # the call has failed already: a failing hook is logged, the result stays
            await call_hooks(self.hooks, "on_tool_error", event, guarded=True)
        except (PromptCancelledError, asyncio.CancelledError):  # (a hook's cancel, or Stop)
            self._landed[call.id] = (result, True, raw_args)
            raise
        return result

    async def _after_result(self, call: ToolCall, internal_id: str, args: str, result: str) -> str:
        event = ToolResultHookEvent(
            **call_fields(call, internal_id),
            args=args,
            result=result,
            run=RUN_CONTROL,
        )
        # The tool has run: a failing hook is logged and its result stays what it was.
        await call_hooks(self.hooks, "on_tool_result", event, guarded=True)
        return result


#: What the model is told besides the exit code when a tool raised ``SystemExit``.
EXIT_REFUSED = "the tool tried to end the Python process"


#: Why a question a call asked while it ran is closed when a resumed run finds the call
#: interrupted.
INTERRUPTED_QUESTION = (
    "The call that asked this ended with the process that ran it; nothing can take the answer."
)

#: What ``_wait`` returns when the human input cannot take that kind of request.
_UNAVAILABLE = object()


def latest_record(records: Iterable[RecordT], call_id: str | None) -> RecordT | None:
    """The latest of ``records`` asked for the tool call ``call_id`` (some servers reuse a tool
    call id in a later turn), or None."""
    found = [record for record in records if record.tool_call_id == call_id]
    return max(found, key=lambda record: record.requested_at, default=None)


def _ended_status(record: ApprovalRecord | QuestionRecord) -> ToolCallStatus:
    """How a call whose interaction ended it without running its tool ended, for the trace
    (its record is rejected, timed out or cancelled)."""
    status = record.status
    return status if status in ("rejected", "timed_out") else "cancelled"


def _parsed(tool: Tool, raw: str | dict[str, Any], as_questions: bool) -> BaseModel:
    """A call's arguments validated (``ToolArgumentsError`` when they do not fit): as questions
    for a call put to a person (:meth:`ToolExecutor._intercepted`), else as the tool's input."""
    return parse_arguments(tool.name, QuestionInput, raw) if as_questions else tool.parse_args(raw)


def _unparsed_text(error: Exception) -> str:
    """What the model is told of arguments that did not parse: why they are invalid; or, when
    a validator of the tool's input raised something pydantic does not catch (a ``KeyError``, a
    bug in it), the tool's failure, as in Anvia, whose tools parse their input in the call."""
    if isinstance(error, ToolArgumentsError):
        return str(error)
    return f"ToolCallError: {error_text(error) or type(error).__name__}"


def call_fields(call: ToolCall, internal_id: str) -> dict[str, Any]:
    """Which call an event, a request or a context is about: the tool's name, the model's id of
    the call and the run's own id of it."""
    return {"tool_name": call.name, "tool_call_id": call.id, "internal_call_id": internal_id}


def result_part(
    call: ToolCall, content: str, is_error: bool, media: list[ToolResultMedia] | None = None
) -> ToolResultPart:
    """The result of ``call`` as the tool message of the conversation holds it (``media``: the
    media its tool returned, if any)."""
    return ToolResultPart(
        tool_call_id=call.id,
        tool_name=call.name,
        content=content,
        is_error=is_error,
        media=media or [],
    )


def _told(
    tool: Tool | None, call: ToolCall, args: str, result: str, sent: str | None = None
) -> str:
    """``result`` as the model is told it: first the arguments ``call`` ran with when they are
    not those the model sent (``sent``, compact: changed at its approval); a question's
    answers stay the JSON object its contract says they are."""
    if args == (sent if sent is not None else compact_arguments(call.arguments_json())):
        return result
    if isinstance(tool, QuestionTool) or call.name == "ask_question":
        return result
    return RAN_WITH_EDITS.format(args=args) + result


def _timed_out_text(record: ApprovalRecord | QuestionRecord, timeout: float | None) -> str:
    """What the model is told of ``record`` timing out (``timeout``: the limit, if known)."""
    limit = f"{timeout:g} s" if timeout is not None else None
    if isinstance(record, ApprovalRecord):
        return (
            f"Tool approval timed out after {limit} without a decision; "
            f"{record.tool_name} was not executed."
        )
    within = f"within {limit}" if limit is not None else "in time"
    return f"The operator did not answer {within} (timed out); no answers were given."


def _shown_args(args: Any, raw_args: str) -> Any:
    """The arguments an approval shows, which a person edits: the parsed input by its aliases
    (with its defaults) when that reads back as the same input; else the arguments as the model
    sent them (a field with only a validation alias, a computed field, a masked secret would
    not)."""
    if not isinstance(args, BaseModel):
        return args
    shown = args.model_dump(mode="json", by_alias=True)
    try:
        if type(args).model_validate(shown) == args:
            return shown
    except Exception:  # (a validator, or a comparison, of the user's that fails)
        pass
    return decode_args(raw_args)


async def _asked(ask: Callable[[Any], Any], request: Any) -> Any:
    """``ask(request)`` (a handler's or human input's answer), awaited if need be, inside the
    task that waits for it."""
    with _user_code_edge():
        return await maybe_await(ask(request))


@contextmanager
def _user_code_edge() -> Iterator[None]:
    """At the edge of a task that runs user code. A ``SystemExit`` or ``KeyboardInterrupt``
    leaving that task would end the event loop (and a kernel's): an exit ends only the run, as
    ``RunExitedError``; an interrupt stops the run, as Stop does."""
    try:
        yield
    except SystemExit as error:
        raise RunExitedError(error) from error
    except KeyboardInterrupt:
        raise PromptCancelledError(INTERRUPTED_REASON) from None


#: The events that tell of an interaction, by kind: it was asked, it was decided (or closed).
_EVENTS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "approval": (ToolApprovalRequestEvent, ToolApprovalResultEvent),
    "question": (ToolQuestionRequestEvent, ToolQuestionResultEvent),
}
#: The events that open or close an interaction (a saved notebook's copy is rewritten on each).
INTERACTION_EVENTS: frozenset[type[BaseModel]] = frozenset(
    event for pair in _EVENTS.values() for event in pair
)


def interaction_event(record: ApprovalRecord | QuestionRecord, decided: bool) -> Any:
    """The event telling that ``record`` was asked, or (``decided``) decided or closed; it holds
    a copy of the record as it is now."""
    return _EVENTS[record.kind][decided].model_validate({record.kind: record.model_copy()})


def _failed_result(error: BaseException) -> str:
    """What a call the run's ``error`` ended before it finished is told (not "stopped")."""
    return FAILED_RESULT.format(error=_failure(error))


def _failure(error: BaseException) -> str:
    """The run's ``error`` as such a result names it: its type and message, bounded."""
    what = error_text(error)
    failure = f"{type(error).__name__}: {what}" if what else type(error).__name__
    if len(failure) > FAILED_RESULT_CHARS:
        failure = failure[:FAILED_RESULT_CHARS] + " …"
    return failure
