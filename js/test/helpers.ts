// Test doubles: a fake anywidget model standing in for the kernel, and DOM helpers.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import type { ApprovalView, Entry, Status } from "../src/protocol";
import type { WidgetModel } from "../src/session";
import widget from "../src/widget";
import { flushFrames } from "../src/frame";

type Handler = (...args: unknown[]) => void;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Sent = Record<string, any>;

export class FakeModel implements WidgetModel {
  sent: Sent[] = [];
  failSend = false;
  private handlers = new Map<string, Set<Handler>>();
  constructor(private attrs: Record<string, unknown> = {}) {}
  get(name: string): unknown {
    return this.attrs[name];
  }
  send(content: unknown): void {
    if (this.failSend) throw new Error("Cannot send");
    this.sent.push(content as Sent);
  }
  on(event: string, cb: Handler): void {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)!.add(cb);
  }
  off(event: string, cb?: Handler): void {
    if (cb) this.handlers.get(event)?.delete(cb);
    else this.handlers.delete(event);
  }
  listenerCount(event: string): number {
    return this.handlers.get(event)?.size ?? 0;
  }
  /** Change a synced trait, as the kernel would. */
  set(name: string, value: unknown): void {
    this.attrs[name] = value;
    for (const cb of this.handlers.get(`change:${name}`) ?? []) cb();
  }
  /** Fire a model event the widget manager would (e.g. `comm_live_update`). */
  fire(event: string): void {
    for (const cb of [...(this.handlers.get(event) ?? [])]) cb();
  }
  /** Deliver a custom message from the "kernel". */
  kernel(msg: unknown): void {
    for (const cb of this.handlers.get("msg:custom") ?? []) cb(msg, []);
  }
  ofType(type: string): Sent[] {
    return this.sent.filter((m) => m.type === type);
  }
  last(type?: string): Sent {
    const list = type ? this.ofType(type) : this.sent;
    const m = list[list.length - 1];
    if (!m) throw new Error(`nothing of type ${type} sent`);
    return m;
  }
  /** Reply to the last message (of a type) the page sent. */
  reply(type: string, ok = true, error: string | null = null): void {
    this.kernel({ type: "reply", request_id: this.last(type).request_id, ok, error });
  }
}

export const status = (state: Status["state"] = "running", extra: Partial<Status> = {}): Status => ({
  state,
  turn: 1,
  input_tokens: 0,
  output_tokens: 0,
  error: null,
  agent_id: "agent",
  ...extra,
});

export const snapshot = (entries: Entry[], st: Status = status(), seq = 0) => ({
  type: "snapshot",
  seq,
  transcript: { entries, status: st, seq },
});

export interface Mounted {
  model: FakeModel;
  el: HTMLElement;
  root: HTMLElement;
  cleanup: () => void;
  /** Mount another view of the same model. */
  another(): HTMLElement;
}

/** The cleanups of every widget mounted by the current test, run after it: a view's timers
 * (the idle-time build of older entries) must not outlive the test's document. */
const mountedCleanups = new Set<() => void>();
afterEach(() => {
  for (const cleanup of mountedCleanups) cleanup();
  mountedCleanups.clear();
});

/** Initialise the widget with a fake model, answer its sync with a snapshot, render one view. */
export function mount(entries: Entry[] = [], st: Status = status(), attrs: Record<string, unknown> = {}): Mounted {
  const model = new FakeModel(attrs);
  const disposers: Array<() => void> = [];
  disposers.push(widget.initialize({ model }));
  model.kernel(snapshot(entries, st, 0));
  const view = (): HTMLElement => {
    const el = document.createElement("div");
    document.body.appendChild(el);
    disposers.push(widget.render({ model, el }));
    return el;
  };
  const el = view();
  const cleanup = (): void => {
    if (!mountedCleanups.delete(cleanup)) return; // once
    disposers.reverse().forEach((d) => d());
  };
  mountedCleanups.add(cleanup);
  return {
    model,
    el,
    root: el.querySelector(".anvia-root") as HTMLElement,
    another: view,
    cleanup,
  };
}

let seqByModel = new WeakMap<FakeModel, number>();
/** Send the next contiguous batch of ops. */
export function batch(model: FakeModel, ...ops: unknown[]): void {
  const seq = (seqByModel.get(model) ?? 0) + 1;
  seqByModel.set(model, seq);
  model.kernel({ type: "batch", seq, ops });
}
export const resetSeqs = (): void => {
  seqByModel = new WeakMap();
};

/** Not inside anything with the `hidden` attribute. */
export function isShown(el: Element): boolean {
  for (let e: Element | null = el; e; e = e.parentElement) if (e.hasAttribute("hidden")) return false;
  return true;
}

/** The buttons a person could see. */
export const buttons = (root: ParentNode): HTMLButtonElement[] => [...root.querySelectorAll("button")].filter(isShown);

/** A button's label as read out: its text without the parts hidden from assistive tech. */
export const labelOf = (b: Element): string =>
  [...b.childNodes]
    .filter((n) => !(n instanceof Element && n.getAttribute("aria-hidden") === "true"))
    .map((n) => n.textContent ?? "")
    .join("");

export function byLabel(root: ParentNode, label: string): HTMLButtonElement {
  const found = buttons(root).filter((b) => labelOf(b) === label);
  if (found.length !== 1) throw new Error(`expected one button "${label}", found ${found.length}`);
  return found[0]!;
}

export function byPlaceholder<T extends HTMLElement = HTMLInputElement>(root: ParentNode, placeholder: string): T {
  const el = root.querySelector(`[placeholder="${placeholder}"]`);
  if (!el) throw new Error(`no field with placeholder "${placeholder}"`);
  return el as T;
}

export function type(input: HTMLInputElement | HTMLTextAreaElement, value: string): void {
  input.value = value;
  input.dispatchEvent(new Event("input", { bubbles: true }));
}

/** Let pending promise callbacks (replies) run. */
export const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

export { flushFrames };

/** An approval waiting for a decision, as the kernel sends it; ``extra`` changes its fields. */
export const pendingApproval = (extra: Partial<ApprovalView> = {}): ApprovalView => ({
  id: "ap_1",
  status: "pending",
  reason: null,
  args: {},
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
  ...extra,
});

export function toolEntry(id: string, extra: Partial<Extract<Entry, { kind: "tool" }>> = {}): Entry {
  return {
    kind: "tool",
    id,
    turn: 1,
    tool_name: "issue_refund",
    tool_call_id: `call_${id}`,
    arguments: '{"order_id":"A-1","amount":5}',
    status: "running",
    result: null,
    is_error: false,
    output: "",
    approval: null,
    question: null,
    ...extra,
  };
}

// ---------------------------------------------------------------- fixtures

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "../../tests/fixtures/protocol/");

/** Every message in a fixture file (a file holds one message or an array of messages). */
export function fixtureMessages(path: string): unknown[] {
  const data: unknown = JSON.parse(readFileSync(path, "utf8"));
  return Array.isArray(data) ? data : [data];
}

export const fixtureFiles = (dir: string): string[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => join(dir, f));

export const fixture = (name: string): unknown[] => fixtureMessages(join(FIXTURES, name));
