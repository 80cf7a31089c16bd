"""The run loop: call the model, run the tools it asked for, repeat until it answers."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any

from ._run_context import CURRENT_RUN
from ._steering import last_turn
from ._tool_exec import ToolExecutor, interaction_event
from ._typed_output import Accepted, TypedOutput, fixed_then_steered
from ._util import (
    StreamedHalves,
    cancelled_from_outside,
    error_with_notes,
    valid_text,
)
from .decisions import cut_reason
from .errors import (
    DEFAULT_CANCEL_REASON,
    INTERRUPTED_REASON,
    InvalidModelOutputError,
    MaxTurnsError,
    ModelError,
    PromptCancelledError,
    RunExitedError,
)
from .events import (
    CancelledEvent,
    ErrorEvent,
    FinalEvent,
    GenerationStartEvent,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolApprovalResultEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolQuestionResultEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .hooks import (
    RUN_CONTROL,
    CompletionCallEvent,
    CompletionErrorEvent,
    CompletionResponseEvent,
    HookAction,
    RunEndEvent,
    RunErrorEvent,
    RunStartEvent,
    TurnEndHookEvent,
    TurnStartHookEvent,
    call_hook,
    call_hooks,
    log_failed_hook,
)
from .messages import Message, ToolResultPart
from .models.base import (
    CompletionAccumulator,
    CompletionRequest,
    CompletionResponse,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
)
from .output_types import check_output_tools
from .retry import CALL_RETRIES, CallRetries, RetryContext
from .run_info import RunInfo
from .run_state import PromptResponse

if TYPE_CHECKING:
    from .run import AgentRun

__all__ = ["run_loop"]

logger = logging.getLogger("anvia_notebook")

#: The error of a model call whose own code raised ``CancelledError`` (nobody stopped the run).
MODEL_CANCELLED = (
    "The model call was cancelled by the model's own code (CancelledError), not by a Stop: "
    "its client awaited something that another piece of code cancelled."
)


async def _lifecycle(run: AgentRun, name: str, event: Any, turn: int | None = None) -> None:
    """Call one lifecycle callback on every hook of the run; ``run.cancel(...)`` ends the run.
    (``turn``: the turn of a model call's event, which does not say it; a failing callback's
    error names it.)"""
    await call_hooks(run.request.active_hooks, name, event, turn=turn)


def _logged_results(run: AgentRun) -> set[tuple[int, str]]:
    """The turns and tool call ids of the results the stored event log already holds (by
    turn: some models give a later turn's call an earlier call's id)."""
    return {
        (event.turn, event.tool_call_id)
        for event in run.events
        if isinstance(event, ToolResultEvent) and event.tool_call_id
    }


def _ended_calls(run: AgentRun) -> set[str]:
    """The internal ids of the calls whose result the stored event log holds (calls that ended:
    an interaction of theirs is not the one of a later call with the same tool call id)."""
    return {event.internal_call_id for event in run.events if isinstance(event, ToolResultEvent)}


def _logged_decisions(run: AgentRun) -> set[str]:
    """The ids of the approvals and questions whose decision the stored event log holds."""
    return {
        event.approval.id if isinstance(event, ToolApprovalResultEvent) else event.question.id
        for event in run.events
        if isinstance(event, (ToolApprovalResultEvent, ToolQuestionResultEvent))
    }


async def run_loop(run: AgentRun) -> PromptResponse:
    request = run.request
    agent = request.agent
    state = run.state
    state.status = "running"
    if run.resumed:
        prompt = state.messages[state.prompt_index]
        history = state.messages[: state.prompt_index]
    else:
        prompt, history = request.prompt_message, request.history
        state.messages = [*history, prompt]
        state.prompt_index = len(history)
    run.persist()
    CURRENT_RUN.set(run)  # (this task's context: a sub-agent tool finds its parent run)
    run_info = RunInfo(
        agent_id=agent.id,
        run_id=state.run_id,
        session_id=state.session_id,
        metadata=request.meta,
        path=run.path,
        parent_run_id=state.parent_run_id,
    )
    executor = ToolExecutor(
        agent=agent,
        state=state,
        run_info=run_info,
        hooks=request.active_hooks,
        approval_handler=request.active_approval_handler,
        human_input=request.active_human_input,
        concurrency=request.tool_concurrency,
        emit=run.emit,
        stopped=run.cancelled_as,
        interactions=run.interactions,
        persist=lambda durable: run.persist(durable=durable),
        persist_opening=lambda opening: run.persist(durable=True, opening=opening),
        resuming=run.resumed,
        trace=run.tracer,
        logged_results=_logged_results(run) if run.resumed else (),
        ended_calls=_ended_calls(run) if run.resumed else (),
        logged_decisions=_logged_decisions(run) if run.resumed else (),
    )
    spec = request.active_output_type
    typed = (
        TypedOutput(run, executor, spec, steered=run.steering.waits_at_end)
        if spec is not None
        else None
    )
    tools: list[ToolDefinition] = []
    model_name = str(getattr(agent.model, "name", type(agent.model).__name__))
    max_turns = request.max_turn_count
    run.tracer.run_started(agent_id=agent.id, resumed=run.resumed, session_id=state.session_id)
    steering = run.steering
    try:
        steering.start()
        if run.stopped_before_start:
            raise asyncio.CancelledError
        # (made here: a tool's input without a JSON Schema fails the run as any error does)
        tools = [tool.definition() for tool in agent.tools.values()]
        if typed is not None:
            tools = typed.tools(tools)
        if agent.mcp_servers:  # connected on the first run; a name clash fails here
            from .mcp._registry import attach_mcp_tools

            await attach_mcp_tools(agent)
            check_output_tools(spec, agent.tools)  # a server's tool named final_result
            tools = [tool.definition() for tool in agent.tools.values()]
            if typed is not None:
                tools = typed.tools(tools)
        await _lifecycle(
            run, "on_run_start", RunStartEvent(prompt, list(history), max_turns, RUN_CONTROL)
        )
        turn = state.turn if run.resumed else 0
        if not run.resumed:
            state.answered_turn = 0
        elif state.answered_turn is not None and state.answered_turn < turn:
            turn -= 1  # its model call was cut short: made again, as the same turn
        interrupted_calls = _unanswered_calls(state.messages) if run.resumed else []
        _tell_unlogged_calls(run, interrupted_calls, turn)
        stored = _stored_result(run, typed) if run.resumed and typed is not None else None
        if stored is not None and not steering.before_end(turn + 1):
            # The run had its valid result when it stopped (in its on_run_end hook, say): it
            # ends with it now, as it would have, unless a message was steered to it.
            return await _succeed(run, stored)
        if interrupted_calls and typed is not None and typed.handles(interrupted_calls):
            accepted = await typed.tool_round(interrupted_calls, turn, state.messages[-1].content)
            if accepted is not None:
                return await _succeed(run, accepted)
        elif interrupted_calls:  # resume the tool calls of the turn that was interrupted
            results = await executor.run_calls(
                interrupted_calls, turn, lambda parts: state.messages.append(Message.tool(parts))
            )
            _end_tool_round(run, results)
        elif run.resumed and typed is not None and _unchecked_answer(state.messages):
            # The model's last answer was being checked when the run stopped (in native mode,
            # its repair may be waiting for a person): checked again, the same repair offered.
            accepted = await _check_answer(typed, steering, state.messages[-1].content, turn)
            if accepted is not None:
                return await _succeed(run, accepted)
        elif (
            run.resumed and _unchecked_answer(state.messages) and not steering.before_end(turn + 1)
        ):
            # The model had answered when the run stopped (in its on_run_end hook, say): the
            # answer ends the run now, as it would have, unless a message was steered to it.
            return await _succeed(run, state.messages[-1].content or "")
        if run.resumed:  # steering the stored run queued and did not deliver yet
            steering.deliver(turn + 1)
        executor.resuming = False
        turn_prompt: Message | None = None
        # As in Anvia, the loop runs while the turn counter is at most max_turns + 1.
        while turn < last_turn(max_turns):
            turn += 1
            state.turn = turn
            # This turn's prompt is the last new message (the tool message after a tool round).
            turn_prompt, turn_history = state.messages[-1], list(state.messages[:-1])
            run.emit(TurnStartEvent(turn=turn))
            await _lifecycle(
                run,
                "on_turn_start",
                TurnStartHookEvent(turn, turn_prompt, turn_history, RUN_CONTROL),
            )
            completion_request = CompletionRequest(
                instructions=agent.instructions,
                messages=list(state.messages),
                tools=tools,
                temperature=agent.temperature,
                max_tokens=agent.max_tokens,
                tool_choice=agent.tool_choice,
                response_format=typed.response_format() if typed is not None else None,
            )
            await _lifecycle(
                run,
                "on_completion_call",
                CompletionCallEvent(turn_prompt, turn_history, completion_request, RUN_CONTROL),
                turn,
            )
            run.emit(GenerationStartEvent(turn=turn, model=model_name))
            response = await _complete(run, completion_request, turn, turn_prompt)
            # Counted before the hook, as in Anvia: a hook that cancels leaves the tokens paid.
            state.usage = state.usage + response.usage
            await _lifecycle(
                run,
                "on_completion_response",
                CompletionResponseEvent(turn_prompt, response, RUN_CONTROL),
                turn,
            )
            state.messages.append(response.to_message())
            state.answered_turn = turn
            run.share_text(turn, state.messages[-1].content)
            state.calls.clear()
            run.persist()
            # As in Anvia, the hook runs first: one that cancels the run leaves no turn_end.
            await _lifecycle(run, "on_turn_end", TurnEndHookEvent(turn, response, RUN_CONTROL))
            run.emit(TurnEndEvent(turn=turn, usage=response.usage))

            if not response.tool_calls:
                await run.let_streams_catch_up()  # (a reader may steer at turn_end)
                if typed is not None:
                    if steering.deliver(turn + 1):
                        continue  # messages came: the model reads them before giving its result
                    accepted = await _check_answer(
                        typed, steering, response.text, turn, response.finish_reason
                    )
                    if accepted is None:
                        continue  # the model was asked again (or a message came meanwhile)
                    return await _succeed(run, accepted)
                if steering.before_end(turn + 1):
                    continue  # a steering message arrived: the run goes on (as in Anvia)
                return await _succeed(run, response.text)
            for call in response.tool_calls:
                if not call.name:
                    raise InvalidModelOutputError(
                        f"The model returned tool call {call.id!r} with an empty name; this "
                        "indicates invalid provider output."
                    )

            def keep_partial(results: list[ToolResultPart]) -> None:
                state.messages.append(Message.tool(results))

            if typed is not None and typed.handles(response.tool_calls):
                await run.let_streams_catch_up()  # (a reader may steer at turn_end)
                accepted = await typed.tool_round(response.tool_calls, turn, response.text)
                if accepted is not None:
                    return await _succeed(run, accepted)
                steering.deliver(turn + 1)
                continue
            results = await executor.run_calls(response.tool_calls, turn, keep_partial)
            _end_tool_round(run, results)
            steering.deliver(turn + 1)
        # (the prompt of the last model call, as in Anvia: the tool message before its calls)
        last_prompt = turn_prompt if turn_prompt is not None else state.messages[-1]
        raise MaxTurnsError(max_turns, _with_unread(run), last_prompt, state.usage)
    except (asyncio.CancelledError, PromptCancelledError, KeyboardInterrupt) as error:
        # (a KeyboardInterrupt must not leave the run's task either: it stops the run)
        steering.end()
        if isinstance(error, PromptCancelledError):
            reason = error.reason if not isinstance(error.reason, str) else cut_reason(error.reason)
        elif isinstance(error, KeyboardInterrupt):
            reason = INTERRUPTED_REASON
        else:
            reason = state.cancel_reason or DEFAULT_CANCEL_REASON
        state.cancel_reason = reason
        cancelled = PromptCancelledError(reason, list(state.messages))
        hook_reason = await _run_error_hooks(run, cancelled)
        if hook_reason is not None:  # as in Anvia, a hook's run.cancel(reason) replaces it
            if isinstance(hook_reason, str):
                hook_reason = cut_reason(hook_reason)
            state.cancel_reason = hook_reason
            cancelled = PromptCancelledError(hook_reason, list(state.messages))
        raise _ended_cancelled(run, cancelled) from None
    except GeneratorExit:
        raise  # (the run's coroutine closed, never run to its end: nothing may be awaited)
    except BaseException as caught:
        # A SystemExit must not leave the run's task: asyncio would let it through the event
        # loop, and a kernel would end. (A library's own BaseException ends the run in error
        # too: it is recorded, then raised.)
        failure = RunExitedError(caught) if isinstance(caught, SystemExit) else caught
        steering.end()
        cancel_reason = await _run_error_hooks(run, failure)
        if cancel_reason is not None:  # a hook returned run.cancel(reason), as in Anvia
            if isinstance(cancel_reason, str):
                cancel_reason = cut_reason(cancel_reason)
            state.cancel_reason = cancel_reason
            # (at the turn limit, its messages: the unread steered ones last, as in Anvia)
            messages = failure.messages if isinstance(failure, MaxTurnsError) else state.messages
            cancelled = PromptCancelledError(cancel_reason, list(messages))
            raise _ended_cancelled(run, cancelled) from caught
        state.error = error_with_notes(failure) or type(failure).__name__
        _close_interactions(run, f"The run failed: {state.error}")
        state.status = "error"
        run.tracer.run_ended("error", failure)
        run.persist()
        run.emit(
            ErrorEvent(
                run_id=state.run_id,
                error=state.error,
                error_type=type(failure).__name__,
                usage=state.usage,
            )
        )
        if failure is not caught:
            raise failure from caught
        raise


def _with_unread(run: AgentRun) -> list[Message]:
    """The run's messages, then the messages steered into it that no model call read (the turn
    limit left none to): as Anvia's ``MaxTurnsError``, whose run puts them into the conversation
    after the last round. Continuing with ``agent.prompt(error.messages)`` gives them to the
    model. The run's own messages stay without them, and its end says them "not delivered"
    (it closes to steering first: what the run store holds for it is among them too)."""
    run.steering.end()
    with run.lock:
        unread = [item.message for item in run.state.steering]
    return [*run.state.messages, *unread]


async def _succeed(run: AgentRun, result: str | Accepted) -> PromptResponse:
    """The run ends with the model's answer (and, with an output type, its validated value)."""
    state = run.state
    text = result if isinstance(result, str) else result.text
    data = None if isinstance(result, str) else result.data
    state.output, state.data = text, data
    # The answer is stored before the hook runs: a run whose process ends in the hook is
    # resumed with it (and ends with it), never asking the model again.
    run.persist(durable=True)
    await _lifecycle(
        run, "on_run_end", RunEndEvent(text, state.usage, list(state.messages), RUN_CONTROL)
    )
    _close_interactions(run, "The run ended before this was decided.")
    run.steering.end()
    state.status = "success"
    run.tracer.run_ended("success")
    run.persist()
    spec = run.request.active_output_type
    from ._output_table import keyed_type  # (pandas' helpers: not loaded at import)

    run.emit(
        FinalEvent(
            run_id=state.run_id,
            output=text,
            usage=state.usage,
            messages=list(state.messages),
            data=data,
            keyed=spec is not None and keyed_type(spec.output_type),
        )
    )
    return PromptResponse(
        output=text,
        usage=state.usage,
        messages=list(state.messages),
        run_id=state.run_id,
        trace=run.trace,
        data=None if isinstance(result, str) else result.value,
        output_type=None if spec is None else spec.output_type,
    )


