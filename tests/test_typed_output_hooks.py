"""Hooks and a typed output's ``final_result`` call (mode="tool"): hooks see it as any tool
call, since the transcript shows it as one (its events, its approval). ``on_tool_call`` decides
first, a value that fails validation is an ``on_tool_error``, ``on_tool_result`` sees what the
model is told, before the ``tool_result`` event. In native mode there is no tool call."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel, Field

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    OutputValidationError,
    PromptCancelledError,
    ToolApprovalRequiredError,
    create_hook,
)
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall

from helpers import calls, make_add_tool, tool_results

pytestmark = pytest.mark.timeout(30)


class City(BaseModel):
    name: str
    population: int = Field(gt=0)


GOOD = {"name": "Paris", "population": 2_100_000}
BAD = {"name": "Paris", "population": "many"}


def final(arguments: Any, id: str = "out_1") -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=id, name="final_result", arguments=arguments)])


class Recorder:
    """A hook that notes every tool callback (and the events, in one list, to see the order)."""

    def __init__(self, on_call: Any = None) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.on_call = on_call

    def hook(self) -> Any:
        def on_tool_call(event: Any) -> Any:
            self.seen.append(("call", event.tool_name, json.loads(event.args)))
            return self.on_call(event) if self.on_call else None

        def on_tool_result(event: Any) -> None:
            self.seen.append(("result", event.tool_name, event.result))

        def on_tool_error(event: Any) -> None:
            self.seen.append(("error", event.tool_name, event.error))

        return create_hook(
            on_tool_call=on_tool_call, on_tool_result=on_tool_result, on_tool_error=on_tool_error
        )

    def event(self, event: Any) -> None:
        if event.type == "tool_result":
            self.seen.append(("event", event.tool_name, event.result))


async def run_with(recorder: Recorder, model: Any, agent: Any = None, **options: Any) -> Any:
    builder = agent or AgentBuilder("typed", model).output_type(City, **options)
    request = builder.hook(recorder.hook()).build().prompt("Paris?").store(None)
    run = request.start()
    run.subscribe(recorder.event)
    return await run.wait()


async def test_hooks_see_the_final_result_call_and_its_result_before_the_event() -> None:
    recorder = Recorder()
    model = QueueModel([calls(("add", {"x": 1, "y": 2}, "c1"), ("final_result", GOOD, "c2"))])
    agent = AgentBuilder("typed", model).tools([make_add_tool()]).output_type(City)
    response = await run_with(recorder, model, agent)
    assert response.data == City(**GOOD)
    assert recorder.seen == [
        ("call", "add", {"x": 1, "y": 2}),
        ("result", "add", "3"),
        ("event", "add", "3"),
        ("call", "final_result", GOOD),
        ("result", "final_result", "Final result accepted."),
        ("event", "final_result", "Final result accepted."),
    ]


async def test_an_invalid_value_is_a_tool_error_then_a_result() -> None:
    recorder = Recorder()
    model = QueueModel([final(BAD, "a"), final(GOOD, "b")])
    response = await run_with(recorder, model, retries=1)
    assert response.data == City(**GOOD)
    [(_, name, error)] = [item for item in recorder.seen if item[0] == "error"]
    assert name == "final_result" and isinstance(error, OutputValidationError)
    assert error.errors[0]["loc"] == ("population",)
    assert error.output == json.dumps(BAD, separators=(",", ":"))
    kinds = [(kind, name) for kind, name, *_ in recorder.seen]
    assert kinds == [
        ("call", "final_result"),
        ("error", "final_result"),
        ("result", "final_result"),
        ("event", "final_result"),
        ("call", "final_result"),
        ("result", "final_result"),
        ("event", "final_result"),
    ]
    assert recorder.seen[2][2].startswith("Invalid City:")


async def test_an_invalid_value_is_not_logged_as_a_tool_that_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The model's invalid value is for the model (or a person) to fix: no tool failure warning
    in the cell, no traceback in the trace."""
    model = QueueModel([final(BAD, "a"), final(GOOD, "b")])
    with caplog.at_level(logging.WARNING, logger="anvia_notebook"):
        response = await run_with(Recorder(), model, retries=1)
    assert response.data == City(**GOOD)
    assert not [r for r in caplog.records if "raised" in r.getMessage()]
    assert [call.traceback for call in response.trace.tool_calls] == [None, None]


