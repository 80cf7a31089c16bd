// A view whose kernel stopped (restarted, shut down or died): it says so at once, names the run to
// resume, turns off every control that talks to the kernel and sends nothing more.
import { afterEach, describe, expect, it, vi } from "vitest";
import { PROBE_INTERVAL_MS, PROBE_TIMEOUT_MS, STOPPED_STATUSES, watchKernel } from "../src/kernel";
import type { ApprovalView, Entry, QuestionView, Status } from "../src/protocol";
import { KERNEL_STOPPED } from "../src/session";
import { resumeCode } from "../src/views/status";
import widget from "../src/widget";
import {
  FakeModel,
  buttons,
  byLabel,
  byPlaceholder,
  fixture,
  flushFrames,
  snapshot,
  status,
  tick,
  toolEntry,
  type,
} from "./helpers";

afterEach(() => document.body.replaceChildren());

class FakeSignal {
  private slots = new Set<(sender: unknown, args: unknown) => void>();
  connect(slot: (sender: unknown, args: unknown) => void): boolean {
    this.slots.add(slot);
    return true;
  }
  disconnect(slot: (sender: unknown, args: unknown) => void): boolean {
    return this.slots.delete(slot);
  }
  emit(args: unknown): void {
    for (const slot of [...this.slots]) slot(this, args);
  }
  get size(): number {
    return this.slots.size;
  }
}

/** What JupyterLab's widget manager offers: its kernel connection and the notebook's session. */
function fakeManager() {
  const kernel = {
    status: "idle",
    statusChanged: new FakeSignal(),
    disposed: new FakeSignal(),
    anyMessage: new FakeSignal(),
  };
  const sessionContext = { kernelChanged: new FakeSignal() };
  return { kernel, context: { sessionContext } };
}

type Manager = ReturnType<typeof fakeManager>;

/** Initialise the widget on a fake model with a fake manager, then render one view. */
function mountWith(entries: Entry[], st: Status, attrs: Record<string, unknown> = {}) {
  const model = new FakeModel(attrs) as FakeModel & { widget_manager: Manager };
  const manager = fakeManager();
  model.widget_manager = manager;
  const disposers = [widget.initialize({ model })];
  model.kernel(snapshot(entries, st, 0));
  const view = (): HTMLElement => {
    const el = document.createElement("div");
    document.body.appendChild(el);
    disposers.push(widget.render({ model, el }));
    return el.querySelector(".anvia-root") as HTMLElement;
  };
  const root = view();
  return { model, manager, root, another: view, cleanup: () => disposers.reverse().forEach((d) => d()) };
}

const pendingApproval: ApprovalView = {
  id: "ap_1",
  status: "pending",
  reason: "Review this refund.",
  args: { order_id: "A-1", amount: 5, note: "x".repeat(3000) },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
};

const waitingRun = () =>
  mountWith([toolEntry("t1", { status: "approval_required", approval: pendingApproval })], status("waiting", { run_id: "run_42" }));

const banner = (root: HTMLElement) => root.querySelector(".anvia-disconnected") as HTMLElement;
/** Let MutationObserver callbacks and promise callbacks run. */
const settle = async (): Promise<void> => {
  await tick();
  await tick();
};

