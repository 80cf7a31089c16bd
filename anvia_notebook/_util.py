"""Small internal helpers shared by the runtime modules."""

from __future__ import annotations

import inspect
import json
import uuid
from typing import Any

from pydantic import BaseModel


async def maybe_await(value: Any) -> Any:
    """Await ``value`` when it is awaitable; return it unchanged otherwise."""
    if inspect.isawaitable(value):
        return await value
    return value


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def normalize_result(value: Any) -> str:
    """A tool's return value as the text the model sees.

    A pydantic model is serialised to JSON, a ``str`` is kept, anything else goes through
    ``json.dumps`` (falling back to ``str``).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
