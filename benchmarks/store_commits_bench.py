"""How many times a run commits to the run store, per turn, and what a turn costs with the store
on and off.

A turn with one tool call should commit at most twice (the call marked started before it runs,
and the turn's end), plus one commit per interaction opened and one per decision. Commits are
counted from SQLite's own statement trace on the run's thread (every ``COMMIT`` and every write
outside a transaction); the store's background thread (checkpoints, heartbeats) is not the run.

    python benchmarks/store_commits_bench.py [--turns 20] [--json out.json]

Prints, side by side: commits per turn for a plain tool call and for a protected one (approved
by a handler: one interaction, one decision), the target for each, and the median time per turn
with the store off and on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, ToolApproval, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall


class AddInput(BaseModel):
    x: int
    y: int


def _add(args: AddInput, ctx: Any) -> int:
    return args.x + args.y


class Commits:
    """Counts the commits made on one thread's SQLite connections (from their statement trace)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.count = 0
        self._in_transaction: dict[int, bool] = {}

    def watch(self, connection: sqlite3.Connection) -> None:
        key = id(connection)

        def trace(statement: str) -> None:
            if threading.get_ident() != self.thread:
                return
            word = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else ""
            if word == "BEGIN":
                self._in_transaction[key] = True
            elif word in ("COMMIT", "END"):
                self._in_transaction[key] = False
                self.count += 1
            elif word == "ROLLBACK":
                self._in_transaction[key] = False
            elif word in ("INSERT", "UPDATE", "DELETE", "REPLACE") and not self._in_transaction.get(
                key
            ):
                self.count += 1

        connection.set_trace_callback(trace)


def agent(protected: bool, turns: int) -> Any:
    tool = create_tool(
        name="add",
        description="Add two numbers.",
        input=AddInput,
        execute=_add,
        approval=ToolApproval() if protected else None,
    )

    def script(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < turns:
            call = ToolCall(id=f"c{done}", name="add", arguments={"x": done, "y": 1})
            return ModelResponse(tool_calls=[call])
        return ModelResponse(text="done")

    builder = AgentBuilder("adder", FunctionModel(script)).tool(tool)
    if protected:
        builder = builder.approvals(lambda request: True)
    return builder.build()


async def one_run(protected: bool, turns: int, store: RunStore | None) -> float:
    started = time.perf_counter()
    await agent(protected, turns).prompt("add").store(store).send()
    return (time.perf_counter() - started) / (turns + 1)


def counted(protected: bool, turns: int, folder: Path) -> tuple[int, float]:
    """Commits of one run of ``turns`` tool turns (and its final answer), and its time a turn."""
    store = RunStore(folder / f"commits-{protected}-{turns}.sqlite")
    commits = Commits()
    backend = store._backend
    original = backend._connection

    def connection() -> sqlite3.Connection:
        made = getattr(backend._local, "connection", None)
        conn = original()
        if made is None:
            commits.watch(conn)
        return conn

    backend._connection = connection
    commits.watch(original())  # the connection this thread opened when the store was made
    per_turn = asyncio.run(one_run(protected, turns, store))
    store.close()
    return commits.count, per_turn


def timed(protected: bool, turns: int, folder: Path, rounds: int = 5) -> tuple[float, float]:
    """Median time a turn, store off and on (interleaved rounds)."""
    off: list[float] = []
    on: list[float] = []
    for index in range(rounds):
        off.append(asyncio.run(one_run(protected, turns, None)))
        store = RunStore(folder / f"timed-{protected}-{index}.sqlite")
        on.append(asyncio.run(one_run(protected, turns, store)))
        store.close()
    return statistics.median(off), statistics.median(on)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        print(
            f"{'tool call':<12} {'commits':>8} {'per turn':>9} {'target':>7} "
            f"{'ms/turn off':>12} {'ms/turn on':>11} {'on/off':>7}"
        )
        for protected in (False, True):
            commits, _ = counted(protected, args.turns, folder)
            base, _ = counted(protected, 0, folder)  # the run's creation and its end
            per_turn = (commits - base) / args.turns
            # 2 per turn (started, turn end), +1 interaction opened, +1 decision (the run's
            # creation and its end, once per run, are not counted per turn).
            target = 2 + (2 if protected else 0)
            off, on = timed(protected, args.turns, folder)
            kind = "protected" if protected else "plain"
            print(
                f"{kind:<12} {commits:>8} {per_turn:>9.2f} {target:>7} "
                f"{off * 1000:>12.3f} {on * 1000:>11.3f} {on / off:>6.2f}x"
            )
            results[kind] = {
                "commits": commits,
                "turns": args.turns,
                "commits_per_turn": per_turn,
                "target_per_turn": target,
                "ms_per_turn_store_off": off * 1000,
                "ms_per_turn_store_on": on * 1000,
            }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
