// The Inspect view and the run summary in the status line.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { InspectTurnView } from "../src/protocol";
import { batch, byLabel, fixture, mount, status, tick } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
  vi.restoreAllMocks();
});

const [okReply, refusedReply] = fixture("inspect_reply.json") as {
  type: string;
  ok: boolean;
  count: number;
  turn: InspectTurnView | null;
}[];
const turn0 = okReply!.turn!;

function finishedRun() {
  const m = mount([{ kind: "user", id: "u", text: "Is item 7 in stock?" }], status("success", { turn: 2, input_tokens: 280, output_tokens: 23 }));
  const toggle = () => byLabel(m.root, "Inspect");
  const panel = () => m.root.querySelector(".anvia-inspect") as HTMLElement;
  /** Answer the page's last `inspect` request as the kernel would. */
  const answer = (reply: Record<string, unknown>) =>
    m.model.kernel({ ...reply, request_id: m.model.last("inspect").request_id });
  return { ...m, toggle, panel, answer };
}

describe("Inspect", () => {
  it("asks the kernel for nothing until it is opened, then for the latest model call", () => {
    const v = finishedRun();
    expect(v.model.ofType("inspect")).toHaveLength(0);
    expect(v.panel().hidden).toBe(true);
    v.toggle().click();
    expect(v.panel().hidden).toBe(false);
    expect(v.toggle().getAttribute("aria-expanded")).toBe("true");
    expect(v.model.last("inspect")).toEqual({ type: "inspect", request_id: expect.any(String), index: null });
  });

  it("shows the request's tool schemas, the response, the usage and the timings, as text", async () => {
    const v = finishedRun();
    v.toggle().click();
    v.answer(okReply!);
    await tick();
    const panel = v.panel();
    expect(panel.querySelector(".anvia-inspect-where")?.textContent).toBe("Model call 1 of 2 (turn 1)");
    const facts = Object.fromEntries(
      [...panel.querySelectorAll(".anvia-inspect-facts dt")].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]),
    );
    expect(facts).toMatchObject({
      Model: "queue-model (offline)",
      "First token": "213 ms",
      Duration: "640 ms",
      Usage: "120 in / 15 out tokens (100 cached)",
      "Finish reason": "tool_calls",
    });
    const schema = panel.querySelector(".anvia-inspect-schema") as HTMLElement;
    expect(JSON.parse(schema.textContent!)).toMatchObject({ properties: { item: { type: "integer" } }, required: ["item"] });
    expect(panel.querySelector(".anvia-inspect-tool code")?.textContent).toBe("lookup");
    expect(panel.querySelector(".anvia-inspect-response")?.textContent).toBe("Checking item **7**.");
    // Model text stays text: the instructions hold a script tag, shown as written, never run.
    const instructions = panel.querySelector(".anvia-inspect-instructions-section") as HTMLDetailsElement;
    expect(instructions.querySelector(".anvia-inspect-instructions")).toBeNull(); // built when opened
    instructions.open = true;
    instructions.dispatchEvent(new Event("toggle"));
    expect(instructions.querySelector(".anvia-inspect-instructions")?.textContent).toContain("<script>alert(1)</script>");
    expect(panel.querySelector("script")).toBeNull();
    expect(byLabel(panel, "Previous call").disabled).toBe(true);
    expect(byLabel(panel, "Next call").disabled).toBe(false);
  });

  it("moves between model calls, one request each", async () => {
    const v = finishedRun();
    v.toggle().click();
    v.answer(okReply!);
    await tick();
    byLabel(v.panel(), "Next call").click();
    expect(v.model.last("inspect").index).toBe(1);
    v.answer({ ...okReply!, turn: { ...turn0, index: 1, turn: 2, response_text: "Item 7 is in stock." } });
    await tick();
    expect(v.panel().querySelector(".anvia-inspect-where")?.textContent).toBe("Model call 2 of 2 (turn 2)");
    expect(v.panel().querySelector(".anvia-inspect-response")?.textContent).toBe("Item 7 is in stock.");
    expect(byLabel(v.panel(), "Next call").disabled).toBe(true);
  });

  it("folds a long response like the transcript", async () => {
    const v = finishedRun();
    v.toggle().click();
    v.answer({ ...okReply!, turn: { ...turn0, response_text: "word ".repeat(5_000) } });
    await tick();
    const response = v.panel().querySelector(".anvia-inspect-response") as HTMLElement;
    expect(response.textContent!.length).toBeLessThan(1_000);
    expect(byLabel(v.panel(), "Show more")).toBeTruthy();
  });

  it("says why when the kernel refuses, and ignores a malformed reply with a warning", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const v = finishedRun();
    v.toggle().click();
    v.answer({ ...okReply!, turn: { ...turn0, tools: [{ name: "lookup", description: "x" }] } });
    await tick();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("anvia: ignored a malformed message"), expect.anything());
    expect(v.panel().querySelector(".anvia-inspect-tool")).toBeNull();
    v.answer(refusedReply!);
    await tick();
    const error = v.panel().querySelector('[role="alert"]') as HTMLElement;
    expect(error.hidden).toBe(false);
    expect(error.textContent).toBe("Could not inspect the run: This run made 2 model calls; there is no call 6.");
  });

  it("is offered once the run has made a model call", () => {
    const m = mount([], status("running", { turn: 0 }));
    expect(m.root.querySelector(".anvia-inspect-toggle")?.hasAttribute("hidden")).toBe(true);
    batch(m.model, { op: "status", status: status("running", { turn: 1 }) });
    expect(m.root.querySelector<HTMLButtonElement>(".anvia-inspect-toggle")!.hidden).toBe(false);
  });
});

