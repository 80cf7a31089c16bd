"""Property: a run that crashes at any point and is resumed never executes a tool call twice,
never executes a protected call without an approve decision for it, and loses no approved call.

A crash is simulated in-process: at a random event the run store stops recording (as if the
process had died at that instant, every later write is lost), the run's task is dropped, the
owner is recorded as gone, and the run is resumed from what the store holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from anvia_notebook import (
    AgentBuilder,
    RunStore,
    StoreHumanInput,
    ToolApproval,
    create_tool,
)
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


class Args(BaseModel):
    n: int


class CrashingStore(RunStore):
    """A store whose writes stop at :meth:`crash` (reads still work, like another process)."""

    crashed = False

    def crash(self) -> None:
        self.crashed = True

    def _q(self, sql, params=()):
        if self.crashed and not sql.lstrip().upper().startswith(("SELECT", "PRAGMA")):
            self._backend._local.rowcount = 1  # the dead process "won" nothing real
            return []
        return super()._q(sql, params)

    def save_events(self, run_id, items):
        if not self.crashed:
            super().save_events(run_id, items)

    def save_run(self, *args, **kwargs):  # (its rows of many values bypass _q)
        if not self.crashed:
            super().save_run(*args, **kwargs)

    def claim_run(self, run_id):  # never used on the crashing instance
        raise AssertionError


_counter = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(
        st.lists(st.sampled_from(["guarded", "free"]), min_size=1, max_size=3),
        min_size=1,
        max_size=3,
    ),
    decisions=st.lists(st.sampled_from(["approve", "reject", "edit"]), min_size=10, max_size=10),
    crash_at=st.integers(min_value=1, max_value=40),
    concurrency=st.integers(min_value=1, max_value=3),
    deciders=st.lists(st.sampled_from(["run", "store"]), min_size=10, max_size=10),
)
def test_crash_anywhere_then_resume(turns, decisions, crash_at, concurrency, deciders):
    with tempfile.TemporaryDirectory(prefix="anvia-crash-", ignore_cleanup_errors=True) as name:
        crash_and_resume(Path(name), turns, decisions, crash_at, concurrency, deciders)


def crash_and_resume(folder, turns, decisions, crash_at, concurrency, deciders=()):
    """``deciders``: who takes each decision, the run itself (as the widget or the handle do)
    or the run store from another connection (as the command line does, also after the crash)."""
    path = folder / "runs.sqlite"
    executed: list[str] = []
    dead = {"now": False}  # after the crash the first process does nothing more

    async def execute(args: Args, ctx) -> str:
        if dead["now"]:
            raise asyncio.CancelledError  # a dead process runs no code
        executed.append(ctx.tool_call_id)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return f"did {args.n}"

    tools = [
        create_tool(
            name="guarded", description="", input=Args, execute=execute, approval=ToolApproval()
        ),
        create_tool(name="free", description="", input=Args, execute=execute),
    ]
    script = [
        ModelResponse(
            tool_calls=[
                ToolCall(id=f"t{t}_{i}", name=name, arguments={"n": i})
                for i, name in enumerate(turn)
            ]
        )
        for t, turn in enumerate(turns)
    ]

    def model(request):
        turn = sum(1 for m in request.messages if m.role == "assistant")
        return script[turn] if turn < len(script) else ModelResponse(text="end")

    def agent():
        return (
            AgentBuilder("crashy", FunctionModel(model))
            .tools(tools)
            .human_input(StoreHumanInput())
            .build()
        )

    choices = iter(decisions)
    who = iter(deciders)
    other = RunStore(path)  # another connection: it still writes after the "crash"

    async def operator(run):
        """Decides whatever becomes pending, in order, until the run ends."""
        while not run.done:
            for record in run.interactions.pending:
                choice = next(choices, "approve")
                args = {"n": 42} if choice == "edit" else None
                decider = next(who, "run")
                try:
                    if decider == "store" and choice == "reject":
                        other.reject(run.run_id, record.id)
                    elif decider == "store":
                        other.approve(run.run_id, record.id, args=args)
                    else:
                        run.interactions.decide(record.id, approved=choice != "reject", args=args)
                except Exception:
                    pass  # already decided: fine
            await asyncio.sleep(0)

    async def first_life() -> str:
        store = CrashingStore(path)
        request = agent().prompt("go").with_tool_concurrency(concurrency).store(store)
        run = request.create_run()
        seen = itertools.count(1)

        def maybe_crash(event):
            if next(seen) == crash_at and not store.crashed:
                store.crash()
                dead["now"] = True
                run.cancel("crash")  # the task goes away; nothing more reaches the store

        run.subscribe(maybe_crash, replay=False)
        run.start()
        driver = asyncio.ensure_future(operator(run))
        # the "crash": a cancellation whose writes never reach the store
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await run.wait()
        driver.cancel()
        return run.run_id

    run_id = asyncio.run(first_life())
    reader = RunStore(path)
    state = reader.get(run_id)
    if (
        state.status in ("running", "waiting", "pending", "cancelled")
        and reader.status(run_id) != "success"
    ):
        reader._q(
            "UPDATE runs SET status = 'running', owner_host = 'gone', owner_pid = 1, "
            "heartbeat_at = 0 WHERE run_id = ?",
            (run_id,),
        )

        dead["now"] = False

        async def second_life():
            request = agent().resume(run_id, RunStore(path)).with_tool_concurrency(concurrency)
            run = request.create_run()
            run.start()
            driver = asyncio.ensure_future(operator(run))
            response = await asyncio.wait_for(run.wait(), 30)
            driver.cancel()
            return response

        assert asyncio.run(second_life()).output == "end"
    final = RunStore(path).get(run_id)
    assert final.status == "success"
    # never twice
    assert len(executed) == len(set(executed)), executed
    approvals = list(final.approvals.values())
    approved_calls = {a.tool_call_id for a in approvals if a.status == "approved"}
    guarded_calls = {c.id for m in final.messages for c in m.tool_calls if c.name == "guarded"}
    # never without approval
    for call_id in executed:
        if call_id in guarded_calls:
            assert call_id in approved_calls, f"{call_id} ran without an approve decision"
    # no approved call lost: each ran (or had started when the process died)
    for call_id in approved_calls:
        assert call_id in executed, f"approved {call_id} never ran"
    # every call of the conversation has exactly one result
    answered = [r.tool_call_id for m in final.messages for r in m.tool_results]
    asked = [c.id for m in final.messages for c in m.tool_calls]
    assert sorted(answered) == sorted(asked)
