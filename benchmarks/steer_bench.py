"""How fast a steered message reaches a run (issue 21's targets).

- store -> run: a run works (a tool waits); another connection to the store (as another process
  would) calls ``RunStore.steer``; timed until the run has taken the message into its state.
  Target: under 1 s (the store's watcher looks every 0.2 s).
- command line -> model: ``python -m anvia_notebook steer RUN_ID TEXT`` in a child process while
  the run's tool works; the tool's work ends as soon as the run has the message (so the figure is
  the way of the message, not the length of the tool's work), and the time is taken when the
  model's next request holds it. Timed from launching the command (Python's start-up and the
  command's imports included). Target: under 1 s. Beside it: from launching the command until the
  run has the message, from the command's write (the time stamped on its row) until the run has
  it, and the command's own CPU time (which is what stretches under load: on a busy machine a
  command that needs 0.25 s of CPU can take seconds).
  Each send waits a random part of the watcher's interval first (seeded), so that the samples fall
  anywhere between two of its looks, as a person's do.
- in the process (the widget's ``steer`` message ends in ``run.steer``): the model call that first
  sees the message, counted in turns after the one that was going. Target: the next one (1).

    python benchmarks/steer_bench.py [--samples 10] [--postgres] [--json out.json]

Exits non-zero only when the benchmark itself breaks, never because a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
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
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))  # postgres_server
sys.path.insert(0, str(ROOT))  # anvia_notebook, when not installed

from anvia_notebook import AgentBuilder, RunStore, create_tool  # noqa: E402
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall  # noqa: E402
from anvia_notebook.store._store import POLL_INTERVAL  # noqa: E402

TARGET_MS = 1000.0
_phase = random.Random(21)
STEERED = "from the terminal"


class WaitInput(BaseModel):
    step: int


def _figures(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)
    return {"n": len(ordered), "median_ms": statistics.median(ordered), "max_ms": ordered[-1]}


class _Scripted:
    """A run whose first turn calls ``wait`` (a tool that works until ``release`` is set), and
    whose model notes when a request first holds the steered message."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.seen_at: float | None = None

    def agent(self) -> Any:
        async def wait(args: WaitInput, ctx: Any) -> str:
            self.started.set()
            await self.release.wait()
            return "done"

        def script(request: Any) -> ModelResponse:
            if self.seen_at is None and any(
                m.role == "user" and m.content in (STEERED, "in the process")
                for m in request.messages
            ):
                self.seen_at = time.perf_counter()
            if request.messages[-1].role == "user" and len(request.messages) == 1:
                call = ToolCall(id="w", name="wait", arguments={"step": 1})
                return ModelResponse(tool_calls=[call])
            return ModelResponse(text="ok")

        tool = create_tool(name="wait", description="Wait.", input=WaitInput, execute=wait)
        return AgentBuilder("bench", FunctionModel(script)).tool(tool).build()


async def _taken(run: Any, count: int) -> float:
    # (no event tells that a message was queued: the run's state is looked at every 2 ms)
    while len(run.state.steered_ids) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.002)
    return time.perf_counter()


def _python_path() -> list[str]:
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _from_store(location: str) -> float:
    """ms from ``RunStore.steer`` in another connection until the run has the message."""
    store, other = RunStore(location), RunStore(location)
    scripted = _Scripted()
    run = scripted.agent().prompt("go").store(store).start()
    await scripted.started.wait()
    await asyncio.sleep(_phase.uniform(0, POLL_INTERVAL))
    try:
        begin = time.perf_counter()
        await asyncio.to_thread(other.steer, run.run_id, "from another process")
        return (await _taken(run, 1) - begin) * 1000
    finally:
        scripted.release.set()
        await run.wait()
        other.close()
        store.close()


async def _from_command_line(location: str) -> dict[str, float]:
    """One launch of the steer command: ms until the model sees the message, until the run has
    it (from the launch and from the command's write), and the command's CPU time."""
    store, other = RunStore(location), RunStore(location)
    scripted = _Scripted()
    run = scripted.agent().prompt("go").store(store).start()
    await scripted.started.wait()
    await asyncio.sleep(_phase.uniform(0, POLL_INTERVAL))
    try:
        cpu_before = _children_cpu()
        begin = time.perf_counter()
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "anvia_notebook",
            "--store",
            location,
            "steer",
            run.run_id,
            STEERED,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *_python_path()])},
        )
        taken = await _taken(run, 1)
        taken_at = time.time()
        scripted.release.set()  # the tool's work ends: the message goes to the model next
        await run.wait()
        assert scripted.seen_at is not None, "the model never saw the steered message"
        if await child.wait() != 0:
            raise RuntimeError("the steer command failed")
        cpu = _children_cpu() - cpu_before
        [(written,)] = other._q("SELECT created_at FROM steering WHERE run_id = ?", (run.run_id,))
        after_write = max(0.0, taken_at - datetime.fromisoformat(written).timestamp())
        return {
            "model_sees": (scripted.seen_at - begin) * 1000,
            "run_has_it": (taken - begin) * 1000,
            "after_write": after_write * 1000,
            "command_cpu": cpu * 1000,
        }
    finally:
        scripted.release.set()
        await run.wait()
        other.close()
        store.close()


async def _turns() -> int:
    """The model call that first sees a message steered while a tool runs, after that one."""
    scripted = _Scripted()
    run = scripted.agent().prompt("go").store(None).start()
    await scripted.started.wait()
    turn_then = run.state.turn
    run.steer("in the process")
    scripted.release.set()
    await run.wait()
    [event] = [e for e in run.events if e.type == "steering_message"]
    return int(event.turn - turn_then)


async def _main(samples: int, locations: dict[str, str]) -> dict[str, Any]:
    report: dict[str, Any] = {"target_ms": TARGET_MS, "turns_to_the_model": await _turns()}
    for name, location in locations.items():
        store_times = [await _from_store(location) for _ in range(samples)]
        launches = [await _from_command_line(location) for _ in range(samples)]
        report[name] = {
            "store_to_run": _figures(store_times),
            "command_launch_to_model_sees": _figures([c["model_sees"] for c in launches]),
            "command_launch_to_run_has_it": _figures([c["run_has_it"] for c in launches]),
            "command_write_to_run_has_it": _figures([c["after_write"] for c in launches]),
            "command_cpu": _figures([c["command_cpu"] for c in launches]),
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
    turns = report["turns_to_the_model"]
    print(f"in the process: the model sees a steered message {turns} turn(s) later (target: 1)")
    for name in locations:
        figures = report[name]
        for label, key in (
            ("store -> run has it", "store_to_run"),
            ("command launch -> model sees it", "command_launch_to_model_sees"),
        ):
            median = figures[key]["median_ms"]
            verdict = "within" if median < TARGET_MS else "OVER"
            print(
                f"{name}: {label}: median {median:.0f} ms of {figures[key]['n']} "
                f"(max {figures[key]['max_ms']:.0f}; {verdict} the {TARGET_MS:.0f} ms target)"
            )
        print(
            f"{name}: command launch -> run has it: median "
            f"{figures['command_launch_to_run_has_it']['median_ms']:.0f} ms; its write -> run has "
            f"it: {figures['command_write_to_run_has_it']['median_ms']:.0f} ms; the command's CPU: "
            f"{figures['command_cpu']['median_ms']:.0f} ms"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
