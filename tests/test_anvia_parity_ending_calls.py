"""What a turn's calls do once one of them ends the run, and the order of a turn's end, as in
Anvia v0.

- ``internal/concurrency.ts`` (``mapWithConcurrency``): each worker awaits its call before it
  takes the next, so with the default concurrency of 1 a call that cancels or fails the run (a
  hook's ``cancel``, ``ToolApprovalRequiredError``, a raising ``when`` or hook) leaves the calls
  after it never started: a refund after a cancelled call must not be issued.
- ``prompt-request.ts`` (``stream``): the ``on_turn_end`` hook runs before ``turn_end`` is
  emitted, so a hook that cancels there leaves no ``turn_end``; ``MaxTurnsError``'s prompt is the
  last model call's prompt.
- ``hooks/control.ts``: ``run.cancel`` and ``tool.cancel`` both return a terminate action, which
  every hook honours.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from anvia_notebook import (
    AgentBuilder,
    MaxTurnsError,
    PromptCancelledError,
    ToolApproval,
    ToolApprovalRequiredError,
    create_hook,
    create_tool,
)
from anvia_notebook.hooks import RUN_CONTROL, TOOL_CALL_CONTROL
from anvia_notebook.models import QueueModel

from helpers import Empty, call, calls

pytestmark = pytest.mark.timeout(60)


class Failed(Exception):
    pass


def recording(executed: list[str], name: str, approval: Any = None, fails: bool = False):
    def execute(_args: Empty, _ctx: Any) -> str:
        executed.append(name)
        if fails:
            raise Failed(f"{name} failed")
        return f"{name} done"

    return create_tool(name=name, description=name, input=Empty, execute=execute, approval=approval)


THREE = calls(("first", {}, "c1"), ("bad", {}, "c2"), ("refund", {}, "c3"))


def cancel_bad(event: Any) -> Any:
    return event.tool.cancel("not this one") if event.tool_name == "bad" else None


def raise_on_bad(event: Any) -> Any:
    if event.tool_name == "bad":
        raise Failed("hook failed")
    return None


CASES: dict[str, tuple[Callable[[list[str]], list[Any]], Any, type[BaseException], list[str]]] = {
    "on_tool_call cancels": (
        lambda ex: [recording(ex, "first"), recording(ex, "bad"), recording(ex, "refund")],
        create_hook(on_tool_call=cancel_bad),
        PromptCancelledError,
        ["first"],
    ),
    "approval needed with nobody to ask": (
        lambda ex: [
            recording(ex, "first"),
            recording(ex, "bad", approval=ToolApproval()),
            recording(ex, "refund"),
        ],
        None,
        ToolApprovalRequiredError,
        ["first"],
    ),
    "tool fails and on_tool_error cancels": (
        lambda ex: [
            recording(ex, "first"),
            recording(ex, "bad", fails=True),
            recording(ex, "refund"),
        ],
        create_hook(on_tool_error=lambda e: e.run.cancel("it failed")),
        PromptCancelledError,
        ["first", "bad"],
    ),
    "on_tool_result cancels": (
        lambda ex: [recording(ex, "first"), recording(ex, "bad"), recording(ex, "refund")],
        create_hook(
            on_tool_result=lambda e: e.run.cancel("enough") if e.tool_name == "bad" else None
        ),
        PromptCancelledError,
        ["first", "bad"],
    ),
    "approval when raises": (
        lambda ex: [
            recording(ex, "first"),
            recording(ex, "bad", approval=ToolApproval(when=lambda _c: 1 / 0)),
            recording(ex, "refund"),
        ],
        None,
        ZeroDivisionError,
        ["first"],
    ),
    "on_tool_call raises": (
        lambda ex: [recording(ex, "first"), recording(ex, "bad"), recording(ex, "refund")],
        create_hook(on_tool_call=raise_on_bad),
        Failed,
        ["first"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_calls_after_one_that_ends_the_run_never_start(case: str) -> None:
    make_tools, hook, raised, ran = CASES[case]
    executed: list[str] = []
    builder = AgentBuilder("shop", QueueModel([THREE, "done"])).tools(make_tools(executed))
    if hook is not None:
        builder = builder.hook(hook)
    with pytest.raises(raised) as caught:
        builder.build().prompt("go").store(None).send_sync()
    assert executed == ran
    messages = getattr(caught.value, "messages", None)
    if messages is not None:  # the conversation stays valid: every call has a result
        [results] = [m.tool_results for m in messages if m.role == "tool"][-1:]
        by_id = {r.tool_call_id: r for r in results}
        assert set(by_id) == {"c1", "c2", "c3"}
        assert by_id["c3"].is_error and "refund done" not in by_id["c3"].content


def test_calls_after_a_cancelled_one_never_start_with_async_tools() -> None:
    executed: list[str] = []

    def tool(name: str):
        async def execute(_args: Empty, _ctx: Any) -> str:
            executed.append(name)
            return "ok"

        return create_tool(name=name, description=name, input=Empty, execute=execute)

    agent = (
        AgentBuilder("shop", QueueModel([THREE, "done"]))
        .tools([tool("first"), tool("bad"), tool("refund")])
        .hook(create_hook(on_tool_call=cancel_bad))
        .build()
    )
    with pytest.raises(PromptCancelledError):
        agent.prompt("go").store(None).send_sync()
    assert executed == ["first"]


async def test_a_hook_cancelling_at_the_turns_end_leaves_no_turn_end() -> None:
    agent = (
        AgentBuilder("shop", QueueModel([call("first", {}), "done"]))
        .tool(recording([], "first"))
        .hook(create_hook(on_turn_end=lambda _e: RUN_CONTROL.cancel("stop at the turn's end")))
        .build()
    )
    seen: list[str] = []
    with pytest.raises(PromptCancelledError, match="stop at the turn's end"):
        async for event in agent.prompt("go").store(None).stream():
            seen.append(event.type)
    assert "turn_end" not in seen
    assert seen[-1] == "cancelled"


async def test_the_turn_end_hook_runs_before_the_turn_end_event() -> None:
    order: list[str] = []
    agent = (
        AgentBuilder("shop", QueueModel(["hello"]))
        .hook(
            create_hook(
                on_completion_response=lambda _e: order.append("on_completion_response"),
                on_turn_end=lambda _e: order.append("on_turn_end"),
            )
        )
        .build()
    )
    run = agent.prompt("go").store(None).start()
    run.subscribe(lambda event: order.append(event.type))  # told as each event is emitted
    await run.wait()
    assert order.index("on_completion_response") < order.index("on_turn_end")
    assert order.index("on_turn_end") < order.index("turn_end")


def test_max_turns_error_names_the_last_model_calls_prompt() -> None:
    model = QueueModel([call("first", {}, id="call_1"), call("first", {}, id="call_2")])
    agent = AgentBuilder("shop", model).tool(recording([], "first")).default_max_turns(0).build()
    with pytest.raises(MaxTurnsError) as caught:
        agent.prompt("go").store(None).send_sync()
    prompt = caught.value.prompt
    assert prompt is not None and prompt.role == "tool"
    assert [r.tool_call_id for r in prompt.tool_results] == ["call_1"]
    assert prompt == model.requests[-1].messages[-1]


def test_run_cancel_returned_by_on_tool_call_cancels_the_run() -> None:
    executed: list[str] = []
    agent = (
        AgentBuilder("shop", QueueModel([call("first", {}), "done"]))
        .tool(recording(executed, "first"))
        .hook(create_hook(on_tool_call=lambda _e: RUN_CONTROL.cancel("not today")))
        .build()
    )
    with pytest.raises(PromptCancelledError, match="not today"):
        agent.prompt("go").store(None).send_sync()
    assert executed == []


def test_tool_cancel_returned_by_a_lifecycle_hook_cancels_the_run() -> None:
    model = QueueModel([call("first", {}), "done"])
    agent = (
        AgentBuilder("shop", model)
        .tool(recording([], "first"))
        .hook(create_hook(on_turn_end=lambda _e: TOOL_CALL_CONTROL.cancel("from the turn's end")))
        .build()
    )
    with pytest.raises(PromptCancelledError, match="from the turn's end"):
        agent.prompt("go").store(None).send_sync()
    assert len(model.requests) == 1


def test_a_model_call_s_usage_counts_when_its_response_hook_cancels_the_run() -> None:
    """prompt-request.ts adds a response's usage before ``onCompletionResponse`` runs: a hook
    that cancels there leaves the tokens the call cost in the run's usage (they were lost)."""
    from anvia_notebook.models import ModelResponse
    from anvia_notebook.models.base import Usage

    seen = []
    hook = create_hook(
        on_completion_response=lambda _e: RUN_CONTROL.cancel("not this answer"),
        on_run_error=lambda e: seen.append(e.usage),
    )
    paid = Usage(input_tokens=10, output_tokens=5)
    model = QueueModel([ModelResponse(text="an answer", usage=paid)])
    with pytest.raises(PromptCancelledError, match="not this answer"):
        AgentBuilder("a", model).hook(hook).build().prompt("go").store(None).send_sync()
    assert seen == [paid]
