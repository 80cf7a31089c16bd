import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalView } from "../src/protocol";
import { batch, buttons, byLabel, byPlaceholder, mount, status, tick, toolEntry, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const pending: ApprovalView = {
  id: "ap_1",
  status: "pending",
  reason: "Review refund of $25.5 for order A-1001.",
  args: { order_id: "A-1001", amount: 25.5 },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
};

function setupWith(approval: ApprovalView) {
  const m = mount([toolEntry("t1", { status: "approval_required", approval })], status("waiting"));
  const panel = m.root.querySelector('[role="alertdialog"]') as HTMLElement;
  return { ...m, panel };
}
const setup = () => setupWith(pending);

const editor = (panel: HTMLElement) => panel.querySelector("textarea") as HTMLTextAreaElement;
const errorText = (panel: HTMLElement) => panel.querySelector(".anvia-approval-error") as HTMLElement;
const editError = (panel: HTMLElement) => panel.querySelector(".anvia-edit-error") as HTMLElement;

describe("approval panel", () => {
  it("shows the tool, the reason and the arguments, named for assistive tech", () => {
    const { panel } = setup();
    expect(panel.getAttribute("aria-label")).toBe("Approval required for issue_refund");
    expect(panel.textContent).toContain("Review refund of $25.5 for order A-1001.");
    expect(panel.querySelector(".anvia-approval-args")?.textContent).toBe('{\n  "order_id": "A-1001",\n  "amount": 25.5\n}');
    expect(buttons(panel).map((b) => b.textContent)).toEqual(["Edit arguments", "Approve", "Reject"]);
    expect(byPlaceholder(panel, "Reason (optional)")).toBeTruthy();
    expect(panel.querySelector("label")?.textContent).toBe(" Always allow issue_refund in this session");
  });

  it("rejects with a reason and disables every control until the reply", async () => {
    const { model, panel } = setup();
    type(byPlaceholder(panel, "Reason (optional)"), "  Amount too high ");
    byLabel(panel, "Reject").click();
    expect(model.last("approval_decision")).toEqual({
      type: "approval_decision",
      request_id: expect.any(String),
      approval_id: "ap_1",
      approved: false,
      reason: "Amount too high",
      edited_args: null,
      edited_args_json: null,
      always_allow: false,
    });
    for (const b of buttons(panel)) expect(b.disabled).toBe(true);
    expect(byPlaceholder(panel, "Reason (optional)").disabled).toBe(true);
    model.reply("approval_decision", true);
    await tick();
    for (const b of buttons(panel)) expect(b.disabled).toBe(true);
  });

  it("keeps a reason typed before Approve", () => {
    const { model, panel } = setup();
    type(byPlaceholder(panel, "Reason (optional)"), " Checked the order history ");
    byLabel(panel, "Approve").click();
    expect(model.last("approval_decision")).toMatchObject({
      approved: true,
      reason: "Checked the order history",
    });
  });

  it("rejects without a reason as null", () => {
    const { model, panel } = setup();
    byLabel(panel, "Reject").click();
    expect(model.last("approval_decision")).toMatchObject({ approved: false, reason: null });
  });

  it("re-enables the buttons with an error message when the reply is ok:false", async () => {
    const { model, panel } = setup();
    byLabel(panel, "Approve").click();
    model.reply("approval_decision", false, "Approval ap_1 is already decided");
    await tick();
    for (const b of buttons(panel)) expect(b.disabled).toBe(false);
    expect(errorText(panel).hidden).toBe(false);
    expect(errorText(panel).textContent).toContain("Approval ap_1 is already decided");
  });

  it("validates edited arguments before approving with them", async () => {
    const { model, panel } = setup();
    const edit = byLabel(panel, "Edit arguments");
    expect(editor(panel).hidden).toBe(true);
    edit.click();
    expect(edit.getAttribute("aria-expanded")).toBe("true");
    expect(editor(panel).hidden).toBe(false);
    expect(JSON.parse(editor(panel).value)).toEqual(pending.args);

    editor(panel).value = '{"order_id": "A-1001", "amount": ';
    byLabel(panel, "Approve").click();
    expect(model.ofType("approval_decision")).toHaveLength(0);
    expect(editError(panel).textContent).toContain("not valid JSON");
    expect(editor(panel).getAttribute("aria-invalid")).toBe("true");
    expect(byLabel(panel, "Approve").disabled).toBe(false);

    editor(panel).value = "[1, 2]";
    byLabel(panel, "Approve").click();
    expect(model.ofType("approval_decision")).toHaveLength(0);
    expect(editError(panel).textContent).toContain("must be a JSON object");

    editor(panel).value = '{"order_id": "A-1001", "amount": 20}';
    byLabel(panel, "Approve").click();
    expect(model.last("approval_decision")).toMatchObject({
      approval_id: "ap_1",
      approved: true,
      reason: null,
      edited_args: null,
      edited_args_json: '{"order_id": "A-1001", "amount": 20}', // read by the kernel
      always_allow: false,
    });
    expect(editError(panel).hidden).toBe(true);
    expect(errorText(panel).hidden).toBe(true);
    expect(editor(panel).hasAttribute("aria-invalid")).toBe(false);
  });

  it("shows a 64-bit id as the kernel wrote it, and an editor opened only to read edits nothing", () => {
    // JavaScript's numbers round 9007199254740993 to ...992: the card showed, and "Approve"
    // with the editor open sent back, an id the model never asked for.
    const big = { ...pending, args: { order_id: 9007199254740992 }, args_json: '{"order_id":9007199254740993}' };
    const { model, panel } = setupWith(big);
    expect(panel.querySelector(".anvia-approval-args")?.textContent).toContain("9007199254740993");
    byLabel(panel, "Edit arguments").click();
    expect(editor(panel).value).toBe('{\n  "order_id": 9007199254740993\n}');
    byLabel(panel, "Approve").click();
    expect(model.last("approval_decision")).toMatchObject({ approved: true, edited_args: null, edited_args_json: null });
  });

  it("shows a direction override in the model's reason as an escape, as in the arguments", () => {
    const reason = "Send the file \u202etxt.exe to the printer.";
    const { panel } = setupWith({ ...pending, reason });
    expect(panel.querySelector(".anvia-approval-reason")?.textContent).toContain("\\u202etxt.exe");
  });

  it("sends always_allow when the box is ticked", () => {
    const { model, panel } = setup();
    const box = panel.querySelector('input[type="checkbox"]') as HTMLInputElement;
    box.click();
    expect(box.checked).toBe(true);
    byLabel(panel, "Approve").click();
    expect(model.last("approval_decision")).toMatchObject({ approved: true, edited_args: null, always_allow: true });
  });

  it("keeps what the user typed across unrelated patches", () => {
    const { model, root, panel } = setup();
    type(byPlaceholder(panel, "Reason (optional)"), "draft");
    batch(model, { op: "append", id: "t1", field: "output", text: "x" });
    batch(model, { op: "patch", id: "t1", changes: { approval: { ...pending } } });
    expect(byPlaceholder(root, "Reason (optional)").value).toBe("draft");
  });

  it("replaces the panel by an inline line after the decision", () => {
    const { model, root } = setup();
    batch(model, {
      op: "patch",
      id: "t1",
      changes: {
        status: "rejected",
        approval: { ...pending, status: "rejected", decided_by: "human", decided_via: "widget", decided_at: "2026-05-01T10:15:00Z", decision_reason: "Amount too high" },
      },
    });
    expect(root.querySelector('[role="alertdialog"]')).toBeNull();
    const line = root.querySelector(".anvia-decision") as HTMLElement;
    expect(line.textContent).toMatch(/^Rejected by you at .+\. Reason: Amount too high$/);
    expect(line.querySelector("time")?.getAttribute("datetime")).toBe("2026-05-01T10:15:00Z");
    expect(root.querySelector(".anvia-tool-status")?.textContent).toBe("Rejected");
    expect(buttons(root).filter((b) => ["Approve", "Reject"].includes(b.textContent ?? ""))).toHaveLength(0);
  });

  it("shows a direction override in the decision's reason as an escape, as in the saved copy", () => {
    const { model, root } = setup();
    const approval = { ...pending, status: "rejected", decided_by: "human", decided_via: "store", decision_reason: "Fine\u202eenif" } as const;
    batch(model, { op: "patch", id: "t1", changes: { status: "rejected", approval } });
    const line = root.querySelector(".anvia-decision")?.textContent ?? "";
    expect(line).toMatch(/Reason: Fine\\u202eenif$/);
    expect(line).not.toContain("\u202e");
  });

  it("says how other decisions were made", () => {
    const cases: [Partial<ApprovalView>, RegExp][] = [
      [{ status: "approved", decided_by: "human", decided_via: "widget", edited_args: { amount: 1 } }, /^Approved by you with edited arguments\.$/],
      [{ status: "approved", decided_by: "policy", decided_via: "widget" }, /^Approved by “Always allow”\.$/],
      [{ status: "approved", decided_by: "human", decided_via: "cli" }, /^Approved from the terminal\.$/],
      [{ status: "rejected", decided_by: "human", decided_via: "store" }, /^Rejected through the run store\.$/],
      [{ status: "approved", decided_by: "human", decided_via: "handle" }, /^Approved from code in the notebook\.$/],
      [{ status: "cancelled", decided_by: "stop", decision_reason: "Interrupted (Kernel > Interrupt)" }, /^Cancelled when the run was stopped\. Reason: Interrupted \(Kernel > Interrupt\)$/],
      [{ status: "timed_out", decided_by: "timeout" }, /^Timed out\.$/],
      [{ status: "approved", decided_by: "handler" }, /^Approved by the approval handler\.$/],
      [{ status: "cancelled", decided_by: "runtime", decision_reason: "Run cancelled" }, /^Cancelled by the runtime\. Reason: Run cancelled$/],
      [{ status: "timed_out", decided_by: null }, /^Timed out\.$/],
      [{ status: "rejected", decided_by: "policy", decided_via: "human_input" }, /^Rejected by a rule\.$/],
    ];
    for (const [change, text] of cases) {
      const { root } = mount([toolEntry("t1", { approval: { ...pending, ...change } as ApprovalView })]);
      expect(root.querySelector(".anvia-decision")?.textContent).toMatch(text);
      document.body.replaceChildren();
    }
  });
});
