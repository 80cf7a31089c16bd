"""A model that gives a call of a later turn the id of an earlier turn's call (``call_0``, as some
servers do), and a process that died after the later call finished but before the run's event
log recorded its result (the log follows the state within a second): on resume the later call's
result is shown (the event log holds the earlier turn's result under the same id, which hid it)
and the call does not run again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, create_tool
from anvia_notebook.events import ToolResultEvent
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

from helpers import AddInput

pytestmark = pytest.mark.timeout(60)


class Nothing(BaseModel):
    pass


class DyingStore(RunStore):
    """A store whose event log stops being written at ``lose_events``, and all writes at
    ``die`` (as a process that died: reads still work, as another process's)."""

    lose_events = False
    dead = False

    def _q(self, sql: str, params: Any = ()) -> Any:
        if self.dead and not sql.lstrip().upper().startswith(("SELECT", "PRAGMA")):
            self._backend._local.rowcount = 1
            return []
        return super()._q(sql, params)

    def save_events(self, run_id: str, items: Any) -> None:
        if not (self.dead or self.lose_events):
            super().save_events(run_id, items)

    def save_run(self, run_id: str, state: Any, events: Any, *args: Any, **kwargs: Any) -> None:
        if not self.dead:
            super().save_run(run_id, state, () if self.lose_events else events, *args, **kwargs)


def _agent(ran: list[Any], hold: Any, model: Any) -> Any:
    def add(args: AddInput, ctx: Any) -> int:
        ran.append((ctx.tool_call_id, args.x, args.y))
        return args.x + args.y

    return (
        AgentBuilder("adder", FunctionModel(model))
        .tool(create_tool(name="add", description="Add.", input=AddInput, execute=add))
        .tool(create_tool(name="hold", description="Wait.", input=Nothing, execute=hold))
        .build()
    )


def _script(on_second_turn: Any = None) -> Any:
    def model(request: Any) -> ModelResponse:
        turn = sum(1 for m in request.messages if m.role == "assistant") + 1
        if turn == 1:
            return ModelResponse(
                tool_calls=[ToolCall(id="call_0", name="add", arguments={"x": 1, "y": 1})]
            )
        if turn == 2:
            if on_second_turn is not None:
                on_second_turn()
            return ModelResponse(
                tool_calls=[
                    ToolCall(id="call_0", name="add", arguments={"x": 2, "y": 1}),
                    ToolCall(id="call_1", name="hold", arguments={}),
                ]
            )
        return ModelResponse(
            text=" | ".join(r.content for m in request.messages for r in m.tool_results)
        )

    return model


async def test_a_later_turn_s_result_under_a_repeated_id_is_shown_on_resume(
    store_path: Path,
) -> None:
    store = DyingStore(store_path)
    ran: list[Any] = []
    held = asyncio.Event()
    runs: list[Any] = []

    def second_turn() -> None:
        runs[0].checkpoint()  # the first turn's result is in the event log
        store.lose_events = True

    async def hold(args: Nothing, ctx: Any) -> str:
        store.dead = True  # the process dies here: add's second call is done, not its event
        held.set()
        await asyncio.Event().wait()
        return "never"

    run = _agent(ran, hold, _script(second_turn)).prompt("add").store(store)
    run = run.with_tool_concurrency(1).create_run()
    runs.append(run)
    run.start()
    await asyncio.wait_for(held.wait(), 10)
    run.cancel("the process died")
    await asyncio.wait_for(asyncio.gather(run.wait(), return_exceptions=True), 10)
    assert ran == [("call_0", 1, 1), ("call_0", 2, 1)]

    reader = RunStore(store_path)
    reader._q(  # the dead process's run: no owner alive
        "UPDATE runs SET status = 'running', owner_host = 'gone', owner_pid = 1, "
        "heartbeat_at = 0 WHERE run_id = ?",
        (run.run_id,),
    )

    async def done(args: Nothing, ctx: Any) -> str:
        return "held"

    resumed = _agent(ran, done, _script()).resume(run.run_id, reader).create_run()
    resumed.start()
    response = await asyncio.wait_for(resumed.wait(), 10)
    assert ran == [("call_0", 1, 1), ("call_0", 2, 1)]  # not run again
    assert response.output.startswith("2 | 3 | ")
    shown = [
        (e.turn, e.tool_call_id, e.result)
        for e in reader.events(run.run_id)
        if isinstance(e, ToolResultEvent)
    ]
    assert shown[:2] == [(1, "call_0", "2"), (2, "call_0", "3")]
    assert [(turn, call) for turn, call, _ in shown] == [
        (1, "call_0"),
        (2, "call_0"),
        (2, "call_1"),
    ]
    reader.close()
