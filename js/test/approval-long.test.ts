// Approvals with model-written text of any length, and what the tool entry shows after the
// arguments were edited before approval.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ApprovalView } from "../src/protocol";
import { batch, buttons, byLabel, mount, pendingApproval, status, toolEntry } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
  vi.restoreAllMocks();
});

const MB = 1_000_000;

const pending = (extra: Partial<ApprovalView> = {}): ApprovalView =>
  pendingApproval({ reason: "Review refund of $25.5 for order A-1001.", args: { order_id: "A-1001", amount: 25.5 }, ...extra });

function setup(approval: ApprovalView, extra: Parameters<typeof toolEntry>[1] = {}) {
  const m = mount([toolEntry("t1", { status: "approval_required", approval, ...extra })], status("waiting"));
  const panel = m.root.querySelector('[role="alertdialog"]') as HTMLElement;
  return { ...m, panel };
}

/** The characters a reader goes through, in document order, before reaching `target`. */
function textBefore(root: Node, target: Node): number {
  let n = 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (target.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING) break;
    if (target.contains(t)) break;
    n += (t as Text).data.length;
  }
  return n;
}

describe("approval card with long model text", () => {
  it("folds a 1 MB reason and 1 MB of arguments so the decision buttons come right after short previews", () => {
    const reason = "Please check this refund carefully. ".repeat(MB / 36);
    const args = { order_id: "A-1001", note: "x".repeat(MB) };
    const { panel } = setup(pending({ reason, args }), { arguments: JSON.stringify(args) });
    const approve = byLabel(panel, "Approve");
    const reject = byLabel(panel, "Reject");
    expect(panel.textContent?.length).toBeLessThan(5_000);
    expect(panel.querySelector(".anvia-approval-args")?.classList.contains("anvia-pre")).toBe(true);
    expect(textBefore(panel, approve)).toBeLessThan(3_000);
    expect(textBefore(panel, reject)).toBeLessThan(3_000);
    // The preview is the start of the reason, in a block with a "Show more" toggle.
    const block = panel.querySelector(".anvia-approval-reason") as HTMLElement;
    expect(reason.startsWith(block.textContent!.replace(/\n…$/, ""))).toBe(true);
    expect(panel.getAttribute("aria-describedby")).toBe(block.id);
    const more = buttons(panel).find((b) => b.textContent === "Show more");
    expect(more).toBeDefined();
    // Unfolded, the whole reason sits in the bounded, scrollable block (keyboard-focusable),
    // not around the buttons.
    more!.click();
    expect(block.textContent).toBe(reason);
    expect(block.classList.contains("anvia-pre")).toBe(true);
    expect(block.getAttribute("tabindex")).toBe("0");
    expect(textBefore(panel, approve) - reason.length).toBeLessThan(3_000);
  });

  it("folds a 1 MB decision reason in the decided line", () => {
    const decision = "Too expensive. ".repeat(MB / 15);
    const { model, root } = setup(pending());
    batch(model, {
      op: "patch",
      id: "t1",
      changes: { status: "rejected", approval: pending({ status: "rejected", decided_by: "human", decided_via: "widget", decision_reason: decision }) },
    });
    const entry = root.querySelector(".anvia-entry-tool") as HTMLElement;
    expect(entry.textContent!.length).toBeLessThan(5_000);
    expect(entry.querySelector(".anvia-decision")?.textContent).toMatch(/^Rejected by you\. Reason:$/);
    expect(buttons(entry).some((b) => b.textContent === "Show more")).toBe(true);
  });
});

describe("edited arguments", () => {
  it("shows an invalid edit's error right under the editor, and scrolls it into view", () => {
    const scrolled: Element[] = [];
    const proto = HTMLElement.prototype as { scrollIntoView?: unknown };
    const had = Object.prototype.hasOwnProperty.call(proto, "scrollIntoView");
    const before = proto.scrollIntoView;
    proto.scrollIntoView = function (this: Element) {
      scrolled.push(this);
    };
    try {
      const { model, panel } = setup(pending());
      byLabel(panel, "Edit arguments").click();
      const editor = panel.querySelector("textarea") as HTMLTextAreaElement;
      editor.value = "{not json";
      byLabel(panel, "Approve").click();
      expect(model.ofType("approval_decision")).toHaveLength(0);
      const error = editor.nextElementSibling as HTMLElement;
      expect(error.hidden).toBe(false);
      expect(error.textContent).toContain("not valid JSON");
      expect(editor.getAttribute("aria-describedby")).toBe(error.id);
      expect(scrolled).toContain(error);
      expect(document.activeElement).toBe(editor);
    } finally {
      if (had) proto.scrollIntoView = before;
      else delete proto.scrollIntoView;
    }
  });

  it("lists the arguments that ran, with the model's original ones struck through", () => {
    const args = '{"order_id":"A-1001","amount":25.5}';
    const { model, root } = mount(
      [
        toolEntry("t1", { status: "approval_required", approval: pending(), arguments: args }),
        toolEntry("t2", { status: "approval_required", approval: pending({ id: "ap_2" }), arguments: args }),
      ],
      status("waiting"),
    );
    batch(
      model,
      {
        op: "patch",
        id: "t1",
        changes: {
          status: "done",
          result: '{"refund_id":"rf_1"}',
          approval: pending({ status: "approved", decided_by: "human", decided_via: "widget", edited_args: { order_id: "A-1001", amount: 20 } }),
        },
      },
      // Opened in the editor and approved unchanged: nothing was edited.
      {
        op: "patch",
        id: "t2",
        changes: {
          status: "done",
          approval: pending({ id: "ap_2", status: "approved", decided_by: "human", decided_via: "widget", edited_args: { order_id: "A-1001", amount: 25.5 } }),
        },
      },
    );
    const [entry, other] = [...root.querySelectorAll<HTMLElement>(".anvia-entry-tool")];
    const section = entry!.querySelector(".anvia-section-args") as HTMLElement;
    expect(section.hidden).toBe(false);
    expect(JSON.parse(section.querySelector(".anvia-tool-args")!.textContent!)).toEqual({ order_id: "A-1001", amount: 20 });
    expect(section.querySelector(".anvia-section-label")?.textContent).toBe("Arguments (edited before approval)");
    const original = section.querySelector(".anvia-args-original") as HTMLElement;
    expect(original.hidden).toBe(false);
    expect(JSON.parse(original.querySelector(".anvia-tool-args-original")!.textContent!)).toEqual({ order_id: "A-1001", amount: 25.5 });
    const unchanged = other!.querySelector(".anvia-section-args") as HTMLElement;
    expect(unchanged.querySelector(".anvia-section-label")?.textContent).toBe("Arguments");
    expect((unchanged.querySelector(".anvia-args-original") as HTMLElement).hidden).toBe(true);
  });
});
