"""What a tool's ``print`` costs while its run is shown: captured into the tool's entry.

A tool prints ``--prints`` short lines (``print(n)``: two writes each) in a sync tool (run in a
worker thread, its output handed to the run's loop) and in an async tool (on the loop), with
the run shown (``show()``, the widget's comm a no-op outside a kernel), against the same tool
in a run with no view (its prints go to the terminal's stream, here a discarded one) and
the bare loop of prints with no run at all. The run store is off.

    python benchmarks/tool_print_bench.py [--prints 50000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import ModelResponse, QueueModel, ToolCall
from anvia_notebook.notebook import _runner


class _NoArgs(BaseModel):
    pass


def _agent(prints: int, sync: bool):
    def loud(args: _NoArgs, ctx) -> str:
        for n in range(prints):
            print(n)
        return "done"

    async def loud_async(args: _NoArgs, ctx) -> str:
        return loud(args, ctx)

    tool = create_tool(
        name="loud", description="Prints.", input=_NoArgs, execute=loud if sync else loud_async
    )
    calls = [ModelResponse(tool_calls=[ToolCall(id="c1", name="loud", arguments={})]), "Done."]
    return AgentBuilder("bench", QueueModel(calls)).tools([tool]).build()


async def _timed(prints: int, sync: bool, shown: bool) -> float:
    request = _agent(prints, sync).prompt("go").store(None)
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        if shown:
            await _runner.show(request)
        else:
            await request.send()
    return time.perf_counter() - started


def _bare(prints: int) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        for n in range(prints):
            print(n)
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prints", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare = statistics.median(_bare(args.prints) for _ in range(args.repeats))
    print(f"{args.prints:,} prints; median of {args.repeats}; bare loop {bare * 1000:.0f} ms")
    print(f"{'tool':<6} {'no view ms':>11} {'shown ms':>9} {'shown/no view':>14} {'per print':>10}")
    for sync in (True, False):
        plain = statistics.median(
            [await _timed(args.prints, sync, False) for _ in range(args.repeats)]
        )
        shown = statistics.median(
            [await _timed(args.prints, sync, True) for _ in range(args.repeats)]
        )
        per = (shown - plain) / args.prints * 1e6
        print(
            f"{'sync' if sync else 'async':<6} {plain * 1000:>11.0f} {shown * 1000:>9.0f} "
            f"{shown / plain:>13.1f}x {per:>8.1f} µs"
        )


if __name__ == "__main__":
    asyncio.run(main())
