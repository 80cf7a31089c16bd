// The transcript state of one widget model: a snapshot plus numbered batches of ops.
import {
  type AppendField,
  type BatchMsg,
  type Entry,
  type EntryChanges,
  entryHasField,
  type Op,
  type SnapshotMsg,
  type Status,
  validateEntry,
} from "./protocol";
import { Listeners } from "./listeners";

export type StoreEvent =
  | { type: "reset" }
  | { type: "add"; entry: Entry }
  | { type: "append"; entry: Entry; field: AppendField; text: string }
  | { type: "patch"; entry: Entry; changes: EntryChanges }
  | { type: "status"; status: Status; previous: Status };

/** What applying a batch did: `gap` (ignored, resync) or `diverged` (applied, but resync). */
export type BatchResult = "applied" | "gap" | "diverged";

export const idleStatus = (agent_id = ""): Status => ({
  state: "idle",
  turn: 0,
  input_tokens: 0,
  output_tokens: 0,
  error: null,
  agent_id,
});

const clone = <T>(v: T): T => structuredClone(v);

export class TranscriptStore {
  entries: Entry[] = [];
  status: Status = idleStatus();
  /** Seq of the last snapshot or batch applied; null until the first snapshot. */
  seq: number | null = null;
  private byId = new Map<string, Entry>();
  private readonly listeners = new Listeners<StoreEvent>("view update");

  subscribe(fn: (ev: StoreEvent) => void): () => void {
    return this.listeners.subscribe(fn);
  }

  get(id: string): Entry | undefined {
    return this.byId.get(id);
  }

  applySnapshot(msg: SnapshotMsg): void {
    this.entries = [];
    this.byId.clear();
    for (const e of msg.transcript.entries) {
      if (this.byId.has(e.id)) continue; // a duplicate id keeps the first entry
      const copy = clone(e);
      this.entries.push(copy);
      this.byId.set(copy.id, copy);
    }
    const previous = this.status;
    this.status = clone(msg.transcript.status);
    this.seq = msg.seq;
    this.listeners.emit({ type: "reset" });
    this.listeners.emit({ type: "status", status: this.status, previous });
  }

  applyBatch(msg: BatchMsg): BatchResult {
    if (this.seq === null || msg.seq !== this.seq + 1) return "gap";
    this.seq = msg.seq;
    let ok = true;
    for (const op of msg.ops) {
      if (!this.applyOp(op)) {
        ok = false;
        console.warn("anvia: could not apply op", op);
      }
    }
    return ok ? "applied" : "diverged";
  }

  /** Apply one op; false when it does not fit the current state. */
  private applyOp(op: Op): boolean {
    switch (op.op) {
      case "add": {
        if (this.byId.has(op.entry.id)) return false;
        const entry = clone(op.entry);
        this.entries.push(entry);
        this.byId.set(entry.id, entry);
        this.listeners.emit({ type: "add", entry });
        return true;
      }
      case "append": {
        const entry = this.byId.get(op.id);
        if (!entry || !entryHasField(entry.kind, op.field)) return false;
        const rec = entry as unknown as Record<string, string>;
        rec[op.field] = (rec[op.field] ?? "") + op.text;
        this.listeners.emit({ type: "append", entry, field: op.field, text: op.text });
        return true;
      }
      case "patch": {
        const entry = this.byId.get(op.id);
        if (!entry) return false;
        if (!Object.keys(op.changes).every((k) => entryHasField(entry.kind, k))) return false;
        const next = { ...entry, ...clone(op.changes) };
        if (!validateEntry(next).ok) return false;
        Object.assign(entry, clone(op.changes));
        this.listeners.emit({ type: "patch", entry, changes: op.changes });
        return true;
      }
      case "status": {
        const previous = this.status;
        this.status = clone(op.status);
        this.listeners.emit({ type: "status", status: this.status, previous });
        return true;
      }
      case "reset": {
        this.entries = [];
        this.byId.clear();
        const previous = this.status;
        this.status = idleStatus(previous.agent_id);
        this.listeners.emit({ type: "reset" });
        this.listeners.emit({ type: "status", status: this.status, previous });
        return true;
      }
    }
  }
}
