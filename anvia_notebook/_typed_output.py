"""The run loop's side of an ``output_type``: validation, retries, and the repair by a person.

A value that fails validation goes back to the model with pydantic's errors, up to the spec's
``retries`` times in a row. Then, with an approval handler or a human input attached, the
``final_result`` call is put to them as an approval through the run's one interaction record
(its ``reason`` carries the errors, ``fix_required`` is set): approving it with edited
arguments that validate is the fix; approving without a fix is refused; rejecting it sends the
reason back to the model, which gets its retries again; a timeout or a fix that still fails
ends the run with ``OutputValidationError``. With nobody attached the run ends with
``OutputValidationError`` at once.

Hooks see the ``final_result`` call as any tool call (it is one, in the transcript): its
``on_tool_call`` decides first (``skip`` sends its reason back to the model, ``cancel`` ends the
run, ``request_approval`` puts a valid value to a person before the run ends with it), a value
that fails validation is an ``on_tool_error`` (an :class:`OutputValidationError`), and
``on_tool_result`` sees the result the model is told. A turn's earlier ``final_result`` calls,
superseded by its last, are not run and do not reach hooks; in native mode there is no tool
call, and no tool hook.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ._tool_exec import CANCELLED_RESULT, SKIPPED_RESULT, call_fields, result_part
from ._util import compact_arguments, compact_json, decode_args, new_id
from .approvals import ToolApprovalRequest
from .decisions import RefusedFix
from .errors import OutputValidationError, PromptCancelledError, ToolApprovalRequiredError
from .messages import Message, ToolResultPart
from .models.base import ResponseFormat, ToolCall, ToolDefinition
from .output_types import FINAL_RESULT, OutputSpec, error_list, format_errors

if TYPE_CHECKING:
    from ._tool_exec import ToolExecutor
    from .run import AgentRun
    from .trace import ToolCallStatus

__all__ = ["Accepted", "TypedOutput"]

#: Arguments longer than this (JSON characters) are not put in a repair form whole.
MAX_REPAIR_ARGUMENTS = 200_000
ACCEPTED_RESULT = "Final result accepted."
FIXED_RESULT = "Final result accepted, as fixed by a person."
STEERED_RESULT = (
    "Result received, but new messages from the user follow: take them into account and call "
    "final_result again with the result."
)
SUPERSEDED_RESULT = "Not used: a later final_result call in the same turn gives the result."


def fixed_then_steered(accepted: Accepted, tool: bool) -> str:
    """What the model is told when a person changed its result (a fix, or an edit at an
    approval) and messages were steered to the run meanwhile: the value as changed, and to
    answer again with the messages (``tool``: by calling ``final_result``)."""
    again = f"call {FINAL_RESULT} again with the result" if tool else "give the result again"
    return (
        f"A person changed your result to: {compact_json(accepted.data)}. New messages from "
        f"the user follow: take them into account and {again}."
    )


#: Why an answer that ended so (its finish reason) is not asked for again.
_ENDED_SHORT = {
    "length": "it was cut off at the token limit. Raise the limit (.max_tokens(...) of the "
    "agent, or the model's max_tokens) or ask for a shorter result.",
    "content_filter": "the model refused to answer (or its provider's content filter stopped "
    "it); its words are the error's output.",
}


@dataclass(frozen=True)
class Accepted:
    """A valid value: the run ends with it."""

    value: Any
    #: The value as JSON data.
    data: Any
    #: The value's text: the model's text of that turn, else the value as JSON.
    text: str
    #: Whether a person (or the approval handler) fixed the model's value into this one.
    fixed: bool = False


class TypedOutput:
    """One run's output type as the loop uses it (see the module's docstring)."""

    def __init__(
        self,
        run: AgentRun,
        executor: ToolExecutor,
        spec: OutputSpec,
        steered: Callable[[], bool] | None = None,
    ) -> None:
        self.run = run
        self.executor = executor
        self.spec = spec
        #: Called when a valid ``final_result`` would end the run: True when messages sent to
        #: the running agent wait to be delivered (the run then goes on: the model is told to
        #: read them and give its result again), False when none wait (and none can be taken
        #: any more: the run ends). The loop delivers the messages after the turn's results.
        self.steered = steered
        #: The internal call id of each ``final_result`` call validated this turn.
        self._internal_ids: dict[str, str] = {}
        #: The approval asked for each ``final_result`` call this turn (a model may give a
        #: call of a later turn the same id: an earlier turn's decision is not its own).
        self._asked: dict[str, str] = {}

    # -- the request -----------------------------------------------------------------------------

    def tools(self, tools: list[ToolDefinition]) -> list[ToolDefinition]:
        if self.spec.mode != "tool":
            return tools
        return [*tools, self.spec.tool_definition()]

    def response_format(self) -> ResponseFormat | None:
        return self.spec.response_format() if self.spec.mode == "native" else None

    # -- the model's answer ------------------------------------------------------------------------

    def handles(self, calls: list[ToolCall]) -> bool:
        """True when this turn's calls give the result (they include ``final_result``)."""
        return self.spec.mode == "tool" and any(call.name == FINAL_RESULT for call in calls)

    async def answered(self, text: str, turn: int, finish: str | None = None) -> Accepted | None:
        """The model answered without tool calls: the result (native mode), or None when the
        model was asked again (a message was added to the conversation). ``finish``: why the
        answer ended (an answer the token limit cut, or a refusal, is not asked for again)."""
        spec = self.spec
        if spec.mode == "tool":
            if self._failed():
                self._tell(
                    f"You answered without calling {FINAL_RESULT}. Give your result as a "
                    f"{spec.name} by calling the {FINAL_RESULT} tool."
                )
                return None
            raise OutputValidationError(
                f"The model answered without calling {FINAL_RESULT}, so the run has no "
                f"{spec.name} (it was reminded {spec.retries} "
                f"{'time' if spec.retries == 1 else 'times'}).",
                output=text,
                output_type=spec.output_type,
            )
        try:
            value = spec.validate_text(text)
        except ValidationError as error:
            why = _ENDED_SHORT.get(finish or "")
            if why is not None:  # (asked again, it would end the same way, and be paid for)
                raise OutputValidationError(
                    f"The model's answer is not a valid {spec.name}: {why}",
                    errors=error_list(error),
                    output=text,
                    output_type=spec.output_type,
                ) from None
            if self._failed():
                self._tell(
                    f"Your answer is not a valid {spec.name}:\n{format_errors(error)}\n"
                    "Answer again with only JSON that follows the schema."
                )
                return None
            call = ToolCall(
                id=f"output_turn_{turn}",
                name=FINAL_RESULT,
                arguments=compact_json(spec.as_arguments(text)),
            )
            fixed = await self._repair(call, new_id("call"), text, error)
            if isinstance(fixed, str):
                self._tell(fixed)
                return None
            return Accepted(fixed.value, fixed.data, compact_json(fixed.data), fixed=True)
        self.run.state.output_failures = 0
        return Accepted(value, spec.dump(value), text)

    async def tool_round(self, calls: list[ToolCall], turn: int, text: str) -> Accepted | None:
        """Run a turn whose calls include ``final_result``: the other calls first (as usual),
        then the last ``final_result`` call is validated. The tool message with every call's
        result is added to the conversation; returns the result, or None to go on."""
        self._asked.clear()
        finals = [call for call in calls if call.name == FINAL_RESULT]
        others = [call for call in calls if call.name != FINAL_RESULT]
        parts: dict[str, ToolResultPart] = {}

        def keep(results: list[ToolResultPart]) -> None:  # the run was stopped or failed
            for part in results:
                parts[part.tool_call_id] = part
            self._end_round(calls, parts, interrupted=True)

        if others:
            for part in await self.executor.run_calls(others, turn, keep):
                parts[part.tool_call_id] = part
        for call in finals[:-1]:
            parts[call.id] = self._result(call, turn, new_id("call"), SUPERSEDED_RESULT, False)
        call = finals[-1]
        try:
            outcome = await self._final_result(call, turn)
        except OutputValidationError as invalid:  # the run ends: the call's result says why
            internal_id = self._internal_ids.pop(call.id, new_id("call"))
            text = f"OutputValidationError: {invalid}"
            parts[call.id] = self._result(call, turn, internal_id, text, True)
            self._end_round(calls, parts)
            raise
        except BaseException as error:
            # The trace ends the call too (a Stop while its fix waited for approval left it
            # with no status), as a stopped or failed call of any tool.
            entry = self.executor.trace.entry(call.id)
            if entry is not None and call.id not in parts:
                stopped = isinstance(error, (asyncio.CancelledError, PromptCancelledError))
                status: ToolCallStatus = "cancelled" if stopped else "error"
                self.executor.trace.tool_call_done(
                    entry, self._args(call), CANCELLED_RESULT, status
                )
            self._end_round(calls, parts, interrupted=True)
            raise
        if isinstance(outcome, Accepted) and self.steered is not None and self.steered():
            told = fixed_then_steered(outcome, True) if outcome.fixed else STEERED_RESULT
            steered = Accepted(outcome.value, outcome.data, told, outcome.fixed)
            parts[call.id] = await self._hooked_done(call, turn, steered, calls, parts)
            self._end_round(calls, parts)
            return None
        if isinstance(outcome, Accepted):
            parts[call.id] = await self._hooked_done(call, turn, outcome, calls, parts)
            self._end_round(calls, parts)
            value_text = text if text.strip() else compact_json(outcome.data)
            return Accepted(outcome.value, outcome.data, value_text)
        self._internal_ids.pop(call.id, None)
        parts[call.id] = outcome
        self._end_round(calls, parts)
        return None

    # -- internals -------------------------------------------------------------------------------

    async def _final_result(self, call: ToolCall, turn: int) -> Accepted | ToolResultPart:
        """Validate one ``final_result`` call: the value, or the result the model is told."""
        spec = self.spec
        internal_id = self._internal_ids[call.id] = new_id("call")
        self.executor.trace.tool_call(call, turn)
        raw = call.arguments_json()  # validated as it came (a large output is parsed once)
        decision = await self.executor.call_decision(call, internal_id, compact_arguments(raw))
        if decision.type == "cancel":
            raise PromptCancelledError(decision.reason or "Cancelled by a hook.")
        if decision.type == "skip":
            reason = SKIPPED_RESULT if decision.reason is None else decision.reason
            return await self._told(call, turn, internal_id, reason, skipped=True)
        try:
            value = spec.validate_arguments(raw)
        except ValidationError as error:
            text = (
                f"Invalid {spec.name}:\n{format_errors(error)}\n"
                f"Fix these errors and call {FINAL_RESULT} again."
            )
            invalid = self._invalid(text, error_list(error), raw)
            await self.executor.call_failed(call, internal_id, raw, invalid, text)
            if self._failed():
                return await self._told(call, turn, internal_id, text, True)
            fixed = await self._repair(call, internal_id, raw, error)
            if isinstance(fixed, str):
                return await self._told(call, turn, internal_id, fixed, True)
            return Accepted(fixed.value, fixed.data, FIXED_RESULT, fixed=True)
        self.run.state.output_failures = 0
        if decision.type == "approval_request":
            asked = await self._hook_approval(call, internal_id, raw, decision)
            if isinstance(asked, str):
                return await self._told(call, turn, internal_id, asked)
            if asked is not None:
                return asked
        return Accepted(value, spec.dump(value), ACCEPTED_RESULT)

    async def _hook_approval(
        self, call: ToolCall, internal_id: str, raw: str, decision: Any
    ) -> Accepted | str | None:
        """A hook asked for the approval of a valid value: None when approved as it is, the
        fixed value when approved with edited arguments that validate, else what the model is
        told (the rejection, or why the edit was refused: before it was recorded, or, for an
        edit decided in another process that the output type's own rules refuse, after)."""
        spec = self.spec
        request = ToolApprovalRequest(
            **call_fields(call, internal_id),
            args=decode_args(raw),
            raw_args=raw,
            run=self.executor.run_info,
            reason=decision.reason,
            reject_message=decision.reject_message,
            input_model=spec.input_model,
        )
        outcome = await self.executor.approve(request)
        self._asked[call.id] = request.approval_id
        if not outcome.approved:
            return outcome.told
        if outcome.edited is None:
            return None
        try:
            value = spec.validate_arguments(outcome.edited)
        except ValidationError as refused:
            told = f"Edited arguments were rejected:\n{format_errors(refused)}"
            self.executor.refuse_edit(request.approval_id, told)
            return told
        return Accepted(value, spec.dump(value), FIXED_RESULT, fixed=True)

    async def _told(
        self,
        call: ToolCall,
        turn: int,
        internal_id: str,
        text: str,
        is_error: bool = False,
        skipped: bool = False,
    ) -> ToolResultPart:
        """A result that does not end the run: ``on_tool_result`` hooks, then the result
        (``skipped``: a hook skipped the call, as for any tool)."""
        text = await self.executor.call_result(call, internal_id, self._args(call), text)
        return self._result(call, turn, internal_id, text, is_error, skipped=skipped)

    async def _hooked_done(
        self,
        call: ToolCall,
        turn: int,
        accepted: Accepted,
        calls: list[ToolCall],
        parts: dict[str, ToolResultPart],
    ) -> ToolResultPart:
        """The accepted value's result: ``on_tool_result`` hooks, then the result (a hook that
        ends the run leaves the turn's results in the history)."""
        internal_id = self._internal_ids.setdefault(call.id, new_id("call"))
        try:
            await self.executor.call_result(call, internal_id, self._args(call), accepted.text)
        except BaseException:
            self._end_round(calls, parts, interrupted=True)
            raise
        return self._done(call, turn, accepted)

    def _args(self, call: ToolCall) -> str:
        """The call's arguments as hooks see them: a person's fix when one was approved."""
        record = self._decided_record(call.id)
        if record is not None and record.status == "approved" and record.edited_args is not None:
            return compact_json(record.edited_args)
        return compact_arguments(call.arguments_json())

    def _done(self, call: ToolCall, turn: int, accepted: Accepted) -> ToolResultPart:
        internal_id = self._internal_ids.pop(call.id, new_id("call"))
        return self._result(call, turn, internal_id, accepted.text, False, accepted)

    def _failed(self) -> bool:
        """Count a failed output; True while the model may try again."""
        state = self.run.state
        state.output_failures += 1
        return state.output_failures <= self.spec.retries

    def tell(self, text: str) -> None:
        """``text`` as a user message of the conversation (before what was steered to it)."""
        self._tell(text)

    def _tell(self, text: str) -> None:
        """Ask the model again: ``text`` as a user message of the conversation."""
        self.run.state.messages.append(Message.user(text))
        self.run.persist()

    async def _repair(
        self, call: ToolCall, internal_id: str, raw: str, error: ValidationError
    ) -> Accepted | str:
        """The retries are spent: a person (or the approval handler) fixes the value. Returns
        the fixed value, or what the model is told when they rejected it."""
        spec, listed = self.spec, format_errors(error)
        retries = f"{spec.retries} {'retry' if spec.retries == 1 else 'retries'}"
        invalid = f"The model's {spec.name} is not valid after {retries}"

        def unfixed(message: str) -> OutputValidationError:
            """The run ends with the model's value as it was: ``message`` and its errors."""
            return self._invalid(f"{message}:\n{listed}", error_list(error), raw)

        args: Any = decode_args(call.arguments_json())
        note = ""
        if len(raw) > MAX_REPAIR_ARGUMENTS:
            note = (
                f"\nThe model's output is {len(raw):,} characters long, too long to edit here: "
                "write the fix in full, or reject to ask the model again."
            )
            args = {"result": None} if spec.wrapped else {}
        elif not isinstance(args, dict):
            args = spec.as_arguments(raw)
        request = ToolApprovalRequest(
            **call_fields(call, internal_id),
            args=args,
            raw_args=raw,
            run=self.executor.run_info,
            reason=(
                f"{invalid}. Approve with edited arguments that fix it, or reject it to ask the "
                f"model again.\n{listed}{note}"
            ),
            input_model=spec.input_model,
            fix_required=True,
        )
        try:
            outcome = await self.executor.approve(request)
            self._asked[call.id] = request.approval_id
        except ToolApprovalRequiredError:
            raise unfixed(
                f"{invalid}, and there is no approval handler or person to fix it"
            ) from None
        # Code's fix, found missing or invalid before it was recorded; else a person's approved.
        refused = outcome.refused_fix
        if refused is None and outcome.approved:
            checked = self._approved_fix(request.approval_id, outcome.edited)
            if isinstance(checked, Accepted):
                return checked
            refused = checked
        if refused is not None and refused.error is None:
            raise unfixed(
                f"The model's {spec.name} was approved without a fix, and it is not valid"
            )
        if refused is not None and refused.error is not None:
            text = f"The fix is not a valid {spec.name}:\n{format_errors(refused.error)}"
            raise self._invalid(text, error_list(refused.error), compact_json(refused.args))
        status = self.run.state.approvals[request.approval_id].status
        if status == "rejected":
            self.run.state.output_failures = 0
            return f"The {spec.name} was rejected: {outcome.told} Give a corrected result."
        raise unfixed(f"{invalid}, and the fix asked for was {status.replace('_', ' ')}")

    def _approved_fix(
        self, approval_id: str, edited: dict[str, Any] | None
    ) -> Accepted | RefusedFix:
        """The value of an approved fix. Every decider in this process was checked before it was
        recorded; a fix decided in another process (the run store, the command line) was checked
        there against the output type's JSON Schema only, so the output type's own rules (a
        validator) may still refuse it: the record is then corrected to the rejection it was."""
        try:
            if edited is not None:
                value = self.spec.validate_arguments(edited)
                self.run.state.output_failures = 0
                return Accepted(value, self.spec.dump(value), FIXED_RESULT, fixed=True)
            refused = RefusedFix()  # (refused by every check: a record saying so is corrected)
        except ValidationError as error:
            refused = RefusedFix(edited, error)
        self.executor.refuse_edit(approval_id, refused.reason)
        return refused

    def _invalid(
        self, message: str, errors: list[dict[str, Any]], output: str
    ) -> OutputValidationError:
        return OutputValidationError(
            message, errors=errors, output=output, output_type=self.spec.output_type
        )

    def _result(
        self,
        call: ToolCall,
        turn: int,
        internal_id: str,
        text: str,
        is_error: bool,
        accepted: Accepted | None = None,
        skipped: bool = False,
    ) -> ToolResultPart:
        """The call's result: emitted, traced and returned as its part of the tool message."""
        trace = self.executor.trace
        entry = trace.entry(call.id) or trace.tool_call(call, turn)
        args = call.arguments_json()
        record = self._decided_record(call.id)
        if accepted is not None and record is not None and record.status == "approved":
            args = self._args(call)  # (a person's fix; a hook's approval may have none)
        status = "error" if is_error else "success"
        if record is not None and record.status == "rejected":
            status = "rejected"
        elif skipped:
            status = "skipped"
        trace.tool_call_done(entry, args, text, status)  # type: ignore[arg-type]
        self.executor.emit_result(call, turn, internal_id, args, text, is_error, skipped)
        return result_part(call, text, is_error)

    def _decided_record(self, call_id: str) -> Any:
        record = self.run.state.approvals.get(self._asked.get(call_id, ""))
        return record if record is not None and record.status != "pending" else None

    def _end_round(
        self, calls: list[ToolCall], parts: dict[str, ToolResultPart], interrupted: bool = False
    ) -> None:
        """The turn's tool message, a result for every call in call order, joins the history."""
        state = self.run.state
        message = Message.tool(
            [parts.get(call.id) or result_part(call, CANCELLED_RESULT, True) for call in calls]
        )
        if interrupted and state.messages and state.messages[-1].role == "tool":
            return  # already added
        state.messages.append(message)
        state.calls.clear()
        if interrupted:
            self.run.persist()
        else:  # (as the run loop's tool round: its results and events stored at once)
            self.run.persist(durable=True, logged=True)
