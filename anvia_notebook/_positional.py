"""A pydantic model whose first fields may also be given by position, as the docs write them."""

from __future__ import annotations

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
