"""Evals through the public API: scores, errors, concurrency, DataFrames, compare, no reviewer."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, ToolApproval, ask_question, evals, get_store
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, ToolCall

from helpers import make_add_tool, tool_results

ANSWERS = {"add 2 and 5": "7", "capital of France": "Paris", "json please": '{"a": 1}'}


def answering(answers=ANSWERS, fail_on: str | None = None):
    """A model answering each prompt from ``answers``."""

    async def respond(request):
        prompt = [m for m in request.messages if m.role == "user"][-1].content
        if fail_on is not None and fail_on in prompt:
            raise RuntimeError(f"model broke on {prompt}")
        return ModelResponse(text=answers.get(prompt, "I don't know"))

    return FunctionModel(respond)


def agent_with(model, *tools):
    return AgentBuilder("evals-test", model).tools(list(tools)).build()


CASES = [
    evals.Case(name="sum", input="add 2 and 5", expected="7"),
    evals.Case(input="capital of France", expected="paris"),
    {"input": "json please", "expected": '{"a": 1}'},
]


async def test_scores_pass_rate_means_and_case_names(store_path):
    def short(case, output):
        return len(output) < 5

    async def closeness(case, output):
        await asyncio.sleep(0)
        return 0.75 if case.name == "sum" else 0.25

    report = await evals.evaluate(
        agent_with(answering()),
        CASES,
        [
            evals.exact_match(),
            evals.contains(),
            evals.contains(case_sensitive=False, name="contains_any_case"),
            short,
            closeness,
        ],
    )
    names = [c.name for c in report.cases]
    assert names == ["sum", "case-2", "case-3"]
    by_name = {c.name: c for c in report.cases}
    assert by_name["sum"].scores == {
        "exact_match": True,
        "contains": True,
        "contains_any_case": True,
        "short": True,
        "closeness": 0.75,
    }
    assert by_name["sum"].passed is True
    # case matters to exact_match and contains, as in Anvia, unless told otherwise
    assert by_name["case-2"].scores["exact_match"] is False
    assert by_name["case-2"].scores["contains"] is False
    assert by_name["case-2"].scores["contains_any_case"] is True
    assert by_name["case-2"].passed is False
    assert by_name["case-3"].output == '{"a": 1}'
    assert by_name["case-3"].passed is False  # closeness 0.25
    assert report.pass_rate == pytest.approx(1 / 3)
    assert report.mean_scores["exact_match"] == pytest.approx(2 / 3)
    assert report.mean_scores["closeness"] == pytest.approx((0.75 + 0.25 + 0.25) / 3)
    for case in report.cases:
        assert case.status == "success" and case.error is None
        assert case.duration_ms >= 0 and case.tokens >= 0
    assert report.status == "done"


async def test_a_mean_score_is_the_decimal_mean_not_floating_point_noise(store_path):
    """Scores of 0.1, 0.2 and 0.3 averaged 0.20000000000000004 (and ten 0.1s
    0.09999999999999999) in ``mean_scores``, as printed and exported."""
    scores = {"sum": [0.1] * 10, "capital of France": [0.2] * 10, "json please": [0.3] * 10}

    def tenth(case, output):
        return scores[case.input].pop()

    cases = [evals.Case(input=prompt) for prompt in ["sum", "capital of France", "json please"]]
    report = await evals.evaluate(agent_with(answering()), cases, [tenth])
    assert report.mean_scores == {"tenth": 0.2}
    ten = await evals.evaluate(agent_with(answering()), [evals.Case(input="sum")] * 10, [tenth])
    assert ten.mean_scores == {"tenth": 0.1}


async def test_every_case_is_a_stored_run(store_path):
    report = await evals.evaluate(agent_with(answering()), CASES, [evals.contains()])
    store = get_store()
    assert store is not None
    for case in report.cases:
        state = store.get(case.run_id)
        assert state.status == "success"
        assert state.output == case.output
        assert state.messages[state.prompt_index].content == case.input
    assert len({c.run_id for c in report.cases}) == 3


async def test_matches_and_json_valid_with_pydantic_and_json_schema():
    class Point(BaseModel):
        a: int

    answers = {"one": '{"a": 1}', "two": '{"a": "x"}', "three": "not json", "four": " [1, 2] "}
    cases = [{"input": k} for k in answers]
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    report = await evals.evaluate(
        agent_with(answering(answers)),
        cases,
        [
            evals.matches(r"\d"),
            evals.json_valid(),
            evals.json_valid(Point, name="point"),
            evals.json_valid(schema, name="schema"),
        ],
    )
    rows = {c.input: c.scores for c in report.cases}
    assert rows["one"] == {"matches": True, "json_valid": True, "point": True, "schema": True}
    assert rows["two"] == {"matches": False, "json_valid": True, "point": False, "schema": False}
    assert rows["three"] == {"matches": False, "json_valid": False, "point": False, "schema": False}
    assert rows["four"]["json_valid"] is True and rows["four"]["schema"] is False
    two = next(c for c in report.cases if c.input == "two")
    assert "a" in two.details["point"].reason
    assert "integer" in two.details["schema"].reason
    assert (
        "not JSON"
        in next(c for c in report.cases if c.input == "three").details["json_valid"].reason
    )


async def test_a_failing_run_is_an_error_and_the_others_go_on():
    report = await evals.evaluate(
        agent_with(answering(fail_on="France")), CASES, [evals.contains()], concurrency=2
    )
    statuses = {c.name: (c.status, c.passed) for c in report.cases}
    assert statuses == {
        "sum": ("success", True),
        "case-2": ("error", False),
        "case-3": ("success", True),
    }
    failed = report.cases[1]
    assert failed.error == "RuntimeError: model broke on capital of France"
    assert failed.scores == {} and failed.output is None
    assert report.errors == 1
    assert report.pass_rate == pytest.approx(2 / 3)


async def test_a_metric_that_raises_marks_only_that_score():
    def fragile(case, output):
        if case.name == "sum":
            raise KeyError("boom")
        return True

    def returns_text(case, output):
        return "yes"

    report = await evals.evaluate(
        agent_with(answering()), CASES, [evals.contains(), fragile, returns_text]
    )
    first = report.cases[0]
    assert first.status == "success"
    assert first.scores["fragile"] is None
    assert first.details["fragile"].error == "KeyError: 'boom'"
    assert first.scores["contains"] is True
    assert "returned str" in first.details["returns_text"].error
    assert all(not c.passed for c in report.cases)  # returns_text never scores
    assert report.cases[1].scores["fragile"] is True
    assert report.mean_scores["fragile"] == 1.0  # errors are left out of the mean
    assert report.mean_scores["returns_text"] is None
    # The case failed: its error says which metrics could not score it, and why.
    assert first.error.startswith("fragile: KeyError: 'boom'; returns_text: ")
    assert report.cases[1].error.startswith("returns_text: ")
    assert report.errors == 0  # (the runs did not fail)


async def test_a_metric_needing_expected_errors_on_cases_without_it():
    report = await evals.evaluate(
        agent_with(answering()), [{"input": "add 2 and 5"}], [evals.contains()]
    )
    assert "needs the case's expected value" in report.cases[0].details["contains"].error
    row = report.to_pandas().iloc[0]
    assert not row["passed"] and row["status"] == "success"
    assert row["error"].startswith("contains: ValueError: ") and "expected value" in row["error"]


async def test_threshold_of_a_metric():
    report = await evals.evaluate(
        agent_with(answering()),
        CASES[:1],
        [evals.Metric("strict", lambda case, output: 0.8, threshold=0.9)],
    )
    assert report.cases[0].scores == {"strict": 0.8}
    assert report.cases[0].passed is False


async def test_concurrency_runs_cases_at_the_same_time():
    """With concurrency=4, four cases are in flight at once: each case's model answers only
    once four have started, so a runner running fewer at a time never gets there (the
    evaluation then times out and the test fails). How much faster that makes an evaluation is
    a figure for benchmarks, not a test."""
    in_flight = 0
    peak = 0
    four_in = asyncio.Event()
    log: list[tuple[str, str]] = []

    async def respond(request):
        nonlocal in_flight, peak
        prompt = [m for m in request.messages if m.role == "user"][-1].content
        in_flight += 1
        peak = max(peak, in_flight)
        log.append(("start", prompt))
        if in_flight == 4:
            four_in.set()
        await four_in.wait()
        in_flight -= 1
        log.append(("end", prompt))
        return "ok"

    cases = [{"input": f"case {i}"} for i in range(8)]
    report = await asyncio.wait_for(
        evals.evaluate(
            agent_with(FunctionModel(respond)), cases, [evals.contains("ok")], concurrency=4
        ),
        10,
    )
    assert peak == 4
    assert [kind for kind, _ in log[:4]] == ["start"] * 4  # the first four, before any ended
    assert sorted(prompt for kind, prompt in log if kind == "end") == sorted(
        c["input"] for c in cases
    )
    assert [c.status for c in report.cases] == ["success"] * 8
    assert report.pass_rate == 1.0


async def test_concurrency_is_a_limit():
    running = 0
    peak = 0
    release = asyncio.Event()

    async def respond(request):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if peak >= 3:
            release.set()
        await release.wait()
        running -= 1
        return "ok"

    await evals.evaluate(
        agent_with(FunctionModel(respond)),
        [{"input": str(i)} for i in range(7)],
        [evals.contains("ok")],
        concurrency=3,
    )
    assert peak == 3


async def test_protected_calls_are_rejected_when_no_reviewer_is_present():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="c1", name="add", arguments={"x": 1, "y": 2})]),
            "done",
        ]
    )
    report = await evals.evaluate(
        agent_with(model, add), [{"input": "add"}], [evals.contains("done")]
    )
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == evals.NO_REVIEWER_MESSAGE
    assert report.cases[0].passed is True


async def test_protected_calls_are_decided_by_approvals():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="c1", name="add", arguments={"x": 1, "y": 2})]),
            "done",
        ]
    )
    seen = []
    report = await evals.evaluate(
        agent_with(model, add),
        [{"input": "add"}],
        [evals.contains("done")],
        approvals=lambda request: seen.append(request.tool_name) or True,
    )
    assert seen == ["add"] and add.calls == [(1, 2)]
    assert report.cases[0].status == "success"


async def test_questions_do_not_wait_for_a_person():
    model = QueueModel(
        [
            ModelResponse(
                tool_calls=[
                    ToolCall(
                        id="q1",
                        name="ask_question",
                        arguments={
                            "questions": [
                                {
                                    "id": "p",
                                    "question": "Priority?",
                                    "choices": [{"label": "High", "value": "high"}],
                                }
                            ]
                        },
                    )
                ]
            ),
            "asked",
        ]
    )
    report = await asyncio.wait_for(
        evals.evaluate(
            agent_with(model, ask_question), [{"input": "escalate"}], [evals.contains("asked")]
        ),
        timeout=10,
    )
    assert report.cases[0].passed
    answer = json.loads(tool_results(model.requests[1])[0].content)
    assert answer["answers"][0]["answer"] == "No human answer was provided by this runtime."


async def test_max_turns_limits_each_case():
    looping = FunctionModel(
        lambda r: ModelResponse(
            tool_calls=[ToolCall(id=f"c{len(r.messages)}", name="add", arguments={"x": 1, "y": 1})]
        )
    )
    report = await evals.evaluate(
        agent_with(looping, make_add_tool()),
        [{"input": "loop"}],
        [evals.contains("x")],
        max_turns=1,
    )
    assert report.cases[0].status == "error"
    assert report.cases[0].error.startswith("MaxTurnsError")


def test_bad_input_is_refused_before_any_case_runs():
    model = answering()
    agent = agent_with(model)

    def refused(cases=CASES, metrics=None, **options):
        with pytest.raises((ValueError, TypeError)) as caught:
            evals.evaluate_sync(agent, cases, metrics or [evals.contains()], **options)
        return str(caught.value)

    assert "Case 2 has no input" in refused([{"input": "a"}, {"expected": "b"}])
    assert "Case 1 has no input" in refused([evals.Case(input="  ")])
    # (invisible only, which agent.prompt() refuses: it failed the whole evaluation mid-way)
    assert "Case 2 has no input" in refused([{"input": "a"}, {"input": "\u200b\n"}])
    assert "both named 'x'" in refused([{"input": "a", "name": "x"}, {"input": "b", "name": "x"}])
    assert "not a metric" in refused(metrics=[evals.contains(), "contains"])
    assert "Two metrics are named 'contains'" in refused(
        metrics=[evals.contains(), evals.contains()]
    )
    assert "like a column of the report" in refused(
        metrics=[evals.Metric("output", lambda c, o: True)]
    )
    assert "concurrency must be an integer of 1 or more" in refused(concurrency=0)
    assert "concurrency" in refused(concurrency=1.5)
    assert "no cases" in refused([])
    assert "unknown keys prompt" in refused([{"prompt": "a"}])
    assert model.requests == []  # nothing ran


def test_bad_metric_arguments_are_refused_when_made():
    with pytest.raises(ValueError, match="not a valid regular expression"):
        evals.matches("(")
    with pytest.raises(TypeError, match="pydantic model class or a JSON schema dict"):
        evals.json_valid(schema=42)
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        evals.json_valid(schema={"type": 12})
    with pytest.raises(ValueError, match="rubric must be a non-empty string"):
        evals.llm_judge(answering(), " ")


def test_dataframe_in_and_out():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(
        {
            "input": ["add 2 and 5", "capital of France"],
            "expected": ["7", None],
            "name": ["sum", None],
        }
    )
    report = evals.evaluate_sync(agent_with(answering()), frame, [evals.matches(r"\w")])
    table = report.to_pandas()
    assert list(table.columns) == [
        "name",
        "input",
        "expected",
        "output",
        "passed",
        "status",
        "error",
        "duration_ms",
        "tokens",
        "run_id",
        "matches",
    ]
    assert list(table["name"]) == ["sum", "case-2"]
    assert list(table["output"]) == ["7", "Paris"]
    assert pandas.isna(table["expected"][1]) and report.cases[1].expected is None
    assert list(table["matches"]) == [True, True]
    with pytest.raises(ValueError, match=r"no 'input' column .*prompt"):
        evals.evaluate_sync(
            agent_with(answering()), pandas.DataFrame({"prompt": ["a"]}), [evals.contains()]
        )
    with pytest.raises(ValueError, match="Row 2 of the DataFrame has no input"):
        evals.evaluate_sync(
            agent_with(answering()), pandas.DataFrame({"input": ["a", None]}), [evals.contains()]
        )


async def test_stop_keeps_the_finished_cases():
    gate = asyncio.Event()

    async def respond(request):
        prompt = request.messages[-1].content
        if prompt != "0":
            await gate.wait()  # never set: these cases are still running at Stop
        return "ok"

    report = evals.runner.prepare(
        agent_with(FunctionModel(respond)),
        [{"input": str(i)} for i in range(5)],
        [evals.contains("ok")],
        concurrency=2,
    )
    finished = asyncio.Event()
    report.subscribe(
        lambda kind, index: finished.set() if kind == "case" and report.finished else None
    )
    task = asyncio.ensure_future(evals.runner.run_report(report))
    await asyncio.wait_for(finished.wait(), 5)
    await asyncio.sleep(0)
    assert report.stop() is True
    result = await asyncio.wait_for(task, 5)
    assert result is report and report.status == "stopped"
    assert [c.name for c in report.cases] == ["case-1"]
    assert report.not_run == ["case-2", "case-3", "case-4", "case-5"]
    for index, run in report.runs.items():
        assert run.done
        if index != 0:
            assert run.status == "cancelled"
    assert len(report.to_pandas()) == 1
    assert report.stop() is False


async def test_cancelling_evaluate_cancels_every_case():
    gate = asyncio.Event()  # never set: both cases wait in their model call
    started = 0
    both_started = asyncio.Event()
    cancelled: list[str] = []

    async def respond(request):
        nonlocal started
        started += 1
        if started == 2:
            both_started.set()
        try:
            await gate.wait()
        except asyncio.CancelledError:
            cancelled.append([m for m in request.messages if m.role == "user"][-1].content)
            raise
        return "ok"

    task = asyncio.ensure_future(
        evals.evaluate(
            agent_with(FunctionModel(respond)),
            [{"input": "a"}, {"input": "b"}],
            [evals.contains("ok")],
            concurrency=2,
        )
    )
    await asyncio.wait_for(both_started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["a", "b"]  # both cases' calls were cancelled, not left running


async def test_evaluate_sync_refuses_to_block_a_running_loop():
    with pytest.raises(RuntimeError, match=r"await evals\.evaluate"):
        evals.evaluate_sync(agent_with(answering()), CASES, [evals.contains()])


def test_compare_s_changes_are_rounded_as_the_means_are():
    """``MetricChange.delta`` was -0.03333333333300001 and a case's 0.19999999999999998: the
    floating point noise the report's means are rounded to leave out."""
    scores = {"A": [0.1, 0.2, 0.3], "B": [0.1, 0.2, 0.2]}

    def graded(case, output):
        return scores[output][int(case.input[1]) - 1]

    cases = [evals.Case(f"q{n}", name=f"c{n}") for n in (1, 2, 3)]
    a = evals.evaluate_sync(agent_with(FunctionModel(lambda r: "A")), cases, [graded], show=False)
    b = evals.evaluate_sync(agent_with(FunctionModel(lambda r: "B")), cases, [graded], show=False)
    comparison = evals.compare(b, a)
    [change] = comparison.metrics.values()
    assert (change.mean_a, change.mean_b, change.delta) == (0.166666666667, 0.2, 0.033333333333)
    deltas = [c.delta("graded") for c in comparison.cases]
    assert deltas == [0.0, 0.0, 0.1] and str(deltas[0]) == "0.0"  # (not -0.0)
    # (0.7 + 0.2 against 0.9: the same score, not "score changed" with a change of 0.0)
    scores = {"A": [0.7 + 0.2], "B": [0.9]}
    a = evals.evaluate_sync(
        agent_with(FunctionModel(lambda r: "A")), cases[:1], [graded], show=False
    )
    b = evals.evaluate_sync(
        agent_with(FunctionModel(lambda r: "B")), cases[:1], [graded], show=False
    )
    [case] = evals.compare(a, b).cases
    assert (case.change, case.delta("graded")) == ("unchanged", 0.0)


