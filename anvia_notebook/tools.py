"""Tools: a pydantic input schema, optional output schema and approval policy, ``execute``."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import os
import re
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ._sync_pool import SyncToolExecutor
from ._util import MAX_ARGUMENT_DEPTH, add_note, normalize_result, not_a_json_number, too_deep
from .approvals import ToolApproval
from .errors import ToolArgumentsError
from .models.base import ToolDefinition
from .question_types import describe_validation_error
from .run_info import RunInfo

__all__ = ["Tool", "ToolArgumentsError", "ToolContext", "create_tool", "parse_arguments", "tool"]


@dataclass(frozen=True)
class ToolContext:
    """What ``execute`` gets besides its arguments."""

    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    raw_args: str
    run: RunInfo


class Tool:
    """A tool the model can call. Build one with :func:`create_tool` or :func:`tool`."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input: type[BaseModel],
        execute: Callable[..., Any],
        output: type[BaseModel] | None = None,
        approval: ToolApproval | None = None,
        idempotent: bool = False,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"A tool's name must be a text, not {type(name).__name__}.")
        if not name.strip():
            raise ValueError("A tool needs a non-empty name.")
        if not isinstance(description, str):
            raise TypeError(
                f"The description of tool {name!r} must be a text (the model reads it to choose "
                f"the tool), not {type(description).__name__}."
            )
        if not (isinstance(input, type) and issubclass(input, BaseModel)) or input is BaseModel:
            raise TypeError(
                "`input` must be a pydantic model class of the tool's own (a subclass of "
                "BaseModel with its fields, `class Input(BaseModel): ...`)."
            )
        if output is not None and not (isinstance(output, type) and issubclass(output, BaseModel)):
            raise TypeError("`output` must be a pydantic model class or None.")
        if approval is not None and not isinstance(approval, ToolApproval):
            raise TypeError(
                "`approval` must be a ToolApproval or None, not "
                f"{type(approval).__name__}: approval=ToolApproval() asks before every call, "
                "ToolApproval(when=...) only when its predicate says so."
            )
        if not callable(execute):
            raise TypeError(f"`execute` must be a function, not {type(execute).__name__}.")
        if not isinstance(idempotent, bool):
            raise TypeError(f"`idempotent` must be True or False, not {idempotent!r}.")
        self.name = name
        self.description = description
        self.input = input
        self.output = output
        self.approval = approval
        #: Safe to run again: a resumed run re-runs a call of this tool that was interrupted
        #: after it had started (otherwise the model is told it was interrupted).
        self.idempotent = idempotent
        self._is_async = inspect.iscoroutinefunction(execute)
        self._execute = execute if _takes_context(execute) else _without_context(execute)
        #: Built on first use (the JSON schema costs time that importing a module of tools,
        #: ``ask_question``'s included, need not pay).
        self._definition: ToolDefinition | None = None

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"

    def definition(self) -> ToolDefinition:
        """What the model sees: name, description and the input model's JSON schema."""
        if self._definition is None:
            try:
                parameters = self.input.model_json_schema()
            except Exception as error:  # (a field JSON Schema cannot describe: say whose)
                add_note(
                    error,
                    f"(the JSON Schema of the input model {self.input.__name__} of the tool "
                    f"{self.name!r}, which the model reads: give its fields types JSON can "
                    "describe)",
                )
                raise
            self._definition = ToolDefinition(
                name=self.name, description=self.description, parameters=parameters
            )
        return self._definition

    def parse_args(self, raw: str | dict[str, Any]) -> BaseModel:
        """Validate raw arguments (JSON text or a dict); raises :class:`ToolArgumentsError`."""
        return parse_arguments(self.name, self.input, raw)

    async def call(
        self, args: BaseModel | dict[str, Any] | str, ctx: ToolContext | None = None
    ) -> str:
        """Run ``execute`` and normalise its result. ``args`` given as a dict or JSON text are
        validated first, as Anvia's ``tool.call`` does (:class:`ToolArgumentsError` when they do
        not fit); ``ctx`` is None outside a run.

        A sync ``execute`` runs on a worker thread of :data:`SYNC_TOOL_EXECUTOR`. It cannot be
        interrupted, so when the call is cancelled while it runs it gets
        :data:`SYNC_TOOL_STOP_GRACE` seconds to finish: if it does, its real result is returned;
        otherwise :class:`SyncToolAbandoned` (a ``CancelledError``) is raised and the thread
        finishes on its own without holding a worker slot.
        """
        if not isinstance(args, BaseModel):
            args = self.parse_args(args)
        waiting_for_a_thread = False  # (this call's own sync execute, not started yet)
        try:
            if self._is_async:
                value = await self._execute(args, ctx)
            else:
                waiting_for_a_thread = True
                value = await _call_sync(self._execute, args, ctx)
                waiting_for_a_thread = False
            if inspect.isawaitable(value):  # (a coroutine returned, not awaited)
                value = await value
            if inspect.isasyncgen(value):  # (an async generator: what it yields, as a list)
                value = [item async for item in value]
            elif inspect.isgenerator(value):  # (returned by an async execute: read here)
                value = list(value)
        except SyncToolNotStarted:
            if waiting_for_a_thread:
                raise
            # Another tool this one called had not started: this one had, and was cut short.
            raise asyncio.CancelledError("cancelled") from None
        except Exception as error:
            clearer = _explained(error)
            if clearer is None:
                raise
            raise clearer from error
        if self.output is not None:
            value = (
                value
                if isinstance(value, self.output)
                else self.output.model_validate(
                    value.model_dump() if isinstance(value, BaseModel) else value
                )
            )
        return normalize_result(value)


