"""Small helpers shared by the report and the comparison: escaping, previews, pandas."""

from __future__ import annotations

import html
import json
import math
import numbers
from typing import Any

__all__ = ["cell", "esc", "format_score", "needs_pandas", "nullable_frame", "preview"]

#: Characters of an output shown in a table cell (the DataFrame keeps everything).
PREVIEW = 200


#: The most cases an HTML table shows (a saved notebook keeps it: 5,000 cases made 1.4 MB).
HTML_CASES = 200


def more_cases(total: int, name: str) -> str:
    """The note under a table of the first :data:`HTML_CASES` of ``total`` cases (none when it
    shows them all); ``name`` is the object whose ``to_pandas()`` has every one."""
    if total <= HTML_CASES:
        return ""
    return (
        f"<p>And {total - HTML_CASES:,} more cases: <code>{name}.to_pandas()</code> has every "
        "one.</p>"
    )


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


def _values_type(values: list[Any]) -> str:
    """The nullable type of a column of values as given (a case's ``expected``): ``string``
    (texts), ``Int64`` (whole numbers, not booleans), ``Float64`` (floats), ``boolean``, or
    ``object`` for anything else or a mix (each value kept as it is: 7 stays 7, not 7.0)."""
    present = [v for v in values if not _missing(v)]
    if all(isinstance(v, str) for v in present):
        return "string"
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in present):
        # (an int too large for Int64 stays as it is)
        return "Int64" if all(-(2**63) <= v < 2**63 for v in present) else "object"
    if all(isinstance(v, float) for v in present):
        return "Float64"
    if all(isinstance(v, bool) for v in present):
        return "boolean"
    return "object"


def nullable_frame(
    pandas: Any,
    rows: list[dict[str, Any]],
    columns: list[str],
    *,
    ints: tuple[str, ...] = (),
    floats: tuple[str, ...] = (),
    scores: tuple[str, ...] = (),
    texts: tuple[str, ...] = (),
    as_given: tuple[str, ...] = (),
    paired: tuple[tuple[str, str], ...] = (),
) -> Any:
    """A DataFrame of pandas' nullable types: counts stay integers (``Int64``), and every
    missing value is ``<NA>`` (not a mix of ``None`` and ``NaN``). A score column is ``boolean``
    when its metric gives booleans, else ``Float64``; a text column is ``string`` when it holds
    only texts. A column of values ``as_given`` (``expected``) is typed by what it holds (see
    :func:`_values_type`): whole numbers stay whole, a dict or a mix stays as it is. Of two
    score columns ``paired`` (one metric in two reports), one with no value at all takes the
    other's type (a metric only one report has is ``boolean`` on both sides, not ``Float64``
    on the empty one)."""
    frame = pandas.DataFrame(rows, columns=columns)
    types = dict.fromkeys(ints, "Int64") | dict.fromkeys(floats, "Float64")
    for column in as_given:
        given = [row.get(column) for row in rows]  # (pandas made 7 and None 7.0 and NaN)
        frame[column] = pandas.Series(given, index=frame.index, dtype=object)
        kind = _values_type(given)
        if kind != "object":
            types[column] = kind
    for column in scores:
        values = [v for v in frame[column] if not _missing(v)]
        given_bools = bool(values) and all(isinstance(v, bool) for v in values)
        types[column] = "boolean" if given_bools else "Float64"
    for one, other in paired:
        for empty, full in ((one, other), (other, one)):
            if all(_missing(v) for v in frame[empty]) and full in types:
                types[empty] = types[full]
    for column in texts:
        if all(isinstance(v, str) or _missing(v) for v in frame[column]):
            types[column] = "string"
    if not types:
        return frame
    return frame.astype(types)
