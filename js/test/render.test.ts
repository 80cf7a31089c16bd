import { afterEach, describe, expect, it, vi } from "vitest";
import { TOOL_STATUS_LABELS, TOOL_STATUSES, type Entry } from "../src/protocol";
import { FOLD_CHARS } from "../src/views/fold";
import { StreamingMarkdown } from "../src/views/markdown";
import { batch, byLabel, flushFrames, fixture, mount, pendingApproval, snapshot, status, tick, toolEntry } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
  vi.restoreAllMocks();
});

const entries = (root: HTMLElement) => [...root.querySelectorAll<HTMLElement>(".anvia-transcript > .anvia-entry")];

describe("root", () => {
  it("is an anvia-root with shortcut suppression and a separate polite live region", () => {
    const { root } = mount();
    expect(root.classList.contains("anvia-root")).toBe(true);
    expect(root.hasAttribute("data-lm-suppress-shortcuts")).toBe(true);
    const live = root.querySelectorAll("[aria-live]");
    expect(live).toHaveLength(1);
    expect(live[0]!.getAttribute("aria-live")).toBe("polite");
    expect(live[0]!.classList.contains("anvia-visually-hidden")).toBe(true);
    const transcript = root.querySelector(".anvia-transcript")!;
    expect(transcript.hasAttribute("aria-live")).toBe(false);
    expect(transcript.getAttribute("role")).not.toBe("log");
  });

  it("gives the focusable transcript and folded blocks a role, so their names are announced", () => {
    // An aria-label on a plain div or pre (no role) is not read out by every screen reader.
    const { root } = mount([toolEntry("t1", { status: "done", result: "found" }), { kind: "notice", id: "n", text: "Run cancelled: why" }]);
    const transcript = root.querySelector(".anvia-transcript")!;
    expect([transcript.getAttribute("role"), transcript.getAttribute("aria-label")]).toEqual(["region", "Transcript"]);
    const blocks = [...root.querySelectorAll<HTMLElement>(".anvia-pre")];
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    for (const block of blocks) {
      expect(block.tabIndex).toBe(0);
      expect(block.getAttribute("role")).toBe("group");
      expect(block.getAttribute("aria-label")).toBeTruthy();
    }
    expect(blocks.map((b) => b.getAttribute("aria-label"))).toEqual(expect.arrayContaining(["Arguments", "Result", "Notice"]));
  });

  it("keeps notebook shortcuts off whatever takes focus, and focus in the widget when it goes", async () => {
    // A notebook shortcut's selector ends in `:focus`: it matched the focused transcript or
    // button itself, before the root's attribute was looked at (`d d` deleted the cell).
    const approval = pendingApproval({ args: { order_id: "A-1" } });
    const { model, root } = mount([toolEntry("t1", { status: "approval_required", approval })], status("waiting"));
    const transcript = root.querySelector<HTMLElement>(".anvia-transcript")!;
    transcript.focus();
    expect(transcript.hasAttribute("data-lm-suppress-shortcuts")).toBe(true);
    const approve = byLabel(root, "Approve");
    approve.focus();
    expect(document.activeElement).toBe(approve);
    expect(approve.hasAttribute("data-lm-suppress-shortcuts")).toBe(true);
    batch(model, {
      op: "patch",
      id: "t1",
      changes: { status: "running", approval: { ...approval, status: "approved", decided_by: "human" } },
    });
    flushFrames();
    await tick();
    await tick(); // (focus is settled by the browser first)
    expect(approve.isConnected).toBe(false);
    expect(document.activeElement).toBe(transcript); // not the page, where keys act on cells
  });

  it("shows the title trait as text and follows its changes", () => {
    const { model, root } = mount([], status(), { title: "<b>Support</b>" });
    const title = root.querySelector(".anvia-title") as HTMLElement;
    expect(title.textContent).toBe("<b>Support</b>");
    expect(title.querySelector("b")).toBeNull();
    model.set("title", "");
    expect(title.hidden).toBe(true);
    model.set("title", "Refunds");
    expect(title.hidden).toBe(false);
    expect(title.textContent).toBe("Refunds");
  });

  it("renders nothing from model text as data-* attributes", () => {
    const { root } = mount(fixture("snapshot_all_entry_kinds.json").flatMap((m) => (m as { transcript: { entries: Entry[] } }).transcript.entries));
    const withData = [...root.querySelectorAll("*")].filter((el) => [...el.attributes].some((a) => a.name.startsWith("data-")));
    expect(withData).toEqual([]);
  });
});

