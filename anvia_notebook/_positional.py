"""A pydantic model whose first fields may also be given by position, as the docs write them."""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

__all__ = ["PositionalFields"]


class PositionalFields(BaseModel):
    """A model whose first fields may also be given by position, as written in the docs:
    ``ToolCall("call_1", "add", {"x": 1})``, ``TextDelta("7")``, ``ApprovalDecision(True)``,
    ``Answer("size", "L")``, ``evals.Case("add 2 and 5", "7")`` (keywords, aliases included,
    work as for any pydantic model). Not the deltas a provider streams many of
    (``ToolCallDelta``, ``ReasoningDelta``): this ``__init__`` costs about a microsecond per
    object.

    A subclass names the fields in ``positional``, in order; to show type checkers the same
    signature (the pydantic mypy plugin would otherwise write a keyword-only one), it declares
    its ``__init__`` under ``if TYPE_CHECKING:``."""

    model_config = ConfigDict(defer_build=True)

    #: The fields that may be given by position, in order.
    positional: ClassVar[tuple[str, ...]] = ()
    #: Each positional field's keys: the one its value is passed by (its name, or its alias
    #: when the model takes the alias only), then every other key that names it.
    positional_keys: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        fields = cls.model_fields
        unknown = [name for name in cls.positional if name not in fields]
        if unknown:
            raise TypeError(f"{cls.__name__}.positional names no field {', '.join(unknown)}.")
        config = cls.model_config
        by_name = bool(config.get("validate_by_name") or config.get("populate_by_name"))
        keys: dict[str, tuple[str, ...]] = {}
        for name in cls.positional:
            info = fields[name]
            aliases = [a for a in (info.alias, info.validation_alias) if isinstance(a, str)]
            first = name if by_name or not aliases else aliases[0]
            keys[name] = tuple(dict.fromkeys([first, name, *aliases]))
        cls.positional_keys = keys
        cls._show_signature()

    @classmethod
    def __pydantic_on_complete__(cls) -> None:
        """Pydantic (2.12 and later) calls this once the model is built, after writing its own
        signature: ours again."""
        cls._show_signature()

    @classmethod
    def _show_signature(cls) -> None:
        with contextlib.suppress(ValueError):  # (an order no signature can show: pydantic's)
            cls.__signature__ = _signature(cls)

    def __init__(self, *args: Any, **data: Any) -> None:
        if args:
            name = type(self).__name__
            if len(args) > len(self.positional):
                most = len(self.positional)
                raise TypeError(
                    f"{name}() takes at most {most} positional argument{'s' if most != 1 else ''}"
                    f" ({', '.join(self.positional)}), not {len(args)}."
                )
            for field, value in zip(self.positional, args, strict=False):
                keys = self.positional_keys[field]
                for key in keys:
                    if key in data:
                        raise TypeError(f"{name}() got {field!r} both by position and by name.")
                data[keys[0]] = value
        super().__init__(**data)


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"


def _signature(cls: type[PositionalFields]) -> inspect.Signature:
    """What ``help()``, Shift+Tab and ``inspect.signature`` show: the positional fields by
    position or keyword, the others by keyword (``__init__`` itself takes ``*args, **data``)."""
    parameters = []
    for name, info in cls.model_fields.items():
        if info.is_required():
            default: Any = inspect.Parameter.empty
        elif info.default_factory is not None:
            default = _Factory()
        else:
            default = info.default
        kind = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD
            if name in cls.positional
            else inspect.Parameter.KEYWORD_ONLY
        )
        parameters.append(
            inspect.Parameter(name, kind, default=default, annotation=info.annotation)
        )
    parameters.sort(
        key=lambda p: (p.kind, cls.positional.index(p.name) if p.name in cls.positional else 0)
    )
    return inspect.Signature(parameters, return_annotation=None)
