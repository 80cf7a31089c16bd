import { afterEach, describe, expect, it } from "vitest";
import { CASE_STATUS_LABELS, EAGER_ROWS, formatDuration, formatScore, rowStatus } from "../src/views/evals";
import { buttons, byLabel, fixture, mount, snapshot, status, tick } from "./helpers";

afterEach(() => document.body.replaceChildren());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = Record<string, any>;
const clone = <T>(v: T): T => structuredClone(v);
const report = (): Msg => clone(fixture("evals.json")[0] as Msg);
const update = (): Msg => clone(fixture("evals_update.json")[0] as Msg);

function setup(first: Msg = report()) {
  const m = mount([], status("idle", { turn: 0 }), { mode: "evals", title: "Evaluation of support" });
  m.model.kernel(first);
  const rows = () => [...m.root.querySelectorAll('.anvia-eval-tbody [role="row"]')] as HTMLElement[];
  const cells = (i: number) => [...rows()[i]!.querySelectorAll('[role="cell"]')].map((td) => td.textContent);
  const text = (sel: string) => (m.root.querySelector(sel) as HTMLElement).textContent;
  return { ...m, rows, cells, text };
}

describe("evaluation report view", () => {
  it("shows progress, pass rate, metric means and one row per case", () => {
    const s = setup();
    expect(s.root.classList.contains("anvia-evals-mode")).toBe(true);
    expect(s.text(".anvia-eval-count")).toBe("2 of 3 cases");
    const one = report();
    one.report.summary = { ...one.report.summary, total: 1, finished: 1, errors: 2, status: "done" };
    one.report.rows = one.report.rows.slice(0, 1);
    const single = setup(one);
    expect(single.text(".anvia-eval-count")).toBe("1 of 1 case · done");
    expect(single.text(".anvia-eval-pass-rate")).toBe("Pass rate 50% · 2 errors");
    single.cleanup();
    const progress = s.root.querySelector("progress") as HTMLProgressElement;
    expect([progress.value, progress.max]).toEqual([2, 3]);
    expect(s.text(".anvia-eval-timing")).toMatch(/^elapsed 1\.\d s · about \d+ ms left$/);
    expect(s.text(".anvia-eval-pass-rate")).toBe("Pass rate 50% · 1 error");
    expect([...s.root.querySelectorAll(".anvia-eval-mean")].map((e) => e.textContent)).toEqual([
      "contains 1.00",
      "llm_judge —",
    ]);
    expect([...s.root.querySelectorAll('[role="columnheader"]')].map((th) => th.textContent)).toEqual([
      "#", "Case", "Status", "Output", "contains", "llm_judge", "Time",
    ]);
    expect(s.cells(0)).toEqual(["1", "case-1", "Passed", "Order A1001 is shipped.", "✓", "0.85", "812 ms"]);
    expect(s.cells(1)).toEqual(["2", "case-2", "Error", "ModelError: rate limited (429)", "", "", "40 ms"]);
    expect(s.cells(2)).toEqual(["3", "case-3", "Running", "", "", "", ""]);
    // the judge's reasoning is a tooltip on its score
    expect(s.rows()[0]!.querySelectorAll('[role="cell"]')[5]!.getAttribute("title")).toBe("Gives the status and the date.");
    expect(byLabel(s.root, "Stop").disabled).toBe(false);
  });

  it("shows model text as text, never as markup", () => {
    const msg = report();
    msg.report.rows[0].output = '<img src=x onerror="window.pwned=1"><a href="javascript:alert(1)">x</a>';
    msg.report.rows[0].name = "<b>bold</b>";
    msg.report.summary.metrics[0].name = "<i>m</i>";
    msg.report.rows[0].scores[0].metric = "<i>m</i>";
    const s = setup(msg);
    // The output is Markdown, sanitised: no image, no handler, no javascript: link.
    expect(s.root.querySelector("img, a[href], b, i, [onerror]")).toBeNull();
    expect(s.cells(0)[1]).toBe("<b>bold</b>");
    expect((window as unknown as Msg).pwned).toBeUndefined();
  });

  it("renders a case's output as Markdown, and an error as text", () => {
    const msg = report();
    msg.report.rows[0].output = "Order **A1001** is *shipped*:\n\n- box 1\n- box 2\n\n[track](https://example.com/t)";
    msg.report.rows[1].error = "ValueError: **not** markdown";
    const s = setup(msg);
    const cell = s.rows()[0]!.querySelectorAll('[role="cell"]')[3] as HTMLElement;
    expect(cell.querySelector("strong")?.textContent).toBe("A1001");
    expect(cell.querySelector("em")?.textContent).toBe("shipped");
    expect([...cell.querySelectorAll("li")].map((li) => li.textContent)).toEqual(["box 1", "box 2"]);
    const link = cell.querySelector("a") as HTMLAnchorElement;
    expect([link.getAttribute("href"), link.target, link.rel]).toEqual(["https://example.com/t", "_blank", "noopener noreferrer"]);
    expect(cell.title).toBe(msg.report.rows[0].output); // the whole text on hover
    expect(cell.textContent).not.toContain("**");
    const error = s.rows()[1]!.querySelectorAll('[role="cell"]')[3] as HTMLElement;
    expect(error.textContent).toBe("ValueError: **not** markdown");
    expect(error.querySelector("strong")).toBeNull();
  });

  it("shows each metric's full name: on hover, and in a column as wide as the name", () => {
    const msg = report();
    msg.report.summary.metrics[0].name = "short_enough";
    msg.report.rows[0].scores[0].metric = "short_enough";
    msg.report.summary.metrics[1].name = "a_very_long_metric_name_that_does_not_fit_anywhere";
    msg.report.rows[0].scores[1].metric = "a_very_long_metric_name_that_does_not_fit_anywhere";
    const s = setup(msg);
    const heads = [...s.root.querySelectorAll<HTMLElement>('[role="columnheader"]')];
    const metricHeads = heads.slice(4, 6);
    expect(metricHeads.map((th) => [th.textContent, th.title])).toEqual([
      ["short_enough", "short_enough"],
      ["a_very_long_metric_name_that_does_not_fit_anywhere", "a_very_long_metric_name_that_does_not_fit_anywhere"],
    ]);
    const table = s.root.querySelector(".anvia-eval-table") as HTMLElement;
    expect(table.style.getPropertyValue("--anvia-eval-columns")).toBe(
      "3em 9em 5.5em minmax(10em, 1fr) clamp(6.5em, 15ch, 18em) clamp(6.5em, 53ch, 18em) 5.5em",
    );
    expect(s.cells(0)[4]).toBe("✓");
  });

  it("fills rows in from numbered updates, and asks for the report again after a gap", () => {
    const s = setup();
    const before = s.rows()[0];
    s.model.kernel(update());
    expect(s.cells(2)).toEqual(["3", "case-3", "Failed", "I could not find it.", "✗", "error", "930 ms"]);
    expect(s.rows()[0]).toBe(before); // unchanged rows are not redrawn
    expect(s.text(".anvia-eval-count")).toBe("3 of 3 cases · done");
    expect(s.text(".anvia-eval-pass-rate")).toBe("Pass rate 33% · 1 error");
    expect(s.text(".anvia-eval-timing")).toBe("elapsed 1.3 s");
    expect(byLabel(s.root, "Stop").disabled).toBe(true);
    const syncs = s.model.ofType("sync").length;
    const gap = update();
    gap.seq = 5;
    gap.rows[0].output = "not applied";
    s.model.kernel(gap);
    expect(s.cells(2)[3]).toBe("I could not find it.");
    expect(s.model.ofType("sync").length).toBe(syncs + 1);
  });

  it("a row opens that case's transcript, shown below the table", async () => {
    const s = setup();
    const panel = s.root.querySelector(".anvia-eval-panel") as HTMLElement;
    expect(panel.hidden).toBe(true);
    byLabel(s.root, "case-3").click();
    expect(s.model.last("evals_open_case")).toEqual({ type: "evals_open_case", request_id: expect.any(String), index: 2 });
    s.model.kernel(
      snapshot([{ kind: "user", id: "u1", text: "Where is order A1001?" }, { kind: "assistant", id: "a1", turn: 1, text: "Let me look." }], status("running"), 3),
    );
    const opened = update();
    opened.seq = 1;
    opened.summary.status = "running";
    opened.summary.open = 2;
    opened.rows = [];
    s.model.kernel(opened);
    s.model.reply("evals_open_case");
    await tick();
    expect(panel.hidden).toBe(false);
    expect(s.text(".anvia-eval-panel-title")).toBe("Transcript of case-3");
    expect(panel.textContent).toContain("Let me look.");
    expect(s.rows()[2]!.getAttribute("aria-current")).toBe("true");
    // the case's trace is one more click away: Inspect asks the kernel for its model calls
    byLabel(panel, "Inspect").click();
    expect(s.model.last("inspect")).toEqual({ type: "inspect", request_id: expect.any(String), index: null });
    byLabel(s.root, "Close").click();
    expect(panel.hidden).toBe(true);
    // a case that has not started cannot be opened
    const pending = report();
    pending.report.rows[2].run_id = null;
    pending.report.rows[2].status = "pending";
    const t = setup(pending);
    expect(buttons(t.root).filter((b) => b.textContent === "case-3")[0]!.disabled).toBe(true);
  });

  it("says why a case could not be opened", async () => {
    const s = setup();
    byLabel(s.root, "case-2").click();
    s.model.reply("evals_open_case", false, "This case has not started yet.");
    await tick();
    expect(s.text(".anvia-eval-header .anvia-error-text")).toBe("This case has not started yet.");
  });

  it("Stop asks the kernel to stop the evaluation, once", async () => {
    const s = setup();
    const stop = byLabel(s.root, "Stop");
    stop.click();
    expect(s.model.last("stop")).toEqual({ type: "stop", request_id: expect.any(String), reason: null });
    expect(stop.disabled).toBe(true);
    s.model.reply("stop");
    await tick();
    s.model.kernel(clone(fixture("evals_update_stopped.json")[0] as Msg));
    // evals_update_stopped is seq 2: after seq 0 that is a gap, so the page resyncs
    expect(s.model.ofType("sync").length).toBeGreaterThan(1);
    s.model.kernel({ ...clone(fixture("evals_update_stopped.json")[0] as Msg), seq: 1 });
    expect(s.cells(1)[2]).toBe(CASE_STATUS_LABELS.cancelled);
    expect(s.cells(2)[2]).toBe("Pending");
    expect(s.text(".anvia-eval-count")).toBe("1 of 3 cases · stopped");
    expect(stop.disabled).toBe(true);
    expect(s.root.querySelector(".anvia-visually-hidden")!.textContent).toBe("Evaluation stopped");
  });

  it("turns its buttons off when the kernel stopped", async () => {
    const s = setup();
    expect(byLabel(s.root, "case-1").disabled).toBe(false);
    s.model.fire("comm_live_update");
    await tick();
    const banner = s.root.querySelector(".anvia-disconnected") as HTMLElement;
    expect(banner.hidden).toBe(false);
    expect(banner.textContent).toContain("Kernel stopped");
    expect(s.root.classList.contains("anvia-kernel-stopped")).toBe(true);
    for (const b of s.root.querySelectorAll("button")) {
      expect(b.disabled || ["Close", "Jump to latest"].includes(b.textContent ?? "")).toBe(true);
    }
    expect(s.text(".anvia-eval-timing")).toBe("elapsed 1.3 s · about 625 ms left");
  });

  it("draws a 1,000-case report's first rows at once and the rest in idle time", async () => {
    const msg = report();
    const row = msg.report.rows[0];
    // Plain answers (happy-dom renders Markdown far slower than a browser; the Markdown cost of a
    // 1,000-row report is measured in Chromium by benchmarks/evals_bench.py), and one in Markdown.
    msg.report.rows = Array.from({ length: 1000 }, (_, i) => ({ ...clone(row), index: i, name: `case-${i + 1}`, output: `Answer ${i + 1}.` }));
    msg.report.rows[950].output = "Order **A1951** is shipped.";
    msg.report.summary.total = 1000;
    const s = setup(msg);
    expect(s.rows().length).toBe(EAGER_ROWS);
    // an update to a row not built yet is what that row shows once built
    const later = update();
    later.rows = [{ ...clone(row), index: 900, name: "case-901", output: "updated before it was drawn" }];
    s.model.kernel(later);
    for (let i = 0; i < 1000 && s.rows().length < 1000; i++) await new Promise((r) => setTimeout(r, 20));
    expect(s.rows().length).toBe(1000);
    expect(s.cells(999)[1]).toBe("case-1000");
    expect(s.cells(900)[3]).toBe("updated before it was drawn");
    expect(s.cells(999)[3]).toBe("Answer 1000.");
    expect(s.rows()[950]!.querySelector(".anvia-eval-output strong")?.textContent).toBe("A1951"); // built in idle time
    expect(s.rows().map((r) => r.querySelector('[role="cell"]')!.textContent)).toEqual(
      Array.from({ length: 1000 }, (_, i) => String(i + 1)),
    );
  }, 30_000); // happy-dom builds DOM far slower than a browser (see benchmarks/evals_bench.py)
});

describe("formatting", () => {
  it("formats durations, scores and statuses", () => {
    expect([formatDuration(40), formatDuration(1250), formatDuration(12_400), formatDuration(125_000)]).toEqual([
      "40 ms", "1.3 s", "12 s", "2 min 5 s",
    ]);
    const score = { metric: "m", value: null, passed: null, error: null, reason: null };
    expect(formatScore({ ...score, value: true })).toBe("✓");
    expect(formatScore({ ...score, value: 0.456 })).toBe("0.46");
    expect(formatScore({ ...score, error: "boom" })).toBe("error");
    expect(formatScore(undefined)).toBe("");
    const row = { index: 0, name: "c", input: "", output: "", error: null, duration_ms: null, tokens: null, run_id: null, scores: [] };
    expect(rowStatus({ ...row, status: "success", passed: false })).toBe("Failed");
    expect(rowStatus({ ...row, status: "running", passed: null })).toBe("Running");
  });
});
