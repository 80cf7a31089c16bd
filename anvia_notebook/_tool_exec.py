"""Executing one turn's tool calls: hooks, approval, questions, execute, results in call order."""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ._util import maybe_await, new_id
from .approvals import (
    ApprovalContext,
    ApprovalHandler,
    RunInfo,
    ToolApprovalRequest,
    normalize_decision,
    rejection_text,
)
from .errors import PromptCancelledError, ToolApprovalRequiredError
from .events import (
    ApprovalRecord,
    QuestionRecord,
    ToolApprovalRequestEvent,
    ToolApprovalResultEvent,
    ToolQuestionRequestEvent,
    ToolQuestionResultEvent,
    ToolResultEvent,
    utc_now,
)
from .hooks import (
    RUN_CONTROL,
    TOOL_CALL_CONTROL,
    Hook,
    ToolCallDecision,
    ToolCallHookEvent,
    ToolErrorEvent,
    ToolResultHookEvent,
    call_hooks,
)
from .human import HumanInput, HumanInputTimeout, HumanInputUnavailable
from .messages import ToolResultPart
from .models.base import ToolCall
from .question_types import Answer, QuestionInput
from .questions import QuestionRequest, QuestionTool
from .tools import Tool, ToolArgumentsError, ToolContext

if TYPE_CHECKING:
    from .agent import Agent
    from .run_state import RunState

__all__ = ["CURRENT_TOOL_CALL", "CurrentToolCall", "ToolExecutor"]


@dataclass(frozen=True)
class CurrentToolCall:
    """Which tool call is executing in this context (used to route captured output)."""

    run_id: str
    internal_call_id: str
    tool_name: str
    tool_call_id: str | None = None


#: Set while a tool's ``execute`` runs (also inside worker threads running sync tools).
CURRENT_TOOL_CALL: contextvars.ContextVar[CurrentToolCall | None] = contextvars.ContextVar(
    "anvia_current_tool_call", default=None
)

