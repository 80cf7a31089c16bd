"""Hooks: callbacks around a run that can observe, skip a tool, ask for approval or cancel."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from ._util import add_note, maybe_await, quoted
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
    "compose_hooks",
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

    def __post_init__(self) -> None:
        _check_text(f"run.{self.type}", "reason", self.reason, optional=False)


@dataclass(frozen=True)
class ToolCallDecision:
    """What ``on_tool_call`` decided for one call."""

    type: Literal["run", "skip", "cancel", "approval_request"]
    reason: str | None = None
    reject_message: str | None = None

    def __post_init__(self) -> None:
        made_by = "tool." + ("request_approval" if self.type == "approval_request" else self.type)
        _check_text(made_by, "reason", self.reason)
        _check_text(made_by, "reject_message", self.reject_message)


def _check_text(made_by: str, name: str, value: object, *, optional: bool = True) -> None:
    """A hook's reason or reject message is a text (refused at once, where the hook gives it)."""
    if not isinstance(value, str) and not (optional and value is None):
        raise TypeError(f"{made_by}(): the {name} must be a text, not {type(value).__name__}.")


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


#: Callbacks the runtime calls when the outcome is known already: a failing one is logged.
_GUARDED = frozenset(("on_run_error", "on_completion_error", "on_tool_result", "on_tool_error"))


class ComposedHook(Hook):
    """Several hooks acting as one; see :func:`compose_hooks`."""

    def __init__(self, hooks: Sequence[Hook]) -> None:
        for hook in hooks:
            if not isinstance(hook, Hook):
                raise TypeError(f"compose_hooks() takes Hook objects, not {hook!r}")
        self.hooks = tuple(hooks)

    def __repr__(self) -> str:
        return f"compose_hooks({', '.join(repr(h) for h in self.hooks)})"

    async def _each(self, name: str, event: Any) -> HookAction | None:
        for hook in self.hooks:
            try:
                action = await call_hook(hook, name, event)
            except Exception as error:
                if name not in _GUARDED or isinstance(error, PromptCancelledError):
                    raise
                log_failed_hook(hook, name, event)
                continue
            if isinstance(action, HookAction) and action.type == "cancel":
                return action
        return None

    async def on_tool_call(self, event: ToolCallHookEvent) -> Any:
        for hook in self.hooks:
            value = await call_hook(hook, "on_tool_call", event)
            if value is None or (isinstance(value, ToolCallDecision) and value.type == "run"):
                continue
            return value  # the first decision other than run() wins, as in Anvia
        return None

    async def on_run_start(self, event: RunStartEvent) -> Any:
        return await self._each("on_run_start", event)

    async def on_run_end(self, event: RunEndEvent) -> Any:
        return await self._each("on_run_end", event)

    async def on_run_error(self, event: RunErrorEvent) -> Any:
        return await self._each("on_run_error", event)

    async def on_turn_start(self, event: TurnStartHookEvent) -> Any:
        return await self._each("on_turn_start", event)

    async def on_turn_end(self, event: TurnEndHookEvent) -> Any:
        return await self._each("on_turn_end", event)

    async def on_completion_call(self, event: CompletionCallEvent) -> Any:
        return await self._each("on_completion_call", event)

    async def on_completion_response(self, event: CompletionResponseEvent) -> Any:
        return await self._each("on_completion_response", event)

    async def on_completion_error(self, event: CompletionErrorEvent) -> Any:
        return await self._each("on_completion_error", event)

    async def on_tool_result(self, event: ToolResultHookEvent) -> Any:
        return await self._each("on_tool_result", event)

    async def on_tool_error(self, event: ToolErrorEvent) -> Any:
        return await self._each("on_tool_error", event)


def compose_hooks(*hooks: Hook) -> Hook:
    """One hook that calls each of ``hooks`` in order, with the rule ``AgentBuilder.hook()``
    applies to several hooks: for ``on_tool_call`` the first decision other than ``run()``
    wins (the later hooks are not asked); for the other callbacks every hook runs, and the
    first ``run.cancel(...)`` ends the run.

    Use it with ``PromptRequest.with_hook`` (which replaces the agent's hooks for one run) to
    keep an approval hook: ``.with_hook(compose_hooks(approval_hook, audit))``.
    """
    return ComposedHook(hooks)


def _parts(hook: Hook) -> list[Hook]:
    if isinstance(hook, ComposedHook):
        return [part for inner in hook.hooks for part in _parts(inner)]
    return [hook]


def decides_tool_calls(hook: Hook) -> bool:
    """Whether ``hook`` has an ``on_tool_call`` (so it can skip, cancel or request approval)."""
    return any(
        "on_tool_call" in getattr(part, "__dict__", {})
        or type(part).on_tool_call is not Hook.on_tool_call
        for part in _parts(hook)
    )


