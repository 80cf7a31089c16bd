"""Hooks: all callbacks, sync or async, run/skip/cancel/request_approval, composition, with_hook."""

from __future__ import annotations

import pytest

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    Hook,
    PromptCancelledError,
    ToolApprovalRequiredError,
    compose_hooks,
    create_hook,
)
from anvia_notebook.hooks import HOOK_CALLBACKS, RUN_CONTROL
from anvia_notebook.models import ModelError, QueueModel, StreamingQueueModel

from helpers import call, make_add_tool, tool_results


class Recorder(Hook):
    def __init__(self, log, name="h"):
        self.log = log
        self.name = name

    def on_run_start(self, e):
        self.log.append(f"{self.name}:run_start:{e.prompt.content}:{e.max_turns}")

    async def on_turn_start(self, e):
        self.log.append(f"{self.name}:turn_start:{e.turn}")

    def on_completion_call(self, e):
        self.log.append(f"{self.name}:completion_call:{len(e.request.messages)}")

    async def on_completion_response(self, e):
        self.log.append(f"{self.name}:completion_response:{e.response.text or 'tools'}")

    def on_turn_end(self, e):
        self.log.append(f"{self.name}:turn_end:{e.turn}")

    async def on_tool_call(self, e):
        self.log.append(f"{self.name}:tool_call:{e.tool_name}:{e.args}")

    def on_tool_result(self, e):
        self.log.append(f"{self.name}:tool_result:{e.result}")

    def on_run_end(self, e):
        self.log.append(f"{self.name}:run_end:{e.output}")


def test_lifecycle_hooks_run_in_order_sync_and_async():
    log: list[str] = []
    model = QueueModel([call("add", {"x": 1, "y": 2}), "3"])
    agent = (
        AgentBuilder("a", model)
        .tool(make_add_tool())
        .hook(Recorder(log))
        .default_max_turns(4)
        .build()
    )
    agent.prompt("sum").send_sync()
    assert log == [
        "h:run_start:sum:4",
        "h:turn_start:1",
        "h:completion_call:1",
        "h:completion_response:tools",
        "h:turn_end:1",
        'h:tool_call:add:{"x":1,"y":2}',
        "h:tool_result:3",
        "h:turn_start:2",
        "h:completion_call:3",
        "h:completion_response:3",
        "h:turn_end:2",
        "h:run_end:3",
    ]


def test_create_hook_accepts_every_callback_and_refuses_unknown_names():
    hook = create_hook(**{name: (lambda e: None) for name in HOOK_CALLBACKS})
    assert isinstance(hook, Hook)
    with pytest.raises(TypeError, match="on_tool_cal"):
        create_hook(on_tool_cal=lambda e: None)


def test_hooks_compose_in_order_and_the_first_non_run_decision_wins():
    log: list[str] = []

    def first(e):
        log.append("first")
        return e.tool.run()

    def second(e):
        log.append("second")
        return e.tool.skip("skipped by second")

    def third(e):
        log.append("third")
        return e.tool.cancel("never reached")

    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = (
        AgentBuilder("a", model)
        .tool(add)
        .hook(create_hook(on_tool_call=first))
        .hook(create_hook(on_tool_call=second))
        .hook(create_hook(on_tool_call=third))
        .build()
    )
    agent.prompt("go").send_sync()
    assert log == ["first", "second"]
    assert tool_results(model.requests[1])[0].content == "skipped by second"
    assert add.calls == []


def test_run_decision_executes_the_tool():
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 2, "y": 2}), "ok"])
    hook = create_hook(on_tool_call=lambda e: e.tool.run())
    AgentBuilder("a", model).tool(add).hook(hook).build().prompt("go").send_sync()
    assert add.calls == [(2, 2)]


def test_cancel_from_on_tool_call_ends_the_run_before_execution():
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 2, "y": 2}), "never"])
    hook = create_hook(on_tool_call=lambda e: e.tool.cancel("blocked by policy"))
    request = AgentBuilder("a", model).tool(add).hook(hook).build().prompt("go")
    with pytest.raises(PromptCancelledError, match="blocked by policy") as info:
        request.send_sync()
    assert add.calls == []
    assert info.value.reason == "blocked by policy"
    # the conversation stays valid: the tool call got a result
    assert info.value.messages[-1].role == "tool"


