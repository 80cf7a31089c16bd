"""Anvia v0's own test cases, translated one by one (those tests/test_anvia_parity.py lacks).

Each test's docstring names the Anvia test file (repository anvia-hq/anvia, branch main) and
the case it translates. Anvia's names map to ours as in API.md: ``createHook`` ->
``create_hook``, ``withHook`` -> ``with_hook``, ``approvals({handler})`` -> ``approvals(handler)``,
``chatHistory`` -> ``CompletionRequest.messages``, a Studio run's HTTP decision endpoints ->
``AgentRun.interactions`` (what the widget, a ``RunHandle`` and the run store decide through),
a rejected promise -> a raised exception. Where API.md fixes a behaviour that differs from
Anvia's, the test asserts ours and its docstring says why.

Anvia cases with no counterpart in this package are not translated: middleware, steering,
output schemas, guardrails, observers and event stores, agents as tools, JSONL readable
streams, opting out of tool-call deltas, structured (multimodal) tool output, reasoning ids,
per-message generation metadata, the order of interleaved message parts, ToolSet removal, and
Studio's HTTP server, sessions, pipelines and memory pages.
"""

from __future__ import annotations

import asyncio
import errno
import json
import random
import warnings
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    DecisionRefusedError,
    MaxTurnsError,
    Message,
    PromptCancelledError,
    RequestAlreadyUsedError,
    StoreHumanInput,
    ToolApproval,
    ToolApprovalRequiredError,
    ToolArgumentsError,
    Usage,
    ask_question,
    create_hook,
    create_tool,
)
from anvia_notebook.hooks import HookAction, RunControl, ToolCallControl, ToolCallDecision
from anvia_notebook.models import (
    ModelError,
    QueueModel,
    ReasoningDelta,
    StreamingQueueModel,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    UsageUpdate,
)
from anvia_notebook.retry import CompletionRetries, RetryContext, is_transient_error

from helpers import call, calls, make_add_tool, tool_results

# -- helpers ---------------------------------------------------------------------------------------


class StatusError(Exception):
    """An HTTP failure that names its status ``status`` (as aiohttp's errors do), not
    ``status_code``: Anvia reads either."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Empty(BaseModel):
    pass


class Amount(BaseModel):
    amount: float


class Refund(BaseModel):
    orderId: str  # Anvia's own argument name
    amount: float


def guarded_tool(
    executed: list[Any], *, result: str = "approved result", approval: ToolApproval | None = None
):
    """Anvia's ``guarded`` tool: records that it ran, returns ``result``."""
    return create_tool(
        name="guarded",
        description="A guarded tool",
        input=Empty,
        execute=lambda args, ctx: executed.append(True) or result,
        approval=approval,
    )


def amount_tool(executed: list[float], approval: ToolApproval):
    def execute(args: Amount, ctx: Any) -> str:
        executed.append(args.amount)
        return f"approved {args.amount:g}"

    return create_tool(
        name="guarded",
        description="A guarded tool",
        input=Amount,
        execute=execute,
        approval=approval,
    )


ALWAYS = ToolApproval()


def refund_tool(executed: list[Any], approval: ToolApproval | None = ALWAYS):
    """Studio's ``issue_refund`` test tool (always protected unless ``approval`` says so)."""

    def execute(args: Refund, ctx: Any) -> str:
        executed.append(args)
        return f"Refunded {args.amount:g} for {args.orderId}"

    return create_tool(
        name="issue_refund",
        description="Issue a customer refund",
        input=Refund,
        execute=execute,
        approval=approval,
    )


REFUND_DELTA = ToolCallDelta(
    id="call_1", name="issue_refund", arguments_delta='{"orderId":"ORD-1","amount":25}'
)


async def collect(request) -> list[Any]:
    return [event async for event in request.stream()]


def types(events: list[Any]) -> list[str]:
    return [event.type for event in events]


def no_wait(request):
    return request.with_completion_retries(initial_delay=0, max_delay=0)


async def wait_for_event(run, kind: str):
    """Start-to-pending: the first event of ``kind`` the run emits (replayed if it came)."""
    seen: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def on_event(event: Any) -> None:
        if event.type == kind and not seen.done():
            seen.set_result(event)

    unsubscribe = run.subscribe(on_event)
    try:
        return await asyncio.wait_for(seen, 30)
    finally:
        unsubscribe()


# == prompt-request.test.ts =======================================================================


def test_returns_text_only_completions():
    """prompt-request.test.ts: "returns text-only completions"."""
    model = QueueModel(["done"])
    agent = AgentBuilder("test-agent", model).instructions("system").build()
    result = agent.prompt("hello").store(None).send_sync()
    assert result.output == "done"
    assert model.requests[0].instructions == "system"
    assert model.requests[0].messages[0] == Message.user("hello")


def test_retries_transient_completion_failures_with_the_default_policy(monkeypatch):
    """prompt-request.test.ts: "retries transient completion failures with the default policy".

    As there, the random jitter is pinned to 0 and the same request object is sent again.
    """
    monkeypatch.setattr(random, "random", lambda: 0.0)
    model = StreamingQueueModel(
        [[ModelError("temporarily unavailable", status_code=503)], [TextDelta(delta="recovered")]]
    )
    agent = AgentBuilder("test-agent", model).build()
    result = agent.prompt("hello").store(None).with_completion_retries().send_sync()
    assert result.output == "recovered"
    assert len(model.requests) == 2
    assert model.requests[1] is model.requests[0]


def test_stops_after_the_configured_attempts_and_reports_one_logical_error():
    """prompt-request.test.ts: "stops after the configured completion attempts and reports one
    logical error": the last error is raised; one completion call and one error hook."""
    errors = [ModelError(f"unavailable {n}", status_code=503) for n in (1, 2, 3)]
    model = StreamingQueueModel([[error] for error in errors])
    hook_calls = {"call": 0, "error": 0}
    hook = create_hook(
        on_completion_call=lambda e: hook_calls.__setitem__("call", hook_calls["call"] + 1),
        on_completion_error=lambda e: hook_calls.__setitem__("error", hook_calls["error"] + 1),
    )
    agent = AgentBuilder("test-agent", model).hook(hook).build()
    with pytest.raises(ModelError) as raised:
        no_wait(agent.prompt("hello").store(None)).send_sync()
    assert raised.value is errors[2]
    assert len(model.requests) == 3
    assert hook_calls == {"call": 1, "error": 1}


def test_does_not_retry_non_transient_completion_failures():
    """prompt-request.test.ts: "does not retry non-transient completion failures"."""
    error = ModelError("invalid request", status_code=400)
    model = StreamingQueueModel([[error], [TextDelta(delta="unexpected")]])
    with pytest.raises(ModelError) as raised:
        no_wait(AgentBuilder("test-agent", model).build().prompt("hello").store(None)).send_sync()
    assert raised.value is error
    assert len(model.requests) == 1


def test_never_retries_abort_errors():
    """prompt-request.test.ts: "never retries abort errors". Anvia's ``AbortError`` is
    Python's ``asyncio.CancelledError``: anywhere in the cause chain it wins over a 503."""
    error = ModelError("aborted", status_code=503)
    error.__cause__ = asyncio.CancelledError()
    model = StreamingQueueModel([[error], [TextDelta(delta="unexpected")]])
    with pytest.raises(ModelError) as raised:
        no_wait(AgentBuilder("test-agent", model).build().prompt("hello").store(None)).send_sync()
    assert raised.value is error
    assert len(model.requests) == 1


def test_supports_request_specific_completion_retry_classification():
    """prompt-request.test.ts: "supports request-specific completion retry classification".

    Difference kept: Anvia's context also says ``streaming`` (false for ``send()``); every
    model call here streams, whatever way the run is consumed, so the context has no such
    field: ``error, attempt, max_attempts, turn``.
    """
    error = RuntimeError("warming up")
    model = StreamingQueueModel([[error], [TextDelta(delta="ready")]])
    contexts: list[RetryContext] = []

    def should_retry(context: RetryContext) -> bool:
        contexts.append(context)
        return context.error is error

    request = (
        AgentBuilder("test-agent", model)
        .build()
        .prompt("hello")
        .store(None)
        .with_completion_retries(
            max_attempts=2, initial_delay=0, max_delay=0, should_retry=should_retry
        )
    )
    assert request.send_sync().output == "ready"
    assert contexts == [RetryContext(error=error, attempt=1, max_attempts=2, turn=1)]


@pytest.mark.parametrize(
    "options",
    [
        {"max_attempts": 0},
        {"max_attempts": 1.5},
        {"initial_delay": -1},
        {"initial_delay": 0.2, "max_delay": 0.1},
    ],
)
def test_validates_completion_retry_options_when_configuring_the_request(options):
    """prompt-request.test.ts: "validates completion retry options when configuring the
    request" (its ``RangeError`` is Python's ``ValueError``; the ``TypeError`` for a
    ``shouldRetry`` that is not a function is in test_anvia_parity.py)."""
    request = AgentBuilder("test-agent", QueueModel(["unused"])).build().prompt("hello")
    with pytest.raises(ValueError, match=r"max_attempts|delay"):
        request.with_completion_retries(**options)