describe("a view whose kernel stopped", () => {
  it("says so at once, names agent.resume with the run id, and turns its buttons off", () => {
    const { model, root } = waitingRun();
    expect(banner(root).hidden).toBe(true);
    expect(byLabel(root, "Approve").disabled).toBe(false);
    model.fire("comm_live_update");
    expect(banner(root).hidden).toBe(false);
    expect(banner(root).textContent).toContain("Kernel stopped.");
    expect(banner(root).querySelector("code")?.textContent).toBe('agent.resume("run_42").show()');
    expect(root.querySelector(".anvia-status-label")?.textContent).toBe("Kernel stopped");
    expect(root.classList.contains("anvia-kernel-stopped")).toBe(true);
    for (const label of ["Approve", "Reject", "Edit arguments", "Stop"]) expect(byLabel(root, label).disabled).toBe(true);
    expect(byPlaceholder(root, "Reason (optional)").disabled).toBe(true);
    expect((root.querySelector(".anvia-always-allow") as HTMLInputElement).disabled).toBe(true);
    // Showing more of a long value only changes the view: it keeps working.
    expect(byLabel(root, "Show more").disabled).toBe(false);
  });

  it("sends nothing more: a click does nothing, and requests are refused without being sent", async () => {
    const { model, root } = waitingRun();
    model.fire("comm_live_update");
    const before = model.sent.length;
    byLabel(root, "Approve").click();
    byLabel(root, "Stop").click();
    await settle();
    expect(model.sent.length).toBe(before);
  });

  it("refuses a decision still on its way, and its buttons stay off", async () => {
    const { model, root } = waitingRun();
    byLabel(root, "Approve").click();
    expect(model.ofType("approval_decision")).toHaveLength(1);
    model.fire("comm_live_update");
    await settle();
    expect(root.querySelector(".anvia-approval-error")?.textContent).toContain(KERNEL_STOPPED);
    expect(byLabel(root, "Approve").disabled).toBe(true);
    expect(byLabel(root, "Reject").disabled).toBe(true);
  });

  it("turns off a question's choices, custom answer and Submit answers", async () => {
    const question: QuestionView = {
      id: "q_1",
      status: "pending",
      questions: [{ id: "p", question: "What priority?", choices: [{ label: "High", value: "high" }] }],
      answers: [],
    };
    const { model, root } = mountWith(
      [toolEntry("t2", { tool_name: "ask_question", status: "input_required", question })],
      status("waiting", { run_id: "run_q" }),
    );
    type(byPlaceholder(root, "Type a custom answer"), "soon");
    expect(byLabel(root, "Submit answers").disabled).toBe(false);
    model.fire("comm_live_update");
    await settle();
    for (const label of ["High", "Back", "Next", "Submit answers"]) expect(byLabel(root, label).disabled).toBe(true);
    expect(byPlaceholder(root, "Type a custom answer").disabled).toBe(true);
    expect(banner(root).textContent).toContain('agent.resume("run_q")');
  });

  it.each(["restarting", "autorestarting", "dead", "starting"])("notices the kernel status %s", (kernelStatus) => {
    const { manager, root } = waitingRun();
    manager.kernel.statusChanged.emit("busy");
    manager.kernel.statusChanged.emit("idle");
    expect(banner(root).hidden).toBe(true);
    manager.kernel.statusChanged.emit(kernelStatus);
    expect(banner(root).hidden).toBe(false);
    expect(byLabel(root, "Approve").disabled).toBe(true);
  });

  it("notices a restart it only sees as status messages signed by another kernel process", () => {
    const { manager, root } = waitingRun();
    const statusMsg = (session: string, state: string, channel = "iopub", direction = "recv") => ({
      direction,
      msg: { channel, header: { msg_type: "status", session }, content: { execution_state: state } },
    });
    manager.kernel.anyMessage.emit(statusMsg("kernel-a", "busy"));
    manager.kernel.anyMessage.emit(statusMsg("kernel-a", "idle"));
    // What is not a status the kernel published does not count: a message this page sends, the
    // server's own rate-limit warning, a shell reply, the server's "restarting" (said elsewhere).
    manager.kernel.anyMessage.emit(statusMsg("page", "busy", "shell", "send"));
    manager.kernel.anyMessage.emit({
      direction: "recv",
      msg: { channel: "iopub", header: { msg_type: "stream", session: "server" }, content: { text: "rate" } },
    });
    manager.kernel.anyMessage.emit(statusMsg("kernel-a", "idle", "shell"));
    manager.kernel.anyMessage.emit(statusMsg("server", "restarting"));
    manager.kernel.anyMessage.emit({ direction: "recv", msg: null });
    expect(banner(root).hidden).toBe(true);
    expect(byLabel(root, "Approve").disabled).toBe(false);
    manager.kernel.anyMessage.emit(statusMsg("kernel-b", "busy"));
    expect(banner(root).hidden).toBe(false);
    expect(byLabel(root, "Approve").disabled).toBe(true);
  });

  it("notices the notebook switching to another kernel, or to none", () => {
    const a = waitingRun();
    a.manager.context.sessionContext.kernelChanged.emit({ oldValue: a.manager.kernel, newValue: { status: "starting" } });
    expect(byLabel(a.root, "Approve").disabled).toBe(true);
    const b = waitingRun();
    b.manager.kernel.disposed.emit(undefined);
    expect(banner(b.root).hidden).toBe(false);
  });

  it("draws a later view already stopped", () => {
    const { model, another } = waitingRun();
    model.fire("comm_live_update");
    const root = another();
    expect(banner(root).hidden).toBe(false);
    expect(byLabel(root, "Approve").disabled).toBe(true);
  });

  it("leaves the view of a finished run as it was: nothing in it was live", () => {
    const { model, root } = mountWith([{ kind: "assistant", id: "a1", turn: 1, text: "Done." }], status("success", { run_id: "run_9" }));
    model.fire("comm_live_update");
    expect(banner(root).hidden).toBe(true);
    expect(root.querySelector(".anvia-status-label")?.textContent).toBe("Done");
    expect(byLabel(root, "Stop").disabled).toBe(true);
  });

  it("turns off a Studio's prompt box, Send, quick prompts and New session", async () => {
    const studioMsg = fixture("studio.json")[0] as Record<string, unknown>;
    const { model, root } = mountWith([], status("idle", { turn: 0 }), { mode: "studio" });
    model.kernel(studioMsg);
    type(byPlaceholder<HTMLTextAreaElement>(root, "Message the agent"), "hello");
    expect(byLabel(root, "Send").disabled).toBe(false);
    model.fire("comm_live_update");
    await settle();
    for (const b of buttons(root)) expect([b.textContent, b.disabled]).toEqual([b.textContent, true]);
    expect(byPlaceholder<HTMLTextAreaElement>(root, "Message the agent").disabled).toBe(true);
    expect((root.querySelector("select") as HTMLSelectElement).disabled).toBe(true);
    expect(banner(root).textContent).toContain("Run this cell again");
  });

  it("stops watching when the model goes away", () => {
    const { model, manager, cleanup } = waitingRun();
    expect(model.listenerCount("comm_live_update")).toBe(1);
    expect(manager.kernel.statusChanged.size).toBe(1);
    expect(manager.kernel.anyMessage.size).toBe(1);
    cleanup();
    expect(manager.kernel.anyMessage.size).toBe(0);
    expect(model.listenerCount("comm_live_update")).toBe(0);
    expect(manager.kernel.statusChanged.size).toBe(0);
    expect(manager.context.sessionContext.kernelChanged.size).toBe(0);
  });
});