def _takes_context(execute: Callable[..., Any]) -> bool:
    """Whether ``execute`` takes ``(args, ctx)``; one that takes only ``(args)`` is called so
    (as a JavaScript ``execute`` in Anvia ignores the context it is not written to take)."""
    try:
        signature = inspect.signature(execute)
    except (TypeError, ValueError):  # (a built-in without a signature: as documented)
        return True
    try:
        signature.bind(None, None)
        return True
    except TypeError:
        pass
    try:
        signature.bind(None)
    except TypeError:
        raise TypeError(
            f"`execute` must take the arguments and the context, execute(args, ctx) (or only "
            f"the arguments, execute(args)); {getattr(execute, '__name__', 'it')}"
            f"{signature} cannot be called so."
        ) from None
    return False


def _function_name(function: Callable[..., Any]) -> str:
    """The tool name ``@tool`` gives ``function`` (a partial's function's; a callable
    object's class's), refusing a lambda's, which names nothing."""
    target = function
    while isinstance(target, functools.partial):
        target = target.func
    found = getattr(target, "__name__", None) or type(target).__name__
    if found == "<lambda>":
        raise ValueError("A lambda has no name for the model to call it by: @tool(name=...).")
    return found


def _called(function: Callable[..., Any]) -> Any:
    """What calling ``function`` runs: a partial's function, a class's ``__init__``, a
    callable object's ``__call__``; a function or method itself."""
    target: Any = function
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.isclass(target):
        return target.__init__
    if not inspect.isroutine(target):
        return type(target).__call__
    return target


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    """The annotations of what ``function`` calls (a partial's function, a callable object's
    ``__call__``), ``Annotated`` kept: its ``Field(...)`` constraints are the model's too."""
    try:
        return get_type_hints(_called(function), include_extras=True)
    except TypeError:  # (a built-in: no annotations to read)
        return {}