def test_retries_a_later_completion_turn_without_replaying_tools_or_request_hooks():
    """prompt-request.test.ts: "retries a later completion turn without replaying tools or
    request hooks" (without its middleware, which this package does not have)."""
    add = make_add_tool()
    model = StreamingQueueModel(
        [
            [ToolCall(id="call_1", name="add", arguments={"x": 2, "y": 5})],
            [ModelError("temporarily unavailable", status_code=503)],
            [TextDelta(delta="7")],
        ]
    )
    counts = {"call": 0, "error": 0}
    hook = create_hook(
        on_completion_call=lambda e: counts.__setitem__("call", counts["call"] + 1),
        on_completion_error=lambda e: counts.__setitem__("error", counts["error"] + 1),
    )
    agent = AgentBuilder("test-agent", model).tool(add).hook(hook).build()
    result = no_wait(agent.prompt("add").store(None)).send_sync()
    assert result.output == "7"
    assert len(model.requests) == 3
    assert add.calls == [(2, 5)]
    assert counts == {"call": 2, "error": 0}
    assert len([m for m in result.messages if m.role == "tool"]) == 1


def test_merges_repeated_instruction_blocks():
    """prompt-request.test.ts: "merges repeated instruction blocks"."""
    model = QueueModel(["done"])
    agent = (
        AgentBuilder("test-agent", model).instructions("First block.").instructions("Second block.")
    ).build()
    agent.prompt("hello").store(None).send_sync()
    assert model.requests[0].instructions == "First block.\n\nSecond block."


def test_executes_one_tool_round_trip():
    """prompt-request.test.ts: "executes one tool round-trip" (Anvia's separate provider
    ``callId`` has no counterpart: a call has one id)."""
    model = QueueModel([call("add", {"x": 2, "y": 5}), "7"])
    result = AgentBuilder("test-agent", model).tool(make_add_tool()).build().prompt("add")
    assert result.store(None).send_sync().output == "7"
    assert len(model.requests) == 2
    history = model.requests[1].messages
    assert history[-2].role == "assistant"
    [part] = history[-1].tool_results
    assert (part.tool_call_id, part.tool_name, part.content, part.is_error) == (
        "call_1",
        "add",
        "7",
        False,
    )


def test_rejects_empty_completion_tool_names_before_dispatch():
    """prompt-request.test.ts: "rejects empty completion tool names before dispatch"."""
    model = QueueModel([call("", {"command": "pwd"}, id="tool_0"), "should not continue"])
    agent = AgentBuilder("test-agent", model).build()
    with pytest.raises(ValueError, match=r"tool call 'tool_0' with an empty name") as raised:
        agent.prompt("run a command").store(None).send_sync()
    assert len(model.requests) == 1
    # (every error the package raises is an AnviaError: this one was a bare ValueError)
    assert isinstance(raised.value, ModelError) and not raised.value.retryable


def test_executes_multiple_tool_calls_in_one_turn():
    """prompt-request.test.ts: "executes multiple tool calls in one turn"."""
    model = QueueModel(
        [calls(("add", {"x": 1, "y": 2}, "call_1"), ("add", {"x": 3, "y": 4}, "call_2")), "ok"]
    )
    request = AgentBuilder("test-agent", model).tool(make_add_tool()).build().prompt("add twice")
    assert request.with_tool_concurrency(2).store(None).send_sync().output == "ok"
    last = model.requests[1].messages[-1]
    assert last.role == "tool"
    assert [(p.tool_call_id, p.content) for p in last.tool_results] == [
        ("call_1", "3"),
        ("call_2", "7"),
    ]


def test_runs_object_shaped_hooks_and_continues_when_callbacks_return_nothing():
    """prompt-request.test.ts: "runs object-shaped hooks and continues when callbacks return
    nothing"."""
    model = QueueModel([call("add", {"x": 2, "y": 5}), "7"])
    events: list[str] = []

    class Recording:
        def on_completion_call(self, e):
            events.append(f"completion_call:{e.prompt.role}:{len(e.history)}")

        def on_completion_response(self, e):
            events.append(f"completion_response:{len(e.response.tool_calls) or 1}")

        def on_tool_call(self, e):
            events.append(f"tool_call:{e.tool_name}:{e.tool_call_id}:{e.args}")

        def on_tool_result(self, e):
            events.append(f"tool_result:{e.tool_name}:{e.result}")

    recording = Recording()
    hook = create_hook(
        on_completion_call=recording.on_completion_call,
        on_completion_response=recording.on_completion_response,
        on_tool_call=recording.on_tool_call,
        on_tool_result=recording.on_tool_result,
    )
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).hook(hook).build()
    assert agent.prompt("add").store(None).send_sync().output == "7"
    assert events == [
        "completion_call:user:0",
        "completion_response:1",
        'tool_call:add:call_1:{"x":2,"y":5}',
        "tool_result:add:7",
        "completion_call:tool:2",
        "completion_response:1",
    ]


def test_runs_lifecycle_hooks_around_prompt_turns():
    """prompt-request.test.ts: "runs lifecycle hooks around prompt turns"."""
    model = QueueModel(["done"])
    events: list[str] = []
    hook = create_hook(
        on_run_start=lambda e: events.append(
            f"run_start:{e.prompt.role}:{len(e.history)}:{e.max_turns}"
        ),
        on_turn_start=lambda e: events.append(
            f"turn_start:{e.turn}:{e.prompt.role}:{len(e.history)}"
        ),
        on_turn_end=lambda e: events.append(f"turn_end:{e.turn}:{e.response.text}"),
        on_run_end=lambda e: events.append(f"run_end:{e.output}:{len(e.messages)}"),
    )
    agent = AgentBuilder("test-agent", model).hook(hook).build()
    assert agent.prompt("hello").store(None).send_sync().output == "done"
    assert events == [
        "run_start:user:0:20",
        "turn_start:1:user:0",
        "turn_end:1:done",
        "run_end:done:2",
    ]


def test_can_run_tool_calls_from_a_hook_helper():
    """prompt-request.test.ts: "can run tool calls from a hook helper"."""
    model = QueueModel([call("add", {"x": 2, "y": 5}), "7"])
    hook = create_hook(on_tool_call=lambda e: e.tool.run())
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).hook(hook).build()
    assert agent.prompt("add").store(None).send_sync().output == "7"
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content) == ("call_1", "add", "7")


def test_can_skip_tool_calls_from_a_hook_helper():
    """prompt-request.test.ts: "can skip tool calls from a hook helper"."""
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 2, "y": 5}), "skipped"])
    hook = create_hook(on_tool_call=lambda e: e.tool.skip("not needed"))
    agent = AgentBuilder("test-agent", model).tool(add).hook(hook).build()
    assert agent.prompt("add").store(None).send_sync().output == "skipped"
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content) == ("call_1", "add", "not needed")
    assert add.calls == []


def test_can_cancel_prompts_from_a_tool_call_hook_helper_before_execution():
    """prompt-request.test.ts: "can cancel prompts from a tool call hook helper before
    execution"."""
    executed: list[Any] = []
    model = QueueModel([call("guarded", {}), "should not be requested"])
    hook = create_hook(on_tool_call=lambda e: e.tool.cancel("blocked"))
    agent = AgentBuilder("test-agent", model).tool(guarded_tool(executed)).hook(hook).build()
    with pytest.raises(PromptCancelledError) as raised:
        agent.prompt("run blocked").store(None).send_sync()
    assert raised.value.reason == "blocked"
    assert executed == []
    assert len(model.requests) == 1


def test_throws_clearly_when_a_tool_call_hook_requests_approval_without_a_handler():
    """prompt-request.test.ts: "throws clearly when a tool call hook requests approval without a
    handler"."""
    executed: list[Any] = []
    model = QueueModel([call("guarded", {}), "should not be requested"])
    hook = create_hook(on_tool_call=lambda e: e.tool.request_approval(reason="Guarded action."))
    agent = AgentBuilder("test-agent", model).tool(guarded_tool(executed)).hook(hook).build()
    with pytest.raises(ToolApprovalRequiredError, match="guarded"):
        agent.prompt("run guarded").store(None).send_sync()
    assert executed == []
    assert len(model.requests) == 1


def test_routes_hook_based_approval_requests_through_the_approval_handler():
    """prompt-request.test.ts: "routes hook-based approval requests through the approval
    handler"."""
    executed: list[Any] = []
    model = QueueModel([call("guarded", {}), "done"])
    hook = create_hook(on_tool_call=lambda e: e.tool.request_approval(reason="Guarded action."))
    agent = (
        AgentBuilder("test-agent", model)
        .tool(guarded_tool(executed))
        .hook(hook)
        .approvals(lambda request: True)
        .build()
    )
    assert agent.prompt("run guarded").store(None).send_sync().output == "done"
    assert executed == [True]


