"""A ``dict[str, Model]`` result in the cell is a table of a row per key, as
``response.to_pandas()`` makes it (it was one row of JSON cells, "1 row", a city in each cell);
a dict that is one record (``dict[str, int]``, a model) stays one row, as in ``to_pandas()``."""

from __future__ import annotations

from typing import Any

import pytest
from notebook_helpers import PageState
from pydantic import BaseModel

from anvia_notebook import AgentBuilder
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook._protocol import parse_outbound
from anvia_notebook.notebook._snapshot import render_html
from anvia_notebook.notebook._transcript import Transcript


class City(BaseModel):
    name: str
    population: int


class Trip(BaseModel):
    start: City
    end: City


PARIS = {"name": "Paris", "population": 2_100_000}
LYON = {"name": "Lyon", "population": 500}


def final(arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id="o1", name="final_result", arguments=arguments)])


async def shown(output_type: Any, arguments: Any) -> tuple[str, str, Any]:
    """The result's entry on the page, the static copy's HTML, and the response."""
    agent = AgentBuilder("typed", QueueModel([final(arguments)])).build()
    request = agent.prompt("go").output_type(output_type).store(None)
    response = await request.send()
    ops: list[dict[str, Any]] = []
    transcript = Transcript("typed", emit=ops.append)
    page = PageState()
    page.apply({"type": "snapshot", "seq": 0, "transcript": transcript.state(0)})
    transcript.begin_run("r1", "typed", "go")
    for event in request._run.events:  # type: ignore[union-attr]
        transcript.apply(event)
    batch = {"type": "batch", "seq": 1, "ops": list(ops)}
    parse_outbound(batch)
    page.apply(batch)
    return page.entries[-1]["text"], render_html(transcript.state(1)), response


async def test_models_by_key_are_a_row_per_key_as_in_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    text, html, response = await shown(dict[str, City], {"fr": PARIS, "lyon": LYON})
    assert text.startswith("**Result** (2 rows)")
    assert "|  | name | population |" in text
    assert "| fr | Paris | 2100000 |" in text and "| lyon | Lyon | 500 |" in text
    assert "<td>fr</td>" in html and "<td>Lyon</td>" in html
    frame = response.to_pandas()
    assert isinstance(frame, pd.DataFrame) and frame.index.tolist() == ["fr", "lyon"]
    assert len(frame) == 2


async def test_optional_models_by_key_are_a_row_per_key_too() -> None:
    text, _, _ = await shown(dict[str, City] | None, {"result": {"fr": PARIS}})
    assert text.startswith("**Result** (1 row)") and "| fr | Paris | 2100000 |" in text


async def test_a_dict_that_is_one_record_stays_one_row() -> None:
    text, _, _ = await shown(dict[str, int], {"a": 1, "b": 2})
    assert text.startswith("**Result** (1 row)") and "| 1 | 2 |" in text
    # a model whose fields are models is one record, not a table by key
    text, _, _ = await shown(Trip, {"start": PARIS, "end": LYON})
    assert text.startswith("**Result** (1 row)") and "| start | end |" in text


async def test_no_models_by_key_are_shown_as_the_empty_value_not_a_broken_table() -> None:
    """``{}`` was "(1 row)" over three lines of ``|  |`` (no header row: stray text)."""
    text, html, response = await shown(dict[str, City], {})
    assert response.data == {}
    assert "row" not in text and "|  |" not in text
    assert "{}" in text
    assert "<table" not in html


async def test_a_record_field_named_empty_keeps_its_column_beside_the_keys() -> None:
    """A record's own field named ``""`` took the place of the keys' column: each row lost its
    key (``| 1 | 2 |`` under a table of two columns), while ``to_pandas()`` kept it."""
    text, _, _ = await shown(dict[str, dict[str, int]], {"a": {"": 1, "x": 2}, "b": {"": 3}})
    assert text.startswith("**Result** (2 rows)")
    assert "|  |  | x |" in text
    assert "| a | 1 | 2 |" in text and "| b | 3 |  |" in text