def test_compare_lists_newly_failing_first_and_metric_changes():
    before = evals.evaluate_sync(
        agent_with(answering({"a": "yes", "b": "no", "c": "yes", "d": "no"})),
        [{"input": k, "name": k} for k in "abcd"],
        [evals.contains("yes")],
    )
    after = evals.evaluate_sync(
        agent_with(answering({"a": "no", "b": "yes", "c": "yes", "e": "yes"})),
        [{"input": k, "name": k} for k in "abce"],
        [evals.contains("yes")],
    )
    comparison = evals.compare(before, after)
    assert [(c.name, c.change) for c in comparison.cases] == [
        ("a", "newly failing"),
        ("b", "newly passing"),
        ("d", "removed"),
        ("e", "added"),
        ("c", "unchanged"),
    ]
    change = comparison.metrics["contains"]
    assert change.mean_a == 0.5 and change.mean_b == 0.75 and change.delta == 0.25
    assert comparison.newly_failing == ["a"]
    table = comparison.to_pandas()
    assert list(table["name"]) == ["a", "b", "d", "e", "c"]
    assert {"contains_a", "contains_b", "contains_delta"} <= set(table.columns)
    assert table["contains_delta"][0] == -1.0
    html = comparison._repr_html_()
    assert html.index(">a<") < html.index(">b<")
    assert "+0.25" in html
    with pytest.raises(TypeError, match=r"report from evals\.evaluate"):
        evals.compare(before, "after")