def test_skips_hook_based_approval_requests_when_the_approval_handler_rejects():
    """prompt-request.test.ts: "skips hook-based approval requests when the approval handler
    rejects"."""
    executed: list[Any] = []
    model = QueueModel([call("guarded", {}), "denied"])
    hook = create_hook(
        on_tool_call=lambda e: e.tool.request_approval(reject_message="Rejected by hook.")
    )
    agent = (
        AgentBuilder("test-agent", model)
        .tool(guarded_tool(executed))
        .hook(hook)
        .approvals(lambda request: False)
        .build()
    )
    assert agent.prompt("run guarded").store(None).send_sync().output == "denied"
    assert executed == []
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content) == (
        "call_1",
        "guarded",
        "Rejected by hook.",
    )


@pytest.mark.parametrize(
    ("approved", "output", "expected"),
    [(True, "done", "approved result"), (False, "denied", "Rejected by policy.")],
)
def test_async_approval_style_hook_runs_or_skips_the_tool(approved, output, expected):
    """prompt-request.test.ts: "executes a tool after async approval-style hook allows it" and
    "skips a tool after async approval-style hook rejects it"."""
    executed: list[Any] = []
    model = QueueModel([call("guarded", {}), output])

    async def on_tool_call(e):
        await asyncio.sleep(0)
        return e.tool.run() if approved else e.tool.skip("Rejected by policy.")

    hook = create_hook(on_tool_call=on_tool_call)
    agent = AgentBuilder("test-agent", model).tool(guarded_tool(executed)).hook(hook).build()
    assert agent.prompt("run guarded").store(None).send_sync().output == output
    assert executed == ([True] if approved else [])
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content) == ("call_1", "guarded", expected)


def test_runs_approval_protected_tools_when_the_handler_approves():
    """prompt-request.test.ts: "runs approval-protected tools when the handler approves"."""
    executed: list[float] = []
    approval = ToolApproval(
        when=lambda ctx: ctx.args.amount > 100, reason=lambda ctx: f"Approve {ctx.args.amount:g}"
    )
    model = QueueModel([call("guarded", {"amount": 250}), "done"])
    requests: list[Any] = []
    agent = (
        AgentBuilder("test-agent", model)
        .tool(amount_tool(executed, approval))
        .approvals(lambda request: requests.append(request) or True)
        .build()
    )
    assert agent.prompt("run guarded").store(None).send_sync().output == "done"
    assert executed == [250]
    [request] = requests
    assert (request.tool_name, request.args.amount, request.reason, request.run.agent_id) == (
        "guarded",
        250,
        "Approve 250",
        "test-agent",
    )
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content) == (
        "call_1",
        "guarded",
        "approved 250",
    )


def test_skips_approval_protected_tools_when_the_handler_rejects():
    """prompt-request.test.ts: "skips approval-protected tools when the handler rejects"."""
    executed: list[float] = []
    approval = ToolApproval(
        when=lambda ctx: ctx.args.amount > 100, reject_message="Rejected by policy."
    )
    model = QueueModel([call("guarded", {"amount": 250}), "denied"])
    agent = (
        AgentBuilder("test-agent", model)
        .tool(amount_tool(executed, approval))
        .approvals(lambda request: False)
        .build()
    )
    assert agent.prompt("run guarded").store(None).send_sync().output == "denied"
    assert executed == []
    [part] = tool_results(model.requests[1])
    assert (part.tool_name, part.content) == ("guarded", "Rejected by policy.")


def test_runs_approval_protected_tools_directly_when_the_condition_is_false():
    """prompt-request.test.ts: "runs approval-protected tools directly when the condition is
    false"."""
    executed: list[float] = []
    asked: list[Any] = []
    approval = ToolApproval(when=lambda ctx: ctx.args.amount > 100)
    model = QueueModel([call("guarded", {"amount": 50}), "done"])
    agent = (
        AgentBuilder("test-agent", model)
        .tool(amount_tool(executed, approval))
        .approvals(lambda request: asked.append(request) or False)
        .build()
    )
    assert agent.prompt("run guarded").store(None).send_sync().output == "done"
    assert executed == [50]
    assert asked == []


def test_lets_request_level_approvals_override_agent_level_approvals():
    """prompt-request.test.ts: "lets request-level approvals override agent-level
    approvals"."""
    executed: list[Any] = []
    tool = guarded_tool(
        executed,
        result="request approved",
        approval=ToolApproval(when=lambda ctx: True, reject_message="Rejected by request."),
    )
    model = QueueModel([call("guarded", {}), "done"])
    agent = AgentBuilder("test-agent", model).tool(tool).approvals(lambda r: False).build()
    request = agent.prompt("run guarded").approvals(lambda r: True).store(None)
    assert request.send_sync().output == "done"
    assert executed == [True]


def test_can_cancel_prompts_from_a_hook_helper():
    """prompt-request.test.ts: "can cancel prompts from a hook helper"."""
    model = QueueModel(["done"])
    hook = create_hook(on_completion_call=lambda e: e.run.cancel("blocked"))
    agent = AgentBuilder("test-agent", model).hook(hook).build()
    with pytest.raises(PromptCancelledError, match="blocked"):
        agent.prompt("hello").store(None).send_sync()
    assert model.requests == []


def test_runs_completion_error_hooks_before_run_error_hooks():
    """prompt-request.test.ts: "runs completion error hooks before run error hooks"."""
    model = QueueModel([])
    events: list[str] = []
    hook = create_hook(
        on_completion_error=lambda e: events.append(f"completion_error:{e.error}"),
        on_run_error=lambda e: events.append(f"run_error:{e.error}"),
    )
    agent = AgentBuilder("test-agent", model).hook(hook).build()
    with pytest.raises(ModelError, match="ran out of responses") as raised:
        agent.prompt("hello").store(None).send_sync()
    assert events == [f"completion_error:{raised.value}", f"run_error:{raised.value}"]


def test_rejects_reused_prompt_requests():
    """prompt-request.test.ts: "rejects reused prompt requests" (Anvia's message is kept as
    the start of ours, which also says what to do)."""
    model = QueueModel(["done"])
    request = AgentBuilder("test-agent", model).build().prompt("hello").store(None)
    assert request.send_sync().output == "done"
    with pytest.raises(RequestAlreadyUsedError, match=r"PromptRequest has already been used\."):
        request.send_sync()
    assert len(model.requests) == 1


def test_runs_tool_error_hooks_and_keeps_tool_errors_as_model_visible_results():
    """prompt-request.test.ts: "runs tool error hooks and keeps tool errors as model-visible
    results"."""

    def fail(args: Empty, ctx: Any) -> str:
        raise RuntimeError("tool failed")

    failing = create_tool(name="fail", description="Fail", input=Empty, execute=fail)
    model = QueueModel([call("fail", {}), "handled"])
    events: list[str] = []
    hook = create_hook(on_tool_error=lambda e: events.append(f"{e.tool_name}:{e.error}"))
    agent = AgentBuilder("test-agent", model).tool(failing).hook(hook).build()
    assert agent.prompt("fail").store(None).send_sync().output == "handled"
    assert events == ["fail:tool failed"]
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content, part.is_error) == (
        "call_1",
        "fail",
        "ToolCallError: tool failed",
        True,
    )


def test_keeps_low_level_hook_action_helpers_available():
    """prompt-request.test.ts: "keeps low-level hook action helpers available".

    Difference kept: API.md names the helpers ``run.cancel(reason)`` and
    ``tool.request_approval(...)`` (no top-level ``cancelPrompt`` / ``requestToolApproval``),
    and Anvia's ``terminate`` action is called ``cancel``; the values are plain data.
    """
    assert RunControl().cancel("blocked") == HookAction("cancel", "blocked")
    assert ToolCallControl().request_approval(reason="review") == ToolCallDecision(
        "approval_request", "review"
    )
    assert ToolCallControl().skip("no") == ToolCallDecision("skip", "no")


def test_uses_with_hook_for_one_request_instead_of_the_agent_hook():
    """prompt-request.test.ts: "uses withHook for one request instead of the agent hook"."""
    model = QueueModel([call("add", {"x": 2, "y": 5}), "request hook used"])
    agent_hook = create_hook(on_tool_call=lambda e: e.tool.skip("agent hook used"))
    request_hook = create_hook(on_tool_call=lambda e: e.tool.run())
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).hook(agent_hook).build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (it says the agent hook is dropped)
        request = agent.prompt("add").with_hook(request_hook)
    assert request.store(None).send_sync().output == "request hook used"
    [part] = tool_results(model.requests[1])
    assert (part.tool_name, part.content) == ("add", "7")


def test_fails_when_the_model_keeps_calling_tools_past_max_turns():
    """prompt-request.test.ts: "fails when the model keeps calling tools past max turns"."""
    model = QueueModel([call("add", {"x": 1, "y": 2}), call("add", {"x": 3, "y": 4}, id="call_2")])
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).default_max_turns(0).build()
    with pytest.raises(MaxTurnsError):
        agent.prompt("loop").store(None).send_sync()
    assert len(model.requests) == 2


# == streaming.test.ts ============================================================================


