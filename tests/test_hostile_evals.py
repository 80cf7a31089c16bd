"""Evals with hostile metrics and DataFrames: what a metric returns that is not a score, a
DataFrame whose columns or cells are odd. Each problem is that score's (or that case's) error,
said in words; the evaluation and its report (table, ``to_pandas``) never break."""

from __future__ import annotations

import asyncio
import decimal
import json
import sys

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, evals
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

pytestmark = pytest.mark.timeout(60)

CASES = [{"input": "a", "name": "a"}, {"input": "b", "name": "b"}]


def agent(answer: str = "7"):
    return AgentBuilder("evals-hostile", FunctionModel(lambda request: answer)).build()


def shown(report: evals.EvalReport) -> None:
    """Every way of showing the report works."""
    html = report._repr_html_()
    assert "<table>" in html
    frame = report.to_pandas() if _has_pandas() else None
    assert frame is None or len(frame) == len(report.cases)
    assert report.summary()


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_number_too_large_for_a_score_is_that_scores_error_and_the_others_are_kept():
    def huge(case, output):  # an int no float can hold
        return 10**400 if case.name == "a" else 0.75

    def fine(case, output):
        return True

    report = evals.evaluate_sync(agent(), CASES, [huge, fine], show=False)
    assert report.status == "done"
    a, b = report.cases
    assert a.scores["huge"] is None and not a.passed
    assert "too large" in a.details["huge"].error
    assert a.scores["fine"] is True
    assert b.scores["huge"] == 0.75 and b.passed
    assert report.mean_scores["huge"] == 0.75
    shown(report)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("yes", "returned str"),
        (10**400, "too large"),
        ({"score": 1}, "returned dict"),
        (float("nan"), "NaN"),
    ],
    ids=["text", "huge", "dict", "nan"],
)
def test_a_score_object_carrying_something_that_is_not_a_score_is_an_error(value, words):
    def scored(case, output):
        return evals.Score(value if case.name == "a" else 0.9, True, reason="why")

    report = evals.evaluate_sync(agent(), CASES, [scored], show=False)
    a, b = report.cases
    assert a.scores["scored"] is None and not a.passed
    assert words in a.details["scored"].error
    assert a.details["scored"].reason == "why"
    assert b.scores["scored"] == 0.9 and b.passed
    shown(report)


def test_a_decimal_is_a_number():
    def exact(case, output):
        return {"a": decimal.Decimal("0.75"), "b": decimal.Decimal("NaN")}[case.name]

    report = evals.evaluate_sync(agent(), CASES, [exact], show=False)
    a, b = report.cases
    assert a.scores["exact"] == 0.75 and a.passed and a.details["exact"].error is None
    assert b.scores["exact"] is None and "NaN" in b.details["exact"].error
    shown(report)


def test_a_number_whose_conversion_fails_is_that_scores_error():
    class Broken(float):
        def __float__(self) -> float:
            raise RuntimeError("no float for you")

    def broken(case, output):
        return Broken(0.5)

    report = evals.evaluate_sync(agent(), CASES, [broken], show=False)
    assert report.status == "done" and len(report.cases) == 2
    assert all(c.scores["broken"] is None and c.details["broken"].error for c in report.cases)
    shown(report)


# -- DataFrames ---------------------------------------------------------------------------------


@pytest.mark.parametrize("twice", ["input", "expected", "name"])
def test_a_dataframe_with_two_columns_of_the_same_name_is_refused(twice):
    pandas = pytest.importorskip("pandas")
    columns = ["input", "expected", "name"]
    frame = pandas.DataFrame([["a", "7", "first", "other"]], columns=[*columns, twice])
    # pandas would keep one of the two silently (a warning at most): the other's data lost
    with pytest.raises(ValueError, match=f"two columns named '{twice}'"):
        evals.evaluate_sync(agent(), frame, [evals.contains()], show=False)


