"""Hooks: callbacks around a run that can observe, skip a tool, ask for approval or cancel."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._util import maybe_await
from .errors import PromptCancelledError
from .messages import Message, Usage
from .models.base import CompletionRequest, CompletionResponse

__all__ = [
    "CompletionCallEvent",
    "CompletionErrorEvent",
    "CompletionResponseEvent",
    "Hook",
    "HookAction",
    "RunControl",
    "RunEndEvent",
    "RunErrorEvent",
    "RunStartEvent",
    "ToolCallControl",
    "ToolCallDecision",
    "ToolCallHookEvent",
    "ToolErrorEvent",
    "ToolResultHookEvent",
    "TurnEndHookEvent",
    "TurnStartHookEvent",
    "create_hook",
    "call_hooks",
    "HOOK_CALLBACKS",
]

logger = logging.getLogger("anvia_notebook")

HOOK_CALLBACKS = (
    "on_run_start",
    "on_run_end",
    "on_run_error",
    "on_turn_start",
    "on_turn_end",
    "on_completion_call",
    "on_completion_response",
    "on_completion_error",
    "on_tool_call",
    "on_tool_result",
    "on_tool_error",
)


@dataclass(frozen=True)
class HookAction:
    """What a lifecycle callback returned: continue, or cancel the run with a reason."""

    type: Literal["continue", "cancel"]
    reason: str = ""


@dataclass(frozen=True)
class ToolCallDecision:
    """What ``on_tool_call`` decided for one call."""

    type: Literal["run", "skip", "cancel", "approval_request"]
    reason: str | None = None
    reject_message: str | None = None


class RunControl:
    """Passed as ``run`` to lifecycle callbacks: ``return run.cancel("why")`` ends the run."""

    def cancel(self, reason: str) -> HookAction:
        return HookAction("cancel", reason)

    def continue_(self) -> HookAction:
        return HookAction("continue")


class ToolCallControl:
    """Passed as ``tool`` to ``on_tool_call``; its methods return the decision to return."""

    def run(self) -> ToolCallDecision:
        return ToolCallDecision("run")

    def skip(self, reason: str) -> ToolCallDecision:
        return ToolCallDecision("skip", reason)

    def cancel(self, reason: str) -> ToolCallDecision:
        return ToolCallDecision("cancel", reason)

    def request_approval(
        self, reason: str | None = None, reject_message: str | None = None
    ) -> ToolCallDecision:
        return ToolCallDecision("approval_request", reason, reject_message)


RUN_CONTROL = RunControl()
TOOL_CALL_CONTROL = ToolCallControl()


@dataclass(frozen=True)
class RunStartEvent:
    prompt: Message
    history: list[Message]
    max_turns: int
    run: RunControl


@dataclass(frozen=True)
class RunEndEvent:
    output: str
    usage: Usage
    messages: list[Message]
    run: RunControl


@dataclass(frozen=True)
class RunErrorEvent:
    error: BaseException
    usage: Usage
    messages: list[Message]
    run: RunControl


@dataclass(frozen=True)
class TurnStartHookEvent:
    turn: int
    prompt: Message
    history: list[Message]
    run: RunControl


@dataclass(frozen=True)
class TurnEndHookEvent:
    turn: int
    response: CompletionResponse
    run: RunControl


@dataclass(frozen=True)
class CompletionCallEvent:
    prompt: Message
    history: list[Message]
    request: CompletionRequest
    run: RunControl


@dataclass(frozen=True)
class CompletionResponseEvent:
    prompt: Message
    response: CompletionResponse
    run: RunControl


@dataclass(frozen=True)
class CompletionErrorEvent:
    prompt: Message
    error: BaseException
    run: RunControl


@dataclass(frozen=True)
class ToolCallHookEvent:
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    args: str
    tool: ToolCallControl


@dataclass(frozen=True)
class ToolResultHookEvent:
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    args: str
    result: str
    run: RunControl


@dataclass(frozen=True)
class ToolErrorEvent:
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    args: str
    error: BaseException
    run: RunControl


class Hook:
    """Subclass and override any callback (sync or ``async``); returning ``None`` continues."""

    def on_run_start(self, event: RunStartEvent) -> Any:
        return None

    def on_run_end(self, event: RunEndEvent) -> Any:
        return None

    def on_run_error(self, event: RunErrorEvent) -> Any:
        return None

    def on_turn_start(self, event: TurnStartHookEvent) -> Any:
        return None

    def on_turn_end(self, event: TurnEndHookEvent) -> Any:
        return None

    def on_completion_call(self, event: CompletionCallEvent) -> Any:
        return None

    def on_completion_response(self, event: CompletionResponseEvent) -> Any:
        return None

    def on_completion_error(self, event: CompletionErrorEvent) -> Any:
        return None

    def on_tool_call(self, event: ToolCallHookEvent) -> Any:
        return None

    def on_tool_result(self, event: ToolResultHookEvent) -> Any:
        return None

    def on_tool_error(self, event: ToolErrorEvent) -> Any:
        return None


class _CallbackHook(Hook):
    def __init__(self, callbacks: dict[str, Callable[[Any], Any]]) -> None:
        for key, callback in callbacks.items():
            setattr(self, key, callback)
        self._names = sorted(callbacks)

    def __repr__(self) -> str:
        return f"create_hook({', '.join(self._names)})"


def create_hook(**callbacks: Callable[[Any], Any]) -> Hook:
    """Build a :class:`Hook` from keyword callbacks such as ``on_tool_call=...``."""
    unknown = sorted(set(callbacks) - set(HOOK_CALLBACKS))
    if unknown:
        raise TypeError(
            f"Unknown hook callback(s): {', '.join(unknown)}. Known: {', '.join(HOOK_CALLBACKS)}."
        )
    for key, callback in callbacks.items():
        if not callable(callback):
            raise TypeError(f"Hook callback {key} must be callable.")
    return _CallbackHook(callbacks)


async def call_hooks(
    hooks: Sequence[Hook], name: str, event: Any, *, guarded: bool = False
) -> list[BaseException]:
    """Call callback ``name`` of every hook, in order (sync or async).

    A callback that returns ``run.cancel(reason)`` ends the run: ``PromptCancelledError``.
    With ``guarded=True`` a callback that raises is logged and the others still run (used where
    the run already has its own outcome: a model error, a tool's result); the errors are
    returned so the caller can report them.
    """
    failures: list[BaseException] = []
    for hook in hooks:
        try:
            action = await maybe_await(getattr(hook, name)(event))
        except Exception as error:
            if not guarded or isinstance(error, PromptCancelledError):
                raise
            logger.exception("%s hook %r failed", name, hook)
            failures.append(error)
            continue
        if isinstance(action, HookAction) and action.type == "cancel":
            raise PromptCancelledError(action.reason)
    return failures