def dropped_tool_call_hooks(current: Sequence[Hook], replacement: Sequence[Hook]) -> list[Hook]:
    """The hooks of ``current`` with an ``on_tool_call`` that ``replacement`` does not include."""
    kept = {id(part) for hook in replacement for part in _parts(hook)}
    return [
        part
        for hook in current
        for part in _parts(hook)
        if id(part) not in kept and decides_tool_calls(part)
    ]


async def call_hooks(
    hooks: Sequence[Hook], name: str, event: Any, *, guarded: bool = False, turn: int | None = None
) -> list[BaseException]:
    """Call callback ``name`` of every hook, in order (sync or async).

    A callback that returns ``run.cancel(reason)`` ends the run: ``PromptCancelledError``.
    With ``guarded=True`` a callback that raises is logged and the others still run (used where
    the run already has its own outcome: a model error, a tool's result); the errors are
    returned so the caller can report them. ``turn``: the turn, for an event that does not
    say it (a model call's), named with a failing callback (see :func:`call_hook`).
    """
    failures: list[BaseException] = []
    token = HOOK_TURN.set(turn)
    try:
        for hook in hooks:
            try:
                action = await call_hook(hook, name, event)
            except (Exception, SystemExit) as error:  # (an exit is a failing callback too)
                if not guarded or isinstance(error, PromptCancelledError):
                    raise
                log_failed_hook(hook, name, event)
                failures.append(error)
                continue
            if isinstance(action, (HookAction, ToolCallDecision)) and action.type == "cancel":
                # (``tool.cancel(...)`` ends the run as ``run.cancel(...)`` does, as in Anvia)
                raise PromptCancelledError(action.reason or "Cancelled by a hook.")
    finally:
        HOOK_TURN.reset(token)
    return failures


#: Package-internal: the turn of the hook callbacks being called, for an event that does not
#: say it (a model call's): set by :func:`call_hooks` (None for a run's, and in each run's own
#: task: a run started by a hook has none of its starter's), read for a composed hook's parts.
HOOK_TURN: ContextVar[int | None] = ContextVar("anvia_hook_turn", default=None)


async def call_hook(hook: Hook, name: str, event: Any) -> Any:
    """Callback ``name`` of ``hook`` with ``event`` (sync or async), and what it returned.

    What it raises goes on as it is (the run fails with it, as in Anvia), with a note naming
    the callback and the tool call or turn it was called for: the run's error, its traceback
    and the transcript say which hook failed where, not only ``KeyError: 'x'``. (The parts of
    :func:`compose_hooks` are named by the composed hook itself.)
    """
    callback = getattr(hook, name)
    try:
        return await maybe_await(callback(event))
    except (Exception, SystemExit) as error:
        if (
            not isinstance(hook, ComposedHook)
            and not isinstance(error, PromptCancelledError)
            # (the event's own error raised again, as a hook that logs it does: the hook is not
            # where it came from)
            and error is not getattr(event, "error", None)
        ):
            note = hook_note(name, callback, event)
            if note not in (getattr(error, "__notes__", None) or ()):  # (raised again)
                add_note(error, note)
        raise


def hook_note(name: str, callback: Any, event: Any) -> str:
    """The note a failing hook callback's error gets: ``(raised by the on_tool_call hook
    check_refund, for the call 'c1' of the tool 'refund')``."""
    return f"(raised by the {name} hook {_callable_name(callback)}{_called_for(event)})"


def log_failed_hook(hook: Hook, name: str, event: Any) -> None:
    """A callback that failed where the run already has its outcome (see ``guarded``): logged
    with its traceback, naming the callback and what it was called for; the run goes on."""
    callback = getattr(hook, name, None)
    logger.exception(
        "%s hook %s failed%s; the run goes on",
        name,
        _callable_name(callback),
        _called_for(event),
    )


def _callable_name(callback: Any) -> str:
    """A hook callback as a person finds it in their code: ``check_refund``,
    ``AuditHook.on_tool_result``, ``<lambda>``."""
    target = getattr(callback, "func", callback)  # (a functools.partial: its function)
    name = getattr(target, "__qualname__", None)
    if not isinstance(name, str):
        name = getattr(type(target), "__qualname__", None) or repr(target)
    return name


def _called_for(event: Any) -> str:
    """What the callback was called for: the tool call (its tool and id), else the turn (the
    event's, else the one :func:`call_hooks` was given)."""
    tool_name = getattr(event, "tool_name", None)
    if isinstance(tool_name, str):
        call_id = getattr(event, "tool_call_id", None)
        if call_id:
            return f", for the call {quoted(call_id)} of the tool {quoted(tool_name)}"
        args = getattr(event, "args", None)
        return f", for a call of the tool {quoted(tool_name)} with the arguments {quoted(args)}"
    turn = getattr(event, "turn", None)
    if turn is None:
        turn = HOOK_TURN.get()
    return f", at turn {turn}" if isinstance(turn, int) else ""
