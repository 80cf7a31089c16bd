"""What a sub-agent call (``agent.as_tool``) adds over calling the same sub-agent's ``send()``.

Scenario: a one-turn sub-run (the analyst answers at once, an instant offline model). Three
timings, interleaved many times so that the ratio holds on a noisy machine:

- ``direct``: ``await analyst.prompt(p).send()``, the sub-run alone (the yardstick);
- ``plain``: a lead run whose one tool call awaits ``analyst.prompt(p).send()`` itself;
- ``as_tool``: the same lead run calling ``analyst.as_tool()`` instead (``stream=True``: the
  sub-run's events reach the lead's stream; its interactions are adopted by the lead's run).

The overhead of a sub-agent call is ``as_tool - plain`` (the same lead run, the same sub-run),
reported as a share of ``direct``; the target is at most 10 %. Runs are kept in memory (the
store off) unless ``--store`` gives a SQLite file, for both.

    python benchmarks/subagent_overhead.py [--runs 300] [--store PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

#: The sub-agent tool's ``stream`` (its events passed on to the lead's stream).
STREAM = True


class AskInput(BaseModel):
    prompt: str


def build(store: Any) -> dict[str, Any]:
    analyst = AgentBuilder(
        "analyst", FunctionModel(lambda request: ModelResponse(text="west grew fastest"))
    ).build()

    async def ask_directly(args: AskInput, ctx: Any) -> str:
        return (await analyst.prompt(args.prompt).store(store).send()).output

    plain_tool = create_tool(
        name="ask_analyst", description="Ask the analyst.", input=AskInput, execute=ask_directly
    )

    def lead_model(request: Any) -> ModelResponse:
        if request.messages[-1].role == "tool":
            return ModelResponse(text="done")
        return ModelResponse(
            tool_calls=[ToolCall(id="a1", name="ask_analyst", arguments={"prompt": "which?"})]
        )

    plain = AgentBuilder("lead", FunctionModel(lead_model)).tool(plain_tool).build()
    nested = (
        AgentBuilder("lead", FunctionModel(lead_model))
        .tool(analyst.as_tool(name="ask_analyst", stream=STREAM))
        .build()
    )

    async def direct_run() -> None:
        response = await analyst.prompt("which?").store(store).send()
        assert response.output == "west grew fastest"

    async def plain_run() -> None:
        assert (await plain.prompt("go").store(store).send()).output == "done"

    async def nested_run() -> None:
        assert (await nested.prompt("go").store(store).send()).output == "done"

    return {"direct": direct_run, "plain": plain_run, "as_tool": nested_run}


async def measure(runs: int, store: Any) -> dict[str, float]:
    scenarios = build(store)
    samples: dict[str, list[float]] = {name: [] for name in scenarios}
    for run in scenarios.values():  # warm up
        for _ in range(10):
            await run()
    for _ in range(runs):
        for name, run in scenarios.items():
            start = time.perf_counter()
            await run()
            samples[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    overhead = medians["as_tool"] - medians["plain"]
    return {
        **{f"{name}_us": round(value, 1) for name, value in medians.items()},
        "overhead_us": round(overhead, 1),
        "overhead_share_of_direct": round(overhead / medians["direct"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--store", default=None, help="a SQLite file (default: memory only)")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    store = None
    if args.store:
        from anvia_notebook import RunStore

        store = RunStore(args.store)
    figures = asyncio.run(measure(args.runs, store))
    for key, value in figures.items():
        print(f"{key:>26}: {value}")
    share = figures["overhead_share_of_direct"]
    print(f"a sub-agent call adds {share:.1%} of a one-turn sub-run (target: at most 10%)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
