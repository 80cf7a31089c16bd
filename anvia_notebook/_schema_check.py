"""Checking a JSON value against a JSON Schema (a tool's arguments, in any process)."""

from __future__ import annotations

import datetime
import functools
import ipaddress
import json
import re
import sys
import threading
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_problems", "shortened"]


def _jsonschema() -> Any:
    """The ``jsonschema`` module, imported without its check of the ``iri`` formats where it is
    not imported yet: at import, that check compiles a grammar of ``rfc3987-syntax`` (installed
    with Jupyter), which took most of a second (the first decision with edited arguments waited
    for it after the click) and parses thousands of Python snippets with :mod:`ast`, which on
    Python 3.11 is not safe while another thread parses (a notebook cell run meanwhile could
    fail with "SystemError: AST constructor recursion depth mismatch"). The checks of formats
    used here are this module's own (:func:`_format_checker`)."""
    with _importing:
        skipped = "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules
        if skipped:  # (its import then fails: jsonschema goes without)
            sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
        try:
            import jsonschema
        finally:
            if skipped and sys.modules.get("rfc3987_syntax", 0) is None:
                del sys.modules["rfc3987_syntax"]
    return jsonschema


_importing = threading.Lock()


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    """The validator of the schema's own draft, or None for a schema that is not valid (then
    whoever wrote it checks the value)."""
    jsonschema = _jsonschema()

    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    linear = jsonschema.validators.extend(
        cls,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": functools.partial(
                _additional_properties, cls.VALIDATORS.get("additionalProperties")
            ),
        },
    )
    unevaluated = cls.VALIDATORS.get("unevaluatedProperties")
    if unevaluated is not None and "patternProperties" in schema_text:
        # Which names ``patternProperties`` evaluates is found by jsonschema with Python's
        # engine, in a step no keyword of ours replaces: beside patterns, unevaluated names are
        # left to the tool or the server.
        linear = jsonschema.validators.extend(linear, {"unevaluatedProperties": _unchecked})
    return linear(schema, format_checker=_format_checker())


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """The ``pattern`` keyword, matched in time linear in the text (pydantic's regular
    expressions): Python's engine, which jsonschema uses, can take hours on a pattern such as
    ``^(a+)+$`` that a tool or an MCP server's form declares, and the kernel would hang. A
    pattern that engine cannot run (a look-around, a back-reference) is not checked here: the
    tool or the server checks it."""
    from jsonschema import ValidationError

    matches = _matcher(pattern)
    if validator.is_type(instance, "string") and matches is not None and not matches(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    """The ``patternProperties`` keyword, with the property names matched as ``pattern`` is (a
    name the model or a person wrote); a pattern that cannot be run checks nothing here."""
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        matches = _matcher(pattern)
        if matches is None:
            continue
        for name, value in instance.items():
            if matches(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    original: Any, validator: Any, allowed: Any, instance: Any, schema: Any
) -> Any:
    """The ``additionalProperties`` keyword: beside ``patternProperties``, the names that no
    pattern matches are found as ``pattern`` matches (else as the schema's draft says). When a
    pattern cannot be run, which names are additional cannot be told: the tool or the server
    checks them."""
    patterns = schema.get("patternProperties")
    if not isinstance(patterns, Mapping) or not patterns:
        if original is not None:
            yield from original(validator, allowed, instance, schema)
        return
    if not validator.is_type(instance, "object"):
        return
    from jsonschema import ValidationError

    matchers = [_matcher(pattern) for pattern in patterns]
    if any(matches is None for matches in matchers):
        return
    named = schema.get("properties", {})
    extras = sorted(
        name
        for name in instance
        if name not in named and not any(matches(name) for matches in matchers)
    )
    if validator.is_type(allowed, "object"):
        for name in extras:
            yield from validator.descend(instance[name], allowed, path=name)
    elif allowed is False and extras:
        verb = "does" if len(extras) == 1 else "do"
        names = ", ".join(repr(name) for name in extras)
        shown = ", ".join(repr(pattern) for pattern in sorted(patterns))
        yield ValidationError(f"{names} {verb} not match any of the regexes: {shown}")


def _unchecked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
    """A keyword not checked here (see ``_validator``)."""
    return iter(())


@functools.lru_cache(maxsize=256)
def _matcher(pattern: str) -> Any:
    """Whether a text matches ``pattern`` anywhere in it, or None when it cannot be run."""
    from typing import Annotated

    from pydantic import StringConstraints, TypeAdapter, ValidationError
    from pydantic_core import SchemaError

    try:
        adapter: TypeAdapter[str] = TypeAdapter(Annotated[str, StringConstraints(pattern=pattern)])
    except SchemaError:
        return None

    def matches(text: str) -> bool:
        try:
            adapter.validate_python(text)
        except ValidationError:
            return False
        return True

    return matches


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


#: An e-mail address as ``format: email`` asks (MCP forms ask it): a local part, an ``@``, a
#: domain with a dot, nothing blank; a display name around it (``Ada <ada@example.org>``) is
#: taken, as pydantic's ``EmailStr`` takes it, which checks more (this is never stricter).
_EMAIL = re.compile(r"(?:[^<>]*<)?[^@\s<>]+@[^@\s<>.]+(?:\.[^@\s<>.]+)+>?")


def _check_email(value: Any) -> bool:
    return not isinstance(value, str) or _EMAIL.fullmatch(value.strip()) is not None


@functools.cache
def _format_checker() -> Any:
    """Checks those formats of a text as the tool's pydantic model reads it (no stricter), so
    another process refuses the text the run would refuse, before it is recorded."""
    jsonschema = _jsonschema()
    from pydantic import AnyUrl, TypeAdapter, ValidationError

    checker = jsonschema.FormatChecker(formats=())
    for name, kind in {**_FORMATS, "uri": AnyUrl}.items():
        adapter = TypeAdapter(kind)

        def check(value: Any, adapter: TypeAdapter[Any] = adapter) -> bool:
            if isinstance(value, str):
                adapter.validate_python(value)
            return True

        checker.checks(name, raises=ValidationError)(check)
    checker.checks("email")(_check_email)
    return checker


def schema_problems(schema: Mapping[str, Any], value: Any, limit: int = 5) -> list[str]:
    """What in ``value`` breaks ``schema`` (at most ``limit``, by where they are), each as
    ``path: message`` (just the message at the top level); empty when it fits."""
    _jsonschema()
    from referencing.exceptions import Unresolvable

    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
        if validator is None:
            return []
        errors = sorted(
            validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]
        )
    except (Unresolvable, RecursionError):  # a $ref to nowhere or to itself: as above
        return []
    return [
        shortened(f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}")
        if e.absolute_path
        else shortened(e.message)
        for e in errors[:limit]
    ]


#: The longest a problem is said (jsonschema's messages quote the whole value they refuse).
MAX_PROBLEM = 300


def shortened(problem: str) -> str:
    """``problem`` with its middle left out when it is longer than :data:`MAX_PROBLEM`."""
    if len(problem) <= MAX_PROBLEM:
        return problem
    kept = (MAX_PROBLEM - 3) // 2  # (each end: the path and the rule it breaks stay)
    return f"{problem[:kept]} … {problem[-kept:]}"