describe("entries", () => {
  it("renders every entry kind of the fixture snapshot", () => {
    const msg = fixture("snapshot_all_entry_kinds.json")[0] as { transcript: { entries: Entry[]; status: never } };
    const { root } = mount(msg.transcript.entries, msg.transcript.status);
    const kinds = entries(root).map((e) => [...e.classList].find((c) => c.startsWith("anvia-entry-")));
    expect(kinds).toEqual(msg.transcript.entries.map((e) => `anvia-entry-${e.kind}`));
    expect(root.querySelector(".anvia-entry-user strong")?.textContent).toBe("A-1001");
    const reasoning = root.querySelector(".anvia-entry-reasoning") as HTMLDetailsElement;
    expect(reasoning.tagName).toBe("DETAILS");
    expect(reasoning.open).toBe(false);
    expect(reasoning.textContent).toContain("I should call issue_refund");
    expect(root.querySelector(".anvia-entry-error")?.textContent).toContain("MaxTurnsError");
    expect(root.querySelector(".anvia-entry-notice .anvia-line-text")?.textContent).toBe("Run cancelled: stopped by the operator");
  });

  it("shows each tool status label", () => {
    const list = TOOL_STATUSES.map((s, i) => toolEntry(`t${i}`, { status: s }));
    const { root } = mount(list);
    const labels = [...root.querySelectorAll(".anvia-tool-status")].map((e) => e.textContent);
    expect(labels).toEqual(["Running", "Approval required", "Input required", "Approved", "Rejected", "Cancelled", "Timed out", "Done", "Error", "Skipped"]);
    expect(labels).toEqual(TOOL_STATUSES.map((s) => TOOL_STATUS_LABELS[s]));
  });

  it("pretty-prints JSON arguments and results, keeps other text as is, and shows output in a pre", () => {
    const { root } = mount([
      toolEntry("t1", { arguments: '{"a":1,"b":[1,2]}', result: '{"ok":true}', output: "printed\n", status: "done" }),
      toolEntry("t2", { arguments: "{not json", result: "plain text", status: "error", is_error: true }),
    ]);
    const [t1, t2] = entries(root);
    expect(t1!.querySelector(".anvia-tool-args")?.textContent).toBe('{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}');
    expect(t1!.querySelector(".anvia-tool-result")?.textContent).toBe('{\n  "ok": true\n}');
    const out = t1!.querySelector(".anvia-tool-output") as HTMLElement;
    expect(out.tagName).toBe("PRE");
    expect(out.textContent).toBe("printed\n");
    expect(t2!.querySelector(".anvia-tool-args")?.textContent).toBe("{not json");
    expect(t2!.querySelector(".anvia-section-result")?.classList.contains("anvia-result-error")).toBe(true);
    expect((t2!.querySelector(".anvia-section-output") as HTMLElement).hidden).toBe(true);
  });

  it("folds long values behind Show more", () => {
    const long = "x".repeat(FOLD_CHARS + 500);
    const { root } = mount([toolEntry("t1", { result: long, status: "done" })]);
    const pre = root.querySelector(".anvia-tool-result") as HTMLElement;
    expect(pre.textContent!.length).toBeLessThan(long.length);
    const more = byLabel(root, "Show more");
    more.click();
    expect(pre.textContent).toBe(long);
    byLabel(root, "Show less").click();
    expect(pre.textContent!.length).toBeLessThan(long.length);
  });

  it("starts tool entries collapsed, and expanded when an interaction is pending", () => {
    const msg = fixture("snapshot_all_entry_kinds.json")[0] as { transcript: { entries: Entry[] } };
    const { root } = mount(msg.transcript.entries);
    const open = Object.fromEntries(
      [...root.querySelectorAll<HTMLDetailsElement>(".anvia-entry-tool")].map((d) => [d.querySelector(".anvia-tool-name")!.textContent, d.open]),
    );
    expect(open).toEqual({ lookup_order: false, issue_refund: true, ask_question: true, send_email: false, cancel_order: false });
  });

  it("shows a running call expanded and folds it when it is done", () => {
    const { model, root } = mount([toolEntry("t1"), toolEntry("t2", { status: "done" })]);
    const [running, done] = [...root.querySelectorAll<HTMLDetailsElement>(".anvia-entry-tool")];
    expect([running!.open, done!.open]).toEqual([true, false]);
    batch(model, { op: "patch", id: "t1", changes: { status: "done", result: "{}" } });
    expect(running!.open).toBe(false);
  });

  it("leaves a call a person opened or closed as they left it when it ends", async () => {
    const { model, root } = mount([toolEntry("t1"), toolEntry("t2"), toolEntry("t3", { status: "done" })]);
    const [opened, closed, finished] = [...root.querySelectorAll<HTMLDetailsElement>(".anvia-entry-tool")];
    opened!.open = false; // a person closes it, then opens it again
    opened!.dispatchEvent(new Event("toggle"));
    opened!.open = true;
    opened!.dispatchEvent(new Event("toggle"));
    closed!.open = false;
    closed!.dispatchEvent(new Event("toggle"));
    finished!.open = true;
    finished!.dispatchEvent(new Event("toggle"));
    await tick();
    batch(model, { op: "patch", id: "t1", changes: { status: "done" } }, { op: "patch", id: "t2", changes: { status: "error" } });
    batch(model, { op: "patch", id: "t3", changes: { result: "{}" } });
    expect([opened!.open, closed!.open, finished!.open]).toEqual([true, false, true]);
  });

  it("opens an entry when an interaction becomes pending", () => {
    const { model, root } = mount([toolEntry("t1")]);
    const det = root.querySelector(".anvia-entry-tool") as HTMLDetailsElement;
    det.open = false; // a person folded the running call
    det.dispatchEvent(new Event("toggle"));
    const approval = pendingApproval({ id: "ap" });
    batch(model, { op: "patch", id: "t1", changes: { status: "approval_required", approval } });
    expect(det.open).toBe(true);
    expect(det.querySelector(".anvia-tool-status")?.textContent).toBe("Approval required");
  });
});