async def test_streams_text_deltas_and_final_response():
    """streaming.test.ts: "streams text deltas and final response"."""
    model = StreamingQueueModel([[TextDelta(delta="hel"), TextDelta(delta="lo")]])
    agent = AgentBuilder("test-agent", model).instructions("system").build()
    events = await collect(agent.prompt("hi").store(None))
    assert types(events) == [
        "turn_start",
        "generation_start",
        "text_delta",
        "text_delta",
        "turn_end",
        "final",
    ]
    assert events[-1].output == "hello"
    assert model.requests[0].instructions == "system"
    assert model.requests[0].messages[0] == Message.user("hi")


async def test_measures_first_delta_latency_after_generation_start():
    """streaming.test.ts: "measures first-delta latency from before generation_start is
    emitted".

    Difference kept: API.md's ``turn_end`` event has ``turn, usage`` only; the latency is the
    trace's ``first_token_ms`` (section 11). No clock is faked here, so only its presence and
    the event order are checked.
    """
    model = StreamingQueueModel([[TextDelta(delta="hello")]])
    request = AgentBuilder("test-agent", model).build().prompt("hi").store(None)
    events = await collect(request)
    assert types(events) == ["turn_start", "generation_start", "text_delta", "turn_end", "final"]
    assert request.trace is not None
    first_token_ms = request.trace.turns[0].first_token_ms
    assert first_token_ms is not None and first_token_ms >= 0


@pytest.mark.parametrize(
    "error",
    [StatusError("temporarily unavailable", 503), ModelError("unavailable", status_code=503)],
    ids=["status", "status_code"],
)
async def test_retries_a_transient_stream_failure_before_the_first_provider_event(error):
    """streaming.test.ts: "retries a transient stream failure before the first provider event"
    (an error with ``status``) and "retries an initial provider error event without exposing
    it" (one with ``statusCode``, ours ``status_code``): no error event, the same request
    object sent again."""
    model = StreamingQueueModel([[error], [TextDelta(delta="recovered")]])
    events = await collect(no_wait(AgentBuilder("test-agent", model).build().prompt("hi")))
    assert types(events) == ["turn_start", "generation_start", "text_delta", "turn_end", "final"]
    assert events[-1].output == "recovered"
    assert len(model.requests) == 2
    assert model.requests[1] is model.requests[0]


async def test_keeps_successful_final_event_usage_unchanged():
    """streaming.test.ts: "keeps successful final-event usage unchanged"."""
    usage = Usage(input_tokens=5, output_tokens=4)
    model = StreamingQueueModel([[TextDelta(delta="done"), UsageUpdate(usage=usage)]])
    events = await collect(AgentBuilder("test-agent", model).build().prompt("hi").store(None))
    assert (events[-1].type, events[-1].output, events[-1].usage) == ("final", "done", usage)


async def test_a_provider_failure_is_reported_once_then_raised():
    """streaming.test.ts: "includes authoritative provider failure usage exactly once" and
    "uses empty usage when the first provider failure has no authoritative usage".

    Difference kept: API.md's ``error`` event is ``run_id, error`` (the message) without
    usage, since a model reports a failure by raising (there is no error event carrying
    usage); the run's usage so far is on ``on_run_error``, empty here. As in Anvia the
    stream then raises the model's own error.
    """
    error = RuntimeError("provider failed")
    model = StreamingQueueModel([[error]])
    usages: list[Usage] = []
    hook = create_hook(on_run_error=lambda e: usages.append(e.usage))
    request = AgentBuilder("test-agent", model).hook(hook).build().prompt("hi").store(None)
    seen: list[Any] = []
    with pytest.raises(RuntimeError) as raised:
        async for event in request.stream():
            seen.append(event)
    assert raised.value is error
    assert [e for e in seen if e.type == "error"][0].error == "provider failed"
    assert types(seen).count("error") == 1 and seen[-1].type == "error"
    assert usages == [Usage()]


async def test_retains_completed_turn_usage_when_a_later_provider_call_fails_before_usage():
    """streaming.test.ts: "retains completed turn usage when a later provider call fails before
    usage" (the usage reaches ``on_run_error``; see the test above for the error event)."""
    first = Usage(input_tokens=8, output_tokens=2)
    error = RuntimeError("second turn failed")
    model = StreamingQueueModel(
        [
            [
                ToolCall(id="call_1", name="add", arguments={"x": 2, "y": 5}),
                UsageUpdate(usage=first),
            ],
            [error],
        ]
    )
    usages: list[Usage] = []
    hook = create_hook(on_run_error=lambda e: usages.append(e.usage))
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).hook(hook).build()
    with pytest.raises(RuntimeError) as raised:
        await collect(agent.prompt("add").store(None))
    assert raised.value is error
    assert usages == [first]


async def test_shares_completed_tool_turn_usage_when_on_tool_error_cancels_the_run():
    """streaming.test.ts: "shares completed tool-turn usage with the observer and terminal error
    event": here ``on_run_error`` gets the turn's usage and the ``PromptCancelledError`` that
    ends the stream (a cancelled run ends with a ``cancelled`` event, API.md section 6)."""
    turn_usage = Usage(input_tokens=9, output_tokens=3)

    def fail(args: Empty, ctx: Any) -> str:
        raise RuntimeError("tool failed")

    failing = create_tool(name="fail", description="Fail", input=Empty, execute=fail)
    model = StreamingQueueModel(
        [[ToolCall(id="call_1", name="fail", arguments={}), UsageUpdate(usage=turn_usage)]]
    )
    observed: list[Any] = []
    hook = create_hook(
        on_tool_error=lambda e: e.run.cancel("stop after tool failure"),
        on_run_error=observed.append,
    )
    agent = AgentBuilder("test-agent", model).tool(failing).hook(hook).build()
    seen: list[Any] = []
    with pytest.raises(PromptCancelledError) as raised:
        async for event in agent.prompt("fail").store(None).stream():
            seen.append(event)
    assert seen[-1].type == "cancelled" and seen[-1].reason == "stop after tool failure"
    [event] = observed
    assert event.usage == turn_usage
    assert isinstance(event.error, PromptCancelledError)
    assert event.error.reason == raised.value.reason


async def test_does_not_retry_after_a_provider_delta_has_been_observed():
    """streaming.test.ts: "does not retry after a provider delta has been observed"."""
    error = ModelError("stream interrupted", status_code=503)
    model = StreamingQueueModel([[TextDelta(delta="partial"), error], [TextDelta(delta="dup")]])
    request = no_wait(AgentBuilder("test-agent", model).build().prompt("hi").store(None))
    seen: list[Any] = []
    with pytest.raises(ModelError) as raised:
        async for event in request.stream():
            seen.append(event)
    assert raised.value is error
    assert types(seen) == ["turn_start", "generation_start", "text_delta", "error"]
    assert seen[0].turn == 1 and seen[1].turn == 1 and seen[2].delta == "partial"
    assert len(model.requests) == 1


async def test_does_not_retry_after_a_non_emitted_provider_event_has_been_observed():
    """streaming.test.ts: "does not retry after a non-emitted provider event has been
    observed" (Anvia's ``message_id`` event; here a usage update, which is not re-emitted)."""
    error = ModelError("stream interrupted", status_code=503)
    model = StreamingQueueModel(
        [[UsageUpdate(usage=Usage(input_tokens=1)), error], [TextDelta(delta="duplicate")]]
    )
    request = no_wait(AgentBuilder("test-agent", model).build().prompt("hi").store(None))
    with pytest.raises(ModelError):
        await collect(request)
    assert len(model.requests) == 1


async def test_the_terminal_error_event_carries_the_usage_so_far_once():
    """streaming.test.ts: "includes authoritative provider failure usage exactly once" and
    "retains completed turn usage when a later provider call fails before usage": the
    ``error`` event had no usage (a reader adding up cost lost a failed run's tokens)."""
    first, failed = Usage(input_tokens=8, output_tokens=2), Usage(input_tokens=7, output_tokens=2)
    error = ModelError("provider failed", status_code=400)
    model = StreamingQueueModel(
        [
            [
                ToolCall(id="call_1", name="add", arguments={"x": 2, "y": 5}),
                UsageUpdate(usage=first),
            ],
            [UsageUpdate(usage=failed), error],
        ]
    )
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).build()
    seen: list[Any] = []
    with pytest.raises(ModelError):
        async for event in no_wait(agent.prompt("add").store(None)).stream():
            seen.append(event)
    assert seen[-1].type == "error" and seen[-1].usage == first + failed
    empty = StreamingQueueModel([[ModelError("before usage", status_code=400)]])
    seen = []
    with pytest.raises(ModelError):
        async for event in AgentBuilder("t", empty).build().prompt("hi").store(None).stream():
            seen.append(event)
    assert seen[-1].type == "error" and seen[-1].usage == Usage()


