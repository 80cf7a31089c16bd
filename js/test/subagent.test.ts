// A sub-agent's entries (agent.as_tool) drawn inside the tool call that runs it, in a block of
// their own, with a nested approval that names the path (lead › analyst › run_sql) and decides
// by its id, as the top-level run's own do.
import { afterEach, describe, expect, it } from "vitest";
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
