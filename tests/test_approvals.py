"""Approval policies, handlers, decisions with edited arguments, records and events."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    ToolApprovalRequiredError,
    create_tool,
)
from anvia_notebook.models import QueueModel
from anvia_notebook.records import DEFAULT_REJECT_MESSAGE

from helpers import call, make_add_tool, pending_of, ran_with, tool_results


def run_events(agent, prompt="go"):
    async def collect():
        return [e async for e in agent.prompt(prompt).stream()]

    return asyncio.run(collect())


def test_policy_predicate_reason_and_reject_message_see_the_validated_args():
    add = make_add_tool(
        approval=ToolApproval(
            when=lambda ctx: ctx.args.x > 10,
            reason=lambda ctx: f"Big x: {ctx.args.x} ({ctx.raw_args})",
            reject_message=lambda ctx: f"Refused {ctx.tool_name}.",
        )
    )
    seen = []
    model = QueueModel(
        [call("add", {"x": 1, "y": 1}), call("add", {"x": 50, "y": 1}, id="call_2"), "ok"]
    )
    agent = AgentBuilder("a", model).tool(add).approvals(lambda r: seen.append(r) or False).build()
    agent.prompt("go").send_sync()
    assert add.calls == [(1, 1)]
    assert len(seen) == 1
    assert seen[0].reason == 'Big x: 50 ({"x":50,"y":1})'
    assert seen[0].run.agent_id == "a"
    assert tool_results(model.requests[2])[0].content == "Refused add."


def test_async_predicate_and_async_texts():
    async def when(ctx):
        await asyncio.sleep(0)
        return True

    async def reason(ctx):
        return "async reason"

    add = make_add_tool(approval=ToolApproval(when=when, reason=reason))
    got = []

    async def handler(request):
        got.append(request.reason)
        return True

    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    AgentBuilder("a", model).tool(add).approvals(handler).build().prompt("go").send_sync()
    assert got == ["async reason"]
    assert add.calls == [(1, 2)]


def test_policy_false_runs_directly_and_asks_nobody():
    add = make_add_tool(approval=ToolApproval(when=False))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    AgentBuilder("a", model).tool(add).build().prompt("go").send_sync()
    assert add.calls == [(1, 2)]


def test_no_handler_and_no_human_input_raises():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    with pytest.raises(ToolApprovalRequiredError) as info:
        AgentBuilder("a", model).tool(add).build().prompt("go").send_sync()
    assert info.value.request.tool_name == "add"
    assert add.calls == []


@pytest.mark.parametrize(
    ("decision", "policy_reject", "expected"),
    [
        (ApprovalDecision(approved=False, reason="r", reject_message="rm"), "policy", "rm"),
        (ApprovalDecision(approved=False, reason="r"), "policy", "r"),
        (ApprovalDecision(approved=False), "policy", "policy"),
        (False, None, "Tool approval was rejected."),
    ],
)
def test_rejection_text_precedence(decision, policy_reject, expected):
    add = make_add_tool(approval=ToolApproval(reject_message=policy_reject))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    AgentBuilder("a", model).tool(add).approvals(lambda r: decision).build().prompt(
        "go"
    ).send_sync()
    assert tool_results(model.requests[1])[0].content == expected
    assert add.calls == []


def test_request_level_handler_overrides_the_agent_handler():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).approvals(lambda r: False).build()
    agent.prompt("go").approvals(lambda r: True).send_sync()
    assert add.calls == [(1, 2)]


def test_handler_takes_precedence_over_human_input():
    add = make_add_tool(approval=ToolApproval())
    human_calls = []
    human = CallbackHumanInput(approve=lambda r: human_calls.append(r) or False)
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    AgentBuilder("a", model).tool(add).approvals(lambda r: True).human_input(human).build().prompt(
        "go"
    ).send_sync()
    assert human_calls == []
    assert add.calls == [(1, 2)]


def test_edited_arguments_replace_the_call_and_are_validated_again():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel(
        [call("add", {"x": 1, "y": 2}), call("add", {"x": 1, "y": 2}, id="c2"), "ok"]
    )
    decisions = iter(
        [
            ApprovalDecision(approved=True, args={"x": 10, "y": 20}),
            ApprovalDecision(approved=True, args={"x": "ten", "y": 20}),
        ]
    )
    agent = AgentBuilder("a", model).tool(add).approvals(lambda r: next(decisions)).build()

    async def collect():
        return [e async for e in agent.prompt("go").stream()]

    events = asyncio.run(collect())
    assert add.calls == [(10, 20)]
    # (told first the arguments it ran with: the model's own call said 1 and 2)
    assert tool_results(model.requests[1])[0].content == ran_with("add", {"x": 10, "y": 20}, "30")
    second = tool_results(model.requests[2])[0]
    assert second.is_error
    assert second.content.startswith(
        "Edited arguments were rejected: The edited arguments are not valid for add: x: "
    )
    results = [e for e in events if e.type == "tool_result"]
    assert results[0].args == '{"x":10,"y":20}'
    approvals = [e.approval for e in events if e.type == "tool_approval_result"]
    assert approvals[0].edited_args == {"x": 10, "y": 20}


def test_records_and_events_for_every_approval_in_order():
    add = make_add_tool(approval=ToolApproval(reason="check"))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("support", model).tool(add).approvals(lambda r: True).build()
    events = run_events(agent)
    types = [e.type for e in events if e.type not in ("text_delta",)]
    assert types == [
        "turn_start",
        "generation_start",
        "tool_call",
        "turn_end",
        "tool_approval_request",
        "tool_approval_result",
        "tool_result",
        "turn_start",
        "generation_start",
        "turn_end",
        "final",
    ]
    request = next(e for e in events if e.type == "tool_approval_request").approval
    result = next(e for e in events if e.type == "tool_approval_result").approval
    assert request.status == "pending"
    assert request.args == {"x": 1, "y": 2}
    assert request.reason == "check"
    assert request.agent_id == "support"
    assert request.tool_call_id == "call_1"
    assert result.id == request.id
    assert result.status == "approved"
    assert result.decided_by == "handler"
    assert result.resolved_at is not None and result.resolved_at >= request.requested_at


def test_a_handler_returning_garbage_fails_clearly():
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    with pytest.raises(TypeError, match="must return a bool or an ApprovalDecision"):
        AgentBuilder("a", model).tool(add).approvals(lambda r: "yes").build().prompt(
            "go"
        ).send_sync()


def test_reason_and_reject_message_functions_that_return_none_give_no_text():
    """As Anvia (which passes the function's value on): no reason, and the default text for the
    model when the call is rejected; before, the text "None" was shown and sent."""
    add = make_add_tool(
        approval=ToolApproval(reason=lambda ctx: None, reject_message=lambda ctx: None)
    )
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    asked = []
    agent = AgentBuilder("a", model).tool(add).approvals(lambda r: asked.append(r) or False)
    response = agent.build().prompt("go").send_sync()
    assert asked[0].reason is None and asked[0].reject_message is None
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.content == DEFAULT_REJECT_MESSAGE
    (entry,) = response.trace.tool_calls
    assert entry.approval.reason is None and entry.approval.reject_message is None


def test_an_approval_decision_takes_its_fields_by_position_as_the_docs_write_it():
    """API.md section 5: ``ApprovalDecision(approved, reason=None, reject_message=None,
    args=None)``; ``decided_by`` is by name only."""
    assert ApprovalDecision(True) == ApprovalDecision(approved=True)
    full = ApprovalDecision(False, "too big", "Ask for less.", {"x": 1})
    assert full == ApprovalDecision(
        approved=False, reason="too big", reject_message="Ask for less.", args={"x": 1}
    )
    assert ApprovalDecision(True, decided_by="policy").decided_by == "policy"
    assert ApprovalDecision.model_validate({"approved": True}) == ApprovalDecision(True)
    with pytest.raises(TypeError, match=r"at most 4 positional arguments \(approved, reason, "):
        ApprovalDecision(True, None, None, None, "policy")
    with pytest.raises(TypeError, match="'approved' both by position and by name"):
        ApprovalDecision(True, approved=False)
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), call("add", {"x": 1, "y": 2}), "ok"])
    decisions = iter(
        [ApprovalDecision(True, None, None, {"x": 5, "y": 6}), ApprovalDecision(False, "no")]
    )
    agent = AgentBuilder("a", model).tool(add).approvals(lambda r: next(decisions)).build()
    agent.prompt("go").send_sync()
    assert add.calls == [(5, 6)]
    assert tool_results(model.requests[2])[0].content == "no"


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"when": "no"}, "ToolApproval(when=...) takes True, False or a function"),
        ({"when": None}, "not NoneType"),
        ({"reason": 5}, "ToolApproval(reason=...) takes a text or a function"),
        ({"reject_message": ["x"]}, "ToolApproval(reject_message=...) takes a text"),
    ],
)
def test_a_policy_of_the_wrong_shape_is_refused_when_it_is_made(fields, words):
    """Not at the tool's first call, where it failed the whole run with Python's own
    "'str' object is not callable"."""
    with pytest.raises(TypeError) as error:
        ToolApproval(**fields)
    assert words in str(error.value)


def test_edited_arguments_given_as_the_tools_input_model_are_taken():
    """Before, ``ApprovalDecision(True, args=request.args.model_copy(...))`` (the handler gets
    the arguments as the tool's model) ended the run with pydantic's "Input should be a valid
    dictionary"."""
    tool = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])

    def handler(request):
        return ApprovalDecision(True, args=request.args.model_copy(update={"y": 100}))

    agent = AgentBuilder("a", model).tool(tool).approvals(handler).build()
    response = agent.prompt("go").send_sync()
    assert tool.calls == [(1, 100)]
    assert tool_results(model.requests[1])[0].content == ran_with("add", {"x": 1, "y": 100}, "101")
    assert response.output == "done"