def test_lifecycle_cancel_ends_the_run():
    model = QueueModel(["never"])
    hook = create_hook(on_turn_start=lambda e: e.run.cancel("not today"))
    with pytest.raises(PromptCancelledError, match="not today"):
        AgentBuilder("a", model).hook(hook).build().prompt("go").send_sync()
    assert model.requests == []


def test_skip_and_cancel_come_before_any_approval():
    asked = []
    add = make_add_tool()
    from anvia_notebook import ToolApproval

    add_protected = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 1}), "ok"])
    hook = create_hook(on_tool_call=lambda e: e.tool.skip("no"))
    AgentBuilder("a", model).tool(add_protected).hook(hook).approvals(
        lambda r: asked.append(r) or True
    ).build().prompt("go").send_sync()
    assert asked == []
    assert add.calls == []


def test_request_approval_from_a_hook_goes_to_the_handler():
    add = make_add_tool()
    seen = []

    def handler(request):
        seen.append((request.tool_name, request.reason, request.args.x))
        return ApprovalDecision(approved=False)

    hook = create_hook(
        on_tool_call=lambda e: e.tool.request_approval(
            reason="check it", reject_message="Rejected by hook."
        )
    )
    model = QueueModel([call("add", {"x": 5, "y": 1}), "ok"])
    AgentBuilder("a", model).tool(add).hook(hook).approvals(handler).build().prompt(
        "go"
    ).send_sync()
    assert seen == [("add", "check it", 5)]
    assert tool_results(model.requests[1])[0].content == "Rejected by hook."
    assert add.calls == []


def test_request_approval_without_a_handler_fails_clearly():
    hook = create_hook(on_tool_call=lambda e: e.tool.request_approval())
    model = QueueModel([call("add", {"x": 5, "y": 1}), "ok"])
    request = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build().prompt("go")
    with pytest.raises(ToolApprovalRequiredError, match="Tool approval required for add"):
        request.send_sync()


def test_on_tool_call_returning_garbage_is_an_error():
    hook = create_hook(on_tool_call=lambda e: "yes")
    model = QueueModel([call("add", {"x": 5, "y": 1}), "ok"])
    with pytest.raises(TypeError, match="on_tool_call must return"):
        AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build().prompt("go").send_sync()


def test_tool_error_hook_sees_the_error_and_can_cancel():
    from pydantic import BaseModel

    from anvia_notebook import create_tool

    class Nothing(BaseModel):
        pass

    def boom(a, c):
        raise ValueError("bad day")

    broken = create_tool(name="broken", description="", input=Nothing, execute=boom)
    errors = []
    hook = create_hook(on_tool_error=lambda e: errors.append(str(e.error)))
    model = QueueModel([call("broken"), "ok"])
    AgentBuilder("a", model).tool(broken).hook(hook).build().prompt("go").send_sync()
    assert errors == ["bad day"]

    model = QueueModel([call("broken"), "ok"])
    stop = create_hook(on_tool_error=lambda e: e.run.cancel("tool failed"))
    with pytest.raises(PromptCancelledError, match="tool failed"):
        AgentBuilder("a", model).tool(broken).hook(stop).build().prompt("go").send_sync()


def test_completion_error_hook_runs_before_run_error_hook():
    log = []
    model = StreamingQueueModel([[ModelError("bad request", status_code=400)]])
    hook = create_hook(
        on_completion_error=lambda e: log.append(f"completion:{e.error}"),
        on_run_error=lambda e: log.append(f"run:{e.error}"),
    )
    with pytest.raises(ModelError):
        AgentBuilder("a", model).hook(hook).build().prompt("go").send_sync()
    assert log == ["completion:bad request", "run:bad request"]


def test_with_hook_replaces_the_agent_hooks_for_one_run():
    log: list[str] = []
    agent = (
        AgentBuilder("a", QueueModel(["one", "two"]))
        .hook(create_hook(on_run_start=lambda e: log.append("agent")))
        .build()
    )
    agent.prompt("x").with_hook(
        create_hook(on_run_start=lambda e: log.append("request"))
    ).send_sync()
    agent.prompt("y").send_sync()
    assert log == ["request", "agent"]


def approval_agent(model, add, seen):
    """An agent whose own hook asks for approval of every add call; approvals recorded."""
    approval_hook = create_hook(on_tool_call=lambda e: e.tool.request_approval(reason="check"))

    def handler(request):
        seen.append(request.reason)
        return False

    return (
        AgentBuilder("a", model).tool(add).hook(approval_hook).approvals(handler).build(),
        approval_hook,
    )


