"""What hooks and approvals do to a run, as Anvia v0's run loop does it (cases its own tests leave
out, read from its source: repository anvia-hq/anvia, branch main).

- ``request/prompt-request.ts``: every lifecycle hook that returns ``run.cancel(reason)`` throws
  ``this.cancelled(newMessages, reason)``, a ``PromptCancelledError`` whose conversation is
  ``[...chatHistory, ...newMessages]``: ``runCompletionErrorHook`` throws it in place of the
  model's error, ``runRunStartHook`` before the first turn; ``onRunError`` is then called with
  it. ``MaxTurnsError`` carries the same whole conversation. An ``onRunError`` that returns
  ``run.cancel(reason)`` replaces the error with a cancel of that reason, a cancel too.
- ``internal/prompt-runtime/tool-execution.ts``: a hook's ``approval_request`` goes to
  ``requestApproval`` with the hook's texts only (the tool's policy is not evaluated: neither
  its ``when`` nor its reason or reject message); an approval nobody can decide throws
  ``ToolApprovalRequiredError`` before the tool is called, so ``onToolError`` and
  ``onToolResult`` are not told (``onRunError`` is); a rejection is the call's output, which
  ``onToolResult`` sees, and no tool error.
- ``stream-accumulator.test.ts``: "preserves valid scalar JSON tool arguments".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from anvia_notebook import (
    AgentBuilder,
    MaxTurnsError,
    Message,
    PromptCancelledError,
    ToolApproval,
    ToolApprovalRequiredError,
    create_hook,
)
from anvia_notebook.approvals import DEFAULT_REJECT_MESSAGE
from anvia_notebook.models import (
    ModelError,
    QueueModel,
    StreamingQueueModel,
    TextDelta,
    ToolCallDelta,
)

from helpers import call, make_add_tool, tool_results

pytestmark = pytest.mark.timeout(60)

HISTORY = [Message.user("My order is 42."), Message.assistant("Noted.")]


async def collect(request: Any) -> tuple[list[Any], BaseException | None]:
    """The run's events and what it raised (None when it succeeded)."""
    events: list[Any] = []
    try:
        async for event in request.stream():
            events.append(event)
    except Exception as error:
        return events, error
    return events, None


async def test_a_completion_error_hook_that_cancels_ends_the_run_cancelled() -> None:
    """``runCompletionErrorHook``: the cancel is thrown instead of the model's error, and
    ``onRunError`` sees the cancel."""
    seen: list[tuple[str, Any]] = []
    hook = create_hook(
        on_completion_error=lambda e: (
            seen.append(("completion_error", str(e.error))) or e.run.cancel("The provider is down.")
        ),
        on_run_error=lambda e: seen.append(("run_error", e.error)),
    )
    model = StreamingQueueModel([[ModelError("boom", status_code=400)]])
    request = AgentBuilder("a", model).hook(hook).build().prompt("go").store(None)
    events, raised = await collect(request)
    assert isinstance(raised, PromptCancelledError)
    assert raised.reason == "The provider is down."
    assert [e.type for e in events][-1] == "cancelled" and "error" not in [e.type for e in events]
    assert seen[0] == ("completion_error", "boom")
    assert seen[1][0] == "run_error" and isinstance(seen[1][1], PromptCancelledError)
    assert len(seen) == 2


async def test_a_run_start_hook_that_cancels_stops_before_the_first_turn() -> None:
    """``runRunStartHook``: thrown before the loop, so no turn starts and the model is never
    called."""
    errors: list[Any] = []
    hook = create_hook(
        on_run_start=lambda e: e.run.cancel("Not today."),
        on_run_error=lambda e: errors.append(e.error),
    )
    model = QueueModel(["never"])
    request = AgentBuilder("a", model).hook(hook).build().prompt("go").store(None)
    events, raised = await collect(request)
    assert isinstance(raised, PromptCancelledError) and raised.reason == "Not today."
    assert [e.type for e in events] == ["cancelled"]
    assert model.requests == []
    assert [type(e) for e in errors] == [PromptCancelledError]


