// A sub-agent's entries (agent.as_tool) drawn inside the tool call that runs it, in a block of
// their own, with a nested approval that names the path (lead › analyst › run_sql) and decides
// by its id, as the top-level run's own do.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ApprovalView, Entry } from "../src/protocol";
import { batch, byLabel, mount, status, tick, toolEntry } from "./helpers";

afterEach(() => document.body.replaceChildren());

const nestedApproval: ApprovalView = {
  id: "ap_nested",
  status: "pending",
  reason: "Runs a query on the warehouse.",
  args: { sql: "select 1" },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
  path: ["lead", "analyst"],
};

const lead = (): Entry =>
  toolEntry("t1", {
    tool_name: "ask_analyst",
    arguments: '{"prompt":"which region?"}',
    sub_agent: { agent_id: "analyst", agent_name: null, run_id: "run_sub" },
  });
const nestedSql = (extra: Partial<Extract<Entry, { kind: "tool" }>> = {}): Entry =>
  toolEntry("t2", {
    tool_name: "run_sql",
    arguments: '{"sql":"select 1"}',
    status: "approval_required",
    approval: nestedApproval,
    parent: "t1",
    ...extra,
  });

describe("sub-agent block", () => {
  it("draws the sub-agent's entries inside its tool call, with the path on the approval", () => {
    const { root } = mount(
      [lead(), { kind: "assistant", id: "a1", turn: 1, text: "looking", parent: "t1" }, nestedSql()],
      status("waiting"),
    );
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    const top = [...list.children];
    expect(top).toHaveLength(1); // only the lead's tool call at the top level
    const block = top[0]!.querySelector(".anvia-subagent") as HTMLDetailsElement;
    expect(block.hidden).toBe(false);
    expect(block.open).toBe(true);
    expect(block.querySelector(".anvia-subagent-summary")?.textContent).toBe("Sub-agent analyst");
    const nested = block.querySelector(".anvia-subagent-entries") as HTMLElement;
    expect([...nested.children].map((e) => e.className)).toEqual([
      "anvia-entry anvia-entry-assistant",
      "anvia-entry anvia-entry-tool",
    ]);
    const panel = nested.querySelector('[role="alertdialog"]') as HTMLElement;
    expect(panel.getAttribute("aria-label")).toBe("Approval required for lead \u203a analyst \u203a run_sql");
    expect(panel.querySelector(".anvia-panel-title")?.textContent).toBe(
      "Approval required for lead \u203a analyst \u203a run_sql",
    );
    expect(panel.querySelector("label")?.textContent).toBe(
      " Always allow lead \u203a analyst \u203a run_sql in this session",
    );
    // both the lead's tool call and the nested one are open: the approval is in view
    expect((top[0] as HTMLDetailsElement).open).toBe(true);
    expect((nested.children[1] as HTMLDetailsElement).open).toBe(true);
  });

  it("Approve sends the nested approval's id, as for the run's own", () => {
    const { model, root } = mount([lead(), nestedSql()], status("waiting"));
    const panel = root.querySelector('[role="alertdialog"]') as HTMLElement;
    byLabel(panel, "Approve").click();
    expect(model.last("approval_decision")).toMatchObject({ approval_id: "ap_nested", approved: true });
  });

  it("entries added later go into the block, three levels deep too", async () => {
    const { model, root } = mount([toolEntry("t1", { tool_name: "ask_mid" })], status("running"));
    batch(
      model,
      { op: "patch", id: "t1", changes: { sub_agent: { agent_id: "mid", agent_name: "Middle", run_id: "r2" } } },
      { op: "add", entry: toolEntry("t2", { tool_name: "ask_deep", parent: "t1" }) },
      { op: "patch", id: "t2", changes: { sub_agent: { agent_id: "deep", run_id: "r3" } } },
      { op: "add", entry: { kind: "assistant", id: "a3", turn: 1, text: "deepest", parent: "t2" } },
    );
    await tick();
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    expect(list.children).toHaveLength(1);
    const titles = [...list.querySelectorAll(".anvia-subagent-summary")].map((s) => s.textContent);
    expect(titles).toEqual(["Sub-agent Middle", "Sub-agent deep"]);
    const deepest = [...list.querySelectorAll(".anvia-entry-assistant")].find((e) => e.textContent?.includes("deepest"));
    expect(deepest?.closest(".anvia-entry-tool")?.querySelector(".anvia-tool-name")?.textContent).toBe("ask_deep");
  });

  it("a plain tool call shows no sub-agent block", () => {
    const { root } = mount([toolEntry("t1")], status("running"));
    expect((root.querySelector(".anvia-subagent") as HTMLElement).hidden).toBe(true);
  });
});