def test_a_comparison_keeps_an_error_out_of_the_output_column():
    cases = [{"input": k, "name": k} for k in "ab"]
    before = evals.evaluate_sync(
        agent_with(answering({"a": "yes", "b": "yes"})), cases, [evals.contains("y")]
    )
    after = evals.evaluate_sync(
        agent_with(answering({"a": "yes"}, fail_on="b")), cases, [evals.contains("y")]
    )
    by_name = {c.name: c for c in evals.compare(before, after).cases}
    assert by_name["b"].output_a == "yes" and by_name["b"].error_a is None
    assert by_name["b"].output_b is None
    assert by_name["b"].error_b == "RuntimeError: model broke on b"
    table = evals.compare(before, after).to_pandas().set_index("name")
    pd = pytest.importorskip("pandas")
    assert table.loc["b", "output_b"] is pd.NA  # (as an error case's output in the report's)
    assert table.loc["b", "error_b"] == "RuntimeError: model broke on b"
    assert table.loc["a", "error_b"] is pd.NA and table.loc["a", "output_b"] == "yes"
    assert "error: RuntimeError: model broke on b" in evals.compare(before, after)._repr_html_()


def test_html_tables_escape_model_text():
    evil = '<img src=x onerror="alert(1)">'
    report = evals.evaluate_sync(
        agent_with(answering({evil: evil})),
        [{"input": evil, "name": "<b>x</b>"}],
        [evals.contains("img")],
    )
    html = report._repr_html_()
    assert "<img" not in html and "<b>x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    comparison = evals.compare(report, report)._repr_html_()
    assert "<img" not in comparison and "&lt;b&gt;x&lt;/b&gt;" in comparison