class _Point(BaseModel):
    x: int
    y: int


class _Segment(BaseModel):
    start: _Point
    end: _Point


def _segment_tool() -> Any:
    def length(args: _Segment, ctx: Any) -> str:
        return str(abs(args.end.x - args.start.x) + abs(args.end.y - args.start.y))

    return create_tool(
        name="length", description="d", input=_Segment, execute=length, approval=ToolApproval()
    )


def _segment_call() -> Any:
    return call("length", {"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": 1}})


def test_edited_arguments_holding_models_are_taken_as_their_json():
    """``args={"start": Point(...), ...}``: before, "Object of type _Point is not JSON
    serializable" ended the run."""
    model = QueueModel([_segment_call(), "done"])

    def handler(request):
        return ApprovalDecision(True, args={"start": _Point(x=0, y=0), "end": _Point(x=5, y=5)})

    agent = AgentBuilder("a", model).tool(_segment_tool()).approvals(handler).build()
    agent.prompt("go").store(None).send_sync()
    edited = {"start": {"x": 0, "y": 0}, "end": {"x": 5, "y": 5}}
    assert tool_results(model.requests[1])[0].content == ran_with("length", edited, "10")


async def test_the_run_store_and_the_handle_take_edited_arguments_as_the_tools_model(store_path):
    """From another process's code or a cell: ``store.approve(..., args=Segment(...))`` was
    refused as "must be a JSON object"."""
    for decide in ("store", "cell"):
        model = QueueModel([_segment_call(), "done"])
        agent = AgentBuilder("a", model).tool(_segment_tool()).human_input(StoreHumanInput())
        store = RunStore(store_path)
        run = agent.build().prompt("go").store(store).start()
        [pending] = await pending_of(run)
        edited = _Segment(start=_Point(x=0, y=0), end=_Point(x=2, y=3))
        if decide == "store":
            store.approve(run.run_id, pending.id, args=edited)
        else:
            args = {"start": edited.start, "end": edited.end}
            run.interactions.decide(pending.id, approved=True, args=args, via="handle")
        await run.wait()
        told = ran_with("length", edited.model_dump(), "5")
        assert tool_results(model.requests[1])[0].content == told, decide
        store.close()


