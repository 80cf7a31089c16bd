"""Small helpers shared by the report and the comparison: escaping, previews, pandas."""

from __future__ import annotations

import html
import json
import math
from typing import Any

__all__ = ["cell", "esc", "format_score", "needs_pandas", "nullable_frame", "preview"]

#: Characters of an output shown in a table cell (the DataFrame keeps everything).
PREVIEW = 200


def preview(value: Any, limit: int = PREVIEW) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def esc(value: Any, limit: int = PREVIEW) -> str:
    return html.escape(preview(value, limit), quote=True)


def format_score(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float) and math.isnan(value):
        return "—"
    if isinstance(value, (int, float)):
        return f"{value:.2f}"
    return preview(value, 40)


def cell(value: Any, limit: int = PREVIEW) -> str:
    return f"<td>{esc(value, limit)}</td>"


def needs_pandas() -> Any:
    import importlib

    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError(
            "to_pandas() needs pandas, which is not installed: pip install pandas"
        ) from None


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def nullable_frame(
    pandas: Any,
    rows: list[dict[str, Any]],
    columns: list[str],
    *,
    ints: tuple[str, ...] = (),
    floats: tuple[str, ...] = (),
    scores: tuple[str, ...] = (),
    texts: tuple[str, ...] = (),
) -> Any:
    """A DataFrame of pandas' nullable types: counts stay integers (``Int64``), and every
    missing value is ``<NA>`` (not a mix of ``None`` and ``NaN``). A score column is ``boolean``
    when its metric gives booleans, else ``Float64``; a text column is ``string`` when it holds
    only texts (an ``expected`` that is a dict stays as it is)."""
    frame = pandas.DataFrame(rows, columns=columns)
    types = dict.fromkeys(ints, "Int64") | dict.fromkeys(floats, "Float64")
    for column in scores:
        values = [v for v in frame[column] if not _missing(v)]
        given_bools = bool(values) and all(isinstance(v, bool) for v in values)
        types[column] = "boolean" if given_bools else "Float64"
    for column in texts:
        if all(isinstance(v, str) or _missing(v) for v in frame[column]):
            types[column] = "string"
    if not types:
        return frame
    return frame.astype(types)