def test_add_hook_adds_a_hook_for_one_run_and_keeps_the_agent_approval_hook():
    log, seen = [], []
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent, _ = approval_agent(model, add, seen)
    audit = create_hook(on_tool_result=lambda e: log.append(f"audit:{e.result}"))
    agent.prompt("go").add_hook(audit).send_sync()
    assert seen == ["check"]  # the agent's approval hook still ran
    assert add.calls == []
    assert log == ["audit:Tool approval was rejected."]
    assert len(agent.hooks) == 1  # the agent itself is unchanged


def test_with_hook_warns_when_it_drops_an_agent_approval_hook():
    seen = []
    add = make_add_tool()
    agent, _ = approval_agent(QueueModel([call("add", {"x": 1, "y": 2}), "ok"]), add, seen)
    audit = create_hook(on_tool_result=lambda e: None)
    with pytest.warns(UserWarning, match=r"create_hook\(on_tool_call\)") as caught:
        agent.prompt("go").with_hook(audit).send_sync()
    assert "add_hook()" in str(caught[0].message)
    assert caught[0].filename == __file__  # it points at the caller's line
    assert seen == [] and add.calls == [(1, 2)]  # what the warning is about: no approval


def test_compose_hooks_keeps_both_and_with_hook_does_not_warn_then(recwarn):
    log, seen = [], []
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent, approval_hook = approval_agent(model, add, seen)
    audit = create_hook(
        on_tool_call=lambda e: log.append("audit:call") or e.tool.run(),
        on_tool_result=lambda e: log.append(f"audit:{e.result}"),
    )
    agent.prompt("go").with_hook(compose_hooks(approval_hook, audit)).send_sync()
    assert [w for w in recwarn if issubclass(w.category, UserWarning)] == []
    assert seen == ["check"] and add.calls == []
    # first decision other than run() wins: the audit's on_tool_call was not asked
    assert log == ["audit:Tool approval was rejected."]


async def test_compose_hooks_calls_each_in_order_sync_and_async():
    log: list[str] = []
    a, b = Recorder(log, "a"), Recorder(log, "b")
    model = QueueModel([call("add", {"x": 1, "y": 2}), "3"])
    agent = AgentBuilder("x", model).tool(make_add_tool()).build()
    await agent.prompt("sum").with_hook(compose_hooks(a, b)).send()
    assert [line for line in log if line.startswith("a:")] == [
        line.replace("b:", "a:", 1) for line in log if line.startswith("b:")
    ]
    assert log[:2] == ["a:run_start:sum:20", "b:run_start:sum:20"]
    assert log.index('a:tool_call:add:{"x":1,"y":2}') + 1 == log.index(
        'b:tool_call:add:{"x":1,"y":2}'
    )
    cancel_first = create_hook(on_turn_start=lambda e: e.run.cancel("stop here"))
    never = create_hook(on_turn_start=lambda e: log.append("never"))
    with pytest.raises(PromptCancelledError, match="stop here"):
        await agent.prompt("go").with_hook(compose_hooks(cancel_first, never)).send()
    assert "never" not in log


def test_a_failing_run_error_hook_does_not_mask_the_error():
    def bad(e):
        raise RuntimeError("hook bug")

    model = StreamingQueueModel([[ModelError("boom", status_code=400)]])
    with pytest.raises(ModelError, match="boom"):
        AgentBuilder("a", model).hook(create_hook(on_run_error=bad)).build().prompt(
            "go"
        ).send_sync()


def test_a_failing_completion_error_hook_does_not_mask_the_model_error(caplog):
    seen = []

    def bad(e):
        raise RuntimeError("hook bug")

    model = StreamingQueueModel([[ModelError("boom", status_code=400)]])
    agent = (
        AgentBuilder("a", model)
        .hook(create_hook(on_completion_error=bad))
        .hook(
            create_hook(
                on_completion_error=lambda e: seen.append(f"completion:{e.error}"),
                on_run_error=lambda e: seen.append(f"run:{e.error!r}"),
            )
        )
        .build()
    )
    with pytest.raises(ModelError, match="boom"):
        agent.prompt("go").send_sync()
    assert seen == ["completion:boom", "run:ModelError('boom')"]
    assert "on_completion_error hook" in caplog.text and "hook bug" in caplog.text