def test_empty_cells_of_every_kind_are_missing_values():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(
        {
            "input": ["a", "b", "c"],
            "expected": pandas.Series(["7", pandas.NA, "8"], dtype="object"),
            "name": ["first", pandas.NA, None],
            "metadata": [{"k": 1}, pandas.NA, pandas.NaT],
        }
    )
    report = evals.evaluate_sync(agent(), frame, [evals.exact_match()], show=False)
    first, second, third = report.cases
    assert [c.name for c in report.cases] == ["first", "case-2", "case-3"]
    assert second.expected is None and second.metadata == {} and third.metadata == {}
    assert "has none" in second.details["exact_match"].error  # as for a NaN cell
    assert first.passed and not third.passed
    shown(report)
    dates = pandas.DataFrame({"input": ["a"], "expected": [pandas.NaT]})
    [case] = evals.evaluate_sync(agent(), dates, [evals.exact_match()], show=False).cases
    assert case.expected is None and "has none" in case.details["exact_match"].error
    with pytest.raises(ValueError, match="Row 1 of the DataFrame has no input"):
        evals.evaluate_sync(
            agent(), pandas.DataFrame({"input": [pandas.NA]}), [evals.contains()], show=False
        )


# -- compare, with a report that was stopped ---------------------------------------------------


async def test_compare_says_not_run_for_the_cases_stop_cut_off_not_removed():
    gate = asyncio.Event()

    async def respond(request):
        if request.messages[-1].content != "a":
            await gate.wait()  # never set: still running at Stop
        return "yes"

    cases = [{"input": k, "name": k} for k in "abc"]
    before = await evals.evaluate(agent("yes"), cases, [evals.contains("yes")], show=False)
    after = evals.runner.prepare(
        AgentBuilder("evals-hostile", FunctionModel(respond)).build(),
        cases,
        [evals.contains("yes")],
        concurrency=3,
    )
    finished = asyncio.Event()
    after.subscribe(lambda kind, index: finished.set() if kind == "case" else None)
    task = asyncio.ensure_future(evals.runner.run_report(after))
    await asyncio.wait_for(finished.wait(), 10)
    assert after.stop()
    await asyncio.wait_for(task, 10)
    assert after.not_run == ["b", "c"]
    comparison = evals.compare(before, after)
    changes = {c.name: c.change for c in comparison.cases}
    assert changes == {"a": "unchanged", "b": "not run", "c": "not run"}
    backwards = {c.name: c.change for c in evals.compare(after, before).cases}
    assert backwards == {"a": "unchanged", "b": "not run", "c": "not run"}
    assert "not run" in comparison._repr_html_()
    if _has_pandas():
        assert list(comparison.to_pandas()["change"]) == ["not run", "not run", "unchanged"]
    # a case Stop cut off, missing from the other report: removed (or added), as any other
    fewer = await evals.evaluate(agent("yes"), cases[:1], [evals.contains("yes")], show=False)
    assert {c.name: c.change for c in evals.compare(after, fewer).cases} == {
        "a": "unchanged",
        "b": "removed",
        "c": "removed",
    }
    assert {c.name: c.change for c in evals.compare(fewer, after).cases} == {
        "a": "unchanged",
        "b": "added",
        "c": "added",
    }


@pytest.mark.parametrize("field", ["input", "name"])
def test_a_case_whose_text_is_not_valid_unicode_is_refused_before_any_case_runs(field):
    # (a CSV read with encoding_errors="surrogateescape" gives such texts: the case's run could
    # not be stored, against "every case is a stored run")
    case = {"input": "add 2 and 5", "name": "sum", field: "caf\udce9"}
    model_calls = []
    model = FunctionModel(lambda request: model_calls.append(request) or "7")
    with pytest.raises(ValueError, match=rf"Case 2: its {field} is not valid text"):
        evals.evaluate_sync(
            AgentBuilder("evals-hostile", model).build(),
            [{"input": "fine"}, case],
            [evals.contains("7")],
            show=False,
        )
    assert model_calls == []


def test_whole_numbers_in_an_expected_column_with_gaps_stay_whole():
    """pandas stores a column of whole numbers with an empty cell as floats (7 becomes 7.0):
    the case expected "7.0" and failed on the answer "7". Such a column's numbers are whole
    again; a column with a fraction in it stays as it is."""
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"input": ["a", "b", "c"], "expected": [7, None, 8]})
    assert str(frame["expected"].dtype) == "float64"  # (what pandas did)
    report = evals.evaluate_sync(agent("7"), frame, [evals.exact_match()], show=False)
    first, second, third = report.cases
    assert first.expected == 7 and type(first.expected) is int and first.passed
    assert second.expected is None and third.expected == 8 and not third.passed
    fractions = pandas.DataFrame({"input": ["a", "b"], "expected": [7.5, 7.0]})
    report = evals.evaluate_sync(agent("7.0"), fractions, [evals.exact_match()], show=False)
    assert [c.expected for c in report.cases] == [7.5, 7.0]
    assert [c.passed for c in report.cases] == [False, True]