/** `turns` turns of a lead whose tool call runs a sub-agent that runs another (two levels). */
function nestedTranscript(turns: number): Entry[] {
  const out: Entry[] = [{ kind: "user", id: "u0", text: "Check every item." }];
  for (let i = 1; i <= turns; i++) {
    out.push({ kind: "assistant", id: `a${i}`, turn: i, text: `Step ${i}.` });
    out.push(toolEntry(`t${i}`, { turn: i, status: "done", tool_name: "ask_mid",
      sub_agent: { agent_id: "mid", agent_name: null, run_id: `rm${i}` } }));
    out.push(toolEntry(`m${i}`, { turn: 1, status: "done", tool_name: "ask_deep", parent: `t${i}`,
      sub_agent: { agent_id: "deep", agent_name: null, run_id: `rd${i}` } }));
    out.push({ kind: "assistant", id: `d${i}`, turn: 1, text: `deep ${i}`, parent: `m${i}` });
    out.push({ kind: "assistant", id: `s${i}`, turn: 2, text: `mid ${i}`, parent: `t${i}` });
  }
  return out;
}

describe("a long transcript with sub-agents", () => {
  const top = (root: HTMLElement) => [...root.querySelectorAll<HTMLElement>(".anvia-transcript > .anvia-entry")];
  const deepText = (el: Element) =>
    [...el.querySelectorAll(".anvia-entry-assistant .anvia-md")].map((e) => e.textContent?.trim() ?? "");

  it("a stand-in holds the place of an older sub-agent block; the newest calls are built folded", () => {
    const { root } = mount(nestedTranscript(60));
    const rows = top(root);
    expect(rows).toHaveLength(1 + 60 * 2); // the sub-agents' entries are inside their blocks
    const oldest = rows[2]!;
    expect(oldest.classList.contains("anvia-entry-pending")).toBe(true);
    expect(oldest.querySelector(".anvia-entry")).toBeNull(); // nothing built inside a stand-in
    const newest = rows.at(-1)! as HTMLDetailsElement;
    expect(newest.classList.contains("anvia-entry-pending")).toBe(false);
    // The call is over, so folded: its sub-agents' entries are out of sight, not built yet.
    expect(newest.open).toBe(false);
    expect(newest.querySelector(".anvia-entry")).toBeNull();
  });

  it("a folded call's sub-agents' entries are built when it opens, in order, at every depth", () => {
    const { root } = mount(nestedTranscript(60));
    const newest = top(root).at(-1)! as HTMLDetailsElement;
    newest.open = true;
    newest.dispatchEvent(new Event("toggle")); // (as the browser does, a moment later)
    expect(deepText(newest)).toEqual(["deep 60", "mid 60"]);
    const deep = [...newest.querySelectorAll(".anvia-entry-assistant")][0]!;
    expect(deep.closest(".anvia-entry-tool")?.querySelector(".anvia-tool-name")?.textContent).toBe("ask_deep");
  });

  it("building an older block builds its sub-agents' entries, in order, at every depth", async () => {
    const { root } = mount(nestedTranscript(60));
    // Idle time builds the stand-ins, then the folded calls' sub-agents' entries: all of them.
    await vi.waitFor(() => expect(root.querySelectorAll(".anvia-transcript .anvia-entry").length).toBe(1 + 60 * 5), {
      timeout: 5000,
    });
    expect(root.querySelectorAll(".anvia-entry-pending").length).toBe(0);
    const oldest = top(root)[2]!;
    expect(deepText(oldest)).toEqual(["deep 1", "mid 1"]);
    const deep = [...oldest.querySelectorAll(".anvia-entry-assistant")][0]!;
    expect(deep.closest(".anvia-entry-tool")?.querySelector(".anvia-tool-name")?.textContent).toBe("ask_deep");
    expect(root.querySelectorAll(".anvia-transcript .anvia-entry").length).toBe(1 + 60 * 5);
  });

  it("a sub-agent's entry that changes or is added inside an older block builds that block", () => {
    const { model, root } = mount(nestedTranscript(60));
    batch(
      model,
      { op: "append", id: "d1", field: "text", text: " more" },
      { op: "add", entry: { kind: "assistant", id: "x1", turn: 3, text: "later", parent: "m1" } },
    );
    const oldest = top(root)[2]!;
    expect(oldest.classList.contains("anvia-entry-pending")).toBe(false);
    expect(deepText(oldest)).toEqual(["deep 1 more", "later", "mid 1"]);
    expect(oldest.querySelectorAll(".anvia-entry-assistant")).toHaveLength(3);
  });

  it("a sub-agent's entry added inside a folded call builds that call's block", () => {
    const { model, root } = mount(nestedTranscript(60));
    batch(model, { op: "add", entry: { kind: "assistant", id: "x60", turn: 3, text: "later", parent: "m60" } });
    const newest = top(root).at(-1)!;
    expect(deepText(newest)).toEqual(["deep 60", "later", "mid 60"]);
  });

  it("an older block where a sub-agent's approval waits is built at once", () => {
    const entries = nestedTranscript(60);
    const index = entries.findIndex((e) => e.id === "m2");
    entries[index] = toolEntry("m2", { tool_name: "run_sql", parent: "t2", status: "approval_required",
      approval: nestedApproval });
    const { root } = mount(entries, status("waiting"));
    const block = top(root)[4]!;
    expect(block.classList.contains("anvia-entry-pending")).toBe(false);
    expect(block.querySelector('[role="alertdialog"]')).not.toBeNull();
  });
});
