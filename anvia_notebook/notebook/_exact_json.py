"""JSON text for values a browser would change: JavaScript reads every number as a double, so a
whole number past 2**53 (a 64-bit database key, a snowflake id) is rounded when the page parses
it. Arguments holding one travel as text too, and edited arguments come back as text."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_SAFE_INTEGER", "exact_json", "has_unsafe_integer", "json_object"]

#: The largest whole number JavaScript's numbers hold exactly (``Number.MAX_SAFE_INTEGER``).
MAX_SAFE_INTEGER = 2**53 - 1
#: Levels of lists and objects looked into (deeper arguments are refused elsewhere).
_DEPTH = 100


def has_unsafe_integer(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds a whole number the page's numbers would round."""
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) > MAX_SAFE_INTEGER
    if depth >= _DEPTH:
        return False
    if isinstance(value, dict):
        return any(has_unsafe_integer(item, depth + 1) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_unsafe_integer(item, depth + 1) for item in value)
    return False


def exact_json(value: Any) -> str:
    """``value`` as JSON text, its numbers exactly as Python holds them."""
    from pydantic_core import to_json

    return to_json(value, fallback=str).decode()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_object(text: str, what: str) -> dict[str, Any]:
    """The JSON object ``text`` holds (``what`` names it in the ``ValueError`` otherwise)."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"{what} are nested too deeply.") from None
    except ValueError as error:
        raise ValueError(f"{what} are not valid JSON: {error}.") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object.")
    return value