describe("redrawn views", () => {
  it("keep the entries a person opened or closed", async () => {
    const m = mount([toolEntry("t1", { status: "done" }), toolEntry("t2", { status: "done" })]);
    const details = [...m.el.querySelectorAll<HTMLDetailsElement>(".anvia-entry-tool")];
    const first = details[0]!;
    const second = details[1]!;
    first.open = true;
    first.dispatchEvent(new Event("toggle"));
    await tick();
    const redrawn = m.another();
    const again = [...redrawn.querySelectorAll<HTMLDetailsElement>(".anvia-entry-tool")];
    expect(again.map((d) => d.open)).toEqual([true, false]);
    expect(second.open).toBe(false);
    m.cleanup();
  });

  it("do not take an entry the view opened itself (a pending approval) for a person's choice", async () => {
    const m = mount([toolEntry("t1", { status: "done" })]);
    batch(m.model, { op: "patch", id: "t1", changes: { status: "approval_required", approval: pendingApproval() } });
    const first = m.el.querySelector<HTMLDetailsElement>(".anvia-entry-tool")!;
    expect(first.open).toBe(true);
    await tick(); // the browser's toggle event for the opening comes as a task
    batch(m.model, { op: "patch", id: "t1", changes: { status: "done", approval: { ...pendingApproval(), status: "approved" } } });
    const again = m.another().querySelector<HTMLDetailsElement>(".anvia-entry-tool")!;
    expect(again.open).toBe(false); // finished entries start folded
    m.cleanup();
  });
});