def test_a_cancelled_runs_conversation_starts_with_its_history() -> None:
    """``cancelled(newMessages, reason)``: ``[...chatHistory, ...newMessages]``."""
    hook = create_hook(on_tool_call=lambda e: e.tool.cancel("blocked"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    with pytest.raises(PromptCancelledError) as raised:
        agent.prompt([*HISTORY, Message.user("Add 1 and 2.")]).store(None).send_sync()
    messages = raised.value.messages
    assert messages[:3] == [*HISTORY, Message.user("Add 1 and 2.")]
    assert messages[3].role == "assistant" and messages[3].tool_calls[0].name == "add"


def test_max_turns_error_carries_the_whole_conversation() -> None:
    """``new MaxTurnsError(maxTurnCount, [...chatHistory, ...newMessages], lastPrompt)``."""
    model = QueueModel(
        [call("add", {"x": 1, "y": 2}, id="call_1"), call("add", {"x": 3, "y": 4}, id="call_2")]
    )
    agent = AgentBuilder("a", model).tool(make_add_tool()).default_max_turns(0).build()
    with pytest.raises(MaxTurnsError, match="Reached max turn limit: 0") as raised:
        agent.prompt([*HISTORY, Message.user("Keep adding.")]).store(None).send_sync()
    messages = raised.value.messages
    assert messages[:3] == [*HISTORY, Message.user("Keep adding.")]
    assert [m.role for m in messages[3:]] == ["assistant", "tool", "assistant", "tool"]


def test_a_hook_requested_approval_carries_only_the_hooks_texts() -> None:
    """``requestApproval(tool, hookArgs, callAction)``: the tool's policy is not consulted: its
    ``when`` (false here) does not stop the approval, its reason and reject message are not
    used; the rejection falls back to the default text."""
    asked: list[tuple[str | None, str | None]] = []
    policy = ToolApproval(
        when=lambda ctx: False, reason="The policy's reason.", reject_message="The policy's no."
    )
    add = make_add_tool(approval=policy)
    hook = create_hook(on_tool_call=lambda e: e.tool.request_approval(reason="The hook's reason."))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    agent = (
        AgentBuilder("a", model)
        .tool(add)
        .hook(hook)
        .approvals(lambda request: asked.append((request.reason, request.reject_message)) or False)
        .build()
    )
    assert agent.prompt("go").store(None).send_sync().output == "done"
    assert asked == [("The hook's reason.", None)]
    assert add.calls == []
    assert tool_results(model.requests[1])[0].content == DEFAULT_REJECT_MESSAGE


async def test_an_approval_nobody_can_decide_is_no_tool_error() -> None:
    """``requestApproval`` throws before the tool is called: neither ``onToolError`` nor
    ``onToolResult`` is told; ``onRunError`` is, and the stream ends with its ``error``."""
    seen: list[str] = []
    hook = create_hook(
        on_tool_error=lambda e: seen.append("tool_error"),
        on_tool_result=lambda e: seen.append("tool_result"),
        on_run_error=lambda e: seen.append(f"run_error:{type(e.error).__name__}"),
    )
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    request = AgentBuilder("a", model).tool(add).hook(hook).build().prompt("go").store(None)
    events, raised = await collect(request)
    assert isinstance(raised, ToolApprovalRequiredError)
    assert seen == ["run_error:ToolApprovalRequiredError"]
    assert events[-1].type == "error" and "tool_result" not in [e.type for e in events]
    assert add.calls == []


def test_a_rejected_approval_is_the_calls_result_not_a_tool_error() -> None:
    """A rejection is the call's output: ``onToolResult`` sees the text the model is told,
    ``onToolError`` nothing."""
    seen: list[str] = []
    hook = create_hook(
        on_tool_error=lambda e: seen.append("tool_error"),
        on_tool_result=lambda e: seen.append(f"tool_result:{e.result}"),
    )
    add = make_add_tool(approval=ToolApproval(reject_message="Not this amount."))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    agent = AgentBuilder("a", model).tool(add).hook(hook).approvals(lambda request: False).build()
    assert agent.prompt("go").store(None).send_sync().output == "done"
    assert seen == ["tool_result:Not this amount."]
    assert add.calls == []


async def test_preserves_valid_scalar_json_tool_arguments() -> None:
    """stream-accumulator.test.ts: "preserves valid scalar JSON tool arguments": streamed
    ``"hello"`` stays the call's arguments (hooks see it as sent); the tool's input model then
    refuses it, a result the model can read."""
    seen: list[str] = []
    model = StreamingQueueModel(
        [[ToolCallDelta(id="tool_0", name="add", arguments_delta='"hello"')], [TextDelta("ok")]]
    )
    hook = create_hook(on_tool_call=lambda e: seen.append(e.args))
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    events, raised = await collect(agent.prompt("go").store(None))
    assert raised is None
    [tool_call] = [e for e in events if e.type == "tool_call"]
    assert json.loads(tool_call.tool_call.arguments_json()) == "hello"
    assert seen == ['"hello"']
    [result] = [e for e in events if e.type == "tool_result"]
    assert result.is_error and result.args == '"hello"'
    assert "Invalid arguments for tool add" in result.result


async def test_a_run_error_hook_that_cancels_a_cancelled_run_gives_its_reason() -> None:
    """``runRunErrorHook`` is called with the ``PromptCancelledError`` too, and a hook that
    returns ``run.cancel(reason)`` there replaces it (``return this.cancelled(newMessages,
    action.reason)``): the run ends with the hook's reason (the first one was kept)."""
    hook = create_hook(
        on_tool_call=lambda e: e.tool.cancel("blocked"),
        on_run_error=lambda e: e.run.cancel(f"Audited: {e.error.reason}"),
    )
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    events, raised = await collect(agent.prompt("go").store(None))
    assert isinstance(raised, PromptCancelledError)
    assert raised.reason == "Audited: blocked"
    assert (events[-1].type, events[-1].reason) == ("cancelled", "Audited: blocked")
    assert raised.messages[-1].role == "tool"  # every call still has its result
