"""One interaction record: every decider goes through one check and one first-decision-wins
step, the store keeps the whole record, and a run uses a stored decision whoever wrote it.

Each test here reproduces a defect found through the public API, the command line (in another
process) or a process killed with SIGKILL, or pins a safety rule a hand-written bug broke
without the suite noticing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import pytest
import store_agents
import test_resume
from confirm_agents import EvenAmount
from pydantic import BaseModel
from store_agents import effects, transfer_tool
from test_property_crash_resume import CrashingStore
from test_resume import kill, only_run, start_child, wait_until

from anvia_notebook import (
    AgentBuilder,
    CallbackHumanInput,
    DecisionRefusedError,
    PromptCancelledError,
    RunOwnedError,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    ask_question,
    create_hook,
    create_tool,
)
from anvia_notebook.models import FunctionModel, ModelResponse, QueueModel, ToolCall

from helpers import (
    call,
    calls,
    make_add_tool,
    pending_of,
    ran_with,
    tool_results,
    wait_on_events,
)

pytestmark = pytest.mark.timeout(120)
env = test_resume.env  # the fixture: effects file and PYTHONPATH for the child process


def cli(store, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m anvia_notebook --store STORE ...`` in another process."""
    return subprocess.run(
        [sys.executable, "-m", "anvia_notebook", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def banker(*, human_input=None, approval=True, handler=None, tools=None):
    """The crash tests' agent, as a script would resume it: no human input unless given."""
    builder = AgentBuilder("banker", FunctionModel(store_agents._script)).tools(
        tools if tools is not None else [transfer_tool(approval=approval), ask_question]
    )
    if human_input is not None:
        builder = builder.human_input(human_input)
    if handler is not None:
        builder = builder.approvals(handler)
    return builder.build()


def killed_while_waiting(env, store_location, prompt="send 5 to a1"):
    """A child process runs the agent until something is pending, and is killed there."""
    child = start_child(env, "approval", prompt)
    store = RunStore(store_location)
    [record] = wait_until(lambda: store.pending(), child, "the pending interaction")
    kill(child)
    return store, only_run(store).run_id, record


# -- decisions written while no process owns the run ------------------------------------------


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
async def test_a_terminal_approval_with_edited_arguments_is_used_by_a_resume_without_a_person(
    env, store_location
):
    store, run_id, approval = killed_while_waiting(env, store_location)
    done = cli(
        store_location,
        "approve",
        run_id,
        approval.id,
        "--reason",
        "checked by phone",
        "--args",
        '{"account": "a1", "amount": 9}',
    )
    assert done.returncode == 0, done.stderr
    response = await banker().resume(run_id).send()  # no human input, no handler
    assert response.output.startswith("Result:")
    assert effects() == ["started a1 9", "done a1 9"]  # once, with the edited arguments
    [record] = store.interactions(run_id)
    assert (record.status, record.decided_by, record.decided_via) == ("approved", "human", "cli")
    assert record.decision_reason == "checked by phone"
    assert record.edited_args == {"account": "a1", "amount": 9}


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
async def test_a_terminal_rejection_is_used_by_a_resume_without_a_person(env, store_location):
    store, run_id, approval = killed_while_waiting(env, store_location)
    done = cli(store_location, "reject", run_id, approval.id, "--reason", "not this month")
    assert done.returncode == 0, done.stderr
    response = await banker().resume(run_id).send()
    assert response.output == "Result: not this month"
    assert effects() == []
    [record] = store.interactions(run_id)
    assert (record.status, record.decided_via) == ("rejected", "cli")


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
async def test_a_terminal_answer_is_used_by_a_resume_without_a_person(env, store_location):
    store, run_id, question = killed_while_waiting(env, store_location, "ask which account")
    answers = [{"questionId": "account", "answer": "savings", "choice": "savings"}]
    done = cli(store_location, "answer", run_id, question.id, "--json", json.dumps(answers))
    assert done.returncode == 0, done.stderr
    # The transfer that follows is approved by a handler; the question is not asked again.
    response = await banker(handler=lambda request: True).resume(run_id).send()
    assert response.output.startswith("Result:")
    assert effects() == ["started savings 7", "done savings 7"]
    [record, _] = store.interactions(run_id)
    assert (record.kind, record.status, record.decided_via) == ("question", "answered", "cli")


# -- the store keeps the whole record, and refuses what the run would refuse ------------------


@pytest.mark.parametrize("store_location", ["sqlite", "postgresql"], indirect=True)
async def test_a_store_decision_returns_and_stores_the_decided_record(env, store_location):
    store, run_id, approval = killed_while_waiting(env, store_location)
    returned = store.approve(run_id, approval.id, reason="fine")
    assert (returned.status, returned.decided_by, returned.decided_via) == (
        "approved",
        "human",
        "store",
    )
    assert returned.resolved_at is not None and returned.decision_reason == "fine"
    [stored] = store.get(run_id).approvals.values()
    assert stored == returned
    shown = cli(store_location, "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    [printed] = json.loads(shown.stdout)["approvals"].values()
    assert (printed["status"], printed["decided_via"]) == ("approved", "store")


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
async def test_edited_arguments_the_tool_refuses_are_refused_by_the_store_and_the_command_line(
    env, store_location
):
    store, run_id, approval = killed_while_waiting(env, store_location)
    with pytest.raises(DecisionRefusedError, match="amount"):
        store.approve(run_id, approval.id, args={"account": "a1", "amount": "not-an-int"})
    refused = cli(store_location, "approve", run_id, approval.id, "--args", '{"account": 3}')
    assert refused.returncode != 0
    assert "not valid for transfer" in refused.stderr + refused.stdout
    [record] = store.pending(run_id)  # nothing was recorded
    assert record.id == approval.id
    response = await banker(handler=lambda request: True).resume(run_id).send()
    assert response.output.startswith("Result:")
    assert effects() == ["started a1 5", "done a1 5"]


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
async def test_a_resume_by_an_agent_without_the_tool_closes_its_pending_approval(
    env, store_location
):
    store, run_id, approval = killed_while_waiting(env, store_location)
    agent = banker(tools=[ask_question])  # the protected tool is gone
    response = await agent.resume(run_id).send()
    assert "transfer" in response.output  # the model read that the tool does not exist
    assert only_run(store).pending == 0
    [record] = store.interactions(run_id)
    assert (record.status, record.decided_by) == ("cancelled", "runtime")
    late = cli(store_location, "reject", run_id, approval.id)
    assert late.returncode != 0
    assert "already cancelled" in late.stderr + late.stdout


class EndWatchingStore(RunStore):
    """Records the claims made on it and, for each write of a run's state, the status its
    interactions had just before (so a test sees in which write they were closed)."""

    def __init__(self, location):
        super().__init__(location)
        self.claims: list[str] = []
        self.before_state_writes: list[tuple[str, list[str]]] = []

    def claim(self, record):
        self.claims.append(record.id)
        return super().claim(record)

    def save_run(self, run_id, state, *args, **kwargs):
        if state is not None:
            before = [r.status for r in self.interactions(run_id)]
            self.before_state_writes.append((state.status, before))
        return super().save_run(run_id, state, *args, **kwargs)


@pytest.mark.parametrize("store_location", ["sqlite", "postgres"], indirect=True)
async def test_an_interaction_left_open_is_closed_by_the_write_that_ends_the_run(
    env, store_location
):
    _, run_id, approval = killed_while_waiting(env, store_location)
    store = EndWatchingStore(store_location)
    response = await banker(tools=[ask_question]).resume(run_id).store(store).send()
    assert "transfer" in response.output
    assert store.claims == []  # not decided in a write of its own
    # The last write (the run's end) found it pending and left it closed.
    assert store.before_state_writes[-1] == ("success", ["pending"])
    [record] = store.interactions(run_id)
    assert (record.status, record.decided_by, record.decision_reason) == (
        "cancelled",
        "runtime",
        "The run ended before this was decided.",
    )
    assert store.get(run_id).approvals[approval.id] == record  # the state says the same


@pytest.mark.parametrize("store_location", ["sqlite", "postgres"], indirect=True)
async def test_a_decision_that_reaches_the_store_as_the_run_ends_stands_in_the_state_too(
    env, store_location
):
    """A terminal decision lands after the run closed its leftovers in memory but before its
    last write: the stored decision was first and stands; the state agrees with it."""
    _, run_id, approval = killed_while_waiting(env, store_location)

    class LateDecision(RunStore):
        def save_run(self, run_id_, state, *args, **kwargs):
            if state is not None and state.status == "success":
                assert cli(store_location, "reject", run_id, approval.id).returncode == 0
            return super().save_run(run_id_, state, *args, **kwargs)

    store = LateDecision(store_location)
    await banker(tools=[ask_question]).resume(run_id).store(store).send()
    [record] = store.interactions(run_id)
    assert (record.status, record.decided_via) == ("rejected", "cli")
    assert store.get(run_id).approvals[approval.id] == record
    assert effects() == []


@pytest.mark.parametrize("store_location", ["sqlite"], indirect=True)
async def test_a_pending_approval_stands_after_its_policy_was_removed(env, store_location):
    store, run_id, approval = killed_while_waiting(env, store_location)
    agent = banker(human_input=StoreHumanInput(), approval=False)
    run = agent.resume(run_id).start()
    for _ in range(500):  # the resumed run waits for the same approval again
        if run.status == "waiting" and run.interactions.pending:
            break
        await asyncio.sleep(0.01)
    assert [r.id for r in run.interactions.pending] == [approval.id]
    assert effects() == []
    store.reject(run_id, approval.id, reason="no")
    response = await asyncio.wait_for(run.wait(), 10)
    assert response.output == "Result: no"
    assert effects() == []


# -- safety rules pinned through the public API -------------------------------------------------


async def test_the_first_decision_wins_without_a_store():
    """A human input that approves after a rejection from another thread landed first."""
    rejected = threading.Event()

    async def approve(request):
        await asyncio.to_thread(rejected.wait, 10)
        return True

    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).human_input(CallbackHumanInput(approve)).build()
    run = agent.prompt("go").store(None).start()
    [pending] = await pending_of(run)

    def reject_from_another_thread() -> None:
        run.interactions.decide(pending, approved=False, reason="first")
        rejected.set()

    await asyncio.to_thread(reject_from_another_thread)
    await asyncio.wait_for(run.wait(), 10)
    assert add.calls == []
    [record] = run.state.approvals.values()
    assert (record.status, record.decision_reason) == ("rejected", "first")
    assert tool_results(model.requests[1])[0].content == "first"


async def test_a_hook_s_approval_request_is_asked_even_when_the_policy_says_no():
    asked: list[str] = []

    def hook(event):
        return event.tool.request_approval(reason="the hook wants a look")

    add = make_add_tool(approval=ToolApproval(when=lambda ctx: False))
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = (
        AgentBuilder("a", model)
        .tool(add)
        .hook(create_hook(on_tool_call=hook))
        .approvals(lambda request: asked.append(request.reason) or False)
        .build()
    )
    await agent.prompt("go").store(None).send()
    assert asked == ["the hook wants a look"]
    assert add.calls == []


async def test_resuming_a_run_this_process_still_runs_is_refused(store_path):
    add = make_add_tool(approval=ToolApproval())
    model = QueueModel([call("add", {"x": 1, "y": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(add).human_input(StoreHumanInput()).build()
    run = agent.prompt("go").start()
    await pending_of(run)
    with pytest.raises(RunOwnedError):
        agent.resume(run.run_id)
    with pytest.raises(RunOwnedError):  # also through another store object on the same file
        agent.resume(run.run_id, RunStore(store_path))
    [pending] = run.interactions.pending
    RunStore(store_path).approve(run.run_id, pending.id)
    await asyncio.wait_for(run.wait(), 10)
    assert add.calls == [(1, 2)]  # once


class Amount(BaseModel):
    n: int


async def test_a_later_call_reusing_an_earlier_call_id_is_asked_again_after_a_resume(store_path):
    """Some OpenAI-compatible servers reuse tool call ids: an earlier decision never approves
    a later call."""
    ran: list[int] = []
    guarded = create_tool(
        name="guarded",
        description="",
        input=Amount,
        execute=lambda args, ctx: ran.append(args.n) or "done",
        approval=ToolApproval(),
    )
    same_id = [ToolCall(id="call_1", name="guarded", arguments={"n": 1})]
    later = [ToolCall(id="call_1", name="guarded", arguments={"n": 2})]
    script = iter(
        [
            ModelResponse(tool_calls=same_id),
            ModelResponse(tool_calls=later),
            ModelResponse(text="end"),
        ]
    )
    agent = (
        AgentBuilder("a", FunctionModel(lambda request: next(script)))
        .tool(guarded)
        .human_input(StoreHumanInput())
        .build()
    )
    store = CrashingStore(store_path)
    run = agent.prompt("go").store(store).create_run()
    asked: list[str] = []

    def crash_at_the_second_request(event) -> None:
        if event.type == "tool_approval_request":
            asked.append(event.approval.id)
            if len(asked) == 2:  # the process dies while the later call waits
                store.crash()
                run.cancel("crash")

    run.subscribe(crash_at_the_second_request, replay=False)
    run.start()
    [first] = await pending_of(run)
    run.interactions.decide(first, approved=True)
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 10)
    assert ran == [1]
    RunStore(store_path)._q(
        "UPDATE runs SET owner_host = 'gone', owner_pid = 1, heartbeat_at = 0 WHERE run_id = ?",
        (run.run_id,),
    )
    resumed = agent.resume(run.run_id).start()
    [pending] = await pending_of(resumed)
    assert pending.id == asked[1]  # the later call is asked, not approved by the first decision
    assert ran == [1]
    resumed.interactions.decide(pending, approved=False)
    await asyncio.wait_for(resumed.wait(), 10)
    assert ran == [1]


async def test_an_edit_only_the_tool_s_own_validator_refuses_is_refused_before_it_is_recorded(
    store_path,
):
    """The store checks edited arguments against the tool's JSON Schema; a rule the schema
    cannot say (a validator) is the run's: a ``RunStore`` of the run's own process sends the
    edit to the run, which refuses it in the words every decider gets. Nothing is recorded, the
    approval still waits, and a valid edit then runs the tool with it."""
    ran: list[int] = []
    pay = create_tool(
        name="pay",
        description="",
        input=EvenAmount,
        execute=lambda args, ctx: ran.append(args.amount) or "paid",
        approval=ToolApproval(),
    )
    model = QueueModel([call("pay", {"amount": 2}), "ok"])
    agent = AgentBuilder("a", model).tool(pay).human_input(StoreHumanInput()).build()
    run = agent.prompt("go").start()
    [pending] = await pending_of(run)
    store = RunStore(store_path)
    with pytest.raises(DecisionRefusedError, match=r"not valid for pay.*the amount must be even"):
        await asyncio.to_thread(store.approve, run.run_id, pending.id, args={"amount": 3})
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored.status == "pending" and run.state.approvals[pending.id].status == "pending"
    approved = await asyncio.to_thread(store.approve, run.run_id, pending.id, args={"amount": 4})
    assert approved.status == "approved" and approved.edited_args == {"amount": 4}
    await asyncio.wait_for(run.wait(), 10)
    assert ran == [4]
    [result] = tool_results(model.requests[1])
    assert not result.is_error and result.content == ran_with("pay", {"amount": 4}, "paid")
    [stored] = RunStore(store_path).interactions(run.run_id)
    assert stored == approved == run.state.approvals[pending.id]


# -- an interaction left open by a turn that another call ended ---------------------------------


def _turn_ended_by_the_other_call(ending, sub_agent: bool = False):
    """A run whose first call waits for an approval nobody gives (``sub_agent``: the approval
    of a sub-agent that call runs) while the second call's ``on_tool_call`` hook, once that
    approval is asked, does ``ending`` (raises, or cancels)."""
    asked = asyncio.Event()

    async def never(request):
        asked.set()
        await asyncio.Event().wait()

    async def on_tool_call(event):
        if event.tool_name != "note":
            return event.tool.run()
        await asked.wait()
        return ending(event)

    note = create_tool(name="note", description="n", input=EvenAmount, execute=lambda a, c: "ok")
    first: tuple[str, dict, str] = ("add", {"x": 1, "y": 2}, "c1")
    protected = make_add_tool(approval=ToolApproval())
    if sub_agent:
        helper = AgentBuilder("helper", QueueModel([call("add", {"x": 1, "y": 2}, id="s1")]))
        protected = helper.tool(protected).build().as_tool(name="ask_helper")
        first = ("ask_helper", {"prompt": "add"}, "c1")
    model = QueueModel([calls(first, ("note", {"amount": 2}, "c2"))])
    agent = (
        AgentBuilder("a", model)
        .tools([protected, note])
        .hook(create_hook(on_tool_call=on_tool_call))
        .build()
    )
    request = agent.prompt("go").store(None).human_input(CallbackHumanInput(approve=never))
    return request.with_tool_concurrency(2).start()


def _broken(event):
    raise RuntimeError("hook broke")


#: How the other call ends the turn, what the run raises, and the reason recorded.
ENDINGS = pytest.mark.parametrize(
    ("ending", "raised", "reason"),
    [
        (_broken, RuntimeError, "The run failed in another tool call: RuntimeError: hook broke"),
        (lambda event: event.tool.cancel("hook cancels"), PromptCancelledError, "hook cancels"),
    ],
    ids=["failure", "hook-cancel"],
)


@ENDINGS
async def test_an_approval_left_open_by_another_calls_failure_is_closed_by_the_runtime_saying_why(
    ending, raised, reason
):
    """Not "Stopped by the user.", decided by Stop: nobody pressed Stop."""
    run = _turn_ended_by_the_other_call(ending)
    with pytest.raises(raised):
        await asyncio.wait_for(run.wait(), 30)
    [record] = run.state.approvals.values()
    assert (record.status, record.decided_by, record.decision_reason) == (
        "cancelled",
        "runtime",
        reason,
    )
    [told] = [e for e in run.events if e.type == "tool_approval_result"]
    assert told.approval.decided_by == "runtime" and told.approval.decision_reason == reason


async def test_an_approval_left_open_by_stop_is_still_closed_by_stop():
    run = _turn_ended_by_the_other_call(lambda event: asyncio.Event().wait())
    await wait_on_events(run, lambda: run.interactions.pending)
    run.cancel("Enough.")
    with pytest.raises(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)
    [record] = run.state.approvals.values()
    assert (record.decided_by, record.decision_reason) == ("stop", "Enough.")


@ENDINGS
async def test_a_sub_agents_approval_left_open_by_another_calls_failure_is_closed_by_the_runtime(
    ending, raised, reason
):
    """The same, one level down: the parent's other call fails while the sub-agent's approval
    waits. Before, the sub-run was cancelled as by Stop and its approval said "Stopped"."""
    run = _turn_ended_by_the_other_call(ending, sub_agent=True)
    with pytest.raises(raised):
        await asyncio.wait_for(run.wait(), 30)
    [child] = run.children
    [record] = child.state.approvals.values()
    assert (record.status, record.decided_by, record.decision_reason) == (
        "cancelled",
        "runtime",
        reason,
    )
    assert child.state.status == "cancelled" and child.state.cancel_reason == reason
