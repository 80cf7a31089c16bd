"""Browser benchmarks: streaming, click latency and long transcripts in a real JupyterLab.

Starts ``jupyter lab`` on 127.0.0.1 (the end-to-end tests' harness, ``tests/e2e/e2e_helpers.py``)
and drives headless Chromium with Playwright's sync API. Every figure is measured in the same
run as the figure it is compared with, so the ratios hold on a noisy machine.

- Streaming: 20,000 text deltas, flat out and paced at 2,000 tokens/s, rendered by (a) our
  transcript widget, (b) the usual hand-written approach (a display handle whose Markdown is
  re-rendered on every delta; capped by a timeout) and (c) the floor (a minimal anywidget that
  appends one batch per 50 ms to a text node). Frames and bytes are counted from the page's
  websocket frames (Playwright ``framereceived``).
- Click latency: approve click to the tool's first line, answer submit to the tool result, in
  background (``show()``) and ``send_sync`` mode, against the click-to-handler time of a trivial
  anywidget button in the same page and kernel.
- Long transcripts: 1,000 entries; first render of a fresh view (the RunHandle displayed again in
  a new cell) and the page's JS heap. The same with three levels of sub-agents (``nested``: about
  1,000 entries, 70 % of them inside the sub-agents' collapsible blocks), against the same
  targets.
- Kernel side (``kernel_cost.py``, no browser): per-delta CPU of Transcript + Batcher; and the
  size of a saved notebook after a 20,000-token run with widget state saving on.

Streaming, clicks and long transcripts run twice by default, with the run store on (the default,
``.anvia/runs.sqlite`` in the kernel's folder) and off (``ANVIA_NOTEBOOK_STORE=off``), each in
kernels of their own, and the tables show both side by side (``--store on|off`` runs one). The
targets are checked on the default (store on).

    python benchmarks/browser_bench.py            # full run (about 5 minutes on 2 cores)
    python benchmarks/browser_bench.py --quick    # short run, for CI (about 3 minutes)

Prints a table and writes the figures as JSON (``--json``, default
``benchmarks/results/browser_bench.json``). Exits non-zero only when the benchmark itself breaks,
never because a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO))

import bench_report  # noqa: E402
from bench_kernel import deltas  # noqa: E402
from bench_page import (  # noqa: E402
    INIT_SCRIPT,
    FrameLog,
    FrameStats,
    heap_used,
    longest_task,
    page_now,
)
from playwright.sync_api import (  # noqa: E402
    Browser,
    BrowserContext,
    CDPSession,
    Page,
    sync_playwright,
)

from e2e_helpers import (  # noqa: E402
    CHROMIUM_ARGS,
    JupyterServer,
    find_chromium,
    open_notebook,
    run_cell,
    start_jupyter_server,
    stop_jupyter_server,
    write_notebook,
)

#: User settings written before the server starts: widget state saved in notebooks (for the
#: saved-size figure) and no autosave (a save must not land in the middle of a measurement).
BENCH_USER_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


#: The results of a part measured with the run store off sit under ``<part>`` + this.
OFF_SUFFIX = bench_report.OFF_SUFFIX

#: What ``--trace`` records: the DevTools Performance panel's timeline and JS samples.
TRACE_CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "disabled-by-default-devtools.timeline.frame",
    "disabled-by-default-v8.cpu_profiler",
    "toplevel",
    "v8.execute",
    "blink.user_timing",
]


@dataclass
class Config:
    quick: bool
    deltas: int = 20_000
    paced_deltas: int = 20_000
    rate: float = 2_000.0
    repeats: int = 3
    naive_deltas: int = 20_000
    naive_cap: float = 60.0
    naive_paces: tuple[str, ...] = ("flat", "paced")
    clicks: int = 20
    long_entries: int = 1_000
    long_views: int = 5
    kernel_repeats: int = 7
    #: Run store modes to measure ("on": the default store; "off": ANVIA_NOTEBOOK_STORE=off).
    stores: tuple[str, ...] = ("on", "off")
    #: Streaming paces to measure ("flat": flat out; "paced": at ``rate`` tokens/s).
    paces: tuple[str, ...] = ("flat", "paced")

    @classmethod
    def make(cls, quick: bool, stores: tuple[str, ...] = ("on", "off")) -> Config:
        if not quick:
            return cls(quick=False, stores=stores)
        return cls(
            quick=True,
            stores=stores,
            repeats=1,
            naive_deltas=1_000,
            naive_cap=10.0,
            naive_paces=("flat",),
            clicks=3,
            long_views=2,
            kernel_repeats=3,
        )


# --------------------------------------------------------------------------------------------
# The browser and the notebooks
# --------------------------------------------------------------------------------------------


@dataclass
class Tab:
    """One browser context with one page, its frame log and a CDP session."""

    context: BrowserContext
    page: Page
    frames: FrameLog
    cdp: CDPSession

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.context.close()


class Bench:
    def __init__(
        self,
        server: JupyterServer,
        browser: Browser,
        config: Config,
        trace_dir: Path | None = None,
    ) -> None:
        self.server = server
        self.browser = browser
        self.config = config
        self.trace_dir = trace_dir
        self.out_dir = server.root_dir / "bench-out"
        self.out_dir.mkdir(exist_ok=True)

    @contextlib.contextmanager
    def tracing(self, tab: Tab, name: str) -> Iterator[None]:
        """With ``--trace``: a Chromium performance trace of the block (open it in the
        DevTools Performance panel), as ``<trace dir>/<name>.json``."""
        if self.trace_dir is None:
            yield
            return
        self.browser.start_tracing(page=tab.page, categories=TRACE_CATEGORIES)
        try:
            yield
        finally:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            (self.trace_dir / f"{name}.json").write_bytes(self.browser.stop_tracing())

    # -- pages and notebooks ---------------------------------------------------------------

    def new_tab(self) -> Tab:
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(60_000)
        context.add_init_script(INIT_SCRIPT)
        page = context.new_page()
        frames = FrameLog()
        frames.attach(page)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        return Tab(context, page, frames, cdp)

    def open(self, tab: Tab, name: str, cells: list[str], store: str = "on") -> None:
        """Write a notebook (a setup cell first, which sets the run store on or off for its
        kernel), open it, run the setup cell."""
        setup = (
            f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
            f"import bench_kernel as bk\nbk.setup({str(self.out_dir)!r})\n"
            f"bk.use_store({store!r})"
        )
        write_notebook(self.server.root_dir, name, [setup, *cells])
        open_notebook(tab.page, self.server, name)
        run_cell(tab.page, 0)

    def set_source(self, tab: Tab, index: int, source: str) -> None:
        tab.page.evaluate(
            """([index, source]) => {
              const e2e = window.__anviaE2E;
              e2e.panel(e2e.current).content.model.cells.get(index).sharedModel.setSource(source);
            }""",
            [index, dedent(source).strip()],
        )

    def kernel_id(self, tab: Tab) -> str:
        return str(
            tab.page.evaluate(
                """() => {
                  const e2e = window.__anviaE2E;
                  return e2e.panel(e2e.current).sessionContext.session.kernel.id;
                }"""
            )
        )

    def result(self, tag: str) -> dict[str, Any] | None:
        path = self.out_dir / f"{tag}.json"
        if not path.exists():
            return None
        return dict(json.loads(path.read_text()))

    def wait_result(self, tab: Tab, tag: str, timeout: float) -> dict[str, Any] | None:
        """Poll for the kernel's result file (pumping the page's events meanwhile)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.result(tag)
            if found is not None:
                return found
            tab.page.wait_for_timeout(20)
        return None

    def settle(self, tab: Tab, quiet: float = 0.5, limit: float = 5.0) -> None:
        """Wait until the kernel websockets have been quiet for ``quiet`` seconds."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            last = tab.frames.last_received_at()
            if time.monotonic() - last >= quiet:
                return
            tab.page.wait_for_timeout(50)

    def watch(self, tab: Tab, key: str, timeout: float) -> dict[str, Any]:
        """Wait for a watcher of ``__bench`` to fire; returns its record (``found`` False when
        it did not in time)."""
        with contextlib.suppress(Exception):
            tab.page.wait_for_function(
                "(k) => { const w = window.__bench.watches[k]; return w && w.tFrame !== null; }",
                arg=key,
                timeout=timeout * 1000,
                polling=50,
            )
        return dict(tab.page.evaluate("(k) => window.__bench.watches[k]", key))


# --------------------------------------------------------------------------------------------
# Streaming
# --------------------------------------------------------------------------------------------

STREAM_CALLS = {
    "ours": "bk.stream_ours({tag!r}, {count}, {rate}, {marker!r})",
    "floor": "bk.stream_floor({tag!r}, {count}, {rate}, {marker!r})",
    "naive": "await bk.stream_naive({tag!r}, {count}, {rate}, {marker!r})",
}
#: Where the streamed text is in each variant's output.
TEXT_SELECTORS = {
    "ours": ".anvia-entry-assistant .anvia-md",
    "floor": ".bench-floor",
    "naive": ".jp-RenderedMarkdown",
}
#: The page message that says "this view is ready" (the stream starts after it).
READY_MESSAGES = {"ours": ("sync",), "floor": ("ready",), "naive": ()}


def stream_once(
    bench: Bench, tab: Tab, variant: str, count: int, rate: float, cap: float
) -> dict[str, Any]:
    """One streaming run of ``variant`` in cell 1 of the open notebook."""
    marker = f"END{uuid.uuid4().hex[:10]}"
    tag = f"stream-{variant}-{uuid.uuid4().hex[:8]}"
    call = STREAM_CALLS[variant].format(tag=tag, count=count, rate=rate, marker=marker)
    bench.set_source(tab, 1, f"_ = {call}" if variant != "naive" else call)
    page = tab.page
    page.evaluate("([k, m]) => window.__bench.watchText(k, 1, m)", [tag, marker])
    start = tab.frames.mark()
    run_cell(page, 1, wait=False)
    watch = bench.watch(tab, tag, cap)
    kernel = bench.wait_result(tab, tag, 30.0 if watch["found"] else 0.5)
    capped = not watch["found"] or kernel is None
    if capped:
        kernel = bench.result(f"{tag}-progress") or {}
    else:
        bench.settle(tab)
    end = tab.frames.mark()

    ready = READY_MESSAGES[variant]
    boundary = tab.frames.first_sent(start, ready) if ready else start
    boundary = start if boundary is None else boundary
    stream = FrameStats.of(tab.frames.frames[boundary + 1 : end])
    setup = FrameStats.of(tab.frames.frames[start : boundary + 1])
    t_first = kernel.get("t_first", 0.0) * 1000
    t_last = kernel.get("t_last", 0.0) * 1000
    seen_until = watch["tFrame"] if watch["found"] else page_now(page)
    out: dict[str, Any] = {
        "variant": variant,
        "deltas": count,
        "rate": rate,
        "capped": capped,
        "cap_s": cap,
        "frames": stream.frames,
        "bytes": stream.bytes,
        "iopub_messages": stream.iopub,
        "by_type": stream.by_type,
        "resyncs": stream.syncs,
        "setup_frames": setup.frames,
        "setup_bytes": setup.bytes,
        "kernel_messages": kernel.get("messages"),
        "rate_exceeded": stream.rate_exceeded or setup.rate_exceeded,
        "generate_ms": (t_last - t_first) if t_last else None,
        "time_to_last_token_ms": (watch["tFrame"] - t_first) if not capped else None,
        "lag_after_last_delta_ms": (watch["tFrame"] - t_last) if not capped else None,
        "longest_task_ms": longest_task(page, t_first, seen_until + 500) if t_first else None,
    }
    if capped:
        out["complete"] = False
    else:
        expected = "".join("".join(deltas(count, marker)).split())
        shown = page.evaluate(
            """([sel]) => {
              const area = window.__bench.outputArea(1);
              const el = area.querySelector(sel);
              return el ? el.textContent.replace(/\\s+/g, "") : "";
            }""",
            [TEXT_SELECTORS[variant]],
        )
        out["complete"] = shown == expected
        out["chars_shown"] = len(shown)
        out["chars_expected"] = len(expected)
    return out


def bench_streaming(bench: Bench, log: Callable[[str], None], store: str = "on") -> dict[str, Any]:
    config = bench.config
    results: dict[str, Any] = {"runs": [], "store": store}
    tab = bench.new_tab()
    try:
        bench.open(tab, f"stream-store-{store}.ipynb", ["pass"], store)
        # Warm up: load both widgets' code once.
        for variant in ("ours", "floor"):
            stream_once(bench, tab, variant, 200, 0, 30)
        for pace, count in (("flat", config.deltas), ("paced", config.paced_deltas)):
            if pace not in config.paces:
                continue
            rate = 0.0 if pace == "flat" else config.rate
            for repeat in range(config.repeats):
                for variant in ("ours", "floor"):
                    with bench.tracing(tab, f"stream-{variant}-{pace}-{repeat}-store-{store}"):
                        run = stream_once(bench, tab, variant, count, rate, 120)
                    run["pace"] = pace
                    run["repeat"] = repeat
                    results["runs"].append(run)
                    log(bench_report.stream_line(run))
    finally:
        tab.close()
    # The usual way does not draw our widget: measured once, with the default store.
    naive_paces = [pace for pace in config.naive_paces if pace in config.paces]
    for pace in naive_paces if store == "on" or "on" not in config.stores else ():
        count = config.naive_deltas
        rate = 0.0 if pace == "flat" else config.rate
        tab = bench.new_tab()
        try:
            bench.open(tab, f"stream-naive-{pace}-store-{store}.ipynb", ["pass"], store)
            run = stream_once(bench, tab, "naive", count, rate, config.naive_cap)
            run["pace"] = pace
            run["repeat"] = 0
            results["runs"].append(run)
            log(bench_report.stream_line(run))
            with contextlib.suppress(Exception):
                bench.server.api("DELETE", f"kernels/{bench.kernel_id(tab)}", timeout=30)
        finally:
            tab.close()
    return results


# --------------------------------------------------------------------------------------------
# Click latency
# --------------------------------------------------------------------------------------------

CLICK_CELLS = [
    "bk.ClickProbe()",
    '_h = bk.approve_agent("bg-approve").prompt("go").show()',
    '_h = bk.question_agent("bg-answer").prompt("go").show()',
    '_r = bk.approve_agent("sync-approve").prompt("go").send_sync()',
    '_r = bk.question_agent("sync-answer").prompt("go").send_sync()',
    "pass",
]
#: Before a measured click the page is left alone this long (spaced clicks, settled view).
SETTLE_MS = 300


def clear_output(tab: Tab, index: int) -> None:
    """Clear the outputs of cell ``index`` (its widget views go with them)."""
    tab.page.evaluate(
        """(index) => {
          const e2e = window.__anviaE2E;
          e2e.panel(e2e.current).content.widgets[index].model.outputs.clear();
        }""",
        index,
    )
    tab.page.wait_for_timeout(100)


def _output(tab: Tab, index: int) -> Any:
    return tab.page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")


def _tagged_click(tab: Tab, locator: Any, tag: str) -> None:
    locator.wait_for(state="visible")
    tab.page.wait_for_timeout(SETTLE_MS)
    tab.page.evaluate("(t) => { window.__bench.tag = t; }", tag)
    locator.click()


def _wait_idle(tab: Tab) -> None:
    tab.page.wait_for_function(
        """() => {
          const e2e = window.__anviaE2E;
          const kernel = e2e.panel(e2e.current).sessionContext.session.kernel;
          return kernel.status === "idle";
        }""",
        polling=50,
    )


def click_round(bench: Bench, tab: Tab, index: int) -> None:
    page = tab.page
    probe = _output(tab, 1).locator(".bench-probe")
    _tagged_click(tab, probe, "baseline")
    _output(tab, 1).get_by_text(f"Clicked {index + 1}", exact=True).wait_for()

    for cell, kind, sync in (
        (2, "approve", False),
        (3, "answer", False),
        (4, "approve", True),
        (5, "answer", True),
    ):
        tag = f"{'sync' if sync else 'bg'}-{kind}"
        run_cell(page, cell, wait=not sync)
        out = _output(tab, cell)
        if kind == "approve":
            _tagged_click(tab, out.get_by_role("button", name="Approve"), tag)
            done = "Done."
        else:
            out.get_by_role("button", name="First").click()
            _tagged_click(tab, out.get_by_role("button", name="Submit answers"), tag)
            done = "Answered."
        out.get_by_text(done, exact=True).first.wait_for()
        _wait_idle(tab)


def _stats(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))] if ordered else None
    return {
        "n": len(values),
        "median_ms": statistics.median(values) if values else None,
        "p90_ms": p90,
        "min_ms": ordered[0] if ordered else None,
        "max_ms": ordered[-1] if ordered else None,
    }


def bench_clicks(bench: Bench, log: Callable[[str], None], store: str = "on") -> dict[str, Any]:
    rounds = bench.config.clicks
    tab = bench.new_tab()
    try:
        bench.open(tab, f"clicks-store-{store}.ipynb", CLICK_CELLS, store)
        run_cell(tab.page, 1)
        click_round(bench, tab, 0)  # warm-up: code loaded, first runs done
        clicks_before = tab.page.evaluate("() => window.__bench.clicks")
        for index in range(rounds):
            click_round(bench, tab, index + 1)
            if (index + 1) % 5 == 0 or index + 1 == rounds:
                log(f"clicks: {index + 1}/{rounds} rounds")
        tag = f"click-times-{uuid.uuid4().hex[:8]}"
        bench.set_source(tab, 6, f"bk.dump_times({tag!r})")
        run_cell(tab.page, 6)
        kernel = bench.wait_result(tab, tag, 30)
        clicks = tab.page.evaluate("() => window.__bench.clicks")
    finally:
        tab.close()
    if kernel is None:
        raise RuntimeError("the click benchmark's kernel times never came")
    results: dict[str, Any] = {"rounds": rounds, "store": store}
    for kind in ("baseline", "bg-approve", "bg-answer", "sync-approve", "sync-answer"):
        page_times = clicks.get(kind, [])
        kernel_times = kernel["times"].get(kind, [])
        skip = len(clicks_before.get(kind, []))
        if len(page_times) != len(kernel_times):
            raise RuntimeError(
                f"{kind}: {len(page_times)} clicks but {len(kernel_times)} kernel stamps"
            )
        latencies = [
            k * 1000 - p for p, k in zip(page_times[skip:], kernel_times[skip:], strict=True)
        ]
        results[kind] = {**_stats(latencies), "samples_ms": latencies}
    base = results["baseline"]["median_ms"]
    for kind in ("bg-approve", "bg-answer", "sync-approve", "sync-answer"):
        results[kind]["above_baseline_ms"] = results[kind]["median_ms"] - base
    return results


# --------------------------------------------------------------------------------------------
# Long transcripts
# --------------------------------------------------------------------------------------------

ENTRY_SELECTOR = ".anvia-transcript > .anvia-entry"
#: Every entry of a view, a sub-agent's (inside its tool call's block, at any depth) included.
ANY_ENTRY_SELECTOR = ".anvia-transcript .anvia-entry"
#: An older entry of a long view that is not built yet (a plain-text stand-in).
PENDING_SELECTOR = ".anvia-entry-pending"


def bench_long(bench: Bench, log: Callable[[str], None], store: str = "on") -> dict[str, Any]:
    return _long_views(bench, store, "long", "long_run")


def bench_nested(bench: Bench, log: Callable[[str], None], store: str = "on") -> dict[str, Any]:
    """A long transcript with three levels of sub-agents (bench_kernel.nested_long_run): the
    first render is every top-level entry drawn (a stand-in holds the place of an older entry
    with the sub-agents' block inside it), as for the flat one; every entry at every depth
    built is the second figure."""
    return _long_views(bench, store, "nested", "nested_long_run")


def _long_views(bench: Bench, store: str, name: str, kernel_call: str) -> dict[str, Any]:
    """A long run shown in cell 1, then displayed again in fresh views (cell 2): how soon each
    shows all its top-level entries (stand-ins count), and builds every entry."""
    config = bench.config
    entries = config.long_entries
    tab = bench.new_tab()
    page = tab.page
    try:
        bench.open(tab, f"{name}-store-{store}.ipynb", ["pass", "h"], store)
        heap_before = heap_used(tab.cdp)
        tag = f"{name}-{uuid.uuid4().hex[:8]}"
        bench.set_source(tab, 1, f"h = bk.{kernel_call}({tag!r}, {entries})")
        run_cell(page, 1)
        kernel = bench.wait_result(tab, tag, 300)
        if kernel is None:
            raise RuntimeError(f"the {name} run did not finish in time")
        # The kernel's count: the entries at every depth, and those inside sub-agents' blocks.
        total = kernel["entries"] if "nested_entries" in kernel else entries
        entries = total - kernel.get("nested_entries", 0)
        bench.settle(tab, quiet=1.0, limit=30)
        # The run's own view is drawn again at its end: let it finish (older entries included).
        page.evaluate(
            "([k, n, s, p]) => window.__bench.watchCount(k, 1, s, n, p)",
            [tag, total, ANY_ENTRY_SELECTOR, PENDING_SELECTOR],
        )
        if not bench.watch(tab, tag, 120)["found"]:
            raise RuntimeError("the run's own view never showed all its entries")
        page.wait_for_timeout(500)
        views = []
        for index in range(config.long_views):
            key = f"{tag}-view{index}"
            clear_output(tab, 2)
            page.evaluate(
                """([k, n, s, t, a, p]) => {
                  window.__bench.watchCount(k, 2, s, n);
                  window.__bench.watchCount(k + "-all", 2, a, t, p);
                }""",
                [key, entries, ENTRY_SELECTOR, total, ANY_ENTRY_SELECTOR, PENDING_SELECTOR],
            )
            with bench.tracing(tab, f"{name}-view-{index}-store-{store}"):
                started = page_now(page)
                run_cell(page, 2, wait=False)
                watch = bench.watch(tab, key, 60)
                built = bench.watch(tab, f"{key}-all", 60)
            if not watch["found"] or not built["found"]:
                raise RuntimeError(f"the second view never showed {entries} entries: {watch}")
            views.append(
                {
                    "first_render_ms": watch["tFrame"] - started,
                    "all_built_ms": built["tFrame"] - started,
                    "longest_task_ms": longest_task(page, started, built["tFrame"] + 200),
                }
            )
            bench.settle(tab, quiet=0.5, limit=10)
            page.wait_for_timeout(300)
        heap_after = heap_used(tab.cdp)
    finally:
        tab.close()
    return {
        "store": store,
        "entries": kernel["entries"],
        "nested_entries": kernel.get("nested_entries", 0),
        "run_s": kernel["t_done"] - kernel["t_start"],
        "snapshot_bytes": kernel["snapshot_bytes"],
        "views": views,
        "first_render_ms": statistics.median(v["first_render_ms"] for v in views),
        "all_built_ms": statistics.median(v["all_built_ms"] for v in views),
        "longest_task_ms": max(v["longest_task_ms"] for v in views),
        "heap_before_bytes": heap_before,
        "heap_after_bytes": heap_after,
    }


# --------------------------------------------------------------------------------------------
# Saved notebook size
# --------------------------------------------------------------------------------------------


def _save(tab: Tab) -> None:
    tab.page.evaluate(
        """() => {
          const e2e = window.__anviaE2E;
          const panel = e2e.panel(e2e.current);
          window.jupyterapp.shell.activateById(panel.id);
          return window.jupyterapp.commands.execute("docmanager:save");
        }"""
    )
    tab.page.wait_for_function(
        """() => {
          const e2e = window.__anviaE2E;
          return !e2e.panel(e2e.current).context.model.dirty;
        }""",
        polling=100,
    )


def _notebook_parts(path: Path) -> dict[str, int]:
    notebook = json.loads(path.read_text())
    widgets = notebook.get("metadata", {}).get("widgets", {})
    outputs = [o for cell in notebook["cells"] for o in cell.get("outputs", [])]

    def size(value: Any) -> int:
        return len(json.dumps(value).encode())

    return {
        "file_bytes": path.stat().st_size,
        "widget_state_bytes": size(widgets),
        "outputs_bytes": size(outputs),
    }


def bench_saved(bench: Bench, log: Callable[[str], None]) -> dict[str, Any]:
    count = bench.config.deltas
    results: dict[str, Any] = {"deltas": count}
    for variant in ("ours", "floor"):
        tab = bench.new_tab()
        try:
            name = f"saved-{variant}.ipynb"
            bench.open(tab, name, ["pass"])
            run = stream_once(bench, tab, variant, count, 0, 120)
            if not run["complete"]:
                raise RuntimeError(f"the {variant} run for the saved notebook did not complete")
            tab.page.wait_for_timeout(500)
            _save(tab)
            chars = len("".join(deltas(count, "x" * 14)))
            path = bench.server.root_dir / name
            parts = _notebook_parts(path)
            text_saved = "summary of what changed" in path.read_text()
            results[variant] = {**parts, "text_chars": chars, "text_in_file": text_saved}
            log(f"saved {variant}: {parts}, text in the file: {text_saved}")
        finally:
            tab.close()
    return results


# --------------------------------------------------------------------------------------------
# Kernel side
# --------------------------------------------------------------------------------------------


def bench_kernel_cost(config: Config) -> dict[str, Any]:
    """``kernel_cost.py`` in a process of its own (no Playwright loop in the way)."""
    command = [
        sys.executable,
        str(HERE / "kernel_cost.py"),
        "--json",
        "-",
        "--deltas",
        str(config.deltas),
        "--naive-deltas",
        str(config.naive_deltas),
        "--repeats",
        str(config.kernel_repeats),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def jupyter(workdir: Path) -> Iterator[JupyterServer]:
    settings = workdir / "user-settings"
    for relative, values in BENCH_USER_SETTINGS.items():
        target = settings / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values, indent=2))
    server = start_jupyter_server(workdir)
    try:
        yield server
    finally:
        stop_jupyter_server(server)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (CI)")
    parser.add_argument(
        "--json",
        type=Path,
        default=HERE / "results" / "browser_bench.json",
        help="where to write the figures (default: %(default)s)",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="DIR",
        help="write Chromium performance traces of the streaming runs and the long transcript's "
        "views, and a pyinstrument profile of the kernel side, into DIR",
    )
    parser.add_argument(
        "--only",
        choices=("kernel", "streaming", "clicks", "long", "nested", "saved"),
        action="append",
        help="run only these parts (repeatable)",
    )
    parser.add_argument(
        "--store",
        choices=("both", "on", "off"),
        default="both",
        help="run store for streaming, clicks and long transcripts: both side by side (default), "
        "only on (the default store) or only off (ANVIA_NOTEBOOK_STORE=off)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        help="streaming runs of each variant per pace and store (default: 3, or 1 with --quick)",
    )
    parser.add_argument(
        "--flat",
        action="store_true",
        help="streaming: only the flat-out runs (no paced ones)",
    )
    args = parser.parse_args(argv)
    stores = ("on", "off") if args.store == "both" else (args.store,)
    config = Config.make(args.quick, stores)
    if args.repeats is not None:
        config.repeats = args.repeats
    if args.flat:
        config.paces = ("flat",)
    parts = args.only or ["kernel", "streaming", "clicks", "long", "nested", "saved"]
    started = time.monotonic()

    def log(line: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {line}", flush=True)

    results: dict[str, Any] = {
        "mode": "quick" if args.quick else "full",
        "config": config.__dict__,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
    }
    if "kernel" in parts:
        log("kernel: start")
        results["kernel"] = bench_kernel_cost(config)
        if args.trace:
            args.trace.mkdir(parents=True, exist_ok=True)
            profile = args.trace / "kernel-profile.txt"
            subprocess.run(
                [sys.executable, str(HERE / "kernel_cost.py"), "--profile", str(profile)],
                check=True,
                timeout=600,
            )
    with tempfile.TemporaryDirectory(prefix="anvia-bench-") as tmp, jupyter(Path(tmp)) as server:
        log(f"jupyter lab at {server.base_url}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=find_chromium(), headless=True, args=list(CHROMIUM_ARGS)
            )
            results["machine"]["chromium"] = browser.version
            bench = Bench(server, browser, config, args.trace)
            by_store: list[tuple[str, Callable[..., dict[str, Any]]]] = [
                ("streaming", bench_streaming),
                ("clicks", bench_clicks),
                ("long", bench_long),
                ("nested", bench_nested),
            ]
            try:
                for name, step in by_store:
                    if name not in parts:
                        continue
                    for store in config.stores:
                        log(f"{name}, store {store}: start")
                        results[name if store == "on" else f"{name}{OFF_SUFFIX}"] = step(
                            bench, log, store
                        )
                    if "on" not in config.stores:  # the tables and targets read the plain key
                        results[name] = results.pop(f"{name}{OFF_SUFFIX}")
                if "saved" in parts:
                    log("saved: start")
                    results["saved"] = bench_saved(bench, log)
            finally:
                browser.close()
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    summary = bench_report.summarize(results)
    results["summary"] = summary
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    markdown = args.json.with_suffix(".md")
    markdown.write_text(bench_report.render(results, summary, markdown=True) + "\n")
    print()
    print(bench_report.render(results, summary, markdown=False))
    print()
    missed = [t["target"] for t in summary["targets"] if not t["met"]]
    log(f"{len(summary['targets']) - len(missed)} of {len(summary['targets'])} targets met")
    log(f"figures written to {args.json} (tables: {markdown})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
