// One per widget model: the channel to the kernel (custom messages), the transcript store,
// Studio state, request ids and replies. Every view of the model subscribes to it.
import {
  type InspectReplyMsg,
  type InspectTurnView,
  type PageMessage,
  type PageRequest,
  type ReplyMsg,
  type StudioMsg,
  validateKernelMessage,
} from "./protocol";
import { EvalsStore } from "./evals";
import { watchKernel } from "./kernel";
import { type StoreEvent, TranscriptStore } from "./store";
import { Listeners } from "./listeners";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Callback = (...args: any[]) => void;

/** The part of the anywidget model API we use. */
export interface WidgetModel {
  get(name: string): unknown;
  send(content: unknown, callbacks?: unknown, buffers?: unknown): unknown;
  on(event: string, callback: Callback): void;
  off(event: string, callback?: Callback): void;
}

export type SessionEvent =
  | StoreEvent
  | { type: "studio" }
  | { type: "connection" }
  | { type: "evals"; rows: number[] | null };

export interface RequestResult {
  ok: boolean;
  error: string | null;
}

/** The kernel's answer to `inspect`: model call `turn.index` of `count`, or why not. */
export interface InspectResult extends RequestResult {
  count: number;
  turn: InspectTurnView | null;
}

type Resolve = (result: RequestResult, data?: InspectReplyMsg) => void;

/** A request on its way: resolves with the kernel's reply (or a local failure); `id` is its
 * request id ("" when it was refused without being sent). */
export type PendingRequest<T extends RequestResult = RequestResult> = Promise<T> & { readonly id: string };

/** How long a request waits for the kernel's reply before it gives up, so that a lost reply
 * never leaves buttons disabled for good (a reply that comes later is ignored). */
export const REPLY_TIMEOUT_MS = 30_000;
/** The refusal of a request whose reply did not come in time. */
export const NO_REPLY =
  "No answer from the kernel in time: it may be busy running a cell (try again), or it was restarted " +
  "from another tab or outside this page, which then keeps sending to the kernel it had (reload the page)";

export const DISCONNECTED = "Kernel disconnected";
/** The refusal of every request once the kernel stopped (see `Session.kernelStopped`). */
export const KERNEL_STOPPED = "The kernel stopped: this view is no longer live";

/** What a person typed in a Studio's prompt box, kept across redraws of the view (the cell's
 * output is redrawn when the kernel refreshes its static copy after each run). */
export interface Draft {
  text: string;
  start: number;
  end: number;
}

const randomPrefix = (): string =>
  typeof crypto !== "undefined" && typeof crypto.randomUUID === "function"
    ? crypto.randomUUID().slice(0, 8)
    : Math.random().toString(36).slice(2, 10);

/** Run states in which a view still talks to its kernel (see `watchKernel`'s `isLive`). */
const LIVE_STATES: ReadonlySet<string> = new Set(["running", "waiting"]);

export class Session {
  readonly store = new TranscriptStore();
  /** An evaluation report's table (mode "evals"); empty otherwise. */
  readonly evals = new EvalsStore();
  studio: StudioMsg | null = null;
  disconnected = false;
  /** The kernel this model lived in stopped (restarted, shut down or died): final. Views say so
   * and turn their buttons off; requests are refused without being sent. */
  kernelStopped = false;
  readonly draft: Draft = { text: "", start: 0, end: 0 };
  /** Which entries a person opened or closed, so a redrawn view (the output re-rendered, a
   * second view, VS Code's lazy views) shows them the same way; keyed by `entryKey`. */
  readonly openEntries = new Map<string, boolean>();
  private readonly listeners = new Listeners<SessionEvent>("view update");
  private pending = new Map<string, { resolve: Resolve; timer: ReturnType<typeof setTimeout> }>();
  private syncId: string | null = null;
  private syncTimer: ReturnType<typeof setTimeout> | null = null;
  private lastSyncAt = 0;
  private syncBackoff = 0;
  private disposed = false;
  private counter = 0;
  private readonly prefix = randomPrefix();
  private readonly unsubscribeStore: () => void;
  private readonly unsubscribeEvals: () => void;
  private readonly unwatchKernel: () => void;
  private readonly onCustom = (msg: unknown): void => this.receive(msg);

