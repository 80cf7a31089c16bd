"""Property: whoever decides, and however their decisions race, each protected call has exactly
one recorded outcome, the run and the store agree on it, the call executes at most once and
only when that outcome is an approval (and does, unless Stop ended the run first), and only the
decider that won was told it won.

Deciders race on every pending approval: the widget and ``RunHandle`` (from other threads), the
run store from another connection (as another process would), the run's human input, its time
limit and Stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    ApprovalDecision,
    CallbackHumanInput,
    DecisionRefusedError,
    PromptCancelledError,
    RunStore,
    ToolApproval,
    create_tool,
)
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

DECIDERS = ["widget", "handle", "store", "human_input", "timeout", "stop"]


class Args(BaseModel):
    n: int


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    calls=st.integers(min_value=1, max_value=3),
    concurrency=st.integers(min_value=1, max_value=3),
    deciders=st.lists(st.sampled_from(DECIDERS), min_size=1, max_size=4, unique=True),
    approve=st.lists(st.booleans(), min_size=8, max_size=8),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_racing_deciders_leave_one_outcome_the_run_and_the_store_agree_on(
    calls, concurrency, deciders, approve, seed
):
    with tempfile.TemporaryDirectory(prefix="anvia-race-", ignore_cleanup_errors=True) as name:
        asyncio.run(race(Path(name) / "runs.sqlite", calls, concurrency, deciders, approve, seed))


async def race(path, calls, concurrency, deciders, approve, seed):
    rng = random.Random(seed)
    choices = iter(approve * 4)
    executed: list[str] = []
    winners: dict[str, list[str]] = {}  # approval id -> deciders told their decision counted
    lock = threading.Lock()

    def won(approval_id: str, decider: str) -> None:
        with lock:
            winners.setdefault(approval_id, []).append(decider)

    async def execute(args: Args, ctx) -> str:
        executed.append(ctx.tool_call_id)
        return "done"

    guarded = create_tool(
        name="guarded", description="", input=Args, execute=execute, approval=ToolApproval()
    )
    script = [
        ModelResponse(
            tool_calls=[
                ToolCall(id=f"c{i}", name="guarded", arguments={"n": i}) for i in range(calls)
            ]
        )
    ]

    def model(request):
        turn = sum(1 for m in request.messages if m.role == "assistant")
        return script[turn] if turn < len(script) else ModelResponse(text="end")

    async def human_approve(request):
        for _ in range(rng.randint(0, 5)):
            await asyncio.sleep(0)
        return ApprovalDecision(approved=next(choices, True))

    human = CallbackHumanInput(
        approve=human_approve if "human_input" in deciders else _never,
        timeout=1e-4 if "timeout" in deciders else None,
    )
    agent = AgentBuilder("racer", FunctionModel(model)).tool(guarded).human_input(human).build()
    store = RunStore(path)
    other = RunStore(path)  # another connection, as another process
    run = agent.prompt("go").with_tool_concurrency(concurrency).store(store).start()
    seen: set[str] = set()
    threads: list[threading.Thread] = []

    def outside(decider: str, approval_id: str, approved: bool) -> None:
        try:
            if decider == "store":
                if approved:
                    other.approve(run.run_id, approval_id)
                else:
                    other.reject(run.run_id, approval_id, reason="no")
            else:
                run.interactions.decide(approval_id, approved=approved, via=decider)
        except DecisionRefusedError:
            return
        won(approval_id, decider)

    while not run.done:  # every racer decides, so each approval ends
        for record in run.interactions.pending:
            if record.id in seen:
                continue
            seen.add(record.id)
            order = list(deciders)
            rng.shuffle(order)
            for decider in order:
                if decider in ("widget", "handle", "store"):
                    thread = threading.Thread(
                        target=outside, args=(decider, record.id, next(choices, True))
                    )
                    threads.append(thread)
                    thread.start()
                elif decider == "stop":
                    run.cancel("stopped in the race")
        await asyncio.sleep(0)
    for thread in threads:
        thread.join(10)
    with contextlib.suppress(PromptCancelledError):
        await asyncio.wait_for(run.wait(), 30)

    stored = {r.id: r for r in RunStore(path).interactions(run.run_id)}
    final = run.state.approvals
    assert len(executed) == len(set(executed)), executed  # never twice
    for approval_id, record in final.items():
        assert record.status != "pending", record  # one outcome, always
        assert stored[approval_id] == record  # the run and the store agree
        ran = record.tool_call_id in executed
        if ran:  # only an approved call runs ...
            assert record.status == "approved", (record, executed)
        elif record.status == "approved":  # ... and an approved one, unless Stop came first
            assert run.state.status == "cancelled", (record, executed)
        told = winners.get(approval_id, [])
        assert len(told) <= 1, told  # at most one decider was told it won
        if told:  # ... and the record names it
            assert record.decided_via == told[0], (record, told)
    store.close()
    other.close()


async def _never(request):
    await asyncio.Event().wait()
