"""Two edges of approvals, as in Anvia v0.

- ``internal/prompt-runtime/tool-execution.ts`` (``requestApproval``): a rejected call's result
  is ``decision.rejectMessage ?? decision.reason ?? request.rejectMessage ?? "Tool approval was
  rejected."``: ``??`` passes over a missing text only, so an empty reject message (from the
  decision, the tool's policy or the hook's request) or an empty reason of the decision is
  what the model is told, ``""``.
  ``hooks/control.ts`` (``requestToolApproval``) keeps an empty ``rejectMessage`` too.
- The same file (``execute``): a hook's ``approval_request`` goes to ``requestApproval`` with
  the agent's tool, ``undefined`` for a name it does not know; only an approved call goes on to
  ``agent.callTool``, whose ``ToolNotFoundError`` is caught as any tool's failure
  (``on_tool_error``, then the error's text as the result). A rejected call is told the
  rejection; with no approval handler, ``ToolApprovalRequiredError`` ends the run.
"""

from __future__ import annotations

from typing import Any

import pytest

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    ToolApproval,
    ToolApprovalRequiredError,
    create_hook,
    create_tool,
)
from anvia_notebook.approvals import DEFAULT_REJECT_MESSAGE
from anvia_notebook.models import QueueModel

from helpers import Empty, call, tool_results

pytestmark = pytest.mark.timeout(60)


def guarded_tool(executed: list[Any], approval: ToolApproval | None = None):
    return create_tool(
        name="guarded",
        description="A guarded tool",
        input=Empty,
        execute=lambda args, ctx: executed.append(True) or "should not run",
        approval=approval,
    )


def hook_asking(reject_message: str | None) -> Any:
    return create_hook(
        on_tool_call=lambda e: e.tool.request_approval(reject_message=reject_message)
    )


# -- an empty reject message is kept -------------------------------------------------------------

#: (the tool's policy, a hook's request or None, what the handler returns, what the model is told)
REJECTIONS: dict[str, tuple[ToolApproval | None, Any, Any, str]] = {
    "the decision's empty reject message": (
        ToolApproval(reject_message="Rejected by policy."),
        None,
        ApprovalDecision(False, reject_message=""),
        "",
    ),
    "the decision's empty reject message before its reason": (
        ToolApproval(),
        None,
        ApprovalDecision(False, reason="Not now.", reject_message=""),
        "",
    ),
    "a handler's dict with an empty reject message": (
        ToolApproval(reject_message="Rejected by policy."),
        None,
        {"approved": False, "reject_message": ""},
        "",
    ),
    "the policy's empty reject message": (ToolApproval(reject_message=""), None, False, ""),
    "the policy's reject message function giving an empty text": (
        ToolApproval(reject_message=lambda ctx: ""),
        None,
        False,
        "",
    ),
    "the hook's empty reject message": (None, hook_asking(""), False, ""),
    "the decision's empty reason": (
        ToolApproval(reject_message="Rejected by policy."),
        None,
        ApprovalDecision(False, reason=""),
        "",
    ),
    "a handler's dict with a blank reason": (
        ToolApproval(),
        None,
        {"approved": False, "reason": "  "},
        "  ",
    ),
    # A missing text still falls back, in Anvia's order.
    "no text at all": (ToolApproval(), None, False, DEFAULT_REJECT_MESSAGE),
    "the decision's reason": (
        ToolApproval(reject_message="Rejected by policy."),
        None,
        ApprovalDecision(False, reason="Not now."),
        "Not now.",
    ),
    "the request's reject message": (
        None,
        hook_asking("Rejected by hook."),
        ApprovalDecision(False),
        "Rejected by hook.",
    ),
}