async def _check_answer(
    typed: TypedOutput, steering: Any, text: str, turn: int, finish: str | None = None
) -> Accepted | None:
    """A typed run's answer without tool calls, checked (native mode: validated, retried, maybe
    repaired by a person; tool mode: a reminder to call ``final_result``) while the run stays
    open to steering. The result, or None when the run goes on: the model was asked again
    (with what was steered meanwhile), or a message came before the run could end."""
    accepted = await typed.answered(text, turn, finish)
    if accepted is None:
        steering.deliver(turn + 1)
        return None
    if steering.waits_at_end():
        if accepted.fixed:  # (a person's fix is not lost: the model hears of it first)
            typed.tell(fixed_then_steered(accepted, False))
        steering.before_end(turn + 1)
        return None
    return accepted


def _stored_result(run: AgentRun, typed: TypedOutput) -> Accepted | None:
    """The valid result a resumed typed run had stored as it ended (None: it had none, or it no
    longer validates as the output type, when the model is asked as before)."""
    state = run.state
    if state.output is None:
        return None
    try:
        value = typed.spec.adapter.validate_python(state.data)
    except Exception:  # (a validator may raise anything): the model is asked as before
        return None
    return Accepted(value, state.data, state.output)


def _unchecked_answer(messages: list[Message]) -> bool:
    """The history ends with the model's answer without tool calls (a stored run whose answer
    was being checked, or repaired, when its process stopped)."""
    return bool(messages) and messages[-1].role == "assistant" and not messages[-1].tool_calls


