"""A hook callback that raises: the run fails with what it raised, as in Anvia (whose hooks are
awaited with no catch), and the error carries a note naming the callback (its function) and
the tool call or turn it was called for, as a failing ``ToolApproval`` function's does. It was
the bare ``KeyError: 'x'``, nothing said which hook. A callback the run calls once its outcome
is known (``on_tool_result``, ``on_tool_error``, ``on_completion_error``, ``on_run_error``)
is logged, the run going on: the log names it the same way (it named ``create_hook(...)``)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    Hook,
    RunExitedError,
    compose_hooks,
    create_hook,
    create_tool,
)
from anvia_notebook.models import ModelError, QueueModel, StreamingQueueModel

from helpers import Empty, call, make_add_tool

pytestmark = pytest.mark.timeout(30)


def check_refund(event: Any) -> Any:
    return {}["x"]


def _agent(hook: Any, model: Any = None, **kwargs: Any) -> Any:
    model = model or QueueModel([call("add", {"x": 1, "y": 2}, id="c1"), "3"])
    return AgentBuilder("a", model).tool(make_add_tool(**kwargs)).hook(hook).build()


async def _failed(agent: Any, raises: type[BaseException] = KeyError) -> tuple[Any, Any, list]:
    """The run's error (as raised), its state and its events."""
    run = agent.prompt("go").store(None).create_run()
    events: list[Any] = []
    run.subscribe(events.append)
    run.start()
    with pytest.raises(raises) as raised:
        await run.wait()
    return raised.value, run.state, events


FAILING = [
    ("on_tool_call", "(raised by the on_tool_call hook check_refund, for the call 'c1' of the tool 'add')"),
    ("on_run_start", "(raised by the on_run_start hook check_refund)"),
    ("on_turn_start", "(raised by the on_turn_start hook check_refund, at turn 1)"),
    ("on_completion_call", "(raised by the on_completion_call hook check_refund, at turn 1)"),
    ("on_completion_response", "(raised by the on_completion_response hook check_refund, at turn 1)"),
    ("on_turn_end", "(raised by the on_turn_end hook check_refund, at turn 1)"),
    ("on_run_end", "(raised by the on_run_end hook check_refund)"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "said"), FAILING)
async def test_a_hook_that_raises_fails_the_run_with_its_error_and_is_named(name, said) -> None:
    error, state, events = await _failed(_agent(create_hook(**{name: check_refund})))
    assert type(error) is KeyError and error.args == ("x",)  # the error itself, as in Anvia
    assert getattr(error, "__notes__", []) == [said]  # (a traceback shows it)
    assert state.status == "error" and state.error == f"'x'\n{said}"
    [told] = [event for event in events if event.type == "error"]  # (what the transcript shows)
    assert told.error == state.error and told.error_type == "KeyError"


async def test_an_async_hook_and_a_hook_method_are_named_too() -> None:
    class Audit(Hook):
        async def on_tool_call(self, event: Any) -> Any:
            raise LookupError("no such order")

    _, state, _ = await _failed(_agent(Audit()), LookupError)
    said = "(raised by the on_tool_call hook " + Audit.on_tool_call.__qualname__
    assert state.error == f"no such order\n{said}, for the call 'c1' of the tool 'add')"


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("on_tool_call", ", for the call 'c1' of the tool 'add'"),
        ("on_completion_call", ", at turn 1"),
    ],
)
async def test_the_failing_part_of_composed_hooks_is_named_once(name, where) -> None:
    hook = compose_hooks(
        create_hook(**{name: lambda event: None}), create_hook(**{name: check_refund})
    )
    error, state, _ = await _failed(_agent(hook))
    said = f"(raised by the {name} hook check_refund{where})"
    assert getattr(error, "__notes__", []) == [said]
    assert state.error == f"'x'\n{said}"


async def test_an_error_a_hook_raises_again_is_named_once() -> None:
    again = KeyError("x")

    def raises_again(event: Any) -> Any:
        raise again

    for _ in range(2):  # two runs, the same error object
        error, _, _ = await _failed(_agent(create_hook(on_run_start=raises_again)))
    assert error is again
    assert error.__notes__ == [
        "(raised by the on_run_start hook " + raises_again.__qualname__ + ")"
    ]


def exits(event: Any) -> Any:
    sys.exit(4)


async def test_a_hook_that_exits_is_named_in_the_run_s_error() -> None:
    error, state, _ = await _failed(_agent(create_hook(on_turn_start=exits)), RunExitedError)
    assert error.code == 4
    assert state.error.startswith("SystemExit: 4: ")
    assert state.error.endswith("\n(raised by the on_turn_start hook exits, at turn 1)")


