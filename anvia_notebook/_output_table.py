"""A typed result as a table: a pandas ``DataFrame`` (``PromptResponse.to_pandas()``) and the
markdown table the transcript shows under the run's answer."""

from __future__ import annotations

import dataclasses
import importlib
import json
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import typing_extensions
from pydantic import BaseModel, RootModel

__all__ = [
    "MAX_TABLE_ROWS",
    "item_columns",
    "keyed_type",
    "markdown_table",
    "rows_of",
    "to_pandas",
    "typed_result_markdown",
]

#: The transcript's table shows at most this many rows (and says how many more there are).
MAX_TABLE_ROWS = 50
#: At most this many columns are shown.
MAX_TABLE_COLUMNS = 12
#: A cell is cut to this many characters.
MAX_CELL = 80


def _root(value: Any) -> Any:
    """The value a ``RootModel`` holds (at any depth: a root model of a root model); any other
    value as it is."""
    while isinstance(value, RootModel):
        value = value.root
    return value


def _root_type(output_type: Any) -> Any:
    """The type of a ``RootModel`` type's root (``list[Model]`` of ``RootModel[list[Model]]``);
    any other type as it is."""
    while isinstance(output_type, type) and issubclass(output_type, RootModel):
        root = output_type.model_fields.get("root")
        if root is None or root.annotation is None:
            break
        output_type = root.annotation
    return output_type


def _record(item: Any) -> dict[str, Any] | None:
    """One item as a row (a mapping of column to value), or None when it is not record-like."""
    item = _root(item)
    if isinstance(item, BaseModel):
        return dict(item)
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    if isinstance(item, Mapping):
        return {str(key): value for key, value in item.items()}
    return None


def rows_of(data: Any) -> list[dict[str, Any]] | None:
    """The rows of a typed value: one per item of a list of records, one for a single record;
    None for a value that is not a table (a number, a text, a list of numbers). A ``RootModel``
    is its root: ``RootModel[list[Model]]`` has a row per model."""
    data = _root(data)
    single = _record(data)
    if single is not None:
        return [single]
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        rows = [_record(item) for item in data]
        if all(row is not None for row in rows):
            return [row for row in rows if row is not None]
    return None


def _unwrapped(output_type: Any) -> Any:
    """``X`` of ``X | None`` (``Optional[X]``), the root's type of a ``RootModel``; any other
    type as it is."""
    output_type = _root_type(output_type)
    args = typing.get_args(output_type)
    rest = [arg for arg in args if arg is not type(None)]
    return _root_type(rest[0]) if len(rest) == 1 and len(args) == 2 else output_type


def item_columns(output_type: Any) -> list[str]:
    """The columns of an empty list of ``output_type``'s items (a model, a dataclass or a
    ``TypedDict``; or of ``output_type`` itself, one of those): its field names; none for
    other types."""
    output_type = _unwrapped(output_type)
    args = typing.get_args(output_type)
    item = _root_type(args[0] if len(args) == 1 else output_type)
    if isinstance(item, type) and issubclass(item, BaseModel):
        return list(item.model_fields)
    if dataclasses.is_dataclass(item) and isinstance(item, type):
        return [field.name for field in dataclasses.fields(item)]
    if typing_extensions.is_typeddict(item):
        return list(typing.get_type_hints(item))
    return []


def to_pandas(data: Any, output_type: Any = None) -> Any:
    """``data`` (a list of models, dataclasses or dicts, or one of them) as a ``DataFrame``; an
    empty list has the columns of ``output_type``'s items, as has None (``list[Row] | None``)."""
    if data is None and output_type is None:
        raise ValueError(
            "This response has no typed data: set output_type(...) on the agent or the request."
        )
    data = _root(data)
    keyed = None if data is None else _keyed_records(data, output_type)
    rows = [] if data is None else rows_of(data) if keyed is None else list(keyed.values())
    if rows is None:
        raise TypeError(
            f"to_pandas() needs a list of models (or one model); this response's data is a "
            f"{_kind(data)}."
        )
    try:
        pd = importlib.import_module("pandas")
    except ImportError:
        raise ImportError(
            "PromptResponse.to_pandas() needs pandas, which is not installed: pip install pandas"
        ) from None
    plain = [{key: _plain(value) for key, value in row.items()} for row in rows]
    if not plain:
        return pd.DataFrame(columns=item_columns(output_type))
    index = None if keyed is None else list(keyed)
    frame = pd.DataFrame(plain, index=index).convert_dtypes()
    for column in _float_fields(output_type):  # (whole values made Int64 of a float field)
        if column in frame.columns and str(frame[column].dtype) == "Int64":
            frame[column] = frame[column].astype("Float64")
    return frame


def _kind(data: Any) -> str:
    """What ``data`` is, for an error: its type, and for a list the types of its items (a
    ``list of int``, not a ``list``, which would read as what was asked for)."""
    kind = type(data).__name__
    if isinstance(data, (list, tuple)) and data:
        items = sorted({type(_root(item)).__name__ for item in data})
        return f"{kind} of {', '.join(items)}"
    return kind