def _unanswered_calls(messages: list[Message]) -> list[ToolCall]:
    """The tool calls of the last assistant message when no tool message answered them yet."""
    if not messages or messages[-1].role != "assistant" or not messages[-1].tool_calls:
        return []
    return [
        ToolCall(id=call.id, name=call.name, arguments=call.arguments)
        for call in messages[-1].tool_calls
    ]


def _tell_unlogged_calls(run: AgentRun, calls: list[ToolCall], turn: int) -> None:
    """The calls of a resumed run's interrupted turn that its stored event log does not hold
    (the process ended before the log's next write, within a second of them: a tool that
    killed its kernel) are told now, with the turn's text, before their results: the
    transcript of the resumed run shows what was called, with its arguments."""
    logged = {(e.turn, e.tool_call.id) for e in run.events if isinstance(e, ToolCallEvent)}
    missing = [call for call in calls if (turn, call.id) not in logged]
    if not missing:
        return
    text = run.state.messages[-1].content
    if text and not any(isinstance(e, TextDeltaEvent) and e.turn == turn for e in run.events):
        run.emit(TextDeltaEvent(turn=turn, delta=text))
    for call in missing:
        run.emit(ToolCallEvent(turn=turn, tool_call=call))


def _end_tool_round(run: AgentRun, results: list[ToolResultPart]) -> None:
    """The turn's tool message is in the history: the calls' progress is no longer needed.
    Stored at once, with the round's events: a process that ends during the next model call
    leaves the results (a resumed run neither runs the calls again nor says they were cut
    off) and the transcript of the round."""
    run.state.messages.append(Message.tool(results))
    run.state.calls.clear()
    run.persist(durable=True, logged=True)