describe("incremental updates", () => {
  it("appends without rebuilding, draws a batch's text when it arrives, and markdown at most once a frame", () => {
    // The clock stands still: the batches below come within one frame however slow the machine
    // (a real clock let a busy one take a frame's time between them, and draw the second at once).
    vi.spyOn(performance, "now").mockReturnValue(1_000);
    const { model, root } = mount([
      { kind: "user", id: "u1", text: "hi" },
      { kind: "assistant", id: "a1", turn: 1, text: "" },
      { kind: "reasoning", id: "r1", turn: 1, text: "hm" },
      toolEntry("t1"),
    ]);
    const before = entries(root);
    const md = root.querySelector(".anvia-entry-assistant .anvia-md") as HTMLElement;
    const spy = vi.spyOn(StreamingMarkdown.prototype, "render");
    batch(model, { op: "append", id: "a1", field: "text", text: "Hello " });
    expect(spy).toHaveBeenCalledTimes(1); // the first batch is drawn at once
    expect(md.textContent?.trim()).toBe("Hello");
    batch(model, { op: "append", id: "a1", field: "text", text: "**world**" });
    batch(model, { op: "append", id: "r1", field: "text", text: "m..." }, { op: "append", id: "t1", field: "output", text: "out\n" });
    expect(spy).toHaveBeenCalledTimes(1); // within the same frame: waits for the frame
    expect(md.querySelector("strong")).toBeNull();
    expect(root.querySelector(".anvia-entry-reasoning")?.textContent).toContain("hmm...");
    expect(root.querySelector(".anvia-tool-output")?.textContent).toBe("out\n");
    flushFrames();
    expect(spy).toHaveBeenCalledTimes(2);
    expect(md.querySelector("strong")?.textContent).toBe("world");
    expect(entries(root)).toEqual(before); // same element objects: nothing was rebuilt
    expect(before.every((e) => e.isConnected)).toBe(true);
  });

  it("streams tool arguments", () => {
    const { model, root } = mount([toolEntry("t1", { arguments: "" })]);
    batch(model, { op: "append", id: "t1", field: "arguments", text: '{"a":' });
    flushFrames();
    expect(root.querySelector(".anvia-tool-args")?.textContent).toBe('{"a":');
    batch(model, { op: "append", id: "t1", field: "arguments", text: "1}" });
    flushFrames();
    expect(root.querySelector(".anvia-tool-args")?.textContent).toBe('{\n  "a": 1\n}');
  });

  it("keeps the views of unchanged entries across a resync snapshot", () => {
    const { model, root } = mount([{ kind: "user", id: "u1", text: "one" }, { kind: "user", id: "u2", text: "two" }]);
    const [u1] = entries(root);
    model.kernel({ type: "batch", seq: 5, ops: [] }); // gap -> sync
    model.kernel(snapshot([{ kind: "user", id: "u1", text: "one" }, { kind: "assistant", id: "a1", turn: 1, text: "new" }], status(), 5));
    const after = entries(root);
    expect(after).toHaveLength(2);
    expect(after[0]).toBe(u1);
    expect(after[1]!.classList.contains("anvia-entry-assistant")).toBe(true);
  });

  it("clears the transcript on reset", () => {
    const { model, root } = mount([{ kind: "user", id: "u1", text: "one" }]);
    batch(model, { op: "reset" });
    expect(entries(root)).toHaveLength(0);
  });

  it("updates every view of the same model", () => {
    const m = mount([{ kind: "user", id: "u1", text: "one" }]);
    const second = m.another();
    batch(m.model, { op: "add", entry: { kind: "notice", id: "n1", text: "hello" } });
    for (const el of [m.el, second]) {
      expect(el.querySelectorAll(".anvia-entry")).toHaveLength(2);
      expect(el.querySelector(".anvia-entry-notice .anvia-line-text")?.textContent).toBe("hello");
    }
    expect(m.model.ofType("sync")).toHaveLength(1); // one session per model
    m.cleanup();
    expect(m.model.listenerCount("msg:custom")).toBe(0);
  });

  it("renders state that arrives before a view exists and after it", () => {
    const m = mount([], status("idle"));
    batch(m.model, { op: "add", entry: { kind: "user", id: "u1", text: "early" } });
    const late = m.another();
    expect(late.querySelector(".anvia-entry-user")?.textContent).toContain("early");
  });
});

