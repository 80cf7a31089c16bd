import { afterEach, describe, expect, it, vi } from "vitest";
import { Session } from "../src/session";
import { TranscriptStore } from "../src/store";
import type { BatchMsg, SnapshotMsg } from "../src/protocol";
import { FakeModel, fixture, snapshot, status, tick, toolEntry } from "./helpers";

afterEach(() => vi.restoreAllMocks());

const user = (id: string, text = "hi") => ({ kind: "user" as const, id, text });
const assistant = (id: string, text = "") => ({ kind: "assistant" as const, id, turn: 1, text });

function session() {
  const model = new FakeModel();
  const s = new Session(model);
  return { model, s };
}

describe("TranscriptStore", () => {
  it("replaces its state with a snapshot and applies contiguous batches", () => {
    const store = new TranscriptStore();
    store.applySnapshot(snapshot([user("u1")], status("running"), 4) as SnapshotMsg);
    expect(store.seq).toBe(4);
    const r = store.applyBatch({
      type: "batch",
      seq: 5,
      ops: [
        { op: "add", entry: assistant("a1", "He") },
        { op: "append", id: "a1", field: "text", text: "llo" },
        { op: "add", entry: toolEntry("t1") },
        { op: "append", id: "t1", field: "arguments", text: "" },
        { op: "append", id: "t1", field: "output", text: "line\n" },
        { op: "patch", id: "t1", changes: { status: "done", result: "ok" } },
        { op: "status", status: status("success", { turn: 2, input_tokens: 10, output_tokens: 3 }) },
      ],
    });
    expect(r).toBe("applied");
    expect(store.seq).toBe(5);
    expect(store.entries.map((e) => e.id)).toEqual(["u1", "a1", "t1"]);
    expect(store.get("a1")).toMatchObject({ text: "Hello" });
    expect(store.get("t1")).toMatchObject({ status: "done", result: "ok", output: "line\n" });
    expect(store.status).toMatchObject({ state: "success", turn: 2, input_tokens: 10 });
  });

  it("ignores a batch that does not follow the last seq", () => {
    const store = new TranscriptStore();
    expect(store.applyBatch({ type: "batch", seq: 1, ops: [] })).toBe("gap"); // before any snapshot
    store.applySnapshot(snapshot([], status(), 0) as SnapshotMsg);
    const add: BatchMsg = { type: "batch", seq: 2, ops: [{ op: "add", entry: user("u1") }] };
    expect(store.applyBatch(add)).toBe("gap");
    expect(store.entries).toHaveLength(0);
    expect(store.seq).toBe(0);
    expect(store.applyBatch({ ...add, seq: 0 })).toBe("gap"); // a stale one too
  });

  it("reports ops that do not fit the state", () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const store = new TranscriptStore();
    store.applySnapshot(snapshot([user("u1")], status(), 0) as SnapshotMsg);
    const cases: BatchMsg["ops"][] = [
      [{ op: "append", id: "nope", field: "text", text: "x" }],
      [{ op: "add", entry: user("u1") }],
      [{ op: "append", id: "u1", field: "arguments", text: "x" }],
      [{ op: "patch", id: "u1", changes: { status: "done" } }],
      [{ op: "patch", id: "nope", changes: { text: "x" } }],
    ];
    cases.forEach((ops, i) => expect(store.applyBatch({ type: "batch", seq: i + 1, ops })).toBe("diverged"));
    expect(store.entries).toEqual([user("u1")]);
  });

  it("reset clears the entries and makes the status idle", () => {
    const store = new TranscriptStore();
    store.applySnapshot(snapshot([user("u1")], status("success", { agent_id: "a" }), 0) as SnapshotMsg);
    const events: string[] = [];
    store.subscribe((e) => events.push(e.type));
    store.applyBatch({ type: "batch", seq: 1, ops: [{ op: "reset" }] });
    expect(store.entries).toEqual([]);
    expect(store.status).toMatchObject({ state: "idle", agent_id: "a", turn: 0 });
    expect(events).toEqual(["reset", "status"]);
  });

  it("does not share objects with the messages it applied", () => {
    const store = new TranscriptStore();
    const snap = snapshot([assistant("a1", "x")]) as SnapshotMsg;
    store.applySnapshot(snap);
    store.applyBatch({ type: "batch", seq: 1, ops: [{ op: "append", id: "a1", field: "text", text: "y" }] });
    expect((snap.transcript.entries[0] as { text: string }).text).toBe("x");
  });

  it("replays the approval run fixture to its final state", () => {
    const store = new TranscriptStore();
    for (const msg of fixture("sequence_approval_run.json") as (SnapshotMsg | BatchMsg)[]) {
      if (msg.type === "snapshot") store.applySnapshot(msg);
      else expect(store.applyBatch(msg)).toBe("applied");
    }
    expect(store.entries.map((e) => e.kind)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(store.get("a1")).toMatchObject({ text: "I'll issue the refund." });
    expect(store.get("t1")).toMatchObject({ status: "done", output: "refund issued\n" });
    expect(store.status.state).toBe("success");
  });
});