describe("watchKernel", () => {
  it("calls back once, whatever says it first", () => {
    const model = new FakeModel() as FakeModel & { widget_manager: Manager };
    model.widget_manager = fakeManager();
    let calls = 0;
    watchKernel(model, () => calls++);
    model.widget_manager.kernel.statusChanged.emit("restarting");
    model.fire("comm_live_update");
    model.widget_manager.kernel.statusChanged.emit("dead");
    expect(calls).toBe(1);
    expect(STOPPED_STATUSES.has("idle")).toBe(false);
  });

  it("copes with a manager it does not know", () => {
    const model = new FakeModel() as FakeModel & { widget_manager: unknown };
    model.widget_manager = {
      get kernel(): unknown {
        throw new Error("no kernel here");
      },
    };
    let calls = 0;
    const stop = watchKernel(model, () => calls++);
    stop();
    model.fire("comm_live_update");
    expect(calls).toBe(0);
  });

  it("writes the resume call as Python", () => {
    expect(resumeCode('r"1')).toBe('agent.resume("r\\"1").show()');
  });
});

describe("a Studio redrawn by the kernel", () => {
  it("keeps what was typed in the prompt box, and its focus", () => {
    const studioMsg = fixture("studio.json")[0] as Record<string, unknown>;
    const { model, root, another } = mountWith([], status("idle", { turn: 0 }), { mode: "studio" });
    model.kernel(studioMsg);
    const box = byPlaceholder<HTMLTextAreaElement>(root, "Message the agent");
    box.focus();
    type(box, "half a thought");
    root.parentElement!.remove(); // the output is redrawn: the old view goes, a new one comes
    const again = another();
    flushFrames();
    const newBox = byPlaceholder<HTMLTextAreaElement>(again, "Message the agent");
    expect(newBox.value).toBe("half a thought");
    expect(document.activeElement).toBe(newBox);
    expect(byLabel(again, "Send").disabled).toBe(false);
  });
});