def test_llm_judge_keeps_score_and_reasoning():
    seen = []

    def judge(request):
        seen.append(request)
        text = request.messages[-1].content
        if "Paris" in text:
            return '```json\n{"score": 0.9, "reasoning": "Correct capital."}\n```'
        if "7" in text:
            return "I cannot grade this."
        return '{"score": 0.2, "reasoning": "Wrong."}'

    report = evals.evaluate_sync(
        agent_with(answering()),
        CASES,
        [evals.llm_judge(FunctionModel(judge), "Is the answer correct?")],
    )
    by_name = {c.name: c for c in report.cases}
    assert by_name["case-2"].scores["llm_judge"] == 0.9
    assert by_name["case-2"].details["llm_judge"].reason == "Correct capital."
    assert by_name["case-2"].passed
    assert by_name["case-3"].scores["llm_judge"] == 0.2 and not by_name["case-3"].passed
    assert "no JSON object" in by_name["sum"].details["llm_judge"].error
    prompt = seen[0].messages[-1].content
    assert "Is the answer correct?" in prompt and "## The agent's answer" in prompt
    assert "grade the answer" in seen[0].instructions
    # the judge's own calls are not stored as runs of the agent under test
    assert {c.run_id for c in report.cases} == {c.run_id for c in report.cases if c.run_id}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ('{"score": 1.5}', "outside 0..1"),
        ('{"score": "high"}', "not a number"),
        ('{"reasoning": "x"}', "no score"),
        ("{not json}", "not valid JSON"),
    ],
)
def test_judge_replies_without_a_verdict_are_errors(reply, message):
    from anvia_notebook.evals.judge import parse_verdict

    with pytest.raises(ValueError, match=message):
        parse_verdict(reply)