async def test_the_cancelled_event_carries_the_usage_so_far():
    """As Anvia's terminal events do: a run stopped after a turn told nobody its tokens."""
    used = Usage(input_tokens=4, output_tokens=2)
    model = StreamingQueueModel(
        [[ToolCall(id="call_1", name="add", arguments={"x": 2, "y": 5}), UsageUpdate(usage=used)]]
    )
    hook = create_hook(on_tool_call=lambda event: event.tool.cancel("enough"))
    agent = AgentBuilder("t", model).tool(make_add_tool()).hook(hook).build()
    seen: list[Any] = []
    with pytest.raises(PromptCancelledError):
        async for event in agent.prompt("add").store(None).stream():
            seen.append(event)
    assert seen[-1].type == "cancelled" and seen[-1].usage == used


async def test_retains_completed_usage_when_the_run_end_hook_cancels_before_final():
    """streaming.test.ts: "retains completed usage when the run end hook cancels before
    final"."""
    usage = Usage(input_tokens=4, output_tokens=2)
    model = StreamingQueueModel([[TextDelta(delta="done"), UsageUpdate(usage=usage)]])
    observed: list[Any] = []
    hook = create_hook(
        on_run_end=lambda e: e.run.cancel("stop before final"), on_run_error=observed.append
    )
    seen: list[Any] = []
    with pytest.raises(PromptCancelledError, match="stop before final"):
        async for event in (
            AgentBuilder("t", model).hook(hook).build().prompt("hi").store(None).stream()
        ):
            seen.append(event)
    assert "final" not in types(seen) and seen[-1].type == "cancelled"
    assert [e.usage for e in observed] == [usage]


async def test_retains_every_completed_turn_usage_when_the_max_turn_limit_fails_the_run():
    """streaming.test.ts: "retains every completed turn usage when the max-turn limit fails the
    run" (API.md: ``MaxTurnsError`` carries the usage of every turn)."""
    first, second = Usage(input_tokens=3, output_tokens=1), Usage(input_tokens=6, output_tokens=2)
    model = StreamingQueueModel(
        [
            [
                ToolCall(id="call_1", name="add", arguments={"x": 1, "y": 2}),
                UsageUpdate(usage=first),
            ],
            [
                ToolCall(id="call_2", name="add", arguments={"x": 3, "y": 4}),
                UsageUpdate(usage=second),
            ],
        ]
    )
    agent = AgentBuilder("test-agent", model).tool(make_add_tool()).default_max_turns(0).build()
    seen: list[Any] = []
    with pytest.raises(MaxTurnsError) as raised:
        async for event in agent.prompt("loop").store(None).stream():
            seen.append(event)
    assert raised.value.usage == first + second
    assert seen[-1].type == "error" and seen[-1].error_type == "MaxTurnsError"


async def test_rejects_concurrent_stream_execution_on_the_same_prompt_request():
    """streaming.test.ts: "rejects concurrent stream execution on the same prompt request"
    (ours raises ``RequestAlreadyUsedError``: a request runs once, API.md section 3)."""
    model = StreamingQueueModel([[TextDelta(delta="done")]])
    request = AgentBuilder("test-agent", model).build().prompt("hi").store(None)
    iterator = request.stream()
    first = await iterator.__anext__()
    assert first.type == "turn_start"
    with pytest.raises(RequestAlreadyUsedError):
        await collect(request)
    rest = [event async for event in iterator]
    assert rest[-1].type == "final" and rest[-1].output == "done"


async def test_merges_usage_only_final_stream_responses_with_accumulated_text():
    """streaming.test.ts: "merges usage-only final stream responses with accumulated text"
    (Anvia's per-message generation metadata has no counterpart)."""
    usage = Usage(input_tokens=2, output_tokens=1)
    model = StreamingQueueModel(
        [[TextDelta(delta="hel"), TextDelta(delta="lo"), UsageUpdate(usage=usage)]]
    )
    events = await collect(AgentBuilder("test-agent", model).build().prompt("hi").store(None))
    final = events[-1]
    assert (final.output, final.usage, final.usage.total_tokens) == ("hello", usage, 3)
    assert final.messages[-1] == Message.assistant("hello")


async def test_streams_automatic_tool_execution_across_turns():
    """streaming.test.ts: "streams automatic tool execution across turns"."""
    model = StreamingQueueModel(
        [
            [ToolCallDelta(id="call_1", name="add", arguments_delta='{"x":2,"y":5}')],
            [TextDelta(delta="7")],
        ]
    )
    events = await collect(
        AgentBuilder("test-agent", model).tool(make_add_tool()).build().prompt("add").store(None)
    )
    kinds = types(events)
    [delta] = [e for e in events if e.type == "tool_call_delta"]
    assert (delta.turn, delta.id, delta.name, delta.arguments_delta) == (
        1,
        "call_1",
        "add",
        '{"x":2,"y":5}',
    )
    [tool_call] = [e for e in events if e.type == "tool_call"]
    assert tool_call.turn == 1
    assert (tool_call.tool_call.id, tool_call.tool_call.name) == ("call_1", "add")
    assert json.loads(tool_call.tool_call.arguments_json()) == {"x": 2, "y": 5}
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.turn, result.tool_name, result.args, result.result) == (
        1,
        "add",
        '{"x":2,"y":5}',
        "7",
    )
    assert kinds.index("tool_call_delta") < kinds.index("tool_call")
    assert events[-1].type == "final" and events[-1].output == "7"
    assert len(model.requests) == 2


async def test_streams_concurrent_tool_results_as_each_tool_finishes():
    """streaming.test.ts: "streams concurrent tool results as each tool finishes": the fast
    tool's result event comes while the slow one still runs; the tool message keeps call
    order."""
    slow_started, fast_started, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def slow(args: Empty, ctx: Any) -> str:
        slow_started.set()
        await release.wait()
        return "slow"

    async def fast(args: Empty, ctx: Any) -> str:
        fast_started.set()
        return "fast"

    slow_tool = create_tool(name="slow_tool", description="Slow", input=Empty, execute=slow)
    fast_tool = create_tool(name="fast_tool", description="Fast", input=Empty, execute=fast)
    model = StreamingQueueModel(
        [
            [
                ToolCall(id="call_slow", name="slow_tool", arguments={}),
                ToolCall(id="call_fast", name="fast_tool", arguments={}),
            ],
            [TextDelta(delta="done")],
        ]
    )
    agent = AgentBuilder("test-agent", model).tool(slow_tool).tool(fast_tool).build()
    iterator = agent.prompt("call both").with_tool_concurrency(2).store(None).stream()
    head = [await iterator.__anext__() for _ in range(5)]
    assert types(head) == ["turn_start", "generation_start", "tool_call", "tool_call", "turn_end"]
    first_result = await asyncio.wait_for(iterator.__anext__(), 30)
    assert slow_started.is_set() and fast_started.is_set()
    assert (first_result.type, first_result.tool_name, first_result.result) == (
        "tool_result",
        "fast_tool",
        "fast",
    )
    release.set()
    second_result = await iterator.__anext__()
    assert (second_result.type, second_result.tool_name, second_result.result) == (
        "tool_result",
        "slow_tool",
        "slow",
    )
    rest = [event async for event in iterator]
    assert rest[-1].type == "final" and rest[-1].output == "done"
    assert [(p.tool_call_id, p.content) for p in tool_results(model.requests[1])] == [
        ("call_slow", "slow"),
        ("call_fast", "fast"),
    ]


async def test_buffers_reasoning_deltas_into_one_reasoning_message():
    """streaming.test.ts: "buffers reasoning deltas without ids into one reasoning message"
    (reasoning is a field of the assistant message here, not a content part)."""
    model = StreamingQueueModel(
        [[ReasoningDelta(delta="Think"), ReasoningDelta(delta=" once."), TextDelta(delta="done")]]
    )
    events = await collect(AgentBuilder("test-agent", model).build().prompt("reason").store(None))
    assert events[-1].messages == [
        Message.user("reason"),
        Message.assistant("done", reasoning="Think once."),
    ]


async def test_merges_streamed_tool_call_chunks_that_share_an_id():
    """streaming.test.ts: "merges streamed tool-call chunks that use a provider call id" (a
    call has one id here: the chunks share it; the name comes first, the arguments later)."""
    model = StreamingQueueModel(
        [
            [
                ToolCallDelta(id="tool_0", name="add"),
                ToolCallDelta(id="tool_0", arguments_delta='{"x":2,"y":5}'),
            ],
            [TextDelta(delta="7")],
        ]
    )
    events = await collect(
        AgentBuilder("test-agent", model).tool(make_add_tool()).build().prompt("add").store(None)
    )
    [tool_call] = [e for e in events if e.type == "tool_call"]
    assert (tool_call.tool_call.id, tool_call.tool_call.name) == ("tool_0", "add")
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.tool_call_id, result.args, result.result) == ("tool_0", '{"x":2,"y":5}', "7")
    [part] = tool_results(model.requests[1])
    assert (part.tool_call_id, part.tool_name, part.content) == ("tool_0", "add", "7")


# == tool-studio runner.test.ts: approvals and questions in a Studio run ==========================


def studio_agent(model, *tools, hook=None):
    builder = AgentBuilder("support", model).tools(list(tools)).default_max_turns(2)
    if hook is not None:
        builder = builder.hook(hook)
    return builder.human_input(StoreHumanInput()).build()


