"""The DataFrames a notebook user looks at: counts are integers and a missing number is <NA>
(pandas' nullable types), never ``430.0`` nor a mix of ``None`` and ``NaN``."""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, Usage, evals
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel

from helpers import calls, make_add_tool

pd = pytest.importorskip("pandas")


def test_a_traces_token_counts_are_integers_and_a_tool_rows_are_missing():
    model = QueueModel(
        [
            calls(("add", {"x": 1, "y": 2}, "a")),
            ModelResponse(text="3", usage=Usage(input_tokens=430, output_tokens=7)),
        ]
    )
    agent = AgentBuilder("adder", model).tools([make_add_tool()]).build()
    frame = agent.prompt("add").send_sync().trace.to_pandas()
    for column in ("turn", "input_tokens", "output_tokens", "cached_tokens"):
        assert frame[column].dtype == "Int64", column
    assert frame["duration_ms"].dtype == "Float64"
    assert list(frame["kind"]) == ["model", "tool", "model"]
    assert frame["input_tokens"].iloc[2] == 430
    assert frame["input_tokens"].iloc[1] is pd.NA  # a tool row has no tokens
    assert frame["first_token_ms"].iloc[1] is pd.NA
    shown = frame.to_string()
    assert "430.0" not in shown and "NaN" not in shown and "430" in shown


def test_an_evaluations_counts_are_integers_and_a_failed_cases_scores_are_missing():
    async def respond(request):
        prompt = request.messages[-1].content
        if prompt == "break":
            raise RuntimeError("model down")
        return ModelResponse(text="Paris", usage=Usage(input_tokens=400, output_tokens=30))

    agent = AgentBuilder("geo", FunctionModel(respond)).build()
    cases = [
        evals.Case(name="ok", input="capital of France", expected="paris"),
        evals.Case(name="broken", input="break", expected="x"),
    ]

    def length_score(case, output):
        if output.startswith("P"):
            raise ValueError("cannot score this one")  # the metric fails: no score
        return len(output) / 10

    length = evals.Metric("length_score", length_score)
    report = evals.evaluate_sync(agent, cases, [evals.contains(case_sensitive=False), length])
    frame = report.to_pandas()
    assert [c.status for c in report.cases] == ["success", "error"]
    assert frame["tokens"].dtype == "Int64" and frame["duration_ms"].dtype == "Int64"
    assert frame["tokens"].iloc[0] == 430
    assert frame["contains"].dtype == "boolean" and frame["length_score"].dtype == "Float64"
    assert frame["contains"].iloc[0] == True  # noqa: E712 (a numpy bool)
    assert frame["length_score"].iloc[0] is pd.NA  # the metric failed
    assert frame["contains"].iloc[1] is pd.NA and frame["length_score"].iloc[1] is pd.NA
    assert frame["error"].iloc[0] == "length_score: ValueError: cannot score this one"
    assert frame["output"].iloc[1] is pd.NA
    shown = frame.to_string()
    assert "NaN" not in shown and "430.0" not in shown
    comparison = evals.compare(report, report).to_pandas()
    assert comparison["contains_a"].dtype == "boolean"
    assert comparison["length_score_delta"].dtype == "Float64"
    assert comparison["length_score_delta"].iloc[0] is pd.NA
    assert "NaN" not in comparison.to_string()


def test_an_evaluations_expected_column_keeps_whole_numbers_whole():
    """A case expecting 7 (and one expecting nothing) was shown as 7.0 and NaN: whole numbers
    are ``Int64`` with <NA>, numbers with a fraction ``Float64``, booleans ``boolean``, texts
    ``string``; any other mix (or an int no Int64 can hold) stays as given (``object``)."""
    agent = AgentBuilder("sums", FunctionModel(lambda request: "7")).build()

    def table(*expected):
        cases = [evals.Case(input=f"q{i}", expected=e) for i, e in enumerate(expected)]
        return evals.evaluate_sync(agent, cases, [evals.exact_match()]).to_pandas()["expected"]

    whole = table(7, None, 8)
    assert whole.dtype == "Int64"
    assert whole.iloc[0] == 7 and whole.iloc[1] is pd.NA and whole.iloc[2] == 8
    assert "7.0" not in whole.to_string() and "NaN" not in whole.to_string()
    assert table(7, 8).dtype == "Int64"
    assert table(2**62, None).iloc[0] == 2**62  # (exactly: not through a float)
    fractions = table(7.5, None)
    assert fractions.dtype == "Float64" and fractions.iloc[1] is pd.NA
    assert table(True, None).dtype == "boolean"
    assert table("7", None).dtype == "string"
    for mixed in [(7, "seven", None), (7, 7.5), (True, 1), ({"a": 1}, None), (10**30, 1)]:
        column = table(*mixed)
        assert column.dtype == object, mixed
        assert list(column) == list(mixed), mixed
        assert [type(v) for v in column] == [type(v) for v in mixed], mixed
