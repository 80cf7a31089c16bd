// show(timeout=...): a waiting approval or question shows the time left.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ApprovalView, QuestionView } from "../src/protocol";
import { formatLeft } from "../src/views/interaction";
import { batch, mount, pendingApproval, status, toolEntry } from "./helpers";

afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

const NOW = Date.parse("2026-01-01T12:00:00Z");
const inSeconds = (s: number): string => new Date(NOW + s * 1000).toISOString();

const approval = (extra: Partial<ApprovalView> = {}): ApprovalView => pendingApproval({ args: { order_id: "A-1" }, ...extra });

const question: QuestionView = {
  id: "q_1",
  status: "pending",
  questions: [{ id: "p", question: "Which?", choices: [{ label: "A", value: "a" }] }],
  answers: [],
  expires_at: inSeconds(3600 + 5),
};

const countdown = (root: HTMLElement): HTMLElement | null => root.querySelector(".anvia-countdown");

describe("time left to decide", () => {
  it("counts down each second while an approval waits, then says the time is up", async () => {
    vi.useFakeTimers({ now: NOW });
    const m = mount([toolEntry("t1", { status: "approval_required", approval: approval({ expires_at: inSeconds(65) }) })], status("waiting"));
    expect(countdown(m.root)?.textContent).toBe("Time left to decide: 1:05");
    await vi.advanceTimersByTimeAsync(1000);
    expect(countdown(m.root)?.textContent).toBe("Time left to decide: 1:04");
    await vi.advanceTimersByTimeAsync(63_000);
    expect(countdown(m.root)?.textContent).toBe("Time left to decide: 0:01");
    await vi.advanceTimersByTimeAsync(1000);
    expect(countdown(m.root)?.textContent).toBe("Time is up.");
    expect(countdown(m.root)?.getAttribute("aria-live")).toBeNull(); // not read out every second
    m.cleanup();
  });

  it("goes with the form once the request is decided", async () => {
    vi.useFakeTimers({ now: NOW });
    const m = mount([toolEntry("t1", { status: "approval_required", approval: approval({ expires_at: inSeconds(30) }) })], status("waiting"));
    const shown = countdown(m.root)!;
    expect(shown.textContent).toBe("Time left to decide: 0:30");
    batch(m.model, { op: "patch", id: "t1", changes: { status: "approved", approval: approval({ status: "approved", decided_by: "human", decided_via: "widget" }) } });
    expect(countdown(m.root)).toBeNull();
    await vi.advanceTimersByTimeAsync(2000);
    expect(shown.textContent).toBe("Time left to decide: 0:30"); // stopped with its form
    m.cleanup();
  });

  it("shows for a question, and not at all without a time limit", () => {
    vi.useFakeTimers({ now: NOW });
    const q = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question })], status("waiting"));
    expect(countdown(q.root)?.textContent).toBe("Time left to answer: 1:00:05");
    q.cleanup();
    const plain = mount([toolEntry("t2", { status: "approval_required", approval: approval() })], status("waiting"));
    expect(countdown(plain.root)).toBeNull();
    plain.cleanup();
  });

  it("formats minutes and hours", () => {
    expect([formatLeft(0), formatLeft(9.2), formatLeft(60), formatLeft(3599), formatLeft(7322)]).toEqual(["0:00", "0:10", "1:00", "59:59", "2:02:02"]);
  });
});