  constructor(private readonly model: WidgetModel) {
    this.unsubscribeStore = this.store.subscribe((ev) => this.listeners.emit(ev));
    this.unsubscribeEvals = this.evals.subscribe((ev) => this.listeners.emit(ev));
    model.on("msg:custom", this.onCustom);
    this.unwatchKernel = watchKernel(
      model,
      () => this.setKernelStopped(),
      () => LIVE_STATES.has(this.store.status.state),
    );
    this.sync();
  }

  subscribe(fn: (ev: SessionEvent) => void): () => void {
    return this.listeners.subscribe(fn);
  }

  /** A string trait of the model ("" when missing). */
  trait(name: string): string {
    try {
      const v = this.model.get(name);
      return typeof v === "string" ? v : "";
    } catch {
      return "";
    }
  }

  /** Call `fn` when a synced trait changes; returns the unsubscribe function. */
  onTrait(name: string, fn: () => void): () => void {
    const cb = (): void => fn();
    this.model.on(`change:${name}`, cb);
    return () => this.model.off(`change:${name}`, cb);
  }

  /** The `mode` trait ("studio" for the Playground, anything else for a transcript). */
  get mode(): string {
    return this.trait("mode") || "transcript";
  }

  /** The conversation the transcript holds: a Studio has one per agent, named by the status
   * line's agent (entry ids are unique within one conversation only); "" elsewhere. */
  get conversation(): string {
    return this.mode === "studio" ? this.store.status.agent_id : "";
  }

  /** What remembers entry `id` of the conversation shown (see `openEntries`). */
  entryKey(id: string): string {
    const conversation = this.conversation;
    return conversation ? `${conversation}\n${id}` : id;
  }

  /** The label of a reply: in a Studio, the name of the agent whose conversation is shown. */
  replyLabel(): string {
    const id = this.conversation;
    const agent = id ? this.studio?.agents.find((a) => a.id === id) : undefined;
    return agent ? agent.name || agent.id : "Assistant";
  }

  /** Send a page message; resolves with the kernel's reply, a local failure, or `NO_REPLY`
   * after `timeoutMs` without one. */
  request(req: PageRequest, timeoutMs: number = REPLY_TIMEOUT_MS): PendingRequest {
    let id = "";
    const promise = new Promise<RequestResult>((resolve) => {
      id = this.send(req, resolve, timeoutMs);
    });
    return Object.assign(promise, { id });
  }

  /** Ask for model call `index` (null: the latest) of the shown run's trace (the Inspect view). */
  inspect(index: number | null, timeoutMs: number = REPLY_TIMEOUT_MS): PendingRequest<InspectResult> {
    let id = "";
    const promise = new Promise<InspectResult>((resolve) => {
      id = this.send(
        { type: "inspect", index },
        (result, data) => resolve({ ...result, count: data?.count ?? 0, turn: data?.ok ? data.turn : null }),
        timeoutMs,
      );
    });
    return Object.assign(promise, { id });
  }

  /** Send `req` with a fresh request id (returned; "" when refused at once). */
  private send(req: PageRequest, resolve: Resolve, timeoutMs: number): string {
    if (this.kernelStopped) {
      resolve({ ok: false, error: KERNEL_STOPPED });
      return "";
    }
    const request_id = `${this.prefix}-${++this.counter}`;
    const msg = { ...req, request_id } as PageMessage;
    const timer = setTimeout(() => {
      if (this.pending.delete(request_id)) resolve({ ok: false, error: NO_REPLY });
    }, timeoutMs);
    this.pending.set(request_id, { resolve, timer });
    const fail = (err: unknown): void => {
      console.warn("anvia: could not send to the kernel", err);
      if (!this.pending.delete(request_id)) return;
      clearTimeout(timer);
      this.setDisconnected(true);
      resolve({ ok: false, error: DISCONNECTED });
    };
    try {
      const r = this.model.send(msg) as { then?: unknown } | undefined;
      if (r && typeof r.then === "function") (r as Promise<unknown>).catch(fail);
    } catch (err) {
      fail(err);
    }
    return request_id;
  }

