"""What a sub-agent call (``agent.as_tool``) adds over calling the same sub-agent's ``send()``.

Scenario: a one-turn sub-run (the analyst answers at once with a few words, an instant offline
model that keeps nothing between requests, so the thousandth run costs what the first does).
Three timings, interleaved many times (after a warm-up) so that the ratio holds on a noisy
machine, each run built afresh, the median of samples of :data:`BATCH` runs each (so that each
sample holds its share of the cycle collector's passes):

- ``direct``: ``await analyst.prompt(p).send()``, the sub-run alone (the yardstick);
- ``plain``: a lead run whose one tool call awaits ``analyst.prompt(p).send()`` itself (the
  same sub-run, with the same store);
- ``as_tool``: the same lead run calling ``analyst.as_tool()`` instead (``stream=True``: the
  sub-run's events reach the lead's stream and log; its interactions are adopted by the lead's
  run; with a store, it is stored under its parent).

The overhead of a sub-agent call is ``as_tool - plain`` (the same lead run, the same sub-run,
the same model kind), reported as a share of ``direct``; the target is at most 10 %. Both
settings are measured, side by side: runs kept in memory only (the store off) and a SQLite run
store (every run and sub-run stored).

    python benchmarks/subagent_overhead.py [--runs 4000] [--cpu] [--no-stream] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from anvia_notebook import AgentBuilder, create_tool
from anvia_notebook.models import ModelResponse, ToolCall
from anvia_notebook.models.base import CompletionModel, CompletionRequest

#: The sub-agent tool's ``stream`` (its events passed on to the lead's stream).
STREAM = True
#: The overhead a sub-agent call may add, as a share of the sub-run alone (issue 19).
TARGET = 0.10
#: The analyst's answer (streamed word by word, as a provider would).
ANSWER = "The west region grew fastest, by twelve percent over the quarter."


class InstantModel(CompletionModel):
    """An offline model that answers at once and keeps nothing (unlike ``FunctionModel``, which
    records every request: over thousands of runs that list makes later runs dearer)."""

    name = "instant-model"
    provider = "offline"

    def __init__(self, respond: Any) -> None:
        self.respond = respond

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        response: ModelResponse = self.respond(request)
        async for event in response.events():
            yield event


class AskInput(BaseModel):
    prompt: str


def build(store: Any) -> dict[str, Any]:
    analyst = AgentBuilder("analyst", InstantModel(lambda r: ModelResponse(text=ANSWER))).build()

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

    plain = AgentBuilder("lead", InstantModel(lead_model)).tool(plain_tool).build()
    nested = (
        AgentBuilder("lead", InstantModel(lead_model))
        .tool(analyst.as_tool(name="ask_analyst", stream=STREAM))
        .build()
    )

    async def direct_run() -> None:
        response = await analyst.prompt("which?").store(store).send()
        assert response.output == ANSWER

    async def plain_run() -> None:
        assert (await plain.prompt("go").store(store).send()).output == "done"

    async def nested_run() -> None:
        assert (await nested.prompt("go").store(store).send()).output == "done"

    return {"direct": direct_run, "plain": plain_run, "as_tool": nested_run}


#: Runs timed together as one sample: a run leaves garbage for the cycle collector, whose
#: passes (each about as long as a run) come every few runs; a sample of one run would be
#: either with one or without, and the median of such samples flips between the two.
BATCH = 20


async def measure(runs: int, store: Any, clock: Any) -> dict[str, float]:
    scenarios = build(store)
    samples: dict[str, list[float]] = {name: [] for name in scenarios}
    for run in scenarios.values():  # warm up
        for _ in range(30):
            await run()
    gc.collect()
    for _ in range(max(1, runs // BATCH)):
        for name, run in scenarios.items():
            start = clock()
            for _ in range(BATCH):
                await run()
            samples[name].append((clock() - start) / BATCH)
    medians = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    overhead = medians["as_tool"] - medians["plain"]
    return {
        **{f"{name}_us": round(value, 1) for name, value in medians.items()},
        "overhead_us": round(overhead, 1),
        "overhead_share_of_direct": round(overhead / medians["direct"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000, help="runs of each kind")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU clock (a machine shared with other work) instead of "
        "the wall clock",
    )
    parser.add_argument(
        "--no-stream",
        action="store_true",
        help="the sub-agent tool with stream=False (its events not passed on to the lead's)",
    )
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    global STREAM
    STREAM = not args.no_stream
    from anvia_notebook import RunStore

    clock = time.process_time if args.cpu else time.perf_counter
    figures: dict[str, dict[str, float]] = {}
    figures["store off"] = asyncio.run(measure(args.runs, None, clock))
    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(str(Path(folder) / "runs.sqlite"))
        figures["SQLite store"] = asyncio.run(measure(args.runs, store, clock))
        store.close()
    print(f"clock: {'CPU time of this process' if args.cpu else 'wall'}")
    keys = list(next(iter(figures.values())))
    print(f"{'runs: ' + str(args.runs):>26}  " + "  ".join(f"{s:>14}" for s in figures))
    for key in keys:
        print(f"{key:>26}  " + "  ".join(f"{figures[s][key]:>14}" for s in figures))
    for setting, values in figures.items():
        share = values["overhead_share_of_direct"]
        verdict = "within the target" if share <= TARGET else "over the target"
        print(
            f"{setting}: a sub-agent call adds {values['overhead_us']:.0f} us, {share:.1%} of a "
            f"one-turn sub-run ({values['direct_us']:.0f} us); {verdict} of at most {TARGET:.0%}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
