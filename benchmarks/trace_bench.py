"""What tracing costs: run-loop overhead with OpenTelemetry off and on, and a long trace's size.

The trace (``response.trace``) is always collected; ``instrument()`` adds OpenTelemetry spans.
Scenario as in runtime_overhead.py: 10 turns, one tool call per turn, a fake model with no
delay, runs in memory and stored in SQLite (the default). OpenTelemetry runs with the SDK's
tracer provider and an in-memory exporter, behind a batch processor (as with a real exporter)
or a simple one, and with ``capture_content``; with the API's no-op provider; with a sampler that
drops the run, and one that keeps one run in four (``parentbased_traceidratio`` at 0.25, eight
runs per sample); "SDK floor": the same spans with the same number of attributes made by a few
lines that only call the SDK (no trace, no context switching), what any instrumentation
producing these spans pays the SDK; and the same spans without a single attribute.

The modes take turns run by run, in one process, and the CPU time of the process is measured
(all its threads). After each run the batch processor is flushed, which exports the run's spans
on the calling thread (so the export is counted with the run that made the spans; the
processor's own thread only wakes every 5 s). Figures: the median per turn of each mode, and
the median of the ratios to "off" of the same round (steadier on a busy machine).

Then the SDK on its own: what each step of a span's life costs (start with 0, 4 and 6
attributes, attributes set later, an event, making it current, end, export), and one run's 22
spans made back to back, outside the run loop.

Then a 1,000-turn run: the memory its trace holds (objects reachable from the trace and not
from the conversation, by ``sys.getsizeof``), its size in the store, and how long
``summary()``, ``turn_view()`` and the store's read of the trace take.

    python benchmarks/trace_bench.py [--runs 200] [--json out.json] [--no-sdk] [--no-long]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).parent))  # runtime_overhead
sys.path.insert(1, str(Path(__file__).parent.parent))  # anvia_notebook, when not installed

from runtime_overhead import TURNS, build_anvia

LONG_TURNS = 1000


def otel_provider(batch: bool, sampler: Any = None) -> tuple[Any, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return provider, exporter


MODES = {
    "off": "trace only (instrument off)",
    "noop": "instrument on, API's no-op provider",
    "unsampled": "instrument on, run not sampled",
    "ratio": "instrument on, 1 run in 4 sampled",
    "bare": "SDK spans, no attributes (batch)",
    "floor": "SDK floor (the spans alone, batch)",
    "batch": "OpenTelemetry on (batch processor)",
    "simple": "OpenTelemetry on (simple processor)",
    "content": "  + capture_content (batch)",
}


class _FloorSpans:
    """The spans of one run of this scenario, made with nothing but SDK calls: per span the
    same number of attributes at its start and at its end as ``instrument()`` gives it."""

    ROOT: ClassVar[dict[str, Any]] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "bench",
        "gen_ai.agent.id": "bench",
        "gen_ai.provider.name": "offline",
        "gen_ai.request.model": "function-model",
        "anvia.run_id": "run",
    }
    CHAT: ClassVar[dict[str, Any]] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "offline",
        "gen_ai.request.model": "function-model",
        "anvia.turn": 1,
    }
    TOOL: ClassVar[dict[str, Any]] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "anvia.turn": 1,
    }

    recording = True

    def __init__(self, tracer: Any) -> None:
        from opentelemetry import trace

        self.tracer = tracer
        self.root = tracer.start_span("invoke_agent bench", attributes=self.ROOT)
        self.parent = trace.set_span_in_context(self.root)
        self.tools: dict[int, Any] = {}

    def chat_started(self, entry: Any) -> Any:
        from opentelemetry.trace import SpanKind

        return self.tracer.start_span(
            "chat function-model", context=self.parent, kind=SpanKind.CLIENT, attributes=self.CHAT
        )

    def chat_ended(self, entry: Any, span: Any, error: Any, stopped: Any = None) -> None:
        span.set_attributes(
            {
                "gen_ai.usage.input_tokens": 0,
                "gen_ai.usage.output_tokens": 0,
                "gen_ai.response.finish_reasons": ["stop"],
            }
        )
        span.end()

    def tool_started(self, entry: Any) -> None:
        self.tools[id(entry)] = self.tracer.start_span(
            "execute_tool add", context=self.parent, attributes=self.TOOL
        )

    def activate_tool(self, entry: Any) -> None:
        return None

    def deactivate(self, token: Any) -> None:
        pass

    def tool_ended(self, entry: Any) -> None:
        span = self.tools.pop(id(entry))
        span.set_attribute("anvia.tool.status", "success")
        span.end()

    def run_ended(self, status: str, error: Any) -> None:
        self.root.set_attributes(
            {
                "gen_ai.usage.input_tokens": 0,
                "gen_ai.usage.output_tokens": 0,
                "anvia.run.status": status,
            }
        )
        self.root.end()


class _BareSpans(_FloorSpans):
    """The same spans without a single attribute: what the SDK costs per span at the least."""

    ROOT: ClassVar[dict[str, Any]] = {}
    CHAT: ClassVar[dict[str, Any]] = {}
    TOOL: ClassVar[dict[str, Any]] = {}

    def chat_ended(self, entry: Any, span: Any, error: Any, stopped: Any = None) -> None:
        span.end()

    def tool_ended(self, entry: Any) -> None:
        self.tools.pop(id(entry)).end()

    def run_ended(self, status: str, error: Any) -> None:
        self.root.end()


class _Floor:
    def __init__(self, provider: Any, spans: type[_FloorSpans] = _FloorSpans) -> None:
        self.tracer = provider.get_tracer("anvia_notebook")
        self.spans = spans

    def run_spans(self, recorder: Any, **options: Any) -> _FloorSpans:
        return self.spans(self.tracer)


async def compare(runs: int, store: Any) -> dict[str, dict[str, float]]:
    """Per mode: the median CPU time per turn (µs) and the median ratio to "off" of the same
    round, with its quartiles; the modes take turns run by run, so a busy machine slows them
    alike."""
    import anvia_notebook
    from anvia_notebook import _tracing

    anvia_notebook.set_store(store)
    run = build_anvia(async_tool=True)
    batch, batch_spans = otel_provider(batch=True)
    simple, simple_spans = otel_provider(batch=False)
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased
    from opentelemetry.trace import NoOpTracerProvider

    # A run that a sampler such as parentbased_traceidratio leaves out.
    unsampled, _ = otel_provider(batch=True, sampler=ParentBased(ALWAYS_OFF))
    # OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.25
    ratio, ratio_spans = otel_provider(batch=True, sampler=ParentBased(TraceIdRatioBased(0.25)))
    noop = NoOpTracerProvider()

    def bare_on(spans: type[_FloorSpans]) -> Any:
        floor = _Floor(batch, spans)

        def on() -> None:
            anvia_notebook.instrument(False)
            _tracing.exporter = floor

        return on

    modes = {
        "off": lambda: anvia_notebook.instrument(False),
        "noop": lambda: anvia_notebook.instrument(noop),
        "unsampled": lambda: anvia_notebook.instrument(unsampled),
        "ratio": lambda: anvia_notebook.instrument(ratio),
        "bare": bare_on(_BareSpans),
        "floor": bare_on(_FloorSpans),
        "batch": lambda: anvia_notebook.instrument(batch),
        "simple": lambda: anvia_notebook.instrument(simple),
        "content": lambda: anvia_notebook.instrument(batch, capture_content=True),
    }
    samples: dict[str, list[float]] = {name: [] for name in modes}
    for name in modes:  # warm up
        modes[name]()
        for _ in range(3):
            await run()
    for index in range(runs):
        names = list(modes)
        names = names[index % len(names) :] + names[: index % len(names)]
        for name in names:
            modes[name]()
            # A sampler keeps a random fraction of the runs: 8 runs at once, of which the
            # median round samples 2 (the mean), as with all the runs a notebook makes.
            repeat = 8 if name == "ratio" else 1
            start = time.process_time()
            for _ in range(repeat):
                await run()
                batch.force_flush()  # the export's CPU counts for the run that made the spans
                ratio.force_flush()
            samples[name].append((time.process_time() - start) / TURNS / repeat)
        batch_spans.clear()
        simple_spans.clear()
        ratio_spans.clear()
    anvia_notebook.instrument(False)
    batch.shutdown()
    simple.shutdown()
    unsampled.shutdown()
    ratio.shutdown()
    figures: dict[str, dict[str, float]] = {}
    for name, values in samples.items():
        ratios = [v / o for v, o in zip(values, samples["off"], strict=True)]
        quartiles = statistics.quantiles(ratios, n=4)
        figures[name] = {
            "us_per_turn": statistics.median(values) * 1e6,
            "ratio": statistics.median(ratios),
            "ratio_q1": quartiles[0],
            "ratio_q3": quartiles[2],
        }
    return figures


def sdk_span_costs(count: int = 2000, rounds: int = 9) -> dict[str, float]:
    """What the SDK costs per span, on its own (µs, the median of ``rounds`` loops over
    ``count`` spans; a tracer provider as in ``compare``): each step of a span's life, and the
    scenario's 22 spans of one run made back to back by the "SDK floor" class."""
    from opentelemetry import context, trace
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased
    from opentelemetry.trace import SpanKind

    chat, root_attributes = _FloorSpans.CHAT, _FloorSpans.ROOT
    ended = {
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.response.finish_reasons": ["stop"],
    }
    event = {"anvia.approval.id": "a1", "anvia.approval.status": "pending"}

    def timed(step: Any, make: Any, provider: Any, spans_out: Any) -> float:
        values = []
        for _ in range(rounds):
            spans = make()
            gc.collect()
            start = time.perf_counter()
            for span in spans:
                step(span)
            values.append((time.perf_counter() - start) / count)
            for span in spans:
                if span.is_recording():
                    span.end()
            provider.force_flush()
            spans_out.clear()
        return statistics.median(values) * 1e6

    figures: dict[str, float] = {}
    samplers = (("", None), (" (sampler always_on)", ALWAYS_ON), (" (not sampled)", None))
    for suffix, sampler in samplers:
        if suffix == " (not sampled)":
            sampler = ParentBased(ALWAYS_OFF)
        provider, exported = otel_provider(batch=True, sampler=sampler)
        tracer = provider.get_tracer("anvia_notebook")
        parent = trace.set_span_in_context(tracer.start_span("root"))

        def started(attributes: Any = None, tracer: Any = tracer, parent: Any = parent) -> Any:
            return tracer.start_span(
                "chat m", context=parent, kind=SpanKind.CLIENT, attributes=attributes
            )

        for attributes, label in ((None, "no"), (chat, "4"), (root_attributes, "6")):
            values = []
            for _ in range(rounds):
                gc.collect()
                start = time.perf_counter()
                spans = [started(attributes) for _ in range(count)]
                values.append((time.perf_counter() - start) / count)
                for span in spans:
                    span.end()
                provider.force_flush()
                exported.clear()
            figures[f"start_span, {label} attributes{suffix}"] = statistics.median(values) * 1e6
        if suffix:
            provider.shutdown()
            continue

        def make(started: Any = started) -> list[Any]:
            return [started(chat) for _ in range(count)]

        figures["set_attributes, 3 (a chat span's end)"] = timed(
            lambda span: span.set_attributes(ended), make, provider, exported
        )
        figures["set_attribute, 1 (a tool span's end)"] = timed(
            lambda span: span.set_attribute("anvia.tool.status", "success"),
            make,
            provider,
            exported,
        )
        figures["add_event, 2 attributes (an approval)"] = timed(
            lambda span: span.add_event("tool_approval_request", event), make, provider, exported
        )
        figures["make current: set_span_in_context, attach, detach"] = timed(
            lambda span: context.detach(context.attach(trace.set_span_in_context(span))),
            make,
            provider,
            exported,
        )
        values = []
        flushes = []
        for _ in range(rounds):
            spans = make()
            gc.collect()
            start = time.perf_counter()
            for span in spans:
                span.end()
            middle = time.perf_counter()
            provider.force_flush()
            flushes.append((time.perf_counter() - middle) / count)
            values.append((middle - start) / count)
            exported.clear()
        figures["end (the batch processor queues it)"] = statistics.median(values) * 1e6
        figures["export (flush to the in-memory exporter)"] = statistics.median(flushes) * 1e6

        class Entry:
            pass

        def one_run(tracer: Any = tracer, provider: Any = provider) -> None:
            spans = _FloorSpans(tracer)
            for turn in range(TURNS + 1):
                spans.chat_ended(None, spans.chat_started(None), None)
                if turn < TURNS:
                    entry = Entry()
                    spans.tool_started(entry)
                    spans.tool_ended(entry)
            spans.run_ended("success", None)
            provider.force_flush()

        runs = []
        for index in range(rounds * 20):
            start = time.process_time()
            one_run()
            runs.append(time.process_time() - start)
            if index % 10 == 9:
                exported.clear()
        figures["one run's 22 spans back to back, per turn"] = statistics.median(runs) * 1e6 / TURNS
        provider.shutdown()
    return figures


