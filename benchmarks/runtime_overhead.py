"""Per-turn overhead of the run loop, side by side with pydantic-ai, plus import time.

Scenario: 10 turns, one tool call per turn, then a final answer; a fake model with no delay;
the tool adds two numbers. Both runtimes run the same scenario in the same process, many times,
interleaved, so the ratio holds on a noisy machine.

Import time: the runtime's import (``from anvia_notebook import AgentBuilder, ...``, a first
cell's: ``import anvia_notebook`` alone loads nothing until a name is used) side by side with a
program that defines and uses one pydantic model (the yardstick: our target is under 2x), each
in fresh interpreters, with the bytecode compiled (as after ``pip install``) and from source.

    python benchmarks/runtime_overhead.py [--runs 200] [--import-runs 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

TURNS = 10


def build_anvia(async_tool: bool) -> Any:
    from pydantic import BaseModel

    from anvia_notebook import AgentBuilder, create_tool
    from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

    class AddInput(BaseModel):
        x: int
        y: int

    if async_tool:

        async def add(args: AddInput, ctx: Any) -> int:
            return args.x + args.y
    else:

        def add(args: AddInput, ctx: Any) -> int:  # type: ignore[misc]
            return args.x + args.y

    tool = create_tool(name="add", description="Add two numbers.", input=AddInput, execute=add)

    def model_fn(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < TURNS:
            return ModelResponse(
                tool_calls=[ToolCall(id=f"c{done}", name="add", arguments={"x": done, "y": 1})]
            )
        return ModelResponse(text="done")

    agent = AgentBuilder("bench", FunctionModel(model_fn)).tool(tool).build()

    async def run() -> None:
        response = await agent.prompt("go").send()
        assert response.output == "done"

    return run


def build_pydantic_ai(async_tool: bool) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        done = sum(
            1 for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        )
        if done < TURNS:
            return ModelResponse(
                parts=[ToolCallPart("add", {"x": done, "y": 1}, tool_call_id=f"c{done}")]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model_fn))

    if async_tool:

        @agent.tool_plain
        async def add(x: int, y: int) -> int:
            """Add two numbers."""
            return x + y
    else:

        @agent.tool_plain
        def add(x: int, y: int) -> int:  # type: ignore[misc]
            """Add two numbers."""
            return x + y

    async def run() -> None:
        result = await agent.run("go")
        assert result.output == "done"

    return run


async def measure(run: Any, repeats: int) -> list[float]:
    for _ in range(5):
        await run()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        await run()
        samples.append((time.perf_counter() - start) / TURNS)
    return samples


async def compare(runs: int, async_tool: bool) -> dict[str, float]:
    ours, theirs = build_anvia(async_tool), build_pydantic_ai(async_tool)
    ours_samples: list[float] = []
    theirs_samples: list[float] = []
    for _ in range(max(1, runs // 20)):  # interleave in blocks of 20
        ours_samples += await measure(ours, 20)
        theirs_samples += await measure(theirs, 20)
    ours_us = statistics.median(ours_samples) * 1e6
    theirs_us = statistics.median(theirs_samples) * 1e6
    return {
        "anvia_us_per_turn": ours_us,
        "pydantic_ai_us_per_turn": theirs_us,
        "ratio": theirs_us / ours_us,
    }


#: The yardstick for import time: a program that defines and uses one pydantic model.
#: The import a notebook's first cell makes (the package imports each name on first use).
RUNTIME_IMPORT = (
    "from anvia_notebook import AgentBuilder, Message, ToolApproval, create_hook, create_tool"
)
ONE_MODEL_PROGRAM = (
    "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\nM(x=1)\nM(x=1).model_dump()"
)


def _child_env(bytecode_cache: str | None) -> dict[str, str]:
    """The environment of a measured interpreter. With ``bytecode_cache`` (a folder), compiled
    modules are cached there, as after ``pip install`` (which compiles them): what a user's
    notebook pays; without it, every module is compiled from source at each start."""
    env = dict(os.environ)
    if bytecode_cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = bytecode_cache
    return env


def _run_child(code: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU time (user + system) of a fresh interpreter running ``code``, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


def import_versus_pydantic(
    repeats: int = 15, bytecode_cache: str | None = None
) -> dict[str, float]:
    """The runtime's import (:data:`RUNTIME_IMPORT`) against the one-model pydantic program.

    Each is started ``repeats`` times, interleaved (so a busy machine slows both alike); the
    figures are medians of the whole process (interpreter start included), wall and CPU time.
    """
    env = _child_env(bytecode_cache)
    programs = {"anvia_notebook": RUNTIME_IMPORT, "pydantic": ONE_MODEL_PROGRAM}
    for code in programs.values():  # warm the file cache (and the bytecode cache)
        _run_child(code, env)
    walls: dict[str, list[float]] = {name: [] for name in programs}
    cpus: dict[str, list[float]] = {name: [] for name in programs}
    for _ in range(repeats):
        for name, code in programs.items():
            wall, cpu = _run_child(code, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    figures = {}
    for name in programs:
        figures[f"{name}_wall_ms"] = statistics.median(walls[name])
        figures[f"{name}_cpu_ms"] = statistics.median(cpus[name])
    figures["wall_ratio"] = figures["anvia_notebook_wall_ms"] / figures["pydantic_wall_ms"]
    figures["cpu_ratio"] = figures["anvia_notebook_cpu_ms"] / figures["pydantic_cpu_ms"]
    return figures


def import_time(statement: str, repeats: int = 5) -> float:
    """Median wall time of a fresh import ``statement``, in ms (a new interpreter each time)."""
    code = f"import time; t=time.perf_counter(); {statement}; print(time.perf_counter()-t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return statistics.median(times) * 1000


def importtime_top(statement: str, top: int = 5) -> list[tuple[str, int]]:
    """The slowest imports (cumulative µs) from `python -X importtime -c statement`."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    rows = []
    for line in out.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((name.strip(), int(cumulative)))
    return sorted(rows, key=lambda row: -row[1])[:top]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="runs per runtime (default 200)")
    parser.add_argument(
        "--import-runs", type=int, default=15, help="interpreters started per import figure"
    )
    parser.add_argument("--json", help="write the figures to this JSON file")
    args = parser.parse_args()

    results: dict[str, Any] = {}
    print(f"Run loop overhead: {TURNS} turns, one tool call per turn, fake model,", end=" ")
    print(f"{args.runs} runs each\n")
    print(f"{'tool kind':<12} {'anvia_notebook':>16} {'pydantic-ai':>14} {'ratio':>8}")
    for label, async_tool in (("async tool", True), ("sync tool", False)):
        figures = asyncio.run(compare(args.runs, async_tool))
        results[label] = figures
        ours, theirs = figures["anvia_us_per_turn"], figures["pydantic_ai_us_per_turn"]
        print(f"{label:<12} {ours:>12.1f} µs {theirs:>11.1f} µs {figures['ratio']:>7.1f}x")
    print(
        f"\n{RUNTIME_IMPORT}\nvs a one-model pydantic program (fresh interpreter, median of "
        f"{args.import_runs}, interleaved):"
    )
    print(f"{'':<26} {'anvia_notebook':>16} {'pydantic':>10} {'ratio':>7}")
    results["import_vs_pydantic"] = {}
    with tempfile.TemporaryDirectory(prefix="anvia-bench-pycache-") as cache:
        for label, folder in (("compiled (as installed)", cache), ("from source", None)):
            figures = import_versus_pydantic(args.import_runs, folder)
            results["import_vs_pydantic"][label] = figures
            for kind in ("wall", "cpu"):
                ours = figures[f"anvia_notebook_{kind}_ms"]
                theirs = figures[f"pydantic_{kind}_ms"]
                print(
                    f"  {label + ', ' + kind:<24} {ours:>13.1f} ms {theirs:>7.1f} ms "
                    f"{figures[f'{kind}_ratio']:>6.2f}x"
                )
    print("\nImport time (fresh interpreter, median of 5):")
    results["import_ms"] = {}
    statements = {
        "anvia_notebook": RUNTIME_IMPORT,
        "pydantic_ai": "import pydantic_ai",
        "openai": "import openai",
    }
    for module, statement in statements.items():
        ms = import_time(statement)
        results["import_ms"][module] = ms
        print(f"  {module:<16} {ms:7.1f} ms  ({statement})")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; {RUNTIME_IMPORT}; print([m for m in "
            "('openai', 'anthropic', 'IPython', 'ipykernel') if m in sys.modules])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    results["heavy_modules_loaded_by_import"] = loaded
    print(f"  openai/anthropic/IPython/ipykernel loaded by the runtime's import: {loaded}")
    print("  slowest imports under `python -X importtime` of the runtime's import (cumulative):")
    for name, us in importtime_top(RUNTIME_IMPORT):
        print(f"    {name:<40} {us / 1000:7.1f} ms")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