  /**
   * Ask for a snapshot unless one is already on its way. Syncs that follow each other without a
   * usable snapshot in between back off (0.25 s doubling to 8 s), so that a kernel whose
   * snapshots this page cannot read is not flooded with requests.
   */
  sync(): void {
    if (this.syncId !== null || this.syncTimer !== null || this.disposed || this.kernelStopped) return;
    const wait = this.lastSyncAt + this.syncBackoff - Date.now();
    if (wait > 0) {
      this.syncTimer = setTimeout(() => {
        this.syncTimer = null;
        this.sync();
      }, wait);
      return;
    }
    this.lastSyncAt = Date.now();
    this.syncBackoff = Math.min(this.syncBackoff ? this.syncBackoff * 2 : 250, 8000);
    const pending = this.request({ type: "sync" });
    // Resolved already when refused at once; else the snapshot clears it, or this (a reply
    // without a snapshot, a failure, no reply in time) lets a later sync ask again.
    this.syncId = pending.id || null;
    void pending.then(() => {
      if (this.syncId === pending.id) this.syncId = null;
    });
  }

  /** The kernel stopped: refuse what is waiting for a reply, and tell the views (once). */
  setKernelStopped(): void {
    if (this.kernelStopped || this.disposed) return;
    this.kernelStopped = true;
    if (this.syncTimer !== null) clearTimeout(this.syncTimer);
    this.syncTimer = null;
    this.syncId = null;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    this.listeners.emit({ type: "connection" });
    for (const { resolve, timer } of waiting) {
      clearTimeout(timer);
      resolve({ ok: false, error: KERNEL_STOPPED });
    }
  }

  private setDisconnected(value: boolean): void {
    if (this.disconnected === value) return;
    this.disconnected = value;
    this.listeners.emit({ type: "connection" });
  }

  /** Handle one custom message from the kernel. */
  receive(raw: unknown): void {
    const v = validateKernelMessage(raw);
    if (!v.ok) {
      console.warn(`anvia: ignored a malformed message (${v.error})`, raw);
      return;
    }
    this.setDisconnected(false);
    const msg = v.value;
    switch (msg.type) {
      case "snapshot":
        this.syncId = null;
        this.syncBackoff = 0;
        this.store.applySnapshot(msg);
        break;
      case "batch":
        if (this.store.applyBatch(msg) !== "applied") this.sync();
        break;
      case "reply":
      case "inspect_reply":
        this.resolveReply(msg);
        break;
      case "studio":
        this.studio = msg;
        this.listeners.emit({ type: "studio" });
        break;
      case "evals":
        this.evals.applyReport(msg);
        break;
      case "evals_update":
        if (!this.evals.applyUpdate(msg)) this.sync();
        break;
    }
  }

  private resolveReply(msg: ReplyMsg | InspectReplyMsg): void {
    const waiting = this.pending.get(msg.request_id);
    if (!waiting) return; // another page's request, or a late reply
    this.pending.delete(msg.request_id);
    clearTimeout(waiting.timer);
    const { resolve } = waiting;
    const result = { ok: msg.ok, error: msg.ok ? null : (msg.error ?? "Request refused") };
    resolve(result, msg.type === "inspect_reply" ? msg : undefined);
  }

  dispose(): void {
    this.disposed = true;
    if (this.syncTimer !== null) clearTimeout(this.syncTimer);
    this.model.off("msg:custom", this.onCustom);
    this.unwatchKernel();
    this.unsubscribeStore();
    this.unsubscribeEvals();
    this.listeners.clear();
    for (const { resolve, timer } of this.pending.values()) {
      clearTimeout(timer);
      resolve({ ok: false, error: "Widget closed" });
    }
    this.pending.clear();
  }
}
