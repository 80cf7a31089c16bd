"""The committed JSON Schema of the wire protocol (js/src/generated/wire-schema.json) is current.

The page's TypeScript types are generated from that file; when a model in ``_protocol.py``
changes, regenerate with ``python scripts/wire_schema.py`` and ``npm run gen:wire`` in js/.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from anvia_notebook.notebook import _protocol
from anvia_notebook.notebook._wire_schema import wire_schema, wire_schema_text

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "js" / "src" / "generated" / "wire-schema.json"
FIXTURES = ROOT / "tests" / "fixtures" / "protocol"
KERNEL_TYPES = {"snapshot", "batch", "reply", "studio", "evals", "evals_update", "inspect_reply"}


def test_committed_schema_is_the_models_schema():
    committed = COMMITTED.read_text(encoding="utf-8")
    assert committed == wire_schema_text(), (
        "js/src/generated/wire-schema.json is out of date with the models in _protocol.py: run "
        "`python scripts/wire_schema.py` at the repository root, then `npm run gen:wire` in js/"
    )


def test_every_model_has_a_type_of_its_own():
    """Every model with fields (a base with none, such as ``_Model``, is no wire type)."""
    defs = wire_schema()["$defs"]
    models = {
        value.__name__
        for value in vars(_protocol).values()
        if isinstance(value, type) and issubclass(value, _protocol._Model) and value.model_fields
    }
    assert models <= set(defs), models - set(defs)
    assert {"KernelMessage", "InboundMessage", "Entry", "Op", "JsonValue"} <= set(defs)


def _messages(path: Path) -> list[Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


@pytest.fixture(scope="module")
def defs() -> dict[str, Any]:
    return dict(json.loads(COMMITTED.read_text(encoding="utf-8"))["$defs"])


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name)
def test_valid_fixtures_match_the_schema(path: Path, defs: dict[str, Any]):
    for message in _messages(path):
        root = "KernelMessage" if message["type"] in KERNEL_TYPES else "InboundMessage"
        jsonschema.Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{root}"}).validate(
            message
        )