def test_report_text_and_summary():
    report = evals.evaluate_sync(agent_with(answering(fail_on="France")), CASES, [evals.contains()])
    assert repr(report) == (
        "EvalReport('evals-test': 3/3 cases, pass rate 67%, errors 1; mean contains 1.00)"
    )


def test_evals_never_import_jupyter_or_pandas_unless_asked():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from anvia_notebook import AgentBuilder, evals, set_store\n"
        "from anvia_notebook.models import FunctionModel\n"
        "set_store(None)\n"
        "agent = AgentBuilder('a', FunctionModel(lambda r: 'ok')).build()\n"
        "report = evals.evaluate_sync(agent, [{'input': 'x'}], [evals.contains('ok')])\n"
        "assert report.pass_rate == 1.0\n"
        "print(sorted(m for m in ('ipykernel', 'IPython', 'ipywidgets', 'anywidget', 'comm',\n"
        "    'traitlets', 'pandas', 'jsonschema', 'anvia_notebook.notebook') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_human_input_of_the_agent_is_never_waited_for():
    from anvia_notebook import StoreHumanInput

    def model():
        return QueueModel(
            [
                ModelResponse(
                    tool_calls=[ToolCall(id="c1", name="add", arguments={"x": 1, "y": 2})]
                ),
                "done",
            ]
        )

    add = make_add_tool(approval=ToolApproval())
    waiting = model()
    agent = AgentBuilder("a", waiting).tool(add).human_input(StoreHumanInput()).build()
    report = await asyncio.wait_for(
        evals.evaluate(agent, [{"input": "add"}], [evals.contains("done")]), timeout=10
    )
    assert report.cases[0].passed and add.calls == []
    assert tool_results(waiting.requests[1])[0].content == evals.NO_REVIEWER_MESSAGE
    # the agent's own approval handler (code, not a person) still decides
    deciding = model()
    agent = AgentBuilder("a", deciding).tool(add).approvals(lambda request: True).build()
    await evals.evaluate(agent, [{"input": "add"}], [evals.contains("done")])
    assert add.calls == [(1, 2)]