async def test_pauses_protected_streaming_tool_calls_until_approval():
    """runner.test.ts: "pauses protected streaming tool calls until approval" (a second
    decision and an unknown id are refused, as Studio's 409 and 404)."""
    executed: list[Any] = []
    model = StreamingQueueModel([[REFUND_DELTA], [TextDelta(delta="Refund complete")]])
    run = studio_agent(model, refund_tool(executed)).prompt("refund").store(None).start()
    request = await wait_for_event(run, "tool_approval_request")
    assert "tool_call" in types(run.events)
    assert executed == []
    [pending] = run.interactions.pending
    assert (pending.id, pending.status, pending.tool_name) == (
        request.approval.id,
        "pending",
        "issue_refund",
    )
    assert run.interactions.decide(pending.id, approved=True).id == pending.id
    with pytest.raises(DecisionRefusedError, match="already approved"):
        run.interactions.decide(pending.id, approved=True)
    with pytest.raises(DecisionRefusedError, match="Unknown approval"):
        run.interactions.decide("missing", approved=True)
    response = await asyncio.wait_for(run.wait(), 30)
    assert len(executed) == 1
    [result] = [e for e in run.events if e.type == "tool_approval_result"]
    assert (result.approval.id, result.approval.status) == (pending.id, "approved")
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert tool_result.result == "Refunded 25 for ORD-1"
    assert response.output == "Refund complete"


async def test_cancels_pending_approvals_when_a_streaming_response_is_cancelled():
    """runner.test.ts: "cancels pending approvals when a streaming response is cancelled".

    Difference kept: the record's reason is the run's stop reason (API.md section 7: Stop
    turns a pending approval ``cancelled``), not Studio's fixed "Run cancelled in Anvia
    Studio.".
    """
    executed: list[Any] = []
    model = StreamingQueueModel([[REFUND_DELTA]])
    run = studio_agent(model, refund_tool(executed)).prompt("refund").store(None).start()
    request = await wait_for_event(run, "tool_approval_request")
    run.cancel("Run cancelled by the operator.")
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)
    assert run.interactions.pending == []
    record = run.state.approvals[request.approval.id]
    assert (record.status, record.decision_reason) == (
        "cancelled",
        "Run cancelled by the operator.",
    )
    assert executed == []


async def test_rejects_protected_tool_calls_without_executing_them_and_records_the_status():
    """runner.test.ts: "rejects protected tool calls without executing them and persists
    approval status" (the record is the run state's; sessions are Studio's own)."""
    executed: list[Any] = []
    model = StreamingQueueModel([[REFUND_DELTA], [TextDelta(delta="Refund denied")]])
    run = studio_agent(model, refund_tool(executed)).prompt("refund").store(None).start()
    request = await wait_for_event(run, "tool_approval_request")
    run.interactions.decide(request.approval.id, approved=False, reason="Rejected by test.")
    response = await asyncio.wait_for(run.wait(), 30)
    assert executed == []
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert tool_result.result == "Rejected by test."
    record = run.state.approvals[request.approval.id]
    assert (record.status, record.decision_reason) == ("rejected", "Rejected by test.")
    assert response.output == "Refund denied"
    assert [m.role for m in response.messages] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    ("approved", "expected"), [(True, "Refunded 25 for ORD-1"), (False, "Rejected by hook.")]
)
async def test_hook_based_approval_requests_in_streaming_runs(approved, expected):
    """runner.test.ts: "handles hook-based approval requests in streaming runs" and "skips
    rejected hook-based approval requests with the reject message"."""
    executed: list[Any] = []

    def on_tool_call(e):
        if e.tool_name == "issue_refund":
            return e.tool.request_approval(
                reason="Review refund before issuing it.", reject_message="Rejected by hook."
            )
        return e.tool.run()

    model = StreamingQueueModel([[REFUND_DELTA], [TextDelta(delta="Refund done")]])
    agent = studio_agent(
        model, refund_tool(executed, None), hook=create_hook(on_tool_call=on_tool_call)
    )
    run = agent.prompt("refund").store(None).start()
    request = await wait_for_event(run, "tool_approval_request")
    assert request.approval.reason == "Review refund before issuing it."
    assert executed == []
    run.interactions.decide(request.approval.id, approved=approved)
    await asyncio.wait_for(run.wait(), 30)
    assert len(executed) == (1 if approved else 0)
    [result] = [e for e in run.events if e.type == "tool_approval_result"]
    assert result.approval.status == ("approved" if approved else "rejected")
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert tool_result.result == expected


@pytest.mark.parametrize("kind", ["approval", "question"])
async def test_a_decision_returns_the_decided_record(kind):
    """runner.test.ts: "pauses protected streaming tool calls until approval" and "pauses
    ask_question tool calls until Studio receives answers": the decision's answer is the
    record with its new status (``{id, status: "approved"}`` / ``"answered"``)."""
    if kind == "approval":
        model = StreamingQueueModel([[REFUND_DELTA], [TextDelta(delta="done")]])
        run = studio_agent(model, refund_tool([])).prompt("refund").store(None).start()
        request = await wait_for_event(run, "tool_approval_request")
        record = run.interactions.decide(request.approval.id, approved=True)
        expected = "approved"
    else:
        question = {"questions": [{"id": "p", "question": "Which?", "choices": ["Low"]}]}
        model = StreamingQueueModel(
            [
                [ToolCall(id="call_1", name="ask_question", arguments=question)],
                [TextDelta(delta="ok")],
            ]
        )
        run = studio_agent(model, ask_question).prompt("ask").store(None).start()
        request = await wait_for_event(run, "tool_question_request")
        answers = [{"questionId": "p", "answer": "Low", "choice": "Low"}]
        record = run.interactions.answer(request.question.id, answers)
        expected = "answered"
    status = record.status
    await asyncio.wait_for(run.wait(), 30)
    assert status == expected


PRIORITY_AND_NOTES = {
    "questions": [
        {
            "id": "priority",
            "question": "Which priority should we use?",
            "choices": ["Low", "Medium", "High"],
        },
        {
            "id": "notes",
            "question": "Any extra context?",
            "choices": [{"label": "Other", "value": "other"}],
        },
    ]
}


async def test_pauses_ask_question_tool_calls_until_answers_arrive():
    """runner.test.ts: "pauses ask_question tool calls until Studio receives answers"."""
    model = StreamingQueueModel(
        [
            [ToolCall(id="call_1", name="ask_question", arguments=PRIORITY_AND_NOTES)],
            [TextDelta(delta="Thanks for the context")],
        ]
    )
    run = studio_agent(model, ask_question).prompt("ask").store(None).start()
    request = await wait_for_event(run, "tool_question_request")
    [pending] = run.interactions.pending
    assert (pending.id, pending.status, pending.tool_name) == (
        request.question.id,
        "pending",
        "ask_question",
    )
    answers = [
        {"questionId": "priority", "answer": "High", "choice": "High"},
        {"questionId": "notes", "answer": "Customer is blocked.", "custom": True},
    ]
    assert run.interactions.answer(pending.id, answers).id == pending.id
    response = await asyncio.wait_for(run.wait(), 30)
    [result] = [e for e in run.events if e.type == "tool_question_result"]
    assert (result.question.id, result.question.status) == (pending.id, "answered")
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert json.loads(tool_result.result) == {"answers": answers}
    assert response.output == "Thanks for the context"


async def test_cancels_pending_questions_when_a_streaming_response_is_cancelled():
    """runner.test.ts: "cancels pending questions when a streaming response is cancelled"."""
    question = {"questions": [{"id": "priority", "question": "Which?", "choices": ["Low", "High"]}]}
    model = StreamingQueueModel([[ToolCall(id="call_1", name="ask_question", arguments=question)]])
    run = studio_agent(model, ask_question).prompt("ask").store(None).start()
    request = await wait_for_event(run, "tool_question_request")
    run.cancel()
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)
    assert run.interactions.pending == []
    record = run.state.questions[request.question.id]
    assert record.status == "cancelled" and record.cancelled_at is not None


async def test_skips_invalid_ask_question_calls_that_omit_choices():
    """runner.test.ts: "skips invalid ask_question calls that omit choices" (our message names
    the question and what it lacks; Anvia's is one fixed sentence)."""
    bad = {"questions": [{"id": "notes", "question": "Any extra context?", "choices": []}]}
    model = StreamingQueueModel(
        [[ToolCall(id="call_1", name="ask_question", arguments=bad)], [TextDelta(delta="ok")]]
    )
    run = studio_agent(model, ask_question).prompt("ask").store(None).start()
    await asyncio.wait_for(run.wait(), 30)
    assert "tool_question_request" not in types(run.events)
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert tool_result.skipped and not tool_result.is_error
    assert "choice" in tool_result.result