describe("a restart that sends the page nothing", () => {
  /** A kernel connection whose `requestKernelInfo` is answered by whichever process runs now
   * (`process`), or never (`answering = false`: the question went to a process that is gone). */
  function probedManager() {
    const manager = fakeManager();
    const state = { process: "kernel-a", answering: true, asked: 0 };
    const kernel = Object.assign(manager.kernel, {
      requestKernelInfo: () => {
        state.asked++;
        if (!state.answering) return new Promise(() => undefined);
        return Promise.resolve({ header: { msg_type: "kernel_info_reply", session: state.process } });
      },
    });
    return { manager: { ...manager, kernel }, state };
  }

  function probedRun(st: Status = status("waiting", { run_id: "run_7" })) {
    const { manager, state } = probedManager();
    const model = new FakeModel() as FakeModel & { widget_manager: unknown };
    model.widget_manager = manager;
    const disposers = [widget.initialize({ model })];
    model.kernel(snapshot([toolEntry("t1", { status: "approval_required", approval: pendingApproval })], st, 0));
    const el = document.createElement("div");
    document.body.appendChild(el);
    disposers.push(widget.render({ model, el }));
    const root = el.querySelector(".anvia-root") as HTMLElement;
    return { model, manager, state, root, cleanup: () => disposers.reverse().forEach((d) => d()) };
  }

  afterEach(() => vi.useRealTimers());

  it("asks the kernel which process it is while a run waits, and notices another one", async () => {
    vi.useFakeTimers();
    const { state, root, cleanup } = probedRun();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.asked).toBe(0); // nothing asked when the view starts
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 2);
    expect(state.asked).toBe(2);
    expect(banner(root).hidden).toBe(true);
    state.process = "kernel-b"; // restarted through the server: no status reached the page
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(banner(root).hidden).toBe(false);
    expect(byLabel(root, "Approve").disabled).toBe(true);
    const asked = state.asked;
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 3);
    expect(state.asked).toBe(asked); // once it knows, it stops asking
    cleanup();
  });

  it("does not keep asking about a finished run's kernel", async () => {
    vi.useFakeTimers();
    const { state, cleanup } = probedRun(status("success", { run_id: "run_8" }));
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 5);
    expect(state.asked).toBe(0);
    cleanup();
  });

  it("asks one question at a time, and again when a restart lost the answer", async () => {
    vi.useFakeTimers();
    const { state, root, cleanup } = probedRun();
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS); // answered by kernel-a
    state.answering = false; // asked of the old process just as it went
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    const asked = state.asked;
    await vi.advanceTimersByTimeAsync(PROBE_TIMEOUT_MS - 1);
    expect(state.asked).toBe(asked); // still waiting for that answer (a busy kernel answers late)
    state.answering = true;
    state.process = "kernel-b";
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(state.asked).toBe(asked + 1);
    expect(banner(root).hidden).toBe(false);
    cleanup();
  });

  it("shares one question among every view of the kernel, and stops asking when they go", async () => {
    vi.useFakeTimers();
    const { manager, state } = probedManager();
    const stops: string[] = [];
    const models = [0, 1, 2].map(() => {
      const model = new FakeModel() as FakeModel & { widget_manager: unknown };
      model.widget_manager = manager;
      return model;
    });
    const unwatch = models.map((m, i) => watchKernel(m, () => stops.push(`view ${i}`), () => true));
    expect(manager.kernel.anyMessage.size).toBe(1);
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 2);
    expect(state.asked).toBe(2);
    state.process = "kernel-b";
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(stops).toEqual(["view 0", "view 1", "view 2"]);
    for (const u of unwatch) u();
    expect(manager.kernel.anyMessage.size).toBe(0);
    const asked = state.asked;
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 3);
    expect(state.asked).toBe(asked);
  });

  it("knows which process it is from the kernel's comm messages, before asking", async () => {
    vi.useFakeTimers();
    const { manager, state, root, cleanup } = probedRun();
    const message = (type: string, session: string, channel = "iopub") => ({
      direction: "recv",
      msg: { channel, header: { msg_type: type, session }, content: {} },
    });
    manager.kernel.anyMessage.emit(message("stream", "server")); // the server's own: ignored
    manager.kernel.anyMessage.emit(message("comm_msg", "kernel-a")); // the view's snapshot
    expect(banner(root).hidden).toBe(true);
    state.process = "kernel-b";
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(state.asked).toBe(1);
    expect(banner(root).hidden).toBe(false);
    cleanup();
  });

  it("says nothing while the answers come from the same process, and ignores odd replies", async () => {
    vi.useFakeTimers();
    const { manager, state } = probedManager();
    const model = new FakeModel() as FakeModel & { widget_manager: unknown };
    model.widget_manager = manager;
    let replies: unknown[] = [undefined, null, { header: null }, { header: { session: 42 } }];
    const original = manager.kernel.requestKernelInfo;
    manager.kernel.requestKernelInfo = () => (replies.length ? Promise.resolve(replies.shift()) : original());
    let stops = 0;
    const unwatch = watchKernel(model, () => stops++, () => true);
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 8);
    expect(state.asked).toBeGreaterThan(0);
    expect(stops).toBe(0);
    replies = [];
    unwatch();
  });
});

