"""Evals, through the public API: an expected value compared as the typed output is written,
a case's time without its scoring, sync graders as many at once as ``concurrency``, a judge's
prose with braces, automatic case names, metadata keys, and the comparison's column types."""

from __future__ import annotations

import dataclasses
import threading
import time
from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

pytestmark = pytest.mark.timeout(120)


def agent(answer: str = "ok", name: str = "evals-fixes"):
    return AgentBuilder(name, FunctionModel(lambda request: answer)).build()


def typed_agent(output_type, arguments):
    """An agent whose model gives ``arguments`` as its ``output_type`` value."""
    model = FunctionModel(
        lambda request: ModelResponse(
            tool_calls=[ToolCall(id="o1", name="final_result", arguments=arguments)]
        )
    )
    return AgentBuilder("typed", model).output_type(output_type).build()


class Value(BaseModel):
    value: int


class City(BaseModel):
    name: str
    tags: list[str]


@dataclasses.dataclass
class Point:
    x: int
    y: float


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (Value, {"value": 7}, {"value": 7}),
        (Value, {"value": 7}, Value(value=7)),
        (City, {"name": "Zürich", "tags": ["été"]}, {"name": "Zürich", "tags": ["été"]}),
        (City, {"name": "Zürich", "tags": ["été"]}, City(name="Zürich", tags=["été"])),
        (Point, {"x": 1, "y": 2.5}, Point(1, 2.5)),
        (list[int], {"result": [1, 2]}, [1, 2]),
    ],
    ids=["dict", "model", "non-ascii-dict", "non-ascii-model", "dataclass", "list"],
)
def test_exact_match_and_contains_pass_on_a_typed_output_equal_to_the_expected_value(
    output_type, arguments, expected
):
    """Before: the output was compact JSON (``{"value":7}``) and the expected value was written
    with spaces (``{"value": 7}``), non-ASCII escaped: neither metric could ever pass."""
    report = evals.evaluate_sync(
        typed_agent(output_type, arguments),
        [evals.Case("q", expected=expected)],
        [evals.exact_match(), evals.contains()],
        show=False,
    )
    [case] = report.cases
    assert case.status == "success", case.error
    assert case.scores == {"exact_match": True, "contains": True}, case.output
    assert case.passed


class Price(BaseModel):
    sku: str
    price: float


def test_a_typed_output_s_float_matches_a_whole_number_expected_and_a_blank_row_changes_nothing():
    """A ``float`` field holds 7.0 where a case expects 7: it failed (it passed only when the
    expected value was written as the model); and one blank ``expected`` cell in a DataFrame
    turned the column's 7.0 into 7, failing every other row."""
    pandas = pytest.importorskip("pandas")
    price = typed_agent(Price, {"sku": "A1", "price": 7})
    cases = [evals.Case("q", expected={"sku": "A1", "price": 7}, name="dict")]
    cases.append(evals.Case("q", expected=Price(sku="A1", price=7), name="model"))
    report = evals.evaluate_sync(price, cases, [evals.exact_match()], show=False)
    assert [case.scores for case in report.cases] == [{"exact_match": True}] * 2
    seven = typed_agent(float, {"result": 7.0})
    frame = pandas.DataFrame({"input": ["a", "b", "c"], "expected": [7.0, 7.0, None]})
    report = evals.evaluate_sync(seven, frame, [evals.exact_match()], show=False)
    assert [case.scores["exact_match"] for case in report.cases[:2]] == [True, True]


def test_a_case_duration_is_its_runs_time_not_its_scoring(monkeypatch):
    """The clock the report reads moves a second while the agent runs and an hour while the
    metric scores: the case's time is the run's (before: the hour was in it too)."""
    real = time.perf_counter
    moved = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + moved[0])

    def answer(request):
        moved[0] += 1.0
        return "ok"

    def grader(case, output):
        moved[0] += 3600.0
        return True

    run_agent = AgentBuilder("timed", FunctionModel(answer)).build()
    report = evals.evaluate_sync(run_agent, [{"input": "q"}], [grader], show=False)
    [case] = report.cases
    assert case.passed
    assert 1000 <= case.duration_ms < 3_600_000
    pandas = pytest.importorskip("pandas")
    assert isinstance(report.to_pandas(), pandas.DataFrame)
    assert 1000 <= report.to_pandas()["duration_ms"].iloc[0] < 3_600_000


def test_sync_graders_run_as_many_at_once_as_the_concurrency_and_their_threads_end():
    """33 cases at concurrency 33, each grader waiting until all 33 are in it at once: before,
    the graders shared a pool of at most min(32, CPUs + 4) threads (6 on 2 CPUs), so they never
    met, and its threads stayed alive after the evaluation."""
    together = threading.Barrier(33, timeout=15)
    threads: list[threading.Thread] = []
    lock = threading.Lock()

    def meets_the_others(case, output):
        with lock:
            threads.append(threading.current_thread())
        together.wait()  # (BrokenBarrierError, the score's error, when not all 33 are in it)
        return True

    cases = [{"input": f"q{i}", "name": f"c{i}"} for i in range(33)]
    report = evals.evaluate_sync(agent(), cases, [meets_the_others], concurrency=33, show=False)
    assert [c.details["meets_the_others"].error for c in report.cases] == [None] * 33
    assert report.pass_rate == 1.0
    assert len({id(t) for t in threads}) == 33
    for thread in threads:
        thread.join(timeout=10)
    assert [t.name for t in threads if t.is_alive()] == []


