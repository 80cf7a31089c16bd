// The state of an evaluation report's widget: the whole report (`evals`) plus numbered updates
// (`evals_update`: the new summary and the rows that changed). A gap in the numbering means a
// message was lost: the update is ignored and the session asks for the whole report again.
import type { EvalsMsg, EvalsRowView, EvalsSummary, EvalsUpdateMsg } from "./protocol";
import { Listeners } from "./listeners";

export type EvalsEvent = { type: "evals"; rows: number[] | null };

export class EvalsStore {
  summary: EvalsSummary | null = null;
  rows: EvalsRowView[] = [];
  /** Seq of the last message applied; null before the whole report came. */
  seq: number | null = null;
  /** `performance.now()` when the summary came (the view adds the time since to `elapsed_ms`). */
  receivedAt = 0;
  private readonly listeners = new Listeners<EvalsEvent>("report view update");

  subscribe(fn: (ev: EvalsEvent) => void): () => void {
    return this.listeners.subscribe(fn);
  }

  applyReport(msg: EvalsMsg): void {
    this.summary = msg.report.summary;
    this.rows = [...msg.report.rows].sort((a, b) => a.index - b.index);
    this.seq = msg.seq;
    this.receivedAt = now();
    this.listeners.emit({ type: "evals", rows: null });
  }

  /** Apply an update; false when it does not follow the last one (ask for the report again). */
  applyUpdate(msg: EvalsUpdateMsg): boolean {
    if (this.seq === null || msg.seq !== this.seq + 1) return false;
    this.seq = msg.seq;
    this.summary = msg.summary;
    this.receivedAt = now();
    const changed: number[] = [];
    for (const row of msg.rows) {
      if (row.index >= this.rows.length || this.rows[row.index]?.index !== row.index) {
        // The rows are every case in order: an index outside them means the states diverged.
        this.seq = null;
        return false;
      }
      this.rows[row.index] = row;
      changed.push(row.index);
    }
    this.listeners.emit({ type: "evals", rows: changed });
    return true;
  }
}

const now = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());