def _float_fields(output_type: Any) -> list[str]:
    """The fields of ``output_type``'s items (or of itself) declared ``float`` (or
    ``float | None``)."""
    output_type = _unwrapped(output_type)
    args = typing.get_args(output_type)
    item = _root_type(args[-1] if args else output_type)
    hints: dict[str, Any] = {}
    if isinstance(item, type) and issubclass(item, BaseModel):
        hints = {name: info.annotation for name, info in item.model_fields.items()}
    elif (dataclasses.is_dataclass(item) and isinstance(item, type)) or (
        typing_extensions.is_typeddict(item)
    ):
        hints = typing.get_type_hints(item)
    return [name for name, hint in hints.items() if _is_float(hint)]


def _is_float(hint: Any) -> bool:
    if hint is float:
        return True
    options = [a for a in typing.get_args(hint) if a is not type(None)]
    return typing.get_origin(hint) in (
        typing.Union,
        getattr(types, "UnionType", None),
    ) and options == [float]


def keyed_type(output_type: Any) -> bool:
    """Whether ``output_type`` maps keys to values (``dict[str, Model]``, also ``| None``): a
    value of records by key is a row per key, not one row."""
    origin = typing.get_origin(_unwrapped(output_type))
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _keyed_records(data: Any, output_type: Any) -> dict[Any, dict[str, Any]] | None:
    """The rows of a ``dict[key, Model]`` result, by key (the frame's index), or None for any
    other type (a single record that is a dict is one row)."""
    if not keyed_type(output_type) or not isinstance(data, Mapping):
        return None
    rows = {key: _record(value) for key, value in data.items()}
    if not all(row is not None for row in rows.values()):
        return None
    return {key: row for key, row in rows.items() if row is not None}


def _plain(value: Any) -> Any:
    """A cell's value as plain data: models and dataclasses (also inside lists and dicts) as
    dicts, the same way at every depth; dates, numbers and texts as they are."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def markdown_table(data: Any, keyed: bool = False) -> str | None:
    """The JSON data of a typed result as a markdown table (bounded), or None when it is not a
    table; a value that is not a table is shown as JSON by the caller. ``keyed``: the output
    type maps keys to records, a row per key (its key first, in a column without a name, as
    ``to_pandas()`` makes the keys its index)."""
    rows = _keyed_rows(data) if keyed else None
    if rows is None:
        rows = rows_of(data)
    if not rows:
        return None
    columns: list[Any] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    if not columns:  # (records without fields: ``{}``, a dict of no keys)
        return None
    shown_columns = columns[:MAX_TABLE_COLUMNS]
    lines = [
        "| "
        + " | ".join("" if name is _KEY_COLUMN else _cell(name) for name in shown_columns)
        + " |",
        "| " + " | ".join("---" for _ in shown_columns) + " |",
    ]
    for row in rows[:MAX_TABLE_ROWS]:
        lines.append("| " + " | ".join(_cell(row.get(name, "")) for name in shown_columns) + " |")
    notes = []
    if len(rows) > MAX_TABLE_ROWS:
        notes.append(f"{len(rows) - MAX_TABLE_ROWS} more rows not shown")
    if len(columns) > MAX_TABLE_COLUMNS:
        notes.append(f"{len(columns) - MAX_TABLE_COLUMNS} more columns not shown")
    table = "\n".join(lines)
    return (
        f"{table}\n\n_{'; '.join(notes)} (the full data is in the response)._" if notes else table
    )


#: The column of a keyed table's keys, headed by nothing (as pandas shows an index without a
#: name); not a text, so a record's own field named ``""`` keeps its column.
_KEY_COLUMN = object()


def _keyed_rows(data: Any) -> list[dict[Any, Any]] | None:
    """A row per key of a mapping of records, its key first; None when ``data`` is not one."""
    if not isinstance(data, Mapping) or not data:
        return None
    rows: list[dict[Any, Any]] = []
    for key, value in data.items():
        record = _record(value)
        if record is None:
            return None
        rows.append({_KEY_COLUMN: key, **record})
    return rows


def _cell(value: Any) -> str:
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|")


#: A typed result that is not a table is shown as JSON of at most this many characters.
MAX_JSON_SHOWN = 2_000


def typed_result_markdown(data: Any, keyed: bool = False) -> str:
    """How the transcript shows a run's typed result (its JSON data): a table for records (a
    row per key of a ``keyed`` one: see :func:`markdown_table`), else the JSON in a code block;
    bounded either way."""
    table = markdown_table(data, keyed)
    count = len(data) if isinstance(data, list) else 1
    if keyed and _keyed_rows(data) is not None:
        count = len(data)
    if table is not None:
        rows = f"{count} row{'s' if count != 1 else ''}"
        return f"**Result** ({rows})\n\n{table}"
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    if len(text) > MAX_JSON_SHOWN:
        text = f"{text[:MAX_JSON_SHOWN]}\n… ({len(text) - MAX_JSON_SHOWN:,} more characters)"
    return f"**Result**\n\n```json\n{text}\n```"