describe("status line", () => {
  const label = (root: HTMLElement) => root.querySelector(".anvia-status-label")?.textContent;

  it("shows state, turn and tokens; Stop only while running or waiting", () => {
    const { model, root } = mount([], status("running", { turn: 2, input_tokens: 1200, output_tokens: 34 }));
    expect(label(root)).toBe("Running");
    expect(root.querySelector(".anvia-status-meta")?.textContent).toContain("Turn 2");
    expect(root.querySelector(".anvia-status-meta")?.textContent).toMatch(/1,?200 in \/ 34 out tokens/);
    const stop = byLabel(root, "Stop");
    expect(stop.disabled).toBe(false);
    const expected: Record<string, [string, boolean]> = {
      waiting: ["Waiting for you", false],
      success: ["Done", true],
      error: ["Error", true],
      cancelled: ["Cancelled", true],
      idle: ["Ready", true],
    };
    for (const [state, [text, disabled]] of Object.entries(expected)) {
      batch(model, { op: "status", status: status(state as never, { error: state === "error" ? "boom" : null }) });
      expect(label(root)).toBe(text);
      expect(stop.disabled).toBe(disabled);
    }
  });

  it("says Connecting until the first snapshot", async () => {
    const { FakeModel } = await import("./helpers");
    const widget = (await import("../src/widget")).default;
    const model = new FakeModel();
    widget.initialize({ model });
    const el = document.createElement("div");
    widget.render({ model, el });
    expect(label(el)).toBe("Connecting…");
    expect(byLabel(el, "Stop").disabled).toBe(true);
  });

  it("sends stop, disables the button, and re-enables it when refused", async () => {
    const { model, root } = mount([], status("running"));
    const stop = byLabel(root, "Stop");
    stop.click();
    expect(model.last("stop")).toMatchObject({ type: "stop", reason: null });
    expect(stop.disabled).toBe(true);
    model.reply("stop", false, "No run to stop");
    await tick();
    expect(stop.disabled).toBe(false);
    expect(root.querySelector(".anvia-statusbar .anvia-error-text")?.textContent).toBe("No run to stop");
  });

  it("announces only run-level changes in the live region", () => {
    const { model, root } = mount([], status("idle"));
    const live = root.querySelector("[aria-live]")!;
    expect(live.textContent).toBe("");
    const said: string[] = [];
    for (const state of ["running", "waiting", "running", "success", "running", "cancelled", "running", "error"] as const) {
      batch(model, { op: "status", status: status(state) });
      said.push(live.textContent ?? "");
    }
    expect(said).toEqual(["Agent started", "Waiting for you", "Agent started", "Finished", "Agent started", "Stopped", "Agent started", "Failed"]);
    batch(model, { op: "add", entry: { kind: "assistant", id: "a", turn: 1, text: "token" } });
    expect(live.textContent).toBe("Failed");
    batch(model, { op: "status", status: status("idle") });
    batch(model, { op: "status", status: status("error") });
    expect(live.textContent).toBe("Failed\u00a0"); // changed, so it is read again
    expect(live.textContent?.trim()).toBe("Failed");
  });

  it("shows Kernel disconnected when sending fails", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { model, root } = mount([], status("running"));
    const banner = root.querySelector(".anvia-disconnected") as HTMLElement;
    expect(banner.hidden).toBe(true);
    model.failSend = true;
    byLabel(root, "Stop").click();
    await tick();
    expect(banner.hidden).toBe(false);
    expect(banner.textContent).toBe("Kernel disconnected");
    expect(byLabel(root, "Stop").disabled).toBe(false);
  });
});