def long_run_figures() -> dict[str, float]:
    from pydantic import BaseModel

    from anvia_notebook import AgentBuilder, RunStore, create_tool, set_store
    from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall

    class AddInput(BaseModel):
        x: int
        y: int

    tool = create_tool(
        name="add", description="Add two numbers.", input=AddInput, execute=lambda a, c: a.x + a.y
    )

    def model_fn(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < LONG_TURNS - 1:
            return ModelResponse(
                tool_calls=[ToolCall(id=f"c{done}", name="add", arguments={"x": done, "y": 1})]
            )
        return ModelResponse(text="done")

    folder = tempfile.mkdtemp(prefix="anvia-trace-bench-")
    store = RunStore(str(Path(folder) / "runs.sqlite"))
    set_store(store)
    agent = (
        AgentBuilder("long", FunctionModel(model_fn))
        .instructions("Add numbers. " * 50)
        .tool(tool)
        .default_max_turns(LONG_TURNS + 5)
        .build()
    )
    gc.collect()
    start = time.perf_counter()
    response = agent.prompt("go").send_sync()
    run_s = time.perf_counter() - start
    trace = response.trace
    messages_size = _size_of(response.messages)
    trace_and_messages = _size_of((trace, response.messages))
    assert len(trace.turns) == LONG_TURNS
    start = time.perf_counter()
    trace.summary()
    summary_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    json.dumps(trace.turn_view(LONG_TURNS - 1))
    view_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    stored = store.trace(response.run_id)
    read_ms = (time.perf_counter() - start) * 1000
    assert len(stored.turns) == LONG_TURNS
    rows = store._q("SELECT SUM(LENGTH(entry)) FROM trace_entries")[0][0]
    set_store(None)
    return {
        "run_s": run_s,
        "trace_kib": (trace_and_messages - messages_size) / 1024,
        "messages_kib": messages_size / 1024,
        "summary_ms": summary_ms,
        "last_turn_view_ms": view_ms,
        "store_read_ms": read_ms,
        "stored_trace_kib": rows / 1024,
    }


def _size_of(root: Any) -> int:
    """Bytes reachable from ``root`` (objects counted once, by ``sys.getsizeof``): a rough
    but consistent measure."""
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj, 0)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        else:
            for name in ("__dict__", "__pydantic_private__", "__pydantic_extra__"):
                value = getattr(obj, name, None)
                if value is not None:
                    stack.append(value)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="runs per mode (default 200)")
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--no-long", action="store_true", help="skip the 1,000-turn run")
    parser.add_argument(
        "--no-sdk", action="store_true", help="skip the SDK's cost per span, on its own"
    )
    args = parser.parse_args()

    from anvia_notebook import RunStore

    print(f"Run loop overhead with tracing: {TURNS} turns, one tool call per turn, fake model,")
    print(f"{args.runs} runs per mode, interleaved; CPU time of the process")
    figures: dict[str, Any] = {}
    sqlite = RunStore(str(Path(tempfile.mkdtemp(prefix="anvia-trace-bench-")) / "runs.sqlite"))
    for where, store in (("runs in memory", None), ("runs stored in SQLite", sqlite)):
        per_mode = figures[where] = asyncio.run(compare(args.runs, store))
        print(f"\n{where:<38} {'µs per turn':>12} {'vs off (same round; quartiles)':>32}")
        for name, label in MODES.items():
            f = per_mode[name]
            print(
                f"{label:<38} {f['us_per_turn']:>12.1f} {f['ratio']:>9.2f}x"
                f" ({f['ratio_q1']:.2f}-{f['ratio_q3']:.2f})"
            )
    sdk: dict[str, float] = {}
    if not args.no_sdk:
        print("\nThe SDK on its own, per span (µs; batch processor, in-memory exporter):")
        sdk = sdk_span_costs()
        for label, value in sdk.items():
            print(f"  {label:<52} {value:8.2f}")
    if args.no_long:
        long: dict[str, float] = {}
    else:
        print(f"\nA {LONG_TURNS}-turn run (one tool call per turn, stored in SQLite):")
        long = long_run_figures()
        print(f"  run time                      {long['run_s']:8.2f} s")
        print(f"  trace in memory               {long['trace_kib']:8.0f} KiB", end="")
        print(f"  (the conversation itself: {long['messages_kib']:.0f} KiB)")
        print(f"  trace in the store            {long['stored_trace_kib']:8.0f} KiB")
        print(f"  summary()                     {long['summary_ms']:8.2f} ms")
        print(f"  turn_view(last) + json.dumps  {long['last_turn_view_ms']:8.2f} ms")
        print(f"  RunStore.trace(run_id)        {long['store_read_ms']:8.1f} ms")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"per_turn": figures, "sdk": sdk, "long_run": long}, handle, indent=2)


if __name__ == "__main__":
    main()