@pytest.mark.parametrize("kind", ["on_tool_result", "on_tool_error"])
async def test_a_hook_failing_after_the_tool_ran_keeps_the_tool_result(kind, caplog):
    from pydantic import BaseModel

    from anvia_notebook import create_tool

    class Nothing(BaseModel):
        pass

    def execute(args, ctx):
        if kind == "on_tool_error":
            raise ValueError("bad day")
        return "refund issued"

    def bad(e):
        raise RuntimeError("audit store down")

    tool = create_tool(name="refund", description="", input=Nothing, execute=execute)
    model = QueueModel([call("refund"), "ok"])
    agent = AgentBuilder("a", model).tool(tool).hook(create_hook(**{kind: bad})).build()
    events = [e async for e in agent.prompt("go").stream()]
    expected = (
        ("ToolCallError: bad day", True) if kind == "on_tool_error" else ("refund issued", False)
    )
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.result, result.is_error) == expected
    part = tool_results(model.requests[1])[0]
    assert (part.content, part.is_error) == expected
    assert events[-1].type == "final"
    assert f"{kind} hook" in caplog.text and "audit store down" in caplog.text


async def test_a_hook_cancelling_after_the_tool_ran_still_reports_its_result():
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    hook = create_hook(on_tool_result=lambda e: e.run.cancel("seen enough"))
    request = AgentBuilder("a", model).tool(add).hook(hook).build().prompt("go")
    events = []
    with pytest.raises(PromptCancelledError, match="seen enough") as raised:
        async for event in request.stream():
            events.append(event)
    assert add.calls == [(1, 2)]
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.result, result.is_error) == ("3", False)
    part = raised.value.messages[-1].tool_results[0]
    assert (part.content, part.is_error) == ("3", False)


async def test_a_hook_cancelling_after_an_edited_call_ran_traces_what_ran():
    """The tool ran with the arguments edited on approval; a hook then ends the run. The event,
    the model's tool message and the trace all say the call succeeded, with the edited
    arguments."""
    from anvia_notebook import ToolApproval

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "never"])
    hook = create_hook(on_tool_result=lambda e: e.run.cancel("seen enough"))
    request = (
        AgentBuilder("a", model)
        .tool(add)
        .hook(hook)
        .build()
        .prompt("go")
        .approvals(lambda r: ApprovalDecision(approved=True, args={"x": 5, "y": 5}))
    )
    events = []
    with pytest.raises(PromptCancelledError, match="seen enough"):
        async for event in request.stream():
            events.append(event)
    assert add.calls == [(5, 5)]
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.result, result.is_error, result.args) == ("10", False, '{"x":5,"y":5}')
    assert not result.skipped  # it ran
    [traced] = request.trace.tool_calls
    assert (traced.status, traced.result, traced.args) == ("success", "10", {"x": 5, "y": 5})


async def test_an_error_hook_cancelling_after_the_tool_failed_traces_the_error():
    from pydantic import BaseModel

    from anvia_notebook import create_tool

    class Nothing(BaseModel):
        pass

    def execute(args, ctx):
        raise ValueError("bad day")

    tool = create_tool(name="refund", description="", input=Nothing, execute=execute)
    model = QueueModel([call("refund"), "never"])
    hook = create_hook(on_tool_error=lambda e: e.run.cancel("give up"))
    request = AgentBuilder("a", model).tool(tool).hook(hook).build().prompt("go")
    events = []
    with pytest.raises(PromptCancelledError, match="give up") as raised:
        async for event in request.stream():
            events.append(event)
    [result] = [e for e in events if e.type == "tool_result"]
    assert (result.result, result.is_error) == ("ToolCallError: bad day", True)
    part = raised.value.messages[-1].tool_results[0]
    assert (part.content, part.is_error) == ("ToolCallError: bad day", True)
    [traced] = request.trace.tool_calls
    assert (traced.status, traced.result) == ("error", "ToolCallError: bad day")


async def test_a_skipped_call_is_marked_in_its_tool_result_event():
    model = QueueModel([call("add", {"x": 1, "y": 1}), "ok"])
    hook = create_hook(on_tool_call=lambda e: e.tool.skip("not now"))
    agent = AgentBuilder("a", model).tool(make_add_tool()).hook(hook).build()
    results = [e async for e in agent.prompt("go").stream() if e.type == "tool_result"]
    assert results[0].skipped
    assert results[0].result == "not now"
    assert not results[0].is_error


