"""Inspect on a 1,000-call trace: how long the kernel takes to answer, and the page to show it.

A run of 1,000 model calls (one tool call each, the last call's request holding 1,999 messages)
is opened in the Inspect view at its latest call, as a person does with the Inspect button.

- Kernel side (no browser): the ``inspect`` request answered as the widget's session answers it
  (``inspect_turn`` on the run's trace, the ``inspect_reply`` message, its JSON text), timed
  with ``time.perf_counter`` over ``--repeats`` answers. Target: under 150 ms.
- In a real JupyterLab (``--browser``; the end-to-end tests' harness, headless Chromium): from
  the click on Inspect to the frame after the panel names "Model call 1000 of 1000", the panel
  closed and opened ``--opens`` times. Target: under 300 ms (the best open: a busy machine can
  stall any single one).

    python benchmarks/inspect_bench.py               # kernel side only (seconds)
    python benchmarks/inspect_bench.py --browser     # and in JupyterLab (about a minute)

Prints the figures (median, range) and, with ``--json``, writes them to a file. Exits non-zero
only when the benchmark itself breaks, never because a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # anvia_notebook, when not installed

CALLS = 1_000
KERNEL_TARGET_MS = 150.0
PAGE_TARGET_MS = 300.0

#: The notebook's second cell: the 1,000-call run (the first is the end-to-end tests' SETUP,
#: which defines ``long_agent``).
RUN_CELL = f'handle = long_agent({CALLS}).prompt("Check every item.").show()\nawait handle'

#: In the page: close the Inspect panel of cell ``index`` if open, click to open it, and resolve
#: with the milliseconds from the click to the frame after it names ``expected``.
OPEN_AND_TIME = """
async ([index, expected]) => {
  const cell = document.querySelectorAll(".jp-Notebook .jp-Cell")[index];
  const area = cell.querySelector(".jp-OutputArea");
  const toggle = area.querySelector(".anvia-inspect-toggle");
  const panel = area.querySelector(".anvia-inspect");
  const where = panel.querySelector(".anvia-inspect-where");
  if (!panel.hidden) toggle.click();  // close, so that the click below opens and fetches
  where.textContent = "";
  const started = performance.now();
  const shown = new Promise((resolve) => {
    const check = () => {
      if (!where.textContent.startsWith(expected)) return false;
      observer.disconnect();
      requestAnimationFrame(() => resolve(performance.now() - started));
      return true;
    };
    const observer = new MutationObserver(check);
    observer.observe(panel, { subtree: true, childList: true, characterData: true });
  });
  toggle.click();
  return await shown;
}
"""


def _figures(times: list[float]) -> dict[str, Any]:
    return {
        "n": len(times),
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "samples_ms": times,
    }


def _long_trace(calls: int) -> Any:
    """The trace of a finished run of ``calls`` model calls, one tool call each."""
    from pydantic import BaseModel

    from anvia_notebook import AgentBuilder, create_tool
    from anvia_notebook.models import FunctionModel, ModelResponse, ToolCall
    from anvia_notebook.store import set_store

    class LookupInput(BaseModel):
        item: int

    lookup = create_tool(
        name="lookup",
        description="Look an item up in the inventory.",
        input=LookupInput,
        execute=lambda args, _ctx: {"item": args.item, "status": "ok"},
    )

    def respond(request: Any) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < calls - 1:
            return ModelResponse(
                text=f"Step {done}.",
                tool_calls=[ToolCall(id=f"c{done}", name="lookup", arguments={"item": done})],
            )
        return ModelResponse(text="All checked.")

    set_store(None)  # in memory: the answer reads the trace the run holds, not the store
    agent = AgentBuilder("long", FunctionModel(respond)).tool(lookup)
    response = asyncio.run(agent.default_max_turns(calls + 5).build().prompt("Go.").send())
    trace = response.trace
    if trace is None or len(trace.turns) != calls:
        made = 0 if trace is None else len(trace.turns)
        raise RuntimeError(f"the run made {made} model calls, not {calls}")
    return trace


def bench_kernel(repeats: int) -> dict[str, Any]:
    from anvia_notebook.notebook._inspect import MAX_MESSAGES, inspect_turn
    from anvia_notebook.notebook._protocol import inspect_reply_message

    trace = _long_trace(CALLS)
    times: list[float] = []
    size = 0
    for _ in range(repeats):
        started = time.perf_counter()
        count, turn = inspect_turn(trace, None)
        text = json.dumps(inspect_reply_message("page-1", count=count, turn=turn))
        times.append((time.perf_counter() - started) * 1000)
        size = len(text)
    if count != CALLS or len(turn["messages"]) != MAX_MESSAGES:
        raise RuntimeError(f"unexpected answer: {count} calls, {len(turn['messages'])} messages")
    return {**_figures(times), "reply_bytes": size, "target_ms": KERNEL_TARGET_MS}


def bench_browser(opens: int) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    from playwright.sync_api import sync_playwright
    from test_inspect import SETUP as AGENT_CELL  # the agents of the end-to-end tests

    from e2e_helpers import (
        CHROMIUM_ARGS,
        find_chromium,
        open_notebook,
        run_cell,
        start_jupyter_server,
        stop_jupyter_server,
        write_notebook,
    )

    with tempfile.TemporaryDirectory(prefix="anvia-inspect-bench-") as tmp:
        server = start_jupyter_server(Path(tmp))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=find_chromium(), headless=True, args=list(CHROMIUM_ARGS)
                )
                try:
                    context = browser.new_context(viewport={"width": 1280, "height": 900})
                    context.set_default_timeout(120_000)
                    page = context.new_page()
                    write_notebook(server.root_dir, "inspect.ipynb", [AGENT_CELL, RUN_CELL])
                    open_notebook(page, server, "inspect.ipynb")
                    run_cell(page, 0)
                    run_cell(page, 1)
                    area = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
                    area.get_by_text("All checked.").first.wait_for()
                    area.get_by_role("button", name="Inspect").wait_for()
                    expected = f"Model call {CALLS} of {CALLS}"
                    page.evaluate(OPEN_AND_TIME, [1, expected])  # warm-up: code paths loaded
                    times = [
                        float(page.evaluate(OPEN_AND_TIME, [1, expected])) for _ in range(opens)
                    ]
                finally:
                    browser.close()
        finally:
            stop_jupyter_server(server)
    return {**_figures(times), "best_ms": min(times), "target_ms": PAGE_TARGET_MS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20, help="kernel answers (default 20)")
    parser.add_argument("--browser", action="store_true", help="also time it in JupyterLab")
    parser.add_argument("--opens", type=int, default=5, help="timed opens in the page (default 5)")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"calls": CALLS}

    kernel = results["kernel"] = bench_kernel(args.repeats)
    print(
        f"{CALLS}-call trace, the kernel's answer to inspect ({kernel['n']} answers, "
        f"{kernel['reply_bytes'] / 1000:.0f} KB of JSON): median {kernel['median_ms']:.1f} ms, "
        f"{kernel['min_ms']:.1f}-{kernel['max_ms']:.1f} ms (target under {KERNEL_TARGET_MS:.0f} ms)"
    )
    if args.browser:
        page = results["page"] = bench_browser(args.opens)
        print(
            f"{CALLS}-call trace, Inspect opened in JupyterLab ({page['n']} opens): best "
            f"{page['best_ms']:.0f} ms, median {page['median_ms']:.0f} ms, up to "
            f"{page['max_ms']:.0f} ms (target: best under {PAGE_TARGET_MS:.0f} ms)"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