describe("Session", () => {
  it("sends sync on creation, with a request id", () => {
    const { model } = session();
    expect(model.sent).toHaveLength(1);
    expect(model.sent[0]).toMatchObject({ type: "sync" });
    expect(typeof model.sent[0]!.request_id).toBe("string");
  });

  it("detects a seq gap, ignores the batch and resyncs once", async () => {
    const { model, s } = session();
    model.kernel(snapshot([], status(), 0));
    model.reply("sync");
    await tick();
    model.kernel({ type: "batch", seq: 1, ops: [{ op: "add", entry: user("u1") }] });
    expect(model.ofType("sync")).toHaveLength(1);
    model.kernel({ type: "batch", seq: 3, ops: [{ op: "add", entry: user("u3") }] });
    expect(model.ofType("sync")).toHaveLength(2);
    model.kernel({ type: "batch", seq: 4, ops: [] }); // still a gap, but a sync is already on its way
    expect(model.ofType("sync")).toHaveLength(2);
    expect(s.store.entries.map((e) => e.id)).toEqual(["u1"]);
    model.kernel(snapshot([user("u1"), user("u2"), user("u3")], status(), 4));
    model.kernel({ type: "batch", seq: 5, ops: [{ op: "add", entry: user("u5") }] });
    expect(s.store.entries.map((e) => e.id)).toEqual(["u1", "u2", "u3", "u5"]);
    expect(model.ofType("sync")).toHaveLength(2);
  });

  it("ignores batches until the first snapshot", () => {
    const { model, s } = session();
    model.kernel({ type: "batch", seq: 1, ops: [{ op: "add", entry: user("u1") }] });
    expect(s.store.entries).toHaveLength(0);
    expect(model.ofType("sync")).toHaveLength(1); // the initial sync is still pending
  });

  it("resyncs when a batch does not fit the state", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { model } = session();
    model.kernel(snapshot([], status(), 0));
    model.reply("sync");
    await tick();
    model.kernel({ type: "batch", seq: 1, ops: [{ op: "append", id: "ghost", field: "text", text: "x" }] });
    expect(model.ofType("sync")).toHaveLength(2);
  });

  it("ignores and logs malformed messages", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const { model, s } = session();
    model.kernel({ type: "snapshot", seq: 0 });
    model.kernel({ type: "nonsense" });
    model.kernel("text");
    expect(s.store.seq).toBeNull();
    expect(warn).toHaveBeenCalledTimes(3);
  });

  it("resolves requests with their replies and ignores other replies", async () => {
    const { model, s } = session();
    const p = s.request({ type: "stop", reason: null });
    model.kernel({ type: "reply", request_id: "someone-else", ok: true, error: null });
    const msg = model.last("stop");
    model.kernel({ type: "reply", request_id: msg.request_id, ok: false, error: "No run" });
    await expect(p).resolves.toEqual({ ok: false, error: "No run" });
    expect(new Set(model.sent.map((m) => m.request_id)).size).toBe(model.sent.length);
  });

  it("reports a disconnected kernel when send throws", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { model, s } = session();
    model.failSend = true;
    const events: string[] = [];
    s.subscribe((e) => events.push(e.type));
    await expect(s.request({ type: "stop", reason: null })).resolves.toEqual({ ok: false, error: "Kernel disconnected" });
    expect(s.disconnected).toBe(true);
    expect(events).toContain("connection");
  });

  it("keeps the latest studio message and removes its listener on dispose", () => {
    const { model, s } = session();
    const studio = fixture("studio.json")[0];
    model.kernel(studio);
    expect(s.studio).toEqual(studio);
    expect(model.listenerCount("msg:custom")).toBe(1);
    s.dispose();
    expect(model.listenerCount("msg:custom")).toBe(0);
  });
});

describe("Session resync backoff", () => {
  afterEach(() => vi.useRealTimers());

  it("backs off while syncs get no usable snapshot, and resets on a good one", async () => {
    vi.useFakeTimers();
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { model } = session();
    const unreadable = { type: "snapshot", seq: 0, transcript: { entries: [{ kind: "alien", id: "x" }], status: status(), seq: 0 } };
    const answerWithUnreadable = async () => {
      model.kernel(unreadable); // ignored
      model.reply("sync");
      await vi.advanceTimersByTimeAsync(0);
    };
    await answerWithUnreadable();
    model.kernel({ type: "batch", seq: 1, ops: [] }); // a gap: resync, but not at once
    expect(model.ofType("sync")).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(300);
    expect(model.ofType("sync")).toHaveLength(2);

    await answerWithUnreadable();
    model.kernel({ type: "batch", seq: 2, ops: [] });
    await vi.advanceTimersByTimeAsync(300);
    expect(model.ofType("sync")).toHaveLength(2); // the wait doubled
    await vi.advanceTimersByTimeAsync(300);
    expect(model.ofType("sync")).toHaveLength(3);

    model.kernel(snapshot([], status(), 0));
    model.reply("sync");
    await vi.advanceTimersByTimeAsync(0);
    model.kernel({ type: "batch", seq: 7, ops: [] });
    expect(model.ofType("sync")).toHaveLength(4); // at once again
  });
});