@pytest.mark.parametrize(
    ("decide", "words"),
    [
        (lambda event: event.tool.skip(123), "tool.skip(): the reason must be a text, not int."),
        (
            lambda event: event.tool.request_approval(reason=5),
            "tool.request_approval(): the reason must be a text, not int.",
        ),
        (
            lambda event: event.tool.request_approval(reject_message=["no"]),
            "tool.request_approval(): the reject_message must be a text, not list.",
        ),
        (
            lambda event: event.tool.cancel(b"stop"),
            "tool.cancel(): the reason must be a text, not bytes.",
        ),
    ],
)
def test_a_hook_decision_whose_reason_is_not_a_text_is_refused_where_it_is_made(decide, words):
    """Before, a number as the reason failed deep inside (``'int' object has no attribute
    'encode'``, a ``ValidationError`` of the approval record), naming nothing the user wrote."""
    add = make_add_tool()
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).hook(create_hook(on_tool_call=decide)).build()
    with pytest.raises(TypeError) as raised:
        agent.prompt("go").approvals(lambda request: True).send_sync()
    assert str(raised.value).startswith(words) and add.calls == []


def test_run_cancel_needs_a_text_reason():
    with pytest.raises(TypeError, match=r"run.cancel\(\): the reason must be a text, not int"):
        RUN_CONTROL.cancel(3)


def test_a_run_error_hook_that_cancels_ends_the_run_cancelled_with_its_reason():
    """As Anvia's onRunError: returning run.cancel(reason) replaces the error (it was ignored:
    the model's error was raised)."""
    from anvia_notebook import PromptCancelledError

    model = StreamingQueueModel([[ModelError("boom", status_code=400)]])
    hook = create_hook(on_run_error=lambda e: e.run.cancel("The provider is down; try later."))
    request = AgentBuilder("a", model).hook(hook).build().prompt("go")
    with pytest.raises(PromptCancelledError) as caught:
        request.send_sync()
    assert caught.value.reason == "The provider is down; try later."
    assert isinstance(caught.value.__cause__, ModelError)


def test_a_hook_s_reason_to_cancel_is_kept_at_most_as_long_as_a_reason(store_path):
    """A hook cancelling the run with a reason of 30,000 characters: the run and the approval
    the cancel closed each kept it whole (a Stop's reason is cut to 20,000)."""
    import asyncio

    from anvia_notebook import (
        CallbackHumanInput,
        PromptCancelledError,
        RunStore,
        ToolApproval,
        create_tool,
    )
    from anvia_notebook.decisions import MAX_REASON
    from anvia_notebook.models import ModelResponse, ToolCall

    from helpers import AddInput

    asked = asyncio.Event()

    async def never(request):
        asked.set()
        await asyncio.Event().wait()

    async def cancel_the_second(event):
        if event.tool_name != "other":
            return event.tool.run()
        await asked.wait()  # (the first call's approval waits)
        return event.tool.cancel("x" * 30_000)

    guarded = create_tool(
        name="add", description="d", input=AddInput, execute=lambda a, c: 1, approval=ToolApproval()
    )
    other = create_tool(name="other", description="d", input=AddInput, execute=lambda a, c: 1)
    calls = [ToolCall("c1", "add", {"x": 1, "y": 2}), ToolCall("c2", "other", {"x": 1, "y": 2})]
    model = QueueModel([ModelResponse(tool_calls=calls), "done"])
    agent = (
        AgentBuilder("a", model)
        .tools([guarded, other])
        .hook(create_hook(on_tool_call=cancel_the_second))
        .human_input(CallbackHumanInput(approve=never))
        .build()
    )
    store = RunStore(store_path)
    with pytest.raises(PromptCancelledError):
        agent.prompt("go").with_tool_concurrency(2).store(store).send_sync()
    [run] = store.runs()
    state = store.get(run.run_id)
    [approval] = state.approvals.values()
    assert state.cancel_reason is not None and len(state.cancel_reason) == MAX_REASON
    assert state.cancel_reason.endswith("(30,000 characters, cut)")
    assert (approval.status, approval.decision_reason) == ("cancelled", state.cancel_reason)