async def test_runs_approval_metadata_tools_directly_when_the_approval_condition_is_false():
    """runner.test.ts: "runs approval metadata tools directly when the approval condition is
    false"."""
    executed: list[Any] = []
    model = StreamingQueueModel([[REFUND_DELTA], [TextDelta(delta="Refund complete")]])
    tool = refund_tool(executed, ToolApproval(when=lambda ctx: False))
    run = studio_agent(model, tool).prompt("refund").store(None).start()
    await asyncio.wait_for(run.wait(), 30)
    assert "tool_approval_request" not in types(run.events)
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert tool_result.result == "Refunded 25 for ORD-1"
    assert len(executed) == 1


async def test_lets_existing_tool_hooks_skip_protected_tools_before_approval():
    """runner.test.ts: "lets existing tool hooks skip protected tools before Studio
    approval"."""
    executed: list[Any] = []
    model = StreamingQueueModel([[REFUND_DELTA], [TextDelta(delta="Skipped")]])
    hook = create_hook(on_tool_call=lambda e: e.tool.skip("Blocked by existing hook."))
    run = studio_agent(model, refund_tool(executed), hook=hook).prompt("refund").store(None).start()
    await asyncio.wait_for(run.wait(), 30)
    assert "tool_approval_request" not in types(run.events)
    [tool_result] = [e for e in run.events if e.type == "tool_result"]
    assert tool_result.result == "Blocked by existing hook."
    assert executed == []


async def test_lets_existing_tool_hooks_terminate_protected_tools_before_approval():
    """runner.test.ts: "lets existing tool hooks terminate protected tools before Studio
    approval" (the run ends ``cancelled`` with the reason; Anvia's error event with usage is
    our ``cancelled`` event, API.md section 6)."""
    executed: list[Any] = []
    model = StreamingQueueModel([[REFUND_DELTA]])
    hook = create_hook(on_tool_call=lambda e: e.tool.cancel("Blocked by existing hook."))
    run = studio_agent(model, refund_tool(executed), hook=hook).prompt("refund").store(None).start()
    with pytest.raises(PromptCancelledError, match=r"Blocked by existing hook\."):
        await asyncio.wait_for(run.wait(), 30)
    assert "tool_approval_request" not in types(run.events)
    assert run.events[-1].type == "cancelled"
    assert run.events[-1].reason == "Blocked by existing hook."
    assert executed == []


async def test_streams_reasoning_deltas_before_the_run_completes():
    """runner.test.ts: "flushes reasoning deltas before the run completes": a reasoning delta
    reaches subscribers while the model still holds back its text."""
    release = asyncio.Event()

    async def stream(request):
        yield ReasoningDelta(delta="thinking")
        await release.wait()
        yield TextDelta(delta="done")

    from anvia_notebook.models import FunctionModel

    run = AgentBuilder("support", FunctionModel(stream)).build().prompt("hi").store(None).start()
    reasoning = await wait_for_event(run, "reasoning_delta")
    assert reasoning.delta == "thinking"
    assert not run.done
    release.set()
    response = await asyncio.wait_for(run.wait(), 30)
    assert run.events[-1].type == "final" and response.output == "done"


# == tool-set.test.ts: one tool on its own ========================================================


class XY(BaseModel):
    x: float
    y: float


def test_defines_and_calls_a_tool():
    """tool-set.test.ts: "registers, defines, and calls tools".

    Difference kept: the parameters are the input model's pydantic JSON schema (API.md
    section 1), which carries titles and no ``additionalProperties: false``.
    """
    add = create_tool(
        name="add",
        description="Add two numbers",
        input=XY,
        execute=lambda args, ctx: int(args.x + args.y),
    )
    definition = add.definition()
    assert (definition.name, definition.description) == ("add", "Add two numbers")
    assert definition.parameters["type"] == "object"
    assert {k: v["type"] for k, v in definition.parameters["properties"].items()} == {
        "x": "number",
        "y": "number",
    }
    assert definition.parameters["required"] == ["x", "y"]
    model = QueueModel([call("add", '{"x":2,"y":5}'), "ok"])
    AgentBuilder("a", model).tool(add).build().prompt("go").store(None).send_sync()
    assert tool_results(model.requests[1])[0].content == "7"


def test_keeps_approval_metadata_out_of_the_tool_definition():
    """tool-set.test.ts: "stores approval metadata without adding it to tool definitions"."""
    approval = ToolApproval(
        when=lambda ctx: ctx.args.amount > 100, reason=lambda ctx: f"Approve {ctx.args.amount}"
    )
    tool = create_tool(
        name="approved",
        description="Needs conditional approval",
        input=Amount,
        execute=lambda args, ctx: "ok",
        approval=approval,
    )
    agent = AgentBuilder("a", QueueModel(["x"])).tool(tool).build()
    assert agent.get_tool("approved").approval is approval
    definition = tool.definition()
    assert set(definition.model_dump()) == {"name", "description", "parameters"}
    assert "approval" not in json.dumps(definition.parameters)
    assert set(definition.parameters["properties"]) == {"amount"}


def test_invalid_json_arguments_are_refused():
    """tool-set.test.ts: "throws for invalid JSON arguments" (a ``ToolArgumentsError``)."""
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        make_add_tool().parse_args("{")


def test_invalid_input_is_refused():
    """tool-set.test.ts: "throws tool call errors for invalid Zod input" (ours: a
    ``ToolArgumentsError`` naming the field; pydantic's lax mode would accept ``"2"`` for a
    number, so a value no mode accepts is used)."""
    with pytest.raises(ToolArgumentsError, match="x"):
        make_add_tool().parse_args(json.dumps({"x": "two", "y": 5}))


@pytest.mark.parametrize(
    ("value", "expected"),
    [("hello", "hello"), ({"ok": True}, '{"ok":true}')],
    ids=["string", "object"],
)
def test_tool_results_are_normalised(value, expected):
    """tool-set.test.ts: "serializes string outputs without JSON quotes" and "allows arbitrary
    output when output schema is omitted"."""
    tool = create_tool(name="echo", description="Echo", input=Empty, execute=lambda a, c: value)
    model = QueueModel([call("echo", {}), "ok"])
    AgentBuilder("a", model).tool(tool).build().prompt("go").store(None).send_sync()
    assert tool_results(model.requests[1])[0].content == expected


def test_validates_output_when_an_output_schema_is_provided():
    """tool-set.test.ts: "validates output when an output schema is provided" (inside a run the
    failure is the call's ``ToolCallError`` result, API.md section 1)."""

    class Number(BaseModel):
        value: float

    tool = create_tool(
        name="bad_output",
        description="Return bad output",
        input=Empty,
        output=Number,
        execute=lambda args, ctx: {"value": "not a number"},
    )
    model = QueueModel([call("bad_output", {}), "ok"])
    AgentBuilder("a", model).tool(tool).build().prompt("go").store(None).send_sync()
    result = tool_results(model.requests[1])[0]
    assert result.is_error and result.content.startswith("ToolCallError: ")


def test_adds_the_same_tool_twice_without_duplicate_definitions():
    """tool-set.test.ts: "adds tool arrays and tool sets without duplicate definitions"."""
    add = make_add_tool()
    echo = create_tool(name="echo", description="Echo", input=Empty, execute=lambda a, c: "ok")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same tool again is no replacement: no warning
        agent = AgentBuilder("a", QueueModel(["x"])).tools([add, add]).tools([echo]).build()
    assert list(agent.tools) == ["add", "echo"]


def test_replaces_duplicate_tool_names_with_the_latest_tool():
    """tool-set.test.ts: "replaces duplicate tool names with the latest tool"."""
    times = create_tool(
        name="add",
        description="Replace add",
        input=XY,
        execute=lambda args, ctx: int(args.x * args.y),
    )
    model = QueueModel([call("add", {"x": 2, "y": 5}), "ok"])
    with pytest.warns(UserWarning, match="replaces the first"):
        agent = AgentBuilder("a", model).tool(make_add_tool()).tool(times).build()
    assert [t.definition().description for t in agent.tools.values()] == ["Replace add"]
    agent.prompt("go").store(None).send_sync()
    assert tool_results(model.requests[1])[0].content == "10"


# == completion-retry.test.ts =====================================================================


def test_uses_capped_exponential_backoff_with_full_jitter(monkeypatch):
    """completion-retry.test.ts: "uses capped exponential backoff with full jitter"."""
    monkeypatch.setattr(random, "random", lambda: 0.5)
    retries = CompletionRetries(initial_delay=0.1, max_delay=0.25)
    assert [retries.delay(n) for n in (1, 2, 3, 4)] == pytest.approx([0.05, 0.1, 0.125, 0.125])


class Coded(Exception):
    """An error that carries a ``code``, as gRPC and Node errors do."""

    def __init__(self, code: Any) -> None:
        super().__init__(f"code {code}")
        self.code = code


