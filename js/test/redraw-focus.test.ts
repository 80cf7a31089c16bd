// A keyboard user's focus survives the kernel redrawing a cell's output (it does when an approval
// or a question opens or is decided, and when a run ends): a control that goes with the old view
// (the Approve button just pressed) hands the focus to the transcript of the view drawn in its
// place, never to the page, where the next key would act on the notebook (`d d` deletes a cell).
// Also here: what a person sees after sending a message into a run, the Studio's "New session"
// while a run goes, and a decision refused because another one came first.
import { afterEach, describe, expect, it } from "vitest";
import type { Entry } from "../src/protocol";
import { STEER_PLACEHOLDER } from "../src/views/steer";
import widget from "../src/widget";
import {
  FakeModel,
  batch,
  byLabel,
  fixture,
  flushFrames,
  mount,
  pendingApproval,
  snapshot,
  status,
  tick,
  toolEntry,
  type,
} from "./helpers";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
  document.body.replaceChildren();
});

const studioMsg = fixture("studio.json")[0] as Record<string, unknown>;
const waiting: Entry = toolEntry("t1", { status: "approval_required", approval: pendingApproval() });

/** A model (a transcript, or a Studio) waiting for an approval, and views of it drawn into
 * "cells" (the output area a redraw draws the new view into). */
function shown(mode: "transcript" | "studio") {
  const model = new FakeModel({ mode, _anvia_key: `k${Math.random().toString(36).slice(2)}` });
  cleanups.push(widget.initialize({ model }));
  model.kernel(snapshot([waiting], status("waiting"), 0));
  if (mode === "studio") model.kernel({ ...studioMsg, busy: true });
  const draw = (cell: HTMLElement) => {
    const el = document.createElement("div");
    cell.appendChild(el);
    const dispose = widget.render({ model, el });
    cleanups.push(dispose);
    return { el, dispose, transcript: () => el.querySelector(".anvia-transcript") as HTMLElement };
  };
  const cell = () => document.body.appendChild(document.createElement("div"));
  return { model, draw, cell };
}

/** Take a view out of the page as Chromium does: the focused control is blurred while it is
 * still in the page, then the view goes. */
function takeOut(view: { el: HTMLElement; dispose: () => void }): void {
  const active = document.activeElement;
  if (active instanceof HTMLElement && view.el.contains(active)) active.blur();
  view.dispose();
  view.el.remove();
}

async function settle(): Promise<void> {
  await tick();
  for (let i = 0; i < 12; i++) flushFrames();
}

describe("focus across a redraw of the cell's output", () => {
  for (const mode of ["transcript", "studio"] as const) {
    it(`goes from a decided approval's button to the new view's transcript (${mode})`, async () => {
      const s = shown(mode);
      const cell = s.cell();
      const old = s.draw(cell);
      const approve = byLabel(old.el, "Approve");
      approve.focus();
      approve.click();
      expect(s.model.last("approval_decision")).toMatchObject({ approval_id: "ap_1", approved: true });
      takeOut(old); // the kernel redraws the output as the approval closes
      await tick();
      const redrawn = s.draw(cell);
      await settle();
      expect(document.activeElement).toBe(redrawn.transcript());
    });
  }

  it("hands the focus over when the new view is drawn before the old one goes", async () => {
    const s = shown("transcript");
    const cell = s.cell();
    const old = s.draw(cell);
    byLabel(old.el, "Approve").focus();
    const redrawn = s.draw(cell);
    takeOut(old);
    await settle();
    expect(document.activeElement).toBe(redrawn.transcript());
  });

  it("does not take the focus to a view of the same run in another cell", async () => {
    const s = shown("transcript");
    const first = s.cell();
    const old = s.draw(first);
    const elsewhere = s.draw(s.cell());
    byLabel(old.el, "Approve").focus();
    takeOut(old); // and nothing drawn in its place (the cell was cleared)
    await settle();
    expect(elsewhere.el.contains(document.activeElement)).toBe(false);
  });

  it("leaves the focus where the person put it meanwhile", async () => {
    const s = shown("transcript");
    const cell = s.cell();
    const old = s.draw(cell);
    const outside = document.body.appendChild(document.createElement("input"));
    byLabel(old.el, "Approve").focus();
    takeOut(old);
    outside.focus();
    s.draw(cell);
    await settle();
    expect(document.activeElement).toBe(outside);
  });
});