def _close_interactions(run: AgentRun, reason: str) -> None:
    """The run ends: an approval or question it leaves open (e.g. one stored before a resume
    that this run never asked again) is closed as cancelled, recorded and told."""
    try:
        closed = run.interactions.close_all(reason)
    except Exception:  # ending the run must not fail here
        logger.exception("Closing the run's open interactions failed")
        return
    for record in closed:
        run.tracer.interaction(record, resolved=True)
        run.emit(interaction_event(record, decided=True))


def _ended_cancelled(run: AgentRun, cancelled: PromptCancelledError) -> PromptCancelledError:
    """End the run as cancelled (its interactions closed, the trace, the store, the
    ``cancelled`` event); returns the error to raise."""
    state = run.state
    _close_interactions(run, cancelled.reason)
    state.status = "cancelled"
    run.tracer.run_ended("cancelled", cancelled)
    run.persist()
    run.emit(CancelledEvent(run_id=state.run_id, reason=cancelled.reason, usage=state.usage))
    return cancelled


async def _run_error_hooks(run: AgentRun, error: BaseException) -> str | None:
    """Call every hook's ``on_run_error``; the reason of the first that returned
    ``run.cancel(reason)`` (the run then ends cancelled instead of failed, as in Anvia)."""
    # (the messages of a MaxTurnsError, as Anvia's hook gets them: with the unread steered)
    messages = error.messages if isinstance(error, MaxTurnsError) else run.state.messages
    event = RunErrorEvent(error, run.state.usage, list(messages), RUN_CONTROL)
    reason: str | None = None
    for hook in run.request.active_hooks:
        try:
            action = await call_hook(hook, "on_run_error", event)
        # A failing error hook must not mask the run's error (nor leave the run's task).
        except (Exception, SystemExit, KeyboardInterrupt):
            log_failed_hook(hook, "on_run_error", event)
            continue
        if reason is None and isinstance(action, HookAction) and action.type == "cancel":
            reason = action.reason
    return reason


