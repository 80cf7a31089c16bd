"""Checking a JSON value against a JSON Schema (a tool's arguments, in any process)."""

from __future__ import annotations

import datetime
import functools
import ipaddress
import json
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_problems"]


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    """The validator of the schema's own draft, or None for a schema that is not valid (then
    whoever wrote it checks the value)."""
    import jsonschema

    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema, format_checker=_format_checker())


#: The formats pydantic writes in a tool's JSON Schema for these types (``format: date-time``
#: for a ``datetime``, ...).
_FORMATS: dict[str, Any] = {
    "date-time": datetime.datetime,
    "date": datetime.date,
    "time": datetime.time,
    "duration": datetime.timedelta,
    "uuid": uuid.UUID,
    "ipv4": ipaddress.IPv4Address,
    "ipv6": ipaddress.IPv6Address,
}


@functools.cache
def _format_checker() -> Any:
    """Checks those formats of a text as the tool's pydantic model reads it (no stricter), so
    another process refuses the text the run would refuse, before it is recorded."""
    import jsonschema
    from pydantic import TypeAdapter, ValidationError

    checker = jsonschema.FormatChecker(formats=())
    for name, kind in _FORMATS.items():
        adapter = TypeAdapter(kind)

        def check(value: Any, adapter: TypeAdapter[Any] = adapter) -> bool:
            if isinstance(value, str):
                adapter.validate_python(value)
            return True

        checker.checks(name, raises=ValidationError)(check)
    return checker


def schema_problems(schema: Mapping[str, Any], value: Any, limit: int = 5) -> list[str]:
    """What in ``value`` breaks ``schema`` (at most ``limit``, by where they are), each as
    ``path: message`` (just the message at the top level); empty when it fits."""
    from referencing.exceptions import Unresolvable

    validator = _validator(json.dumps(schema, sort_keys=True))
    if validator is None:
        return []
    try:
        errors = sorted(
            validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]
        )
    except Unresolvable:  # a $ref to nowhere: a schema that is not usable, as above
        return []
    return [
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
        if e.absolute_path
        else e.message
        for e in errors[:limit]
    ]
