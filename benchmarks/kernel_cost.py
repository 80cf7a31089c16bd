"""Kernel-side CPU per text delta: our transcript machinery against the floor and the usual way.

No browser and no kernel: the same 20,000 word-sized deltas go through

- ``ours``: ``Transcript.text_delta`` (what a run calls per text delta for a view) + ``Batcher``
  (a batch every 100 deltas, i.e. every 50 ms at 2,000 tokens/s), the batch JSON-encoded as the
  comm would send it;
- ``floor``: the deltas buffered in a list, joined and JSON-encoded every 100 deltas;
- ``naive``: the whole text re-encoded as Markdown display data on every delta
  (``handle.update(Markdown(text))``); O(length) per delta;
- ``run loop``: a whole run (``FunctionModel`` streaming the deltas) with no view, and the same
  run with our ``TranscriptSession`` attached (its widget's comm is a no-op outside a kernel);
- ``model``: the same model's stream read by a bare ``async for``, so that what the run and the
  view add per delta can be told apart from what the model costs. The model yields each delta as
  a plain string (the cheapest text delta); ``--text-delta-objects`` makes it yield a
  ``TextDelta`` per delta instead (about 1 µs more per delta, the pydantic object).

The run store is whatever ``ANVIA_NOTEBOOK_STORE`` says (the default store, or ``off``).

    python benchmarks/kernel_cost.py [--deltas 20000] [--repeats 7] [--json out.json]
    python benchmarks/kernel_cost.py --profile out.txt   # pyinstrument profile of ``ours``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_kernel import deltas as stream_deltas

from anvia_notebook import AgentBuilder
from anvia_notebook.events import TurnStartEvent
from anvia_notebook.models import FunctionModel, TextDelta
from anvia_notebook.notebook._batcher import Batcher
from anvia_notebook.notebook._transcript import Transcript

#: Deltas per batch: 50 ms at 2,000 tokens/s.
PER_BATCH = 100


def pieces(count: int) -> list[str]:
    """The browser benchmark's deltas (its words, a paragraph every 50 words)."""
    return stream_deltas(count, "The end.")


def ours(deltas: list[str]) -> Callable[[], None]:
    loop = asyncio.new_event_loop()  # bound, never run: the timer and clock checks count too

    def run() -> None:
        batcher = Batcher(lambda message: json.dumps(message))
        batcher.bind(loop)
        transcript = Transcript("bench", emit=batcher.push, append=batcher.append)
        transcript.begin_run("run", "bench", "Stream, please.")
        transcript.apply(TurnStartEvent(turn=1))
        text_delta = transcript.text_delta
        for index, delta in enumerate(deltas, 1):
            text_delta(1, delta)
            if index % PER_BATCH == 0:
                batcher.flush()
        batcher.flush()

    return run


def floor(deltas: list[str]) -> Callable[[], None]:
    def run() -> None:
        buffer: list[str] = []
        for index, delta in enumerate(deltas, 1):
            buffer.append(delta)
            if index % PER_BATCH == 0:
                json.dumps({"text": "".join(buffer)})
                buffer.clear()
        json.dumps({"text": "".join(buffer)})

    return run


def naive(deltas: list[str]) -> Callable[[], None]:
    from IPython.display import Markdown

    def run() -> None:
        text = ""
        for delta in deltas:
            text += delta
            data = {"text/markdown": Markdown(text)._repr_markdown_()}
            json.dumps({"data": data, "metadata": {}, "transient": {"display_id": "x"}})

    return run


#: Whether the benchmark's model yields ``TextDelta`` objects instead of plain strings.
OBJECTS = {"on": False}


def _model(deltas: list[str]) -> FunctionModel:
    async def strings(_request: Any) -> Any:
        for delta in deltas:
            yield delta

    async def objects(_request: Any) -> Any:
        for delta in deltas:
            yield TextDelta(delta=delta)

    return FunctionModel(objects if OBJECTS["on"] else strings)


def model_only(deltas: list[str]) -> Callable[[], None]:
    model = _model(deltas)

    async def main() -> None:
        async for _event in model.stream(None):  # type: ignore[arg-type]  # not read
            pass

    return lambda: asyncio.run(main())


def run_loop(deltas: list[str], with_session: bool) -> Callable[[], None]:
    agent = AgentBuilder("bench", _model(deltas)).build()

    async def main() -> None:
        request = agent.prompt("Stream, please.")
        run = request.create_run()
        if with_session:
            from anvia_notebook.notebook._session import TranscriptSession

            session = TranscriptSession(agent_id="bench", loop=asyncio.get_running_loop())
            session.attach(run)
        run.start()
        await run.wait()

    return lambda: asyncio.run(main())


def per_delta_us(fn: Callable[[], None], count: int, repeats: int) -> dict[str, float]:
    """Median and min of wall time per delta (µs) over ``repeats`` runs (one warm-up first)."""
    fn()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) / count * 1e6)
    return {"median_us": statistics.median(samples), "min_us": min(samples)}


def measure(count: int, repeats: int, naive_count: int) -> dict[str, Any]:
    deltas = pieces(count)
    variants = {
        "ours": ours(deltas),
        "floor": floor(deltas),
        "model": model_only(deltas),
        "run_loop": run_loop(deltas, False),
        "run_loop_with_transcript": run_loop(deltas, True),
    }
    # Interleaved, so that a noisy moment hits every variant alike.
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            samples[name].append(per_delta_us(fn, count, 1)["median_us"])
    results: dict[str, Any] = {"deltas": count, "repeats": repeats, "per_batch": PER_BATCH}
    for name, values in samples.items():
        results[name] = {"median_us": statistics.median(values), "min_us": min(values)}
    # What the run (and the view) add to the model's own cost, per delta.
    for name in ("run_loop", "run_loop_with_transcript"):
        added = [run - model for run, model in zip(samples[name], samples["model"], strict=True)]
        results[f"{name}_minus_model"] = {
            "median_us": statistics.median(added),
            "min_us": min(added),
        }
    results["naive"] = {
        "deltas": naive_count,
        **per_delta_us(naive(pieces(naive_count)), naive_count, 1),
    }
    return results


def profile(count: int, out: Path) -> None:
    from pyinstrument import Profiler

    fn = ours(pieces(count))
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(5):
        fn()
    profiler.stop()
    out.write_text(profiler.output_text(unicode=True, show_all=False))
    print(f"profile written to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--naive-deltas", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--text-delta-objects", action="store_true", help="the model yields TextDelta objects"
    )
    parser.add_argument("--json", type=Path, help="write the figures here ('-': stdout)")
    parser.add_argument("--profile", type=Path, help="write a pyinstrument profile of 'ours'")
    args = parser.parse_args(argv)
    OBJECTS["on"] = args.text_delta_objects
    if args.profile:
        profile(args.deltas, args.profile)
        return 0
    results = measure(args.deltas, args.repeats, args.naive_deltas)
    if args.json and str(args.json) == "-":
        print(json.dumps(results))
        return 0
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    names = ("ours", "floor", "naive", "model", "run_loop", "run_loop_with_transcript")
    for name in (*names, "run_loop_minus_model", "run_loop_with_transcript_minus_model"):
        print(f"{name:26} {results[name]['median_us']:10.2f} µs/delta")
    return 0


if __name__ == "__main__":
    sys.exit(main())