@pytest.mark.parametrize(
    ("reply", "score", "reason"),
    [
        ('The answer names {A1}. {"score": 0.9, "reasoning": "fine"}', 0.9, "fine"),
        ('It gave {"value": 7}, so: {"score": 1, "reasoning": "right"}', 1.0, "right"),
        ('Not {"score": } but {"score": 0.25, "reasoning": "weak"}', 0.25, "weak"),
        ("{" * 500_000 + '"score": 1}', 1.0, ""),
    ],
    ids=["prose-brace", "object-without-score-first", "broken-object-first", "many-braces"],
)
def test_a_judges_verdict_after_braces_in_its_prose_is_read(reply, score, reason):
    """Before: the object was read from the reply's first ``{``; a ``{`` of the prose before
    it made a valid verdict an error."""
    judge = evals.llm_judge(FunctionModel(lambda request: reply), "Is it right?")
    report = evals.evaluate_sync(agent("Refunded order {A1}"), [{"input": "refund"}], [judge])
    [case] = report.cases
    assert case.details["llm_judge"].error is None
    assert case.scores["llm_judge"] == score
    assert case.details["llm_judge"].reason == reason


def test_a_judges_reply_whose_objects_have_no_score_is_that_scores_error():
    judge = evals.llm_judge(
        FunctionModel(lambda request: 'See {A1} and {"verdict": {"score": 1}}.'), "Is it right?"
    )
    report = evals.evaluate_sync(agent(), [{"input": "q"}], [judge], show=False)
    [case] = report.cases
    assert case.scores["llm_judge"] is None
    assert "no score" in case.details["llm_judge"].error


def test_unnamed_cases_are_not_given_a_name_another_case_has():
    """Before: "Cases 1 and 2 are both named 'case-2'", a name the user never gave twice."""
    report = evals.evaluate_sync(
        agent(),
        [
            {"input": "x", "name": "case-2"},
            {"input": "y"},
            {"input": "z", "name": "case-2-2"},
            {"input": "w"},
        ],
        [evals.contains("ok")],
        show=False,
    )
    names = [c.name for c in report.cases]
    assert names == ["case-2", "case-2-3", "case-2-2", "case-4"]
    assert [c.input for c in report.cases] == ["x", "y", "z", "w"]


def test_names_given_twice_are_still_refused():
    with pytest.raises(ValueError, match="Cases 1 and 2 are both named 'same'"):
        evals.evaluate_sync(
            agent(),
            [{"input": "x", "name": "same"}, {"input": "y", "name": "same"}],
            [evals.contains("ok")],
            show=False,
        )


def test_metadata_with_a_key_that_is_not_text_is_refused_naming_the_case():
    """Before: pydantic's "1 validation error for Case / metadata.1.[key]", naming no case."""
    ran = []

    def answer(request):
        ran.append(request)
        return "ok"

    run_agent = AgentBuilder("meta", FunctionModel(answer)).build()
    with pytest.raises(
        ValueError, match=r"^Case 2 has metadata with the key 1 \(int\); the keys"
    ) as info:
        evals.evaluate_sync(
            run_agent,
            [{"input": "x"}, {"input": "y", "metadata": {1: 2}}],
            [evals.contains("ok")],
            show=False,
        )
    assert "validation error" not in str(info.value)
    assert ran == []  # refused before any case ran


def test_metadata_keys_of_a_dataframe_row_are_checked_too():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"input": ["x"], "metadata": [{("a", 1): "b"}]})
    with pytest.raises(ValueError, match=r"^Row 1 of the DataFrame has metadata with the key"):
        evals.evaluate_sync(agent(), frame, [evals.contains("ok")], show=False)


def test_a_comparison_types_a_metric_only_one_report_has_alike_on_both_sides():
    """Before: ``contains_a`` (no report a score) was Float64 beside ``contains_b``'s boolean."""
    pytest.importorskip("pandas")
    cases = [{"input": "q", "expected": "ok", "name": "q"}]
    a = evals.evaluate_sync(agent(), cases, [evals.exact_match()], show=False)
    b = evals.evaluate_sync(agent(), cases, [evals.exact_match(), evals.contains()], show=False)
    for frame, empty, full in [
        (evals.compare(a, b).to_pandas(), "contains_a", "contains_b"),
        (evals.compare(b, a).to_pandas(), "contains_b", "contains_a"),
    ]:
        assert str(frame[full].dtype) == "boolean"
        assert str(frame[empty].dtype) == "boolean"
        assert frame[empty].isna().all()
        assert str(frame["contains_delta"].dtype) == "Float64"


def test_a_comparison_types_a_metric_that_failed_on_every_case_of_one_side_alike():
    pytest.importorskip("pandas")

    def checks(case, output):
        if output == "broken":
            raise RuntimeError("no service")
        return True

    cases = [{"input": "q", "name": "q"}]
    a = evals.evaluate_sync(agent("broken"), cases, [checks], show=False)
    b = evals.evaluate_sync(agent("fine"), cases, [checks], show=False)
    frame = evals.compare(a, b).to_pandas()
    assert (str(frame["checks_a"].dtype), str(frame["checks_b"].dtype)) == ("boolean", "boolean")


def test_a_typed_text_label_is_scored_as_the_text_not_as_a_json_string():
    """A classifier (``output_type(Literal["positive", "negative"])``) scored as JSON gave the
    metrics ``"positive"`` with its quotes: ``exact_match`` against ``expected="positive"``
    failed every case, and so did ``matches("^positive$")``."""

    class Mood(str, Enum):
        POSITIVE = "positive"

    for output_type in (Literal["positive", "negative"], str, Mood):
        report = evals.evaluate_sync(
            typed_agent(output_type, {"result": "positive"}),
            [evals.Case("I love it", expected="positive")],
            [evals.exact_match(), evals.matches("^positive$")],
            show=False,
        )
        [case] = report.cases
        assert case.status == "success", case.error
        assert case.output == "positive", output_type
        assert case.passed, (output_type, case.scores)
        assert case.data == "positive"