def test_exact_match_compares_exactly_unless_told_otherwise():
    case = evals.Case(input="q", expected="Paris")
    assert evals.exact_match().fn(case, "Paris") is True
    assert evals.exact_match().fn(case, " Paris\n") is False  # as Anvia's exactMatch
    assert evals.exact_match(strip=True).fn(case, " Paris\n") is True
    assert evals.exact_match(case_sensitive=False).fn(case, "PARIS") is True
    assert evals.contains().fn(case, "it is paris") is False
    assert evals.contains(case_sensitive=False).fn(case, "it is paris") is True


async def test_json_valid_refuses_nan_and_infinity_which_json_has_not():
    """Python's reader takes them; JSON (RFC 8259), ``JSON.parse`` and most services do not:
    an agent writing ``{"value": NaN}`` passed."""
    for output in ["NaN", '{"value": NaN}', "Infinity", '{"value": -Infinity}']:
        score = await evals.json_valid().score(evals.Case("x"), output)
        assert score.passed is False, output
        assert "is not a JSON value (JSON has no NaN or infinity)" in (score.reason or "")
    assert (await evals.json_valid().score(evals.Case("x"), '{"value": 1e308}')).passed is True


def test_exact_match_takes_data_whatever_the_order_of_its_keys():
    """A typed agent's output (its validated value as JSON) against an expected dict written
    in another key order failed; text stays compared as text, as in Anvia."""
    point = evals.Case(input="q", expected={"y": 2, "x": 1})
    assert evals.exact_match().fn(point, '{"x":1,"y":2}') is True
    assert evals.exact_match().fn(point, '{"x":1,"y":3}') is False
    # (numbers by value, as Anvia's JavaScript has them: 1 and 1.0 are one number)
    assert evals.exact_match().fn(evals.Case(input="q", expected={"x": 1}), '{"x":1.0}') is True
    assert evals.exact_match().fn(evals.Case(input="q", expected={"x": 1}), '{"x":1.5}') is False
    assert evals.exact_match().fn(evals.Case(input="q", expected=[True]), "[1]") is False
    assert evals.exact_match().fn(point, "not json") is False
    written = evals.Case(input="q", expected='{"x": 1, "y": 2}')  # (a text: compared as text)
    assert evals.exact_match().fn(written, '{"x":1,"y":2}') is False
    city = evals.Case(input="q", expected={"city": "Paris"})
    assert evals.exact_match().fn(city, '{"city":"paris"}') is False
    assert evals.exact_match(case_sensitive=False).fn(city, '{"city":"paris"}') is True
    street = evals.Case(input="q", expected={"street": "\u00c4u\u00dfere"})
    assert evals.exact_match(case_sensitive=False).fn(street, '{"street":"\u00e4usSERE"}') is True

    class Point(BaseModel):
        x: int
        y: int

    model = evals.Case(input="q", expected=Point(x=1, y=2))  # (a model, a tuple: data too)
    assert evals.exact_match().fn(model, '{"y": 2, "x": 1}') is True
    assert evals.exact_match().fn(evals.Case(input="q", expected=(1, 2)), "[1, 2]") is True


def test_compare_does_not_call_a_score_changed_when_a_report_only_adds_a_metric():
    cases = [{"input": k, "name": k} for k in "ab"]
    answers = {"a": "yes", "b": "yes"}
    before = evals.evaluate_sync(agent_with(answering(answers)), cases, [evals.contains("yes")])
    length = evals.Metric("length", lambda case, output: len(output) > 1)
    after = evals.evaluate_sync(
        agent_with(answering(answers)), cases, [evals.contains("yes"), length]
    )
    assert {row.name: row.change for row in evals.compare(before, after).cases} == {
        "a": "unchanged",
        "b": "unchanged",
    }