describe("after a restart the page noticed", () => {
  afterEach(() => vi.useRealTimers());

  it("a view made on the same connection belongs to the new process, and notices the next restart", async () => {
    vi.useFakeTimers();
    const manager = fakeManager();
    const state = { process: "kernel-a" };
    const kernel = Object.assign(manager.kernel, {
      requestKernelInfo: () => Promise.resolve({ header: { session: state.process } }),
    });
    const comm = (session: string) => ({
      direction: "recv",
      msg: { channel: "iopub", header: { msg_type: "comm_msg", session }, content: {} },
    });
    const watch = (name: string, stops: string[]) => {
      const model = new FakeModel() as FakeModel & { widget_manager: unknown };
      model.widget_manager = { ...manager, kernel };
      return watchKernel(model, () => stops.push(name), () => true);
    };
    const stops: string[] = [];
    const unwatchOld = watch("old view", stops);
    kernel.anyMessage.emit(comm("kernel-a"));
    state.process = "kernel-b"; // restarted through the server
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(stops).toEqual(["old view"]);
    // The cell is run again: its new view is of kernel-b and stays live.
    const unwatchNew = watch("new view", stops);
    kernel.anyMessage.emit(comm("kernel-b"));
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS * 3);
    expect(stops).toEqual(["old view"]);
    unwatchOld(); // the old view goes: the new one is still watched
    unwatchOld();
    state.process = "kernel-c";
    await vi.advanceTimersByTimeAsync(PROBE_INTERVAL_MS);
    expect(stops).toEqual(["old view", "new view"]);
    unwatchNew();
    expect(kernel.anyMessage.size).toBe(0);
  });
});
