"""What evaluating costs: the runner's own overhead per case, and drawing a 1,000-case report.

1. Runner overhead. A zero-delay model (it answers at once) and a trivial metric; N cases run
   by ``evals.evaluate`` at concurrency 1 and 8, against the same prompts sent directly
   (``agent.prompt(...).send()``, the same number at a time) in the same process, rounds
   alternating. The overhead per case is the difference of the medians: what the runner adds
   (checking cases, scoring, building results, its scheduling), not the run itself. Runs are kept
   in memory (``store(None)`` for both sides), so a disk does not drown the figure; with the
   default SQLite store both sides pay the same writes. Also measured: the same evaluation with
   the report's widget session attached (rows and updates built, messages encoded).
2. Rendering. The 1,000-row report message the kernel sends (built by the real widget session
   from a finished 1,000-case evaluation) is drawn by the built front end (``js/``,
   ``npm run build``) in headless Chromium: a blank page loads ``widget.js``, a fake widget
   model delivers the message, and the time from ``render`` until the table is laid out is
   measured (median of several fresh views): the header and the first rows are drawn at once,
   the rest are built in idle time (also measured: until every row is built). This is the
   browser, not JupyterLab: the page holds only the widget. Then one update of 100 rows.

    python benchmarks/evals_bench.py [--cases 400] [--rounds 5] [--views 7] [--json out.json]

Prints each figure next to its target; exits non-zero only when the benchmark itself breaks.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # anvia_notebook, when not installed

from anvia_notebook import AgentBuilder, evals, set_store  # noqa: E402
from anvia_notebook.evals.runner import NoReviewer  # noqa: E402
from anvia_notebook.models import FunctionModel  # noqa: E402

OVERHEAD_TARGET_MS = 2.0
RENDER_TARGET_MS = 300.0


def agent() -> Any:
    return AgentBuilder("bench", FunctionModel(lambda request: "ok")).build()


async def direct(n: int, concurrency: int) -> float:
    """N prompts sent directly by ``concurrency`` workers (as the runner schedules them, without
    its checks, scoring and results); seconds."""
    bench = agent()
    prompts = iter(range(n))

    async def worker() -> None:
        for i in prompts:
            await bench.prompt(f"case {i}").human_input(NoReviewer()).store(None).send()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def evaluated(n: int, concurrency: int, widget: bool = False, bench: Any = None) -> float:
    """N cases of ``bench`` (default: a model that answers at once) through ``evals.evaluate``;
    seconds."""
    from anvia_notebook.evals.runner import prepare, run_report

    report = prepare(
        bench or agent(),
        [{"input": f"case {i}"} for i in range(n)],
        [evals.contains("ok")],
        concurrency,
    )
    if widget:
        from anvia_notebook.notebook._evals_view import EvalsSession

        session = EvalsSession(report, loop=asyncio.get_running_loop())
        session._send = lambda message: json.dumps(message)  # type: ignore[method-assign]
        report.view = session
    started = time.perf_counter()
    await run_report(report)
    took = time.perf_counter() - started
    assert report.finished == n
    assert report.pass_rate == 1.0
    return took


async def waiting_cases(n: int, concurrency: int, wait: float) -> float:
    """N cases whose model call waits ``wait`` seconds (as a provider does) through
    ``evals.evaluate``; seconds."""

    async def slow(_request: Any) -> Any:
        await asyncio.sleep(wait)
        yield "ok"

    return await evaluated(n, concurrency, bench=AgentBuilder("bench", FunctionModel(slow)).build())


def speedup(n: int, wait: float, rounds: int) -> dict[str, Any]:
    """Wall time of ``n`` waiting cases at concurrency 1, 4 and 8 (rounds alternate)."""
    set_store(None)
    times: dict[int, list[float]] = {1: [], 4: [], 8: []}
    for _ in range(rounds):
        for concurrency in times:
            times[concurrency].append(asyncio.run(waiting_cases(n, concurrency, wait)))
    serial = statistics.median(times[1])
    return {
        str(c): {"wall_s": statistics.median(t), "speedup": serial / statistics.median(t)}
        for c, t in times.items()
    }


def overhead(n: int, rounds: int) -> dict[str, Any]:
    set_store(None)  # every run in memory: both sides do the same run work
    results: dict[str, Any] = {}
    for concurrency in (1, 8):
        plain: list[float] = []
        runner: list[float] = []
        with_widget: list[float] = []
        asyncio.run(evaluated(50, concurrency))  # warm up
        for _ in range(rounds):
            gc.collect()
            plain.append(asyncio.run(direct(n, concurrency)) / n * 1000)
            gc.collect()
            runner.append(asyncio.run(evaluated(n, concurrency)) / n * 1000)
            gc.collect()
            with_widget.append(asyncio.run(evaluated(n, concurrency, widget=True)) / n * 1000)
        # Rounds alternate, so each round's difference compares like with like on a busy machine.
        results[str(concurrency)] = {
            "direct_ms_per_case": statistics.median(plain),
            "evaluate_ms_per_case": statistics.median(runner),
            "overhead_ms_per_case": statistics.median(
                r - p for r, p in zip(runner, plain, strict=True)
            ),
            "with_widget_ms_per_case": statistics.median(with_widget),
            "widget_overhead_ms_per_case": statistics.median(
                w - p for w, p in zip(with_widget, plain, strict=True)
            ),
        }
    return results


def report_message(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``evals`` message of a finished ``n``-case evaluation (3 metrics), and an update of
    its first 100 rows (as the widget session builds them)."""
    from anvia_notebook.evals.runner import prepare, run_report
    from anvia_notebook.notebook._evals_view import EvalsSession

    def judge_like(case: Any, output: str) -> float:
        return (len(case.input) % 10) / 10

    answer = (
        "Order **A1001** is *shipped* and should arrive on 2026-12-03; "
        "the tracking number is 1Z999AA10123456784. "
    ) * 3
    bench = AgentBuilder("bench", FunctionModel(lambda request: answer)).build()
    report = prepare(
        bench,
        [{"input": f"Where is order A{i:04d}?", "expected": "shipped"} for i in range(n)],
        [evals.contains(), evals.matches(r"1Z\w+"), judge_like],
        8,
    )

    async def go() -> None:
        await run_report(report)

    asyncio.run(go())
    session = EvalsSession(report, loop=None)
    message = session.evals_message()
    update = {
        "type": "evals_update",
        "seq": 1,
        "summary": message["report"]["summary"],
        "rows": [{**row, "output": row["output"][::-1]} for row in message["report"]["rows"][:100]],
    }
    return message, update