def _notebook_references(path, package_root):
    """Where ``path`` reaches the notebook layer: each import of ``anvia_notebook.notebook``
    (absolute or relative, type-only ones too) and each module name string naming it (what
    ``importlib.import_module`` takes), as ``(enclosing function or <module>, module name)``."""
    import ast
    import re

    relative = path.relative_to(package_root.parent).with_suffix("").parts
    package = relative if path.name == "__init__.py" else relative[:-1]
    if package[-1] == "__init__":
        package = package[:-1]
    target = re.compile(r"^(anvia_notebook)?\.*notebook(\.\w+)*$")
    found = []

    def absolute(module, level):
        if level == 0:
            return module or ""
        base = list(package[: len(package) - level + 1])
        return ".".join([*base, module] if module else base)

    def visit(node, scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = node.name if scope == "<module>" else f"{scope}.{node.name}"
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        found.extend(
            (scope, name)
            for name in names
            if name == "anvia_notebook.notebook" or name.startswith("anvia_notebook.notebook.")
        )
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, str) and target.match(value) and "." in value.strip("."):
            found.append((scope, value))  # a module name, for importlib
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(ast.parse(path.read_text()), "<module>")
    return sorted(set(found))


def test_the_runtime_reaches_the_notebook_layer_only_through_the_notebook_runner():
    """The runtime (evals included) never imports the notebook layer: it reaches it through
    ``request._notebook_runner()`` alone (inside a kernel). The package's lazy public names
    ``RunHandle`` and ``Studio`` are the only other mentions."""
    import pathlib

    import anvia_notebook

    root = pathlib.Path(anvia_notebook.__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "notebook":
            continue
        references = _notebook_references(path, root)
        if references:
            found[path.relative_to(root).as_posix()] = references
    assert found == {
        "__init__.py": [
            ("<module>", "anvia_notebook.notebook._handle"),
            ("<module>", "anvia_notebook.notebook._handle.RunHandle"),
            ("<module>", "anvia_notebook.notebook._studio"),
            ("<module>", "anvia_notebook.notebook._studio.Studio"),
            ("<module>", "notebook._handle"),
            ("<module>", "notebook._studio"),
        ],
        "request.py": [("_notebook_runner", ".notebook._runner")],
    }


def test_the_notebook_reference_scan_sees_every_form_of_import(tmp_path):
    """The scan above is only as good as what it recognises: each way of importing the
    notebook layer, from a module of the evals package, is found."""
    root = tmp_path / "anvia_notebook"
    (root / "evals").mkdir(parents=True)
    source = (
        "import anvia_notebook.notebook._runner\n"
        "from anvia_notebook.notebook import _runner\n"
        "from .. import notebook\n"
        "from ..notebook._evals_view import show_report\n"
        "from . import report\n"
        "import importlib\n"
        "def show():\n"
        "    from ..notebook import _evals_view\n"
        "    return importlib.import_module('.notebook._runner', 'anvia_notebook')\n"
        "text = 'shown in a notebook'\n"
    )
    module = root / "evals" / "runner.py"
    module.write_text(source)
    assert _notebook_references(module, root) == [
        ("<module>", "anvia_notebook.notebook"),
        ("<module>", "anvia_notebook.notebook._evals_view"),
        ("<module>", "anvia_notebook.notebook._evals_view.show_report"),
        ("<module>", "anvia_notebook.notebook._runner"),
        ("show", ".notebook._runner"),
        ("show", "anvia_notebook.notebook"),
        ("show", "anvia_notebook.notebook._evals_view"),
    ]


def test_numpy_scores_count_as_bools_and_numbers_and_infinity_is_an_error():
    np = pytest.importorskip("numpy")
    cases = [{"input": k, "name": k} for k in "abc"]

    def close(case, output):  # np.bool_, as np.isclose gives
        return np.isclose(len(output), 3)

    def count(case, output):  # np.int64
        return np.int64(output.count("y"))

    def ratio(case, output):  # np.float64, and +-inf for two of the cases
        return {"a": np.float64(0.75), "b": np.float64("inf"), "c": -np.inf}[case.name]

    def scored(case, output):  # a Score carrying infinity
        return evals.Score(float("inf") if case.name == "a" else 1.0, True)

    report = evals.evaluate_sync(
        agent_with(answering({"a": "yes", "b": "no", "c": "yes"})),
        cases,
        [close, count, ratio, scored],
    )
    a, b, c = report.cases
    assert a.scores["close"] is True and b.scores["close"] is False
    assert type(a.scores["close"]) is bool and a.details["close"].error is None
    assert a.scores["count"] == 1.0 and a.details["count"].passed
    assert b.scores["count"] == 0.0 and not b.details["count"].passed
    assert a.scores["ratio"] == 0.75
    for case in (b, c):
        assert case.scores["ratio"] is None and not case.passed
        assert "an infinite number); a score is a finite number" in case.details["ratio"].error
    assert a.scores["scored"] is None and "infinite" in a.details["scored"].error
    means = report.mean_scores
    assert means == {
        "close": pytest.approx(2 / 3),
        "count": pytest.approx(2 / 3),
        "ratio": 0.75,
        "scored": 1.0,
    }
    assert all(v is None or math.isfinite(v) for v in means.values())


def test_printing_a_comparison_names_the_newly_failing_and_passing_cases():
    cases = [{"input": k, "name": k} for k in ("refund", "lookup", "greet", "cancel")]
    before = evals.evaluate_sync(
        agent_with(answering({"refund": "yes", "lookup": "yes", "greet": "no", "cancel": "no"})),
        cases,
        [evals.contains("yes")],
    )
    after = evals.evaluate_sync(
        agent_with(answering({"refund": "no", "lookup": "no", "greet": "yes", "cancel": "no"})),
        cases,
        [evals.contains("yes")],
    )
    printed = str(evals.compare(before, after))
    assert printed.splitlines() == [
        evals.compare(before, after).summary(),
        "Newly failing: refund, lookup",
        "Newly passing: greet",
    ]
    assert "2 newly failing, 1 newly passing" in printed


def test_a_case_takes_its_fields_by_position_as_the_docs_write_it():
    """API.md section 12: ``evals.Case(input, expected=None, name=None, metadata={})``."""
    from pydantic import ValidationError

    case = evals.Case("add 2 and 5", "7", "sum", {"level": 1})
    assert case == evals.Case(input="add 2 and 5", expected="7", name="sum", metadata={"level": 1})
    assert evals.Case("capital of France") == evals.Case(input="capital of France")
    assert evals.Case("q", name="n").expected is None
    with pytest.raises(ValidationError, match="frozen"):
        case.name = "other"  # (still frozen)
    with pytest.raises(TypeError, match=r"at most 4 positional arguments \(input, expected, "):
        evals.Case("q", "a", "n", {}, "extra")
    with pytest.raises(TypeError, match="'input' both by position and by name"):
        evals.Case("q", input="r")
    cases = [evals.Case("add 2 and 5", "7", "sum"), evals.Case("capital of France", "paris")]
    report = evals.evaluate_sync(agent_with(answering()), cases, [evals.exact_match()])
    assert [(c.name, c.expected, c.passed) for c in report.cases] == [
        ("sum", "7", True),
        ("case-2", "paris", False),
    ]


@pytest.mark.parametrize(
    "reply",
    [
        '{"score": 0.8, "reasoning": "Close."} Note: the set {a, b} is fine.',
        'Verdict: {"score": 0.8, "reasoning": "Close."}\nThanks } bye',
    ],
)
def test_a_judge_reply_with_a_brace_in_its_prose_after_the_verdict_is_read(reply):
    """Text around the object is tolerated, as documented; a ``}`` in that text was not."""
    from anvia_notebook.evals.judge import parse_verdict

    assert parse_verdict(reply) == (0.8, "Close.")


async def test_tool_errors_of_an_evaluation_are_logged_once_not_once_a_case(caplog):
    """Twenty cases whose tool raises printed twenty warnings in the cell; one now, saying the
    others are in each case's trace. A run after the evaluation logs its own again."""
    import logging

    from anvia_notebook import tool

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise KeyError(key)

    async def respond(request):
        if request.messages[-1].role == "user":
            return ModelResponse(
                tool_calls=[ToolCall(id="c1", name="lookup", arguments={"key": "k"})]
            )
        return ModelResponse(text="not found")

    agent = agent_with(FunctionModel(respond), lookup)
    caplog.set_level(logging.WARNING, logger="anvia_notebook")
    cases = [evals.Case(input=f"find {n}", expected="not found") for n in range(20)]
    report = await evals.evaluate(agent, cases, [evals.contains()], concurrency=4)
    assert report.pass_rate == 1.0
    assert all(run.trace.tool_calls[0].traceback for run in report.runs.values())  # each kept
    warned = [r.getMessage() for r in caplog.records if "raised KeyError" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "Further tool errors of this evaluation are not logged" in warned[0]
    assert "raised KeyError: 'k'. The model is told only the message." in warned[0]
    caplog.clear()
    await agent.prompt("find it").send()
    warned = [r.getMessage() for r in caplog.records if "raised KeyError" in r.getMessage()]
    assert len(warned) == 1 and "evaluation" not in warned[0], warned


def test_lambdas_are_metrics_named_by_their_place_among_the_lambdas():
    """A lambda's column is ``<lambda_0>``, ``<lambda_1>``, ... in order (as pandas names
    several lambdas in an aggregation), one alone too: reports compare them by place."""
    agent = agent_with(answering())
    one = evals.evaluate_sync(agent, CASES[:1], [lambda case, output: True])
    assert one.metric_names == ["<lambda_0>"] and one.pass_rate == 1.0
    two = evals.evaluate_sync(
        agent, CASES[:1], [lambda case, output: 1.0, evals.contains(), lambda case, output: 0.0]
    )
    assert two.metric_names == ["<lambda_0>", "contains", "<lambda_1>"]
    assert two.cases[0].scores == {"<lambda_0>": 1.0, "contains": 1.0, "<lambda_1>": 0.0}
    assert two.cases[0].passed is False
    change = evals.compare(one, two).metrics["<lambda_0>"]  # (the first lambda of each)
    assert (change.mean_a, change.mean_b) == (1.0, 1.0)
