"""Exceptions this package raises: one tree under :class:`AnviaError`.

AnviaError
├── MaxTurnsError              the model kept calling tools past the turn limit
├── PromptCancelledError       a hook, Stop, ``cancel()`` or an interrupt ended the run
├── ToolApprovalRequiredError  approval was needed but nothing can decide it
├── RequestAlreadyUsedError    a PromptRequest runs once (also a RuntimeError)
├── DecisionRefusedError       an approval or answer that cannot be taken
├── ToolNotFoundError          the model called a tool the agent does not have (a LookupError)
├── ToolArgumentsError         a call's arguments are not JSON or not valid (a ValueError)
├── ModelError                 a provider failed (anvia_notebook.models)
├── HumanInputTimeout          nobody answered in time (also a TimeoutError)
├── HumanInputUnavailable      a human input cannot take that request (a NotImplementedError)
├── RunStoreError              the run store cannot be used
│   └── RunNotFoundError       no such run (also a KeyError)
│       └── DecisionRunNotFoundError  a decision in no such run (also a DecisionRefusedError)
├── RunOwnedError              another live process owns the run
│   └── RunTakenOverError      another process resumed this process's run: it stopped here
├── SubAgentError              a sub-agent call could not run (too deep, its run had ended)
├── RunEndedError              the run has ended: a message can no longer be steered into it
├── RunExitedError             code the run called raised SystemExit: the run ended instead
├── OutputValidationError      a run's typed output stayed invalid and nobody could fix it
├── ExtractionError            an extractor got no valid data from the model
├── ProtocolError              a widget message that breaks the wire protocol (a ValueError)
└── McpError                   an MCP server cannot be used (anvia_notebook.mcp)
    ├── McpConnectionError     it could not be started or reached, or it went away
    ├── McpToolNameClashError  two tools would have one name
    ├── McpPrivateNetworkError ``mcp.http``/``mcp.sse`` to a private or loopback address
    ├── McpToolError           an MCP tool reported an error (its text is the result)
    ├── McpTimeoutError        an MCP call past its time limit (a TimeoutError)
    ├── McpMalformedResultError a server answered with no valid tool result
    └── McpElicitationStopped  Stop while a person answered a server (answered cancel)

Every exception is defined here; the modules that raise them import them from here (and some
re-export theirs: ``anvia_notebook.models.ModelError``, ``anvia_notebook.HumanInputTimeout``).
One signal is not an error and stays apart: a sync tool abandoned by Stop raises a
``CancelledError`` of its own (``tools.SyncToolAbandoned``).

Each one that also derives from a built-in exception keeps it, so ``except ValueError`` (say)
written before it joined the tree still catches it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._util import valid_text

if TYPE_CHECKING:
    from .approvals import ToolApprovalRequest
    from .messages import Message, Usage

__all__ = [
    "DEFAULT_CANCEL_REASON",
    "INTERRUPTED_REASON",
    "AnviaError",
    "HumanInputTimeout",
    "HumanInputUnavailable",
    "InvalidModelOutputError",
    "ModelError",
    "EvaluationStoppedError",
    "ExtractionError",
    "OutputValidationError",
    "ProtocolError",
    "McpError",
    "McpConnectionError",
    "McpToolNameClashError",
    "McpPrivateNetworkError",
    "McpToolError",
    "McpTimeoutError",
    "McpMalformedResultError",
    "McpElicitationStopped",
    "is_retryable_status",
    "MaxTurnsError",
    "PromptCancelledError",
    "RequestAlreadyUsedError",
    "ToolApprovalRequiredError",
    "DecisionRefusedError",
    "DecisionRunNotFoundError",
    "RunNotFoundError",
    "RunEndedError",
    "RunExitedError",
    "RunOwnedError",
    "RunStoreError",
    "RunTakenOverError",
    "SubAgentError",
    "ToolArgumentsError",
    "ToolNotFoundError",
]


#: Why a run was stopped when nobody said (Stop, ``cancel()`` without a reason).
DEFAULT_CANCEL_REASON = "Stopped by the user."
#: The reason a run stops with when ``KeyboardInterrupt`` is raised inside it (by code it called:
#: a tool, a hook, a handler, the model's; or by Ctrl-C landing there): the run is stopped as by
#: Stop, not the process or the kernel.
INTERRUPTED_REASON = "Interrupted: a KeyboardInterrupt was raised inside the run."


class AnviaError(Exception):
    """Base class of the errors this package raises for a run."""


class MaxTurnsError(AnviaError):
    """The model still asked for tools after ``max_turns + 2`` model calls (Anvia's count).

    ``messages`` is the conversation so far, ``prompt`` the last turn's prompt, ``usage`` the
    usage of every turn. Messages steered into the run that no model call read (the limit left
    none) come last in ``messages``, as in Anvia: ``agent.prompt(error.messages)`` goes on with
    them as its prompt. (The run's transcript says them "not delivered".)
    """

    def __init__(
        self,
        max_turns: int,
        messages: list[Message],
        prompt: Message | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(f"Reached max turn limit: {max_turns}")
        self.max_turns = max_turns
        self.messages = messages
        self.prompt = prompt
        if usage is None:
            from .messages import Usage  # (imported here: the command line needs no pydantic)

            usage = Usage()
        self.usage = usage


class PromptCancelledError(AnviaError):
    def __init__(self, reason: str, messages: list[Message] | None = None) -> None:
        # (a hook's or Stop's reason may hold a lone surrogate: U+FFFD, as nothing stores it)
        reason = valid_text(reason) if isinstance(reason, str) else reason
        super().__init__(f"Prompt cancelled: {reason}")
        self.reason = reason
        self.messages = messages or []


class ToolApprovalRequiredError(AnviaError):
    """Nothing here could decide the approval: no approval handler or human input, or (``why``)
    the human input could not ask (a :class:`HumanInputUnavailable` saying why)."""

    def __init__(self, request: ToolApprovalRequest, why: str | None = None) -> None:
        if why:
            said = f"Tool approval required for {request.tool_name}: {why.rstrip('.')}."
        else:
            said = (
                f"Tool approval required for {request.tool_name}, but no approval handler or "
                "human input is configured."
            )
        super().__init__(said)
        self.request = request


class RequestAlreadyUsedError(AnviaError, RuntimeError):
    def __init__(self, *_: Any) -> None:
        super().__init__(
            "This PromptRequest has already been used. A request runs once: call "
            "agent.prompt(...) again for a new run."
        )


class DecisionRefusedError(AnviaError):
    """A decision that cannot be taken: already decided, unknown, or invalid (nothing changed)."""


class RunStoreError(AnviaError):
    """The run store cannot be opened or used (damaged, foreign, newer schema, locked, ...)."""


class RunNotFoundError(RunStoreError, KeyError):
    """No run with that id in the run store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "Not found."


class DecisionRunNotFoundError(DecisionRefusedError, RunNotFoundError):
    """A decision in a run the run store does not have: refused as any decision that cannot be
    taken is (``except DecisionRefusedError``), and a run not found (``RunNotFoundError``)."""


class RunOwnedError(AnviaError):
    """The run is owned by another live process (it is still running there)."""


class RunTakenOverError(RunOwnedError):
    """Another process resumed a run this process was running (it judged this one gone: a
    machine that slept past its lease, a clock far off): this process stops the run, before it
    runs another tool or writes over what the new owner stores."""


class SubAgentError(AnviaError):
    """A sub-agent call (``agent.as_tool``) could not run: it would nest deeper than its
    ``max_depth``, or its stored sub-run had ended without an answer. Inside a run it becomes
    that tool call's error result, which the model reads."""


class RunEndedError(AnviaError):
    """The run has completed, failed or been cancelled: a steering message (``RunStore.steer``,
    ``python -m anvia_notebook steer``) can no longer reach it."""


class RunExitedError(AnviaError):
    """Code the run called (a hook, an approval handler, a human input, a model) raised
    ``SystemExit`` (``sys.exit()``, ``exit()``, a command-line parser's error): the run ended
    in error, not the Python process or the kernel. ``code`` is the exit code; ``__cause__``
    the ``SystemExit``. (A tool's ``SystemExit`` is only a failed call the model is told of.)"""

    def __init__(self, exit: SystemExit) -> None:
        self.code = exit.code
        super().__init__(
            f"SystemExit: {exit.code}: code the run called tried to end the Python process; "
            "the run ended instead."
        )
        notes = getattr(exit, "__notes__", None)  # (where it was raised: a hook's name, say)
        if isinstance(notes, list) and notes:
            self.__notes__ = list(notes)


class OutputValidationError(AnviaError):
    """A run with an ``output_type`` could not end with a valid value: the model's last output
    still failed validation after its retries and no approval handler or person was there to
    fix it, or the model never gave a result at all.

    ``errors`` is pydantic's list of errors of the last attempt (empty when the model gave no
    result), ``output`` the model's last raw output (``final_result``'s arguments as JSON text,
    or its text), ``output_type`` the type asked for.
    """

    def __init__(
        self,
        message: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        output: str | None = None,
        output_type: Any = None,
    ) -> None:
        super().__init__(message)
        self.errors = list(errors or [])
        self.output = output
        self.output_type = output_type


class EvaluationStoppedError(AnviaError):
    """Kernel > Interrupt stopped an evaluation in a notebook cell before its end (Stop, the
    report's button, returns the report instead). ``report`` is the :class:`EvalReport`: the
    cases that finished, the others rows that say they did not; each case is a stored run."""

    def __init__(self, report: Any) -> None:
        super().__init__(
            f"Kernel > Interrupt stopped the evaluation: {report.finished} of {report.total} cases "
            "finished. The report keeps them (shown in the cell; in code, this error's "
            "`report`)."
        )
        self.report = report


class ExtractionError(AnviaError):
    """An extractor got no valid data from the model (after its retries); ``__cause__`` and
    ``cause`` hold the last attempt's error."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class ToolNotFoundError(AnviaError, LookupError):
    """The model called a tool the agent does not have (the call's result says so)."""

    def __init__(self, tool_name: str) -> None:
        super().__init__(f"Tool not found: {tool_name}")
        self.tool_name = tool_name


class ToolArgumentsError(AnviaError, ValueError):
    """The model's arguments are not JSON or do not match the tool's input schema."""


class ModelError(AnviaError):
    """A provider failed. ``status_code`` (when known) lets the retry policy classify it.

    ``retryable`` says whether trying the same request again may succeed. By default it follows
    the status: 408, 409, 425, 429 and any 5xx are retryable, anything else (and no status) is
    not. Providers pass ``retryable=True`` for connection errors and timeouts, which have no status.
    ``retry_after`` is the wait in seconds the server asked for before trying again (its
    ``Retry-After`` header), when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = is_retryable_status(status_code) if retryable is None else retryable
        self.retry_after = retry_after


class InvalidModelOutputError(ModelError, ValueError):
    """The model's answer cannot be used as it is (a tool call with no name): a provider's
    fault, so a :class:`ModelError`, and the ``ValueError`` it was raised as before."""


def is_retryable_status(status_code: int | None) -> bool:
    """Whether an HTTP status means "try again": 408, 409, 425, 429 and any 5xx."""
    if status_code is None:
        return False
    return status_code in (408, 409, 425, 429) or status_code >= 500


class HumanInputTimeout(AnviaError, TimeoutError):
    """Nobody answered in time; the runtime records ``timed_out`` and rejects the call."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"No answer from the operator within {timeout:g} s.")
        self.timeout = timeout


class HumanInputUnavailable(AnviaError, NotImplementedError):
    """This human input cannot handle that kind of request (approval or question)."""


class ProtocolError(AnviaError, ValueError):
    """A widget message that is not valid under the wire protocol; ``request_id`` when one
    could be read (the reply goes to it)."""

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


class McpError(AnviaError):
    """An MCP server cannot be used."""


class McpConnectionError(McpError, ConnectionError):
    """An MCP server could not be started or reached, or went away during a call."""


class McpToolNameClashError(McpError, ValueError):
    """An MCP server's tool has the name of another tool of the agent (or of another server)."""


class McpPrivateNetworkError(McpError, ValueError):
    """``mcp.http`` or ``mcp.sse`` to a private, loopback or link-local address, refused
    unless ``allow_private_network=True``."""


class McpToolError(McpError):
    """An MCP tool reported an error (``isError``); its text is the call's error result.

    ``error_type`` says how the call failed, as OpenTelemetry's ``error.type`` names it on the
    call's ``execute_tool`` span: ``"tool_error"`` when the server answered with a result
    marked ``isError``, the JSON-RPC error code (``"-32602"``) when it answered the call with
    an error, None otherwise (the span then names this class).
    """

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type


class McpTimeoutError(McpError, TimeoutError):
    """An MCP tool call got no result (and no progress) within its time limit."""


class McpMalformedResultError(McpError, ValueError):
    """An MCP server answered a call with something that is not a valid tool result."""


class McpElicitationStopped(McpError):
    """The run stopped an MCP call while the person was asked for the server's input; the
    server is answered ``cancel`` (used inside ``anvia_notebook.mcp``)."""
