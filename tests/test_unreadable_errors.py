"""Code of the user's that raises an exception whose message cannot be read.

An exception class with a broken ``__str__`` (a bug in a library, a message built from data that
is gone) must not take the run down with an error of our own: a tool's failure is still told to
the model, and the user's own exception still reaches the user, with the run, its trace, its
spans and the store saying how it ended.
"""

from __future__ import annotations

import pytest

from anvia_notebook import AgentBuilder, RunStore, ToolApproval, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel

from helpers import AddInput, call, make_add_tool

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import StatusCode

UNREADABLE = "(the message of this Unreadable could not be read)"


class Unreadable(Exception):
    """An exception whose message cannot be made."""

    def __str__(self) -> str:
        raise RuntimeError("the message's data is gone")


def _raise(*_args: object) -> None:
    raise Unreadable()


def test_a_tool_whose_error_cannot_be_read_is_a_failed_call_the_model_is_told_of(
    store_path, spans
) -> None:
    model = QueueModel([call("add", {"x": 1, "y": 2}), "It failed."])
    tool = create_tool(name="add", description="Add.", input=AddInput, execute=_raise)
    response = AgentBuilder("a", model).tool(tool).build().prompt("add").send_sync()
    store = RunStore(store_path)
    told = [part.content for part in model.requests[1].messages[-1].tool_results]
    assert told == [f"ToolCallError: {UNREADABLE}"]
    trace = store.trace(response.run_id)
    (entry,) = trace.tool_calls
    assert (
        entry.result == f"ToolCallError: {UNREADABLE}" and "raise Unreadable()" in entry.traceback
    )
    assert store.get(response.run_id).status == "success"
    (span,) = [s for s in spans.get_finished_spans() if s.name.startswith("execute_tool")]
    (event,) = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"] == "Unreadable"
    assert event.attributes["exception.message"] == UNREADABLE


@pytest.mark.parametrize("where", ["model", "approval handler"])
def test_the_users_own_exception_reaches_them_and_the_run_ends_in_error(
    store_path, spans, where: str
) -> None:
    if where == "model":
        builder = AgentBuilder("a", FunctionModel(_raise))
    else:
        model = QueueModel([call("add", {"x": 1, "y": 2}), ModelResponse(text="done")])
        builder = AgentBuilder("a", model).tool(make_add_tool(approval=ToolApproval()))
    request = builder.build().prompt("go")
    if where == "approval handler":
        request = request.approvals(_raise)
    with pytest.raises(Unreadable):
        request.send_sync()
    store = RunStore(store_path)
    (stored,) = store.runs()
    assert stored.status == "error"
    assert store.get(stored.run_id).error == UNREADABLE
    trace = store.trace(stored.run_id)
    assert trace.status == "error" and trace.error == UNREADABLE
    if where == "approval handler":
        (approval,) = store.interactions(stored.run_id)
        assert approval.status == "cancelled"
        assert approval.decision_reason == f"Approval failed: {UNREADABLE}"
    (root,) = [s for s in spans.get_finished_spans() if s.parent is None]
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == f"Unreadable: {UNREADABLE}"


def test_a_metric_whose_error_cannot_be_read_is_that_scores_error() -> None:
    from anvia_notebook import evals
    from anvia_notebook.models import FunctionModel

    def unreadable(case, output):
        raise Unreadable()

    agent = AgentBuilder("a", FunctionModel(lambda request: "7")).build()
    cases = [{"input": "a", "name": "a"}, {"input": "b", "name": "b"}]
    report = evals.evaluate_sync(agent, cases, [unreadable], show=False)
    assert report.status == "done" and len(report.cases) == 2
    errors = [case.details["unreadable"].error for case in report.cases]
    assert errors == [f"Unreadable: {UNREADABLE}"] * 2
    assert report._repr_html_() and report.summary()
