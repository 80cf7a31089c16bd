"""The JSON Schema of the widget wire protocol, from the pydantic models of :mod:`._protocol`.

``scripts/wire_schema.py`` writes it to ``js/src/generated/wire-schema.json``, from which
``npm run gen:wire`` (in ``js/``) generates the page's TypeScript types (``wire.ts``). A test
compares the committed file with :func:`wire_schema_text`, so a model changed without
regenerating fails the suite.

Validation mode for both directions: the kernel builds most messages as plain dicts (the tests
check them with ``parse_outbound``), so the contract is what the models accept, e.g.
``Status.run_id`` may be absent, as the page must allow. The views of approvals and questions,
which the kernel does serialise (``interaction_view``), are validated as they are made and leave
out only fields the schema lets be absent.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from . import _protocol as p

__all__ = ["JSON_VALUE", "ROOTS", "wire_schema", "wire_schema_text"]

#: The named types of the protocol: the unions of each direction and of entries and ops, and
#: every model (most are also reached from the unions; listing them keeps their names).
ROOTS: dict[str, Any] = {
    "KernelMessage": p.KernelMessage,
    "InboundMessage": p.InboundMessage,
    "Entry": p.Entry,
    "Op": p.Op,
    **{
        name: getattr(p, name)
        for name in sorted(p.__all__)
        if isinstance(getattr(p, name), type) and issubclass(getattr(p, name), p.WireModel)
    },
}


#: What ``Any`` is on the wire: a JSON value (the messages travel as JSON).
JSON_VALUE: JsonSchemaValue = {
    "title": "JsonValue",
    "description": "Any JSON value.",
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "number"},
        {"type": "string"},
        {"type": "array", "items": {"$ref": "#/$defs/JsonValue"}},
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/JsonValue"}},
    ],
}


class _WireSchema(GenerateJsonSchema):
    """Pydantic's schema, with ``Any`` as a JSON value (``args``, ``edited_args``) rather than
    the empty schema, and without the per-field titles ("Turn", "Agent Id"): the TypeScript
    generator would turn each title into a type alias of its own."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def any_schema(self, schema: core_schema.AnySchema) -> JsonSchemaValue:
        # A placeholder: pydantic resolves every $ref it meets, and JsonValue is not its own.
        return dict(_ANY)


_ANY: JsonSchemaValue = {"x-any": True}


def _json_values(node: Any) -> Any:
    """``node`` with each :data:`_ANY` placeholder replaced by a reference to JsonValue."""
    if node == _ANY:
        return {"$ref": "#/$defs/JsonValue"}
    if isinstance(node, dict):
        return {key: _json_values(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_json_values(value) for value in node]
    return node


def wire_schema() -> dict[str, Any]:
    """One JSON Schema document: every type of :data:`ROOTS` under ``$defs``, by its name."""
    inputs = [(name, "validation", TypeAdapter(tp)) for name, tp in ROOTS.items()]
    refs, top = TypeAdapter.json_schemas(
        inputs,  # type: ignore[arg-type]
        ref_template="#/$defs/{model}",
        schema_generator=_WireSchema,
    )
    defs: dict[str, JsonSchemaValue] = {**top.get("$defs", {}), "JsonValue": JSON_VALUE}
    for (name, _mode), schema in refs.items():
        if schema.get("$ref") != f"#/$defs/{name}":
            defs[name] = {"title": name, **schema}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Wire",
        "description": "The widget wire protocol (docs/wire-protocol.md): its types are the "
        "$defs, generated from the pydantic models in anvia_notebook/notebook/_protocol.py (do "
        "not edit). The document itself is no message.",
        "type": "object",
        "$defs": _json_values(dict(sorted(defs.items()))),
    }


def wire_schema_text() -> str:
    """:func:`wire_schema` as the committed file holds it (indented, sorted, newline at the end)."""
    return json.dumps(wire_schema(), indent=2, ensure_ascii=False) + "\n"