@pytest.mark.parametrize(
    ("raised", "told"),
    [
        (SystemExit(2), "SystemExit: 2"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
        pytest.param(
            asyncio.CancelledError(),
            "CancelledError",
            marks=pytest.mark.skipif(
                sys.version_info < (3, 11),
                reason="before Python 3.11 a task cannot tell its own CancelledError from Stop",
            ),
        ),
    ],
)
def test_a_metric_that_calls_exit_is_that_scores_error_and_the_evaluation_goes_on(raised, told):
    # A metric runs in a task of the evaluation: a SystemExit or KeyboardInterrupt out of it
    # would end the event loop (in a notebook, the kernel); a CancelledError it raises on its
    # own (nobody stopped the evaluation) ended the evaluation as if it were done.
    def quits(case, output):
        if case.name == "a":
            raise raised
        return 1.0

    def fine(case, output):
        return True

    report = evals.evaluate_sync(agent(), CASES, [quits, fine], show=False)
    assert report.status == "done"
    a, b = report.cases
    assert a.scores["quits"] is None and not a.passed
    assert a.details["quits"].error == told
    assert b.scores["quits"] == 1.0 and b.passed
    shown(report)


class Unreadable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("the message's data is gone")


def test_a_case_whose_run_fails_with_an_unreadable_error_is_that_cases_error():
    def model(request):
        if request.messages[-1].content == "a":
            raise Unreadable()
        return "7"

    report = evals.evaluate_sync(
        AgentBuilder("evals-hostile", FunctionModel(model)).build(),
        CASES,
        [evals.contains("7")],
        show=False,
    )
    assert report.status == "done"
    a, b = report.cases
    assert a.status == "error" and a.error.startswith("Unreadable: (the message of this")
    assert b.status == "success"
    shown(report)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("reply", "message"),
    [
        # Found with a regular expression, the object of a reply of many "{" took time
        # quadratic in its length: hours for this one.
        ("{" * 1_000_000, "no JSON object"),
        ("{" * 500_000 + '"score": }', "not valid JSON"),
        # Nested deeper than Python's JSON reader goes: RecursionError, not a verdict error.
        ('{"score": 1, "reasoning": ' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON"),
    ],
    ids=["many-opening-braces", "braces-before-the-object", "nested-too-deep"],
)
def test_a_judges_hostile_reply_is_that_scores_error(reply, message):
    def judge(request):
        return reply

    report = evals.evaluate_sync(
        agent(), CASES[:1], [evals.llm_judge(FunctionModel(judge), "Is it right?")], show=False
    )
    (case,) = report.cases
    assert case.scores["llm_judge"] is None and message in case.details["llm_judge"].error


class Answer(BaseModel):
    value: int


def typed_agent(value: object, text: str = "Sure, computing it now.") -> tuple[object, list]:
    calls: list[int] = []

    def model(request):
        calls.append(1)
        call = ToolCall(f"f{len(calls)}", "final_result", {"value": value})
        return ModelResponse(text, [call])

    agent = AgentBuilder("typed-eval", FunctionModel(model)).output_type(Answer, retries=1)
    return agent.build(), calls


def test_a_typed_agent_is_scored_on_its_validated_value():
    """The metrics see the value as JSON (not the chat text of the last turn) and the case
    keeps the value itself."""
    agent, _ = typed_agent(7)
    seen: list[object] = []

    def value_is_expected(case, output):
        seen.append(output)
        return json.loads(output)["value"] == case.expected

    cases = [{"input": "3+4", "expected": 7, "name": "sum"}]
    report = evals.evaluate_sync(
        agent, cases, [evals.json_valid(Answer), value_is_expected], show=False
    )
    [case] = report.cases
    assert seen == ['{"value":7}'] and case.output == '{"value":7}'
    assert case.data == Answer(value=7) and case.passed
    assert case.scores == {"json_valid": True, "value_is_expected": True}
    shown(report)


def test_a_typed_value_that_stays_invalid_is_that_cases_error_after_its_retries():
    """Nobody can fix it in an eval: the case ends as a run with nobody attached does, after
    the retries (before: each fix refused sent the model round again, 22 model calls and a
    turn-limit error)."""
    agent, calls = typed_agent("seven")
    report = evals.evaluate_sync(
        agent, [{"input": "3+4", "name": "sum"}], [evals.contains()], show=False
    )
    [case] = report.cases
    assert case.status == "error" and len(calls) == 2
    assert case.error.startswith(
        "OutputValidationError: The model's Answer is not valid after 1 retry"
    )
    assert "no approval handler or person to fix it" in case.error
    assert case.data is None


def test_a_sync_metric_runs_beside_the_others_not_one_after_another():
    """A sync grader (one that calls a service) held the event loop: ``concurrency`` did not
    apply to it. Four cases whose metric waits for all four to be in it at once only finish
    when they run side by side."""
    import threading

    together = threading.Barrier(4, timeout=20)

    def slow_judge(case, output):
        together.wait()  # (raises BrokenBarrierError after 20 s alone: the score's error)
        return True

    cases = [{"input": f"q{i}", "name": f"c{i}"} for i in range(4)]
    report = evals.evaluate_sync(agent(), cases, [slow_judge], concurrency=4, show=False)
    assert [c.details["slow_judge"].error for c in report.cases] == [None] * 4
    assert report.pass_rate == 1.0


def test_stop_while_a_sync_metric_runs_ends_the_evaluation_at_once():
    """Stop is not kept waiting for a sync metric still running (its thread goes on alone)."""
    import threading

    entered, release = threading.Event(), threading.Event()

    def stuck(case, output):
        entered.set()
        release.wait(20)
        return True

    async def main():
        report = evals.runner.prepare(agent(), CASES, [stuck], concurrency=1)
        task = asyncio.ensure_future(evals.runner.run_report(report))
        await asyncio.to_thread(entered.wait, 20)
        assert report.stop() is True
        return await asyncio.wait_for(task, 10)

    try:
        report = asyncio.run(main())
    finally:
        release.set()
    assert report.status == "stopped"
    assert report.not_run == ["a", "b"]


@pytest.mark.parametrize(
    ("expected", "output"),
    [
        (decimal.Decimal("9.90"), '"9.90"'),
        ({"when": __import__("datetime").date(2026, 12, 5)}, '{"when":"2026-12-05"}'),
        (
            [
                {
                    "b",
                }
            ],
            '[["b"]]',
        ),
    ],
)
def test_an_expected_value_json_cannot_hold_as_it_is_is_compared_as_pydantic_writes_it(
    expected, output
):
    """Before: every score was "TypeError: Object of type date is not JSON serializable"."""
    report = evals.evaluate_sync(
        agent(output), [{"input": "q", "expected": expected}], [evals.exact_match()], show=False
    )
    [case] = report.cases
    assert case.details["exact_match"].error is None
    assert case.passed


def test_an_expected_timestamp_from_a_dataframe_is_compared_as_its_iso_text():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"input": ["when?"], "expected": [pandas.Timestamp("2020-01-01")]})
    report = evals.evaluate_sync(
        agent('"2020-01-01T00:00:00"'), frame, [evals.exact_match()], show=False
    )
    assert report.cases[0].details["exact_match"].error is None and report.cases[0].passed


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: evals.Metric("m", bool, threshold=float("nan")), ValueError, "finite number"),
        (lambda: evals.Metric("m", bool, threshold="high"), TypeError, "not str 'high'"),
        (lambda: evals.Metric("m", bool, threshold=True), TypeError, "must be a number"),
        (lambda: evals.contains(5), TypeError, "must be a string .* not int 5"),
        (
            lambda: evals.llm_judge(agent().model, "Be right.", threshold=5),
            ValueError,
            "outside 0..1",
        ),
    ],
)
def test_a_metric_that_could_never_pass_or_fail_as_meant_is_refused_when_made(make, error, words):
    with pytest.raises(error, match=words):
        make()


