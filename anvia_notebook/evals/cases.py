"""Eval cases: what to ask the agent, what to expect, and how cases are given.

Cases come as :class:`Case` objects, dicts, or a pandas DataFrame (columns ``input`` and
optionally ``expected``, ``name``, ``metadata``). Everything is checked before any case runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, field_validator

from .._positional import PositionalFields
from .._util import blank, check_valid_text

__all__ = ["Case", "normalize_cases"]

_FIELDS = ("input", "expected", "name", "metadata")


class Case(PositionalFields):
    """One eval case: the ``input`` prompt, optionally the ``expected`` answer, a ``name``
    (``case-1``, ``case-2``, ... after its place when left out, unless another case has that
    name) and free ``metadata`` for your own metrics."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    #: ``Case(input, expected=None, name=None, metadata={})``, as the docs write it: each may
    #: be given by position.
    positional = _FIELDS

    input: str
    expected: Any = None
    name: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("expected", mode="before")
    @classmethod
    def _no_expected_when_missing(cls, value: Any) -> Any:
        """A missing value (NaN, pandas' NA or NaT: a DataFrame's empty cell, from
        ``itertuples()`` too) is no expected value, as in a DataFrame of cases."""
        return None if _missing(value) else value

    if TYPE_CHECKING:  # (the signature type checkers see; PositionalFields.__init__ runs)

        def __init__(
            self,
            input: str,
            expected: Any = None,
            name: str | None = None,
            metadata: dict[str, Any] = ...,
        ) -> None: ...


def _missing(value: Any) -> bool:
    """A DataFrame cell left empty: None, NaN, or pandas' ``NA`` / ``NaT`` (or numpy's)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    kind = type(value)
    if kind.__module__.startswith("pandas") and kind.__name__ in ("NAType", "NaTType"):
        return True
    if kind.__module__ == "numpy":  # a numpy NaN or NaT is not equal to itself
        try:
            return bool(value != value)
        except (TypeError, ValueError):
            return False
    return False


def _from_mapping(raw: Mapping[str, Any], where: str) -> Case:
    unknown = sorted(str(k) for k in raw if k not in _FIELDS)
    if unknown:
        raise ValueError(
            f"{where} has unknown keys {', '.join(unknown)}; a case has input, expected, name "
            "and metadata (put anything else in metadata)."
        )
    if "input" not in raw or _missing(raw["input"]):
        raise ValueError(f"{where} has no input: every case needs the prompt to send the agent.")
    return _check(
        raw["input"],
        None if _missing(raw.get("expected")) else raw.get("expected"),
        None if _missing(raw.get("name")) else raw.get("name"),
        None if _missing(raw.get("metadata")) else raw.get("metadata"),
        where,
    )


def _check(value: Any, expected: Any, name: Any, metadata: Any, where: str) -> Case:
    if not isinstance(value, str) or blank(value):  # (as agent.prompt() refuses it)
        raise ValueError(
            f"{where} has no input: every case needs a non-empty prompt (a string), got {value!r}."
        )
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"{where} has a name that is not a non-empty string: {name!r}.")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ValueError(f"{where} has metadata that is not a dict: {metadata!r}.")
    for key in metadata or {}:
        if not isinstance(key, str):
            raise ValueError(
                f"{where} has metadata with the key {key!r} ({type(key).__name__}); the keys "
                "of a case's metadata are strings."
            )
    # (a text no store can keep: the case would not be a stored run)
    check_valid_text(value, f"{where}: its input")
    if isinstance(name, str):
        check_valid_text(name, f"{where}: its name")
    return Case(
        input=value,
        expected=expected,
        name=name.strip() if isinstance(name, str) else None,
        metadata=dict(metadata or {}),
    )


def _rows_of_frame(frame: Any) -> list[Case]:
    columns = [str(c) for c in frame.columns]
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:  # (pandas would keep one of them, and the other's cells would be lost)
        raise ValueError(
            f"The DataFrame of cases has two columns named {twice[0]!r}; keep one of them "
            "(or rename the other)."
        )
    if "input" not in columns:
        raise ValueError(
            "The DataFrame of cases has no 'input' column (it has: "
            f"{', '.join(columns) or 'no columns'}); rename the column with the prompts to "
            "'input'."
        )
    unknown = [c for c in columns if c not in _FIELDS]
    if unknown:
        raise ValueError(
            f"The DataFrame of cases has columns {', '.join(unknown)} that a case does not have "
            "(input, expected, name, metadata); drop them or move them into a 'metadata' column "
            "of dicts."
        )
    records = frame.to_dict("records")
    if "expected" in columns:
        _whole_again(records, "expected")
    cases = []
    for position, record in enumerate(records, start=1):
        cases.append(_from_mapping(record, f"Row {position} of the DataFrame"))
    return cases


def _whole_again(records: list[dict[Any, Any]], column: str) -> None:
    """pandas keeps a column of whole numbers with an empty cell as floats (7 becomes 7.0, so
    a case would expect "7.0"): when every value of ``column`` is a float, some are missing and
    the others are whole, they are made whole again (a column with a fraction is left alone)."""
    values = [record[column] for record in records]
    present = [v for v in values if not _missing(v)]
    if (
        len(present) < len(values)
        and present
        and all(isinstance(v, float) and v.is_integer() for v in present)
    ):
        for record in records:
            if not _missing(record[column]):
                record[column] = int(record[column])


def _is_frame(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and hasattr(value, "columns") and hasattr(value, "to_dict")


def normalize_cases(cases: Any) -> list[Case]:
    """Check ``cases`` and return them as named :class:`Case` objects, in order.

    Raises ``ValueError`` / ``TypeError`` with a message naming the bad case: a case without
    input, a DataFrame without an ``input`` column, duplicate names, no cases at all.
    """
    if _is_frame(cases):
        given = _rows_of_frame(cases)
    elif isinstance(cases, (str, bytes, Mapping)) or not isinstance(cases, Iterable):
        raise TypeError(
            "cases must be a list of evals.Case or dicts, or a pandas DataFrame, not "
            f"{type(cases).__name__}."
        )
    else:
        given = []
        for position, item in enumerate(cases, start=1):
            where = f"Case {position}"
            if isinstance(item, Case):
                given.append(_check(item.input, item.expected, item.name, item.metadata, where))
            elif isinstance(item, Mapping):
                given.append(_from_mapping(item, where))
            else:
                raise TypeError(
                    f"{where} is a {type(item).__name__}; give evals.Case(input=...) or a dict "
                    "with an 'input' key."
                )
    if not given:
        raise ValueError("There are no cases to evaluate.")
    # A case left unnamed is named after its position, ``case-3``; a name a case was given is
    # not taken again (``case-3-2`` then): only the names given can clash.
    taken = {case.name for case in given if case.name is not None}
    named = []
    for position, case in enumerate(given, start=1):
        if case.name is None:
            name, again = f"case-{position}", 2
            while name in taken:
                name, again = f"case-{position}-{again}", again + 1
            taken.add(name)
            case = case.model_copy(update={"name": name})
        named.append(case)
    seen: dict[str, int] = {}
    for position, case in enumerate(named, start=1):
        assert case.name is not None
        if case.name in seen:
            raise ValueError(
                f"Cases {seen[case.name]} and {position} are both named {case.name!r}; case "
                "names must be unique (they match cases across reports in evals.compare)."
            )
        seen[case.name] = position
    return named