@pytest.mark.timeout(30)
async def test_edited_arguments_that_hold_themselves_many_times_and_a_model_are_refused_at_once(
    store_path,
):
    """Looking for models in the edit must not walk an object that holds itself again and
    again (eight times at each of its levels: 8**64 walks)."""
    from anvia_notebook import DecisionRefusedError

    model = QueueModel([_segment_call(), "done"])
    agent = AgentBuilder("a", model).tool(_segment_tool()).human_input(StoreHumanInput())
    store = RunStore(store_path)
    run = agent.build().prompt("go").store(store).start()
    [pending] = await pending_of(run)
    looped: dict[str, Any] = {"start": _Point(x=0, y=0)}
    for key in "abcdefgh":
        looped[key] = looped
    with pytest.raises(DecisionRefusedError):
        store.approve(run.run_id, pending.id, args=looped)
    store.approve(run.run_id, pending.id)
    await run.wait()
    store.close()


@pytest.mark.parametrize(
    ("returned", "words"),
    [
        ({"approved": True, "reson": "checked"}, "has no 'reson': its keys are approved, reason"),
        ({"approved": "yes"}, "'approved' must be True or False, not 'yes'"),
        ({"reason": "fine"}, "'approved' must be True or False, not None"),
    ],
)
def test_a_decision_returned_as_a_dict_is_checked_key_by_key(returned, words):
    """Before, a misspelt key was dropped (the reason never recorded), "yes" was read as True
    and a missing ``approved`` ended the run with pydantic's "Field required"."""
    tool = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "done"])
    agent = AgentBuilder("a", model).tool(tool).approvals(lambda request: returned).build()
    with pytest.raises(TypeError, match=words):
        agent.prompt("go").store(None).send_sync()
    assert tool.calls == []


def test_models_at_any_depth_of_edited_arguments_are_taken_as_their_fields():
    decision = ApprovalDecision(
        True, args={"route": [{"stop": _Point(x=1, y=2)}, (_Point(x=3, y=4),)], "n": 2}
    )
    assert decision.args == {"route": [{"stop": {"x": 1, "y": 2}}, [{"x": 3, "y": 4}]], "n": 2}
    plain = {"route": [[1, 2]], "n": 2}
    assert ApprovalDecision(True, args=plain).args == plain