describe("a message sent into a run", () => {
  it("is said to wait for the agent's next step until the transcript shows it (transcript)", async () => {
    const m = mount([waiting], status("waiting"));
    const box = m.root.querySelector(".anvia-steer textarea") as HTMLTextAreaElement;
    const note = () => m.root.querySelector(".anvia-steer .anvia-steer-note") as HTMLElement;
    expect(note().hidden).toBe(true);
    type(box, "also check the invoice");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    m.model.reply("steer");
    await tick();
    expect(note().hidden).toBe(false);
    expect(note().getAttribute("role")).toBe("status");
    expect(note().textContent).toBe("Sent: the agent reads your message after its current step.");
    batch(m.model, { op: "add", entry: { id: "u2", kind: "user", text: "also check the invoice", steered: true } });
    expect(note().hidden).toBe(true);
  });

  it("is said to wait in the Studio too, whose box says it steers while a run goes", async () => {
    const m = mount([waiting], status("waiting"), { mode: "studio" });
    m.model.kernel({ ...studioMsg, busy: true });
    const box = m.root.querySelector('textarea[aria-label="Message the agent"]') as HTMLTextAreaElement;
    const note = () => m.root.querySelector(".anvia-composer .anvia-steer-note") as HTMLElement;
    expect(box.placeholder).toBe(STEER_PLACEHOLDER);
    type(box, "one");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    m.model.reply("steer");
    await tick();
    type(box, "two");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    m.model.reply("steer");
    await tick();
    expect(note().textContent).toBe("2 messages sent: the agent reads them after its current step.");
    // The run ends before reading them: the transcript says which were not delivered.
    batch(m.model, { op: "status", status: status("cancelled") });
    m.model.kernel({ ...studioMsg, busy: false });
    expect(note().hidden).toBe(true);
    expect(box.placeholder).toBe("Message the agent");
  });

  it("is still said in a view the kernel draws again while the message waits, and counted once", async () => {
    const s = shown("transcript");
    const cell = s.cell();
    const old = s.draw(cell);
    const other = s.draw(s.cell()); // the same run shown in a second output
    const noteOf = (view: { el: HTMLElement }) => view.el.querySelector(".anvia-steer-note") as HTMLElement;
    const box = old.el.querySelector(".anvia-steer textarea") as HTMLTextAreaElement;
    type(box, "also check the invoice");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    s.model.reply("steer");
    await tick();
    takeOut(old);
    const redrawn = s.draw(cell);
    const said = "Sent: the agent reads your message after its current step.";
    expect([noteOf(redrawn).textContent, noteOf(other).textContent]).toEqual([said, said]);
    batch(s.model, { op: "add", entry: { id: "u2", kind: "user", text: "also check the invoice", steered: true } });
    expect([noteOf(redrawn).hidden, noteOf(other).hidden]).toEqual([true, true]);
  });

  it("is not said to be sent when the kernel refused it", async () => {
    const m = mount([waiting], status("waiting"));
    const box = m.root.querySelector(".anvia-steer textarea") as HTMLTextAreaElement;
    type(box, "too late");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    m.model.reply("steer", false, "The run has ended: the message was not sent.");
    await tick();
    expect((m.root.querySelector(".anvia-steer-note") as HTMLElement).hidden).toBe(true);
    expect(box.value).toBe("too late");
  });
});

describe("the Studio while a run goes", () => {
  it("turns New session off until the run has ended", () => {
    const m = mount([], status("idle", { turn: 0 }), { mode: "studio" });
    m.model.kernel(studioMsg);
    expect(byLabel(m.root, "New session").disabled).toBe(false);
    m.model.kernel({ ...studioMsg, busy: true });
    batch(m.model, { op: "status", status: status("running") });
    expect(byLabel(m.root, "New session").disabled).toBe(true);
    batch(m.model, { op: "status", status: status("success") });
    m.model.kernel({ ...studioMsg, busy: false });
    expect(byLabel(m.root, "New session").disabled).toBe(false);
  });
});

describe("a decision refused because another came first", () => {
  it("says so under the decided record", async () => {
    const m = mount([waiting], status("waiting"));
    byLabel(m.root, "Reject").click();
    // Approved in another tab first: the page hears of it, then of its own refusal.
    batch(m.model, {
      op: "patch",
      id: "t1",
      changes: {
        status: "running",
        approval: pendingApproval({ status: "approved", decided_by: "human", decided_at: "2026-12-06T07:00:00Z" }),
      },
    });
    m.model.reply("approval_decision", false, "This approval is already approved; a second decision is refused.");
    await tick();
    const error = m.root.querySelector(".anvia-approval-error") as HTMLElement;
    expect(error.textContent).toBe(
      "The decision was not accepted: This approval is already approved; a second decision is refused.",
    );
    expect(m.root.querySelector('[role="alertdialog"]')).toBeNull();
  });
});
