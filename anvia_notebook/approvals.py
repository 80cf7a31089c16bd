"""Approval policies, requests and decisions."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ._positional import PositionalFields
from ._util import add_note, maybe_await, quoted
from .records import DEFAULT_REJECT_MESSAGE, DecidedVia
from .run_info import RunInfo

__all__ = [
    "ApprovalContext",
    "ApprovalDecision",
    "ApprovalHandler",
    "RunInfo",
    "ToolApproval",
    "ToolApprovalRequest",
    "DEFAULT_REJECT_MESSAGE",
]


ArgsT = TypeVar("ArgsT")


@dataclass
class ApprovalContext(Generic[ArgsT]):
    """What an approval policy sees: the call, its validated ``args`` and its raw JSON."""

    tool_name: str
    args: ArgsT
    raw_args: str
    tool_call_id: str | None
    internal_call_id: str
    run: RunInfo


@dataclass
class ToolApprovalRequest(ApprovalContext[Any]):
    """An approval to decide: the context plus the reason and the reject message.

    ``approval_id`` is the id of the :class:`~anvia_notebook.events.ApprovalRecord` that the
    ``tool_approval_request`` event carried, so a UI can match its answer to it.
    """

    reason: str | None = None
    reject_message: str | None = None
    approval_id: str = ""
    #: The tool's input model and (when it has its own) JSON Schema, so edited arguments can be
    #: validated: the schema is kept with the interaction for deciders in other processes.
    input_model: type[BaseModel] | None = field(default=None, repr=False)
    args_schema: dict[str, Any] | None = field(default=None, repr=False)
    #: The arguments failed validation (a typed output): approving needs a valid fix.
    fix_required: bool = False


#: Values JSON has as they are.
_JSON_LEAVES = (str, int, float, bool, type(None))


def edited_args_data(value: Any) -> Any:
    """Edited arguments as JSON data: given as the tool's input model
    (``request.args.model_copy(...)``), its fields; a dict holding models (at any depth), with
    those as their fields. Anything else as it is (the decision's check refuses what is not
    JSON: keys that are not texts, an object that holds itself, ...)."""
    return _models_as_data(value, 64, {})


def _models_as_data(value: Any, depth: int, done: dict[int, Any]) -> Any:
    """``value`` with its models as their fields, to ``depth`` levels; a container without
    models is ``value`` itself. Each container is looked into once (``done``, by id): one held
    many times, or holding itself, costs no more."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if not isinstance(value, (dict, list, tuple, *_JSON_LEAVES)):
        # A value pydantic writes as JSON (a Decimal, a date, a UUID, a set, an Enum...): as
        # it writes it, which the tool's model reads back; anything else stays, to be refused.
        try:
            return to_jsonable_python(value)
        except (PydanticSerializationError, ValueError, TypeError):
            return value
    if depth <= 0 or not isinstance(value, (dict, list, tuple)):
        return value
    if id(value) in done:
        return done[id(value)]
    done[id(value)] = value  # (while it is looked into: itself)
    items = list(value.items() if isinstance(value, dict) else enumerate(value))
    converted = {key: _models_as_data(item, depth - 1, done) for key, item in items}
    if all(converted[key] is item for key, item in items):
        return value
    done[id(value)] = new = converted if isinstance(value, dict) else list(converted.values())
    return new


class ApprovalDecision(PositionalFields):
    """A decision on one approval. ``args`` (with an approval) replaces the call's arguments."""

    model_config = ConfigDict(defer_build=True)
    #: ``ApprovalDecision(approved, reason=None, reject_message=None, args=None)``, as the docs
    #: write it: these four may be given by position; ``decided_by`` by name only.
    positional = ("approved", "reason", "reject_message", "args")

    approved: bool
    reason: str | None = None
    reject_message: str | None = None
    args: dict[str, Any] | None = None
    #: Who decided, as recorded on the ``ApprovalRecord`` (default ``"handler"`` for an approval
    #: handler, ``"human"`` for a human input); e.g. ``"policy"`` for an "always allow" rule.
    decided_by: str | None = None
    #: Where it was decided, as recorded (default ``"handler"`` or ``"human_input"``); e.g.
    #: ``"widget"`` for an "Always allow" ticked there.
    decided_via: DecidedVia | None = None

    @field_validator("args", mode="before")
    @classmethod
    def _model_as_dict(cls, value: Any) -> Any:
        """Edited arguments given as the tool's input model (``request.args.model_copy(...)``)
        are taken as its fields (see :func:`edited_args_data`)."""
        return edited_args_data(value)

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(
            self,
            approved: bool,
            reason: str | None = None,
            reject_message: str | None = None,
            args: dict[str, Any] | None = None,
            *,
            decided_by: str | None = None,
            decided_via: DecidedVia | None = None,
        ) -> None: ...


