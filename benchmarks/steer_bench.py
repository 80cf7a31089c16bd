"""How fast a steered message reaches a run (issue 21's targets).

- store -> run: a run works (a tool waits); another connection to the store (as another process
  would) calls ``RunStore.steer``; timed until the run has taken the message into its state.
  Target: under 1 s (the store's watcher looks every 0.2 s).
- command line -> run: ``python -m anvia_notebook steer RUN_ID TEXT`` in a child process, timed
  until the run has the message: from the command's start (Python's start-up and imports
  included) and from the moment it wrote the message (the time stamped on its row).
- in the process (the widget's ``steer`` message ends in ``run.steer``): the model call that first
  sees the message, counted in turns after the one that was going. Target: the next one (1).

    python benchmarks/steer_bench.py [--samples 10] [--postgres] [--json out.json]

Exits non-zero only when the benchmark itself breaks, never because a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from anvia_notebook import AgentBuilder, RunStore, create_tool  # noqa: E402
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall  # noqa: E402

TARGET_MS = 1000.0


class WaitInput(BaseModel):
    step: int


def _figures(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)
    return {"n": len(ordered), "median_ms": statistics.median(ordered), "max_ms": ordered[-1]}


def _agent(started: asyncio.Event, release: asyncio.Event) -> Any:
    async def wait(args: WaitInput, ctx: Any) -> str:
        started.set()
        await release.wait()
        return "done"

    def script(request: Any) -> ModelResponse:
        if request.messages[-1].role == "user" and len(request.messages) == 1:
            return ModelResponse(tool_calls=[ToolCall(id="w", name="wait", arguments={"step": 1})])
        return ModelResponse(text="ok")

    tool = create_tool(name="wait", description="Wait.", input=WaitInput, execute=wait)
    return AgentBuilder("bench", FunctionModel(script)).tool(tool).build()


async def _taken(run: Any, count: int) -> float:
    # (no event tells that a message was queued: the run's state is looked at every 2 ms)
    while len(run.state.steered_ids) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.002)
    return time.perf_counter()


async def _one(location: str, cli: bool) -> tuple[float, float | None]:
    """(ms from the send to the run having it, ms from the command's end) for one sample."""
    store = RunStore(location)
    other = RunStore(location)
    started, release = asyncio.Event(), asyncio.Event()
    run = _agent(started, release).prompt("go").store(store).start()
    await started.wait()
    try:
        if cli:
            begin = time.perf_counter()
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "anvia_notebook",
                "--store",
                location,
                "steer",
                run.run_id,
                "from the terminal",
                stdout=subprocess.DEVNULL,
            )
            taken = await _taken(run, 1)
            taken_at = time.time()
            await child.wait()
            # From the message's write (the time the command stamped on its row) to the run.
            [(written,)] = other._q(
                "SELECT created_at FROM steering WHERE run_id = ?", (run.run_id,)
            )
            after_write = taken_at - datetime.fromisoformat(written).timestamp()
            return (taken - begin) * 1000, max(0.0, after_write) * 1000
        begin = time.perf_counter()
        await asyncio.to_thread(other.steer, run.run_id, "from another process")
        taken = await _taken(run, 1)
        return (taken - begin) * 1000, None
    finally:
        release.set()
        await run.wait()
        other.close()
        store.close()


async def _turns() -> int:
    """The model call that first sees a message steered while a tool runs, after that one."""
    started, release = asyncio.Event(), asyncio.Event()
    run = _agent(started, release).prompt("go").store(None).start()
    await started.wait()
    turn_then = run.state.turn
    run.steer("in the process")
    release.set()
    await run.wait()
    [event] = [e for e in run.events if e.type == "steering_message"]
    return int(event.turn - turn_then)


async def _main(samples: int, locations: dict[str, str]) -> dict[str, Any]:
    report: dict[str, Any] = {"target_ms": TARGET_MS, "turns_to_the_model": await _turns()}
    for name, location in locations.items():
        store_times = [(await _one(location, cli=False))[0] for _ in range(samples)]
        cli_runs = [await _one(location, cli=True) for _ in range(max(1, samples // 2))]
        report[name] = {
            "store_to_run": _figures(store_times),
            "command_line_to_run_from_start": _figures([c[0] for c in cli_runs]),
            "command_line_to_run_after_its_write": _figures([c[1] or 0.0 for c in cli_runs]),
        }
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--postgres", action="store_true", help="also on a PostgreSQL server")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="anvia-steer-bench-"))
    locations = {"sqlite": str(folder / "runs.sqlite")}
    server = None
    if args.postgres:
        from postgres_server import running_postgres

        server = running_postgres()
        locations["postgresql"] = server.__enter__()
    try:
        report = asyncio.run(_main(args.samples, locations))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    print(json.dumps(report, indent=2))
    for name in locations:
        median = report[name]["store_to_run"]["median_ms"]
        verdict = "within" if median < TARGET_MS else "OVER"
        print(
            f"{name}: store -> run median {median:.0f} ms ({verdict} the {TARGET_MS:.0f} ms target)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
