"""What a tool returning numpy or pandas data (``df.sum()``, an array, a DataFrame) hands the
model: compact JSON, never Python's repr or a printed table."""

from __future__ import annotations

import json
import math

import pytest

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import QueueModel

from helpers import AddInput, call, tool_results

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")


def _result_of(value: object) -> str:
    """The text the model sees when a tool returns ``value``."""
    echo = create_tool(name="echo", description="", input=AddInput, execute=lambda a, c: value)
    model = QueueModel([call("echo", {"x": 1, "y": 2}), "ok"])
    AgentBuilder("a", model).tool(echo).build().prompt("go").send_sync()
    return tool_results(model.requests[1])[0].content


def _frame() -> object:
    return pd.DataFrame(
        {
            "name": ["a", "b"],
            "qty": [3, 4],
            "price": [1.5, float("nan")],
            "day": pd.to_datetime(["2026-12-05", None]),
        }
    )


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: {"total": np.int64(5)}, '{"total":5}'),
        (lambda: np.int64(5), "5"),
        (lambda: np.float64(2.5), "2.5"),
        (lambda: np.bool_(True), "true"),
        (lambda: np.arange(3), "[0,1,2]"),
        (lambda: np.array([[1.0, np.nan], [np.inf, 2.0]]), "[[1.0,null],[null,2.0]]"),
        (lambda: {"rows": [np.float32(0.5)], np.int64(7): "seven"}, '{"rows":[0.5],"7":"seven"}'),
        (
            _frame,
            '[{"name":"a","qty":3,"price":1.5,"day":"2026-12-05T00:00:00"},'
            '{"name":"b","qty":4,"price":null,"day":null}]',
        ),
        (lambda: _frame()["qty"], '{"0":3,"1":4}'),
        (lambda: _frame()[["qty", "price"]].sum(), '{"qty":7.0,"price":1.5}'),
        (
            lambda: {"by_day": pd.Series({pd.Timestamp("2026-12-05"): 1})},
            '{"by_day":{"2026-12-05T00:00:00":1}}',
        ),
        (lambda: {"when": pd.Timestamp("2026-12-05 10:30")}, '{"when":"2026-12-05T10:30:00"}'),
        (lambda: pd.array([1, None], dtype="Int64"), "[1,null]"),
    ],
)
def test_numpy_and_pandas_results_reach_the_model_as_json(make, expected):
    text = _result_of(make())
    assert text == expected
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_float_that_json_cannot_hold_is_null(value):
    """As ``JSON.stringify`` writes it (before: ``NaN``, which is no JSON)."""
    assert _result_of({"x": value, "y": [value]}) == '{"x":null,"y":[null]}'
