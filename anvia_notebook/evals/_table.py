"""Small helpers shared by the report and the comparison: escaping, previews, pandas."""

from __future__ import annotations

import html
import json
import math
from typing import Any

__all__ = ["cell", "esc", "format_score", "needs_pandas", "preview"]

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