def test_comparing_reports_whose_unnamed_cases_moved_warns_that_they_are_matched_by_place():
    old = evals.evaluate_sync(agent(), [{"input": "apple"}, {"input": "pear"}], [bool], show=False)
    new = evals.evaluate_sync(
        agent(), [{"input": "kiwi"}, {"input": "apple"}, {"input": "pear"}], [bool], show=False
    )
    with pytest.warns(UserWarning, match=r"2 case\(s\) have the same name .*'case-1', 'case-2'"):
        evals.compare(old, new)
    named = [{"input": "apple", "name": "apple"}]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = evals.evaluate_sync(agent(), named, [bool], show=False)
        evals.compare(first, evals.evaluate_sync(agent(), named, [bool], show=False))


def test_json_valid_on_output_nested_too_deeply_to_read_is_false_not_an_error():
    report = evals.evaluate_sync(agent("[" * 100_000), CASES[:1], [evals.json_valid()], show=False)
    detail = report.cases[0].details["json_valid"]
    assert detail.error is None and detail.value is False


def test_a_score_s_passed_is_a_python_bool_and_a_score_needs_a_value():
    """numpy's bool (from np.isclose or a comparison of numpy numbers) stayed as it was, and
    the widget could not send its table; "no" counted as a pass; a Score of None passed."""
    np = pytest.importorskip("numpy")

    def close_enough(case, output):
        return evals.Score(float(output), passed=np.isclose(float(output), 7.0))

    def says_no(case, output):
        return evals.Score(0.1, passed="no")

    def empty(case, output):
        return evals.Score(None, True)

    metrics = [close_enough, says_no, empty]
    report = asyncio.run(evals.evaluate(agent(), [{"input": "add 2 and 5"}], metrics))
    [case] = report.cases
    ok, no, none = (case.details[m.__name__] for m in metrics)
    assert ok.passed is True and type(ok.passed) is bool
    json.dumps([score.passed for score in case.details.values()])  # (as the widget sends it)
    assert (no.passed, no.error) == (
        False,
        "The metric returned a Score whose passed is str 'no'; passed is True or False.",
    )
    assert (none.passed, none.error) == (False, "The metric returned a Score without a value.")