def _caused(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (StatusError("unavailable", 503), True),
        (StatusError("not found", 404), False),
        (ModelError("unavailable", status_code=503), True),
        (_caused(RuntimeError("outer"), OSError(errno.ECONNRESET, "reset")), True),
        (_caused(RuntimeError("outer"), OSError(errno.EHOSTUNREACH, "no route")), True),
        (_caused(RuntimeError("outer"), Coded("ECONNRESET")), True),
        (Coded(14), True),  # gRPC UNAVAILABLE
        (Coded(4), True),  # gRPC DEADLINE_EXCEEDED
        (Coded(8), True),  # gRPC RESOURCE_EXHAUSTED
        (Coded("UNAVAILABLE"), True),
        (Coded(3), False),  # gRPC INVALID_ARGUMENT
        (Coded(503), True),  # a numeric code in 100-599 is an HTTP status
        (Coded(400), False),
        (_caused(StatusError("aborted", 503), asyncio.CancelledError()), False),
        (RuntimeError("unknown"), False),
    ],
)
def test_classifies_http_nested_network_grpc_and_abort_errors_conservatively(error, transient):
    """completion-retry.test.ts: "classifies HTTP, nested network, gRPC, and abort errors
    conservatively" (Node's string codes are Python's ``errno`` values; a string ``code`` is
    read too)."""
    assert is_transient_error(error) is transient


# == agent-tool.test.ts: agent ids ================================================================


def test_stores_a_stable_trimmed_agent_id():
    """agent-tool.test.ts: "stores a stable trimmed agent id"."""
    assert AgentBuilder(" support ", QueueModel([])).build().id == "support"


@pytest.mark.parametrize("agent_id", ["", "   ", None])
def test_rejects_empty_agent_ids(agent_id):
    """agent-tool.test.ts: "rejects empty agent ids". Difference kept: API.md says a blank id
    raises ``ValueError`` (Anvia: ``TypeError``)."""
    with pytest.raises(ValueError, match="agent id"):
        AgentBuilder(agent_id, QueueModel([]))  # type: ignore[arg-type]


# == stream-accumulator.test.ts: tool calls assembled from a stream ===============================
# (Cases about the order of interleaved parts, reasoning ids and message ids have no
# counterpart: an assistant message here holds its text, reasoning and tool calls apart.)


class Command(BaseModel):
    command: str


def exec_tool(seen: list[str]):
    return create_tool(
        name="ExecCommand",
        description="Run a command",
        input=Command,
        execute=lambda args, ctx: seen.append(args.command) or "ran",
    )


async def run_stream(first_turn: list[Any], *tools) -> tuple[list[Any], StreamingQueueModel]:
    model = StreamingQueueModel([first_turn, [TextDelta(delta="ok")]])
    agent = AgentBuilder("test-agent", model).tools(list(tools)).build()
    return await collect(agent.prompt("go").store(None)), model


async def test_assembles_valid_json_tool_arguments_across_multiple_fragments():
    """stream-accumulator.test.ts: "assembles valid JSON tool arguments across multiple
    fragments"."""
    seen: list[str] = []
    await run_stream(
        [
            ToolCallDelta(id="tool_0", name="ExecCommand", arguments_delta='{"command":'),
            ToolCallDelta(id="tool_0", arguments_delta='"pwd"}'),
        ],
        exec_tool(seen),
    )
    assert seen == ["pwd"]


@pytest.mark.parametrize("fragment", ['{"command":"pwd"}', '{"command":"pwd"'])
async def test_a_completed_tool_call_replaces_its_streamed_fragments(fragment):
    """stream-accumulator.test.ts: "replaces accumulated tool arguments with a completed
    snapshot" and "uses a valid completed tool call when streamed argument fragments are
    malformed" (the snapshot is a complete ``ToolCall`` with the same id)."""
    seen: list[str] = []
    _, model = await run_stream(
        [
            ToolCallDelta(id="tool_0", name="ExecCommand", arguments_delta=fragment[:11]),
            ToolCallDelta(id="tool_0", arguments_delta=fragment[11:]),
            ToolCall(id="tool_0", name="ExecCommand", arguments={"command": "ls"}),
        ],
        exec_tool(seen),
    )
    assert seen == ["ls"]
    [call_message] = [m for m in model.requests[1].messages if m.tool_calls]
    assert [(c.id, c.arguments) for c in call_message.tool_calls] == [
        ("tool_0", '{"command":"ls"}')
    ]


@pytest.mark.parametrize("arguments", ["", " \n\t"], ids=["empty", "whitespace-only"])
async def test_normalizes_blank_streamed_tool_arguments_to_an_empty_object(arguments):
    """stream-accumulator.test.ts: "normalizes %s streamed tool arguments to an empty
    object"."""
    ran: list[Any] = []
    noop = create_tool(
        name="NoOp", description="", input=Empty, execute=lambda a, c: ran.append(a) or "done"
    )
    events, _ = await run_stream(
        [ToolCallDelta(id="tool_0", name="NoOp", arguments_delta=arguments)], noop
    )
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.result, result.is_error, len(ran)) == ("done", False, 1)


async def test_does_not_replace_tool_metadata_with_empty_continuation_placeholders():
    """stream-accumulator.test.ts: "does not replace accumulated tool metadata with empty
    continuation placeholders"."""
    seen: list[str] = []
    events, _ = await run_stream(
        [
            ToolCallDelta(id="tool_0", name="ExecCommand"),
            ToolCallDelta(id="tool_0", name="", arguments_delta='{"command":"pwd"}'),
        ],
        exec_tool(seen),
    )
    [tool_call] = [e for e in events if e.type == "tool_call"]
    assert tool_call.tool_call.name == "ExecCommand"
    assert seen == ["pwd"]


@pytest.mark.parametrize("final_arguments", ["  ", {}], ids=["blank string", "empty object"])
async def test_uses_streamed_arguments_when_the_completed_call_has_none(final_arguments):
    """stream-accumulator.test.ts: "uses streamed arguments when final tool arguments are
    %s"."""
    seen: list[str] = []
    await run_stream(
        [
            ToolCallDelta(id="tool_1", name="ExecCommand", arguments_delta='{"command":"pwd"}'),
            ToolCall(id="tool_1", name="ExecCommand", arguments=final_arguments),
        ],
        exec_tool(seen),
    )
    assert seen == ["pwd"]


@pytest.mark.parametrize(
    "fragments",
    [['{"command":"pwd"'], ["{", '{"command":"pwd"}'], ['{"command":"pwd"', "}", "}"]],
    ids=["truncated", "cumulative", "duplicated final fragment"],
)
async def test_malformed_streamed_tool_arguments_become_an_argument_error_result(fragments):
    """stream-accumulator.test.ts: "rejects malformed streamed tool arguments during response
    finalization" and "rejects %s streamed tool arguments".

    Difference kept: API.md section 1 says arguments that are not JSON become a result that
    names the error (the model can correct itself), where Anvia fails the run.
    """
    seen: list[str] = []
    events, _ = await run_stream(
        [
            ToolCallDelta(id="tool_0", name="ExecCommand", arguments_delta=fragment)
            for fragment in fragments
        ],
        exec_tool(seen),
    )
    [result] = [e for e in events if e.type == "tool_result"]
    assert result.is_error and "not valid JSON" in result.result
    assert seen == [] and events[-1].type == "final"


async def test_appends_complete_tool_calls_after_streamed_text():
    """stream-accumulator.test.ts: "appends final-only tool calls after accumulated streamed
    parts"."""
    _, model = await run_stream(
        [TextDelta(delta="answer"), ToolCall(id="tool_1", name="add", arguments={"x": 1, "y": 2})],
        make_add_tool(),
    )
    message = model.requests[1].messages[1]
    assert (message.content, [c.name for c in message.tool_calls]) == ("answer", ["add"])


# == tool-studio runner.test.ts: a run with history ===============================================


def test_runs_an_agent_with_history_before_the_latest_prompt():
    """runner.test.ts: "runs an agent without streaming and passes history" and "normalizes
    UI-style agent run messages into history plus the latest prompt" (a list of messages: the
    last is the prompt, the rest history, API.md section 3); options and metadata as there."""
    model = QueueModel(["Anvia"])
    agent = AgentBuilder("support", model).instructions("system").build()
    history = [Message.user("The project is Anvia."), Message.assistant("Noted.")]
    request = (
        agent.prompt([*history, Message.user("What is this?")])
        .max_turns(2)
        .with_tool_concurrency(3)
        .session(None, {"requestId": "req_1"})
        .store(None)
    )
    assert request.send_sync().output == "Anvia"
    assert len(model.requests) == 1
    assert model.requests[0].instructions == "system"
    assert model.requests[0].messages == [*history, Message.user("What is this?")]


# streaming.test.ts: "includes authoritative provider failure usage exactly once"
async def test_the_usage_a_failed_model_call_reported_counts_in_the_runs_usage_once() -> None:
    """Before, the trace had the tokens but the run's usage (``on_run_error``, the stored run)
    lost them: a failed run cost nothing, as far as it said."""
    told: list[Usage] = []
    failing = [UsageUpdate(usage=Usage(input_tokens=7, output_tokens=2)), RuntimeError("down")]
    model = StreamingQueueModel([failing])
    hook = create_hook(on_run_error=lambda event: told.append(event.usage))
    request = AgentBuilder("a", model).hook(hook).build().prompt("hi").store(None)
    with pytest.raises(RuntimeError, match="down"):
        await request.send()
    assert told == [Usage(input_tokens=7, output_tokens=2)]