#: Streamed text kept as it is sent: an emoji's halves sent in two deltas are joined, a lone
#: surrogate becomes U+FFFD (see ``StreamedHalves``).
_TEXT_DELTAS = (TextDelta, ReasoningDelta)


async def _complete(
    run: AgentRun, request: CompletionRequest, turn: int, prompt: Message
) -> CompletionResponse:
    """Stream one completion, emitting deltas; retry transient failures before the first event."""
    retries = run.request.retries
    tracer = run.tracer
    entry = tracer.model_call(turn, request, run.state.messages)
    attempt = 0
    while True:
        attempt += 1
        accumulator = CompletionAccumulator()
        emitted = False  # an event was passed on: the call is not made again
        observed = False  # the provider sent anything at all: not made again either (Anvia)
        announced: set[str] = set()
        halves = StreamedHalves()
        token = tracer.attempt(entry, attempt)
        add = accumulator.add
        add_text = accumulator.text_parts.append
        emit_text = run.emit_text
        text_delta, text = TextDelta, str  # locals: read once per delta
        try:
            # (a request the model sends itself within the call is retried as this one is)
            under_way = CallRetries(
                retries, turn, retried=functools.partial(tracer.retried, entry, token)
            )
            policy = CALL_RETRIES.set(under_way)
            try:
                async for event in run.request.agent.model.stream(request):
                    # The per-delta path: a text delta (a plain string, the cheapest kind, or a
                    # TextDelta) goes on as its text, with no check and no event built.
                    if type(event) is text_delta and type(event.delta) is text:
                        event = event.delta
                    if type(event) is text:
                        if not event.isascii() or halves.held:  # (see _TEXT_DELTAS)
                            event = halves.text("text_delta", event)
                            if not event:
                                observed = True  # (a half held back: the provider sent it)
                                continue
                        add_text(event)
                        if not emitted:
                            tracer.first_token(entry)
                            emitted = True
                        emit_text(turn, event)
                        continue
                    observed = True
                    if isinstance(event, _TEXT_DELTAS) and (
                        not event.delta.isascii() or halves.held
                    ):
                        delta = halves.text(event.type, event.delta)
                        if not delta:
                            continue
                        event = event.model_copy(update={"delta": delta})
                    elif type(event) is ToolCallDelta:  # (its id, name, text: as a store keeps)
                        fixed = {k: valid_text(v) for k, v in event if type(v) is str}
                        if any(value is not getattr(event, key) for key, value in fixed.items()):
                            event = event.model_copy(update=fixed)
                    event = add(event)  # (a whole call as kept: its own id, valid text)
                    mapped = _map_event(turn, event)
                    if mapped is not None:
                        if not emitted:
                            tracer.first_token(entry)
                            emitted = True
                        run.emit(mapped)
                        if event.type == "tool_call":
                            announced.add(event.id)
                for kind, rest in halves.rest().items():  # a half nothing came to pair
                    kept = (
                        TextDelta(delta=rest)
                        if kind == "text_delta"
                        else ReasoningDelta(delta=rest)
                    )
                    run.emit(_map_event(turn, add(kept)))
                response = accumulator.response()
                tracer.model_call_done(entry, response, token)
                for call in response.tool_calls:  # calls streamed only as deltas
                    if call.id not in announced:
                        run.emit(ToolCallEvent(turn=turn, tool_call=call))
                return response
            except asyncio.CancelledError as cancelled:
                if cancelled_from_outside():
                    raise
                # The model's own code (its client awaited something another piece of code
                # cancelled): the call failed, the run was not stopped.
                raise ModelError(MODEL_CANCELLED, retryable=False) from cancelled
            finally:
                under_way.ended = True
                CALL_RETRIES.reset(policy)
        except (asyncio.CancelledError, KeyboardInterrupt) as stopped:
            # (a KeyboardInterrupt raised in the model's stream stops the run as Stop does)
            for kind, rest in halves.rest().items():  # (kept, as U+FFFD, with what came)
                add(TextDelta(delta=rest) if kind == "text_delta" else ReasoningDelta(delta=rest))
            partial = accumulator.response()
            run.state.usage = run.state.usage + partial.usage  # (tokens it had already cost)
            if isinstance(stopped, KeyboardInterrupt):
                reason = INTERRUPTED_REASON
            else:
                reason = run.state.cancel_reason or DEFAULT_CANCEL_REASON
            tracer.model_call_stopped(entry, reason, partial, token)
            if partial.text or partial.reasoning:
                run.state.messages.append(
                    Message.assistant(partial.text, reasoning=partial.reasoning or None)
                )
            raise
        except GeneratorExit:
            raise  # (the run's coroutine is being closed: nothing more may happen in it)
        except Exception as error:
            # What the failed call reported it cost counts in the run's usage (as in Anvia),
            # once, whether or not it is tried again.
            run.state.usage = run.state.usage + accumulator.response().usage
            context = RetryContext(error, attempt, retries.max_attempts, turn)
            retrying = False
            try:
                retrying = not emitted and not observed and retries.allows(context)
            finally:  # (a should_retry that raises ends the call too)
                tracer.model_call_failed(
                    entry, error, accumulator.response(), token, retrying=retrying
                )
            if retrying:
                try:
                    await asyncio.sleep(retries.delay(attempt, error))
                except asyncio.CancelledError:  # stopped while waiting to try again
                    reason = run.state.cancel_reason or DEFAULT_CANCEL_REASON
                    tracer.model_call_stopped(entry, reason, accumulator.response(), None)
                    raise
                continue
            # Guarded like on_run_error: a failing hook is logged and the model's error stays.
            await call_hooks(
                run.request.active_hooks,
                "on_completion_error",
                CompletionErrorEvent(prompt, error, RUN_CONTROL),
                guarded=True,
                turn=turn,
            )
            raise
        except BaseException as error:
            # (a SystemExit, a library's own BaseException: the run fails with it, so the call
            # failed, not to be retried)
            run.state.usage = run.state.usage + accumulator.response().usage
            failed = RunExitedError(error) if isinstance(error, SystemExit) else error
            tracer.model_call_failed(entry, failed, accumulator.response(), token)
            raise


def _map_event(turn: int, event: Any) -> Any:
    kind = event.type
    if kind == "text_delta":
        return TextDeltaEvent(turn=turn, delta=event.delta)
    if kind == "reasoning_delta":
        return ReasoningDeltaEvent(turn=turn, delta=event.delta)
    if kind == "tool_call_delta":
        return ToolCallDeltaEvent(
            turn=turn, id=event.id, name=event.name, arguments_delta=event.arguments_delta
        )
    if kind == "tool_call":
        return ToolCallEvent(turn=turn, tool_call=event)
    return None