ApprovalHandler = Callable[
    [ToolApprovalRequest],
    bool | ApprovalDecision | Awaitable[bool | ApprovalDecision],
]

TextOrFn = str | Callable[[ApprovalContext[Any]], str | Awaitable[str]] | None
WhenFn = bool | Callable[[ApprovalContext[Any]], bool | Awaitable[bool]]


@dataclass(frozen=True)
class ToolApproval:
    """A tool's approval policy.

    ``when`` is a bool or a (sync or async) predicate of the :class:`ApprovalContext`;
    ``reason`` and ``reject_message`` are a string or a (sync or async) function of it.
    """

    when: WhenFn = True
    reason: TextOrFn = None
    reject_message: TextOrFn = None

    def __post_init__(self) -> None:
        """A policy of the wrong shape is refused here, not at its tool's first call."""
        if not isinstance(self.when, bool) and not callable(self.when):
            raise TypeError(
                f"ToolApproval(when=...) takes True, False or a function of the approval "
                f"context, not {type(self.when).__name__}."
            )
        for name in ("reason", "reject_message"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str) and not callable(value):
                raise TypeError(
                    f"ToolApproval({name}=...) takes a text or a function of the approval "
                    f"context, not {type(value).__name__}."
                )

    async def required(self, ctx: ApprovalContext[Any]) -> bool:
        """Whether this call needs approval. A ``when`` that raises fails the run, as in Anvia,
        with what it raised, noted with the tool and the function (see :func:`_noted`)."""
        if isinstance(self.when, bool):
            return self.when
        with _noted(ctx, "when"):
            return bool(await maybe_await(self.when(ctx)))

    async def texts(self, ctx: ApprovalContext[Any]) -> tuple[str | None, str | None]:
        return (
            await _text(self.reason, ctx, "reason"),
            await _text(self.reject_message, ctx, "reject_message"),
        )


async def _text(value: TextOrFn, ctx: ApprovalContext[Any], part: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    with _noted(ctx, part):
        text = await maybe_await(value(ctx))
    return None if text is None else str(text)  # (none given: as Anvia, no text)


@contextlib.contextmanager
def _noted(ctx: ApprovalContext[Any], part: str) -> Iterator[None]:
    """What a function given to ``ToolApproval`` raises goes on as it is (the run fails with it,
    as in Anvia), with a note naming the tool and the function: the run's error says where."""
    try:
        yield
    except Exception as error:
        add_note(
            error,
            f"(raised by the {part}= function of the approval policy of the tool "
            f"{ctx.tool_name!r}: ToolApproval({part}=...))",
        )
        raise


def normalize_decision(value: Any) -> ApprovalDecision:
    """Accept ``bool`` or :class:`ApprovalDecision` (or its dict form) from a handler."""
    if isinstance(value, bool):
        value = {"approved": value}
    if isinstance(value, dict):
        fields = list(ApprovalDecision.model_fields)
        unknown = [key for key in value if key not in fields]
        if unknown:  # (a typo would otherwise be dropped: reason="..." never told)
            raise TypeError(
                f"An approval decision has no {quoted(unknown[0])}: its keys are "
                f"{', '.join(fields)}."
            )
        if not isinstance(value.get("approved"), bool):
            raise TypeError(
                "An approval decision's 'approved' must be True or False, not "
                f"{quoted(value.get('approved'))}."
            )
    if isinstance(value, (ApprovalDecision, dict)):
        return ApprovalDecision.model_validate(value)
    raise TypeError(
        f"An approval handler must return a bool or an ApprovalDecision, not {type(value).__name__}"
    )
