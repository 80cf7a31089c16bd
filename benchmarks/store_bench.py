"""What durable runs cost: the run store's overhead, what finished runs keep in memory, resume.

No browser and no kernel (the browser benchmark measures streaming with the store on, the
default). Figures, side by side:

1. run-loop overhead, store off vs on (SQLite in a temporary folder): 10 turns with one async
   tool call each and a final answer, a model with no delay, medians per turn, interleaved;
   target: the store adds at most 10 %;
2. memory of 200 finished runs of 500 text deltas each, each shown (a transcript session
   attached, as ``show()`` does) and kept alive (as a notebook keeps its outputs' handles);
   target: at most 10 MB in all (Python allocations, ``tracemalloc``);
3. what a finished 20,000-delta run keeps (its handle alive): target at most 3x its text;
4. resuming a stored run of 1,000 transcript entries until its view's snapshot is ready (what
   a fresh widget asks for first); target under 1 s.

    python benchmarks/store_bench.py [--runs 200] [--rounds 1] [--only overhead] [--json out.json]

``--rounds N`` repeats part 1 N times and prints each round and the range (the figures of a busy
machine drift; a range says more than one median). Part 1 reports three clocks: wall time, the
run loop's own CPU time (its thread), and the process's CPU time (every thread, the store's
background thread included, so work moved off the run's thread is still counted).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, RunStore, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, TextDelta, ToolCall
from anvia_notebook.notebook._session import TranscriptSession

TURNS = 10


class AddInput(BaseModel):
    x: int
    y: int


async def _add(args: AddInput, ctx: Any) -> int:
    return args.x + args.y


ADD = create_tool(name="add", description="Add two numbers.", input=AddInput, execute=_add)


def _tool_model(turns: int) -> FunctionModel:
    def model_fn(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < turns:
            return ModelResponse(
                text=f"step {done}",
                tool_calls=[ToolCall(id=f"c{done}", name="add", arguments={"x": done, "y": 1})],
            )
        return ModelResponse(text="done")

    return FunctionModel(model_fn)


# -- 1. overhead ------------------------------------------------------------------------------


def overhead(runs: int, folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    agent = AgentBuilder("bench", _tool_model(TURNS)).tool(ADD).build()
    store = RunStore(folder / "overhead.sqlite")

    async def once(with_store: bool) -> tuple[float, float, float]:
        request = agent.prompt("go").store(store if with_store else None)
        started, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
        response = await request.send()
        elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
        process = time.process_time() - process
        assert response.output == "done"
        return elapsed / TURNS * 1e6, cpu / TURNS * 1e6, process / TURNS * 1e6

    async def main() -> dict[str, list[tuple[float, float, float]]]:
        samples: dict[str, list[tuple[float, float, float]]] = {"off": [], "on": []}
        for _ in range(20):  # warm up both paths
            await once(False)
            await once(True)
        for _ in range(runs):
            samples["off"].append(await once(False))
            samples["on"].append(await once(True))
        return samples

    samples = asyncio.run(main())
    off, on = (statistics.median(s[0] for s in samples[side]) for side in ("off", "on"))
    # The run loop's own CPU time (this thread: Python, SQLite and its system calls), which
    # other work on a busy machine disturbs less than the wall clock.
    cpu_off, cpu_on = (statistics.median(s[1] for s in samples[side]) for side in ("off", "on"))
    # The whole process's CPU time (the store's background thread included).
    all_off, all_on = (statistics.median(s[2] for s in samples[side]) for side in ("off", "on"))
    store.close()
    return {
        "per_turn_us_off": off,
        "per_turn_us_on": on,
        "ratio": on / off,
        "cpu_us_off": cpu_off,
        "cpu_us_on": cpu_on,
        "cpu_ratio": cpu_on / cpu_off,
        "process_cpu_us_off": all_off,
        "process_cpu_us_on": all_on,
        "process_cpu_ratio": all_on / all_off,
    }


# -- 2. and 3. memory -------------------------------------------------------------------------


def _stream_agent(deltas: int) -> Any:
    """Streams ``deltas`` word-sized pieces, each a new string (as a provider's would be)."""

    async def model(_request: Any) -> Any:
        for index in range(deltas):
            yield TextDelta(delta=f"word{index % 97} ")

    text = "".join(f"word{index % 97} " for index in range(deltas))
    return AgentBuilder("bench", FunctionModel(model)).build(), text


async def _shown_run(agent: Any, store: RunStore | None) -> Any:
    request = agent.prompt("Stream, please.").store(store)
    run = request.create_run()
    session = TranscriptSession(agent_id="bench", loop=asyncio.get_running_loop())
    session.attach(run)
    run.start()
    await run.wait()
    await asyncio.sleep(0)
    session.set_loop(None)
    return run, session


def memory_of_many(runs: int, deltas: int, store: RunStore | None) -> float:
    agent, _ = _stream_agent(deltas)

    async def main() -> list[Any]:
        kept = []
        for _ in range(runs):
            kept.append(await _shown_run(agent, store))
        return kept

    asyncio.run(_shown_run_once(agent, store))  # imports and caches before measuring
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = asyncio.run(main())
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del kept
    return grown / 1e6


async def _shown_run_once(agent: Any, store: RunStore | None) -> None:
    await _shown_run(agent, store)


def memory_of_one(deltas: int, store: RunStore | None) -> dict[str, float]:
    agent, text = _stream_agent(deltas)
    asyncio.run(_shown_run_once(agent, store))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = asyncio.run(_shown_run(agent, store))
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del kept
    return {"text_bytes": len(text), "kept_bytes": grown, "ratio": grown / len(text)}


# -- 4. resume --------------------------------------------------------------------------------


def resume_time(entries: int, folder: Path) -> dict[str, float]:
    """A stored run with ``entries`` transcript entries (assistant text + tool per turn), cut
    off before its last model call, resumed until the snapshot a new view asks for is ready."""
    turns = entries // 2
    path = folder / "resume.sqlite"
    store = RunStore(path)
    stop_at = turns

    def model_fn(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < stop_at:
            return ModelResponse(
                text=f"step {done}",
                tool_calls=[ToolCall(id=f"c{done}", name="add", arguments={"x": done, "y": 1})],
            )
        raise RuntimeError("the kernel stopped here")

    agent = AgentBuilder("bench", FunctionModel(model_fn)).tool(ADD).default_max_turns(turns + 5)
    built = agent.build()
    request = built.prompt("go").store(store)
    with contextlib.suppress(RuntimeError):  # the model "stops" the kernel
        asyncio.run(request.send())
    run_id = request._run.run_id  # type: ignore[union-attr]
    # As if the process had died while running: still "running", its owner gone.
    store._q(
        "UPDATE runs SET status = 'running', owner_host = 'gone', owner_pid = 1, "
        "heartbeat_at = 0 WHERE run_id = ?",
        (run_id,),
    )
    resumed_agent = AgentBuilder("bench", FunctionModel(lambda r: "done")).tool(ADD).build()

    async def main() -> tuple[float, int]:
        started = time.perf_counter()
        resumed = resumed_agent.resume(run_id, RunStore(path)).max_turns(turns + 5)
        run = resumed.create_run()
        session = TranscriptSession(agent_id="bench", loop=asyncio.get_running_loop())
        session.attach(run)
        snapshot = json.dumps(session.state())
        elapsed = time.perf_counter() - started
        run.start()
        await run.wait()
        return elapsed * 1e3, len(session.transcript.entries), len(snapshot)

    ms, shown, size = asyncio.run(main())
    return {"entries": shown, "ms_to_snapshot": ms, "snapshot_kb": size / 1e3}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="overhead samples per side")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of part 1")
    parser.add_argument("--only", choices=["overhead"], help="run part 1 only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="anvia-store-bench-"))
    os.environ["ANVIA_NOTEBOOK_STORE"] = str(folder / "default.sqlite")
    results: dict[str, Any] = {}

    print("1. Run-loop overhead, 10 turns with one async tool call each (medians per turn)")
    rounds = []
    for index in range(max(args.rounds, 1)):
        rounds.append(o := overhead(args.runs, folder / f"round{index}"))
        print(
            f"   store off {o['per_turn_us_off']:.0f} us | store on (SQLite) "
            f"{o['per_turn_us_on']:.0f} us | ratio {o['ratio']:.2f}x (target <= 1.10x)"
        )
        print(
            f"   CPU time of the run loop: store off {o['cpu_us_off']:.0f} us | store on "
            f"{o['cpu_us_on']:.0f} us | ratio {o['cpu_ratio']:.2f}x; of the process (every "
            f"thread): {o['process_cpu_us_off']:.0f} us | {o['process_cpu_us_on']:.0f} us | "
            f"ratio {o['process_cpu_ratio']:.2f}x"
        )
    results["overhead"] = rounds[0] if len(rounds) == 1 else rounds
    if len(rounds) > 1:
        for key, label in (
            ("ratio", "wall"),
            ("cpu_ratio", "CPU (run loop)"),
            ("process_cpu_ratio", "CPU (process)"),
        ):
            low, high = min(r[key] for r in rounds), max(r[key] for r in rounds)
            print(f"   {label} ratio over {len(rounds)} rounds: {low:.2f}x-{high:.2f}x")
    if args.only == "overhead":
        return _write(args.json, results)
    store = RunStore(folder / "memory.sqlite")

    print("2. Memory of 200 shown, finished runs of 500 deltas each (kept alive)")
    results["many_runs_mb"] = many = {
        "store_off": memory_of_many(200, 500, None),
        "store_on": memory_of_many(200, 500, store),
    }
    print(
        f"   store off {many['store_off']:.1f} MB | store on {many['store_on']:.1f} MB "
        "(target <= 10 MB)"
    )

    print("3. What one finished 20,000-delta run keeps (handle alive)")
    results["one_run"] = one = {
        "store_off": memory_of_one(20_000, None),
        "store_on": memory_of_one(20_000, store),
    }
    for side in ("store_off", "store_on"):
        figures = one[side]
        print(
            f"   {side.replace('_', ' ')}: text {figures['text_bytes'] / 1e3:.0f} KB, kept "
            f"{figures['kept_bytes'] / 1e3:.0f} KB = {figures['ratio']:.2f}x (target <= 3x)"
        )

    print("4. Resume a stored run of 1,000 transcript entries until its view's snapshot is ready")
    results["resume"] = r = resume_time(1000, folder)
    print(
        f"   {r['entries']} entries, {r['ms_to_snapshot']:.0f} ms, snapshot "
        f"{r['snapshot_kb']:.0f} KB (target < 1000 ms)"
    )
    return _write(args.json, results)


def _write(path: Path | None, results: dict[str, Any]) -> int:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