PAGE_SCRIPT = """
async ([bundle, message, update, views]) => {
  const url = URL.createObjectURL(new Blob([bundle], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  class Model {
    constructor(attrs) { this.attrs = attrs; this.handlers = new Map(); this.sent = []; }
    get(name) { return this.attrs[name]; }
    send(content) { this.sent.push(content); }
    on(event, cb) {
      if (!this.handlers.has(event)) this.handlers.set(event, new Set());
      this.handlers.get(event).add(cb);
    }
    off(event, cb) {
      if (cb) this.handlers.get(event)?.delete(cb);
      else this.handlers.delete(event);
    }
    deliver(msg) { for (const cb of this.handlers.get("msg:custom") ?? []) cb(msg, []); }
  }
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const renders = [];
  const everything = [];
  const updates = [];
  let firstRows = 0;
  for (let i = 0; i < views; i++) {
    const model = new Model({ mode: "evals", title: "Evaluation of bench", _anvia_key: `k${i}` });
    const stop = widget.initialize({ model });
    model.deliver(message);
    const el = document.createElement("div");
    document.body.appendChild(el);
    await frame();
    const t0 = performance.now();
    const dispose = widget.render({ model, el });
    void el.getBoundingClientRect().height;  // layout of the whole table
    await frame();                           // and painted
    renders.push(performance.now() - t0);
    const count = () => el.querySelectorAll(".anvia-evals .anvia-eval-tbody .anvia-eval-tr").length;
    firstRows = count();
    const deadline = performance.now() + 30000;
    while (count() < message.report.rows.length && performance.now() < deadline) await frame();
    void el.getBoundingClientRect().height;
    everything.push(performance.now() - t0);
    if (count() !== message.report.rows.length) throw new Error(`drew ${count()} rows`);
    const t1 = performance.now();
    model.deliver(update);
    void el.getBoundingClientRect().height;
    await frame();
    updates.push(performance.now() - t1);
    dispose();
    stop();
    el.remove();
  }
  return { renders, everything, updates, firstRows };
}
"""


