// The live view of an evaluation report (mode "evals"): a progress bar (n of N, elapsed, time
// left), Stop, the pass rate and the mean of each metric, one row per case that fills in as it
// finishes (status, output preview, scores), and the transcript of the case a person opens.
// Everything shown is text (text nodes and attributes set by code), except a case's output, which
// is the model's Markdown rendered as the transcript renders it (marked, then sanitised by
// DOMPurify and our own pass: no script, no handler, no fetched image); no input, error or metric
// name ever reaches innerHTML.
import { button, h, plural } from "../dom";
import { type IdleHandle, whenIdle } from "../frame";
import type { EvalsCaseStatus, EvalsRowView, EvalsScoreView, EvalsSummary } from "../protocol";
import type { Session, SessionEvent } from "../session";
import { inspectView } from "./inspect";
import { setMarkdown } from "./markdown";
import { requestStop, STATE_LABELS } from "./status";
import { transcriptView } from "./transcript";

export interface EvalsView {
  el: HTMLElement;
  dispose(): void;
}

/** Rows a fresh view builds at once; the rest are built in idle time (a few ms at a time), so a
 * 1,000-case report shows its first rows at once and stays responsive while the rest come. */
export const EAGER_ROWS = 100;
/** Characters of an output a cell holds (it shows one line; the tooltip has the whole preview). */
const CELL_CHARS = 160;

export const CASE_STATUS_LABELS: Record<EvalsCaseStatus, string> = {
  pending: "Pending",
  running: "Running",
  success: "Done",
  error: "Error",
  cancelled: "Not run",
};

/** "1.2 s", "2 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} min ${whole % 60} s`;
}

/** Text that Markdown would change (emphasis, code, links, headings, lists, quotes, tables, line
 * breaks, HTML or entities); other text is shown as it is, without the renderer's cost. */