describe("scrolling", () => {
  function fakeLayout(list: HTMLElement, sizes: { scrollHeight: number; clientHeight: number }) {
    Object.defineProperty(list, "scrollHeight", { configurable: true, get: () => sizes.scrollHeight });
    Object.defineProperty(list, "clientHeight", { configurable: true, get: () => sizes.clientHeight });
  }

  it("stays pinned to the bottom, and offers Jump to latest when scrolled away", () => {
    const { model, root } = mount([{ kind: "user", id: "u1", text: "x" }]);
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    const sizes = { scrollHeight: 1000, clientHeight: 200 };
    fakeLayout(list, sizes);
    const jump = root.querySelector(".anvia-jump") as HTMLButtonElement;
    expect(jump.textContent).toBe("Jump to latest");
    expect(jump.hidden).toBe(true);
    batch(model, { op: "add", entry: { kind: "notice", id: "n1", text: "more" } });
    flushFrames();
    expect(list.scrollTop).toBe(1000);
    expect(jump.hidden).toBe(true);

    list.scrollTop = 100; // the user scrolls up
    list.dispatchEvent(new Event("scroll"));
    sizes.scrollHeight = 1200;
    batch(model, { op: "add", entry: { kind: "notice", id: "n2", text: "even more" } });
    flushFrames();
    expect(list.scrollTop).toBe(100);
    expect(jump.hidden).toBe(false);

    byLabel(root, "Jump to latest").click();
    expect(list.scrollTop).toBe(1200);
    expect(jump.hidden).toBe(true);
  });

  /** A transcript taller than its list (1000 px in 200), followed to its bottom. */
  function scrolledToTheBottom() {
    const { model, root } = mount([{ kind: "user", id: "u1", text: "x" }]);
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    const sizes = { scrollHeight: 1000, clientHeight: 200 };
    fakeLayout(list, sizes);
    batch(model, { op: "add", entry: { kind: "notice", id: "n1", text: "more" } });
    flushFrames();
    expect(list.scrollTop).toBe(1000);
    list.scrollTop = 800; // at the bottom (jsdom keeps what is set)
    return { model, root, list, sizes };
  }

  it("is unpinned by a key moving up, before the scroll leaves the bottom", () => {
    // Home's smooth scroll first reports a position still within the slack of the bottom: an
    // entry added (or an older one built) then scrolled the list back down, and Home did nothing.
    for (const key of ["Home", "PageUp", "ArrowUp"]) {
      const move = (list: HTMLElement) => list.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
      const { model, root, list } = scrolledToTheBottom();
      move(list);
      list.scrollTop = 790; // the smooth scroll's first step: still within the slack
      list.dispatchEvent(new Event("scroll"));
      batch(model, { op: "add", entry: { kind: "notice", id: "n2", text: "even more" } });
      flushFrames();
      expect(list.scrollTop).toBe(790);
      const jump = root.querySelector(".anvia-jump") as HTMLButtonElement;
      expect(jump.hidden).toBe(false);
      list.scrollTop = 400; // on its way up
      list.dispatchEvent(new Event("scroll"));
      list.scrollTop = 800; // the person scrolls back to the bottom: pinned again
      list.dispatchEvent(new Event("scroll"));
      batch(model, { op: "add", entry: { kind: "notice", id: "n3", text: "and more" } });
      flushFrames();
      expect(list.scrollTop).toBe(1000);
    }
  });

  it("is pinned again by Jump to latest, and keys pressed in a control inside it are the control's", () => {
    const { model, root, list, sizes } = scrolledToTheBottom();
    list.dispatchEvent(new KeyboardEvent("keydown", { key: "Home", bubbles: true }));
    list.scrollTop = 795;
    list.dispatchEvent(new Event("scroll"));
    batch(model, { op: "add", entry: { kind: "notice", id: "n1b", text: "meanwhile" } });
    flushFrames();
    expect(list.scrollTop).toBe(795); // not followed: the person moved up
    byLabel(root, "Jump to latest").click();
    list.dispatchEvent(new Event("scroll")); // (the jump's own scroll, at the bottom)
    sizes.scrollHeight = 1200;
    batch(model, { op: "add", entry: { kind: "notice", id: "n2", text: "even more" } });
    flushFrames();
    expect(list.scrollTop).toBe(1200); // followed again
    const inside = document.createElement("textarea");
    list.append(inside);
    inside.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp", bubbles: true }));
    sizes.scrollHeight = 1400;
    batch(model, { op: "add", entry: { kind: "notice", id: "n3", text: "and more" } });
    flushFrames();
    expect(list.scrollTop).toBe(1400);
  });

  it("stays pinned when a key moves up in a list that cannot scroll up", () => {
    const { model, root } = mount([{ kind: "user", id: "u1", text: "x" }]);
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    const sizes = { scrollHeight: 100, clientHeight: 200 };
    fakeLayout(list, sizes);
    list.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp" }));
    sizes.scrollHeight = 1000;
    batch(model, { op: "add", entry: { kind: "notice", id: "n1", text: "more" } });
    flushFrames();
    expect(list.scrollTop).toBe(1000);
  });
});