def render_in_browser(
    message: dict[str, Any], update: dict[str, Any], views: int
) -> dict[str, Any]:
    bundle_path = REPO / "anvia_notebook" / "static" / "widget.js"
    if not bundle_path.is_file():
        raise SystemExit("The front end is not built: run `npm run build` in js/ first.")
    chromium = (
        os.environ.get("ANVIA_E2E_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if chromium is None:
        raise SystemExit("No Chromium found (install Debian's chromium or set ANVIA_E2E_CHROMIUM).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--headless=new", "--no-sandbox", "--disable-gpu"],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_content("<!doctype html><html><body></body></html>")
            css = (REPO / "anvia_notebook" / "static" / "widget.css").read_text(encoding="utf-8")
            page.add_style_tag(content=css)
            result = page.evaluate(
                PAGE_SCRIPT, [bundle_path.read_text(encoding="utf-8"), message, update, views]
            )
        finally:
            browser.close()
    renders = result["renders"][1:]  # the first view also compiles the code
    return {
        "views": len(renders),
        "first_rows": result["firstRows"],
        "first_render_ms_median": statistics.median(renders),
        "first_render_ms_max": max(renders),
        "all_rows_ms_median": statistics.median(result["everything"][1:]),
        "update_100_rows_ms_median": statistics.median(result["updates"][1:]),
        "message_bytes": len(json.dumps(message)),
        "chromium": chromium,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--views", type=int, default=7)
    parser.add_argument("--table-cases", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    print(
        f"Runner overhead: {args.cases} cases x {args.rounds} rounds, zero-delay model, "
        "runs in memory"
    )
    figures: dict[str, Any] = {"overhead": overhead(args.cases, args.rounds)}
    print("Concurrency: 16 cases whose model call waits 0.1 s, at concurrency 1, 4 and 8")
    figures["speedup"] = speedup(16, 0.1, 3)
    print(f"Report of {args.table_cases} cases, drawn in headless Chromium ({args.views} views)")
    message, update = report_message(args.table_cases)
    figures["render"] = render_in_browser(message, update, args.views)

    rows = []
    for concurrency, f in figures["overhead"].items():
        rows.append(
            (
                f"runner overhead per case, concurrency {concurrency}",
                f"{f['overhead_ms_per_case']:.3f} ms",
                f"<= {OVERHEAD_TARGET_MS:g} ms",
                "met" if f["overhead_ms_per_case"] <= OVERHEAD_TARGET_MS else "MISSED",
            )
        )
        rows.append(
            (
                f"  (per case: evaluate {f['evaluate_ms_per_case']:.3f} ms, direct send "
                f"{f['direct_ms_per_case']:.3f} ms; with the widget session "
                f"+{f['widget_overhead_ms_per_case']:.3f} ms)",
                "",
                "",
                "",
            )
        )
    for concurrency, f in figures["speedup"].items():
        ideal = min(int(concurrency), 16)
        rows.append(
            (
                f"16 cases of 0.1 s each at concurrency {concurrency}: wall time "
                f"{f['wall_s']:.2f} s, {f['speedup']:.1f}x faster than one at a time",
                f"{f['speedup']:.1f}x",
                f"~{ideal}x",
                "",
            )
        )
    r = figures["render"]
    rows.append(
        (
            f"{args.table_cases}-case report table, first render: header and the first "
            f"{r['first_rows']} rows drawn (median of {r['views']})",
            f"{r['first_render_ms_median']:.0f} ms",
            f"< {RENDER_TARGET_MS:g} ms",
            "met" if r["first_render_ms_median"] < RENDER_TARGET_MS else "MISSED",
        )
    )
    rows.append(
        (
            f"  (slowest view {r['first_render_ms_max']:.0f} ms; "
            f"message {r['message_bytes'] / 1024:.0f} KB)",
            "",
            "",
            "",
        )
    )
    rows.append(
        (
            f"  every row built (the rest in idle time), median: {r['all_rows_ms_median']:.0f} ms",
            "",
            "",
            "",
        )
    )
    rows.append(("update of 100 rows (median)", f"{r['update_100_rows_ms_median']:.1f} ms", "", ""))
    width = max(len(row[0]) for row in rows)
    print()
    print(f"{'':<{width}}  {'measured':>10}  {'target':>10}")
    for name, value, target, verdict in rows:
        print(f"{name:<{width}}  {value:>10}  {target:>10}  {verdict}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