async def test_a_call_the_model_gave_no_id_is_named_by_its_arguments() -> None:
    model = QueueModel([call("add", {"x": 1, "y": 2}, id=""), "3"])
    _, state, _ = await _failed(_agent(create_hook(on_tool_call=check_refund), model))
    assert state.error.endswith(
        "(raised by the on_tool_call hook check_refund, for a call of the tool 'add' "
        """with the arguments '{"x":1,"y":2}')"""
    )


async def test_a_typed_output_s_final_result_call_is_named() -> None:
    from anvia_notebook.models import ModelResponse, ToolCall

    class City(BaseModel):
        name: str

    final = ToolCall(id="out_1", name="final_result", arguments={"name": "Paris"})
    model = QueueModel([ModelResponse(tool_calls=[final])])
    agent = AgentBuilder("typed", model).output_type(City)
    agent = agent.hook(create_hook(on_tool_call=check_refund)).build()
    _, state, _ = await _failed(agent)
    assert state.error == (
        "'x'\n(raised by the on_tool_call hook check_refund, for the call 'out_1' of the tool "
        "'final_result')"
    )


@pytest.mark.parametrize("name", ["on_tool_result", "on_tool_error"])
async def test_a_hook_failing_after_the_tool_ran_is_named_in_the_log(name, caplog) -> None:
    def execute(args: Any, ctx: Any) -> Any:
        if name == "on_tool_error":
            raise ValueError("bad day")
        return "3"

    tool = create_tool(name="add", description="", input=Empty, execute=execute)
    model = QueueModel([call("add", id="c1"), "done"])
    agent = AgentBuilder("a", model).tool(tool).hook(create_hook(**{name: check_refund})).build()
    with caplog.at_level(logging.ERROR, logger="anvia_notebook"):
        response = await agent.prompt("go").store(None).send()
    assert response.output == "done"  # the run went on
    [record] = [r for r in caplog.records if r.name == "anvia_notebook"]
    assert record.getMessage() == (
        f"{name} hook check_refund failed, for the call 'c1' of the tool 'add'; the run goes on"
    )
    assert getattr(record.exc_info[1], "__notes__", None) == [
        f"(raised by the {name} hook check_refund, for the call 'c1' of the tool 'add')"
    ]


async def test_error_hooks_that_fail_are_named_in_the_log_and_the_model_s_error_stays(
    caplog,
) -> None:
    model = StreamingQueueModel([[ModelError("boom", status_code=400)]])
    hook = create_hook(on_completion_error=check_refund, on_run_error=check_refund)
    with caplog.at_level(logging.ERROR, logger="anvia_notebook"):
        error, state, _ = await _failed(_agent(hook, model), ModelError)
    assert state.error == "boom" and not getattr(error, "__notes__", None)
    said = [r.getMessage() for r in caplog.records if r.name == "anvia_notebook"]
    assert said == [
        "on_completion_error hook check_refund failed, at turn 1; the run goes on",
        "on_run_error hook check_refund failed; the run goes on",
    ]


async def test_a_hook_raising_the_run_s_own_error_again_does_not_take_it_as_its_own() -> None:
    """A hook that logs the error and raises it on (``raise event.error``) noted the model's
    own error "raised by the on_run_error hook passthrough", in the transcript and the store."""

    def failing_model(request: Any) -> str:
        raise ModelError("the model failed", retryable=False)

    def passthrough(event: Any) -> None:
        raise event.error

    from anvia_notebook.models import FunctionModel

    for name in ("on_run_error", "on_completion_error"):
        hook = create_hook(**{name: passthrough})
        agent = AgentBuilder("a", FunctionModel(failing_model)).hook(hook).build()
        error, state, _ = await _failed(agent, ModelError)
        assert not getattr(error, "__notes__", None), name
        assert state.error == "the model failed"


async def test_a_run_started_by_a_hook_is_not_said_to_be_at_its_starter_s_turn() -> None:
    """A run a model call's hook starts (a judge, a sub-agent) had its own run-level callbacks
    noted "at turn 2": the turn of the run whose hook started it."""
    inner = AgentBuilder("judge", QueueModel(["ok"])).hook(create_hook(on_run_start=check_refund))
    notes: list[Any] = []

    async def judge(event: Any) -> None:
        with pytest.raises(KeyError) as raised:
            await inner.build().prompt("judge this").store(None).send()
        notes.append(raised.value.__notes__)

    model = QueueModel([call("add", {"x": 1, "y": 2}, id="c1"), "3"])
    agent = _agent(create_hook(on_completion_response=judge), model)
    await agent.prompt("go").store(None).send()
    assert notes == [["(raised by the on_run_start hook check_refund)"]] * 2
