// Requests to the kernel: each has its id, and a lost reply gives the buttons back.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ApprovalView } from "../src/protocol";
import { NO_REPLY, REPLY_TIMEOUT_MS, Session } from "../src/session";
import { FakeModel, buttons, byLabel, mount, status, toolEntry } from "./helpers";

afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

const pending: ApprovalView = {
  id: "ap_1",
  status: "pending",
  reason: "Review the refund.",
  args: { order_id: "A-1001", amount: 25.5 },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
};

describe("requests", () => {
  it("returns the id the message was sent with", async () => {
    const model = new FakeModel();
    const session = new Session(model);
    const request = session.request({ type: "stop", reason: null });
    expect(request.id).not.toBe("");
    expect(model.last("stop").request_id).toBe(request.id);
    model.kernel({ type: "reply", request_id: request.id, ok: true, error: null });
    await expect(request).resolves.toEqual({ ok: true, error: null });
    session.dispose();
  });

  it("gives up when no reply comes in time, and ignores the late one", async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    const session = new Session(model);
    const request = session.request({ type: "stop", reason: null });
    let settled = false;
    void request.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(REPLY_TIMEOUT_MS - 1);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(request).resolves.toEqual({ ok: false, error: NO_REPLY });
    model.kernel({ type: "reply", request_id: request.id, ok: true, error: null }); // too late
    await expect(request).resolves.toEqual({ ok: false, error: NO_REPLY });
    session.dispose();
  });

  it("asks for a snapshot again after a sync whose reply was lost", async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    const session = new Session(model);
    expect(model.ofType("sync")).toHaveLength(1);
    session.sync();
    expect(model.ofType("sync")).toHaveLength(1); // one on its way
    await vi.advanceTimersByTimeAsync(REPLY_TIMEOUT_MS);
    session.sync();
    await vi.advanceTimersByTimeAsync(10_000); // past the backoff
    expect(model.ofType("sync")).toHaveLength(2);
    session.dispose();
  });

  it("a lost reply to Approve does not leave the buttons disabled", async () => {
    vi.useFakeTimers();
    const m = mount([toolEntry("t1", { status: "approval_required", approval: pending })], status("waiting"));
    const panel = m.root.querySelector('[role="alertdialog"]') as HTMLElement;
    byLabel(panel, "Approve").click();
    expect(m.model.ofType("approval_decision")).toHaveLength(1);
    for (const b of buttons(panel)) expect(b.disabled).toBe(true);
    await vi.advanceTimersByTimeAsync(REPLY_TIMEOUT_MS);
    for (const b of buttons(panel)) expect(b.disabled).toBe(false);
    const error = panel.querySelector(".anvia-approval-error") as HTMLElement;
    expect(error.hidden).toBe(false);
    expect(error.textContent).toContain("No answer from the kernel");
    byLabel(panel, "Approve").click(); // and the person can try again
    expect(m.model.ofType("approval_decision")).toHaveLength(2);
    m.cleanup();
  });

  it("a lost reply to Stop gives the Stop button back", async () => {
    vi.useFakeTimers();
    const m = mount([], status("running"));
    const stop = byLabel(m.root, "Stop");
    stop.click();
    expect(stop.disabled).toBe(true);
    await vi.advanceTimersByTimeAsync(REPLY_TIMEOUT_MS);
    expect(stop.disabled).toBe(false);
    m.cleanup();
  });
});