@pytest.mark.parametrize("case", list(REJECTIONS))
async def test_an_empty_reject_message_is_what_the_model_is_told(case: str) -> None:
    approval, hook, answer, told = REJECTIONS[case]
    executed: list[Any] = []
    model = QueueModel([call("guarded", {}), "denied"])
    builder = AgentBuilder("test-agent", model).tool(guarded_tool(executed, approval))
    if hook is not None:
        builder = builder.hook(hook)
    agent = builder.approvals(lambda request: answer).build()
    events = [event async for event in agent.prompt("run guarded").store(None).stream()]
    assert executed == []
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.content, part.is_error) == ("call_1", told, False)
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.result, result.skipped) == (told, False)
    [decided] = [e.approval for e in events if e.type == "tool_approval_result"]
    assert (decided.status, decided.decision_reason) == ("rejected", told)


# -- a hook's approval request for a tool the agent does not know --------------------------------


def unknown_tool_run(answer: Any) -> tuple[QueueModel, list[str], list[Any], Any]:
    """A run whose model calls ``nope`` (no such tool), with a hook asking for its approval."""
    order: list[str] = []
    asked: list[Any] = []

    def handler(request: Any) -> Any:
        order.append("approval")
        asked.append(request)
        return answer

    hook = create_hook(
        on_tool_call=lambda e: e.tool.request_approval(
            reason="Check it.", reject_message="Rejected by hook."
        ),
        on_tool_error=lambda e: order.append(f"on_tool_error {type(e.error).__name__}"),
    )
    model = QueueModel([call("nope", {"x": 1}), "done"])
    agent = AgentBuilder("test-agent", model).hook(hook).approvals(handler).build()
    result = agent.prompt("go").store(None).send_sync()
    return model, order, asked, result


def test_an_unknown_tools_approval_is_asked_before_it_is_reported_not_found() -> None:
    model, order, asked, result = unknown_tool_run(True)
    assert result.output == "done"
    assert order == ["approval", "on_tool_error ToolNotFoundError"]
    [request] = asked
    assert (request.tool_name, request.tool_call_id, request.reason) == (
        "nope",
        "call_1",
        "Check it.",
    )
    assert (request.args, request.raw_args) == ({"x": 1}, '{"x":1}')
    [part] = tool_results(model.requests[1])
    assert (part.content, part.is_error) == ("ToolNotFoundError: Tool not found: nope", True)


def test_an_unknown_tool_whose_approval_is_rejected_is_told_the_rejection() -> None:
    model, order, asked, _ = unknown_tool_run(False)
    assert order == ["approval"]  # rejected: never called, so never found missing
    assert [request.tool_name for request in asked] == ["nope"]
    [part] = tool_results(model.requests[1])
    assert (part.content, part.is_error) == ("Rejected by hook.", False)


def test_an_unknown_tools_approval_with_no_handler_ends_the_run() -> None:
    errors: list[Any] = []
    hook = create_hook(
        on_tool_call=lambda e: e.tool.request_approval(reason="Check it."),
        on_tool_error=errors.append,
    )
    model = QueueModel([call("nope", {}), "should not be requested"])
    agent = AgentBuilder("test-agent", model).hook(hook).build()
    with pytest.raises(ToolApprovalRequiredError, match="nope"):
        agent.prompt("go").store(None).send_sync()
    assert errors == []
    assert len(model.requests) == 1


# -- a hook's skip with an empty reason ------------------------------------------------------------


@pytest.mark.parametrize("reason", ["", "Not today."])
def test_a_skip_s_reason_is_what_the_model_is_told_even_empty(reason: str) -> None:
    """Anvia's ``skip(reason)`` result is the reason as given (``output = callAction.reason``);
    an empty one was replaced by "Tool call skipped."."""
    executed: list[Any] = []
    hook = create_hook(on_tool_call=lambda e: e.tool.skip(reason))
    model = QueueModel([call("guarded", {}), "fine"])
    agent = AgentBuilder("test-agent", model).tool(guarded_tool(executed)).hook(hook).build()
    agent.prompt("go").store(None).send_sync()
    [part] = tool_results(model.requests[1])
    assert (part.content, part.is_error, executed) == (reason, False, [])