def test_a_metric_given_uncalled_or_of_the_wrong_shape_is_refused_before_any_case_runs():
    ran = []

    def answer(request):
        ran.append(request)
        return "7"

    tested = AgentBuilder("a", FunctionModel(answer)).build()
    for given, words in [
        (
            evals.contains,
            r"evals.contains makes a metric: call it, metrics=\[evals.contains\(...\)\]",
        ),
        (evals.exact_match, "evals.exact_match makes a metric"),
        (evals.llm_judge, "evals.llm_judge makes a metric"),
    ]:
        with pytest.raises(TypeError, match=words):
            asyncio.run(evals.evaluate(tested, [{"input": "x", "expected": "7"}], [given]))

    def one_argument(output):
        return True

    with pytest.raises(
        TypeError, match=r"one_argument cannot be called as one_argument\(case, output\)"
    ):
        asyncio.run(evals.evaluate(tested, [{"input": "x"}], [one_argument]))
    assert ran == []


def test_a_case_made_from_a_dataframe_row_takes_an_empty_cell_as_no_expected_value():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"input": ["a", "b"], "expected": ["7", None]})
    cases = [evals.Case(row.input, row.expected) for row in frame.itertuples()]
    assert [c.expected for c in cases] == ["7", None]
    assert [evals.Case("x", missing).expected for missing in (pd.NA, pd.NaT, float("nan"))] == [
        None,
        None,
        None,
    ]


def test_the_tables_of_many_cases_show_the_first_200_and_say_how_many_more():
    """5,000 cases made a 1.4 MB table in the saved notebook (each display one more copy)."""
    cases = [{"input": str(n), "name": f"case {n}"} for n in range(260)]
    report = evals.evaluate_sync(agent(), cases, [evals.contains("7")], concurrency=8)
    html = report._repr_html_()
    assert html.count("<tr>") == 1 + 200  # the header and the first 200 cases
    assert "case 199<" in html and "case 200<" not in html
    assert "And 60 more cases: <code>report.to_pandas()</code> has every one." in html
    comparison = evals.compare(report, report)._repr_html_()
    assert "And 60 more cases: <code>comparison.to_pandas()</code>" in comparison
    small = evals.evaluate_sync(agent(), CASES, [evals.contains("7")])
    assert "more cases" not in small._repr_html_()
