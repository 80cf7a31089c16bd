"""Code a run calls that raises ``KeyboardInterrupt`` stops only that run.

The case: a tool that runs code the model wrote (``raise KeyboardInterrupt``), a library that
turns its own signal handling into ``KeyboardInterrupt``, a hook or an approval handler that
does. Before, the interrupt left the run's task and asyncio let it through the event loop: in a
notebook, a run shown with ``show()`` ended the kernel's event loop and the kernel answered no
more cells (tests/notebook/test_exits_in_kernel.py). Now the run is stopped, as by Stop: it ends
``cancelled``, recorded as such, every call gets its result, and whoever waits gets
``PromptCancelledError`` naming the interrupt.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    PromptCancelledError,
    RunStore,
    ToolApproval,
    create_hook,
    create_tool,
)
from anvia_notebook.models import FunctionModel, QueueModel

from helpers import call

pytestmark = pytest.mark.timeout(60)

INTERRUPTED = "a KeyboardInterrupt was raised inside the run"


class Code(BaseModel):
    source: str


def _interrupts(*_):
    raise KeyboardInterrupt


async def _interrupts_later(args, ctx):
    await asyncio.sleep(0)
    raise KeyboardInterrupt


def _agent(where: str, execute=lambda args, ctx: "ran"):
    tool = create_tool(
        name="python",
        description="",
        input=Code,
        execute=execute,
        approval=ToolApproval(reason="Check it.") if where == "approval handler" else None,
    )
    model = (
        FunctionModel(_interrupts)
        if where == "model"
        else QueueModel([call("python", {"source": "1"}), "ok"])
    )
    builder = AgentBuilder("a", model).tool(tool)
    if where == "hook":
        builder = builder.hook(create_hook(on_tool_call=_interrupts))
    if where == "approval handler":
        builder = builder.approvals(_interrupts)
    return builder.build()


WHERE = ["sync tool", "async tool", "hook", "approval handler", "model"]


def _for(where: str):
    execute = {"sync tool": _interrupts, "async tool": _interrupts_later}.get(where)
    return _agent(where, execute) if execute else _agent(where)


@pytest.mark.parametrize("where", WHERE)
async def test_an_interrupt_stops_only_the_run(store_path, where: str) -> None:
    run = _for(where).prompt("go").start()
    with pytest.raises(PromptCancelledError) as raised:
        await run.wait()
    assert INTERRUPTED in raised.value.reason
    assert run.status == "cancelled"
    stored = RunStore(store_path).get(run.run_id)
    assert stored.status == "cancelled"
    # The conversation stays valid: a call that was under way has its result.
    calls = [c.id for m in raised.value.messages for c in m.tool_calls]
    results = [r.tool_call_id for m in raised.value.messages for r in m.tool_results]
    assert calls == results
    # The event loop goes on: the interrupt did not escape into it.
    await asyncio.sleep(0)
    assert (
        await AgentBuilder("b", QueueModel(["fine"])).build().prompt("x").send()
    ).output == "fine"


@pytest.mark.parametrize("where", WHERE)
def test_send_sync_raises_prompt_cancelled_without_asyncio_noise(
    store_path, where: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(PromptCancelledError) as raised:
        _for(where).prompt("go").send_sync()
    assert INTERRUPTED in str(raised.value)
    captured = capfd.readouterr()
    assert "unhandled exception" not in captured.err and "Traceback" not in captured.err


async def test_the_tools_error_hooks_are_not_told_of_an_interrupt(store_path) -> None:
    """An interrupt stops the run; it is not a failed call the model would be told of."""
    seen: list[BaseException] = []
    hook = create_hook(on_tool_error=lambda event: seen.append(event.error))
    model = QueueModel([call("python", {"source": "1"}), "ok"])
    tool = create_tool(name="python", description="", input=Code, execute=_interrupts)
    agent = AgentBuilder("a", model).tool(tool).hook(hook).build()
    with pytest.raises(PromptCancelledError):
        await agent.prompt("go").send()
    assert seen == [] and len(model.requests) == 1


async def test_an_error_hook_that_interrupts_does_not_mask_the_runs_error(store_path) -> None:
    def fails(request):
        raise RuntimeError("the provider is down")

    hook = create_hook(on_run_error=_interrupts)
    agent = AgentBuilder("a", FunctionModel(fails)).hook(hook).build()
    with pytest.raises(RuntimeError, match="the provider is down"):
        await agent.prompt("go").send()
    await asyncio.sleep(0)


async def test_a_model_that_interrupts_mid_answer_ends_its_call_as_stopped(spans) -> None:
    """An interrupt raised in the model's stream after some text: the call stayed "running" in
    the trace (no duration, its table row "running") and its chat span never ended; it is
    stopped as by Stop, the text kept."""

    async def answers_then_interrupts(request):
        yield "Half an ans"
        raise KeyboardInterrupt

    request = AgentBuilder("a", FunctionModel(answers_then_interrupts)).build().prompt("go")
    run = request.store(None).start()
    with pytest.raises(PromptCancelledError) as raised:
        await run.wait()
    assert raised.value.messages[-1].content == "Half an ans"
    [turn] = run.trace.turns
    assert turn.error == f"Stopped: {raised.value.reason}" and turn.duration_ms is not None
    assert run.trace.rows()[0]["status"] == "cancelled"
    [chat] = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert [event.name for event in chat.events] == ["cancelled"]


async def test_a_model_that_exits_mid_answer_ends_its_call_as_failed(spans) -> None:
    """``SystemExit`` raised in the model's stream fails the run (``RunExitedError``); its call
    stayed "running" in the trace and its chat span never ended."""
    from anvia_notebook import RunExitedError

    async def answers_then_exits(request):
        yield "Half an ans"
        raise SystemExit(3)

    request = AgentBuilder("a", FunctionModel(answers_then_exits)).build().prompt("go")
    run = request.store(None).start()
    with pytest.raises(RunExitedError):
        await run.wait()
    [turn] = run.trace.turns
    assert turn.error is not None and turn.error.startswith("RunExitedError")
    assert turn.duration_ms is not None and run.trace.rows()[0]["status"] == "error"
    [chat] = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert chat.attributes["error.type"] == "RunExitedError"


class Aborted(BaseException):
    """A library's own BaseException (not an Exception)."""


async def test_a_model_that_raises_its_own_base_exception_ends_its_call_as_failed(spans) -> None:
    async def answers_then_aborts(request):
        yield "Half an ans"
        raise Aborted("gave up")

    run = AgentBuilder("a", FunctionModel(answers_then_aborts)).build().prompt("go")
    run = run.store(None).start()
    with pytest.raises(Aborted):
        await run.wait()
    assert run.state.status == "error"
    [turn] = run.trace.turns
    assert turn.error == "Aborted: gave up" and turn.duration_ms is not None
    [chat] = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert chat.attributes["error.type"] == "Aborted"
