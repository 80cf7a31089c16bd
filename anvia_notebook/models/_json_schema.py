"""JSON Schemas as providers' structured outputs want them.

OpenAI's strict mode and Anthropic's structured outputs need every object closed
(``"additionalProperties": false``); OpenAI's strict mode also needs every property required.
Closing the objects only narrows what the model writes: the answer is still validated against
the output type itself.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "closed_objects",
    "every_property_required",
    "finite_numbers_only",
    "open_objects",
    "refs_alone",
    "strict_keywords_only",
]


def finite_numbers_only(schema: Any) -> Any:
    """``schema`` without the numbers JSON has not (a parameter's ``default`` of ``math.inf``,
    a NaN bound), each such key or list item left out: the SDKs cannot send them ("Out of range
    float values are not JSON compliant"), and the arguments are still validated against the
    tool's own input. ``schema`` itself when it has none."""
    return _finite(schema) if _non_finite(schema) else schema


def _non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(item) for item in value.values())
    if isinstance(value, list):
        return any(_non_finite(item) for item in value)
    return False


def _finite(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items() if not _non_finite_number(item)}
    if isinstance(value, list):
        return [_finite(item) for item in value if not _non_finite_number(item)]
    return value


def _non_finite_number(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def closed_objects(schema: Any) -> Any:
    """A copy of ``schema`` with ``"additionalProperties": false`` on every object schema that
    does not say otherwise."""
    if isinstance(schema, list):
        return [closed_objects(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: closed_objects(value) for key, value in schema.items()}
    if copy.get("type") == "object" and "additionalProperties" not in copy:
        copy["additionalProperties"] = False
    return copy


def every_property_required(schema: Any) -> bool:
    """True when every object schema in ``schema`` requires all its properties and admits no
    others (what OpenAI's strict mode accepts)."""
    if isinstance(schema, list):
        return all(every_property_required(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object":
        properties = schema.get("properties") or {}
        if set(schema.get("required") or ()) != set(properties):
            return False
        if schema.get("additionalProperties") not in (False, None):
            return False
    return all(every_property_required(value) for value in schema.values())


#: The keywords OpenAI's strict mode takes (its "supported schemas"); any other (a length
#: limit, ``oneOf``, ``discriminator``, ``default``) makes it refuse the request.
STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
        "const", "$ref", "$defs", "definitions", "title", "description", "pattern", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems",
        "maxItems",
    }
)  # fmt: skip
#: The keywords whose value maps names to schemas (not keywords themselves).
_SCHEMA_MAPS = ("properties", "$defs", "definitions")


def strict_keywords_only(schema: Any) -> bool:
    """True when every schema in ``schema`` uses only :data:`STRICT_KEYWORDS`, and a ``$ref``
    stands alone (strict mode takes no keyword beside it)."""
    if isinstance(schema, list):
        return all(strict_keywords_only(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if not STRICT_KEYWORDS.issuperset(schema) or ("$ref" in schema and len(schema) > 1):
        return False
    for key, value in schema.items():
        if key in _SCHEMA_MAPS:
            if not isinstance(value, dict):
                return False
            if not all(strict_keywords_only(inner) for inner in value.values()):
                return False
            if key == "properties" and not all(map(_typed, value.values())):
                return False  # (an ``Any`` field: strict mode wants each property typed)
        elif (
            isinstance(value, (dict, list))
            and key not in ("enum", "const")
            and not strict_keywords_only(value)
        ):
            return False
    return True


def refs_alone(schema: Any) -> Any:
    """``schema`` with each ``$ref`` that has keywords beside it (pydantic's ``{"$ref": ...,
    "description": ...}`` for a field of a model type given a description; older pydantic's
    ``{"allOf": [{"$ref": ...}], "description": ...}``) made one that stands alone, as OpenAI's
    strict mode wants it ("$ref cannot have keywords"): the definition it names put in its place,
    the keywords beside it winning (as the OpenAI SDK does for its own strict schemas). A
    ``$ref`` to a definition it is already inside (a recursive model) keeps only the ref when
    what is beside it only describes it (a title, a description); other refs, and those
    that do not name one of the schema's ``$defs`` (or ``definitions``), stay as they are.
    ``schema`` itself when it has no such ref."""
    if not isinstance(schema, dict):
        return schema
    return _refs_alone(schema, schema, ())


#: The keywords that only describe a schema: dropped beside a recursive ``$ref``.
_ANNOTATIONS = frozenset({"title", "description"})


def _refs_alone(value: Any, root: dict[str, Any], inside: tuple[str, ...]) -> Any:
    if isinstance(value, list):
        items = [_refs_alone(item, root, inside) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not isinstance(value, dict):
        return value
    all_of = value.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        merged = {key: item for key, item in value.items() if key != "allOf"}
        value = {**merged, **all_of[0]}
    ref = value.get("$ref")
    if isinstance(ref, str) and len(value) > 1:
        resolved = _definition(root, ref)
        if resolved is not None and ref not in inside:
            beside = {key: item for key, item in value.items() if key != "$ref"}
            return _refs_alone({**resolved, **beside}, root, (*inside, ref))
        if resolved is not None and _ANNOTATIONS.issuperset(set(value) - {"$ref", "$defs"}):
            value = {key: item for key, item in value.items() if key not in _ANNOTATIONS}
    copy = {key: _refs_alone(item, root, inside) for key, item in value.items()}
    return value if all(copy[key] is value[key] for key in value) else copy


def _definition(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """The schema a local ``$ref`` (``#/$defs/Name``, ``#/definitions/Name``) names, or None."""
    for key in ("$defs", "definitions"):
        prefix = f"#/{key}/"
        if ref.startswith(prefix):
            defs = root.get(key)
            found = defs.get(ref[len(prefix) :]) if isinstance(defs, dict) else None
            return found if isinstance(found, dict) else None
    return None


def open_objects(schema: Any) -> bool:
    """True when an object schema in ``schema`` takes keys it does not name (its
    ``additionalProperties`` a schema or true: a ``dict`` field, a model with extra keys)."""
    if isinstance(schema, list):
        return any(open_objects(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    extra = schema.get("additionalProperties")
    if extra is True or isinstance(extra, dict):
        return True
    return any(open_objects(value) for value in schema.values())


def _typed(schema: Any) -> bool:
    """Whether a property's schema says what it holds (``Any``'s says nothing)."""
    return isinstance(schema, dict) and any(
        key in schema for key in ("type", "$ref", "anyOf", "enum", "const")
    )