describe("run summary in the status line", () => {
  it("adds the time to the first token and the whole time once the run has ended", () => {
    const [summary] = fixture("batch_status_run_summary.json") as { ops: { status: Record<string, unknown> }[] }[];
    const m = mount([], status("running", { turn: 2, input_tokens: 280, output_tokens: 23 }));
    const meta = () => m.root.querySelector(".anvia-status-meta")?.textContent;
    expect(meta()).toBe("Turn 2 · 280 in / 23 out tokens");
    m.model.kernel({ ...summary, seq: 1 });
    expect(meta()).toBe("Turn 2 · 280 in / 23 out tokens · first token after 213 ms · 1.8 s in all");
  });
});

describe("a model that reports no usage (an offline one)", () => {
  it("has no token counts in Inspect, rather than 0 in / 0 out", async () => {
    const v = finishedRun();
    v.toggle().click();
    v.answer({ ...okReply!, turn: { ...turn0, input_tokens: 0, output_tokens: 0, cached_tokens: null } });
    await tick();
    const usage = [...v.panel().querySelectorAll(".anvia-inspect-facts dt")].find((dt) => dt.textContent === "Usage");
    expect(usage?.nextElementSibling?.textContent).toBe("no token counts (the model reported none)");
  });

  it("shows a raised tool's traceback folded, under the short result the model saw", async () => {
    const v = finishedRun();
    v.toggle().click();
    const traceback = [
      "Traceback (most recent call last):",
      '  File "shop.py", line 12, in lookup',
      "    _connect()",
      "RuntimeError: could not look up <A1>",
    ].join("\n");
    const [call] = turn0.tool_calls;
    const failed = { ...call!, id: "c2", status: "error", result: "ToolCallError: could not look up <A1>", traceback };
    v.answer({ ...okReply!, turn: { ...turn0, tool_calls: [call!, failed] } });
    await tick();
    const calls = v.panel().querySelector(".anvia-inspect-calls") as HTMLDetailsElement;
    calls.open = true;
    calls.dispatchEvent(new Event("toggle"));
    const folds = calls.querySelectorAll<HTMLDetailsElement>(".anvia-inspect-call-traceback");
    expect(folds).toHaveLength(1); // the call that succeeded has none
    const fold = folds[0]!;
    expect(fold.open).toBe(false);
    expect(fold.querySelector("summary")?.textContent).toBe("Traceback: RuntimeError: could not look up <A1>");
    expect(fold.querySelector(".anvia-inspect-traceback")?.textContent).toBe(traceback);
    expect(fold.closest(".anvia-inspect-call")?.querySelector(".anvia-inspect-call-result")?.textContent).toBe(
      "ToolCallError: could not look up <A1>",
    );
    expect(calls.querySelector("script, a")).toBeNull(); // text, never HTML
  });

  it("has no token counts in the run summary once the run has ended", () => {
    const m = mount([], status("running", { turn: 1 }));
    const meta = () => m.root.querySelector(".anvia-status-meta")?.textContent;
    expect(meta()).toBe("Turn 1"); // under way: its counts may still come
    batch(m.model, { op: "status", status: status("success", { turn: 1, first_token_ms: 55, duration_ms: 377 }) });
    expect(meta()).toBe("Turn 1 · no token counts · first token after 55 ms · 377 ms in all");
    expect(meta()).not.toContain("0 in");
  });
});

describe("Inspect in a Studio", () => {
  it("shows the new run's latest call when another run starts while it is open", async () => {
    const m = mount([], status("success", { turn: 1, run_id: "run_1" }), { mode: "studio" });
    byLabel(m.root, "Inspect").click();
    const first = m.model.last("inspect");
    m.model.kernel({ ...okReply!, request_id: first.request_id });
    await tick();
    batch(m.model, { op: "status", status: status("running", { turn: 1, run_id: "run_2" }) });
    const second = m.model.last("inspect");
    expect(second.request_id).not.toBe(first.request_id);
    expect(second.index).toBeNull();
  });
});