const MARKDOWN_SYNTAX = /[*_`#>[\]|~<&\\\n]|^\s*(?:[-+]|\d+[.)])\s/;

/** A case's output: the model's Markdown, rendered and sanitised as the transcript does. */
function setOutputMarkdown(cell: HTMLElement, text: string): void {
  setMarkdown(cell, text);
  const last = cell.lastChild; // marked ends a block with a line break: not part of the text
  if (last?.nodeType === Node.TEXT_NODE && !last.textContent?.trim()) last.remove();
}

/** A metric's column: wide enough for its name (up to a bound), never narrower than a score. */
export function metricWidth(name: string): string {
  return `clamp(6.5em, ${name.length + 3}ch, 18em)`;
}

/** A score as a cell shows it. */
export function formatScore(score: EvalsScoreView | undefined): string {
  if (!score) return "";
  if (score.error !== null) return "error";
  const v = score.value;
  if (v === null) return "—";
  if (typeof v === "boolean") return v ? "✓" : "✗";
  return v.toFixed(2);
}

export const formatMean = (mean: number | null): string => (mean === null ? "—" : mean.toFixed(2));

/** What the status cell says: a finished case passed, failed, or its run failed. */
export function rowStatus(row: EvalsRowView): string {
  if (row.status === "success") return row.passed ? "Passed" : "Failed";
  return CASE_STATUS_LABELS[row.status];
}

const rowClass = (row: EvalsRowView, open: boolean): string =>
  `anvia-eval-tr anvia-eval-row anvia-eval-${row.status === "success" ? (row.passed ? "passed" : "failed") : row.status}` +
  (open ? " anvia-eval-open" : "");

export function evalsView(session: Session): EvalsView {
  const store = session.evals;
  const progress = h("progress", { class: "anvia-eval-progress", max: 1, value: 0, "aria-label": "Cases finished" });
  const count = h("span", { class: "anvia-eval-count" });
  const timing = h("span", { class: "anvia-eval-timing" });
  const stop = button("Stop", () => void requestStop(session, error, "Could not stop the evaluation", (on) => {
    stopping = on;
    renderHeader();
  }), { class: "anvia-button anvia-stop" });
  const error = h("span", { class: "anvia-error-text", hidden: true });
  const header = h("div", { class: "anvia-eval-header" }, progress, count, timing, error, stop);
  const passRate = h("span", { class: "anvia-eval-pass-rate" });
  const means = h("span", { class: "anvia-eval-means" });
  const summaryLine = h("div", { class: "anvia-eval-summary" }, passRate, means);
  // A grid of rows (ARIA table roles) rather than a <table>: each row lays out on its own and rows
  // out of view skip layout and paint (content-visibility), so a 1,000-case report draws fast
  // and a row filling in does not lay the others out again.
  const headRow = h("div", { class: "anvia-eval-tr anvia-eval-head", role: "row" });
  const body = h("div", { class: "anvia-eval-tbody", role: "rowgroup" });
  const table = h(
    "div",
    { class: "anvia-eval-table", role: "table", "aria-label": "Cases" },
    h("div", { class: "anvia-eval-thead", role: "rowgroup" }, headRow),
    body,
  );
  const tableWrap = h("div", { class: "anvia-eval-table-wrap" }, table);
  const banner = h("div", { class: "anvia-disconnected", hidden: true });
  const live = h("div", { class: "anvia-visually-hidden", "aria-live": "polite", "aria-atomic": "true" });

  // The transcript of the opened case.
  const panelTitle = h("span", { class: "anvia-eval-panel-title" });
  const panelState = h("span", { class: "anvia-status-meta" });
  const close = button("Close", () => {
    closedFor = store.summary?.open ?? null;
    renderPanel();
  }, { class: "anvia-button anvia-view-only" });
  const transcript = transcriptView(session);
  // The case's trace, one model call at a time (fetched from the kernel when opened).
  const inspect = inspectView(session);
  const panel = h(
    "section",
    { class: "anvia-eval-panel", hidden: true, "aria-label": "Case transcript" },
    h("div", { class: "anvia-eval-panel-header" }, panelTitle, panelState, inspect.button, close),
    transcript.el,
    inspect.el,
  );
  const el = h("div", { class: "anvia-evals" }, banner, header, summaryLine, tableWrap, panel, live);

  let stopping = false;
  let opening: number | null = null;
  /** The case whose panel a person closed (it shows again when another case is opened). */
  let closedFor: number | null = null;
  let columns = "";
  /** The row of each case, null while it waits to be built (in idle time). */
  const rowEls: (HTMLElement | null)[] = [];
  let idle: IdleHandle | null = null;
  let knownStatus: string | null = store.summary?.status ?? null;
  let ticker: ReturnType<typeof setInterval> | null = null;

  const running = (): boolean => store.summary?.status === "running" && !session.kernelStopped;

  function announce(text: string): void {
    live.textContent = live.textContent === text ? `${text}\u00a0` : text;
  }

  function renderHeader(): void {
    const s = store.summary;
    if (!s) {
      count.textContent = "Connecting…";
      timing.textContent = "";
      stop.disabled = true;
      return;
    }
    progress.max = Math.max(1, s.total);
    progress.value = s.finished;
    const state = s.status === "stopped" ? " · stopped" : s.status === "done" ? " · done" : "";
    count.textContent = `${s.finished} of ${plural(s.total, "case")}${state}`;
    renderTiming(s);
    stop.disabled = stopping || !running();
    passRate.textContent = s.pass_rate === null ? "Pass rate —" : `Pass rate ${Math.round(s.pass_rate * 100)}%`;
    if (s.errors > 0) passRate.textContent += ` · ${plural(s.errors, "error")}`;
    means.replaceChildren(
      ...s.metrics.map((m) => h("span", { class: "anvia-eval-mean" }, `${m.name} ${formatMean(m.mean)}`)),
    );
  }

  function renderTiming(s: EvalsSummary): void {
    const since = s.status === "running" && !session.kernelStopped ? performance.now() - store.receivedAt : 0;
    const parts = [`elapsed ${formatDuration(s.elapsed_ms + since)}`];
    if (s.status === "running" && s.eta_ms !== null) {
      parts.push(`about ${formatDuration(Math.max(0, s.eta_ms - since))} left`);
    }
    timing.textContent = parts.join(" · ");
  }

  function renderColumns(): void {
    const names = (store.summary?.metrics ?? []).map((m) => m.name);
    const key = JSON.stringify(names);
    if (key === columns) return;
    columns = key;
    // Columns: #, case, status, output (the rest of the width), one per metric (as wide as its
    // name, within bounds: a longer one wraps in its header), time.
    table.style.setProperty(
      "--anvia-eval-columns",
      ["3em 9em 5.5em minmax(10em, 1fr)", ...names.map(metricWidth), "5.5em"].join(" "),
    );
    const th = (label: string, extra: Record<string, string> = {}): HTMLElement =>
      h("div", { class: "anvia-eval-th", role: "columnheader", ...extra }, label);
    headRow.replaceChildren(
      ...["#", "Case", "Status", "Output"].map((label) => th(label)),
      ...names.map((label) => th(label, { title: label })),
      th("Time"),
    );
    rowEls.length = 0;
    body.replaceChildren();
  }

  function buildRow(row: EvalsRowView): HTMLElement {
    const open = store.summary?.open === row.index;
    const name = button(row.name, () => void openCase(row.index), {
      class: "anvia-eval-open-case",
      title: row.input,
      "aria-label": `Open the transcript of ${row.name}`,
      disabled: row.run_id === null || session.kernelStopped,
    });
    const output = row.status === "error" ? (row.error ?? "") : row.output;
    const scores = (store.summary?.metrics ?? []).map((m) => {
      const score = row.scores.find((s) => s.metric === m.name);
      const tip = score?.error ?? score?.reason ?? null;
      const cls = `anvia-eval-score${score?.passed === false ? " anvia-eval-score-failed" : ""}${score?.error ? " anvia-eval-score-error" : ""}`;
      return h("div", { class: `anvia-eval-td ${cls}`, role: "cell", title: tip }, formatScore(score));
    });
    const td = (cls: string, ...children: (Node | string)[]): HTMLElement =>
      h("div", { class: `anvia-eval-td ${cls}`, role: "cell" }, ...children);
    const outputCell = td(`anvia-eval-output${row.status === "error" ? " anvia-error-text" : " anvia-md"}`);
    if (row.status === "error" || !MARKDOWN_SYNTAX.test(output)) outputCell.textContent = output.slice(0, CELL_CHARS);
    else setOutputMarkdown(outputCell, output);
    if (output) outputCell.title = output;
    const tr = h(
      "div",
      { class: rowClass(row, open), role: "row", "aria-current": open ? "true" : null },
      td("anvia-eval-index", String(row.index + 1)),
      td("anvia-eval-name", name),
      td("anvia-eval-status", rowStatus(row)),
      outputCell,
      ...scores,
      td("anvia-eval-time", row.duration_ms === null ? "" : formatDuration(row.duration_ms)),
    );
    return tr;
  }

  /** Build (and append) rows from the first one not built, while `more()` says so. */
  function buildMore(more: () => boolean): void {
    const fragment = document.createDocumentFragment();
    let index = rowEls.indexOf(null);
    while (index !== -1 && index < rowEls.length && more()) {
      const row = store.rows[index];
      if (row) {
        const tr = buildRow(row);
        rowEls[index] = tr;
        fragment.appendChild(tr);
      }
      index++;
      if (index < rowEls.length && rowEls[index] !== null) index = rowEls.indexOf(null);
    }
    body.appendChild(fragment);
    idle = rowEls.includes(null) ? whenIdle(buildMore) : null;
  }

  function renderRows(changed: number[] | null): void {
    renderColumns();
    const rows = store.rows;
    if (changed === null || rowEls.length !== rows.length) {
      idle?.cancel();
      idle = null;
      rowEls.length = 0;
      for (let i = 0; i < rows.length; i++) rowEls.push(null);
      body.replaceChildren();
      let built = 0;
      buildMore(() => built++ < EAGER_ROWS);
      return;
    }
    for (const index of changed) {
      const row = rows[index];
      const old = rowEls[index];
      if (!row || !old) continue; // not built yet: built later from the current row
      const tr = buildRow(row);
      old.replaceWith(tr);
      rowEls[index] = tr;
    }
  }

  function renderOpen(previous: number | null): void {
    const open = store.summary?.open ?? null;
    for (const index of new Set([previous, open])) {
      if (index === null) continue;
      const row = store.rows[index];
      const old = rowEls[index];
      if (!row || !old) continue;
      const tr = buildRow(row);
      old.replaceWith(tr);
      rowEls[index] = tr;
    }
  }

  function renderPanel(): void {
    const open = store.summary?.open ?? null;
    const row = open === null ? undefined : store.rows[open];
    panel.hidden = !row || closedFor === open;
    if (!row) return;
    panelTitle.textContent = `Transcript of ${row.name}`;
    const st = session.store.status;
    panelState.textContent = session.store.seq === null ? "" : STATE_LABELS[st.state];
  }

  function renderBanner(): void {
    if (session.kernelStopped) {
      banner.textContent =
        "Kernel stopped: this report is no longer live. Its finished cases are stored runs: anvia_notebook.runs() lists them in the new kernel.";
      banner.hidden = false;
    } else {
      banner.textContent = "Kernel disconnected";
      banner.hidden = !session.disconnected;
    }
  }

  function syncTicker(): void {
    if (running() && ticker === null) {
      ticker = setInterval(() => {
        if (store.summary) renderTiming(store.summary);
      }, 1000);
    } else if (!running() && ticker !== null) {
      clearInterval(ticker);
      ticker = null;
    }
  }

  async function openCase(index: number): Promise<void> {
    if (opening !== null) return;
    opening = index;
    error.hidden = true;
    closedFor = null;
    const reply = await session.request({ type: "evals_open_case", index });
    opening = null;
    if (!reply.ok) {
      error.textContent = reply.error ?? "Could not open the case";
      error.hidden = false;
    }
    renderPanel();
  }

  let lastOpen: number | null = store.summary?.open ?? null;
  function onEvent(ev: SessionEvent): void {
    if (ev.type === "evals") {
      const s = store.summary;
      if (s && knownStatus !== null && s.status !== knownStatus) {
        if (s.status === "done") announce("Evaluation finished");
        else if (s.status === "stopped") announce("Evaluation stopped");
        else if (s.status === "running") announce("Evaluation started");
      }
      if (s && s.status !== "running") stopping = false;
      knownStatus = s?.status ?? null;
      renderHeader();
      renderRows(ev.rows);
      const open = s?.open ?? null;
      if (open !== lastOpen) {
        renderOpen(lastOpen);
        lastOpen = open;
      }
      renderPanel();
      syncTicker();
    } else if (ev.type === "status" || ev.type === "reset") {
      renderPanel();
    } else if (ev.type === "connection") {
      renderBanner();
      renderHeader();
      syncTicker();
      if (session.kernelStopped) for (const b of body.querySelectorAll("button")) b.disabled = true;
    }
  }

  renderBanner();
  renderHeader();
  renderRows(null);
  renderPanel();
  syncTicker();
  const unsubscribe = session.subscribe(onEvent);
  return {
    el,
    dispose: () => {
      unsubscribe();
      transcript.dispose();
      inspect.dispose();
      idle?.cancel();
      if (ticker !== null) clearInterval(ticker);
    },
  };
}