async def test_a_hook_that_skips_final_result_sends_its_reason_back_and_the_run_goes_on() -> None:
    skipped: list[str] = []

    def on_call(event: Any) -> Any:
        if event.tool_name == "final_result" and not skipped:
            skipped.append(event.tool_call_id)
            return event.tool.skip("Check the 2024 census first.")
        return None

    recorder = Recorder(on_call)
    model = QueueModel([final(GOOD, "a"), final({"name": "Paris", "population": 5}, "b")])
    agent = AgentBuilder("typed", model).output_type(City)
    events: list[Any] = []
    request = agent.hook(recorder.hook()).build().prompt("Paris?").store(None)
    run = request.start()
    run.subscribe(lambda event: events.append(event) if event.type == "tool_result" else None)
    response = await run.wait()
    assert skipped == ["a"]
    assert response.data == City(name="Paris", population=5)
    [told] = tool_results(model.requests[1])
    assert told.content == "Check the 2024 census first." and not told.is_error
    # Marked skipped like any tool call a hook skips: in its event and in the trace.
    assert [(e.tool_call_id, e.skipped) for e in events] == [("a", True), ("b", False)]
    assert [call.status for call in response.trace.tool_calls] == ["skipped", "success"]


async def test_a_hook_that_cancels_at_final_result_ends_the_run() -> None:
    def on_call(event: Any) -> Any:
        return event.tool.cancel("No results today.")

    model = QueueModel([final(GOOD)])
    with pytest.raises(PromptCancelledError, match="No results today"):
        await run_with(Recorder(on_call), model)
    assert len(model.requests) == 1


@pytest.mark.parametrize(
    ("decision", "outcome"),
    [
        (ApprovalDecision(approved=True), ("data", City(**GOOD))),
        (
            ApprovalDecision(approved=True, args={"name": "Paris", "population": 3}),
            ("data", City(name="Paris", population=3)),
        ),
        (ApprovalDecision(approved=False, reason="Use the metro area."), ("told", "metro area")),
        (
            ApprovalDecision(approved=True, args={"name": "Paris", "population": 0}),
            ("told", "Edited arguments were rejected"),
        ),
    ],
)
async def test_a_hook_may_put_a_valid_result_to_a_person_before_the_run_ends(
    decision: ApprovalDecision, outcome: tuple[str, Any]
) -> None:
    asked: list[Any] = []

    def on_call(event: Any) -> Any:
        return event.tool.request_approval(reason="Check the number before it is used.")

    def approvals(request: Any) -> ApprovalDecision:
        asked.append(request)
        return decision if len(asked) == 1 else ApprovalDecision(approved=True)

    model = QueueModel([final(GOOD, "a"), final({"name": "Paris", "population": 7}, "b")])
    agent = AgentBuilder("typed", model).output_type(City).approvals(approvals)
    recorder = Recorder(on_call)
    response = await run_with(recorder, model, agent)
    assert asked[0].tool_name == "final_result" and asked[0].reason.startswith("Check the number")
    assert not asked[0].fix_required
    kind, expected = outcome
    if kind == "data":
        assert response.data == expected and len(model.requests) == 1
        [result] = [r for k, n, r in recorder.seen if k == "event"]
        fixed = decision.args is not None
        assert result == (
            "Final result accepted, as fixed by a person." if fixed else "Final result accepted."
        )
    else:
        assert response.data == City(name="Paris", population=7)
        [told] = tool_results(model.requests[1])
        assert expected in told.content


async def test_a_hooks_approval_with_nobody_to_decide_is_an_error_as_for_any_tool() -> None:
    def on_call(event: Any) -> Any:
        return event.tool.request_approval()

    with pytest.raises(ToolApprovalRequiredError):
        await run_with(Recorder(on_call), QueueModel([final(GOOD)]))


async def test_native_mode_has_no_tool_call_and_no_tool_hook() -> None:
    recorder = Recorder()
    model = QueueModel([json.dumps(GOOD)])
    response = await run_with(recorder, model, mode="native")
    assert response.data == City(**GOOD)
    assert recorder.seen == []