def _is_context(annotation: Any) -> bool:
    """A parameter that receives the :class:`ToolContext`: annotated ``ToolContext``, also
    as ``ToolContext | None`` or in ``Annotated`` (else the model would be asked for it)."""
    if annotation is ToolContext:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_context(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        return len(rest) == 1 and _is_context(rest[0])
    return False


def _without_context(execute: Callable[..., Any]) -> Callable[..., Any]:
    """``execute(args)`` as the two-argument function a tool calls (async if it is)."""
    if inspect.iscoroutinefunction(execute):

        async def call_async(args: Any, ctx: Any) -> Any:
            return await execute(args)

        return call_async

    def call(args: Any, ctx: Any) -> Any:
        return execute(args)

    return call


def decode_arguments(tool_name: str, raw: str | dict[str, Any]) -> Any:
    """Raw arguments as data: JSON text decoded (blank text is ``{}``), a dict as it is; text
    that is not JSON, or data nested more than :data:`~anvia_notebook._util.MAX_ARGUMENT_DEPTH`
    levels deep, raises :class:`ToolArgumentsError` with a reason the model can act on."""
    data = raw if not isinstance(raw, str) else _json_arguments(tool_name, raw)
    if too_deep(data):
        raise ToolArgumentsError(
            f"Invalid arguments for tool {tool_name}: nested more than {MAX_ARGUMENT_DEPTH} "
            "levels deep. Call the tool again with flatter arguments."
        )
    return data


def _json_arguments(tool_name: str, raw: str) -> Any:
    try:
        return json.loads(raw, parse_constant=not_a_json_number) if raw.strip() else {}
    except json.JSONDecodeError as error:
        why = str(error)  # (its own words: "Expecting value: line 1 column 1 (char 0)")
    except (ValueError, RecursionError) as error:
        why = str(error) if isinstance(error, ValueError) else "nested too deeply"
    raise ToolArgumentsError(
        f"Invalid arguments for tool {tool_name}: not valid JSON ({why}). Call the tool again "
        "with a JSON object."
    )


def parse_arguments(tool_name: str, model: type[BaseModel], raw: str | dict[str, Any]) -> BaseModel:
    """Validate raw arguments (JSON text or a dict) against ``model``; raises
    :class:`ToolArgumentsError` with a reason the model can act on."""
    data = decode_arguments(tool_name, raw)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ToolArgumentsError(
            f"Invalid arguments for tool {tool_name}: {describe_validation_error(error)}. "
            "Call the tool again with corrected arguments."
        ) from None


#: Set by whoever starts a run, in the run's context (its tool calls inherit it): called with
#: the exception a tool raised, it returns one that says more to raise in its place (what the
#: model and the transcript are told), or None to keep the tool's own. The notebook layer sets it
#: for a run that goes on after its cell has finished, where ``input()`` cannot be answered.
EXPLAIN_TOOL_ERROR: contextvars.ContextVar[Callable[[Exception], Exception | None] | None] = (
    contextvars.ContextVar("anvia_explain_tool_error", default=None)
)


def _explained(error: Exception) -> Exception | None:
    """What :data:`EXPLAIN_TOOL_ERROR` makes of ``error`` (None: keep it as it is)."""
    explain = EXPLAIN_TOOL_ERROR.get()
    if explain is None:
        return None
    try:
        clearer = explain(error)
    except Exception:  # the tool's own error stays what the model is told
        return None
    return clearer if isinstance(clearer, Exception) and clearer is not error else None


#: The worker threads of sync tools (their own, bounded; stopped calls do not starve new ones).
SYNC_TOOL_EXECUTOR = SyncToolExecutor()
#: Seconds a running sync tool may take to finish after its call was cancelled (Stop): a tool
#: that finishes in time reports its real result instead of being called cancelled.
SYNC_TOOL_STOP_GRACE = 1.0


class SyncToolAbandoned(asyncio.CancelledError):
    """A sync tool was still running when its call was cancelled; its thread goes on alone,
    so its side effects may still happen."""


class SyncToolNotStarted(asyncio.CancelledError):
    """A sync tool's call was cancelled while it waited for a worker thread: it never ran."""


def _drained(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)``; a generator it returns (a generator function's body runs only when
    it is read) read to its end here, on the worker thread, as a list of what it yielded."""
    value = function(*args)
    return list(value) if inspect.isgenerator(value) else value


async def _call_sync(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` on a sync tool worker (with this context), as described in
    :meth:`Tool.call`."""
    context = contextvars.copy_context()
    job = SYNC_TOOL_EXECUTOR.submit(functools.partial(context.run, _drained, function, *args))
    waiter = asyncio.wrap_future(job.future)
    waiter.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "unretrieved"
    try:
        return await asyncio.shield(waiter)
    except asyncio.CancelledError:
        if SYNC_TOOL_EXECUTOR.cancel_waiting(job):
            raise SyncToolNotStarted("cancelled before it started") from None  # it never runs
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNC_TOOL_STOP_GRACE
        while not waiter.done() and loop.time() < deadline:
            try:  # a second Stop does not cut the grace short; the deadline bounds it
                await asyncio.wait({waiter}, timeout=deadline - loop.time())
            except asyncio.CancelledError:
                continue
        if waiter.done() and not waiter.cancelled():
            return waiter.result()  # it finished: the call did happen, report what it did
        SYNC_TOOL_EXECUTOR.abandon(job)
        raise SyncToolAbandoned(
            "the run was stopped while this sync tool was still running on its worker thread"
        ) from None


def create_tool(
    *,
    name: str,
    description: str,
    input: type[BaseModel],
    execute: Callable[..., Any],
    output: type[BaseModel] | None = None,
    approval: ToolApproval | None = None,
    idempotent: bool = False,
) -> Tool:
    """Build a :class:`Tool`. ``execute(args, ctx)`` may be a plain or an ``async`` function.

    ``idempotent=True`` says the tool is safe to run twice: a resumed run re-runs a call of it
    that had started when the run was interrupted.
    """
    warn_unsendable_name(name)
    return Tool(
        name=name,
        description=description,
        input=input,
        output=output,
        approval=approval,
        execute=execute,
        idempotent=idempotent,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    approval: ToolApproval | None = None,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    approval: ToolApproval | None = None,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Build a :class:`Tool` from an annotated function.

    Parameters become the input model (a parameter annotated :class:`ToolContext` receives the
    context instead), the docstring becomes the description.
    """

    def build(function: Callable[..., Any]) -> Tool:
        return _tool_from_function(function, name, description, approval, idempotent)

    return build(fn) if fn is not None else build


#: The package's folder: a warning is told at the first frame outside it.
_PACKAGE_FOLDER = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _warn(message: str) -> None:
    """A ``UserWarning`` told where the user's code made the tool (the first frame outside the
    package: ``agent.as_tool()`` and ``create_question_tool()`` make theirs through it too)."""
    level = 2
    here = inspect.currentframe()
    frame: types.FrameType | None = here.f_back if here is not None else None
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _PACKAGE_FOLDER
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


#: The tool names OpenAI's and Anthropic's APIs take.
_SENDABLE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def sendable_name(name: str) -> bool:
    """Whether OpenAI and Anthropic take ``name`` as a tool's name (package-internal: MCP
    tools are checked with it too)."""
    return _SENDABLE_NAME.fullmatch(name) is not None


def warn_unsendable_name(name: Any) -> None:
    """Say at once that OpenAI and Anthropic would refuse the name (their error would come at
    the first model call, far from here); other servers may take it, so it is not refused.
    (Package-internal: a sub-agent's and a question tool's names are checked with it too.)"""
    if isinstance(name, str) and name.strip() and not sendable_name(name):
        _warn(
            f"Tool name {name!r}: OpenAI and Anthropic take only letters, digits, _ and - (at "
            "most 64), and refuse the whole request otherwise. Rename it, e.g. "
            f"{re.sub(r'[^A-Za-z0-9_-]+', '_', name).strip('_')[:64] or 'my_tool'!r}."
        )


def _warn_unexplained(tool_name: str, unannotated: list[str], description: str) -> None:
    """Say what the model will not know: a parameter's type (it may send a text "1" for a
    number: nothing converts it) and what the tool is for."""
    if unannotated:
        names = ", ".join(unannotated)
        many = len(unannotated) > 1
        have = f"parameters {names} have" if many else f"parameter {names} has"
        context = [n for n in unannotated if n in ("ctx", "context")]
        hint = (
            f" ({context[0]}: ToolContext is the run's context, which the model does not give)"
            if context
            else ""
        )
        _warn(
            f"@tool: {tool_name}'s {have} no type hint, so the model may send "
            f"any JSON for {'them' if many else 'it'} and nothing is checked or converted. "
            f"Annotate {'them' if many else 'it'} (x: int), or "
            f"x: Any to take anything{hint}."
        )
    if not description.strip():
        _warn(
            f"@tool: {tool_name} has no docstring, so the model reads no description of what it "
            "does. Add a docstring, or @tool(description=...)."
        )


def _tool_from_function(
    function: Callable[..., Any],
    name: str | None,
    description: str | None,
    approval: ToolApproval | None,
    idempotent: bool = False,
) -> Tool:
    if not callable(function):
        raise TypeError(f"@tool makes a tool of a function, not of {type(function).__name__}.")
    tool_name = name if name is not None else _function_name(function)
    if name is not None:
        warn_unsendable_name(name)
    signature = inspect.signature(function)
    hints = _type_hints(function)
    bound = function.keywords if isinstance(function, functools.partial) else {}
    fields: dict[str, Any] = {}
    context_param: str | None = None
    unannotated: list[str] = []
    for param in signature.parameters.values():
        if param.name in bound:
            continue  # given by the partial: not the model's to choose
        if param.name not in hints and param.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            unannotated.append(param.name)
        annotation = hints.get(param.name, Any)
        if _is_context(annotation):
            context_param = param.name
            continue
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"@tool does not support *args or **kwargs ({tool_name}).")
        if param.name.startswith("_"):
            raise TypeError(
                f"@tool: parameter {param.name!r} of {tool_name} starts with an underscore, "
                "which pydantic keeps private: the model could never give it. Rename it."
            )
        if param.name == "model_config" or (
            param.name.startswith("model_") and hasattr(BaseModel, param.name)
        ):
            raise TypeError(
                f"@tool: parameter {param.name!r} of {tool_name} is a name pydantic keeps for "
                "its own use: the model could never give it. Rename it, or write the tool "
                f"with create_tool and an input model whose field has "
                f"Field(alias={param.name!r})."
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.title() for part in tool_name.split("_")) + "Input"
    input_model = create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    doc = inspect.getdoc(_called(function)) or inspect.getdoc(function) or ""
    _warn_unexplained(tool_name, unannotated, doc if description is None else description)
    positional = [
        param.name
        for param in signature.parameters.values()
        if param.kind is inspect.Parameter.POSITIONAL_ONLY
    ]

    def call_with(args: BaseModel, ctx: ToolContext) -> Any:
        kwargs = {key: getattr(args, key) for key in fields}
        if context_param is not None:
            kwargs[context_param] = ctx
        leading = [kwargs.pop(key) for key in positional]
        return function(*leading, **kwargs)

    execute: Callable[..., Any]
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__
    ):

        async def execute(args: BaseModel, ctx: ToolContext) -> Any:
            return await call_with(args, ctx)
    else:
        execute = call_with
    functools.update_wrapper(execute, function)
    # Named and documented as the function, but called as (args, ctx): without this, the
    # tool's check of how to call ``execute`` would read the function's own parameters.
    del execute.__wrapped__  # type: ignore[union-attr]
    execute.__name__ = tool_name
    return Tool(
        name=tool_name,
        description=description if description is not None else doc,
        input=input_model,
        execute=execute,
        approval=approval,
        idempotent=idempotent,
    )