CANCELLED_RESULT = "ToolCallCancelled: the run was stopped before this tool call finished."


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
        cancel_reason: Callable[[], str],
    ) -> None:
        self.agent = agent
        self.state = state
        self.run_info = run_info
        self.hooks = hooks
        self.approval_handler = approval_handler
        self.human_input = human_input
        self.concurrency = max(1, concurrency)
        self.emit = emit
        self.cancel_reason = cancel_reason
        #: Results for calls interrupted by a cancellation (by tool call id), this turn.
        self._interrupted: dict[str, str] = {}

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
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(index: int) -> None:
            async with semaphore:
                outcomes[index].part = await self._run_call(calls[index], turn)

        tasks = [asyncio.ensure_future(one(index)) for index in range(len(calls))]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for call, outcome in zip(calls, outcomes, strict=True):
                if outcome.part is None:
                    # A question cancelled by Stop resolves with no answers, as in Anvia.
                    content = self._interrupted.get(call.id)
                    outcome.part = ToolResultPart(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=content if content is not None else CANCELLED_RESULT,
                        is_error=content is None,
                    )
            on_interrupted([o.part for o in outcomes if o.part is not None])
            raise
        return [o.part for o in outcomes if o.part is not None]

    # -- one call ------------------------------------------------------------------------------

    async def _run_call(self, call: ToolCall, turn: int) -> ToolResultPart:
        internal_id = new_id("call")
        raw_args = call.arguments_json()
        effective_args = raw_args
        is_error = False
        tool = self.agent.get_tool(call.name)
        decision = await self._tool_call_decision(call, internal_id, raw_args)

        if decision.type == "cancel":
            raise PromptCancelledError(decision.reason or "Cancelled by a hook.")
        if decision.type == "skip":
            result = decision.reason or "Tool call skipped."
        elif tool is None:
            result, is_error = f"ToolNotFoundError: Tool not found: {call.name}", True
        else:
            try:
                args = tool.parse_args(raw_args)
            except ToolArgumentsError as error:
                result, is_error = str(error), True
            else:
                result, is_error, effective_args = await self._approved_call(
                    tool, call, internal_id, raw_args, args, decision, turn
                )

        result = await self._after_result(call, internal_id, effective_args, result)
        self.emit(
            ToolResultEvent(
                turn=turn,
                tool_name=call.name,
                tool_call_id=call.id,
                internal_call_id=internal_id,
                args=effective_args,
                result=result,
                is_error=is_error,
                skipped=decision.type == "skip",
            )
        )
        return ToolResultPart(
            tool_call_id=call.id, tool_name=call.name, content=result, is_error=is_error
        )

    async def _tool_call_decision(
        self, call: ToolCall, internal_id: str, raw_args: str
    ) -> ToolCallDecision:
        """Hooks in order; the first decision other than ``run()`` wins."""
        event = ToolCallHookEvent(
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=internal_id,
            args=raw_args,
            tool=TOOL_CALL_CONTROL,
        )
        for hook in self.hooks:
            value = await maybe_await(hook.on_tool_call(event))
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

    async def _approved_call(
        self,
        tool: Tool,
        call: ToolCall,
        internal_id: str,
        raw_args: str,
        args: BaseModel,
        decision: ToolCallDecision,
        turn: int,
    ) -> tuple[str, bool, str]:
        """Approval (hook request or policy), then the question flow or ``execute``."""
        context = ApprovalContext(
            tool_name=call.name,
            args=args,
            raw_args=raw_args,
            tool_call_id=call.id,
            internal_call_id=internal_id,
            run=self.run_info,
        )
        needs_approval = decision.type == "approval_request"
        reason, reject_message = decision.reason, decision.reject_message
        if not needs_approval and tool.approval is not None:
            needs_approval = await tool.approval.required(context)
            if needs_approval:
                reason, reject_message = await tool.approval.texts(context)
        if needs_approval:
            request = ToolApprovalRequest(
                tool_name=call.name,
                args=args,
                raw_args=raw_args,
                tool_call_id=call.id,
                internal_call_id=internal_id,
                run=self.run_info,
                reason=reason,
                reject_message=reject_message,
                input_model=tool.input,
            )
            approved, text, edited = await self._approve(request)
            if not approved:
                return text, False, raw_args
            if edited is not None:
                try:
                    args = tool.parse_args(edited)
                except ToolArgumentsError as error:
                    return f"Edited arguments were rejected: {error}", True, raw_args
                raw_args = json.dumps(edited)
        if isinstance(tool, QuestionTool) and self.human_input is not None:
            asked = await self._ask(tool, call, internal_id, args)
            if asked is not None:
                return asked[0], asked[1], raw_args
        result, is_error = await self._execute(tool, call, internal_id, raw_args, args)
        return result, is_error, raw_args

    # -- approvals -----------------------------------------------------------------------------

    async def _approve(
        self, request: ToolApprovalRequest
    ) -> tuple[bool, str, dict[str, Any] | None]:
        """Ask the handler, else the human input; record and emit the approval either way."""
        if self.approval_handler is None and self.human_input is None:
            raise ToolApprovalRequiredError(request)
        record = ApprovalRecord(
            id=new_id("approval"),
            run_id=self.run_info.run_id,
            agent_id=self.run_info.agent_id,
            tool_name=request.tool_name,
            tool_call_id=request.tool_call_id,
            internal_call_id=request.internal_call_id,
            args=_jsonable(request.args),
            reason=request.reason,
        )
        request.approval_id = record.id
        self.state.approvals[record.id] = record
        self.emit(ToolApprovalRequestEvent(approval=record.model_copy()))
        try:
            if self.approval_handler is not None:
                decision = normalize_decision(await maybe_await(self.approval_handler(request)))
                decided_by = "handler"
            else:
                assert self.human_input is not None
                try:
                    decision = normalize_decision(await self.human_input.approve(request))
                except HumanInputUnavailable:
                    self._resolve_approval(record, "cancelled", "runtime", None)
                    raise ToolApprovalRequiredError(request) from None
                decided_by = "human"
        except asyncio.CancelledError:
            self._resolve_approval(record, "cancelled", "runtime", self.cancel_reason())
            raise
        except HumanInputTimeout as timeout:
            text = (
                f"Tool approval timed out after {timeout.timeout:g} s without a decision; "
                f"{request.tool_name} was not executed."
            )
            self._resolve_approval(record, "timed_out", "runtime", text)
            return False, text, None
        except (ToolApprovalRequiredError, PromptCancelledError):
            raise
        except Exception as error:
            self._resolve_approval(record, "cancelled", "runtime", f"Approval failed: {error}")
            raise
        decided_by = decision.decided_by or decided_by
        if decision.approved:
            record.edited_args = decision.args
            self._resolve_approval(record, "approved", decided_by, decision.reason)
            return True, "", decision.args
        self._resolve_approval(
            record, "rejected", decided_by, decision.reason or decision.reject_message
        )
        return False, rejection_text(decision, request), None

    def _resolve_approval(
        self, record: ApprovalRecord, status: Any, decided_by: str, reason: str | None
    ) -> None:
        record.status = status
        record.decided_by = decided_by
        record.decision_reason = reason
        record.resolved_at = utc_now()
        self.emit(ToolApprovalResultEvent(approval=record.model_copy()))

    # -- questions -----------------------------------------------------------------------------

    async def _ask(
        self, tool: Tool, call: ToolCall, internal_id: str, args: BaseModel
    ) -> tuple[str, bool] | None:
        """Put the questions to the human input; ``None`` means fall back to ``execute``."""
        assert self.human_input is not None
        questions = QuestionInput.model_validate(args.model_dump()).questions
        record = QuestionRecord(
            id=new_id("question"),
            run_id=self.run_info.run_id,
            agent_id=self.run_info.agent_id,
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=internal_id,
            questions=questions,
        )
        self.state.questions[record.id] = record
        self.emit(ToolQuestionRequestEvent(question=record.model_copy()))
        request = QuestionRequest(
            question_id=record.id,
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=internal_id,
            questions=questions,
            run=self.run_info,
        )
        try:
            answers = await self.human_input.ask(request)
            answers = check_answers(questions, answers)
        except asyncio.CancelledError:
            self._resolve_question(record, "cancelled", [])
            self._interrupted[call.id] = json.dumps({"answers": []})
            raise
        except HumanInputUnavailable:
            self._resolve_question(record, "cancelled", [])
            return None
        except HumanInputTimeout as timeout:
            self._resolve_question(record, "timed_out", [])
            return (
                f"The operator did not answer within {timeout.timeout:g} s (timed out); "
                "no answers were given.",
                True,
            )
        except (ValueError, ValidationError) as error:
            self._resolve_question(record, "cancelled", [])
            return f"ToolCallError: the human input returned invalid answers: {error}", True
        self._resolve_question(record, "answered", answers)
        return json.dumps({"answers": [a.to_wire() for a in answers]}), False

    def _resolve_question(self, record: QuestionRecord, status: Any, answers: list[Answer]) -> None:
        record.status = status
        record.answers = answers
        if status == "answered":
            record.answered_at = utc_now()
        else:
            record.cancelled_at = utc_now()
        self.emit(ToolQuestionResultEvent(question=record.model_copy()))

    # -- execute -------------------------------------------------------------------------------

    async def _execute(
        self, tool: Tool, call: ToolCall, internal_id: str, raw_args: str, args: BaseModel
    ) -> tuple[str, bool]:
        ctx = ToolContext(
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=internal_id,
            raw_args=raw_args,
            run=self.run_info,
        )
        token = CURRENT_TOOL_CALL.set(
            CurrentToolCall(self.run_info.run_id, internal_id, call.name, call.id)
        )
        try:
            return await tool.call(args, ctx), False
        except Exception as error:
            event = ToolErrorEvent(
                tool_name=call.name,
                tool_call_id=call.id,
                internal_call_id=internal_id,
                args=raw_args,
                error=error,
                run=RUN_CONTROL,
            )
            await call_hooks(self.hooks, "on_tool_error", event)
            return f"ToolCallError: {error}", True
        finally:
            CURRENT_TOOL_CALL.reset(token)

    async def _after_result(self, call: ToolCall, internal_id: str, args: str, result: str) -> str:
        event = ToolResultHookEvent(
            tool_name=call.name,
            tool_call_id=call.id,
            internal_call_id=internal_id,
            args=args,
            result=result,
            run=RUN_CONTROL,
        )
        await call_hooks(self.hooks, "on_tool_result", event)
        return result


def check_answers(questions: list[Any], answers: list[Answer]) -> list[Answer]:
    """Answers must name known questions, each at most once, in any order; sorted by question."""
    known = {q.id for q in questions}
    seen: dict[str, Answer] = {}
    for answer in answers:
        if not isinstance(answer, Answer):
            answer = Answer.model_validate(answer)
        if answer.question_id not in known:
            raise ValueError(f"answer for unknown question {answer.question_id!r}")
        if answer.question_id in seen:
            raise ValueError(f"question {answer.question_id!r} answered twice")
        seen[answer.question_id] = answer
    return [seen[q.id] for q in questions if q.id in seen]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value
